#!/usr/bin/env python3
"""A user's own cluster loses its stream leader under `js pub`, and msgbench injected nothing:
three nats-servers started by this script (not by msgbench) in one cluster, an R3 file stream on
them, and the run a user would type,

    msgbench js pub --server U1,U2,U3 --stream barsx --subject barsx.a --mode async \\
        --rate 4000 --duration 10s --reconnect

with the stream's leader killed with -9 at 3 s and started again at 6 s. Each round starts a
fresh cluster. A write stored without its acknowledgement is allowed when the run itself saw
why (a publish lost in flight with a connection, timed out, answered with a server error), so
every round should exit 0 and say what explained such writes; an exit of 3 is what a run that
reads a real incident as a failure looks like.

With --old, an older binary runs the same rounds, alternating with the new one (each on its
own cluster), for the before and after.

A check of behaviour, not a benchmark: its exit status says whether every round of the binary
under test exited 0.

    python3 bench/run_external_kill.py [--rounds 10] [--old OLD_BINARY] [--binary BINARY]
                                       [--out bench/RESULTS-external-kill.md] [--no-build]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit import REPO, build
from benchkit.env import commit_label, cpu_model, now_utc, nproc
from benchkit.fmt import md_table, one_line
from benchkit.proc import log
from benchkit.server import find_nats_server, free_port, nats_server_version

STREAM, SUBJECT = "barsx", "barsx.a"
KILL_AT, RESTART_AT = 3.0, 6.0
RUN_TIMEOUT = 180.0


class Node:
    """One nats-server of the cluster, started and killed by this script as an operator would."""

    def __init__(self, binary: str, work: Path, name: str, port: int, cport: int, routes: list[int]):
        self.name, self.port = name, port
        store = work / name
        self.cmd = [binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(store), "-n", name,
                    "--cluster_name", "fates", "--cluster", f"nats://127.0.0.1:{cport}",
                    "--routes", ",".join(f"nats://127.0.0.1:{r}" for r in routes)]  # fmt: skip
        self.log = open(work / f"{name}.log", "ab")
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    if s.recv(5) == b"INFO ":
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not start")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def stream_leader(urls: list[str]) -> str | None:
    """The stream's leader as STREAM.INFO names it, asked of the first node that answers."""
    for url in urls:
        host, port = url.removeprefix("nats://").split(":")
        try:
            with socket.create_connection((host, int(port)), timeout=2) as s:
                s.settimeout(2)
                s.sendall(b'CONNECT {"verbose":false,"headers":true,"no_responders":true}\r\n'
                          b"SUB _INBOX.kill 1\r\n"
                          + f"PUB $JS.API.STREAM.INFO.{STREAM} _INBOX.kill 0\r\n\r\n".encode())  # fmt: skip
                buf = b""
                while b"\r\n" not in buf.partition(b"MSG ")[2]:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
                head, _, rest = buf.partition(b"MSG ")[2].partition(b"\r\n")
                size = int(head.split()[-1])
                while len(rest) < size:
                    rest += s.recv(65536)
                leader = json.loads(rest[:size]).get("cluster", {}).get("leader")
                if leader:
                    return leader
        except (OSError, ValueError):
            continue
    return None


def cluster(binary: str, work: Path) -> list[Node]:
    ports = [(free_port(), free_port()) for _ in range(3)]
    nodes = [Node(binary, work, f"n{i}", p, c, [c2 for _, c2 in ports]) for i, (p, c) in enumerate(ports)]
    for n in nodes:
        n.start()
    return nodes


