"""Delivery accounting, payload stamps and ack bookkeeping (no server needed)."""

from __future__ import annotations

import struct

from msgbench_driver.result import JsAcks
from msgbench_driver.run import Schedule
from msgbench_driver.stamp import (
    WINDOW,
    DeliveryLog,
    PayloadMaker,
    SeqTracker,
    count_totals,
    exact_totals,
    read_stamp,
)


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


def test_payload_stamp_layout() -> None:
    p = PayloadMaker(32, 7).payload(0x0102030405060708)
    assert len(p) == 32
    assert struct.unpack_from("<QQ", p) == (0x0102030405060708, 7)
    assert read_stamp(p) == (0x0102030405060708, 7)
    assert PayloadMaker(8, 3).payload(99) == bytes(8)
    assert PayloadMaker(0, 0).payload(1) == b""
    assert len(PayloadMaker(16, 1).payload(5)) == 16


def test_exact_totals_sum_over_subscribers() -> None:
    logs = [DeliveryLog(2), DeliveryLog(2)]
    maker0, maker1 = PayloadMaker(16, 0), PayloadMaker(16, 1)
    for seq in range(10):
        logs[0].record(maker0.payload(seq))
        logs[0].record(maker1.payload(seq))
    for seq in [0, 1, 1, 3, 2]:  # 1 twice, 2 late; 4..9 lost
        logs[1].record(maker0.payload(seq))
    logs[1].record(PayloadMaker(16, 9).payload(0))  # not a publisher of this run
    totals = exact_totals([10, 10], received=26, logs=logs)
    assert (totals.sent, totals.received, totals.lost, totals.duplicated, totals.reordered) == (20, 26, 6 + 10, 1, 1)
    assert logs[1].foreign == 1
    assert totals.accounting == "exact"


def test_count_totals_have_unknown_duplicates() -> None:
    t = count_totals(100, [100, 90])
    assert (t.lost, t.duplicated, t.reordered, t.accounting) == (10, None, None, "count")


def test_js_acks_range_and_duplicates() -> None:
    acks = JsAcks()
    for seq in [1, 2, 3, 70000, 2]:
        acks.add(seq, False)
    acks.add(4, True)
    assert acks.to_json() == {"acked": 4, "first_seq": 1, "last_seq": 70000, "duplicate_acks": 2}


def test_schedule_interleaves_clients() -> None:
    a, b = Schedule(1000, 1000.0, 2, 0), Schedule(1000, 1000.0, 2, 1)
    assert [a.due(n) for n in range(3)] == [1000, 1000 + 2_000_000, 1000 + 4_000_000]
    assert [b.due(n) for n in range(2)] == [1000 + 1_000_000, 1000 + 3_000_000]
