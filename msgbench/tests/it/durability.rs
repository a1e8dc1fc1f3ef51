//! Faults aimed at a JetStream cluster's roles (`--fault kill-leader@…` and the like) against
//! real servers: `js pub` on `--cluster 3` into an R3 file stream written with
//! `sync_interval=always`, publishing paced with `--reconnect` to every node. Each fault is
//! found on the node that held the role, nothing acknowledged is lost, the publishes refused
//! or unanswered meanwhile are counted as such, and the result says what each fault did to the
//! service. No figure is asserted beyond its being there: timings belong to the machine. Each
//! replica is read back from its node, and agrees with the leader, message by message.
//!
//! One cluster runs at a time ([`one_cluster`]): reading each replica's copy moves the stream's
//! leadership from node to node, and with several clusters' elections starving each other of
//! two cores, a hand-over can leave a stream without a leader for longer than the run waits.

use std::sync::{Mutex, MutexGuard};

use crate::support::{run, run_json, schema_errors, stderr, u};
use serde_json::Value;

/// Held while a test's cluster runs, so that the clusters of this file run one at a time.
fn one_cluster() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    // A test that failed while holding it leaves it poisoned; the next one may still run.
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `js pub` on a fresh 3-node cluster with `fault`, at 500 msgs/s for `duration`.
fn js_pub_with(fault: &str, duration: &str) -> (std::process::Output, Value) {
    js_pub_at("500", fault, duration)
}

/// As [`js_pub_with`], at `rate` messages a second.
fn js_pub_at(rate: &str, fault: &str, duration: &str) -> (std::process::Output, Value) {
    let _one = one_cluster();
    run_json(&[
        "js",
        "pub",
        "--cluster",
        "3",
        "--replicas",
        "3",
        "--storage",
        "file",
        "--server-config",
        "sync_interval=always",
        "--reconnect",
        "--rate",
        rate,
        "--duration",
        duration,
        "--fault",
        fault,
    ])
}

/// The checks every fault run shares: a valid result, nothing acknowledged lost, every publish
/// either acknowledged, refused or unanswered, and one report per fault, injected.
fn check_common(out: &std::process::Output, v: &Value, faults: usize) {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    assert_eq!(schema_errors(v), Vec::<String>::new());
    let d = &v["durability"];
    assert_eq!(u(&d["lost"]), 0, "{d}");
    assert_eq!(u(&v["delivery"]["lost"]), 0);
    let refused: u64 = d["refused"].as_object().unwrap().values().map(u).sum();
    let acked = u(&v["jetstream"]["acked"]);
    assert_eq!(acked + refused + u(&d["unanswered"]), u(&d["sent"]), "{d}");
    let events = v["fault"]["faults"].as_array().unwrap();
    assert_eq!(events.len(), faults);
    for e in events {
        assert!(e["injected_at_ns"].as_u64().is_some(), "{e}");
        assert_eq!(e["nodes"].as_array().unwrap().len(), 1, "{e}");
    }
    // The single-fault fields describe the first fault.
    assert_eq!(v["fault"]["injected_at_ns"], events[0]["injected_at_ns"]);
    assert_eq!(v["fault"]["kind"], events[0]["kind"]);
    assert_eq!(v["fault"]["target"], events[0]["target"]);
}

fn positive(v: &Value) -> bool {
    v.as_u64().is_some_and(|n| n > 0)
}

