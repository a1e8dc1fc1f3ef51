//! `msgbench compare` against a real server: the native engine's row, a client whose driver is
//! not built (skipped with a note), and a driver that dies mid-run (its row says so; the other
//! rows keep their results). The real drivers' own suites live in drivers/; CI runs a short
//! compare with every driver built.

use std::os::unix::fs::PermissionsExt;

use crate::support::{self, run, stderr, TestServer};
use serde_json::Value;

fn compare(args: &[&str]) -> (Option<i32>, String, Value) {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    // These tests point at unbuilt drivers on purpose; CI's demand that every driver run is
    // for the compare smoke, not for them.
    let out = support::bin()
        .args(&all)
        .env_remove("MSGBENCH_REQUIRE_DRIVERS")
        .output()
        .expect("msgbench runs");
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), stderr(&out), v)
}

fn row<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {v}"))
}

#[test]
fn native_and_unbuilt_drivers_side_by_side() {
    let s = TestServer::start();
    let empty = support::scratch_dir("no-drivers");
    let (code, err, v) = compare(&[
        "--clients",
        "native,go,java",
        "--drivers",
        empty.to_str().unwrap(),
        "request",
        "--server",
        &s.url,
        "--msgs",
        "2000",
        "--runs",
        "2",
        "--json",
        "-",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(v["schema"], "msgbench.compare/v1");
    assert_eq!(v["scenario"], "request");
    let native = row(&v, "native");
    assert_eq!(native["status"], "ok");
    assert_eq!(native["result"]["runs"]["n"], 2);
    assert_eq!(native["cpu_seconds"].as_array().unwrap().len(), 2);
    assert!(native["result"]["latency"]["count"].as_u64().unwrap() > 0);
    for name in ["go", "java"] {
        let r = row(&v, name);
        assert_eq!(r["status"], "skipped");
        assert!(r["why"].as_str().unwrap().contains("make drivers"), "{r}");
    }
    // The table names every client.
    assert!(err.contains("native    msgbench (native engine)"), "{err}");
    assert!(
        err.contains("go        skipped: go driver not built"),
        "{err}"
    );
}

#[test]
fn a_driver_that_dies_is_reported_and_loses_no_one_else() {
    let s = TestServer::start();
    let dir = support::scratch_dir("bad-driver");
    std::fs::create_dir_all(dir.join("go")).unwrap();
    // Says it is ready, then dies after start: a crash no real driver can be made to do.
    let script = dir.join("go/msgbench-driver-go");
    std::fs::write(
        &script,
        "#!/bin/sh\nread s\necho '{\"type\":\"ready\",\"client\":{\"language\":\"go\",\"library\":\"x\",\"version\":\"0\"}}'\nread go\necho 'panic: boom' >&2\nexit 2\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, err, v) = compare(&[
        "--clients",
        "go,native",
        "--drivers",
        dir.to_str().unwrap(),
        "pubsub",
        "--server",
        &s.url,
        "--msgs",
        "5000",
        "--json",
        "-",
    ]);
    assert_eq!(code, Some(1), "{err}");
    let go = row(&v, "go");
    assert_eq!(go["status"], "failed");
    let why = go["why"].as_str().unwrap();
    assert!(
        why.contains("exited with status 2") && why.contains("panic: boom"),
        "{why}"
    );
    let native = row(&v, "native");
    assert_eq!(native["status"], "ok");
    assert_eq!(native["result"]["delivery"]["lost"], 0);
}

#[test]
fn unknown_clients_are_named() {
    let out = run(&["compare", "--clients", "native,cobol", "pubsub"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--clients") && err.contains("cobol"), "{err}");
}

/// Gates, CSV and Markdown act on compare as on any scenario: every client is judged, a
/// failed gate makes the exit status 8 and names the client, and both files are written.
#[test]
fn gates_csv_and_markdown_apply_to_every_client() {
    let s = TestServer::start();
    let dir = support::scratch_dir("compare-outputs");
    let (csv, md) = (dir.join("c.csv"), dir.join("m.md"));
    let (code, err, v) = compare(&[
        "--clients",
        "native",
        "request",
        "--server",
        &s.url,
        "--msgs",
        "2000",
        "--threshold",
        "p99<1ns",
        "--threshold",
        "lost==0",
        "--csv",
        csv.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
        "--json",
        "-",
    ]);
    assert_eq!(code, Some(8), "{err}");
    assert!(
        err.contains("compare: native: threshold p99<1ns failed"),
        "{err}"
    );
    let gates = row(&v, "native")["result"]["thresholds"]
        .as_array()
        .unwrap();
    assert_eq!(gates.len(), 2, "{gates:?}");
    assert_eq!(gates[0]["pass"], false);
    assert_eq!(gates[1]["pass"], true);
    assert_eq!(v["plan"]["scenario"], "request");
    assert_eq!(v["plan"]["schema"], "msgbench.plan/v1");
    let csv = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("#Client,RunID,ClientID,"), "{csv}");
    assert!(lines.len() >= 2 && lines[1].starts_with("native,"), "{csv}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("| native |") && md.contains("p99<1ns FAIL"),
        "{md}"
    );
    assert!(md.contains("lost==0 pass"), "{md}");
}

#[test]
fn flags_drivers_cannot_report_are_refused_in_one_line() {
    for (flag, extra) in [
        ("--live", vec!["--live"]),
        ("--stream-stats", vec!["--stream-stats", "s.jsonl"]),
        ("--fault", vec!["--fault", "kill@1s"]),
        (
            "--server-monitor",
            vec!["--server-monitor", "http://127.0.0.1:1"],
        ),
    ] {
        let mut args = vec!["--clients", "native", "pubsub", "--msgs", "100"];
        args.extend(extra);
        let (code, err, _) = compare(&args);
        assert_eq!(code, Some(2), "{flag}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{flag}: {err}");
        assert!(err.contains(flag), "{flag}: {err}");
    }
}

#[test]
fn load_shapes_drivers_cannot_send_are_refused_in_one_line() {
    // Driver protocol v1 carries one literal subject, one size and a fixed rate: the native
    // column alone following these would measure another load than the drivers'.
    let cases: [(&str, &[&str]); 13] = [
        (
            "--rate-schedule",
            &["pubsub", "--rate-schedule", "1000@1s,2000@1s"],
        ),
        (
            "--arrivals poisson",
            &["pubsub", "--rate", "1000", "--arrivals", "poisson"],
        ),
        ("--size", &["pubsub", "--size", "uniform:64B..4KiB"]),
        (
            "--subject",
            &["pubsub", "--subject", "o.{a}", "--token", "a=x,y"],
        ),
        ("--header", &["pubsub", "-H", "X:1"]),
        ("--multisubject", &["pubsub", "--multisubject"]),
        ("--sub-stall", &["pubsub", "--sub-stall", "100:1s"]),
        (
            "--rate-schedule",
            &["request", "--rate-schedule", "100@1s,200@1s"],
        ),
        (
            "--arrivals poisson",
            &["request", "--rate", "100", "--arrivals", "poisson"],
        ),
        (
            "--rate-schedule",
            &["latency", "--rate-schedule", "100@1s,200@1s"],
        ),
        ("--hist", &["latency", "--hist", "h"]),
        (
            "--arrivals poisson",
            &["latency", "--rate", "100", "--arrivals", "poisson"],
        ),
        ("--size", &["js-pub", "--size", "uniform:64B..4KiB"]),
    ];
    for (flag, extra) in cases {
        let mut args = vec!["--clients", "native,go"];
        args.extend(extra);
        let (code, err, _) = compare(&args);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
        assert!(
            err.contains(flag) && err.contains("msgbench compare"),
            "{extra:?}: {err}"
        );
    }
}
