//! The merge checked on results built as agents build them and sent as JSON: latency over
//! random samples against one histogram of them all, delivery of a publisher-only and a
//! subscriber-only agent worked out by hand, and a partial merge. The other sums are in
//! `sum_tests.rs`, refused inputs and the schema in `input_tests.rs`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::merge;
use crate::error::{exit, ErrorCounts};
use crate::result::{
    throughput_sections, AgentEntry, AgentStatus, LatencyStats, RunResult, ServerMeta,
};
use crate::stats::delivery::{Delivery, PublisherDelivery};
use crate::stats::latency::new_histogram;
use crate::stats::throughput::{ClientRun, Role};

pub(super) fn server(url: &str) -> ServerMeta {
    ServerMeta {
        url: url.to_string(),
        name: "n1".into(),
        version: "2.15.2".into(),
        embedded: false,
        max_payload: 1 << 20,
        auth: "none",
        config: None,
    }
}

/// A scenario's params as its run writes them (the schema checks them per scenario): a pubsub
/// run's, copied from `msgbench pubsub --msgs 100 --json -`.
fn params_of(scenario: &str) -> serde_json::Value {
    match scenario {
        "pubsub" => json!({
            "allow_loss": false,
            "connection": {"fault": null, "link": null, "ping_interval_secs": 2.0,
                           "reconnect": false, "tls": null},
            "duration_secs": null, "headers": [], "msgs": 100, "multisubject": null,
            "payload_file": false, "pubs": 1, "rate": 0.0, "rate_schedule": null, "size": 128,
            "size_distribution": null, "sub_stall": null, "subject": "msgbench",
            "subject_template": null, "subs": 1, "timeout_secs": 5.0,
            "arrivals": "fixed", "arrivals_seed": null
        }),
        _ => json!({}),
    }
}

/// An agent's result with nothing measured yet.
pub(super) fn agent(scenario: &'static str, errors: &ErrorCounts) -> RunResult {
    let started = "2026-01-01T00:00:00Z".to_string();
    let mut r = RunResult::new(
        scenario,
        started,
        params_of(scenario),
        server("nats://10.0.0.1:4222"),
        errors,
        false,
    );
    // Every scenario says how it accounted delivery; the empty default is not a value.
    r.delivery.accounting = "none";
    r
}

pub(super) fn doc(r: &RunResult) -> Value {
    serde_json::to_value(r).expect("a result serialises")
}

/// Clients that all started at one instant and ran for the given milliseconds.
pub(super) fn clients(r: &mut RunResult, list: &[(Role, u32, u64, u64)]) {
    let t0 = Instant::now();
    let runs: Vec<ClientRun> = list
        .iter()
        .map(|&(role, id, msgs, ms)| ClientRun {
            role,
            id,
            msgs,
            bytes: msgs * 100,
            start: Some(t0),
            end: Some(t0 + Duration::from_millis(ms)),
        })
        .collect();
    (r.throughput, r.by_role, r.clients) = throughput_sections(&runs);
}

pub(super) fn run(scenario: &'static str, agents: Vec<AgentEntry>) -> RunResult {
    let fallback = server("nats://fallback:4222");
    let started = "2026-01-01T00:00:05Z".to_string();
    merge(
        scenario,
        started,
        params_of(scenario).into(),
        fallback,
        agents,
        Some(250),
    )
    .expect("merges")
}

/// xorshift64*: deterministic samples with no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A latency spread evenly over the decades from 1 µs to 100 ms.
    fn latency(&mut self) -> u64 {
        let decades = (self.next() % 5_000) as f64 / 1_000.0;
        (1_000.0 * 10f64.powf(decades)) as u64 + self.next() % 7
    }
}

#[test]
fn merged_latency_is_the_histogram_of_all_samples() {
    for n in [2usize, 7, 64] {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ n as u64);
        let mut all = new_histogram();
        let mut agents = Vec::new();
        for i in 0..n {
            let mut r = agent("latency", &ErrorCounts::default());
            // Every fifth agent measured no latency (a publisher-only agent): it adds nothing.
            if i % 5 != 4 {
                let mut h = new_histogram();
                for _ in 0..rng.next() % 3_000 {
                    let v = rng.latency();
                    h.record(v).unwrap();
                    all.record(v).unwrap();
                }
                r.latency = Some(LatencyStats::of(&h));
            }
            agents.push(AgentEntry::complete(format!("a{i}"), doc(&r)));
        }
        let merged = run("latency", agents);
        let lat = merged.latency.expect("merged latency");
        let h = crate::stats::hdr::decode_base64(&lat.hdr).unwrap();
        assert_eq!(
            (h.len(), h.min(), h.max()),
            (all.len(), all.min(), all.max())
        );
        let counts = |h: &hdrhistogram::Histogram<u64>| -> Vec<(u64, u64)> {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect()
        };
        assert_eq!(counts(&h), counts(&all), "{n} agents");
        let want = LatencyStats::of(&all);
        assert_eq!(lat.percentiles_ns.0, want.percentiles_ns.0, "{n} agents");
        assert_eq!(
            (lat.count, lat.min_ns, lat.max_ns),
            (want.count, want.min_ns, want.max_ns)
        );
        assert!(merged.latency_uncorrected.is_none());
    }
}

