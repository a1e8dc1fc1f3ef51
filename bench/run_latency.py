#!/usr/bin/env python3
"""Side-by-side latency benchmark: msgbench vs. a nats.go reference, and optionally vs.
latency-tests itself and an older msgbench, on a quiet machine or with cores kept busy.

A benchmark, not a test: its exit status says nothing about performance; never run it as a
timed test in CI.

    python3 bench/run_latency.py [--rounds 5] [--duration 10s] [--warmup 1s] [--requests 20000]
                                 [--rss-short 10s] [--rss-long 30s] [--rss-rate 100000]
                                 [--no-memory] [--cases lat1k,lat100k,req16]
                                 [--busy-poll auto[,on,off]] [--latency-tests PATH] [--old PATH]
                                 [--busy N] [--out bench/RESULTS-latency.md]
                                 [--timeout 120] [--no-build]

On one nats-server: end-to-end latency at 1,000 msgs/s (8 B) and 100,000 msgs/s (4 KiB),
closed-loop request/reply with `msgbench calibrate` for the machine's round-trip floor, and
the peak memory of a short and a long latency run (bench/README.md). --busy N keeps N cores
busy with shell spin loops while the cases run, as on a shared CI runner.
"""

from __future__ import annotations

import os
import re
import subprocess

from benchkit import REPO, build
from benchkit.fmt import fmt_ns, fmt_rate, fmt_size, fmt_x, go_duration, md_table, parse_duration, verdict
from benchkit.proc import Run, dig, log, num, run_child
from benchkit.suite import Case, Suite

# Latency ratios are msgbench (corrected) / ref: lower is better.
TARGET_LAT1K_P50 = 0.7
TARGET_LAT1K_P99 = 0.5
TARGET_LAT100K_P99 = 0.5
TARGET_REQ_RPS = 1.3
TARGET_REQ_FLOOR = 1.5  # msgbench request P50 / two-hop floor P50
TARGET_RSS_GROWTH = 1.10  # peak RSS of the long run / the short run
# msgbench's uncorrected percentiles / latency-tests' (issue 42), quiet or with cores busy.
TARGET_LT = {"p50": 1.0, "p99": 1.0}

ALL_CASES = ("lat1k", "lat100k", "req16")
BUSY_POLL = ("auto", "on", "off")
# The msgbench tool of each --busy-poll setting: the default keeps the plain name.
POLL_TOOL = {"auto": "msgbench", "on": "msgbench-on", "off": "msgbench-off"}
# Tools that are msgbench (this build or --old) running `latency`.
MSGBENCH_LATENCY = ("msgbench", "msgbench-on", "msgbench-off", "old")
TOOL_TITLE = {
    "msgbench": "msgbench",
    "msgbench-on": "msgbench --busy-poll on",
    "msgbench-off": "msgbench --busy-poll off",
    "old": "older msgbench (--old)",
    "lt": "latency-tests",
}

# A latency run takes its duration plus up to 5 s of draining; its time limit is at least its
# duration plus this.
DURATION_SLACK_S = 60.0

# Reported percentiles: our key, msgbench's percentiles_ns key, ref's JSON field, column title.
PERCENTILES = (
    ("p50", "50", "p50_ns", "P50"),
    ("p90", "90", "p90_ns", "P90"),
    ("p99", "99", "p99_ns", "P99"),
    ("p999", "99.9", "p999_ns", "P99.9"),
    ("max", "100", "max_ns", "max"),
)

REQUIRED = {"latency": ("p50", "p99"), "request": ("rps", "p50"), "calibrate": ("two_hop_p50",)}

# latency-tests logs each percentile as "<percentile>:   <Go duration>" on stderr.
LT_LINE = re.compile(r"(?:^|\s)(10|50|75|90|99|99\.9|99\.99|99\.999|99\.9999|99\.99999|100):\s+(\S+)\s*$")
LT_RATE = re.compile(r"Actual Msgs/Sec:\s+(\d+)")
GO_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}


