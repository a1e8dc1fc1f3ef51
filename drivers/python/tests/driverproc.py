"""Runs the driver as msgbench does: a child process speaking the protocol over pipes. Every
line it writes is checked against spec/driver-protocol.schema.json."""

from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Optional

from jsonschema import Draft202012Validator

from .paths import DRIVER_DIR, RUN_SH, SCHEMA

_VALIDATOR = Draft202012Validator(json.loads(SCHEMA.read_text()))


class ProtocolViolation(AssertionError):
    pass


def validate_line(line: str) -> dict[str, Any]:
    try:
        obj: dict[str, Any] = json.loads(line)
    except json.JSONDecodeError as e:
        raise ProtocolViolation(f"not JSON on stdout: {line!r} ({e})") from None
    errors = sorted(_VALIDATOR.iter_errors(obj), key=lambda e: list(e.path))
    if errors:
        raise ProtocolViolation(f"schema: {errors[0].message} in {line[:300]}")
    return obj


@dataclass
class Driver:
    """One driver process. Lines from its stdout are validated as they are read."""

    process: subprocess.Popen[bytes]
    stderr_file: IO[bytes]
    lines: "queue.Queue[Optional[str]]" = field(default_factory=queue.Queue)
    seen: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def start(cls) -> "Driver":
        stderr_file = tempfile.TemporaryFile()
        process = subprocess.Popen(
            ["bash", str(RUN_SH)],
            cwd=DRIVER_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr_file,
        )
        driver = cls(process, stderr_file)
        threading.Thread(target=driver._pump, daemon=True).start()
        return driver

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.put(raw.decode("utf-8"))
        self.lines.put(None)

    def send(self, obj: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(obj) + "\n").encode())
        self.process.stdin.flush()

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def read(self, timeout_s: float) -> Optional[dict[str, Any]]:
        """The next line, validated; None at end of output."""
        try:
            line = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(f"no line from the driver within {timeout_s} s; stderr: {self.stderr()}") from None
        if line is None:
            return None
        obj = validate_line(line)
        self.seen.append(obj)
        return obj

    def read_until(self, kinds: tuple[str, ...], timeout_s: float) -> dict[str, Any]:
        """Reads lines (progress included) until one of `kinds`; fails on EOF or timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {kinds} within {timeout_s} s; stderr: {self.stderr()}")
            obj = self.read(remaining)
            if obj is None:
                raise AssertionError(f"driver ended before {kinds}; stderr: {self.stderr()}")
            if obj["type"] in kinds:
                return obj

    def wait(self, timeout_s: float = 15.0) -> int:
        try:
            code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"driver did not exit within {timeout_s} s; stderr: {self.stderr()}") from None
        # Anything still on stdout must be valid protocol too.
        while True:
            try:
                line = self.lines.get(timeout=5)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(validate_line(line))
        return code

    def stderr(self) -> str:
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode("utf-8", errors="replace")[-4096:]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@dataclass
class Exchange:
    ready: dict[str, Any]
    result: dict[str, Any]
    exit_code: int
    lines: list[dict[str, Any]]
    stderr: str


def run_scenario(scenario: dict[str, Any], run_timeout_s: float = 60.0) -> Exchange:
    """scenario → ready → start → result → exit, as msgbench runs a driver."""
    driver = Driver.start()
    try:
        driver.send(scenario)
        ready = driver.read_until(("ready", "error"), scenario["connect_timeout_ms"] / 1000 + 10)
        assert ready["type"] == "ready", f"expected ready, got {ready}; stderr: {driver.stderr()}"
        driver.send({"type": "start"})
        result = driver.read_until(("result", "error"), run_timeout_s)
        assert result["type"] == "result", f"expected result, got {result}; stderr: {driver.stderr()}"
        driver.close_stdin()
        code = driver.wait()
        return Exchange(ready, result["result"], code, driver.seen, driver.stderr())
    finally:
        driver.kill()
