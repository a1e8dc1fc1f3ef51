//! Why a write is in the stream without its acknowledgement. The run saw something that
//! explains it when the write is one of its own publishes whose answer never came: lost in
//! flight with a connection, timed out, or answered with a server error that does not say the
//! message was refused. Whether msgbench injected a fault does not matter: a user's own
//! cluster losing a node is the same event. A write that is none of them (a message another
//! client stored in the stream, or one whose acknowledgement msgbench received and missed) is
//! unexplained, and fails the run.
//!
//! Each such write is read back from the stream and matched by what its payload carries: the
//! publisher's message number (so the request it was part of) and its send time, against the
//! run's publishes given up on; a publish explains as many writes as it had messages. Where the
//! writes cannot be read one by one (payloads too short to carry a number, more than
//! [`READ_MAX`], a fast batch's publishes, whose windows are their own, or a read that fails),
//! they are told by count: explained while no more than the publishes given up on.

use std::collections::{BTreeMap, HashMap};

use crate::engine::jsapi::Api;
use crate::engine::jsframe::{SEQ_LEN, TIMED_LEN};
use crate::engine::request::GivenUp;
use crate::error::ErrorKind;
use crate::result::{Cause, Explained};
use crate::scenario::request::DrawnSizes;

/// How many writes stored without an acknowledgement a verdict reads one by one, per stream;
/// past it, they are told by count.
pub(super) const READ_MAX: usize = 1000;

/// How far a payload's send time may lie from its publish's, as the publisher's window saw it:
/// the two are taken microseconds apart, unless a thread is preempted in between.
const SENT_WITHIN_NS: u64 = 1_000_000_000;

/// How many sequences and times the result lists.
const LISTED: usize = 10;

/// The error kinds that can explain a write stored without its acknowledgement: every answer
/// that is not a refusal saying the message was not stored.
const CAUSES: [ErrorKind; 3] = [
    ErrorKind::LostInFlight,
    ErrorKind::RequestTimeout,
    ErrorKind::JsOther,
];

/// What the run's publishes looked like on the wire, to tell them in a stream.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape<'a> {
    /// Payload bytes of every message; with drawn sizes, the largest a draw gives.
    pub size: usize,
    /// Drawn sizes: a payload is a publish's only at the size drawn for its publisher's
    /// message.
    pub drawn: Option<&'a DrawnSizes>,
    /// Messages per request (an atomic batch), 1 otherwise.
    pub batch: u64,
    /// Whether the publishers' windows knew each publish given up on (all but fast batches).
    pub by_message: bool,
}

/// One stream's writes stored without an acknowledgement: `seqs`, the first [`READ_MAX`] (or
/// one more) of `total`, judged against `given_up` (its publishers' publishes given up on, with
/// their publishers' ids); `errors` counts what the run saw, for a judgement by count.
pub(super) fn explain(
    api: &mut Api,
    stream: &str,
    (seqs, total): (&[u64], u64),
    given_up: &[(u32, GivenUp)],
    shape: Shape<'_>,
    errors: &BTreeMap<&'static str, u64>,
) -> Explained {
    let given_up: Vec<(u32, &GivenUp)> = (given_up.iter().map(|(p, g)| (*p, g)))
        .filter(|(_, g)| CAUSES.contains(&g.why))
        .collect();
    let not_read = if !shape.by_message {
        Some("a fast batch's publishes are told by count".to_string())
    } else if shape.size < SEQ_LEN {
        Some(format!("{} B payloads carry no message number", shape.size))
    } else if total > READ_MAX as u64 {
        Some(format!(
            "more than {READ_MAX} such writes in stream {stream}"
        ))
    } else {
        None
    };
    if let Some(why) = not_read {
        return by_count(total, &publishes(&given_up), shape.by_message, errors, why);
    }
    let mut payloads = Vec::with_capacity(seqs.len());
    for &seq in seqs {
        match api.stored_payload(stream, seq) {
            Ok(p) => payloads.push((seq, p)),
            Err(e) => return by_count(total, &publishes(&given_up), true, errors, e.to_string()),
        }
    }
    matched(&payloads, &given_up, shape)
}

/// The publishes given up on, without their publishers.
fn publishes<'g>(given_up: &[(u32, &'g GivenUp)]) -> Vec<&'g GivenUp> {
    given_up.iter().map(|(_, g)| *g).collect()
}