def go_duration_ns(text: str) -> float | None:
    """A Go duration as Go prints it ("53µs", "1.02ms", "1m2.5s", "0s") in nanoseconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|μs|ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * GO_UNITS[u] for n, u in parts)


def parse_latency_tests(text: str) -> dict | None:
    """latency-tests' stderr as the figures a JSON result would hold; None without them."""
    out: dict = {}
    for line in text.splitlines():
        m = LT_LINE.search(line)
        if m and go_duration_ns(m.group(2)) is not None:
            out["p" + m.group(1).replace(".", "")] = go_duration_ns(m.group(2))
        r = LT_RATE.search(line)
        if r:
            out["actual_rate"] = float(r.group(1))
    return out if "p50" in out else None


def thread_count(pid: int) -> int | None:
    """The Threads: line of /proc/PID/status; None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def mode_of(case: Case, tool: str) -> str:
    return "calibrate" if tool == "calibrate" else case.mode


class Latency(Suite):
    script = "run_latency.py"
    title = "msgbench latency side-by-side benchmark"
    description = "Side-by-side latency and request/reply benchmark of msgbench vs nats.go."
    summary = (
        "Figures are medians over the rounds (min–max in parentheses); ratios are the median "
        "of per-round ratios (each round runs the tools back to back in a rotating order "
        "against the same server). Latency ratios compare msgbench's corrected figures "
        "(measured from the scheduled send time) with the reference's, which are measured "
        "from the actual send time like msgbench's uncorrected ones; lower is better. "
        "This is a benchmark, not a test."
    )
    default_out = "RESULTS-latency.md"
    tool_binary = {"calibrate": "msgbench", "msgbench-on": "msgbench", "msgbench-off": "msgbench", "lt": "latency-tests"}
    shown_names = {"msgbench": "target/release/msgbench", "ref": "ref", "latency-tests": "latency-tests", "old": "old-msgbench"}
    hidden_flags = Suite.hidden_flags + ("latency_tests", "old")

    @classmethod
    def add_arguments(cls, p):
        p.add_argument("--duration", type=parse_duration, default="10s", help="length of every latency run, warm-up included (default 10s)")
        p.add_argument("--warmup", type=parse_duration, default="1s", help="first part of a latency run that is not recorded (default 1s)")
        p.add_argument("--requests", type=int, default=20_000, help="requests per request/reply run (default 20000)")
        p.add_argument("--rss-short", type=parse_duration, default="10s", help="length of the short memory run (default 10s)")
        p.add_argument("--rss-long", type=parse_duration, default="30s", help="length of the long memory run (default 30s)")
        p.add_argument("--rss-rate", type=int, default=100_000, help="rate of the memory runs in msgs/s (default 100000)")
        p.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
        p.add_argument("--cases", default=",".join(ALL_CASES), help=f"the cases to run, comma separated (default {','.join(ALL_CASES)})")
        p.add_argument("--busy-poll", default="auto", help="msgbench's latency runs, once per setting, comma separated: auto, on, off (default auto)")
        p.add_argument("--latency-tests", metavar="PATH", help="a latency-tests binary (github.com/nats-io/latency-tests, built outside this repository): runs the latency cases too")
        p.add_argument("--old", metavar="PATH", help="an older msgbench binary: runs the latency cases too, with its defaults")
        p.add_argument("--busy", type=int, default=0, help="cores kept busy by shell spin loops while the cases run (default 0)")

    @classmethod
    def check_arguments(cls, p, a):
        if a.requests < 1 or a.rss_rate < 1:
            p.error("--requests and --rss-rate must be positive")
        for flag, given, allowed in (("--cases", a.cases, ALL_CASES), ("--busy-poll", a.busy_poll, BUSY_POLL)):
            names = [x.strip() for x in given.split(",") if x.strip()]
            if not names or any(x not in allowed for x in names):
                p.error(f"{flag} {given}: choose from {', '.join(allowed)}")
        if a.busy < 0:
            p.error("--busy must be 0 or more")
        for name in ("duration", "rss_short", "rss_long"):
            if getattr(a, name) <= a.warmup:
                p.error(f"--{name.replace('_', '-')} must be longer than --warmup")
        if a.rss_long <= a.rss_short and not a.no_memory:
            p.error("--rss-long must be longer than --rss-short")

    def __init__(self, args):
        self.polls = [POLL_TOOL[m.strip()] for m in args.busy_poll.split(",") if m.strip()]
        super().__init__(args)
        self.memory: list[tuple[str, float, Run]] = []  # (tool, seconds, run)
        self.loads: dict[str, list[float]] = {}  # case -> the 1-minute load before each run

    def make_cases(self):
        d, a = self.args.duration, self.args
        lat = (*self.polls, "ref", *(("lt",) if a.latency_tests else ()), *(("old",) if a.old else ()))
        cases = [
            Case("lat1k", "latency, 1,000 msgs/s, 8 B", lat, mode="latency", size=8, subject="bench.lat", rate=1_000, seconds=d),
            Case("lat100k", "latency, 100,000 msgs/s, 4 KiB", lat, mode="latency", size=4096, subject="bench.lat", rate=100_000, seconds=d),
            Case("req16", "request/reply, 1 client, 16 B", ("msgbench", "ref", "calibrate"), mode="request", size=16, subject="bench.req"),
        ]  # fmt: skip
        wanted = {x.strip() for x in a.cases.split(",")}
        return [c for c in cases if c.key in wanted]

    def case(self, key: str) -> Case | None:
        return next((c for c in self.cases if c.key == key), None)

    def build(self):
        super().build()
        for name, path, flag in (("latency-tests", self.args.latency_tests, "--latency-tests"), ("old", self.args.old, "--old")):
            if path:
                self.provide(name, *build.executable(path, flag))

    def builds_shown(self):
        shown = super().builds_shown()
        if self.args.latency_tests:
            shown += "\n# latency-tests: `go build` in a checkout of github.com/nats-io/latency-tests, outside this repository"
        return shown

    def generated_by(self):
        extra = "".join(
            f" {flag} {shown}" for flag, given, shown in (("--latency-tests", self.args.latency_tests, "LATENCY_TESTS"), ("--old", self.args.old, "OLD_MSGBENCH")) if given
        )
        return super().generated_by()[:-2] + extra + "`."

    def run_cases(self):
        """The cases with --busy spin loops running beside them (not the builds or memory runs)."""
        spinners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(self.args.busy)]
        try:
            super().run_cases()
        finally:
            for sp in spinners:
                sp.kill()
                sp.wait()

    def execute(self, case, tool, cmd, sample_rss):
        """As the base, noting the load before the run and the most threads the child had;
        latency-tests' figures are read from its stderr."""
        self.loads.setdefault(case.key, []).append(os.getloadavg()[0])
        peak = [0]

        def threads(pid: int, _t: float) -> None:
            peak[0] = max(peak[0], thread_count(pid) or 0)

        res = run_child(cmd, self.timeout(case, tool), self.workdir, cwd=REPO, sample_rss=sample_rss, json_file=self.json_file(case, tool), on_poll=threads)
        if peak[0]:
            res.metrics["threads"] = float(peak[0])
        if tool == "lt" and res.exit_code == 0 and not res.timed_out:
            res.data = parse_latency_tests((self.workdir / "child.err").read_text(errors="replace"))
            res.error = "" if res.data else "no percentiles in its output"
            res.ok = not res.error
        return res

    def command(self, case, tool):
        url, a = self.server.url, self.args
        if tool == "calibrate":
            return [self.bin("msgbench"), "calibrate", "--server", url, "--json", "-"]
        if tool in MSGBENCH_LATENCY and case.mode == "latency":
            poll = [] if tool in ("msgbench", "old") else ["--busy-poll", tool.removeprefix("msgbench-")]
            return [
                self.bin("old" if tool == "old" else "msgbench"), "latency", "--server", url, "--rate", str(case.rate),
                "--duration", go_duration(case.seconds), "--size", str(case.size), "--warmup", go_duration(a.warmup),
                "--subject", case.subject, *poll, "--no-progress", "--json", "-",
            ]  # fmt: skip
        if tool == "lt":
            # Its own subject (an inbox) and no warm-up: it times every message it sends.
            return [
                self.bin("latency-tests"), "-sa", url, "-sb", url, "-tr", str(case.rate), "-tt", go_duration(case.seconds), "-sz", str(case.size),
            ]  # fmt: skip
        if tool == "ref" and case.mode == "latency":
            return [
                self.bin("ref"), "latency", "-url", url, "-rate", str(case.rate), "-duration", go_duration(case.seconds),
                "-size", str(case.size), "-warmup", go_duration(a.warmup), "-subject", case.subject,
            ]  # fmt: skip
        if tool == "msgbench":
            return [
                self.bin("msgbench"), "request", "--server", url, "--clients", "1", "--msgs", str(a.requests),
                "--size", str(case.size), "--subject", case.subject, "--no-progress", "--json", "-",
            ]  # fmt: skip
        return [self.bin("ref"), "request", "-url", url, "-msgs", str(a.requests), "-size", str(case.size), "-subject", case.subject]

    def metrics(self, case, tool, run):
        """latency: p50..max (msgbench: corrected; u_p50..u_max: uncorrected), rate, lost, count;
        request: rps, p50, p99, unanswered (ref: timeouts; msgbench: delivery.lost);
        calibrate: {tcp,one_hop,two_hop}_{p50,p99}."""
        mode = mode_of(case, tool)
        fields: dict[str, tuple[str, ...]] = {}
        if mode == "calibrate":
            for hop in ("tcp", "one_hop", "two_hop"):
                for q in ("p50", "p99"):
                    fields[f"{hop}_{q}"] = ("environment", "floor_ns", hop, q)
        elif mode == "latency" and tool in MSGBENCH_LATENCY:
            for key, mb_key, _, _ in PERCENTILES:
                fields[key] = ("latency", "percentiles_ns", mb_key)
                fields["u_" + key] = ("latency_uncorrected", "percentiles_ns", mb_key)
            fields.update(rate=("pacing", "actual_rate"), lost=("delivery", "lost"), count=("latency", "count"))
            fields["idle_cores"] = ("params", "cpu_free", "idle_cores")  # what --busy-poll auto saw
        elif mode == "latency" and tool == "lt":
            fields = {key: (key if key != "max" else "p100",) for key, _, _, _ in PERCENTILES}
            fields["rate"] = ("actual_rate",)
        elif mode == "latency":
            fields = {key: (ref_key,) for key, _, ref_key, _ in PERCENTILES}
            fields.update(rate=("actual_rate",), lost=("lost",), count=("count",))
        elif tool == "msgbench":
            fields = {
                "rps": ("throughput", "msgs_per_sec"),
                "p50": ("latency", "percentiles_ns", "50"),
                "p99": ("latency", "percentiles_ns", "99"),
                "unanswered": ("delivery", "lost"),
            }
        else:
            fields = {"rps": ("req_per_sec",), "p50": ("p50_ns",), "p99": ("p99_ns",), "unanswered": ("timeouts",)}
        values = {key: num(dig(run.data, *path)) for key, path in fields.items()}
        polled = dig(run.data, "params", "busy_poll") if tool in MSGBENCH_LATENCY else None
        if isinstance(polled, bool):
            values["busy_poll"] = 1.0 if polled else 0.0
        return {k: v for k, v in values.items() if v is not None}

    def required(self, case, tool):
        return REQUIRED[mode_of(case, tool)]

    def timeout(self, case, tool):
        if mode_of(case, tool) == "latency":
            return max(self.args.timeout, case.seconds + DURATION_SLACK_S)
        return self.args.timeout

    def describe(self, case, tool, run):
        m, mode = run.metrics, mode_of(case, tool)
        if mode == "latency":
            s = f"P50 {fmt_ns(m.get('p50'))}, P99 {fmt_ns(m.get('p99'))}"
            if "u_p50" in m:
                s += f" (uncorrected P50 {fmt_ns(m.get('u_p50'))}, P99 {fmt_ns(m.get('u_p99'))})"
            if "busy_poll" in m:
                s += f", busy-poll {'on' if m['busy_poll'] else 'off'}"
            if "threads" in m:
                s += f", {int(m['threads'])} threads"
            return s + f", rate {fmt_rate(m.get('rate'))}/s, lost {int(m['lost']) if 'lost' in m else 'n/a'}"
        if mode == "request":
            return f"{fmt_rate(m.get('rps'))} req/s, P50 {fmt_ns(m.get('p50'))}, P99 {fmt_ns(m.get('p99'))}"
        return f"two-hop floor P50 {fmt_ns(m.get('two_hop_p50'))}, P99 {fmt_ns(m.get('two_hop_p99'))}"

    def run_more(self):
        a = self.args
        if a.no_memory:
            return
        for tool in ("msgbench", "ref"):
            for secs in (a.rss_short, a.rss_long):
                title = f"latency, {a.rss_rate:,} msgs/s, 8 B"
                case = Case(f"memory-{tool}-{secs}", title, (tool,), mode="latency", size=8, subject="bench.lat", rate=a.rss_rate, seconds=secs)
                self.shown_cmds[f"memory: {tool} {go_duration(secs)}"] = self.show(self.command(case, tool))
                label = f"[memory {title}, {go_duration(secs)}]"
                res = self.run_one(case, tool, label, sample_rss=True)
                if res is None:
                    continue
                self.memory.append((tool, secs, res))
                log(f"{label} {tool}: " + (f"peak RSS {res.peak_kb / 1024:.1f} MB" if res.ok else f"FAILED: {res.error}"))

    # ----- the report

    def body(self):
        targets: list[list[str]] = []
        body: list[str] = []
        if self.case("lat1k"):
            body += self.latency_section(self.case("lat1k"), {"p50": TARGET_LAT1K_P50, "p99": TARGET_LAT1K_P99}, targets)
        if self.case("lat100k"):
            body += self.latency_section(self.case("lat100k"), {"p99": TARGET_LAT100K_P99}, targets)
        if self.case("req16"):
            body += self.request_section(self.case("req16"), targets)
        if not self.args.no_memory:
            body += self.memory_section(targets)
        return ["## Targets", "", md_table(["target", "measured", "verdict"], targets), "", *body]

    def latency_section(self, case: Case, targets: dict[str, float], targets_rows: list[list[str]]) -> list[str]:
        a = self.args
        out = [f"## End-to-end latency, {case.rate:,} msgs/s, {fmt_size(case.size)}, {go_duration(a.duration)} ({go_duration(a.warmup)} warm-up)", ""]
        out += self.conditions(case)
        rows = []
        shown = []
        for tool in (t for t in case.tools if t in MSGBENCH_LATENCY):
            shown += [(f"{TOOL_TITLE[tool]}, corrected" + (" (headline)" if tool == "msgbench" else ""), tool, ""), (f"{TOOL_TITLE[tool]}, uncorrected", tool, "u_")]
        shown.append(("ref (nats.go, latency-tests method)", "ref", ""))
        if "lt" in case.tools:
            shown.append(("latency-tests (no warm-up: every message)", "lt", ""))
        for name, tool, prefix in shown:
            row = [name] + [self.cell(case.key, tool, prefix + key, fmt_ns) for key, _, _, _ in PERCENTILES]
            row.append(self.cell(case.key, tool, "rate", fmt_rate))
            lost = self.values(case.key, tool, "lost")
            row.append(", ".join(str(int(x)) for x in lost) if lost else "n/a")
            rows.append(row)
        out += [md_table(["", *(p[3] for p in PERCENTILES), "actual rate (msgs/s)", "lost per round"], rows), ""]
        ratio_rows = []
        for key, _, _, title in PERCENTILES:
            corr = self.median_ratio(case.key, "msgbench", "ref", key)
            unc = self.median_ratio(case.key, "msgbench", "ref", "u_" + key, key)
            target = targets.get(key)
            ratio_rows.append([title, fmt_x(corr), verdict(corr, target, False) if target else "–", fmt_x(unc)])
            if target:
                targets_rows.append([f"{case.title}: {title}, msgbench (corrected) / ref", fmt_x(corr), verdict(corr, target, False)])
        out += [md_table(["percentile", "msgbench corrected / ref", "target", "msgbench uncorrected / ref (context)"], ratio_rows), ""]
        if "lt" in case.tools:
            out += self.latency_tests_section(case, targets_rows)
        out += self.threads_and_polling(case)
        return out

    def conditions(self, case: Case) -> list[str]:
        """What else ran: the spin loops and the load average before each run."""
        loads = self.loads.get(case.key, [])
        busy = f"{self.args.busy} core(s) kept busy by spin loops" if self.args.busy else "no spin loops"
        load = f"1-minute load average before each run {min(loads):.2f}–{max(loads):.2f}" if loads else "no runs"
        return [f"Conditions: {busy}; {load} (a quiet 2-core machine with N spin loops reads about N).", ""]

    def latency_tests_section(self, case: Case, targets_rows: list[list[str]]) -> list[str]:
        """Each msgbench against latency-tests: uncorrected, as latency-tests measures from the
        actual send; the median of the per-round ratios."""
        out = ["msgbench's uncorrected percentiles against latency-tests' (both measured from the actual send; the median of per-round ratios):", ""]
        tools = [t for t in case.tools if t in MSGBENCH_LATENCY]
        rows = []
        for key, _, _, title in PERCENTILES:
            row = [title]
            for tool in tools:
                r = self.median_ratio(case.key, tool, "lt", "u_" + key, key)
                target = TARGET_LT.get(key)
                row.append(fmt_x(r) + (f" ({verdict(r, target, False)})" if target and tool == "msgbench" else ""))
            rows.append(row)
        out += [md_table(["percentile", *(f"{TOOL_TITLE[t]} / latency-tests" for t in tools)], rows), ""]
        if "msgbench" in tools:
            for key, target in TARGET_LT.items():
                r = self.median_ratio(case.key, "msgbench", "lt", "u_" + key, key)
                label = {"p50": "P50", "p99": "P99"}[key]
                targets_rows.append([f"{case.title}, busy {self.args.busy}: {label}, msgbench (uncorrected) / latency-tests", fmt_x(r), verdict(r, target, False)])
        return out

    def threads_and_polling(self, case: Case) -> list[str]:
        """What each msgbench chose for --busy-poll in each round, and its thread count."""
        lines = []
        for tool in (t for t in case.tools if t in MSGBENCH_LATENCY):
            runs = self.runs(case.key, tool)
            polled = ["on" if r.metrics.get("busy_poll") else "off" if "busy_poll" in r.metrics else "?" for r in runs if r is not None]
            idle = [f"{r.metrics['idle_cores']:.2f}" for r in runs if r is not None and "idle_cores" in r.metrics]
            threads = sorted({int(r.metrics["threads"]) for r in runs if r is not None and "threads" in r.metrics})
            text = f"- {TOOL_TITLE[tool]}: polled {', '.join(polled) or 'n/a'} per round"
            if idle:
                text += f" (idle CPUs auto saw: {', '.join(idle)})"
            lines.append(text + f"; at most {', '.join(map(str, threads)) or 'n/a'} threads")
        return (["Busy-polling and threads of each msgbench run:", "", *lines, ""]) if lines else []

    def request_section(self, case: Case, targets_rows: list[list[str]]) -> list[str]:
        out = [f"## Request/reply, closed loop, 1 client, {fmt_size(case.size)}, {self.args.requests:,} requests", ""]
        rows = []
        for tool in ("msgbench", "ref"):
            row = [tool, self.cell(case.key, tool, "rps"), self.cell(case.key, tool, "p50", fmt_ns), self.cell(case.key, tool, "p99", fmt_ns)]
            unanswered = self.values(case.key, tool, "unanswered")
            row.append(", ".join(str(int(x)) for x in unanswered) if unanswered else "n/a")
            rows.append(row)
        out += [md_table(["tool", "requests/s", "P50 round trip", "P99 round trip", "unanswered (timed out) per round"], rows), ""]
        out += ["Round-trip floor of this machine (`msgbench calibrate`, one run per round):", ""]
        floor_rows = [
            [title, self.cell(case.key, "calibrate", f"{hop}_p50", fmt_ns), self.cell(case.key, "calibrate", f"{hop}_p99", fmt_ns)]
            for hop, title in (("tcp", "tcp"), ("one_hop", "one_hop"), ("two_hop", "two_hop (request and reply)"))
        ]
        out += [md_table(["environment.floor_ns", "P50", "P99"], floor_rows), ""]
        rps = self.median_ratio(case.key, "msgbench", "ref", "rps")
        floor = self.median_ratio(case.key, "msgbench", "calibrate", "p50", "two_hop_p50")
        ref_floor = self.median_ratio(case.key, "ref", "calibrate", "p50", "two_hop_p50")
        p50 = self.median_ratio(case.key, "msgbench", "ref", "p50")
        rows = [
            ["requests/s, msgbench / ref", fmt_x(rps), verdict(rps, TARGET_REQ_RPS, True)],
            ["P50, msgbench / two-hop floor P50", fmt_x(floor), verdict(floor, TARGET_REQ_FLOOR, False)],
            ["P50, ref / two-hop floor P50 (context)", fmt_x(ref_floor), "–"],
            ["P50, msgbench / ref (context)", fmt_x(p50), "–"],
        ]
        out += [md_table(["ratio", "value", "target"], rows), ""]
        targets_rows.append([f"{case.title}: requests/s, msgbench / ref", fmt_x(rps), verdict(rps, TARGET_REQ_RPS, True)])
        targets_rows.append([f"{case.title}: msgbench P50 / two-hop floor", fmt_x(floor), verdict(floor, TARGET_REQ_FLOOR, False)])
        return out

    def memory_section(self, targets_rows: list[list[str]]) -> list[str]:
        a = self.args
        out = [f"## Peak memory of a latency run ({a.rss_rate:,} msgs/s, 8 B)", ""]
        out += [
            "Peak RSS is the child's own VmHWM, sampled every 5 ms until it exits (see run.py). "
            "If memory use does not depend on the length of the run, the long run peaks about as "
            "high as the short one (ratio about 1.00x).",
            "",
        ]
        rows = []
        peaks: dict[str, dict[float, float]] = {}
        for tool, secs, run in self.memory:
            if not run.ok:
                rows.append([tool, go_duration(secs), "failed", "n/a"])
                continue
            mb = run.peak_kb / 1024
            peaks.setdefault(tool, {})[secs] = mb
            sent = dig(run.data, "sent") if tool == "ref" else dig(run.data, "delivery", "sent")
            rows.append([tool, go_duration(secs), f"{mb:.1f} MB", str(sent) if sent is not None else "n/a"])
        out += [md_table(["tool", "duration", "peak RSS", "messages sent"], rows) if rows else "No memory runs completed.", ""]
        for tool in ("msgbench", "ref"):
            p = peaks.get(tool, {})
            short, long_ = p.get(a.rss_short), p.get(a.rss_long)
            growth = long_ / short if short and long_ is not None else None
            label = f"peak RSS, {go_duration(a.rss_long)} / {go_duration(a.rss_short)} run"
            if tool == "msgbench":
                targets_rows.append([f"msgbench {label}", fmt_x(growth), verdict(growth, TARGET_RSS_GROWTH, False)])
            elif growth is not None:
                self.notes.append(f"ref {label}: {growth:.2f}x (for comparison)")
        return out


if __name__ == "__main__":
    Latency.main()
