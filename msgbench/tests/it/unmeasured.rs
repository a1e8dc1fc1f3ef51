//! A figure a run did not measure is null, never 0, and a gate on it fails as not measured. For
//! every scenario, each gateable metric it cannot measure is gated with a threshold that any
//! figure would pass (`>=0`): the gate must fail, its verdict must say "not measured", and the
//! figure must be null in the JSON. A publisher alone once passed `lost==0` on a loss it never
//! counted. Each run also gates one figure it does measure, which must pass, so a run that
//! measured nothing at all cannot pass this test by accident.

use std::process::Output;

use serde_json::Value;

use crate::support::{self, run, run_json, schema_errors, stderr, TestServer};

/// The latency figures: a percentile, min, max or mean, all in nanoseconds.
const LATENCY: [&str; 12] = [
    "p10", "p50", "p75", "p90", "p99", "p99.9", "p99.99", "p99.999", "p100", "min", "max", "mean",
];

/// A threshold that any figure of `metric` passes.
fn any_value(metric: &str) -> String {
    let timed = LATENCY.contains(&metric)
        || metric.starts_with("connect_p")
        || metric == "connect_max"
        || metric.starts_with("back_");
    if timed {
        format!("{metric}>=0ns")
    } else {
        format!("{metric}>=0")
    }
}

/// Where a delivery figure lives in the result, for the metrics that have one.
fn delivery_field(metric: &str) -> Option<&'static str> {
    ["sent", "received", "lost", "duplicated", "reordered"]
        .into_iter()
        .find(|f| *f == metric)
}

/// Runs `args` (JSON on stdout) with a gate on `measured`, which must pass, and on each of
/// `unmeasured`, which must each fail as not measured, with its figure null.
fn check(args: &[&str], measured: &str, unmeasured: &[&str]) {
    let gates: Vec<String> = std::iter::once(measured)
        .chain(unmeasured.iter().copied())
        .map(any_value)
        .collect();
    let mut all: Vec<&str> = args.to_vec();
    for g in &gates {
        all.extend(["--threshold", g.as_str()]);
    }
    let (out, v) = run_json(&all);
    judge(&out, &v, args, measured, unmeasured);
}

fn judge(out: &Output, v: &Value, args: &[&str], measured: &str, unmeasured: &[&str]) {
    // The text goes to stderr when the JSON takes stdout, else to stdout.
    let err = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(out));
    let name = args[..2].join(" ");
    assert_eq!(out.status.code(), Some(8), "{name}: {err}");
    assert_eq!(schema_errors(v), Vec::<String>::new(), "{name}");
    let verdicts = v["thresholds"].as_array().expect("thresholds");
    assert_eq!(verdicts.len(), unmeasured.len() + 1, "{name}: {verdicts:?}");
    assert_eq!(
        verdicts[0]["pass"], true,
        "{name}: {measured}: {}",
        verdicts[0]
    );
    for (m, t) in unmeasured.iter().zip(&verdicts[1..]) {
        let expr = any_value(m);
        assert_eq!(t["expr"], expr.as_str(), "{name}");
        assert_eq!(t["pass"], false, "{name}: {m} passed: {t}");
        assert!(t["measured"].is_null(), "{name}: {m} measured: {t}");
        assert!(
            err.contains(&format!("FAIL {expr} (not measured: ")),
            "{name}: {m}: {err}"
        );
        if let Some(f) = delivery_field(m) {
            assert!(
                v["delivery"][f].is_null(),
                "{name}: delivery.{f} is {}, not null",
                v["delivery"][f]
            );
        }
    }
}

