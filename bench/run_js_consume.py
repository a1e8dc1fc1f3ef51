#!/usr/bin/env python3
"""JetStream consuming side by side: msgbench `js consume` against `nats bench js` (natscli),
and optionally against an older msgbench binary, each round on a freshly filled stream.

A benchmark, not a test: its exit status says whether it could measure, never how fast anything
was. It exits 1 if a msgbench run did not reconcile (every message delivered exactly once) or
gave no result.

    python3 bench/run_js_consume.py [--rounds 5] [--msgs 200000] [--size 128] [--batch 500]
                                    [--nats nats] [--old PATH] [--strace]
                                    [--out bench/RESULTS-js-consume.md] [--timeout 120] [--no-build]

Before every run, of every tool, the stream is deleted and filled again with --msgs messages by
the msgbench under test (`js pub`, async, untimed), so no tool consumes a stream another left
behind and every tool starts from the same state. Then the tool consumes them: with explicit
acks from a pull consumer (consume, fetch), and with an ordered consumer (no acks). Client CPU
per message is the consuming process's user + system time (os.wait4) over the messages.
--old adds an earlier msgbench binary as a third tool (before/after a change, side by side);
--strace counts the consumer's socket syscalls once per mode and msgbench binary.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from benchkit.fmt import fmt_rate, fmt_x, md_table, verdict
from benchkit.proc import dig, log, num, run_child
from benchkit.server import NatsServer
from benchkit.suite import Case, Suite
from benchkit import REPO, build

# nats bench's stream (its default name); msgbench fills and consumes the same one.
STREAM, SUBJECT = "benchstream", "benchstream.x"

# Targets: consumed msgs/s of msgbench over nats bench's, per mode.
TARGETS = {"consume": 1.3, "fetch": 1.3, "ordered": 2.0}


def fmt_ns(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.0f} ns"


class JsConsume(Suite):
    script = "run_js_consume.py"
    title = "msgbench js consume against nats bench js"
    description = "JetStream consuming side by side: msgbench js consume vs nats bench js (and an older msgbench)."
    default_out = "RESULTS-js-consume.md"
    binaries = ("msgbench",)
    shown_names = {"msgbench": "target/release/msgbench", "old": "msgbench-old", "nats": "nats"}
    # --old is a path on one machine: the report names the binary msgbench-old and says what it is.
    hidden_flags = ("out", "timeout", "no_build", "nats", "old")

    @classmethod
    def add_arguments(cls, p):
        p.add_argument("--msgs", type=int, default=200_000, help="messages filled, then consumed, per run (default 200000)")
        p.add_argument("--size", type=int, default=128, help="payload size in bytes (default 128; msgbench needs >= 8)")
        p.add_argument("--batch", type=int, default=500, help="messages per pull (fetch) or pulled ahead (consume, ordered) (default 500)")
        p.add_argument("--nats", default="nats", help="the natscli binary (default: nats on PATH)")
        p.add_argument("--old", default=None, help="an earlier msgbench binary to run as a third tool")
        p.add_argument("--old-label", default=None, help="what --old was built from (a commit, say), for the report")
        p.add_argument("--strace", action="store_true", help="also count socket syscalls under strace -f -c, once per mode and msgbench binary")

    @classmethod
    def check_arguments(cls, p, a):
        if min(a.msgs, a.batch) < 1 or a.size < 8:
            p.error("--msgs and --batch must be positive, --size at least 8")

    def __init__(self, args):
        super().__init__(args)
        self.unreconciled: list[str] = []
        self.reconciled_runs = 0
        self.strace_rows: list[list[str]] = []

    def tools(self) -> tuple[str, ...]:
        return ("msgbench", "nats", "old") if self.args.old else ("msgbench", "nats")

    def make_cases(self):
        a = self.args
        ack = {"consume": "explicit", "fetch": "explicit", "ordered": "none"}
        how = {
            "consume": f"{a.batch} pulled ahead, explicit acks",
            "fetch": f"fetch {a.batch} at a time, explicit acks",
            "ordered": f"ordered consumer, {a.batch} pulled ahead, no acks",
        }
        return [
            Case(m, f"{how[m]}, {a.msgs:,} msgs", self.tools(), mode=m, ack=ack[m], target=TARGETS[m])
            for m in ("consume", "fetch", "ordered")
        ]

    def build(self):
        path, err = build.msgbench(self.args.no_build)
        self.provide("msgbench", path, err)
        found = shutil.which(self.args.nats)
        self.provide("nats", found, "" if found else f"--nats {self.args.nats}: not found")
        if self.args.old:
            path, err = build.executable(self.args.old, "--old")
            self.provide("old", path, err)

    def server_for(self, case):
        return self.server or self.start_server(NatsServer(self.nats_bin, self.workdir, jetstream=True))

    def json_file(self, case, tool):
        return self.workdir / "consume.json" if tool in ("msgbench", "old") else None

    def command(self, case, tool):
        a, url = self.args, self.server.url
        if tool == "nats":
            verb = {"consume": "consume", "fetch": "fetch", "ordered": "ordered"}[case.mode]
            acks = [] if case.mode == "ordered" else ["--acks", case.ack]
            return [
                self.bin("nats"), "--server", url, "bench", "js", verb, "--msgs", str(a.msgs), "--size", str(a.size),
                "--batch", str(a.batch), "--stream", STREAM, *acks, "--no-progress", "--csv", str(self.workdir / "nats.csv"),
            ]  # fmt: skip
        return [
            self.bin(tool), "js", "consume", "--server", url, "--publish", "none", "--mode", case.mode,
            "--ack", case.ack, "--batch", str(a.batch), "--msgs", str(a.msgs), "--stream", STREAM,
            "--json", str(self.json_file(case, tool)), "--no-progress",
        ]  # fmt: skip

    def fill_commands(self) -> list[list[str]]:
        url = self.server.url
        return [
            [self.bin("nats"), "--server", url, "stream", "rm", "-f", STREAM],
            [
                self.bin("msgbench"), "js", "pub", "--server", url, "--msgs", str(self.args.msgs), "--size", str(self.args.size),
                "--stream", STREAM, "--subject", SUBJECT, "--storage", "memory", "--mode", "async", "--no-progress",
            ],
        ]  # fmt: skip

    def warm_up(self, case):
        # Not a warm-up: the report's command list gets the fill that precedes every run.
        rm, pub = self.fill_commands()
        self.shown_cmds["before every run: delete the stream"] = self.show(rm)
        self.shown_cmds["before every run: fill it"] = self.show(pub)

    def fill(self) -> None:
        """A fresh stream of --msgs messages: deleted (with any consumer a run left), then filled."""
        rm, cmd = self.fill_commands()
        subprocess.run(rm, capture_output=True, timeout=30)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=self.args.timeout)
        if p.returncode != 0:
            raise RuntimeError(f"filling the stream failed: {p.stderr.strip()[-300:]}")

    def execute(self, case, tool, cmd, sample_rss):
        self.fill()
        csv = self.workdir / "nats.csv"
        csv.unlink(missing_ok=True)
        res = run_child(cmd, self.timeout(case, tool), self.workdir, cwd=REPO, json_file=self.json_file(case, tool))
        if tool == "nats" and res.exit_code == 0 and not res.timed_out:
            # nats bench writes its figures as CSV: RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,...
            try:
                rows = [r.split(",") for r in csv.read_text().splitlines() if r and not r.startswith("#")]
                res.data = {"msgs_per_sec": float(rows[-1][4]), "seconds": float(rows[-1][6])}
                res.error, res.ok = "", True
            except (OSError, IndexError, ValueError) as e:
                res.error = f"no CSV result: {e}"
        return res

    def metrics(self, case, tool, run):
        a = self.args
        if tool == "nats":
            m = {"rate": num(run.data.get("msgs_per_sec")), "seconds": num(run.data.get("seconds")), "consumed": a.msgs}
        else:
            m = {
                "rate": num(dig(run.data, "by_role", "sub", "msgs_per_sec")),
                "seconds": num(dig(run.data, "by_role", "sub", "seconds")),
                "consumed": num(dig(run.data, "consumer", "consumed")),
                "writes": num(dig(run.data, "connections", "writes")),
            }
            rec = dig(run.data, "consumer", "reconciled")
            if isinstance(rec, bool):
                m["reconciled"] = rec
        m = {k: v for k, v in m.items() if v is not None}
        if m.get("consumed"):
            m["cpu_ns"] = run.cpu_s * 1e9 / m["consumed"]
        return m

    def required(self, case, tool):
        return ("rate", "reconciled") if tool != "nats" else ("rate",)

    def after_run(self, case, tool, run, label):
        if tool == "nats":
            return
        if run.metrics.get("reconciled") is True:
            self.reconciled_runs += 1
        else:
            self.unreconciled.append(f"{tool} {label}: " + ("not reconciled" if run.ok else f"no result ({run.error})"))

    def describe(self, case, tool, run):
        m = run.metrics
        s = f"{fmt_rate(m.get('rate'))} msgs/s, {fmt_ns(m.get('cpu_ns'))} CPU/msg"
        return s + (f", {int(m['writes'])} writes" if "writes" in m else "")

    def run_more(self):
        if not self.args.strace:
            return
        if shutil.which("strace") is None:
            self.notes.append("--strace: strace not found; the write counts are msgbench's own (connections.writes)")
            return
        for case in self.cases:
            for tool in ("old", "msgbench"):
                if not self.available(tool):
                    continue
                self.fill()
                out = self.workdir / "strace.txt"
                cmd = ["strace", "-f", "-c", "-e", "trace=sendto,recvfrom,write,read", "-o", str(out), *self.command(case, tool)]
                p = subprocess.run(cmd, capture_output=True, timeout=self.args.timeout)
                calls = {}
                for line in out.read_text().splitlines() if out.exists() else []:
                    f = line.split()
                    if len(f) >= 5 and f[-1] in ("sendto", "recvfrom", "write", "read") and re.fullmatch(r"\d+", f[3]):
                        calls[f[-1]] = int(f[3])
                self.strace_rows.append(
                    [case.title, self.shown_names[tool], str(calls.get("sendto", 0)), str(calls.get("recvfrom", 0)),
                     f"{self.args.msgs / max(calls.get('sendto', 0), 1):,.0f}", "ok" if p.returncode == 0 else f"exit {p.returncode}"]
                )  # fmt: skip
                tail = self.show(self.command(case, tool))
                self.shown_cmds[f"strace, {case.title}: {tool}"] = f"strace -f -c -e trace=sendto,recvfrom,write,read -o strace.txt {tail}"


    def exit_status(self):
        expected = self.args.rounds * len(self.cases) * (2 if self.args.old else 1)
        if self.reconciled_runs == expected:
            return 0
        log(f"!! only {self.reconciled_runs} of {expected} msgbench runs reconciled")
        return 1

    def facts(self):
        f = super().facts()
        del f["nats.go"]
        try:
            f["natscli"] = subprocess.run([self.bins["nats"], "--version"], capture_output=True, text=True).stdout.strip()
        except (KeyError, OSError):
            f["natscli"] = "unavailable"
        return f

    def intro(self):
        label = f" of {self.args.old_label}" if self.args.old_label else ""
        old = f" and an earlier msgbench build{label} (`msgbench-old`, run with `--old`)" if self.args.old else ""
        return [
            f"{self.generated_by()} One nats-server with JetStream, memory storage. msgbench `js consume` against "
            f"`nats bench js consume|fetch|ordered` (natscli){old}, each round running the tools back to back in "
            "a rotating order. Before every run of every tool the stream is deleted and filled again with the "
            "same messages (msgbench `js pub`, untimed), so each run consumes a fresh stream. Figures are consumed "
            "msgs/s as each tool reports it, medians over the rounds (min–max, n); ratios are medians of per-round "
            "ratios. CPU/msg is the consuming process's user + system time (os.wait4) over the messages it consumed. "
            "This is a benchmark, not a test."
        ]

    def body(self):
        rows, cpu_rows = [], []
        for c in self.cases:
            ratio = self.median_ratio(c.key, "msgbench", "nats", "rate")
            row = [c.title, self.cell(c.key, "msgbench", "rate"), self.cell(c.key, "nats", "rate")]
            if self.args.old:
                row.append(self.cell(c.key, "old", "rate"))
            row.append(fmt_x(ratio))
            if self.args.old:
                row.append(fmt_x(self.median_ratio(c.key, "msgbench", "old", "rate")))
            rows.append(row + [verdict(ratio, c.target)])
            cpu = [c.title] + [self.cell(c.key, t, "cpu_ns", fmt_ns) for t in self.tools()]
            cpu.append(self.cell(c.key, "msgbench", "writes", lambda v: f"{v:,.0f}"))
            if self.args.old:
                cpu.append(self.cell(c.key, "old", "writes", lambda v: f"{v:,.0f}"))
            cpu_rows.append(cpu)
        names = {"msgbench": "msgbench", "nats": "nats bench", "old": "msgbench-old"}
        header = ["case", "msgbench msgs/s", "nats bench msgs/s"]
        if self.args.old:
            header += ["msgbench-old msgs/s", "msgbench / nats bench", "msgbench / msgbench-old", "verdict (vs nats bench)"]
        else:
            header += ["msgbench / nats bench", "verdict"]
        out = ["## Consumed msgs/s", "", md_table(header, rows), ""]
        out += ["Targets: consume and fetch >= 1.3x nats bench, ordered >= 2x.", ""]
        cpu_header = ["case"] + [f"{names[t]} CPU/msg" for t in self.tools()] + ["msgbench writes"]
        if self.args.old:
            cpu_header.append("msgbench-old writes")
        out += ["## Client CPU per consumed message, and socket writes", ""]
        out += ["Writes are msgbench's own count of its write syscalls (`connections.writes`; the old binary does not count them).", ""]
        out += [md_table(cpu_header, cpu_rows), ""]
        if self.strace_rows:
            out += ["## Syscalls under strace -f -c (one run each)", ""]
            out += [md_table(["case", "binary", "sendto", "recvfrom", "messages per sendto", "run"], self.strace_rows), ""]
        out += ["## Each run", ""]
        for c in self.cases:
            run_rows = []
            for i, order in enumerate(self.orders.get(c.key, [])):
                row = [str(i + 1), ", ".join(order)]
                for t in self.tools():
                    runs = self.runs(c.key, t)
                    r = runs[i] if i < len(runs) else None
                    row.append("failed" if r is None else f"{fmt_rate(r.metrics.get('rate'))} ({fmt_ns(r.metrics.get('cpu_ns'))})")
                run_rows.append(row)
            out += [f"{c.title}: msgs/s (CPU/msg)", "", md_table(["round", "order", *[names[t] for t in self.tools()]], run_rows), ""]
        return out

    def extra_notes(self):
        return [f"NOT RECONCILED {u}" for u in self.unreconciled]


if __name__ == "__main__":
    JsConsume.main()
