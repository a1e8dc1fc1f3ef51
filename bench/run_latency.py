#!/usr/bin/env python3
"""Side-by-side latency benchmark: msgbench vs. a nats.go reference.

This is a benchmark, not a test: it has no pass/fail exit status tied to
performance, and it must never be run as a timed test in CI.

Usage:
    python3 bench/run_latency.py [--rounds 5] [--duration 10s] [--warmup 1s]
                                 [--requests 20000] [--rss-short 10s]
                                 [--rss-long 30s] [--rss-rate 100000]
                                 [--out bench/RESULTS-latency.md]
                                 [--timeout 120] [--no-build] [--no-memory]

It starts one nats-server on 127.0.0.1 (a free port), builds msgbench
(`cargo build --release`) and the reference (`go build` in bench/ref), and
runs three cases for a number of rounds with a rotating tool order:

  1. end-to-end latency at 1,000 msgs/s, 8 B;
  2. end-to-end latency at 100,000 msgs/s, 4 KiB;
  3. closed-loop request/reply, 1 client, 16 B (with `msgbench calibrate`
     for the round-trip floor of the machine);

then the peak memory of `msgbench latency` over a short and a long run. It
prints a table of medians and per-round ratios; the same report is written
as Markdown to --out.

The shared machinery (child processes with rusage and VmHWM sampling, the
nats-server, builds, formatting) is run.py's.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import (  # noqa: E402  (run.py lives next to this file)
    BENCH,
    BUILDS,
    NatsServer,
    Run,
    build_tools,
    commands_block,
    dig,
    drive,
    entry,
    fmt_rate,
    log,
    md_table,
    notes_block,
    num,
    one_line,
    peak_kb,
    run_child,
    scrub_paths,
    show_cmd,
    summary,
)

# Targets. Latency ratios are msgbench (corrected) / ref: lower is better.
TARGET_LAT1K_P50 = 0.7
TARGET_LAT1K_P99 = 0.5
TARGET_LAT100K_P99 = 0.5
TARGET_REQ_RPS = 1.3
TARGET_REQ_FLOOR = 1.5  # msgbench request P50 / two-hop floor P50
TARGET_RSS_GROWTH = 1.10  # peak RSS of the long run / the short run

# A latency run takes its duration plus up to 5 s of draining; the time limit
# of a run is at least its duration plus this.
DURATION_SLACK_S = 60.0

# Reported percentiles: key in our metrics, msgbench's percentiles_ns key,
# ref's JSON field, column title.
PERCENTILES = (
    ("p50", "50", "p50_ns", "P50"),
    ("p90", "90", "p90_ns", "P90"),
    ("p99", "99", "p99_ns", "P99"),
    ("p999", "99.9", "p999_ns", "P99.9"),
    ("max", "100", "max_ns", "max"),
)


# --------------------------------------------------------------------------
# Values


def parse_duration(text: str) -> float:
    """'10s', '1500ms', '2m' or a plain number of seconds -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use e.g. 10s, 1500ms, 2m)")
    value = float(m.group(1))
    unit = m.group(2) or "s"
    return value * {"ms": 0.001, "s": 1.0, "m": 60.0}[unit]


def go_duration(seconds: float) -> str:
    """A duration both msgbench and Go's flag package read: '10s' or '1500ms'."""
    ms = round(seconds * 1000)
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def fmt_ns(v: float | None) -> str:
    if v is None:
        return "n/a"
    if v >= 1e9:
        return f"{v / 1e9:.2f} s"
    if v >= 1e6:
        return f"{v / 1e6:.2f} ms"
    if v >= 1e3:
        return f"{v / 1e3:.1f} µs"
    return f"{v:.0f} ns"


def fmt_med(values: list[float], fmt=fmt_ns) -> str:
    s = summary(values)
    if s is None:
        return "n/a"
    med, lo, hi = s
    if len(values) == 1:
        return fmt(med)
    return f"{fmt(med)} ({fmt(lo)}–{fmt(hi)}, n={len(values)})"


