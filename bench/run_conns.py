#!/usr/bin/env python3
"""Connection scale: many connections from one client process, msgbench side by side with
`nats bench` (natscli) where nats bench can do the same, msgbench alone where it cannot.

A benchmark, not a test: its exit status says whether it could measure, never how fast or how
lean anything was. It is 1 when a case that could run gave no usable run of a tool (or nothing
was measured at all), 2 when it cannot start.

    python3 bench/run_conns.py [--cases fanout5k,subs10k,idle20k,conns5k,herd2k] [--scale 1.0]
                               [--rounds 3] [--msgs 100] [--size 16] [--msgbench-defaults]
                               [--idle-clients N] [--idle-hold 60s] [--nats PATH] [--old PATH [--old-label TEXT]]
                               [--out bench/RESULTS-conns.md] [--timeout 120] [--no-build]

The cases (client counts times --scale; --scale 0.1 runs 500 and 1,000 subscribers):

    fanout5k  1 publisher, 5,000 subscribers, --msgs messages of --size bytes that every
              subscriber must get. msgbench: one `pubsub` process (with nats bench's patience:
              `--ping-interval 2m --timeout 60s`, unless --msgbench-defaults). nats bench:
              `nats bench sub` with 5,000 clients, then, once the server counts all their
              subscriptions (its /varz), `nats bench pub` with one client.
    subs10k   the same with 10,000 subscribers.
    idle20k   `msgbench conns`: 20,000 idle connections held for --idle-hold (msgbench alone:
              nats bench has no idle mode).
    conns5k   `msgbench conns`: 5,000 connections held 5 s, over TCP and over TLS: connects/s
              and connect latency.
    herd2k    `msgbench conns`: 2,000 connections with a shared subscription through a server
              restart msgbench makes itself (restart@3s:1s), reconnect jitter on and off.

The last three need `msgbench conns`; a msgbench without it (`msgbench conns --help` fails)
skips them, with a note. Every run gets a nats-server of its own on a free port of 127.0.0.1,
with its monitoring port (herd2k excepted: msgbench starts and restarts its own). Measured per
run: wall time, peak RSS, CPU time (user + system, os.wait4) and exit status of every client
process, and each tool's own figures: msgbench's `--json` result, nats bench's `--csv` files
and text output. --old adds an earlier msgbench build as a third tool in fanout5k and subs10k.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from benchkit import REPO, build
from benchkit.fmt import fmt_rate, fmt_x, md_table, one_line, parse_duration
from benchkit.proc import Run, capture, dig, log, num, read_status_kb, run_child
from benchkit.server import NatsServer, free_port
from benchkit.suite import Case, Suite

ALL_CASES = ("fanout5k", "subs10k", "idle20k", "conns5k", "herd2k")
CONNS_KINDS = ("idle", "connect", "herd")  # the kinds of case `msgbench conns` runs
SUBJECT = "bench.conns"
HERD_FAULT = "restart@3s:1s"
HERD_RESTART = "3 s into the run and down for 1 s"  # what HERD_FAULT says
CONNECT_HOLD, HERD_HOLD = "5s", "8s"
# nats-server's tls.timeout: generous, so that a queue of handshakes on a small machine is
# measured rather than cut off.
TLS_HANDSHAKE_TIMEOUT_S = 5
# In the fan-out cases msgbench gets nats bench's patience: nats.go pings every 2 minutes, and
# nats bench sub waits for its messages without a limit. With msgbench's own (a ping every 2 s,
# 5 s without progress) a server still fanning out to thousands of subscribers, its read loop
# busy for seconds, can end the run first, and the figures would then describe that.
PATIENCE = ["--ping-interval", "2m", "--timeout", "60s"]
# Shown in place of what changes from run to run.
PORT, MPORT = "PORT", "MPORT"


# ----- formatting


def fmt_mib(kb: float | None) -> str:
    return "n/a" if kb is None else f"{kb / 1024:,.1f} MiB"


def fmt_kib(kb: float | None) -> str:
    return "n/a" if kb is None else f"{kb:,.1f} KiB"


def fmt_sec(s: float | None) -> str:
    return "n/a" if s is None else f"{s:,.2f} s"


def fmt_cpu_ns(ns: float | None) -> str:
    return "n/a" if ns is None else f"{ns / 1000:,.2f} µs" if ns >= 1000 else f"{ns:,.0f} ns"


def fmt_int(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.0f}"


def fmt_us(v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{v / 1e6:,.2f} s" if v >= 1e6 else f"{v / 1000:,.2f} ms" if v >= 1000 else f"{v:,.0f} µs"


def fmt_bytes(b: float | None) -> str:
    return "n/a" if b is None else fmt_kib(b / 1024)


def fmt_num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.2f}"


# ----- peak memory, the server's counters, the result's figures


def peak_kb(run: Run) -> int:
    """A child's peak RSS: its VmHWM sampled while it ran, or ru_maxrss when that is above this
    script's own peak. ru_maxrss of a child on Linux is at least the RSS of the parent it was
    forked from, so only a figure above the parent's is the child's own (and then it is exact:
    it includes the last moments the sampling may have missed)."""
    own = read_status_kb(os.getpid(), "VmHWM") or 0
    return max(run.hwm_kb, run.maxrss_kb if run.maxrss_kb > own else 0)


def varz(mport: int) -> dict | None:
    """The server's /varz, or None if it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{mport}/varz", timeout=2.0) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def first(doc: dict, paths: tuple[str, ...]) -> float | None:
    """The first of the dotted paths that holds a number."""
    for p in paths:
        v = num(dig(doc, *p.split(".")))
        if v is not None:
            return v
    return None


# A time whose key names its unit, in µs; a bare key is read as µs (as connect_latency's are).
UNIT_US = (("_us", 1.0), ("_ns", 1e-3), ("_ms", 1e3), ("_s", 1e6), ("_secs", 1e6), ("", 1.0))


