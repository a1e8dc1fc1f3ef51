"""HdrHistogram V2 decoding: the per-second interval log msgbench writes with --hist, and the
whole-run histogram in its JSON (latency.hdr). Used by the soak test."""

from __future__ import annotations

import base64
import binascii
import math
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

# The format is the one msgbench/src/export/hdr.rs writes. Bits 4-7 of a cookie carry the
# counter word size (0x10: 8 bytes, what the Rust crate writes); HdrHistogram's decoders mask
# them off, so other writers' cookies read too.
V2_COOKIE_BASE = 0x1C849303
V2_COMPRESSED_COOKIE_BASE = 0x1C849304
COOKIE_WORD_SIZE_BITS = 0xF0
# cookie, payload length, normalizing index offset, significant digits, lowest, highest, ratio
V2_HEADER = struct.Struct(">Iiiiqqd")
assert V2_HEADER.size == 40


@dataclass
class Histogram:
    """An HdrHistogram's layout and its counts array, as far as the percentile math needs it."""

    sigfig: int
    lowest: int
    highest: int
    counts: list[int]

    def __post_init__(self) -> None:
        largest_single_unit = 2 * 10**self.sigfig
        self.unit_magnitude = self.lowest.bit_length() - 1  # floor(log2(lowest))
        sub_bucket_count_magnitude = (largest_single_unit - 1).bit_length()  # ceil(log2(...))
        self.half_magnitude = sub_bucket_count_magnitude - 1
        self.half_count = 1 << self.half_magnitude
        # The counts array of this layout (HdrHistogram's buckets_to_cover and num_bins): a
        # payload that decodes to more entries than this is corrupt, not a bigger histogram.
        smallest_untrackable = (1 << sub_bucket_count_magnitude) << self.unit_magnitude
        buckets = 1
        while smallest_untrackable <= self.highest and buckets < 64:
            smallest_untrackable <<= 1
            buckets += 1
        self.max_len = (buckets + 1) * self.half_count

    @property
    def total(self) -> int:
        return sum(self.counts)

    def layout(self) -> tuple[int, int, int]:
        return (self.sigfig, self.lowest, self.highest)

    def _bucket_and_value(self, index: int) -> tuple[int, int]:
        bucket = (index >> self.half_magnitude) - 1
        sub_bucket = (index & (self.half_count - 1)) + self.half_count
        if bucket < 0:
            # The lower half of bucket 0 is the only half-bucket in use.
            sub_bucket -= self.half_count
            bucket = 0
        return bucket, sub_bucket << (bucket + self.unit_magnitude)

    def value_at_percentile(self, percentile: float) -> int | None:
        """Same rule as the hdrhistogram crate, and so as msgbench's own percentiles: the highest
        value equivalent to the bucket where the running count reaches ceil(q * total). q is
        percentile / 100 as the crate computes it, so 99.9 rounds the same way there and here."""
        q = min(max(percentile / 100.0, 0.0), 1.0)
        total = self.total
        if total == 0:
            return None
        target = max(1, math.ceil(q * total))
        running = 0
        for index, c in enumerate(self.counts):
            running += c
            if running >= target:
                bucket, value = self._bucket_and_value(index)
                if q == 0.0:
                    return value
                return value + (1 << (bucket + self.unit_magnitude)) - 1
        return None  # unreachable: running reaches total, and target <= total

    def merge(self, other: "Histogram") -> None:
        if other.layout() != self.layout():
            raise ValueError(f"cannot merge histograms of different layouts: {self.layout()} vs {other.layout()}")
        if len(other.counts) > len(self.counts):
            self.counts.extend([0] * (len(other.counts) - len(self.counts)))
        for i, c in enumerate(other.counts):
            self.counts[i] += c


def empty_like(h: Histogram) -> Histogram:
    return Histogram(h.sigfig, h.lowest, h.highest, [])


