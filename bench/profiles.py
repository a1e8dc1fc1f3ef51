#!/usr/bin/env python3
"""What the build profile buys: the default release build against the `dist` profile.

The default `cargo build --release` (what `make run` and `cargo install` build) has no fat LTO;
the `dist` profile (one codegen unit, fat LTO) is kept for benchmarks and release binaries.
This script answers whether that costs anything a user would see, side by side on one
nats-server:

- each build timed cold, one after the other, in a fresh target folder of its own (crates
  already downloaded), with its size;
- then rounds that alternate the two binaries: `pub` of 16 B messages (msgs/s and CPU per
  message) and `latency` at 1,000 msgs/s (corrected P50 and P99).

A benchmark, not a test: run it by hand on a quiet machine.

    python3 bench/profiles.py [--rounds 5] [--msgs 2000000] [--no-build A B]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as common  # noqa: E402  (bench/run.py: the server and child-process helpers)

PROFILES = ("release", "dist")


def cold_build(profile: str, target: Path) -> tuple[float, Path]:
    """Builds msgbench with `profile` into an empty `target`; returns seconds and the binary."""
    args = ["cargo", "build", "--locked", "--profile", profile, "--target-dir", str(target)]
    t0 = time.monotonic()
    subprocess.run(args, cwd=common.REPO, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0, target / profile / "msgbench"


def du_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[0])


def pub(binary: Path, url: str, msgs: int, workdir: Path) -> tuple[float, float] | None:
    cmd = [str(binary), "pub", "--server", url, "--msgs", str(msgs), "--size", "16",
           "--json", "-", "--no-progress"]
    r = common.run_child(cmd, 120, workdir)
    rate = common.num(common.dig(r.data, "throughput", "msgs_per_sec")) if r.ok else None
    return (rate, r.cpu_s * 1e9 / msgs) if rate else None


def latency(binary: Path, url: str, workdir: Path) -> tuple[float, float] | None:
    cmd = [str(binary), "latency", "--server", url, "--rate", "1000", "--duration", "5s",
           "--json", "-", "--no-progress"]
    r = common.run_child(cmd, 60, workdir)
    p = common.dig(r.data, "latency", "percentiles_ns") if r.ok else None
    return (p["50"] / 1e3, p["99"] / 1e3) if p else None


def med(values: list[float]) -> str:
    return f"{statistics.median(values):,.1f} ({min(values):,.1f}-{max(values):,.1f})" if values else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--msgs", type=int, default=2_000_000)
    ap.add_argument("--no-build", nargs=2, metavar=("RELEASE_BIN", "DIST_BIN"),
                    help="use these two binaries instead of building")
    args = ap.parse_args()
    pinned = common.REPO / ".tools" / "bin" / "nats-server"
    server_bin = common.find_nats_server() or (str(pinned) if pinned.exists() else None)
    if not server_bin:
        print("error: no nats-server (make run installs one into .tools/bin)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="msgbench-profiles-") as tmp:
        work = Path(tmp)
        bins: dict[str, Path] = {}
        if args.no_build:
            bins = dict(zip(PROFILES, map(Path, args.no_build)))
        else:
            subprocess.run(["cargo", "fetch", "--locked"], cwd=common.REPO, check=True)
            for profile in PROFILES:
                secs, binary = cold_build(profile, work / f"target-{profile}")
                bins[profile] = binary
                print(f"cold build, profile {profile}: {secs:.0f} s, "
                      f"target folder {du_mb(work / f'target-{profile}'):,.0f} MB")
        server = common.NatsServer(server_bin, work)
        server.start()
        figures: dict[str, dict[str, list[float]]] = {p: {} for p in PROFILES}
        try:
            for rnd in range(args.rounds):
                order = PROFILES if rnd % 2 == 0 else PROFILES[::-1]
                for profile in order:
                    f = figures[profile]
                    if (r := pub(bins[profile], server.url, args.msgs, work)):
                        f.setdefault("pub 16 B, msgs/s", []).append(r[0])
                        f.setdefault("pub 16 B, CPU ns/msg", []).append(r[1])
                    if (r := latency(bins[profile], server.url, work)):
                        f.setdefault("latency 1k/s, P50 us", []).append(r[0])
                        f.setdefault("latency 1k/s, P99 us", []).append(r[1])
                common.log(f"round {rnd + 1}/{args.rounds} done")
        finally:
            server.stop()
    print(f"\n{args.rounds} rounds, alternating; median (min-max)")
    print(f"| figure | {' | '.join(PROFILES)} | release / dist |")
    print("|---|---|---|---|")
    for name in figures["release"]:
        a, b = figures["release"].get(name, []), figures["dist"].get(name, [])
        ratio = statistics.median(a) / statistics.median(b) if a and b else float("nan")
        print(f"| {name} | {med(a)} | {med(b)} | {ratio:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
