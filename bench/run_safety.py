#!/usr/bin/env python3
"""The price of safety: `msgbench js pub --mode async` into a file stream on a 3-node cluster
msgbench starts (`--cluster 3`), with one replica and with three, each with the server's
default sync_interval (the OS writes the files back when it likes) and with
`--server-config sync_interval=always` (every write synced before it is acknowledged).
Acknowledged publishes per second and the acknowledgement latency's P50 and P99, medians of
--rounds rounds; the four configurations run in a rotating order, and the ratio always/default
is taken within each round (the same replicas), so a slow drift of a loaded machine weighs on
both sides of a ratio alike.

Every run is timed (--duration), not counted: with sync_interval=always a count that takes the
default a second would take far longer, and runs of equal length keep the two comparable.

The benefit: the same R3 load, with `--fault power-loss-all@AT:2s` (every node loses what its
filesystem had not synced, on msgbench's lazy filesystem; AT is half of --benefit-duration),
with the default sync_interval and with always, alternating, --benefit-rounds times each:
acknowledged writes lost per run and acknowledged msgs/s, medians. Lost writes are the point
of those runs, so their exit status 3 is expected; any other failure is a note.

A benchmark, not a test: its exit status says whether it could measure, never how fast anything
was.

    python3 bench/run_safety.py [--rounds 5] [--duration 5s] [--size 128]
                                [--benefit-rounds 5] [--benefit-duration 10s]
                                [--out bench/RESULTS-safety.md] [--timeout 120] [--no-build]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchkit import REPO, build
from benchkit.env import commit_label, cpu_model, now_utc, nproc
from benchkit.fmt import fmt_ns, fmt_rate, md_table, median, one_line, parse_duration, spread
from benchkit.proc import log
from benchkit.server import find_nats_server, nats_server_version
from benchkit.suite import rotate

# (key, replicas, sync_interval=always?)
CONFIGS = (("R1 default", 1, False), ("R1 always", 1, True), ("R3 default", 3, False), ("R3 always", 3, True))


def fmt_ratio(v: float | None) -> str:
    """A ratio to three significant digits: always costs R1 two orders of magnitude, where
    fmt_x's two decimals would leave one digit."""
    return "n/a" if v is None else f"{v:.3g}x"