/// Each payload matched with a publish given up on that it may be part of (`given_up` with
/// their publishers' ids).
fn matched(
    payloads: &[(u64, Vec<u8>)],
    given_up: &[(u32, &GivenUp)],
    shape: Shape<'_>,
) -> Explained {
    let ids: Vec<u32> = given_up.iter().map(|(p, _)| *p).collect();
    let given_up = publishes(given_up);
    let mut by_request: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, g) in given_up.iter().enumerate() {
        by_request.entry(g.request).or_default().push(i);
    }
    let mut room = vec![shape.batch.max(1); given_up.len()];
    let mut stored: HashMap<ErrorKind, u64> = HashMap::new();
    let mut e = Explained {
        by: "message",
        ..Explained::default()
    };
    for (seq, payload) in payloads {
        let found = ours(payload, shape).and_then(|(m, sent)| {
            let near = |g: &GivenUp| match (sent, g.sent_unix_ns) {
                (Some(a), Some(b)) => a.abs_diff(b) <= SENT_WITHIN_NS,
                _ => true,
            };
            // With drawn sizes, the payload is the size its publisher drew for message m.
            let drawn_for =
                |i: usize| (shape.drawn).is_none_or(|d| d.of_sender(ids[i]).of(m) == payload.len());
            (by_request.get(&(m / shape.batch.max(1)))?.iter())
                .copied()
                .find(|&i| room[i] > 0 && near(given_up[i]) && drawn_for(i))
        });
        match found {
            Some(i) => {
                room[i] -= 1;
                *stored.entry(given_up[i].why).or_default() += 1;
            }
            None => {
                e.unexplained += 1;
                if e.unexplained_seqs.len() < LISTED {
                    e.unexplained_seqs.push(*seq);
                }
            }
        }
    }
    e.causes = causes(&given_up, |k| Some(stored.get(&k).copied().unwrap_or(0)));
    e
}

/// The message number and send time a payload of this run carries, or `None` when it is not
/// one of this run's: its size differs (or, drawn, is outside what the draws give), or the
/// filler after the stamp is not msgbench's.
fn ours(payload: &[u8], shape: Shape<'_>) -> Option<(u64, Option<u64>)> {
    let size = payload.len();
    let fits = match shape.drawn {
        Some(d) => (d.sizes.min()..=d.sizes.max()).contains(&size),
        None => size == shape.size,
    };
    if !fits || size < SEQ_LEN {
        return None;
    }
    let stamp = size.min(TIMED_LEN);
    if payload[stamp..].iter().any(|b| *b != b'j') {
        return None;
    }
    let m = u64::from_le_bytes(payload[..SEQ_LEN].try_into().ok()?);
    let sent = (size >= TIMED_LEN)
        .then(|| {
            payload[SEQ_LEN..TIMED_LEN]
                .try_into()
                .ok()
                .map(u64::from_le_bytes)
        })
        .flatten();
    Some((m, sent))
}

/// Writes that could not be matched one by one (`why`): explained while no more than the
/// publishes given up on (from the windows, or, without them, from the run's error counts).
fn by_count(
    total: u64,
    given_up: &[&GivenUp],
    windows: bool,
    errors: &BTreeMap<&'static str, u64>,
    why: String,
) -> Explained {
    let causes = if windows {
        causes(given_up, |_| None)
    } else {
        (CAUSES.iter())
            .filter_map(|k| {
                let n = errors.get(k.as_str()).copied().unwrap_or(0);
                (n > 0).then(|| Cause {
                    kind: k.as_str(),
                    publishes: n,
                    stored: None,
                    at_ns: Vec::new(),
                })
            })
            .collect()
    };
    let could: u64 = causes.iter().map(|c| c.publishes).sum();
    Explained {
        by: "count",
        not_read: Some(why),
        causes,
        unexplained: total.saturating_sub(could),
        unexplained_seqs: Vec::new(),
    }
}

