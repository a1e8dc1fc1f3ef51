#!/usr/bin/env python3
"""Side-by-side gRPC benchmark: `msgbench grpc` vs. a ghz-like grpc-go reference.

A benchmark, not a test: its exit status says nothing about performance; never run it as a
timed test in CI. It does exit 1 if a run reported failed calls (or gave no usable result),
because then its figures cannot be compared.

    python3 bench/run_grpc.py [--rounds 5] [--requests 200000] [--in-flight 100] [--size 128]
                              [--quick] [--only ref|msgbench]
                              [--out bench/RESULTS-grpc.md] [--timeout 120] [--no-build]

Against one `msgbench grpc serve`: the same closed-loop unary load from `ref grpc` and from
`msgbench grpc`, requests/s, client and server CPU per request (bench/README.md).
"""

from __future__ import annotations

import base64
import json

from benchkit import REPO, env
from benchkit.fmt import fmt_ms, fmt_rate, fmt_s, fmt_us, fmt_x, md_table, verdict
from benchkit.proc import dig, log, num
from benchkit.server import GrpcServer
from benchkit.suite import Case, Suite

# Targets: msgbench / ref.
TARGET_RPS = 1.2  # requests per second, at least
TARGET_CPU = 0.5  # client CPU per request, at most

# The service and the call, relative to the repository (the tools run there).
PROTO = "proto/msgbench/log/v1/log.proto"
IMPORT_DIR = "proto"
CALL = "msgbench.log.v1.Log/Append"
STREAM = "bench"

TOOLS = ("ref", "msgbench")

# The canonical gRPC status code names (what both tools report).
STATUS_CODES = frozenset(
    """OK CANCELLED UNKNOWN INVALID_ARGUMENT DEADLINE_EXCEEDED NOT_FOUND ALREADY_EXISTS
    PERMISSION_DENIED RESOURCE_EXHAUSTED FAILED_PRECONDITION ABORTED OUT_OF_RANGE
    UNIMPLEMENTED INTERNAL UNAVAILABLE DATA_LOSS UNAUTHENTICATED""".split()
)


def request_data(size: int) -> str:
    """The request of every call, as JSON: stream "bench" and `size` bytes of record (base64)."""
    record = bytes(i % 4 for i in range(size))
    return json.dumps({"stream": STREAM, "data": base64.b64encode(record).decode()}, separators=(",", ":"))


def count_map(v) -> dict[str, int] | None:
    """A JSON object of counts (name -> number), else None."""
    if not isinstance(v, dict) or not all(isinstance(k, str) and num(n) is not None for k, n in v.items()):
        return None
    return {k: int(n) for k, n in v.items()}


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


def failed_calls(counts: dict[str, int], ok: str | None = "OK") -> list[str]:
    failed = {k: n for k, n in counts.items() if k != ok and n}
    return ["failed calls: " + ", ".join(f"{k} {n}" for k, n in sorted(failed.items()))] if failed else []


def read_ref(d: dict, requests: int) -> tuple[dict, list[str], list[str]]:
    """The reference's figures, what its JSON lacks, and the errors it reports."""
    m, missing = {}, []
    for key, field in (("rate", "rps"), ("seconds", "seconds"), ("ok", "ok"), ("p50_ns", "p50_ns"), ("p99_ns", "p99_ns"), ("self_cpu_s", "cpu_seconds")):
        v = num(dig(d, field))
        if v is not None:
            m[key] = v
        elif key in ("rate", "ok"):
            missing.append(field)
    errors = count_map(dig(d, "errors"))
    if errors is None:
        missing.append("errors")
    errs = failed_calls(errors or {}, ok=None)
    if "ok" in m and int(m["ok"]) != requests:
        errs.append(f"{int(m['ok'])} of {requests} calls OK")
    return m, missing, errs


def read_msgbench(d: dict, requests: int) -> tuple[dict, list[str], list[str]]:
    """msgbench's figures, what its JSON lacks, and the errors it reports. The status counts are
    read from grpc.status, else from wherever the JSON has an object of status codes."""
    m, missing = {}, []
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
    where = "grpc.status" if status is not None else None
    if status is None and (found := find_status_map(d)) is not None:
        where, status = found
    if status is None:
        missing.append("grpc.status (no object of status codes anywhere)")
    else:
        m["status_at"] = where
        m["ok"] = status.get("OK", 0)
        errs += failed_calls(status)
        if m["ok"] != requests:
            errs.append(f"{m['ok']} of {requests} calls OK ({where})")
    template_errors = num(dig(d, "grpc", "template_errors"))
    if template_errors:
        errs.append(f"grpc.template_errors {int(template_errors)}")
    other = {k: n for k, n in (count_map(dig(d, "errors")) or {}).items() if n}
    if other:
        errs.append("errors: " + ", ".join(f"{k} {n}" for k, n in sorted(other.items())))
    return m, missing, errs


