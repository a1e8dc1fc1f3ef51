//! One publish, one fate, in every section of a JetStream run's output: an acknowledgement
//! that came after `--timeout` is timed and counted as acknowledged everywhere; a publish
//! answered as a duplicate is its own class, not "unanswered"; the headline rate covers the
//! span the run published over; a write stored without its acknowledgement is allowed when the
//! run saw why (its acknowledgement went down with a connection), and fails the run when
//! nothing the run saw explains it (a message another client stored in the stream).
//!
//! Acknowledgements are lost on purpose by a relay between msgbench and the server that, once
//! told, forwards msgbench's publishes but swallows the server's answers, then resets the
//! connection: the server stored the publishes, and msgbench never heard so.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{
    self, grouped, run_json, schema_errors, scratch_dir, spawn_piped, stderr, u, wait_for_tick,
    TestServer,
};

/// A TCP relay to a server: it forwards both ways until told to swallow what the server sends
/// on the connections open then, and it resets every connection open when told.
struct Relay {
    port: u16,
    generation: Arc<AtomicU64>,
    /// The generation whose server-to-client bytes are dropped (`u64::MAX`: none).
    swallowed: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let generation = Arc::new(AtomicU64::new(0));
        let swallowed = Arc::new(AtomicU64::new(u64::MAX));
        let stop = Arc::new(AtomicBool::new(false));
        let (g, sw, st) = (generation.clone(), swallowed.clone(), stop.clone());
        std::thread::spawn(move || {
            let until = Instant::now() + support::HANG;
            while !st.load(Ordering::Relaxed) && Instant::now() < until {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                client.set_nonblocking(false).unwrap();
                let server = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
                let mine = g.load(Ordering::Acquire);
                let pumps = [
                    (
                        client.try_clone().unwrap(),
                        server.try_clone().unwrap(),
                        None,
                    ),
                    (server, client, Some(sw.clone())),
                ];
                for (from, to, swallow) in pumps {
                    let (g, st) = (g.clone(), st.clone());
                    std::thread::spawn(move || pump(from, to, mine, &g, swallow.as_deref(), &st));
                }
            }
        });
        Relay {
            port,
            generation,
            swallowed,
            stop,
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// From now on, what the server sends on the connections open now is dropped.
    fn swallow(&self) {
        let now = self.generation.load(Ordering::Acquire);
        self.swallowed.store(now, Ordering::Release);
    }

    /// Resets every connection open now; new ones are relayed as usual.
    fn reset_all(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Copies one way until the relay's generation moves on (both sockets then close, the other
/// pump's write fails, and the client sees its connection go) or the relay stops. With
/// `swallow` at this connection's generation, what is read is dropped.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    mine: u64,
    g: &AtomicU64,
    swallow: Option<&AtomicU64>,
    stop: &AtomicBool,
) {
    from.set_read_timeout(Some(Duration::from_millis(10)))
        .unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    while g.load(Ordering::Acquire) == mine && !stop.load(Ordering::Relaxed) {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(_) if swallow.is_some_and(|s| s.load(Ordering::Acquire) == mine) => {}
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = from.shutdown(std::net::Shutdown::Both);
    let _ = to.shutdown(std::net::Shutdown::Both);
}

/// Waits for msgbench to end by itself (bounded by its duration and timeouts; this limit only
/// keeps a hung run from hanging the suite).
fn finish(mut child: Child) -> Output {
    let deadline = Instant::now() + support::HANG;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("msgbench did not end within {:?}", support::HANG);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Waits until `stream` on the server at `url` holds at least `n` messages.
fn wait_for_messages(url: &str, stream: &str, n: u64, child: &mut Child) {
    let deadline = Instant::now() + support::HANG;
    while support::stream_messages(url, stream).is_none_or(|m| m < n) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "msgbench ended before the stream held {n} messages"
        );
        assert!(
            Instant::now() < deadline,
            "the stream never held {n} messages"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A `js pub` through a relay to `s` whose answers are swallowed once publishing is under way,
/// until the stream holds 100 more messages than it did; then the connections are reset and
/// msgbench reconnects. With `plant`, a message of another client is stored in the stream
/// while the answers are swallowed. Returns the output, the result and the text.
fn acks_lost_with_the_connection(s: &TestServer, stream: &str, plant: bool) -> (Output, Value) {
    let relay = Relay::start(s.url.rsplit(':').next().unwrap().parse().unwrap());
    let dir = scratch_dir("fates");
    let (ticks, json) = (dir.join("ticks.jsonl"), dir.join("result.json"));
    let subject = format!("{stream}.x");
    let mut child = spawn_piped(&[
        "js",
        "pub",
        "--server",
        &relay.url(),
        "--mode",
        "async",
        "--rate",
        "1000",
        "--duration",
        "4s",
        "--reconnect",
        "--stream",
        stream,
        "--subject",
        &subject,
        "--no-progress",
        "--stream-stats",
        ticks.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    // Once acknowledgements come, they stop coming; the publishes go on being stored.
    wait_for_tick(&ticks, &mut child, |t| {
        support::tick_f(t, "received_per_sec") > 0.0
    });
    let held = support::stream_messages(&s.url, stream).expect("the stream is there");
    relay.swallow();
    if plant {
        support::publish_raw(&s.url, &subject, b"planted by another client");
    }
    wait_for_messages(&s.url, stream, held + 100, &mut child);
    relay.reset_all();
    let out = finish(child);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!("no result ({e}): {}", stderr(&out));
    }))
    .unwrap();
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    (out, v)
}

/// The HTML report's "JetStream acks" row for the result `v`, drawn from its file as a user
/// would: the verdict it shows must be the one the run exited with.
fn acks_row(v: &Value) -> String {
    let dir = scratch_dir("fates-report");
    let json = dir.join("result.json");
    std::fs::write(&json, v.to_string()).unwrap();
    let page = support::report_page(&json);
    let start = page
        .find("<th scope=\"row\">JetStream acks</th>")
        .expect("the report has a JetStream acks row");
    page[start..start + page[start..].find("</tr>").unwrap()].to_string()
}

#[test]
fn writes_stored_without_an_acknowledgement_lost_with_the_connection_are_explained_and_pass() {
    // The user's own server, no fault injected by msgbench: what explains the writes is what
    // the run itself saw, publishes lost in flight with a connection.
    let s = TestServer::start();
    let (out, v) = acks_lost_with_the_connection(&s, "lostacks", false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let d = &v["durability"];
    let indeterminate = u(&d["indeterminate"]);
    assert!(
        indeterminate > 0,
        "the relay swallowed acknowledgements: {d}"
    );
    assert_eq!(u(&d["lost"]), 0, "{d}");
    let why = &d["explained"];
    assert_eq!(u(&why["unexplained"]), 0, "{why}");
    assert_eq!(
        why["by"], "message",
        "each stored write was read and matched: {why}"
    );
    let by_cause: u64 = why["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| u(&c["stored"]))
        .sum();
    assert_eq!(by_cause, indeterminate, "{why}");
    assert!(u(&v["errors"]["lost_in_flight"]) > 0, "{}", v["errors"]);
    // The text says what explained them, and no failure banner stands beside exit 0.
    assert!(!text.contains("!!"), "{text}");
    assert!(
        text.contains("stored without an acknowledgement, all among the "),
        "{text}"
    );
    assert!(text.contains("lost in flight"), "{text}");
    // The file carries the run's judgement, and the report shows it: allowed, not "not
    // reconciled" beside exit 0.
    assert_eq!(v["jetstream"]["reconciled"], false, "{}", v["jetstream"]);
    assert_eq!(
        v["jetstream"]["unacked_allowed"], true,
        "{}",
        v["jetstream"]
    );
    let row = acks_row(&v);
    assert!(
        row.contains(&format!(
            "({} without an acknowledgement), <span class=\"pass\">✓ explained, allowed</span>",
            grouped(u(&v["jetstream"]["unacked_stored"]))
        )),
        "{row}"
    );
}

#[test]
fn a_write_another_client_stored_during_the_run_is_unexplained_and_fails_it() {
    // The same run, with one message more in the stream that no publish of this run made: the
    // writes msgbench's own lost acknowledgements explain do not cover it, however many.
    let s = TestServer::start();
    let (out, v) = acks_lost_with_the_connection(&s, "planted", true);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}");
    let why = &v["durability"]["explained"];
    assert_eq!(u(&why["unexplained"]), 1, "{why}");
    assert_eq!(
        why["unexplained_seqs"].as_array().unwrap().len(),
        1,
        "{why}"
    );
    assert!(
        u(&v["durability"]["indeterminate"]) > 1,
        "msgbench's own lost acknowledgements are there too: {}",
        v["durability"]
    );
    assert!(text.contains("!! NOT RECONCILED"), "{text}");
    assert!(text.contains("no publish of this run"), "{text}");
    assert_eq!(
        v["jetstream"]["unacked_allowed"], false,
        "{}",
        v["jetstream"]
    );
    let row = acks_row(&v);
    assert!(
        row.contains("<span class=\"fail\">✗ not reconciled</span>"),
        "{row}"
    );
}

#[test]
fn an_acknowledgement_after_the_timeout_is_timed_and_counted_once_everywhere() {
    // The server is frozen for five timeouts: publishes go on into its socket, time out, and
    // are all answered once it thaws. Each is acknowledged, once, in every section.
    let s = TestServer::start();
    let dir = scratch_dir("late");
    let (ticks, json) = (dir.join("ticks.jsonl"), dir.join("result.json"));
    let mut child = spawn_piped(&[
        "js",
        "pub",
        "--server",
        &s.url,
        "--mode",
        "async",
        "--rate",
        "500",
        "--duration",
        "4s",
        "--timeout",
        "300ms",
        "--stream",
        "late",
        "--subject",
        "late.x",
        "--no-progress",
        "--stream-stats",
        ticks.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    wait_for_tick(&ticks, &mut child, |t| {
        support::tick_f(t, "received_per_sec") > 0.0
    });
    s.freeze(true);
    std::thread::sleep(Duration::from_millis(1500));
    s.freeze(false);
    let out = finish(child);
    let text = stdout(&out);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(out.status.code(), Some(0), "{text}");
    // Some acknowledgement took longer than --timeout, and it is in the histogram.
    assert!(
        u(&v["latency"]["max_ns"]) >= 300_000_000,
        "no acknowledgement came late: {}",
        v["latency"]
    );
    let acked = u(&v["jetstream"]["acked"]);
    let timed = u(&v["latency"]["count"]);
    let acks_line = u(&v["by_role"]["sub"]["msgs"]);
    assert_eq!((timed, acks_line), (acked, acked), "{text}");
    assert_eq!(u(&v["durability"]["ok"]), acked);
    // Every publish has one fate: acknowledged, or given up on by why.
    let errors = &v["errors"];
    let given_up: u64 = ["request_timeout", "lost_in_flight"]
        .iter()
        .map(|k| errors[*k].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(acked + given_up, u(&v["delivery"]["sent"]), "{errors}");
    // The latency heading counts what the Acks line counts.
    let heading = text.lines().find(|l| l.starts_with("Latency")).unwrap();
    assert!(heading.contains(&format!(" {} ", grouped(acked))), "{text}");
    assert!(
        text.contains(" Acks: ") && text.contains(&format!("~ {} msgs in", grouped(acked))),
        "{text}"
    );
}

#[test]
fn publishes_answered_as_duplicates_are_their_own_class() {
    let s = TestServer::start();
    let args = [
        "js",
        "pub",
        "--server",
        &s.url,
        "--dedup",
        "--msg-id-prefix",
        "twice",
        "--msgs",
        "2000",
        "--stream",
        "twice",
        "--subject",
        "twice.x",
    ];
    let (first, _) = run_json(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    let (second, v) = run_json(&args);
    let text = stderr(&second);
    assert!(second.status.success(), "{text}");
    let d = &v["durability"];
    assert_eq!(u(&d["deduplicated"]), 2000, "{d}");
    assert_eq!(u(&d["unanswered"]), 0, "they were answered: {d}");
    assert!(
        text.contains("2,000 acknowledged as duplicates") && !text.contains("unanswered"),
        "{text}"
    );
}

#[test]
fn the_headline_rate_covers_the_span_the_run_published_over() {
    // A stream that refuses most publishes: the last acknowledgement comes early, and a rate
    // over the acknowledged span alone would overstate how fast the stream stored.
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--server",
        &s.url,
        "--mode",
        "sync",
        "--msgs",
        "2000",
        "--max-bytes",
        "64KiB",
        "--discard",
        "new",
        "--stream",
        "full3",
        "--subject",
        "full3.x",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (head, publishes) = (&v["throughput"], &v["by_role"]["pub"]);
    let acked = u(&v["jetstream"]["acked"]);
    assert!(acked < 2000, "the stream refused some: {}", v["jetstream"]);
    assert_eq!(u(&head["msgs"]), acked);
    let (head_s, pub_s) = (
        head["seconds"].as_f64().unwrap(),
        publishes["seconds"].as_f64().unwrap(),
    );
    assert!(
        head_s >= pub_s,
        "the headline's {head_s} s must cover the publishing's {pub_s} s"
    );
    assert!(head["msgs_per_sec"].as_f64().unwrap() <= acked as f64 / pub_s);
}

/// The text output, which goes to stdout when the result goes to a file.
fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(out)
}
