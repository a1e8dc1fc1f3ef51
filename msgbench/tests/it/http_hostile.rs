//! Hostile HTTP clients on `--metrics-listen` and `--web` during a real run: 500 connections on
//! each port that send nothing or half a request and stay open. A scrape of `/metrics` and a
//! fetch of the page must still be answered within a second while they sit there, and the run
//! must not notice: its delivery reconciles exactly (every message sent was received once, no
//! error), and its final figures are still scraped and match its result.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::openmetrics::{self, Exposition};
use crate::support::{self, scratch_dir, spawn_piped, stderr_until, u, TestServer};
use serde_json::Value;

/// Connections per port: half silent, half with a request head cut off before its end.
const CROWD: usize = 500;
/// The messages of the run: at its rate, long enough for the crowd to arrive mid-run.
const MSGS: u64 = 4000;

/// Opens `CROWD` connections to `addr`; the odd ones send `half` and stop.
fn crowd(addr: &str, half: &str) -> Vec<TcpStream> {
    (0..CROWD)
        .map(|i| {
            let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connection {i}: {e}"));
            if i % 2 == 1 {
                // The server may already have closed an old one to make room: not a failure.
                let _ = s.write_all(half.as_bytes());
            }
            s
        })
        .collect()
}

/// `GET path` on a connection of its own: the status line and how long the answer took.
fn timed_get(addr: &str, path: &str) -> (String, Duration) {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    // Only a guard against a hang: the test asserts on the time taken.
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let took = t.elapsed();
    let head = String::from_utf8_lossy(&all);
    (head.lines().next().unwrap_or_default().to_string(), took)
}

/// The address printed after `prefix` on one of `lines`.
fn address(lines: &str, prefix: &str) -> String {
    lines
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix} line in {lines}"))
        .trim()
        .trim_end_matches("/metrics")
        .trim_end_matches('/')
        .to_string()
}

#[test]
fn five_hundred_idle_and_half_sent_clients_per_port_cost_a_scrape_and_the_run_nothing() {
    let server = TestServer::start();
    let dir = scratch_dir("http-hostile");
    let json = dir.join("r.json");
    let mut child = spawn_piped(&[
        "pubsub",
        "--server",
        &server.url,
        "--pubs",
        "1",
        "--subs",
        "1",
        "--rate",
        "500",
        "--msgs",
        &MSGS.to_string(),
        "--metrics-listen",
        "127.0.0.1:0",
        "--web",
        "127.0.0.1:0",
        "--no-progress",
        "--json",
        json.to_str().unwrap(),
    ]);
    let (seen, rest) = stderr_until(&mut child, "--web: the live page is on http://");
    let metrics = address(&seen, "--metrics-listen: http://");
    let web = address(&seen, "--web: the live page is on http://");

    // The run under way: a scrape with messages in it.
    let deadline = Instant::now() + support::HANG;
    loop {
        let body = openmetrics::scrape(&metrics).expect("the metrics port answers");
        let e = openmetrics::parse(&body).unwrap_or_else(|p| panic!("{p}\n{body}"));
        if e.get("msgbench_messages_total", &[("role", "sub")]) > Some(0.0) {
            break;
        }
        assert!(Instant::now() < deadline, "the run never got going");
        std::thread::sleep(Duration::from_millis(100));
    }

    let hostile_metrics = crowd(&metrics, "GET /metrics HTTP/1.1\r\nHost: x\r\n");
    let hostile_web = crowd(&web, "GET /events HTTP/1.1\r\nHost: x\r\n");
    for round in 0..3 {
        let (status, took) = timed_get(&metrics, "/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK", "round {round}");
        assert!(
            took < Duration::from_secs(1),
            "scrape {round} took {took:?}"
        );
        let (status, page_took) = timed_get(&web, "/");
        assert_eq!(status, "HTTP/1.1 200 OK", "round {round}");
        assert!(
            page_took < Duration::from_secs(1),
            "page {round} took {page_took:?}"
        );
        println!("round {round}: /metrics in {took:?}, the page in {page_took:?}");
    }

    // Scraped to the end, the crowd still connected (those the server has not closed).
    let mut last: Option<Exposition> = None;
    let deadline = Instant::now() + support::HANG;
    while last
        .as_ref()
        .and_then(|e| e.get("msgbench_run_finished", &[]))
        != Some(1.0)
    {
        assert!(
            Instant::now() < deadline,
            "the run never showed final figures"
        );
        std::thread::sleep(Duration::from_millis(200));
        let body = openmetrics::scrape(&metrics).expect("the server answers until the end");
        last = Some(openmetrics::parse(&body).unwrap_or_else(|p| panic!("{p}\n{body}")));
    }
    let status = child.wait().unwrap();
    let err = support::rest_of_stderr(seen, rest);
    assert!(status.success(), "{status:?}: {err}");
    drop((hostile_metrics, hostile_web));

    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let d = &doc["delivery"];
    assert_eq!(d["accounting"], "exact", "{d}");
    assert_eq!(u(&d["sent"]), MSGS, "{d}");
    assert_eq!(u(&d["received"]), MSGS, "{d}");
    assert_eq!(u(&d["lost"]), 0, "{d}");
    assert_eq!(u(&d["duplicated"]), 0, "{d}");
    assert_eq!(doc["errors"], serde_json::json!({}), "{}", doc["errors"]);
    let last = last.unwrap();
    for role in ["pub", "sub"] {
        let want = doc["by_role"][role]["msgs"].as_f64().unwrap();
        let got = last.get("msgbench_messages_total", &[("role", role)]);
        assert_eq!(got, Some(want), "{role}");
    }
}
