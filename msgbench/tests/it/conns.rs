//! `msgbench conns` against a real nats-server: thousands of connections from one process,
//! each connect phase timed, every connection's receipt checked, memory per connection under
//! its bound, and a restart's reconnect herd measured (with and without jitter).

use std::os::unix::fs::PermissionsExt;

use crate::support::{self, grouped, run, run_json, schema_errors, stderr, u, TestServer};
use serde_json::Value;

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

/// The exit status the counts of a herd run call for (docs/exit-codes.md): a connection the
/// restart cut that was not back when the hold ended is 5; else a check missed that the fault
/// does not excuse is 3; else 0.
fn herd_status(c: &Value) -> i32 {
    let (h, k) = (&c["herd"], &c["checks"]);
    if u(&h["never_back"]) > 0 {
        5
    } else if u(&k["missed"]) > u(&k["excused_by_fault"]) {
        3
    } else {
        0
    }
}

/// Every return the herd reports came by the end of the hold.
fn assert_no_return_after_the_hold(h: &Value) {
    let hold_end = h["hold_end_ms"].as_f64().expect("hold_end_ms");
    for share in ["to_50pct_ms", "to_99pct_ms", "to_100pct_ms"] {
        if let Some(ms) = h[share].as_f64() {
            assert!(ms <= hold_end, "{share} {ms} ms is after the hold: {h}");
        }
    }
    assert_eq!(u(&h["back"]) + u(&h["never_back"]), u(&h["lost"]), "{h}");
}

#[test]
fn the_herd_counts_no_return_after_the_hold_and_its_exit_status_follows_the_counts() {
    // The run, scaled down: the kill a second in, a second down, a 4 s hold.
    let (out, v) = run_json(&[
        "conns",
        "--clients",
        "500",
        "--subscribe",
        "shared",
        "--hold",
        "4s",
        "--check-every",
        "250ms",
        "--fault",
        "restart@1s:1s",
        "--reconnect",
    ]);
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let c = &v["conns"];
    let (h, k) = (&c["herd"], &c["checks"]);
    assert_eq!(u(&h["lost"]), 500, "the kill cut every connection: {h}");
    // The restart cost checks (below), and the text says whether it excuses them.
    let text = stderr(&out);
    assert!(
        text.contains("excused by --fault"),
        "the text names what the fault excused: {text}"
    );
    assert_no_return_after_the_hold(h);
    // The hold ended 4 s after it began, not before.
    let fault_at_s = h["fault_at_s"].as_f64().unwrap();
    assert!(
        h["hold_end_ms"].as_f64().unwrap() + 1.0 >= (4.0 - fault_at_s) * 1e3,
        "{h}"
    );
    // The check in the publisher's write when the server died reached no one.
    let excused = u(&k["excused_by_fault"]);
    assert!(excused >= 500 && excused <= u(&k["missed"]), "{k}");
    assert_eq!(out.status.code(), Some(herd_status(c)), "{text}");
    if excused == u(&k["missed"]) {
        assert!(
            text.contains(&format!(
                "{} checks missed, all by connections cut by the restart, between the kill and \
                 their return: excused by --fault",
                grouped(excused)
            )),
            "{text}"
        );
    } else {
        assert!(text.contains("were not: exit status 3"), "{text}");
    }
    if u(&h["never_back"]) > 0 {
        assert!(text.contains("not back when the hold ended"), "{text}");
    }
}

