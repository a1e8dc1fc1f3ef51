#!/usr/bin/env python3
"""Side-by-side benchmark: msgbench vs. a nats.go reference vs. a raw writer.

This is a benchmark, not a test: it has no pass/fail exit status tied to
performance, and it must never be run as a timed test in CI.

Usage:
    python3 bench/run.py [--rounds 5] [--msgs 2000000] [--rss-msgs 20000000]
                         [--out bench/RESULTS.md] [--timeout 120] [--no-build]
                         [--no-memory]

It starts one nats-server on 127.0.0.1 (a free port), builds msgbench
(`cargo build --release`) and the reference (`go build ./bench/ref`), runs
every case for a number of rounds with a rotating tool order, and prints a
table of medians and ratios; the same table is written as Markdown to --out.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"

# Targets printed next to the measured figures.
TARGET_PUB_VS_REF = 1.3
TARGET_PUB_VS_RAW = 0.9
TARGET_PUBSUB_VS_REF = 1.3
TARGET_CPU_NS = 100.0
TARGET_RSS_MB = 32.0

SERVER_START_TIMEOUT = 10.0
SERVER_STOP_TIMEOUT = 10.0
BUILD_TIMEOUT = 3600.0

TOOLS = ("msgbench", "ref", "raw")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Running children with rusage


@dataclass
class Run:
    """The outcome of one child process."""

    cmd: list[str]
    ok: bool = False
    exit_code: int | None = None
    data: dict | None = None
    error: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0  # user + sys of the child
    maxrss_kb: int = 0  # ru_maxrss of the child (kB); an upper bound, see run_child
    hwm_kb: int = 0  # sampled VmHWM of the child (kB), when requested
    metrics: dict = field(default_factory=dict)


def _parse_json(text: str) -> dict | None:
    text = text.strip()
    if not text:
        return None
    try:
        doc = json.loads(text)
        return doc if isinstance(doc, dict) else None
    except json.JSONDecodeError:
        pass
    # Fall back to the last line that is a JSON object on its own.
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                doc = json.loads(line)
                if isinstance(doc, dict):
                    return doc
            except json.JSONDecodeError:
                continue
    return None


def read_vm_hwm_kb(pid: int) -> int | None:
    """The peak RSS of a live process's own address space (VmHWM, kB)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def run_child(cmd: list[str], timeout: float, workdir: Path, sample_rss: bool = False) -> Run:
    """Runs cmd with stdout/stderr captured in files, kills it after
    `timeout` seconds, and reaps it with os.wait4 to get its own rusage.

    With sample_rss, the child's VmHWM is also sampled every few
    milliseconds until it exits. That is the peak RSS of the program itself:
    ru_maxrss of a child on Linux is at least the parent's RSS at the time of
    the fork (the pre-exec image counts), which here is the Python
    interpreter, so it is only an upper bound.
    """
    res = Run(cmd=cmd)
    out_path = workdir / "child.out"
    err_path = workdir / "child.err"
    poll = 0.005 if sample_rss else 0.02
    timed_out = False
    with open(out_path, "wb") as out_f, open(err_path, "wb") as err_f:
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, stdin=subprocess.DEVNULL)
        except OSError as e:
            res.error = f"cannot start: {e}"
            return res
        try:
            deadline = t0 + timeout
            while True:
                # WNOWAIT: notice the exit without reaping, so the pid
                # cannot be reused while it is still being sampled.
                info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                if info is not None:
                    break
                if sample_rss:
                    hwm = read_vm_hwm_kb(proc.pid)
                    if hwm is not None:
                        res.hwm_kb = max(res.hwm_kb, hwm)
                if time.monotonic() >= deadline:
                    timed_out = True
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
    # The child is reaped; tell Popen so it does not try again.
    proc.returncode = res.exit_code
    res.cpu_s = ru.ru_utime + ru.ru_stime
    res.maxrss_kb = ru.ru_maxrss
    stdout = out_path.read_text(errors="replace")
    stderr = err_path.read_text(errors="replace")
    res.data = _parse_json(stdout)

    if timed_out:
        res.error = f"timed out after {timeout:.0f} s"
    elif res.exit_code != 0:
        tail = " | ".join(stderr.strip().splitlines()[-3:])
        res.error = f"exit status {res.exit_code}: {tail}" if tail else f"exit status {res.exit_code}"
    elif res.data is None:
        res.error = "no JSON result on stdout"
    res.ok = res.error == "" and res.data is not None
    return res


