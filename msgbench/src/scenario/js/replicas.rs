//! Each replica of a stream read back from its own node, and those that disagree with the
//! stream's leader named: a write one replica lacks would be lost with the leader.
//!
//! Two reads, one after the other. First each node's state, from its monitoring endpoint
//! (`/jsz` with the streams), which reports the node's own store: messages, first and last
//! sequence, deleted count; read again until every replica has its leader's, or the bound
//! runs out. Then each copy message by message: the leader's first, kept as one digest per
//! sequence, then each other replica's, compared with it sequence by sequence as it is read.
//! A message read is answered by the stream's leader alone, so to read a replica's copy the
//! leadership is moved to it (see [`crate::engine::jsapi`]'s `lead_from`); it stays with the
//! last replica read, as leadership is no part of the stream's configuration. Only servers
//! msgbench started have a monitoring port it knows, and node names it can move leadership to.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::engine::jsapi::{Api, Differs, Digest};
use crate::result::{Divergence, Durability, ReplicaState};
use crate::server::{node_name, EmbeddedServer, Target};

/// How many messages that differ are named per stream (all are counted).
const MESSAGES_LISTED: usize = 10;

/// How often the replicas are read again while one is behind.
const POLL: Duration = Duration::from_millis(200);

/// The least each wait here is given (the replicas' states to settle, each copy's read with
/// its leadership's move), whatever `--timeout` says: a leadership that does not move at once
/// waits out a raft election, 4 to 9 s on nats-server, and a saturated host can need a second
/// one. With the 5 s default, a busy 2-core machine left copies unread (issue 42).
const WAIT_AT_LEAST: Duration = Duration::from_secs(20);

/// Reads every replica of `streams` (name and replica count) on the target's nodes back, waiting
/// up to `bound` (at least [`WAIT_AT_LEAST`]) for their states to agree with their leader's, then
/// reads each copy message by message through `api` (within that again), and records what was read and where they
/// disagree in `d`.
pub(super) fn read_back(
    target: &Target,
    api: &mut Api,
    streams: &[(String, u32)],
    bound: Duration,
    d: &mut Durability,
) {
    let not_read = |why: &str| Some(why.to_string());
    let Some(first) = &target.embedded else {
        d.replicas_not_read = not_read(
            "servers msgbench did not start: no monitoring endpoint to read replicas from",
        );
        return;
    };
    if target.peers.is_empty() {
        d.replicas_not_read = not_read("one server: the stream has one copy");
        return;
    }
    let streams: Vec<&str> = (streams.iter())
        .filter(|(_, r)| *r > 1)
        .map(|(n, _)| n.as_str())
        .collect();
    if streams.is_empty() {
        d.replicas_not_read = not_read("the stream has one replica (R1)");
        return;
    }
    let nodes: Vec<&EmbeddedServer> = std::iter::once(first).chain(&target.peers).collect();
    let bound = bound.max(WAIT_AT_LEAST);
    let deadline = Instant::now() + bound;
    loop {
        let jsz: Vec<Option<Value>> = (nodes.iter())
            .map(|n| n.monitor_get("/jsz?accounts=true&streams=true"))
            .collect();
        let read: Vec<_> = streams.iter().map(|s| replicas_of(s, &jsz)).collect();
        let compared: Option<Vec<Divergence>> = read
            .iter()
            .map(|r| divergences(r))
            .collect::<Option<Vec<_>>>()
            .map(|v| v.into_iter().flatten().collect());
        let settled = compared.as_ref().is_some_and(Vec::is_empty);
        if settled || Instant::now() >= deadline {
            let mut read = read;
            let Some(mut divergent) = compared else {
                d.replicas = Some(read.into_iter().flatten().collect());
                d.replicas_not_read = Some(format!(
                    "no node led the stream within {} to compare its replicas with",
                    crate::format::duration_ns(bound.as_nanos() as f64)
                ));
                return;
            };
            let mut count = divergent.len() as u64;
            let started = Instant::now();
            let mut reader = ByLeadership(api);
            for (stream, copies) in streams.iter().zip(&mut read) {
                count += compare_messages(&mut reader, stream, copies, bound, &mut divergent);
            }
            let any = read.iter().flatten().any(|r| r.messages_compared.is_some());
            d.messages_read_ns = any.then(|| started.elapsed().as_nanos() as u64);
            d.replicas = Some(read.into_iter().flatten().collect());
            d.divergent = Some(divergent);
            d.divergent_count = Some(count);
            return;
        }
        std::thread::sleep(POLL);
    }
}