#[test]
fn a_server_back_only_after_the_hold_leaves_every_cut_connection_never_back_and_exit_5() {
    // A real nats-server whose restart takes 2.5 s longer (as one recovering a large store
    // would): down from the kill, half a second into the hold, until 1 s after the hold ended.
    let dir = support::scratch_dir("late-restart");
    let real = msgbench::server::find_binary(None).unwrap();
    let wrapper = dir.join("nats-server");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif [ -e \"$0.started\" ]; then sleep 2.5; fi\n: > \"$0.started\"\nexec '{}' \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = support::bin()
        .args([
            "conns",
            "--clients",
            "200",
            "--subscribe",
            "shared",
            "--hold",
            "3s",
            "--check-every",
            "250ms",
            "--fault",
            "restart@500ms:1s",
            "--reconnect",
            "--json",
            "-",
        ])
        .env("MSGBENCH_NATS_SERVER", &wrapper)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", stderr(&out)));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let c = &v["conns"];
    let (h, k) = (&c["herd"], &c["checks"]);
    // No connection could be back before the server: none was back by the end of the hold,
    // though the fleet went on dialling (and found the server) while the checks drained.
    assert_eq!(
        (u(&h["lost"]), u(&h["back"]), u(&h["never_back"])),
        (200, 0, 200),
        "{h}"
    );
    let server_back = h["server_back_ms"].as_f64().expect("the server came back");
    assert!(server_back > h["hold_end_ms"].as_f64().unwrap(), "{h}");
    assert_no_return_after_the_hold(h);
    for share in ["to_50pct_ms", "to_99pct_ms", "to_100pct_ms"] {
        assert!(h[share].is_null(), "{share}: {h}");
    }
    // Every check after the kill fell in an outage that lasted to the end: all excused, and the
    // status is the connections not back.
    assert!(u(&k["missed"]) > 0, "{k}");
    assert_eq!(u(&k["excused_by_fault"]), u(&k["missed"]), "{k}");
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(herd_status(c), 5);
    let text = stderr(&out);
    assert!(
        text.contains("200 connections not back when the hold ended"),
        "{text}"
    );
}

#[test]
fn a_fault_that_leaves_the_herd_no_time_before_the_end_of_the_hold_is_refused() {
    // Back 1 s into a 2 s hold: a client may wait 1.5 s between attempts (with jitter).
    let out = run(&[
        "conns",
        "--clients",
        "2",
        "--hold",
        "2s",
        "--fault",
        "restart@500ms:500ms",
        "--reconnect",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--fault") && err.contains("--hold"), "{err}");
}

#[test]
fn conns_runs_twice_and_keeps_each_runs_figures_in_every_output() {
    let s = TestServer::start();
    let scratch = support::scratch_dir("conns-runs");
    let file = |name: &str| scratch.join(name).to_str().unwrap().to_string();
    let (csv, md, stream) = (file("r.csv"), file("r.md"), file("ticks.jsonl"));
    let (out, v) = run_json(&[
        "conns",
        "--server",
        &s.url,
        "--clients",
        "40",
        "--subscribe",
        "own",
        "--hold",
        "1500ms",
        "--check-every",
        "250ms",
        "--runs",
        "2",
        "--threshold",
        "failed==0",
        "--threshold",
        "opened==40",
        "--threshold",
        "missed==0",
        "--csv",
        &csv,
        "--markdown",
        &md,
        "--stream-stats",
        &stream,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let runs = &v["runs"];
    assert_eq!(u(&runs["n"]), 2, "{runs}");
    assert_eq!(runs["representative_by"], "connect_p99", "{runs}");
    let values = |m: &str| -> Vec<f64> {
        runs["metrics"][m]["values"]
            .as_array()
            .unwrap_or_else(|| panic!("{m}: {runs}"))
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    assert_eq!(values("opened"), vec![40.0, 40.0]);
    assert_eq!(values("failed"), vec![0.0, 0.0]);
    assert_eq!(values("missed"), vec![0.0, 0.0]);
    assert!(values("connect_p99").iter().all(|ns| *ns > 0.0), "{runs}");
    // The zeros of a conns result's message sections are no figures of it.
    assert!(runs["metrics"].get("msgs_per_sec").is_none(), "{runs}");
    assert!(runs["metrics"].get("lost").is_none(), "{runs}");
    let verdicts = v["thresholds"].as_array().unwrap();
    assert_eq!(verdicts.len(), 3);
    assert!(verdicts.iter().all(|t| t["pass"] == true), "{verdicts:?}");
    // --csv: a row per run, each with its own id and figures.
    let csv = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(rows[0].starts_with("#RunID,opened,failed,"), "{csv}");
    for (row, entry) in rows[1..].iter().zip(runs["runs"].as_array().unwrap()) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells[0], entry["run_id"].as_str().unwrap(), "{csv}");
        assert_eq!((cells[1], cells[2]), ("40", "0"), "{csv}");
    }
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("| connections | 40 of 40 up (0 never)"), "{md}");
    assert!(
        md.contains("| threshold `opened==40` | pass (40) |"),
        "{md}"
    );
    assert!(!md.contains("msgs/s"), "no message throughput: {md}");
    // --stream-stats: both runs' seconds, each with the connections up.
    let ticks: Vec<Value> = std::fs::read_to_string(&stream)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for k in [1, 2] {
        let of_run: Vec<&Value> = ticks.iter().filter(|t| t["run"] == k).collect();
        assert!(!of_run.is_empty(), "run {k}: {ticks:?}");
        assert!(
            of_run.iter().any(|t| u(&t["conns"]["up"]) == 40),
            "run {k}: {of_run:?}"
        );
    }
}

#[test]
fn a_threshold_on_conns_figures_sets_the_exit_status() {
    let s = TestServer::start();
    let base = [
        "conns",
        "--server",
        &s.url,
        "--clients",
        "25",
        "--hold",
        "1s",
    ];
    // Every connection comes up on an unlimited server: these hold.
    let mut ok = base.to_vec();
    ok.extend(["--threshold", "failed==0", "--threshold", "opened>=25"]);
    let (out, v) = run_json(&ok);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(v["thresholds"][0]["measured"], 0.0, "{}", v["thresholds"]);
    // More connections than were asked for cannot have opened, and a connect cannot take no
    // time: both fail, with exit status 8.
    let mut fail = base.to_vec();
    fail.extend(["--threshold", "opened>25", "--threshold", "connect_p99<=0s"]);
    let (out, v) = run_json(&fail);
    assert_eq!(out.status.code(), Some(8), "{}", stderr(&out));
    let t = v["thresholds"].as_array().unwrap();
    assert!(t.iter().all(|t| t["pass"] == false), "{t:?}");
    assert_eq!(t[0]["measured"], 25.0, "{t:?}");
    assert!(t[1]["measured"].as_f64().unwrap() > 0.0, "{t:?}");
    let text = stderr(&out);
    assert!(text.contains("FAIL opened>25 (measured 25)"), "{text}");
}

#[test]
fn a_gate_on_a_figure_the_scenario_cannot_produce_is_refused_before_any_connection() {
    // A listener that no one may dial: any connection to it is a failure of the test.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("nats://{}", listener.local_addr().unwrap());
    for (args, expected) in [
        (
            vec!["conns", "--clients", "5", "--threshold", "p99<1ms"],
            "--threshold 'p99<1ms': `conns` does not produce p99; it can gate on errors, \
             connect_p50",
        ),
        (
            vec!["conns", "--clients", "5", "--threshold", "lost==0"],
            "`conns` does not produce lost",
        ),
        (
            vec!["pub", "--msgs", "10", "--threshold", "connect_p99<1s"],
            "--threshold 'connect_p99<1s': `pub` does not produce connect_p99; it can gate \
             on p10…p100",
        ),
        (
            vec!["capacity", "pubsub", "--slo", "failed==0"],
            "--slo 'failed==0': `pubsub` does not produce failed",
        ),
    ] {
        let mut all = args.clone();
        all.extend(["--server", &url]);
        let out = run(&all);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{all:?}: {err}");
        assert!(err.contains(expected), "{all:?}: {err}");
        match listener.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("{all:?} connected before refusing: {other:?}"),
        }
    }
}