# --------------------------------------------------------------------------
# nats-server


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_nats_server() -> str | None:
    env = os.environ.get("MSGBENCH_NATS_SERVER")
    if env:
        return env if os.access(env, os.X_OK) else None
    return shutil.which("nats-server")


class NatsServer:
    def __init__(self, binary: str, workdir: Path):
        self.binary = binary
        self.port = free_port()
        self.log_path = workdir / "nats-server.log"
        self.cmd = [binary, "-a", "127.0.0.1", "-p", str(self.port)]
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._log_f = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            self.cmd, stdout=self._log_f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nats-server exited early:\n{self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
                    s.settimeout(1.0)
                    if s.recv(5) == b"INFO ":
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"nats-server did not accept connections within {SERVER_START_TIMEOUT:.0f} s")

    def log_tail(self, lines: int = 10) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(SERVER_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(SERVER_STOP_TIMEOUT)
        self._log_f.close()
        self.proc = None


# --------------------------------------------------------------------------
# Builds and environment facts


def capture(cmd: list[str], cwd: Path | None = None, timeout: float = 30.0) -> str | None:
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return (p.stdout or p.stderr).strip()


def build(cmd: list[str], cwd: Path, what: str) -> str | None:
    """Runs a build; returns None on success or an error description."""
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


def nats_go_version() -> str:
    try:
        for line in (BENCH / "ref" / "go.mod").read_text().splitlines():
            parts = line.split()
            if "github.com/nats-io/nats.go" in parts:
                return parts[parts.index("github.com/nats-io/nats.go") + 1]
    except (OSError, IndexError):
        pass
    return "unknown"


# --------------------------------------------------------------------------
# Commands and metrics


def msgbench_cmd(binary: str, url: str, mode: str, msgs: int, size: int, subject: str) -> list[str]:
    cmd = [binary, mode, "--server", url]
    if mode == "pubsub":
        cmd += ["--pubs", "1", "--subs", "1"]
    cmd += ["--msgs", str(msgs), "--size", str(size), "--subject", subject, "--no-progress", "--json", "-"]
    return cmd


def ref_cmd(binary: str, url: str, mode: str, msgs: int, size: int, subject: str) -> list[str]:
    return [binary, mode, "-url", url, "-msgs", str(msgs), "-size", str(size), "-subject", subject]


def dig(doc: dict | None, *keys: str):
    cur = doc
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            return None
        cur = cur[k]
    return cur


def num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def extract_metrics(tool: str, mode: str, run: Run, msgs: int) -> dict:
    """Returns {'pub': msgs/s, 'sub': msgs/s, 'lost': n} (keys only when known)."""
    d = run.data
    m: dict = {}
    if tool == "msgbench":
        pub = num(dig(d, "by_role", "pub", "msgs_per_sec"))
        if pub is None and mode == "pub":
            pub = num(dig(d, "throughput", "msgs_per_sec"))
        if pub is not None:
            m["pub"] = pub
        if mode == "pubsub":
            sub = num(dig(d, "by_role", "sub", "msgs_per_sec"))
            if sub is not None:
                m["sub"] = sub
            lost = num(dig(d, "delivery", "lost"))
            if lost is not None:
                m["lost"] = int(lost)
    else:
        pub = num(dig(d, "msgs_per_sec"))
        if pub is not None:
            m["pub"] = pub
        if mode == "pubsub":
            sub = num(dig(d, "sub_msgs_per_sec"))
            if sub is not None:
                m["sub"] = sub
            got = num(dig(d, "sub_msgs"))
            if got is not None:
                m["lost"] = max(0, msgs - int(got))
    return m


# --------------------------------------------------------------------------
# Formatting


def fmt_rate(v: float | None) -> str:
    if v is None:
        return "n/a"
    if v >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v >= 1e3:
        return f"{v / 1e3:.1f}k"
    return f"{v:.0f}"


def fmt_ratio(v: float | None, target: float | None = None) -> str:
    if v is None:
        return "n/a"
    s = f"{v:.2f}x"
    if target is not None:
        s += f" (target >= {target:g}x: {'met' if v >= target else 'MISSED'})"
    return s


def summary(values: list[float]) -> tuple[float, float, float] | None:
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def fmt_summary(values: list[float], fmt=fmt_rate) -> str:
    s = summary(values)
    if s is None:
        return "n/a"
    med, lo, hi = s
    if len(values) == 1:
        return fmt(med)
    return f"{fmt(med)} ({fmt(lo)}–{fmt(hi)}, n={len(values)})"


def one_line(text: str, limit: int = 300) -> str:
    """Collapses a multi-line message into one Markdown-safe line."""
    s = " / ".join(x.strip() for x in text.strip().splitlines() if x.strip())
    s = s.replace("|", "\\|")
    return s if len(s) <= limit else s[: limit - 3] + "..."


def peak_kb(run: Run) -> int:
    """The best available peak RSS of a child: its sampled VmHWM, else ru_maxrss."""
    return run.hwm_kb or run.maxrss_kb


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(r) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# The end of a report, shared by run.py, run_latency.py and run_js.py

# What build_tools runs, as the Commands block shows it (run_js.py builds with --locked and passes its own).
BUILDS = "cargo build --release\n(cd bench/ref && go build -o ref .)"


def commands_block(server_cmd: str | None, builds: str, shown_cmds: dict[str, str]) -> list[str]:
    """The "## Commands" section: the server's command line (None: no server was started), the
    builds, then every command as shown (label -> command line), so a reader can rerun them."""
    out = ["## Commands", "", "```"]
    if server_cmd is not None:
        out.append(f"# server\n{server_cmd}")
    out.append(f"# builds\n{builds}")
    for label, cmd in shown_cmds.items():
        out.append(f"# {label}\n{cmd}")
    out += ["```", ""]
    return out


def notes_block(
    unavailable: dict[str, str],
    failures: list[tuple[str, str, str]],
    kept: list[tuple[str, str, str]],
    notes: list[str],
    extra: list[str] | None = None,
    skip: set[tuple[str, str]] | None = None,
) -> list[str]:
    """The "## Notes and failures" section, or nothing when there is nothing to say.

    failures and kept are (label, tool, error). `extra` items (already one line each) come right
    after the unavailable tools: a script's own kind of failure, more important than single runs.
    (tool, error) pairs in `skip` are left out of failures and kept because an extra item already
    reports them. Every item is one line, so a multi-line note cannot break the Markdown list."""
    extra, skip = extra or [], skip or set()
    if not (unavailable or extra or failures or kept or notes):
        return []
    out = ["## Notes and failures", ""]
    for tool, why in unavailable.items():
        out.append(f"- {tool} unavailable: {one_line(why)}")
    for item in extra:
        out.append(f"- {item}")
    # Identical failures (same tool, same error) are listed once: a tool that fails the same
    # way in every round would otherwise fill the section with copies.
    for prefix, suffix, items in (("FAILED ", "", failures), ("", " (result used anyway)", kept)):
        grouped: dict[tuple[str, str], list[str]] = {}
        for label, tool, err in items:
            if (tool, err) not in skip:
                grouped.setdefault((tool, err), []).append(label)
        for (tool, err), labels in grouped.items():
            where = labels[0] if len(labels) == 1 else f"{len(labels)} runs, first {labels[0]}"
            out.append(f"- {prefix}{tool} ({where}): {one_line(err)}{suffix}")
    for n in notes:
        out.append(f"- {one_line(n)}")
    out.append("")
    return out


def scrub_paths(text: str, workdir: Path) -> str:
    """Keeps machine-specific paths (from error messages and command lines) out of a report:
    the temporary directory becomes <tmp>, the repository <repo>, the home directory ~. In this
    order, because the first two may lie inside the home directory."""
    for path, name in ((str(workdir), "<tmp>"), (str(REPO), "<repo>"), (str(Path.home()), "~")):
        # A home (or repository) of "/" would turn every slash into "~".
        if len(path) > 1:
            text = text.replace(path, name)
    return text


# --------------------------------------------------------------------------
# The benchmark



def show_cmd(bins: dict[str, str | None], server: "NatsServer | None", cmd: list[str]) -> str:
    """A command line as the report shows it: tools by name, never by machine-specific path."""
    labels = {bins.get("msgbench"): "target/release/msgbench", bins.get("ref"): "ref"}
    if server is not None:
        labels[server.binary] = "nats-server"
    first = labels.get(cmd[0]) or (os.path.basename(cmd[0]) if os.path.isabs(cmd[0]) else cmd[0])
    return shlex.join([first] + cmd[1:])


def build_tools(
    args: argparse.Namespace,
    workdir: Path,
    bins: dict[str, str | None],
    unavailable: dict[str, str],
    depends: dict[str, list[str]],
) -> None:
    """Builds msgbench (cargo, unless --no-build) and the Go reference (into workdir). Each
    built tool goes into `bins`; each that failed into `unavailable` with the reason, together
    with the tools in `depends[tool]` that need it."""

    def unavailable_because(tool: str, err: str) -> None:
        unavailable[tool] = err
        for other in depends.get(tool, []):
            unavailable[other] = f"{tool} unavailable"
        log(f"{tool} unavailable: {err}")

    target_dir = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    if not target_dir.is_absolute():
        target_dir = REPO / target_dir
    msgbench_bin = target_dir / "release" / "msgbench"
    err = None
    if not args.no_build:
        err = build(["cargo", "build", "--release"], REPO, "msgbench")
    if err is None and not msgbench_bin.exists():
        err = "binary not found: target/release/msgbench"
    if err is None:
        bins["msgbench"] = str(msgbench_bin)
    else:
        unavailable_because("msgbench", err)

    # bench/ref is its own Go module, so it is built from its folder.
    ref_bin = workdir / "ref"
    err = build(["go", "build", "-o", str(ref_bin), "."], BENCH / "ref", "ref")
    if err is None:
        bins["ref"] = str(ref_bin)
    else:
        unavailable_because("ref", err)

@dataclass
class Case:
    key: str
    title: str
    mode: str  # "pub" or "pubsub"
    size: int
    subject: str
    tools: tuple[str, ...]


CASES = [
    Case("pub16", "pub-only, 16 B", "pub", 16, "bench.pub", ("msgbench", "ref", "raw")),
    Case("pub128", "pub-only, 128 B", "pub", 128, "bench.pub", ("msgbench", "ref", "raw")),
    Case("pubsub16", "pubsub 1 pub + 1 sub, 16 B", "pubsub", 16, "bench.ps", ("msgbench", "ref")),
]


class Bench:
    def __init__(self, args: argparse.Namespace, workdir: Path):
        self.args = args
        self.workdir = workdir
        self.bins: dict[str, str | None] = {"msgbench": None, "ref": None}
        self.unavailable: dict[str, str] = {}
        self.failures: list[tuple[str, str, str]] = []  # (label, tool, error)
        self.notes: list[str] = []
        self.server: NatsServer | None = None
        # results[case_key][tool] = list of Run (None for a skipped round)
        self.results: dict[str, dict[str, list[Run | None]]] = {}
        self.memory: list[tuple[str, str, int, Run]] = []
        self.shown_cmds: dict[str, str] = {}
        self.rss_floor_kb = 0
        self.kept: list[tuple[str, str, str]] = []  # non-zero exit, result used anyway

    # ----- display helpers (no machine-specific paths in the report)

    def show(self, cmd: list[str]) -> str:
        return show_cmd(self.bins, self.server, cmd)

    # ----- builds

    def build_all(self) -> None:
        build_tools(self.args, self.workdir, self.bins, self.unavailable, {"ref": ["raw"]})

    def tool_cmd(
        self, tool: str, mode: str, msgs: int, size: int, subject: str, for_display: bool = False
    ) -> list[str] | None:
        """The command line of one run; None if the tool is unavailable
        (unless for_display, which shows the command line regardless)."""
        url = self.server.url
        if tool == "msgbench":
            b = self.bins["msgbench"] or ("target/release/msgbench" if for_display else None)
            return msgbench_cmd(b, url, mode, msgs, size, subject) if b else None
        b = self.bins["ref"] or ("ref" if for_display else None)
        if b is None:
            return None
        return ref_cmd(b, url, "raw" if tool == "raw" else mode, msgs, size, subject)

    def run_tool(
        self, label: str, tool: str, mode: str, msgs: int, size: int, subject: str, sample_rss: bool = False
    ) -> Run | None:
        cmd = self.tool_cmd(tool, mode, msgs, size, subject)
        if cmd is None:
            return None
        res = run_child(cmd, self.args.timeout, self.workdir, sample_rss)
        if res.data is not None:
            res.metrics = extract_metrics(tool, mode, res, msgs)
        if not res.ok:
            # A non-zero exit with a usable result is kept, but noted.
            if res.exit_code not in (None, 0) and "pub" in res.metrics and "timed out" not in res.error:
                self.kept.append((label, tool, res.error))
                res.ok = True
            else:
                self.failures.append((label, tool, res.error))
        elif "pub" not in res.metrics:
            res.error = "result JSON lacks the expected fields"
            self.failures.append((label, tool, res.error))
            res.ok = False
        return res

    # ----- cases

    def run_cases(self) -> None:
        n = self.args.msgs
        for case in CASES:
            self.results[case.key] = {t: [] for t in case.tools}
            for t in case.tools:
                cmd = self.tool_cmd(t, case.mode, n, case.size, case.subject, for_display=True)
                self.shown_cmds[f"{case.title}: {t}"] = self.show(cmd)
            for r in range(self.args.rounds):
                k = r % len(case.tools)
                order = case.tools[k:] + case.tools[:k]
                for tool in order:
                    label = f"[{case.title}] round {r + 1}/{self.args.rounds}"
                    res = self.run_tool(label, tool, case.mode, n, case.size, case.subject)
                    self.results[case.key][tool].append(res if res is not None and res.ok else None)
                    if res is None:
                        continue
                    if res.ok:
                        m = res.metrics
                        extra = f", sub {fmt_rate(m.get('sub'))} msgs/s, lost {m.get('lost', 'n/a')}" if case.mode == "pubsub" else ""
                        log(f"{label} {tool}: pub {fmt_rate(m.get('pub'))} msgs/s{extra}")
                    else:
                        log(f"{label} {tool}: FAILED: {res.error}")

    def run_memory(self) -> None:
        # ru_maxrss of any child includes the RSS this script had when it
        # spawned it; a child that does nothing shows that floor.
        true_bin = shutil.which("true")
        if true_bin:
            floor = run_child([true_bin], self.args.timeout, self.workdir)
            if floor.exit_code == 0:
                self.rss_floor_kb = floor.maxrss_kb
        big = self.args.rss_msgs
        plan = [
            ("msgbench", "pub", big),
            ("msgbench", "pub", max(1, big // 10)),
            ("msgbench", "pubsub", max(1, big // 4)),
            ("msgbench", "pubsub", max(1, big // 40)),
            ("ref", "pub", big),
            ("ref", "pub", max(1, big // 10)),
            ("ref", "pubsub", max(1, big // 4)),
            ("ref", "pubsub", max(1, big // 40)),
        ]
        for tool, mode, msgs in plan:
            subject = "bench.pub" if mode == "pub" else "bench.ps"
            cmd = self.tool_cmd(tool, mode, msgs, 16, subject, for_display=True)
            self.shown_cmds[f"memory: {tool} {mode} {msgs}"] = self.show(cmd)
            label = f"[memory {mode} {msgs} msgs]"
            res = self.run_tool(label, tool, mode, msgs, 16, subject, sample_rss=True)
            if res is None:
                continue
            self.memory.append((tool, mode, msgs, res))
            if res.ok:
                log(f"{label} {tool}: peak RSS {peak_kb(res) / 1024:.1f} MB (ru_maxrss {res.maxrss_kb / 1024:.1f} MB)")
            else:
                log(f"{label} {tool}: FAILED: {res.error}")

    # ----- analysis

    def values(self, case: str, tool: str, metric: str) -> list[float]:
        return [r.metrics[metric] for r in self.results.get(case, {}).get(tool, []) if r is not None and metric in r.metrics]

    def ratios(self, case: str, a: str, b: str, metric: str) -> list[float]:
        ra = self.results.get(case, {}).get(a, [])
        rb = self.results.get(case, {}).get(b, [])
        out = []
        for x, y in zip(ra, rb):
            if x is None or y is None:
                continue
            vx, vy = x.metrics.get(metric), y.metrics.get(metric)
            if vx is not None and vy:
                out.append(vx / vy)
        return out

    def cpu_ns(self, tool: str) -> list[float]:
        n = self.args.msgs
        return [r.cpu_s * 1e9 / n for r in self.results.get("pub16", {}).get(tool, []) if r is not None]

    # ----- report

    def report(self, env: dict[str, str]) -> str:
        a = self.args
        out: list[str] = []
        out.append("# msgbench side-by-side benchmark")
        out.append("")
        out.append(
            "Generated by `python3 bench/run.py "
            f"--rounds {a.rounds} --msgs {a.msgs} --rss-msgs {a.rss_msgs}`. "
            "Figures are medians over the rounds (min–max in parentheses); ratios are the median "
            "of per-round ratios (each round runs the tools back to back in a rotating order "
            "against the same server). This is a benchmark, not a test."
        )
        out.append("")
        out.append(md_table(["fact", "value"], [[k, v] for k, v in env.items()]))
        out.append("")

        # Throughput.
        out.append("## Throughput (msgs/s)")
        out.append("")
        rows = []
        ratio_rows = []
        for case in CASES:
            metrics = ["pub"] if case.mode == "pub" else ["pub", "sub"]
            for metric in metrics:
                name = case.title if case.mode == "pub" else f"{case.title}: {'publisher' if metric == 'pub' else 'subscriber'}"
                row = [name]
                for tool in TOOLS:
                    if tool not in case.tools:
                        row.append("–")
                    elif tool in self.unavailable:
                        row.append("unavailable")
                    elif not any(self.results.get(case.key, {}).get(tool, [])):
                        row.append("failed")
                    else:
                        row.append(fmt_summary(self.values(case.key, tool, metric)))
                rows.append(row)
                vs_ref_target = TARGET_PUB_VS_REF if case.mode == "pub" else TARGET_PUBSUB_VS_REF
                vs_ref = summary(self.ratios(case.key, "msgbench", "ref", metric))
                r = [name, fmt_ratio(vs_ref[0] if vs_ref else None, vs_ref_target)]
                if "raw" in case.tools:
                    vs_raw = summary(self.ratios(case.key, "msgbench", "raw", metric))
                    r.append(fmt_ratio(vs_raw[0] if vs_raw else None, TARGET_PUB_VS_RAW))
                    ref_raw = summary(self.ratios(case.key, "ref", "raw", metric))
                    r.append(fmt_ratio(ref_raw[0] if ref_raw else None))
                else:
                    r += ["–", "–"]
                ratio_rows.append(r)
        out.append(md_table(["case", "msgbench", "ref (nats.go)", "raw writer"], rows))
        out.append("")
        out.append(md_table(["case", "msgbench / ref", "msgbench / raw", "ref / raw"], ratio_rows))
        out.append("")

        # Delivery in the pubsub case.
        lost_rows = []
        for tool in ("msgbench", "ref"):
            lost = [r.metrics["lost"] for r in self.results.get("pubsub16", {}).get(tool, []) if r is not None and "lost" in r.metrics]
            if lost:
                lost_rows.append([tool, ", ".join(str(x) for x in lost)])
        if lost_rows:
            out.append("Messages not delivered to the subscriber in the pubsub case, per round:")
            out.append("")
            out.append(md_table(["tool", "lost per round"], lost_rows))
            out.append("")

        # CPU.
        out.append("## CPU cost of publishing (16 B, user + sys of the child process)")
        out.append("")
        out.append(
            f"Measured with `os.wait4` on the pub-only 16 B runs above ({a.msgs} messages each); "
            "nanoseconds of CPU per message, median over the rounds."
        )
        out.append("")
        cpu_rows = []
        for tool in TOOLS:
            if tool in self.unavailable:
                cpu_rows.append([tool, "unavailable", ""])
                continue
            vals = self.cpu_ns(tool)
            target = ""
            if tool == "msgbench" and vals:
                med = statistics.median(vals)
                target = f"<= {TARGET_CPU_NS:g} ns: {'met' if med <= TARGET_CPU_NS else 'MISSED'}"
            cpu_rows.append([tool, fmt_summary(vals, lambda v: f"{v:.1f} ns"), target])
        out.append(md_table(["tool", "CPU ns/msg", "target"], cpu_rows))
        out.append("")

        # Memory.
        out.append("## Peak memory (16 B messages)")
        out.append("")
        out.append(
            "Peak RSS is the child's own VmHWM, sampled every 5 ms until it exits. "
            "ru_maxrss from `os.wait4` is shown too, but on Linux it is at least the RSS the "
            "spawning Python process had at fork time"
            + (f" (a child that does nothing shows {self.rss_floor_kb / 1024:.1f} MB)" if self.rss_floor_kb else "")
            + ", so it is only an upper bound."
        )
        out.append("")
        mem_rows = []
        by_key: dict[tuple[str, str], list[tuple[int, Run]]] = {}
        for tool, mode, msgs, run in self.memory:
            by_key.setdefault((tool, mode), []).append((msgs, run))
        for (tool, mode), entries in by_key.items():
            entries.sort(key=lambda e: e[0])
            ok = [(m, r) for m, r in entries if r.ok]
            for msgs, run in entries:
                if not run.ok:
                    mem_rows.append([tool, mode, str(msgs), "failed", "", ""])
                    continue
                mb = peak_kb(run) / 1024
                target = ""
                if tool == "msgbench":
                    target = f"<= {TARGET_RSS_MB:g} MB: {'met' if mb <= TARGET_RSS_MB else 'MISSED'}"
                mem_rows.append([tool, mode, str(msgs), f"{mb:.1f} MB", f"{run.maxrss_kb / 1024:.1f} MB", target])
            if len(ok) == 2:
                (m1, r1), (m2, r2) = ok
                if peak_kb(r1):
                    self.notes.append(
                        f"{tool} {mode}: peak RSS at {m2} msgs is {peak_kb(r2) / peak_kb(r1):.2f}x "
                        f"the peak at {m1} msgs (1.00x = independent of the count)"
                    )
        if mem_rows:
            out.append(md_table(["tool", "mode", "msgs", "peak RSS", "ru_maxrss", "target"], mem_rows))
        else:
            out.append("No memory runs completed.")
        out.append("")

        out += commands_block(self.show(self.server.cmd) if self.server is not None else None, BUILDS, self.shown_cmds)
        out += notes_block(self.unavailable, self.failures, self.kept, self.notes)
        return scrub_paths("\n".join(out), self.workdir)


def environment(server_bin: str | None) -> dict[str, str]:
    env = {
        "date (UTC)": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "nproc": nproc(),
        "CPU": cpu_model(),
        "OS": f"{platform.system()} {platform.release()}",
        "nats-server": ((capture([server_bin, "--version"]) if server_bin else None) or "not found").removeprefix("nats-server: "),
        "nats.go": nats_go_version(),
        "go": capture(["go", "version"]) or "not found",
        "rustc": capture(["rustc", "--version"]) or "not found",
    }
    env["msgbench commit"] = commit_label()
    return env


def commit_label() -> str:
    """The commit the figures come from, marked when the tree has local changes."""
    commit = capture(["git", "rev-parse", "--short", "HEAD"], cwd=REPO)
    if not commit:
        return "none (no commits yet)"
    # The reports themselves change as the suites run one after another; they are not what
    # was measured.
    dirty = capture(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/RESULTS*.md"],
        cwd=REPO,
    )
    return commit + (" (with local changes)" if dirty else "")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Side-by-side benchmark of msgbench vs nats.go vs a raw writer.")
    p.add_argument("--rounds", type=int, default=5, help="rounds per case (default 5)")
    p.add_argument("--msgs", type=int, default=2_000_000, help="messages per throughput run (default 2000000)")
    p.add_argument("--rss-msgs", type=int, default=20_000_000, help="messages of the large memory run (default 20000000)")
    p.add_argument("--out", default=str(BENCH / "RESULTS.md"), help="Markdown report (default bench/RESULTS.md)")
    p.add_argument("--timeout", type=float, default=120.0, help="timeout of every tool run in seconds (default 120)")
    p.add_argument("--no-build", action="store_true", help="skip `cargo build --release`; use the existing binary")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    a = p.parse_args(argv)
    if a.rounds < 1 or a.msgs < 1 or a.rss_msgs < 1 or a.timeout <= 0:
        p.error("--rounds, --msgs, --rss-msgs and --timeout must be positive")
    return a


def drive(args: argparse.Namespace, bench_class, tmp_prefix: str, server_class=None, verdict=None) -> int:
    """Runs one benchmark: builds the tools, starts one nats-server, runs the cases (and the
    memory runs unless --no-memory), stops the server and writes the report to --out. Shared by
    run.py, run_latency.py and run_js.py; `bench_class(args, workdir)` supplies the cases and the
    report, `server_class` a server other than the plain one, and `verdict(bench)` an exit status
    decided from the finished runs (0 when not given)."""
    server_bin = find_nats_server()
    if server_bin is None:
        log("nats-server not found: put it on PATH or set MSGBENCH_NATS_SERVER")
        return 2
    with tempfile.TemporaryDirectory(prefix=tmp_prefix) as tmp:
        workdir = Path(tmp)
        bench = bench_class(args, workdir)
        bench.build_all()
        if bench.bins["msgbench"] is None and bench.bins["ref"] is None:
            log("nothing to run: neither msgbench nor ref could be built")
            return 1
        env = environment(server_bin)
        server = (server_class or NatsServer)(server_bin, workdir)
        bench.server = server
        try:
            server.start()
            log(f"nats-server {env['nats-server']} on {server.url}")
            bench.run_cases()
            # Benchmarks without memory runs have no --no-memory flag.
            if not getattr(args, "no_memory", True):
                bench.run_memory()
            if server.proc is not None and server.proc.poll() is not None:
                bench.notes.append(f"nats-server exited during the run:\n{server.log_tail()}")
        finally:
            server.stop()
        text = bench.report(env)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    log(f"wrote {out}")
    return verdict(bench) if verdict else 0


def entry(main) -> None:
    """Runs `main` as a script: SIGTERM ends the run like Ctrl-C, children and server stopped."""

    def _terminate(signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted")
        sys.exit(130)


def main(argv: list[str] | None = None) -> int:
    return drive(parse_args(argv), Bench, "msgbench-bench-")


if __name__ == "__main__":
    entry(main)
