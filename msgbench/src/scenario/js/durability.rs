//! The verdict on a JetStream run's writes: every publish in one class. Acknowledged and in the
//! stream is ok; acknowledged and missing is lost, the one failure; acknowledged as a duplicate
//! of a message id the stream holds is a class of its own; a publish the server refused or
//! never answered may be missing, and is counted by why, never as loss; one stored without its
//! acknowledgement arriving is indeterminate, and allowed when the run saw why
//! ([`super::explain`]).
//!
//! Which acknowledged sequences are still in a stream is read from its state with the deleted
//! sequences listed, twice: right after the load, and again at the end (after the replicas were
//! read back). Missing at the last read is lost, and each loss is put in one of Jepsen's
//! classes by its place among the acknowledged writes (prefix, middle, postfix); missing at
//! the first and there at the last is recovered. A stream whose limits or retention remove
//! messages (a bucket's history) may have removed an acknowledged one itself: inside its range
//! that counts as removed, not lost; beyond its last sequence nothing but loss explains it.

use std::collections::BTreeMap;

use super::explain::{self, Shape, READ_MAX};
use super::stream::Opened;
use crate::engine::jsapi::{Api, StreamState};
use crate::engine::request::JsAcks;
use crate::error::ErrorKind;
use crate::result::{Durability, JsReport, LostByPosition, RunResult, ScheduleReport};

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
    /// The first sequences stored without an acknowledgement ([`READ_MAX`] and one more).
    indeterminate_seqs: Vec<u64>,
    by_place: LostByPosition,
}

/// A stream as one read found it: its state and the sequences deleted from it.
pub(super) type Read = Option<(StreamState, Vec<u64>)>;

/// Each stream of `opened` read once (waiting, while nobody answers for it, for a leader
/// still being elected after a fault).
fn read_all(opened: &Opened, api: &mut Api) -> Vec<Read> {
    (opened.streams.iter())
        .map(
            |o| match super::stream::after_run(api, |a| a.stream_state_detailed(&o.config.name)) {
                Ok(a) => Some(a),
                // A stream gone since (a memory stream through a restart) holds nothing.
                Err(crate::error::Error::JetStream {
                    kind: ErrorKind::JsStreamNotFound,
                    ..
                }) => Some((StreamState::default(), Vec::new())),
                Err(_) => None,
            },
        )
        .collect()
}

/// What explains a write stored without its acknowledgement: what the publishes looked like
/// (`shape`), and the errors the run counted.
pub(super) struct Why<'a> {
    pub shape: Shape<'a>,
    pub errors: &'a BTreeMap<&'static str, u64>,
}

/// The verdict on a run in one process: each stream of `opened` read again, its state with
/// the sequences deleted from it, and `result`'s publishes and errors; the writes stored
/// without an acknowledgement each explained, or not, by what the publishes looked like
/// (`shape`). Returns the read, for [`settle`].
pub(super) fn verdict(
    opened: &Opened,
    acks: &[JsAcks],
    api: &mut Api,
    result: &RunResult,
    shape: Shape<'_>,
) -> (Durability, Vec<Read>) {
    let first = read_all(opened, api);
    let acked = acks.iter().map(|a| a.acked.len()).sum();
    let deduplicated = acks.iter().map(|a| a.deduplicated).sum();
    let mut d = unacknowledged(result, acked, deduplicated);
    let classes = classes_of(opened, acks, &first);
    let why = Why {
        shape,
        errors: &result.errors,
    };
    d.explained = explain_all(opened, acks, api, &classes, &why);
    total(classes, &mut d);
    (d, first)
}

/// Reads each stream again at the end, and judges by that read: what is missing now is lost;
/// what was missing at the `first` read and is there now is recovered. The writes stored
/// without an acknowledgement are explained again only when the last read found others.
pub(super) fn settle(
    opened: &Opened,
    acks: &[JsAcks],
    api: &mut Api,
    first: &[Read],
    d: &mut Durability,
    why: &Why<'_>,
) {
    let last = read_all(opened, api);
    let classes = classes_of(opened, acks, &last);
    let before = classes_of(opened, acks, first);
    let same = |a: &Option<Classes>, b: &Option<Classes>| match (a, b) {
        (Some(a), Some(b)) => {
            a.indeterminate == b.indeterminate && a.indeterminate_seqs == b.indeterminate_seqs
        }
        (None, None) => true,
        _ => false,
    };
    if !classes.iter().zip(&before).all(|(a, b)| same(a, b)) {
        d.explained = explain_all(opened, acks, api, &classes, why);
    }
    total(classes, d);
    let mut recovered = Some(0u64);
    let mut seqs = Vec::new();
    for (((o, acks), f), l) in opened.streams.iter().zip(acks).zip(first).zip(&last) {
        let (Some((fs, fd)), Some((ls, ld))) = (f, l) else {
            recovered = None;
            continue;
        };
        let limited = o.config.limited();
        let (n, listed) = acks
            .acked
            .select(LOST_LISTED.saturating_sub(seqs.len()), |q| {
                !present(fs, fd, q) && present(ls, ld, q) && !(limited && q <= fs.last_seq)
            });
        recovered = recovered.map(|r| r + n);
        seqs.extend(listed);
    }
    d.recovered = recovered;
    d.recovered_seqs = seqs;
}