fn with(latency: bool, extra: &[&'static str]) -> Vec<&'static str> {
    let mut v: Vec<&str> = if latency { LATENCY.to_vec() } else { vec![] };
    v.extend_from_slice(extra);
    v
}

#[test]
fn a_publisher_alone_counts_no_arrivals_no_loss_and_no_latency() {
    let s = TestServer::start();
    let args = ["pub", "--server", &s.url, "--msgs", "1000"];
    let unmeasured = with(
        true,
        &[
            "received",
            "lost",
            "duplicated",
            "reordered",
            "shortfall_pct",
        ],
    );
    check(&args, "sent", &unmeasured);
    // The newcomer's command: a gate on loss no subscriber counted does not pass.
    let out = run(&[
        "pub",
        "--server",
        &s.url,
        "--msgs",
        "1000",
        "--no-progress",
        "--threshold",
        "lost==0",
        "--threshold",
        "received>0",
        "--threshold",
        "p99<1s",
    ]);
    let err = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(8), "{err}{}", stderr(&out));
    assert!(err.contains("Thresholds: 0 of 3 passed"), "{err}");
    assert!(
        err.contains(
            "FAIL lost==0 (not measured: this run has no subscriber of its own to count arrivals)"
        ),
        "{err}"
    );
}

#[test]
fn pubsub_and_sub_time_no_latency_and_unpaced_runs_have_no_shortfall() {
    let s = TestServer::start();
    check(
        &["pubsub", "--server", &s.url, "--msgs", "1000"],
        "lost",
        &with(true, &["shortfall_pct"]),
    );
    // `sub` in its own process, counting what a separate publisher sends.
    let dir = support::scratch_dir("unmeasured-sub");
    let json = dir.join("sub.json");
    let gates: Vec<String> = std::iter::once("lost")
        .chain(with(true, &["shortfall_pct"]))
        .map(any_value)
        .collect();
    let mut args = vec![
        "sub",
        "--server",
        &s.url,
        "--msgs",
        "1000",
        "--subject",
        "unmeasured.sub",
        "--no-progress",
        "--json",
        json.to_str().unwrap(),
    ];
    for g in &gates {
        args.extend(["--threshold", g.as_str()]);
    }
    let mut child = support::spawn_piped(&args);
    let (seen, rest) = support::stderr_until(&mut child, "waiting for messages on");
    let out = run(&[
        "pub",
        "--server",
        &s.url,
        "--msgs",
        "1000",
        "--subject",
        "unmeasured.sub",
        "--no-progress",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut out = child.wait_with_output().unwrap();
    out.stderr = support::rest_of_stderr(seen, rest).into_bytes();
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    judge(&out, &v, &args, "lost", &with(true, &["shortfall_pct"]));
}

#[test]
fn a_closed_loop_requester_has_no_shortfall_and_a_responder_counts_no_sends_or_loss() {
    let s = TestServer::start();
    check(
        &["request", "--server", &s.url, "--msgs", "300"],
        "p99",
        &["shortfall_pct"],
    );
    // The responder alone: it counts the requests that came, not what was sent or lost.
    let unmeasured = with(
        true,
        &["sent", "lost", "duplicated", "reordered", "shortfall_pct"],
    );
    let gates: Vec<String> = std::iter::once("received")
        .chain(unmeasured.iter().copied())
        .map(any_value)
        .collect();
    let dir = support::scratch_dir("unmeasured-reply");
    let json = dir.join("reply.json");
    let mut args = vec![
        "reply",
        "--server",
        &s.url,
        "--msgs",
        "300",
        "--no-progress",
        "--json",
        json.to_str().unwrap(),
    ];
    for g in &gates {
        args.extend(["--threshold", g.as_str()]);
    }
    let mut child = support::spawn_piped(&args);
    let (seen, rest) = support::stderr_until(&mut child, "serving requests on");
    let requests = run(&[
        "request",
        "--server",
        &s.url,
        "--responders",
        "0",
        "--msgs",
        "300",
        "--no-progress",
    ]);
    assert!(requests.status.success(), "{}", stderr(&requests));
    let mut out = child.wait_with_output().unwrap();
    out.stderr = support::rest_of_stderr(seen, rest).into_bytes();
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    judge(&out, &v, &args, "received", &unmeasured);
}

#[test]
fn jetstream_and_key_value_runs_say_what_they_cannot_count() {
    let s = TestServer::start();
    check(
        &["js", "pub", "--server", &s.url, "--msgs", "500"],
        "lost",
        &["shortfall_pct"],
    );
    // Consumers read stream sequences: no order of publishers to judge, and without
    // --publish live nothing is timed.
    check(
        &["js", "consume", "--server", &s.url, "--msgs", "500"],
        "lost",
        &with(true, &["reordered", "shortfall_pct"]),
    );
    check(
        &["kv", "put", "--server", &s.url, "--msgs", "200"],
        "p99",
        &["shortfall_pct"],
    );
    check(
        &["kv", "get", "--server", &s.url, "--msgs", "200"],
        "p99",
        &["shortfall_pct"],
    );
}

#[test]
fn the_object_store_counts_objects_in_its_own_section_not_deliveries() {
    let s = TestServer::start();
    let unmeasured = [
        "sent",
        "received",
        "lost",
        "duplicated",
        "reordered",
        "shortfall_pct",
    ];
    check(
        &[
            "obj",
            "put",
            "--server",
            &s.url,
            "--objects",
            "4",
            "--size",
            "64KiB",
        ],
        "p99",
        &unmeasured,
    );
    check(
        &["obj", "get", "--server", &s.url, "--objects", "4"],
        "p99",
        &unmeasured,
    );
}

#[test]
fn grpc_counts_calls_not_their_order_and_an_unpaced_run_has_no_shortfall() {
    check(
        &["grpc", "--requests", "200"],
        "lost",
        &["duplicated", "reordered", "shortfall_pct"],
    );
}

#[test]
fn conns_without_checks_or_a_restart_has_no_misses_or_herd() {
    let s = TestServer::start();
    check(
        &[
            "conns",
            "--server",
            &s.url,
            "--clients",
            "20",
            "--hold",
            "1s",
        ],
        "opened",
        &[
            "missed",
            "herd_lost",
            "never_back",
            "back_p50",
            "back_p99",
            "back_max",
        ],
    );
    // A message figure is not one of its figures: refused before the run, in one line.
    let out = run(&[
        "conns",
        "--server",
        &s.url,
        "--clients",
        "2",
        "--threshold",
        "lost==0",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

/// A publisher running beside a test, killed and reaped when dropped (also when an assertion
/// fails first); its folder (the ticks it writes) lives as long.
struct Publishing {
    child: std::process::Child,
    _dir: support::Scratch,
}

impl Drop for Publishing {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `msgbench pub` at a rate into `subject` for long enough, once its first second has been
/// sent: a subscriber started now joins a stream already under way. `payload` makes its
/// messages unstamped.
fn publishing(s: &TestServer, subject: &str, payload: Option<&str>) -> Publishing {
    let dir = support::scratch_dir("unmeasured-late");
    let ticks = dir.join("ticks.jsonl");
    let mut args = vec![
        "pub",
        "--server",
        &s.url,
        "--rate",
        "1000",
        "--duration",
        "60s",
        "--subject",
        subject,
        "--no-progress",
        "--stream-stats",
        ticks.to_str().unwrap(),
    ];
    if let Some(p) = payload {
        args.extend(["--payload", p]);
    }
    let mut child = Publishing {
        child: support::spawn_piped(&args),
        _dir: dir,
    };
    support::wait_for_tick(&ticks, &mut child.child, |t| {
        support::tick_f(t, "sent_per_sec") > 0.0
    });
    child
}

#[test]
fn a_subscriber_for_a_time_owes_no_count_and_what_was_sent_before_it_joined_is_not_lost() {
    let s = TestServer::start();
    // Stamped: loss is the gaps from the first message seen of each publisher; the thousand
    // sent before the subscriber was there are not lost, and no count was expected.
    let publisher = publishing(&s, "late.stamped", None);
    let args = [
        "sub",
        "--server",
        &s.url,
        "--duration",
        "1s",
        "--subject",
        "late.stamped",
    ];
    check(&args, "lost", &with(true, &["shortfall_pct"]));
    let (out, v) = run_json(&[&args[..], &["--threshold", "lost==0"]].concat());
    drop(publisher);
    let d = &v["delivery"];
    assert_eq!(out.status.code(), Some(0), "{d}: {}", stderr(&out));
    assert!(d["expected"].is_null(), "{d}");
    assert!(support::u(&d["received"]) > 0, "{d}");
    assert_eq!(support::u(&d["sent"]), support::u(&d["received"]), "{d}");
    // Unstamped: nothing tells what was sent or lost.
    let dir = support::scratch_dir("unmeasured-payload");
    let payload = dir.join("payload");
    std::fs::write(&payload, b"12345678").unwrap();
    let _publisher = publishing(&s, "late.plain", payload.to_str());
    check(
        &[
            "sub",
            "--server",
            &s.url,
            "--duration",
            "1s",
            "--subject",
            "late.plain",
        ],
        "received",
        &with(
            true,
            &["sent", "lost", "duplicated", "reordered", "shortfall_pct"],
        ),
    );
}
