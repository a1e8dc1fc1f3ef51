"""Builds: msgbench's release binary (cargo) and the Go reference client bench/ref (go build)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from . import BENCH, REPO
from .proc import log

BUILD_TIMEOUT = 3600.0

# --locked: benchmark the dependency versions Cargo.lock pins.
CARGO_BUILD = ["cargo", "build", "--release", "--locked"]
# How a report shows the builds: bench/ref is its own Go module, built from its folder.
CARGO_SHOWN = shlex.join(CARGO_BUILD)
REF_SHOWN = "(cd bench/ref && go build -o ref .)"


def build(cmd: list[str], cwd: Path, what: str) -> str | None:
    """Runs a build; None on success, else what went wrong (with the end of its output)."""
    log(f"building {what}: {shlex.join(cmd)}")
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    except FileNotFoundError as e:
        return f"{cmd[0]} not found ({e})"
    except subprocess.TimeoutExpired:
        return f"build timed out after {BUILD_TIMEOUT:.0f} s"
    if p.returncode != 0:
        tail = "\n".join((p.stderr or p.stdout).strip().splitlines()[-15:])
        return f"build failed (exit {p.returncode}):\n{tail}"
    return None


def target_dir() -> Path:
    """cargo's target folder: CARGO_TARGET_DIR (relative to the repository) or target/."""
    d = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    return d if d.is_absolute() else REPO / d


def msgbench(no_build: bool = False) -> tuple[str | None, str]:
    """The release binary, built first unless no_build; (path, "") or (None, why not)."""
    if not no_build:
        err = build(CARGO_BUILD, REPO, "msgbench")
        if err:
            return None, err
    b = target_dir() / "release" / "msgbench"
    if not b.is_file():
        return None, "binary not found: target/release/msgbench"
    return str(b), ""


def ref(workdir: Path) -> tuple[str | None, str]:
    """The Go reference (bench/ref), built into workdir; (path, "") or (None, why not)."""
    b = workdir / "ref"
    err = build(["go", "build", "-o", str(b), "."], BENCH / "ref", "ref")
    return (str(b), "") if err is None else (None, err)


def executable(path: str, flag: str) -> tuple[str | None, str]:
    """A binary named on the command line: (absolute path, "") or (None, why not)."""
    p = Path(path)
    if p.is_file() and os.access(p, os.X_OK):
        return str(p.resolve()), ""
    return None, f"{flag} {path}: not an executable file"


def nats_and_msgbench(script: str, binary: str | None, no_build: bool) -> tuple[str, str]:
    """The nats-server (as find_nats_server finds it) and the msgbench a script runs: `binary`
    when given, else this checkout's release build (built first unless no_build). Exits 2 with
    one line, named after `script`, saying which is missing."""
    from .server import find_nats_server

    nats = find_nats_server()
    found, why = executable(binary, "--binary") if binary else msgbench(no_build=no_build)
    missing = "no nats-server (make nats-server installs it)" if nats is None else why
    if nats is None or found is None:
        print(f"{script}: {missing}", file=sys.stderr)
        sys.exit(2)
    return nats, found
