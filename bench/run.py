#!/usr/bin/env python3
"""Side-by-side benchmark: msgbench vs. a nats.go reference vs. a raw writer.

A benchmark, not a test: its exit status says nothing about performance; never run it as a
timed test in CI.

    python3 bench/run.py [--rounds 5] [--msgs 2000000] [--rss-msgs 20000000] [--no-memory]
                         [--out bench/RESULTS.md] [--timeout 120] [--no-build]

On one nats-server: pub-only at 16 and 128 B and pubsub (1 + 1) at 16 B, msgs/s of each tool,
the client CPU per message, and the peak RSS of a long and a short run (bench/README.md).
"""

from __future__ import annotations

import shutil

from benchkit.fmt import fmt_rate, fmt_x, md_table, median, verdict
from benchkit.proc import Run, dig, log, num, run_child
from benchkit.suite import Case, Suite

TARGET_PUB_VS_REF = 1.3
TARGET_PUB_VS_RAW = 0.9
TARGET_PUBSUB_VS_REF = 1.3
TARGET_CPU_NS = 100.0
TARGET_RSS_MB = 32.0

TOOLS = ("msgbench", "ref", "raw")


def with_target(v: float | None, target: float) -> str:
    return fmt_x(v) if v is None else f"{fmt_x(v)} (target {verdict(v, target)})"