def figures(path: Path) -> dict | None:
    """Acknowledged msgs/s, ack P50 and P99 (ns) and what durability lost, of a result file."""
    try:
        v = json.loads(path.read_text())
        pct = v["latency"]["percentiles_ns"]
        return {
            "rate": float(v["throughput"]["msgs_per_sec"]),
            "p50": float(pct["50"]),
            "p99": float(pct["99"]),
            "acked": int(v["jetstream"]["acked"]),
            "lost": v.get("durability", {}).get("lost"),
            "fsyncs": sum(n.get("fsyncs", 0) + n.get("dir_fsyncs", 0) for n in (v.get("durability", {}).get("disk") or [])),
        }
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=parse_duration, default=parse_duration("5s"), help="length of every run (default 5s)")
    p.add_argument("--size", type=int, default=128, help="message size in bytes (default 128)")
    p.add_argument("--benefit-rounds", type=int, default=5, help="power-loss runs of each setting (default 5; 0 leaves the benefit out)")
    p.add_argument("--benefit-duration", type=parse_duration, default=parse_duration("10s"), help="length of every power-loss run (default 10s)")
    p.add_argument("--out", default=str(REPO / "bench" / "RESULTS-safety.md"))
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--no-build", action="store_true")
    a = p.parse_args()
    if a.rounds < 1 or a.size < 1:
        p.error("--rounds and --size must be positive")
    if a.duration <= 0 or a.benefit_duration < 2:
        p.error("--duration must be positive and --benefit-duration at least 2s")
    if a.benefit_rounds < 0:
        p.error("--benefit-rounds must be 0 or more")
    msgbench, err = build.msgbench(a.no_build)
    nats = find_nats_server()
    if msgbench is None or nats is None:
        print(f"cannot run: {err or 'no nats-server'}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="msgbench-bench-safety-"))

    def command(replicas: int, always: bool) -> list[str]:
        c = [msgbench, "js", "pub", "--cluster", "3", "--replicas", str(replicas), "--storage", "file",
             "--mode", "async", "--size", str(a.size), "--duration", str(a.duration), "--no-progress",
             "--json", str(work / "result.json")]  # fmt: skip
        return c + (["--server-config", "sync_interval=always"] if always else [])

    keys = tuple(k for k, _, _ in CONFIGS)
    by_key = {k: (r, al) for k, r, al in CONFIGS}
    got: dict[str, list[dict]] = {k: [] for k in keys}
    ratios: dict[int, dict[str, list[float]]] = {1: {"rate": [], "p50": [], "p99": []}, 3: {"rate": [], "p50": [], "p99": []}}
    orders, notes = [], []
    for r in range(a.rounds):
        order = rotate(keys, r)
        orders.append(order)
        this: dict[str, dict] = {}
        for k in order:
            (work / "result.json").unlink(missing_ok=True)
            try:
                out = subprocess.run(command(*by_key[k]), capture_output=True, text=True, timeout=a.timeout)
            except subprocess.TimeoutExpired:
                notes.append(f"round {r + 1}, {k}: no exit within {a.timeout:g} s")
                continue
            f = figures(work / "result.json") if out.returncode == 0 else None
            if f is None:
                notes.append(f"round {r + 1}, {k}: exit {out.returncode}: {one_line(out.stderr.strip()[-300:])}")
                continue
            if f["lost"]:
                notes.append(f"round {r + 1}, {k}: durability lost {f['lost']}")
            this[k] = f
            got[k].append(f)
            log(f"round {r + 1}, {k}: {fmt_rate(f['rate'])} msgs/s, ack P50 {fmt_ns(f['p50'])}, P99 {fmt_ns(f['p99'])}")
        for reps in (1, 3):
            d, s = this.get(f"R{reps} default"), this.get(f"R{reps} always")
            if d and s and d["rate"] > 0 and d["p50"] > 0 and d["p99"] > 0:
                for m in ("rate", "p50", "p99"):
                    ratios[reps][m].append(s[m] / d[m])

    def benefit_command(always: bool) -> list[str]:
        at = a.benefit_duration / 2
        c = [msgbench, "js", "pub", "--cluster", "3", "--replicas", "3", "--storage", "file",
             "--mode", "async", "--size", str(a.size), "--duration", str(a.benefit_duration), "--reconnect",
             "--fault", f"power-loss-all@{at:g}s:2s", "--no-progress", "--json", str(work / "result.json")]  # fmt: skip
        return c + (["--server-config", "sync_interval=always"] if always else [])

    benefit: dict[str, list[dict]] = {"default": [], "always": []}
    for r in range(a.benefit_rounds):
        for key in rotate(("default", "always"), r):
            (work / "result.json").unlink(missing_ok=True)
            try:
                out = subprocess.run(benefit_command(key == "always"), capture_output=True, text=True, timeout=a.timeout)
            except subprocess.TimeoutExpired:
                notes.append(f"power loss round {r + 1}, {key}: no exit within {a.timeout:g} s")
                continue
            f = figures(work / "result.json") if out.returncode in (0, 3) else None
            if f is None or f["lost"] is None:
                notes.append(f"power loss round {r + 1}, {key}: exit {out.returncode}: {one_line(out.stderr.strip()[-300:])}")
                continue
            benefit[key].append(f)
            log(f"power loss round {r + 1}, {key}: lost {f['lost']} of {f['acked']} acknowledged, {fmt_rate(f['rate'])} msgs/s, {f['fsyncs']} fsyncs")

    def col(k: str, m: str) -> str:
        return spread([f[m] for f in got[k]], fmt_rate if m == "rate" else fmt_ns)

    cmdline = "python3 bench/run_safety.py " + " ".join(sys.argv[1:])
    shown = {k: " ".join(command(*by_key[k])).replace(msgbench, "msgbench").replace(str(work), "<tmp>") for k in keys}
    md = [
        "# The price of safety: sync_interval=always, one replica and three",
        "",
        f"`{cmdline.strip()}` on {now_utc()}: {cpu_model()}, {nproc()} CPUs, "
        f"nats-server {nats_server_version(nats)}, msgbench at {commit_label()}. "
        f"`js pub --mode async` into a file stream on a 3-node cluster msgbench starts, "
        f"{a.size} B messages, {a.duration} a run; the four configurations in a rotating order "
        f"(first of each round: {', '.join(o[0] for o in orders)}).",
        "",
        md_table(
            ["configuration", "acked msgs/s: median (min–max, runs)", "ack P50", "ack P99"],
            [[k, col(k, "rate"), col(k, "p50"), col(k, "p99")] for k in keys],
        ),
        "",
        "always / default, median of the per-round ratios (same replicas, same round):",
        "",
        md_table(
            ["replicas", "msgs/s", "ack P50", "ack P99", "rounds"],
            [[f"R{reps}", fmt_ratio(median(ratios[reps]["rate"])), fmt_ratio(median(ratios[reps]["p50"])),
              fmt_ratio(median(ratios[reps]["p99"])), str(len(ratios[reps]["rate"]))] for reps in (1, 3)],
        ),  # fmt: skip
        "",
        f"Durability lost 0 in {sum(1 for k in keys for f in got[k] if f['lost'] == 0)} of "
        f"{sum(len(got[k]) for k in keys)} runs (the rest are in the notes).",
        "",
        "Per-round msgs/s ratios always/default: "
        + "; ".join(f"R{reps} " + ", ".join(fmt_ratio(x) for x in ratios[reps]["rate"]) for reps in (1, 3)),
        "",
        "Commands:",
        "",
    ]
    md += [f"    {c}" for c in shown.values()]
    if a.benefit_rounds:
        def lost_col(k: str) -> str:
            xs = [f["lost"] for f in benefit[k]]
            return f"{median(xs):g} ({', '.join(str(x) for x in xs)})" if xs else "n/a"

        md += [
            "",
            "## The benefit: acknowledged writes kept through a power loss of every node",
            "",
            f"R3 as above, {a.benefit_duration:g} s a run, every node's power lost at half time and back 2 s later "
            "(msgbench's lazy filesystem drops what each node had not synced); the two settings alternate.",
            "",
            md_table(
                ["sync_interval", "acknowledged writes lost: median (each run)", "acked msgs/s: median (min–max, runs)",
                 "fsyncs seen, all nodes: median"],
                [[k, lost_col(k), spread([f["rate"] for f in benefit[k]], fmt_rate),
                  f"{median([f['fsyncs'] for f in benefit[k]]):g}" if benefit[k] else "n/a"] for k in ("default", "always")],
            ),  # fmt: skip
            "",
            "Commands:",
            "",
        ]
        md += ["    " + " ".join(benefit_command(k == "always")).replace(msgbench, "msgbench").replace(str(work), "<tmp>") for k in ("default", "always")]
    if notes:
        md += ["", "Notes and failures:", ""] + [f"- {n}" for n in notes]
    text = "\n".join(md) + "\n"
    shutil.rmtree(work, ignore_errors=True)
    print(text)
    Path(a.out).write_text(text)
    return 0 if ratios[1]["rate"] or ratios[3]["rate"] else 1


if __name__ == "__main__":
    sys.exit(main())
