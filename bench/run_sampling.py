#!/usr/bin/env python3
"""What sampling the server's monitoring endpoints costs a run: the same `pub` and `latency`
against one nats-server, with and without `--server-monitor`, the two alternating round after
round. Prints the medians and ranges of each.

With `--old PATH` the "off" side is that binary (one from before sampling existed) and the "on"
side this one with `--server-monitor`: old binary against new, sampling and all.

A benchmark, not a test: it exits 1 only when a run failed, 2 when it cannot start.

    python3 bench/run_sampling.py [--binary PATH | --no-build] [--old PATH] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchkit import build
from benchkit.server import NatsServer, free_port

CASES = {
    "pub": ["pub", "--msgs", "2000000", "--size", "16"],
    "latency": ["latency", "--rate", "1000", "--duration", "5s"],
}


class MonitoredServer(NatsServer):
    def __init__(self, binary: str, workdir: Path):
        super().__init__(binary, workdir)
        self.monitor = free_port()
        self.cmd += ["-m", str(self.monitor)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--binary", help="the msgbench to run (default: this checkout's release build)")
    p.add_argument("--no-build", action="store_true", help="use target/release/msgbench as it is")
    p.add_argument("--old", help="run the 'off' side with this msgbench instead (without --server-monitor)")
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    nats, msgbench = build.nats_and_msgbench("run_sampling", a.binary, a.no_build)
    figures: dict[tuple[str, str], list] = {(c, s): [] for c in CASES for s in ("off", "on")}
    with tempfile.TemporaryDirectory(prefix="msgbench-sampling-") as tmp:
        work = Path(tmp)
        server = MonitoredServer(nats, work)
        server.start()
        try:
            for r in range(a.rounds):
                for case, args in CASES.items():
                    for side in ("off", "on") if r % 2 == 0 else ("on", "off"):
                        out = work / "r.json"
                        binary = a.old if a.old and side == "off" else msgbench
                        cmd = [binary, *args, "--server", server.url, "--no-progress", "--json", str(out)]
                        if side == "on":
                            cmd += ["--server-monitor", f"http://127.0.0.1:{server.monitor}"]
                        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                        if done.returncode != 0:
                            print(f"run_sampling: {case} {side}: exit {done.returncode}: {done.stderr[-400:]}", file=sys.stderr)
                            return 1
                        d = json.loads(out.read_text())
                        if case == "pub":
                            figures[(case, side)].append(d["throughput"]["msgs_per_sec"])
                        else:
                            pct = d["latency_uncorrected"]["percentiles_ns"]
                            figures[(case, side)].append((pct["50"], pct["99"]))
        finally:
            server.stop()
    name = {"off": "old binary, no sampling", "on": "this binary, sampling"} if a.old else {"off": "sampling off", "on": "sampling on"}
    for side in ("off", "on"):
        v = figures[("pub", side)]
        print(f"pub, {name[side]}: median {statistics.median(v):,.0f} msgs/s (range {min(v):,.0f}–{max(v):,.0f})")
    for side in ("off", "on"):
        p50 = [x[0] for x in figures[("latency", side)]]
        p99 = [x[1] for x in figures[("latency", side)]]
        print(f"latency, {name[side]}: uncorrected P50 median {statistics.median(p50) / 1e3:.1f} µs, "
              f"P99 median {statistics.median(p99) / 1e3:.1f} µs (range {min(p99) / 1e3:.1f}–{max(p99) / 1e3:.1f} µs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
