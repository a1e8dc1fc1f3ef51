"""Delivery accounting (`msgbench_driver/delivery.py`, no server needed): the sequence window
(the cases of msgbench's own `stats/delivery.rs` tests), the summary, and every
spec/vectors/delivery file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from msgbench_driver.delivery import WINDOW, DeliveryLog, SeqTracker, summarize
from msgbench_driver.stamp import PayloadMaker

from .paths import DELIVERY_VECTORS


def test_in_order_stream_is_clean() -> None:
    t = SeqTracker()
    for s in range(100_000):
        t.record(s)
    assert (t.unique, t.duplicated, t.reordered, t.next) == (100_000, 0, 0, 100_000)


def test_gaps_duplicates_and_late_arrivals() -> None:
    t = SeqTracker()
    for s in [0, 1, 2, 5, 5, 3, 2, 7]:
        t.record(s)
    assert (t.unique, t.duplicated, t.reordered) == (6, 2, 1)
    t.record(4)  # never seen before and below the highest: reordered, not duplicated
    assert (t.unique, t.duplicated, t.reordered) == (7, 2, 2)


def test_window_slots_are_reused_after_jumps() -> None:
    t = SeqTracker()
    t.record(3)
    t.record(3 + 2 * WINDOW)
    t.record(3 + WINDOW + 1)
    assert (t.unique, t.duplicated, t.reordered) == (3, 0, 1)
    t = SeqTracker()
    t.record(10)
    t.record(10 + WINDOW - 1)
    t.record(10 + WINDOW + 5)
    t.record(10 + WINDOW)
    assert (t.duplicated, t.reordered) == (0, 1)
    t.record(10 + WINDOW - 1)
    assert t.duplicated == 1
    t.record(5)
    assert (t.beyond_window, t.reordered) == (1, 2)


def test_exact_summary_sums_over_subscribers() -> None:
    logs = [DeliveryLog(2), DeliveryLog(2)]
    maker0, maker1 = PayloadMaker(16, 0), PayloadMaker(16, 1)
    for seq in range(10):
        logs[0].record(maker0.payload(seq))
        logs[0].record(maker1.payload(seq))
    for seq in [0, 1, 1, 3, 2]:  # 1 twice, 2 late; 4..9 lost
        logs[1].record(maker0.payload(seq))
    logs[1].record(PayloadMaker(16, 9).payload(0))  # not a publisher of this run
    totals = summarize([10, 10], [20, 6], logs)
    assert (totals.sent, totals.received, totals.lost, totals.duplicated, totals.reordered) == (20, 26, 6 + 10, 1, 1)
    assert logs[1].foreign == 1
    assert totals.accounting == "exact"


def test_count_summary_has_unknown_duplicates() -> None:
    t = summarize([100], [100, 90], None)
    assert (t.lost, t.duplicated, t.reordered, t.accounting) == (10, None, None, "count")


def test_no_subscribers_nothing_to_account() -> None:
    t = summarize([4, 3], [], None)
    assert (t.sent, t.received, t.lost, t.duplicated, t.accounting) == (7, 0, 0, None, "none")


VECTORS = sorted(DELIVERY_VECTORS.glob("*.json"))


def test_there_are_delivery_vectors() -> None:
    assert len(VECTORS) >= 8


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_delivery_vector(path: Path) -> None:
    """The arrivals, stamped as publishers stamp them, into one subscriber's DeliveryLog; the
    summary and every publisher's tracker must come to the expected counts."""
    v: dict[str, Any] = json.loads(path.read_text())
    assert v["name"] == path.stem
    sent: list[int] = v["sent"]
    makers = [PayloadMaker(16, p) for p in range(len(sent))]
    log = DeliveryLog(len(sent))
    for publisher, seq in v["arrivals"]:
        assert log.record(makers[publisher].payload(seq)) == seq
    assert log.foreign == 0
    expect = dict(v["expect"])
    publishers = expect.pop("publishers")
    unique = expect.pop("unique")
    assert summarize(sent, [len(v["arrivals"])], [log]).to_json() == expect
    assert sum(t.unique for t in log.trackers) == unique
    # Per publisher, as msgbench counts it: received = unique + duplicated, lost = sent - unique.
    assert [
        {
            "id": p,
            "sent": sent[p],
            "received": t.unique + t.duplicated,
            "unique": t.unique,
            "lost": max(0, sent[p] - t.unique),
            "duplicated": t.duplicated,
            "reordered": t.reordered,
        }
        for p, t in enumerate(log.trackers)
    ] == publishers
