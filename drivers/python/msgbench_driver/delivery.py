"""Delivery accounting.

Subscribers track each publisher's sequence numbers (from the payload stamps, `stamp.py`) with
the same sliding window as msgbench's own engine (`stats/delivery.rs`): a number seen twice is
a duplicate, a number below the highest seen that was not seen before is reordered, and
lost = sent − distinct numbers seen, per subscriber and publisher.

The same pieces, by the same names, are in every driver: `SeqTracker` (one publisher at one
subscriber), `DeliveryLog` (one subscriber) and `summarize` (the result's delivery section);
each records with `record`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .stamp import STAMP

# Sequence numbers remembered below the highest one seen (as msgbench's engine).
WINDOW = 8192
_MASK = WINDOW - 1


class SeqTracker:
    """What one subscriber saw of one publisher; fixed memory whatever the message count."""

    __slots__ = ("next", "seen", "unique", "duplicated", "reordered", "beyond_window")

    def __init__(self) -> None:
        self.next = 0  # one past the highest sequence seen
        self.seen = bytearray(WINDOW)  # seen[s % WINDOW] for s in (next - WINDOW, next)
        self.unique = 0
        self.duplicated = 0
        self.reordered = 0
        self.beyond_window = 0

    def record(self, seq: int) -> None:
        nxt = self.next
        if seq == nxt:  # the usual case: the next one in order
            self.seen[seq & _MASK] = 1
            self.next = seq + 1
            self.unique += 1
        elif seq > nxt:
            # Slots between the old high mark and seq now stand for newer numbers not yet seen.
            if seq - nxt >= WINDOW:
                self.seen = bytearray(WINDOW)
            else:
                seen = self.seen
                for s in range(nxt, seq):
                    seen[s & _MASK] = 0
            self.seen[seq & _MASK] = 1
            self.next = seq + 1
            self.unique += 1
        elif nxt - seq > WINDOW:
            # Older than the window: counted as reordered; duplicates become a lower bound.
            self.beyond_window += 1
            self.reordered += 1
            self.unique += 1
        elif self.seen[seq & _MASK]:
            self.duplicated += 1
        else:
            self.seen[seq & _MASK] = 1
            self.unique += 1
            self.reordered += 1


@dataclass
class DeliveryLog:
    """Everything one subscriber counts: a tracker per publisher, plus what it could not place."""

    publishers: int
    trackers: list[SeqTracker] = field(default_factory=list)
    foreign: int = 0  # stamped with a publisher index this run does not have

    def __post_init__(self) -> None:
        if not self.trackers:
            self.trackers = [SeqTracker() for _ in range(self.publishers)]

    def record(self, data: bytes) -> Optional[int]:
        """Records a stamped payload; returns its sequence, or None when it is not ours."""
        seq: int
        publisher: int
        seq, publisher = STAMP.unpack_from(data)
        if publisher < self.publishers:
            self.trackers[publisher].record(seq)
            return seq
        self.foreign += 1
        return None


@dataclass(frozen=True)
class DeliveryTotals:
    sent: int
    received: int
    lost: int
    duplicated: Optional[int]
    reordered: Optional[int]
    accounting: str

    def to_json(self) -> dict[str, object]:
        return {
            "sent": self.sent,
            "received": self.received,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "reordered": self.reordered,
            "accounting": self.accounting,
        }


def summarize(
    sent_per_pub: list[int], received_per_sub: list[int], logs: Optional[list[DeliveryLog]]
) -> DeliveryTotals:
    """The result's delivery section: what each publisher sent, what each subscriber received
    (duplicates included), and with stamps (`logs` not None) each subscriber's log.

    Every subscriber should have had every message. Stamped, lost = sent − distinct seen per
    subscriber and publisher, summed; unstamped, lost comes from counts and duplicates and
    reordering are unknown (None); without subscribers there is nothing to account.
    """
    sent = sum(sent_per_pub)
    if not received_per_sub:
        return DeliveryTotals(sent, 0, 0, None, None, "none")
    received = sum(received_per_sub)
    if logs is None:
        lost = sum(max(0, sent - n) for n in received_per_sub)
        return DeliveryTotals(sent, received, lost, None, None, "count")
    lost = duplicated = reordered = 0
    for log in logs:
        for sent_by, tracker in zip(sent_per_pub, log.trackers):
            lost += max(0, sent_by - tracker.unique)
            duplicated += tracker.duplicated
            reordered += tracker.reordered
    return DeliveryTotals(sent, received, lost, duplicated, reordered, "exact")
