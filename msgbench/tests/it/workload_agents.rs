//! A workload on agents, end to end: `msgbench agent` processes on a real nats-server, and a
//! workload run with `--agents`. Every class is split across the agents as its scenario
//! splits alone, reconciled and merged on its own, and every class starts at one instant,
//! which a plain client subscribed to the classes' subjects sees from outside.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use msgbench::wire::proto::{self, Parsed, ServerOp};

use crate::support::agent::Agent;
use crate::support::{self, schema_errors, schema_errors_in, stderr, u, TestServer};
use crate::workload::class;

/// The agents a class ran on, in the order of its merged entries, each as (name, pubs, subs).
fn ran_on(c: &serde_json::Value) -> Vec<(String, u64, u64)> {
    (c["result"]["agents"]["agents"].as_array())
        .unwrap_or_else(|| panic!("no agents in {c}"))
        .iter()
        .map(|a| {
            assert_eq!(a["status"], "complete", "{a}");
            (
                a["name"].as_str().unwrap().to_string(),
                u(&a["pubs"]),
                u(&a["subs"]),
            )
        })
        .collect()
}

/// A plain client subscribed to `subject` until `done` is raised and the server has answered
/// its PING after that (so it has delivered all it had for it): when the first message of
/// each subject came, and how many came.
fn watch(
    url: &str,
    subject: &str,
    subscribed: &std::sync::mpsc::Sender<()>,
    done: &AtomicBool,
) -> Vec<(String, Instant, u64)> {
    let mut sock = TcpStream::connect(url.trim_start_matches("nats://")).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    sock.write_all(
        format!("CONNECT {{\"verbose\":false}}\r\nSUB {subject} 1\r\nPING\r\n").as_bytes(),
    )
    .unwrap();
    let (mut buf, mut chunk) = (Vec::new(), [0u8; 65536]);
    let mut seen: Vec<(String, Instant, u64)> = Vec::new();
    // The first PONG says the subscription is in place; the second ends the watch.
    let (mut pongs, mut asked) = (0, false);
    let bound = Instant::now() + Duration::from_secs(120);
    while pongs < 2 {
        assert!(Instant::now() < bound, "the watch did not end");
        if pongs == 1 && !asked && done.load(Ordering::SeqCst) {
            sock.write_all(b"PING\r\n").unwrap();
            asked = true;
        }
        if let Ok(n) = sock.read(&mut chunk) {
            assert!(n > 0, "the server closed the watcher's connection");
            buf.extend_from_slice(&chunk[..n]);
        }
        let now = Instant::now();
        let mut at = 0;
        while let Ok(Parsed::Op(op, used)) = proto::parse(&buf[at..]) {
            at += used;
            match op {
                ServerOp::Msg(m) => {
                    let s = String::from_utf8_lossy(m.subject).into_owned();
                    match seen.iter_mut().find(|(x, _, _)| *x == s) {
                        Some(e) => e.2 += 1,
                        None => seen.push((s, now, 1)),
                    }
                }
                ServerOp::Ping => sock.write_all(b"PONG\r\n").unwrap(),
                ServerOp::Pong if pongs == 0 => {
                    pongs = 1;
                    let _ = subscribed.send(());
                }
                ServerOp::Pong if asked => pongs = 2,
                _ => {}
            }
        }
        buf.drain(..at);
    }
    seen
}

/// The subjects of the catalogue class's reads (each key a subject of its own).
const GETS: &str = "$JS.API.DIRECT.GET.KV_wa_cat.";

