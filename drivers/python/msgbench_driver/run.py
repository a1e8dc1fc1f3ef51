"""What every kind shares while it runs: the clock, the stop signal, the time bounds and the
open-loop schedule."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

from .protocol import Scenario

now_ns = time.monotonic_ns

# A counted run that is still going after an hour (the histograms' range) is cut short and
# reported as interrupted: every load loop is bounded in count and in time.
MAX_RUN_NS = 3_600_000_000_000

# Pacing: sleep until this close to a due time, then yield to the loop until it is reached.
_SPIN_NS = 1_500_000
# Sleep in slices no longer than this, so a stop is seen well within 100 ms.
_SLICE_NS = 20_000_000


@dataclass
class RunClock:
    """The run's clock, started when `start` was read."""

    scenario: Scenario
    t0_ns: int
    stop: threading.Event
    cut_short: bool = False  # the hour-long safety bound was reached

    @property
    def end_ns(self) -> int:
        """When sending stops: the scenario's duration, else the safety bound."""
        if self.scenario.duration_ms is not None:
            return self.t0_ns + self.scenario.duration_ms * 1_000_000
        return self.t0_ns + MAX_RUN_NS

    @property
    def limit(self) -> int:
        """Messages per publisher: the scenario's count, or unbounded for a timed run."""
        return self.scenario.msgs if self.scenario.msgs is not None else 1 << 62

    @property
    def warmup_end_ns(self) -> int:
        return self.t0_ns + self.scenario.warmup_ms * 1_000_000

    @property
    def timeout_ns(self) -> int:
        return self.scenario.timeout_ms * 1_000_000

    def should_stop(self, now: Optional[int] = None) -> bool:
        if self.stop.is_set():
            return True
        if (now if now is not None else now_ns()) >= self.end_ns:
            if self.scenario.duration_ms is None:
                self.cut_short = True
            return True
        return False

    def past_end(self, t_ns: int) -> bool:
        """True when a message due at `t_ns` falls after the run's end (it is not sent)."""
        if t_ns >= self.end_ns:
            if self.scenario.duration_ms is None:
                self.cut_short = True
            return True
        return False

    @property
    def interrupted(self) -> bool:
        return self.stop.is_set() or self.cut_short


@dataclass(frozen=True)
class Schedule:
    """Open loop: message n of a client is due at t0 + (n * clients + client) / rate seconds.

    With several clients sharing `rate`, each runs at rate/clients and their slots interleave.
    """

    t0_ns: int
    rate: float
    clients: int = 1
    client: int = 0

    def due(self, n: int) -> int:
        return self.t0_ns + int((n * self.clients + self.client) * 1e9 / self.rate)


async def wait_until(due_ns: int, clock: RunClock) -> bool:
    """Sleeps, then yields to the event loop (a cooperative spin), until `due_ns`.

    Returns False when the run stopped first. Never skips: a late caller returns at once.
    """
    while True:
        remaining = due_ns - now_ns()
        if remaining <= 0:
            return True
        if clock.stop.is_set():
            return False
        if remaining > _SPIN_NS:
            await asyncio.sleep(min(remaining - _SPIN_NS, _SLICE_NS) / 1e9)
        else:
            await asyncio.sleep(0)


async def drain(
    clock: RunClock, done: Callable[[], bool], progress: Callable[[], int], poll_s: float = 0.002
) -> bool:
    """Waits for receivers to catch up with what was sent, bounded by the scenario's timeout.

    A run that ended normally waits while deliveries keep coming, and gives up after
    `timeout_ms` with none (msgbench's own rule: a driver is alive while its progress changes).
    After a stop (or end of input) it waits `timeout_ms` at most, from when it saw the stop.
    Returns True when `done()` held.
    """
    last_seen = progress()
    last_change = now_ns()
    stop_deadline: Optional[int] = None
    while not done():
        now = now_ns()
        if clock.interrupted:
            if stop_deadline is None:
                stop_deadline = now + clock.timeout_ns
            if now >= stop_deadline:
                return False
        seen = progress()
        if seen != last_seen:
            last_seen, last_change = seen, now
        elif now - last_change >= clock.timeout_ns:
            return False
        await asyncio.sleep(poll_s)
    return True
