#!/usr/bin/env python3
"""Regression check: an old msgbench binary against a new one, the same commands side by side.

A benchmark, not a test: the figures never decide the exit status; it is 1 only when a run
failed or reported errors (the report says which), 2 when it cannot start.

    python3 bench/regress.py --old PATH [--new PATH | --no-build] [--rounds 3]
                             [--old-label TEXT] [--new-label TEXT]
                             [--cases pub,pubsub,latency,request,js,grpc]
                             [--pub-msgs 2000000] [--pubsub-msgs 1000000]
                             [--latency-rate 1000] [--latency-duration 5s] [--requests 20000]
                             [--js-msgs 100000] [--js-storage memory|file]
                             [--grpc-requests 20000] [--in-flight 100]
                             [--out bench/RESULTS-regress.md] [--timeout 120]

Without --new, the new binary is this checkout's (`cargo build --release --locked`, unless
--no-build). Every case gets a nats-server of its own (with JetStream for js; none for grpc,
where msgbench serves its own log service in process). One run of the old binary warms the
server up; then the two take turns on it, round after round, the one that goes first
alternating. Reported: the median of each figure for old and new, and new / old (the median of
the per-round ratios).
"""

from __future__ import annotations

from pathlib import Path

from benchkit import REPO, build, env
from benchkit.fmt import fmt_ns, fmt_rate, fmt_x, go_duration, md_table, parse_duration
from benchkit.proc import capture, dig, log, num
from benchkit.server import NatsServer, nats_server_version
from benchkit.suite import Case, Suite

ALL_CASES = ("pub", "pubsub", "latency", "request", "js", "grpc")


def fmt_cpu(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f} ns"


# The figures of each case: metric key, name, format, whether higher is better.
FIGURES = {
    "pub": [("rate", "msgs/s", fmt_rate, True), ("cpu_ns", "client CPU per message", fmt_cpu, False)],
    "pubsub": [("sub_rate", "subscriber msgs/s", fmt_rate, True)],
    "latency": [("p50", "P50 (corrected)", fmt_ns, False), ("p99", "P99 (corrected)", fmt_ns, False)],
    "request": [("rate", "requests/s", fmt_rate, True), ("p50", "P50", fmt_ns, False), ("p99", "P99", fmt_ns, False)],
    "js": [("rate", "acked msgs/s", fmt_rate, True)],
    "grpc": [("rate", "requests/s", fmt_rate, True), ("p50", "P50", fmt_ns, False), ("p99", "P99", fmt_ns, False)],
}

# Where each figure is in msgbench's JSON result.
FIELDS = {
    "rate": ("throughput", "msgs_per_sec"),
    "sub_rate": ("by_role", "sub", "msgs_per_sec"),
    "msgs": ("throughput", "msgs"),
    "p50": ("latency", "percentiles_ns", "50"),
    "p99": ("latency", "percentiles_ns", "99"),
    "lost": ("delivery", "lost"),
}


def make_case(key: str, sides: tuple[str, ...], **params) -> Case:
    """One case of this suite, by key; its title from its parameters."""
    titles = {
        "pub": lambda p: f"pub, {p['msgs']:,} msgs of 16 B",
        "pubsub": lambda p: f"pubsub, 1 publisher + 1 subscriber, {p['msgs']:,} msgs of 16 B",
        "latency": lambda p: f"latency, {p['rate']:,} msgs/s for {go_duration(p['seconds'])}",
        "request": lambda p: f"request/reply, {p['msgs']:,} requests",
        "js": lambda p: f"JetStream async publish, {p['msgs']:,} msgs of 128 B, {p['storage']} storage",
        "grpc": lambda p: f"gRPC unary, {p['msgs']:,} requests, {p['in_flight']} in flight",
    }
    return Case(key, titles[key](params), sides, **params)