def fmt_size(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def fmt_x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}x"


def verdict(v: float | None, target: float, higher_is_better: bool) -> str:
    if v is None:
        return "n/a"
    ok = v >= target if higher_is_better else v <= target
    op = ">=" if higher_is_better else "<="
    return f"{op} {target:g}x: {'met' if ok else 'MISSED'}"


# --------------------------------------------------------------------------
# Commands and metrics


def msgbench_latency_cmd(b: str, url: str, rate: int, seconds: float, size: int, warmup: float, subject: str) -> list[str]:
    return [
        b, "latency", "--server", url, "--rate", str(rate), "--duration", go_duration(seconds),
        "--size", str(size), "--warmup", go_duration(warmup), "--subject", subject,
        "--no-progress", "--json", "-",
    ]  # fmt: skip


def ref_latency_cmd(b: str, url: str, rate: int, seconds: float, size: int, warmup: float, subject: str) -> list[str]:
    return [
        b, "latency", "-url", url, "-rate", str(rate), "-duration", go_duration(seconds),
        "-size", str(size), "-warmup", go_duration(warmup), "-subject", subject,
    ]  # fmt: skip


def msgbench_request_cmd(b: str, url: str, msgs: int, size: int, subject: str) -> list[str]:
    return [
        b, "request", "--server", url, "--clients", "1", "--msgs", str(msgs), "--size", str(size),
        "--subject", subject, "--no-progress", "--json", "-",
    ]  # fmt: skip


def ref_request_cmd(b: str, url: str, msgs: int, size: int, subject: str) -> list[str]:
    return [b, "request", "-url", url, "-msgs", str(msgs), "-size", str(size), "-subject", subject]


def calibrate_cmd(b: str, url: str) -> list[str]:
    return [b, "calibrate", "--server", url, "--json", "-"]


def latency_metrics(tool: str, d: dict | None) -> dict:
    """p50..max (msgbench: corrected; u_p50..u_max: uncorrected), rate, lost, count."""
    m: dict = {}
    if tool == "msgbench":
        for key, mb_key, _, _ in PERCENTILES:
            v = num(dig(d, "latency", "percentiles_ns", mb_key))
            if v is not None:
                m[key] = v
            u = num(dig(d, "latency_uncorrected", "percentiles_ns", mb_key))
            if u is not None:
                m["u_" + key] = u
        for key, path in (("rate", ("pacing", "actual_rate")), ("lost", ("delivery", "lost")), ("count", ("latency", "count"))):
            v = num(dig(d, *path))
            if v is not None:
                m[key] = v
    else:
        for key, _, ref_key, _ in PERCENTILES:
            v = num(dig(d, ref_key))
            if v is not None:
                m[key] = v
        for key, field in (("rate", "actual_rate"), ("lost", "lost"), ("count", "count")):
            v = num(dig(d, field))
            if v is not None:
                m[key] = v
    return m


def request_metrics(tool: str, d: dict | None) -> dict:
    """rps, p50, p99, and unanswered: requests without a reply in time
    (ref: timeouts; msgbench: delivery.lost)."""
    m: dict = {}
    if tool == "msgbench":
        fields = {
            "rps": ("throughput", "msgs_per_sec"),
            "p50": ("latency", "percentiles_ns", "50"),
            "p99": ("latency", "percentiles_ns", "99"),
            "unanswered": ("delivery", "lost"),
        }
    else:
        fields = {"rps": ("req_per_sec",), "p50": ("p50_ns",), "p99": ("p99_ns",), "unanswered": ("timeouts",)}
    for key, path in fields.items():
        v = num(dig(d, *path))
        if v is not None:
            m[key] = v
    return m


def calibrate_metrics(d: dict | None) -> dict:
    m: dict = {}
    for hop in ("tcp", "one_hop", "two_hop"):
        for q in ("p50", "p99"):
            v = num(dig(d, "environment", "floor_ns", hop, q))
            if v is not None:
                m[f"{hop}_{q}"] = v
    return m


