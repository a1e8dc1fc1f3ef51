//! End-to-end tests of request/reply against a real nats-server: closed loop, pipelined, open
//! loop, no responders, timeouts, and an external `msgbench reply` service.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{
    bin, run, run_json, schema_errors, schema_errors_in, scratch_dir, stderr, u, TestServer,
};
use serde_json::Value;

#[test]
fn closed_loop_requests_each_get_a_timed_reply() {
    let s = TestServer::start();
    let (out, v) = run_json(&["request", "--server", &s.url, "--msgs", "2000"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["scenario"], "request");
    let d = &v["delivery"];
    assert_eq!(
        (u(&d["sent"]), u(&d["received"]), u(&d["lost"])),
        (2000, 2000, 0)
    );
    assert_eq!(u(&v["latency"]["count"]), 2000);
    // Closed loop has no schedule, so there is no separate uncorrected figure.
    assert!(v.get("latency_uncorrected").is_none());
    assert!(u(&v["latency"]["percentiles_ns"]["50"]) > 0);
    assert_eq!(u(&v["throughput"]["msgs"]), 2000);
}

#[test]
fn pipelined_clients_and_several_responders_lose_nothing() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "request",
        "--server",
        &s.url,
        "--clients",
        "3",
        "--in-flight",
        "8",
        "--responders",
        "2",
        "--msgs",
        "1000",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = &v["delivery"];
    assert_eq!(
        (u(&d["received"]), u(&d["lost"]), u(&d["duplicated"])),
        (3000, 0, 0)
    );
    assert_eq!(d["publishers"].as_array().unwrap().len(), 3);
}

#[test]
fn open_loop_requests_follow_the_schedule_and_report_both_latencies() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "request",
        "--server",
        &s.url,
        "--rate",
        "2000",
        "--duration",
        "1s",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(u(&v["delivery"]["sent"]), 2000);
    assert_eq!(u(&v["delivery"]["received"]), 2000);
    assert_eq!(u(&v["latency"]["count"]), 2000);
    assert_eq!(u(&v["latency_uncorrected"]["count"]), 2000);
    assert_eq!(schema_errors(&v), Vec::<String>::new());
}

#[test]
fn requests_without_responders_fail_fast_by_kind() {
    let s = TestServer::start();
    let started = Instant::now();
    let (out, v) = run_json(&[
        "request",
        "--server",
        &s.url,
        "--responders",
        "0",
        "--msgs",
        "20",
        "--timeout",
        "60s",
    ]);
    // The server answers "no responders" at once: nothing waits for the 60 s timeout. One
    // request that did would take all of it; half of it leaves a busy machine plenty.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(u(&v["errors"]["no_responders"]), 20);
    assert_eq!(u(&v["delivery"]["lost"]), 20);
}

#[test]
fn slow_responders_make_requests_time_out_and_the_run_still_ends() {
    let s = TestServer::start();
    let started = Instant::now();
    let (out, v) = run_json(&[
        "request",
        "--server",
        &s.url,
        "--msgs",
        "3",
        "--delay",
        "400ms",
        "--timeout",
        "100ms",
    ]);
    // Three requests of 100 ms: the bound only guards against a run that never ends.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(u(&v["errors"]["request_timeout"]), 3);
    assert_eq!(u(&v["delivery"]["received"]), 0);
    // With --allow-loss the same outcome exits 0.
    let (out, _) = run_json(&[
        "request",
        "--server",
        &s.url,
        "--msgs",
        "1",
        "--delay",
        "300ms",
        "--timeout",
        "100ms",
        "--allow-loss",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn an_external_reply_service_answers_requests() {
    let s = TestServer::start();
    let dir = scratch_dir("reply");
    let json = dir.join("reply.json");
    let mut service = bin()
        .args([
            "reply",
            "--server",
            &s.url,
            "--clients",
            "2",
            "--msgs",
            "500",
            "--no-progress",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(service.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(
        first.contains("serving requests on 'msgbench.service'"),
        "{first}"
    );
    let (out, v) = run_json(&[
        "request",
        "--server",
        &s.url,
        "--responders",
        "0",
        "--msgs",
        "500",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(u(&v["delivery"]["received"]), 500);
    assert!(service.wait().unwrap().success());
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["scenario"], "reply");
    assert_eq!(u(&r["delivery"]["received"]), 500);
    assert_eq!(schema_errors(&r), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn request_bad_input_gets_one_line_and_exit_2() {
    for (args, needle) in [
        (vec!["request", "--size", "7"], "--size"),
        (vec!["request", "--in-flight", "0"], "--in-flight"),
        (vec!["reply", "--msgs", "0"], "--msgs"),
    ] {
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn calibrate_orders_the_floor_and_fits_its_schema() {
    let s = TestServer::start();
    let out = run(&[
        "calibrate",
        "--server",
        &s.url,
        "--samples",
        "500",
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        schema_errors_in("calibration-v1.schema.json", &v),
        Vec::<String>::new()
    );
    let f = &v["environment"]["floor_ns"];
    for hop in ["tcp", "one_hop", "two_hop"] {
        assert_eq!(u(&f[hop]["count"]), 500, "{hop}");
    }
    // Through the server twice cannot be faster than through it once, at the median.
    assert!(u(&f["two_hop"]["p50"]) > u(&f["one_hop"]["min"]), "{f}");
    assert!(stderr(&out).contains("two hops: request and reply"));
}