/// The copies of `stream` on each node, from each node's `/jsz` (`None` for a node not read):
/// every node that reports the stream, and, with nulls, a node the leader places a replica on
/// that could not be read.
fn replicas_of(stream: &str, jsz: &[Option<Value>]) -> Vec<ReplicaState> {
    let detail = |v: &Value| -> Option<Value> {
        (v.get("account_details")?.as_array()?.iter())
            .flat_map(|a| a.get("stream_detail").and_then(Value::as_array))
            .flatten()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(stream))
            .cloned()
    };
    let details: Vec<Option<Value>> = jsz.iter().map(|j| j.as_ref().and_then(detail)).collect();
    // The placement as the node that leads says it.
    let placed: Vec<String> = (details.iter().enumerate())
        .find_map(|(i, s)| {
            let c = s.as_ref()?.get("cluster")?;
            (c.get("leader")?.as_str()? == node_name(i)).then(|| {
                (c.get("replicas")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten())
                .filter_map(|r| r.get("name")?.as_str().map(str::to_string))
                .collect()
            })
        })
        .unwrap_or_default();
    let n = |s: &Value, k: &str| {
        s.get("state")
            .and_then(|st| st.get(k))
            .and_then(Value::as_u64)
    };
    (details.iter().enumerate())
        .filter_map(|(i, s)| {
            let node = node_name(i);
            let Some(s) = s else {
                return placed.contains(&node).then(|| ReplicaState {
                    stream: stream.to_string(),
                    node,
                    leader: false,
                    last_seq: None,
                    first_seq: None,
                    messages: None,
                    num_deleted: None,
                    messages_compared: None,
                    not_read: Some("its node did not answer on its monitoring endpoint".into()),
                });
            };
            let leads = (s.get("cluster").and_then(|c| c.get("leader"))).and_then(Value::as_str)
                == Some(node.as_str());
            Some(ReplicaState {
                stream: stream.to_string(),
                leader: leads,
                last_seq: n(s, "last_seq"),
                first_seq: n(s, "first_seq"),
                messages: n(s, "messages"),
                num_deleted: Some(n(s, "num_deleted").unwrap_or(0)),
                node,
                messages_compared: None,
                not_read: None,
            })
        })
        .collect()
}

/// Where each replica read disagrees with the leader's copy, figure by figure; `None` when no
/// copy is the leader's. A replica that could not be read is compared with nothing.
pub(super) fn divergences(replicas: &[ReplicaState]) -> Option<Vec<Divergence>> {
    let leader = replicas.iter().find(|r| r.leader && r.last_seq.is_some())?;
    let figures = |r: &ReplicaState| {
        [
            ("last_seq", r.last_seq),
            ("first_seq", r.first_seq),
            ("messages", r.messages),
            ("num_deleted", r.num_deleted),
        ]
    };
    let mut out = Vec::new();
    for r in replicas.iter().filter(|r| !r.leader) {
        for ((what, theirs), (_, ours)) in figures(r).into_iter().zip(figures(leader)) {
            if let (Some(node_value), Some(leader_value)) = (theirs, ours) {
                if node_value != leader_value {
                    out.push(Divergence {
                        stream: r.stream.clone(),
                        node: r.node.clone(),
                        leader: leader.node.clone(),
                        what,
                        seq: None,
                        leader_value: Some(leader_value),
                        node_value: Some(node_value),
                    });
                }
            }
        }
    }
    Some(out)
}

