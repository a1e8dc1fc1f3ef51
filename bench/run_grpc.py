#!/usr/bin/env python3
"""Side-by-side gRPC benchmark: `msgbench grpc` vs. a ghz-like grpc-go reference.

This is a benchmark, not a test: its exit status says nothing about performance,
and it must never be run as a timed test in CI. It does exit 1 if a run reported
failed calls (or gave no usable result), because then its figures cannot be
compared.

Usage:
    python3 bench/run_grpc.py [--rounds 5] [--requests 200000] [--in-flight 100]
                              [--size 128] [--quick] [--only ref|msgbench]
                              [--out bench/RESULTS-grpc.md] [--timeout 120] [--no-build]

It builds msgbench (`cargo build --release --locked`) and the reference (`go
build` in bench/ref), starts `msgbench grpc serve` on 127.0.0.1 on a free port,
and for a number of rounds runs, back to back against that server, the same
closed-loop unary load: --requests calls of msgbench.log.v1.Log/Append with a
--size byte record, --in-flight calls outstanding on one HTTP/2 connection:

  - ref: `ref grpc` (bench/ref/grpc.go), a grpc-go client that behaves as ghz
    does; ghz itself is not used;
  - msgbench: `msgbench grpc --clients 1 --connections 1 --in-flight W`.

The reference goes first in odd rounds, msgbench in even ones. For every run
it measures the client's requests per second (the tool's own figure), its CPU
time (user + sys, from os.wait4) and the server's CPU time during the run (from
/proc/PID/stat), and reports medians and per-round ratios against the targets:
msgbench at least 1.2x the reference's requests/s, at most 0.5x its client CPU
per request. The report is printed and written as Markdown to --out.

The shared machinery (child processes, builds, formatting) is run.py's.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import base64
import datetime as _dt
import json
import os
import platform
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import (  # noqa: E402  (run.py lives next to this file)
    BENCH,
    REPO,
    Run,
    build,
    build_tools,
    capture,
    commit_label,
    commands_block,
    cpu_model,
    dig,
    entry,
    fmt_rate,
    free_port,
    NatsServer,
    log,
    md_table,
    notes_block,
    nproc,
    num,
    one_line,
    run_child,
    scrub_paths,
    summary,
)

# Targets: msgbench / ref.
TARGET_RPS = 1.2  # requests per second, at least
TARGET_CPU = 0.5  # client CPU per request, at most

# The service and the call, relative to the repository (the tools run there).
PROTO = "proto/msgbench/log/v1/log.proto"
IMPORT_DIR = "proto"
CALL = "msgbench.log.v1.Log/Append"
STREAM = "bench"

SERVER_START_TIMEOUT = 10.0
SERVER_STOP_TIMEOUT = 10.0

TOOLS = ("ref", "msgbench")

# The canonical gRPC status code names (what both tools report).
STATUS_CODES = frozenset(
    """OK CANCELLED UNKNOWN INVALID_ARGUMENT DEADLINE_EXCEEDED NOT_FOUND ALREADY_EXISTS
    PERMISSION_DENIED RESOURCE_EXHAUSTED FAILED_PRECONDITION ABORTED OUT_OF_RANGE
    UNIMPLEMENTED INTERNAL UNAVAILABLE DATA_LOSS UNAUTHENTICATED""".split()
)


def log_fail(msg: str) -> None:
    log(f"!! {msg}")


# --------------------------------------------------------------------------
# The server: `msgbench grpc serve`


def proc_cpu_seconds(pid: int) -> float | None:
    """utime + stime of a live process, from /proc/PID/stat, in seconds."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        # The command name (field 2) is in parentheses and may hold spaces;
        # utime and stime are fields 14 and 15, the 12th and 13th after it.
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class GrpcServer(NatsServer):
    """`msgbench grpc serve --listen 127.0.0.1:PORT` as a separate process; the log tail and
    the stopping are the NATS server's."""

    def __init__(self, binary: str, workdir: Path):
        self.binary = binary
        self.port = free_port()
        self.log_path = workdir / "grpc-serve.log"
        self.cmd = [binary, "grpc", "serve", "--listen", f"127.0.0.1:{self.port}"]
        self.proc: subprocess.Popen | None = None
        self._log_f = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self._log_f = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.cmd, stdout=self._log_f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"msgbench grpc serve exited early (status {self.proc.returncode}): {self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"msgbench grpc serve did not accept connections within {SERVER_START_TIMEOUT:.0f} s: {self.log_tail()}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def cpu_seconds(self) -> float | None:
        return proc_cpu_seconds(self.proc.pid) if self.alive() else None



