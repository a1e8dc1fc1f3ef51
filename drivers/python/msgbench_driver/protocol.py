"""The lines of msgbench.driver/v1: the scenario msgbench sends and what the driver writes back.

stdout carries protocol lines only. `Output.take_stdout()` moves the real stdout aside for the
protocol and points file descriptor 1 (and `sys.stdout`) at stderr, so nothing a library prints
can ever corrupt the stream msgbench parses.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import dataclass
from typing import IO, Any, Optional

from . import PROTOCOL

KINDS = ("pubsub", "latency", "request", "js_pub")


class DriverError(Exception):
    """A reason to write an `error` line and exit with status 2."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class JsSpec:
    stream: str
    mode: str  # "sync" | "async"


@dataclass(frozen=True)
class Scenario:
    kind: str
    server: str
    subject: str
    size: int
    msgs: Optional[int]
    duration_ms: Optional[int]
    rate: float
    pubs: int
    subs: int
    in_flight: int
    warmup_ms: int
    timeout_ms: int
    connect_timeout_ms: int
    js: Optional[JsSpec]

    @property
    def servers(self) -> list[str]:
        return [s.strip() for s in self.server.split(",") if s.strip()]

    @property
    def timeout_s(self) -> float:
        return self.timeout_ms / 1000.0

    @property
    def stamped(self) -> bool:
        """Payloads of 16 bytes or more carry the sequence and publisher stamp."""
        return self.size >= 16


def _int(obj: dict[str, Any], key: str, minimum: int, nullable: bool = False) -> Optional[int]:
    value = obj.get(key)
    if value is None and nullable:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise DriverError("usage", f"scenario field {key!r} must be an integer >= {minimum}, got {value!r}")
    return value


def parse_scenario(line: str) -> Scenario:
    """Reads the first line msgbench writes. Raises DriverError(usage|unsupported)."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise DriverError("usage", f"the first line is not JSON: {e}") from None
    if not isinstance(obj, dict) or obj.get("type") != "scenario":
        raise DriverError("usage", "the first line must be a scenario object")
    if obj.get("protocol") != PROTOCOL:
        raise DriverError("unsupported", f"protocol {obj.get('protocol')!r}; this driver speaks {PROTOCOL}")
    kind = obj.get("kind")
    if kind not in KINDS:
        raise DriverError("unsupported", f"kind {kind!r} is not supported (supported: {', '.join(KINDS)})")
    for key in ("server", "subject"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise DriverError("usage", f"scenario field {key!r} must be a non-empty string")
    msgs = _int(obj, "msgs", 1, nullable=True)
    duration_ms = _int(obj, "duration_ms", 1, nullable=True)
    if (msgs is None) == (duration_ms is None):
        raise DriverError("usage", "exactly one of msgs and duration_ms must be set")
    rate = obj.get("rate")
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate < 0:
        raise DriverError("usage", f"scenario field 'rate' must be a number >= 0, got {rate!r}")
    js: Optional[JsSpec] = None
    raw_js = obj.get("js")
    if raw_js is not None:
        if (
            not isinstance(raw_js, dict)
            or not isinstance(raw_js.get("stream"), str)
            or raw_js.get("mode") not in ("sync", "async")
        ):
            raise DriverError("usage", "scenario field 'js' must be {stream, mode: sync|async}")
        js = JsSpec(stream=raw_js["stream"], mode=raw_js["mode"])
    scenario = Scenario(
        kind=kind,
        server=obj["server"],
        subject=obj["subject"],
        size=_int(obj, "size", 0) or 0,
        msgs=msgs,
        duration_ms=duration_ms,
        rate=float(rate),
        pubs=_int(obj, "pubs", 1) or 1,
        subs=_int(obj, "subs", 0) or 0,
        in_flight=_int(obj, "in_flight", 1) or 1,
        warmup_ms=_int(obj, "warmup_ms", 0) or 0,
        timeout_ms=_int(obj, "timeout_ms", 1) or 1,
        connect_timeout_ms=_int(obj, "connect_timeout_ms", 1) or 1,
        js=js,
    )
    if kind == "latency" and scenario.rate <= 0:
        raise DriverError("usage", "latency needs a rate above 0")
    if kind == "js_pub" and js is None:
        raise DriverError("usage", "js_pub needs the 'js' object")
    if not scenario.servers:
        raise DriverError("usage", "no server URL in 'server'")
    return scenario


class Output:
    """Writes protocol lines, one JSON object each, flushed at once. Safe from any thread."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    @classmethod
    def take_stdout(cls) -> "Output":
        sys.stdout.flush()
        proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        return cls(proto)

    def write(self, message: dict[str, Any]) -> None:
        text = json.dumps(message, separators=(",", ":"), allow_nan=False)
        with self._lock:
            self._stream.write(text + "\n")
            self._stream.flush()

    def ready(self, client: dict[str, str]) -> None:
        self.write({"type": "ready", "client": client})

    def progress(self, t_s: float, sent: int, received: int) -> None:
        self.write({"type": "progress", "t_s": round(t_s, 3), "sent": sent, "received": received})

    def result(self, result: dict[str, Any]) -> None:
        self.write({"type": "result", "result": result})

    def error(self, kind: str, message: str) -> None:
        self.write({"type": "error", "kind": kind, "message": message})
