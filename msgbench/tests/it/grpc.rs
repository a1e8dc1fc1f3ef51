//! `msgbench grpc` end to end: against `msgbench grpc serve` (a separate process, as users run
//! it) and against the Probe service that exists only in these tests (served in process, with
//! reflection). Every call shape, templating, open loop, deadlines and status counting, TLS,
//! and bad input.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use crate::support::{self, grpc_service, run, run_json, schema_errors, stderr, u};
use serde_json::Value;

/// `msgbench grpc serve` on a free loopback port; killed on drop.
struct LogServer {
    child: Child,
    url: String,
}

impl LogServer {
    fn start(extra: &[&str]) -> Self {
        let mut child = support::bin()
            .args([
                "grpc",
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--duration",
                "300s",
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("msgbench grpc serve starts");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        // "msgbench grpc serve: msgbench.log.v1.Log on http://127.0.0.1:PORT (…)"
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://") || w.starts_with("https://"))
            .unwrap_or_else(|| panic!("no URL in {first:?}"))
            .to_string();
        LogServer { child, url }
    }
}

impl Drop for LogServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn grpc_json(args: &[&str]) -> (std::process::Output, Value) {
    let mut all = vec!["grpc"];
    all.extend_from_slice(args);
    run_json(&all)
}

fn ok(out: &std::process::Output, doc: &Value) {
    assert!(
        out.status.success(),
        "status {:?}: {}",
        out.status,
        stderr(out)
    );
    assert!(schema_errors(doc).is_empty(), "{:?}", schema_errors(doc));
}

/// How many records a stream of the log holds: a server-streaming Read through msgbench.
fn records_in(url: &str, stream: &str) -> u64 {
    let data = format!(r#"{{"stream":"{stream}"}}"#);
    let (out, doc) = grpc_json(&[
        "--server",
        url,
        "--call",
        "msgbench.log.v1.Log/Read",
        "--data",
        &data,
        "--requests",
        "1",
        "--allow-loss",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    if doc["grpc"]["status"]["NOT_FOUND"].as_u64() == Some(1) {
        return 0;
    }
    assert_eq!(doc["grpc"]["kind"], "server_streaming");
    assert_eq!(u(&doc["grpc"]["calls_ok"]), 1, "{}", doc["grpc"]);
    u(&doc["grpc"]["messages_received"])
}

#[test]
fn unary_appends_follow_the_template_across_streams_and_clients() {
    let log = LogServer::start(&[]);
    let (out, doc) = grpc_json(&[
        "--server",
        &log.url,
        "--call",
        "msgbench.log.v1.Log/Append",
        "--data",
        r#"{"stream":"t{{stream}}-c{{client}}","data":"{{bytes 32}}","metadata":{"seq":"{{seq}}"}}"#,
        "--streams",
        "3",
        "--clients",
        "2",
        "--requests",
        "300",
        "--in-flight",
        "20",
    ]);
    ok(&out, &doc);
    let g = &doc["grpc"];
    assert_eq!(g["kind"], "unary");
    assert_eq!(g["method"], "msgbench.log.v1.Log/Append");
    assert_eq!(u(&g["requests_ok"]), 600);
    assert_eq!(g["status"], serde_json::json!({"OK": 600}));
    assert_eq!(u(&doc["latency"]["count"]), 600);
    assert!(
        doc["latency_uncorrected"].is_null(),
        "closed loop has one latency"
    );
    assert_eq!(u(&doc["throughput"]["msgs"]), 600);
    assert_eq!(u(&doc["delivery"]["lost"]), 0);
    // Client c sends message i to stream (c + i) mod 3: 100 of each client's 300 per stream.
    for c in 0..2 {
        for s in 0..3 {
            assert_eq!(
                records_in(&log.url, &format!("t{s}-c{c}")),
                100,
                "t{s}-c{c}"
            );
        }
    }
    assert_eq!(records_in(&log.url, "t3-c0"), 0);
}

#[test]
fn seq_makes_every_message_its_own() {
    let log = LogServer::start(&[]);
    let dir = support::scratch_dir("grpc-md");
    let md = dir.join("r.md");
    let (out, doc) = grpc_json(&[
        "--server",
        &log.url,
        "--data",
        r#"{"stream":"s{{seq}}"}"#,
        "--requests",
        "5",
        "--markdown",
        md.to_str().unwrap(),
    ]);
    ok(&out, &doc);
    let table = std::fs::read_to_string(&md).unwrap();
    assert!(
        table.contains("against unary msgbench.log.v1.Log/Append at http://"),
        "{table}"
    );
    assert!(table.contains("| calls by status | OK 5 |"), "{table}");
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(records_in(&log.url, "s0"), 1);
    assert_eq!(records_in(&log.url, "s4"), 1);
    assert_eq!(records_in(&log.url, "s5"), 0);
}

#[test]
fn client_streaming_batches_are_counted_per_message_and_call() {
    let log = LogServer::start(&[]);
    let (out, doc) = grpc_json(&[
        "--server",
        &log.url,
        "--call",
        "msgbench.log.v1.Log/AppendBatch",
        "--data",
        r#"{"stream":"batch"}"#,
        "--messages-per-call",
        "10",
        "--requests",
        "20",
        "--in-flight",
        "4",
    ]);
    ok(&out, &doc);
    let g = &doc["grpc"];
    assert_eq!(g["kind"], "client_streaming");
    assert_eq!(u(&g["calls_ok"]), 20);
    assert_eq!(u(&g["messages_sent"]), 200);
    assert_eq!(u(&g["messages_received"]), 20);
    // Each message waited for its call's answer.
    assert_eq!(u(&doc["latency"]["count"]), 200);
    assert_eq!(u(&g["call_latency"]["count"]), 20);
    assert_eq!(records_in(&log.url, "batch"), 200);
}

#[test]
fn bidi_pairs_each_message_with_its_ack() {
    let log = LogServer::start(&[]);
    let (out, doc) = grpc_json(&[
        "--server",
        &log.url,
        "--call",
        "msgbench.log.v1.Log/AppendStream",
        "--data",
        r#"{"stream":"bidi-{{stream}}"}"#,
        "--streams",
        "2",
        "--requests",
        "1000",
        "--in-flight",
        "50",
        "--messages-per-call",
        "400",
    ]);
    ok(&out, &doc);
    let g = &doc["grpc"];
    assert_eq!(g["kind"], "bidi");
    assert_eq!(u(&g["requests_ok"]), 1000);
    assert_eq!(u(&g["messages_received"]), 1000);
    assert_eq!(u(&doc["latency"]["count"]), 1000);
    // 400 + 400 + 200 messages: three calls.
    assert_eq!(g["status"], serde_json::json!({"OK": 3}));
    assert_eq!(
        records_in(&log.url, "bidi-0") + records_in(&log.url, "bidi-1"),
        1000
    );
}

#[test]
fn open_loop_keeps_the_schedule_and_reports_both_latencies() {
    let (out, doc) = grpc_json(&["--rate", "2000", "--requests", "1000", "--in-flight", "50"]);
    ok(&out, &doc);
    assert_eq!(doc["server"]["embedded"], true);
    let p = &doc["pacing"];
    assert_eq!(p["target_rate"], 2000.0);
    // 1000 requests at 2000/s take at least half a second.
    assert!(
        doc["throughput"]["seconds"].as_f64().unwrap() >= 0.45,
        "{}",
        doc["throughput"]
    );
    let c = u(&doc["latency"]["percentiles_ns"]["50"]);
    let unc = u(&doc["latency_uncorrected"]["percentiles_ns"]["50"]);
    assert!(c >= unc, "corrected {c} < uncorrected {unc}");
    assert_eq!(u(&doc["latency_uncorrected"]["count"]), 1000);
}

#[test]
fn the_probe_service_is_found_by_reflection_in_every_call_shape() {
    let probe = grpc_service::start();
    let url = probe.url.as_str();
    let cases: [(&str, &str, &[&str], u64, u64); 4] = [
        (
            "Echo",
            r#"{"text":"hi {{client}}","seq":"{{seq}}","ts":"{{ts}}","stream":"{{uuid}}","inner":{"name":"n","values":[1,2]},"color":"COLOR_BLUE","blob":"{{bytes 8}}"}"#,
            &["--requests", "200", "--in-flight", "8"],
            200,
            200,
        ),
        (
            "Count",
            r#"{"seq":"{{seq}}"}"#,
            &["--requests", "10", "--messages-per-call", "7"],
            10,
            10,
        ),
        ("Ticks", r#"{"n":5}"#, &["--requests", "4"], 4, 20),
        (
            "Chat",
            r#"{"text":"{{seq}}"}"#,
            &["--requests", "300", "--in-flight", "16"],
            300,
            300,
        ),
    ];
    for (method, data, extra, ok_requests, received) in cases {
        let call = format!("msgbench.test.v1.Probe/{method}");
        let mut args = vec!["--server", url, "--call", &call, "--data", data];
        args.extend_from_slice(extra);
        let (out, doc) = grpc_json(&args);
        ok(&out, &doc);
        let g = &doc["grpc"];
        assert_eq!(g["schema"], "reflection", "{method}");
        assert_eq!(u(&g["requests_ok"]), ok_requests, "{method}: {g}");
        assert_eq!(u(&g["messages_received"]), received, "{method}: {g}");
    }
}

#[test]
fn older_servers_with_only_v1alpha_reflection_work_too() {
    let probe = grpc_service::start_v1alpha_only();
    let (out, doc) = grpc_json(&[
        "--server",
        &probe.url,
        "--call",
        "msgbench.test.v1.Probe/Echo",
        "--data",
        r#"{"text":"old"}"#,
        "--requests",
        "20",
    ]);
    ok(&out, &doc);
    assert_eq!(doc["grpc"]["schema"], "reflection");
    assert_eq!(u(&doc["grpc"]["requests_ok"]), 20);
}

#[test]
fn a_proto_file_works_where_reflection_is_not_asked() {
    let probe = grpc_service::start();
    let proto = grpc_service::proto_dir().join(grpc_service::PROTO);
    let (out, doc) = grpc_json(&[
        "--server",
        &probe.url,
        "--proto",
        proto.to_str().unwrap(),
        "--call",
        "msgbench.test.v1.Probe/Echo",
        "--data",
        r#"{"text":"x"}"#,
        "--requests",
        "50",
    ]);
    ok(&out, &doc);
    assert_eq!(doc["grpc"]["schema"], proto.display().to_string());
}

#[test]
fn deadlines_and_error_statuses_are_counted_by_code() {
    let probe = grpc_service::start();
    let (out, doc) = grpc_json(&[
        "--server",
        &probe.url,
        "--call",
        "msgbench.test.v1.Probe/Slow",
        "--data",
        r#"{"delay_ms":300}"#,
        "--deadline",
        "50ms",
        "--requests",
        "6",
        "--in-flight",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(schema_errors(&doc).is_empty(), "{:?}", schema_errors(&doc));
    assert_eq!(
        doc["grpc"]["status"],
        serde_json::json!({"DEADLINE_EXCEEDED": 6})
    );
    assert_eq!(u(&doc["errors"]["rpc_failed"]), 6);
    assert_eq!(u(&doc["delivery"]["lost"]), 6);
    assert!(String::from_utf8_lossy(&out.stderr).contains("FAILED: 6 of 6 requests"));

    // A deadline the service meets: every call is OK.
    let (out, doc) = grpc_json(&[
        "--server",
        &probe.url,
        "--call",
        "msgbench.test.v1.Probe/Slow",
        "--data",
        r#"{"delay_ms":5}"#,
        "--deadline",
        "2s",
        "--requests",
        "4",
    ]);
    ok(&out, &doc);
    assert_eq!(doc["grpc"]["status"], serde_json::json!({"OK": 4}));

    // Statuses the service chooses, and --allow-loss.
    let (out, doc) = grpc_json(&[
        "--server",
        &probe.url,
        "--call",
        "msgbench.test.v1.Probe/Fail",
        "--data",
        r#"{"code":5,"message":"gone"}"#,
        "--requests",
        "7",
        "--allow-loss",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(doc["grpc"]["status"], serde_json::json!({"NOT_FOUND": 7}));
}

#[test]
fn metadata_reaches_the_service() {
    let probe = grpc_service::start();
    // Echo returns the request's x- metadata, so the reply grows by what the header carried.
    let bytes_back = |extra: &[&str]| {
        let mut args = vec![
            "--server",
            probe.url.as_str(),
            "--call",
            "msgbench.test.v1.Probe/Echo",
            "--data",
            r#"{"text":"m"}"#,
            "--requests",
            "10",
        ];
        args.extend_from_slice(extra);
        let (out, doc) = grpc_json(&args);
        ok(&out, &doc);
        u(&doc["grpc"]["bytes_received"])
    };
    let plain = bytes_back(&[]);
    let tagged = bytes_back(&["-H", "x-tenant: blue-and-green"]);
    let ignored = bytes_back(&["-H", "tenant: blue-and-green"]);
    assert!(tagged > plain, "{tagged} vs {plain}");
    assert_eq!(ignored, plain);
}

#[test]
fn tls_is_verified_by_default() {
    let (cert, key) = grpc_service::self_signed();
    let dir = support::scratch_dir("grpc-tls");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &cert).unwrap();
    let probe = grpc_service::start_tls(&cert, &key);
    let base = [
        "--server",
        probe.url.as_str(),
        "--call",
        "msgbench.test.v1.Probe/Echo",
        "--data",
        r#"{"text":"tls"}"#,
        "--requests",
        "20",
    ];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        grpc_json(&args)
    };
    let (out, doc) = with(&["--tls-ca", ca.to_str().unwrap()]);
    ok(&out, &doc);
    assert_eq!(doc["grpc"]["tls"], true);
    assert!(doc["server"]["url"]
        .as_str()
        .unwrap()
        .starts_with("https://"));

    // The system's roots do not know a self-signed certificate: refused, exit 4.
    let mut args = vec!["grpc"];
    args.extend_from_slice(&base);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("cannot connect to https://localhost"), "{err}");

    // The explicit opt-out works, with a warning.
    let (out, doc) = with(&["--tls-insecure"]);
    ok(&out, &doc);
    assert!(stderr(&out).contains("not verified"));

    // msgbench's own service over TLS.
    let cert_file = dir.join("cert.pem");
    let key_file = dir.join("key.pem");
    std::fs::write(&cert_file, &cert).unwrap();
    std::fs::write(&key_file, &key).unwrap();
    let log = LogServer::start(&[
        "--tls-cert",
        cert_file.to_str().unwrap(),
        "--tls-key",
        key_file.to_str().unwrap(),
    ]);
    let port = log.url.rsplit(':').next().unwrap();
    let url = format!("https://localhost:{port}");
    let (out, doc) = grpc_json(&[
        "--server",
        &url,
        "--tls-ca",
        ca.to_str().unwrap(),
        "--requests",
        "30",
        "--in-flight",
        "5",
    ]);
    ok(&out, &doc);
    assert_eq!(u(&doc["grpc"]["requests_ok"]), 30);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn ghz_short_forms_split_a_total_and_pace_by_rps() {
    let log = LogServer::start(&[]);
    let (out, doc) = grpc_json(&[
        "--server",
        &log.url,
        "-n",
        "300",
        "-c",
        "3",
        "--rps",
        "1000",
        "--insecure",
    ]);
    ok(&out, &doc);
    // 300 in all, 100 per client, open loop at the aggregate rate.
    assert_eq!(u(&doc["grpc"]["requests_ok"]), 300);
    assert_eq!(doc["params"]["clients"], 3);
    assert_eq!(u(&doc["params"]["requests"]), 100);
    assert_eq!(doc["pacing"]["target_rate"].as_f64(), Some(1000.0));
}

/// One line on stderr naming what is wrong, exit 2, nothing on stdout.
fn bad(args: &[&str], expect: &[&str]) {
    let mut all = vec!["grpc"];
    all.extend_from_slice(args);
    let out = run(&all);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for e in expect {
        assert!(err.contains(e), "{args:?}: expected {e:?} in {err}");
    }
}

#[test]
fn bad_input_is_one_line_naming_it() {
    bad(
        &["--call", "msgbench.log.v1.Log/Apend"],
        &["--call", "no method Apend", "AppendStream"],
    );
    bad(&["--call", "nope.Svc/X"], &["unknown service nope.Svc"]);
    bad(&["--call", "Append"], &["--call", "package.Service/Method"]);
    bad(
        &["--data", r#"{"stream":"x","data":12}"#],
        &["--data", "field `data`"],
    );
    bad(
        &["--data", r#"{"stream":"x","dta":"AA=="}"#],
        &["--data", "dta"],
    );
    bad(&["--data", r#"{"stream":"{{nope}}"}"#], &["{{nope}}"]);
    bad(
        &["--data", "@/nonexistent/data.jsonl"],
        &["--data", "cannot read"],
    );
    bad(&["--server", "grpc://x:1"], &["--server", "http://"]);
    bad(&["--server", "localhost"], &["--server", "port"]);
    bad(&["--in-flight", "0"], &["--in-flight"]);
    bad(
        &["--clients", "2", "--connections", "3"],
        &["--connections"],
    );
    bad(
        &["--messages-per-call", "5"],
        &["--messages-per-call", "unary"],
    );
    bad(&["--tls-ca", "x.pem"], &["--tls-"]);
    // ghz's forms: -n is a total split evenly over the clients; --insecure means plaintext.
    bad(
        &["-n", "10", "-c", "3"],
        &["-n", "multiple of --clients (3)"],
    );
    bad(&["-n", "10", "--requests", "5"], &["--requests"]);
    bad(
        &["--insecure", "--server", "https://127.0.0.1:1"],
        &["--insecure", "plaintext", "--tls-insecure"],
    );
    bad(&["-H", "grpc-timeout: 1S"], &["--header", "reserved"]);
    bad(
        &["--proto", "/nonexistent/x.proto"],
        &["--proto", "no such file"],
    );
    let probe = grpc_service::start();
    bad(
        &[
            "--server",
            &probe.url,
            "--call",
            "msgbench.test.v1.Probe/Echo",
            "--data",
            r#"{"seq":"abc"}"#,
        ],
        &["--data", "field `seq`"],
    );
    bad(
        &[
            "--server",
            &probe.url,
            "--call",
            "msgbench.test.v1.Probe/Nope",
        ],
        &["no method Nope", "Echo"],
    );
}

#[test]
fn nothing_listening_is_a_connect_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let out = run(&[
        "grpc",
        "--server",
        &url,
        "--requests",
        "1",
        "--connect-timeout",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("cannot connect to {url}")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn encode_reports_each_step() {
    let dir = support::scratch_dir("grpc-encode");
    let json = dir.join("enc.json");
    let out = run(&[
        "grpc",
        "encode",
        "--data",
        r#"{"stream":"s-{{seq}}","data":"{{bytes 256}}"}"#,
        "--count",
        "5000",
        "--base64",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("protobuf_encode") && text.contains("base64"),
        "{text}"
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["message"], "msgbench.log.v1.AppendRequest");
    assert_eq!(doc["templated"], true);
    let steps = doc["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["template", "json_to_message", "protobuf_encode", "base64"]
    );
    let bytes = |i: usize| steps[i]["bytes_per_msg"].as_f64().unwrap();
    // 256 data bytes plus the stream name and the field headers; base64 is 4/3 of that.
    assert!(bytes(2) > 256.0 && bytes(2) < 290.0, "{}", bytes(2));
    assert!(
        (bytes(3) - (bytes(2) / 3.0).ceil() * 4.0).abs() <= 4.0,
        "{}",
        bytes(3)
    );
    for s in steps {
        assert!(s["ns_per_msg"].as_f64().unwrap() > 0.0, "{s}");
    }
    let out = run(&["grpc", "encode", "--message", "msgbench.log.v1.Nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--message"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bidi_at_a_rate_for_a_duration() {
    let (out, doc) = grpc_json(&[
        "--call",
        "msgbench.log.v1.Log/AppendStream",
        "--rate",
        "1000",
        "--duration",
        "1s",
        "--in-flight",
        "20",
    ]);
    ok(&out, &doc);
    let g = &doc["grpc"];
    let n = u(&g["requests_ok"]);
    // 1000 messages due in the second; the schedule, not the service, decides.
    assert!((990..=1000).contains(&n), "{n}");
    assert_eq!(u(&g["requests"]), n);
    assert_eq!(u(&doc["latency_uncorrected"]["count"]), n);
    assert_eq!(doc["pacing"]["target_rate"], 1000.0);
}

#[test]
fn an_interrupted_run_still_writes_what_it_measured() {
    let dir = support::scratch_dir("grpc-int");
    let (json, ticks) = (dir.join("r.json"), dir.join("ticks.jsonl"));
    let mut child = support::spawn_piped(&[
        "grpc",
        "--duration",
        "60s",
        "--rate",
        "2000",
        "--in-flight",
        "10",
        "--no-progress",
        "--stream-stats",
        ticks.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    // Interrupted once a second of answers is in, not after a fixed time that a busy machine
    // could spend starting the service and connecting.
    let answered = |t: &Value| t["latency"]["count"].as_u64().unwrap_or(0);
    let first = support::wait_for_tick(&ticks, &mut child, |t| answered(t) > 0);
    // SAFETY: signalling a child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["interrupted"], true);
    // At least what was answered (and timed) by the tick, and far from the 120,000 of the
    // whole schedule.
    let n = u(&doc["grpc"]["requests_ok"]);
    assert!(
        n >= answered(&first) && n < 60_000,
        "{n}, by the tick {first}"
    );
    assert_eq!(u(&doc["delivery"]["lost"]), 0);
    let _ = std::fs::remove_dir_all(dir);
}
