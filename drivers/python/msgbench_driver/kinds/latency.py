"""latency: one publisher at `rate` msgs/s, open loop, and one subscriber, on two connections.

Message n is due at t0 + n/rate. The publisher sleeps (asyncio.sleep) until ~1.5 ms before, then
yields to the loop (asyncio.sleep(0)) until the due time, so the subscriber's callbacks keep
running while it waits; it never skips a message and sends at once when late. Each message is a
plain `await nc.publish()`: the client's background flusher writes it as soon as the loop runs,
which is how nats-py sends without an explicit flush. The subscriber callback records, on
time.monotonic_ns(): corrected = receive − due, uncorrected = receive − actual send.
"""

from __future__ import annotations

from array import array
from typing import Optional

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from ..connection import flush
from ..delivery import DeliveryLog, summarize
from ..histogram import LatencyRecorder
from ..protocol import Scenario
from ..result import ClientSpan, RunResult
from ..run import RunClock, Schedule, drain, now_ns, wait_until
from ..stamp import STAMP_LEN, PayloadMaker
from .base import Workload


class Latency(Workload):
    watched_errors = ("disconnected", "slow_consumer")

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        self.pub_nc: Optional[NATS] = None
        self.pub_span = ClientSpan("pub", 0)
        self.sent = 0
        self.send_ns = array("q")  # actual send time of message n
        self.received = 0
        self.bytes = 0
        self.last_ns: Optional[int] = None
        self.log = DeliveryLog(1) if scenario.stamped else None
        self.foreign = 0
        self.recorder = LatencyRecorder()
        self.schedule: Optional[Schedule] = None
        self.warmup_end_ns = 0

    @property
    def notes(self) -> str:
        return (
            "asyncio; open-loop pacing with asyncio.sleep then asyncio.sleep(0) spin to the due "
            "time; await nc.publish() per message (background flusher writes it), receive "
            "timestamp in a subscribe(cb=...) callback"
        )

    async def prepare(self) -> None:
        sc = self.scenario
        sub_nc = await self.conns.open("msgbench-python-sub-0")
        await sub_nc.subscribe(sc.subject, cb=self.on_msg)
        await flush(sub_nc, sc.timeout_s)
        self.pub_nc = await self.conns.open("msgbench-python-pub-0")

    async def on_msg(self, msg: Msg) -> None:
        recv = now_ns()
        data = msg.data
        self.received += 1
        self.bytes += len(data)
        self.last_ns = recv
        if self.log is not None:
            if len(data) < STAMP_LEN:
                self.foreign += 1
                return
            seq = self.log.record(data)
            if seq is None:
                return
        else:
            # No stamp: NATS keeps order on one connection, so arrival order is the sequence.
            seq = self.received - 1
        schedule = self.schedule
        if schedule is None or seq >= len(self.send_ns):
            return
        due = schedule.due(seq)
        if due >= self.warmup_end_ns:
            self.recorder.record(recv - due, recv - self.send_ns[seq])

    async def run(self, clock: RunClock) -> None:
        sc = self.scenario
        assert self.pub_nc is not None
        nc = self.pub_nc
        self.schedule = schedule = Schedule(clock.t0_ns, sc.rate)
        self.warmup_end_ns = clock.warmup_end_ns
        maker = PayloadMaker(sc.size, 0)
        subject = sc.subject
        limit = clock.limit
        send_ns = self.send_ns
        n = 0
        try:
            while n < limit:
                due = schedule.due(n)
                if clock.past_end(due) or not await wait_until(due, clock):
                    break
                payload = maker.payload(n)
                t = now_ns()
                if n == 0:
                    self.pub_span.first_ns = t
                send_ns.append(t)
                await nc.publish(subject, payload)
                n += 1
                self.sent = n
        except Exception as exc:
            self.errors.add_exception(exc)
        self.sent = n
        try:
            await flush(nc, sc.timeout_s)
        except Exception as exc:
            self.errors.add_exception(exc)
        self.pub_span.last_ns = now_ns()
        self.pub_span.msgs = n
        self.pub_span.bytes = n * sc.size
        await drain(clock, lambda: self.received >= n, lambda: self.received)

    def progress(self) -> tuple[int, int]:
        return self.sent, self.received

    def result(self, clock: RunClock, interrupted: bool) -> RunResult:
        delivery = summarize([self.sent], [self.received], None if self.log is None else [self.log])
        sub_span = ClientSpan("sub", 0, self.received, self.bytes, clock.t0_ns, self.last_ns)
        return RunResult(
            interrupted,
            [self.pub_span, sub_span],
            delivery,
            self.errors.to_json(),
            latency=self.recorder,
        )

