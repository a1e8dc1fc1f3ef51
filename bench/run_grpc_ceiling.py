#!/usr/bin/env python3
"""gRPC at the HTTP/2 ceiling: msgbench vs h2load (and ghz) against grpc-go's helloworld Greeter.

A benchmark, not a test: its exit status says nothing about performance; never run it as a
timed test in CI. It does exit 1 if a run reported failed calls (or gave no usable result),
because then its figures cannot be compared.

    python3 bench/run_grpc_ceiling.py [--rounds 5] [--requests 100000] [--in-flight 1,10,50]
                                      [--old OLD_MSGBENCH] [--quick]
                                      [--out bench/RESULTS-grpc-ceiling.md] [--timeout 120] [--no-build]

Against one `ref greeter` (grpc-go's helloworld Greeter, bench/ref/greeter.go): the same
closed-loop unary calls of helloworld.Greeter/SayHello with {"name":"world"} from nghttp2's
h2load (posting the 12-byte gRPC frame: the ceiling of an HTTP/2 client), from msgbench, from
ghz when it is on PATH, and from an older msgbench with --old. Requests/s, client CPU per call
(user + sys from os.wait4, divided by the calls), P50 (msgbench, ghz) and h2load's mean time
per request. h2load and ghz are found on PATH, never installed.
"""

from __future__ import annotations

import re
import shutil

from benchkit import BENCH, REPO, build
from benchkit.fmt import fmt_ms, fmt_rate, fmt_us, fmt_x, md_table, verdict
from benchkit.proc import dig, log, num
from benchkit.server import Service
from benchkit.suite import Case, Suite

# Targets, msgbench against h2load (issue 33).
TARGET_RPS = 0.95  # requests/s, at least, at 1 and at 50 in flight
TARGET_CPU = 1.3  # client CPU per call, at most
TARGET_P50 = 1.1  # msgbench's P50 over h2load's mean time per request at 1 in flight, at most

PROTO = "bench/ref/helloworld.proto"  # relative to the repository (the tools run there)
CALL = "helloworld.Greeter/SayHello"
DATA = '{"name":"world"}'
# The gRPC frame of DATA: not compressed, 7 bytes long, field 1 (name) = "world".
FRAME = b"\x00\x00\x00\x00\x07" + b"\x0a\x05world"

TOOLS = ("h2load", "msgbench", "ghz")
NAMES = {"h2load": "h2load", "msgbench": "msgbench", "ghz": "ghz", "old": "old msgbench"}


class Greeter(Service):
    """`ref greeter`: grpc-go's helloworld Greeter."""

    name = "ref greeter"

    def __init__(self, ref: str, workdir):
        super().__init__(ref, workdir, "greeter.log")
        self.cmd = [ref, "greeter", "-addr", self.addr]


# ----- reading each tool's result

_UNIT_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


def parse_h2load(text: str) -> dict | None:
    """h2load's summary as a dict: rps, seconds, done, succeeded, failed, errored, timeout,
    status_2xx, mean_ns (of "time for request"); None if it has no "finished in" line."""
    m = re.search(r"finished in ([\d.]+)(ms|s), ([\d.]+) req/s", text)
    if not m:
        return None
    d: dict = {"seconds": float(m.group(1)) / (1000 if m.group(2) == "ms" else 1), "rps": float(m.group(3))}
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", text)
    if m:
        for k, v in zip(("total", "started", "done", "succeeded", "failed", "errored", "timeout"), m.groups()):
            d[k] = int(v)
    m = re.search(r"status codes: (\d+) 2xx", text)
    if m:
        d["status_2xx"] = int(m.group(1))
    m = re.search(r"time for request:\s+([\d.]+)(\S+)\s+([\d.]+)(\S+)\s+([\d.]+)(\S+)", text)
    if m and m.group(6) in _UNIT_NS:
        d["mean_ns"] = float(m.group(5)) * _UNIT_NS[m.group(6)]
    return d


def read_h2load(d: dict, requests: int) -> tuple[dict, list[str]]:
    m = {"rate": d["rps"]} if "rps" in d else {}
    if "mean_ns" in d:
        m["mean_ns"] = d["mean_ns"]
    errs = []
    if d.get("succeeded") != requests:
        errs.append(f"{d.get('succeeded')} of {requests} requests succeeded")
    if d.get("status_2xx") != requests:
        errs.append(f"{d.get('status_2xx')} of {requests} responses had status 2xx")
    for k in ("failed", "errored", "timeout"):
        if d.get(k):
            errs.append(f"{d[k]} {k}")
    return m, errs


