//! The verdict on a JetStream run's writes: every publish in one class. Acknowledged and in the
//! stream is ok; acknowledged and missing is lost, the one failure; a publish the server refused
//! or never answered may be missing, and is counted by why, never as loss; one stored without
//! its acknowledgement arriving is indeterminate, and allowed.
//!
//! Which acknowledged sequences are still in a stream is read from its state with the deleted
//! sequences listed. A stream whose limits or retention remove messages (a bucket's history)
//! may have removed an acknowledged one itself: inside its range that counts as removed, not
//! lost; beyond its last sequence nothing but loss explains it.

use std::collections::BTreeMap;

use super::stream::Opened;
use crate::engine::jsapi::{Api, StreamState};
use crate::error::ErrorKind;
use crate::result::{Durability, RunResult};
use crate::scenario::request::JsAcks;

/// How many lost sequences the result names.
const LOST_LISTED: usize = 10;

/// The error kinds with which a server refuses a publish: it answered, and said no.
const REFUSALS: [ErrorKind; 5] = [
    ErrorKind::NoResponders,
    ErrorKind::JsStreamNotFound,
    ErrorKind::JsWrongLastSequence,
    ErrorKind::JsStreamFull,
    ErrorKind::JsOther,
];

/// One stream's classes of acknowledged writes.
#[derive(Debug, Default, PartialEq)]
struct Classes {
    ok: u64,
    lost: u64,
    lost_seqs: Vec<u64>,
    removed: u64,
    indeterminate: u64,
}

/// The verdict on a run in one process: each stream of `opened` read again, its state with
/// the sequences deleted from it, and `result`'s publishes and errors.
pub(super) fn verdict(
    opened: &Opened,
    acks: &[JsAcks],
    api: &mut Api,
    result: &RunResult,
) -> Durability {
    let mut total: Option<Classes> = Some(Classes::default());
    for ((o, before), acks) in opened.streams.iter().zip(&opened.before).zip(acks) {
        let after = match api.stream_state_detailed(&o.config.name) {
            Ok(a) => Some(a),
            // A stream gone since (a memory stream through a restart) holds nothing.
            Err(crate::error::Error::JetStream {
                kind: ErrorKind::JsStreamNotFound,
                ..
            }) => Some((StreamState::default(), Vec::new())),
            Err(_) => None,
        };
        let one = after.map(|(state, deleted)| {
            classify(&acks.acked, *before, &state, &deleted, o.config.limited())
        });
        total = match (total, one) {
            (Some(mut t), Some(c)) => {
                t.ok += c.ok;
                t.lost += c.lost;
                t.removed += c.removed;
                t.indeterminate += c.indeterminate;
                let room = LOST_LISTED.saturating_sub(t.lost_seqs.len());
                t.lost_seqs.extend(c.lost_seqs.into_iter().take(room));
                Some(t)
            }
            _ => None,
        };
    }
    let acked = acks.iter().map(|a| a.acked.len()).sum();
    let mut d = unacknowledged(result, acked);
    if let Some(t) = total {
        d.ok = Some(t.ok);
        d.lost = Some(t.lost);
        d.lost_seqs = t.lost_seqs;
        d.removed = Some(t.removed);
        d.indeterminate = Some(t.indeterminate);
    }
    d
}

/// The verdict on a run on agents, from the coordinator's reconciliation: the agents send
/// their acknowledgements as a count and a fingerprint, not the sequences, so an exact
/// reconciliation says nothing acknowledged is lost, and anything else that it cannot be told
/// (null).
pub(super) fn across_agents(merged: &RunResult, reconciled: bool, acked: u64) -> Durability {
    let mut d = unacknowledged(merged, acked);
    if reconciled {
        (d.ok, d.lost, d.removed, d.indeterminate) = (Some(acked), Some(0), Some(0), Some(0));
    }
    d.replicas_not_read = Some("a run on agents: the coordinator reads no node's replica".into());
    d
}

/// Makes the result's delivery say what the verdict says: a JetStream publish is owed to the
/// stream once acknowledged, so `expected` counts the acknowledged, `received` those the stream
/// stored (still there, or removed since by its own limits), and `lost` those it does not
/// hold. Refused and unanswered publishes are in the verdict, not in `lost`. Each publisher's
/// row counts its acknowledgements; loss is judged per stream.
pub(super) fn judge(result: &mut RunResult, d: Durability) {
    // Every sequence acknowledged, late ones included (a publish counted as timed out whose
    // acknowledgement came after all).
    let acked = (result.jetstream.as_ref()).map_or(result.delivery.received, |js| js.acked);
    let dl = &mut result.delivery;
    dl.expected = acked;
    // A verdict that could not tell what was lost leaves what the stream holds unknown too:
    // null, never 0.
    let lost = d.lost.unwrap_or(0);
    dl.received = acked - lost.min(acked);
    dl.lost = lost;
    dl.unmeasured.received |= d.lost.is_none();
    dl.unmeasured.lost |= d.lost.is_none();
    dl.accounting = "stored";
    for p in &mut dl.publishers {
        p.lost = 0;
    }
    result.durability = Some(d);
}

