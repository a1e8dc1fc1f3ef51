//! `msgbench capture` against traffic msgbench did not make: a bare client of the test's own
//! publishes on several subjects with known counts, sizes and headers, calls a service that a
//! second bare client answers, and publishes into a JetStream stream. The workload written must
//! name every pattern with its exact counts, sizes and tokens, find the service and the stream,
//! and read back as a workload. Capture must publish nothing but its JetStream API reads, and
//! refuse bad input before it connects.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use msgbench::wire::proto::{self, Parsed, ServerOp};

use crate::support::{bin, raw_request, scratch_dir, stderr, stderr_until, TestServer, HANG};

/// A bare NATS client: the test's own bytes on a socket.
struct Bare {
    sock: TcpStream,
    buf: Vec<u8>,
}

impl Bare {
    fn connect(url: &str) -> Self {
        let mut sock = TcpStream::connect(url.trim_start_matches("nats://")).unwrap();
        sock.set_read_timeout(Some(HANG)).unwrap();
        sock.write_all(b"CONNECT {\"verbose\":false,\"headers\":true}\r\n")
            .unwrap();
        Self {
            sock,
            buf: Vec::new(),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.sock.write_all(bytes).unwrap();
    }

    /// PING, then every message until the PONG, handed to `on`: when it returns, the server
    /// has processed all this client sent.
    fn flush(&mut self, mut on: impl FnMut(&[u8], Option<&[u8]>) -> Option<Vec<u8>>) {
        self.send(b"PING\r\n");
        let mut chunk = [0u8; 65536];
        loop {
            let mut at = 0;
            let mut pong = false;
            let mut out = Vec::new();
            while let Ok(Parsed::Op(op, used)) = proto::parse(&self.buf[at..]) {
                at += used;
                match op {
                    ServerOp::Msg(m) => out.extend(on(m.subject, m.reply).unwrap_or_default()),
                    ServerOp::Pong => pong = true,
                    ServerOp::Ping => out.extend_from_slice(b"PONG\r\n"),
                    _ => {}
                }
            }
            self.buf.drain(..at);
            if !out.is_empty() {
                self.send(&out);
            }
            if pong {
                return;
            }
            let n = self.sock.read(&mut chunk).unwrap();
            assert!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

fn publish(out: &mut Vec<u8>, subject: &str, reply: Option<&str>, size: usize) {
    match reply {
        Some(r) => out.extend_from_slice(format!("PUB {subject} {r} {size}\r\n").as_bytes()),
        None => out.extend_from_slice(format!("PUB {subject} {size}\r\n").as_bytes()),
    }
    out.extend(std::iter::repeat_n(b'x', size));
    out.extend_from_slice(b"\r\n");
}

/// The workload's text for one class: from its name's line to the next class's.
fn class<'a>(text: &'a str, name: &str) -> &'a str {
    let head = format!("\n  {name}:\n");
    let start = 1 + text
        .find(&head)
        .unwrap_or_else(|| panic!("no class {name} in:\n{text}"));
    let rest = &text[start..];
    let mut end = 0;
    for (i, line) in rest.split_inclusive('\n').enumerate() {
        if i > 0 && line.starts_with("  ") && !line.starts_with("   ") {
            break;
        }
        end += line.len();
    }
    &rest[..end]
}

#[test]
fn capture_learns_patterns_sizes_services_and_streams_of_traffic_it_did_not_make() {
    let s = TestServer::start();
    raw_request(
        &s.url,
        "$JS.API.STREAM.CREATE.shop",
        r#"{"name":"shop","subjects":["shop.>"],"storage":"memory"}"#,
    );
    raw_request(
        &s.url,
        "$JS.API.CONSUMER.CREATE.shop.proc",
        r#"{"stream_name":"shop","config":{"durable_name":"proc","ack_policy":"all"}}"#,
    );
    // The service: answers every request on svc.price with 16 bytes.
    let mut service = Bare::connect(&s.url);
    service.send(b"SUB svc.price 1\r\n");
    service.flush(|_, _| None);

    let dir = scratch_dir("capture");
    let file = dir.join("captured.yaml");
    let mut child = bin()
        .args(["capture", "--server", &s.url, "--duration", "3s", "--out"])
        .arg(&file)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (seen, rest) = stderr_until(&mut child, "capturing");

    let mut client = Bare::connect(&s.url);
    let mut out = Vec::new();
    for i in 0..400 {
        let (region, size) = if i % 4 == 3 {
            ("us", 1000)
        } else {
            ("eu", 100)
        };
        publish(&mut out, &format!("orders.{region}.{}", i % 40), None, size);
    }
    for _ in 0..50 {
        let block = "NATS/1.0\r\nTrace: 1\r\n\r\n";
        out.extend_from_slice(
            format!(
                "HPUB metrics.cpu {} {}\r\n{block}",
                block.len(),
                block.len() + 64
            )
            .as_bytes(),
        );
        out.extend(std::iter::repeat_n(b'x', 64));
        out.extend_from_slice(b"\r\n");
    }
    for i in 0..200 {
        publish(&mut out, "svc.price", Some(&format!("_INBOX.req.{i}")), 32);
    }
    for i in 0..80 {
        publish(
            &mut out,
            "shop.orders",
            Some(&format!("_INBOX.js.{i}")),
            256,
        );
    }
    client.send(&out);
    client.flush(|_, _| None);
    // Every request answered before the capture ends.
    let mut answered = 0;
    while answered < 200 {
        service.flush(|_, reply| {
            answered += 1;
            let mut r = Vec::new();
            publish(
                &mut r,
                std::str::from_utf8(reply.unwrap()).unwrap(),
                None,
                16,
            );
            Some(r)
        });
    }
    service.flush(|_, _| None);

    let status = child.wait().unwrap();
    let err = crate::support::rest_of_stderr(seen, rest);
    assert_eq!(status.code(), Some(0), "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("# Missed: nothing"), "{text}");
    assert!(text.contains("Stream shop: memory storage"), "{text}");

    let orders = class(&text, "orders");
    assert!(orders.contains("scenario: \"pub\""), "{orders}");
    assert!(orders.contains("subject: \"orders.{t1}.{t2}\""), "{orders}");
    assert!(orders.contains("400 msgs"), "{orders}");
    assert!(orders.contains("size: \"100:75%,1000:25%\""), "{orders}");
    assert!(
        orders.contains("token: [\"t1=eu:75%,us:25%\",\"t2=uniform:40\"]"),
        "{orders}"
    );
    let metrics = class(&text, "metrics.cpu");
    assert!(metrics.contains("subject: \"metrics.cpu\""), "{metrics}");
    assert!(metrics.contains("50 with headers: Trace"), "{metrics}");
    assert!(metrics.contains("size: 64"), "{metrics}");
    let svc = class(&text, "svc.price");
    assert!(svc.contains("scenario: \"request\""), "{svc}");
    assert!(svc.contains("200 of its requests answered"), "{svc}");
    assert!(svc.contains("delay: \""), "{svc}");
    let shop = class(&text, "shop.orders");
    assert!(shop.contains("scenario: \"js pub\""), "{shop}");
    assert!(shop.contains("\"stream\":\"shop\""), "{shop}");
    assert!(shop.contains("80 msgs"), "{shop}");
    let proc = class(&text, "shop.orders.proc");
    assert!(proc.contains("scenario: \"js consume\""), "{proc}");
    assert!(proc.contains("ack: \"all\""), "{proc}");

    // What capture wrote is a workload `msgbench run` takes.
    let plan = bin()
        .args(["run", "--print-plan"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));

    // A capture compared with itself matches; one whose orders ran at twice the rate does not.
    let same = bin()
        .args(["capture", "diff"])
        .arg(&file)
        .arg(&file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&same.stdout);
    assert_eq!(same.status.code(), Some(0), "{said}{}", stderr(&same));
    assert!(said.contains("every pattern matched"), "{said}");
    let rate = orders
        .lines()
        .find_map(|l| l.trim().strip_prefix("rate: "))
        .unwrap();
    let doubled = rate.parse::<f64>().unwrap() * 2.0;
    let other = dir.join("doubled.yaml");
    std::fs::write(
        &other,
        text.replace(
            orders,
            &orders.replace(&format!("rate: {rate}\n"), &format!("rate: {doubled}\n")),
        ),
    )
    .unwrap();
    let diff = bin()
        .args(["capture", "diff"])
        .arg(&file)
        .arg(&other)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(diff.status.code(), Some(8), "{said}{}", stderr(&diff));
    assert!(
        said.lines().any(|l| l.contains("pub orders.{t1}.{t2}")
            && l.contains("2.000")
            && l.contains("FAIL")),
        "{said}"
    );
}

#[test]
fn capture_publishes_nothing_and_an_empty_window_writes_no_file() {
    let s = TestServer::start();
    let mut counter = Bare::connect(&s.url);
    counter.send(b"SUB > 1\r\n");
    counter.flush(|_, _| None);
    let dir = scratch_dir("capture-quiet");
    let file = dir.join("none.yaml");
    let run = |extra: &[&str]| {
        let mut c = bin();
        c.args(["capture", "--server", &s.url, "--duration", "1s", "--out"])
            .arg(&file)
            .args(extra);
        c.output().unwrap()
    };
    let quiet = run(&["--no-jetstream"]);
    assert_eq!(quiet.status.code(), Some(1), "{}", stderr(&quiet));
    assert!(
        stderr(&quiet).contains("no file written"),
        "{}",
        stderr(&quiet)
    );
    assert!(!file.exists());
    let mut subjects = Vec::new();
    counter.flush(|subject, _| {
        subjects.push(String::from_utf8_lossy(subject).into_owned());
        None
    });
    assert_eq!(
        subjects,
        Vec::<String>::new(),
        "--no-jetstream sent nothing"
    );

    let with_js = run(&[]);
    assert_eq!(with_js.status.code(), Some(1), "{}", stderr(&with_js));
    counter.flush(|subject, _| {
        subjects.push(String::from_utf8_lossy(subject).into_owned());
        None
    });
    // The server answers on an inbox and audits each API call on $JS.EVENT.ADVISORY.API itself:
    // those are the server's messages, not capture's.
    let requests: Vec<&String> = (subjects.iter())
        .filter(|s| !s.starts_with("_INBOX.") && !s.starts_with("$JS.EVENT."))
        .collect();
    assert!(!requests.is_empty(), "the stream list was asked for");
    assert!(
        requests.iter().all(
            |s| s.starts_with("$JS.API.STREAM.LIST") || s.starts_with("$JS.API.CONSUMER.LIST.")
        ),
        "capture sent only JetStream API reads: {requests:?}"
    );
}

#[test]
fn capture_refuses_bad_input_before_connecting_and_names_a_refused_subscription() {
    // Nothing listens here: a check that got as far as connecting would exit 4.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let dir = scratch_dir("capture-bad");
    let out = dir.join("w.yaml");
    let out = out.to_str().unwrap();
    for (args, needle) in [
        (vec!["--duration", "0s"], "--duration"),
        (vec!["--duration", "1500ms"], "--duration"),
        (vec!["--subjects", "orders..x"], "--subjects"),
        (vec!["--link", "delay=1ms"], "--link"),
        (vec!["--max-words", "0"], "--max-words"),
    ] {
        let o = bin()
            .args(["capture", "--server", &url, "--out", out])
            .args(&args)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    let o = bin()
        .args([
            "capture",
            "--server",
            &url,
            "--out",
            "/nonexistent-dir/w.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--out"), "{}", stderr(&o));
    let o = bin()
        .args(["capture", "--out", out])
        .env_remove("NATS_URL")
        .env_remove("NATS_CONTEXT")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--server"), "{}", stderr(&o));

    // A user who may subscribe to orders.> only: capturing '>' is refused, naming the subject.
    let s = TestServer::with_config(
        "authorization { users = [ {user: watcher, password: pw, permissions: \
         {subscribe: {allow: [\"orders.>\", \"_INBOX.>\"]}}} ] }",
    );
    let started = Instant::now();
    let o = bin()
        .args([
            "capture", "--server", &s.url, "--user", "watcher", "--out", out,
        ])
        .args(["--no-jetstream", "--duration", "60s"])
        .env("NATS_PASSWORD", "pw")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(
        err.contains("'>'") && err.contains("Permissions Violation"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "refused at once"
    );
}