# --------------------------------------------------------------------------
# Commands and metrics


def request_data(size: int) -> str:
    """The request of every call, as JSON: stream "bench" and `size` bytes of record (base64)."""
    record = bytes(i % 4 for i in range(size))
    return json.dumps({"stream": STREAM, "data": base64.b64encode(record).decode()}, separators=(",", ":"))


def ref_grpc_cmd(b: str, addr: str, data: str, in_flight: int, requests: int) -> list[str]:
    return [
        b, "grpc", "-addr", addr, "-proto", PROTO, "-import", IMPORT_DIR, "-call", CALL, "-data", data,
        "-concurrency", str(in_flight), "-connections", "1", "-n", str(requests),
    ]  # fmt: skip


def msgbench_grpc_cmd(b: str, addr: str, data: str, in_flight: int, requests: int, json_path: str) -> list[str]:
    return [
        b, "grpc", "--server", f"http://{addr}", "--proto", PROTO, "-I", IMPORT_DIR, "--call", CALL,
        "--data", data, "--clients", "1", "--connections", "1", "--in-flight", str(in_flight),
        "--requests", str(requests), "--no-progress", "--json", json_path,
    ]  # fmt: skip


def count_map(v) -> dict[str, int] | None:
    """A JSON object of counts (name -> non-negative integer), else None."""
    if not isinstance(v, dict):
        return None
    out: dict[str, int] = {}
    for k, n in v.items():
        if not isinstance(k, str) or num(n) is None:
            return None
        out[k] = int(n)
    return out


def find_status_map(doc, path: tuple[str, ...] = ()) -> tuple[str, dict[str, int]] | None:
    """The first object in doc whose keys are all gRPC status code names and whose values are
    counts, with its dotted path: where msgbench's status counts are if not at grpc.status."""
    if not isinstance(doc, dict):
        return None
    m = count_map(doc)
    if m and path and all(k in STATUS_CODES for k in m):
        return ".".join(path), m
    for k, v in doc.items():
        found = find_status_map(v, path + (str(k),))
        if found is not None:
            return found
    return None


def ref_metrics(d: dict | None, requests: int) -> tuple[dict, list[str], list[str]]:
    """The reference's figures, what its JSON lacks, and the errors it reports."""
    m: dict = {}
    missing: list[str] = []
    for key, field in (("rate", "rps"), ("seconds", "seconds"), ("ok", "ok"), ("p50_ns", "p50_ns"), ("p99_ns", "p99_ns"), ("self_cpu_s", "cpu_seconds")):
        v = num(dig(d, field))
        if v is not None:
            m[key] = v
        elif key in ("rate", "ok"):
            missing.append(field)
    errors = count_map(dig(d, "errors"))
    if errors is None:
        missing.append("errors")
    errs = []
    failed = {k: n for k, n in (errors or {}).items() if n}
    if failed:
        errs.append("failed calls: " + ", ".join(f"{k} {n}" for k, n in sorted(failed.items())))
    if "ok" in m and int(m["ok"]) != requests:
        errs.append(f"{int(m['ok'])} of {requests} calls OK")
    return m, missing, errs


