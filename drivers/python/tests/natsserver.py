"""A nats-server with JetStream on a free loopback port, and the setup msgbench does before it
starts a driver: an echo responder (queue group msgbench) and the stream for js_pub."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import nats
from nats.aio.msg import Msg
from nats.js.api import StorageType


def server_binary() -> Optional[str]:
    explicit = os.environ.get("MSGBENCH_NATS_SERVER")
    if explicit:
        return explicit
    return shutil.which("nats-server")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class NatsServer:
    binary: str
    port: int
    store: Path
    process: Optional[subprocess.Popen[bytes]] = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 10.0) -> None:
        self.process = subprocess.Popen(
            [self.binary, "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", str(self.store)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nats-server exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"nats-server did not listen on {self.port} within {timeout_s} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.store, ignore_errors=True)


def start_server() -> NatsServer:
    binary = server_binary()
    if binary is None:
        raise RuntimeError("nats-server not found: put it on PATH or set MSGBENCH_NATS_SERVER")
    store = Path(tempfile.mkdtemp(prefix="msgbench-py-js-"))
    server = NatsServer(binary, free_port(), store)
    server.start()
    return server


class EchoResponder:
    """An echo service on its own thread and event loop (nats-py), queue group "msgbench".

    With `silent`, it takes the requests and never answers (for request timeouts)."""

    def __init__(self, url: str, subject: str, silent: bool = False) -> None:
        self.url = url
        self.subject = subject
        self.silent = silent
        self.served = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: Optional[asyncio.Event] = None
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, name="echo-responder", daemon=True)

    def __enter__(self) -> "EchoResponder":
        self._thread.start()
        if not self._ready.wait(timeout=10):
            raise RuntimeError("echo responder did not start")
        if self._error is not None:
            raise RuntimeError(f"echo responder failed: {self._error}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        try:
            nc = await nats.connect(self.url, connect_timeout=5)

            async def echo(msg: Msg) -> None:
                self.served += 1
                if not self.silent:
                    await msg.respond(msg.data)

            await nc.subscribe(self.subject, queue="msgbench", cb=echo)
            await nc.flush(timeout=5)
        except BaseException as e:  # reported to the test thread
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        await self._stop.wait()
        await nc.drain()


async def _with_js(url: str, action: str, stream: str, subject: str = "") -> None:
    nc = await nats.connect(url, connect_timeout=5)
    try:
        js = nc.jetstream(timeout=5)
        if action == "create":
            await js.add_stream(name=stream, subjects=[subject], storage=StorageType.MEMORY)
        else:
            await js.delete_stream(stream)
    finally:
        await nc.close()


def create_stream(url: str, stream: str, subject: str) -> None:
    asyncio.run(_with_js(url, "create", stream, subject))


def delete_stream(url: str, stream: str) -> None:
    asyncio.run(_with_js(url, "delete", stream))


async def _stream_messages(url: str, stream: str) -> int:
    nc = await nats.connect(url, connect_timeout=5)
    try:
        info = await nc.jetstream(timeout=5).stream_info(stream)
        return int(info.state.messages)
    finally:
        await nc.close()


def stream_messages(url: str, stream: str) -> int:
    return asyncio.run(_stream_messages(url, stream))