def time_us(doc: dict, sections: tuple[str, ...], names: tuple[str, ...]) -> float | None:
    for sec in sections:
        d = dig(doc, *sec.split("."))
        if not isinstance(d, dict):
            continue
        for name in names:
            for suffix, k in UNIT_US:
                v = num(d.get(name + suffix))
                if v is not None:
                    return v * k
    return None


def keys_of(doc: dict, section: str) -> str:
    """What a result holds, for a note when a figure is not where it was looked for: the
    section's keys, or the top level's when it has no such section."""
    sec = dig(doc, *section.split("."))
    if isinstance(sec, dict):
        return f"`{section}`: " + (", ".join(sorted(sec)) or "empty")
    return f"no `{section}`; top level: " + (", ".join(sorted(doc)) or "none")


# Where `msgbench conns` puts each figure (its `conns` section; the herd inside it), then a
# few likely variants, so that a renamed key shows as a note rather than a crash.
CONNS_FIGURES: dict[str, tuple[str, ...]] = {
    "connected": ("conns.connected", "conns.established"),
    "never_connected": ("conns.never_connected",),
    "up_at_end": ("conns.up_at_end",),
    "pings_sent": ("conns.keepalives.sent", "conns.keepalive.sent"),
    "pings": ("conns.keepalives.answered", "conns.keepalive.answered", "conns.pings_answered"),
    "connects_per_s": ("conns.connects_per_s", "conns.connects_per_sec"),
    "own_per_conn_b": ("conns.memory.per_connection_bytes",),
    "server_per_conn_b": ("conns.memory.server_per_connection_bytes",),
    "herd_lost": ("conns.herd.lost", "herd.lost"),
    "herd_never_back": ("conns.herd.never_back", "herd.never_back"),
    "attempts_mean": ("conns.herd.attempts_mean", "herd.attempts_mean", "conns.herd.attempts_per_client.mean"),
    "attempts_p99": ("conns.herd.attempts_p99", "herd.attempts_p99"),
    "attempts_max": ("conns.herd.attempts_max", "herd.attempts_max", "conns.herd.attempts_per_client.max"),
    "msgs_lost": ("conns.herd.msgs_lost", "herd.msgs_lost", "herd.messages_lost"),
    "server_back_ms": ("conns.herd.server_back_ms",),
    "peak_back": ("conns.herd.peak_back_per_100ms",),
}
HERD_SECTIONS = ("conns.herd", "herd")
HERD_TIMES = {f"t{q}": (f"to_{q}pct", f"time_to_{q}pct", f"time_to_{q}") for q in (50, 99, 100)}
PHASES = ("tcp", "tls", "handshake", "total")
# Which figures a kind of case must find (a missing one is noted, with the keys found).
WANTED = {
    "idle": ("connected", "failures", "pings"),
    "connect": ("connects_per_s", "failures", "lat_tcp_p50", "lat_handshake_p50"),
    "herd": ("t50", "t99", "t100", "attempts_mean", "msgs_lost"),
}
SECTION = {"idle": "conns", "connect": "conns", "herd": "conns.herd"}


def failures(doc: dict) -> float | None:
    """conns.failures: failed attempts and ended connections by kind (summed), or a number."""
    v = dig(doc, "conns", "failures")
    if isinstance(v, dict):
        return float(sum(n for n in v.values() if num(n) is not None))
    return num(v)


def settle(run: Run) -> Run:
    """A nats bench run: its figures are in files, so an exit 0 in time is a success (run_child
    looked for JSON on its stdout)."""
    if run.exit_code == 0 and not run.timed_out:
        run.error, run.ok = "", True
    return run


class ServerCounter:
    """Samples a server's /varz while a client runs (at most every 250 ms): the most
    connections it counted at once."""

    def __init__(self, mport: int | None):
        self.mport, self.most, self.last = mport, None, 0.0

    def __call__(self, _pid: int, t: float) -> None:
        if self.mport is None or t - self.last < 0.25:
            return
        self.last = t
        v = varz(self.mport)
        if v is not None:
            self.most = max(self.most or 0, v.get("connections", 0))


# ----- the server and TLS


class MonitoredServer(NatsServer):
    """nats-server with its HTTP monitoring port (for /varz), optionally with TLS from a config
    file in workdir."""

    def __init__(self, binary: str, workdir: Path, tls_dir: Path | None = None):
        super().__init__(binary, workdir)
        self.mport = free_port()
        if tls_dir is None:
            self.cmd += ["-m", str(self.mport)]
            return
        conf = workdir / "nats-tls.conf"
        conf.write_text(tls_config(tls_dir, self.port, self.mport))
        self.cmd = [binary, "-c", str(conf)]


def tls_config(tls_dir: Path, port: int | str, mport: int | str) -> str:
    return (
        f'listen: "127.0.0.1:{port}"\nhttp: "127.0.0.1:{mport}"\n'
        f'tls {{\n  cert_file: "{tls_dir / "server.pem"}"\n  key_file: "{tls_dir / "server.key"}"\n'
        f"  timeout: {TLS_HANDSHAKE_TIMEOUT_S}\n}}\n"
    )