/// Reads one node's copy of a stream, sequence by sequence.
trait ReadCopy {
    /// Hands each sequence of `first..=last` in `node`'s copy of `stream` to `each`, with the
    /// digest of its message (`None`: no message there), by `deadline`; returns how many
    /// messages it held. The error says why the copy could not be read.
    fn read(
        &mut self,
        stream: &str,
        node: &str,
        range: (u64, u64),
        deadline: Instant,
        each: &mut dyn FnMut(u64, Option<Digest>),
    ) -> Result<u64, String>;
}

/// The copy read by making its node the stream's leader, the only node that answers a message
/// read; the read counts only if that node led before and after it.
struct ByLeadership<'a>(&'a mut Api);

impl ReadCopy for ByLeadership<'_> {
    fn read(
        &mut self,
        stream: &str,
        node: &str,
        (first, last): (u64, u64),
        deadline: Instant,
        each: &mut dyn FnMut(u64, Option<Digest>),
    ) -> Result<u64, String> {
        let api = &mut *self.0;
        api.lead_from(stream, node, deadline)
            .map_err(|e| e.to_string())?;
        let held =
            (api.read_copy(stream, first, last, deadline, each)).map_err(|e| e.to_string())?;
        match api.stream_leader(stream) {
            Ok(Some(l)) if l == node => Ok(held),
            Ok(l) => Err(format!(
                "the leadership moved to {} during the read",
                l.as_deref().unwrap_or("no node")
            )),
            Err(e) => Err(format!("who led after the read is unknown: {e}")),
        }
    }
}

/// Reads each copy in `copies` (one stream's, their states read) message by message: the
/// leader's kept as one digest per sequence, each other one compared with it as it is read.
/// Every copy read gets `messages_compared`, every other one `not_read`; the first messages
/// that differ, by sequence, go to `out`. Returns how many differ in all. Each copy's read, moving the
/// leadership to it included, has `bound` (the run's --timeout).
fn compare_messages(
    reader: &mut dyn ReadCopy,
    stream: &str,
    copies: &mut [ReplicaState],
    bound: Duration,
    out: &mut Vec<Divergence>,
) -> u64 {
    let Some(li) = copies.iter().position(|r| r.leader && r.last_seq.is_some()) else {
        return 0;
    };
    let leader = copies[li].node.clone();
    // Every sequence any copy holds: from the lowest first to the highest last.
    let first = (copies.iter().filter_map(|r| r.first_seq))
        .min()
        .unwrap_or(1);
    let last = (copies.iter().filter_map(|r| r.last_seq))
        .max()
        .unwrap_or(0);
    let span = last.saturating_add(1).saturating_sub(first) as usize;
    // A read that failed because the bound ran out says so: a larger --timeout would help.
    let why_not = |why: String, deadline: Instant| {
        if Instant::now() >= deadline {
            format!(
                "not read within {} (--timeout, and at least {}): {why}",
                crate::format::duration_ns(bound.as_nanos() as f64),
                humantime::format_duration(WAIT_AT_LEAST)
            )
        } else {
            why
        }
    };
    let mut theirs: Vec<Option<Digest>> = vec![None; span];
    let deadline = Instant::now() + bound;
    let read = reader.read(stream, &leader, (first, last), deadline, &mut |seq, d| {
        if let Some(slot) = (seq.checked_sub(first)).and_then(|i| theirs.get_mut(i as usize)) {
            *slot = d;
        }
    });
    match read {
        Ok(held) => copies[li].messages_compared = Some(held),
        Err(why) => {
            let why = why_not(why, deadline);
            for r in copies.iter_mut() {
                r.not_read = Some(if r.node == leader {
                    why.clone()
                } else {
                    format!("the leader's copy could not be read: {why}")
                });
            }
            return 0;
        }
    }
    let mut count = 0;
    // Each copy's lowest differing sequences, then the lowest of all of them: replies to a
    // read come in any order, so "the first ten" is by sequence (and by node for one
    // sequence), never by arrival, and two reads of the same copies name the same ten.
    let mut named: Vec<(u64, usize, Differs)> = Vec::new();
    for (i, r) in copies.iter_mut().enumerate().filter(|(_, r)| !r.leader) {
        if r.last_seq.is_none() {
            continue; // already says why: its node did not answer
        }
        let mut lowest = Lowest::default();
        let mut differ = 0u64;
        let deadline = Instant::now() + bound;
        let read = reader.read(stream, &r.node, (first, last), deadline, &mut |seq, d| {
            let ours = (seq.checked_sub(first))
                .and_then(|i| theirs.get(i as usize))
                .copied()
                .flatten();
            if let Some(what) = Differs::between(ours, d) {
                differ += 1;
                lowest.offer(seq, what);
            }
        });
        match read {
            Ok(held) => {
                r.messages_compared = Some(held);
                count += differ;
                named.extend(lowest.0.into_iter().map(|(seq, what)| (seq, i, what)));
            }
            // What a copy read in part showed is not counted: it may have come from another node.
            Err(why) => r.not_read = Some(why_not(why, deadline)),
        }
    }
    named.sort_by_key(|&(seq, i, _)| (seq, i));
    out.extend(
        (named.into_iter().take(MESSAGES_LISTED)).map(|(seq, i, what)| Divergence {
            stream: stream.to_string(),
            node: copies[i].node.clone(),
            leader: leader.clone(),
            what: what.as_str(),
            seq: Some(seq),
            leader_value: None,
            node_value: None,
        }),
    );
    count
}

