//! The Grafana dashboard in deploy/grafana/msgbench.json is checked against what msgbench serves,
//! so a metric or label renamed in the code cannot leave a panel silently empty:
//! - every PromQL expression in it (panel targets, the panels of collapsed rows, the template
//!   variables' queries) is read by a small tokenizer (promql.rs), which names the
//!   metrics and the labels each one uses;
//! - three real runs are scraped on `/metrics` from start to end: a latency run on a rate
//!   schedule (messages, latency, stages), a request run nobody answers (errors by kind), and the
//!   coordinator of a latency run on two real agents (the per-agent row). Every metric named must
//!   be a series of those scrapes, and every label must be on at least one of that metric's
//!   series. The per-agent row and the `$agent` variable are held to the coordinator's scrape
//!   alone, since only a coordinator serves them (so the row cannot ask for a P50 or an error
//!   kind, which a coordinator does not have); the other panels to all three, since they draw a
//!   coordinator's merged figures too, and must keep its agents' series out of their sums;
//! - the dashboard must keep the panels the issue asked for (throughput by role, interval P50 and
//!   P99, errors by kind, the schedule's stage and target, and per agent: throughput by role, P99,
//!   errors and whether it is up), so an emptied dashboard fails too.
//!
//! `job` and `instance` are not in the exposition, and are accounted for rather than skipped:
//! Prometheus adds them to every series it scrapes, so msgbench must not serve them itself
//! (Prometheus would rename its own to `exported_job`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::promql::{references, Refs};
use crate::support::agent::Agent;
use crate::support::openmetrics;
use crate::support::{self, bin, TestServer};
use serde_json::Value;

/// Labels Prometheus attaches to what it scrapes: never in the exposition itself.
const TARGET_LABELS: &[&str] = &["job", "instance"];

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/grafana/msgbench.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("deploy/grafana/msgbench.json: {e}"))
}

// ---------------------------------------------------------------------------------------------
// The dashboard's queries.

/// One PromQL expression of the dashboard and where it is (a panel's title and the target's
/// refId, or a variable's name).
#[derive(Debug)]
struct Query {
    place: String,
    /// The row it is in, if any (its title).
    row: Option<String>,
    expr: String,
}

/// Every expression: the panels' targets (a collapsed row keeps its panels inside it) and the
/// query variables.
fn queries(dash: &Value) -> Vec<Query> {
    let mut found = Vec::new();
    fn panels(list: &Value, row: Option<&str>, found: &mut Vec<Query>) {
        for p in list.as_array().into_iter().flatten() {
            let title = p["title"].as_str().unwrap_or("(untitled)");
            let here = if p["type"] == "row" { Some(title) } else { row };
            for t in p["targets"].as_array().into_iter().flatten() {
                let target = t["refId"].as_str().unwrap_or("(no refId)");
                let expr = t["expr"]
                    .as_str()
                    .unwrap_or_else(|| panic!("panel '{title}', target {target}: no expr"));
                found.push(Query {
                    place: format!("panel '{title}' target {target}"),
                    row: here.map(str::to_string),
                    expr: expr.to_string(),
                });
            }
            panels(&p["panels"], here, found);
        }
    }
    panels(&dash["panels"], None, &mut found);
    for v in dash["templating"]["list"].as_array().into_iter().flatten() {
        if v["type"] != "query" {
            continue;
        }
        let name = v["name"].as_str().unwrap();
        // Grafana keeps the query as an object (newer) or a string (older), and a copy of it
        // in `definition`: all of them are read.
        for q in [&v["query"]["query"], &v["query"], &v["definition"]] {
            if let Some(expr) = q.as_str() {
                found.push(Query {
                    place: format!("variable ${name}"),
                    row: None,
                    expr: expr.to_string(),
                });
            }
        }
    }
    found
}