/// What the lazy filesystem under each node of `target` saw; `None` when no store sat on one.
pub(super) fn disk_of(target: &crate::server::Target) -> Option<Vec<crate::result::NodeDisk>> {
    let nodes: Vec<&crate::server::EmbeddedServer> =
        target.embedded.iter().chain(&target.peers).collect();
    let clustered = nodes.len() > 1;
    let seen: Vec<crate::result::NodeDisk> = (nodes.iter().enumerate())
        .filter_map(|(i, n)| {
            let s = n.disk_stats()?;
            let node = if clustered {
                crate::server::node_name(i)
            } else {
                "server".to_string()
            };
            Some(crate::result::NodeDisk {
                node,
                counts: counts(s),
            })
        })
        .collect();
    (!seen.is_empty()).then_some(seen)
}

#[cfg(target_os = "linux")]
fn counts(s: crate::server::disk::DiskStats) -> crate::result::NodeDiskCounts {
    crate::result::NodeDiskCounts {
        fsyncs: s.fsyncs,
        dir_fsyncs: s.dir_fsyncs,
        writes: s.writes,
        bytes_written: s.bytes_written,
        bytes_synced: s.bytes_synced,
        written_back: s.written_back,
        power_losses: s.power_losses,
        bytes_dropped: s.bytes_dropped,
        files_dropped: s.files_dropped,
    }
}

#[cfg(not(target_os = "linux"))]
fn counts(_: crate::server::disk::DiskStats) -> crate::result::NodeDiskCounts {
    crate::result::NodeDiskCounts::default()
}

/// Each stream's acknowledged writes in their classes, as `reads` found the streams (none for
/// a stream that could not be read).
fn classes_of(opened: &Opened, acks: &[JsAcks], reads: &[Read]) -> Vec<Option<Classes>> {
    (opened.streams.iter())
        .zip(&opened.before)
        .zip(acks)
        .zip(reads)
        .map(|(((o, before), acks), read)| {
            read.as_ref().map(|(state, deleted)| {
                classify(&acks.acked, *before, state, deleted, o.config.limited())
            })
        })
        .collect()
}

/// Each stream's writes stored without an acknowledgement, explained or not.
fn explain_all(
    opened: &Opened,
    acks: &[JsAcks],
    api: &mut Api,
    classes: &[Option<Classes>],
    why: &Why<'_>,
) -> Option<crate::result::Explained> {
    let mut explained = Vec::new();
    for ((o, acks), c) in opened.streams.iter().zip(acks).zip(classes) {
        if let Some(c) = c.as_ref().filter(|c| c.indeterminate > 0) {
            explained.push(explain::explain(
                api,
                &o.config.name,
                (&c.indeterminate_seqs, c.indeterminate),
                &acks.given_up,
                why.shape,
                why.errors,
            ));
        }
    }
    explain::merge(explained)
}

/// The streams' classes added up into `d`: unknown (null) when any stream could not be read.
fn total(classes: Vec<Option<Classes>>, d: &mut Durability) {
    let mut total: Option<Classes> = Some(Classes::default());
    for one in classes {
        total = match (total, one) {
            (Some(mut t), Some(c)) => {
                t.ok += c.ok;
                t.lost += c.lost;
                t.removed += c.removed;
                t.indeterminate += c.indeterminate;
                t.by_place.prefix += c.by_place.prefix;
                t.by_place.middle += c.by_place.middle;
                t.by_place.postfix += c.by_place.postfix;
                let room = LOST_LISTED.saturating_sub(t.lost_seqs.len());
                t.lost_seqs.extend(c.lost_seqs.into_iter().take(room));
                Some(t)
            }
            _ => None,
        };
    }
    if let Some(t) = total {
        d.ok = Some(t.ok);
        d.lost = Some(t.lost);
        d.lost_seqs = t.lost_seqs;
        d.removed = Some(t.removed);
        d.indeterminate = Some(t.indeterminate);
        d.lost_by_position = Some(t.by_place);
    } else {
        (d.ok, d.lost, d.removed, d.indeterminate) = (None, None, None, None);
        d.lost_seqs.clear();
        d.lost_by_position = None;
    }
}

/// Whether `seq` is in a stream read as `state` with `deleted` removed.
fn present(state: &StreamState, deleted: &[u64], seq: u64) -> bool {
    state.messages > 0
        && seq >= state.first_seq
        && seq <= state.last_seq
        && deleted.binary_search(&seq).is_err()
}

