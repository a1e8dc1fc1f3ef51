//! Drawn message sizes, seen from outside: a raw subscription of the test's own (not msgbench's
//! subscriber) counts the payload sizes a `pub` run sends, and the shares are the asked weights;
//! the same seed sends the same sequence of sizes, another seed another.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::thread::JoinHandle;

use crate::support::{run_json, schema_errors, stderr, TestServer, HANG};

const MSGS: usize = 100_000;

/// Subscribes to `subject` on a plain connection, waits until the server confirms it (the PONG
/// after the SUB), and collects the payload sizes of the next `n` messages, in order.
fn raw_sizes(url: &str, subject: &str, n: usize) -> JoinHandle<Vec<usize>> {
    let mut s = TcpStream::connect(url.trim_start_matches("nats://")).unwrap();
    s.set_read_timeout(Some(HANG)).unwrap();
    write!(
        s,
        "CONNECT {{\"verbose\":false}}\r\nSUB {subject} 1\r\nPING\r\n"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(r.read_line(&mut line).unwrap() > 0, "the server closed");
        if line.starts_with("PONG") {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut sizes = Vec::with_capacity(n);
        let mut body = Vec::new();
        while sizes.len() < n {
            line.clear();
            assert!(r.read_line(&mut line).unwrap() > 0, "the server closed");
            if let Some(rest) = line.strip_prefix("MSG ") {
                let len: usize = rest.trim_end().rsplit(' ').next().unwrap().parse().unwrap();
                body.resize(len + 2, 0);
                r.read_exact(&mut body).unwrap();
                sizes.push(len);
            } else if line.starts_with("PING") {
                r.get_mut().write_all(b"PONG\r\n").unwrap();
            }
        }
        sizes
    })
}

/// One `pub` run of MSGS messages with `--size SPEC --seed SEED`, its sizes as the raw
/// subscription saw them, and its result.
fn sizes_sent(url: &str, spec: &str, seed: &str) -> (Vec<usize>, serde_json::Value) {
    let seen = raw_sizes(url, "dists", MSGS);
    let msgs = MSGS.to_string();
    let (out, v) = run_json(&[
        "pub",
        "--server",
        url,
        "--subject",
        "dists",
        "--msgs",
        &msgs,
        "--size",
        spec,
        "--seed",
        seed,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    (seen.join().unwrap(), v)
}

#[test]
fn a_weighted_list_of_sizes_is_sent_in_its_proportions_and_repeats_with_its_seed() {
    let server = TestServer::start();
    let spec = "16B:70%,100B:25%,1000B:5%";
    let (sizes, v) = sizes_sent(&server.url, spec, "7");
    assert_eq!(sizes.len(), MSGS);
    let mut count: HashMap<usize, usize> = HashMap::new();
    sizes
        .iter()
        .for_each(|s| *count.entry(*s).or_default() += 1);
    assert_eq!(count.len(), 3, "sizes seen: {count:?}");
    for (size, want) in [(16, 0.70), (100, 0.25), (1000, 0.05)] {
        let got = count[&size] as f64 / MSGS as f64;
        assert!(
            (got - want).abs() < 0.01,
            "{size} B: {got:.4} of the messages, asked {want}"
        );
    }
    // The result records the distribution as given, its seed, and the bytes actually sent.
    assert!(schema_errors(&v).is_empty(), "{:?}", schema_errors(&v));
    let d = &v["params"]["size_distribution"];
    assert_eq!(d["spec"], spec);
    assert_eq!(d["seed"], 7);
    assert_eq!(
        (d["min"].as_u64(), d["max"].as_u64()),
        (Some(16), Some(1000))
    );
    let bytes: usize = sizes.iter().sum();
    let pubs = v["clients"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["role"] == "pub");
    let sent: u64 = pubs.map(|c| c["bytes"].as_u64().unwrap()).sum();
    assert_eq!(
        sent, bytes as u64,
        "the publisher's bytes are the payloads' sum"
    );

    let (again, _) = sizes_sent(&server.url, spec, "7");
    assert_eq!(
        again, sizes,
        "the same seed sends the same sizes in the same order"
    );
    let (other, _) = sizes_sent(&server.url, spec, "8");
    assert_ne!(other, sizes, "another seed sends another sequence");
}

#[test]
fn bad_distributions_are_refused_in_one_line_before_connecting() {
    // Port 1 has no server: a refusal must come before any dial.
    for (args, names) in [
        (&["--size", "64B:70%,1KiB:20%"][..], "90%"),
        (&["--size", "lognormal:4KiB:1KiB"], "P99"),
        (&["--size", "8B:50%,1KiB:50%"], "16-byte stamp"),
        (&["--size", "hist:/nonexistent/sizes.json"], "cannot read"),
        (&["--seed", "3"], "--seed"),
    ] {
        let out =
            crate::support::run(&[&["pub", "--server", "nats://127.0.0.1:1"][..], args].concat());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(names),
            "{args:?}: {err}"
        );
    }
}