fn all_references(dash: &Value) -> Vec<(Query, Refs)> {
    queries(dash)
        .into_iter()
        .map(|q| {
            let r = references(&q.expr).unwrap_or_else(|e| panic!("{}: {e}", q.place));
            (q, r)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Live scrapes.

/// Kills the run if the test fails while it is under way.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Series names seen, each with the label names on any of its samples.
type Seen = BTreeMap<String, BTreeSet<String>>;

/// Runs msgbench with `args` and `--metrics-listen 127.0.0.1:0`, scraping `/metrics` until the
/// run's final figures are up (taking them also ends its wait for a scraper), and adds every
/// series of every scrape to `seen`. Returns the final page.
fn scrape_run(args: &[&str], seen: &mut Seen) -> openmetrics::Exposition {
    let mut child = bin()
        .args(args)
        .args(["--metrics-listen", "127.0.0.1:0", "--no-progress"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("msgbench starts");
    let err = child.stderr.take().unwrap();
    let mut child = Running(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // The address line comes once the port is bound, so the first scrape finds it listening. A
    // coordinator may say other things first (about its agents), so lines are read up to it.
    let mut before = Vec::new();
    let addr = loop {
        let line = rx
            .recv_timeout(support::HANG)
            .unwrap_or_else(|_| panic!("{args:?}: no address announced on stderr: {before:?}"));
        if let Some(a) = line
            .strip_prefix("--metrics-listen: http://")
            .and_then(|a| a.strip_suffix("/metrics"))
        {
            break a.to_string();
        }
        before.push(line);
    };
    // Scraping ends at the final figures; the deadline only guards against a hang.
    let deadline = Instant::now() + support::HANG;
    let last = loop {
        assert!(
            Instant::now() < deadline,
            "{args:?}: no final figures after {:?}",
            support::HANG
        );
        let body = openmetrics::scrape(&addr)
            .expect("the server answers until the final figures are taken");
        let e = openmetrics::parse(&body).unwrap_or_else(|p| panic!("{p}\n{body}"));
        for s in &e.samples {
            seen.entry(s.name.clone())
                .or_default()
                .extend(s.labels.keys().cloned());
        }
        // The merged (or single run's) flag: a coordinator also serves one per agent.
        let finished = e
            .all("msgbench_run_finished")
            .any(|s| !s.labels.contains_key("agent") && s.value == 1.0);
        if finished {
            break e;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let status = child.0.wait().unwrap();
    let lines: Vec<String> = rx.try_iter().collect();
    assert!(status.success(), "{args:?}: {status}: {before:?} {lines:?}");
    last
}

/// Whether a query draws from what only a coordinator serves: the per-agent row and the
/// variable that lists the agents.
fn per_agent(q: &Query) -> bool {
    q.row.is_some() || q.place == "variable $agent"
}

#[test]
fn every_metric_and_label_the_dashboard_queries_is_in_a_live_scrape() {
    let refs = all_references(&dashboard());
    let s = TestServer::start();
    let mut single = Seen::new();
    // Messages by role, latency after the warm-up, and the schedule's stages.
    scrape_run(
        &[
            "latency",
            "--server",
            &s.url,
            "--rate-schedule",
            "500@2s,1000@2s",
        ],
        &mut single,
    );
    // Errors by kind: nobody answers, so every request fails as no_responders.
    scrape_run(
        &[
            "request",
            "--server",
            &s.url,
            "--responders",
            "0",
            "--rate",
            "200",
            "--duration",
            "2s",
            "--allow-loss",
        ],
        &mut single,
    );
    // The per-agent row: a coordinator on two real agents. In latency the second agent's
    // subscriber times the messages, so a per-agent P99 is served.
    let _a = Agent::start(&s.url, "d1", &[], &[]);
    let _b = Agent::start(&s.url, "d2", &[], &[]);
    let mut coord = Seen::new();
    let last = scrape_run(
        &[
            "latency",
            "--server",
            &s.url,
            "--rate",
            "1000",
            "--duration",
            "4s",
            "--agents",
            "2",
        ],
        &mut coord,
    );
    let mut all = single.clone();
    for (m, ls) in &coord {
        all.entry(m.clone()).or_default().extend(ls.iter().cloned());
    }

    let mut problems = Vec::new();
    // An agent's figures stay on the page to the end, so the final one has both agents'.
    let agents: BTreeSet<&str> = last
        .samples
        .iter()
        .filter_map(|s| s.labels.get("agent").map(String::as_str))
        .collect();
    if agents != BTreeSet::from(["d1", "d2"]) {
        problems.push(format!(
            "the coordinator's final page has series of agents {agents:?} by `agent`, not of d1 \
             and d2"
        ));
    }
    for (q, r) in &refs {
        let (seen, whose) = if per_agent(q) {
            (&coord, "the coordinator's scrape")
        } else {
            (&all, "a live scrape")
        };
        for m in &r.metrics {
            if !seen.contains_key(m) {
                problems.push(format!(
                    "{}: metric {m} is not a series of {whose} (`{}`)",
                    q.place, q.expr
                ));
            }
        }
        for (m, l) in &r.labels {
            let on_it = seen.get(m).is_some_and(|ls| ls.contains(l));
            if TARGET_LABELS.contains(&l.as_str()) {
                // Prometheus adds it; msgbench serving it would clash (`exported_job`).
                if on_it {
                    problems.push(format!("{m} carries `{l}`, a label Prometheus sets"));
                }
            } else if seen.contains_key(m) && !on_it {
                problems.push(format!(
                    "{}: label `{l}` is on no series of {m} in {whose} (it has {:?})",
                    q.place, seen[m]
                ));
            }
        }
        // A panel above the rows draws a coordinator's merged figures: where the coordinator
        // also serves a metric per agent, the panel must leave those series out, or its sums
        // would count every agent twice.
        if !per_agent(q) && q.place.starts_with("panel ") {
            for m in &r.metrics {
                let per_agent_too = coord.get(m).is_some_and(|ls| ls.contains("agent"));
                if per_agent_too && !q.expr.contains(r#"agent="""#) {
                    problems.push(format!(
                        "{}: {m} has per-agent series on a coordinator, and `{}` does not \
                         keep to the merged ones (agent=\"\")",
                        q.place, q.expr
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the dashboard asks for what msgbench does not serve:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_dashboard_has_the_panels_asked_for_on_a_chosen_prometheus() {
    let dash = dashboard();
    assert!(
        dash["schemaVersion"].as_u64().unwrap() >= 36,
        "schemaVersion"
    );
    let vars: BTreeMap<&str, &Value> = dash["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v))
        .collect();
    let ds = vars.get("datasource").expect("a datasource variable");
    assert_eq!(ds["type"], "datasource");
    assert_eq!(ds["query"], "prometheus");
    for name in ["job", "instance", "run", "agent"] {
        let kind = vars.get(name).and_then(|v| v["type"].as_str());
        assert_eq!(kind, Some("query"), "${name}");
    }

    // Every panel and target draws from the chosen data source, so the file imports anywhere.
    let mut ids = BTreeSet::new();
    fn each_panel<'a>(list: &'a Value, out: &mut Vec<&'a Value>) {
        for p in list.as_array().into_iter().flatten() {
            out.push(p);
            each_panel(&p["panels"], out);
        }
    }
    let mut panels = Vec::new();
    each_panel(&dash["panels"], &mut panels);
    let chosen = serde_json::json!({"type": "prometheus", "uid": "${datasource}"});
    for p in &panels {
        let title = p["title"].as_str().unwrap();
        assert!(
            ids.insert(p["id"].as_u64().unwrap()),
            "panel id twice: {title}"
        );
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(p["type"], "timeseries", "{title}");
        assert_eq!(p["datasource"], chosen, "{title}");
        for t in p["targets"].as_array().unwrap() {
            assert_eq!(t["datasource"], chosen, "{title} {}", t["refId"]);
        }
    }

    // The five topics, by what their panels query.
    let refs = all_references(&dash);
    let covers = |in_row: bool, metrics: &[&str], labels: &[&str]| {
        let mut union = Refs::default();
        for (q, r) in &refs {
            if q.place.starts_with("panel ") && q.row.is_some() == in_row {
                union.metrics.extend(r.metrics.iter().cloned());
                union.labels.extend(r.labels.iter().cloned());
            }
        }
        metrics.iter().all(|m| {
            union.metrics.contains(*m)
                && labels
                    .iter()
                    .all(|l| union.labels.contains(&(m.to_string(), l.to_string())))
        })
    };
    let topics: [(&str, bool, &[&str], &[&str]); 8] = [
        (
            "throughput by role",
            false,
            &["msgbench_messages_per_second"],
            &["role"],
        ),
        (
            "interval P50/P99",
            false,
            &[
                "msgbench_latency_p50_seconds",
                "msgbench_latency_p99_seconds",
            ],
            &[],
        ),
        (
            "errors by kind",
            false,
            &["msgbench_errors_total"],
            &["kind"],
        ),
        (
            "the schedule's stage and target",
            false,
            &[
                "msgbench_stage_index",
                "msgbench_stage_target_messages_per_second",
            ],
            &[],
        ),
        (
            "per agent: throughput by role",
            true,
            &["msgbench_messages_per_second"],
            &["agent", "role"],
        ),
        (
            "per agent: interval P99",
            true,
            &["msgbench_latency_p99_seconds"],
            &["agent"],
        ),
        (
            "per agent: errors",
            true,
            &["msgbench_errors_total"],
            &["agent"],
        ),
        (
            "per agent: up or given up",
            true,
            &["msgbench_agent_up"],
            &["agent"],
        ),
    ];
    for (topic, in_row, metrics, labels) in topics {
        assert!(covers(in_row, metrics, labels), "no panel for {topic}");
    }
    let rows: Vec<&&Value> = panels.iter().filter(|p| p["type"] == "row").collect();
    assert!(
        rows.iter().any(|r| r["repeat"] == "agent"),
        "no row repeated per agent"
    );
}
