//! `msgbench capacity` end to end against a real nats-server: the search's doubling and
//! bisection on an SLO whose edge is known exactly, a range that holds to its top, an SLO that
//! never holds, a tool that cannot keep its schedule named as the limit (not the server), the
//! document against its schema, and flags that cannot apply refused in one line.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::support::{self, grouped, run, schema_errors_in, stderr, TestServer};
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// One search at a time: each judges whether msgbench kept its schedule, and two searches
/// sharing two cores make that a test of the machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs a search writing its document to stdout; returns the exit code and the document.
fn search(server: &str, args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["capacity"];
    all.extend(args);
    all.extend(["--server", server, "--json", "-"]);
    let out = run(&all);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("stdout is not JSON ({e}): {}", stderr(&out));
    });
    assert_eq!(
        schema_errors_in("capacity-v1.schema.json", &doc),
        Vec::<String>::new()
    );
    (out.status.code(), doc, stderr(&out))
}

/// The rates probed, in order, each once (a rate's runs, and any run repeated because the
/// machine held msgbench up, follow one another).
fn probed_rates(doc: &Value) -> Vec<f64> {
    let mut rates: Vec<f64> = doc["probes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| f(&p["rate"]))
        .collect();
    rates.dedup();
    rates
}

#[test]
fn the_search_doubles_then_bisects_to_a_known_edge() {
    // The judged part lasts 1 s, so it sends exactly RATE messages: `sent<=1500` holds up to
    // 1,500/s and fails above. From 500/s: 500, 1,000 hold, 2,000 fails; then 1,500 holds and
    // 1,750, 1,625, 1,563 fail, when the bracket is within 5 %.
    //
    // What this tests is the search, not the machine: a failure of `sent<=1500` is the
    // system's however late msgbench sent (lateness only lowers `sent`), and the loose latency
    // SLO lets sends be up to a tenth of it late (the rule of `lag_bound_ns`) before a rate
    // that held is put down to the tool, so a busy debug build cannot change the answer.
    let _one = serial();
    let s = TestServer::start();
    let (code, doc, err) = search(
        &s.url,
        &[
            "latency",
            "--slo",
            "sent<=1500",
            "--slo",
            "p99<5s",
            "--probe-duration",
            "1s",
            "--probe-warmup",
            "100ms",
            "--probe-runs",
            "1",
            "--start-rate",
            "500",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        probed_rates(&doc),
        vec![500.0, 1000.0, 2000.0, 1500.0, 1750.0, 1625.0, 1563.0]
    );
    assert_eq!(f(&doc["sustainable_rate"]), 1500.0);
    assert_eq!(f(&doc["first_failing"]["rate"]), 1563.0);
    assert_eq!(doc["first_failing"]["slo"][0], "sent<=1500");
    assert_eq!(doc["limiter"]["kind"], "slo");
    let c = &doc["confidence"];
    assert!(f(&c["low"]) <= 1500.0 && f(&c["high"]) >= 1563.0, "{c}");
    // Every probe was judged on its hold stage alone: sent is the rate, not the warm-up too.
    for p in doc["probes"].as_array().unwrap() {
        let v = &p["verdicts"][0];
        assert_eq!(v["expr"], "sent<=1500");
        assert_eq!(f(&v["measured"]), f(&p["rate"]).round(), "{p}");
        if p["tool_kept_schedule"] == true {
            assert_eq!(v["pass"], p["pass"], "{p}");
        }
    }
    assert!(err.contains("1,500/s  run 1/1"), "{err}");
    // What bounded each run that failed: the SLO, since a latency run at 2,000/s saturates
    // nothing, with the SLO and the rate named.
    for p in doc["probes"].as_array().unwrap() {
        if p["pass"] == false && p["void"] == false {
            let rate = f(&p["rate"]) as u64;
            assert_eq!(p["limit"]["kind"], "slo", "{p}");
            let text = p["limit"]["text"].as_str().unwrap();
            let named = format!("the SLO: sent<=1500 failed at {}/s", grouped(rate));
            assert!(text.starts_with(&named), "{text}");
        }
    }
    assert!(
        err.contains("what bounded its run there: the SLO: sent<=1500 failed at 1,563/s"),
        "{err}"
    );
}

#[test]
fn a_range_that_holds_to_its_top_says_so() {
    let _one = serial();
    let s = TestServer::start();
    let (code, doc, err) = search(
        &s.url,
        &[
            "latency",
            "--slo",
            "p99<500ms",
            "--slo",
            "lost==0",
            "--probe-duration",
            "500ms",
            "--probe-warmup",
            "100ms",
            "--probe-runs",
            "2",
            "--start-rate",
            "500",
            "--max-rate",
            "2000",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(probed_rates(&doc), vec![500.0, 1000.0, 2000.0]);
    let held = |r: f64| {
        doc["probes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| f(&p["rate"]) == r && p["pass"] == true)
            .count()
    };
    assert!([500.0, 1000.0, 2000.0].iter().all(|r| held(*r) == 2));
    assert_eq!(f(&doc["sustainable_rate"]), 2000.0);
    assert_eq!(doc["limiter"]["kind"], "none");
    assert!(doc["first_failing"].is_null());
    assert_eq!(
        doc["confidence"]["per_run"],
        serde_json::json!([2000.0, 2000.0])
    );
    for p in doc["probes"].as_array().unwrap() {
        if p["pass"] == true {
            assert!(p["latency"]["p99_ns"].as_u64().unwrap() < 500_000_000);
            assert_eq!(p["lost"], 0);
        }
    }
    assert_eq!(doc["slo"], serde_json::json!(["p99<500ms", "lost==0"]));
}

#[test]
fn an_slo_that_never_holds_finds_no_rate() {
    // No latency is under 1 ns, even timed from each message's actual send: the SLO fails at
    // the first rate, and it is the SLO's failure however late a busy machine made msgbench.
    let _one = serial();
    let s = TestServer::start();
    let (code, doc, err) = search(
        &s.url,
        &[
            "latency",
            "--slo",
            "p50<1ns",
            "--probe-duration",
            "300ms",
            "--probe-warmup",
            "100ms",
            "--probe-runs",
            "1",
        ],
    );
    assert_eq!(code, Some(8), "{err}");
    assert!(doc["sustainable_rate"].is_null());
    assert!(doc["confidence"].is_null());
    assert_eq!(doc["limiter"]["kind"], "slo");
    assert_eq!(f(&doc["first_failing"]["rate"]), 1000.0);
    assert!(err.contains("none of the probed rates held"), "{err}");
}

#[test]
fn a_tool_that_cannot_keep_its_schedule_is_named_as_the_limit() {
    // msgbench is stopped for 120 ms of every 300 ms while it probes: its sends go out late
    // while the socket would take them. Nothing is lost, so the SLO holds; the search must
    // still refuse to call any of these rates the system's.
    let _one = serial();
    let s = TestServer::start();
    let mut child = support::bin()
        .args([
            "capacity",
            "latency",
            "--server",
            &s.url,
            "--slo",
            "lost==0",
            "--probe-duration",
            "1500ms",
            "--probe-warmup",
            "100ms",
            "--probe-runs",
            "1",
            "--json",
            "-",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    // Connecting, the first plan's checks and the server's PING first.
    std::thread::sleep(Duration::from_millis(300));
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        std::thread::sleep(Duration::from_millis(120));
        unsafe { libc::kill(pid, libc::SIGCONT) };
        std::thread::sleep(Duration::from_millis(180));
    }
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(out.status.code(), Some(8), "{err}");
    assert_eq!(doc["limiter"]["kind"], "tool", "{}", doc["limiter"]);
    assert!(doc["sustainable_rate"].is_null());
    let first = &doc["probes"][0];
    assert_eq!(first["tool_kept_schedule"], false);
    assert_eq!(first["pass"], false);
    // The SLO itself held: only the tool's lateness failed the probe.
    assert_eq!(first["verdicts"][0]["pass"], true);
    assert!(
        doc["limiter"]["detail"]
            .as_str()
            .unwrap()
            .contains("could not keep its schedule"),
        "{}",
        doc["limiter"]
    );
}

#[test]
fn flags_a_search_cannot_honour_are_refused_in_one_line() {
    let cases: [(&[&str], &str); 13] = [
        (
            &["latency", "--slo", "p99<1ms", "--warmup", "2s"],
            "--warmup",
        ),
        (
            &["latency", "--slo", "p99<1ms", "--allow-loss"],
            "--allow-loss",
        ),
        (&["latency", "--slo", "p99<1ms", "--live"], "--live"),
        (&["latency", "--slo", "msgs>5"], "--slo"),
        (&["latency", "--slo", "p99<1ms", "--rate", "5000"], "--rate"),
        (
            &["latency", "--slo", "p99<1ms", "--duration", "5s"],
            "--duration",
        ),
        (&["pubsub", "--slo", "lost==0", "--msgs", "10"], "--msgs"),
        (
            &["latency", "--slo", "p99<1ms", "--threshold", "p50<1ms"],
            "--slo",
        ),
        (&["latency", "--slo", "p99<1ms", "--csv", "x.csv"], "--csv"),
        (
            &["latency", "--slo", "p99<1ms", "--runs", "2"],
            "--probe-runs",
        ),
        (
            &["latency", "--slo", "p99<1ms", "--precision", "0"],
            "--precision",
        ),
        (&["latency", "--probe-runs", "2"], "--slo"),
        // A scenario's helper is not a load a search can probe.
        (
            &["grpc", "encode", "--slo", "p99<1ms", "--count", "5"],
            "'encode'",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["capacity"];
        all.extend(args);
        let out = run(&all);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(says),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn an_interrupted_search_still_writes_what_it_measured() {
    let _one = serial();
    let s = TestServer::start();
    let child = support::bin()
        .args([
            "capacity",
            "latency",
            "--server",
            &s.url,
            "--slo",
            "p99<1s",
            "--probe-duration",
            "400ms",
            "--probe-warmup",
            "100ms",
            "--probe-runs",
            "1",
            "--start-rate",
            "200",
            "--json",
            "-",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once the first probe has ended (its line is on stderr), far too soon for
    // the search to end: waiting for the line, not for a fixed time, keeps a slow machine
    // from interrupting before anything was measured.
    let mut child = child;
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut err = String::new();
    while !err.contains("run 1/1") {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut lines, &mut line).unwrap() == 0 {
            panic!("the search ended before its first probe: {err}");
        }
        err.push_str(&line);
    }
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    std::io::Read::read_to_string(&mut lines, &mut err).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(
        schema_errors_in("capacity-v1.schema.json", &doc),
        Vec::<String>::new()
    );
    assert_eq!(doc["interrupted"], true);
    let probes = doc["probes"].as_array().unwrap();
    assert!(!probes.is_empty(), "{err}");
    // What held before the interrupt is kept; the rate being probed is not called a failure.
    assert!(
        doc["first_failing"].is_null(),
        "{}: {err}",
        doc["first_failing"]
    );
    assert_eq!(doc["limiter"]["kind"], "none");
    assert!(err.contains("Interrupted"), "{err}");
}

#[test]
fn the_help_of_a_search_leaves_out_the_flags_the_search_sets() {
    let out = support::bin()
        .args(["capacity", "latency", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{help}");
    for set in ["--rate ", "--rate-schedule", "--duration", "--warmup"] {
        assert!(!help.contains(set), "{set} in:\n{help}");
    }
    // The scenario's own flags and the search's are there.
    for kept in ["--size", "--slo", "--start-rate", "--probe-warmup"] {
        assert!(help.contains(kept), "{kept} missing from:\n{help}");
    }
}
