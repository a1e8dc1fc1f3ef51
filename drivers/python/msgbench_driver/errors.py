"""Error counts by msgbench's kinds, from what nats-py raises or reports to its callbacks."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Iterable

import nats.errors
import nats.js.errors

# JetStream err_codes msgbench tells apart (as msgbench/src/engine/jsapi.rs).
_JS_STREAM_NOT_FOUND = 10059
_JS_WRONG_LAST_SEQUENCE = 10071


class ErrorCounts:
    """Counts by kind. Kinds nats-py reports that have no msgbench name go under `other`."""

    def __init__(self, always: Iterable[str] = ()) -> None:
        self._counts: Counter[str] = Counter({k: 0 for k in always})
        self._logged: set[str] = set()

    def add(self, kind: str, n: int = 1, detail: str = "") -> None:
        self._counts[kind] += n
        if detail and kind not in self._logged:
            # The first of each kind goes to stderr for humans; stdout stays protocol-only.
            self._logged.add(kind)
            print(f"msgbench-driver: {kind}: {detail}", file=sys.stderr)

    def add_exception(self, exc: BaseException) -> str:
        kind = kind_of(exc)
        self.add(kind, detail=f"{type(exc).__name__}: {exc}")
        return kind

    def get(self, kind: str) -> int:
        return self._counts[kind]

    def to_json(self) -> dict[str, int]:
        return dict(sorted(self._counts.items()))


def js_kind(err_code: int | None, description: str) -> str:
    if err_code == _JS_STREAM_NOT_FOUND:
        return "js_stream_not_found"
    if err_code == _JS_WRONG_LAST_SEQUENCE:
        return "js_wrong_last_sequence"
    if "maximum bytes" in description or "maximum messages" in description:
        return "js_stream_full"
    return "js_other"


def _server_error_kind(text: str) -> str:
    t = text.lower()
    for needle, kind in (
        ("slow consumer", "slow_consumer"),
        ("authorization", "authorization"),
        ("maximum payload", "max_payload"),
        ("permissions violation", "permissions_violation"),
        ("invalid subject", "invalid_subject"),
        ("stale connection", "stale_connection"),
    ):
        if needle in t:
            return kind
    return "server_other"


def kind_of(exc: BaseException) -> str:
    """The msgbench error kind for an exception nats-py raised or passed to error_cb."""
    # nats.js.errors.NoStreamResponseError is js.publish's "no responders".
    if isinstance(exc, (nats.errors.NoRespondersError, nats.js.errors.NoStreamResponseError)):
        return "no_responders"
    if isinstance(exc, nats.js.errors.APIError):
        return js_kind(exc.err_code, exc.description or "")
    if isinstance(exc, nats.errors.SlowConsumerError):
        return "slow_consumer"
    if isinstance(exc, nats.errors.UnexpectedEOF):
        return "disconnected"
    if isinstance(exc, nats.errors.FlushTimeoutError):
        return "flush_timeout"
    if isinstance(exc, nats.errors.StaleConnectionError):
        return "stale_connection"
    if isinstance(exc, nats.errors.MaxPayloadError):
        return "max_payload"
    if isinstance(exc, nats.errors.AuthorizationError):
        return "authorization"
    if isinstance(exc, (nats.errors.TimeoutError, TimeoutError)):
        return "request_timeout"
    if isinstance(exc, (nats.errors.ConnectionClosedError, nats.errors.UnexpectedEOF, ConnectionError)):
        return "disconnected"
    if isinstance(exc, nats.errors.OutboundBufferLimitError):
        return "disconnected"
    if isinstance(exc, nats.errors.Error):
        return _server_error_kind(str(exc))
    if isinstance(exc, OSError):
        return "io"
    return "other"
