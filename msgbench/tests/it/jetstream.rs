//! `js pub` against a real nats-server with JetStream (storage in the test server's temporary
//! directory): each mode (sync, async, atomic batches), deduplication by message id, the errors
//! that name their kind, and the reconciliation of acknowledgements with the stream, including a
//! run made to fail it on purpose.

use crate::support::{self, run, run_json, schema_errors, stderr, u, TestServer};

#[test]
fn sync_and_async_publishes_are_acknowledged_and_reconcile_with_the_stream() {
    let s = TestServer::start();
    for (mode, clients) in [("sync", "1"), ("async", "3")] {
        let (out, v) = run_json(&[
            "js",
            "pub",
            "--server",
            &s.url,
            "--mode",
            mode,
            "--clients",
            clients,
            "--msgs",
            "2000",
            "--size",
            "64",
            "--stream",
            mode,
            "--subject",
            &format!("bench.{mode}"),
        ]);
        assert!(out.status.success(), "{mode}: {}", stderr(&out));
        assert_eq!(schema_errors(&v), Vec::<String>::new());
        let total = 2000 * clients.parse::<u64>().unwrap();
        let js = &v["jetstream"];
        assert_eq!(js["reconciled"], true, "{js}");
        assert_eq!(u(&js["acked"]), total, "{js}");
        assert_eq!(u(&js["stored"]), total, "{js}");
        assert_eq!(u(&js["streams"][0]["after"]["messages"]), total, "{js}");
        assert_eq!(u(&js["duplicate_acks"]), 0);
        assert_eq!(
            u(&v["latency"]["count"]),
            total,
            "one ack latency per publish"
        );
        assert_eq!(v["params"]["mode"], mode);
        // Bytes are what was stored, not the acknowledgements' own.
        assert_eq!(u(&v["throughput"]["bytes"]), total * 64);
        assert!(stderr(&out).contains("Reconciled"), "{}", stderr(&out));
    }
}

#[test]
fn atomic_batches_are_acknowledged_once_per_commit_and_reconcile() {
    let s = TestServer::start();
    // 2,050 messages in batches of 100: 20 full batches and a short one of 50.
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--server",
        &s.url,
        "--mode",
        "batch",
        "--batch",
        "100",
        "--max-in-flight",
        "2",
        "--clients",
        "2",
        "--msgs",
        "2050",
        "--size",
        "64",
        "--stream",
        "batched",
        "--subject",
        "batched.x",
        "--storage",
        "file",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let js = &v["jetstream"];
    assert_eq!(js["reconciled"], true, "{js}");
    assert_eq!(u(&js["acked"]), 4100, "{js}");
    assert_eq!(u(&js["stored"]), 4100, "{js}");
    assert_eq!(u(&v["delivery"]["lost"]), 0);
    assert_eq!(u(&v["throughput"]["msgs"]), 4100);
    assert_eq!(u(&v["latency"]["count"]), 2 * 21, "one latency per batch");
    assert_eq!(v["params"]["batch"], 100);
    assert_eq!(v["params"]["streams"][0]["allow_atomic"], true);
    assert!(stderr(&out).contains("batches (first message to the commit"));
}