#[test]
fn killing_the_stream_leader_loses_nothing_acknowledged_and_says_how_long_acks_stopped() {
    // A new leader is elected after a raft election timeout (4 to 9 s, drawn at random by
    // the server): the run lasts long enough after the slowest election, on a loaded machine
    // too, for acknowledgements to resume before it ends. The fault comes at 3 s, after the
    // servers' samples have seen the stream and its first leader, so the leader's change is
    // an event of theirs too.
    let (out, v) = js_pub_with("kill-leader@3s", "22s");
    check_common(&out, &v, 1);
    let e = &v["fault"]["faults"][0];
    assert_eq!(e["target"], "leader");
    // The node killed is the one STREAM.INFO named leader just before.
    assert_eq!(e["nodes"][0], e["leader_before"], "{e}");
    assert!(e["leader_after"].is_string(), "{e}");
    assert_ne!(e["leader_after"], e["nodes"][0], "{e}");
    assert!(positive(&e["leader_answered_ns"]), "{e}");
    assert!(positive(&e["no_ack_ns"]), "{e}");
    assert!(e["undone_at_ns"].is_null(), "{e}");
    let text = stderr(&out);
    assert!(
        text.contains("Fault 1: kill-leader at ") && text.contains("no acknowledgement for "),
        "{text}"
    );

    // What the servers' samples saw: the killed node stop answering at the fault, and the
    // stream's leader change when the new leader was elected, which is when msgbench's own
    // STREAM.INFO first had an answer from it (the survivors name the dead leader until
    // then); in the text, and drawn in the report.
    let injected =
        u(&e["injected_at_ns"]) as f64 / 1e9 + v["timeline"]["load_start_s"].as_f64().unwrap();
    let elected = injected + u(&e["leader_answered_ns"]) as f64 / 1e9;
    let events = v["server_side"]["events"].as_array().unwrap();
    let of = |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["kind"] == kind).collect() };
    let c = of("stream_leader_change")
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no leader change: {events:?}"));
    let (since, at) = (c["since_s"].as_f64().unwrap(), c["t_s"].as_f64().unwrap());
    // A reading can take up to 0.9 s and msgbench's own look at the placement takes its
    // time too, on a busy machine longer: the two clocks agree to a couple of seconds.
    const SLACK: f64 = 2.5;
    assert!(
        at >= injected && since - SLACK <= elected && elected <= at + SLACK,
        "{c} against the kill at {injected} s and the new leader's answer at {elected} s"
    );
    assert_eq!(c["server"], e["leader_after"], "{c}");
    let gone = of("server_unreachable");
    assert!(
        gone.iter().any(|g| g["server"] == e["nodes"][0]
            && g["since_s"].as_f64().unwrap() <= injected
            && g["t_s"].as_f64().unwrap() >= injected),
        "the killed node stops answering at the kill: {gone:?} against {injected} s"
    );
    assert!(
        text.contains("Server events (") && text.contains("stream leader change ("),
        "{text}"
    );
    crate::report::server_events_drawn_in_a_real_browser(&v, injected);
}

#[test]
fn a_fault_whose_target_is_not_there_yet_waits_for_it_and_says_how_long() {
    // Killing the leader leaves the stream without one until an election (4 to 9 s, drawn at
    // random by the server): the partition due half a second later finds no leader to name
    // a follower of, waits for one, and comes once one answers, inside the run.
    let (out, v) = js_pub_with("kill-leader@1s,partition-follower@1500ms:1s", "20s");
    check_common(&out, &v, 2);
    let e = &v["fault"]["faults"][1];
    assert!(positive(&e["waited_ns"]), "{e}");
    assert!(
        u(&e["injected_at_ns"]) >= 1_500_000_000 + u(&e["waited_ns"]),
        "injected once the wait was over: {e}"
    );
    assert!(
        v["fault"]["faults"][0]["waited_ns"].is_null(),
        "the kill found its leader"
    );
    // The follower cut off is a node that is up: not the one the kill took down.
    assert_ne!(e["nodes"][0], v["fault"]["faults"][0]["nodes"][0], "{e}");
    let text = stderr(&out);
    assert!(
        text.contains("Fault 2: partition-follower for 1.00 s at ")
            && text.contains(" (after waiting "),
        "{text}"
    );
}