def decode_counts(payload: bytes, max_len: int) -> list[int]:
    """ZigZag LEB128 counts; a negative number is a run of that many empty buckets."""
    counts: list[int] = []
    pos, end = 0, len(payload)
    while pos < end:
        value, shift = 0, 0
        for nth in range(9):
            if pos >= end:
                raise ValueError("truncated varint in the counts payload")
            b = payload[pos]
            pos += 1
            if nth == 8:
                # The 9th byte has no continuation bit: all 8 bits are value (64 = 8*7 + 8).
                value |= b << 56
                break
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        n = (value >> 1) ^ -(value & 1)
        if n < 0:
            counts.extend([0] * min(-n, max_len + 1))
        else:
            counts.append(n)
        if len(counts) > max_len:
            raise ValueError(f"counts payload longer than the histogram's {max_len} buckets")
    return counts


def decode_histogram(text: str) -> Histogram:
    """A base64 V2 deflate-compressed histogram (HdrHistogram's `encodeIntoCompressedByteBuffer`)."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except binascii.Error as e:
        raise ValueError(f"not base64: {e}") from None
    if len(raw) < 8:
        raise ValueError("shorter than the compressed header")
    cookie, length = struct.unpack_from(">Ii", raw, 0)
    if cookie & ~COOKIE_WORD_SIZE_BITS != V2_COMPRESSED_COOKIE_BASE:
        raise ValueError(f"not a V2 compressed histogram (cookie {cookie:#010x})")
    if length < 0 or 8 + length > len(raw):
        raise ValueError(f"compressed length {length} exceeds the {len(raw) - 8} bytes present")
    try:
        inner = zlib.decompress(raw[8 : 8 + length])
    except zlib.error as e:
        raise ValueError(f"deflate: {e}") from None
    if len(inner) < V2_HEADER.size:
        raise ValueError("shorter than the V2 header")
    cookie, payload_len, offset, sigfig, lowest, highest, ratio = V2_HEADER.unpack_from(inner, 0)
    if cookie & ~COOKIE_WORD_SIZE_BITS != V2_COOKIE_BASE:
        raise ValueError(f"not a V2 histogram inside the deflate stream (cookie {cookie:#010x})")
    # A non-zero offset only comes from Java's in-place value shifting, a ratio other than 1
    # from DoubleHistogram; both would change what an index means, and msgbench writes neither.
    if offset != 0:
        raise ValueError(f"normalizing index offset {offset} is not supported")
    if ratio != 1.0:
        raise ValueError(f"integer-to-double conversion ratio {ratio} is not supported")
    if not (0 <= sigfig <= 5) or lowest < 1 or highest < 2 * lowest:
        raise ValueError(f"implausible layout: sigfig {sigfig}, lowest {lowest}, highest {highest}")
    if payload_len < 0 or V2_HEADER.size + payload_len > len(inner):
        raise ValueError(f"payload length {payload_len} exceeds the {len(inner) - V2_HEADER.size} bytes present")
    h = Histogram(sigfig, lowest, highest, [])
    h.counts = decode_counts(inner[V2_HEADER.size : V2_HEADER.size + payload_len], h.max_len)
    return h


@dataclass
class Interval:
    start_s: float  # since the run's zero
    length_s: float
    hist: Histogram


def read_interval_log(path: Path) -> list[Interval]:
    """The intervals of an HdrHistogram interval log: comment lines start with '#', the column
    legend with '"', every other line is start,length,max,histogram (maybe tagged)."""
    out = []
    with open(path, encoding="ascii", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#") or line.startswith('"'):
                continue
            fields = line.split(",")
            if fields[0].startswith("Tag="):
                fields = fields[1:]
            if len(fields) != 4:
                raise ValueError(f"{path.name}:{lineno}: expected 4 comma-separated fields, got {len(fields)}")
            try:
                out.append(Interval(float(fields[0]), float(fields[1]), decode_histogram(fields[3])))
            except ValueError as e:
                raise ValueError(f"{path.name}:{lineno}: {e}") from None
    return out


def merged(intervals: list[Interval]) -> Histogram | None:
    if not intervals:
        return None
    h = empty_like(intervals[0].hist)
    for i in intervals:
        h.merge(i.hist)
    return h