#[test]
fn a_workload_on_two_agents_splits_and_merges_each_class_from_one_start() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "w1", &[], &[]);
    let _b = Agent::start(&server.url, "w2", &[], &[]);
    let dir = support::scratch_dir("workload-agents");
    let file = dir.join("mix.yaml");
    std::fs::write(
        &file,
        format!(
            "workload: spread
duration: 3s
conn:
  server: {}
classes:
  fan:
    scenario: pubsub
    subs: 2
    rate: 1000
    size: 64
    subject: wa.fan
    slo: [lost==0]
  probe:
    scenario: latency
    rate: 500
    subject: wa.probe
    busy_poll: 'off'
    slo: [p99<2s, lost==0]
  orders:
    scenario: js pub
    rate: 300
    size: 128
    target: {{stream: wa_orders, subject: wa.orders, storage: memory, create: true, delete_after: true}}
    slo: [lost==0]
  catalogue:
    scenario: kv get
    bucket: wa_cat
    keys: 5000
    rate: 300
    delete_after: true
    slo: [p99<2s]
",
            server.url
        ),
    )
    .unwrap();
    let json = dir.join("r.json");
    let ticks = dir.join("ticks.jsonl");
    // Watched from outside, from before the agents are given anything to the end.
    let done = Arc::new(AtomicBool::new(false));
    let (subscribed, in_place) = std::sync::mpsc::channel();
    let watched = {
        let (url, done) = (server.url.clone(), Arc::clone(&done));
        std::thread::spawn(move || watch(&url, ">", &subscribed, &done))
    };
    in_place.recv().expect("the watcher subscribed");
    let out = support::run(&[
        "run",
        file.to_str().unwrap(),
        "--agents",
        "2",
        "--json",
        json.to_str().unwrap(),
        "--stream-stats",
        ticks.to_str().unwrap(),
    ]);
    done.store(true, Ordering::SeqCst);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors = schema_errors_in("workload-result-v1.schema.json", &doc);
    assert!(errors.is_empty(), "{errors:?}");
    for c in doc["classes"].as_array().unwrap() {
        let errors = schema_errors(&c["result"]);
        assert!(errors.is_empty(), "{}: {errors:?}", c["class"]);
        assert_eq!(c["slo_pass"], true, "{}", c["class"]);
        assert!(c["error"].is_null(), "{}", c["error"]);
        // Every class's seconds are counted from the one start, on every agent: the first
        // ends a second in, whatever the class's setup took (the catalogue's fill).
        let first = c["result"]["timeline"]["ticks"][0]["t_s"].as_f64().unwrap();
        assert!(
            (0.9..1.5).contains(&first),
            "{}: first tick at {first} s",
            c["class"]
        );
    }

    // fan: its publisher and one subscriber on w1 (publishers fill from the first agent),
    // the other subscriber on w2; every message reached both, across hosts too.
    let fan = class(&doc, "fan");
    assert_eq!(
        ran_on(fan),
        [("w1".into(), 1, 1), ("w2".into(), 0, 1)],
        "{}",
        fan["class"]
    );
    let d = &fan["result"]["delivery"];
    assert!(u(&d["sent"]) > 2000, "{d}");
    assert_eq!(u(&d["received"]), 2 * u(&d["sent"]), "{d}");
    assert_eq!(u(&d["lost"]), 0, "{d}");
    assert_eq!(d["accounting"], "exact", "{d}");

    // probe, the second class, starts at the second agent: its publisher on w2, its
    // subscriber on w1, so its latency crosses hosts the other way.
    let probe = class(&doc, "probe");
    assert_eq!(
        ran_on(probe),
        [("w2".into(), 1, 0), ("w1".into(), 0, 1)],
        "{}",
        probe["class"]
    );
    let p = &probe["result"];
    assert!(p["latency"]["percentiles_ns"]["99"].is_u64());
    assert_eq!(u(&p["delivery"]["lost"]), 0, "{}", p["delivery"]);

    // orders: one publisher, so one agent (the third class's place wraps to w1); the stream
    // reconciled with its acknowledgements.
    let orders = class(&doc, "orders");
    assert_eq!(ran_on(orders), [("w1".into(), 1, 0)]);
    let dur = &orders["result"]["durability"];
    assert!(u(&dur["sent"]) > 600, "{dur}");
    assert_eq!(u(&dur["sent"]), u(&dur["ok"]), "{dur}");
    assert_eq!(u(&dur["lost"]), 0, "{dur}");

    // --stream-stats: rows of every class, each tagged with its class and agent.
    let rows: Vec<serde_json::Value> = (std::fs::read_to_string(&ticks).unwrap().lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (name, agents) in [
        ("fan", &["all", "w1", "w2"][..]),
        ("probe", &["all", "w1", "w2"]),
        ("orders", &["all", "w1"]),
    ] {
        for a in agents {
            assert!(
                rows.iter().any(|r| r["class"] == name && r["agent"] == *a),
                "no row of class {name}, agent {a}"
            );
        }
    }
    assert!(rows.iter().all(|r| r["class"].is_string()));

    // One start: seen from outside, every class's first message came within a short
    // interval, though each class's agents were ready at their own time (the catalogue's
    // only once it had filled its bucket: seconds after the others, which started that much
    // earlier when each class started alone).
    let seen = watched.join().unwrap();
    let firsts: Vec<Instant> = ["wa.fan", "wa.probe", "wa.orders", GETS]
        .iter()
        .map(|s| {
            (seen.iter().filter(|(x, _, _)| x.starts_with(s)))
                .map(|e| e.1)
                .min()
                .unwrap_or_else(|| panic!("nothing seen on {s}: {seen:?}"))
        })
        .collect();
    let spread = *firsts.iter().max().unwrap() - *firsts.iter().min().unwrap();
    eprintln!("first messages of the classes {spread:?} apart");
    assert!(
        spread < Duration::from_millis(500),
        "first messages {spread:?} apart"
    );
    // And what the watcher counted is what the classes sent.
    let count = |s: &str| seen.iter().find(|(x, _, _)| x == s).map_or(0, |e| e.2);
    assert_eq!(count("wa.fan"), u(&d["sent"]));
    assert_eq!(count("wa.orders"), u(&dur["sent"]));
    assert!(
        err.contains("class fan:") && err.contains("class orders:"),
        "{err}"
    );
}

