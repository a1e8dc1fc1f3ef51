#!/usr/bin/env python3
"""What running on agents costs: two agents on this machine publishing together (one
`msgbench pub --pubs 2 --agents 2` coordinating them over the server under test) against two
independent `msgbench pub` processes started together, the sum of their rates. Both sides run
the same two publishing connections against one nats-server; the difference is the agents'
coordination (control connection, clock exchanges, common start, lease, progress) and the
merge. Rounds alternate the two sides.

Both sides are measured the same way: all messages over the longest publisher's span, as the
agents' merge does (they start together). The sum of the two processes' own rates is shown too,
but it is not comparable: with two publishers sharing two cores with the server, one finishes
first, and adding the rates counts the faster one's speed over a span the slower one is still
running in. Both sides publish to the same subject, as two publishers of one `--pubs 2` run
do.

A benchmark, not a test: its exit status says whether it could measure, never how fast anything
was.

    python3 bench/run_agents.py [--rounds 5] [--msgs 10000000] [--size 16]
                                [--out bench/RESULTS-agents.md] [--timeout 120] [--no-build]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit import REPO, build
from benchkit.env import commit_label, cpu_model, now_utc, nproc
from benchkit.fmt import fmt_rate, fmt_x, md_table, median, spread, verdict
from benchkit.proc import log
from benchkit.server import NatsServer, find_nats_server, nats_server_version

# Agents publishing together must reach this share of two independent processes together.
TARGET = 0.95


def figures(path: Path) -> tuple[int, float] | None:
    """The publishers' messages and span in seconds of a result file."""
    try:
        pub = json.loads(path.read_text())["by_role"]["pub"]
        return int(pub["msgs"]), float(pub["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def rate(path: Path) -> float | None:
    f = figures(path)
    return f[0] / f[1] if f and f[1] > 0 else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--msgs", type=int, default=10_000_000, help="messages per publisher (default 10000000: runs of about two seconds; sub-second runs are mostly start-up noise)")
    p.add_argument("--size", type=int, default=16)
    p.add_argument("--out", default=str(REPO / "bench" / "RESULTS-agents.md"))
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--no-build", action="store_true")
    a = p.parse_args()
    msgbench, err = build.msgbench(a.no_build)
    nats = find_nats_server()
    if msgbench is None or nats is None:
        print(f"cannot run: {err or 'no nats-server'}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="msgbench-bench-agents-"))
    server = NatsServer(nats, work)
    server.start()
    url = server.url
    agents = [
        subprocess.Popen(
            [msgbench, "agent", "--control", url, "--name", f"bench{k}", "--insecure-control"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for k in (1, 2)
    ]
    pub = [msgbench, "pub", "--server", url, "--msgs", str(a.msgs), "--size", str(a.size), "--no-progress"]
    cmd_agents = pub + ["--pubs", "2", "--agents", "2", "--json", str(work / "agents.json")]
    # One subject for both, as the agents' two publishers (and one process's --pubs 2) have: two
    # connections publishing one subject cost the server about a sixth more CPU than two
    # subjects (measured here), which once made the independent side look faster.
    cmd_solo = [pub + ["--json", str(work / f"solo{k}.json")] for k in (1, 2)]
    rows, ratios, notes = {"agents": [], "independent": [], "independent, sum of own rates": []}, [], []
    try:
        time.sleep(1.5)  # the agents' first heartbeats
        for r in range(a.rounds):
            got = {}
            for side in (("agents", "independent") if r % 2 == 0 else ("independent", "agents")):
                if side == "agents":
                    out = subprocess.run(cmd_agents, capture_output=True, text=True, timeout=a.timeout)
                    got[side] = rate(work / "agents.json") if out.returncode == 0 else None
                    if out.returncode != 0:
                        notes.append(f"round {r + 1}, agents: exit {out.returncode}: {out.stderr.strip()[-200:]}")
                else:
                    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for c in cmd_solo]
                    codes = [pr.wait(timeout=a.timeout) for pr in procs]
                    figs = [figures(work / f"solo{k}.json") for k in (1, 2)]
                    ok = all(c == 0 for c in codes) and None not in figs and all(f[1] > 0 for f in figs)
                    # As the agents' merge counts: every message over the longest span.
                    got[side] = sum(f[0] for f in figs) / max(f[1] for f in figs) if ok else None
                    if ok:
                        rows["independent, sum of own rates"].append(sum(f[0] / f[1] for f in figs))
                    if not ok:
                        notes.append(f"round {r + 1}, independent: exits {codes}")
            for side, v in got.items():
                if v is not None:
                    rows[side].append(v)
            if None not in got.values():
                ratios.append(got["agents"] / got["independent"])
            log(f"round {r + 1}: agents {fmt_rate(got['agents'])}, independent {fmt_rate(got['independent'])}")
    finally:
        for ag in agents:
            ag.terminate()
            ag.wait()
        server.stop()
    m = median(ratios)
    cmdline = "python3 bench/run_agents.py " + " ".join(sys.argv[1:])
    md = [
        "# Agents against independent processes",
        "",
        f"`{cmdline.strip()}` on {now_utc()}: {cpu_model()}, {nproc()} CPUs, "
        f"nats-server {nats_server_version(nats)}, msgbench at {commit_label()}.",
        "",
        md_table(
            ["side", "pub msgs/s: median (min–max, runs)"],
            [[k, spread(v)] for k, v in rows.items()],
        ),
        "",
        f"agents / independent: **{fmt_x(m)}** (median of {len(ratios)} per-round ratios) — "
        f"target {verdict(m, TARGET)}",
        "",
        "Commands (the server's URL shown as URL):",
        "",
        "    " + " ".join(cmd_agents).replace(url, "URL").replace(msgbench, "msgbench").replace(str(work), "<tmp>"),
        "    " + "  &  ".join(" ".join(c) for c in cmd_solo).replace(url, "URL").replace(msgbench, "msgbench").replace(str(work), "<tmp>"),
        "",
        "Agents: `msgbench agent --control URL --name benchN --insecure-control`, two of them, started once.",
    ]
    if notes:
        md += ["", "Notes and failures:", ""] + [f"- {n}" for n in notes]
    text = "\n".join(md) + "\n"
    print(text)
    Path(a.out).write_text(text)
    return 0 if ratios else 1


if __name__ == "__main__":
    sys.exit(main())