def read_msgbench(d: dict, requests: int) -> tuple[dict, list[str]]:
    m = {}
    for key, path in (("rate", ("throughput", "msgs_per_sec")), ("p50_ns", ("latency", "percentiles_ns", "50"))):
        v = num(dig(d, *path))
        if v is not None:
            m[key] = v
    status = dig(d, "grpc", "status")
    errs = []
    if not isinstance(status, dict):
        errs.append("no grpc.status in its JSON")
    else:
        bad = {k: n for k, n in status.items() if k != "OK" and n}
        if bad:
            errs.append("failed calls: " + ", ".join(f"{k} {n}" for k, n in sorted(bad.items())))
        if status.get("OK") != requests:
            errs.append(f"{status.get('OK')} of {requests} calls OK")
    return m, errs


def read_ghz(d: dict, requests: int) -> tuple[dict, list[str]]:
    m = {}
    if num(d.get("rps")) is not None:
        m["rate"] = float(d["rps"])
    for p in d.get("latencyDistribution") or []:
        if isinstance(p, dict) and p.get("percentage") == 50 and num(p.get("latency")) is not None:
            m["p50_ns"] = float(p["latency"])
    status = d.get("statusCodeDistribution") or {}
    errs = []
    bad = {k: n for k, n in status.items() if k != "OK" and n}
    if bad:
        errs.append("failed calls: " + ", ".join(f"{k} {n}" for k, n in sorted(bad.items())))
    if status.get("OK") != requests:
        errs.append(f"{status.get('OK')} of {requests} calls OK")
    return m, errs


READERS = {"h2load": read_h2load, "msgbench": read_msgbench, "old": read_msgbench, "ghz": read_ghz}


