//! Hostile-peer tests: the msgbench binary against loopback TCP peers that are not a
//! well-behaved nats-server (silent, HTTP, garbage mid-run, `-ERR` at connect and mid-run).
//! Each peer is a tiny in-test server ([`FakePeer`]) so the misbehaviour is exact and repeatable.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::support::{bin, stderr, u};
use serde_json::Value;

/// The INFO a minimal NATS server opens with.
const INFO: &[u8] = b"INFO {\"server_id\":\"x\",\"version\":\"2.10.0\",\"max_payload\":1048576,\
\"headers\":true,\"proto\":1}\r\n";

/// No peer thread outlives this, even if a test forgets to drop its peer. It is longer than
/// any run's hang guard ([`HANG_GUARD`]), so a peer never goes away under a slow run.
const PEER_LIFETIME: Duration = Duration::from_secs(90);

/// How long a run may take before it counts as hung: a guard only, far beyond what a debug
/// build on a busy machine needs for the few seconds each run is meant to take.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// How often peer threads look at their clocks and stop flag: blocking calls never wait longer.
const POLL: Duration = Duration::from_millis(20);

/// What a fake peer does on each accepted connection. The default reads and never writes.
#[derive(Debug, Clone, Copy, Default)]
struct Behaviour {
    /// Written as soon as the connection is accepted.
    greeting: &'static [u8],
    /// Answer each `PING` with `PONG`: what lets a client's handshake and flushes complete.
    pong: bool,
    /// Written in reply to `CONNECT`, after which the peer hangs up.
    refuse_connect: Option<&'static [u8]>,
    /// Written once, this long after the first `PUB` arrives.
    after_first_pub: Option<(Duration, &'static [u8])>,
    /// The JSON to answer a `$JS.API.INFO` request with (the account info), sent to its reply
    /// subject under the client's last subscription.
    js_info: Option<&'static str>,
}

/// A loopback listener running `Behaviour` on a thread per connection. Dropping it stops and
/// joins every thread; without a drop they still end on their own after [`PEER_LIFETIME`].
struct FakePeer {
    url: String,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl FakePeer {
    fn start(behaviour: Behaviour) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("nats://{}", listener.local_addr().unwrap());
        // Non-blocking accept so the acceptor can notice its stop flag and deadline.
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let acceptor = std::thread::spawn(move || {
            let until = Instant::now() + PEER_LIFETIME;
            let mut conns = Vec::new();
            while !flag.load(Ordering::Relaxed) && Instant::now() < until {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let flag = flag.clone();
                        conns.push(std::thread::spawn(move || {
                            serve(stream, behaviour, &flag, until);
                        }));
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(POLL),
                    Err(_) => break,
                }
            }
            for c in conns {
                let _ = c.join();
            }
        });
        FakePeer {
            url,
            stop,
            acceptor: Some(acceptor),
        }
    }
}

impl Drop for FakePeer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

/// One connection: reads client operations and reacts as `b` says, until the client hangs up,
/// the peer is stopped, or `until`.
fn serve(mut s: TcpStream, b: Behaviour, stop: &AtomicBool, until: Instant) {
    // Accepted sockets may inherit the listener's non-blocking mode; reads must time out instead.
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(POLL));
    if s.write_all(b.greeting).is_err() {
        return;
    }
    let mut pending = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let mut first_pub = None;
    let mut mid_run = b.after_first_pub;
    let mut last_sid = String::new();
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => pending.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
        let mut reply = Vec::new();
        let mut saw_pub = false;
        for line in take_ops(&mut pending) {
            let args: Vec<&str> = line.split(' ').collect();
            if args[0] == "SUB" {
                last_sid = args.last().unwrap_or(&"").to_string();
            }
            if let (Some(json), ["PUB", "$JS.API.INFO", to, _]) = (b.js_info, &args[..]) {
                reply.extend_from_slice(
                    format!("MSG {to} {last_sid} {}\r\n{json}\r\n", json.len()).as_bytes(),
                );
            }
            match args[0] {
                "PING" if b.pong => reply.extend_from_slice(b"PONG\r\n"),
                "CONNECT" => {
                    if let Some(refusal) = b.refuse_connect {
                        // Half-close and keep reading: closing with unread input would send a
                        // reset, which can destroy the refusal before the client reads it.
                        let _ = s.write_all(refusal);
                        let _ = s.shutdown(Shutdown::Write);
                        return drain(s, stop, until);
                    }
                }
                "PUB" | "HPUB" => saw_pub = true,
                _ => {}
            }
        }
        if saw_pub && first_pub.is_none() {
            first_pub = Some(Instant::now());
        }
        if let (Some(at), Some((after, bytes))) = (first_pub, mid_run) {
            if at.elapsed() >= after {
                reply.extend_from_slice(bytes);
                mid_run = None;
            }
        }
        if !reply.is_empty() && s.write_all(&reply).is_err() {
            return;
        }
    }
}