def one_round(msgbench: str, nats: str, work: Path) -> dict:
    """A fresh cluster, the stream made, the run with its leader killed and restarted."""
    nodes = cluster(nats, work)
    urls = ",".join(n.url for n in nodes)
    out: dict = {}
    try:
        # The R3 file stream, made before the run as a user would (the run then finds it).
        deadline = time.monotonic() + 60
        while True:
            made = subprocess.run([msgbench, "js", "pub", "--server", urls, "--stream", STREAM, "--subject", SUBJECT,
                                   "--replicas", "3", "--storage", "file", "--msgs", "1", "--no-progress"],
                                  capture_output=True, text=True, timeout=RUN_TIMEOUT)  # fmt: skip
            if made.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)  # the cluster's meta leader is still being elected
        if made.returncode != 0:
            return {"error": f"the stream was not made: {one_line(made.stderr.strip()[-300:])}"}
        json_path = work / "result.json"
        cmd = [msgbench, "js", "pub", "--server", urls, "--stream", STREAM, "--subject", SUBJECT, "--mode", "async",
               "--rate", "4000", "--duration", "10s", "--reconnect", "--no-progress", "--json", str(json_path)]  # fmt: skip
        started = time.monotonic()
        run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(max(0.0, started + KILL_AT - time.monotonic()))
        name = stream_leader([n.url for n in nodes])
        victim = next((n for n in nodes if n.name == name), None)
        if victim:
            victim.kill()
            out["killed_at"] = time.monotonic() - started
        time.sleep(max(0.0, started + RESTART_AT - time.monotonic()))
        if victim:
            victim.start()
        stdout, stderr = run.communicate(timeout=RUN_TIMEOUT)
        out["exit"] = run.returncode
        out["leader"] = name
        out["durability"] = next((l for l in stdout.splitlines() if l.startswith("Durability:")), "")
        out["banners"] = [l for l in stdout.splitlines() if l.startswith("!!")]
        try:
            v = json.loads(json_path.read_text())
            out["d"] = v.get("durability") or {}
            out["errors"] = v.get("errors") or {}
        except (OSError, ValueError):
            out["error"] = f"no result: {one_line(stderr.strip()[-300:])}"
    finally:
        for n in nodes:
            n.stop()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--binary", help="the msgbench under test (default: build this checkout's release binary)")
    p.add_argument("--old", help="an older msgbench to run the same rounds, alternating")
    p.add_argument("--out", default=str(REPO / "bench" / "RESULTS-external-kill.md"))
    p.add_argument("--no-build", action="store_true")
    a = p.parse_args()
    if a.rounds < 1:
        p.error("--rounds must be positive")
    msgbench, err = (a.binary, "") if a.binary else build.msgbench(a.no_build)
    nats = find_nats_server()
    if msgbench is None or nats is None:
        print(f"cannot run: {err or 'no nats-server'}", file=sys.stderr)
        return 1
    binaries = [("new", msgbench)] + ([("old", a.old)] if a.old else [])
    rows, results = [], {k: [] for k, _ in binaries}
    for r in range(a.rounds):
        # Alternating which goes first, so a drift of a loaded machine weighs on both alike.
        for label, binary in binaries if r % 2 == 0 else list(reversed(binaries)):
            work = Path(tempfile.mkdtemp(prefix="msgbench-bench-kill-"))
            try:
                got = one_round(binary, nats, work)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            results[label].append(got)
            d = got.get("d", {})
            errors = got.get("errors", {})
            log(f"round {r + 1}, {label}: exit {got.get('exit')}, indeterminate {d.get('indeterminate')}")
            rows.append([str(r + 1), label, str(got.get("exit", "—")), got.get("leader") or "—",
                         str(d.get("indeterminate", "—")), str(d.get("lost", "—")),
                         str(errors.get("lost_in_flight", 0)), str(errors.get("request_timeout", 0)),
                         got.get("error") or got.get("durability", "").removeprefix("Durability: ")
                         + ("; " + " ".join(got["banners"]) if got.get("banners") else "")])  # fmt: skip
    cmdline = "python3 bench/run_external_kill.py " + " ".join(sys.argv[1:])
    summary = [
        f"- {label}: exit 0 in {sum(1 for g in results[label] if g.get('exit') == 0)} of {len(results[label])} rounds; "
        f"exit statuses {', '.join(str(g.get('exit', '—')) for g in results[label])}"
        for label, _ in binaries
    ]
    md = [
        "# A user's own cluster loses its stream leader",
        "",
        f"`{cmdline.strip()}` on {now_utc()}: {cpu_model()}, {nproc()} CPUs, nats-server "
        f"{nats_server_version(nats)}, msgbench at {commit_label()}. Three nats-servers started by the "
        f"script in one cluster, an R3 file stream `{STREAM}` made first, then `msgbench js pub --server "
        f"U1,U2,U3 --stream {STREAM} --subject {SUBJECT} --mode async --rate 4000 --duration 10s "
        f"--reconnect`; the stream leader killed with -9 at {KILL_AT:g} s and started again at "
        f"{RESTART_AT:g} s (from the start of msgbench's process). A fresh cluster each run.",
        "",
        *summary,
        "",
        md_table(
            ["round", "binary", "exit", "leader killed", "indeterminate", "lost", "lost_in_flight",
             "request_timeout", "Durability line (and banners)"],
            rows,
        ),  # fmt: skip
    ]
    text = "\n".join(md) + "\n"
    print(text)
    Path(a.out).write_text(text)
    return 0 if all(g.get("exit") == 0 for g in results["new"]) else 1


if __name__ == "__main__":
    sys.exit(main())