#[test]
fn resending_the_same_message_ids_stores_each_message_once() {
    let s = TestServer::start();
    let args = [
        "js",
        "pub",
        "--server",
        &s.url,
        "--dedup",
        "--msg-id-prefix",
        "again",
        "--clients",
        "2",
        "--msgs",
        "1500",
        "--stream",
        "dedup",
        "--subject",
        "dedup.x",
    ];
    let (first, v1) = run_json(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(u(&v1["jetstream"]["stored"]), 3000);
    assert_eq!(u(&v1["jetstream"]["deduplicated"]), 0);
    // The same ids again: every publish is acknowledged as a duplicate and nothing is stored.
    let (second, v2) = run_json(&args);
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(schema_errors(&v2), Vec::<String>::new());
    let js = &v2["jetstream"];
    assert_eq!(u(&js["deduplicated"]), 3000, "{js}");
    assert_eq!(u(&js["stored"]), 0, "{js}");
    assert_eq!(u(&js["acked"]), 0, "{js}");
    assert_eq!(u(&js["streams"][0]["after"]["messages"]), 3000, "{js}");
    assert_eq!(js["reconciled"], true, "{js}");
    assert!(
        stderr(&second).contains("Deduplicated: 3,000"),
        "{}",
        stderr(&second)
    );
    // A new prefix is new ids: stored again.
    let mut fresh = args.to_vec();
    fresh[6] = "other";
    let (third, v3) = run_json(&fresh);
    assert!(third.status.success(), "{}", stderr(&third));
    assert_eq!(u(&v3["jetstream"]["stored"]), 3000);
}

#[test]
fn a_write_flood_spreads_clients_over_streams_and_reconciles_each() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--server",
        &s.url,
        "--clients",
        "4",
        "--streams",
        "2",
        "--msgs",
        "1000",
        "--size",
        "32",
        "--max-in-flight",
        "64",
        "--stream",
        "flood",
        "--subject",
        "flood",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let js = &v["jetstream"];
    assert_eq!(js["reconciled"], true, "{js}");
    assert_eq!(u(&js["acked"]), 4000, "{js}");
    let streams = js["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 2);
    for (k, st) in streams.iter().enumerate() {
        // Clients k and k + 2 publish into stream k.
        assert_eq!(st["name"], format!("flood_{k}"));
        assert_eq!(u(&st["acked"]), 2000, "{st}");
        assert_eq!(u(&st["after"]["messages"]), 2000, "{st}");
    }
}

#[test]
fn a_full_stream_refusing_publishes_is_counted_by_kind() {
    let s = TestServer::start();
    let args = [
        "js",
        "pub",
        "--server",
        &s.url,
        "--mode",
        "sync",
        "--msgs",
        "2000",
        "--size",
        "128",
        "--max-bytes",
        "64KiB",
        "--discard",
        "new",
        "--stream",
        "full",
        "--subject",
        "full.x",
    ];
    let (out, v) = run_json(&args);
    // A publish the stream refused is not a lost message: nothing acknowledged went missing.
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refused = u(&v["errors"]["js_stream_full"]);
    assert!(refused > 0, "{}", v["errors"]);
    let js = &v["jetstream"];
    // What was refused was not stored, and what was stored was acknowledged.
    assert_eq!(js["reconciled"], true, "{js}");
    assert_eq!(u(&js["acked"]) + refused, 2000, "{js}");
    let d = &v["durability"];
    assert_eq!(u(&d["refused"]["js_stream_full"]), refused, "{d}");
    assert_eq!((u(&d["lost"]), u(&d["unanswered"])), (0, 0), "{d}");
    assert_eq!(u(&d["ok"]), u(&js["acked"]), "{d}");
    assert_eq!(u(&v["delivery"]["lost"]), 0);
    // The text names the refusals by kind (the count is grouped by thousands there).
    assert!(
        stderr(&out).contains("not acknowledged: refused ")
            && stderr(&out).contains(" (js_stream_full)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn without_jetstream_the_error_says_so() {
    // A server without -js: the API has no responders.
    let server = support::CoreServer::start();
    let url = server.url.clone();
    let outs: Vec<_> = [
        ["js", "pub"],
        ["js", "consume"],
        ["kv", "put"],
        ["kv", "get"],
    ]
    .iter()
    .map(|cmd| {
        let mut args = cmd.to_vec();
        args.extend(["--server", &url, "--msgs", "10", "--timeout", "2s"]);
        (cmd.join(" "), run(&args))
    })
    .collect();
    drop(server);
    for (cmd, out) in outs {
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("JetStream is not enabled"), "{cmd}: {err}");
        assert_eq!(err.lines().count(), 1, "{cmd}: {err}");
    }
}

#[test]
fn messages_stored_by_someone_else_fail_the_reconciliation() {
    // Two runs publish into one stream at once: each finds sequences in it that it was never
    // acknowledged, so neither can prove what it stored, and both say so.
    let s = TestServer::start();
    let dir = support::scratch_dir("shared-stream");
    let ticks = dir.join("ticks.jsonl");
    let args = [
        "js",
        "pub",
        "--server",
        &s.url,
        "--mode",
        "sync",
        "--duration",
        "2s",
        "--stream",
        "shared",
        "--subject",
        "shared.x",
        "--json",
        "-",
        "--no-progress",
    ];
    // The other run goes on for 8 s and this one starts once the other has stored for a
    // second: each stores while the other runs, however long a busy machine takes to start
    // either of them.
    let mut longer = args.to_vec();
    longer[7] = "8s";
    longer.extend(["--stream-stats", ticks.to_str().unwrap()]);
    let mut other = support::spawn_piped(&longer);
    support::wait_for_tick(&ticks, &mut other, |t| {
        support::tick_f(t, "sent_per_sec") > 0.0
    });
    let (out, v) = run_json(&args[..args.len() - 3]);
    let other = other.wait_with_output().unwrap();
    for (out, v) in [
        (out, v),
        (
            other.clone(),
            serde_json::from_slice(&other.stdout).unwrap(),
        ),
    ] {
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        let js = &v["jetstream"];
        assert_eq!(js["reconciled"], false, "{js}");
        assert!(u(&js["unacked_stored"]) > 0, "{js}");
        assert!(!js["streams"][0]["unacked_seqs"]
            .as_array()
            .unwrap()
            .is_empty());
        assert!(stderr(&out).contains("NOT RECONCILED"), "{}", stderr(&out));
    }
}

#[test]
fn js_pub_bad_input_names_the_flag() {
    for (args, needle) in [
        (vec!["js", "pub", "--mode", "turbo"], "--mode"),
        (vec!["js", "pub", "--stream", "a.b"], "--stream"),
        (vec!["js", "pub", "--max-in-flight", "0"], "--max-in-flight"),
        (
            vec!["js", "pub", "--mode", "sync", "--max-in-flight", "8"],
            "--max-in-flight",
        ),
        (vec!["js", "pub", "--size", "4"], "--size"),
        (vec!["js", "pub", "--storage", "tape"], "--storage"),
        (vec!["js", "pub", "--replicas", "9"], "--replicas"),
        (
            vec!["js", "pub", "--streams", "3", "--clients", "2"],
            "--streams",
        ),
        (vec!["js", "pub", "--streams", "0"], "--streams"),
        (vec!["js", "pub", "--batch", "10"], "--batch"),
        (
            vec!["js", "pub", "--mode", "batch", "--batch", "1001"],
            "--batch",
        ),
        (
            vec!["js", "pub", "--mode", "batch", "--max-in-flight", "51"],
            "--max-in-flight",
        ),
        (vec!["js", "pub", "--msg-id-prefix", "x"], "--dedup"),
        (
            vec!["js", "pub", "--dedup", "--msg-id-prefix", "a:b"],
            "--msg-id-prefix",
        ),
        (vec!["js", "pub", "--subjects", "a..b"], "--subjects"),
        (
            vec![
                "js",
                "pub",
                "--clients",
                "2",
                "--streams",
                "2",
                "--subjects",
                "a.>",
            ],
            "--subjects",
        ),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
}

/// A stream's configuration as the server has it.
fn stream_config(url: &str, stream: &str) -> serde_json::Value {
    let info: serde_json::Value = serde_json::from_str(&support::raw_request(
        url,
        &format!("$JS.API.STREAM.INFO.{stream}"),
        "",
    ))
    .unwrap();
    info["config"].clone()
}

#[test]
fn a_stream_made_outside_msgbench_is_used_as_it_is_and_a_setting_that_differs_is_refused_by_name() {
    let s = TestServer::start();
    // Made as a user would, with settings msgbench's defaults do not have: file storage, a
    // wildcard subject, a message limit.
    let made = support::raw_request(
        &s.url,
        "$JS.API.STREAM.CREATE.users",
        r#"{"name":"users","subjects":["users.>"],"storage":"file","max_msgs":100000}"#,
    );
    assert!(!made.contains("\"error\""), "{made}");
    let before = stream_config(&s.url, "users");
    let args = |extra: &[&'static str]| {
        let mut args = vec![
            "js",
            "pub",
            "--server",
            &s.url,
            "--stream",
            "users",
            "--subject",
            "users.signup",
            "--msgs",
            "3000",
        ];
        args.extend_from_slice(extra);
        args
    };
    let (out, v) = run_json(&args(&[]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let st = &v["jetstream"]["streams"][0];
    assert_eq!(st["found"], true, "{st}");
    // The result records the stream as it is, and the run reconciled against it.
    assert_eq!(st["config"]["storage"], "file", "{st}");
    assert_eq!(st["config"]["subjects"], serde_json::json!(["users.>"]));
    assert_eq!(st["config"]["max_msgs"], 100_000);
    assert_eq!(v["jetstream"]["storage"], "file");
    assert_eq!(v["jetstream"]["reconciled"], true, "{}", v["jetstream"]);
    assert!(
        stderr(&out).contains("JetStream: stream users (file, used as found, async publish)"),
        "{}",
        stderr(&out)
    );
    // And never changed it.
    assert_eq!(stream_config(&s.url, "users"), before);
    // A setting asked for that the stream does not have: refused in one line naming it, before
    // anything is published.
    let out = run(&args(&["--storage", "memory", "--replicas", "1"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("stream users exists with other settings")
            && e.contains("storage file (asked memory)")
            && e.contains("subjects users.> (asked users.signup)"),
        "{e}"
    );
    // A feature the run needs and the stream lacks: atomic batches.
    let out = run(&args(&["--mode", "batch"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("does not have allow_atomic"),
        "{}",
        stderr(&out)
    );
    let after: serde_json::Value = serde_json::from_str(&support::raw_request(
        &s.url,
        "$JS.API.STREAM.INFO.users",
        "",
    ))
    .unwrap();
    assert_eq!(
        u(&after["state"]["messages"]),
        3000,
        "nothing published by the refused runs"
    );
    // --create on a stream that is not there makes it with the settings given.
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--server",
        &s.url,
        "--stream",
        "made",
        "--subject",
        "made.x",
        "--create",
        "--storage",
        "file",
        "--msgs",
        "100",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let st = &v["jetstream"]["streams"][0];
    assert_eq!(
        (&st["found"], &st["config"]["storage"]),
        (&serde_json::json!(false), &serde_json::json!("file")),
        "{st}"
    );
}

#[test]
fn a_bucket_that_exists_is_used_as_it_is_unless_its_settings_are_given() {
    let s = TestServer::start();
    let kv = |extra: &[&'static str]| {
        let mut args = vec![
            "kv", "put", "--server", &s.url, "--bucket", "prefs", "--keys", "50", "--msgs", "200",
        ];
        args.extend_from_slice(extra);
        args
    };
    let (out, v) = run_json(&kv(&["--history", "5"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["jetstream"]["streams"][0]["found"], false);
    let (out, v) = run_json(&kv(&[]));
    assert!(out.status.success(), "{}", stderr(&out));
    let st = &v["jetstream"]["streams"][0];
    assert_eq!(st["found"], true, "{st}");
    assert_eq!(st["config"]["max_msgs_per_subject"], 5, "{st}");
    let out = run(&kv(&["--history", "2"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("max_msgs_per_subject 5 (asked 2)"),
        "{}",
        stderr(&out)
    );
}

/// A `js pub` run has no subscriber: its second series is the publishes' acknowledgements, and
/// the result, the live line and the HTML report call it that, not "sub" (the report once
/// drew `pub 0` and `sub 0` and summed up a "sub side").
#[test]
fn a_js_pub_run_names_its_series_publishes_and_acknowledgements_everywhere() {
    let s = TestServer::start();
    let dir = support::scratch_dir("js-series");
    let json = dir.join("r.json");
    let out = run(&[
        "js",
        "pub",
        "--server",
        &s.url,
        "--rate",
        "1000",
        "--duration",
        "1500ms",
        "--live",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["by_role"]["pub"]["counts"], "publishes");
    assert_eq!(v["by_role"]["sub"]["counts"], "acknowledgements");
    let err = stderr(&out);
    let live: Vec<&str> = err.lines().filter(|l| l.contains("  errors ")).collect();
    assert!(!live.is_empty(), "{err}");
    assert!(
        live.iter()
            .all(|l| l.contains("  publishes ") && l.contains("  acknowledgements ")),
        "{err}"
    );
    let page = support::report_page(&json);
    assert!(
        page.contains(">acknowledgements/s</th>"),
        "no acknowledgements row"
    );
    assert!(page.contains(">publishes/s</th>"), "no publishes row");
    for wrong in ["sub side", "pub side", "\"sub 0\"", "\"pub 0\""] {
        assert!(!page.contains(wrong), "the report says {wrong}");
    }
    assert!(
        page.contains("acknowledgements 0"),
        "no client named by its acks"
    );
}

/// A JetStream publish on a rate schedule: each stage counts the acknowledgements of what was
/// due in it, and its `lost` is null, since a write not acknowledged is not lost and an
/// acknowledged one missing from the stream is judged for the whole run (a stage's "lost" once
/// counted the publishes not acknowledged, which a capacity probe's SLO read as loss).
#[test]
fn a_js_pub_on_a_rate_schedule_counts_each_stages_acknowledgements_and_no_stage_loss() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--server",
        &s.url,
        "--mode",
        "async",
        "--stream",
        "staged",
        "--rate-schedule",
        "300@1s,600@1s",
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let stages = v["schedule"]["stages"].as_array().expect("stages");
    assert_eq!(stages.len(), 2, "{stages:?}");
    for st in stages {
        assert!(st["lost"].is_null(), "{st}");
        assert!(
            u(&st["received"]) > 0 && u(&st["received"]) <= u(&st["sent"]),
            "{st}"
        );
    }
    let acked: u64 = stages.iter().map(|st| u(&st["received"])).sum();
    assert_eq!(acked, u(&v["jetstream"]["acked"]), "{}", v["jetstream"]);
    assert_eq!(u(&v["delivery"]["lost"]), 0, "{}", v["delivery"]);
}
