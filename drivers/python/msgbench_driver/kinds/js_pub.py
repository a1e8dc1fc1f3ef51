"""js_pub: publish into the stream msgbench created, with acknowledgements, through nats-py's
JetStream context (`nc.jetstream()`), one connection per publisher.

- sync: `await js.publish()` for each message, which waits for its PubAck before the next.
- async: `await js.publish_async()` (nats-py >= 2.11), which returns a future per message; the
  context is created with `publish_async_max_pending=in_flight`, so the library's own
  semaphore keeps at most `in_flight` acks outstanding per publisher. `wait_stall` is the
  scenario's timeout, and `publish_async_completed()` waits for the last acks, bounded by the
  timeout too: acks still missing then count as `request_timeout`.

Each ack is timed from its publish on time.monotonic_ns() (async: from when publish_async()
returned, i.e. after any wait for a free slot). No headers are added (no expected-stream
check), so the bytes on the wire are the same as a plain publish with a reply subject.
"""

from __future__ import annotations

import asyncio
import sys
from functools import partial
from typing import Optional

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import PubAck

from ..delivery import DeliveryTotals
from ..histogram import LatencyRecorder
from ..protocol import Scenario
from ..result import ClientSpan, JsAcks, RunResult
from ..run import RunClock, Schedule, now_ns, wait_until
from ..stamp import PayloadMaker
from .base import Workload

# Returned by _paced when no more messages are to be sent.
_STOP = -1

_FATAL = (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError, nats.errors.OutboundBufferLimitError)


class JsPublisher:
    def __init__(self, index: int, nc: NATS, workload: "JsPub") -> None:
        self.index = index
        self.nc = nc
        self.w = workload
        sc = workload.scenario
        self.js: JetStreamContext = nc.jetstream(timeout=sc.timeout_s, publish_async_max_pending=sc.in_flight)
        self.maker = PayloadMaker(sc.size, index)
        self.sent = 0
        self.acked = 0
        self.first_ns: Optional[int] = None
        self.last_ns: Optional[int] = None  # last ack (or last send when none came)

    def _acked(self, ack: PubAck, sent_ns: int, start_ns: int, clock: RunClock) -> None:
        recv = now_ns()
        self.acked += 1
        self.last_ns = recv
        self.w.acks.add(ack.seq, bool(ack.duplicate))
        if start_ns >= clock.warmup_end_ns:
            self.w.recorder.record(recv - start_ns, recv - sent_ns)

    async def _paced(self, seq: int, schedule: Optional[Schedule], clock: RunClock) -> Optional[int]:
        """Where message seq's latency starts: its due time (open loop), None for "when it is
        sent" (as fast as acks allow), or _STOP when the run is over."""
        if clock.stop.is_set():
            return _STOP
        if schedule is None:
            return _STOP if clock.past_end(now_ns()) else None
        due = schedule.due(seq)
        if clock.past_end(due) or not await wait_until(due, clock):
            return _STOP
        return due

    async def run_sync(self, clock: RunClock, schedule: Optional[Schedule]) -> None:
        sc = self.w.scenario
        seq = 0
        while seq < clock.limit:
            due = await self._paced(seq, schedule, clock)
            if due == _STOP:
                break
            payload = self.maker.payload(seq)
            t = now_ns()
            if self.first_ns is None:
                self.first_ns = t
            seq += 1
            self.sent = seq
            try:
                ack = await self.js.publish(sc.subject, payload, timeout=sc.timeout_s)
            except _FATAL as exc:
                self.w.errors.add_exception(exc)
                break
            except Exception as exc:
                self.w.errors.add_exception(exc)
                continue
            self._acked(ack, t, t if due is None else due, clock)

    def _on_done(self, sent_ns: int, start_ns: int, clock: RunClock, fut: "asyncio.Future[PubAck]") -> None:
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:
            self.w.errors.add_exception(exc)
            return
        self._acked(fut.result(), sent_ns, start_ns, clock)

    async def run_async(self, clock: RunClock, schedule: Optional[Schedule]) -> None:
        sc = self.w.scenario
        js = self.js
        seq = 0
        stalled = False
        while seq < clock.limit:
            due = await self._paced(seq, schedule, clock)
            if due == _STOP:
                break
            payload = self.maker.payload(seq)
            try:
                fut = await js.publish_async(sc.subject, payload, wait_stall=sc.timeout_s)
            except nats.js.errors.TooManyStalledMsgsError:
                # No slot freed within the timeout: acks stopped coming. What is outstanding
                # has waited the whole timeout already and is counted just below.
                print(f"msgbench-driver: publisher {self.index}: no ack for {sc.timeout_ms} ms, stopping", file=sys.stderr)
                stalled = True
                break
            except Exception as exc:
                self.w.errors.add_exception(exc)
                break
            t = now_ns()
            if self.first_ns is None:
                self.first_ns = t
            seq += 1
            self.sent = seq
            fut.add_done_callback(partial(self._on_done, t, t if due is None else due, clock))
        try:
            await asyncio.wait_for(js.publish_async_completed(), timeout=0 if stalled else sc.timeout_s)
        except asyncio.TimeoutError:
            missing = js.publish_async_pending()
            if missing:
                self.w.errors.add("request_timeout", missing, detail=f"{missing} acks missing after {sc.timeout_ms} ms")

    def span(self) -> ClientSpan:
        last = self.last_ns if self.last_ns is not None else self.first_ns
        size = self.w.scenario.size
        return ClientSpan("pub", self.index, self.sent, self.sent * size, self.first_ns, last)


class JsPub(Workload):
    watched_errors = ("disconnected", "request_timeout", "no_responders")

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        self.publishers: list[JsPublisher] = []
        self.recorder = LatencyRecorder()
        self.acks = JsAcks()

    @property
    def mode(self) -> str:
        assert self.scenario.js is not None
        return self.scenario.js.mode

    @property
    def notes(self) -> str:
        if self.mode == "sync":
            return "asyncio; await js.publish() per message (waits for each PubAck)"
        return (
            "asyncio; await js.publish_async() with publish_async_max_pending=in_flight (the "
            "library's semaphore bounds outstanding acks), publish_async_completed() at the end; "
            "acks timed from when publish_async() returned"
        )

    async def prepare(self) -> None:
        for i in range(self.scenario.pubs):
            nc = await self.conns.open(f"msgbench-python-js-{i}")
            self.publishers.append(JsPublisher(i, nc, self))

    async def run(self, clock: RunClock) -> None:
        sc = self.scenario

        def schedule(i: int) -> Optional[Schedule]:
            return Schedule(clock.t0_ns, sc.rate, len(self.publishers), i) if sc.rate > 0 else None

        if self.mode == "sync":
            await asyncio.gather(*(p.run_sync(clock, schedule(p.index)) for p in self.publishers))
        else:
            await asyncio.gather(*(p.run_async(clock, schedule(p.index)) for p in self.publishers))

    def progress(self) -> tuple[int, int]:
        return sum(p.sent for p in self.publishers), sum(p.acked for p in self.publishers)

    def result(self, clock: RunClock, interrupted: bool) -> RunResult:
        sent = sum(p.sent for p in self.publishers)
        delivery = DeliveryTotals(sent, 0, 0, None, None, "none")
        return RunResult(
            interrupted,
            [p.span() for p in self.publishers],
            delivery,
            self.errors.to_json(),
            latency=self.recorder,
            js=self.acks,
        )
