from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

# The driver's package, importable by the unit tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from .natsserver import NatsServer, start_server  # noqa: E402


@pytest.fixture(scope="module")
def nats_server() -> Iterator[NatsServer]:
    server = start_server()
    try:
        yield server
    finally:
        server.stop()
