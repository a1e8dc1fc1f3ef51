"""The facts a report starts with: when, on what machine, with which versions."""

from __future__ import annotations

import datetime as _dt
import os
import platform
from pathlib import Path

from . import BENCH, REPO
from .proc import capture


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def nproc() -> str:
    out = capture(["nproc"])
    if out:
        return out
    try:
        return str(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return str(os.cpu_count())


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def go_module_version(module: str) -> str:
    """The version bench/ref's go.mod requires of a module."""
    try:
        for line in (BENCH / "ref" / "go.mod").read_text().splitlines():
            parts = line.split()
            if module in parts:
                return parts[parts.index(module) + 1]
    except (OSError, IndexError):
        pass
    return "unknown"


def commit_label() -> str:
    """The commit the figures come from, marked when the tree has local changes. The reports
    are left out of that: they change as the suites run one after another, and are not what
    was measured."""
    commit = capture(["git", "rev-parse", "--short", "HEAD"], cwd=REPO)
    if not commit:
        return "none (no commits yet)"
    dirty = capture(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/RESULTS*.md"],
        cwd=REPO,
    )
    return commit + (" (with local changes)" if dirty else "")


def machine() -> dict[str, str]:
    """Date, cores, CPU and OS: the start of every report's facts."""
    return {
        "date (UTC)": now_utc(),
        "nproc": nproc(),
        "CPU": cpu_model(),
        "OS": f"{platform.system()} {platform.release()}",
    }


def toolchains() -> dict[str, str]:
    return {
        "go": capture(["go", "version"]) or "not found",
        "rustc": capture(["rustc", "--version"]) or "not found",
    }
