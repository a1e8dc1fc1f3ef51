#!/usr/bin/env python3
"""Side-by-side JetStream benchmark: msgbench `js pub` and `js consume` vs. a nats.go reference.

This is a benchmark, not a test: its exit status says nothing about performance,
and it must never be run as a timed test in CI. It does exit 1 if a msgbench run
did not reconcile (publishing: its acknowledgements with the stream; consuming:
every message delivered exactly once) or gave no result, because then its
figures cannot be trusted.

Usage:
    python3 bench/run_js.py [--rounds 5] [--sync-msgs 20000] [--async-msgs 200000]
                            [--batch-msgs 200000] [--consume-msgs 200000]
                            [--size 128] [--max-in-flight 256] [--batch 100]
                            [--pull-batch 500]
                            [--out bench/RESULTS-js.md] [--timeout 120] [--no-build]

It starts one nats-server with JetStream (-js, store directory in a temporary
directory) on 127.0.0.1 on a free port, builds msgbench (`cargo build --release
--locked`) and the reference (`go build` in bench/ref), and runs six cases for a
number of rounds, the tool order alternating from round to round:

  1. sync publish: each publish waits for its PubAck (`js pub --mode sync` vs.
     `ref jspub -mode sync`);
  2. async publish: up to --max-in-flight PubAcks outstanding;
  3. batch publish: atomic batches of --batch messages, one batch in flight,
     each acknowledged at its commit (`--mode batch` vs. `-mode batch`);
  4. to 6. consume, fetch / consume / ordered: each tool first fills the stream
     with --consume-msgs messages (untimed), then consumes them with a pull
     consumer pulling --pull-batch at a time (fetch), keeping --pull-batch pulled
     ahead (consume), or an ordered consumer; explicit acks, none for ordered
     (`js consume --publish before` vs. `ref jsconsume`). The figure is the
     consumption rate alone (msgbench's by_role.sub.msgs_per_sec).

All with --size bytes per message into memory streams that every run purges
first: batch publishing into one that allows atomic batches, everything else
into one without. Only sync and async have targets; the other cases are
reported as ratios. It prints a table of medians and per-round ratios; the
same report is written as Markdown to --out.

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
# that the reference set up the same stream. Batch publishing needs a stream
# that allows atomic batches, which is another config, hence another stream
# (whose subject must not overlap the first's).
STREAM = "benchjs"
SUBJECT = "benchjs.x"
BATCH_STREAM = "benchjsbatch"
BATCH_SUBJECT = "benchjsbatch.x"

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


def msgbench_js_cmd(
    b: str, url: str, mode: str, window: int, msgs: int, size: int, json_path: str, batch: int = 0
) -> list[str]:
    # msgbench refuses a window in sync mode, where it has no meaning; in batch
    # mode it counts batches, and its default (1) is what the reference does.
    window_flag = ["--max-in-flight", str(window)] if mode == "async" else []
    batch_flag = ["--batch", str(batch)] if mode == "batch" else []
    stream, subject = (BATCH_STREAM, BATCH_SUBJECT) if mode == "batch" else (STREAM, SUBJECT)
    return [
        b, "js", "pub", "--server", url, "--mode", mode, *window_flag, *batch_flag,
        "--msgs", str(msgs), "--size", str(size), "--stream", stream, "--subject", subject,
        "--purge", "--storage", "memory", "--json", json_path, "--no-progress",
    ]  # fmt: skip


def ref_js_cmd(b: str, url: str, mode: str, window: int, msgs: int, size: int, batch: int = 0) -> list[str]:
    if mode == "batch":
        how = ["-mode", "batch", "-batch", str(batch)]
        stream, subject = BATCH_STREAM, BATCH_SUBJECT
    else:
        how = ["-mode", mode, "-max-in-flight", str(window)]
        stream, subject = STREAM, SUBJECT
    return [
        b, "jspub", "-url", url, *how,
        "-msgs", str(msgs), "-size", str(size), "-stream", stream, "-subject", subject,
    ]  # fmt: skip


def consume_ack(mode: str) -> str:
    """The acks of a consume case: explicit, except for ordered consumers (which never ack)."""
    return "none" if mode == "ordered" else "explicit"


def msgbench_consume_cmd(b: str, url: str, mode: str, pull_batch: int, msgs: int, size: int, json_path: str) -> list[str]:
    return [
        b, "js", "consume", "--server", url, "--mode", mode, "--batch", str(pull_batch),
        "--ack", consume_ack(mode), "--publish", "before",
        "--msgs", str(msgs), "--size", str(size), "--stream", STREAM, "--subject", SUBJECT,
        "--purge", "--storage", "memory", "--json", json_path, "--no-progress",
    ]  # fmt: skip


def ref_consume_cmd(b: str, url: str, mode: str, pull_batch: int, msgs: int, size: int) -> list[str]:
    return [
        b, "jsconsume", "-url", url, "-mode", mode, "-batch", str(pull_batch), "-ack", consume_ack(mode),
        "-msgs", str(msgs), "-size", str(size), "-stream", STREAM, "-subject", SUBJECT,
    ]  # fmt: skip


def js_metrics(tool: str, d: dict | None, kind: str = "pub") -> dict:
    """Publishing: rate (acknowledged publishes per second), seconds, acked; msgbench
    also reconciled, lost and stored; ref also failed and stream_msgs.
    Consuming: rate (messages consumed per second, the fill not counted), seconds,
    consumed, fill_rate and reconciled; msgbench also duplicated and lost; ref also
    distinct, duplicates, unexpected and missing."""
    if kind == "consume":
        return consume_metrics(tool, d)
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


def consume_metrics(tool: str, d: dict | None) -> dict:
    m: dict = {}
    if tool == "msgbench":
        fields = {
            "rate": ("by_role", "sub", "msgs_per_sec"),
            "seconds": ("by_role", "sub", "seconds"),
            "consumed": ("by_role", "sub", "msgs"),
            "fill_rate": ("by_role", "pub", "msgs_per_sec"),
            "duplicated": ("delivery", "duplicated"),
            "lost": ("delivery", "lost"),
        }
        reconciled = dig(d, "consumer", "reconciled")
    else:
        fields = {
            "rate": ("msgs_per_sec",),
            "seconds": ("seconds",),
            "consumed": ("received",),
            "distinct": ("distinct",),
            "duplicates": ("duplicates",),
            "unexpected": ("unexpected",),
            "missing": ("missing",),
            "fill_rate": ("fill_msgs_per_sec",),
        }
        reconciled = dig(d, "reconciled")
    if isinstance(reconciled, bool):
        m["reconciled"] = reconciled
    for key, path in fields.items():
        v = num(dig(d, *path))
        if v is not None:
            m[key] = v
    return m


# What a run must report to count, by case kind.
REQUIRED = {
    "pub": {"msgbench": ("rate", "reconciled"), "ref": ("rate", "acked", "failed")},
    "consume": {"msgbench": ("rate", "reconciled"), "ref": ("rate", "consumed", "distinct", "reconciled")},
}


# --------------------------------------------------------------------------
# The benchmark


@dataclass
class Case:
    key: str
    title: str
    kind: str  # "pub" (js pub vs. jspub) or "consume" (js consume vs. jsconsume)
    mode: str  # pub: "sync", "async" or "batch"; consume: "fetch", "consume" or "ordered"
    msgs: int
    target: float | None  # None: reported as a ratio, without a target


def fmt_x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}x"


def verdict(v: float | None, target: float | None) -> str:
    if v is None:
        return "n/a"
    if target is None:
        return "no target"
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
        # msgbench runs whose jetstream.reconciled (publishing) or
        # consumer.reconciled (consuming) was not true (or that gave no
        # result), and the number of those where it was.
        self.unreconciled: list[str] = []
        self.reconciled_runs = 0
        self.server: NatsServer | None = None
        # results[case_key][tool] = one Run per round (None: failed or skipped)
        self.results: dict[str, dict[str, list[Run | None]]] = {}
        self.orders: dict[str, list[tuple[str, ...]]] = {}
        self.shown_cmds: dict[str, str] = {}
        # (case, median of per-round ratios, ratio of the medians), filled by the report.
        self.summaries: list[tuple[Case, float | None, float | None]] = []
        self.json_path = workdir / "msgbench-js.json"
        a = args
        ordered_how = f"ordered consumer, {a.pull_batch} pulled ahead, no acks"
        self.cases = [
            Case("sync", f"sync publish, {a.sync_msgs:,} msgs", "pub", "sync", a.sync_msgs, TARGET_SYNC),
            Case("async", f"async publish, {a.max_in_flight} in flight, {a.async_msgs:,} msgs", "pub", "async", a.async_msgs, TARGET_ASYNC),
            Case("batch", f"batch publish, atomic batches of {a.batch}, {a.batch_msgs:,} msgs", "pub", "batch", a.batch_msgs, None),
            Case("fetch", f"consume, fetch {a.pull_batch} at a time, explicit acks, {a.consume_msgs:,} msgs", "consume", "fetch", a.consume_msgs, None),
            Case("consume", f"consume, {a.pull_batch} pulled ahead, explicit acks, {a.consume_msgs:,} msgs", "consume", "consume", a.consume_msgs, None),
            Case("ordered", f"consume, {ordered_how}, {a.consume_msgs:,} msgs", "consume", "ordered", a.consume_msgs, None),
        ]  # fmt: skip

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
            if b is None:
                return None
            if case.kind == "consume":
                return msgbench_consume_cmd(b, url, case.mode, a.pull_batch, case.msgs, a.size, str(self.json_path))
            return msgbench_js_cmd(b, url, case.mode, a.max_in_flight, case.msgs, a.size, str(self.json_path), a.batch)
        b = self.bins["ref"] or ("ref" if for_display else None)
        if b is None:
            return None
        if case.kind == "consume":
            return ref_consume_cmd(b, url, case.mode, a.pull_batch, case.msgs, a.size)
        return ref_js_cmd(b, url, case.mode, a.max_in_flight, case.msgs, a.size, a.batch)

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
            res.metrics = js_metrics(tool, res.data, case.kind)
        has_all = all(k in res.metrics for k in REQUIRED[case.kind][tool])
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
            field = "consumer.reconciled" if case.kind == "consume" else "jetstream.reconciled"
            why = f"{field} is false" if "reconciled" in res.metrics else f"no result ({res.error})"
            self.unreconciled.append(f"{label}: {why}")
        if tool == "ref" and res.ok and case.kind == "consume":
            m = res.metrics
            if m.get("reconciled") is not True:
                self.notes.append(
                    f"ref {label}: {int(m.get('distinct', 0))} of {case.msgs} messages consumed, "
                    f"{int(m.get('duplicates', 0))} duplicates, {int(m.get('unexpected', 0))} unexpected, "
                    f"{int(m.get('missing', 0))} missing"
                )
        elif tool == "ref" and res.ok:
            m = res.metrics
            if m.get("failed") or m.get("stream_msgs") != m.get("acked"):
                self.notes.append(
                    f"ref {label}: {int(m.get('acked', 0))} acknowledged, {int(m.get('failed', 0))} failed, "
                    f"stream holds {int(m.get('stream_msgs', 0))}"
                )
        return res

    def describe(self, tool: str, m: dict, kind: str = "pub") -> str:
        if kind == "consume":
            s = (
                f"{fmt_rate(m.get('rate'))} consumed msgs/s in {m.get('seconds', 0):.3f} s, "
                f"consumed {int(m.get('consumed', 0))}, fill {fmt_rate(m.get('fill_rate'))} msgs/s"
            )
            if tool == "ref":
                s += f", distinct {int(m.get('distinct', 0))}"
            return s + f", reconciled {m.get('reconciled', 'n/a')}"
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
                        log(f"{label} {tool}: {self.describe(tool, res.metrics, case.kind)}")
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

    def median_cell(self, case: str, tool: str) -> str:
        if tool in self.unavailable:
            return "unavailable"
        s = summary(self.values(case, tool))
        return fmt_rate(s[0]) if s else "failed"

    # ----- report

    def medians_rows(self, case: Case) -> tuple[list[list[str]], float | None]:
        """The table of medians and ratios of one case, and the median of its per-round ratios."""
        ratios = self.ratios(case.key)
        med_ratio = summary([x for x in ratios if x is not None])
        ratio = med_ratio[0] if med_ratio else None
        ms, rs = summary(self.values(case.key, "msgbench")), summary(self.values(case.key, "ref"))
        of_medians = ms[0] / rs[0] if ms and rs and rs[0] else None
        ratio_cell = fmt_x(ratio) if case.target is None else f"{fmt_x(ratio)} ({verdict(ratio, case.target)})"
        rows = [
            [f"msgbench `js {case.kind}`", self.cell(case.key, "msgbench")],
            ["ref (nats.go jetstream)", self.cell(case.key, "ref")],
            ["msgbench / ref, median of per-round ratios", ratio_cell],
            ["msgbench / ref, ratio of the medians (context)", fmt_x(of_medians)],
        ]
        self.summaries.append((case, ratio, of_medians))
        return rows, ratio

    def case_section(self, case: Case, out: list[str], targets_rows: list[list[str]]) -> None:
        if case.kind == "consume":
            self.consume_section(case, out)
            return
        a = self.args
        how = {
            "sync": "Each publish waits for its PubAck",
            "async": f"Up to {a.max_in_flight} PubAcks outstanding",
            "batch": (
                f"Atomic batches (ADR-50) of {a.batch} messages, one batch in flight: {a.batch - 1} core "
                "publishes with the batch headers, then the commit, a request answered by one PubAck for "
                f"the batch. The stream (`{BATCH_STREAM}`, subject `{BATCH_SUBJECT}`) allows atomic batches"
            ),
        }[case.mode]
        out.append(f"## {case.title[0].upper()}{case.title[1:]}, {a.size} B, memory storage")
        out.append("")
        out.append(f"{how}. Acknowledged publishes per second, from the first publish to the last PubAck.")
        out.append("")
        rows, ratio = self.medians_rows(case)
        out.append(md_table(["", "acked msgs/s, median (min–max, n)"], rows))
        out.append("")
        ratios = self.ratios(case.key)
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
        if case.target is not None:
            targets_rows.append([f"{case.title}: acked msgs/s, msgbench / ref", fmt_x(ratio), verdict(ratio, case.target)])

    def consume_section(self, case: Case, out: list[str]) -> None:
        a = self.args
        how = {
            "fetch": f"A pull consumer with explicit acks, one pull request of {a.pull_batch} at a time (ref: `Fetch({a.pull_batch})`)",
            "consume": (
                f"A pull consumer with explicit acks, {a.pull_batch} messages pulled ahead and topped up as they "
                f"are consumed (ref: `Consume` with `PullMaxMessages({a.pull_batch})`)"
            ),
            "ordered": (
                f"An ordered consumer (memory storage, no acks), {a.pull_batch} messages pulled ahead "
                f"(ref: `OrderedConsumer`, then `Consume` with `PullMaxMessages({a.pull_batch})`)"
            ),
        }[case.mode]
        out.append(f"## {case.title[0].upper()}{case.title[1:]}, {a.size} B, memory storage")
        out.append("")
        out.append(
            f"Each tool first fills the purged stream with {case.msgs:,} messages (async publishes, 256 in "
            f"flight, not timed), then consumes them from the first new sequence. {how}. Messages consumed "
            "per second, from the start of consuming to the last message (msgbench: "
            "`by_role.sub.msgs_per_sec`); both check that every stream sequence arrived exactly once."
        )
        out.append("")
        rows, _ = self.medians_rows(case)
        out.append(md_table(["", "consumed msgs/s, median (min–max, n)"], rows))
        out.append("")
        ratios = self.ratios(case.key)
        rows = []
        mb_runs, ref_runs = self.results[case.key]["msgbench"], self.results[case.key]["ref"]
        for i, order in enumerate(self.orders[case.key]):
            mb, rf = mb_runs[i], ref_runs[i]
            row = [str(i + 1), ", ".join(order)]
            if mb is not None:
                m = mb.metrics
                row += [
                    fmt_rate(m.get("rate")), f"{m.get('seconds', 0):.3f} s", str(int(m.get("consumed", 0))),
                    "yes" if m.get("reconciled") is True else "**NO**", fmt_rate(m.get("fill_rate")),
                ]  # fmt: skip
            else:
                row += ["failed", "", "", "**NO**" if "msgbench" not in self.unavailable else "", ""]
            if rf is not None:
                m = rf.metrics
                row += [
                    fmt_rate(m.get("rate")), f"{m.get('seconds', 0):.3f} s",
                    f"{int(m.get('distinct', 0))} / {int(m.get('consumed', 0))}",
                    "yes" if m.get("reconciled") is True else "**NO**", fmt_rate(m.get("fill_rate")),
                ]  # fmt: skip
            else:
                row += ["failed", "", "", "", ""]
            row.append(fmt_x(ratios[i]) if i < len(ratios) else "n/a")
            rows.append(row)
        out.append("Each run (fill: the untimed publishing before consuming, acknowledged msgs/s):")
        out.append("")
        out.append(
            md_table(
                [
                    "round", "order", "msgbench msgs/s", "msgbench time", "msgbench consumed", "reconciled",
                    "msgbench fill", "ref msgs/s", "ref time", "ref distinct / received", "ref exactly once",
                    "ref fill", "msgbench / ref",
                ],
                rows,
            )
        )  # fmt: skip
        out.append("")

    def report(self, env: dict[str, str]) -> str:
        a = self.args
        out: list[str] = []
        targets_rows: list[list[str]] = []
        body: list[str] = []
        self.summaries = []
        for case in self.cases:
            self.case_section(case, body, targets_rows)
        targets_rows.append(
            [
                "msgbench `jetstream.reconciled` (publishing) and `consumer.reconciled` (consuming) in every run",
                f"{self.reconciled_runs} of {self.expected_runs()} runs",
                "met" if self.all_reconciled() else "**FAILED**",
            ]
        )

        out.append("# msgbench JetStream side-by-side benchmark")
        out.append("")
        out.append(
            f"Generated by `python3 bench/run_js.py --rounds {a.rounds} --sync-msgs {a.sync_msgs} "
            f"--async-msgs {a.async_msgs} --batch-msgs {a.batch_msgs} --consume-msgs {a.consume_msgs} "
            f"--size {a.size} --max-in-flight {a.max_in_flight} --batch {a.batch} --pull-batch {a.pull_batch}`. "
            "One nats-server with JetStream; both tools publish into the same memory stream "
            f"(`{STREAM}`, subject `{SUBJECT}`, 1 replica, no limits, discard old), which every run "
            "purges first; batch publishing goes to a second one that also allows atomic batches "
            f"(`{BATCH_STREAM}`, subject `{BATCH_SUBJECT}`). The consume cases fill `{STREAM}` first "
            "and time the consuming alone. Figures are acknowledged publishes or consumed messages per "
            "second, medians over the rounds (min–max in parentheses); ratios are the median of "
            "per-round ratios (each round runs the two tools back to back, the order alternating). "
            "This is a benchmark, not a test."
        )
        out.append("")
        out.append(md_table(["fact", "value"], [[k, v] for k, v in env.items()]))
        out.append("")
        out.append("## Targets")
        out.append("")
        out.append(md_table(["target", "measured", "verdict"], targets_rows))
        out.append("")
        untargeted = [
            [case.title, self.median_cell(case.key, "msgbench"), self.median_cell(case.key, "ref"), fmt_x(ratio), fmt_x(of_medians)]
            for case, ratio, of_medians in self.summaries
            if case.target is None
        ]
        if untargeted:
            out.append("## Other cases (no target)")
            out.append("")
            out.append(
                "Publishing: acknowledged msgs/s; consuming: consumed msgs/s. Medians; the sections below "
                "have the spread and every run."
            )
            out.append("")
            out.append(
                md_table(
                    ["case", "msgbench msgs/s", "ref msgs/s", "msgbench / ref, median of per-round ratios", "ratio of the medians"],
                    untargeted,
                )
            )
            out.append("")
        out.extend(body)

        server_cmd = self.show(self.server.cmd) if self.server is not None else None
        out += commands_block(server_cmd, "cargo build --release --locked\n(cd bench/ref && go build -o ref .)", self.shown_cmds)
        unreconciled = [f"NOT RECONCILED msgbench {one_line(u)}" for u in self.unreconciled]
        out += notes_block(self.unavailable, self.failures, self.kept, self.notes, unreconciled)
        return scrub_paths("\n".join(out), self.workdir)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Side-by-side JetStream benchmark of msgbench js pub and js consume vs nats.go.")
    p.add_argument("--rounds", type=int, default=5, help="rounds per case (default 5)")
    p.add_argument("--sync-msgs", type=int, default=20_000, help="messages per sync run (default 20000)")
    p.add_argument("--async-msgs", type=int, default=200_000, help="messages per async run (default 200000)")
    p.add_argument("--batch-msgs", type=int, default=200_000, help="messages per batch-publish run (default 200000)")
    p.add_argument("--consume-msgs", type=int, default=200_000, help="messages filled, then consumed, per consume run (default 200000)")
    p.add_argument("--size", type=int, default=128, help="payload size in bytes (default 128; msgbench needs >= 8)")
    p.add_argument("--max-in-flight", type=int, default=256, help="async window: PubAcks outstanding at most (default 256)")
    p.add_argument("--batch", type=int, default=100, help="messages per atomic batch in the batch case (default 100, at most 1000)")
    p.add_argument("--pull-batch", type=int, default=500, help="messages per pull (fetch) or pulled ahead (consume, ordered) (default 500)")
    p.add_argument("--out", default=str(BENCH / "RESULTS-js.md"), help="Markdown report (default bench/RESULTS-js.md)")
    p.add_argument("--timeout", type=float, default=120.0, help="time limit of every tool run in seconds (default 120)")
    p.add_argument("--no-build", action="store_true", help="skip `cargo build --release --locked`; use the existing binary")
    a = p.parse_args(argv)
    counts = (a.rounds, a.sync_msgs, a.async_msgs, a.batch_msgs, a.consume_msgs, a.max_in_flight, a.batch, a.pull_batch)
    if min(counts) < 1 or a.timeout <= 0:
        p.error(
            "--rounds, --sync-msgs, --async-msgs, --batch-msgs, --consume-msgs, --max-in-flight, --batch, "
            "--pull-batch and --timeout must be positive"
        )
    if a.batch > 1000:
        p.error("--batch must be at most 1000 (the server's largest atomic batch)")
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