# What a run must report to count.
REQUIRED = {"latency": ("p50", "p99"), "request": ("rps", "p50"), "calibrate": ("two_hop_p50",)}


# --------------------------------------------------------------------------
# The benchmark


@dataclass
class Case:
    key: str
    title: str
    mode: str  # "latency" or "request"
    size: int
    subject: str
    rate: int = 0  # latency only
    tools: tuple[str, ...] = ("msgbench", "ref")


CASES = [
    Case("lat1k", "latency, 1,000 msgs/s, 8 B", "latency", 8, "bench.lat", rate=1_000),
    Case("lat100k", "latency, 100,000 msgs/s, 4 KiB", "latency", 4096, "bench.lat", rate=100_000),
    Case("req16", "request/reply, 1 client, 16 B", "request", 16, "bench.req", tools=("msgbench", "ref", "calibrate")),
]


class Bench:
    def __init__(self, args: argparse.Namespace, workdir: Path):
        self.args = args
        self.workdir = workdir
        self.bins: dict[str, str | None] = {"msgbench": None, "ref": None}
        self.unavailable: dict[str, str] = {}
        # (tool, mode) that failed with a usage error: the rest of its rounds are skipped.
        self.unsupported: dict[tuple[str, str], str] = {}
        self.failures: list[tuple[str, str, str]] = []  # (label, tool, error)
        self.kept: list[tuple[str, str, str]] = []  # non-zero exit, result used anyway
        self.notes: list[str] = []
        self.server: NatsServer | None = None
        # results[case_key][tool] = list of Run, one per round (None: failed or skipped)
        self.results: dict[str, dict[str, list[Run | None]]] = {}
        self.memory: list[tuple[str, float, Run]] = []  # (tool, seconds, run)
        self.shown_cmds: dict[str, str] = {}

    # ----- display helpers (no machine-specific paths in the report)

    def show(self, cmd: list[str]) -> str:
        return show_cmd(self.bins, self.server, cmd)

    # ----- builds

    def build_all(self) -> None:
        build_tools(self.args, self.workdir, self.bins, self.unavailable, {"msgbench": ["calibrate"]})

    # ----- running

    def cmd_for(self, tool: str, case: Case, seconds: float, for_display: bool = False) -> list[str] | None:
        """The command line of one run; None if the tool is unavailable
        (unless for_display, which shows the command line regardless)."""
        url = self.server.url
        a = self.args
        if tool in ("msgbench", "calibrate"):
            b = self.bins["msgbench"] or ("target/release/msgbench" if for_display else None)
        else:
            b = self.bins["ref"] or ("ref" if for_display else None)
        if b is None:
            return None
        if tool == "calibrate":
            return calibrate_cmd(b, url)
        if case.mode == "latency":
            make = msgbench_latency_cmd if tool == "msgbench" else ref_latency_cmd
            return make(b, url, case.rate, seconds, case.size, a.warmup, case.subject)
        make = msgbench_request_cmd if tool == "msgbench" else ref_request_cmd
        return make(b, url, a.requests, case.size, case.subject)

    def run_one(self, label: str, tool: str, case: Case, seconds: float, sample_rss: bool = False) -> Run | None:
        mode = "calibrate" if tool == "calibrate" else case.mode
        if (tool, mode) in self.unsupported:
            return None
        cmd = self.cmd_for(tool, case, seconds)
        if cmd is None:
            return None
        timeout = self.args.timeout
        if mode == "latency":
            timeout = max(timeout, seconds + DURATION_SLACK_S)
        res = run_child(cmd, timeout, self.workdir, sample_rss)
        if res.data is not None:
            if mode == "latency":
                res.metrics = latency_metrics(tool, res.data)
            elif mode == "request":
                res.metrics = request_metrics(tool, res.data)
            else:
                res.metrics = calibrate_metrics(res.data)
        has_all = all(k in res.metrics for k in REQUIRED[mode])
        if not res.ok:
            # A non-zero exit with a usable result (e.g. msgbench reporting
            # lost messages) is kept, but noted.
            if res.exit_code not in (None, 0) and has_all and "timed out" not in res.error:
                self.kept.append((label, tool, res.error))
                res.ok = True
            else:
                self.failures.append((label, tool, res.error))
                # Exit status 2 without a result is a usage error (say, a
                # subcommand this build does not have): it would fail the
                # same way in every round.
                if res.exit_code == 2 and res.data is None:
                    self.unsupported[(tool, mode)] = res.error
                    log(f"{label} {tool}: usage error; skipping its remaining {mode} runs")
        elif not has_all:
            res.error = "result JSON lacks the expected fields"
            self.failures.append((label, tool, res.error))
            res.ok = False
        return res

    def describe(self, mode: str, m: dict) -> str:
        if mode == "latency":
            s = f"P50 {fmt_ns(m.get('p50'))}, P99 {fmt_ns(m.get('p99'))}"
            if "u_p50" in m:
                s += f" (uncorrected P50 {fmt_ns(m.get('u_p50'))}, P99 {fmt_ns(m.get('u_p99'))})"
            return s + f", rate {fmt_rate(m.get('rate'))}/s, lost {int(m['lost']) if 'lost' in m else 'n/a'}"
        if mode == "request":
            return f"{fmt_rate(m.get('rps'))} req/s, P50 {fmt_ns(m.get('p50'))}, P99 {fmt_ns(m.get('p99'))}"
        return f"two-hop floor P50 {fmt_ns(m.get('two_hop_p50'))}, P99 {fmt_ns(m.get('two_hop_p99'))}"

    def run_cases(self) -> None:
        a = self.args
        for case in CASES:
            self.results[case.key] = {t: [] for t in case.tools}
            for t in case.tools:
                cmd = self.cmd_for(t, case, a.duration, for_display=True)
                self.shown_cmds[f"{case.title}: {t}"] = self.show(cmd)
            for r in range(a.rounds):
                k = r % len(case.tools)
                order = case.tools[k:] + case.tools[:k]
                for tool in order:
                    label = f"[{case.title}] round {r + 1}/{a.rounds}"
                    res = self.run_one(label, tool, case, a.duration)
                    self.results[case.key][tool].append(res if res is not None and res.ok else None)
                    if res is None:
                        continue
                    mode = "calibrate" if tool == "calibrate" else case.mode
                    if res.ok:
                        log(f"{label} {tool}: {self.describe(mode, res.metrics)}")
                    else:
                        log(f"{label} {tool}: FAILED: {res.error}")

    def run_memory(self) -> None:
        a = self.args
        case = Case("rss", f"latency, {a.rss_rate:,} msgs/s, 8 B", "latency", 8, "bench.lat", rate=a.rss_rate)
        plan = [(tool, secs) for tool in ("msgbench", "ref") for secs in (a.rss_short, a.rss_long)]
        for tool, secs in plan:
            cmd = self.cmd_for(tool, case, secs, for_display=True)
            self.shown_cmds[f"memory: {tool} {go_duration(secs)}"] = self.show(cmd)
            label = f"[memory {case.title}, {go_duration(secs)}]"
            res = self.run_one(label, tool, case, secs, sample_rss=True)
            if res is None:
                continue
            self.memory.append((tool, secs, res))
            if res.ok:
                log(f"{label} {tool}: peak RSS {peak_kb(res) / 1024:.1f} MB")
            else:
                log(f"{label} {tool}: FAILED: {res.error}")

    # ----- analysis

    def values(self, case: str, tool: str, metric: str) -> list[float]:
        return [r.metrics[metric] for r in self.results.get(case, {}).get(tool, []) if r is not None and metric in r.metrics]

    def ratios(self, case: str, a: str, ma: str, b: str, mb: str) -> list[float]:
        """Per-round ratios of metric ma of tool a to metric mb of tool b."""
        out = []
        for x, y in zip(self.results.get(case, {}).get(a, []), self.results.get(case, {}).get(b, [])):
            if x is None or y is None:
                continue
            vx, vy = x.metrics.get(ma), y.metrics.get(mb)
            if vx is not None and vy:
                out.append(vx / vy)
        return out

    def median_ratio(self, *args) -> float | None:
        s = summary(self.ratios(*args))
        return s[0] if s else None

    def cell(self, case: Case, tool: str, metric: str, fmt=fmt_ns) -> str:
        if tool in self.unavailable:
            return "unavailable"
        mode = "calibrate" if tool == "calibrate" else case.mode
        if (tool, mode) in self.unsupported:
            return "not supported"
        if not any(self.results.get(case.key, {}).get(tool, [])):
            return "failed"
        return fmt_med(self.values(case.key, tool, metric), fmt)

    # ----- report

    def latency_section(self, case: Case, targets: dict[str, float], out: list[str], targets_rows: list[list[str]]) -> None:
        a = self.args
        out.append(f"## End-to-end latency, {case.rate:,} msgs/s, {fmt_size(case.size)}, {go_duration(a.duration)} ({go_duration(a.warmup)} warm-up)")
        out.append("")
        rows = []
        for name, tool, prefix in (
            ("msgbench, corrected (headline)", "msgbench", ""),
            ("msgbench, uncorrected", "msgbench", "u_"),
            ("ref (nats.go, latency-tests method)", "ref", ""),
        ):
            row = [name] + [self.cell(case, tool, prefix + key) for key, _, _, _ in PERCENTILES]
            row.append(self.cell(case, tool, "rate", fmt_rate))
            lost = [int(r.metrics["lost"]) for r in self.results[case.key][tool] if r is not None and "lost" in r.metrics]
            row.append(", ".join(str(x) for x in lost) if lost else "n/a")
            rows.append(row)
        out.append(md_table(["", *(p[3] for p in PERCENTILES), "actual rate (msgs/s)", "lost per round"], rows))
        out.append("")
        ratio_rows = []
        for key, _, _, title in PERCENTILES:
            corr = self.median_ratio(case.key, "msgbench", key, "ref", key)
            unc = self.median_ratio(case.key, "msgbench", "u_" + key, "ref", key)
            target = targets.get(key)
            ratio_rows.append([title, fmt_x(corr), verdict(corr, target, False) if target else "–", fmt_x(unc)])
            if target:
                targets_rows.append([f"{case.title}: {title}, msgbench (corrected) / ref", fmt_x(corr), verdict(corr, target, False)])
        out.append(md_table(["percentile", "msgbench corrected / ref", "target", "msgbench uncorrected / ref (context)"], ratio_rows))
        out.append("")

    def request_section(self, case: Case, out: list[str], targets_rows: list[list[str]]) -> None:
        a = self.args
        out.append(f"## Request/reply, closed loop, 1 client, {fmt_size(case.size)}, {a.requests:,} requests")
        out.append("")
        rows = []
        for tool in ("msgbench", "ref"):
            row = [tool, self.cell(case, tool, "rps", fmt_rate), self.cell(case, tool, "p50"), self.cell(case, tool, "p99")]
            unanswered = [int(r.metrics["unanswered"]) for r in self.results[case.key][tool] if r is not None and "unanswered" in r.metrics]
            row.append(", ".join(str(x) for x in unanswered) if unanswered else "n/a")
            rows.append(row)
        out.append(md_table(["tool", "requests/s", "P50 round trip", "P99 round trip", "unanswered (timed out) per round"], rows))
        out.append("")
        out.append("Round-trip floor of this machine (`msgbench calibrate`, one run per round):")
        out.append("")
        floor_rows = []
        for hop, title in (("tcp", "tcp"), ("one_hop", "one_hop"), ("two_hop", "two_hop (request and reply)")):
            floor_rows.append([title, self.cell(case, "calibrate", f"{hop}_p50"), self.cell(case, "calibrate", f"{hop}_p99")])
        out.append(md_table(["environment.floor_ns", "P50", "P99"], floor_rows))
        out.append("")
        rps = self.median_ratio(case.key, "msgbench", "rps", "ref", "rps")
        floor = self.median_ratio(case.key, "msgbench", "p50", "calibrate", "two_hop_p50")
        ref_floor = self.median_ratio(case.key, "ref", "p50", "calibrate", "two_hop_p50")
        p50 = self.median_ratio(case.key, "msgbench", "p50", "ref", "p50")
        out.append(
            md_table(
                ["ratio", "value", "target"],
                [
                    ["requests/s, msgbench / ref", fmt_x(rps), verdict(rps, TARGET_REQ_RPS, True)],
                    ["P50, msgbench / two-hop floor P50", fmt_x(floor), verdict(floor, TARGET_REQ_FLOOR, False)],
                    ["P50, ref / two-hop floor P50 (context)", fmt_x(ref_floor), "–"],
                    ["P50, msgbench / ref (context)", fmt_x(p50), "–"],
                ],
            )
        )
        out.append("")
        targets_rows.append([f"{case.title}: requests/s, msgbench / ref", fmt_x(rps), verdict(rps, TARGET_REQ_RPS, True)])
        targets_rows.append([f"{case.title}: msgbench P50 / two-hop floor", fmt_x(floor), verdict(floor, TARGET_REQ_FLOOR, False)])

    def memory_section(self, out: list[str], targets_rows: list[list[str]]) -> None:
        a = self.args
        out.append(f"## Peak memory of a latency run ({a.rss_rate:,} msgs/s, 8 B)")
        out.append("")
        out.append(
            "Peak RSS is the child's own VmHWM, sampled every 5 ms until it exits (see run.py). "
            "If memory use does not depend on the length of the run, the long run peaks about as "
            "high as the short one (ratio about 1.00x)."
        )
        out.append("")
        rows = []
        peaks: dict[str, dict[float, float]] = {}
        for tool, secs, run in self.memory:
            if not run.ok:
                rows.append([tool, go_duration(secs), "failed", "n/a"])
                continue
            mb = peak_kb(run) / 1024
            peaks.setdefault(tool, {})[secs] = mb
            sent = run.data.get("sent") if tool == "ref" else dig(run.data, "delivery", "sent")
            rows.append([tool, go_duration(secs), f"{mb:.1f} MB", str(sent) if sent is not None else "n/a"])
        if rows:
            out.append(md_table(["tool", "duration", "peak RSS", "messages sent"], rows))
        else:
            out.append("No memory runs completed.")
        out.append("")
        for tool in ("msgbench", "ref"):
            p = peaks.get(tool, {})
            short, long_ = p.get(a.rss_short), p.get(a.rss_long)
            growth = long_ / short if short and long_ is not None else None
            label = f"peak RSS, {go_duration(a.rss_long)} / {go_duration(a.rss_short)} run"
            if tool == "msgbench":
                targets_rows.append([f"msgbench {label}", fmt_x(growth), verdict(growth, TARGET_RSS_GROWTH, False)])
            elif growth is not None:
                self.notes.append(f"ref {label}: {growth:.2f}x (for comparison)")

    def report(self, env: dict[str, str]) -> str:
        a = self.args
        out: list[str] = []
        targets_rows: list[list[str]] = []
        body: list[str] = []
        self.latency_section(CASES[0], {"p50": TARGET_LAT1K_P50, "p99": TARGET_LAT1K_P99}, body, targets_rows)
        self.latency_section(CASES[1], {"p99": TARGET_LAT100K_P99}, body, targets_rows)
        self.request_section(CASES[2], body, targets_rows)
        if not a.no_memory:
            self.memory_section(body, targets_rows)

        out.append("# msgbench latency side-by-side benchmark")
        out.append("")
        invocation = (
            f"--rounds {a.rounds} --duration {go_duration(a.duration)} --warmup {go_duration(a.warmup)} "
            f"--requests {a.requests}"
        )
        if a.no_memory:
            invocation += " --no-memory"
        else:
            invocation += f" --rss-short {go_duration(a.rss_short)} --rss-long {go_duration(a.rss_long)} --rss-rate {a.rss_rate}"
        out.append(
            f"Generated by `python3 bench/run_latency.py {invocation}`. "
            "Figures are medians over the rounds (min–max in parentheses); ratios are the median "
            "of per-round ratios (each round runs the tools back to back in a rotating order "
            "against the same server). Latency ratios compare msgbench's corrected figures "
            "(measured from the scheduled send time) with the reference's, which are measured "
            "from the actual send time like msgbench's uncorrected ones; lower is better. "
            "This is a benchmark, not a test."
        )
        out.append("")
        out.append(md_table(["fact", "value"], [[k, v] for k, v in env.items()]))
        out.append("")
        out.append("## Targets")
        out.append("")
        out.append(md_table(["target", "measured", "verdict"], targets_rows))
        out.append("")
        out.extend(body)

        out += commands_block(self.show(self.server.cmd) if self.server is not None else None, BUILDS, self.shown_cmds)
        # A usage error ends all rounds of that tool and mode: one line for it, instead of
        # also listing the failed run under the failures.
        unsupported, skipped = [], set()
        for (tool, mode), why in self.unsupported.items():
            name = "msgbench calibrate" if tool == "calibrate" else f"{tool} {mode}"
            unsupported.append(f"FAILED {name}: usage error, remaining runs skipped: {one_line(why)}")
            skipped.add((tool, why))
        out += notes_block(self.unavailable, self.failures, self.kept, self.notes, unsupported, skipped)
        return scrub_paths("\n".join(out), self.workdir)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Side-by-side latency and request/reply benchmark of msgbench vs nats.go.")
    p.add_argument("--rounds", type=int, default=5, help="rounds per case (default 5)")
    p.add_argument("--duration", type=parse_duration, default=10.0, help="length of every latency run, warm-up included (default 10s)")
    p.add_argument("--warmup", type=parse_duration, default=1.0, help="first part of a latency run that is not recorded (default 1s)")
    p.add_argument("--requests", type=int, default=20_000, help="requests per request/reply run (default 20000)")
    p.add_argument("--rss-short", type=parse_duration, default=10.0, help="length of the short memory run (default 10s)")
    p.add_argument("--rss-long", type=parse_duration, default=30.0, help="length of the long memory run (default 30s)")
    p.add_argument("--rss-rate", type=int, default=100_000, help="rate of the memory runs in msgs/s (default 100000)")
    p.add_argument("--out", default=str(BENCH / "RESULTS-latency.md"), help="Markdown report (default bench/RESULTS-latency.md)")
    p.add_argument(
        "--timeout", type=float, default=120.0,
        help=f"time limit of every tool run in seconds (default 120; a latency run gets at least its duration + {DURATION_SLACK_S:.0f} s)",
    )  # fmt: skip
    p.add_argument("--no-build", action="store_true", help="skip `cargo build --release`; use the existing binary")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    a = p.parse_args(argv)
    if a.rounds < 1 or a.requests < 1 or a.rss_rate < 1 or a.timeout <= 0:
        p.error("--rounds, --requests, --rss-rate and --timeout must be positive")
    for name in ("duration", "rss_short", "rss_long"):
        if getattr(a, name) <= a.warmup:
            p.error(f"--{name.replace('_', '-')} must be longer than --warmup")
    if a.rss_long <= a.rss_short and not a.no_memory:
        p.error("--rss-long must be longer than --rss-short")
    return a


def main(argv: list[str] | None = None) -> int:
    return drive(parse_args(argv), Bench, "msgbench-bench-lat-")


if __name__ == "__main__":
    entry(main)
