"""The servers a suite starts: nats-server, and msgbench's own gRPC log service."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from . import REPO
from .proc import capture, proc_cpu_seconds, stop_process

START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


class ServiceDied(RuntimeError):
    """A server a suite started has exited while the suite still needed it."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_nats_server() -> str | None:
    """MSGBENCH_NATS_SERVER if set, else the checkout's .tools/bin (where `make nats-server`
    installs the pinned version, first on the Makefile's PATH), else PATH."""
    named = os.environ.get("MSGBENCH_NATS_SERVER")
    if named:
        return named if os.access(named, os.X_OK) else None
    pinned = REPO / ".tools" / "bin" / "nats-server"
    if os.access(pinned, os.X_OK):
        return str(pinned)
    return shutil.which("nats-server")


def nats_server_version(binary: str | None) -> str:
    out = capture([binary, "--version"]) if binary else None
    return (out or "not found").removeprefix("nats-server: ")


class Service:
    """A server process on a free port of 127.0.0.1, its output in a log file of workdir.
    Subclasses set `name`, `cmd` and how to tell it is ready (`ready`)."""

    name = "server"

    def __init__(self, binary: str, workdir: Path, log_name: str):
        self.binary = binary
        self.port = free_port()
        self.log_path = workdir / log_name
        self.cmd: list[str] = [binary]
        self.proc: subprocess.Popen | None = None
        self._log_f = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def ready(self, sock: socket.socket) -> bool:
        return True

    def start(self) -> None:
        self._log_f = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.cmd, stdout=self._log_f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServiceDied(f"{self.name} exited early (status {self.proc.returncode}): {self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
                    s.settimeout(1.0)
                    if self.ready(s):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise ServiceDied(f"{self.name} did not accept connections within {START_TIMEOUT:.0f} s: {self.log_tail()}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self) -> None:
        if self.proc is not None and not self.alive():
            raise ServiceDied(f"{self.name} exited during the run: {self.log_tail()}")

    def cpu_seconds(self) -> float | None:
        """utime + stime of the server so far."""
        return proc_cpu_seconds(self.proc.pid) if self.alive() else None

    def log_tail(self, lines: int = 10) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is None:
            return
        stop_process(self.proc, STOP_TIMEOUT)
        self._log_f.close()
        self.proc = None


class NatsServer(Service):
    """nats-server; with jetstream, -js with its store directory in workdir (which goes with
    it; memory streams never touch it, but -js needs one)."""

    name = "nats-server"

    def __init__(self, binary: str, workdir: Path, jetstream: bool = False):
        super().__init__(binary, workdir, "nats-server.log")
        self.cmd = [binary, "-a", "127.0.0.1", "-p", str(self.port)]
        if jetstream:
            store = workdir / f"jetstream-{self.port}"
            self.cmd += ["-js", "-sd", str(store)]

    @property
    def url(self) -> str:
        return f"nats://{self.addr}"

    def ready(self, sock: socket.socket) -> bool:
        return sock.recv(5) == b"INFO "


class GrpcServer(Service):
    """`msgbench grpc serve`: msgbench's reference log service."""

    name = "msgbench grpc serve"

    def __init__(self, msgbench: str, workdir: Path):
        super().__init__(msgbench, workdir, "grpc-serve.log")
        self.cmd = [msgbench, "grpc", "serve", "--listen", self.addr]

    @property
    def url(self) -> str:
        return f"http://{self.addr}"
