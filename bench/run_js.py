#!/usr/bin/env python3
"""Side-by-side JetStream benchmark: msgbench `js pub` and `js consume` vs. a nats.go reference.

A benchmark, not a test: its exit status says nothing about performance; never run it as a
timed test in CI. It does exit 1 if a msgbench run did not reconcile (publishing: its
acknowledgements with the stream; consuming: every message delivered exactly once) or gave no
result, because then its figures cannot be trusted.

    python3 bench/run_js.py [--rounds 5] [--sync-msgs 20000] [--async-msgs 200000]
                            [--batch-msgs 200000] [--fast-msgs 500000] [--consume-msgs 200000]
                            [--size 128] [--max-in-flight 256] [--batch 100] [--fast-batch 500]
                            [--max-outstanding-acks 2] [--pull-batch 500] [--cases fast,async]
                            [--out bench/RESULTS-js.md] [--timeout 120] [--no-build]

On one nats-server with JetStream, into streams that every run purges first: sync, async,
atomic-batch and fast-batch publishing into memory streams, async publishing into a file stream
with the async persist mode, and consuming with fetch, consume and an ordered consumer
(bench/README.md).
"""

from __future__ import annotations

from benchkit.fmt import fmt_rate, fmt_x, md_table, median, one_line, verdict
from benchkit.proc import dig, log, num
from benchkit.server import NatsServer
from benchkit.suite import Case, Suite

# Targets: msgbench's acknowledged publishes per second / the reference's.
TARGET_SYNC = 1.2
TARGET_ASYNC = 1.5
TARGET_FAST = 1.2

# One stream for both tools: msgbench's create is a no-op only if the stream that is already
# there has exactly its config, so sharing it also proves that the reference set up the same
# stream. Batch publishing needs a stream that allows atomic batches, which is another config,
# hence another stream (whose subject must not overlap the first's).
STREAM, SUBJECT = "benchjs", "benchjs.x"
BATCH_STREAM, BATCH_SUBJECT = "benchjsbatch", "benchjsbatch.x"
# Fast batches need a stream that allows them; async persist a file stream that has it.
FAST_STREAM, FAST_SUBJECT = "benchjsfast", "benchjsfast.x"
PERSIST_STREAM, PERSIST_SUBJECT = "benchjspersist", "benchjspersist.x"

TOOLS = ("msgbench", "ref")
CASE_KEYS = ("sync", "async", "batch", "fast", "persist-async", "fetch", "consume", "ordered")

# What a run must report to count, by case kind and tool.
REQUIRED = {
    "pub": {"msgbench": ("rate", "reconciled"), "ref": ("rate", "acked", "failed")},
    "consume": {"msgbench": ("rate", "reconciled"), "ref": ("rate", "consumed", "distinct", "reconciled")},
}

# The figures of a run: key -> path in the tool's JSON, by case kind and tool.
FIELDS = {
    ("pub", "msgbench"): {
        "rate": ("throughput", "msgs_per_sec"), "seconds": ("throughput", "seconds"), "acked": ("jetstream", "acked"),
        "stored": ("jetstream", "stored"), "lost": ("delivery", "lost"), "reconciled": ("jetstream", "reconciled"),
    },
    ("pub", "ref"): {
        "rate": ("msgs_per_sec",), "seconds": ("seconds",), "acked": ("acked",), "failed": ("failed",),
        "stream_msgs": ("stream_msgs",),
    },
    ("consume", "msgbench"): {
        "rate": ("by_role", "sub", "msgs_per_sec"), "seconds": ("by_role", "sub", "seconds"),
        "consumed": ("by_role", "sub", "msgs"), "fill_rate": ("by_role", "pub", "msgs_per_sec"),
        "duplicated": ("delivery", "duplicated"), "lost": ("delivery", "lost"), "reconciled": ("consumer", "reconciled"),
    },
    ("consume", "ref"): {
        "rate": ("msgs_per_sec",), "seconds": ("seconds",), "consumed": ("received",), "distinct": ("distinct",),
        "duplicates": ("duplicates",), "unexpected": ("unexpected",), "missing": ("missing",),
        "fill_rate": ("fill_msgs_per_sec",), "reconciled": ("reconciled",),
    },
}  # fmt: skip


