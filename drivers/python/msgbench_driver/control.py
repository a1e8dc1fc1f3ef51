"""Commands from msgbench on stdin, read without blocking the event loop.

A daemon thread reads stdin line by line and hands each line to the loop with
`call_soon_threadsafe`. It reads the file descriptor with os.read rather than through
sys.stdin's buffered reader, whose lock a daemon thread would still hold at interpreter exit. `stop` and end of input also raise a `threading.Event` straight from the
thread, so a publisher loop that keeps the event loop busy still sees it on its next message.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Iterator, Optional


@dataclass(frozen=True)
class Command:
    """One line from stdin; `kind` is None at end of input."""

    kind: Optional[str]
    line: str
    at_ns: int  # time.monotonic_ns() when the line was read


class Control:
    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int = 0) -> None:
        self._loop = loop
        self._fd = fd
        self._queue: asyncio.Queue[Command] = asyncio.Queue()
        # Raised by `stop` or end of input once the run has started (or before it).
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="msgbench-stdin", daemon=True)

    def start_reading(self) -> None:
        self._thread.start()

    def _lines(self) -> Iterator[bytes]:
        pending = b""
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except InterruptedError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                if pending:
                    yield pending  # a last line without its newline
                return
            pending += chunk
            while True:
                cut = pending.find(b"\n")
                if cut < 0:
                    break
                yield pending[:cut]
                pending = pending[cut + 1 :]

    def _read(self) -> None:
        for raw in self._lines():
            now = time.monotonic_ns()
            line = raw.decode("utf-8", errors="replace").strip()
            if not line:
                continue
            kind: Optional[str]
            try:
                obj = json.loads(line)
                kind = obj.get("type") if isinstance(obj, dict) else None
            except json.JSONDecodeError:
                kind = "?"
            if kind == "stop":
                self.stop.set()
            self._post(Command(kind if isinstance(kind, str) else "?", line, now))
        self.stop.set()
        self._post(Command(None, "", time.monotonic_ns()))

    def _post(self, command: Command) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, command)
        except RuntimeError:
            pass  # the loop is closed: the driver is exiting anyway

    async def next(self) -> Command:
        return await self._queue.get()

    async def wait_start(self) -> Optional[int]:
        """Waits for `start`; returns when it was read, or None after `stop` or end of input."""
        while True:
            command = await self.next()
            if command.kind == "start":
                return command.at_ns
            if command.kind is None or command.kind == "stop":
                return None
            print(f"msgbench-driver: ignoring line before start: {command.line[:200]}", file=sys.stderr)