def msgbench_metrics(d: dict | None, requests: int) -> tuple[dict, list[str], list[str]]:
    """msgbench's figures, what its JSON lacks, and the errors it reports. The status counts
    are read from grpc.status, else from wherever the JSON has an object of status codes."""
    m: dict = {}
    missing: list[str] = []
    for key, path in (
        ("rate", ("throughput", "msgs_per_sec")),
        ("seconds", ("throughput", "seconds")),
        ("completed", ("throughput", "msgs")),
        ("p50_ns", ("latency", "percentiles_ns", "50")),
        ("p99_ns", ("latency", "percentiles_ns", "99")),
    ):
        v = num(dig(d, *path))
        if v is not None:
            m[key] = v
        elif key == "rate":
            missing.append(".".join(path))
    errs: list[str] = []
    status = count_map(dig(d, "grpc", "status"))
    if status is not None:
        m["status_at"] = "grpc.status"
    else:
        found = find_status_map(d)
        if found is not None:
            m["status_at"], status = found
        else:
            missing.append("grpc.status (no object of status codes anywhere)")
    if status is not None:
        m["ok"] = status.get("OK", 0)
        failed = {k: n for k, n in status.items() if k != "OK" and n}
        if failed:
            errs.append("failed calls: " + ", ".join(f"{k} {n}" for k, n in sorted(failed.items())))
        if m["ok"] != requests:
            errs.append(f"{m['ok']} of {requests} calls OK ({m['status_at']})")
    template_errors = num(dig(d, "grpc", "template_errors"))
    if template_errors:
        errs.append(f"grpc.template_errors {int(template_errors)}")
    other = {k: n for k, n in (count_map(dig(d, "errors")) or {}).items() if n}
    if other:
        errs.append("errors: " + ", ".join(f"{k} {n}" for k, n in sorted(other.items())))
    return m, missing, errs


# --------------------------------------------------------------------------
# Formatting


def fmt_x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}x"


def fmt_us(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f} µs"


def fmt_ms(ns: float | None) -> str:
    return "n/a" if ns is None else f"{ns / 1e6:.3f} ms"


def fmt_s(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f} s"


def verdict(v: float | None, target: float, at_least: bool) -> str:
    if v is None:
        return "n/a"
    met = v >= target if at_least else v <= target
    return f"{'>=' if at_least else '<='} {target:g}x: {'met' if met else 'MISSED'}"


# --------------------------------------------------------------------------
# The benchmark


