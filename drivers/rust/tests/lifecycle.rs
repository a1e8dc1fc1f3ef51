//! The protocol's edges: `stop` and end of input mid-run give an interrupted result and exit 0,
//! progress comes about once a second, and a scenario the driver cannot run gives an `error`
//! line and exit 2.

mod common;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::{free_port, unique, Driver, NatsServer};

fn scenario(server: &str, kind: &str) -> Value {
    json!({
        "type": "scenario",
        "protocol": "msgbench.driver/v1",
        "kind": kind,
        "server": server,
        "subject": unique("msgbench.life."),
        "size": 64,
        "msgs": null,
        "duration_ms": 60_000,
        "rate": 0,
        "pubs": 1,
        "subs": 1,
        "in_flight": 1,
        "warmup_ms": 0,
        "timeout_ms": 2000,
        "connect_timeout_ms": 2000,
        "js": null
    })
}

/// Starts a minute-long run, lets it go for `run_for`, ends it with `end`, and returns the
/// result after checking it came quickly and the driver exited 0.
fn interrupt(scn: &Value, run_for: Duration, end: impl FnOnce(&mut Driver)) -> Value {
    let mut d = Driver::spawn();
    d.send(scn);
    d.expect("ready", Duration::from_secs(15));
    d.send(&json!({"type": "start"}));
    std::thread::sleep(run_for);
    let asked = Instant::now();
    end(&mut d);
    let result = d.expect("result", Duration::from_secs(15));
    // Stop within 100 ms, drain for at most timeout_ms (2 s here), then report.
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "result took {:?}",
        asked.elapsed()
    );
    assert!(d.wait(Duration::from_secs(5)).success());
    result["result"].clone()
}

#[test]
fn stop_mid_run_gives_an_interrupted_result() {
    let server = NatsServer::start();
    let r = interrupt(
        &scenario(&server.url, "pubsub"),
        Duration::from_millis(1500),
        |d| d.send(&json!({"type": "stop"})),
    );
    assert_eq!(r["interrupted"], true);
    let sent = r["delivery"]["sent"].as_u64().unwrap();
    let received = r["delivery"]["received"].as_u64().unwrap();
    assert!(sent > 0, "{r}");
    // Whatever the subscriber could not drain within timeout_ms is lost, and says so.
    assert!(received <= sent, "{r}");
    assert_eq!(r["delivery"]["lost"], sent - received, "{r}");
    assert_eq!(r["delivery"]["duplicated"], 0, "{r}");
    assert_eq!(r["clients"][0]["msgs"], sent, "{r}");
}

#[test]
fn end_of_input_mid_run_gives_an_interrupted_result() {
    let server = NatsServer::start();
    let mut scn = scenario(&server.url, "latency");
    scn["rate"] = json!(2000);
    let r = interrupt(&scn, Duration::from_millis(800), Driver::close_stdin);
    assert_eq!(r["interrupted"], true);
    let n = r["latency"]["count"].as_u64().unwrap();
    assert!(n > 500, "{r}");
    assert_eq!(r["latency_uncorrected"]["count"], n, "{r}");
}

#[test]
fn stop_during_open_loop_requests() {
    let server = NatsServer::start();
    let mut scn = scenario(&server.url, "request");
    scn["rate"] = json!(500);
    scn["in_flight"] = json!(10);
    scn["timeout_ms"] = json!(200);
    // No responder: every request ends as no_responders; the run still stops cleanly.
    let r = interrupt(&scn, Duration::from_millis(600), |d| {
        d.send(&json!({"type": "stop"}))
    });
    assert_eq!(r["interrupted"], true);
    let sent = r["delivery"]["sent"].as_u64().unwrap();
    assert!(sent > 0);
    let failed = r["errors"]["no_responders"].as_u64().unwrap()
        + r["errors"]["request_timeout"].as_u64().unwrap();
    assert_eq!(failed, sent, "{r}");
}

#[test]
fn stop_before_start() {
    let server = NatsServer::start();
    let mut d = Driver::spawn();
    d.send(&scenario(&server.url, "pubsub"));
    d.expect("ready", Duration::from_secs(15));
    d.send(&json!({"type": "stop"}));
    let r = d.expect("result", Duration::from_secs(5));
    assert_eq!(r["result"]["interrupted"], true);
    assert!(d.wait(Duration::from_secs(5)).success());
}

#[test]
fn progress_about_once_a_second() {
    let server = NatsServer::start();
    let mut scn = scenario(&server.url, "pubsub");
    scn["rate"] = json!(10_000);
    scn["duration_ms"] = json!(2500);
    let mut d = Driver::spawn();
    d.send(&scn);
    d.expect("ready", Duration::from_secs(15));
    d.send(&json!({"type": "start"}));
    let mut progress = Vec::new();
    let result = loop {
        let v = d.next(Duration::from_secs(10)).expect("a line");
        match v["type"].as_str().unwrap() {
            "progress" => progress.push(v),
            "result" => break v["result"].clone(),
            other => panic!("unexpected {other}"),
        }
    };
    assert!(d.wait(Duration::from_secs(5)).success());
    assert!((2..=3).contains(&progress.len()), "{progress:?}");
    let t: Vec<f64> = progress
        .iter()
        .map(|p| p["t_s"].as_f64().unwrap())
        .collect();
    assert!(
        (t[0] - 1.0).abs() < 0.3 && (t[1] - 2.0).abs() < 0.3,
        "{t:?}"
    );
    let sent = result["delivery"]["sent"].as_u64().unwrap();
    // 2.5 s at 10,000 msgs/s.
    assert_eq!(sent, 25_000, "{result}");
    assert_eq!(result["delivery"]["received"], 25_000, "{result}");
    assert_eq!(result["interrupted"], false);
}

fn expect_error(scn: &Value, kind: &str) {
    let mut d = Driver::spawn();
    d.send(scn);
    let e = d.expect("error", Duration::from_secs(15));
    assert_eq!(e["kind"], kind, "{e}");
    assert!(!e["message"].as_str().unwrap().is_empty());
    assert_eq!(d.wait(Duration::from_secs(5)).code(), Some(2));
}

#[test]
fn unsupported_kind_is_an_error() {
    // No server needed: the kind is refused before connecting.
    expect_error(&scenario("nats://127.0.0.1:1", "kv_put"), "unsupported");
}

#[test]
fn unreachable_server_is_a_connect_error() {
    let url = format!("nats://127.0.0.1:{}", free_port());
    expect_error(&scenario(&url, "pubsub"), "connect");
}

#[test]
fn malformed_scenarios_are_usage_errors() {
    let mut both = scenario("nats://127.0.0.1:1", "pubsub");
    both["msgs"] = json!(10);
    expect_error(&both, "usage");
    let mut d = Driver::spawn();
    d.send(&json!({"type": "start"}));
    d.expect("error", Duration::from_secs(5));
    assert_eq!(d.wait(Duration::from_secs(5)).code(), Some(2));
}
