#!/usr/bin/env python3
"""Soak test: a long `msgbench latency` run at a constant rate, with pass/fail checks.

    python3 bench/soak.py [--minutes 10] [--rate 10000] [--size 16] [--warmup 10]
                          [--out FILE] [--msgbench PATH]
                          [--max-rss-growth-mib 1] [--max-rss-growth-pct 5]
                          [--max-p99-ratio 1.5] [--max-p99-increase-us 200]

It builds msgbench (`cargo build --release --locked`, unless --msgbench names a binary), runs
`msgbench latency` once for --minutes against the nats-server that msgbench embeds, samples
the process's RSS every second, and then checks:

  1. memory stays flat: median RSS of the last window vs. the first window;
  2. nothing is lost: delivery.lost == 0 and delivery.duplicated == 0;
  3. latency does not degrade: P99 (corrected) of the last window vs. the first, from the
     per-second HdrHistogram interval log (`--hist`), decoded here (benchkit/hdr.py).

The windows are min(60 s, a third of the run after the warm-up), whole seconds: the first
starts at the end of the warm-up, the last ends where the run ends.

Unlike the benchmarks this is a test, not a suite: one run, no rounds. It exits 1 when a check
fails (2 when it cannot run). It still measures a machine, so run it by hand on a quiet one,
not as a timed CI job.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchkit import REPO, build, env
from benchkit.fmt import fmt_ns, go_duration, md_table, one_line
from benchkit.hdr import Interval, decode_histogram, merged, read_interval_log
from benchkit.proc import dig, log, num, read_status_kb, run_child
from benchkit.server import find_nats_server, nats_server_version
from benchkit.suite import entry

# The longest comparison window; shorter runs use a third of their measured part.
WINDOW_MAX_S = 60
# Below this a window's median rests on too few samples to mean anything.
WINDOW_MIN_S = 5
SAMPLE_PERIOD_S = 1.0
PROGRESS_EVERY_S = 60.0
# msgbench is stopped if it still runs this long after its duration.
DURATION_SLACK_S = 60.0
# msgbench stops its embedded server and writes partial results on SIGTERM; give it that long.
TERM_GRACE_S = 10.0
# How far the interval log's total may be from latency.count before the decoder is distrusted.
HLOG_COUNT_SLACK = 5
# msgbench exit statuses after which its result is complete: OK, and LOSS (judged by check 2).
COMPLETE_EXITS = (0, 3)

RESULT_FILE = "result.json"
HIST_PREFIX = "hist"

PASS, FAIL = "pass", "FAIL"


# --------------------------------------------------------------------------
# Checks


@dataclass
class Windows:
    warmup_s: int
    duration_s: int
    length_s: int

    @property
    def first(self) -> tuple[int, int]:
        return self.warmup_s, self.warmup_s + self.length_s

    @property
    def last(self) -> tuple[int, int]:
        return self.duration_s - self.length_s, self.duration_s

    @staticmethod
    def label(span: tuple[int, int]) -> str:
        return f"{span[0]}–{span[1]} s"


def window_length(duration_s: int, warmup_s: int) -> int:
    # A third of the measured part keeps the two windows apart, with a gap as long as each.
    return min(WINDOW_MAX_S, (duration_s - warmup_s) // 3)


def fmt_mib(kb: float | None) -> str:
    return "n/a" if kb is None else f"{kb / 1024:.2f} MiB"


def check_memory(a: argparse.Namespace, rss: list[tuple[float, int]], w: Windows) -> dict:
    """rss: (seconds since the start, kB) samples of the msgbench process."""
    (f0, f1), (l0, l1) = w.first, w.last
    first = [kb for t, kb in rss if f0 <= t < f1]
    last = [kb for t, kb in rss if l0 <= t < l1]
    c: dict = {"check": "memory", "samples": len(rss), "first_samples": len(first), "last_samples": len(last)}
    # Fewer than half the expected samples means the process ended early or sampling stalled.
    if len(first) < w.length_s // 2 or len(last) < w.length_s // 2:
        c.update(verdict=FAIL, why=f"too few RSS samples (first window {len(first)}, last {len(last)}, of {w.length_s} expected)")
        return c
    m_first, m_last = statistics.median(first), statistics.median(last)
    allowed = max(a.max_rss_growth_mib * 1024, m_first * a.max_rss_growth_pct / 100)
    growth = m_last - m_first
    c.update(
        first_kb=m_first, last_kb=m_last, growth_kb=growth, allowed_growth_kb=allowed,
        verdict=PASS if growth <= allowed else FAIL,
    )  # fmt: skip
    if growth > allowed:
        c["why"] = f"RSS grew by {growth / 1024:.2f} MiB, more than {allowed / 1024:.2f} MiB"
    return c


def check_delivery(result: dict | None) -> dict:
    def count(*keys: str) -> int | None:
        v = num(dig(result, "delivery", *keys))
        return None if v is None else int(v)

    lost, dup = count("lost"), count("duplicated")
    c: dict = {"check": "delivery", "lost": lost, "duplicated": dup, "sent": count("sent"), "received": count("received")}
    if lost is None or dup is None:
        c.update(verdict=FAIL, why="no delivery.lost / delivery.duplicated in the result")
    elif lost or dup:
        c.update(verdict=FAIL, why=f"{lost} lost, {dup} duplicated")
    else:
        c["verdict"] = PASS
    return c


def decoder_check(intervals: list[Interval], result: dict | None) -> dict:
    """Cross-checks the decoded interval log against msgbench's own figures for the whole run:
    the sum of interval counts vs latency.count, and, decoding latency.hdr (the whole corrected
    histogram, same encoding), bucket-by-bucket equality and the same P50/P99."""
    d: dict = {"intervals": len(intervals)}
    whole = merged(intervals)
    d["hlog_count"] = whole.total if whole else 0
    count = num(dig(result, "latency", "count"))
    d["json_count"] = None if count is None else int(count)
    d["count_diff"] = None if count is None else d["hlog_count"] - int(count)
    d["ok"] = d["count_diff"] is not None and abs(d["count_diff"]) <= HLOG_COUNT_SLACK
    hdr = dig(result, "latency", "hdr")
    if isinstance(hdr, str) and whole is not None:
        try:
            full = decode_histogram(hdr)
            n = max(len(full.counts), len(whole.counts))
            pad = lambda h: h.counts + [0] * (n - len(h.counts))  # noqa: E731
            d["buckets_differing"] = sum(1 for x, y in zip(pad(full), pad(whole)) if x != y)
        except ValueError as e:
            d["hdr_error"] = str(e)
    if whole is not None:
        for key, pct in (("p50", 50), ("p99", 99)):
            d[f"hlog_{key}_ns"] = whole.value_at_percentile(pct)
            d[f"json_{key}_ns"] = num(dig(result, "latency", "percentiles_ns", key[1:]))
    return d


def check_latency(a: argparse.Namespace, intervals: list[Interval], w: Windows, dec: dict) -> dict:
    c: dict = {"check": "latency"}
    (f0, f1), (l0, _) = w.first, w.last
    eps = 1e-6  # starts are written with 3 decimals
    first = [i for i in intervals if f0 - eps <= i.start_s < f1 - eps]
    # Intervals are by receive time: the ones after the end hold the last messages due in the run.
    last = [i for i in intervals if i.start_s >= l0 - eps]
    hf, hl = merged(first), merged(last)
    c.update(first_intervals=len(first), last_intervals=len(last))
    for name, h in (("first", hf), ("last", hl)):
        c[f"{name}_count"] = h.total if h else 0
        c[f"{name}_p50_ns"] = h.value_at_percentile(50) if h else None
        c[f"{name}_p99_ns"] = h.value_at_percentile(99) if h else None
    p99_first, p99_last = c["first_p99_ns"], c["last_p99_ns"]
    if dec["json_count"] is None:
        c.update(verdict=FAIL, why="no latency.count in the result to check the interval log against")
    elif not dec["ok"]:
        c.update(verdict=FAIL, why=f"interval log does not match the result (count diff {dec['count_diff']:+d}); decoder not trusted")
    elif p99_first is None or p99_last is None:
        c.update(verdict=FAIL, why="a window has no recorded latencies")
    else:
        allowed = max(p99_first * a.max_p99_ratio, p99_first + a.max_p99_increase_us * 1000)
        c["allowed_p99_ns"] = allowed
        c["verdict"] = PASS if p99_last <= allowed else FAIL
        if p99_last > allowed:
            c["why"] = f"P99 {fmt_ns(p99_last)} in the last window, above the limit {fmt_ns(allowed)}"
    return c


# --------------------------------------------------------------------------
# Report


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def summary_table(a: argparse.Namespace, w: Windows, mem: dict, dlv: dict, lat: dict) -> str:
    first, last = Windows.label(w.first), Windows.label(w.last)
    mem_limit = f"+max({a.max_rss_growth_mib:g} MiB, {a.max_rss_growth_pct:g}%)"
    if "allowed_growth_kb" in mem:
        mem_limit += f" = +{mem['allowed_growth_kb'] / 1024:.2f} MiB"
    p99_limit = f"max({a.max_p99_ratio:g}x, +{a.max_p99_increase_us:g} µs)"
    if "allowed_p99_ns" in lat:
        p99_limit += f" = {fmt_ns(lat['allowed_p99_ns'])}"
    n = lambda v: "n/a" if v is None else f"{v:,}"  # noqa: E731
    whole = f"whole run, {n(dlv['sent'])} sent"
    rows = [
        ["median RSS", fmt_mib(mem.get("first_kb")), fmt_mib(mem.get("last_kb")), mem_limit, mem["verdict"]],
        [f"lost ({whole})", "–", n(dlv["lost"]), "0", PASS if dlv["lost"] == 0 else FAIL],
        [f"duplicated ({whole})", "–", n(dlv["duplicated"]), "0", PASS if dlv["duplicated"] == 0 else FAIL],
        ["P50 latency (corrected)", fmt_ns(lat.get("first_p50_ns")), fmt_ns(lat.get("last_p50_ns")),
         f"– (last/first {ratio(lat.get('last_p50_ns'), lat.get('first_p50_ns'))})", "info"],
        ["P99 latency (corrected)", fmt_ns(lat.get("first_p99_ns")), fmt_ns(lat.get("last_p99_ns")), p99_limit, lat["verdict"]],
    ]  # fmt: skip
    return md_table(["", f"first window ({first})", f"last window ({last})", "limit (last vs first)", "verdict"], rows)


def decoder_line(d: dict) -> str:
    parts = [f"{d['intervals']} intervals, sum of counts {d['hlog_count']:,}"]
    if d["json_count"] is None:
        parts.append("result has no latency.count")
    else:
        parts.append(f"latency.count {d['json_count']:,} (diff {d['count_diff']:+d}, allowed ±{HLOG_COUNT_SLACK})")
    if "buckets_differing" in d:
        parts.append(
            "merged intervals identical to latency.hdr" if d["buckets_differing"] == 0
            else f"merged intervals differ from latency.hdr in {d['buckets_differing']} buckets"
        )  # fmt: skip
    elif "hdr_error" in d:
        parts.append(f"latency.hdr not decodable: {d['hdr_error']}")
    for key in ("p50", "p99"):
        h, j = d.get(f"hlog_{key}_ns"), d.get(f"json_{key}_ns")
        if h is not None and j is not None:
            parts.append(f"{key.upper()} {h:,} ns vs {int(j):,} ns ({'equal' if h == j else 'DIFFERENT'})")
    return "hlog decoder check: " + "; ".join(parts)


def facts(server_bin: str | None) -> dict[str, str]:
    f = env.machine()
    del f["OS"]
    f["nats-server"] = nats_server_version(server_bin)
    f["msgbench commit"] = env.commit_label()
    return f


# --------------------------------------------------------------------------
# Setup


def child_env() -> tuple[dict[str, str], str | None]:
    """The environment for msgbench, with .tools/bin first on PATH as the Makefile has it, and
    the nats-server msgbench will pick there (MSGBENCH_NATS_SERVER wins, as in msgbench)."""
    environ = dict(os.environ)
    tools_bin = REPO / ".tools" / "bin"
    if tools_bin.is_dir():
        environ["PATH"] = os.pathsep.join([str(tools_bin), environ.get("PATH", "")])
    return environ, find_nats_server()


def latency_cmd(binary: str, a: argparse.Namespace) -> list[str]:
    # Relative output paths: the run's directory is its cwd, so the command has no machine paths.
    return [
        binary, "latency", "--rate", str(a.rate), "--size", str(a.size),
        "--duration", go_duration(a.duration_s), "--warmup", go_duration(a.warmup),
        "--no-progress", "--json", RESULT_FILE, "--hist", HIST_PREFIX,
    ]  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Soak test: a long constant-rate msgbench latency run with memory, loss and latency checks.")
    p.add_argument("--minutes", type=float, default=10.0, help="length of the run, warm-up included (default 10)")
    p.add_argument("--rate", type=int, default=10_000, help="messages per second (default 10000)")
    p.add_argument("--size", type=int, default=16, help="payload size in bytes, at least 8 (default 16)")
    p.add_argument("--warmup", type=int, default=10, help="seconds at the start that no check looks at (default 10)")
    p.add_argument("--out", help="also write a JSON summary to this file")
    p.add_argument("--msgbench", metavar="PATH", help="use this msgbench binary instead of building one with cargo")
    p.add_argument("--max-rss-growth-mib", type=float, default=1.0, help="allowed RSS growth, MiB (default 1; the larger of this and --max-rss-growth-pct applies)")
    p.add_argument("--max-rss-growth-pct", type=float, default=5.0, help="allowed RSS growth, percent of the first window (default 5)")
    p.add_argument("--max-p99-ratio", type=float, default=1.5, help="allowed last/first P99 ratio (default 1.5; the larger of this and --max-p99-increase-us applies)")
    p.add_argument("--max-p99-increase-us", type=float, default=200.0, help="allowed P99 increase, µs (default 200)")
    a = p.parse_args(argv)
    if a.rate < 1 or a.size < 8 or a.warmup < 0:
        p.error("--rate must be positive, --size at least 8, --warmup not negative")
    if min(a.max_rss_growth_mib, a.max_rss_growth_pct, a.max_p99_increase_us) < 0 or a.max_p99_ratio < 1:
        p.error("thresholds must not be negative, --max-p99-ratio at least 1")
    a.duration_s = round(a.minutes * 60)
    if window_length(a.duration_s, a.warmup) < WINDOW_MIN_S:
        p.error(f"--minutes too short: the run after the {a.warmup} s warm-up must be at least {3 * WINDOW_MIN_S} s")
    return a


# --------------------------------------------------------------------------


def run_msgbench(cmd: list[str], workdir: Path, environ: dict[str, str], duration_s: float):
    """Runs msgbench in workdir, sampling its RSS every second and logging progress every
    minute; stops it (SIGTERM, then SIGKILL) if it still runs DURATION_SLACK_S after its
    duration. Returns the run and the RSS samples."""
    rss: list[tuple[float, int]] = []
    progress = [PROGRESS_EVERY_S]

    def sample(pid: int, t: float) -> None:
        kb = read_status_kb(pid, "VmRSS")
        if kb is not None:
            rss.append((t, kb))
        if t >= progress[0]:
            log(f"soak: {t:.0f} s of {duration_s:.0f} s" + (f", RSS {rss[-1][1] / 1024:.1f} MiB" if rss else ""))
            progress[0] += PROGRESS_EVERY_S

    run = run_child(
        cmd, duration_s + DURATION_SLACK_S, workdir, cwd=workdir, env=environ, json_file=workdir / RESULT_FILE,
        poll=SAMPLE_PERIOD_S, on_poll=sample, term_grace=TERM_GRACE_S,
    )  # fmt: skip
    if run.timed_out:
        log(f"soak: msgbench still ran {DURATION_SLACK_S:.0f} s after its duration; stopped it")
    return run, rss


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    binary, err = build.executable(a.msgbench, "--msgbench") if a.msgbench else build.msgbench()
    if binary is None:
        log(f"msgbench unavailable: {err}")
        return 2
    environ, server_bin = child_env()
    if server_bin is None:
        log("nats-server not found on PATH or in .tools/bin (`make nats-server` installs it); leaving the search to msgbench")
    fact_table = facts(server_bin)
    w = Windows(a.warmup, a.duration_s, window_length(a.duration_s, a.warmup))
    with tempfile.TemporaryDirectory(prefix="msgbench-soak-") as tmp:
        workdir = Path(tmp)
        cmd = latency_cmd(binary, a)
        shown = shlex.join([Path(binary).name if a.msgbench else "target/release/msgbench", *cmd[1:]])
        log(f"soak: {a.duration_s} s at {a.rate:,} msgs/s, windows {Windows.label(w.first)} and {Windows.label(w.last)}")
        log(f"running (in a temporary directory): {shlex.join(cmd)}")
        run, rss = run_msgbench(cmd, workdir, environ, a.duration_s)
        result = run.data
        if result is None:
            log(f"no usable {RESULT_FILE}")
        intervals: list[Interval] = []
        hlog_error = ""
        try:
            intervals = read_interval_log(workdir / f"{HIST_PREFIX}.hlog")
        except (OSError, ValueError) as e:
            hlog_error = str(e).replace(str(workdir), "<tmp>")

    problems = []
    if run.timed_out:
        problems.append(f"msgbench ran past its duration + {DURATION_SLACK_S:.0f} s and was stopped")
    elif run.exit_code not in COMPLETE_EXITS:
        problems.append(f"msgbench exit status {run.exit_code}: {one_line(run.stderr_tail)}")
    if result is not None and result.get("interrupted"):
        problems.append("msgbench reports the run as interrupted")
    if hlog_error:
        problems.append(f"interval log unreadable: {hlog_error}")

    mem = check_memory(a, rss, w)
    dlv = check_delivery(result)
    dec = decoder_check(intervals, result)
    lat = check_latency(a, intervals, w, dec)
    checks = [mem, dlv, lat]
    ok = not problems and all(c["verdict"] == PASS for c in checks)

    out = [
        f"## Soak: {a.minutes:g} min at {a.rate:,} msgs/s, {a.size} B, embedded nats-server",
        "",
        summary_table(a, w, mem, dlv, lat),
        "",
        f"Windows: {w.length_s} s each (min({WINDOW_MAX_S} s, a third of the run after the {a.warmup} s warm-up)); "
        f"RSS sampled every {SAMPLE_PERIOD_S:g} s ({mem['samples']} samples); latency from the per-second interval log "
        "(by receive time, so the last window also holds the messages that arrived after the end).",
        ", ".join(f"{k}: {v}" for k, v in fact_table.items()),
        decoder_line(dec),
        "",
        "```",
        shown,
        "```",
        "",
    ]
    for c in checks:
        if c["verdict"] != PASS:
            out.append(f"- {c['check']}: {c.get('why', 'failed')}")
    for p_ in problems:
        out.append(f"- {p_}")
    if out[-1].startswith("- "):
        out.append("")
    out.append(f"**Verdict: {'PASS' if ok else 'FAIL'}**")
    print("\n".join(out), flush=True)

    if a.out:
        doc = {
            "verdict": PASS if ok else FAIL,
            "params": {k: getattr(a, k) for k in ("minutes", "rate", "size", "warmup", "max_rss_growth_mib",
                                                   "max_rss_growth_pct", "max_p99_ratio", "max_p99_increase_us")},
            "command": shown,
            "environment": fact_table,
            "windows_s": {"first": list(w.first), "last": list(w.last)},
            "exit_code": run.exit_code,
            "timed_out": run.timed_out,
            "wall_s": round(run.wall_s, 3),
            "problems": problems,
            "checks": {c["check"]: c for c in checks},
            "decoder": dec,
            "rss_samples": [[round(t, 3), kb] for t, kb in rss],
        }  # fmt: skip
        path = Path(a.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2) + "\n")
        log(f"wrote {path}")
    return 0 if ok else 1


if __name__ == "__main__":
    entry(main)
