//! `--threshold`: pass/fail gates on a real run, their report in text and JSON, the exit status
//! 8 when one fails (also when the run did not measure the metric), and bad expressions named.

use crate::support::{self, run, run_json, schema_errors, stderr, TestServer};

#[test]
fn passing_gates_exit_0_and_are_reported() {
    let s = TestServer::start();
    let dir = support::scratch_dir("markdown");
    let md = dir.join("result.md");
    let (out, v) = run_json(&[
        "pubsub",
        "--server",
        &s.url,
        "--msgs",
        "20000",
        "--threshold",
        "msgs_per_sec>1",
        "--threshold",
        "lost==0",
        // Not errors==0: a subscriber at full speed on a busy machine may fall behind for a
        // moment (counted as fell_behind) without losing a message.
        "--threshold",
        "duplicated==0",
        "--markdown",
        md.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let t = v["thresholds"].as_array().unwrap();
    assert_eq!(t.len(), 3);
    assert!(t.iter().all(|t| t["pass"] == true), "{t:?}");
    assert_eq!(t[1]["measured"], 0.0);
    assert!(
        stderr(&out).contains("Thresholds: 3 of 3 passed"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("PASS lost==0 (measured 0)"),
        "{}",
        stderr(&out)
    );
    // The Markdown table carries the same run: its figures and each gate.
    let table = std::fs::read_to_string(&md).unwrap();
    assert!(table.starts_with("**msgbench pubsub**"), "{table}");
    assert!(table.contains("| figure | value |\n|---|---|\n"), "{table}");
    assert!(
        table.contains("| delivery | received 20,000 of 20,000 expected, lost 0,"),
        "{table}"
    );
    assert!(table.contains("| pub (1 client) |"), "{table}");
    assert!(
        table.contains("| threshold `lost==0` | pass (0) |"),
        "{table}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_failing_or_unmeasurable_gate_exits_8() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "latency",
        "--server",
        &s.url,
        "--rate",
        "1000",
        "--duration",
        "1s",
        "--warmup",
        "100ms",
        "--threshold",
        "p99<1ns",
        "--threshold",
        "p50>=1ns",
    ]);
    assert_eq!(out.status.code(), Some(8), "{}", stderr(&out));
    let t = &v["thresholds"];
    assert_eq!(
        (t[0]["pass"].clone(), t[1]["pass"].clone()),
        (false.into(), true.into())
    );
    assert!(t[0]["measured"].as_f64().unwrap() >= 1.0);
    assert!(
        stderr(&out).contains("FAIL p99<1ns (measured "),
        "{}",
        stderr(&out)
    );
    // A publisher alone measures no latency: a latency gate cannot pass.
    let (out, v) = run_json(&[
        "pub",
        "--server",
        &s.url,
        "--msgs",
        "1000",
        "--threshold",
        "p99<1s",
    ]);
    assert_eq!(out.status.code(), Some(8), "{}", stderr(&out));
    assert_eq!(v["thresholds"][0]["measured"], serde_json::Value::Null);
    assert!(
        stderr(&out).contains("FAIL p99<1s (not measured: this run measured no latency)"),
        "{}",
        stderr(&out)
    );
    // Requests nobody answers time no round trip: no latency (not a table of zeros), and a
    // latency gate fails as unmeasured, where it passed on 0 ns before.
    let (out, v) = run_json(&[
        "request",
        "--server",
        &s.url,
        "--responders",
        "0",
        "--subject",
        "nobody.answers.here",
        "--msgs",
        "20",
        "--timeout",
        "1s",
        "--threshold",
        "p99<1ms",
    ]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["latency"], serde_json::Value::Null, "{}", v["latency"]);
    assert_eq!(v["thresholds"][0]["pass"], false);
    assert_eq!(v["thresholds"][0]["measured"], serde_json::Value::Null);
    assert!(!stderr(&out).contains("0 ns"), "{}", stderr(&out));
}

#[test]
fn bad_expressions_name_the_flag() {
    for (expr, needle) in [
        ("p95<1ms", "not a reported percentile"),
        ("lost", "METRIC OP VALUE"),
    ] {
        let out = run(&["pub", "--threshold", expr]);
        assert_eq!(out.status.code(), Some(2), "{expr}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("--threshold") && err.contains(needle),
            "{expr}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}
