//! Writes are batched on every path that answers messages: a JetStream consumer's acks and pull
//! requests, and a responder's replies, go out once per read, not once per message.
//!
//! The runs count their own write syscalls (`connections.writes` in the result), so these tests
//! judge the number of writes, never how long anything took. Each asserts writes far below the
//! messages handled (a twentieth); a path that went back to one write per message makes at least
//! as many writes as messages and fails by a wide margin, whatever the machine's speed.

use crate::support::{run_json, schema_errors, stderr, u, TestServer};

const MSGS: u64 = 100_000;

/// Stores `MSGS` messages in `stream` with a separate run, so the consuming run's writes are
/// the consumer's alone.
fn fill(url: &str, stream: &str) {
    let subject = format!("{stream}.x");
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--server",
        url,
        "--msgs",
        &MSGS.to_string(),
        "--size",
        "16",
        "--stream",
        stream,
        "--subject",
        &subject,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(u(&v["jetstream"]["acked"]), MSGS, "{}", v["jetstream"]);
}

/// Consumes everything `fill` stored and returns (messages consumed, writes made).
fn consume(url: &str, stream: &str, mode: &str, ack: &str) -> (u64, u64) {
    let (out, v) = run_json(&[
        "js",
        "consume",
        "--server",
        url,
        "--publish",
        "none",
        "--mode",
        mode,
        "--ack",
        ack,
        "--msgs",
        &MSGS.to_string(),
        "--stream",
        stream,
    ]);
    assert!(out.status.success(), "{mode}/{ack}: {}", stderr(&out));
    assert!(schema_errors(&v).is_empty(), "{:?}", schema_errors(&v));
    (
        u(&v["consumer"]["consumed"]),
        u(&v["connections"]["writes"]),
    )
}

#[test]
fn a_consumer_acks_and_pulls_with_one_write_per_read_not_per_message() {
    let s = TestServer::start();
    // Explicit acks are the path that once wrote each ack on its own; fetch sends a pull request
    // per batch on top; ack all and ordered are there so no mode slips back unnoticed.
    for (stream, mode, ack) in [
        ("explicit", "consume", "explicit"),
        ("fetched", "fetch", "explicit"),
        ("acked_all", "consume", "all"),
        ("ordered", "ordered", "none"),
    ] {
        fill(&s.url, stream);
        let (consumed, writes) = consume(&s.url, stream, mode, ack);
        assert_eq!(consumed, MSGS, "{mode}/{ack}");
        assert!(writes > 0, "{mode}/{ack}: the writes are counted");
        assert!(
            writes < consumed / 20,
            "{mode}/{ack}: {writes} writes for {consumed} messages: acks or pull requests are \
             written one by one instead of once per read"
        );
    }
}

#[test]
fn responders_reply_with_one_write_per_read_not_per_request() {
    let s = TestServer::start();
    // Pipelined requests arrive at the responder in bursts; each burst's replies are one write.
    // The requester's own writes are batched by the publish loop and count here too.
    let n = 20_000u64;
    let (out, v) = run_json(&[
        "request",
        "--server",
        &s.url,
        "--msgs",
        &n.to_string(),
        "--in-flight",
        "1000",
        "--responders",
        "1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(u(&v["throughput"]["msgs"]), n, "{}", v["throughput"]);
    let writes = u(&v["connections"]["writes"]);
    assert!(writes > 0, "the writes are counted");
    assert!(
        writes < n / 20,
        "{writes} writes for {n} requests and their replies: replies are written one by one"
    );
}
