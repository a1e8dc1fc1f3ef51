//! `js consume` and `kv put|get` against a real nats-server with JetStream: every pull mode and
//! ack policy delivers each stored message exactly once, end-to-end latency when publishing
//! live, consuming what another run stored, a run made to fail (a limit discards messages before
//! they are consumed), and key-value puts and gets.

use crate::support::{self, run, run_json, schema_errors, stderr, u, TestServer};

fn consume(url: &str, extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    let mut args = vec!["js", "consume", "--server", url];
    args.extend_from_slice(extra);
    run_json(&args)
}

#[test]
fn every_mode_and_ack_policy_consumes_each_message_exactly_once() {
    let s = TestServer::start();
    for (i, (mode, ack, clients)) in [
        ("fetch", "explicit", "1"),
        ("fetch", "all", "3"),
        ("consume", "explicit", "2"),
        ("consume", "none", "1"),
        ("ordered", "none", "1"),
    ]
    .into_iter()
    .enumerate()
    {
        let stream = format!("c{i}");
        let subject = format!("c{i}.x");
        let (out, v) = consume(
            &s.url,
            &[
                "--mode",
                mode,
                "--ack",
                ack,
                "--clients",
                clients,
                "--batch",
                "200",
                "--msgs",
                "5000",
                "--size",
                "64",
                "--stream",
                &stream,
                "--subject",
                &subject,
            ],
        );
        let what = format!("{mode}/{ack}/{clients}");
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        assert_eq!(schema_errors(&v), Vec::<String>::new(), "{what}");
        let c = &v["consumer"];
        assert_eq!(c["reconciled"], true, "{what}: {c}");
        assert_eq!(u(&c["consumed"]), 5000, "{what}: {c}");
        assert_eq!(u(&c["expected"]), 5000, "{what}: {c}");
        assert_eq!(c["mode"], mode);
        assert_eq!(c["ack"], ack);
        let d = &v["delivery"];
        assert_eq!(u(&d["received"]), 5000, "{what}: {d}");
        assert_eq!((u(&d["lost"]), u(&d["duplicated"])), (0, 0), "{what}: {d}");
        assert_eq!(u(&v["by_role"]["sub"]["msgs"]), 5000, "{what}");
        assert_eq!(u(&v["by_role"]["sub"]["bytes"]), 5000 * 64, "{what}");
        assert_eq!(u(&v["by_role"]["pub"]["msgs"]), 5000, "{what}");
        let acks = u(&c["acks_sent"]);
        match ack {
            "explicit" => assert_eq!(acks, 5000, "{what}"),
            // One ack covers everything up to it: at least one per pull, fewer than messages.
            "all" => assert!(acks > 0 && acks < 5000, "{what}: {acks}"),
            _ => assert_eq!(acks, 0, "{what}"),
        }
        // Fetch waits for each pull; 200 at a time takes at least 25 of them.
        assert!(u(&c["pull_requests"]) >= 25, "{what}: {c}");
        // Consumed after publishing ended: waiting time, not latency, so none is reported.
        assert!(v.get("latency").is_none(), "{what}");
        assert_eq!(v["jetstream"]["reconciled"], true, "{what}");
    }
}

