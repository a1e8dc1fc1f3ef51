"""The protocol around a run: stop and end of input mid-run, errors with exit status 2."""

from __future__ import annotations

import time
import uuid
from typing import Any

from .driverproc import Driver
from .natsserver import EchoResponder, NatsServer, free_port


def scenario(server: str, kind: str = "pubsub", **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "type": "scenario",
        "protocol": "msgbench.driver/v1",
        "kind": kind,
        "server": server,
        "subject": f"msgbench.py.life.{uuid.uuid4().hex[:8]}",
        "size": 64,
        "msgs": None,
        "duration_ms": 60_000,
        "rate": 0,
        "pubs": 1,
        "subs": 1,
        "in_flight": 1,
        "warmup_ms": 0,
        "timeout_ms": 2000,
        "connect_timeout_ms": 2000,
        "js": None,
    }
    base.update(overrides)
    return base


def start_run(sc: dict[str, Any]) -> Driver:
    driver = Driver.start()
    driver.send(sc)
    ready = driver.read_until(("ready", "error"), 15)
    assert ready["type"] == "ready", driver.stderr()
    driver.send({"type": "start"})
    return driver


def interrupt_and_check(driver: Driver, sc: dict[str, Any], how: str) -> dict[str, Any]:
    try:
        driver.read_until(("progress",), 10)  # it is running
        sent_at = time.monotonic()
        if how == "stop":
            driver.send({"type": "stop"})
        else:
            driver.close_stdin()
        # Stop sending within 100 ms, drain for at most timeout_ms, then the result.
        limit = sc["timeout_ms"] / 1000 + 3
        result: dict[str, Any] = driver.read_until(("result",), limit)["result"]
        assert time.monotonic() - sent_at < limit
        assert result["interrupted"] is True
        assert driver.wait() == 0
        return result
    finally:
        driver.kill()


def test_stop_mid_run_gives_interrupted_result(nats_server: NatsServer) -> None:
    sc = scenario(nats_server.url)
    result = interrupt_and_check(start_run(sc), sc, "stop")
    assert result["delivery"]["sent"] > 0
    assert result["delivery"]["accounting"] == "exact"
    assert [c["role"] for c in result["clients"]] == ["pub", "sub"]


def test_end_of_input_mid_run_gives_interrupted_result(nats_server: NatsServer) -> None:
    sc = scenario(nats_server.url, kind="latency", rate=2000, size=32)
    result = interrupt_and_check(start_run(sc), sc, "eof")
    assert result["latency"]["count"] > 0
    assert result["delivery"]["lost"] == 0


def test_stop_mid_request_run(nats_server: NatsServer) -> None:
    sc = scenario(nats_server.url, kind="request", subs=0, in_flight=4, size=32)
    with EchoResponder(nats_server.url, sc["subject"]):
        result = interrupt_and_check(start_run(sc), sc, "stop")
    assert result["delivery"]["received"] > 0
    assert result["latency"]["count"] == result["delivery"]["received"]


def test_stop_before_start_still_answers(nats_server: NatsServer) -> None:
    driver = Driver.start()
    try:
        driver.send(scenario(nats_server.url))
        assert driver.read_until(("ready",), 15)
        driver.send({"type": "stop"})
        result = driver.read_until(("result",), 10)["result"]
        assert result["interrupted"] is True and result["delivery"]["sent"] == 0
        assert driver.wait() == 0
    finally:
        driver.kill()


def error_exchange(sc: dict[str, Any], within_s: float = 15) -> dict[str, Any]:
    driver = Driver.start()
    try:
        driver.send(sc)
        line = driver.read_until(("error", "ready"), within_s)
        assert line["type"] == "error", line
        assert driver.wait() == 2
        assert all(obj["type"] == "error" for obj in driver.seen)
        return line
    finally:
        driver.kill()


def test_unsupported_kind_is_an_error_with_status_2(nats_server: NatsServer) -> None:
    line = error_exchange(scenario(nats_server.url, kind="fanout"))
    assert line["kind"] == "unsupported"


def test_unreachable_server_is_a_connect_error(nats_server: NatsServer) -> None:
    sc = scenario(f"nats://127.0.0.1:{free_port()}", connect_timeout_ms=500)
    started = time.monotonic()
    line = error_exchange(sc)
    assert line["kind"] == "connect"
    assert time.monotonic() - started < 0.5 + 10


def test_both_msgs_and_duration_is_a_usage_error(nats_server: NatsServer) -> None:
    line = error_exchange(scenario(nats_server.url, msgs=10, duration_ms=10))
    assert line["kind"] == "usage"


def test_no_responders_are_counted_and_lost(nats_server: NatsServer) -> None:
    from .driverproc import run_scenario

    sc = scenario(nats_server.url, kind="request", subs=0, msgs=20, duration_ms=None, size=32)
    exchange = run_scenario(sc)
    result = exchange.result
    assert result["errors"]["no_responders"] == 20
    assert result["delivery"]["lost"] == 20 and result["delivery"]["received"] == 0
    assert result["latency"]["count"] == 0


def test_pubsub_with_several_publishers_and_subscribers(nats_server: NatsServer) -> None:
    from .driverproc import run_scenario

    sc = scenario(nats_server.url, pubs=3, subs=2, msgs=3000, duration_ms=None, size=32)
    result = run_scenario(sc).result
    d = result["delivery"]
    assert (d["sent"], d["received"], d["lost"], d["duplicated"], d["reordered"]) == (9000, 18000, 0, 0, 0)
    assert [(c["role"], c["id"]) for c in result["clients"]] == [
        ("pub", 0), ("pub", 1), ("pub", 2), ("sub", 0), ("sub", 1)
    ]


def test_paced_timed_pubsub_keeps_its_rate(nats_server: NatsServer) -> None:
    from .driverproc import run_scenario

    sc = scenario(nats_server.url, rate=2000, duration_ms=1000, pubs=2)
    result = run_scenario(sc).result
    # 2000 msgs/s across two publishers for one second: messages due before the end are sent.
    assert result["delivery"]["sent"] == 2000
    assert result["delivery"]["lost"] == 0


def test_unanswered_requests_are_request_timeouts(nats_server: NatsServer) -> None:
    from .driverproc import run_scenario

    sc = scenario(nats_server.url, kind="request", subs=0, msgs=3, duration_ms=None, size=32, timeout_ms=300)
    with EchoResponder(nats_server.url, sc["subject"], silent=True):
        result = run_scenario(sc).result
    assert result["errors"]["request_timeout"] == 3
    assert result["delivery"]["lost"] == 3


def test_js_pub_without_a_stream_counts_no_responders(nats_server: NatsServer) -> None:
    from .driverproc import run_scenario

    for mode in ("sync", "async"):
        sc = scenario(
            nats_server.url, kind="js_pub", subs=0, msgs=5, duration_ms=None, size=32, in_flight=2,
            js={"stream": "NOSUCH", "mode": mode},
        )
        result = run_scenario(sc).result
        assert result["errors"]["no_responders"] == 5, (mode, result)
        assert result["js"]["acked"] == 0 and result["latency"]["count"] == 0
