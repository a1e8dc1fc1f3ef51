//! A JetStream cluster under faults, from the outside: a user's own three servers and R3 stream,
//! whose stream leader the test kills while msgbench publishes into the stream as it found it;
//! and a msgbench killed (SIGKILL) in the middle of a fault on a cluster it started, which must
//! leave none of its servers running, the one its fault restarted included. Nothing is timed:
//! every wait ends at the event it waits for, bounded only against a hang.

use std::io::{BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

use crate::support::{self, schema_errors, scratch_dir, stderr, u, HANG};
use msgbench::server::{find_binary, EmbeddedServer};
use serde_json::Value;

/// One request over a raw NATS connection, `None` when nothing answers within 5 s: while the
/// cluster forms, the JetStream API may not answer yet.
fn try_request(url: &str, subject: &str, body: &str) -> Option<String> {
    let addr = url.trim_start_matches("nats://");
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "CONNECT {{\"verbose\":false,\"headers\":true,\"no_responders\":true}}\r\n\
         SUB _INBOX.cluster.r 1\r\nPUB {subject} _INBOX.cluster.r {}\r\n{body}\r\n",
        body.len()
    )
    .ok()?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        // A no-responders status (HMSG with no payload) means the API is not up yet.
        if line.starts_with("HMSG ") {
            return None;
        }
        if let Some(rest) = line.strip_prefix("MSG ") {
            let len: usize = rest.trim_end().rsplit(' ').next()?.parse().ok()?;
            let mut payload = vec![0; len + 2];
            r.read_exact(&mut payload).ok()?;
            return Some(String::from_utf8_lossy(&payload[..len]).into_owned());
        }
    }
}

/// A JetStream API call that must be answered; its reply parsed.
fn js_api(url: &str, subject: &str, body: &str) -> Value {
    let reply = try_request(url, subject, body).unwrap_or_else(|| panic!("{subject}: no answer"));
    serde_json::from_str(&reply).unwrap()
}

/// A free loopback port (for a cluster route, which the server cannot pick itself).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Three nats-servers routed into one cluster on loopback, JetStream on file storage, started
/// by the test as a user would start them: msgbench only gets their URLs.
fn own_cluster() -> Vec<(String, EmbeddedServer)> {
    let binary = find_binary(None).expect("these tests need nats-server on PATH");
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    (0..3)
        .map(|i| {
            let name = format!("own{}", i + 1);
            let me = format!("nats://127.0.0.1:{}", ports[i]);
            let routes: Vec<String> = (0..3)
                .filter(|&j| j != i)
                .map(|j| format!("nats://127.0.0.1:{}", ports[j]))
                .collect();
            let routes = routes.join(",");
            let args = [
                "-n",
                &name,
                "--cluster_name",
                "own",
                "--cluster",
                &me,
                "--routes",
                &routes,
            ];
            let s = EmbeddedServer::start(&binary, &args).expect("nats-server starts");
            (name, s)
        })
        .collect()
}

