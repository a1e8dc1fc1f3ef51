//! `msgbench conns` against a real nats-server: thousands of connections from one process,
//! each connect phase timed, every connection's receipt checked, memory per connection under
//! its bound, and a restart's reconnect herd measured (with and without jitter).

mod support;

use serde_json::Value;
use support::{run, run_json, schema_errors, stderr, u, TestServer};

/// msgbench's own memory per connection may not pass this (the fleet's buffers start at 1 KiB;
/// the thread-per-connection engine it replaced spent about 300 KiB).
const PER_CONNECTION_BOUND: f64 = 20.0 * 1024.0;

#[test]
fn two_thousand_connections_each_receive_their_own_checks() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "conns",
        "--server",
        &s.url,
        "--clients",
        "2000",
        "--subscribe",
        "own",
        "--hold",
        "3s",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let c = &v["conns"];
    assert_eq!(
        (u(&c["connected"]), u(&c["never_connected"])),
        (2000, 0),
        "{c}"
    );
    assert_eq!(u(&c["up_at_end"]), 2000, "{c}");
    assert_eq!(c["failures"], serde_json::json!({}), "{c}");
    // Every phase of every first connect was timed, in order of size.
    for phase in ["tcp", "handshake", "subscribe", "total"] {
        let p = &c["connect_latency"][phase];
        assert_eq!(u(&p["count"]), 2000, "{phase}: {p}");
        let at = |k: &str| p[k].as_f64().unwrap();
        assert!(0.0 < at("p50_us") && at("p50_us") <= at("p99_us") && at("p99_us") <= at("max_us"));
    }
    assert!(c["connect_latency"]["tls"].is_null(), "no TLS asked for");
    assert!(c["connects_per_sec"].as_f64().unwrap() > 0.0);
    // Own subjects: the checker sends connection i the messages i, i+2000, …; each arrived.
    let k = &c["checks"];
    assert!(u(&k["published"]) >= 2000, "{k}");
    assert_eq!(
        u(&k["expected"]),
        u(&k["published"]),
        "one delivery per message: {k}"
    );
    assert_eq!(
        (u(&k["missed"]), u(&k["connections_missing"])),
        (0, 0),
        "{k}"
    );
    assert_eq!(u(&k["received"]), u(&k["expected"]));
    // Memory: the bound per connection, and idle buffers back at their base size.
    let m = &c["memory"];
    let per = m["per_connection_bytes"].as_f64().expect("measured");
    assert!(per < PER_CONNECTION_BOUND, "{per} B a connection: {m}");
    assert!(u(&m["buffers_end_bytes"]) <= 2000 * 2048, "{m}");
    // The test's server is not msgbench's to read: its memory is null, not 0.
    assert!(
        m["server_before_bytes"].is_null() && m["server_source"].is_null(),
        "{m}"
    );
    let text = support::stderr(&out);
    assert!(text.contains("Connections: 2,000 of 2,000 up"), "{text}");
    assert!(text.contains("INFO/CONNECT/PONG"), "{text}");
}

#[test]
fn a_restart_herd_comes_back_with_and_without_jitter() {
    for jitter in ["on", "off"] {
        let (out, v) = run_json(&[
            "conns",
            "--clients",
            "300",
            "--subscribe",
            "shared",
            "--hold",
            "4s",
            "--check-every",
            "250ms",
            "--fault",
            "restart@1s:500ms",
            "--reconnect",
            "--reconnect-jitter",
            jitter,
        ]);
        assert!(out.status.success(), "{jitter}: {}", stderr(&out));
        assert_eq!(schema_errors(&v), Vec::<String>::new());
        let h = &v["conns"]["herd"];
        assert_eq!(h["jitter"], Value::from(jitter == "on"), "{h}");
        assert_eq!(
            (u(&h["lost"]), u(&h["back"]), u(&h["never_back"])),
            (300, 300, 0),
            "{h}"
        );
        let at = |k: &str| h[k].as_f64().unwrap_or_else(|| panic!("{k}: {h}"));
        // The server was down for 500 ms at least: nobody was back sooner.
        assert!(500.0 <= at("server_back_ms"), "{h}");
        assert!(500.0 <= at("to_50pct_ms"), "{h}");
        assert!(at("to_50pct_ms") <= at("to_99pct_ms") && at("to_99pct_ms") <= at("to_100pct_ms"));
        assert!(at("attempts_mean") >= 1.0 && u(&h["attempts_max"]) >= u(&h["attempts_p50"]));
        // A check every 250 ms: those published while the server was down (at least 500 ms)
        // reached none of the cut connections, and are among what the checks missed.
        let lost = u(&h["msgs_lost"]);
        assert!(lost >= 300, "at least one check each: {h}");
        assert!(lost <= u(&v["conns"]["checks"]["missed"]), "{}", v["conns"]);
        assert_eq!(u(&v["conns"]["up_at_end"]), 300, "{}", v["conns"]);
    }
}

