"""The `result` object: clients with their spans, delivery, errors, latency and JetStream acks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .histogram import LatencyRecorder
from .delivery import DeliveryTotals


@dataclass
class ClientSpan:
    """One connection's work: a publisher from first send to last send, a subscriber from
    start to last receive."""

    role: str  # "pub" | "sub"
    id: int
    msgs: int = 0
    bytes: int = 0
    first_ns: Optional[int] = None
    last_ns: Optional[int] = None

    def to_json(self) -> dict[str, Any]:
        seconds = 0.0
        if self.first_ns is not None and self.last_ns is not None and self.last_ns > self.first_ns:
            seconds = (self.last_ns - self.first_ns) / 1e9
        return {"role": self.role, "id": self.id, "msgs": self.msgs, "bytes": self.bytes, "seconds": seconds}


@dataclass
class JsAcks:
    """Acknowledged stream sequences: how many, their range, and any acknowledged twice.

    Sequences are remembered in a sparse bitmap (one bit each, in 64 Ki chunks), so a long run
    costs kilobytes, not a Python set entry per message.
    """

    acked: int = 0
    first_seq: int = 0
    last_seq: int = 0
    duplicate_acks: int = 0
    _chunks: dict[int, bytearray] = field(default_factory=dict, repr=False)

    def add(self, seq: int, duplicate: bool) -> None:
        chunk = self._chunks.get(seq >> 16)
        if chunk is None:
            chunk = self._chunks[seq >> 16] = bytearray(8192)
        byte, bit = (seq & 0xFFFF) >> 3, 1 << (seq & 7)
        if duplicate or chunk[byte] & bit:
            self.duplicate_acks += 1
            return
        chunk[byte] |= bit
        self.acked += 1
        if self.first_seq == 0 or seq < self.first_seq:
            self.first_seq = seq
        if seq > self.last_seq:
            self.last_seq = seq

    def to_json(self) -> dict[str, int]:
        return {
            "acked": self.acked,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "duplicate_acks": self.duplicate_acks,
        }


@dataclass
class RunResult:
    interrupted: bool
    clients: list[ClientSpan]
    delivery: DeliveryTotals
    errors: dict[str, int]
    latency: Optional[LatencyRecorder] = None
    js: Optional[JsAcks] = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "interrupted": self.interrupted,
            "clients": [c.to_json() for c in self.clients],
            "delivery": self.delivery.to_json(),
            "errors": self.errors,
        }
        if self.latency is not None:
            out["latency"], out["latency_uncorrected"] = self.latency.sections()
        if self.js is not None:
            out["js"] = self.js.to_json()
        return out