class GrpcCeiling(Suite):
    script = "run_grpc_ceiling.py"
    title = "msgbench gRPC at the HTTP/2 ceiling: against h2load and ghz"
    description = "Unary gRPC against grpc-go's helloworld Greeter: msgbench vs h2load (and ghz, an older msgbench)."
    default_rounds = None  # 5, or 2 with --quick
    rounds_help = "default 5; 2 with --quick"
    default_out = "RESULTS-grpc-ceiling.md"
    binaries = ("msgbench", "ref")
    tool_binary = {}
    shown_names = {"msgbench": "target/release/msgbench", "ref": "bench/ref/ref", "old": "old/msgbench", "h2load": "h2load", "ghz": "ghz"}
    needs_nats = False
    keep_failed_exit = False  # every call must succeed
    hidden_flags = ("out", "timeout", "no_build", "quick", "old")

    @classmethod
    def add_arguments(cls, p):
        p.add_argument("--requests", type=int, default=None, help="calls per run at 10 and more in flight, a fifth of them at 1 (default 100000; 20000 with --quick)")
        p.add_argument("--in-flight", default="1,10,50", help="comma-separated calls outstanding, one case each (default 1,10,50)")
        p.add_argument("--quick", action="store_true", help="a quick look: 2 rounds of 20000 calls")
        p.add_argument("--old", default=None, help="an older msgbench binary, run in every round as a fourth tool")

    @classmethod
    def check_arguments(cls, p, a):
        if a.rounds is None:
            a.rounds = 2 if a.quick else 5
        if a.requests is None:
            a.requests = 20_000 if a.quick else 100_000
        try:
            a.in_flight = ",".join(str(int(x)) for x in a.in_flight.split(","))
        except ValueError:
            p.error(f"--in-flight {a.in_flight}: not a comma-separated list of numbers")
        if a.requests < 5 or min(int(x) for x in a.in_flight.split(",")) < 1:
            p.error("--requests must be at least 5 and every --in-flight positive")

    def requests(self, case) -> int:
        """At 1 in flight every call waits for the one before, so a fifth of the calls
        take about as long as the full count at 10 or more."""
        return self.args.requests // 5 if case.in_flight == 1 else self.args.requests

    def make_cases(self):
        tools = TOOLS + (("old",) if self.args.old else ())
        return [Case(f"if{n}", f"unary, {n} in flight", tools, in_flight=n) for n in (int(x) for x in self.args.in_flight.split(","))]

    def build(self):
        super().build()
        if self.args.old:
            self.provide("old", *build.executable(self.args.old, "--old"))
        for tool, hint in (("h2load", "Debian's nghttp2-client"), ("ghz", "github.com/bojand/ghz")):
            path = shutil.which(tool)
            self.provide(tool, path, "" if path else f"not found on PATH ({hint})")
        self.frame = self.workdir / "req.bin"
        self.frame.write_bytes(FRAME)

    def runnable(self):
        return self.available("ref") and any(self.available(t) for t in ("h2load", "msgbench", "old", "ghz"))

    def server_for(self, case):
        return self.server or self.start_server(Greeter(self.bins["ref"], self.workdir))

    def json_file(self, case, tool):
        return self.workdir / "msgbench-grpc.json" if tool in ("msgbench", "old") else None

    def command(self, case, tool):
        addr = self.server.addr if self.server is not None else "127.0.0.1:PORT"
        n, c = str(self.requests(case)), str(case.in_flight)
        if tool in ("msgbench", "old"):
            return [
                self.bin(tool), "grpc", "--server", f"http://{addr}", "--proto", PROTO, "--call", CALL, "--data", DATA,
                "--clients", "1", "--connections", "1", "--in-flight", c, "--requests", n, "--no-progress",
                "--json", str(self.json_file(case, tool)),
            ]  # fmt: skip
        if tool == "h2load":
            return [
                self.bin("h2load"), "-n", n, "-c", "1", "-m", c, "-H", "content-type: application/grpc", "-H", "te: trailers",
                "-d", str(self.workdir / "req.bin"), f"http://{addr}/{CALL}",
            ]  # fmt: skip
        return [
            self.bin("ghz"), "--insecure", "--proto", PROTO, "--call", CALL.replace("/", "."), "-d", DATA,
            "-c", c, "--connections", "1", "-n", n, "-O", "json", addr,
        ]  # fmt: skip

    def execute(self, case, tool, cmd, sample_rss):
        before = self.server.cpu_seconds()
        res = super().execute(case, tool, cmd, sample_rss)
        after = self.server.cpu_seconds()
        if tool == "h2load" and res.data is None:
            # h2load prints text, not JSON: its summary is parsed here.
            res.data = parse_h2load((self.workdir / "child.out").read_text(errors="replace"))
            if res.data is not None and res.error.startswith("no JSON result"):
                res.error = ""
                res.ok = True
        if before is not None and after is not None:
            res.metrics["server_us"] = (after - before) * 1e6 / self.requests(case)
        return res

    def metrics(self, case, tool, run):
        """rate (requests/s, the tool's own), client_us (CPU per call), p50_ns (msgbench, ghz),
        mean_ns (h2load)."""
        m, _ = READERS[tool](run.data, self.requests(case))
        m["client_us"] = run.cpu_s * 1e6 / self.requests(case)
        return m

    def required(self, case, tool):
        return ("rate",)

    def check(self, case, tool, run):
        return READERS[tool](run.data, self.requests(case))[1]

    def describe(self, case, tool, run):
        m = run.metrics
        lat = f"mean {fmt_ms(m.get('mean_ns'))}" if tool == "h2load" else f"p50 {fmt_ms(m.get('p50_ns'))}"
        return f"{fmt_rate(m.get('rate'))} req/s, client CPU {fmt_us(m.get('client_us'))}/call, server CPU {fmt_us(m.get('server_us'))}/call, {lat}"

    def exit_status(self):
        if self.errored:
            for e in self.errored:
                log(f"!! {e}")
            return 1
        return 0

    # ----- the report

    def facts(self):
        from benchkit import env
        from benchkit.proc import capture

        f = env.machine()
        f["grpc-go (the Greeter)"] = env.go_module_version("google.golang.org/grpc")
        f["h2load"] = (capture([self.bins["h2load"], "--version"]) or "?").strip() if "h2load" in self.bins else "unavailable"
        if "ghz" in self.bins:
            v = (capture([self.bins["ghz"], "--version"]) or "?").strip()
            # A `go install` build has no version stamped in it.
            f["ghz"] = v if v != "dev" else "dev (a build that names no version)"
        else:
            f["ghz"] = "unavailable"
        f.update(env.toolchains())
        f["msgbench commit"] = env.commit_label()
        return f

    def intro(self):
        a = self.args
        return [
            f"{self.generated_by()} One `ref greeter` on 127.0.0.1 (grpc-go's helloworld Greeter, `bench/ref/greeter.go`); "
            f"every client makes closed-loop unary calls of `{CALL}` with `{DATA}` on one HTTP/2 connection (plaintext): "
            f"{a.requests:,} calls per run at 10 and more in flight, {a.requests // 5:,} at 1. Figures are medians over "
            "the rounds (min–max, runs); ratios are the median of per-round ratios. The tools run in a rotating order "
            "(h2load, msgbench, ghz; msgbench, ghz, h2load; ...). This is a benchmark, not a test; the machine is "
            "small and shared, so single figures move by 10–20 % from run to run: read the ratios.",
            "h2load (nghttp2) posts the 12-byte gRPC frame of the request with `content-type: application/grpc` and "
            "`te: trailers`: it is the ceiling of an HTTP/2 client. It does not read the gRPC status in the trailers "
            "(only the HTTP status, checked here) and reports a mean time per request, not percentiles. msgbench "
            "decodes every response and counts its gRPC status; ghz too.",
        ]

    def body(self):
        out = ["## Targets (msgbench against h2load)", ""]
        rows = []
        for case in self.cases:
            k, n = case.key, case.in_flight
            rps = self.median_ratio(k, "msgbench", "h2load", "rate")
            cpu = self.median_ratio(k, "msgbench", "h2load", "client_us")
            rows.append([f"requests/s at {n} in flight", fmt_x(rps), verdict(rps, TARGET_RPS, True) if n in (1, 50) else "(context)"])
            rows.append([f"client CPU per call at {n} in flight", fmt_x(cpu), verdict(cpu, TARGET_CPU, False)])
            if n == 1:
                p50 = self.median_ratio(k, "msgbench", "h2load", "p50_ns", "mean_ns")
                rows.append(["P50 at 1 in flight / h2load's mean time per request", fmt_x(p50), verdict(p50, TARGET_P50, False)])
        out += [md_table(["target", "msgbench / h2load", "verdict"], rows), ""]

        out += [
            "## Medians",
            "",
            "Requests/s is each tool's own figure. Client CPU is user + system time of the client process "
            "(`os.wait4`, start-up included), server CPU that of the Greeter during the run (`/proc/PID/stat`), "
            "both divided by the calls. Latency: P50 for msgbench and ghz, the mean time per request for h2load.",
            "",
        ]
        tools = [t for t in self.cases[0].tools] if self.cases else []
        for case in self.cases:
            k = case.key
            out += [f"### {case.title}", ""]
            rows = []
            for what, name, fmt in (
                ("rate", "requests/s", fmt_rate),
                ("client_us", "client CPU per call", fmt_us),
                ("server_us", "server CPU per call", fmt_us),
                ("p50_ns", "latency P50", fmt_ms),
                ("mean_ns", "mean time per request", fmt_ms),
            ):
                row = [name]
                for t in tools:
                    has = any(r is not None and what in r.metrics for r in self.runs(k, t))
                    row.append(self.cell(k, t, what, fmt) if has or not self.available(t) else "—")
                for t in tools[1:]:
                    row.append(fmt_x(self.median_ratio(k, t, "h2load", what)) if what not in ("p50_ns", "mean_ns") else
                               fmt_x(self.median_ratio(k, t, "h2load", "p50_ns", "mean_ns")) if what == "p50_ns" else "—")
                rows.append(row)
            header = [""] + [NAMES[t] for t in tools] + [f"{NAMES[t]} / h2load" for t in tools[1:]]
            out += [md_table(header, rows), ""]
            if "old" in tools:
                r = self.median_ratio(k, "msgbench", "old", "rate")
                c = self.median_ratio(k, "msgbench", "old", "client_us")
                out += [f"msgbench against the old msgbench, median of per-round ratios: requests/s {fmt_x(r)}, client CPU per call {fmt_x(c)}.", ""]
        return out

    def extra_notes(self):
        notes = []
        if self.args.old:
            notes.append("old msgbench: the binary given with --old (shown as old/msgbench)")
        return notes


if __name__ == "__main__":
    if not (REPO / PROTO).is_file() or not BENCH.is_dir():
        log(f"{PROTO} not found in the repository")
        raise SystemExit(2)
    GrpcCeiling.main()