/// The [`MESSAGES_LISTED`] lowest sequences offered, in order, whatever order they came in.
#[derive(Default)]
struct Lowest(Vec<(u64, Differs)>);

impl Lowest {
    fn offer(&mut self, seq: u64, what: Differs) {
        if self.0.len() == MESSAGES_LISTED && self.0.last().is_some_and(|&(top, _)| seq >= top) {
            return;
        }
        let at = self.0.partition_point(|&(s, _)| s < seq);
        self.0.insert(at, (seq, what));
        self.0.truncate(MESSAGES_LISTED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_ten_are_kept_in_order_whatever_order_they_come_in() {
        let mut l = Lowest::default();
        for seq in [15, 3, 40, 1, 22, 9, 8, 30, 2, 11, 7, 100, 5, 4] {
            l.offer(seq, Differs::Payload);
        }
        let seqs: Vec<u64> = l.0.iter().map(|&(s, _)| s).collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5, 7, 8, 9, 11, 15]);
    }

    fn copy(node: usize, leader: bool, first: u64, last: u64) -> ReplicaState {
        ReplicaState {
            stream: "s".into(),
            node: node_name(node),
            leader,
            last_seq: Some(last),
            first_seq: Some(first),
            messages: Some(last + 1 - first),
            num_deleted: Some(0),
            messages_compared: None,
            not_read: None,
        }
    }

    #[test]
    fn replicas_equal_to_their_leader_do_not_diverge() {
        let r = [
            copy(0, false, 1, 500),
            copy(1, true, 1, 500),
            copy(2, false, 1, 500),
        ];
        assert_eq!(divergences(&r), Some(Vec::new()));
    }

