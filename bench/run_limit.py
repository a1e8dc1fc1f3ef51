#!/usr/bin/env python3
"""What limited a run (the `Limit:` line and the result's `limit`), in the four set-ups where
the answer is known from how the machine was arranged.

A benchmark, not a test: it reports what msgbench named in each round and whether that was the
known answer; the exit status is 1 only when a run failed, 2 when it cannot start.

    python3 bench/run_limit.py [--binary PATH | --no-build] [--rounds 3] [--duration 5s]
                               [--out bench/RESULTS-limit.md]

The set-ups, each on a nats-server of its own with its monitoring port sampled
(`--server-monitor`):
- server: the server pinned to one core (`taskset -c 1`, GOMAXPROCS=1) and msgbench to the
  other, `pub` flat out: the server's one core is the ceiling, so the answer is the server;
- tool: the server alone on one core, msgbench on the other in a CPU cgroup with a tenth of a
  core's quota, `pub` flat out: msgbench is the ceiling, so the answer is the tool (half a
  core shared with a spin loop was not enough: msgbench's publisher, at about 30 ns a
  message, still outran a server on one core);
- link: `pub` of 1 KiB messages flat out through `--link rate=80mbit`: the link;
- paced: `pub --rate 20000`, far below what either can do: nothing (kind `none`), with its
  headroom.
Needs two CPUs, `taskset` (util-linux), and root for the cgroup (v1's cpu controller or v2's).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchkit import REPO, build, env
from benchkit.fmt import md_table, parse_duration
from benchkit.proc import log
from benchkit.server import NatsServer, free_port, nats_server_version

# Each set-up: its name, the answer it is arranged for, where msgbench and the server run,
# whether msgbench runs under a tenth of a core's CPU quota, and the pub flags.
SETUPS = [
    ("server", "server", "0", "1", False, ["--size", "128"]),
    ("tool", "tool", "0", "1", True, ["--size", "128"]),
    ("link", "link", None, None, False, ["--size", "1024", "--link", "rate=80mbit"]),
    ("paced", "none", None, None, False, ["--size", "128", "--rate", "20000"]),
]


QUOTA_US, PERIOD_US = 10_000, 100_000


def throttled_group() -> Path | None:
    """A CPU cgroup with a tenth of a core's quota (v1's cpu controller, else v2), or None."""
    v1 = Path("/sys/fs/cgroup/cpu")
    try:
        if (v1 / "cpu.cfs_quota_us").exists():
            g = v1 / f"msgbench-limit-{os.getpid()}"
            g.mkdir(exist_ok=True)
            (g / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (g / "cpu.cfs_quota_us").write_text(str(QUOTA_US))
            return g
        v2 = Path("/sys/fs/cgroup")
        if "cpu" in (v2 / "cgroup.controllers").read_text().split():
            g = v2 / f"msgbench-limit-{os.getpid()}"
            g.mkdir(exist_ok=True)
            (g / "cpu.max").write_text(f"{QUOTA_US} {PERIOD_US}")
            return g
    except OSError:
        return None
    return None


class PinnedServer(NatsServer):
    """nats-server with a monitoring port, on the CPU `cpu` with GOMAXPROCS=1 when given."""

    def __init__(self, binary: str, workdir: Path, cpu: str | None):
        super().__init__(binary, workdir)
        self.monitor = free_port()
        self.cmd += ["-m", str(self.monitor)]
        if cpu is not None:
            self.cmd = ["env", "GOMAXPROCS=1", "taskset", "-c", cpu] + self.cmd


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--binary", help="the msgbench to run (default: this checkout's release build)")
    p.add_argument("--no-build", action="store_true", help="use target/release/msgbench as it is")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=parse_duration, default=parse_duration("5s"))
    p.add_argument("--out", default=str(REPO / "bench" / "RESULTS-limit.md"))
    a = p.parse_args()
    if os.cpu_count() is None or os.cpu_count() < 2 or not shutil.which("taskset"):
        print("run_limit: needs two CPUs and taskset", file=sys.stderr)
        return 2
    nats, msgbench = build.nats_and_msgbench("run_limit", a.binary, a.no_build)
    group = throttled_group()
    if group is None:
        print("run_limit: no CPU cgroup could be made (needs root and a cpu controller)", file=sys.stderr)
        return 2
    rows, failed = [], 0
    with tempfile.TemporaryDirectory(prefix="msgbench-limit-") as tmp:
        work = Path(tmp)
        for r in range(a.rounds):
            for name, want, tool_cpu, server_cpu, throttled, flags in SETUPS:
                server = PinnedServer(nats, work, server_cpu)
                server.start()
                try:
                    out = work / "r.json"
                    out.unlink(missing_ok=True)
                    cmd = ([] if tool_cpu is None else ["taskset", "-c", tool_cpu]) + [
                        msgbench, "pub", "--server", server.url,
                        "--server-monitor", f"http://127.0.0.1:{server.monitor}",
                        "--duration", str(a.duration), "--no-progress", "--json", str(out), *flags,
                    ]
                    if throttled:
                        # The shell joins the group, then becomes msgbench: the quota is on it
                        # from its first instruction.
                        cmd = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", *cmd]
                    done = subprocess.run(cmd, capture_output=True, text=True, timeout=a.duration + 60)
                finally:
                    server.stop()
                if done.returncode != 0 or not out.exists():
                    failed += 1
                    log(f"round {r + 1} {name}: exit {done.returncode}: {done.stderr[-400:]}")
                    continue
                doc = json.loads(out.read_text())
                limit = doc.get("limit") or {}
                kind = limit.get("kind", "none")
                rate = doc.get("throughput", {}).get("msgs_per_sec", 0.0)
                log(f"round {r + 1} {name}: {kind} ({rate:,.0f} msgs/s): {limit.get('text', '')}")
                rows.append([str(r + 1), name, want, kind, "yes" if kind == want else "NO",
                             f"{rate:,.0f}", limit.get("text", "")])
    machine = env.machine()
    right = sum(1 for row in rows if row[4] == "yes")
    md = [
        "# What limited the run, in four known set-ups",
        "",
        f"`python3 bench/run_limit.py --rounds {a.rounds}` on {env.now_utc()}: {machine['CPU']}, "
        f"{machine['nproc']} CPUs, nats-server {nats_server_version(nats)}, msgbench at {env.commit_label()}. "
        f"`pub` for {a.duration} a run with the server's monitoring port sampled.",
        "",
        f"Right in {right} of {len(rows)} runs.",
        "",
        md_table(["round", "set-up", "arranged for", "msgbench named", "right", "msgs/s", "the Limit line"], rows),
        "",
    ]
    try:
        group.rmdir()
    except OSError:
        pass
    Path(a.out).write_text("\n".join(md))
    print("\n".join(md))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
