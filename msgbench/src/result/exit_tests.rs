//! The exit status of a JetStream run under a fault: a write stored without its
//! acknowledgement (lost with the node that held it) is indeterminate and allowed; an
//! acknowledged write lost, or a run without a fault that does not reconcile, is loss.

use std::collections::BTreeMap;
use std::time::Duration;

use super::*;
use crate::engine::jsapi::StreamState;
use crate::error::{exit, ErrorCounts};
use crate::stats::recovery::{FaultKind, FaultReport, FaultSpec, Owed};

/// A run that acknowledged 100 writes of `stored`, `lost` of them missing, under a fault or
/// not.
fn js_run(stored: u64, lost: u64, fault: bool) -> RunResult {
    let mut r = RunResult::new(
        "js.pub",
        "2026-11-27T12:00:00Z".into(),
        serde_json::Value::Null,
        ServerMeta::for_tests(),
        &ErrorCounts::default(),
        false,
    );
    let stream = StreamReport {
        name: "s".into(),
        acked: 100,
        duplicate_acks: 0,
        repeated_acks: 0,
        deduplicated: 0,
        before: StreamState::default(),
        after: None,
        stored: Some(stored),
        unacked_stored: Some(stored + lost - 100),
        unacked_seqs: Vec::new(),
        reconciled: stored == 100 && lost == 0,
        unread: None,
        acked_fingerprint: None,
        config: None,
        found: None,
    };
    r.jetstream = Some(JsReport::of("file", "async", vec![stream]));
    r.durability = Some(Durability {
        sent: 120,
        ok: Some(100 - lost),
        lost: Some(lost),
        lost_seqs: Vec::new(),
        removed: Some(0),
        duplicated: None,
        indeterminate: Some(stored + lost - 100),
        refused: BTreeMap::new(),
        unanswered: 20,
        replicas: None,
        divergent: None,
        divergent_count: None,
        messages_read_ns: None,
        replicas_not_read: None,
        lost_by_position: None,
        recovered: None,
        recovered_seqs: Vec::new(),
        disk: None,
    });
    let spec = FaultSpec {
        kind: FaultKind::Kill,
        target: None,
        at: Duration::from_secs(1),
        hold: Duration::ZERO,
        corrupt: None,
    };
    r.fault = fault.then(|| FaultReport::new(spec, Some(1), None, &[], (Owed::rate(1.0), 1.0), 0));
    r
}

#[test]
fn writes_stored_without_an_acknowledgement_fail_a_run_only_without_a_fault() {
    assert_eq!(js_run(100, 0, false).exit_code(false), exit::OK);
    assert_eq!(js_run(103, 0, true).exit_code(false), exit::OK);
    assert_eq!(js_run(103, 0, false).exit_code(false), exit::LOSS);
    // An acknowledged write missing is loss, fault or not.
    assert_eq!(js_run(99, 1, true).exit_code(false), exit::LOSS);
}

#[test]
fn a_replica_that_disagrees_with_its_leader_is_loss_even_when_every_write_is_stored() {
    let mut r = js_run(100, 0, true);
    let d = r.durability.as_mut().unwrap();
    d.divergent = Some(Vec::new());
    assert_eq!(r.exit_code(false), exit::OK);
    let d = r.durability.as_mut().unwrap();
    d.divergent = Some(vec![Divergence {
        stream: "s".into(),
        node: "msgbench-2".into(),
        leader: "msgbench-0".into(),
        what: "last_seq",
        seq: None,
        leader_value: Some(100),
        node_value: Some(90),
    }]);
    assert_eq!(r.exit_code(false), exit::LOSS);
    // --allow-loss lets it pass, as it does a lost write.
    assert_eq!(r.exit_code(true), exit::OK);
}