def make_certs(d: Path) -> str:
    """A throwaway CA and a server certificate for 127.0.0.1 (ECDSA P-256) in d; "" on success,
    else why not."""
    if shutil.which("openssl") is None:
        return "openssl not found"
    d.mkdir(parents=True, exist_ok=True)
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    steps = [
        ["openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=msgbench bench CA"],
        ["openssl", "req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"],
        ["openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "server.pem", "-days", "2", "-extfile", "san.cnf"],
    ]  # fmt: skip
    for cmd in steps:
        p = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            return f"`{' '.join(cmd[:3])}` failed: {one_line(p.stderr)}"
    return ""


def fds_needed(case: Case) -> int:
    """Open files the busiest process of a case may need: two a connection for a msgbench
    `pubsub` that clones every socket (one for reading, one for writing: builds before the
    fleet engine), one and 1,024 to spare for `msgbench conns` (its own reckoning); nats bench
    and the server need one and a few."""
    return 2 * case.clients + 256 if case.kind == "fanout" else case.clients + 1024


def raise_nofile(want: int) -> tuple[int, str]:
    """Raises this process's open-files limit, which every child inherits, to `want`: the hard
    limit too where allowed (that takes CAP_SYS_RESOURCE), else the soft one to the hard.
    Returns the soft limit it ends with, and what it did."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= want:
        return soft, f"{soft} (soft), {hard} (hard): enough"
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    new_soft, new_hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    done = f"raised from {soft} (soft), {hard} (hard)" if (new_soft, new_hard) != (soft, hard) else "not raised"
    short = "" if new_soft >= want else f"; the hard limit could not be raised to the {want:,} the largest case may need"
    return new_soft, f"{new_soft} (soft), {new_hard} (hard): {done}{short}"


# ----- the suite


class Conns(Suite):
    script = "run_conns.py"
    title = "Connection scale: msgbench against nats bench"
    description = "Connection scale: fan-out to thousands of subscribers (msgbench vs nats bench), idle connections, connect rates, a reconnect herd."
    default_rounds = 3
    default_out = "RESULTS-conns.md"
    binaries = ("msgbench",)
    tool_binary = {"plain": "msgbench", "tls": "msgbench", "jitter-on": "msgbench", "jitter-off": "msgbench"}
    shown_names = {"msgbench": "target/release/msgbench", "old": "msgbench-old", "nats": "nats"}
    hidden_flags = ("out", "timeout", "no_build", "nats", "old")
    names = {"msgbench": "msgbench", "nats": "nats bench", "old": "msgbench-old", "plain": "TCP", "tls": "TLS",
             "jitter-on": "jitter on", "jitter-off": "jitter off"}  # fmt: skip

    @classmethod
    def add_arguments(cls, p):
        p.add_argument("--cases", default=",".join(ALL_CASES), help=f"the cases to run, comma separated (default {','.join(ALL_CASES)})")
        p.add_argument("--scale", type=float, default=1.0, help="multiplies every case's client count (default 1.0; 0.1 for a quick look)")
        p.add_argument("--msgs", type=int, default=100, help="fan-out cases: messages every subscriber must get (default 100)")
        p.add_argument("--size", type=int, default=16, help="fan-out cases: payload bytes (default 16)")
        p.add_argument("--msgbench-defaults", action="store_true", help=f"fan-out cases: run msgbench pubsub without {' '.join(PATIENCE)}")
        p.add_argument("--idle-clients", type=int, default=None, help="idle20k: connections (default 20,000 times --scale); the open-file hard limit may allow fewer")
        p.add_argument("--idle-hold", type=parse_duration, default="60s", help="idle20k: how long the connections are held (default 60s)")
        p.add_argument("--nats", default=None, help="the natscli binary (default: nats on PATH, else the checkout's .tools/bin/nats)")
        p.add_argument("--old", default=None, help="an earlier msgbench binary, a third tool in the fan-out cases")
        p.add_argument("--old-label", default=None, help="what --old was built from (a commit, say), for the report")

    @classmethod
    def check_arguments(cls, p, a):
        unknown = set(a.cases.split(",")) - set(ALL_CASES)
        if unknown:
            p.error(f"--cases: unknown {', '.join(sorted(unknown))} (known: {', '.join(ALL_CASES)})")
        if a.scale <= 0 or a.msgs < 1 or a.idle_hold <= 0:
            p.error("--scale, --msgs and --idle-hold must be positive")
        if a.size < 8:
            p.error("--size must be at least 8 (msgbench stamps every message)")

    def __init__(self, args):
        super().__init__(args)
        self.conns_missing = ""  # why `msgbench conns` cannot run, if it cannot
        self.conns_help = ""
        self.tls_dir: Path | None = None
        self.nofile, self.fd_limit = "", 0
        self.exits: dict[tuple[str, str], list[str]] = {}  # (case, tool) -> per run
        # (case, tool) -> (figure -> runs without it, the keys the first such result had)
        self.missing: dict[tuple[str, str], tuple[dict[str, int], str]] = {}

    # ----- cases

    def count(self, n: int) -> int:
        return max(1, round(n * self.args.scale))

    def make_cases(self):
        a = self.args
        fan = ("msgbench", "nats", "old") if a.old else ("msgbench", "nats")
        n = {key: self.count(full) for key, full in (("fanout5k", 5000), ("subs10k", 10000), ("idle20k", 20000), ("conns5k", 5000), ("herd2k", 2000))}
        if a.idle_clients:
            n["idle20k"] = a.idle_clients
        fanout = lambda key: f"fan-out: 1 publisher, {n[key]:,} subscribers, {a.size} B, {a.msgs:,} msgs each"  # noqa: E731
        every = [
            Case("fanout5k", fanout("fanout5k"), fan, kind="fanout", clients=n["fanout5k"]),
            Case("subs10k", fanout("subs10k"), fan, kind="fanout", clients=n["subs10k"]),
            Case("idle20k", f"idle: {n['idle20k']:,} connections held {a.idle_hold}", ("msgbench",),
                 kind="idle", clients=n["idle20k"], hold=str(a.idle_hold)),
            Case("conns5k", f"connect: {n['conns5k']:,} connections held {CONNECT_HOLD}, TCP and TLS", ("plain", "tls"),
                 kind="connect", clients=n["conns5k"], hold=CONNECT_HOLD),
            Case("herd2k", f"reconnect herd: {n['herd2k']:,} connections, shared subscription, server {HERD_FAULT}",
                 ("jitter-on", "jitter-off"), kind="herd", clients=n["herd2k"], hold=HERD_HOLD),
        ]  # fmt: skip
        wanted = a.cases.split(",")
        return [c for c in every if c.key in wanted]

    # ----- binaries

    def build(self):
        a = self.args
        self.provide("msgbench", *build.msgbench(a.no_build))
        nats = a.nats or shutil.which("nats") or str(REPO / ".tools" / "bin" / "nats")
        found = shutil.which(nats)
        self.provide("nats", found, "" if found else f"natscli not found ({'--nats ' + a.nats if a.nats else 'nats on PATH, .tools/bin/nats'})")
        if a.old:
            self.provide("old", *build.executable(a.old, "--old"))
        if "msgbench" in self.bins and any(c.kind in CONNS_KINDS for c in self.cases):
            p = subprocess.run([self.bins["msgbench"], "conns", "--help"], capture_output=True, text=True, timeout=30)
            if p.returncode != 0:
                self.conns_missing = f"`msgbench conns --help` exits {p.returncode} ({one_line(p.stderr or p.stdout, 160)})"
                log(f"skipping {', '.join(c.key for c in self.cases if c.kind in CONNS_KINDS)}: {self.conns_missing}")
            else:
                self.conns_help = p.stdout
        if any(c.kind == "connect" for c in self.cases) and not self.conns_missing:
            err = make_certs(self.workdir / "tls")
            if err:
                self.notes.append(f"TLS runs skipped: {err}")
            else:
                self.tls_dir = self.workdir / "tls"

    def facts(self):
        f = super().facts()
        del f["nats.go"]
        f["natscli"] = (capture([self.bins["nats"], "--version"]) if "nats" in self.bins else None) or "unavailable"
        if "old" in self.bins:
            f["msgbench-old"] = (self.args.old_label + ", " if self.args.old_label else "") + (capture([self.bins["old"], "--version"]) or "?")
        f["open files (every process)"] = self.nofile
        if any(c.kind in CONNS_KINDS for c in self.cases):
            f["msgbench conns"] = f"missing: {self.conns_missing}" if self.conns_missing else "present"
        return f

    # ----- running

    def run(self):
        self.fd_limit, self.nofile = raise_nofile(max(fds_needed(c) for c in self.cases))
        log(f"open files: {self.nofile}")
        for c in self.cases:
            if fds_needed(c) > self.fd_limit:
                self.notes.append(
                    f"{c.key}: {c.clients:,} connections may need up to {fds_needed(c):,} open files in one process "
                    "(a msgbench that clones every socket holds two a connection), above the limit of "
                    f"{self.fd_limit:,}, which could not be raised (a hard limit only rises with CAP_SYS_RESOURCE); "
                    "a run that needs more fails with 'Too many open files'"
                )
        return super().run()

    def skipped(self, case: Case, tool: str) -> str:
        """Why a case (or one tool of it) cannot run at all; "" if it can."""
        if case.kind in CONNS_KINDS and self.conns_missing:
            return self.conns_missing
        if tool == "tls" and self.tls_dir is None:
            return "no certificates"
        return ""

    def server_for(self, case):
        return None  # every run starts its own: see run_one

    def run_one(self, case, tool, label, sample_rss=False):
        if self.skipped(case, tool) or not self.available(tool):
            return None
        if case.kind != "herd":  # msgbench starts and restarts its own server for --fault
            tls = self.tls_dir if tool == "tls" else None
            shown = f"server: {case.key}" + (", TLS" if tls else "")
            self.start_server(MonitoredServer(self.nats_bin, self.workdir, tls), shown)
            self.server_cmds[shown] = self.shown_server(tls is not None)
        try:
            return super().run_one(case, tool, label, sample_rss)
        finally:
            if self.server is not None:
                self.server.stop()
                self.server = None

    def shown_server(self, tls: bool) -> str:
        if tls:
            return "nats-server -c nats-tls.conf   # nats-tls.conf:\n" + "\n".join(
                "#   " + line for line in tls_config(Path("<tmp>/tls"), PORT, MPORT).splitlines()
            )
        return f"nats-server -a 127.0.0.1 -p {PORT} -m {MPORT}"

    def timeout(self, case, tool):
        hold = parse_duration(getattr(case, "hold", "0s"))
        return self.args.timeout + hold

    def url(self) -> str:
        return self.server.url if self.server is not None else f"nats://127.0.0.1:{PORT}"

    def json_file(self, case, tool):
        return self.workdir / f"{case.key}-{tool}.json" if tool != "nats" else None

    def command(self, case, tool):
        a, n, out = self.args, str(case.clients), str(self.json_file(case, tool))
        if case.kind == "fanout" and tool == "nats":
            return self.nats_command(case, "sub")
        if case.kind == "fanout":
            return [self.bin(tool), "pubsub", "--server", self.url(), "--pubs", "1", "--subs", n, "--msgs", str(a.msgs),
                    "--size", str(a.size), "--subject", SUBJECT, *([] if a.msgbench_defaults else PATIENCE),
                    "--json", out, "--no-progress"]  # fmt: skip
        cmd = [self.bin("msgbench"), "conns", "--clients", n, "--hold", case.hold]
        if case.kind != "herd":  # the herd's server is msgbench's own, which it restarts
            # tls:// makes msgbench encrypt whatever the server's INFO says. --server-monitor:
            # msgbench reads the server's memory there, before and after connecting.
            url = self.url().replace("nats://", "tls://", 1) if tool == "tls" else self.url()
            mport = self.server.mport if self.server is not None else MPORT
            cmd += ["--server", url, "--server-monitor", f"http://127.0.0.1:{mport}"]
        if tool == "tls":
            cmd += ["--tls"] if re.search(r"--tls(?![\w-])", self.conns_help) else []  # where this build has it
            cmd += ["--tls-ca", str((self.tls_dir or self.workdir / "tls") / "ca.pem")]
        if case.kind == "herd":
            cmd += ["--subscribe", "shared", "--fault", HERD_FAULT, "--reconnect", "--reconnect-jitter", tool.split("-")[1]]
        return cmd + ["--json", out]

    def nats_command(self, case: Case, role: str) -> list[str]:
        a = self.args
        clients = str(case.clients) if role == "sub" else "1"
        return [self.bin("nats"), "--server", self.url(), "bench", role, SUBJECT, "--clients", clients, "--msgs", str(a.msgs),
                "--size", str(a.size), "--no-progress", "--csv", str(self.workdir / f"nats-{role}" / "result.csv")]  # fmt: skip

    def shown_commands(self, case):
        shown = {}
        for tool in case.tools:
            label = f"{case.title}: {self.names[tool]}"
            if case.kind == "fanout" and tool == "nats":
                shown[label + ", subscribers"] = self.show(self.nats_command(case, "sub"))
                shown[label + f", publisher (once /varz counts {case.clients:,} more subscriptions)"] = self.show(self.nats_command(case, "pub"))
            elif case.kind == "herd":
                shown[label] = "MSGBENCH_NATS_SERVER=nats-server " + self.show(self.command(case, tool))
            else:
                shown[label] = self.show(self.command(case, tool))
        if case.kind in CONNS_KINDS and not self.conns_missing:
            used = {f for t in case.tools for f in self.command(case, t) if f.startswith("--")}
            lacking = sorted(f for f in used if not re.search(re.escape(f) + r"(?![\w-])", self.conns_help))
            if lacking:
                self.notes.append(f"{case.key}: `msgbench conns --help` does not mention {', '.join(lacking)}")
        return shown

    def execute(self, case, tool, cmd, sample_rss):
        if case.kind == "fanout" and tool == "nats":
            return self.run_nats_fanout(case, cmd)
        env = dict(os.environ, MSGBENCH_NATS_SERVER=self.nats_bin) if case.kind == "herd" else None
        counter = ServerCounter(self.server.mport if self.server is not None else None)
        res = run_child(cmd, self.timeout(case, tool), self.workdir, cwd=REPO, env=env, sample_rss=True, poll=0.02,
                        json_file=self.json_file(case, tool), on_poll=counter)  # fmt: skip
        res.server_most = counter.most
        return res

    def run_nats_fanout(self, case: Case, sub_cmd: list[str]) -> Run:
        """nats bench sub with every subscriber, then, once the server counts their
        subscriptions, nats bench pub. The sub process is the run; the pub's figures go into
        its data. nats bench sub waits for its messages without a time limit, so a subscriber
        that misses one shows as a run that timed out."""
        sub_dir, pub_dir = self.workdir / "nats-sub", self.workdir / "nats-pub"
        for d in (sub_dir, pub_dir):
            d.mkdir(exist_ok=True)
            (d / "result.csv").unlink(missing_ok=True)
        mport, timeout = self.server.mport, self.timeout(case, "nats")
        base = (varz(mport) or {}).get("subscriptions", 0)
        box: dict = {}

        def on_poll(pid, _t):
            box["pid"] = pid

        def run_sub():
            box["sub"] = run_child(sub_cmd, timeout, sub_dir, cwd=REPO, sample_rss=True, poll=0.02, on_poll=on_poll)

        t0 = time.monotonic()
        worker = threading.Thread(target=run_sub, daemon=True)
        worker.start()
        pub, ready_s = None, None
        try:
            while worker.is_alive() and time.monotonic() - t0 < timeout:
                v = varz(mport) or {}
                if v.get("connections", 0) >= case.clients and v.get("subscriptions", 0) >= base + case.clients:
                    ready_s = time.monotonic() - t0
                    break
                time.sleep(0.05)
            if ready_s is not None:
                before = (varz(mport) or {}).get("in_msgs", 0)
                pub = settle(run_child(self.nats_command(case, "pub"), timeout, pub_dir, cwd=REPO, sample_rss=True, poll=0.02))
                # A pub that fails may have published everything (its last flush times out while
                # the server still fans out): the subscribers decide. Only if nothing reached the
                # server will their messages never come.
                if not pub.ok and (varz(mport) or {}).get("in_msgs", 0) <= before and "pid" in box and worker.is_alive():
                    os.kill(box["pid"], signal.SIGKILL)
            worker.join()
        except BaseException:
            if "pid" in box and worker.is_alive():
                os.kill(box["pid"], signal.SIGKILL)
                worker.join()
            raise
        res: Run = settle(box["sub"])
        res.pub = pub
        if ready_s is None and not res.error:
            res.error = "the server never counted every subscription"
        elif ready_s is None:
            res.error += " (before the server counted every subscription)"
        elif res.timed_out:
            res.error += " (some subscribers never got every message)"
        if pub is not None and not pub.ok:
            outcome = f"sub: {res.error}" if res.error else "the subscribers got every message all the same"
            self.notes.append(f"nats bench pub ({case.key}): {pub.error}; {outcome}")
            if res.error:
                res.error = f"nats bench pub: {pub.error}; sub: {res.error}"
        if res.exit_code == 0 and not res.timed_out:
            res.data = self.nats_figures(sub_dir, pub_dir, ready_s, pub)
            if res.data is None:
                res.error = "no CSV result from nats bench sub"
        res.ok = not res.error
        return res

    def nats_figures(self, sub_dir: Path, pub_dir: Path, ready_s: float | None, pub: Run | None) -> dict | None:
        """nats bench's figures: the subscribers' rows of its CSV (RunID,ClientID,MsgCount,...),
        its aggregate rates and any warning from its text output."""
        try:
            rows = [r.split(",") for r in (sub_dir / "result.csv").read_text().splitlines() if r and not r.startswith("#")]
            counts = [int(r[2]) for r in rows]
        except (OSError, IndexError, ValueError):
            return None
        text = (sub_dir / "child.out").read_text(errors="replace") + (sub_dir / "child.err").read_text(errors="replace")
        sub_rate = re.search(r"subscriber (?:aggregated )?stats: ([\d,]+) msgs/sec", text)
        pub_text = (pub_dir / "child.out").read_text(errors="replace") if pub is not None else ""
        pub_rate = re.search(r"publisher stats: ([\d,]+) msgs/sec", pub_text)
        return {
            "counts": counts,
            "warnings": [one_line(w) for w in re.findall(r"WARNING:[^\n]*", text)],
            "sub_rate": float(sub_rate.group(1).replace(",", "")) if sub_rate else None,
            "pub_rate": float(pub_rate.group(1).replace(",", "")) if pub_rate else None,
            "ready_s": ready_s,
        }

    # ----- figures

    def metrics(self, case, tool, run):
        m = {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "rss_kb": float(peak_kb(run))}
        m["rss_per_conn_kb"] = m["rss_kb"] / case.clients
        if case.kind == "fanout":
            m.update(self.nats_metrics(case, run) if tool == "nats" else self.msgbench_fanout(case, run))
            if m.get("delivered"):
                m["cpu_ns"] = m.get("cpu_total_s", run.cpu_s) * 1e9 / m["delivered"]
            return m
        if getattr(run, "server_most", None) is not None:
            m["server_most"] = float(run.server_most)
        d = run.data
        for key, paths in CONNS_FIGURES.items():
            v = first(d, paths)
            if v is not None:
                m[key] = v
        for key, names in HERD_TIMES.items():
            v = time_us(d, HERD_SECTIONS, names)
            if v is not None:
                m[key] = v
        for phase in PHASES:
            for q in ("p50", "p99", "max"):
                v = time_us(d, (f"conns.connect_latency.{phase}",), (q,))
                if v is not None:
                    m[f"lat_{phase}_{q}"] = v
        if failures(d) is not None:
            m["failures"] = failures(d)
        if "connected" in m:
            m["rss_per_conn_kb"] = m["rss_kb"] / max(m["connected"], 1)
        lacking = [key for key in WANTED[case.kind] if key not in m]
        if lacking:
            seen = self.missing.setdefault((case.key, tool), ({}, keys_of(d, SECTION[case.kind])))[0]
            for key in lacking:
                seen[key] = seen.get(key, 0) + 1
        return m

    def msgbench_fanout(self, case: Case, run: Run) -> dict:
        d, a = run.data, self.args
        subs = [c for c in d.get("clients") or [] if isinstance(c, dict) and c.get("role") == "sub"]
        each = len(subs) == case.clients and all(c.get("msgs") == a.msgs for c in subs)
        m = {
            "delivered": num(dig(d, "delivery", "received")),
            "expected": num(dig(d, "delivery", "expected")),
            "lost": num(dig(d, "delivery", "lost")),
            "duplicated": num(dig(d, "delivery", "duplicated")),
            "rate": num(dig(d, "by_role", "sub", "msgs_per_sec")),
        }
        m["exact"] = float(each and m["lost"] == 0 and m["duplicated"] == 0 and m["delivered"] == case.clients * a.msgs)
        return {k: v for k, v in m.items() if v is not None}

    def nats_metrics(self, case: Case, run: Run) -> dict:
        d, a, pub = run.data, self.args, run.pub
        counts = d["counts"]
        m = {
            "delivered": float(sum(counts)),
            "expected": float(case.clients * a.msgs),
            "rate": d["sub_rate"],
            "pub_rate": d["pub_rate"],
            "ready_s": d["ready_s"],
            "sub_cpu_ns": run.cpu_s * 1e9 / max(sum(counts), 1),
        }
        m["exact"] = float(len(counts) == case.clients and all(c == a.msgs for c in counts) and not d["warnings"])
        if pub is not None:
            m.update(pub_wall_s=pub.wall_s, pub_cpu_s=pub.cpu_s, pub_rss_kb=float(peak_kb(pub)), cpu_total_s=run.cpu_s + pub.cpu_s)
        for w in d["warnings"]:
            self.notes.append(f"nats bench sub ({case.key}): {w}")
        return {k: v for k, v in m.items() if v is not None}

    def required(self, case, tool):
        return ("rss_kb", "delivered", "cpu_ns") if case.kind == "fanout" else ("rss_kb",)

    def after_run(self, case, tool, run, label):
        if tool == "nats" and case.kind == "fanout":
            pub = getattr(run, "pub", None)
            shown = f"sub {self.exit_of(run)}, pub {self.exit_of(pub) if pub is not None else 'not run'}"
        else:
            shown = self.exit_of(run)
        self.exits.setdefault((case.key, tool), []).append(shown)

    @staticmethod
    def exit_of(run: Run) -> str:
        return "timed out" if run.timed_out else "?" if run.exit_code is None else str(run.exit_code)

    def describe(self, case, tool, run):
        m = run.metrics
        s = f"wall {fmt_sec(m.get('wall_s'))}, peak RSS {fmt_mib(m.get('rss_kb'))}, CPU {fmt_sec(m.get('cpu_s'))}"
        if case.kind == "fanout":
            s += f", {fmt_int(m.get('delivered'))} delivered ({'exact' if m.get('exact') else 'NOT exact'}), {fmt_cpu_ns(m.get('cpu_ns'))} CPU/delivery"
            if tool == "nats":
                s += f"; pub: peak RSS {fmt_mib(m.get('pub_rss_kb'))}, CPU {fmt_sec(m.get('pub_cpu_s'))}"
        else:
            s += "".join(f", {k} {m[k]:,.6g}" for k in WANTED[case.kind] if k in m)
        return s

    def exit_status(self):
        measured = bad = 0
        for c in self.cases:
            for t in c.tools:
                if self.skipped(c, t) or not self.available(t):
                    continue
                if any(self.runs(c.key, t)):
                    measured += 1
                else:
                    bad += 1
        if bad or not measured:
            log(f"!! {bad} case/tool pairs without a usable run" if bad else "!! nothing was measured")
            return 1
        return 0

    # ----- the report

    def intro(self):
        a = self.args
        old = f" `--old` adds an earlier msgbench build (`msgbench-old`{', ' + a.old_label if a.old_label else ''}) to the fan-out cases." if a.old else ""
        return [
            f"{self.generated_by()} Every run gets a fresh nats-server on a free port of 127.0.0.1 with its "
            "monitoring port (herd2k excepted: msgbench starts and restarts its own server there). In every round "
            "the tools run back to back, the order rotating. Figures are medians over the rounds (min–max, n); "
            "ratios are medians of per-round ratios." + old,
            "Per client process: wall time, peak RSS (the larger of its `VmHWM`, sampled every 20 ms, and "
            "`ru_maxrss` where that is above this script's own peak: only then is it the child's alone), CPU time (user + system from `os.wait4`) "
            "and exit status. In the fan-out cases nats bench runs as two processes: `nats bench sub` with every "
            "subscriber, then, once the server's `/varz` counts all their subscriptions, `nats bench pub` with one "
            "client; msgbench runs both roles in one `pubsub` process"
            + ("" if a.msgbench_defaults else f", with `{' '.join(PATIENCE)}`: nats bench's patience (nats.go pings every "
               "2 minutes, nats bench sub waits for its messages without a limit), so that neither tool gives up on a "
               "server that is slow to fan out")
            + ". CPU per delivery is the CPU time over the "
            "messages delivered (subscribers × messages each); for nats bench over sub + pub, so that both sides "
            "include their publisher. nats bench sub waits for its messages without a time limit: a subscriber "
            "that missed one shows as a run that timed out. This is a benchmark, not a test.",
        ]

    def vertical(self, case: Case, rows: list[tuple], ratio: tuple[str, str] | None = None) -> str:
        """A table with a row per figure and a column per tool. Each row: (label, {tool: metric}
        or a metric for every tool, fmt[, ratio metrics (a's, b's)]); the exit statuses last."""
        tools = case.tools
        header = ["figure", *[self.names[t] for t in tools]]
        if ratio:
            header.append(f"{self.names[ratio[0]]} / {self.names[ratio[1]]}")
        out = []
        for label, metric, fmt, *r in rows:
            per = metric if isinstance(metric, dict) else {t: metric for t in tools}
            if callable(metric):  # a row of its own making: metric(case, tool) is the cell
                per, fmt = {}, None
            row = [label] + [self.cell(case.key, t, per[t], fmt) if t in per else metric(case, t) if callable(metric) else "—" for t in tools]
            if ratio:
                row.append(fmt_x(self.median_ratio(case.key, ratio[0], ratio[1], *r[0])) if r else "")
            out.append(row)
        out.append(["exit status, per run"] + [self.exits_cell(case, t) for t in tools] + ([""] if ratio else []))
        return md_table(header, out)

    def cell(self, case_key, tool, metric, fmt=fmt_rate):
        case = next(c for c in self.cases if c.key == case_key)
        return f"skipped: {self.skipped(case, tool)}" if self.skipped(case, tool) else super().cell(case_key, tool, metric, fmt)

    def exact_cell(self, case: Case, tool: str) -> str:
        runs = [r for r in self.runs(case.key, tool) if r is not None and "exact" in r.metrics]
        if not runs:
            return "n/a"
        good = sum(1 for r in runs if r.metrics["exact"])
        return f"{'yes' if good == len(runs) else 'NO'} ({good} of {len(runs)} runs)"

    def exits_cell(self, case: Case, tool: str) -> str:
        return "; ".join(self.exits.get((case.key, tool), [])) or "not run"

    def body(self):
        out = []
        for case in self.cases:
            out += [f"## {case.key}: {case.title}", ""]
            why = self.skipped(case, case.tools[0])
            if why:
                out += [f"Skipped: this msgbench cannot run it: {why}.", ""]
                continue
            out += getattr(self, f"body_{case.kind}")(case) + [""]
        if self.missing:
            out += ["## Figures not found in msgbench's result", ""]
            out += ["Looked for where `msgbench conns` puts them, then at a few likely variants; missing or null:", ""]
            rows = [[c, self.names[t], ", ".join(f"{f} ({n} of {len(self.runs(c, t))} runs)" for f, n in figs.items()), keys]
                    for (c, t), (figs, keys) in self.missing.items()]  # fmt: skip
            out += [md_table(["case", "tool", "figures (runs without them)", "what the result has"], rows), ""]
        return out

    def body_fanout(self, case: Case) -> list[str]:
        tools, ms = case.tools, [t for t in case.tools if t != "nats"]
        rows = [
            ("wall time (msgbench: the run; nats bench: sub, from start to exit)", "wall_s", fmt_sec, ("wall_s",)),
            ("nats bench pub: wall time", {"nats": "pub_wall_s"}, fmt_sec),
            ("nats bench sub: all subscribed after", {"nats": "ready_s"}, fmt_sec),
            ("peak RSS (msgbench: the process; nats bench: sub)", "rss_kb", fmt_mib, ("rss_kb",)),
            ("peak RSS per subscriber", "rss_per_conn_kb", fmt_kib, ("rss_per_conn_kb",)),
            ("nats bench pub: peak RSS", {"nats": "pub_rss_kb"}, fmt_mib),
            ("CPU (msgbench: the process; nats bench: sub + pub)", {**{t: "cpu_s" for t in ms}, "nats": "cpu_total_s"}, fmt_sec, ("cpu_s", "cpu_total_s")),
            ("nats bench sub: CPU", {"nats": "cpu_s"}, fmt_sec),
            ("nats bench pub: CPU", {"nats": "pub_cpu_s"}, fmt_sec),
            ("CPU per delivery (nats bench: sub + pub)", "cpu_ns", fmt_cpu_ns, ("cpu_ns",)),
            ("CPU per delivery, nats bench sub alone", {"nats": "sub_cpu_ns"}, fmt_cpu_ns, ("cpu_ns", "sub_cpu_ns")),
            ("deliveries", "delivered", fmt_int),
            ("exact delivery", self.exact_cell, None),
            ("subscriber msgs/s (the tool's own figure)", "rate", fmt_rate),
            ("nats bench pub: msgs/s (its own figure)", {"nats": "pub_rate"}, fmt_rate),
        ]
        if "old" in tools:
            rows = [r[:3] for r in rows]  # three tools: ratios below the table instead
        lines = [self.vertical(case, rows, None if "old" in tools else ("msgbench", "nats")), ""]
        if "old" in tools:
            for other in ("nats", "old"):
                for label, metric in (("peak RSS", "rss_kb"), ("CPU per delivery", "cpu_ns")):
                    lines.append(f"- msgbench / {self.names[other]}, {label}: {fmt_x(self.median_ratio(case.key, 'msgbench', other, metric))}")
            lines.append("")
        lines.append(
            f"Exact: msgbench's `delivery` has lost 0, duplicated 0 and received {case.clients * self.args.msgs:,}, and "
            f"every one of the {case.clients:,} subscribers counted {self.args.msgs:,}; nats bench sub exited 0 with a "
            f"CSV row of {self.args.msgs:,} for every subscriber and no warning."
        )
        return lines

    def body_idle(self, case: Case) -> list[str]:
        return [self.vertical(case, [
            ("wall time", "wall_s", fmt_sec),
            ("peak RSS", "rss_kb", fmt_mib),
            ("peak RSS per connection up", "rss_per_conn_kb", fmt_kib),
            ("msgbench's own memory per connection", "own_per_conn_b", fmt_bytes),
            ("the server's memory per connection (msgbench's figure)", "server_per_conn_b", fmt_bytes),
            ("CPU", "cpu_s", fmt_sec),
            ("connected", "connected", fmt_int),
            ("never connected", "never_connected", fmt_int),
            ("up at the end", "up_at_end", fmt_int),
            ("failures (every kind)", "failures", fmt_int),
            ("keepalive pings sent", "pings_sent", fmt_int),
            ("keepalive pings answered", "pings", fmt_int),
            ("most connections the server counted (/varz)", "server_most", fmt_int),
        ])]  # fmt: skip

    def body_connect(self, case: Case) -> list[str]:
        rows = [("connects/s", "connects_per_s", fmt_rate, ("connects_per_s",))]
        for phase in PHASES:
            for q in ("p50", "p99", "max"):
                rows.append((f"connect latency, {phase}, {q}", f"lat_{phase}_{q}", fmt_us, (f"lat_{phase}_{q}",)))
        rows += [
            ("connected", "connected", fmt_int),
            ("failures (every kind)", "failures", fmt_int),
            ("most connections the server counted (/varz)", "server_most", fmt_int),
            ("msgbench's own memory per connection", "own_per_conn_b", fmt_bytes, ("own_per_conn_b",)),
            ("the server's memory per connection (msgbench's figure)", "server_per_conn_b", fmt_bytes, ("server_per_conn_b",)),
            ("wall time", "wall_s", fmt_sec, ("wall_s",)),
            ("peak RSS", "rss_kb", fmt_mib, ("rss_kb",)),
            ("CPU", "cpu_s", fmt_sec, ("cpu_s",)),
        ]
        note = (f"TLS: a throwaway CA and an ECDSA P-256 server certificate for 127.0.0.1, made with openssl; "
                f"the server's TLS handshake timeout is {TLS_HANDSHAKE_TIMEOUT_S} s.")  # fmt: skip
        return [self.vertical(case, rows, ("tls", "plain")), "", note]

    def body_herd(self, case: Case) -> list[str]:
        return [self.vertical(case, [
            ("time to 50 % reconnected", "t50", fmt_us, ("t50",)),
            ("time to 99 % reconnected", "t99", fmt_us, ("t99",)),
            ("time to 100 % reconnected", "t100", fmt_us, ("t100",)),
            ("the server accepting again, after the kill (ms)", "server_back_ms", fmt_num),
            ("most connections back within 100 ms", "peak_back", fmt_int),
            ("connections the restart cut", "herd_lost", fmt_int),
            ("never back", "herd_never_back", fmt_int),
            ("connect attempts per connection, mean", "attempts_mean", fmt_num, ("attempts_mean",)),
            ("connect attempts per connection, P99", "attempts_p99", fmt_int),
            ("connect attempts per connection, max", "attempts_max", fmt_int),
            ("checks the cut connections missed", "msgs_lost", fmt_int),
            ("wall time", "wall_s", fmt_sec),
            ("peak RSS", "rss_kb", fmt_mib),
            ("CPU", "cpu_s", fmt_sec),
        ], ("jitter-on", "jitter-off")), "",
            f"The server is msgbench's own (`--fault` needs it), restarted {HERD_RESTART}; the times run from the "
            "restart's kill. A time whose key in the result names no unit (`_ns`, `_us`, `_ms`, `_s`) is read as µs."]  # fmt: skip


if __name__ == "__main__":
    Conns.main()