#[test]
fn publishing_live_times_each_message_from_publish_to_consume() {
    let s = TestServer::start();
    let (out, v) = consume(
        &s.url,
        &[
            "--publish",
            "live",
            "--rate",
            "2000",
            "--msgs",
            "3000",
            "--stream",
            "live",
            "--subject",
            "live.x",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["consumer"]["reconciled"], true, "{}", v["consumer"]);
    let lat = &v["latency"];
    assert_eq!(u(&lat["count"]), 3000, "every message timed: {lat}");
    // At 2,000 msgs/s on loopback, a message reaches the consumer in well under a second;
    // a figure near the run's length would mean the send time was not read.
    assert!(u(&lat["percentiles_ns"]["50"]) < 1_000_000_000, "{lat}");
    assert!(
        stderr(&out).contains("Latency from publish to consume"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_live_publisher_follows_a_rate_schedule_and_every_message_of_it_is_consumed_once() {
    let s = TestServer::start();
    let (out, v) = consume(
        &s.url,
        &[
            "--publish",
            "live",
            "--rate-schedule",
            "1000@1s,2000@1s",
            "--clients",
            "2",
            "--stream",
            "sched",
            "--subject",
            "sched.x",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["params"]["rate_schedule"], "1000@1s,2000@1s");
    // The schedule sets the count: its consumers drain what it published, each once.
    let acked = u(&v["jetstream"]["streams"][0]["acked"]);
    assert!((2900..=3000).contains(&acked), "about 3,000 due: {acked}");
    let c = &v["consumer"];
    assert_eq!(
        (u(&c["expected"]), u(&c["consumed"])),
        (acked, acked),
        "{c}"
    );
    assert_eq!(c["reconciled"], true, "{c}");
    let stages = v["schedule"]["stages"].as_array().expect("stages");
    assert_eq!(stages.len(), 2, "{}", v["schedule"]);
    assert_eq!(
        stages.iter().map(|st| u(&st["sent"])).sum::<u64>(),
        u(&v["by_role"]["pub"]["msgs"]),
        "{}",
        v["schedule"]
    );
    assert!(
        stderr(&out).contains("published live on the schedule 1000@1s,2000@1s"),
        "{}",
        stderr(&out)
    );
}

/// `--duration` with a live publisher, as `js pub` takes it: the messages due in it at
/// `--rate` are published and each consumed once (it was refused, and a user had to turn a
/// duration into `--msgs` by hand).
#[test]
fn a_live_publisher_at_a_rate_runs_for_a_duration() {
    let s = TestServer::start();
    let (out, v) = consume(
        &s.url,
        &[
            "--publish",
            "live",
            "--rate",
            "2000",
            "--duration",
            "1500ms",
            "--stream",
            "timed",
            "--subject",
            "timed.x",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    // 1.5 s at 2,000/s: messages 0 … 2,999 are due in it.
    assert_eq!(v["params"]["duration_secs"], 1.5);
    assert_eq!(u(&v["params"]["msgs"]), 3000);
    assert_eq!(u(&v["by_role"]["pub"]["msgs"]), 3000);
    let c = &v["consumer"];
    assert_eq!((u(&c["expected"]), u(&c["consumed"])), (3000, 3000), "{c}");
    assert_eq!(c["reconciled"], true, "{c}");
    assert!(
        stderr(&out).contains("published live at 2,000 msgs/s for 1.5 s; 3,000 messages"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn consuming_what_another_run_stored() {
    let s = TestServer::start();
    let (out, _) = run_json(&[
        "js",
        "pub",
        "--server",
        &s.url,
        "--msgs",
        "1200",
        "--stream",
        "kept",
        "--subject",
        "kept.x",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Asking for more than the stream holds takes what it holds.
    let (out, v) = consume(
        &s.url,
        &["--publish", "none", "--msgs", "5000", "--stream", "kept"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(u(&v["consumer"]["expected"]), 1200, "{}", v["consumer"]);
    assert_eq!(u(&v["consumer"]["consumed"]), 1200, "{}", v["consumer"]);
    assert!(v.get("jetstream").is_none(), "nothing was published");
    // js pub's messages carry their send time, but here that is how long they were stored:
    // their age, which is not reported as latency.
    assert!(v.get("latency").is_none(), "{}", v["latency"]);
    // An empty stream has nothing to consume: a usage error naming it.
    let created = support::raw_request(
        &s.url,
        "$JS.API.STREAM.CREATE.empty",
        r#"{"name":"empty","subjects":["empty.x"],"storage":"memory"}"#,
    );
    assert!(!created.contains("\"error\""), "{created}");
    let out = run(&[
        "js",
        "consume",
        "--server",
        &s.url,
        "--publish",
        "none",
        "--stream",
        "empty",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("stream empty holds no messages"),
        "{}",
        stderr(&out)
    );
    // A wrong stream name is the server's "stream not found", by kind; nothing is created.
    let out = run(&[
        "js",
        "consume",
        "--server",
        &s.url,
        "--publish",
        "none",
        "--stream",
        "nosuch",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("stream not found") && err.contains("10059"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn messages_discarded_before_they_are_consumed_fail_the_reconciliation() {
    // A byte limit that keeps about a third of what is published, discarding the oldest: the
    // publisher was acknowledged for every message, the consumer cannot get the discarded ones.
    let s = TestServer::start();
    let (out, v) = consume(
        &s.url,
        &[
            "--msgs",
            "3000",
            "--size",
            "128",
            "--max-bytes",
            "200KiB",
            "--stream",
            "small",
            "--subject",
            "small.x",
            "--timeout",
            "10s",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let c = &v["consumer"];
    assert_eq!(c["reconciled"], false, "{c}");
    // It stopped because the stream ran dry, not by waiting out the 10 s.
    assert_eq!(c["ended"], "drained", "{c}");
    let d = &v["delivery"];
    let missing = u(&d["lost"]);
    assert!(missing > 1000 && missing < 3000, "{d}");
    assert_eq!(u(&d["received"]) + missing, 3000, "{d}");
    let listed: Vec<u64> = d["missing_seqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    assert_eq!(
        listed,
        (1..=20).collect::<Vec<u64>>(),
        "the oldest went first"
    );
    // The publishing side still reconciles: everything it was told was stored, was.
    assert_eq!(v["jetstream"]["reconciled"], true);
    // Two checks, each named: the publishes reconciled, the consumer's did not hold. The
    // report never says "Reconciled" beside "NOT RECONCILED".
    let err = stderr(&out);
    assert!(
        err.contains("!! NOT CONSUMED EXACTLY ONCE: ") && err.contains("first: 1, 2, 3"),
        "{err}"
    );
    assert!(
        err.contains("Published: every stored message was acknowledged exactly once"),
        "{err}"
    );
    assert!(
        !err.contains("Reconciled") && !err.contains("RECONCILED"),
        "{err}"
    );
}

#[test]
fn kv_puts_keep_their_history_and_gets_find_every_key() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "kv",
        "put",
        "--server",
        &s.url,
        "--bucket",
        "b",
        "--keys",
        "50",
        "--history",
        "3",
        "--msgs",
        "1000",
        "--max-in-flight",
        "32",
        "--order",
        "random",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let js = &v["jetstream"];
    assert_eq!(js["reconciled"], true, "{js}");
    assert_eq!(u(&js["acked"]), 1000, "{js}");
    let st = &js["streams"][0];
    assert_eq!(st["name"], "KV_b");
    // Random keys over 1,000 puts reach all 50 keys at least 3 times: 3 values kept each.
    assert_eq!(u(&st["after"]["messages"]), 150, "{st}");
    assert_eq!(v["params"]["key_order"], "random");

    let (out, v) = run_json(&[
        "kv",
        "get",
        "--server",
        &s.url,
        "--bucket",
        "g",
        "--keys",
        "200",
        "--msgs",
        "2000",
        "--size",
        "40",
        "--clients",
        "2",
        "--max-in-flight",
        "8",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(u(&v["delivery"]["received"]), 4000);
    assert_eq!(u(&v["delivery"]["lost"]), 0);
    assert!(
        v["errors"].as_object().unwrap().is_empty(),
        "{}",
        v["errors"]
    );
    // Each get returns the value: 40 bytes.
    assert_eq!(u(&v["by_role"]["sub"]["bytes"]), 4000 * 40);
    assert_eq!(u(&v["latency"]["count"]), 4000);
    assert!(
        stderr(&out).contains("NATS KV get stats"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn consume_and_kv_bad_input_names_the_flag() {
    for (args, needle) in [
        (vec!["js", "consume", "--mode", "push"], "--mode"),
        (
            vec!["js", "consume", "--mode", "ordered", "--ack", "explicit"],
            "--ack",
        ),
        (
            vec!["js", "consume", "--mode", "ordered", "--clients", "2"],
            "--clients",
        ),
        (vec!["js", "consume", "--batch", "0"], "--batch"),
        (vec!["js", "consume", "--rate", "100"], "--rate"),
        (
            vec!["js", "consume", "--rate-schedule", "100@1s"],
            "--rate-schedule",
        ),
        (
            vec!["js", "consume", "--publish", "none", "--purge"],
            "--purge",
        ),
        (vec!["js", "consume", "--publish", "later"], "--publish"),
        (
            vec!["js", "consume", "--publish", "none", "--create"],
            "--create",
        ),
        (
            vec!["js", "consume", "--publish", "none", "--storage", "file"],
            "--storage",
        ),
        (vec!["js", "consume", "--msgs", "0"], "--msgs"),
        // --duration sets the live publisher's count: not with --msgs, nor without a rate or
        // a live publisher.
        (
            vec![
                "js",
                "consume",
                "--publish",
                "live",
                "--rate",
                "100",
                "--duration",
                "1s",
                "--msgs",
                "5",
            ],
            "--duration",
        ),
        (
            vec!["js", "consume", "--publish", "live", "--duration", "1s"],
            "--duration",
        ),
        (vec!["js", "consume", "--duration", "1s"], "--duration"),
        (vec!["kv", "put", "--history", "65"], "--history"),
        (vec!["kv", "get", "--keys", "0"], "--keys"),
        (vec!["kv", "put", "--bucket", "a.b"], "--bucket"),
        (vec!["kv", "get", "--order", "shuffled"], "--order"),
        (vec!["kv", "put", "--size", "4"], "--size"),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
}
