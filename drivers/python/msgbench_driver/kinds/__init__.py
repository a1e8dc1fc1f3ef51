"""One module per scenario kind; `make_workload` picks the one a scenario names."""

from __future__ import annotations

from ..protocol import DriverError, Scenario
from .base import Workload


def make_workload(scenario: Scenario) -> Workload:
    if scenario.kind == "pubsub":
        from .pubsub import PubSub

        return PubSub(scenario)
    if scenario.kind == "latency":
        from .latency import Latency

        return Latency(scenario)
    if scenario.kind == "request":
        from .request import Request

        return Request(scenario)
    if scenario.kind == "js_pub":
        from .js_pub import JsPub

        return JsPub(scenario)
    raise DriverError("unsupported", f"kind {scenario.kind!r} is not supported")


__all__ = ["Workload", "make_workload"]
