//! `js pub --mode fast` (fast batch publishing) against a real nats-server: a million messages
//! reconciled with the stream sequence by sequence on memory and file storage, a batch cut in
//! the middle by a dropped connection counted rather than hidden, and the flags it refuses.
//! The refusal of a server below JetStream API level 4 is in `hostile.rs` (a faked server: the
//! pinned nats-server cannot be made to report a lower level).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use crate::support::{run, run_json, schema_errors, stderr, u, TestServer};
use serde_json::Value;

/// The checks every fast run must pass: the result is valid, and every message is either
/// acknowledged (and then stored at a sequence acknowledged once) or counted as an error.
fn assert_accounted(v: &Value, sent: u64) {
    assert_eq!(schema_errors(v), Vec::<String>::new());
    let d = &v["delivery"];
    assert_eq!(u(&d["sent"]), sent, "{d}");
    let js = &v["jetstream"];
    assert_eq!(js["reconciled"], true, "{js}");
    assert_eq!(js["mode"], "fast");
    assert_eq!(u(&js["acked"]), u(&d["received"]), "{js} {d}");
    assert_eq!(u(&js["stored"]), u(&js["acked"]), "{js}");
    assert_eq!(u(&js["unacked_stored"]), 0, "{js}");
    assert_eq!(u(&js["duplicate_acks"]), 0, "{js}");
    assert_eq!(
        u(&v["latency"]["count"]),
        u(&d["received"]),
        "one latency per acknowledged message"
    );
}

#[test]
fn a_million_fast_batch_messages_reconcile_exactly_on_memory_and_file() {
    let s = TestServer::start();
    for storage in ["memory", "file"] {
        let (out, v) = run_json(&[
            "js",
            "pub",
            "--server",
            &s.url,
            "--mode",
            "fast",
            "--batch",
            "500",
            "--max-outstanding-acks",
            "2",
            "--msgs",
            "1000000",
            "--size",
            "64",
            "--storage",
            storage,
            "--stream",
            storage,
            "--subject",
            &format!("fast.{storage}"),
        ]);
        assert!(out.status.success(), "{storage}: {}", stderr(&out));
        assert_accounted(&v, 1_000_000);
        assert_eq!(u(&v["delivery"]["lost"]), 0);
        let js = &v["jetstream"];
        assert_eq!(u(&js["acked"]), 1_000_000, "{js}");
        assert_eq!(u(&js["streams"][0]["after"]["messages"]), 1_000_000, "{js}");
        assert_eq!(u(&js["streams"][0]["after"]["last_seq"]), 1_000_000, "{js}");
        assert_eq!(v["params"]["batch"], 500);
        assert_eq!(v["params"]["max_outstanding_acks"], 2);
        assert_eq!(v["params"]["streams"][0]["allow_batched"], true);
        assert_eq!(u(&v["throughput"]["bytes"]), 64_000_000);
        assert_eq!(v["errors"], serde_json::json!({}), "{storage}");
    }
}

#[test]
fn publishers_on_their_own_streams_each_reconcile() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--server",
        &s.url,
        "--mode",
        "fast",
        "--batch",
        "50",
        "--clients",
        "3",
        "--streams",
        "3",
        "--msgs",
        "5003",
        "--stream",
        "spread",
        "--subject",
        "spread",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_accounted(&v, 3 * 5003);
    for k in 0..3 {
        let st = &v["jetstream"]["streams"][k];
        assert_eq!(u(&st["after"]["messages"]), 5003, "{st}");
    }
}

/// A loopback proxy to `server` that, once one connection has carried `cut_after` bytes from
/// the client, drops the chunk it just read and ends that connection: the client sees its
/// connection closed by the peer and dials again (through the proxy, which now only relays).
/// The client's writes into the dead connection still succeed (the proxy reads and discards
/// them until the client closes it), so what ends the link is the client's reader, as when a
/// server goes away.
struct CuttingProxy {
    url: String,
    cut: Arc<AtomicBool>,
}

impl CuttingProxy {
    fn start(server: &str, cut_after: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("nats://{}", listener.local_addr().unwrap());
        let upstream = server.trim_start_matches("nats://").to_string();
        let cut = Arc::new(AtomicBool::new(false));
        let cut_flag = cut.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(&upstream) else {
                    return;
                };
                let cut = cut_flag.clone();
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                // Server to client: relayed until the server side ends, then the client is
                // told the connection is over.
                thread::spawn(move || {
                    let (mut from, mut to) = (s2, c2);
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 || to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = to.shutdown(Shutdown::Write);
                });
                thread::spawn(move || {
                    let (mut from, mut to) = (client, server);
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut carried = 0usize;
                    let mut relaying = true;
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        carried += n;
                        if relaying && carried > cut_after && !cut.swap(true, Ordering::SeqCst) {
                            // These bytes never reach the server.
                            relaying = false;
                            let _ = to.shutdown(Shutdown::Both);
                        }
                        if relaying && to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        });
        CuttingProxy { url, cut }
    }
}

#[test]
fn a_batch_cut_by_a_dropped_connection_is_counted_not_hidden() {
    let s = TestServer::start();
    // 200,000 messages of 128 B are some 45 MB on the wire: the cut at 4 MB is mid-run, and
    // the chunk it drops holds messages the server never sees.
    let proxy = CuttingProxy::start(&s.url, 4 << 20);
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--server",
        &proxy.url,
        "--reconnect",
        "--mode",
        "fast",
        "--batch",
        "100",
        "--msgs",
        "200000",
        "--stream",
        "cut",
        "--subject",
        "cut.x",
    ]);
    assert!(
        proxy.cut.load(Ordering::SeqCst),
        "the proxy cut no connection"
    );
    // Nothing acknowledged went missing, so the run passes; what the cut took is counted.
    assert!(out.status.success(), "{}", stderr(&out));
    assert_accounted(&v, 200_000);
    let d = &v["durability"];
    let cut = u(&d["unanswered"]);
    assert!(cut > 0, "the dropped chunk's messages are counted: {d}");
    // Every message not acknowledged is counted by why: in flight when the connection went.
    assert_eq!(u(&v["errors"]["lost_in_flight"]), cut, "{}", v["errors"]);
    assert_eq!(u(&d["lost"]), 0, "{d}");
    assert_eq!(u(&d["ok"]) + cut, 200_000, "{d}");
    let st = &v["jetstream"]["streams"][0];
    assert_eq!(u(&st["after"]["messages"]), 200_000 - cut, "{st}");
    assert!(
        stderr(&out).contains("not acknowledged: unanswered"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn fast_mode_bad_input_names_the_flag() {
    for (args, needle) in [
        (&["--batch", "501"][..], "--batch"),
        (&["--batch", "0"][..], "--batch"),
        (
            &["--max-outstanding-acks", "0"][..],
            "--max-outstanding-acks",
        ),
        (&["--max-in-flight", "8"][..], "--max-in-flight"),
        (&["--clients", "2"][..], "--clients"),
        (&["--dedup"][..], "--dedup"),
        (&["--rate", "1000"][..], "--rate"),
    ] {
        let mut all = vec!["js", "pub", "--mode", "fast"];
        all.extend_from_slice(args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let out = run(&[
        "js",
        "pub",
        "--mode",
        "async",
        "--max-outstanding-acks",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--max-outstanding-acks"),
        "{}",
        stderr(&out)
    );
}