class Regress(Suite):
    script = "regress.py"
    title = "msgbench regression check: old binary against new"
    description = "Old msgbench binary against new: the same cases, interleaved, medians and new/old ratios."
    default_rounds = 3
    default_out = "RESULTS-regress.md"
    sides = ("old", "new")  # the baseline first; ratios are sides[1] / sides[0]
    binaries = sides
    needs_nats = True
    hidden_flags = ("out", "timeout", "no_build", "old", "new", "old_label", "new_label")

    @classmethod
    def add_arguments(cls, p):
        p.add_argument("--old", required=True, metavar="PATH", help="the old msgbench binary (the baseline)")
        p.add_argument("--new", metavar="PATH", help="the new msgbench binary (default: this checkout's, built with cargo)")
        p.add_argument("--no-build", action="store_true", help=f"without --new: skip `{build.CARGO_SHOWN}`, use the existing binary")
        p.add_argument("--old-label", default="", help="what the old binary is, for the report (a commit, a release)")
        p.add_argument("--new-label", default="", help="what the new binary is, for the report")
        p.add_argument("--cases", default=",".join(ALL_CASES), help=f"the cases to run, comma separated (default {','.join(ALL_CASES)})")
        p.add_argument("--pub-msgs", type=int, default=2_000_000, help="messages per pub run (default 2000000)")
        p.add_argument("--pubsub-msgs", type=int, default=1_000_000, help="messages per pubsub run (default 1000000)")
        p.add_argument("--latency-rate", type=int, default=1000, help="rate of the latency runs, msgs/s (default 1000)")
        p.add_argument("--latency-duration", type=parse_duration, default="5s", help="length of every latency run (default 5s)")
        p.add_argument("--requests", type=int, default=20_000, help="requests per request/reply run (default 20000)")
        p.add_argument("--js-msgs", type=int, default=100_000, help="messages per JetStream run (default 100000)")
        p.add_argument("--js-storage", choices=("memory", "file"), default="memory", help="the JetStream case's stream storage (default memory)")
        p.add_argument("--grpc-requests", type=int, default=20_000, help="calls per gRPC run (default 20000)")
        p.add_argument("--in-flight", type=int, default=100, help="gRPC calls outstanding (default 100)")

    @classmethod
    def check_arguments(cls, p, a):
        unknown = set(a.cases.split(",")) - set(ALL_CASES)
        if unknown:
            p.error(f"--cases: unknown {', '.join(sorted(unknown))} (known: {', '.join(ALL_CASES)})")
        counts = (a.pub_msgs, a.pubsub_msgs, a.latency_rate, a.requests, a.js_msgs, a.grpc_requests, a.in_flight)
        if min(counts) < 1 or a.latency_duration <= 0:
            p.error("message counts, rates, durations and --in-flight must be positive")
        if a.rounds is not None and a.rounds < 3:
            log(f"note: --rounds {a.rounds}: medians of fewer than 3 rounds say little")

    def make_cases(self):
        a, s = self.args, self.sides
        every = {
            "pub": make_case("pub", s, msgs=a.pub_msgs),
            "pubsub": make_case("pubsub", s, msgs=a.pubsub_msgs),
            "latency": make_case("latency", s, rate=a.latency_rate, seconds=a.latency_duration),
            "request": make_case("request", s, msgs=a.requests),
            "js": make_case("js", s, msgs=a.js_msgs, storage=a.js_storage),
            "grpc": make_case("grpc", s, msgs=a.grpc_requests, in_flight=a.in_flight),
        }
        wanted = a.cases.split(",")
        return [case for key, case in every.items() if key in wanted]

    # ----- binaries

    def build(self):
        a = self.args
        self.provide("old", *build.executable(a.old, "--old"))
        self.provide("new", *(build.executable(a.new, "--new") if a.new else build.msgbench(a.no_build)))
        self.binary_facts = {"old": self.describe_binary("old", a.old, a.old_label)}
        if a.new:
            self.binary_facts["new"] = self.describe_binary("new", a.new, a.new_label)
        else:
            self.binary_facts["new"] = self.describe_binary("new", "target/release/msgbench", a.new_label or f"this checkout, {env.commit_label()}")

    def version(self, side: str) -> str:
        return (capture([self.bins[side], "--version"]) if side in self.bins else None) or "version unknown"

    def describe_binary(self, side: str, path: str, label: str) -> str:
        """A binary in the facts: its path relative to the checkout when inside it, else only its
        file name (a report never names a machine's folders), what it is, its version."""
        p = Path(path).resolve()
        shown = str(p.relative_to(REPO)) if p.is_relative_to(REPO) else p.name
        return f"{shown}: {label} ({self.version(side)})" if label else f"{shown} ({self.version(side)})"

    def builds_shown(self):
        return "" if self.args.new else build.CARGO_SHOWN

    def runnable(self):
        return all(self.available(s) for s in self.sides)

    def show(self, cmd):
        # Both sides run the same command line; the facts say which binary is which.
        names = {path: "msgbench" for path in self.bins.values()}
        return super().show([names.get(cmd[0], cmd[0]), *cmd[1:]])

    def shown_commands(self, case):
        return {case.title: self.show(self.command(case, self.sides[-1]))}

    # ----- cases, commands, figures

    def server_for(self, case):
        # A fresh server for every case, so that one case's leftovers (a stream, a slow
        # consumer) cannot weigh on the next; gRPC needs none.
        if case.key == "grpc":
            return self.start_server(None)
        return self.start_server(NatsServer(self.nats_bin, self.workdir, jetstream=case.key == "js"), f"server: {case.title}")

    def warm_up(self, case):
        # The first run on a fresh server is often the slowest: one run of the baseline, not
        # counted, so that the first round does not start cold.
        label = f"[{case.title}] warm-up"
        res = self.run_one(case, self.sides[0], label)
        if res is not None:
            log(f"{label} {self.sides[0]}: " + (self.describe(case, self.sides[0], res) if res.ok else f"FAILED: {res.error}"))

    def json_file(self, case, tool):
        return self.workdir / "result.json"

    def timeout(self, case, tool):
        seconds = getattr(case, "seconds", 0)
        return max(self.args.timeout, seconds + 60) if seconds else self.args.timeout

    def command(self, case, tool):
        b = self.bin(tool)
        url = self.server.url if self.server is not None else None
        at = ["--server", url] if url else []
        tail = ["--json", str(self.json_file(case, tool)), "--no-progress"]
        how = {
            "pub": lambda: ["pub", *at, "--msgs", str(case.msgs), "--size", "16"],
            "pubsub": lambda: ["pubsub", *at, "--msgs", str(case.msgs), "--size", "16"],
            "latency": lambda: ["latency", *at, "--rate", str(case.rate), "--duration", go_duration(case.seconds)],
            "request": lambda: ["request", *at, "--msgs", str(case.msgs)],
            "js": lambda: ["js", "pub", *at, "--mode", "async", "--msgs", str(case.msgs), "--size", "128", "--purge", "--storage", case.storage],
            "grpc": lambda: ["grpc", "--requests", str(case.msgs), "--in-flight", str(case.in_flight)],
        }[case.key]
        return [b, *how(), *tail]

    def metrics(self, case, tool, run):
        d = run.data
        m = {key: num(dig(d, *FIELDS[key])) for key, *_ in FIGURES[case.key] if key in FIELDS}
        if case.key == "pub":
            msgs = num(dig(d, *FIELDS["msgs"])) or case.msgs
            m["cpu_ns"] = run.cpu_s * 1e9 / msgs
        if case.key == "pubsub":
            m["lost"] = num(dig(d, *FIELDS["lost"]))
        return {k: v for k, v in m.items() if v is not None}

    def required(self, case, tool):
        return tuple(key for key, *_ in FIGURES[case.key])

    def check(self, case, tool, run):
        d = run.data
        if case.key == "js" and dig(d, "jetstream", "reconciled") is not True:
            return ["jetstream.reconciled is not true"]
        if case.key == "grpc":
            status = dig(d, "grpc", "status")
            failed = {k: n for k, n in status.items() if k != "OK" and n} if isinstance(status, dict) else {}
            if failed:
                return ["failed calls: " + ", ".join(f"{k} {n}" for k, n in sorted(failed.items()))]
        return []

    def describe(self, case, tool, run):
        return ", ".join(f"{name} {fmt(run.metrics.get(key))}" for key, name, fmt, _ in FIGURES[case.key])

    def exit_status(self):
        if self.failures or self.errored:
            log(f"!! {len(self.failures)} runs failed; see the report's notes")
            return 1
        return 0

    # ----- the report

    def facts(self):
        f = env.machine()
        f["nats-server"] = nats_server_version(self.nats_bin)
        for side in self.sides:
            f[f"{side} binary"] = self.binary_facts[side]
        return f

    def intro(self):
        a, (base, other) = self.args, self.sides
        return [
            f"{self.generated_by()} Every case runs on a nats-server of its own"
            + (" (with JetStream for the JetStream case)" if any(c.key == "js" for c in self.cases) else "")
            + ("; gRPC needs none: msgbench serves its own log service in process" if any(c.key == "grpc" for c in self.cases) else "")
            + ". One run of the baseline warms each server up and is not counted; then, in every round, both binaries run "
            f"the same command back to back, the one that goes first alternating from round to round. Figures are "
            f"medians over {a.rounds} round{'s' if a.rounds != 1 else ''} (min–max in parentheses); {other} / {base} is the median of the per-round "
            f"ratios. Client CPU is user + system time of the msgbench process (`os.wait4`) divided by the messages. "
            "This is a benchmark, not a test: the machine's noise shows in the min–max ranges, and only a ratio well "
            "outside them means anything."
        ]

    def body(self):
        base, other = self.sides
        rows = []
        for case in self.cases:
            for key, name, fmt, higher in FIGURES[case.key]:
                ratio = self.median_ratio(case.key, other, base, key)
                rows.append([case.title, name, self.cell(case.key, base, key, fmt), self.cell(case.key, other, key, fmt), fmt_x(ratio), "higher" if higher else "lower"])
        out = ["## Medians", ""]
        out += [md_table(["case", "figure", base, other, f"{other} / {base}", "better"], rows), ""]
        out += ["## Each round", ""]
        rows = []
        for case in self.cases:
            for i, order in enumerate(self.orders.get(case.key, [])):
                row = [case.title, str(i + 1), ", ".join(order)]
                for side in self.sides:
                    runs = self.runs(case.key, side)
                    run = runs[i] if i < len(runs) else None
                    row.append(self.describe(case, side, run) if run is not None else "failed")
                rows.append(row)
        out += [md_table(["case", "round", "order", base, other], rows), ""]
        return out


if __name__ == "__main__":
    Regress.main()