/// The publishes not acknowledged, by why: refusals by the error kind the server answered
/// with, and the rest unanswered. The classes of acknowledged ones are left unknown.
fn unacknowledged(result: &RunResult, acked: u64) -> Durability {
    let refused: BTreeMap<String, u64> = REFUSALS
        .iter()
        .filter_map(|k| {
            let n = result.errors.get(k.as_str()).copied().unwrap_or(0);
            (n > 0).then(|| (k.as_str().to_string(), n))
        })
        .collect();
    let sent = result.delivery.sent;
    let unanswered = sent
        .saturating_sub(acked)
        .saturating_sub(refused.values().sum());
    Durability {
        sent,
        ok: None,
        lost: None,
        lost_seqs: Vec::new(),
        removed: None,
        duplicated: None,
        indeterminate: None,
        refused,
        unanswered,
        replicas: None,
        divergent: None,
        divergent_count: None,
        messages_read_ns: None,
        replicas_not_read: None,
    }
}

/// One stream's classes: each acknowledged sequence still there, removed by a limit inside the
/// stream's range, or lost; and the sequences stored during the run without an acknowledgement.
fn classify(
    acked: &crate::stats::acks::AckSet,
    before: StreamState,
    after: &StreamState,
    deleted: &[u64],
    limited: bool,
) -> Classes {
    let gone = |seq: u64| deleted.binary_search(&seq).is_ok();
    let present = |seq: u64| {
        after.messages > 0 && seq >= after.first_seq && seq <= after.last_seq && !gone(seq)
    };
    // Removed by the stream itself: at or below its last sequence, under limits or retention
    // that remove messages. Beyond it, or in a stream without them, a missing one is lost.
    let removed_by_stream = |seq: u64| limited && seq <= after.last_seq;
    let (missing, _) = acked.select(0, |s| !present(s));
    let (lost, lost_seqs) = acked.select(LOST_LISTED, |s| !present(s) && !removed_by_stream(s));
    let indeterminate = (before.last_seq + 1..=after.last_seq)
        .filter(|&s| present(s) && !acked.contains(s))
        .count() as u64;
    Classes {
        ok: acked.len() - missing,
        lost,
        lost_seqs,
        removed: missing - lost,
        indeterminate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::acks::AckSet;

    fn acked(seqs: impl IntoIterator<Item = u64>) -> AckSet {
        let mut s = AckSet::new(11);
        for q in seqs {
            s.insert(q);
        }
        s
    }

    fn state(first: u64, last: u64, messages: u64) -> StreamState {
        StreamState {
            messages,
            first_seq: first,
            last_seq: last,
            ..StreamState::default()
        }
    }

    const BEFORE: StreamState = StreamState {
        messages: 10,
        bytes: 0,
        first_seq: 1,
        last_seq: 10,
    };

    #[test]
    fn every_acknowledged_sequence_stored_is_ok() {
        let c = classify(&acked(11..=20), BEFORE, &state(1, 20, 20), &[], false);
        assert_eq!((c.ok, c.lost, c.removed, c.indeterminate), (10, 0, 0, 0));
    }

    #[test]
    fn acknowledged_sequences_deleted_or_beyond_the_end_are_lost_and_named() {
        // 13 and 15 deleted behind the run's back; the stream ends at 18, two acked beyond it.
        let c = classify(&acked(11..=20), BEFORE, &state(1, 18, 14), &[13, 15], false);
        assert_eq!((c.ok, c.lost), (6, 4));
        assert_eq!(c.lost_seqs, vec![13, 15, 19, 20]);
    }

    #[test]
    fn a_stream_gone_loses_everything_acknowledged() {
        let c = classify(&acked(11..=30), BEFORE, &StreamState::default(), &[], false);
        assert_eq!((c.ok, c.lost, c.lost_seqs.len()), (0, 20, LOST_LISTED));
    }

    #[test]
    fn under_limits_a_missing_sequence_inside_the_range_is_removed_beyond_it_lost() {
        // A bucket keeping one value per key: 11 and 12 replaced by later puts; 21 acked but
        // the stream ends at 20.
        let c = classify(&acked(11..=21), BEFORE, &state(1, 20, 18), &[11, 12], true);
        assert_eq!((c.ok, c.removed, c.lost), (8, 2, 1));
        assert_eq!(c.lost_seqs, vec![21]);
    }

    #[test]
    fn stored_without_an_acknowledgement_is_indeterminate_not_lost() {
        let c = classify(&acked([11, 12, 14]), BEFORE, &state(1, 14, 14), &[], false);
        assert_eq!((c.ok, c.lost, c.indeterminate), (3, 0, 1));
    }
}