#[test]
fn flags_conns_cannot_honour_are_refused_in_one_line() {
    let s = TestServer::start();
    for (args, names) in [
        (vec!["--csv", "x.csv"], "--csv"),
        (vec!["--check-every", "1s"], "--check-every"),
        (vec!["--fault", "pause@1s:1s", "--reconnect"], "--fault"),
        (vec!["--fault", "restart@1s"], "--reconnect"),
        (vec!["--reconnect-jitter", "off"], "--reconnect-jitter"),
        (vec!["--in-flight", "0"], "--in-flight"),
        (vec!["--server-monitor", "ftp://x"], "--server-monitor"),
    ] {
        let mut all = vec!["conns", "--clients", "2", "--hold", "1s"];
        if !args.contains(&"--fault") {
            all.extend(["--server", &s.url]);
        }
        all.extend(args.iter().copied());
        let out = run(&all);
        let err = stderr(&out);
        assert!(!out.status.success(), "{all:?} was accepted");
        assert_eq!(err.trim().lines().count(), 1, "{all:?}: {err}");
        assert!(err.contains(names), "{all:?}: {err}");
    }
}

#[test]
fn buffers_grow_for_a_burst_and_shrink_back_after_it() {
    let s = TestServer::start();
    let conns = support::bin()
        .args([
            "conns",
            "--server",
            &s.url,
            "--clients",
            "20",
            "--subscribe",
            "shared",
            "--subject",
            "burst.test",
            "--hold",
            "4s",
            "--check-every",
            "0s",
            "--json",
            "-",
            "--no-progress",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("msgbench runs");
    // Once the connections are up (well within a second), a second of 60 KiB messages.
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let burst = run(&[
        "pub",
        "--server",
        &s.url,
        "--subject",
        "burst.test",
        "--size",
        "60KiB",
        "--rate",
        "200",
        "--duration",
        "1s",
    ]);
    assert!(burst.status.success(), "{}", stderr(&burst));
    let out = conns.wait_with_output().expect("conns ends");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let c = &v["conns"];
    assert_eq!(u(&c["connected"]), 20, "{c}");
    let m = &c["memory"];
    // During the burst every connection held a 60 KiB message at once: its buffer grew past
    // it. Two seconds after, each is back at its base size.
    assert!(u(&m["buffers_peak_bytes"]) >= 20 * 60 * 1024, "{m}");
    assert!(u(&m["buffers_end_bytes"]) <= 20 * 2048, "{m}");
}

#[test]
fn a_plan_of_a_conns_run_runs_again() {
    let s = TestServer::start();
    let out = run(&[
        "conns",
        "--server",
        &s.url,
        "--clients",
        "30",
        "--subscribe",
        "shared",
        "--hold",
        "1s",
        "--print-plan",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let path =
        std::env::temp_dir().join(format!("msgbench-conns-plan-{}.json", std::process::id()));
    std::fs::write(&path, &out.stdout).unwrap();
    let (again, v) = run_json(&["run", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(v["scenario"], "conns");
    assert_eq!(u(&v["conns"]["connected"]), 30, "{}", v["conns"]);
    assert_eq!(u(&v["conns"]["checks"]["missed"]), 0, "{}", v["conns"]);
}

#[test]
fn connections_a_server_turns_away_are_counted_by_kind_and_exit_4() {
    let s = TestServer::with_config("max_connections: 50");
    let (out, v) = run_json(&[
        "conns",
        "--server",
        &s.url,
        "--clients",
        "80",
        "--hold",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let c = &v["conns"];
    let (up, never) = (u(&c["connected"]), u(&c["never_connected"]));
    assert!(up <= 50 && up + never == 80 && never >= 30, "{c}");
    let failed: u64 = c["failures"].as_object().unwrap().values().map(u).sum();
    assert!(
        failed >= never,
        "each one that never came up failed at least once: {c}"
    );
}
