#!/usr/bin/env python3
"""Capacity searches whose answer can be checked: `msgbench capacity latency` against one
nats-server twice in a row (the two sustainable rates should lie within each other's
confidence intervals), and across a link msgbench caps at 10 Mbit/s with 1 KiB messages, where
the ceiling is known from the link's rate (the search should land between 70 % and 100 % of it).

A benchmark, not a test: its exit status says whether it could measure, never how fast anything
was.

    python3 bench/run_capacity.py [--slo 'p99<2ms'] [--probe-duration 5s] [--probe-runs 3]
                                  [--link-probe-duration 3s] [--out bench/RESULTS-capacity.md]
                                  [--timeout 900] [--no-build]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchkit import REPO, build
from benchkit.env import commit_label, cpu_model, now_utc, nproc
from benchkit.fmt import md_table
from benchkit.proc import log
from benchkit.server import NatsServer, find_nats_server, nats_server_version

# A 1 KiB message crosses the link as `PUB <subject> 1024\r\n`, the payload and `\r\n`: about
# 1,053 bytes, so 10 Mbit/s (1.25 MB/s) carries about 1,187 of them a second.
LINK_BPS = 10_000_000
LINK_MSG_BYTES = 1024 + len("PUB msgbench.latency 1024\r\n") + 2


def search(cmd: list[str], out: Path, timeout: float, notes: list[str]) -> dict | None:
    log(" ".join(cmd))
    r = subprocess.run(cmd + ["--json", str(out)], capture_output=True, text=True, timeout=timeout)
    if r.returncode not in (0, 8):
        notes.append(f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
        return None
    try:
        return json.loads(out.read_text())
    except (OSError, ValueError) as e:
        notes.append(f"no document: {e}")
        return None


def rate(v: float | None) -> str:
    return "—" if v is None else f"{v:,.0f}/s"


def interval(doc: dict) -> str:
    c = doc.get("confidence")
    return "—" if not c else f"{c['low']:,.0f}–{c['high']:,.0f}/s"


def within(x: float | None, doc: dict) -> bool:
    c = doc.get("confidence")
    return x is not None and c is not None and c["low"] <= x <= c["high"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--slo", default="p99<2ms")
    p.add_argument("--probe-duration", default="5s")
    p.add_argument("--probe-runs", default="3")
    p.add_argument("--link-probe-duration", default="3s")
    p.add_argument("--out", default=str(REPO / "bench" / "RESULTS-capacity.md"))
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--no-build", action="store_true")
    a = p.parse_args()
    msgbench, err = build.msgbench(a.no_build)
    nats = find_nats_server()
    if msgbench is None or nats is None:
        print(f"cannot run: {err or 'no nats-server'}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="msgbench-bench-capacity-"))
    notes: list[str] = []
    server = NatsServer(nats, work)
    server.start()
    url = server.url
    base = [msgbench, "capacity", "latency", "--server", url, "--slo", a.slo,
            "--probe-duration", a.probe_duration, "--probe-runs", a.probe_runs]  # fmt: skip
    try:
        twice = [search(base, work / f"repeat{k}.json", a.timeout, notes) for k in (1, 2)]
    finally:
        server.stop()
    # The link: msgbench starts its own server behind its own rate-capped proxy.
    link_cmd = [msgbench, "capacity", "latency", "--link", "rate=10mbit", "--size", "1KiB",
                "--slo", "p99<100ms", "--slo", "lost==0", "--probe-duration",
                a.link_probe_duration, "--probe-runs", "1", "--start-rate", "250"]  # fmt: skip
    link = search(link_cmd, work / "link.json", a.timeout, notes)

    cap = LINK_BPS / 8 / LINK_MSG_BYTES
    cmdline = "python3 bench/run_capacity.py " + " ".join(sys.argv[1:])
    md = [
        "# Capacity searches",
        "",
        f"`{cmdline.strip()}` on {now_utc()}: {cpu_model()}, {nproc()} CPUs, "
        f"nats-server {nats_server_version(nats)}, msgbench at {commit_label()}.",
        "",
        f"## The same search twice: `capacity latency --slo '{a.slo}'`, {a.probe_runs} runs a rate",
        "",
    ]
    if None not in twice:
        one, two = twice
        md += [
            md_table(
                ["search", "sustainable", "95 % interval", "each run's own", "limited by", "probes"],
                [
                    [str(k + 1), rate(d["sustainable_rate"]), interval(d),
                     ", ".join(rate(x) for x in (d.get("confidence") or {}).get("per_run", [])),
                     f"{d['limiter']['kind']}: {d['limiter']['detail']}", str(len(d["probes"]))]
                    for k, d in enumerate(twice)
                ],
            ),  # fmt: skip
            "",
            "Each within the other's interval: "
            f"**{'yes' if within(one['sustainable_rate'], two) and within(two['sustainable_rate'], one) else 'no'}** "
            f"(search 1 in search 2's: {within(one['sustainable_rate'], two)}; "
            f"search 2 in search 1's: {within(two['sustainable_rate'], one)}).",
        ]
    md += [
        "",
        "## A link capped at 10 Mbit/s, 1 KiB messages: `--slo 'p99<100ms' --slo 'lost==0'`",
        "",
        f"The link carries about {cap:,.0f} messages a second ({LINK_MSG_BYTES} bytes each on the wire).",
        "",
    ]
    if link is not None:
        found = link["sustainable_rate"]
        share = None if found is None else found / cap
        md += [
            md_table(
                ["sustainable", "of the link's ceiling", "first failing", "limited by"],
                [[rate(found), "—" if share is None else f"{share:.1%}",
                  rate((link.get("first_failing") or {}).get("rate")),
                  f"{link['limiter']['kind']}: {link['limiter']['detail']}"]],
            ),  # fmt: skip
            "",
            "Between 70 % and 100 % of the ceiling (within 1 %: the link is a token bucket, and the "
            "bytes per message an estimate): "
            f"**{'yes' if share is not None and 0.7 <= share <= 1.01 else 'no'}**.",
            "",
            "Probes:",
            "",
            md_table(
                ["rate", "achieved", "P50", "P99", "verdict"],
                [[rate(pr["rate"]), rate(pr["msgs_per_sec"]),
                  "—" if not pr["latency"] else f"{pr['latency']['p50_ns'] / 1e6:.2f} ms",
                  "—" if not pr["latency"] else f"{pr['latency']['p99_ns'] / 1e6:.2f} ms",
                  "held" if pr["pass"] else ("tool (run again)" if not pr["tool_kept_schedule"] else "failed")]
                 for pr in link["probes"]],
            ),  # fmt: skip
        ]
    show = lambda c: " ".join(c).replace(url, "URL").replace(msgbench, "msgbench")  # noqa: E731
    md += ["", "Commands (the server's URL shown as URL):", "", "    " + show(base), "    " + show(link_cmd)]
    if notes:
        md += ["", "Notes and failures:", ""] + [f"- {n}" for n in notes]
    text = "\n".join(md) + "\n"
    print(text)
    Path(a.out).write_text(text)
    return 0 if None not in twice and link is not None else 1


if __name__ == "__main__":
    sys.exit(main())
