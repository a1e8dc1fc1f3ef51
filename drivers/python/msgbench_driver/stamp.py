"""Payload stamps and delivery accounting.

A payload of 16 bytes or more starts with the message's sequence number (LE u64, from 0 per
publisher) and the publisher's index (LE u64). Subscribers track each publisher's sequence
numbers with the same sliding window as msgbench's own engine (`stats/delivery.rs`): a number
seen twice is a duplicate, a number below the highest seen that was not seen before is
reordered, and lost = sent − distinct numbers seen, per subscriber and publisher.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional

STAMP_LEN = 16
_STAMP = struct.Struct("<QQ")

# Sequence numbers remembered below the highest one seen (as msgbench's engine).
WINDOW = 8192
_MASK = WINDOW - 1


class PayloadMaker:
    """Builds the payloads of one publisher: `size` bytes, stamped when there is room."""

    __slots__ = ("size", "stamped", "_publisher", "_tail", "_fixed")

    def __init__(self, size: int, publisher: int) -> None:
        self.size = size
        self.stamped = size >= STAMP_LEN
        self._publisher = publisher
        self._tail = bytes(size - STAMP_LEN) if self.stamped else b""
        self._fixed = bytes(size)

    def payload(self, seq: int) -> bytes:
        if self.stamped:
            return _STAMP.pack(seq, self._publisher) + self._tail
        return self._fixed


def read_stamp(data: bytes) -> tuple[int, int]:
    """(sequence, publisher) of a stamped payload."""
    seq, publisher = _STAMP.unpack_from(data)
    return int(seq), int(publisher)


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
        seq, publisher = _STAMP.unpack_from(data)
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


def exact_totals(sent_per_pub: list[int], received: int, logs: list[DeliveryLog]) -> DeliveryTotals:
    """Stamped accounting over every subscriber: lost = sent − distinct seen, summed."""
    lost = duplicated = reordered = 0
    for log in logs:
        for sent, tracker in zip(sent_per_pub, log.trackers):
            lost += max(0, sent - tracker.unique)
            duplicated += tracker.duplicated
            reordered += tracker.reordered
    return DeliveryTotals(sum(sent_per_pub), received, lost, duplicated, reordered, "exact")


def count_totals(sent: int, received_per_sub: list[int]) -> DeliveryTotals:
    """Unstamped accounting: each subscriber should have had every message; dups unknown."""
    lost = sum(max(0, sent - n) for n in received_per_sub)
    return DeliveryTotals(sent, sum(received_per_sub), lost, None, None, "count")
