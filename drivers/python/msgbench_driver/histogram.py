"""Latency histograms: HdrHistogram (the `hdrhistogram` package), nanoseconds, 1 ns to 1 h,
3 significant digits, written as base64 of the V2 deflate-compressed encoding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hdrh.histogram import HdrHistogram

LOWEST_NS = 1
HIGHEST_NS = 3_600_000_000_000
SIGNIFICANT_DIGITS = 3


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)


def encode(histogram: HdrHistogram) -> str:
    """base64 of the V2 compressed encoding (cookie 0x1c849304 family, as the package writes)."""
    return str(histogram.encode().decode("ascii"))


def decode(text: str) -> HdrHistogram:
    return HdrHistogram.decode(text)


@dataclass
class LatencyRecorder:
    """Corrected (from the due time) and uncorrected (from the actual send) latencies.

    Values are clamped into the trackable range, so nothing is silently dropped: 0 ns becomes
    1 ns, anything past an hour is recorded as an hour.
    """

    corrected: HdrHistogram = field(default_factory=new_histogram)
    uncorrected: HdrHistogram = field(default_factory=new_histogram)

    def record(self, corrected_ns: int, uncorrected_ns: int) -> None:
        self.corrected.record_value(min(max(corrected_ns, LOWEST_NS), HIGHEST_NS))
        self.uncorrected.record_value(min(max(uncorrected_ns, LOWEST_NS), HIGHEST_NS))

    @property
    def count(self) -> int:
        return int(self.corrected.get_total_count())

    def sections(self) -> tuple[dict[str, object], dict[str, object]]:
        return section(self.corrected), section(self.uncorrected)


def section(histogram: Optional[HdrHistogram]) -> dict[str, object]:
    h = histogram if histogram is not None else new_histogram()
    return {"count": int(h.get_total_count()), "hdr": encode(h)}