class Bench:
    def __init__(self, args: argparse.Namespace, workdir: Path):
        self.args = args
        self.workdir = workdir
        self.tools = TOOLS if args.only is None else (args.only,)
        self.bins: dict[str, str | None] = {"msgbench": None, "ref": None}
        self.unavailable: dict[str, str] = {}
        self.failures: list[tuple[str, str, str]] = []  # (label, tool, error)
        self.kept: list[tuple[str, str, str]] = []  # never used: a failed call fails the run
        self.notes: list[str] = []
        self.errored: list[str] = []  # runs that reported failed calls
        self.errored_skip: set[tuple[str, str]] = set()  # their (tool, error) in failures
        self.server: GrpcServer | None = None
        # results[tool] = one Run per round (None: failed, skipped or not run)
        self.results: dict[str, list[Run | None]] = {t: [] for t in TOOLS}
        self.orders: list[tuple[str, ...]] = []
        self.shown_cmds: dict[str, str] = {}
        self.json_path = workdir / "msgbench-grpc.json"
        self.data = request_data(args.size)

    # ----- display (no machine-specific paths in the report)

    def show(self, cmd: list[str]) -> str:
        labels = {self.bins.get("msgbench"): "target/release/msgbench", self.bins.get("ref"): "bench/ref/ref"}
        return shlex.join([labels.get(cmd[0], cmd[0])] + cmd[1:])

    # ----- builds

    def build_all(self) -> None:
        # --locked: the dependency versions Cargo.lock pins, as run_js.py does; build_tools then
        # only finds the binary and builds the reference. The server is msgbench, so it is built
        # even when only the reference runs.
        err = None
        if not self.args.no_build:
            err = build(["cargo", "build", "--release", "--locked"], REPO, "msgbench")
        build_tools(argparse.Namespace(**{**vars(self.args), "no_build": True}), self.workdir, self.bins, self.unavailable, {})
        if err is not None:
            self.bins["msgbench"] = None
            self.unavailable["msgbench"] = err
            log(f"msgbench unavailable: {err}")

    # ----- running

    def cmd_for(self, tool: str, for_display: bool = False) -> list[str] | None:
        a = self.args
        addr = self.server.addr if self.server is not None else "127.0.0.1:PORT"
        if tool == "msgbench":
            b = self.bins["msgbench"] or ("target/release/msgbench" if for_display else None)
            return msgbench_grpc_cmd(b, addr, self.data, a.in_flight, a.requests, str(self.json_path)) if b else None
        b = self.bins["ref"] or ("bench/ref/ref" if for_display else None)
        return ref_grpc_cmd(b, addr, self.data, a.in_flight, a.requests) if b else None

    def run_one(self, label: str, tool: str) -> Run | None:
        cmd = self.cmd_for(tool)
        if cmd is None:
            return None
        if tool == "msgbench":
            # A result left by an earlier run must not pass for this one's.
            self.json_path.unlink(missing_ok=True)
        srv0 = self.server.cpu_seconds()
        res = run_child(cmd, self.args.timeout, self.workdir)
        srv1 = self.server.cpu_seconds()
        if srv0 is not None and srv1 is not None:
            res.metrics["server_cpu_s"] = srv1 - srv0
        if tool == "msgbench":
            # msgbench writes its JSON to the --json file (stdout has the text report).
            try:
                res.data = json.loads(self.json_path.read_text())
            except (OSError, json.JSONDecodeError):
                res.data = None
            if res.data is not None and res.error == "no JSON result on stdout":
                res.error = ""
            elif res.data is None and res.exit_code == 0:
                res.error = "no JSON result in the --json file"
        n = self.args.requests
        m, missing, errs = (msgbench_metrics if tool == "msgbench" else ref_metrics)(res.data, n)
        res.metrics.update(m)
        res.metrics["client_cpu_s"] = res.cpu_s
        if res.data is not None and missing:
            self.notes.append(f"{tool} {label}: its JSON lacks {', '.join(missing)}")
        where = m.get("status_at")
        if where not in (None, "grpc.status"):
            note = f"msgbench's JSON has no grpc.status; its status counts were read from {where}"
            if note not in self.notes:
                self.notes.append(note)
        if errs:
            why = "; ".join(errs)
            self.errored.append(f"{tool} {label}: {why}")
            log_fail(f"{label} {tool}: reported errors: {why}")
            if not res.error:
                res.error = f"reported errors: {why}"
                self.errored_skip.add((tool, res.error))
        if not res.error and "rate" not in res.metrics:
            res.error = "result JSON lacks the requests/s figure"
        res.ok = res.error == "" and res.data is not None
        if not res.ok:
            self.failures.append((label, tool, res.error))
        return res

    def describe(self, res: Run) -> str:
        m = res.metrics
        n = self.args.requests
        srv = m.get("server_cpu_s")
        return (
            f"{fmt_rate(m.get('rate'))} req/s in {res.wall_s:.3f} s, client CPU {res.cpu_s * 1e6 / n:.2f} µs/req, "
            f"server CPU {'n/a' if srv is None else f'{srv * 1e6 / n:.2f}'} µs/req, "
            f"p50 {fmt_ms(m.get('p50_ns'))}, p99 {fmt_ms(m.get('p99_ns'))}"
        )

    def record_cmds(self) -> None:
        """The command lines the report shows (the server's port must be known)."""
        for t in self.tools:
            self.shown_cmds[t] = self.show(self.cmd_for(t, for_display=True))

    def run_cases(self) -> None:
        a = self.args
        for r in range(a.rounds):
            # The reference first in odd rounds (1, 3, ...), msgbench first in even ones, so that a
            # drift of the machine does not always favour the same tool.
            order = TOOLS if r % 2 == 0 else TOOLS[::-1]
            order = tuple(t for t in order if t in self.tools)
            self.orders.append(order)
            for tool in TOOLS:
                self.results[tool].append(None)
            for tool in order:
                label = f"round {r + 1}/{a.rounds}"
                if not self.server.alive():
                    raise RuntimeError(f"msgbench grpc serve exited during the benchmark: {self.server.log_tail()}")
                res = self.run_one(label, tool)
                if res is None:
                    continue
                if res.ok:
                    self.results[tool][r] = res
                    log(f"{label} {tool}: {self.describe(res)}")
                else:
                    log(f"{label} {tool}: FAILED: {res.error}")

    # ----- analysis

    def per_request_us(self, run: Run | None, key: str) -> float | None:
        if run is None or run.metrics.get(key) is None:
            return None
        return run.metrics[key] * 1e6 / self.args.requests

    def figure(self, run: Run | None, what: str) -> float | None:
        """One figure of one run: rate, wall, client_us, server_us, p50_ns, p99_ns."""
        if run is None:
            return None
        if what == "wall":
            return run.wall_s
        if what == "client_us":
            return self.per_request_us(run, "client_cpu_s")
        if what == "server_us":
            return self.per_request_us(run, "server_cpu_s")
        return run.metrics.get(what)

    def values(self, tool: str, what: str) -> list[float]:
        return [v for v in (self.figure(r, what) for r in self.results[tool]) if v is not None]

    def ratios(self, what: str) -> list[float | None]:
        """msgbench / ref per round (None where either run failed)."""
        out: list[float | None] = []
        for x, y in zip(self.results["msgbench"], self.results["ref"]):
            vx, vy = self.figure(x, what), self.figure(y, what)
            out.append(vx / vy if vx is not None and vy else None)
        return out

    def median_ratio(self, what: str) -> float | None:
        s = summary([x for x in self.ratios(what) if x is not None])
        return s[0] if s else None

    def cell(self, tool: str, what: str, fmt) -> str:
        if tool not in self.tools:
            return "not run"
        if tool in self.unavailable:
            return "unavailable"
        vals = self.values(tool, what)
        s = summary(vals)
        if s is None:
            return "failed" if what in ("rate", "wall", "client_us") else "n/a"
        med, lo, hi = s
        return fmt(med) if len(vals) == 1 else f"{fmt(med)} ({fmt(lo)}–{fmt(hi)}, n={len(vals)})"

    def ratio_of_medians(self, what: str) -> float | None:
        ms, rs = summary(self.values("msgbench", what)), summary(self.values("ref", what))
        return ms[0] / rs[0] if ms and rs and rs[0] else None

    # ----- report

    def report(self, env: dict[str, str]) -> str:
        a = self.args
        n = a.requests
        out: list[str] = []
        out.append("# msgbench gRPC side-by-side benchmark")
        out.append("")
        only = f" --only {a.only}" if a.only else ""
        out.append(
            f"Generated by `python3 bench/run_grpc.py --rounds {a.rounds} --requests {n} --in-flight {a.in_flight} "
            f"--size {a.size}{only}`. One `msgbench grpc serve` on 127.0.0.1; "
            + ("both clients make the same" if a.only is None else f"only {a.only} ran, making")
            + f" closed-loop unary calls to it: {n:,} calls of `{CALL}`, each a {a.size} B record for the stream "
            f"`{STREAM}`, at most {a.in_flight} outstanding, on one HTTP/2 connection (plaintext). Figures are medians "
            "over the rounds (min–max in parentheses); ratios are the median of per-round ratios (each round runs "
            "the two tools back to back, the reference first in odd rounds, msgbench first in even ones). This is a "
            "benchmark, not a test."
        )
        out.append("")
        out.append(
            "ghz itself is not used. The reference is `ref grpc` (`bench/ref/grpc.go`), a client written with "
            "grpc-go, as ghz is, that behaves as ghz does: closed-loop workers (here as many as the in-flight "
            "limit) sharing one connection, each taking the next call from a shared counter; the request is a "
            "dynamic message built once from the JSON with the .proto parsed at run time (protocompile, "
            "dynamicpb), every response a fresh dynamic message; every call's duration is kept in memory and "
            "the percentiles come from sorting them."
        )
        out.append("")
        out.append(md_table(["fact", "value"], [[k, v] for k, v in env.items()]))
        out.append("")

        rps_ratio, cpu_ratio = self.median_ratio("rate"), self.median_ratio("client_us")
        out.append("## Targets")
        out.append("")
        out.append(
            md_table(
                ["target", "measured", "verdict"],
                [
                    ["requests/s, msgbench / ref", fmt_x(rps_ratio), verdict(rps_ratio, TARGET_RPS, True)],
                    ["client CPU per request, msgbench / ref", fmt_x(cpu_ratio), verdict(cpu_ratio, TARGET_CPU, False)],
                ],
            )
        )
        out.append("")

        out.append("## Medians")
        out.append("")
        out.append(
            "Requests/s is each tool's own figure: successful calls per second (ref: `rps`; msgbench: "
            "`throughput.msgs_per_sec`). Wall time is the client process's, start to exit. Client CPU is "
            "user + system time of the client process (`os.wait4`), server CPU that of the server process "
            "during the client's run (`/proc/PID/stat`), both divided by the requests. P50 and P99 are each "
            "tool's own latency figures, for context."
        )
        out.append("")
        rows = []
        for what, name, fmt in (
            ("rate", "requests/s", fmt_rate),
            ("client_us", "client CPU per request", fmt_us),
            ("server_us", "server CPU per request", fmt_us),
            ("wall", "client wall time", fmt_s),
            ("p50_ns", "latency P50", fmt_ms),
            ("p99_ns", "latency P99", fmt_ms),
        ):
            rows.append(
                [
                    name, self.cell("ref", what, fmt), self.cell("msgbench", what, fmt),
                    fmt_x(self.median_ratio(what)), fmt_x(self.ratio_of_medians(what)),
                ]
            )  # fmt: skip
        out.append(
            md_table(
                ["", "ref (grpc-go, ghz-like)", "msgbench", "msgbench / ref, median of per-round ratios", "ratio of the medians"],
                rows,
            )
        )
        out.append("")

        out.append("## Each round")
        out.append("")
        rows = []
        rps_ratios, cpu_ratios = self.ratios("rate"), self.ratios("client_us")
        for i, order in enumerate(self.orders):
            row = [str(i + 1), ", ".join(order)]
            for tool in TOOLS:
                run = self.results[tool][i]
                if run is None:
                    row += ["not run" if tool not in self.tools else "failed", "", "", ""]
                    continue
                row += [
                    fmt_rate(run.metrics.get("rate")), fmt_s(run.wall_s),
                    fmt_us(self.figure(run, "client_us")), fmt_us(self.figure(run, "server_us")),
                ]  # fmt: skip
            row += [fmt_x(rps_ratios[i]), fmt_x(cpu_ratios[i])]
            rows.append(row)
        out.append(
            md_table(
                [
                    "round", "order", "ref req/s", "ref wall", "ref client CPU/req", "server CPU/req (ref)",
                    "msgbench req/s", "msgbench wall", "msgbench client CPU/req", "server CPU/req (msgbench)",
                    "req/s msgbench / ref", "client CPU msgbench / ref",
                ],
                rows,
            )
        )  # fmt: skip
        out.append("")

        server_cmd = self.show(self.server.cmd) if self.server is not None else None
        out += commands_block(server_cmd, "cargo build --release --locked\n(cd bench/ref && go build -o ref .)", self.shown_cmds)
        errored = [f"ERRORS {one_line(e)}" for e in self.errored]
        out += notes_block(self.unavailable, self.failures, self.kept, self.notes, errored, self.errored_skip)
        return scrub_paths("\n".join(out), self.workdir)

    def exit_status(self) -> int:
        """1 when a run that should have run failed or reported failed calls, else 0."""
        expected = self.args.rounds * len(self.tools)
        done = sum(1 for t in self.tools for r in self.results[t] if r is not None)
        if done == expected and not self.errored:
            return 0
        log_fail(f"only {done} of {expected} runs completed without errors")
        for e in self.errored:
            log_fail(e)
        return 1