class Throughput(Suite):
    script = "run.py"
    title = "msgbench side-by-side benchmark"
    description = "Side-by-side benchmark of msgbench vs nats.go vs a raw writer."
    summary = (
        "Figures are medians over the rounds (min–max in parentheses); ratios are the median "
        "of per-round ratios (each round runs the tools back to back in a rotating order "
        "against the same server). This is a benchmark, not a test."
    )
    default_out = "RESULTS.md"
    tool_binary = {"raw": "ref"}

    @classmethod
    def add_arguments(cls, p):
        p.add_argument("--msgs", type=int, default=2_000_000, help="messages per throughput run (default 2000000)")
        p.add_argument("--rss-msgs", type=int, default=20_000_000, help="messages of the large memory run (default 20000000)")
        p.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")

    @classmethod
    def check_arguments(cls, p, a):
        if a.msgs < 1 or a.rss_msgs < 1:
            p.error("--msgs and --rss-msgs must be positive")

    def __init__(self, args):
        super().__init__(args)
        self.memory: list[tuple[str, str, int, Run]] = []  # (tool, mode, msgs, run)
        self.rss_floor_kb = 0

    def make_cases(self):
        n = self.args.msgs
        return [
            Case("pub16", "pub-only, 16 B", TOOLS, mode="pub", size=16, subject="bench.pub", msgs=n),
            Case("pub128", "pub-only, 128 B", TOOLS, mode="pub", size=128, subject="bench.pub", msgs=n),
            Case("pubsub16", "pubsub 1 pub + 1 sub, 16 B", TOOLS[:2], mode="pubsub", size=16, subject="bench.ps", msgs=n),
        ]

    def command(self, case, tool):
        url = self.server.url
        if tool == "msgbench":
            pubsub = ["--pubs", "1", "--subs", "1"] if case.mode == "pubsub" else []
            return [
                self.bin("msgbench"), case.mode, "--server", url, *pubsub, "--msgs", str(case.msgs),
                "--size", str(case.size), "--subject", case.subject, "--no-progress", "--json", "-",
            ]  # fmt: skip
        mode = "raw" if tool == "raw" else case.mode
        return [self.bin("ref"), mode, "-url", url, "-msgs", str(case.msgs), "-size", str(case.size), "-subject", case.subject]

    def metrics(self, case, tool, run):
        """pub and sub (msgs/s), lost, cpu_ns (CPU per message, pub-only)."""
        d, m = run.data, {}
        if tool == "msgbench":
            fields = {"pub": ("by_role", "pub", "msgs_per_sec"), "sub": ("by_role", "sub", "msgs_per_sec"), "lost": ("delivery", "lost")}
            if case.mode == "pub" and num(dig(d, *fields["pub"])) is None:
                fields["pub"] = ("throughput", "msgs_per_sec")
        else:
            fields = {"pub": ("msgs_per_sec",), "sub": ("sub_msgs_per_sec",), "got": ("sub_msgs",)}
        for key, path in fields.items():
            if key == "pub" or case.mode == "pubsub":
                v = num(dig(d, *path))
                if v is not None:
                    m[key] = v
        if "got" in m:
            m["lost"] = max(0, case.msgs - int(m.pop("got")))
        if case.mode == "pub":
            m["cpu_ns"] = run.cpu_s * 1e9 / case.msgs
        return m

    def required(self, case, tool):
        return ("pub",)

    def describe(self, case, tool, run):
        m = run.metrics
        extra = f", sub {fmt_rate(m.get('sub'))} msgs/s, lost {m.get('lost', 'n/a')}" if case.mode == "pubsub" else ""
        return f"pub {fmt_rate(m.get('pub'))} msgs/s{extra}"

    def run_more(self):
        if self.args.no_memory:
            return
        # ru_maxrss of any child includes the RSS this script had when it spawned it; a child
        # that does nothing shows that floor.
        true_bin = shutil.which("true")
        if true_bin:
            floor = run_child([true_bin], self.args.timeout, self.workdir)
            if floor.exit_code == 0:
                self.rss_floor_kb = floor.maxrss_kb
        big = self.args.rss_msgs
        for tool in ("msgbench", "ref"):
            for mode, msgs in (("pub", big), ("pub", big // 10), ("pubsub", big // 4), ("pubsub", big // 40)):
                msgs = max(1, msgs)
                subject = "bench.pub" if mode == "pub" else "bench.ps"
                case = Case(f"memory-{tool}-{mode}-{msgs}", f"memory {mode} {msgs} msgs", (tool,), mode=mode, size=16, subject=subject, msgs=msgs)
                self.shown_cmds[f"memory: {tool} {mode} {msgs}"] = self.show(self.command(case, tool))
                label = f"[{case.title}]"
                res = self.run_one(case, tool, label, sample_rss=True)
                if res is None:
                    continue
                self.memory.append((tool, mode, msgs, res))
                if res.ok:
                    log(f"{label} {tool}: peak RSS {res.peak_kb / 1024:.1f} MB (ru_maxrss {res.maxrss_kb / 1024:.1f} MB)")
                else:
                    log(f"{label} {tool}: FAILED: {res.error}")

    # ----- the report

    def body(self):
        out = ["## Throughput (msgs/s)", ""]
        rows, ratio_rows = [], []
        for case in self.cases:
            for metric in ("pub",) if case.mode == "pub" else ("pub", "sub"):
                name = case.title if case.mode == "pub" else f"{case.title}: {'publisher' if metric == 'pub' else 'subscriber'}"
                rows.append([name] + [self.cell(case.key, t, metric) if t in case.tools else "–" for t in TOOLS])
                target = TARGET_PUB_VS_REF if case.mode == "pub" else TARGET_PUBSUB_VS_REF
                r = [name, with_target(self.median_ratio(case.key, "msgbench", "ref", metric), target)]
                if "raw" in case.tools:
                    r.append(with_target(self.median_ratio(case.key, "msgbench", "raw", metric), TARGET_PUB_VS_RAW))
                    r.append(fmt_x(self.median_ratio(case.key, "ref", "raw", metric)))
                else:
                    r += ["–", "–"]
                ratio_rows.append(r)
        out += [md_table(["case", "msgbench", "ref (nats.go)", "raw writer"], rows), ""]
        out += [md_table(["case", "msgbench / ref", "msgbench / raw", "ref / raw"], ratio_rows), ""]

        lost_rows = []
        for tool in ("msgbench", "ref"):
            lost = self.values("pubsub16", tool, "lost")
            if lost:
                lost_rows.append([tool, ", ".join(str(int(x)) for x in lost)])
        if lost_rows:
            out += ["Messages not delivered to the subscriber in the pubsub case, per round:", ""]
            out += [md_table(["tool", "lost per round"], lost_rows), ""]

        out += ["## CPU cost of publishing (16 B, user + sys of the child process)", ""]
        out += [
            f"Measured with `os.wait4` on the pub-only 16 B runs above ({self.args.msgs} messages each); "
            "nanoseconds of CPU per message, median over the rounds.",
            "",
        ]
        cpu_rows = []
        for tool in TOOLS:
            med = median(self.values("pub16", tool, "cpu_ns"))
            target = verdict(med, TARGET_CPU_NS, False, " ns") if tool == "msgbench" and med is not None else ""
            cpu_rows.append([tool, self.cell("pub16", tool, "cpu_ns", lambda v: f"{v:.1f} ns"), target])
        out += [md_table(["tool", "CPU ns/msg", "target"], cpu_rows), ""]
        return out + self.memory_section()

    def memory_section(self) -> list[str]:
        floor = f" (a child that does nothing shows {self.rss_floor_kb / 1024:.1f} MB)" if self.rss_floor_kb else ""
        out = ["## Peak memory (16 B messages)", ""]
        out += [
            "Peak RSS is the child's own VmHWM, sampled every 5 ms until it exits. "
            "ru_maxrss from `os.wait4` is shown too, but on Linux it is at least the RSS the "
            f"spawning Python process had at fork time{floor}, so it is only an upper bound.",
            "",
        ]
        rows = []
        by_key: dict[tuple[str, str], list[tuple[int, Run]]] = {}
        for tool, mode, msgs, run in self.memory:
            by_key.setdefault((tool, mode), []).append((msgs, run))
        for (tool, mode), entries in by_key.items():
            entries.sort(key=lambda e: e[0])
            for msgs, run in entries:
                if not run.ok:
                    rows.append([tool, mode, str(msgs), "failed", "", ""])
                    continue
                mb = run.peak_kb / 1024
                target = verdict(mb, TARGET_RSS_MB, False, " MB") if tool == "msgbench" else ""
                rows.append([tool, mode, str(msgs), f"{mb:.1f} MB", f"{run.maxrss_kb / 1024:.1f} MB", target])
            ok = [(m, r) for m, r in entries if r.ok]
            if len(ok) == 2 and ok[0][1].peak_kb:
                (m1, r1), (m2, r2) = ok
                self.notes.append(
                    f"{tool} {mode}: peak RSS at {m2} msgs is {r2.peak_kb / r1.peak_kb:.2f}x "
                    f"the peak at {m1} msgs (1.00x = independent of the count)"
                )
        out.append(md_table(["tool", "mode", "msgs", "peak RSS", "ru_maxrss", "target"], rows) if rows else "No memory runs completed.")
        return out + [""]


if __name__ == "__main__":
    Throughput.main()
