#!/usr/bin/env python3
"""Side-by-side JetStream publish benchmark: msgbench `js pub` vs. a nats.go reference.

This is a benchmark, not a test: its exit status says nothing about performance,
and it must never be run as a timed test in CI. It does exit 1 if a msgbench run
did not reconcile its acknowledgements with the stream (or gave no result),
because then its figures cannot be trusted.

Usage:
    python3 bench/run_js.py [--rounds 5] [--sync-msgs 20000] [--async-msgs 200000]
                            [--size 128] [--max-in-flight 256]
                            [--out bench/RESULTS-js.md] [--timeout 120] [--no-build]

It starts one nats-server with JetStream (-js, store directory in a temporary
directory) on 127.0.0.1 on a free port, builds msgbench (`cargo build --release
--locked`) and the reference (`go build` in bench/ref), and runs two cases for a
number of rounds, the tool order alternating from round to round:

  1. sync publish: each publish waits for its PubAck;
  2. async publish: up to --max-in-flight PubAcks outstanding;

both with --size bytes per message into one memory stream that every run
purges first. It prints a table of medians and per-round ratios; the same
report is written as Markdown to --out.

The shared machinery (child processes, the nats-server, builds, formatting)
is run.py's.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import (  # noqa: E402  (run.py lives next to this file)
    BENCH,
    REPO,
    NatsServer,
    Run,
    build,
    build_tools,
    commands_block,
    dig,
    drive,
    entry,
    fmt_rate,
    log,
    md_table,
    notes_block,
    num,
    one_line,
    run_child,
    scrub_paths,
    show_cmd,
    summary,
)

# Targets: msgbench's acknowledged publishes per second / the reference's.
TARGET_SYNC = 1.2
TARGET_ASYNC = 1.5

# One stream for both tools: msgbench's create is a no-op only if the stream
# that is already there has exactly its config, so sharing it also proves
# that the reference set up the same stream.
STREAM = "benchjs"
SUBJECT = "benchjs.x"

TOOLS = ("msgbench", "ref")


def log_fail(msg: str) -> None:
    log(f"!! {msg}")


# --------------------------------------------------------------------------
# The server: run.py's, with JetStream


class JsNatsServer(NatsServer):
    """run.py's nats-server with JetStream on; the store directory lives in the
    temporary directory and goes with it. Memory streams never touch it, but
    -js needs one."""

    def __init__(self, binary: str, workdir: Path):
        super().__init__(binary, workdir)
        self.cmd += ["-js", "-sd", str(workdir / "jetstream")]


# --------------------------------------------------------------------------
# Commands and metrics


def msgbench_js_cmd(b: str, url: str, mode: str, window: int, msgs: int, size: int, json_path: str) -> list[str]:
    # msgbench refuses a window in sync mode, where it has no meaning.
    window_flag = ["--max-in-flight", str(window)] if mode == "async" else []
    return [
        b, "js", "pub", "--server", url, "--mode", mode, *window_flag,
        "--msgs", str(msgs), "--size", str(size), "--stream", STREAM, "--subject", SUBJECT,
        "--purge", "--storage", "memory", "--json", json_path, "--no-progress",
    ]  # fmt: skip


def ref_js_cmd(b: str, url: str, mode: str, window: int, msgs: int, size: int) -> list[str]:
    return [
        b, "jspub", "-url", url, "-mode", mode, "-max-in-flight", str(window),
        "-msgs", str(msgs), "-size", str(size), "-stream", STREAM, "-subject", SUBJECT,
    ]  # fmt: skip


def js_metrics(tool: str, d: dict | None) -> dict:
    """rate (acknowledged publishes per second), seconds, acked; msgbench also
    reconciled, lost and stored; ref also failed and stream_msgs."""
    m: dict = {}
    if tool == "msgbench":
        fields = {
            "rate": ("throughput", "msgs_per_sec"),
            "seconds": ("throughput", "seconds"),
            "acked": ("jetstream", "acked"),
            "stored": ("jetstream", "stored"),
            "lost": ("delivery", "lost"),
        }
        reconciled = dig(d, "jetstream", "reconciled")
        if isinstance(reconciled, bool):
            m["reconciled"] = reconciled
    else:
        fields = {
            "rate": ("msgs_per_sec",),
            "seconds": ("seconds",),
            "acked": ("acked",),
            "failed": ("failed",),
            "stream_msgs": ("stream_msgs",),
        }
    for key, path in fields.items():
        v = num(dig(d, *path))
        if v is not None:
            m[key] = v
    return m


# What a run must report to count.
REQUIRED = {"msgbench": ("rate", "reconciled"), "ref": ("rate", "acked", "failed")}


# --------------------------------------------------------------------------
# The benchmark


@dataclass
class Case:
    key: str
    title: str
    mode: str  # "sync" or "async"
    msgs: int
    target: float


def fmt_x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}x"


def verdict(v: float | None, target: float) -> str:
    if v is None:
        return "n/a"
    return f">= {target:g}x: {'met' if v >= target else 'MISSED'}"


class Bench:
    def __init__(self, args: argparse.Namespace, workdir: Path):
        self.args = args
        self.workdir = workdir
        self.bins: dict[str, str | None] = {"msgbench": None, "ref": None}
        self.unavailable: dict[str, str] = {}
        self.failures: list[tuple[str, str, str]] = []  # (label, tool, error)
        self.kept: list[tuple[str, str, str]] = []  # non-zero exit, result used anyway
        self.notes: list[str] = []
        # msgbench runs whose jetstream.reconciled was not true (or that gave no
        # result), and the number of those where it was.
        self.unreconciled: list[str] = []
        self.reconciled_runs = 0
        self.server: NatsServer | None = None
        # results[case_key][tool] = one Run per round (None: failed or skipped)
        self.results: dict[str, dict[str, list[Run | None]]] = {}
        self.orders: dict[str, list[tuple[str, ...]]] = {}
        self.shown_cmds: dict[str, str] = {}
        self.json_path = workdir / "msgbench-js.json"
        a = args
        self.cases = [
            Case("sync", f"sync publish, {a.sync_msgs:,} msgs", "sync", a.sync_msgs, TARGET_SYNC),
            Case("async", f"async publish, {a.max_in_flight} in flight, {a.async_msgs:,} msgs", "async", a.async_msgs, TARGET_ASYNC),
        ]

    def show(self, cmd: list[str]) -> str:
        return show_cmd(self.bins, self.server, cmd)

    # ----- builds

    def build_all(self) -> None:
        # --locked: benchmark the dependency versions Cargo.lock pins, as soak.py
        # does; build_tools then only finds the binary and builds the reference.
        err = None
        if not self.args.no_build:
            err = build(["cargo", "build", "--release", "--locked"], REPO, "msgbench")
        build_tools(argparse.Namespace(**{**vars(self.args), "no_build": True}), self.workdir, self.bins, self.unavailable, {})
        if err is not None:
            self.bins["msgbench"] = None
            self.unavailable["msgbench"] = err
            log(f"msgbench unavailable: {err}")

    # ----- running

    def cmd_for(self, tool: str, case: Case, for_display: bool = False) -> list[str] | None:
        a = self.args
        url = self.server.url
        if tool == "msgbench":
            b = self.bins["msgbench"] or ("target/release/msgbench" if for_display else None)
            return msgbench_js_cmd(b, url, case.mode, a.max_in_flight, case.msgs, a.size, str(self.json_path)) if b else None
        b = self.bins["ref"] or ("ref" if for_display else None)
        return ref_js_cmd(b, url, case.mode, a.max_in_flight, case.msgs, a.size) if b else None

    def run_one(self, label: str, tool: str, case: Case) -> Run | None:
        cmd = self.cmd_for(tool, case)
        if cmd is None:
            return None
        if tool == "msgbench":
            # A result left by an earlier run must not pass for this one's.
            self.json_path.unlink(missing_ok=True)
        res = run_child(cmd, self.args.timeout, self.workdir)
        if tool == "msgbench":
            # msgbench writes its JSON to a file (stdout has the text report);
            # msgbench exits 3 after writing it if the run did not reconcile.
            try:
                res.data = json.loads(self.json_path.read_text())
            except (OSError, json.JSONDecodeError):
                res.data = None
            if res.data is not None and res.error == "no JSON result on stdout":
                res.error = ""
            elif res.data is None and res.exit_code == 0:
                res.error = "no JSON result in the --json file"
            res.ok = res.error == "" and res.data is not None
        if res.data is not None:
            res.metrics = js_metrics(tool, res.data)
        has_all = all(k in res.metrics for k in REQUIRED[tool])
        if not res.ok:
            if res.exit_code not in (None, 0) and has_all and "timed out" not in res.error:
                self.kept.append((label, tool, res.error))
                res.ok = True
            else:
                self.failures.append((label, tool, res.error))
        elif not has_all:
            res.error = "result JSON lacks the expected fields"
            self.failures.append((label, tool, res.error))
            res.ok = False
        if tool == "msgbench" and res.metrics.get("reconciled") is True:
            self.reconciled_runs += 1
        elif tool == "msgbench":
            why = "jetstream.reconciled is false" if "reconciled" in res.metrics else f"no result ({res.error})"
            self.unreconciled.append(f"{label}: {why}")
        if tool == "ref" and res.ok:
            m = res.metrics
            if m.get("failed") or m.get("stream_msgs") != m.get("acked"):
                self.notes.append(
                    f"ref {label}: {int(m.get('acked', 0))} acknowledged, {int(m.get('failed', 0))} failed, "
                    f"stream holds {int(m.get('stream_msgs', 0))}"
                )
        return res

    def describe(self, tool: str, m: dict) -> str:
        s = f"{fmt_rate(m.get('rate'))} acked msgs/s in {m.get('seconds', 0):.3f} s, acked {int(m.get('acked', 0))}"
        if tool == "msgbench":
            return s + f", reconciled {m.get('reconciled', 'n/a')}"
        return s + f", failed {int(m.get('failed', 0))}, stream holds {int(m.get('stream_msgs', 0))}"

    def run_cases(self) -> None:
        a = self.args
        for case in self.cases:
            self.results[case.key] = {t: [] for t in TOOLS}
            self.orders[case.key] = []
            for t in TOOLS:
                self.shown_cmds[f"{case.title}: {t}"] = self.show(self.cmd_for(t, case, for_display=True))
            for r in range(a.rounds):
                # Alternate who goes first, so that a drift of the machine
                # does not always favour the same tool.
                order = TOOLS if r % 2 == 0 else TOOLS[::-1]
                self.orders[case.key].append(order)
                for tool in order:
                    label = f"[{case.title}] round {r + 1}/{a.rounds}"
                    res = self.run_one(label, tool, case)
                    self.results[case.key][tool].append(res if res is not None and res.ok else None)
                    if res is None:
                        continue
                    if res.ok:
                        log(f"{label} {tool}: {self.describe(tool, res.metrics)}")
                    else:
                        log(f"{label} {tool}: FAILED: {res.error}")

    # ----- analysis

    def expected_runs(self) -> int:
        return self.args.rounds * len(self.cases)

    def all_reconciled(self) -> bool:
        """Every msgbench run ran and reconciled (an unavailable msgbench fails this too)."""
        return self.reconciled_runs == self.expected_runs()

    def values(self, case: str, tool: str) -> list[float]:
        return [r.metrics["rate"] for r in self.results.get(case, {}).get(tool, []) if r is not None and "rate" in r.metrics]

    def ratios(self, case: str) -> list[float | None]:
        """msgbench / ref per round (None where either run failed)."""
        out: list[float | None] = []
        for x, y in zip(self.results.get(case, {}).get("msgbench", []), self.results.get(case, {}).get("ref", [])):
            vx = x.metrics.get("rate") if x is not None else None
            vy = y.metrics.get("rate") if y is not None else None
            out.append(vx / vy if vx is not None and vy else None)
        return out

    def cell(self, case: str, tool: str) -> str:
        if tool in self.unavailable:
            return "unavailable"
        vals = self.values(case, tool)
        s = summary(vals)
        if s is None:
            return "failed"
        med, lo, hi = s
        return fmt_rate(med) if len(vals) == 1 else f"{fmt_rate(med)} ({fmt_rate(lo)}–{fmt_rate(hi)}, n={len(vals)})"

    # ----- report

    def case_section(self, case: Case, out: list[str], targets_rows: list[list[str]]) -> None:
        a = self.args
        how = "Each publish waits for its PubAck" if case.mode == "sync" else f"Up to {a.max_in_flight} PubAcks outstanding"
        out.append(f"## {case.title[0].upper()}{case.title[1:]}, {a.size} B, memory storage")
        out.append("")
        out.append(f"{how}. Acknowledged publishes per second, from the first publish to the last PubAck.")
        out.append("")
        ratios = self.ratios(case.key)
        med_ratio = summary([x for x in ratios if x is not None])
        ratio = med_ratio[0] if med_ratio else None
        ms, rs = summary(self.values(case.key, "msgbench")), summary(self.values(case.key, "ref"))
        of_medians = ms[0] / rs[0] if ms and rs and rs[0] else None
        out.append(
            md_table(
                ["", "acked msgs/s, median (min–max, n)"],
                [
                    ["msgbench `js pub`", self.cell(case.key, "msgbench")],
                    ["ref (nats.go jetstream)", self.cell(case.key, "ref")],
                    ["msgbench / ref, median of per-round ratios", f"{fmt_x(ratio)} ({verdict(ratio, case.target)})"],
                    ["msgbench / ref, ratio of the medians (context)", fmt_x(of_medians)],
                ],
            )
        )
        out.append("")
        rows = []
        mb_runs, ref_runs = self.results[case.key]["msgbench"], self.results[case.key]["ref"]
        for i, order in enumerate(self.orders[case.key]):
            mb, rf = mb_runs[i], ref_runs[i]
            row = [str(i + 1), ", ".join(order)]
            if mb is not None:
                m = mb.metrics
                row += [fmt_rate(m.get("rate")), f"{m.get('seconds', 0):.3f} s", str(int(m.get("acked", 0))), "yes" if m.get("reconciled") is True else "**NO**"]
            else:
                row += ["failed", "", "", "**NO**" if "msgbench" not in self.unavailable else ""]
            if rf is not None:
                m = rf.metrics
                row += [fmt_rate(m.get("rate")), f"{m.get('seconds', 0):.3f} s", f"{int(m.get('acked', 0))} / {int(m.get('failed', 0))}", str(int(m.get("stream_msgs", 0)))]
            else:
                row += ["failed", "", "", ""]
            row.append(fmt_x(ratios[i]) if i < len(ratios) else "n/a")
            rows.append(row)
        out.append("Each run:")
        out.append("")
        out.append(
            md_table(
                [
                    "round", "order", "msgbench msgs/s", "msgbench time", "msgbench acked", "reconciled",
                    "ref msgs/s", "ref time", "ref acked / failed", "ref stream msgs", "msgbench / ref",
                ],
                rows,
            )
        )  # fmt: skip
        out.append("")
        targets_rows.append([f"{case.title}: acked msgs/s, msgbench / ref", fmt_x(ratio), verdict(ratio, case.target)])

    def report(self, env: dict[str, str]) -> str:
        a = self.args
        out: list[str] = []
        targets_rows: list[list[str]] = []
        body: list[str] = []
        for case in self.cases:
            self.case_section(case, body, targets_rows)
        targets_rows.append(
            [
                "msgbench `jetstream.reconciled` in every run",
                f"{self.reconciled_runs} of {self.expected_runs()} runs",
                "met" if self.all_reconciled() else "**FAILED**",
            ]
        )

        out.append("# msgbench JetStream publish side-by-side benchmark")
        out.append("")
        out.append(
            f"Generated by `python3 bench/run_js.py --rounds {a.rounds} --sync-msgs {a.sync_msgs} "
            f"--async-msgs {a.async_msgs} --size {a.size} --max-in-flight {a.max_in_flight}`. "
            "One nats-server with JetStream; both tools publish into the same memory stream "
            f"(`{STREAM}`, subject `{SUBJECT}`, 1 replica, no limits, discard old), which every run "
            "purges first. Figures are acknowledged publishes per second, medians over the rounds "
            "(min–max in parentheses); ratios are the median of per-round ratios (each round runs "
            "the two tools back to back, the order alternating). This is a benchmark, not a test."
        )
        out.append("")
        out.append(md_table(["fact", "value"], [[k, v] for k, v in env.items()]))
        out.append("")
        out.append("## Targets")
        out.append("")
        out.append(md_table(["target", "measured", "verdict"], targets_rows))
        out.append("")
        out.extend(body)

        server_cmd = self.show(self.server.cmd) if self.server is not None else None
        out += commands_block(server_cmd, "cargo build --release --locked\n(cd bench/ref && go build -o ref .)", self.shown_cmds)
        unreconciled = [f"NOT RECONCILED msgbench {one_line(u)}" for u in self.unreconciled]
        out += notes_block(self.unavailable, self.failures, self.kept, self.notes, unreconciled)
        return scrub_paths("\n".join(out), self.workdir)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Side-by-side JetStream publish benchmark of msgbench js pub vs nats.go.")
    p.add_argument("--rounds", type=int, default=5, help="rounds per case (default 5)")
    p.add_argument("--sync-msgs", type=int, default=20_000, help="messages per sync run (default 20000)")
    p.add_argument("--async-msgs", type=int, default=200_000, help="messages per async run (default 200000)")
    p.add_argument("--size", type=int, default=128, help="payload size in bytes (default 128; msgbench needs >= 8)")
    p.add_argument("--max-in-flight", type=int, default=256, help="async window: PubAcks outstanding at most (default 256)")
    p.add_argument("--out", default=str(BENCH / "RESULTS-js.md"), help="Markdown report (default bench/RESULTS-js.md)")
    p.add_argument("--timeout", type=float, default=120.0, help="time limit of every tool run in seconds (default 120)")
    p.add_argument("--no-build", action="store_true", help="skip `cargo build --release --locked`; use the existing binary")
    a = p.parse_args(argv)
    if min(a.rounds, a.sync_msgs, a.async_msgs, a.max_in_flight) < 1 or a.timeout <= 0:
        p.error("--rounds, --sync-msgs, --async-msgs, --max-in-flight and --timeout must be positive")
    if a.size < 8:
        p.error("--size must be at least 8 (msgbench puts a sequence number in every payload)")
    return a


def main(argv: list[str] | None = None) -> int:
    """run.py's drive() with a JetStream server and no memory runs; exit status 1 when a
    msgbench run did not reconcile."""
    return drive(parse_args(argv), Bench, "msgbench-bench-js-", server_class=JsNatsServer, verdict=exit_status)


def exit_status(bench: Bench) -> int:
    if bench.all_reconciled():
        return 0
    log_fail(f"only {bench.reconciled_runs} of {bench.expected_runs()} msgbench runs reconciled")
    for u in bench.unreconciled:
        log_fail(u)
    return 1


if __name__ == "__main__":
    entry(main)