def module_version(module: str) -> str:
    try:
        for line in (BENCH / "ref" / "go.mod").read_text().splitlines():
            parts = line.split()
            if module in parts:
                return parts[parts.index(module) + 1]
    except (OSError, IndexError):
        pass
    return "unknown"


def environment() -> dict[str, str]:
    env = {
        "date (UTC)": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "nproc": nproc(),
        "CPU": cpu_model(),
        "OS": f"{platform.system()} {platform.release()}",
        "grpc-go": module_version("google.golang.org/grpc"),
        "protocompile": module_version("github.com/bufbuild/protocompile"),
        "go": capture(["go", "version"]) or "not found",
        "rustc": capture(["rustc", "--version"]) or "not found",
    }
    env["msgbench commit"] = commit_label()
    return env


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Side-by-side gRPC benchmark of msgbench grpc vs a ghz-like grpc-go client.")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 5; 2 with --quick)")
    p.add_argument("--requests", type=int, default=None, help="calls per run (default 200000; 20000 with --quick)")
    p.add_argument(
        "--in-flight", type=int, default=100, help="calls outstanding: ref's -concurrency and msgbench's --in-flight (default 100)"
    )
    p.add_argument("--size", type=int, default=128, help="bytes of record data in every request (default 128)")
    p.add_argument("--quick", action="store_true", help="a quick look: 2 rounds of 20000 calls")
    p.add_argument("--only", choices=TOOLS, default=None, help="run one tool only (the report is then written only with --out)")
    p.add_argument("--out", default=None, help="Markdown report (default bench/RESULTS-grpc.md)")
    p.add_argument("--timeout", type=float, default=120.0, help="time limit of every run in seconds (default 120)")
    p.add_argument("--no-build", action="store_true", help="skip `cargo build --release --locked`; use the existing binary")
    a = p.parse_args(argv)
    if a.rounds is None:
        a.rounds = 2 if a.quick else 5
    if a.requests is None:
        a.requests = 20_000 if a.quick else 200_000
    if min(a.rounds, a.requests, a.in_flight) < 1 or a.timeout <= 0:
        p.error("--rounds, --requests, --in-flight and --timeout must be positive")
    if a.size < 0:
        p.error("--size must be >= 0")
    if a.out is None and a.only is None:
        a.out = str(BENCH / "RESULTS-grpc.md")
    return a


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.out:
        # Relative to where the script was started, before the change of directory below.
        args.out = str(Path(args.out).resolve())
    if not (REPO / PROTO).is_file():
        log(f"{PROTO} not found in the repository")
        return 2
    # The tools get the .proto and its import folder relative to the repository.
    os.chdir(REPO)
    with tempfile.TemporaryDirectory(prefix="msgbench-bench-grpc-") as tmp:
        workdir = Path(tmp)
        bench = Bench(args, workdir)
        bench.build_all()
        if bench.bins["msgbench"] is None:
            log("msgbench could not be built; it is also the server, so nothing can run")
            return 1
        if args.only == "ref" and bench.bins["ref"] is None:
            log("ref could not be built")
            return 1
        env = environment()
        server = GrpcServer(bench.bins["msgbench"], workdir)
        bench.server = server
        bench.record_cmds()
        try:
            server.start()
            log(f"msgbench grpc serve on {server.addr}")
            bench.run_cases()
        except RuntimeError as e:
            bench.notes.append(str(e))
            log_fail(str(e))
        finally:
            server.stop()
        text = bench.report(env)
    print(text)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
        log(f"wrote {out}")
    else:
        log("report not written: --only without --out")
    return bench.exit_status()


if __name__ == "__main__":
    entry(main)