/// Reads and discards until the client hangs up (or the peer's time is up).
fn drain(mut s: TcpStream, stop: &AtomicBool, until: Instant) {
    let mut chunk = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// Removes every complete client operation from the front of `buf` and returns their control
/// lines, the verb in upper case.
/// A `PUB`/`HPUB` payload is skipped by its announced size, so binary payload bytes (a stamp may
/// contain CRLF) are never mistaken for operations.
fn take_ops(buf: &mut Vec<u8>) -> Vec<String> {
    let mut ops = Vec::new();
    let mut at = 0;
    while let Some(lf) = buf[at..].iter().position(|&c| c == b'\n') {
        let line = String::from_utf8_lossy(&buf[at..at + lf]);
        let line = line.trim_end_matches('\r');
        let verb = line.split(' ').next().unwrap_or("").to_ascii_uppercase();
        let mut end = at + lf + 1;
        if verb == "PUB" || verb == "HPUB" {
            // The last argument is the total size (payload, plus headers for HPUB).
            let size: usize = line
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            end += size + 2;
            if end > buf.len() {
                break;
            }
        }
        let args = line.split_once(' ').map_or("", |(_, rest)| rest);
        ops.push(format!("{verb} {args}").trim_end().to_string());
        at = end;
    }
    buf.drain(..at);
    ops
}

/// Runs msgbench with `args` and waits at most `limit`: a hang fails the test instead of
/// hanging it. Returns the output and how long the run took.
fn run_within(args: &[&str], limit: Duration) -> (Output, Duration) {
    let started = Instant::now();
    let child = bin()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("msgbench runs");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => (
            out.expect("msgbench's output is readable"),
            started.elapsed(),
        ),
        Err(_) => {
            // SAFETY: kill(2) on the pid of the child spawned above, which has not been waited
            // for yet (its waiter is still blocked), so the pid cannot have been reused.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            let out = rx.recv().unwrap().unwrap();
            panic!(
                "msgbench {args:?} still running after {limit:?}; stderr so far: {}",
                stderr(&out)
            );
        }
    }
}

/// The non-empty lines of stderr, after checking that none of it is a panic.
fn error_lines(out: &Output) -> Vec<String> {
    let err = stderr(out);
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    err.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// Parses stdout as the JSON result.
fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); status {:?}; stderr: {}",
            out.status,
            stderr(out)
        )
    })
}

/// A publisher paced at 1,000/s for `duration` against `peer`, with the JSON result on stdout.
fn paced_run(peer: &FakePeer, duration: &str) -> (Output, Duration) {
    run_within(
        &[
            "pub",
            "--server",
            &peer.url,
            "--rate",
            "1000",
            "--duration",
            duration,
            "--json",
            "-",
            "--no-progress",
        ],
        HANG_GUARD,
    )
}

/// A minimal NATS server that, about 300 ms into publishing, sends `bytes` once.
fn nats_peer_sending_mid_run(bytes: &'static [u8]) -> FakePeer {
    FakePeer::start(Behaviour {
        greeting: INFO,
        pong: true,
        after_first_pub: Some((Duration::from_millis(300), bytes)),
        ..Behaviour::default()
    })
}

#[test]
fn a_peer_that_never_speaks_is_reported_within_the_connect_timeout() {
    // Like an HTTP server waiting for a request: the connection opens, nothing ever arrives.
    let peer = FakePeer::start(Behaviour::default());
    let (out, took) = run_within(
        &[
            "pub",
            "--server",
            &peer.url,
            "--connect-timeout",
            "1s",
            "--msgs",
            "10",
        ],
        HANG_GUARD,
    );
    let lines = error_lines(&out);
    assert_eq!(out.status.code(), Some(4), "{lines:?}");
    // The connect timeout ended the wait: never before it, and long before the guard (a peer
    // that never speaks would otherwise hold the run for good).
    assert!(took >= Duration::from_secs(1), "took {took:?}");
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert_eq!(lines.len(), 1, "expected one line, got {lines:?}");
    assert!(
        lines[0].contains(&peer.url) && lines[0].contains("INFO"),
        "{lines:?}"
    );
}

