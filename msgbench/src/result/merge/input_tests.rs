//! Documents the merge refuses, each with its own error kind naming the agent, and a merged
//! result checked against the result schema.

use serde_json::{json, Value};

use super::tests::{agent, doc, pubsub_agents, run, server};
use super::{merge, MergeError};
use crate::error::ErrorCounts;
use crate::result::{AgentEntry, AgentStatus, LatencyStats, Rtt};
use crate::stats::latency::new_histogram;

const BAD: &str = "agent-b7";

/// Merges a good agent's document and one `spoil` has changed.
fn merge_spoiled(spoil: impl FnOnce(&mut Value)) -> MergeError {
    let mut r = agent("pubsub", &ErrorCounts::default());
    let mut h = new_histogram();
    h.record(1_000).unwrap();
    r.latency = Some(LatencyStats::of(&h));
    let good = doc(&r);
    let mut bad = good.clone();
    spoil(&mut bad);
    let agents = vec![
        AgentEntry::complete("agent-a1", good),
        AgentEntry::complete(BAD, bad),
    ];
    let e = merge(
        "pubsub",
        "now".into(),
        json!({}).into(),
        server("nats://x:1"),
        agents,
        None,
    )
    .expect_err("refused");
    assert_eq!(e.agent(), BAD);
    assert!(e.to_string().contains(BAD), "{e}");
    e
}

#[test]
fn a_document_of_another_schema_is_not_a_result() {
    let e = merge_spoiled(|d| d["schema"] = "msgbench.plan/v1".into());
    assert!(
        matches!(&e, MergeError::NotAResult { found, .. } if found.contains("plan")),
        "{e:?}"
    );
    let e = merge_spoiled(|d| *d = json!(["not", "an", "object"]));
    assert!(matches!(e, MergeError::NotAResult { .. }), "{e:?}");
}

#[test]
fn an_agent_that_ran_another_scenario_is_refused() {
    let e = merge_spoiled(|d| d["scenario"] = "pub".into());
    assert!(
        matches!(&e, MergeError::ScenarioMismatch { expected: "pubsub", found, .. } if found == "pub"),
        "{e:?}"
    );
}

#[test]
fn a_corrupt_histogram_is_refused() {
    let e = merge_spoiled(|d| d["latency"]["hdr"] = "HISTFAAAACl4nJNpmSzMwMDAwQAGTEAMAAnK".into());
    assert!(
        matches!(
            e,
            MergeError::BadHistogram {
                section: "latency",
                ..
            }
        ),
        "{e:?}"
    );
    let e = merge_spoiled(|d| d["latency"]["hdr"] = "not base64!".into());
    assert!(matches!(e, MergeError::BadHistogram { .. }), "{e:?}");
}

#[test]
fn unknown_names_and_missing_fields_are_refused() {
    let e = merge_spoiled(|d| d["errors"]["warp_drive"] = 1.into());
    assert!(
        matches!(&e, MergeError::UnknownValue { value, .. } if value == "warp_drive"),
        "{e:?}"
    );
    let e = merge_spoiled(|d| d["delivery"]["accounting"] = "roughly".into());
    assert!(matches!(e, MergeError::UnknownValue { .. }), "{e:?}");
    let e = merge_spoiled(|d| {
        d["delivery"].as_object_mut().unwrap().remove("lost");
    });
    assert!(
        matches!(&e, MergeError::BadField { field, .. } if field == "/delivery/lost"),
        "{e:?}"
    );
    let e = merge_spoiled(|d| {
        d.as_object_mut().unwrap().remove("connections");
    });
    assert!(
        matches!(&e, MergeError::BadField { field, .. } if field == "/connections"),
        "{e:?}"
    );
    let mut empty = AgentEntry::complete(BAD, json!({}));
    empty.result = None;
    let e = merge(
        "pubsub",
        "now".into(),
        json!({}).into(),
        server("nats://x:1"),
        vec![empty],
        None,
    )
    .expect_err("refused");
    assert!(matches!(e, MergeError::NoResult { .. }), "{e:?}");
}

/// Errors of `doc` against the checked-in result schema.
fn schema_errors(doc: &Value) -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../schema/result-v1.schema.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn a_merged_result_follows_the_schema() {
    let mut agents = pubsub_agents();
    let mut with_latency = agent("pubsub", &ErrorCounts::default());
    let mut h = new_histogram();
    // Two samples clamped to 1 ns: below the run's clock uncertainty (±250 ns).
    for v in [1, 1, 900, 1_000, 250_000] {
        h.record(v).unwrap();
    }
    with_latency.latency = Some(LatencyStats::of(&h));
    with_latency.rtt_ns = Some(Rtt {
        a: 40_000,
        b: 42_000,
    });
    agents.insert(0, AgentEntry::complete("lat", doc(&with_latency)));
    let mut gone = AgentEntry::missing("gone", "no answer", Some(json!({"sent": 5})));
    gone.labels.insert("zone".into(), "eu-1".into());
    (gone.clock_offset_ns, gone.clock_uncertainty_ns) = (Some(-1_500), Some(300));
    (gone.pubs, gone.subs) = (2, 0);
    agents.push(gone);
    let merged = run("pubsub", agents);
    let v = doc(&merged);
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let below = &v["latency"]["below_clock_uncertainty"];
    assert_eq!(below["uncertainty_ns"], 250, "{below}");
    assert_eq!(below["figures"], json!(["min_ns", "10"]), "{below}");
    // The agents' own documents are results too, and the section is really checked.
    assert_eq!(v["agents"]["agents"][0]["status"], "complete");
    let mut broken = v.clone();
    broken["agents"]["agents"][3]["status"] = "lost".into();
    assert_eq!(
        schema_errors(&broken).len(),
        1,
        "{:?}",
        schema_errors(&broken)
    );
    let mut broken = v.clone();
    broken["agents"]["agents"][0]["result"]["delivery"]["lost"] = (-1).into();
    assert!(!schema_errors(&broken).is_empty());
    assert_eq!(
        merged.agents.as_ref().unwrap().agents[3].status,
        AgentStatus::Missing
    );
}
