//! Each replica of a stream read back from its own node, and those that disagree with the
//! stream's leader named: a write one replica lacks would be lost with the leader.
//!
//! A node's copy is read from its monitoring endpoint (`/jsz` with the streams), which reports
//! the node's own store: messages, first and last sequence, deleted count. Only servers msgbench
//! started have a monitoring port it knows. No API says which replica answered a message read
//! (a direct get is answered by any of them, unnamed), so replicas are compared on their state,
//! not message by message.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::result::{Divergence, Durability, ReplicaState};
use crate::server::{node_name, EmbeddedServer, Target};

/// How often the replicas are read again while one is behind.
const POLL: Duration = Duration::from_millis(200);

/// Reads every replica of `streams` (name and replica count) on the target's nodes back, waiting
/// up to `bound` for them to agree with their leader, and records what was read and where they
/// still disagree in `d`.
pub(super) fn read_back(
    target: &Target,
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
            d.replicas = Some(read.into_iter().flatten().collect());
            if compared.is_none() {
                d.replicas_not_read = Some(format!(
                    "no node led the stream within {} to compare its replicas with",
                    crate::format::duration_ns(bound.as_nanos() as f64)
                ));
            }
            d.divergent = compared;
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
                        leader_value,
                        node_value,
                    });
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(node: usize, leader: bool, first: u64, last: u64) -> ReplicaState {
        ReplicaState {
            stream: "s".into(),
            node: node_name(node),
            leader,
            last_seq: Some(last),
            first_seq: Some(first),
            messages: Some(last + 1 - first),
            num_deleted: Some(0),
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
            .map(|d| (d.node.as_str(), d.what, d.leader_value, d.node_value))
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
