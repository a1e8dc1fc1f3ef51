"""spec/vectors/scenarios: each scenario end to end against a real nats-server, as msgbench
runs a driver (scenario, ready, start, result), every line validated, then the vector's checks."""

from __future__ import annotations

import contextlib
import json
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from msgbench_driver.histogram import decode

from .checks import evaluate
from .driverproc import run_scenario
from .natsserver import EchoResponder, NatsServer, create_stream, delete_stream, stream_messages
from .paths import SCENARIO_VECTORS

VECTORS = sorted(SCENARIO_VECTORS.glob("*.json"))


@contextlib.contextmanager
def vector_setup(server: NatsServer, scenario: dict[str, Any]) -> Iterator[None]:
    """What msgbench does before starting a driver: responders for request, the stream for js_pub."""
    if scenario["kind"] == "request":
        with EchoResponder(server.url, scenario["subject"]):
            yield
    elif scenario["kind"] == "js_pub":
        stream = scenario["js"]["stream"]
        create_stream(server.url, stream, scenario["subject"])
        try:
            yield
        finally:
            delete_stream(server.url, stream)
    else:
        yield


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_scenario_vector(path: Path, nats_server: NatsServer) -> None:
    vector = json.loads(path.read_text())
    scenario = dict(vector["scenario"])
    scenario["server"] = nats_server.url
    scenario["subject"] = f"msgbench.py.{vector['name']}.{uuid.uuid4().hex[:8]}"

    with vector_setup(nats_server, scenario):
        exchange = run_scenario(scenario)
        if scenario["kind"] == "js_pub":
            stored = stream_messages(nats_server.url, scenario["js"]["stream"])

    assert exchange.exit_code == 0, exchange.stderr
    client = exchange.ready["client"]
    assert (client["language"], client["library"]) == ("python", "nats-py")
    result = exchange.result
    assert result["interrupted"] is False

    failures = [why for ok, why in (evaluate(c, result) for c in vector["checks"]) if not ok]
    assert not failures, f"{failures}\nresult: {json.dumps(result)[:2000]}"

    # Beyond the vector's checks: the histograms decode to the counts they claim.
    for key in ("latency", "latency_uncorrected"):
        if key in result:
            assert decode(result[key]["hdr"]).get_total_count() == result[key]["count"]
    if scenario["kind"] == "js_pub":
        js = result["js"]
        assert js["last_seq"] - js["first_seq"] + 1 == js["acked"] == stored
