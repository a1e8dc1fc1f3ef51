//! JetStream runs while someone else acts on the server behind msgbench's back. A server that
//! is killed (SIGKILL) and started again on the same port and storage: `js pub`, `kv put` and
//! `js consume` with `--reconnect` must carry on after the restart, reconcile with the stream
//! through an API connection dialled anew, and write their result. Where the stream did not
//! survive (memory storage), every acknowledged message is reported lost, and the publishes
//! refused after it are not. Acknowledged messages deleted mid-run are reported lost, each.
//!
//! The restart comes once the stream holds some messages (read through the API, not after a
//! fixed sleep), so the tests do not depend on how fast this machine is.

use std::process::{Child, Output};
use std::time::{Duration, Instant};

use crate::support::{self, schema_errors, scratch_dir, spawn_piped, stderr, TestServer};
use serde_json::Value;

/// Waits until `stream` holds at least `n` messages; returns how many it held then.
fn wait_for_messages(url: &str, stream: &str, n: u64, child: &mut Child) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(m) = support::stream_messages(url, stream).filter(|m| *m >= n) {
            return m;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "msgbench ended before the stream held {n} messages"
        );
        assert!(
            Instant::now() < deadline,
            "the stream never held {n} messages"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for msgbench to end by itself (it is bounded by its own duration and timeouts; this
/// limit only keeps a hung run from hanging the suite).
fn finish(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("msgbench did not end within 120 s of its start");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Runs `args` against `s`, restarts the server once `stream` holds `at` messages, and returns
/// msgbench's output, its result and the messages the stream held at the restart.
fn across_restart(s: &TestServer, args: &[&str], stream: &str, at: u64) -> (Output, Value, u64) {
    let dir = scratch_dir("js-restart");
    let json = dir.join("result.json");
    let mut all = args.to_vec();
    all.extend([
        "--server",
        &s.url,
        "--reconnect",
        "--no-progress",
        "--json",
        json.to_str().unwrap(),
    ]);
    let mut child = spawn_piped(&all);
    let held = wait_for_messages(&s.url, stream, at, &mut child);
    s.restart();
    let out = finish(child);
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "no result was written ({e}); status {:?}; stderr: {}",
            out.status,
            stderr(&out)
        )
    });
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    (out, v, held)
}

fn u(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} is not a count in {v}"))
}

#[test]
fn js_pub_goes_on_after_a_restart_and_reconciles_with_the_stream_that_survived() {
    let s = TestServer::start();
    let (out, v, held) = across_restart(
        &s,
        &[
            "js",
            "pub",
            "--mode",
            "async",
            "--rate",
            "2000",
            // A count, not a duration: whatever a busy machine spent before the restart, the
            // publishing after it is the rest of the 8,000.
            "--msgs",
            "8000",
            "--storage",
            "file",
        ],
        "msgbench",
        300,
    );
    let st = &v["jetstream"]["streams"][0];
    assert!(st["unread"].is_null(), "{st}");
    // Publishing went on after the restart, and the stream read afterwards holds it.
    let acked = u(&v, "/jetstream/acked");
    assert!(acked > held + 1000, "acked {acked}, {held} at the restart");
    assert!(u(st, "/after/last_seq") >= acked, "{st}");
    assert_eq!(u(&v, "/connections/reconnects"), 1, "{}", stderr(&out));
    // What the run says of itself agrees: an acknowledgement the delivery count left out came
    // late, for a publish the run counted as timed out or lost in flight.
    let received = u(&v, "/delivery/received");
    let late_at_most = ["request_timeout", "lost_in_flight"]
        .iter()
        .map(|k| v["errors"][*k].as_u64().unwrap_or(0))
        .sum::<u64>();
    assert!(
        received <= acked && acked - received <= late_at_most,
        "acked {acked}, received {received}, errors {}",
        v["errors"]
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("JetStream: stream msgbench (file"));
}

