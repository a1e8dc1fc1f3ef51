#!/usr/bin/env python3
"""What the build profile buys: the default release build against the `dist` profile.

The default `cargo build --release` (what `make run` and `cargo install` build) has no fat LTO;
the `dist` profile (one codegen unit, fat LTO) is kept for benchmarks and release binaries.
This answers whether that costs anything a user would see:

- each build timed cold, one after the other, in a fresh target folder of its own (crates
  already downloaded), with its size;
- then regress.py's pub (16 B: msgs/s and CPU per message) and latency (1,000 msgs/s for 5 s:
  corrected P50 and P99) cases, the two binaries taking turns, each case on its own server.

A benchmark, not a test: run it by hand on a quiet machine. The report goes to stdout (and to
--out if given).

    python3 bench/profiles.py [--rounds 5] [--msgs 2000000] [--no-build RELEASE_BIN DIST_BIN]
"""

from __future__ import annotations

import subprocess
import time

from benchkit import REPO, build
from benchkit.fmt import Duration
from benchkit.proc import log
from regress import Regress, make_case

PROFILES = ("release", "dist")


class Profiles(Regress):
    script = "profiles.py"
    title = "msgbench build profiles: release against dist"
    description = "The default release build against the dist profile (fat LTO): build time and size, pub and latency."
    default_rounds = 5
    default_out = None
    sides = ("dist", "release")  # ratios are release / dist
    binaries = sides
    hidden_flags = ("out", "timeout", "no_build")

    @classmethod
    def add_arguments(cls, p):
        p.add_argument("--msgs", type=int, default=2_000_000, help="messages per pub run (default 2000000)")
        p.add_argument("--no-build", nargs=2, metavar=("RELEASE_BIN", "DIST_BIN"), help="use these two binaries instead of building")

    @classmethod
    def check_arguments(cls, p, a):
        if a.msgs < 1:
            p.error("--msgs must be positive")

    def make_cases(self):
        return [make_case("pub", self.sides, msgs=self.args.msgs), make_case("latency", self.sides, rate=1000, seconds=Duration(5))]

    def build(self):
        self.binary_facts = {}
        if self.args.no_build:
            for profile, path in zip(PROFILES, self.args.no_build):
                self.provide(profile, *build.executable(path, "--no-build"))
                self.binary_facts[profile] = self.describe_binary(profile, path, "")
            return
        err = build.build(["cargo", "fetch", "--locked"], REPO, "the crates")
        for profile in PROFILES:
            target = self.workdir / f"target-{profile}"
            t0 = time.monotonic()
            err = err or build.build(["cargo", "build", "--locked", "--profile", profile, "--target-dir", str(target)], REPO, f"msgbench, profile {profile}")
            secs = time.monotonic() - t0
            self.provide(profile, None if err else str(target / profile / "msgbench"), err or "")
            if not err:
                size = subprocess.run(["du", "-sm", str(target)], capture_output=True, text=True).stdout.split()[0]
                self.binary_facts[profile] = f"cold build {secs:.0f} s, target folder {int(size):,} MB ({self.version(profile)})"
                log(f"profile {profile}: {self.binary_facts[profile]}")

    def builds_shown(self):
        return "" if self.args.no_build else "\n".join(f"cargo build --locked --profile {p} --target-dir <fresh folder>" for p in PROFILES)


if __name__ == "__main__":
    Profiles.main()
