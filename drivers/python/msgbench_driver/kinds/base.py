"""The shape every kind has: connect before `ready`, run after `start`, then a result."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Iterable

from ..connection import ConnectionSet
from ..errors import ErrorCounts
from ..protocol import Scenario
from ..result import RunResult
from ..run import RunClock


class Workload(ABC):
    # Error kinds reported even at zero, so a reader sees they were watched for.
    watched_errors: Iterable[str] = ("disconnected",)

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.errors = ErrorCounts(always=self.watched_errors)
        self.conns = ConnectionSet(scenario, self.errors)

    @property
    @abstractmethod
    def notes(self) -> str:
        """How this kind uses nats-py, for the `ready` line's client.notes."""

    @abstractmethod
    async def prepare(self) -> None:
        """Connects and subscribes. Nothing measured happens here."""

    @abstractmethod
    async def run(self, clock: RunClock) -> None:
        """Sends until the count or the duration is reached (or a stop), then drains, bounded
        by the scenario's timeout."""

    @abstractmethod
    def progress(self) -> tuple[int, int]:
        """(sent, received) so far."""

    @abstractmethod
    def result(self, clock: RunClock, interrupted: bool) -> RunResult:
        """The result; valid even when `run` never started (after a stop before start)."""

    async def close(self) -> None:
        await self.conns.close_all()