#[test]
fn a_workload_on_agents_refuses_what_it_cannot_draw_or_search_in_one_line() {
    let dir = support::scratch_dir("workload-agents-bad");
    let file = dir.join("w.yaml");
    std::fs::write(
        &file,
        "workload: w\nconn:\n  server: nats://127.0.0.1:1\nclasses:\n  a:\n    scenario: pub\n    \
         rate: 10\n    subject: x.a\n",
    )
    .unwrap();
    let w = file.to_str().unwrap();
    for (flags, words) in [
        (
            &["--agents", "2", "--web", "127.0.0.1:0"][..],
            "--web does not apply to a workload on agents",
        ),
        (
            &["--agents", "2", "--metrics-listen", "127.0.0.1:0"],
            "--metrics-listen does not apply to a workload on agents",
        ),
        (
            &["--sign", "k.nk"],
            "--sign does not apply to a workload: it is for runs on agents",
        ),
    ] {
        let mut args = vec!["run", w];
        args.extend(flags);
        let out = support::run(&args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        let e = stderr(&out);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with(&format!("error: {words}")), "{e}");
    }
    let out = support::run(&["capacity", w, "--agents", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--agents does not apply to `msgbench capacity WORKLOAD`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_agent_killed_mid_workload_fails_the_classes_it_ran_and_spares_the_others() {
    let server = TestServer::start();
    let mut k1 = Agent::start(&server.url, "k1", &[], &[]);
    let _k2 = Agent::start(&server.url, "k2", &[], &[]);
    let dir = support::scratch_dir("workload-agents-kill");
    let file = dir.join("mix.yaml");
    // `both` spreads over k1 and k2; `spared` (the second class) runs on k2 alone, `lost`
    // (the third) on k1 alone.
    std::fs::write(
        &file,
        format!(
            "workload: kill
duration: 8s
conn:
  server: {}
classes:
  both:
    scenario: pubsub
    rate: 1000
    subject: wk.both
  spared:
    scenario: pub
    rate: 500
    subject: wk.spared
  lost:
    scenario: pub
    rate: 500
    subject: wk.lost
",
            server.url
        ),
    )
    .unwrap();
    let json = dir.join("r.json");
    let ticks = dir.join("ticks.jsonl");
    let coord = support::bin()
        .args([
            "run",
            file.to_str().unwrap(),
            "--agents",
            "k1,k2",
            "--agent-silence",
            "1s",
            "--json",
            json.to_str().unwrap(),
            "--stream-stats",
            ticks.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Killed once k1 has been seen sending for a second in `both`, not after a guessed time.
    let bound = Instant::now() + support::HANG;
    while !std::fs::read_to_string(&ticks)
        .unwrap_or_default()
        .lines()
        .any(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap_or_default();
            r["class"] == "both" && r["agent"] == "k1" && r["sent_per_sec"].as_f64() > Some(0.0)
        })
    {
        assert!(Instant::now() < bound, "k1 never sent");
        std::thread::sleep(Duration::from_millis(50));
    }
    k1.kill();
    let out = coord.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(err.contains("agent k1 has been silent for "), "{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors = schema_errors_in("workload-result-v1.schema.json", &doc);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(doc["exit_status"], 9);
    // The class k1 shared: its partial result kept, k1 named as the agent that sent none.
    let both = class(&doc, "both");
    assert_eq!(both["exit_status"], 9);
    assert_eq!(
        both["result"]["agents"]["missing"],
        serde_json::json!(["k1"])
    );
    assert!(
        both["error"]
            .as_str()
            .is_some_and(|e| e.contains("agent k1")),
        "{}",
        both["error"]
    );
    // The class k1 ran alone: nothing to keep, and it says why.
    let lost = class(&doc, "lost");
    assert_eq!(lost["exit_status"], 9);
    assert!(lost["error"].as_str().is_some_and(|e| e.contains("k1")));
    // The class on k2 alone ran its whole 8 s, undisturbed.
    let spared = class(&doc, "spared");
    assert_eq!(spared["exit_status"], 0, "{}", spared["error"]);
    let sent = u(&spared["result"]["throughput"]["msgs"]);
    assert!((3_500..=4_100).contains(&sent), "spared sent {sent}");
}
