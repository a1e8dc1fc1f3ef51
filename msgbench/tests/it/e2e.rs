//! End-to-end tests: the msgbench binary against a real nats-server on a free loopback port.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{
    self, assert_nothing_left_in, bin, run, run_json, schema_errors, scratch_dir, stderr, u,
    TestServer,
};
use serde_json::Value;

#[test]
fn pub_sends_exactly_the_requested_messages_and_the_result_fits_the_schema() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "pub",
        "--server",
        &s.url,
        "--clients",
        "2",
        "--msgs",
        "20000",
        "--size",
        "16",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["scenario"], "pub");
    assert_eq!(u(&v["throughput"]["msgs"]), 40_000);
    assert_eq!(u(&v["throughput"]["bytes"]), 40_000 * 16);
    assert_eq!(u(&v["by_role"]["pub"]["clients"]), 2);
    assert_eq!(u(&v["delivery"]["sent"]), 40_000);
    assert_eq!(v["delivery"]["accounting"], "none");
    assert_eq!(v["server"]["url"], s.url.as_str());
    assert_eq!(v["server"]["embedded"], false);
    assert!(v["server"]["version"].as_str().unwrap().starts_with('2'));
    assert!(v["throughput"]["msgs_per_sec"].as_f64().unwrap() > 0.0);
    // The text report still goes somewhere when stdout carries JSON.
    assert!(stderr(&out).contains("NATS Core publisher stats"));
}

#[test]
fn schema_rejects_a_broken_document() {
    // The schema check above is only worth something if it can fail.
    let s = TestServer::start();
    let (_, mut v) = run_json(&["pub", "--server", &s.url, "--msgs", "10"]);
    v["delivery"]["lost"] = Value::from(-1);
    v.as_object_mut().unwrap().remove("throughput");
    assert_eq!(schema_errors(&v).len(), 2, "{:?}", schema_errors(&v));
}

#[test]
fn pubsub_many_to_many_accounts_every_message_exactly() {
    let s = TestServer::start();
    let started = Instant::now();
    let (out, v) = run_json(&[
        "pubsub",
        "--server",
        &s.url,
        "--pubs",
        "3",
        "--subs",
        "2",
        "--msgs",
        "20000",
        "--size",
        "64",
        "--timeout",
        "300s",
    ]);
    // Subscribers stop as soon as the last message is in, not when the idle timeout expires:
    // waiting it out would take all 300 s, while the run itself takes seconds even for a debug
    // build on a busy machine. Half the timeout tells the two apart with room to spare.
    assert!(
        started.elapsed() < Duration::from_secs(150),
        "took {:?}",
        started.elapsed()
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let d = &v["delivery"];
    assert_eq!(u(&d["sent"]), 60_000);
    assert_eq!(u(&d["expected"]), 120_000);
    assert_eq!(u(&d["received"]), 120_000);
    assert_eq!(u(&d["lost"]), 0);
    assert_eq!(u(&d["duplicated"]), 0);
    assert_eq!(u(&d["reordered"]), 0);
    assert_eq!(d["accounting"], "exact");
    let pubs = d["publishers"].as_array().unwrap();
    assert_eq!(pubs.len(), 3);
    for p in pubs {
        assert_eq!(
            (u(&p["sent"]), u(&p["received"]), u(&p["lost"])),
            (20_000, 40_000, 0)
        );
    }
    assert_eq!(u(&v["by_role"]["sub"]["msgs"]), 120_000);
    assert_eq!(v["clients"].as_array().unwrap().len(), 5);
}

#[test]
fn multisubject_and_headers_still_account_exactly() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "pubsub",
        "--server",
        &s.url,
        "--pubs",
        "2",
        "--subs",
        "2",
        "--msgs",
        "5000",
        "--size",
        "32",
        "--multisubject",
        "--multisubject-max",
        "7",
        "-H",
        "X-Run:e2e",
        "-H",
        "X-Two: 2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = &v["delivery"];
    assert_eq!(
        (u(&d["received"]), u(&d["lost"]), d["accounting"].as_str()),
        (20_000, 0, Some("exact"))
    );
    assert_eq!(v["params"]["multisubject"], 7);
    assert_eq!(
        v["params"]["headers"],
        serde_json::json!(["X-Run", "X-Two"])
    );
}

