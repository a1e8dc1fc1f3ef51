"""Child processes: run one, time it, read its CPU time and peak memory and its JSON result."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


def log(msg: str) -> None:
    """Progress goes to stderr; stdout carries the report alone."""
    print(msg, file=sys.stderr, flush=True)


@dataclass
class Run:
    """The outcome of one child process."""

    cmd: list[str]
    ok: bool = False
    exit_code: int | None = None
    timed_out: bool = False
    data: dict | None = None  # its JSON result
    error: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0  # user + sys of the child, from os.wait4
    maxrss_kb: int = 0  # ru_maxrss of the child: an upper bound only, see run_child
    hwm_kb: int = 0  # the child's own sampled VmHWM, with sample_rss
    stderr_tail: str = ""
    metrics: dict = field(default_factory=dict)  # what the suite reads from it

    @property
    def peak_kb(self) -> int:
        """The best peak RSS known: the sampled VmHWM, else ru_maxrss."""
        return self.hwm_kb or self.maxrss_kb


def parse_json(text: str) -> dict | None:
    """The JSON object of a tool's stdout: all of it, else the last line that is one."""
    text = text.strip()
    if not text:
        return None
    try:
        doc = json.loads(text)
        return doc if isinstance(doc, dict) else None
    except json.JSONDecodeError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(doc, dict):
                return doc
    return None


def dig(doc, *keys: str):
    """doc[k1][k2]...; None when any step is missing."""
    cur = doc
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            return None
        cur = cur[k]
    return cur


def num(v) -> float | None:
    """v as a float if it is a JSON number (not a boolean), else None."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def read_status_kb(pid: int, key: str) -> int | None:
    """A kB figure of /proc/PID/status (VmHWM: peak RSS, VmRSS: current RSS); None once the
    process is gone (a zombie has neither)."""
    prefix = key.encode() + b":"
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(prefix):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def proc_cpu_seconds(pid: int) -> float | None:
    """utime + stime of a live process, from /proc/PID/stat, in seconds."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        # The command name (field 2) is in parentheses and may hold spaces; utime and stime
        # are fields 14 and 15, the 12th and 13th after it.
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _exited(pid: int) -> bool:
    # WNOWAIT: notice the exit without reaping, so the pid cannot be reused while the caller
    # still reads /proc/PID.
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _wait_exit(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not _exited(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def run_child(
    cmd: list[str],
    timeout: float,
    workdir: Path,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    sample_rss: bool = False,
    json_file: Path | None = None,
    poll: float | None = None,
    on_poll: Callable[[int, float], None] | None = None,
    term_grace: float = 0.0,
) -> Run:
    """Runs cmd, its stdout and stderr in files of workdir, and reaps it with os.wait4 for its
    own rusage. After `timeout` seconds it is killed (with term_grace > 0: SIGTERM first, SIGKILL
    if it is still there term_grace seconds later).

    The result is the JSON object on its stdout, or in json_file (removed first, so a file left
    by an earlier run cannot pass for this one's).

    sample_rss samples the child's VmHWM every 5 ms until it exits: the peak RSS of the program
    itself. ru_maxrss of a child on Linux is at least the parent's RSS when it forked (the
    pre-exec image counts), here the Python interpreter's, so it is only an upper bound.
    on_poll(pid, seconds since start) is called every `poll` seconds while the child runs.
    """
    res = Run(cmd=list(cmd))
    out_path, err_path = workdir / "child.out", workdir / "child.err"
    if json_file is not None:
        json_file.unlink(missing_ok=True)
    if poll is None:
        poll = 0.005 if sample_rss else 0.02
    with open(out_path, "wb") as out_f, open(err_path, "wb") as err_f:
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out_f, stderr=err_f, stdin=subprocess.DEVNULL)
        except OSError as e:
            res.error = f"cannot start: {e}"
            return res
        try:
            while not _exited(proc.pid):
                if sample_rss:
                    res.hwm_kb = max(res.hwm_kb, read_status_kb(proc.pid, "VmHWM") or 0)
                if on_poll is not None:
                    on_poll(proc.pid, time.monotonic() - t0)
                if time.monotonic() - t0 >= timeout:
                    res.timed_out = True
                    if term_grace > 0:
                        proc.send_signal(signal.SIGTERM)
                        if _wait_exit(proc.pid, term_grace):
                            break
                    proc.kill()
                    break
                time.sleep(poll)
            _, status, ru = os.wait4(proc.pid, 0)
        except BaseException:
            # Ctrl-C or anything else: never leave the child behind.
            proc.kill()
            proc.wait()
            raise
        res.wall_s = time.monotonic() - t0

    res.exit_code = os.waitstatus_to_exitcode(status)
    proc.returncode = res.exit_code  # reaped here; Popen must not try again
    res.cpu_s = ru.ru_utime + ru.ru_stime
    res.maxrss_kb = ru.ru_maxrss
    res.stderr_tail = " | ".join(err_path.read_text(errors="replace").strip().splitlines()[-3:])
    if json_file is None:
        res.data = parse_json(out_path.read_text(errors="replace"))
    else:
        try:
            doc = json.loads(json_file.read_text())
            res.data = doc if isinstance(doc, dict) else None
        except (OSError, json.JSONDecodeError):
            res.data = None

    if res.timed_out:
        res.error = f"timed out after {timeout:.0f} s"
    elif res.exit_code != 0:
        res.error = f"exit status {res.exit_code}" + (f": {res.stderr_tail}" if res.stderr_tail else "")
    elif res.data is None:
        res.error = "no JSON result " + ("on stdout" if json_file is None else "in the --json file")
    res.ok = res.error == ""
    return res


def capture(cmd: list[str], cwd: Path | None = None, timeout: float = 30.0) -> str | None:
    """The output of a short command (a version, a commit), or None if it failed."""
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return (p.stdout or p.stderr).strip()


def stop_process(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it is still running after `grace` seconds."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(grace)
