#!/usr/bin/env python3
"""What running as a workload's class costs: each case's scenario run directly, and the same
plan as the one class of a workload, side by side on one server, round after round (the one
that goes first alternating). A benchmark, not a test: the figures never decide the exit
status; it is 1 only when a run failed, 2 when it cannot start.

    python3 bench/run_mix.py [--msgbench PATH | --no-build] [--rounds 5]
                             [--cases pub,latency,request] [--agents N]
                             [--out bench/RESULTS-mix.md]

Reported per case: the median of each figure run directly and as a class, and class / direct
(the median of the per-round ratios). Every run gets the same nats-server, started once.
With --agents N, both sides run on N agents started once on this machine
(`msgbench agent --insecure-control`, meeting on that server): the scenario with `--agents N`,
and the workload with `--agents N`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit import REPO, build
from benchkit.fmt import fmt_ns, fmt_rate, fmt_x, md_table
from benchkit.proc import dig, log, num, run_child
from benchkit.server import NatsServer, find_nats_server

# Each case: the scenario's words and flags, the same as a class's keys, and the figures read.
CASES = {
    "pub": (
        ["pub"],
        ["--msgs", "2M", "--size", "16", "--subject", "mix.bench.pub"],
        {"scenario": "pub", "msgs": "2M", "size": 16, "subject": "mix.bench.pub"},
        [("msgs/s", ("throughput", "msgs_per_sec"), fmt_rate, True)],
    ),
    "latency": (
        ["latency"],
        ["--rate", "2000", "--duration", "5s", "--subject", "mix.bench.lat"],
        {"scenario": "latency", "rate": 2000, "duration": "5s", "subject": "mix.bench.lat"},
        [
            ("P50", ("latency", "percentiles_ns", "50"), fmt_ns, False),
            ("P99", ("latency", "percentiles_ns", "99"), fmt_ns, False),
        ],
    ),
    "request": (
        ["request"],
        ["--msgs", "50000", "--size", "16", "--subject", "mix.bench.req"],
        {"scenario": "request", "msgs": 50000, "size": 16, "subject": "mix.bench.req"},
        [("requests/s", ("throughput", "msgs_per_sec"), fmt_rate, True)],
    ),
}


def workload_yaml(url: str, keys: dict) -> str:
    lines = [f"conn: {{server: {url}}}", "classes:", "  only:"]
    lines += [f"    {k}: {v}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"


def figures(doc: dict | None, case: str, workload: bool) -> dict | None:
    if doc is None:
        return None
    if workload:
        classes = doc.get("classes")
        doc = classes[0].get("result") if isinstance(classes, list) and classes else None
        if not isinstance(doc, dict):
            return None
    out = {}
    for name, path, _, _ in CASES[case][3]:
        out[name] = num(dig(doc, *path))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--msgbench")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", default="pub,latency,request")
    ap.add_argument("--agents", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "bench" / "RESULTS-mix.md"))
    a = ap.parse_args()
    cases = a.cases.split(",")
    if any(c not in CASES for c in cases):
        print(f"--cases: one of {', '.join(CASES)}", file=sys.stderr)
        return 2
    if a.msgbench:
        binary = a.msgbench
    else:
        binary, why = build.msgbench(no_build=a.no_build)
        if binary is None:
            print(why, file=sys.stderr)
            return 2
    server_bin = find_nats_server()
    if server_bin is None:
        print("nats-server not found", file=sys.stderr)
        return 2
    failed = False
    sections = []
    with tempfile.TemporaryDirectory(prefix="msgbench-mix-") as tmp:
        work = Path(tmp)
        server = NatsServer(server_bin, work)
        server.start()
        agents = [
            subprocess.Popen(
                [binary, "agent", "--control", server.url, "--name", f"mix{k}", "--insecure-control"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            for k in range(1, a.agents + 1)
        ]
        on = ["--agents", str(a.agents)] if a.agents else []
        if agents:
            time.sleep(1.5)  # the agents' first heartbeats
        try:
            for case in cases:
                words, flags, keys, figs = CASES[case]
                wl = work / f"{case}.yaml"
                wl.write_text(workload_yaml(server.url, keys))
                direct_cmd = [binary, *words, *flags, "--server", server.url, *on, "--no-progress", "--json", "-"]
                class_cmd = [binary, "run", str(wl), *on, "--no-progress", "--json", "-"]
                got = {"direct": [], "class": []}
                for r in range(a.rounds):
                    order = [("direct", direct_cmd), ("class", class_cmd)]
                    if r % 2:
                        order.reverse()
                    for label, cmd in order:
                        run = run_child(cmd, 120, work)
                        f = figures(run.data, case, label == "class")
                        if f is None or not run.ok:
                            log(f"{case} {label} round {r + 1}: failed (exit {run.exit_code}) {run.error}")
                            failed = True
                            continue
                        got[label].append(f)
                        log(f"{case} {label} round {r + 1}: {f}")
                rows = []
                for name, _, fmt, _ in figs:
                    d = [f[name] for f in got["direct"] if f[name] is not None]
                    c = [f[name] for f in got["class"] if f[name] is not None]
                    ratios = [x[name] / y[name] for x, y in zip(got["class"], got["direct"])
                              if x[name] and y[name]]
                    rows.append([
                        name,
                        fmt(statistics.median(d)) if d else "n/a",
                        fmt(statistics.median(c)) if c else "n/a",
                        fmt_x(statistics.median(ratios)) if ratios else "n/a",
                    ])
                cmd_text = " ".join(["msgbench", *words, *flags, *on])
                where = f", both on {a.agents} agents" if a.agents else ""
                sections.append(
                    f"### {case}\n\n`{cmd_text}` against the same plan as a workload's one class "
                    f"(`msgbench run`{where}), {a.rounds} rounds alternating:\n\n"
                    + md_table(["figure", "direct (median)", "as a class (median)", "class / direct"], rows)
                )
        finally:
            for ag in agents:
                ag.terminate()
                ag.wait(timeout=30)
            server.stop()
    text = "# Mixing: a scenario run directly and as a workload's class\n\n" + "\n\n".join(sections) + "\n"
    Path(a.out).write_text(text)
    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