#[test]
fn sub_in_its_own_process_counts_what_separate_publishers_sent() {
    let s = TestServer::start();
    let dir = scratch_dir("sub");
    let json = dir.join("sub.json");
    let mut sub = bin()
        .args([
            "sub",
            "--server",
            &s.url,
            "--clients",
            "2",
            "--msgs",
            "20000",
            "--subject",
            "split.test",
            "--no-progress",
            "--json",
            json.to_str().unwrap(),
            "--start-timeout",
            "20s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The subscriber says when its subscriptions are confirmed; publish only after that.
    let mut lines = BufReader::new(sub.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(
        first.contains("waiting for messages on 'split.test'"),
        "{first}"
    );
    let out = run(&[
        "pub",
        "--server",
        &s.url,
        "--clients",
        "2",
        "--msgs",
        "10000",
        "--subject",
        "split.test",
        "--no-progress",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let status = sub.wait().unwrap();
    assert!(status.success(), "sub exited {status:?}");
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let d = &v["delivery"];
    assert_eq!(u(&d["expected"]), 40_000);
    assert_eq!(u(&d["received"]), 40_000);
    assert_eq!(u(&d["lost"]), 0);
    // Two publishers of 10,000 each, as read from the stamps.
    assert_eq!(u(&d["sent"]), 20_000);
    assert_eq!(d["accounting"], "exact");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn messages_too_small_for_a_stamp_are_counted_by_totals() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "pubsub", "--server", &s.url, "--msgs", "3000", "--size", "8",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = &v["delivery"];
    assert_eq!(d["accounting"], "count");
    assert_eq!(
        (u(&d["received"]), u(&d["lost"]), u(&d["unstamped"])),
        (3000, 0, 3000)
    );
    assert!(d["duplicated"].is_null() && d["reordered"].is_null());
    assert_eq!(schema_errors(&v), Vec::<String>::new());
}

#[test]
fn a_payload_file_is_sent_unchanged() {
    let s = TestServer::start();
    let dir = scratch_dir("payload");
    let file = dir.join("p.json");
    std::fs::write(&file, br#"{"order":42,"note":"sent as is"}"#).unwrap();
    let (out, v) = run_json(&[
        "pubsub",
        "--server",
        &s.url,
        "--msgs",
        "1000",
        "--payload",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(u(&v["params"]["size"]), 32);
    assert_eq!(u(&v["by_role"]["sub"]["bytes"]), 32_000);
    assert_eq!(v["delivery"]["accounting"], "count");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_stalled_subscriber_is_cut_off_and_the_loss_is_reported_and_fails_the_run() {
    // A tiny pending limit and write deadline make the server drop a subscriber that stops
    // reading within a second.
    let s = TestServer::with_config(
        "max_pending: 256KB\nmax_payload: 64KB\nwrite_deadline: \"500ms\"\n",
    );
    let args = [
        "pubsub",
        "--server",
        &s.url,
        "--msgs",
        "1000000",
        "--size",
        "16",
        "--sub-stall",
        "1000:2s",
        "--timeout",
        "3s",
    ];
    // The server cut the subscriber off: the run lost a connection (exit 5), which explains
    // the loss, so --allow-loss does not excuse it.
    let (out, v) = run_json(&args);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(v["failure"], "disconnected", "{}", v["errors"]);
    let d = &v["delivery"];
    let lost = u(&d["lost"]);
    assert!(lost > 0, "{d}");
    assert_eq!(u(&d["received"]) + lost, u(&d["expected"]));
    assert_eq!(u(&d["sent"]), 1_000_000);
    // The server says nothing when it cuts a slow consumer off; msgbench saw its receive queue
    // fill up first (fell_behind) and names the likely cause of the disconnect.
    let e = &v["errors"];
    assert_eq!(u(&e["disconnected"]), 1, "{e}");
    assert!(u(&e["fell_behind"]) >= 1, "{e}");
    assert_eq!(u(&e["slow_consumer"]), 1, "{e}");
    assert!(stderr(&out).contains("!! LOSS:"), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());

    // With --reconnect the subscriber comes back and counts the rest: only loss remains, which
    // --allow-loss accepts.
    let mut allowed = args.to_vec();
    allowed.extend(["--reconnect", "--allow-loss"]);
    let (out, v) = run_json(&allowed);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(u(&v["delivery"]["lost"]) > 0);
    assert!(v.get("failure").is_none(), "{v}");
    assert!(
        u(&v["connections"]["reconnects"]) >= 1,
        "{}",
        v["connections"]
    );
    assert_eq!(
        u(&v["delivery"]["received"]) + u(&v["delivery"]["lost"]),
        u(&v["delivery"]["expected"])
    );
}

#[test]
fn paced_publishing_sends_exactly_the_scheduled_messages() {
    // Open loop: message i is due at i/rate, so a 1 s run at 2,000/s has exactly 2,000 due,
    // however the machine was doing.
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "pub",
        "--server",
        &s.url,
        "--rate",
        "2000",
        "--duration",
        "1s",
        "--size",
        "16",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(u(&v["delivery"]["sent"]), 2000);
    // Split over 3 publishers with interleaved schedules, the total due is still exact.
    let (out, v) = run_json(&[
        "pub",
        "--server",
        &s.url,
        "--clients",
        "3",
        "--rate",
        "3000",
        "--duration",
        "1s",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(u(&v["delivery"]["sent"]), 3000);
    // And a count at a rate cannot finish before its last message is due.
    let (out, v) = run_json(&[
        "pub",
        "--server",
        &s.url,
        "--clients",
        "2",
        "--rate",
        "1000",
        "--msgs",
        "250",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(u(&v["delivery"]["sent"]), 500);
    assert!(
        v["throughput"]["seconds"].as_f64().unwrap() >= 0.498,
        "{}",
        v["throughput"]
    );
}

#[test]
fn csv_has_nats_bench_columns_and_a_row_per_client() {
    let s = TestServer::start();
    let dir = scratch_dir("csv");
    let csv = dir.join("r.csv");
    let out = run(&[
        "pubsub",
        "--server",
        &s.url,
        "--pubs",
        "2",
        "--subs",
        "1",
        "--msgs",
        "1000",
        "--no-progress",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs"
    );
    assert_eq!(lines.len(), 4);
    let ids: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(ids, ["P0", "P1", "S0"]);
    let sub_row: Vec<&str> = lines[3].split(',').collect();
    assert_eq!((sub_row[2], sub_row[3]), ("2000", "256000"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn credentials_in_the_url_authenticate_and_never_appear_in_output() {
    let s = TestServer::with_config("authorization { user: alice, password: \"pw-9f3k\" }\n");
    let url = s.url.replace("nats://", "nats://alice:pw-9f3k@");
    let (out, v) = run_json(&["pub", "--server", &url, "--msgs", "100"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["server"]["auth"], "user_password");
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        !all.contains("pw-9f3k") && !all.contains("alice:"),
        "secret leaked: {all}"
    );

    let bad = s.url.replace("nats://", "nats://alice:wrong@");
    let out = run(&["pub", "--server", &bad, "--msgs", "100"]);
    assert_eq!(out.status.code(), Some(4));
    let err = stderr(&out);
    assert!(
        err.contains("authorization") && !err.contains("wrong"),
        "{err}"
    );

    let t = TestServer::with_config("authorization { token: \"tok-55x\" }\n");
    let url = t.url.replace("nats://", "nats://tok-55x@");
    let (out, v) = run_json(&["pub", "--server", &url, "--msgs", "100"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["server"]["auth"], "token");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("tok-55x"));
}

/// Asserts a bad-input failure: exit 2, exactly one line on stderr containing `needle`, no panic.
fn assert_bad_input(args: &[&str], needle: &str) {
    assert_one_line_error(args, 2, needle);
}

/// Asserts a failure before any result: exit `code`, exactly one line on stderr containing
/// `needle`, nothing on stdout, no panic.
fn assert_one_line_error(args: &[&str], code: i32, needle: &str) {
    let out = run(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: expected one line, got {err:?}");
    assert!(lines[0].starts_with("error: "), "{args:?}: {err}");
    assert!(
        lines[0].contains(needle),
        "{args:?}: {err:?} lacks {needle:?}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "{args:?} wrote to stdout");
}

#[test]
fn bad_input_gets_one_line_naming_the_flag_and_exit_2() {
    let s = TestServer::start();
    let srv = ["--server", s.url.as_str()];
    let with = |extra: &[&'static str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["pub".into()];
        v.extend(srv.iter().map(|s| s.to_string()));
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (with(&["--size", "10XB"]), "--size"),
        (with(&["--msgs", "-1"]), "--msgs"),
        (with(&["--msgs", "0"]), "--msgs"),
        (with(&["--rate", "abc"]), "--rate"),
        (with(&["--rate", "0.00000000000000000001"]), "--rate"),
        (
            vec!["latency".into(), "--rate".into(), "1e-30".into()],
            "--rate",
        ),
        (with(&["--duration", "soon"]), "--duration"),
        (with(&["--frobnicate"]), "--frobnicate"),
        (with(&["--subject", "orders.*"]), "--subject"),
        (with(&["--subject", "has space"]), "--subject"),
        (with(&["--subject", "a..b"]), "--subject"),
        (with(&["-H", "no-colon"]), "-H"),
        (with(&["--msgs", "10", "--duration", "1s"]), "--duration"),
        (
            with(&["--size", "16", "--payload", "/no/such/file"]),
            "--payload",
        ),
        (
            vec!["pub".into(), "--server".into(), "nats://host:99999".into()],
            "--server",
        ),
        (
            vec!["pub".into(), "--server".into(), "http://host:4222".into()],
            "--server",
        ),
        (vec!["pubsub".into(), "--subs".into(), "0".into()], "--subs"),
        (
            vec!["sub".into(), "--sub-stall".into(), "ten".into()],
            "--sub-stall",
        ),
        (
            vec![
                "request".into(),
                "--responders".into(),
                "0".into(),
                "--delay".into(),
                "1ms".into(),
            ],
            "--delay",
        ),
        // `sub` publishes nothing: what shapes publishing is refused, not ignored.
        (vec!["sub".into(), "--rate".into(), "100".into()], "--rate"),
        (vec!["sub".into(), "-H".into(), "a:b".into()], "--header"),
        (vec!["sub".into(), "--size".into(), "64".into()], "--size"),
        (
            vec!["sub".into(), "--payload".into(), "Cargo.toml".into()],
            "--payload",
        ),
        // `pub` counts no loss, so nothing for --allow-loss to allow.
        (vec!["pub".into(), "--allow-loss".into()], "--allow-loss"),
        // A consume of the stream as it is publishes nothing to shape.
        (
            vec![
                "js".into(),
                "consume".into(),
                "--publish".into(),
                "none".into(),
                "--subject".into(),
                "orders.eu".into(),
            ],
            "--subject",
        ),
        (
            vec![
                "js".into(),
                "consume".into(),
                "--publish".into(),
                "none".into(),
                "--size".into(),
                "4KiB".into(),
            ],
            "--size",
        ),
        (
            vec![
                "calibrate".into(),
                "--server-monitor".into(),
                "http://127.0.0.1:1".into(),
            ],
            "--server-monitor",
        ),
        // A fault acts on the server msgbench starts, which --server-a is not.
        (
            [
                "latency",
                "--server-a",
                "nats://127.0.0.1:1",
                "--fault",
                "kill@1s",
                "--rate",
                "100",
                "--duration",
                "3s",
            ]
            .map(String::from)
            .to_vec(),
            "--server-a",
        ),
        // --hist holds one run's histograms, written on this host.
        (
            ["latency", "--hist", "h", "--runs", "3"]
                .map(String::from)
                .to_vec(),
            "--hist",
        ),
        (
            [
                "latency",
                "--hist",
                "h",
                "--agents",
                "2",
                "--server",
                "nats://127.0.0.1:1",
            ]
            .map(String::from)
            .to_vec(),
            "--hist",
        ),
        (
            ["capacity", "latency", "--slo", "p99<1s", "--hist", "h"]
                .map(String::from)
                .to_vec(),
            "--hist",
        ),
        (vec!["nosuchcommand".into()], "nosuchcommand"),
        // Faults and connection keeping.
        (with(&["--ping-interval", "0s"]), "--ping-interval"),
        (with(&["--fault", "kill@1s"]), "--fault"),
        (
            vec!["pub".into(), "--fault".into(), "explode@1s".into()],
            "--fault",
        ),
        (
            vec!["pub".into(), "--fault".into(), "pause@1s".into()],
            "--fault",
        ),
        (
            vec!["pubsub".into(), "--fault".into(), "kill@1s".into()],
            "--rate",
        ),
        (
            vec!["request".into(), "--fault".into(), "kill@1s".into()],
            "--rate",
        ),
        (
            vec!["sub".into(), "--fault".into(), "kill@1s".into()],
            "--fault",
        ),
        (
            vec!["calibrate".into(), "--fault".into(), "kill@1s".into()],
            "--fault",
        ),
        (
            vec!["reply".into(), "--fault".into(), "kill@1s".into()],
            "--fault",
        ),
        (vec!["--fault".into(), "kill@1s".into()], "--fault"),
    ];
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_bad_input(&args, needle);
    }
}

#[test]
fn size_above_the_servers_max_payload_is_refused_before_the_run() {
    let s = TestServer::with_config("max_payload: 1KB\n");
    assert_bad_input(&["pub", "--server", &s.url, "--size", "2KB"], "max_payload");
    // Headers count toward the limit too.
    assert_bad_input(
        &["pub", "--server", &s.url, "--size", "1KB", "-H", "K:V"],
        "max_payload",
    );
    let out = run(&[
        "pub",
        "--server",
        &s.url,
        "--size",
        "1KB",
        "--msgs",
        "10",
        "--no-progress",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_refused_connection_is_reported_within_the_connect_timeout() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("nats://127.0.0.1:{port}");
    let started = Instant::now();
    assert_one_line_error(
        &["pub", "--server", &url, "--connect-timeout", "60s"],
        4,
        "cannot connect",
    );
    // A refusal is final at once: nothing waits for the connect timeout. A run that waited it
    // out would take 60 s; half of that leaves a busy machine all the room it needs.
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn the_embedded_server_is_removed_on_a_normal_exit_and_on_an_error() {
    let tmp = scratch_dir("embedded");
    let binary = msgbench::server::find_binary(None).unwrap();
    let out = bin()
        .args(["pubsub", "--msgs", "2000", "--json", "-", "--no-progress"])
        .env("TMPDIR", &tmp)
        .env("MSGBENCH_NATS_SERVER", &binary)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["server"]["embedded"], true);
    assert!(v["server"]["url"]
        .as_str()
        .unwrap()
        .starts_with("nats://127.0.0.1:"));
    assert_eq!(u(&v["delivery"]["lost"]), 0);
    assert_nothing_left_in(&tmp);

    // An error after the server started (a size it refuses) cleans up the same way.
    let out = bin()
        .args(["pub", "--size", "4MiB", "--no-progress"])
        .env("TMPDIR", &tmp)
        .env("MSGBENCH_NATS_SERVER", &binary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("max_payload"), "{}", stderr(&out));
    assert_nothing_left_in(&tmp);
    let _ = std::fs::remove_dir_all(tmp);
}

#[test]
fn a_signal_stops_the_run_writes_partial_results_and_cleans_up() {
    let binary = msgbench::server::find_binary(None).unwrap();
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let tmp = scratch_dir("signal");
        let results = scratch_dir("signal-out");
        let json_out = results.join("partial.json");
        let ticks = results.join("ticks.jsonl");
        let mut child = bin()
            .args([
                "pubsub",
                "--duration",
                "60s",
                "--rate",
                "2000",
                "--no-progress",
                "--stream-stats",
            ])
            .arg(&ticks)
            .arg("--json")
            .arg(&json_out)
            .env("TMPDIR", &tmp)
            .env("MSGBENCH_NATS_SERVER", &binary)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Signalled once it has sent something, however long a busy machine took to start
        // the server and connect.
        support::wait_for_tick(&ticks, &mut child, |t| {
            support::tick_f(t, "sent_per_sec") > 0.0
        });
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        let started = Instant::now();
        let out = child.wait_with_output().unwrap();
        // A run that went on to the end of its schedule would take most of its 60 s.
        assert!(started.elapsed() < Duration::from_secs(30), "slow to stop");
        assert_eq!(out.status.code(), Some(130), "signal {signal}");
        let v: Value = serde_json::from_slice(&std::fs::read(&json_out).unwrap()).unwrap();
        assert_eq!(v["interrupted"], true);
        let sent = u(&v["delivery"]["sent"]);
        assert!(sent > 0 && sent < 120_000, "sent {sent}");
        assert_eq!(schema_errors(&v), Vec::<String>::new());
        assert_nothing_left_in(&tmp);
        let _ = std::fs::remove_dir_all(tmp);
        let _ = std::fs::remove_dir_all(results);
    }
}

#[test]
fn sigkill_takes_the_embedded_server_along_and_the_next_run_removes_its_directory() {
    let binary = msgbench::server::find_binary(None).unwrap();
    let tmp = scratch_dir("sigkill");
    let mut child = bin()
        .args([
            "pubsub",
            "--duration",
            "60s",
            "--rate",
            "1000",
            "--no-progress",
        ])
        .env("TMPDIR", &tmp)
        .env("MSGBENCH_NATS_SERVER", &binary)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once its server is up (the server writes its ports file when it listens), not
    // after a fixed time a busy machine may spend before the server has a directory at all.
    let deadline = Instant::now() + support::HANG;
    let server_up = || {
        std::fs::read_dir(&tmp).unwrap().flatten().any(|d| {
            std::fs::read_dir(d.path()).is_ok_and(|mut files| {
                files.any(|f| f.is_ok_and(|f| f.path().extension().is_some_and(|x| x == "ports")))
            })
        })
    };
    while !server_up() {
        assert!(
            Instant::now() < deadline,
            "the embedded server never listened"
        );
        assert!(child.try_wait().unwrap().is_none(), "msgbench ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The parent-death signal ends the server at once; the wait only lets the kernel reap it,
    // and its bound only guards against a server that outlives msgbench for good.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !support::processes_mentioning(tmp.to_str().unwrap()).is_empty() {
        assert!(
            Instant::now() < deadline,
            "nats-server outlived a killed msgbench"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        1,
        "its directory is left"
    );
    let out = bin()
        .args(["pub", "--msgs", "10", "--no-progress"])
        .env("TMPDIR", &tmp)
        .env("MSGBENCH_NATS_SERVER", &binary)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_nothing_left_in(&tmp);
    let _ = std::fs::remove_dir_all(tmp);
}

#[test]
fn ctrl_c_while_blocked_on_a_frozen_server_writes_results_at_once() {
    let s = TestServer::start();
    let dir = scratch_dir("frozen-ctrl-c");
    let ticks = dir.join("ticks.jsonl");
    let mut child = support::spawn_piped(&[
        "pub",
        "--server",
        &s.url,
        "--msgs",
        "200M",
        "--timeout",
        "30s",
        "--stream-stats",
        ticks.to_str().unwrap(),
        "--json",
        "-",
        "--no-progress",
    ]);
    // Frozen once the publisher is sending; interrupted once a whole second has passed with
    // nothing sent: the socket buffers are full and the publisher is blocked in a write. Both
    // are events of the run, so a busy machine cannot get the order wrong.
    let sending = support::wait_for_tick(&ticks, &mut child, |t| {
        support::tick_f(t, "sent_per_sec") > 0.0
    });
    s.freeze(true);
    let frozen_from = support::tick_f(&sending, "t_s");
    support::wait_for_tick(&ticks, &mut child, |t| {
        support::tick_f(t, "t_s") > frozen_from && support::tick_f(t, "sent_per_sec") == 0.0
    });
    let started = Instant::now();
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    s.freeze(false);
    // A stop that waited for the blocked write would take the 30 s of --timeout; half of it
    // tells the two apart on any machine.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?} (--timeout is 30s)",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["interrupted"], true);
    assert!(v.get("failure").is_none(), "{v}");
    assert!(
        v["errors"].get("write_stalled").is_none(),
        "{}",
        v["errors"]
    );
    assert!(u(&v["delivery"]["sent"]) > 0);
}

#[test]
fn a_server_that_stops_reading_ends_the_run_within_the_timeout() {
    let s = TestServer::start();
    let dir = scratch_dir("frozen-stall");
    let ticks = dir.join("ticks.jsonl");
    let mut child = support::spawn_piped(&[
        "pub",
        "--server",
        &s.url,
        "--msgs",
        "200M",
        "--size",
        "16",
        "--timeout",
        "2s",
        "--stream-stats",
        ticks.to_str().unwrap(),
        "--json",
        "-",
        "--no-progress",
    ]);
    // Frozen once the publisher is sending (a freeze during the handshake would be another
    // failure, a connect timeout).
    support::wait_for_tick(&ticks, &mut child, |t| {
        support::tick_f(t, "sent_per_sec") > 0.0
    });
    s.freeze(true);
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    s.freeze(false);
    // The socket buffers fill, then the 2 s of --timeout run out: seconds. The bound only
    // guards against a hang (200M messages would take far longer).
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&v["errors"]["write_stalled"]), 1, "{}", v["errors"]);
    assert_eq!(v["failure"], "write_stalled");
    let sent = u(&v["delivery"]["sent"]);
    assert!(sent > 0 && sent < 200_000_000, "sent {sent}");
    assert_eq!(schema_errors(&v), Vec::<String>::new());
}

#[test]
fn nats_url_and_server_lists_are_honoured() {
    let s = TestServer::start();
    // NATS_URL is used when --server is absent.
    let out = bin()
        .args(["pub", "--msgs", "100", "--json", "-", "--no-progress"])
        .env("NATS_URL", &s.url)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["server"]["url"].as_str(), &v["server"]["embedded"]),
        (Some(s.url.as_str()), &Value::Bool(false))
    );

    // In a list, a server that refuses is skipped for the next one.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let list = format!("nats://127.0.0.1:{closed},{}", s.url);
    let (out, v) = run_json(&["pubsub", "--server", &list, "--msgs", "1000"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["server"]["url"].as_str(), Some(s.url.as_str()));
    assert_eq!(u(&v["delivery"]["received"]), 1000);
}

#[test]
fn the_default_suite_runs_pub_pubsub_latency_request_and_js_pub() {
    let s = TestServer::start();
    let monitor = s.monitor_url();
    let out = run(&[
        "demo",
        "--server",
        &s.url,
        "--server-monitor",
        &monitor,
        "--no-progress",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    // The server named by --server-monitor is sampled in each of the five runs.
    assert_eq!(
        text.matches(&format!("Server {monitor} (nats-server"))
            .count(),
        5,
        "{text}"
    );
    let at: Vec<usize> = [
        "== pub\n",
        "== pubsub\n",
        "== latency\n",
        "== request\n",
        "== js pub\n",
    ]
    .iter()
    .map(|h| text.find(h).unwrap_or_else(|| panic!("no {h:?} in {text}")))
    .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(
        text.contains("Round-trip latency of 20,000 requests"),
        "{text}"
    );
    assert!(
        text.contains("Delivery (exact): received 1,000,000 of 1,000,000 expected, lost 0"),
        "{text}"
    );
    assert!(
        text.contains(
            "JetStream: stream msgbench_demo (memory, async publish): 20,000 acknowledged"
        ),
        "{text}"
    );
    assert!(text.contains("Reconciled"), "{text}");
}

/// A server without JetStream: the suite asks first, runs the four core scenarios and leaves
/// `js pub` out with one line saying why, instead of failing (status 2) after four good runs.
#[test]
fn the_default_suite_skips_js_pub_on_a_server_without_jetstream() {
    let s = crate::support::CoreServer::start();
    let out = run(&["--server", &s.url, "--no-progress"]);
    let (text, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{text}\n{err}");
    for h in ["== pub\n", "== pubsub\n", "== latency\n", "== request\n"] {
        assert!(text.contains(h), "no {h:?} in {text}");
    }
    assert!(!text.contains("== js pub"), "{text}");
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("js pub")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].starts_with("note: the suite skips js pub: ")
            && notes[0].contains("JetStream is not enabled"),
        "{err}"
    );
    assert!(!err.contains("error:"), "{err}");
    // Its help names all five runs, js pub too.
    let help = run(&["demo", "--help"]);
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("request, js pub)"),
        "{}",
        String::from_utf8_lossy(&help.stdout)
    );
}

#[test]
fn messages_larger_than_the_read_buffer_are_delivered_whole() {
    // 600 KiB is several times the reader's initial buffer: the reader must grow it once to the
    // announced size and keep every message intact.
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "pubsub", "--server", &s.url, "--msgs", "200", "--size", "600KiB", "--subs", "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = &v["delivery"];
    assert_eq!(
        (u(&d["received"]), u(&d["lost"]), d["accounting"].as_str()),
        (400, 0, Some("exact"))
    );
    assert_eq!(u(&v["by_role"]["sub"]["bytes"]), 400 * 600 * 1024);
}

#[test]
fn without_a_subcommand_the_default_suite_takes_its_flags() {
    let out = run(&["--server", "nats://127.0.0.1:1", "--connect-timeout", "1s"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        stderr(&out).contains("cannot connect to nats://127.0.0.1:1"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn file_descriptors_and_threads_grow_only_with_the_clients() {
    let s = TestServer::start();
    let dir = scratch_dir("fds");
    // Each connection is one socket (two descriptors: the read half is a clone); a publisher
    // takes two threads (its loop and its connection's reader), a subscriber one.
    let sample = |pubs: u32, subs: u32| {
        let ticks = dir.join(format!("ticks-{pubs}-{subs}.jsonl"));
        let mut child = bin()
            .args([
                "pubsub",
                "--server",
                &s.url,
                "--rate",
                "3000",
                "--duration",
                "60s",
            ])
            .args(["--pubs", &pubs.to_string(), "--subs", &subs.to_string()])
            .arg("--stream-stats")
            .arg(&ticks)
            .arg("--no-progress")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Counted while the run is under way (its first second is over: every client is up),
        // then stopped: no fixed sleep that a busy machine could spend connecting, or that
        // could reach past the end of the run.
        support::wait_for_tick(&ticks, &mut child, |_| true);
        let (fds, threads) = support::fds_and_threads(child.id());
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGINT);
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130));
        (fds as i64, threads as i64)
    };
    let (fds_small, threads_small) = sample(1, 1);
    let (fds_big, threads_big) = sample(6, 4);
    assert_eq!(
        fds_big - fds_small,
        2 * 8,
        "descriptors per extra connection"
    );
    assert_eq!(
        threads_big - threads_small,
        2 * 5 + 3,
        "threads per extra client"
    );
}