/// The replicas read back agree: one per node, the leader among them, each with the same
/// state as the leader's, read from the node itself; nothing divergent.
fn check_replicas_agree(out: &std::process::Output, v: &Value) {
    let d = &v["durability"];
    let replicas = d["replicas"].as_array().unwrap_or_else(|| panic!("{d}"));
    let nodes: Vec<&str> = replicas
        .iter()
        .map(|r| r["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["msgbench-0", "msgbench-1", "msgbench-2"], "{d}");
    let leaders: Vec<&Value> = replicas.iter().filter(|r| r["leader"] == true).collect();
    assert_eq!(leaders.len(), 1, "{d}");
    for r in replicas {
        for k in ["last_seq", "first_seq", "messages", "num_deleted"] {
            assert_eq!(r[k], leaders[0][k], "{k}: {d}");
        }
    }
    // Every acknowledged write is at or below the last sequence each replica holds.
    assert!(
        u(&leaders[0]["last_seq"]) >= u(&v["jetstream"]["acked"]),
        "{d}"
    );
    assert_eq!(d["divergent"], serde_json::json!([]), "{d}");
    assert!(d["replicas_not_read"].is_null(), "{d}");
    // Every copy read message by message, each holding as many messages as the stream (as
    // STREAM.INFO counted them), none differing.
    let stream_messages = u(&v["jetstream"]["streams"][0]["after"]["messages"]);
    assert!(stream_messages > 0, "{v}");
    for r in replicas {
        assert_eq!(
            r["messages_compared"].as_u64(),
            Some(stream_messages),
            "{d}"
        );
        assert!(r["not_read"].is_null(), "{d}");
    }
    assert_eq!(u(&d["divergent_count"]), 0, "{d}");
    assert!(positive(&d["messages_read_ns"]), "{d}");
    let text = stderr(out);
    assert!(
        text.contains("Replicas: 3 read back, each as its leader has it")
            && text.contains("; 3 read message by message ("),
        "{text}"
    );
}

#[test]
fn with_no_fault_every_replica_is_read_back_and_agrees_with_the_leader() {
    let _one = one_cluster();
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--cluster",
        "3",
        "--replicas",
        "3",
        "--storage",
        "file",
        "--rate",
        "500",
        "--duration",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(u(&v["durability"]["lost"]), 0);
    check_replicas_agree(&out, &v);
}

#[test]
fn one_replica_or_one_server_reads_no_replica_back_and_says_why() {
    let _one = one_cluster();
    for (args, why) in [
        (vec!["--cluster", "3", "--replicas", "1"], "one replica"),
        (vec![], "one server"),
    ] {
        let mut all = vec!["js", "pub", "--rate", "200", "--duration", "500ms"];
        all.extend(args);
        let (out, v) = run_json(&all);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(schema_errors(&v), Vec::<String>::new());
        let d = &v["durability"];
        assert!(d["replicas"].is_null() && d["divergent"].is_null(), "{d}");
        assert!(
            d["replicas_not_read"].as_str().unwrap().contains(why),
            "{d}"
        );
        // One copy: no replica to speak of in the text.
        assert!(!stderr(&out).contains("Replicas:"), "{}", stderr(&out));
    }
}

#[test]
fn restarting_a_follower_leaves_the_leader_in_place() {
    let (out, v) = js_pub_with("restart-follower@1s:500ms", "3s");
    check_common(&out, &v, 1);
    // Read back after the restarted follower caught up.
    check_replicas_agree(&out, &v);
    let e = &v["fault"]["faults"][0];
    assert_ne!(e["nodes"][0], e["leader_before"], "{e}");
    assert!(e["leader_before"].is_string(), "{e}");
    // Restarted: listening again after it was killed.
    assert!(u(&e["undone_at_ns"]) > u(&e["injected_at_ns"]), "{e}");
    assert!(positive(&e["leader_answered_ns"]), "{e}");
}

#[test]
fn a_follower_killed_for_good_is_listed_unread_and_not_called_divergent() {
    let (out, v) = js_pub_with("kill-follower@500ms", "2s");
    check_common(&out, &v, 1);
    let killed = v["fault"]["faults"][0]["nodes"][0].as_str().unwrap();
    let d = &v["durability"];
    let replicas = d["replicas"].as_array().unwrap();
    assert_eq!(replicas.len(), 3, "{d}");
    let leader = replicas.iter().find(|r| r["leader"] == true).unwrap();
    for r in replicas {
        if r["node"] == killed {
            // Down: it holds no answer, not a wrong one, and says why it was not read.
            assert!(r["last_seq"].is_null() && r["messages"].is_null(), "{d}");
            assert!(r["messages_compared"].is_null(), "{d}");
            assert!(r["not_read"].as_str().is_some_and(|w| !w.is_empty()), "{d}");
        } else {
            assert_eq!(r["last_seq"], leader["last_seq"], "{d}");
            assert_eq!(r["messages"], leader["messages"], "{d}");
            assert_eq!(r["messages_compared"], leader["messages"], "{d}");
            assert!(r["not_read"].is_null(), "{d}");
        }
    }
    assert_eq!(d["divergent"], serde_json::json!([]), "{d}");
    let text = stderr(&out);
    assert!(
        text.contains("Replicas: 2 read back, 1 could not be read, each as its leader has it"),
        "{text}"
    );
}

#[test]
fn pausing_the_leader_and_then_killing_and_restarting_it() {
    // A pause shorter than an election timeout: the leader keeps its role and acks resume
    // when it is thawed. Then the leader is killed, and `restart-leader` starts that node.
    // A fault aimed at the leader goes in once STREAM.INFO has named it, which on a saturated
    // machine took 0.8 s: the kill is 2 s after the thaw is due, so that the thawed leader's
    // acknowledgements come in before it (they took up to 1.6 s there). At 200 msgs/s the
    // leader's backlog after the thaw stays small enough for it to answer STREAM.INFO.
    let (out, v) = js_pub_at(
        "200",
        "pause-leader@500ms:500ms,kill-leader@3s,restart-leader@3500ms",
        "6s",
    );
    check_common(&out, &v, 3);
    let f = v["fault"]["faults"].as_array().unwrap();
    assert_eq!(f[0]["nodes"][0], f[0]["leader_before"], "{}", f[0]);
    assert!(
        u(&f[0]["undone_at_ns"]) > u(&f[0]["injected_at_ns"]),
        "{}",
        f[0]
    );
    assert!(positive(&f[0]["no_ack_ns"]), "{}", f[0]);
    assert_eq!(f[1]["nodes"][0], f[1]["leader_before"], "{}", f[1]);
    // The restart is of the node the kill took down, whoever leads by then.
    assert_eq!(f[2]["nodes"], f[1]["nodes"], "{}", f[2]);
    assert!(
        u(&f[2]["undone_at_ns"]) >= u(&f[2]["injected_at_ns"]),
        "{}",
        f[2]
    );
}

#[test]
fn faults_aimed_at_roles_are_refused_where_they_cannot_act() {
    for (args, needle) in [
        (
            vec!["js", "pub", "--fault", "kill-leader@1s"],
            "--cluster 3 or 5",
        ),
        (
            vec!["js", "pub", "--cluster", "2", "--fault", "kill-leader@1s"],
            "--cluster 3 or 5",
        ),
        (
            vec!["js", "pub", "--cluster", "3", "--fault", "kill@1s"],
            "name the role",
        ),
        (
            vec!["pubsub", "--cluster", "3", "--fault", "kill-leader@1s"],
            "`js pub` and `kv put`",
        ),
        (
            vec!["latency", "--fault", "kill@1s,restart@2s"],
            "`js pub` and `kv put`",
        ),
        (
            vec!["js", "pub", "--cluster", "3", "--fault", "kill-boss@1s"],
            "unknown target",
        ),
        (
            vec![
                "js",
                "pub",
                "--cluster",
                "3",
                "--fault",
                "kill-leader@2s,pause-follower@1s:1s",
            ],
            "time order",
        ),
        (
            vec![
                "js",
                "pub",
                "--cluster",
                "3",
                "--fault",
                "kill-leader@1s,restart-leader@2s:1s",
            ],
            "takes no HOLD",
        ),
        (
            vec![
                "js",
                "pub",
                "--cluster",
                "3",
                "--duration",
                "2s",
                "--fault",
                "kill-leader@1s,restart-leader@30s",
            ],
            "comes after the run's 2.00 s are over",
        ),
        (
            vec!["kv", "put", "--duration", "2s", "--fault", "restart@2s"],
            "comes after",
        ),
    ] {
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--fault") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn kv_put_finds_its_buckets_leader_and_a_memory_bucket_restarted_is_reported_lost() {
    let _one = one_cluster();
    // A bucket has one replica in memory: restarting the node that leads it loses what it had
    // acknowledged, which the verdict must catch.
    let (out, v) = run_json(&[
        "kv",
        "put",
        "--cluster",
        "3",
        "--reconnect",
        "--duration",
        "2s",
        "--fault",
        "restart-leader@1s:200ms",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let e = &v["fault"]["faults"][0];
    assert!(e["injected_at_ns"].as_u64().is_some(), "{e}");
    assert_eq!(e["nodes"][0], e["leader_before"], "{e}");
    assert!(u(&v["durability"]["lost"]) > 0, "{}", v["durability"]);
}

#[test]
fn kv_put_with_replicas_makes_a_replicated_bucket_whose_leader_can_die_without_loss() {
    // The "js pub (and kv put) with --replicas": an R3 file bucket keeps every
    // acknowledged put through a kill of its leader, and its replicas are read back.
    let (out, v) = run_json(&[
        "kv",
        "put",
        "--cluster",
        "3",
        "--replicas",
        "3",
        "--storage",
        "file",
        "--server-config",
        "sync_interval=always",
        "--reconnect",
        "--duration",
        "12s",
        "--fault",
        "kill-leader@1s",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(
        v["params"]["streams"][0]["num_replicas"], 3,
        "{}",
        v["params"]
    );
    let e = &v["fault"]["faults"][0];
    assert_eq!(e["nodes"][0], e["leader_before"], "{e}");
    let d = &v["durability"];
    assert_eq!(d["lost"], 0, "{d}");
    assert!(u(&d["ok"]) > 0, "{d}");
    // The killed node is listed unread; the two that live hold a copy each.
    let read = d["replicas"].as_array().expect("replicas read back");
    assert_eq!(read.len(), 3, "{d}");
    assert_eq!(d["divergent"], serde_json::json!([]), "{d}");
}

#[test]
fn kv_replicas_outside_one_to_five_are_refused_naming_the_flag() {
    for (args, want) in [
        (&["--replicas", "0"][..], "--replicas"),
        (&["--replicas", "6"][..], "--replicas"),
        (
            &["--replicas", "3", "--storage", "file", "--persist", "async"][..],
            "--persist",
        ),
    ] {
        let mut all = vec!["kv", "put", "--msgs", "1"];
        all.extend_from_slice(args);
        let out = run(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn a_list_of_faults_on_the_one_server_reports_each_without_a_leader_to_look_for() {
    // How long acknowledgements stopped needs one after each fault: the run goes on for
    // seconds after the last, which a machine so busy that the server acknowledges a second
    // late (as one run with both cores spun showed) still leaves room for.
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--storage",
        "file",
        "--reconnect",
        "--rate",
        "500",
        "--duration",
        "6s",
        "--fault",
        "restart@500ms:200ms,pause@2500ms:200ms",
    ]);
    check_common(&out, &v, 2);
    for e in v["fault"]["faults"].as_array().unwrap() {
        assert_eq!(e["nodes"][0], "server", "{e}");
        assert!(u(&e["undone_at_ns"]) > u(&e["injected_at_ns"]), "{e}");
        assert!(positive(&e["no_ack_ns"]), "{e}");
        assert!(e["leader_answered_ns"].is_null(), "{e}");
    }
}
