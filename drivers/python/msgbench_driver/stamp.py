"""Payload stamps.

A payload of 16 bytes or more starts with the message's sequence number (LE u64, from 0 per
publisher) and the publisher's index (LE u64); subscribers read them for delivery accounting
(`delivery.py`).
"""

from __future__ import annotations

import struct

STAMP_LEN = 16
STAMP = struct.Struct("<QQ")


class PayloadMaker:
    """Builds the payloads of one publisher: `size` bytes, stamped when there is room."""

    __slots__ = ("size", "stamped", "_publisher", "_tail", "_fixed")

    def __init__(self, size: int, publisher: int) -> None:
        self.size = size
        self.stamped = size >= STAMP_LEN
        self._publisher = publisher
        self._tail = bytes(size - STAMP_LEN) if self.stamped else b""
        self._fixed = bytes(size)

    def payload(self, seq: int) -> bytes:
        if self.stamped:
            return STAMP.pack(seq, self._publisher) + self._tail
        return self._fixed


def read_stamp(data: bytes) -> tuple[int, int]:
    """(sequence, publisher) of a stamped payload."""
    seq, publisher = STAMP.unpack_from(data)
    return int(seq), int(publisher)
