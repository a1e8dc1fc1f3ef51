//! Agents as separate hosts: each in a network namespace this test creates, joined to this
//! one by a veth pair on addresses of the test's own (10.249.k.0/30), with the server listening
//! only on this side's end of the first pair. Nothing is sent to any other address. The run
//! must reconcile exactly across the "hosts", and each agent's clock is measured over a real
//! (if short) network path rather than loopback.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{self, bin, scratch_dir, stderr, u};

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("the ip tool runs");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two namespaces and their links; removed (with every process in them stopped first) on drop.
struct Hosts {
    names: Vec<String>,
    /// This side's ends of the veth pairs.
    links: Vec<String>,
    procs: Vec<Child>,
}

impl Hosts {
    fn create() -> Hosts {
        // Names of this process and this call: a link of an earlier test may still be going.
        static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = (std::process::id() % 10_000) * 10 + call % 10;
        let mut h = Hosts {
            names: Vec::new(),
            links: Vec::new(),
            procs: Vec::new(),
        };
        for k in 1..=2u32 {
            let ns = format!("msgbench-t{tag}-{k}");
            let (outer, inner) = (format!("mb{tag}h{k}"), format!("mb{tag}n{k}"));
            ip(&["netns", "add", &ns]);
            h.names.push(ns.clone());
            ip(&[
                "link", "add", &outer, "type", "veth", "peer", "name", &inner,
            ]);
            h.links.push(outer.clone());
            ip(&["link", "set", &inner, "netns", &ns]);
            ip(&["addr", "add", &format!("10.249.{k}.1/30"), "dev", &outer]);
            ip(&["link", "set", &outer, "up"]);
            let inside = |args: &[&str]| {
                let mut all = vec!["netns", "exec", &ns, "ip"];
                all.extend_from_slice(args);
                ip(&all);
            };
            inside(&["addr", "add", &format!("10.249.{k}.2/30"), "dev", &inner]);
            inside(&["link", "set", &inner, "up"]);
            inside(&["link", "set", "lo", "up"]);
            // The server's address sits on the first pair; the second host reaches it through
            // this side, which takes packets for any of its own addresses.
            if k > 1 {
                inside(&[
                    "route",
                    "add",
                    "10.249.1.0/30",
                    "via",
                    &format!("10.249.{k}.1"),
                ]);
            }
        }
        h
    }

    /// Runs an agent inside namespace `k` (1-based) and returns once it listens for plans.
    fn spawn_agent(&mut self, k: usize, args: &[&str]) {
        let mut child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.names[k - 1],
                env!("CARGO_BIN_EXE_msgbench"),
            ])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (seen, rest) = support::stderr_until(&mut child, "listening on");
        // Whatever it says later is read, so a full pipe never blocks it.
        std::thread::spawn(move || support::rest_of_stderr(seen, rest));
        self.procs.push(child);
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for p in &mut self.procs {
            let _ = p.kill();
            let _ = p.wait();
        }
        // This side's end first: deleting it removes the pair at once, where a deleted
        // namespace takes its links down in the background, addresses and all.
        for link in &self.links {
            let _ = Command::new("ip").args(["link", "delete", link]).status();
        }
        for ns in &self.names {
            let _ = Command::new("ip").args(["netns", "delete", ns]).status();
        }
    }
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The tests of this file one at a time: their namespaces and addresses are the same.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Two hosts, each running an agent, and a nats-server (with JetStream, its store in
/// `store`) on this side's address; returns the server's URL. Held (with the guard) for the
/// test's length.
fn fleet(store: &std::path::Path) -> (std::sync::MutexGuard<'static, ()>, Hosts, Server, String) {
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut hosts = Hosts::create();
    let port = {
        let l = std::net::TcpListener::bind("10.249.1.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let server = msgbench::server::find_binary(None).expect("nats-server on PATH");
    let server = Server(
        Command::new(server)
            .args(["-a", "10.249.1.1", "-p", &port.to_string(), "-js", "-sd"])
            .arg(store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let addr = format!("10.249.1.1:{port}");
    // A wait for the server to listen: its bound only guards against a hang.
    let deadline = Instant::now() + support::HANG;
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < deadline, "the server did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = format!("nats://{addr}");
    for (k, name) in [(1, "host1"), (2, "host2")] {
        hosts.spawn_agent(
            k,
            &[
                "agent",
                "--control",
                &url,
                "--name",
                name,
                "--insecure-control",
            ],
        );
    }
    (guard, hosts, server, url)
}

#[test]
fn agents_on_separate_network_hosts_reconcile_exactly() {
    let store = scratch_dir("netns-store");
    let (_one, _hosts, _server, url) = fleet(&store);
    let dir = scratch_dir("netns");
    let json = dir.join("r.json");
    // Both agents listen (each said so), so the coordinator hears their heartbeats: no rounds
    // of tries that a busy machine could use up before the agents were up.
    let out = bin()
        .args([
            "pubsub",
            "--pubs",
            "2",
            "--subs",
            "2",
            "--msgs",
            "20000",
            "--size",
            "64",
            "--server",
            &url,
            "--agents",
            "host1,host2",
            "--no-progress",
            "--json",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let d = &doc["delivery"];
    assert_eq!(u(&d["sent"]), 40_000);
    assert_eq!(u(&d["expected"]), 80_000);
    assert_eq!(u(&d["received"]), 80_000);
    assert_eq!(u(&d["lost"]), 0);
    for a in doc["agents"]["agents"].as_array().unwrap() {
        assert_eq!(a["status"], "complete");
        // Same kernel, same clock: the offset is within its own uncertainty of zero.
        let off = a["clock_offset_ns"].as_i64().unwrap();
        assert!(
            off.unsigned_abs() <= u(&a["clock_uncertainty_ns"]).max(1),
            "{a}"
        );
        assert_eq!((u(&a["pubs"]), u(&a["subs"])), (1, 1));
    }
}

#[test]
fn a_stream_published_and_consumed_from_two_network_hosts_reconciles_exactly() {
    let store = scratch_dir("netns-js-store");
    let (_one, _hosts, _server, url) = fleet(&store);
    let dir = scratch_dir("netns-js");
    let run = |args: &[&str]| -> serde_json::Value {
        let json = dir.join("r.json");
        let out = bin()
            .args(args)
            .args([
                "--server",
                &url,
                "--agents",
                "host1,host2",
                "--no-progress",
                "--json",
            ])
            .arg(&json)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    };
    // File storage, so the stream is the server's disk, as on a real host.
    let doc = run(&[
        "js",
        "pub",
        "--mode",
        "async",
        "--storage",
        "file",
        "--stream",
        "hosts",
        "--clients",
        "4",
        "--msgs",
        "5000",
    ]);
    let js = &doc["jetstream"];
    assert_eq!(js["reconciled"], true, "{js}");
    assert_eq!(
        (u(&js["acked"]), u(&js["stored"])),
        (20_000, 20_000),
        "{js}"
    );
    let doc = run(&[
        "js",
        "consume",
        "--publish",
        "none",
        "--stream",
        "hosts",
        "--clients",
        "2",
        "--msgs",
        "20000",
    ]);
    let c = &doc["consumer"];
    assert_eq!(c["reconciled"], true, "{c}");
    assert_eq!(
        (u(&c["consumed"]), u(&doc["delivery"]["lost"])),
        (20_000, 0),
        "{c}"
    );
}