    #[test]
    fn a_replica_behind_and_one_with_another_first_sequence_are_named_with_both_values() {
        let r = [
            copy(0, true, 1, 500),
            copy(1, false, 1, 480),
            copy(2, false, 7, 500),
        ];
        let d = divergences(&r).unwrap();
        let seen: Vec<(&str, &str, u64, u64)> = d
            .iter()
            .map(|d| {
                (
                    d.node.as_str(),
                    d.what,
                    d.leader_value.unwrap(),
                    d.node_value.unwrap(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                ("msgbench-1", "last_seq", 500, 480),
                ("msgbench-1", "messages", 500, 480),
                ("msgbench-2", "first_seq", 1, 7),
                ("msgbench-2", "messages", 500, 494),
            ]
        );
        assert!(d
            .iter()
            .all(|d| d.leader == "msgbench-0" && d.stream == "s"));
    }

    #[test]
    fn a_replica_not_read_is_not_compared_and_without_a_leader_nothing_is() {
        let mut down = copy(2, false, 1, 500);
        (
            down.last_seq,
            down.first_seq,
            down.messages,
            down.num_deleted,
        ) = (None, None, None, None);
        let r = [copy(0, true, 1, 500), copy(1, false, 1, 500), down];
        assert_eq!(divergences(&r), Some(Vec::new()));
        let leaderless = [copy(0, false, 1, 500), copy(1, false, 1, 400)];
        assert_eq!(divergences(&leaderless), None);
    }
}

/// Copies that really disagree, planted one level below the nodes: a stream's raft group keeps
/// its replicas equal, so each "node" here is the same stream on one real server, built anew
/// (with its differences) just before it is read. What is read and compared is real stored
/// messages, through the same message reads a run makes; only which node holds them is stood in.
#[cfg(test)]
mod planted {
    use std::time::Duration;

    use super::*;
    use crate::engine::conn::{connect_for_check, Conn, Dialing};
    use crate::server::find_binary;

    const STREAM: &str = "planted";
    const T: Duration = Duration::from_secs(10);

    /// The stream anew, holding `subjects[i]` with `payloads[i]` at sequence i + 1, then
    /// `deleted` removed.
    fn build(conn: &mut Conn, subjects: &[String], payloads: &[String], deleted: &[u64]) {
        let ok = |(h, p): (Option<Vec<u8>>, Vec<u8>)| {
            let v: Value = serde_json::from_slice(&p).unwrap();
            assert!(h.is_none() && v.get("error").is_none(), "{v}");
        };
        let api = |c: &mut Conn, what: &str, body: &str| {
            c.request(&format!("$JS.API.{what}"), body.as_bytes(), T)
                .unwrap()
        };
        let _ = api(conn, &format!("STREAM.DELETE.{STREAM}"), "");
        ok(api(
            conn,
            &format!("STREAM.CREATE.{STREAM}"),
            &format!(r#"{{"name":"{STREAM}","subjects":["p.>"],"storage":"memory"}}"#),
        ));
        for (s, p) in subjects.iter().zip(payloads) {
            ok(conn.request(s, p.as_bytes(), T).unwrap());
        }
        for seq in deleted {
            ok(api(
                conn,
                &format!("STREAM.MSG.DELETE.{STREAM}"),
                &format!(r#"{{"seq":{seq}}}"#),
            ));
        }
    }

    /// One node's copy: subjects, payloads, sequences deleted.
    type Copy = (Vec<String>, Vec<String>, Vec<u64>);

    /// The copy of each node as the test plants it; a node with none is down.
    struct Planted {
        api: Api,
        conn: Conn,
        copies: Vec<Option<Copy>>,
    }

    impl ReadCopy for Planted {
        fn read(
            &mut self,
            stream: &str,
            node: &str,
            (first, last): (u64, u64),
            deadline: Instant,
            each: &mut dyn FnMut(u64, Option<Digest>),
        ) -> Result<u64, String> {
            let i: usize = node.strip_prefix("msgbench-").unwrap().parse().unwrap();
            let Some((subjects, payloads, deleted)) = &self.copies[i] else {
                return Err("down".into());
            };
            build(&mut self.conn, subjects, payloads, deleted);
            // Handed on last first: replies to a real read come in any order, and what is
            // named must not depend on it.
            let mut got = Vec::new();
            let held = (self
                .api
                .read_copy(stream, first, last, deadline, |s, d| got.push((s, d))))
            .map_err(|e| e.to_string())?;
            got.sort_by_key(|&(s, _)| std::cmp::Reverse(s));
            got.into_iter().for_each(|(s, d)| each(s, d));
            Ok(held)
        }
    }

    fn state(node: usize, leader: bool, last: u64) -> ReplicaState {
        ReplicaState {
            stream: STREAM.into(),
            node: node_name(node),
            leader,
            last_seq: Some(last),
            first_seq: Some(1),
            messages: Some(last),
            num_deleted: Some(0),
            messages_compared: None,
            not_read: None,
        }
    }

    #[test]
    fn messages_missing_extra_or_with_another_subject_or_payload_are_named_and_all_counted() {
        let server = crate::server::EmbeddedServer::start(
            &find_binary(None).expect("these tests need nats-server on PATH"),
            &[],
        )
        .unwrap();
        let subjects: Vec<String> = (1..=12).map(|i| format!("p.{i}")).collect();
        let payloads: Vec<String> = (1..=12).map(|i| format!("payload {i}")).collect();
        // msgbench-1: another payload at 3, another subject at 5, 7 gone, a 13th message.
        let (mut s1, mut p1) = (subjects.clone(), payloads.clone());
        p1[2] = "payload three".into();
        s1[4] = "p.five".into();
        s1.push("p.13".into());
        p1.push("payload 13".into());
        // msgbench-2: every payload another.
        let p2: Vec<String> = payloads.iter().map(|p| format!("{p}!")).collect();
        let dial = Dialing {
            connect_timeout: T,
            reconnect: false,
            jitter: false,
            ping_interval: Duration::from_secs(60),
            tls: None,
        };
        let mut reader = Planted {
            api: Api::connect(std::slice::from_ref(&server.url), "planted", &dial, T).unwrap(),
            conn: connect_for_check(&server.url, "planted-builder", T).unwrap(),
            copies: vec![
                Some((subjects.clone(), payloads.clone(), vec![])),
                Some((s1, p1, vec![7])),
                Some((subjects, p2, vec![])),
                None,
            ],
        };
        let mut copies = vec![
            state(0, true, 12),
            state(1, false, 13),
            state(2, false, 12),
            state(3, false, 12),
        ];
        let mut out = Vec::new();
        let count = compare_messages(&mut reader, STREAM, &mut copies, T, &mut out);
        assert_eq!(count, 4 + 12);
        let named: Vec<(&str, u64, &str)> = (out.iter())
            .map(|d| (d.node.as_str(), d.seq.unwrap(), d.what))
            .collect();
        // The first ten by sequence (by node within one), though each copy came last first.
        let expected = [
            ("msgbench-2", 1, "payload"),
            ("msgbench-2", 2, "payload"),
            ("msgbench-1", 3, "payload"),
            ("msgbench-2", 3, "payload"),
            ("msgbench-2", 4, "payload"),
            ("msgbench-1", 5, "subject"),
            ("msgbench-2", 5, "payload"),
            ("msgbench-2", 6, "payload"),
            ("msgbench-1", 7, "missing"),
            ("msgbench-2", 7, "payload"),
        ];
        assert_eq!(named, expected);
        assert!(out.iter().all(|d| d.leader == "msgbench-0"
            && d.stream == STREAM
            && d.leader_value.is_none()
            && d.node_value.is_none()));
        let compared: Vec<Option<u64>> = copies.iter().map(|r| r.messages_compared).collect();
        assert_eq!(compared, [Some(12), Some(12), Some(12), None]);
        // The one down is not read, and is not called divergent.
        let why: Vec<Option<&str>> = copies.iter().map(|r| r.not_read.as_deref()).collect();
        assert_eq!(why, [None, None, None, Some("down")]);
    }
}
