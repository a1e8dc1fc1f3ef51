"""pubsub: `subs` subscriptions and `pubs` publishers, each on its own connection, all on one
asyncio event loop.

Publishers use nats-py's buffered publish: `await nc.publish()` appends to the client's pending
buffer and a background flusher task writes it, so no round trip is awaited per message; when
the buffer passes `pending_size` publish() waits for a write (the library's flow control).
Unpaced publishers also yield to the loop every YIELD_EVERY messages (see below).
`await nc.flush()` (PING/PONG) once at the end confirms the server has everything. Subscribers
are `subscribe(cb=...)` callbacks, the library's documented async way of consuming.
"""

from __future__ import annotations

import asyncio
from typing import Optional

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from ..connection import flush
from ..delivery import DeliveryLog, DeliveryTotals, summarize
from ..protocol import Scenario
from ..result import ClientSpan, RunResult
from ..run import RunClock, Schedule, drain, now_ns, wait_until
from ..stamp import STAMP_LEN, PayloadMaker
from .base import Workload

# An unpaced publisher yields to the event loop (asyncio.sleep(0)) every this many messages,
# and reads the clock for the duration's end at the same time. nats-py's publish() only yields
# when its pending buffer passes pending_size (2 MiB: ~25,000 small messages), so without this
# one publisher would keep the loop from the other publishers, the subscribers' callbacks and
# the client's own flusher for long stretches. Measured here with 1 pub and 1 sub of 64 B
# messages, yielding every 256 messages gave the best end-to-end rate (tried: never, 64,
# 256, 512, 1024, 4096), and kept the subscriber from being cut off as a slow consumer.
YIELD_EVERY = 256


class Publisher:
    def __init__(self, index: int, nc: NATS, workload: "PubSub") -> None:
        self.index = index
        self.nc = nc
        self.w = workload
        self.sent = 0
        self.span = ClientSpan("pub", index)

    async def run(self, clock: RunClock, schedule: Optional[Schedule]) -> None:
        sc = self.w.scenario
        subject = sc.subject
        maker = PayloadMaker(sc.size, self.index)
        publish = self.nc.publish
        stop = clock.stop
        limit = clock.limit
        n = 0
        try:
            if schedule is None:
                self.span.first_ns = now_ns()
                while n < limit and not stop.is_set():
                    if n % YIELD_EVERY == 0 and n:
                        if clock.past_end(now_ns()):
                            break
                        await asyncio.sleep(0)
                    await publish(subject, maker.payload(n))
                    n += 1
                    self.sent = n
            else:
                while n < limit:
                    due = schedule.due(n)
                    if clock.past_end(due) or not await wait_until(due, clock):
                        break
                    if n == 0:
                        self.span.first_ns = now_ns()
                    await publish(subject, maker.payload(n))
                    n += 1
                    self.sent = n
        except Exception as exc:
            self.w.errors.add_exception(exc)
        self.sent = n
        try:
            await flush(self.nc, sc.timeout_s)
        except Exception as exc:
            if not self.nc.is_closed:
                self.w.errors.add_exception(exc)
        self.span.last_ns = now_ns()
        self.span.msgs = n
        self.span.bytes = n * sc.size


class Subscriber:
    def __init__(self, index: int, stamped: bool, publishers: int) -> None:
        self.index = index
        self.received = 0
        self.bytes = 0
        self.last_ns: Optional[int] = None
        self.log: Optional[DeliveryLog] = DeliveryLog(publishers) if stamped else None

    async def on_msg(self, msg: Msg) -> None:
        data = msg.data
        self.received += 1
        self.bytes += len(data)
        self.last_ns = now_ns()
        log = self.log
        if log is not None and len(data) >= STAMP_LEN:
            log.record(data)

    def span(self, t0_ns: int) -> ClientSpan:
        return ClientSpan("sub", self.index, self.received, self.bytes, t0_ns, self.last_ns)


class PubSub(Workload):
    watched_errors = ("disconnected", "slow_consumer")

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        self.publishers: list[Publisher] = []
        self.subscribers: list[Subscriber] = [
            Subscriber(i, scenario.stamped, scenario.pubs) for i in range(scenario.subs)
        ]

    @property
    def notes(self) -> str:
        return (
            "asyncio, one event loop for every connection; await nc.publish() (buffered: "
            "pending_size 2 MiB, the default, written by the client's flusher task), "
            f"asyncio.sleep(0) every {YIELD_EVERY} messages so publishers, subscribers and the "
            "flusher share the loop, one nc.flush() per publisher at the end; subscribers are "
            "subscribe(cb=...) callbacks with the default pending limits"
        )

    async def prepare(self) -> None:
        sc = self.scenario
        for sub in self.subscribers:
            nc = await self.conns.open(f"msgbench-python-sub-{sub.index}")
            await nc.subscribe(sc.subject, cb=sub.on_msg)
            await flush(nc, sc.timeout_s)  # the server has the interest before `ready`
        for i in range(sc.pubs):
            nc = await self.conns.open(f"msgbench-python-pub-{i}")
            self.publishers.append(Publisher(i, nc, self))

    def _schedule(self, clock: RunClock, index: int) -> Optional[Schedule]:
        if self.scenario.rate <= 0:
            return None
        return Schedule(clock.t0_ns, self.scenario.rate, len(self.publishers), index)

    async def run(self, clock: RunClock) -> None:
        await asyncio.gather(*(p.run(clock, self._schedule(clock, p.index)) for p in self.publishers))
        expected = sum(p.sent for p in self.publishers)
        await drain(
            clock,
            lambda: all(s.received >= expected for s in self.subscribers),
            lambda: sum(s.received for s in self.subscribers),
        )

    def progress(self) -> tuple[int, int]:
        return sum(p.sent for p in self.publishers), sum(s.received for s in self.subscribers)

    def _delivery(self) -> DeliveryTotals:
        sent_per_pub = [p.sent for p in self.publishers] or [0] * self.scenario.pubs
        received_per_sub = [s.received for s in self.subscribers]
        logs = [s.log for s in self.subscribers if s.log is not None] if self.scenario.stamped else None
        return summarize(sent_per_pub, received_per_sub, logs)

    def result(self, clock: RunClock, interrupted: bool) -> RunResult:
        clients = [p.span for p in self.publishers] + [s.span(clock.t0_ns) for s in self.subscribers]
        return RunResult(interrupted, clients, self._delivery(), self.errors.to_json())

