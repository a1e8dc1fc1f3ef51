"""request: `pubs` client connections send requests to `subject` with `await nc.request()`
(nats-py's new-style requests: one wildcard inbox subscription per connection, a future per
request, matched by token).

- rate 0, closed loop: each client runs `in_flight` asyncio tasks, each awaiting one request at
  a time, so at most `in_flight` are outstanding per client.
- rate > 0, open loop: request n of client c is due at t0 + (n*pubs + c)/rate. A scheduler task
  waits for the due time and a free slot (at most `in_flight` outstanding), then starts a task
  for the request; latency is corrected from the due time, uncorrected from the actual send.

A reply that does not come within `timeout_ms` is `request_timeout`, a no-responders status is
`no_responders`; both count as lost.
"""

from __future__ import annotations

import asyncio
from typing import Optional

import nats.errors
from nats.aio.client import Client as NATS

from ..delivery import DeliveryTotals
from ..histogram import LatencyRecorder
from ..protocol import Scenario
from ..result import ClientSpan, RunResult
from ..run import RunClock, Schedule, now_ns, wait_until
from ..stamp import PayloadMaker
from .base import Workload


class RequestClient:
    def __init__(self, index: int, nc: NATS, workload: "Request") -> None:
        self.index = index
        self.nc = nc
        self.w = workload
        self.maker = PayloadMaker(workload.scenario.size, index)
        self.next_seq = 0
        self.sent = 0
        self.ok = 0
        self.reply_bytes = 0
        self.first_send_ns: Optional[int] = None
        self.last_send_ns: Optional[int] = None
        self.last_reply_ns: Optional[int] = None
        self.dead = False  # the connection is gone: stop sending

    async def one(self, seq: int, due: Optional[int], clock: RunClock) -> None:
        sc = self.w.scenario
        payload = self.maker.payload(seq)
        t = now_ns()
        if self.first_send_ns is None:
            self.first_send_ns = t
        self.last_send_ns = t
        self.sent += 1
        try:
            msg = await self.nc.request(sc.subject, payload, timeout=sc.timeout_s)
        except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError) as exc:
            self.w.errors.add_exception(exc)
            self.dead = True
            return
        except Exception as exc:
            self.w.errors.add_exception(exc)
            return
        recv = now_ns()
        self.ok += 1
        self.reply_bytes += len(msg.data)
        self.last_reply_ns = recv
        start = due if due is not None else t
        if start >= clock.warmup_end_ns:
            self.w.recorder.record(recv - start, recv - t)

    async def closed_loop(self, clock: RunClock) -> None:
        async def worker() -> None:
            limit = clock.limit
            while not self.dead and self.next_seq < limit and not clock.should_stop():
                seq = self.next_seq
                self.next_seq += 1
                await self.one(seq, None, clock)

        await asyncio.gather(*(worker() for _ in range(self.w.scenario.in_flight)))

    async def open_loop(self, clock: RunClock, schedule: Schedule) -> None:
        slots = asyncio.Semaphore(self.w.scenario.in_flight)
        outstanding: set[asyncio.Task[None]] = set()

        async def timed(seq: int, due: int) -> None:
            try:
                await self.one(seq, due, clock)
            finally:
                slots.release()

        seq = 0
        limit = clock.limit
        while seq < limit and not self.dead:
            due = schedule.due(seq)
            if clock.past_end(due) or not await wait_until(due, clock):
                break
            # A full window delays the request; its corrected latency still counts from `due`.
            await slots.acquire()
            if clock.stop.is_set():
                slots.release()
                break
            task = asyncio.create_task(timed(seq, due))
            outstanding.add(task)
            task.add_done_callback(outstanding.discard)
            seq += 1
        # Each request ends within timeout_ms (reply or request_timeout): a bounded drain.
        if outstanding:
            await asyncio.gather(*outstanding)


class Request(Workload):
    watched_errors = ("disconnected", "request_timeout", "no_responders")

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        self.clients: list[RequestClient] = []
        self.recorder = LatencyRecorder()

    @property
    def notes(self) -> str:
        loop = "closed loop" if self.scenario.rate <= 0 else "open loop (scheduler task + one task per request)"
        return (
            f"asyncio; await nc.request() (new-style, shared inbox), {loop}, at most in_flight "
            "outstanding per client; nats-py matches one reply per request, so duplicate or "
            "reordered replies cannot be observed (reported as null)"
        )

    async def prepare(self) -> None:
        for i in range(self.scenario.pubs):
            nc = await self.conns.open(f"msgbench-python-req-{i}")
            self.clients.append(RequestClient(i, nc, self))

    async def run(self, clock: RunClock) -> None:
        sc = self.scenario
        if sc.rate <= 0:
            await asyncio.gather(*(c.closed_loop(clock) for c in self.clients))
        else:
            await asyncio.gather(
                *(c.open_loop(clock, Schedule(clock.t0_ns, sc.rate, len(self.clients), c.index)) for c in self.clients)
            )

    def progress(self) -> tuple[int, int]:
        return sum(c.sent for c in self.clients), sum(c.ok for c in self.clients)

    def result(self, clock: RunClock, interrupted: bool) -> RunResult:
        size = self.scenario.size
        clients: list[ClientSpan] = []
        for c in self.clients:
            clients.append(ClientSpan("pub", c.index, c.sent, c.sent * size, c.first_send_ns, c.last_send_ns))
        for c in self.clients:
            clients.append(ClientSpan("sub", c.index, c.ok, c.reply_bytes, clock.t0_ns, c.last_reply_ns))
        sent = sum(c.sent for c in self.clients)
        ok = sum(c.ok for c in self.clients)
        delivery = DeliveryTotals(sent, ok, max(0, sent - ok), None, None, "exact")
        return RunResult(interrupted, clients, delivery, self.errors.to_json(), latency=self.recorder)
