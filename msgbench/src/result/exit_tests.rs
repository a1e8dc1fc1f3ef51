//! The exit status of a JetStream run: a write stored without its acknowledgement is
//! indeterminate, and allowed when the run saw why (each one of its publishes given up on), or,
//! where that was not told, under a fault msgbench injected; an acknowledged write lost, or a
//! stored write nothing explains, is loss.

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
    r.own.put(JsReport::of("file", "async", vec![stream]));
    r.own.put(Durability {
        sent: 120,
        ok: Some(100 - lost),
        lost: Some(lost),
        lost_seqs: Vec::new(),
        removed: Some(0),
        duplicated: None,
        indeterminate: Some(stored + lost - 100),
        explained: None,
        deduplicated: 0,
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
fn a_write_stored_without_an_acknowledgement_passes_when_explained_fault_or_not() {
    let explained = |unexplained| {
        Some(Explained {
            by: "message",
            not_read: None,
            causes: vec![Cause {
                kind: "lost_in_flight",
                publishes: 16,
                stored: Some(3 - unexplained),
                at_ns: vec![3_020_000_000],
            }],
            unexplained,
            unexplained_seqs: Vec::new(),
        })
    };
    for fault in [false, true] {
        let mut r = js_run(103, 0, fault);
        r.own.get_mut::<Durability>().unwrap().explained = explained(0);
        assert_eq!(r.exit_code(false), exit::OK, "fault {fault}");
        assert!(!r.own.get::<JsReport>().unwrap().unreconciled(&r));
        // One that nothing the run saw explains fails it, under a fault too.
        r.own.get_mut::<Durability>().unwrap().explained = explained(1);
        assert_eq!(r.exit_code(false), exit::LOSS, "fault {fault}");
        assert!(r.own.get::<JsReport>().unwrap().unreconciled(&r));
        assert_eq!(r.exit_code(true), exit::OK, "--allow-loss");
    }
}

#[test]
fn a_replica_that_disagrees_with_its_leader_is_loss_even_when_every_write_is_stored() {
    let mut r = js_run(100, 0, true);
    let d = r.own.get_mut::<Durability>().unwrap();
    d.divergent = Some(Vec::new());
    assert_eq!(r.exit_code(false), exit::OK);
    let d = r.own.get_mut::<Durability>().unwrap();
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

#[test]
fn a_fault_asked_for_and_never_injected_has_a_status_of_its_own_unless_allowed() {
    let mut r = js_run(100, 0, true);
    assert_eq!(r.exit_code(false), exit::OK);
    r.fault.as_mut().unwrap().injected_at_ns = None;
    assert_eq!(r.exit_code(false), exit::FAULT_MISSED);
    // Loss found is the finding that matters more.
    let mut lossy = js_run(99, 1, true);
    lossy.fault.as_mut().unwrap().injected_at_ns = None;
    assert_eq!(lossy.exit_code(false), exit::LOSS);
    r.fault.as_mut().unwrap().missed_allowed = true;
    assert_eq!(r.exit_code(false), exit::OK);
}

#[test]
fn a_loss_the_run_could_not_count_does_not_fail_it() {
    // A client library's publisher alone under compare: the counts say 100 expected and none
    // received, but nobody here saw the arrivals; the stream's reconciliation judges instead.
    let mut r = js_run(100, 0, false);
    r.delivery.lost = 100;
    r.delivery.unmeasured = crate::stats::delivery::Unmeasured::ARRIVALS;
    assert_eq!(r.exit_code(false), exit::OK);
    r.delivery.unmeasured = crate::stats::delivery::Unmeasured::default();
    assert_eq!(r.exit_code(false), exit::LOSS);
}