/// The publishes given up on, by kind in [`CAUSES`]' order, with `stored(kind)` writes each.
fn causes(given_up: &[&GivenUp], stored: impl Fn(ErrorKind) -> Option<u64>) -> Vec<Cause> {
    (CAUSES.iter())
        .filter_map(|&k| {
            let of: Vec<&&GivenUp> = given_up.iter().filter(|g| g.why == k).collect();
            if of.is_empty() {
                return None;
            }
            let mut at: Vec<u64> = of.iter().filter_map(|g| g.at_ns).collect();
            at.sort_unstable();
            at.dedup();
            at.truncate(LISTED);
            Some(Cause {
                kind: k.as_str(),
                publishes: of.len() as u64,
                stored: stored(k),
                at_ns: at,
            })
        })
        .collect()
}

/// The streams' judgements as one: causes added up by kind, and the first sequences.
pub(super) fn merge(all: Vec<Explained>) -> Option<Explained> {
    let mut it = all.into_iter();
    let mut out = it.next()?;
    for e in it {
        if e.by == "count" {
            out.by = "count";
            out.not_read = out.not_read.or(e.not_read);
        }
        out.unexplained += e.unexplained;
        let room = LISTED.saturating_sub(out.unexplained_seqs.len());
        out.unexplained_seqs
            .extend(e.unexplained_seqs.into_iter().take(room));
        for c in e.causes {
            match out.causes.iter_mut().find(|o| o.kind == c.kind) {
                Some(o) => {
                    o.publishes += c.publishes;
                    o.stored = o.stored.zip(c.stored).map(|(a, b)| a + b);
                    o.at_ns.extend(c.at_ns);
                    o.at_ns.sort_unstable();
                    o.at_ns.dedup();
                    o.at_ns.truncate(LISTED);
                }
                None => out.causes.push(c),
            }
        }
    }
    let order = |k: &str| CAUSES.iter().position(|c| c.as_str() == k);
    out.causes.sort_by_key(|c| order(c.kind));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: Shape = Shape {
        size: 32,
        drawn: None,
        batch: 1,
        by_message: true,
    };

    /// A payload as a publisher of this run writes it.
    fn payload(m: u64, sent: u64) -> Vec<u8> {
        let mut p = vec![b'j'; SHAPE.size];
        crate::engine::jsframe::stamp(&mut p, m, sent);
        p
    }

    fn gave_up(request: u64, sent: u64, why: ErrorKind) -> GivenUp {
        GivenUp {
            request,
            sent_unix_ns: Some(sent),
            why,
            at_ns: (why == ErrorKind::LostInFlight).then_some(3_020_000_000),
        }
    }

    #[test]
    fn a_write_that_is_a_publish_given_up_on_is_explained_by_why_it_was() {
        let given = [
            gave_up(7, 1_000, ErrorKind::LostInFlight),
            gave_up(8, 2_000, ErrorKind::LostInFlight),
            gave_up(9, 3_000, ErrorKind::RequestTimeout),
        ];
        let refs: Vec<(u32, &GivenUp)> = given.iter().map(|g| (0, g)).collect();
        let e = matched(
            &[(101, payload(7, 1_050)), (102, payload(9, 3_000))],
            &refs,
            SHAPE,
        );
        assert_eq!((e.by, e.unexplained), ("message", 0));
        assert_eq!(e.causes.len(), 2);
        assert_eq!(
            (e.causes[0].kind, e.causes[0].publishes, e.causes[0].stored),
            ("lost_in_flight", 2, Some(1))
        );
        assert_eq!(e.causes[0].at_ns, vec![3_020_000_000]);
        assert_eq!(e.causes[1].stored, Some(1));
    }

    #[test]
    fn a_write_of_another_client_or_of_a_publish_answered_is_unexplained() {
        let given = [gave_up(7, 1_000_000_000_000, ErrorKind::LostInFlight)];
        let refs: Vec<(u32, &GivenUp)> = given.iter().map(|g| (0, g)).collect();
        let planted = b"planted by another client".to_vec();
        let mut other_filler = payload(7, 1_000_000_000_000);
        other_filler[31] = b'x';
        let e = matched(
            &[
                (50, planted),
                // Its number is one no publish given up on had.
                (51, payload(6, 1_000_000_000_000)),
                // The right number, sent two seconds away: another run's.
                (52, payload(7, 1_002_000_000_000)),
                (53, other_filler),
                // The one that is ours, explained once: a second copy of it is not.
                (54, payload(7, 1_000_000_000_100)),
                (55, payload(7, 1_000_000_000_100)),
            ],
            &refs,
            SHAPE,
        );
        assert_eq!(e.unexplained, 5);
        assert_eq!(e.unexplained_seqs, vec![50, 51, 52, 53, 55]);
        assert_eq!(e.causes[0].stored, Some(1));
    }

    #[test]
    fn a_batch_given_up_on_explains_as_many_writes_as_it_had_messages() {
        let shape = Shape { batch: 3, ..SHAPE };
        let given = [gave_up(2, 5_000, ErrorKind::RequestTimeout)];
        let refs: Vec<(u32, &GivenUp)> = given.iter().map(|g| (0, g)).collect();
        // Request 2 held messages 6, 7 and 8.
        let writes: Vec<(u64, Vec<u8>)> = (6..=9).map(|m| (m, payload(m, 5_000))).collect();
        let e = matched(&writes, &refs, shape);
        assert_eq!((e.unexplained, e.unexplained_seqs.clone()), (1, vec![9]));
        assert_eq!(e.causes[0].stored, Some(3));
    }

    /// With drawn sizes a write is a publish's only at the size its publisher drew for that
    /// message: the same number at another size, or from another publisher, is not.
    #[test]
    fn a_drawn_size_must_be_the_one_its_publisher_drew() {
        use crate::stats::draw::{SizeDist, Sizes};
        let spec = SizeDist::parse("uniform:16..4096").unwrap();
        let drawn = DrawnSizes {
            sizes: Sizes::build(&spec, SEQ_LEN).unwrap(),
            spec,
            seed: 9,
        };
        let shape = Shape {
            size: 4096,
            drawn: Some(&drawn),
            ..SHAPE
        };
        let at = |m: u64, size: usize| {
            let mut p = vec![b'j'; size];
            crate::engine::jsframe::stamp(&mut p, m, 1_000);
            p
        };
        let given = [
            gave_up(7, 1_000, ErrorKind::LostInFlight),
            gave_up(8, 1_000, ErrorKind::LostInFlight),
        ];
        // Publisher 3 gave up on message 7, publisher 4 on message 8.
        let refs: Vec<(u32, &GivenUp)> = vec![(3, &given[0]), (4, &given[1])];
        let size_of = |p: u32, m: u64| drawn.of_sender(p).of(m);
        let right = size_of(3, 7);
        let wrong = if right == 16 { 17 } else { right - 1 };
        let e = matched(
            &[
                (1, at(7, right)),
                (2, at(7, wrong)),
                // Message 8 at the size publisher 3 would have drawn, not publisher 4's.
                (3, at(8, size_of(3, 8))),
                (4, at(8, size_of(4, 8))),
            ],
            &refs,
            shape,
        );
        let third_is_right = size_of(3, 8) == size_of(4, 8);
        assert_eq!(
            e.unexplained_seqs,
            if third_is_right {
                vec![2, 4]
            } else {
                vec![2, 3]
            }
        );
        assert_eq!(e.causes[0].stored, Some(2));
    }

    #[test]
    fn by_count_explains_no_more_writes_than_publishes_given_up_on() {
        let errors = BTreeMap::from([("lost_in_flight", 3), ("js_stream_full", 40)]);
        let e = by_count(5, &[], false, &errors, "why".into());
        assert_eq!((e.by, e.unexplained), ("count", 2));
        assert_eq!(
            e.causes.len(),
            1,
            "a refusal explains nothing: {:?}",
            e.causes
        );
        let e = by_count(3, &[], false, &errors, "why".into());
        assert_eq!(e.unexplained, 0);
    }

    #[test]
    fn streams_add_up_by_kind() {
        let one = |kind, n, stored| Explained {
            by: "message",
            causes: vec![Cause {
                kind,
                publishes: n,
                stored: Some(stored),
                at_ns: vec![n],
            }],
            ..Explained::default()
        };
        let e = merge(vec![
            one("request_timeout", 4, 1),
            one("lost_in_flight", 2, 2),
            one("request_timeout", 5, 0),
        ])
        .unwrap();
        let kinds: Vec<(&str, u64, Option<u64>)> = e
            .causes
            .iter()
            .map(|c| (c.kind, c.publishes, c.stored))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("lost_in_flight", 2, Some(2)),
                ("request_timeout", 9, Some(1))
            ]
        );
    }
}
