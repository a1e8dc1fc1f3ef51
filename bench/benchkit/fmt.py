"""Formatting: rates, times, ratios, verdicts, spreads, Markdown tables; and durations."""

from __future__ import annotations

import argparse
import re
import statistics
from typing import Callable

Fmt = Callable[[float], str]


def fmt_rate(v: float | None) -> str:
    """A rate: 3.25M, 412.0k, 950."""
    if v is None:
        return "n/a"
    if v >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v >= 1e3:
        return f"{v / 1e3:.1f}k"
    return f"{v:.0f}"


def fmt_ns(v: float | None) -> str:
    """A time given in nanoseconds, in the unit that suits it."""
    if v is None:
        return "n/a"
    if v >= 1e9:
        return f"{v / 1e9:.2f} s"
    if v >= 1e6:
        return f"{v / 1e6:.2f} ms"
    if v >= 1e3:
        return f"{v / 1e3:.1f} µs"
    return f"{v:.0f} ns"


def fmt_us(v: float | None) -> str:
    """A time given in microseconds."""
    return "n/a" if v is None else f"{v:.2f} µs"


def fmt_ms(ns: float | None) -> str:
    """A time given in nanoseconds, as milliseconds."""
    return "n/a" if ns is None else f"{ns / 1e6:.3f} ms"


def fmt_s(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f} s"


def fmt_size(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def fmt_x(v: float | None) -> str:
    """A ratio: 1.03x."""
    return "n/a" if v is None else f"{v:.2f}x"


def verdict(v: float | None, target: float | None, higher_is_better: bool = True, unit: str = "x") -> str:
    """">= 1.3x: met", "<= 100 ns: MISSED", "no target" or "n/a"."""
    if v is None:
        return "n/a"
    if target is None:
        return "no target"
    met = v >= target if higher_is_better else v <= target
    return f"{'>=' if higher_is_better else '<='} {target:g}{unit}: {'met' if met else 'MISSED'}"


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def spread(values: list[float], fmt: Fmt = fmt_rate) -> str:
    """The median of values, with min–max and their number when there are several."""
    if not values:
        return "n/a"
    med = fmt(statistics.median(values))
    if len(values) == 1:
        return med
    return f"{med} ({fmt(min(values))}–{fmt(max(values))}, n={len(values)})"


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def one_line(text: str, limit: int = 300) -> str:
    """A multi-line message as one Markdown-safe line."""
    s = " / ".join(x.strip() for x in text.strip().splitlines() if x.strip())
    s = s.replace("|", "\\|")
    return s if len(s) <= limit else s[: limit - 3] + "..."


def go_duration(seconds: float) -> str:
    """A duration both msgbench and Go's flag package read: '10s' or '1500ms'."""
    ms = round(seconds * 1000)
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


class Duration(float):
    """Seconds that print as a duration ('10s', '1500ms'), so a report shows them as typed."""

    def __str__(self) -> str:
        return go_duration(self)


def parse_duration(text: str) -> Duration:
    """argparse type: '10s', '1500ms', '2m' or a plain number of seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use e.g. 10s, 1500ms, 2m)")
    return Duration(float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[m.group(2) or "s"])
