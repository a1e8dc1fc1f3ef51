"""The publishing side on its own (no server needed): payload stamps, the open-loop schedule,
and JetStream acknowledgement bookkeeping."""

from __future__ import annotations

import struct

from msgbench_driver.result import JsAcks
from msgbench_driver.run import Schedule
from msgbench_driver.stamp import PayloadMaker, read_stamp


def test_payload_stamp_layout() -> None:
    p = PayloadMaker(32, 7).payload(0x0102030405060708)
    assert len(p) == 32
    assert struct.unpack_from("<QQ", p) == (0x0102030405060708, 7)
    assert read_stamp(p) == (0x0102030405060708, 7)
    assert PayloadMaker(8, 3).payload(99) == bytes(8)
    assert PayloadMaker(0, 0).payload(1) == b""
    assert len(PayloadMaker(16, 1).payload(5)) == 16


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