class Grpc(Suite):
    script = "run_grpc.py"
    title = "msgbench gRPC side-by-side benchmark"
    description = "Side-by-side gRPC benchmark of msgbench grpc vs a ghz-like grpc-go client."
    default_rounds = None  # 5, or 2 with --quick
    rounds_help = "default 5; 2 with --quick"
    default_out = "RESULTS-grpc.md"
    shown_names = {"msgbench": "target/release/msgbench", "ref": "bench/ref/ref"}
    needs_nats = False
    keep_failed_exit = False  # every call must succeed
    hidden_flags = ("out", "timeout", "no_build", "quick")

    @classmethod
    def add_arguments(cls, p):
        p.add_argument("--requests", type=int, default=None, help="calls per run (default 200000; 20000 with --quick)")
        p.add_argument("--in-flight", type=int, default=100, help="calls outstanding: ref's -concurrency and msgbench's --in-flight (default 100)")
        p.add_argument("--size", type=int, default=128, help="bytes of record data in every request (default 128)")
        p.add_argument("--quick", action="store_true", help="a quick look: 2 rounds of 20000 calls")
        p.add_argument("--only", choices=TOOLS, default=None, help="run one tool only (the report is then written only with --out)")

    @classmethod
    def check_arguments(cls, p, a):
        if a.rounds is None:
            a.rounds = 2 if a.quick else 5
        if a.requests is None:
            a.requests = 20_000 if a.quick else 200_000
        if min(a.requests, a.in_flight) < 1:
            p.error("--requests and --in-flight must be positive")
        if a.size < 0:
            p.error("--size must be >= 0")

    @classmethod
    def default_out_path(cls, a):
        return None if a.only else super().default_out_path(a)

    def __init__(self, args):
        super().__init__(args)
        self.data = request_data(args.size)

    def make_cases(self):
        a = self.args
        return [Case("grpc", f"unary, {a.in_flight} in flight", TOOLS if a.only is None else (a.only,))]

    def run(self):
        if not (REPO / PROTO).is_file():
            log(f"{PROTO} not found in the repository")
            return 2
        return super().run()

    def runnable(self):
        # msgbench is also the server, so nothing runs without it.
        return self.available("msgbench") and self.available(self.args.only or "msgbench")

    def server_for(self, case):
        return self.server or self.start_server(GrpcServer(self.bins["msgbench"], self.workdir))

    def json_file(self, case, tool):
        return self.workdir / "msgbench-grpc.json" if tool == "msgbench" else None

    def command(self, case, tool):
        a = self.args
        addr = self.server.addr if self.server is not None else "127.0.0.1:PORT"
        if tool == "msgbench":
            return [
                self.bin("msgbench"), "grpc", "--server", f"http://{addr}", "--proto", PROTO, "-I", IMPORT_DIR, "--call", CALL,
                "--data", self.data, "--clients", "1", "--connections", "1", "--in-flight", str(a.in_flight),
                "--requests", str(a.requests), "--no-progress", "--json", str(self.json_file(case, tool)),
            ]  # fmt: skip
        return [
            self.bin("ref"), "grpc", "-addr", addr, "-proto", PROTO, "-import", IMPORT_DIR, "-call", CALL, "-data", self.data,
            "-concurrency", str(a.in_flight), "-connections", "1", "-n", str(a.requests),
        ]  # fmt: skip

    def execute(self, case, tool, cmd, sample_rss):
        # The server's CPU time during the client's run: what each client costs it.
        before = self.server.cpu_seconds()
        res = super().execute(case, tool, cmd, sample_rss)
        after = self.server.cpu_seconds()
        if before is not None and after is not None:
            res.metrics["server_us"] = (after - before) * 1e6 / self.args.requests
        return res

    def read(self, tool, run):
        return (read_msgbench if tool == "msgbench" else read_ref)(run.data, self.args.requests)

    def metrics(self, case, tool, run):
        """rate (requests/s, the tool's own), client_us and server_us (CPU per request), wall
        (client process, start to exit), p50_ns, p99_ns."""
        m, missing, _ = self.read(tool, run)
        notes = [f"{tool}'s JSON lacks {', '.join(missing)}"] if missing else []
        if m.get("status_at") not in (None, "grpc.status"):
            notes.append(f"msgbench's JSON has no grpc.status; its status counts were read from {m['status_at']}")
        self.notes += [n for n in notes if n not in self.notes]
        m["client_us"] = run.cpu_s * 1e6 / self.args.requests
        m["wall"] = run.wall_s
        return m

    def required(self, case, tool):
        return ("rate",)

    def check(self, case, tool, run):
        return self.read(tool, run)[2]

    def describe(self, case, tool, run):
        m = run.metrics
        return (
            f"{fmt_rate(m.get('rate'))} req/s in {run.wall_s:.3f} s, client CPU {fmt_us(m.get('client_us'))}/req, "
            f"server CPU {fmt_us(m.get('server_us'))}/req, p50 {fmt_ms(m.get('p50_ns'))}, p99 {fmt_ms(m.get('p99_ns'))}"
        )

    def exit_status(self):
        """1 when a run that should have run failed or reported failed calls, else 0."""
        tools = self.cases[0].tools
        expected = self.args.rounds * len(tools)
        done = sum(1 for t in tools for r in self.runs("grpc", t) if r is not None)
        if done == expected and not self.errored:
            return 0
        log(f"!! only {done} of {expected} runs completed without errors")
        for e in self.errored:
            log(f"!! {e}")
        return 1

    # ----- the report

    def facts(self):
        f = env.machine()
        f["grpc-go"] = env.go_module_version("google.golang.org/grpc")
        f["protocompile"] = env.go_module_version("github.com/bufbuild/protocompile")
        f.update(env.toolchains())
        f["msgbench commit"] = env.commit_label()
        return f

    def intro(self):
        a = self.args
        return [
            f"{self.generated_by()} One `msgbench grpc serve` on 127.0.0.1; "
            + ("both clients make the same" if a.only is None else f"only {a.only} ran, making")
            + f" closed-loop unary calls to it: {a.requests:,} calls of `{CALL}`, each a {a.size} B record for the stream "
            f"`{STREAM}`, at most {a.in_flight} outstanding, on one HTTP/2 connection (plaintext). Figures are medians "
            "over the rounds (min–max in parentheses); ratios are the median of per-round ratios (each round runs "
            "the two tools back to back, the reference first in odd rounds, msgbench first in even ones). This is a "
            "benchmark, not a test.",
            "ghz itself is not used. The reference is `ref grpc` (`bench/ref/grpc.go`), a client written with "
            "grpc-go, as ghz is, that behaves as ghz does: closed-loop workers (here as many as the in-flight "
            "limit) sharing one connection, each taking the next call from a shared counter; the request is a "
            "dynamic message built once from the JSON with the .proto parsed at run time (protocompile, "
            "dynamicpb), every response a fresh dynamic message; every call's duration is kept in memory and "
            "the percentiles come from sorting them.",
        ]

    def body(self):
        key = "grpc"
        rps, cpu = self.median_ratio(key, "msgbench", "ref", "rate"), self.median_ratio(key, "msgbench", "ref", "client_us")
        out = ["## Targets", ""]
        out += [
            md_table(
                ["target", "measured", "verdict"],
                [
                    ["requests/s, msgbench / ref", fmt_x(rps), verdict(rps, TARGET_RPS, True)],
                    ["client CPU per request, msgbench / ref", fmt_x(cpu), verdict(cpu, TARGET_CPU, False)],
                ],
            ),
            "",
        ]
        out += ["## Medians", ""]
        out += [
            "Requests/s is each tool's own figure: successful calls per second (ref: `rps`; msgbench: "
            "`throughput.msgs_per_sec`). Wall time is the client process's, start to exit. Client CPU is "
            "user + system time of the client process (`os.wait4`), server CPU that of the server process "
            "during the client's run (`/proc/PID/stat`), both divided by the requests. P50 and P99 are each "
            "tool's own latency figures, for context.",
            "",
        ]
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
                    name, self.cell(key, "ref", what, fmt), self.cell(key, "msgbench", what, fmt),
                    fmt_x(self.median_ratio(key, "msgbench", "ref", what)), fmt_x(self.ratio_of_medians(key, "msgbench", "ref", what)),
                ]
            )  # fmt: skip
        header = ["", "ref (grpc-go, ghz-like)", "msgbench", "msgbench / ref, median of per-round ratios", "ratio of the medians"]
        out += [md_table(header, rows), ""]

        out += ["## Each round", ""]
        rows = []
        rps_ratios, cpu_ratios = self.ratios(key, "msgbench", "ref", "rate"), self.ratios(key, "msgbench", "ref", "client_us")
        for i, order in enumerate(self.orders.get(key, [])):
            row = [str(i + 1), ", ".join(order)]
            for tool in TOOLS:
                runs = self.runs(key, tool)
                run = runs[i] if i < len(runs) else None
                if run is None:
                    row += ["not run" if tool not in self.cases[0].tools else "failed", "", "", ""]
                    continue
                m = run.metrics
                row += [fmt_rate(m.get("rate")), fmt_s(run.wall_s), fmt_us(m.get("client_us")), fmt_us(m.get("server_us"))]
            at = lambda rs: fmt_x(rs[i]) if i < len(rs) else "n/a"  # noqa: E731
            row += [at(rps_ratios), at(cpu_ratios)]
            rows.append(row)
        header = [
            "round", "order", "ref req/s", "ref wall", "ref client CPU/req", "server CPU/req (ref)",
            "msgbench req/s", "msgbench wall", "msgbench client CPU/req", "server CPU/req (msgbench)",
            "req/s msgbench / ref", "client CPU msgbench / ref",
        ]  # fmt: skip
        out += [md_table(header, rows), ""]
        return out


if __name__ == "__main__":
    Grpc.main()
