"""spec/vectors/hdr: the hdrhistogram package against the shared encodings.

The package has no public uncompressed encoder: its HdrHistogramEncoder zlib-compresses the V2
payload inside `encode()`. The uncompressed V2 bytes are therefore read back by inflating the
package's own compressed output (strip the 8-byte cookie+length header, zlib-decompress).
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from msgbench_driver.histogram import HIGHEST_NS, LOWEST_NS, SIGNIFICANT_DIGITS, decode, encode, new_histogram

from .paths import HDR_VECTORS

VECTORS = sorted(HDR_VECTORS.glob("*.json"))
V2_COOKIE = 0x1C849313
V2_COMPRESSED_COOKIE = 0x1C849314
_HEADER = struct.Struct(">IIIIqqd")  # cookie, payload_len, normalizing offset, digits, low, high, ratio


def load(path: Path) -> dict[str, Any]:
    vector: dict[str, Any] = json.loads(path.read_text())
    return vector


def buckets(histogram: Any) -> list[list[int]]:
    """[highest equivalent value, count] for every recorded bucket, ascending."""
    return [
        [histogram.get_highest_equivalent_value(item.value_iterated_to), item.count_at_value_iterated_to]
        for item in histogram.get_recorded_iterator()
    ]


def uncompressed(compressed_b64: str) -> bytes:
    raw = base64.b64decode(compressed_b64)
    cookie, length = struct.unpack_from(">II", raw)
    assert cookie == V2_COMPRESSED_COOKIE
    assert length == len(raw) - 8
    return zlib.decompress(raw[8:])


def _zigzag_varints(payload: bytes) -> list[int]:
    """HdrHistogram's LEB128-64 (at most 9 bytes; the 9th carries 8 bits), zigzag-decoded."""
    out, i = [], 0
    while i < len(payload):
        value = 0
        for k in range(9):
            b = payload[i]
            i += 1
            if k == 8:
                value |= b << 56
                break
            value |= (b & 0x7F) << (7 * k)
            if not b & 0x80:
                break
        out.append((value >> 1) ^ -(value & 1))
    return out


def v2_counts(data: bytes) -> tuple[tuple[int, ...], list[int]]:
    """(header without payload_len, counts with zero runs expanded and trailing zeros cut)."""
    cookie, payload_len, offset, digits, low, high, ratio = _HEADER.unpack_from(data)
    payload = data[_HEADER.size : _HEADER.size + payload_len]
    assert len(payload) == payload_len
    counts: list[int] = []
    for n in _zigzag_varints(payload):
        counts.extend([0] * -n if n < 0 else [n])
    while counts and counts[-1] == 0:
        counts.pop()
    return (cookie, offset, digits, low, high, int(ratio)), counts


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_decodes_compressed_vector_to_listed_counts(path: Path) -> None:
    v = load(path)
    h = decode(v["v2_compressed_base64"])
    assert h.get_total_count() == v["total_count"]
    assert buckets(h) == v["recorded_buckets"]
    assert (h.lowest_trackable_value, h.highest_trackable_value, h.significant_figures) == (
        v["lowest_discernible"],
        v["highest_trackable"],
        v["significant_digits"],
    )
    if v["total_count"]:
        assert h.get_max_value() == v["max"]
        assert h.get_min_value() == v["min"]


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_values_round_trip_through_our_encoding(path: Path) -> None:
    v = load(path)
    h = new_histogram()
    assert (LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS) == (v["lowest_discernible"], v["highest_trackable"], v["significant_digits"])
    for value, count in v["values"]:
        assert h.record_value(value, count)
    text = encode(h)
    assert text.startswith("HISTF")  # base64 of cookie 0x1c849314: V2 compressed
    again = decode(text)
    assert again.get_total_count() == v["total_count"]
    assert buckets(again) == v["recorded_buckets"]


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_uncompressed_v2_matches_vector(path: Path) -> None:
    """Same header and the same counts as the vector's uncompressed V2 bytes.

    Byte for byte they can differ in two ways that any V2 decoder reads the same (checked by
    test_uncompressed_v2_differences_are_encoder_choices): the package writes a single empty
    bucket as a zero run of length 1 (zigzag -1, 0x01) where the vector has a literal 0 (0x00),
    and an empty histogram with no counts at all (payload_len 0) where the vector has one 0.
    """
    v = load(path)
    h = new_histogram()
    for value, count in v["values"]:
        h.record_value(value, count)
    ours = uncompressed(encode(h))
    theirs = base64.b64decode(v["v2_base64"])
    assert v2_counts(ours) == v2_counts(theirs)
    assert struct.unpack_from(">I", ours)[0] == V2_COOKIE
    # The vector's own compressed form inflates to its uncompressed form exactly.
    assert uncompressed(v["v2_compressed_base64"]) == theirs


def test_uncompressed_v2_bytes_identical_without_single_zero_runs() -> None:
    v = load(HDR_VECTORS / "latency_tail.json")
    h = new_histogram()
    for value, count in v["values"]:
        h.record_value(value, count)
    assert uncompressed(encode(h)) == base64.b64decode(v["v2_base64"])


def test_uncompressed_v2_differences_are_encoder_choices() -> None:
    edges = load(HDR_VECTORS / "edges.json")
    h = new_histogram()
    for value, count in edges["values"]:
        h.record_value(value, count)
    ours, theirs = uncompressed(encode(h)), base64.b64decode(edges["v2_base64"])
    diff = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    assert len(ours) == len(theirs) and diff == [_HEADER.size] and (ours[diff[0]], theirs[diff[0]]) == (1, 0)

    ours_empty = uncompressed(encode(new_histogram()))
    theirs_empty = base64.b64decode(load(HDR_VECTORS / "empty.json")["v2_base64"])
    assert ours_empty[:4] + ours_empty[8:] == theirs_empty[:4] + theirs_empty[8 : _HEADER.size]
    assert struct.unpack_from(">I", ours_empty, 4)[0] == 0 and theirs_empty[_HEADER.size :] == b"\x00"


def test_out_of_range_latencies_are_clamped_not_dropped() -> None:
    from msgbench_driver.histogram import LatencyRecorder

    r = LatencyRecorder()
    r.record(0, -5)
    r.record(HIGHEST_NS * 2, HIGHEST_NS)
    assert r.count == 2
    assert r.corrected.get_min_value() == 1
    assert r.uncorrected.get_total_count() == 2