fn publisher(
    id: u32,
    sent: u64,
    received: u64,
    lost: u64,
    dup: u64,
    reo: u64,
) -> PublisherDelivery {
    PublisherDelivery {
        id,
        sent,
        received,
        lost,
        duplicated: dup,
        reordered: reo,
    }
}

/// Agent "pubs" runs publishers 0 and 1 (1,000 and 800 messages). Agent "subs" runs two
/// subscribers and was told those counts: subscriber 0 got everything plus 3 duplicates of
/// publisher 1, subscriber 1 missed 10 of publisher 1's, 2 of its arrivals out of order.
pub(super) fn pubsub_agents() -> Vec<AgentEntry> {
    let mut pubs = agent("pubsub", &ErrorCounts::default());
    clients(
        &mut pubs,
        &[(Role::Pub, 0, 1000, 2000), (Role::Pub, 1, 800, 1600)],
    );
    pubs.delivery = Delivery {
        sent: 1800,
        duplicated: Some(0),
        reordered: Some(0),
        accounting: "exact",
        publishers: vec![
            publisher(0, 1000, 0, 0, 0, 0),
            publisher(1, 800, 0, 0, 0, 0),
        ],
        ..Delivery::default()
    };
    let mut subs = agent("pubsub", &ErrorCounts::default());
    clients(
        &mut subs,
        &[(Role::Sub, 1, 1790, 2400), (Role::Sub, 0, 1803, 2500)],
    );
    subs = subs.with_missed(&[(1, 10), (0, 0)]);
    subs.delivery = Delivery {
        sent: 1800,
        expected: 3600,
        received: 3593,
        lost: 10,
        duplicated: Some(3),
        reordered: Some(2),
        unstamped: 0,
        accounting: "exact",
        publishers: vec![
            publisher(0, 1000, 2000, 0, 0, 0),
            publisher(1, 800, 1593, 10, 3, 2),
        ],
        ..Delivery::default()
    };
    vec![
        AgentEntry::complete("subs", doc(&subs)),
        AgentEntry::complete("pubs", doc(&pubs)),
    ]
}

#[test]
fn a_publisher_only_and_a_subscriber_only_agent_account_delivery_exactly() {
    let r = run("pubsub", pubsub_agents());
    let d = &r.delivery;
    // Publisher 1's 800 are sent once, though both agents list them.
    assert_eq!(
        (d.sent, d.expected, d.received, d.lost),
        (1800, 3600, 3593, 10)
    );
    assert_eq!(
        (d.duplicated, d.reordered, d.accounting),
        (Some(3), Some(2), "exact")
    );
    assert_eq!(
        d.publishers,
        vec![
            publisher(0, 1000, 2000, 0, 0, 0),
            publisher(1, 800, 1593, 10, 3, 2)
        ]
    );
    assert_eq!(r.exit_code(false), exit::LOSS);
    assert_eq!(r.exit_code(true), exit::OK);
    // Rates: summed counts over the longest span (2.5 s overall and for subscribers, 2 s for
    // publishers).
    assert_eq!((r.throughput.msgs, r.throughput.seconds), (5393, 2.5));
    assert!((r.throughput.msgs_per_sec - 5393.0 / 2.5).abs() < 1e-9);
    let (p, s) = (&r.by_role["pub"], &r.by_role["sub"]);
    assert_eq!(
        (p.throughput.msgs, p.throughput.seconds, p.clients),
        (1800, 2.0, 2)
    );
    assert_eq!(
        (s.throughput.msgs, s.throughput.bytes, s.clients),
        (3593, 359_300, 2)
    );
    assert!((s.throughput.msgs_per_sec - 3593.0 / 2.5).abs() < 1e-9);
    // Client rates: publisher 0 at 1,000 in 2 s, publisher 1 at 800 in 1.6 s: 500/s each.
    let spread = p.client_rates;
    assert!((spread.min - 500.0).abs() < 1e-9 && (spread.max - 500.0).abs() < 1e-9);
    // Each subscriber's loss, as its agent counted it, survives the merge and names the
    // slowest.
    let missed: Vec<(u32, Option<u64>)> = r.clients.iter().map(|c| (c.id, c.missed)).collect();
    assert_eq!(
        missed,
        vec![(0, None), (1, None), (0, Some(0)), (1, Some(10))]
    );
    let slowest: Vec<(u32, u64, Option<u64>)> = s
        .spread
        .slowest
        .iter()
        .map(|c| (c.id, c.msgs, c.missed))
        .collect();
    assert_eq!(slowest, vec![(1, 1790, Some(10)), (0, 1803, Some(0))]);
    assert_eq!(
        (s.spread.msgs.min, s.spread.msgs.median, s.spread.msgs.max),
        (1790, 1796.5, 1803)
    );
    let order: Vec<(Role, u32)> = r.clients.iter().map(|c| (c.role, c.id)).collect();
    assert_eq!(
        order,
        vec![
            (Role::Pub, 0),
            (Role::Pub, 1),
            (Role::Sub, 0),
            (Role::Sub, 1)
        ]
    );
}