def consume_ack(mode: str) -> str:
    """The acks of a consume case: explicit, except for ordered consumers (which never ack)."""
    return "none" if mode == "ordered" else "explicit"


def flags(values: dict[str, str], dash: str) -> list[str]:
    """["--msgs", "1000", ...] (msgbench) or ["-msgs", "1000", ...] (Go's flag package)."""
    return [x for k, v in values.items() for x in (dash + k, v)]


def fmt_us(v: float) -> str:
    return f"{v:.2f} µs"


def capitalized(s: str) -> str:
    return s[0].upper() + s[1:]


class JetStream(Suite):
    script = "run_js.py"
    title = "msgbench JetStream side-by-side benchmark"
    description = "Side-by-side JetStream benchmark of msgbench js pub and js consume vs nats.go."
    default_out = "RESULTS-js.md"

    @classmethod
    def add_arguments(cls, p):
        p.add_argument("--sync-msgs", type=int, default=20_000, help="messages per sync run (default 20000)")
        p.add_argument("--async-msgs", type=int, default=200_000, help="messages per async run (default 200000)")
        p.add_argument("--batch-msgs", type=int, default=200_000, help="messages per batch-publish run (default 200000)")
        p.add_argument("--fast-msgs", type=int, default=500_000, help="messages per fast-batch run (default 500000)")
        p.add_argument("--consume-msgs", type=int, default=200_000, help="messages filled, then consumed, per consume run (default 200000)")
        p.add_argument("--size", type=int, default=128, help="payload size in bytes (default 128; msgbench needs >= 8)")
        p.add_argument("--max-in-flight", type=int, default=256, help="async window: PubAcks outstanding at most (default 256)")
        p.add_argument("--batch", type=int, default=100, help="messages per atomic batch in the batch case (default 100, at most 1000)")
        p.add_argument("--fast-batch", type=int, default=500, help="fast batches: messages between two flow acknowledgements (default 500, at most 500)")
        p.add_argument("--max-outstanding-acks", type=int, default=2, help="fast batches: flow acknowledgements waited for at most (default 2)")
        p.add_argument("--cases", default=None, help=f"only these cases, comma-separated ({', '.join(CASE_KEYS)}; default all)")
        p.add_argument("--pull-batch", type=int, default=500, help="messages per pull (fetch) or pulled ahead (consume, ordered) (default 500)")

    @classmethod
    def check_arguments(cls, p, a):
        if min(a.sync_msgs, a.async_msgs, a.batch_msgs, a.fast_msgs, a.consume_msgs, a.max_in_flight, a.batch, a.fast_batch, a.max_outstanding_acks, a.pull_batch) < 1:
            p.error("--sync-msgs, --async-msgs, --batch-msgs, --fast-msgs, --consume-msgs, --max-in-flight, --batch, --fast-batch, --max-outstanding-acks and --pull-batch must be positive")
        if a.batch > 1000:
            p.error("--batch must be at most 1000 (the server's largest atomic batch)")
        if a.fast_batch > 500:
            p.error("--fast-batch must be at most 500 (the server's largest flow)")
        if a.size < 8:
            p.error("--size must be at least 8 (msgbench puts a sequence number in every payload)")
        if a.cases is not None:
            unknown = [k for k in a.cases.split(",") if k not in CASE_KEYS]
            if unknown or not a.cases:
                p.error(f"--cases: unknown case {', '.join(unknown) or '(none given)'} (cases: {', '.join(CASE_KEYS)})")

    def __init__(self, args):
        super().__init__(args)
        # msgbench runs whose jetstream.reconciled (publishing) or consumer.reconciled
        # (consuming) was not true, or that gave no result; and the number where it was.
        self.unreconciled: list[str] = []
        self.reconciled_runs = 0

    def make_cases(self):
        a = self.args
        pull = a.pull_batch
        cases = [
            Case("sync", f"sync publish, {a.sync_msgs:,} msgs", TOOLS, kind="pub", mode="sync", msgs=a.sync_msgs, target=TARGET_SYNC),
            Case("async", f"async publish, {a.max_in_flight} in flight, {a.async_msgs:,} msgs", TOOLS, kind="pub", mode="async", msgs=a.async_msgs, target=TARGET_ASYNC),
            Case("batch", f"batch publish, atomic batches of {a.batch}, {a.batch_msgs:,} msgs", TOOLS, kind="pub", mode="batch", msgs=a.batch_msgs, target=None),
            Case("fast", f"fast batch publish, flow {a.fast_batch}, {a.max_outstanding_acks} acks outstanding, {a.fast_msgs:,} msgs", TOOLS, kind="pub", mode="fast", msgs=a.fast_msgs, target=TARGET_FAST),
            Case("persist-async", f"async publish, {a.max_in_flight} in flight, persist async, {a.async_msgs:,} msgs", TOOLS, kind="pub", mode="async", persist="async", msgs=a.async_msgs, target=None),
            Case("fetch", f"consume, fetch {pull} at a time, explicit acks, {a.consume_msgs:,} msgs", TOOLS, kind="consume", mode="fetch", msgs=a.consume_msgs, target=None),
            Case("consume", f"consume, {pull} pulled ahead, explicit acks, {a.consume_msgs:,} msgs", TOOLS, kind="consume", mode="consume", msgs=a.consume_msgs, target=None),
            Case("ordered", f"consume, ordered consumer, {pull} pulled ahead, no acks, {a.consume_msgs:,} msgs", TOOLS, kind="consume", mode="ordered", msgs=a.consume_msgs, target=None),
        ]  # fmt: skip
        wanted = a.cases.split(",") if a.cases else CASE_KEYS
        return [c for c in cases if c.key in wanted]

    def server_for(self, case):
        return self.server or self.start_server(NatsServer(self.nats_bin, self.workdir, jetstream=True))

    def json_file(self, case, tool):
        # msgbench's stdout has its text report; its JSON goes to a file.
        return self.workdir / "msgbench-js.json" if tool == "msgbench" else None

    def command(self, case, tool):
        a, url = self.args, self.server.url
        batch, fast = case.mode == "batch", case.mode == "fast"
        persist = getattr(case, "persist", None)
        stream, subject = (
            (BATCH_STREAM, BATCH_SUBJECT) if batch
            else (FAST_STREAM, FAST_SUBJECT) if fast
            else (PERSIST_STREAM, PERSIST_SUBJECT) if persist
            else (STREAM, SUBJECT)
        )  # fmt: skip
        common = {"msgs": str(case.msgs), "size": str(a.size), "stream": stream, "subject": subject}
        if persist:
            common |= {"storage": "file", "persist": persist}
        if fast:
            common |= {"batch": str(a.fast_batch), "max-outstanding-acks": str(a.max_outstanding_acks)}
        if tool == "msgbench":
            if case.kind == "consume":
                how = ["consume", "--server", url, "--mode", case.mode, "--batch", str(a.pull_batch), "--ack", consume_ack(case.mode), "--publish", "before"]
            else:
                # msgbench refuses a window in sync mode, where it has no meaning; in batch mode
                # it counts batches, and its default (1) is what the reference does.
                window = ["--max-in-flight", str(a.max_in_flight)] if case.mode == "async" else []
                how = ["pub", "--server", url, "--mode", case.mode, *window, *(["--batch", str(a.batch)] if batch else [])]
            storage = [] if persist else ["--storage", "memory"]
            tail = ["--purge", *storage, "--json", str(self.json_file(case, tool)), "--no-progress"]
            return [self.bin("msgbench"), "js", *how, *flags(common, "--"), *tail]
        if case.kind == "consume":
            how = ["jsconsume", "-url", url, "-mode", case.mode, "-batch", str(a.pull_batch), "-ack", consume_ack(case.mode)]
        elif batch:
            how = ["jspub", "-url", url, "-mode", "batch", "-batch", str(a.batch)]
        elif fast:
            how = ["jspub", "-url", url, "-mode", "fast"]
        else:
            how = ["jspub", "-url", url, "-mode", case.mode, "-max-in-flight", str(a.max_in_flight)]
        return [self.bin("ref"), *how, *flags(common, "-")]

    def execute(self, case, tool, cmd, sample_rss):
        # The server's CPU over a publishing run, per message: with the tool's own CPU per
        # message, it bounds what a leaner client can gain on a machine whose cores both share.
        before = self.server.cpu_seconds()
        res = super().execute(case, tool, cmd, sample_rss)
        after = self.server.cpu_seconds()
        if case.kind == "pub" and before is not None and after is not None:
            res.metrics["server_us"] = (after - before) * 1e6 / case.msgs
        return res

    def metrics(self, case, tool, run):
        m = {"client_us": run.cpu_s * 1e6 / case.msgs} if case.kind == "pub" else {}
        for key, path in FIELDS[(case.kind, tool)].items():
            v = dig(run.data, *path)
            if key == "reconciled":
                if isinstance(v, bool):
                    m[key] = v
            elif num(v) is not None:
                m[key] = num(v)
        return m

    def required(self, case, tool):
        return REQUIRED[case.kind][tool]

    def after_run(self, case, tool, run, label):
        m = run.metrics
        if tool == "msgbench":
            if m.get("reconciled") is True:
                self.reconciled_runs += 1
            else:
                field = "consumer.reconciled" if case.kind == "consume" else "jetstream.reconciled"
                self.unreconciled.append(f"{label}: " + (f"{field} is false" if "reconciled" in m else f"no result ({run.error})"))
        elif run.ok and case.kind == "consume" and m.get("reconciled") is not True:
            self.notes.append(
                f"ref {label}: {int(m.get('distinct', 0))} of {case.msgs} messages consumed, "
                f"{int(m.get('duplicates', 0))} duplicates, {int(m.get('unexpected', 0))} unexpected, "
                f"{int(m.get('missing', 0))} missing"
            )
        elif run.ok and case.kind == "pub" and (m.get("failed") or m.get("stream_msgs") != m.get("acked")):
            self.notes.append(
                f"ref {label}: {int(m.get('acked', 0))} acknowledged, {int(m.get('failed', 0))} failed, "
                f"stream holds {int(m.get('stream_msgs', 0))}"
            )

    def describe(self, case, tool, run):
        m = run.metrics
        if case.kind == "consume":
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

    # ----- verdict

    def expected_runs(self) -> int:
        return self.args.rounds * len(self.cases)

    def exit_status(self) -> int:
        """1 unless every msgbench run ran and reconciled (an unavailable msgbench fails this too)."""
        if self.reconciled_runs == self.expected_runs():
            return 0
        log(f"!! only {self.reconciled_runs} of {self.expected_runs()} msgbench runs reconciled")
        for u in self.unreconciled:
            log(f"!! {u}")
        return 1

    # ----- the report

    def intro(self):
        return [
            f"{self.generated_by()} One nats-server with JetStream; both tools publish into the same memory stream "
            f"(`{STREAM}`, subject `{SUBJECT}`, 1 replica, no limits, discard old), which every run "
            "purges first; batch publishing goes to a second one that also allows atomic batches "
            f"(`{BATCH_STREAM}`, subject `{BATCH_SUBJECT}`), fast-batch publishing to a third that allows "
            f"fast batches (`{FAST_STREAM}`), and the persist-async case to a file stream with the async "
            f"persist mode (`{PERSIST_STREAM}`). The consume cases fill `{STREAM}` first "
            "and time the consuming alone. Figures are acknowledged publishes or consumed messages per "
            "second, medians over the rounds (min–max in parentheses); ratios are the median of "
            "per-round ratios (each round runs the two tools back to back, the order alternating). "
            "This is a benchmark, not a test."
        ]

    def body(self):
        targets, untargeted, sections = [], [], []
        for case in self.cases:
            ratio = self.median_ratio(case.key, "msgbench", "ref", "rate")
            of_medians = self.ratio_of_medians(case.key, "msgbench", "ref", "rate")
            sections += self.case_section(case, ratio, of_medians)
            if case.target is not None:
                targets.append([f"{case.title}: acked msgs/s, msgbench / ref", fmt_x(ratio), verdict(ratio, case.target)])
            else:
                untargeted.append([case.title, self.median_cell(case.key, "msgbench"), self.median_cell(case.key, "ref"), fmt_x(ratio), fmt_x(of_medians)])
        all_ok = self.reconciled_runs == self.expected_runs()
        targets.append(
            [
                "msgbench `jetstream.reconciled` (publishing) and `consumer.reconciled` (consuming) in every run",
                f"{self.reconciled_runs} of {self.expected_runs()} runs",
                "met" if all_ok else "**FAILED**",
            ]
        )
        out = ["## Targets", "", md_table(["target", "measured", "verdict"], targets), ""]
        if untargeted:
            out += ["## Other cases (no target)", ""]
            out += ["Publishing: acknowledged msgs/s; consuming: consumed msgs/s. Medians; the sections below have the spread and every run.", ""]
            header = ["case", "msgbench msgs/s", "ref msgs/s", "msgbench / ref, median of per-round ratios", "ratio of the medians"]
            out += [md_table(header, untargeted), ""]
        return out + sections

    def median_cell(self, case_key: str, tool: str) -> str:
        if not self.available(tool):
            return "unavailable"
        med = median(self.values(case_key, tool, "rate"))
        return fmt_rate(med) if med is not None else "failed"

    def case_section(self, case: Case, ratio: float | None, of_medians: float | None) -> list[str]:
        a = self.args
        if case.kind == "consume":
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
            text = (
                f"Each tool first fills the purged stream with {case.msgs:,} messages (async publishes, 256 in "
                f"flight, not timed), then consumes them from the first new sequence. {how}. Messages consumed "
                "per second, from the start of consuming to the last message (msgbench: "
                "`by_role.sub.msgs_per_sec`); both check that every stream sequence arrived exactly once."
            )
            what = "consumed msgs/s"
        else:
            how = {
                "sync": "Each publish waits for its PubAck",
                "async": f"Up to {a.max_in_flight} PubAcks outstanding",
                "batch": (
                    f"Atomic batches (ADR-50) of {a.batch} messages, one batch in flight: {a.batch - 1} core "
                    "publishes with the batch headers, then the commit, a request answered by one PubAck for "
                    f"the batch. The stream (`{BATCH_STREAM}`, subject `{BATCH_SUBJECT}`) allows atomic batches"
                ),
                "fast": (
                    f"One fast batch per run (JetStream API level 4): a flow acknowledgement asked every "
                    f"{a.fast_batch} messages, at most {a.max_outstanding_acks} of them outstanding, then the "
                    "end-of-batch commit, whose PubAck counts what was stored (ref: orbit.go's "
                    f"`jetstreamext.FastPublisher`). The stream (`{FAST_STREAM}`, subject `{FAST_SUBJECT}`) "
                    "allows fast batches"
                ),
            }[case.mode]
            if getattr(case, "persist", None):
                how = (
                    f"Up to {a.max_in_flight} PubAcks outstanding, into a file stream with the async persist mode "
                    f"(`{PERSIST_STREAM}`, subject `{PERSIST_SUBJECT}`): an acknowledgement comes before the "
                    "write reaches the file"
                )
            text = f"{how}. Acknowledged publishes per second, from the first publish to the last PubAck."
            what = "acked msgs/s"
        storage = "file storage" if getattr(case, "persist", None) else "memory storage"
        out = [f"## {capitalized(case.title)}, {a.size} B, {storage}", "", text, ""]
        ratio_cell = fmt_x(ratio) if case.target is None else f"{fmt_x(ratio)} ({verdict(ratio, case.target)})"
        rows = [
            [f"msgbench `js {case.kind}`", self.cell(case.key, "msgbench", "rate")],
            ["ref (orbit.go jetstreamext)" if case.mode == "fast" else "ref (nats.go jetstream)", self.cell(case.key, "ref", "rate")],
            ["msgbench / ref, median of per-round ratios", ratio_cell],
            ["msgbench / ref, ratio of the medians (context)", fmt_x(of_medians)],
        ]
        out += [md_table(["", f"{what}, median (min–max, n)"], rows), ""]
        if case.kind == "pub":
            out += self.cpu_section(case)
        out += ["Each run (fill: the untimed publishing before consuming, acknowledged msgs/s):" if case.kind == "consume" else "Each run:", ""]
        out += [self.runs_table(case), ""]
        return out

    def cpu_section(self, case: Case) -> list[str]:
        """CPU per message of each tool and of the server under it, and the ratio those allow."""
        med = {(t, k): median(self.values(case.key, t, k)) for t in TOOLS for k in ("client_us", "server_us")}
        rows = [
            ["the tool (user + system)", self.cell(case.key, "msgbench", "client_us", fmt_us), self.cell(case.key, "ref", "client_us", fmt_us)],
            ["nats-server under it", self.cell(case.key, "msgbench", "server_us", fmt_us), self.cell(case.key, "ref", "server_us", fmt_us)],
        ]
        out = ["CPU per acknowledged message, median (min–max, n):", "", md_table(["", "msgbench", "ref"], rows), ""]
        if all(v is not None for v in med.values()):
            mb = med[("msgbench", "client_us")] + med[("msgbench", "server_us")]
            rf = med[("ref", "client_us")] + med[("ref", "server_us")]
            out += [
                f"Server and tool together spend {mb:.2f} µs a message with msgbench and {rf:.2f} µs with the reference "
                "(each process whole: start-up, and msgbench's read-back of the stream, included). Where the cores are "
                f"the limit, the rate is the cores over that sum, so the CPU allows msgbench {rf / mb:.2f}x the reference here.",
                "",
            ]
        return out

    def runs_table(self, case: Case) -> str:
        ratios = self.ratios(case.key, "msgbench", "ref", "rate")
        mb_runs, ref_runs = self.runs(case.key, "msgbench"), self.runs(case.key, "ref")
        consume = case.kind == "consume"
        rows = []
        for i, order in enumerate(self.orders.get(case.key, [])):
            mb = mb_runs[i] if i < len(mb_runs) else None
            rf = ref_runs[i] if i < len(ref_runs) else None
            row = [str(i + 1), ", ".join(order)]
            if mb is not None:
                m = mb.metrics
                row += [fmt_rate(m.get("rate")), f"{m.get('seconds', 0):.3f} s", str(int(m.get("consumed" if consume else "acked", 0)))]
                row.append("yes" if m.get("reconciled") is True else "**NO**")
                row += [fmt_rate(m.get("fill_rate"))] if consume else []
            else:
                row += ["failed", "", "", "**NO**" if self.available("msgbench") else ""] + ([""] if consume else [])
            if rf is not None:
                m = rf.metrics
                row += [fmt_rate(m.get("rate")), f"{m.get('seconds', 0):.3f} s"]
                if consume:
                    row += [f"{int(m.get('distinct', 0))} / {int(m.get('consumed', 0))}", "yes" if m.get("reconciled") is True else "**NO**", fmt_rate(m.get("fill_rate"))]
                else:
                    row += [f"{int(m.get('acked', 0))} / {int(m.get('failed', 0))}", str(int(m.get("stream_msgs", 0)))]
            else:
                row += ["failed", "", "", ""] + ([""] if consume else [])
            row.append(fmt_x(ratios[i]) if i < len(ratios) else "n/a")
            rows.append(row)
        if consume:
            header = [
                "round", "order", "msgbench msgs/s", "msgbench time", "msgbench consumed", "reconciled", "msgbench fill",
                "ref msgs/s", "ref time", "ref distinct / received", "ref exactly once", "ref fill", "msgbench / ref",
            ]  # fmt: skip
        else:
            header = [
                "round", "order", "msgbench msgs/s", "msgbench time", "msgbench acked", "reconciled",
                "ref msgs/s", "ref time", "ref acked / failed", "ref stream msgs", "msgbench / ref",
            ]  # fmt: skip
        return md_table(header, rows)

    def extra_notes(self):
        return [f"NOT RECONCILED msgbench {one_line(u)}" for u in self.unreconciled]


if __name__ == "__main__":
    JetStream.main()
