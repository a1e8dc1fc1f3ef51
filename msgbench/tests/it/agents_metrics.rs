//! `--metrics-listen` on the coordinator of a run on agents: `/metrics` parses as OpenMetrics
//! and serves the merged figures without an `agent` label and each agent's with one, under the
//! names of a single run; the merged counters are the sum of the agents' on every page, and the
//! final page holds the result's own counts under the result's run id.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::agent::Agent;
use crate::support::openmetrics::{self, Exposition, Sample};
use crate::support::{self, bin, scratch_dir, u, TestServer};

/// The sample of `name` with exactly these labels besides `run` and `scenario`.
fn exactly(e: &Exposition, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let found: Vec<&Sample> = e
        .all(name)
        .filter(|s| {
            s.labels.len() == labels.len() + 2
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .collect();
    assert!(found.len() <= 1, "{name} {labels:?}: {found:?}");
    found.first().map(|s| s.value)
}

/// The agents a page has series of.
fn agents_on(e: &Exposition) -> BTreeSet<String> {
    e.samples
        .iter()
        .filter_map(|s| s.labels.get("agent").cloned())
        .collect()
}

/// What must hold on every page: the merged message counters are the sums of the agents' (on
/// one page, so read at one moment), and there is no merged latency.
fn check_page(e: &Exposition, text: &str) {
    let roles: BTreeSet<&str> = e
        .all("msgbench_messages_total")
        .map(|s| s.labels["role"].as_str())
        .collect();
    for role in roles {
        let per_agent: f64 = e
            .all("msgbench_messages_total")
            .filter(|s| s.labels["role"] == role && s.labels.contains_key("agent"))
            .map(|s| s.value)
            .sum();
        let merged = exactly(e, "msgbench_messages_total", &[("role", role)]);
        assert_eq!(merged, Some(per_agent), "{role}\n{text}");
    }
    let errors: f64 = e
        .all("msgbench_errors_total")
        .filter(|s| s.labels.contains_key("agent"))
        .map(|s| s.value)
        .sum();
    assert_eq!(exactly(e, "msgbench_errors_total", &[]), Some(errors));
    assert!(
        !e.samples
            .iter()
            .any(|s| s.name.starts_with("msgbench_latency") && !s.labels.contains_key("agent")),
        "a merged latency made of the agents' percentiles:\n{text}"
    );
}

/// Starts a coordinator with `args` plus `--metrics-listen 127.0.0.1:0`, and reads the address
/// it announces (on stderr, before anything is connected to); stderr's lines come on the
/// channel.
fn coordinate(args: &[&str]) -> (Child, String, mpsc::Receiver<String>) {
    let mut coord = bin()
        .args(args)
        .args(["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "2m"])
        .arg("--no-progress")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let err = coord.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    loop {
        let Ok(line) = rx.recv_timeout(support::HANG) else {
            let _ = coord.kill();
            let _ = coord.wait();
            panic!("no address announced: {lines:?}");
        };
        if let Some(a) = line
            .strip_prefix("--metrics-listen: http://")
            .and_then(|a| a.strip_suffix("/metrics"))
        {
            return (coord, a.to_string(), rx);
        }
        lines.push(line);
    }
}

/// Scrapes `addr` until the final figures are up, checks every page and hands it to `each`
/// (the final one too); returns the final page. The server stops once it has been taken. The
/// deadline only guards against a hang.
fn until_final(addr: &str, mut each: impl FnMut(&Exposition, &str)) -> Exposition {
    let deadline = Instant::now() + support::HANG;
    loop {
        assert!(
            Instant::now() < deadline,
            "the run never showed final figures"
        );
        let text = openmetrics::scrape(addr).expect("the coordinator serves /metrics");
        let e = openmetrics::parse(&text).unwrap_or_else(|p| panic!("{p}\n{text}"));
        if !e.samples.is_empty() {
            check_page(&e, &text);
        }
        each(&e, &text);
        if exactly(&e, "msgbench_run_finished", &[]) == Some(1.0) {
            return e;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_coordinator_serves_merged_and_per_agent_figures_on_metrics() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "m1", &[], &[]);
    let _b = Agent::start(&server.url, "m2", &[], &[]);
    let dir = scratch_dir("coord-metrics");
    let json = dir.join("r.json");
    let (mut coord, addr, rx) = coordinate(&[
        "pubsub",
        "--pubs",
        "2",
        "--subs",
        "2",
        "--rate",
        "500",
        "--duration",
        "5s",
        "--server",
        &server.url,
        "--agents",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    let mut both = None;
    let last = until_final(&addr, |e, text| {
        if both.is_none() && agents_on(e) == ["m1", "m2"].map(String::from).into() {
            both = Some(text.to_string());
        }
    });
    let status = coord.wait().unwrap();
    let lines: Vec<String> = rx.try_iter().collect();
    assert!(status.success(), "{status}: {lines:?}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();

    // Each agent's series under the single run's names, with its `agent` label.
    let text = both.expect("a page with both agents");
    let e = openmetrics::parse(&text).unwrap();
    for agent in ["m1", "m2"] {
        let on = [("agent", agent)];
        assert!(
            exactly(&e, "msgbench_tick_end_seconds", &on).is_some(),
            "{agent}\n{text}"
        );
        assert_eq!(exactly(&e, "msgbench_agent_up", &on), Some(1.0), "{text}");
        let roles = e
            .all("msgbench_messages_total")
            .filter(|s| s.labels.get("agent").map(String::as_str) == Some(agent))
            .count();
        assert!(roles > 0, "{agent} has no message counts\n{text}");
        assert!(
            exactly(&e, "msgbench_errors_total", &on).is_some(),
            "{text}"
        );
    }
    assert!(
        exactly(&e, "msgbench_tick_end_seconds", &[]).is_some(),
        "{text}"
    );

    // The final page: the result's run id, and its counts.
    let run_id = doc["run_id"].as_str().unwrap();
    for s in &last.samples {
        assert_eq!(s.labels["run"], run_id, "{s:?}");
        assert_eq!(s.labels["scenario"], "pubsub", "{s:?}");
    }
    for role in ["pub", "sub"] {
        let msgs = u(&doc["by_role"][role]["msgs"]) as f64;
        assert_eq!(
            exactly(&last, "msgbench_messages_total", &[("role", role)]),
            Some(msgs),
            "{role}"
        );
    }
    for agent in ["m1", "m2"] {
        let on = [("agent", agent)];
        assert_eq!(exactly(&last, "msgbench_run_finished", &on), Some(1.0));
    }
}

#[test]
fn a_killed_agent_keeps_its_last_figures_marked_down() {
    let server = TestServer::start();
    let mut a = Agent::start(&server.url, "k1", &[], &[]);
    let _b = Agent::start(&server.url, "k2", &[], &[]);
    let (mut coord, addr, rx) = coordinate(&[
        "pubsub",
        "--pubs",
        "2",
        "--subs",
        "2",
        "--rate",
        "500",
        "--duration",
        "60s",
        "--agent-silence",
        "4s",
        "--server",
        &server.url,
        "--agents",
        "k1,k2",
    ]);
    // Killed once a page shows it sending, not after a fixed time.
    let mut killed = false;
    let last = until_final(&addr, |e, _| {
        let sent = e
            .all("msgbench_messages_total")
            .any(|s| s.labels.get("agent").map(String::as_str) == Some("k1") && s.value > 0.0);
        if !killed && sent {
            a.kill();
            killed = true;
        }
    });
    assert!(killed, "k1 never showed on a page");
    let status = coord.wait().unwrap();
    let lines: Vec<String> = rx.try_iter().collect();
    assert_eq!(status.code(), Some(9), "{lines:?}");
    assert_eq!(
        exactly(&last, "msgbench_agent_up", &[("agent", "k1")]),
        Some(0.0)
    );
    assert_eq!(
        exactly(&last, "msgbench_agent_up", &[("agent", "k2")]),
        Some(1.0)
    );
    // Its last figures stay, in the merged counters as in its own (check_page: they add up).
    let k1_sent = last
        .all("msgbench_messages_total")
        .filter(|s| s.labels.get("agent").map(String::as_str) == Some("k1"))
        .map(|s| s.value)
        .sum::<f64>();
    assert!(k1_sent > 0.0, "{:?}", last.samples);
    assert_eq!(
        exactly(&last, "msgbench_run_finished", &[("agent", "k1")]),
        Some(0.0)
    );
}