#[test]
fn an_http_server_gets_a_protocol_error() {
    let peer = FakePeer::start(Behaviour {
        greeting: b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
        ..Behaviour::default()
    });
    let (out, _) = run_within(&["pub", "--server", &peer.url, "--msgs", "10"], HANG_GUARD);
    let lines = error_lines(&out);
    assert_eq!(out.status.code(), Some(7), "{lines:?}");
    assert_eq!(lines.len(), 1, "expected one line, got {lines:?}");
    assert!(lines[0].contains("protocol error"), "{lines:?}");
}

#[test]
fn garbage_after_the_handshake_ends_the_run_with_partial_results() {
    let peer = nats_peer_sending_mid_run(b"\x00\x01 not nats\r\n");
    // A schedule of 10,000 messages: the run ends at the garbage, long before.
    let (out, _) = paced_run(&peer, "10s");
    let lines = error_lines(&out);
    assert_eq!(out.status.code(), Some(7), "{lines:?}");
    // What was sent before the garbage is still reported.
    let v = json(&out);
    assert!(u(&v["errors"]["protocol_error"]) >= 1, "{}", v["errors"]);
    let msgs = u(&v["clients"][0]["msgs"]);
    assert!(msgs > 0 && msgs < 10_000, "msgs {msgs}");
    // The garbage comes ~300 ms (~300 messages) in: a publisher that stops there sent far
    // fewer than half its schedule, with seconds to spare for a busy machine. Merely being
    // under 10,000 also holds for one that ran out its 10 s and lost only its last,
    // unconfirmed message.
    assert!(
        msgs < 5000,
        "the publisher went on after the protocol error: msgs {msgs}"
    );
}

#[test]
fn a_server_error_at_connect_is_reported_by_kind() {
    let peer = FakePeer::start(Behaviour {
        greeting: INFO,
        pong: true,
        refuse_connect: Some(b"-ERR 'Authorization Violation'\r\n"),
        ..Behaviour::default()
    });
    let (out, _) = run_within(&["pub", "--server", &peer.url, "--msgs", "10"], HANG_GUARD);
    let lines = error_lines(&out);
    assert_eq!(out.status.code(), Some(4), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains("authorization")),
        "{lines:?}"
    );
}

#[test]
fn a_server_error_during_the_run_is_counted_by_kind() {
    // A permissions error leaves the connection up: the run goes on and counts it once.
    let peer = nats_peer_sending_mid_run(b"-ERR 'Permissions Violation for Publish to \"x\"'\r\n");
    let (out, _) = paced_run(&peer, "3s");
    let lines = error_lines(&out);
    assert_eq!(out.status.code(), Some(0), "{lines:?}");
    let v = json(&out);
    assert_eq!(
        u(&v["errors"]["permissions_violation"]),
        1,
        "{}",
        v["errors"]
    );
    assert_eq!(u(&v["delivery"]["sent"]), 3000);
}

#[test]
fn fast_batches_are_refused_by_a_server_below_api_level_4_naming_its_version() {
    // A 2.13 server answers its account info at API level 3: it knows no fast batches.
    const INFO_213: &[u8] = b"INFO {\"server_id\":\"x\",\"version\":\"2.13.1\",\
\"max_payload\":1048576,\"headers\":true,\"proto\":1,\"jetstream\":true}\r\n";
    let peer = FakePeer::start(Behaviour {
        greeting: INFO_213,
        pong: true,
        js_info: Some(
            r#"{"memory":0,"storage":0,"streams":0,"consumers":0,"api":{"level":3,"total":1,"errors":0}}"#,
        ),
        ..Behaviour::default()
    });
    let (out, _) = run_within(
        &[
            "js", "pub", "--server", &peer.url, "--mode", "fast", "--msgs", "10",
        ],
        HANG_GUARD,
    );
    let lines = error_lines(&out);
    assert!(!out.status.success(), "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("--mode fast"), "{lines:?}");
    assert!(lines[0].contains("2.13.1"), "{lines:?}");
    assert!(lines[0].contains("API level 3"), "{lines:?}");
}
