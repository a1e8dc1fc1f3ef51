//! The faults of a disk, as the injector runs them: a power loss (the node killed and what its
//! filesystem had not synced dropped, [`crate::server::disk`]) and a corruption (a message
//! block damaged while the node is down); the node starts again after the fault's hold. Around
//! each, what the node's store held: its stream's last sequence just before the fault, and the
//! first state it reported after its restart, so that a node that came back with less is named.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::fault::Injector;
use crate::server::EmbeddedServer;
use crate::stats::faults::{Corruption, NodeRestart};
use crate::stats::recovery::{FaultKind, FaultSpec};

/// How long a restarted node's state is asked for, and how often: a node recovers its
/// streams from its store as it starts, and on a cluster only once the meta layer is back.
const AFTER_WAIT: Duration = Duration::from_secs(10);
const AFTER_POLL: Duration = Duration::from_millis(50);

/// What a fault of the disk did, node by node (in the order of the fault's nodes).
#[derive(Debug, Default, Clone)]
pub(super) struct DiskSeen {
    pub(super) before: Vec<Option<u64>>,
    pub(super) dropped: Vec<Option<u64>>,
    pub(super) corruption: Option<Corruption>,
    pub(super) error: Option<String>,
    /// Each node's first state after its restart: (last_seq, messages, after_ns), or absent.
    pub(super) after: Vec<After>,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum After {
    Read {
        last_seq: u64,
        messages: u64,
        after_ns: u64,
    },
    Absent,
    NotRead,
}

/// A node's state of `stream` from its `/jsz`: `None` when it did not answer, `Some(None)`
/// when it answered without the stream, else its last sequence and message count.
fn stream_state(node: &EmbeddedServer, stream: &str) -> Option<Option<(u64, u64)>> {
    let jsz = node.monitor_get("/jsz?accounts=true&streams=true")?;
    let found = (jsz.get("account_details").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .flat_map(|a| a.get("stream_detail").and_then(Value::as_array))
        .flatten()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(stream))
        .and_then(|s| {
            let st = s.get("state")?;
            Some((
                st.get("last_seq").and_then(Value::as_u64).unwrap_or(0),
                st.get("messages").and_then(Value::as_u64).unwrap_or(0),
            ))
        });
    Some(found)
}

impl Injector<'_> {
    /// Acts on `nodes` for `spec`, a power loss or a corruption: each node's stream read
    /// first, then the node killed and its disk struck.
    pub(super) fn strike(&self, spec: FaultSpec, nodes: &[usize]) -> DiskSeen {
        let stream = self.cluster.stream_name(&[]);
        let mut seen = DiskSeen {
            before: (nodes.iter())
                .map(|&n| {
                    let s = stream.as_deref()?;
                    stream_state(self.cluster.nodes[n], s)
                        .flatten()
                        .map(|(l, _)| l)
                })
                .collect(),
            ..DiskSeen::default()
        };
        for &n in nodes {
            let server = self.cluster.nodes[n];
            match (spec.kind, spec.corrupt) {
                (FaultKind::Corrupt, Some(c)) => {
                    seen.dropped.push(None);
                    match server.corrupt(c, stream.as_deref()) {
                        Ok(done) => seen.corruption = Some(done),
                        Err(e) => {
                            seen.error.get_or_insert(e.to_string());
                        }
                    }
                }
                _ => match server.power_loss() {
                    Ok(bytes) => seen.dropped.push(Some(bytes)),
                    Err(e) => {
                        seen.dropped.push(None);
                        seen.error.get_or_insert(e.to_string());
                    }
                },
            }
        }
        seen
    }

    /// After fault k's nodes restarted: asks each for its stream until it reports it (or
    /// answers without it for [`AFTER_WAIT`]), and keeps the first state it reported.
    pub(super) fn read_after_restart(&self, k: usize, stop: &AtomicBool) {
        let nodes = self.state().events[k].nodes.clone();
        let Some(stream) = self.cluster.stream_name(&[]) else {
            return;
        };
        let started = Instant::now();
        let mut after = vec![After::NotRead; nodes.len()];
        let mut answered = vec![false; nodes.len()];
        while started.elapsed() < AFTER_WAIT && !stop.load(Ordering::Relaxed) {
            for (i, &n) in nodes.iter().enumerate() {
                if matches!(after[i], After::Read { .. }) {
                    continue;
                }
                match stream_state(self.cluster.nodes[n], &stream) {
                    Some(Some((last_seq, messages))) => {
                        after[i] = After::Read {
                            last_seq,
                            messages,
                            after_ns: started.elapsed().as_nanos() as u64,
                        }
                    }
                    Some(None) => answered[i] = true,
                    None => {}
                }
            }
            if after.iter().all(|a| matches!(a, After::Read { .. })) {
                break;
            }
            std::thread::sleep(AFTER_POLL);
        }
        for (a, answered) in after.iter_mut().zip(answered) {
            if answered && matches!(a, After::NotRead) {
                *a = After::Absent;
            }
        }
        self.state().events[k].disk.after = after;
    }

    /// Each node's stream around fault k, as the result records it.
    pub(super) fn restarts(&self, seen: &super::fault::Seen) -> Vec<NodeRestart> {
        let d = &seen.disk;
        (seen.nodes.iter().enumerate())
            .filter(|_| !d.before.is_empty())
            .map(|(i, &n)| {
                let before = d.before.get(i).copied().flatten();
                let (last_seq, messages, read_after_ns, absent) = match d.after.get(i) {
                    Some(After::Read {
                        last_seq,
                        messages,
                        after_ns,
                    }) => (Some(*last_seq), Some(*messages), Some(*after_ns), false),
                    Some(After::Absent) => (None, None, None, true),
                    _ => (None, None, None, false),
                };
                let short = absent && before.is_some_and(|b| b > 0)
                    || matches!((last_seq, before), (Some(a), Some(b)) if a < b);
                NodeRestart {
                    node: self.cluster.name(n),
                    last_seq_before: before,
                    bytes_dropped: d.dropped.get(i).copied().flatten(),
                    last_seq,
                    messages,
                    read_after_ns,
                    absent,
                    came_back_short: short,
                }
            })
            .collect()
    }
}