/// The verdict on a run on agents, from the coordinator's reconciliation: the agents send
/// their acknowledgements as a count and a fingerprint, not the sequences, so an exact
/// reconciliation says nothing acknowledged is lost, and anything else that it cannot be told
/// (null).
pub(super) fn across_agents(
    merged: &RunResult,
    reconciled: bool,
    (acked, deduplicated): (u64, u64),
) -> Durability {
    let mut d = unacknowledged(merged, acked, deduplicated);
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
    let acked = (result.own.get::<JsReport>()).map_or(result.delivery.received, |js| js.acked);
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
    // A stage's shortfall of acknowledgements is not loss either (a capacity probe's SLO on
    // `lost` reads the run's). Each host's own stages already say so; stages merged from agents
    // are made anew, so they are told again.
    result
        .schedule
        .iter_mut()
        .for_each(ScheduleReport::loss_judged_for_the_run);
    result.own.put(d);
    // The verdict written beside the figures, for what reads the file (a report): the same
    // judgement the exit status makes.
    let allowed = (result.own.get::<JsReport>())
        .filter(|js| !js.reconciled)
        .map(|js| !js.unreconciled(result));
    if let Some(js) = result.own.get_mut::<JsReport>() {
        js.unacked_allowed = allowed;
    }
}

/// The publishes not acknowledged, by why: refusals by the error kind the server answered
/// with, those answered as duplicates, and the rest unanswered. The classes of acknowledged
/// ones are left unknown.
fn unacknowledged(result: &RunResult, acked: u64, deduplicated: u64) -> Durability {
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
        .saturating_sub(deduplicated)
        .saturating_sub(refused.values().sum());
    Durability {
        sent,
        ok: None,
        lost: None,
        lost_seqs: Vec::new(),
        removed: None,
        duplicated: None,
        indeterminate: None,
        explained: None,
        deduplicated,
        refused,
        unanswered,
        replicas: None,
        divergent: None,
        divergent_count: None,
        messages_read_ns: None,
        replicas_not_read: None,
        lost_by_position: None,
        recovered: None,
        recovered_seqs: Vec::new(),
        disk: None,
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
    let here = |seq: u64| present(after, deleted, seq);
    // Removed by the stream itself: at or below its last sequence, under limits or retention
    // that remove messages. Beyond it, or in a stream without them, a missing one is lost.
    let removed_by_stream = |seq: u64| limited && seq <= after.last_seq;
    let is_lost = |s: u64| !here(s) && !removed_by_stream(s);
    let (missing, _) = acked.select(0, |s| !here(s));
    let (lost, lost_seqs) = acked.select(LOST_LISTED, is_lost);
    // Jepsen's places: before the first acknowledged write still there, after the last one,
    // or between; with none there, the stream lost its tail back to the start.
    let (mut first_kept, mut last_kept) = (None, None);
    acked.select(0, |s| {
        if here(s) {
            first_kept.get_or_insert(s);
            last_kept = Some(s);
        }
        false
    });
    let mut by_place = LostByPosition::default();
    acked.select(0, |s| {
        if is_lost(s) {
            match (first_kept, last_kept) {
                (Some(f), _) if s < f => by_place.prefix += 1,
                (_, Some(l)) if s < l => by_place.middle += 1,
                _ => by_place.postfix += 1,
            }
        }
        false
    });
    let mut indeterminate = 0;
    let mut indeterminate_seqs = Vec::new();
    for s in (before.last_seq + 1..=after.last_seq).filter(|&s| here(s) && !acked.contains(s)) {
        indeterminate += 1;
        if indeterminate_seqs.len() <= READ_MAX {
            indeterminate_seqs.push(s);
        }
    }
    Classes {
        ok: acked.len() - missing,
        lost,
        lost_seqs,
        removed: missing - lost,
        indeterminate,
        indeterminate_seqs,
        by_place,
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
    fn losses_are_placed_before_between_or_after_what_the_stream_kept() {
        // 11, 12 lost before the first kept (13); 15 between; 19, 20 after the last (18).
        let c = classify(&acked(11..=20), BEFORE, &state(13, 18, 5), &[15], false);
        assert_eq!(c.lost_seqs, vec![11, 12, 15, 19, 20]);
        let p = c.by_place;
        assert_eq!((p.prefix, p.middle, p.postfix), (2, 1, 2));
        // Nothing kept: the tail was lost back to the start.
        let c = classify(&acked(11..=14), BEFORE, &StreamState::default(), &[], false);
        assert_eq!(
            (c.by_place.prefix, c.by_place.middle, c.by_place.postfix),
            (0, 0, 4)
        );
    }

    #[test]
    fn stored_without_an_acknowledgement_is_indeterminate_not_lost() {
        let c = classify(&acked([11, 12, 14]), BEFORE, &state(1, 14, 14), &[], false);
        assert_eq!((c.ok, c.lost, c.indeterminate), (3, 0, 1));
        assert_eq!(c.indeterminate_seqs, vec![13]);
    }
}