#[test]
fn accounting_is_as_weak_as_the_weakest_subscriber_agent() {
    let sub_agent = |accounting: &'static str, dup: Option<u64>| {
        let mut r = agent("pubsub", &ErrorCounts::default());
        clients(&mut r, &[(Role::Sub, 0, 10, 1000)]);
        r.delivery = Delivery {
            sent: 10,
            expected: 10,
            received: 10,
            duplicated: dup,
            reordered: dup,
            accounting,
            ..Delivery::default()
        };
        doc(&r)
    };
    let r = run(
        "pubsub",
        vec![
            AgentEntry::complete("a", sub_agent("exact", Some(1))),
            AgentEntry::complete("b", sub_agent("count", None)),
        ],
    );
    assert_eq!(
        (r.delivery.accounting, r.delivery.duplicated),
        ("count", None)
    );
    // Without publishers listed, what was sent is each agent's own count, summed.
    assert_eq!(r.delivery.sent, 20);
    // Publishers only: their own "exact" (no subscriber, nothing missed) accounts for no
    // arrivals, and nothing arrived to be duplicated.
    let pubs = pubsub_agents().remove(1);
    let r = run("pubsub", vec![pubs]);
    assert_eq!(
        (r.delivery.accounting, r.delivery.duplicated),
        ("none", None)
    );
    assert_eq!((r.delivery.sent, r.delivery.expected), (1800, 0));
}

#[test]
fn a_missing_agent_leaves_a_partial_result_that_names_it() {
    let progress = json!({"t_s": 3.0, "sent": 1234});
    let mut agents = pubsub_agents();
    agents.truncate(1); // only "subs" completed
    agents.push(AgentEntry::missing(
        "east-2",
        "no answer for 10 s",
        Some(progress.clone()),
    ));
    agents.push(AgentEntry::failed("west-1", "cannot connect"));
    let r = run("pubsub", agents);
    let a = r.agents.as_ref().expect("agents section");
    assert_eq!(a.missing, vec!["east-2", "west-1"]);
    assert_eq!(a.cross_agent_latency_uncertainty_ns, Some(250));
    assert_eq!(a.agents[1].status, AgentStatus::Missing);
    assert_eq!(a.agents[1].last_progress, Some(progress));
    assert_eq!(a.agents[2].reason.as_deref(), Some("cannot connect"));
    assert!(a.agents[0].result.is_some() && a.agents[1].result.is_none());
    // The figures are those of the one that completed, the server the one it measured.
    assert_eq!((r.throughput.msgs, r.delivery.received), (3593, 3593));
    assert!(!r.by_role.contains_key("pub"));
    assert_eq!(r.server.url, "nats://10.0.0.1:4222");

    let none = run("pubsub", vec![AgentEntry::missing("x", "gone", None)]);
    assert_eq!(none.server.url, "nats://fallback:4222");
    assert_eq!((none.throughput.msgs, none.clients.len()), (0, 0));
    assert!(none.by_role.is_empty() && none.latency.is_none() && none.timeline.is_none());
    assert_eq!(none.agents.unwrap().missing, vec!["x"]);
}

#[test]
fn publishers_alone_on_every_agent_leave_arrivals_and_loss_null() {
    // Two publisher-only agents (a `pub` on agents): each writes null for what arrived and
    // was lost, and so does the merge, where it once summed those nulls' zeros into "lost 0".
    let agents: Vec<AgentEntry> = ["p1", "p2"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut r = agent("pubsub", &ErrorCounts::default());
            clients(&mut r, &[(Role::Pub, i as u32, 500, 1000)]);
            r.delivery = Delivery {
                sent: 500,
                accounting: "none",
                unmeasured: crate::stats::delivery::Unmeasured::ARRIVALS,
                ..Delivery::default()
            };
            AgentEntry::complete(*name, doc(&r))
        })
        .collect();
    let merged = doc(&run("pubsub", agents));
    let d = &merged["delivery"];
    assert_eq!(d["sent"], 1000, "{d}");
    for field in ["expected", "received", "lost"] {
        assert!(d[field].is_null(), "{field}: {d}");
    }
}
