"""Connections: nats-py's `NATS.connect` with the scenario's timeouts, and its callbacks wired
to the run's error counts."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from typing import Optional

from nats.aio.client import Client as NATS

from .errors import ErrorCounts, kind_of
from .protocol import DriverError, Scenario

# nats-py's publish() appends to a pending buffer that a background flusher task writes out;
# when the buffer passes `pending_size` bytes, publish() itself awaits a flush (its flow
# control). The library's default, 2 MiB, is kept: it batches ~20,000 small messages per write
# and bounds how long one publisher keeps the event loop to itself.
PENDING_SIZE = 2 * 1024 * 1024


async def flush(nc: NATS, timeout_s: float) -> None:
    """`nc.flush()` (PING/PONG). nats-py annotates the timeout as int seconds but passes it to
    asyncio.wait_for, so a fraction of a second works and is what a short timeout_ms needs."""
    await nc.flush(timeout=timeout_s)  # type: ignore[arg-type]


@dataclass
class ConnectionSet:
    """Every connection of a run, so they can be closed together and a disconnect that the
    driver itself caused (closing) is not counted as an error."""

    scenario: Scenario
    errors: ErrorCounts
    connections: list[NATS] = field(default_factory=list)
    closing: bool = False

    async def open(self, name: str) -> NATS:
        nc = NATS()
        connecting = True
        last_error: list[BaseException] = []

        async def error_cb(exc: Exception) -> None:
            if connecting:
                last_error[:] = [exc]
            elif self.closing:
                return
            elif kind_of(exc) == "disconnected":
                # The same event reaches disconnected_cb, which counts it once.
                print(f"msgbench-driver: {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            else:
                self.errors.add_exception(exc)

        async def disconnected_cb() -> None:
            if not connecting and not self.closing:
                self.errors.add("disconnected", detail=f"{name} lost its connection")

        timeout_s = self.scenario.connect_timeout_ms / 1000.0
        try:
            await asyncio.wait_for(
                nc.connect(
                    servers=self.scenario.servers,
                    name=name,
                    connect_timeout=timeout_s,  # type: ignore[arg-type]  # annotated int, used as float
                    error_cb=error_cb,
                    disconnected_cb=disconnected_cb,
                    pending_size=PENDING_SIZE,
                ),
                timeout=timeout_s,
            )
        except (asyncio.TimeoutError, Exception) as exc:
            cause: Optional[BaseException] = last_error[0] if last_error else exc
            why = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
            raise DriverError(
                "connect", f"cannot connect to {self.scenario.server} within {timeout_s:g} s ({why})"
            ) from None
        connecting = False
        self.connections.append(nc)
        return nc

    async def close_all(self) -> None:
        self.closing = True
        for nc in self.connections:
            try:
                await asyncio.wait_for(nc.close(), timeout=self.scenario.timeout_s)
            except Exception as exc:  # closing is best effort: the result is already written
                print(f"msgbench-driver: close: {kind_of(exc)}: {exc}", file=sys.stderr)
