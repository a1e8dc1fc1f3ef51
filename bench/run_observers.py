#!/usr/bin/env python3
"""What watching and remembering a run costs: `msgbench pub`, an old binary (one without
`--web` and `--record`) against the new one, plain, with `--record` into an SQLite history,
and with `--web` and a browser that connects to the live stream and then stops reading.

The stalled browser is a socket with a 4 KiB receive buffer that asks for `/events`, reads the
response's first bytes (so the stream is open and the run is feeding it) and never reads again.
A run on that side counts only if the browser got its `200` while the run was going.

Each round runs the four sides back to back on one nats-server, the order rotating from round
to round. Reported: the publisher's msgs/s from each run's `--json`, the process's wall time
and CPU time (user + sys, from wait4), and each side against the old binary and against the
new one's plain run, as medians of the per-round ratios. `--record` stores the run after its
files are written, so its cost shows in the wall time, not in msgs/s. A run of a few seconds
sends the stalled browser a few small events, which its socket's buffers hold: what this shows
is the page's thread waiting for a browser, not a write blocked on a full socket (a unit test in
`output/web` covers that stop).

A benchmark, not a test: its exit status says whether it could measure, never how fast
anything was.

    python3 bench/run_observers.py --old PATH [--new PATH | --no-build] [--rounds 5]
                                   [--old-label TEXT] [--new-label TEXT]
                                   [--msgs 10000000] [--size 16]
                                   [--out bench/RESULTS-observers.md] [--timeout 120]
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchkit import REPO, build
from benchkit.env import commit_label, cpu_model, now_utc, nproc
from benchkit.fmt import fmt_rate, fmt_s, fmt_x, md_table, median, spread
from benchkit.proc import dig, log, num, run_child
from benchkit.server import NatsServer, find_nats_server, free_port, nats_server_version
from benchkit.suite import rotate

SIDES = ("old", "new", "new --record", "new --web, stalled browser")


class StalledBrowser:
    """Connects to a live page's event stream as soon as it listens, reads the response's
    first bytes, and never reads again: the browser tab that froze."""

    def __init__(self, port: int, within: float):
        self.port, self.within = port, within
        self.first = b""
        self.sock: socket.socket | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._connect, daemon=True)
        self.thread.start()

    def _connect(self) -> None:
        deadline = time.monotonic() + self.within
        while not self.stop.is_set() and time.monotonic() < deadline:
            s = socket.socket()
            # A small window: the page's writes fill it at once, and the rest wait on msgbench.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            try:
                s.connect(("127.0.0.1", self.port))
            except OSError:
                s.close()
                time.sleep(0.002)
                continue
            s.sendall(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            s.settimeout(10)
            try:
                self.first = s.recv(64)
            except OSError:
                pass
            self.sock = s
            return

    def close(self) -> bool:
        """Ends the browser; whether it had the stream open."""
        self.stop.set()
        self.thread.join()
        if self.sock is not None:
            self.sock.close()
        return self.first.startswith(b"HTTP/1.1 200")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", required=True, help="an msgbench binary without --web and --record")
    p.add_argument("--new", help="the new binary (default: this checkout's release build)")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--old-label", default="", help="what the old binary is (a commit), for the report")
    p.add_argument("--new-label", default="", help="what the new binary is, for the report (default: this checkout)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--msgs", type=int, default=10_000_000, help="messages per run (default 10000000: runs of a few seconds, so the page gets several ticks)")
    p.add_argument("--size", type=int, default=16)
    p.add_argument("--out", default=str(REPO / "bench" / "RESULTS-observers.md"))
    p.add_argument("--timeout", type=float, default=120.0)
    a = p.parse_args()
    old, err = build.executable(a.old, "--old")
    new, err2 = build.executable(a.new, "--new") if a.new else build.msgbench(a.no_build)
    nats = find_nats_server()
    if old is None or new is None or nats is None:
        print(f"cannot run: {err or err2 or 'no nats-server'}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="msgbench-bench-observers-"))
    server = NatsServer(nats, work)
    server.start()
    url = server.url
    port = free_port()
    history = work / "history.db"

    def command(side: str) -> list[str]:
        binary = old if side == "old" else new
        cmd = [binary, "pub", "--server", url, "--msgs", str(a.msgs), "--size", str(a.size), "--no-progress", "--json", str(work / "result.json")]
        if side == "new --record":
            cmd += ["--record", "--history-file", str(history), "--name", "observers"]
        if side.startswith("new --web"):
            cmd += ["--web", f"127.0.0.1:{port}"]
        return cmd

    rates: dict[str, list[float]] = {s: [] for s in SIDES}
    walls: dict[str, list[float]] = {s: [] for s in SIDES}
    cpus: dict[str, list[float]] = {s: [] for s in SIDES}
    vs_old: dict[str, list[float]] = {s: [] for s in SIDES[1:]}
    vs_new: dict[str, list[float]] = {s: [] for s in SIDES[2:]}
    wall_vs_new: dict[str, list[float]] = {s: [] for s in SIDES[2:]}
    notes: list[str] = []
    try:
        for r in range(a.rounds):
            got: dict[str, tuple[float, float, float]] = {}
            for side in rotate(SIDES, r):
                browser = StalledBrowser(port, a.timeout) if side.startswith("new --web") else None
                run = run_child(command(side), a.timeout, work, json_file=work / "result.json")
                if browser is not None and not browser.close():
                    notes.append(f"round {r + 1}, {side}: the browser never had the stream open; run left out")
                    continue
                rate = num(dig(run.data, "by_role", "pub", "msgs_per_sec")) if run.ok else None
                if rate is None:
                    notes.append(f"round {r + 1}, {side}: {run.error or 'no pub rate in the result'}")
                    continue
                got[side] = (rate, run.wall_s, run.cpu_s)
                rates[side].append(rate)
                walls[side].append(run.wall_s)
                cpus[side].append(run.cpu_s)
            for side in vs_old:
                if side in got and "old" in got:
                    vs_old[side].append(got[side][0] / got["old"][0])
            for side in vs_new:
                if side in got and "new" in got:
                    vs_new[side].append(got[side][0] / got["new"][0])
                    wall_vs_new[side].append(got[side][1] - got["new"][1])
            log(f"round {r + 1}: " + ", ".join(f"{s} {fmt_rate(got[s][0]) if s in got else 'n/a'}" for s in SIDES))
    finally:
        server.stop()

    def signed_ms(v: float | None) -> str:
        return "n/a" if v is None else f"{v * 1000:+.0f} ms"

    cmdline = "python3 bench/run_observers.py " + " ".join(sys.argv[1:])
    shown = {str(work): "<tmp>", url: "URL", old: "OLD", new: "NEW", str(port): "PORT"}

    def show(cmd: list[str]) -> str:
        text = " ".join(cmd)
        for k, v in shown.items():
            text = text.replace(k, v)
        return text

    md = [
        "# What watching and remembering a run costs",
        "",
        f"`{cmdline.strip()}` on {now_utc()}: {cpu_model()}, {nproc()} CPUs, "
        f"nats-server {nats_server_version(nats)}; old: {a.old_label or 'as given'}, "
        f"new: {a.new_label or commit_label()}.",
        "",
        md_table(
            ["side", "pub msgs/s: median (min–max, runs)", "wall time", "CPU time"],
            [[s, spread(rates[s]), spread(walls[s], fmt_s), spread(cpus[s], fmt_s)] for s in SIDES],
        ),
        "",
        md_table(
            ["side", "msgs/s against old", "msgs/s against new", "wall time against new"],
            [
                [s, fmt_x(median(vs_old[s])), fmt_x(median(vs_new[s])) if s in vs_new else "–",
                 signed_ms(median(wall_vs_new[s])) if s in vs_new else "–"]
                for s in SIDES[1:]
            ],
        ),
        "",
        "Ratios are medians of the per-round ratios; \"wall time against new\" is the median of "
        "the per-round differences in the process's wall time.",
        "",
        "Commands (OLD and NEW the two binaries, URL the server):",
        "",
    ] + [f"    {show(command(s))}" for s in SIDES] + [
        "",
        "The stalled browser: a socket with a 4 KiB receive buffer sends "
        "`GET /events HTTP/1.1`, reads 64 bytes of the response and never reads again.",
    ]
    if notes:
        md += ["", "Notes and failures:", ""] + [f"- {n}" for n in notes]
    text = "\n".join(md) + "\n"
    print(text)
    Path(a.out).write_text(text)
    return 0 if all(rates.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