#[test]
fn a_memory_stream_lost_with_the_restart_still_gives_a_result_that_says_why() {
    let s = TestServer::start();
    let (out, v, _) = across_restart(
        &s,
        &[
            "js", "pub", "--mode", "async", "--rate", "2000",
            // A count, not a duration: on a busy machine the first 300 messages can take most
            // of a few seconds, and a run that ends before its connection is back exits 5.
            "--msgs", "6000",
        ],
        "msgbench",
        300,
    );
    // Not reconciled, and why; what was measured is all there.
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}; failure {}, errors {}, connections {}",
        stderr(&out),
        v["failure"],
        v["errors"],
        v["connections"]
    );
    let js = &v["jetstream"];
    assert_eq!(js["reconciled"], false);
    assert!(
        js["stored"].is_null() && js["unacked_stored"].is_null(),
        "{js}"
    );
    let st = &js["streams"][0];
    assert!(st["after"].is_null(), "{st}");
    let why = st["unread"].as_str().unwrap();
    assert!(
        why.contains("stream not found") && why.contains("memory stream"),
        "{why}"
    );
    assert!(u(&v, "/jetstream/acked") >= 300);
    // After the restart no stream captured the subject: those publishes had no responder.
    assert!(u(&v, "/errors/no_responders") > 0, "{}", v["errors"]);
    // The verdict: everything acknowledged is gone with the stream, exactly that many lost;
    // the publishes refused after the restart are refused, not lost.
    let d = &v["durability"];
    assert_eq!(u(d, "/lost"), u(&v, "/jetstream/acked"), "{d}");
    assert_eq!(u(d, "/ok"), 0, "{d}");
    assert_eq!(
        d["refused"]["no_responders"], v["errors"]["no_responders"],
        "{d}"
    );
    assert_eq!(
        u(d, "/sent"),
        u(&v, "/jetstream/acked") + u(d, "/refused/no_responders") + u(d, "/unanswered"),
        "{d}"
    );
    assert_eq!(u(&v, "/delivery/lost"), u(d, "/lost"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("could not be read after the run") && text.contains("memory stream"),
        "{text}"
    );
    assert!(text.contains("!! LOST: "), "{text}");
}

#[test]
fn acknowledged_messages_deleted_behind_the_runs_back_are_each_reported_lost() {
    let s = TestServer::start();
    let dir = scratch_dir("js-deleted");
    let json = dir.join("result.json");
    let mut child = spawn_piped(&[
        "js",
        "pub",
        "--mode",
        "async",
        "--rate",
        "2000",
        "--duration",
        "3s",
        "--stream",
        "behind",
        "--subject",
        "behind.x",
        "--server",
        &s.url,
        "--no-progress",
        "--json",
        json.to_str().unwrap(),
    ]);
    wait_for_messages(&s.url, "behind", 500, &mut child);
    for seq in [5, 17, 400] {
        let reply = support::raw_request(
            &s.url,
            "$JS.API.STREAM.MSG.DELETE.behind",
            &format!("{{\"seq\":{seq}}}"),
        );
        assert!(reply.contains("\"success\":true"), "{reply}");
    }
    let out = finish(child);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let d = &v["durability"];
    assert_eq!(u(d, "/lost"), 3, "{d}");
    assert_eq!(d["lost_seqs"], serde_json::json!([5, 17, 400]), "{d}");
    assert_eq!(u(d, "/ok") + 3, u(&v, "/jetstream/acked"), "{d}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "!! LOST: 3 acknowledged messages are not in the stream (first: 5, 17, 400); by place: \
             lost-prefix 0, lost-middle 3, lost-postfix 0 !!"
        ),
        "{text}"
    );
}

#[test]
fn kv_put_goes_on_after_a_restart() {
    let s = TestServer::start();
    let (out, v, held) = across_restart(
        &s,
        // A count, not a duration: on a busy machine the first 300 puts can take most of a
        // few seconds, leaving too few to go on with after the restart (issue 42).
        &["kv", "put", "--msgs", "3000", "--storage", "file"],
        "KV_msgbench",
        300,
    );
    let st = &v["jetstream"]["streams"][0];
    assert!(st["unread"].is_null(), "{st}");
    assert_eq!(st["name"], "KV_msgbench");
    // The bucket keeps one value per key: the stream's last sequence counts the puts.
    let acked = u(&v, "/jetstream/acked");
    assert!(acked > held + 100, "acked {acked}, {held} at the restart");
    assert!(u(st, "/after/last_seq") >= acked, "{st}");
    assert_eq!(u(&v, "/connections/reconnects"), 1, "{}", stderr(&out));
}

#[test]
fn js_consume_pulls_again_after_a_restart() {
    let s = TestServer::start();
    let (out, v, held) = across_restart(
        &s,
        &[
            "js",
            "consume",
            "--publish",
            "live",
            "--rate",
            "2000",
            "--msgs",
            "8000",
            "--storage",
            "file",
        ],
        "msgbench",
        300,
    );
    let c = &v["consumer"];
    // Consuming did not stop with the connection it lost: it went on to the end of what was
    // published (a crash may cost some messages, or deliver some twice; nearly all arrive).
    assert_ne!(c["ended"], "idle", "{c}\n{}", stderr(&out));
    let (consumed, expected) = (u(c, "/consumed"), u(c, "/expected"));
    assert!(
        consumed > held + 1000 && consumed * 10 >= expected * 9,
        "consumed {consumed} of {expected}, {held} stored at the restart"
    );
    assert!(v["jetstream"]["streams"][0]["unread"].is_null());
    // The publisher's connection and the consumer's were both replaced, and both are counted.
    assert_eq!(u(&v, "/connections/reconnects"), 2, "{}", v["connections"]);
}
