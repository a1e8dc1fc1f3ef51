#!/usr/bin/env python3
"""Capture, replay, capture again: how faithful `msgbench capture` is, on traffic msgbench did
not make. A benchmark, not a test: the figures never decide the exit status; it is 1 only when
a step failed, 2 when it cannot start.

    python3 bench/run_capture.py --nats PATH/TO/natscli [--msgbench PATH | --no-build]
                                 [--seconds 20] [--high-rate 500000] [--out bench/RESULTS-capture.md]

1. Traffic from natscli (`nats bench`), on one nats-server, for the capture's length and a few
   seconds either side: core publishes on four subject families with their own sizes and rates
   (one over 100 subjects), a `nats bench service` pair, and asynchronous JetStream publishes
   into a stream natscli creates.
2. `msgbench capture` of it: each pattern's rate against the rate natscli was asked for, the
   service and the stream found.
3. `msgbench run` of the captured file against a second, fresh nats-server, and a capture of
   that replay inside its steady part; `msgbench capture diff` of the two captures.
4. A capture of one publisher at --high-rate msgs/s over 1,000 subjects: what it kept up with,
   what it missed, and its CPU per message.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit import REPO, build
from benchkit.fmt import md_table
from benchkit.proc import log
from benchkit.server import NatsServer, find_nats_server

# (subject, flags): the core traffic, each family with its own rate and size.
CORE = [
    ("orders.eu", ["--throughput", "2000", "--size", "200B"]),
    ("metrics.cpu", ["--throughput", "500", "--size", "64B"]),
    ("logs.app", ["--throughput", "1000", "--size", "1KiB"]),
    ("events.click", ["--throughput", "3000", "--size", "100B", "--multisubject", "--multisubjectmax", "100"]),
]
SERVICE = ("svc.price", 300, "32B")
JS = ("shop.orders", "SHOP", 800, "512B")

EXPECTED = {
    "pub orders.eu": 2000,
    "pub metrics.cpu": 500,
    "pub logs.app": 1000,
    "pub events.click.{t2}": 3000,
    "request svc.price": SERVICE[1],
    "js pub shop.orders": JS[2],
}


def start(cmd: list[str], name: str, workdir: Path) -> subprocess.Popen:
    out = open(workdir / f"{name}.log", "wb")
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def traffic(nats: str, url: str, seconds: int, workdir: Path) -> list[subprocess.Popen]:
    d = f"{seconds}s"
    base = [nats, "--server", url]
    procs = [start(base + ["bench", "service", "serve", SERVICE[0]], "serve", workdir)]
    time.sleep(1)
    for subject, flags in CORE:
        procs.append(start(base + ["bench", "pub", subject, "--duration", d, "--no-progress"] + flags,
                           subject, workdir))
    procs.append(start(base + ["bench", "service", "request", SERVICE[0], "--throughput", str(SERVICE[1]),
                               "--duration", d, "--size", SERVICE[2], "--no-progress"], "request", workdir))
    procs.append(start(base + ["bench", "js", "pub", "async", JS[0], "--stream", JS[1], "--create",
                               "--storage", "memory", "--throughput", str(JS[2]), "--duration", d,
                               "--size", JS[3], "--no-progress"], "jspub", workdir))
    return procs


def capture(msgbench: str, url: str, seconds: int, out: Path, extra: list[str] = ()) -> str:
    p = subprocess.run([msgbench, "capture", "--server", url, "--duration", f"{seconds}s", "--out", str(out),
                        *extra], capture_output=True, text=True)
    if p.returncode not in (0, 3):
        raise RuntimeError(f"capture exited {p.returncode}: {p.stderr}")
    return p.stderr


def classes(path: Path) -> dict[str, float]:
    """Each class's `scenario subject` and rate, read from the file's own lines."""
    out, cur = {}, {}

    def done():
        if cur.get("scenario") and "rate" in cur:
            out[f"{cur['scenario']} {cur.get('subject')}"] = cur["rate"]

    for line in path.read_text().splitlines():
        if re.match(r"  [^ #].*:$", line):
            done()
            cur = {}
        m = re.match(r"    (scenario|subject|rate|target): (.*)", line)
        if not m:
            continue
        k, v = m.groups()
        if k == "rate":
            cur["rate"] = float(v)
        elif k == "target":
            cur["subject"] = re.search(r'"subject":"([^"]*)"', v).group(1)
        else:
            cur[k] = v.strip('"')
    done()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nats", required=True, help="natscli's `nats` binary")
    ap.add_argument("--msgbench")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--high-rate", type=int, default=500000)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS-capture.md")
    a = ap.parse_args()
    msgbench, why = (a.msgbench, "") if a.msgbench else build.msgbench(no_build=a.no_build)
    if msgbench is None:
        print(why, file=sys.stderr)
        return 2
    nats_bin = find_nats_server()
    if nats_bin is None:
        print("no nats-server", file=sys.stderr)
        return 2
    lines = ["# Capture and replay", "", f"`python3 bench/run_capture.py --seconds {a.seconds}"
             f" --high-rate {a.high_rate}` (natscli {subprocess.run([a.nats, '--version'], capture_output=True, text=True).stdout.strip()}).", ""]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "source").mkdir()
        (work / "replay").mkdir()
        (work / "high").mkdir()
        src = NatsServer(nats_bin, work / "source", jetstream=True)
        src.start()
        gen = traffic(a.nats, src.url, a.seconds + 8, work)
        time.sleep(3)
        first = work / "captured.yaml"
        log(f"capturing {a.seconds} s of natscli's traffic")
        said = capture(msgbench, src.url, a.seconds, first)
        for p in gen:
            p.terminate() if "serve" in p.args else p.wait()
        src.stop()
        got = classes(first)
        rows = []
        for key, want in EXPECTED.items():
            seen = got.get(key)
            rows.append([key, f"{want:,}", "—" if seen is None else f"{seen:,.1f}",
                         "—" if seen is None else f"{seen / want:.3f}"])
        lines += ["## What natscli sent, and what capture found", "",
                  md_table(["class", "asked of natscli (msgs/s)", "captured (msgs/s)", "ratio"], rows), "",
                  "The file:", "", "```yaml", first.read_text().rstrip(), "```", ""]

        # Replay on a fresh server, captured inside its steady part.
        dst = NatsServer(nats_bin, work / "replay", jetstream=True)
        dst.start()
        # The captured file names no server (a replay goes where it is pointed): this one is
        # pointed at the fresh server by a conn line.
        pointed = work / "pointed.yaml"
        pointed.write_text(first.read_text().replace("\nclasses:\n", f"\nconn: {{server: {dst.url}}}\nclasses:\n", 1))
        replay = subprocess.Popen([msgbench, "run", str(pointed)], stdout=subprocess.DEVNULL,
                                  stderr=open(work / "replay.log", "w"))
        time.sleep(4)
        second = work / "replayed.yaml"
        log(f"capturing {a.seconds - 8} s of the replay")
        capture(msgbench, dst.url, a.seconds - 8, second)
        replay.wait()
        dst.stop()
        diff = subprocess.run([msgbench, "capture", "diff", str(first), str(second)], capture_output=True, text=True)
        lines += ["## The replay, captured, against the capture", "",
                  f"`msgbench run captured.yaml` on a fresh server, captured for {a.seconds - 8} s from its"
                  f" fourth second; then `msgbench capture diff captured.yaml replayed.yaml` (exit {diff.returncode}):", "",
                  "```", diff.stdout.rstrip(), "```", ""]

        # One publisher at a high rate over 1,000 subjects.
        hi = NatsServer(nats_bin, work / "high", jetstream=False)
        hi.start()
        pub = start([a.nats, "--server", hi.url, "bench", "pub", "hi", "--multisubject", "--multisubjectmax", "1000",
                     "--throughput", str(a.high_rate), "--duration", "16s", "--size", "16B", "--no-progress"],
                    "high", work)
        time.sleep(3)
        high = work / "high.yaml"
        said = capture(msgbench, hi.url, 10, high, ["--no-jetstream"])
        pub.wait()
        hi.stop()
        head = [l for l in high.read_text().splitlines() if l.startswith("#")]
        lines += [f"## A capture at {a.high_rate:,} msgs/s asked over 1,000 subjects", "",
                  f"natscli asked for {a.high_rate:,} msgs/s of 16 B over `hi.<n>` (1,000 subjects); capture watched 10 s:", "",
                  "```", "\n".join(head), said.rstrip(), "```", ""]
    a.out.write_text("\n".join(lines) + "\n")
    log(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