#[test]
fn a_users_own_cluster_loses_nothing_acknowledged_when_its_stream_leader_is_killed() {
    let nodes = own_cluster();
    let urls: Vec<String> = nodes.iter().map(|(_, s)| s.url.to_string()).collect();
    // The stream, made as `nats stream add` makes it: a JetStream API request. It is retried
    // until the cluster has formed and elected a meta leader, which takes a few seconds.
    let config = r#"{"name":"clx","subjects":["clx.>"],"storage":"file","num_replicas":3}"#;
    let deadline = Instant::now() + HANG;
    let made = loop {
        let reply = try_request(&urls[0], "$JS.API.STREAM.CREATE.clx", config)
            .map(|r| serde_json::from_str::<Value>(&r).unwrap());
        match reply {
            Some(v) if v.get("error").is_none() => break v,
            other => assert!(Instant::now() < deadline, "no stream: {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let before = made["config"].clone();

    let mut child = support::bin()
        .args([
            "js",
            "pub",
            "--server",
            &urls.join(","),
            "--stream",
            "clx",
            "--subject",
            "clx.orders",
            "--reconnect",
            "--rate",
            "500",
            "--duration",
            "15s",
            "--json",
            "-",
            "--no-progress",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("msgbench starts");
    // Publishing has begun once the stream holds a message: then its leader is killed (about
    // a second into the run), and a new one is elected within the run's remaining 14 s.
    let deadline = Instant::now() + HANG;
    let leader = loop {
        let info = js_api(&urls[0], "$JS.API.STREAM.INFO.clx", "");
        if info["state"]["messages"].as_u64().unwrap_or(0) > 0 {
            break info["cluster"]["leader"].as_str().unwrap().to_string();
        }
        assert!(child.try_wait().unwrap().is_none(), "msgbench ended early");
        assert!(Instant::now() < deadline, "nothing published: {info}");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(500));
    let killed = nodes.iter().position(|(n, _)| *n == leader).unwrap();
    nodes[killed].1.kill();

    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    // Used as found: the configuration recorded is the stream's, and the stream is unchanged.
    let st = &v["jetstream"]["streams"][0];
    assert_eq!(st["found"], true, "{st}");
    assert_eq!(st["config"]["num_replicas"], 3, "{st}");
    assert_eq!(st["config"]["subjects"], before["subjects"], "{st}");
    let survivor = &urls[(killed + 1) % 3];
    let after = js_api(survivor, "$JS.API.STREAM.INFO.clx", "");
    assert_eq!(after["config"], before);
    // Nothing acknowledged lost; the publishes the leaderless stream could not take are
    // refused or unanswered, and every publish is one of the three.
    let d = &v["durability"];
    assert_eq!(u(&d["lost"]), 0, "{d}");
    let refused: u64 = d["refused"].as_object().unwrap().values().map(u).sum();
    assert!(refused + u(&d["unanswered"]) > 0, "{d}");
    assert_eq!(
        u(&v["jetstream"]["acked"]) + refused + u(&d["unanswered"]),
        u(&d["sent"]),
        "{d}"
    );
}

/// The pids of nats-server processes whose command line mentions `needle`.
fn servers_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse().ok()) else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains("nats-server") && cmd.contains(needle) {
                found.push(pid);
            }
        }
    }
    found.sort_unstable();
    found
}

/// Polls `servers_mentioning(needle)` until `done` accepts the pids, which it returns.
fn wait_for_servers(needle: &str, what: &str, done: impl Fn(&[u32]) -> bool) -> Vec<u32> {
    let deadline = Instant::now() + HANG;
    loop {
        let pids = servers_mentioning(needle);
        if done(&pids) {
            return pids;
        }
        assert!(Instant::now() < deadline, "{what}: servers {pids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_msgbench_killed_mid_fault_leaves_no_server_running_not_even_the_restarted_one() {
    // msgbench's servers keep their files in its temporary folder: their command lines name
    // it, which is how they are told from every other nats-server on the machine.
    let tmp = scratch_dir("killed-mid-fault");
    let needle = tmp.to_str().unwrap().to_string();
    let mut child = support::bin()
        .env("TMPDIR", &tmp)
        .args([
            "js",
            "pub",
            "--cluster",
            "3",
            "--replicas",
            "3",
            "--storage",
            "file",
            "--reconnect",
            "--rate",
            "500",
            "--fault",
            "restart-leader@1s:3s",
            "--duration",
            "20s",
            "--no-progress",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("msgbench starts");
    let first = wait_for_servers(&needle, "the cluster never had 3 nodes", |p| p.len() == 3);
    // The fault kills the leader, then starts it again from the fault's own thread: a node
    // whose pid is new. msgbench is killed once that node runs.
    let restarted = wait_for_servers(&needle, "no node was restarted", |p| {
        p.len() == 3 && p.iter().any(|pid| !first.contains(pid))
    });
    assert!(child.try_wait().unwrap().is_none(), "msgbench ended early");
    child.kill().unwrap();
    child.wait().unwrap();
    // The parent-death signal stops every node, the restarted one too. A node still running
    // when the wait gives up is killed here, so that a failure leaves nothing behind either.
    let deadline = Instant::now() + HANG;
    let mut left = servers_mentioning(&needle);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        left = servers_mentioning(&needle);
    }
    for &pid in &left {
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
    assert_eq!(
        left,
        Vec::<u32>::new(),
        "left running after msgbench was killed (the nodes then: {restarted:?}, first {first:?})"
    );
}
