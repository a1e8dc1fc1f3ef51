#!/usr/bin/env python3
"""What `msgbench history check` costs on a long history: one real `latency` run recorded with
`--record`, then copied into an SQLite history until it holds `--runs` runs of that one
benchmark on one testbed (each copy with its own start time, commit label and figures: the real
run's, times seeded noise of 5% coefficient of variation; its document and histograms as
stored), and `history check` timed as a whole process on it: the default analysis (the newest
200 runs), longer windows, and the whole history (`--all`).

The copies are written with Python's sqlite3 into the tables `--record` fills, so they are
rows as msgbench itself would read them. `history check` exits 0, or 8 when noise passes for a
regression: both are answers. Each timing is the median wall time of `--rounds` processes.

A benchmark, not a test: its exit status says whether it could measure, never how fast
anything was.

    python3 bench/run_history.py [--runs 10000] [--rounds 5] [--lasts 200,1000,2000]
                                 [--all-timeout 900] [--out bench/RESULTS-history.md]
                                 [--no-build]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from benchkit import REPO, build
from benchkit.env import commit_label, cpu_model, now_utc, nproc
from benchkit.fmt import fmt_s, md_table, median, spread, verdict
from benchkit.proc import log, run_child
from benchkit.server import NatsServer, find_nats_server, nats_server_version

# A check that beats this on the default window is the target.
TARGET_S = 1.0


def plant(db: Path, total: int, seed: int) -> int:
    """Copies the one recorded run until the history holds `total` runs; the runs stored."""
    c = sqlite3.connect(db)
    run = c.execute("SELECT * FROM runs").fetchone()
    cols = [d[0] for d in c.execute("SELECT * FROM runs").description]
    row = dict(zip(cols, run))
    metrics = c.execute("SELECT metric, value FROM metrics WHERE run = ?", (row["id"],)).fetchall()
    hists = c.execute("SELECT path, hdr FROM histograms WHERE run = ?", (row["id"],)).fetchall()
    rng = random.Random(seed)
    t0 = datetime.now(timezone.utc) - timedelta(hours=total)
    with c:
        for k in range(1, total):
            fields = dict(row, id=None, run_id=f"planted-{k:05d}",
                          started_at=(t0 + timedelta(hours=k)).isoformat().replace("+00:00", "Z"))
            fields["recorded_at"] = fields["started_at"]
            names = [n for n in cols if n != "id"]
            cur = c.execute(
                f"INSERT INTO runs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                [fields[n] for n in names],
            )
            rid = cur.lastrowid
            c.executemany(
                "INSERT INTO metrics (run, metric, value) VALUES (?, ?, ?)",
                [(rid, m, v * max(0.5, rng.gauss(1.0, 0.05))) for m, v in metrics],
            )
            c.execute("INSERT INTO labels (run, key, value) VALUES (?, 'commit', ?)", (rid, f"c{k:05d}"))
            c.executemany("INSERT INTO histograms (run, path, hdr) VALUES (?, ?, ?)", [(rid, p, h) for p, h in hists])
    n = c.execute("SELECT count(*) FROM runs").fetchone()[0]
    c.close()
    return n


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--lasts", default="200,1000,2000", help="the --last windows timed (the first is the default analysis)")
    p.add_argument("--all-timeout", type=float, default=900.0, help="seconds for the one --all run; 0 leaves it out")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=str(REPO / "bench" / "RESULTS-history.md"))
    p.add_argument("--no-build", action="store_true")
    a = p.parse_args()
    msgbench, err = build.msgbench(a.no_build)
    nats = find_nats_server()
    if msgbench is None or nats is None:
        print(f"cannot run: {err or 'no nats-server'}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="msgbench-bench-history-"))
    db = work / "history.db"
    server = NatsServer(nats, work)
    server.start()
    try:
        # A latency run: its benchmark has four headline metrics (msgs/s, P50, P99, P99.9),
        # each a series `check` analyses, and histograms for every copy to carry.
        real = [msgbench, "latency", "--server", server.url, "--rate", "2000", "--duration", "2s",
                "--no-progress", "--json", str(work / "real.json"), "--record", "--history-file",
                str(db), "--name", "history-bench", "--label", "commit=real"]  # fmt: skip
        first = run_child(real, 120, work, json_file=work / "real.json")
    finally:
        server.stop()
    if not first.ok:
        print(f"cannot run: the recorded run failed: {first.error}", file=sys.stderr)
        return 1
    log(f"planting {a.runs} runs")
    stored = plant(db, a.runs, a.seed)
    size_mb = db.stat().st_size / 1e6

    rows, notes, default_walls = [], [], []
    check = [msgbench, "history", "check", "--history", str(db)]
    for last in [int(x) for x in a.lasts.split(",") if x]:
        walls = []
        for r in range(a.rounds):
            run = run_child(check + ["--last", str(last)], 600, work)
            if run.exit_code in (0, 8):
                walls.append(run.wall_s)
            else:
                notes.append(f"--last {last}, round {r + 1}: {run.error}")
        log(f"--last {last}: {spread(walls, fmt_s)}")
        if last == 200:
            default_walls = walls
        rows.append([f"`--last {last}`" + (" (the default)" if last == 200 else ""), spread(walls, fmt_s)])
    if a.all_timeout > 0:
        run = run_child(check + ["--all"], a.all_timeout, work)
        shown = fmt_s(run.wall_s) if run.exit_code in (0, 8) else f"more than {a.all_timeout:.0f} s (stopped)"
        if run.exit_code not in (0, 8) and not run.timed_out:
            notes.append(f"--all: {run.error}")
        log(f"--all: {shown}")
        rows.append(["`--all`, once", shown])
    cmdline = "python3 bench/run_history.py " + " ".join(sys.argv[1:])
    md = [
        "# `history check` on a long history",
        "",
        f"`{cmdline.strip()}` on {now_utc()}: {cpu_model()}, {nproc()} CPUs, "
        f"nats-server {nats_server_version(nats)}, msgbench at {commit_label()}.",
        "",
        f"{stored:,} runs of one benchmark on one testbed, {size_mb:.0f} MB of SQLite. Wall time of "
        f"`msgbench history check --history <tmp>/history.db` and the flag shown, median "
        f"(min–max, runs); target for the default analysis: under {TARGET_S:g} s.",
        "",
        md_table(["analysis", "wall time"], rows),
        "",
        f"The default analysis: {verdict(median(default_walls), TARGET_S, higher_is_better=False, unit=' s')}.",
        "",
        "The recorded run: `" + " ".join(real).replace(str(work), "<tmp>").replace(server.url, "URL")
        .replace(msgbench, "msgbench") + "`.",
    ]
    if notes:
        md += ["", "Notes and failures:", ""] + [f"- {n}" for n in notes]
    text = "\n".join(md) + "\n"
    print(text)
    Path(a.out).write_text(text)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
