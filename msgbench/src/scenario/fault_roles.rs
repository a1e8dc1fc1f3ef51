//! Who holds a role in the local cluster at a fault's moment: the stream's leader and its
//! replicas from the JetStream API (`STREAM.INFO`, answered by the leader itself), the meta
//! leader from a node's monitoring endpoint (`/jsz`), both asked of a node that is up. The
//! stream is the one capturing the run's publish subject (`STREAM.NAMES` with a subject).

use std::time::Duration;

use serde_json::Value;

use crate::server::EmbeddedServer;
use crate::stats::faults::FaultTarget;

/// How long one question to one node may take. A cluster writing under load answers its
/// JetStream API late (seconds, on two busy cores with `sync_interval=always`): a shorter wait
/// took a slow leader for none and left a fault aimed at it not injected.
const ASK: Duration = Duration::from_secs(2);

/// The nodes of a local cluster (node `i` is `msgbench-i`) and the subject the run publishes
/// on.
pub struct Cluster<'a> {
    pub nodes: Vec<&'a EmbeddedServer>,
    pub subject: Option<String>,
    stream: std::sync::OnceLock<String>,
}

/// A stream's placement as its leader answered.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    pub leader: Option<usize>,
    /// Every node holding a replica, the leader among them.
    pub replicas: Vec<usize>,
}

impl<'a> Cluster<'a> {
    pub fn new(nodes: Vec<&'a EmbeddedServer>, subject: Option<String>) -> Self {
        Self {
            nodes,
            subject,
            stream: std::sync::OnceLock::new(),
        }
    }

    /// Node `i`'s name (`server` for the one server that is no cluster's node).
    pub fn name(&self, i: usize) -> String {
        if self.nodes.len() > 1 {
            crate::server::node_name(i)
        } else {
            "server".into()
        }
    }

    /// Whether the servers are a cluster's nodes, whose stream has a leader to look for.
    pub fn clustered(&self) -> bool {
        self.nodes.len() > 1
    }

    fn index(&self, name: &str) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.name(i) == name)
    }

    /// Asks `subject` of the first node that is up (not in `skip`) and takes a connection. A
    /// node that takes it but gives no answer in time means no one could answer (a stream
    /// with no leader): the next node would not know better, so `None` at once.
    fn ask(&self, subject: &str, body: &[u8], skip: &[usize]) -> Option<Value> {
        let mut c = (self.nodes.iter().enumerate())
            .filter(|(i, node)| !skip.contains(i) && node.pid().is_some())
            .find_map(|(_, node)| {
                crate::engine::conn::connect_for_check(&node.url, "msgbench-fault", ASK).ok()
            })?;
        let answer = c.request(subject, body, ASK);
        c.shared.close();
        let v: Value = serde_json::from_slice(&answer.ok()?.1).ok()?;
        v.get("error").is_none().then_some(v)
    }

    /// The stream capturing the run's subject, found once.
    fn stream(&self, skip: &[usize]) -> Option<String> {
        if let Some(s) = self.stream.get() {
            return Some(s.clone());
        }
        let subject = self.subject.as_deref()?;
        // A key-value run's subject is the prefix its keys are appended to.
        let name = [subject.to_string(), format!("{subject}.>")]
            .iter()
            .find_map(|filter| {
                let body = serde_json::json!({ "subject": filter }).to_string();
                let v = self.ask("$JS.API.STREAM.NAMES", body.as_bytes(), skip)?;
                Some(v.get("streams")?.as_array()?.first()?.as_str()?.to_string())
            })?;
        Some(self.stream.get_or_init(|| name).clone())
    }

    /// The stream capturing the run's subject, asked of a node not in `skip` the first time.
    pub fn stream_name(&self, skip: &[usize]) -> Option<String> {
        self.stream(skip)
    }

    /// The stream's leader and replicas, asked of a node not in `skip`.
    pub fn placement(&self, skip: &[usize]) -> Option<Placement> {
        let stream = self.stream(skip)?;
        let v = self.ask(&format!("$JS.API.STREAM.INFO.{stream}"), b"", skip)?;
        let cluster = v.get("cluster")?;
        let leader = cluster
            .get("leader")
            .and_then(Value::as_str)
            .and_then(|n| self.index(n));
        let mut replicas: Vec<usize> = (cluster.get("replicas").and_then(Value::as_array))
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("name").and_then(Value::as_str))
            .filter_map(|n| self.index(n))
            .chain(leader)
            .collect();
        replicas.sort_unstable();
        replicas.dedup();
        Some(Placement { leader, replicas })
    }

    /// The meta leader, from the monitoring endpoint of a node not in `skip`.
    fn meta_leader(&self, skip: &[usize]) -> Option<usize> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(i, n)| !skip.contains(i) && n.pid().is_some())
            .find_map(|(_, n)| {
                let jsz = n.monitor_get("/jsz")?;
                let name = jsz
                    .get("meta_cluster")?
                    .get("leader")?
                    .as_str()?
                    .to_string();
                self.index(&name)
            })
    }

    /// The nodes `target` names now, and the stream's placement if it was read; `skip` are
    /// nodes that cannot answer (down or paused). An error says why no node could be named.
    pub fn victims(
        &self,
        target: FaultTarget,
        skip: &[usize],
    ) -> Result<(Vec<usize>, Option<Placement>), String> {
        let n = self.nodes.len();
        // Asked twice before giving up: on a loaded machine a leader that is there can miss
        // one ASK, and a fault not injected leaves the run testing nothing.
        let placement = self.placement(skip).or_else(|| self.placement(skip));
        let no_stream = || {
            format!(
                "no stream leader answered STREAM.INFO for the stream capturing {}",
                self.subject.as_deref().unwrap_or("the subject")
            )
        };
        let nodes = match target {
            FaultTarget::All => (0..n).collect(),
            FaultTarget::MetaLeader => vec![self
                .meta_leader(skip)
                .ok_or("no node named a meta leader on /jsz")?],
            FaultTarget::Leader => vec![placement
                .as_ref()
                .and_then(|p| p.leader)
                .ok_or_else(no_stream)?],
            FaultTarget::Follower => {
                // A follower is a replica that is not the leader: while no leader is named
                // (an election), none is known to be one, and the fault waits for a leader. A
                // replica on a node that is down (killed earlier) is no target either.
                let p = placement.as_ref().ok_or_else(no_stream)?;
                let leader = p.leader.ok_or_else(no_stream)?;
                let mut others = p.replicas.iter().filter(|&&r| r != leader).peekable();
                if others.peek().is_none() {
                    return Err("the stream has no follower (one replica)".into());
                }
                vec![*others
                    .find(|r| !skip.contains(r))
                    .ok_or("every follower of the stream is down, paused or cut off")?]
            }
            FaultTarget::Majority => {
                // The leader first, so that losing the majority also loses the leader.
                let leader = placement.as_ref().and_then(|p| p.leader);
                let mut v: Vec<usize> = leader.into_iter().collect();
                v.extend((0..n).filter(|i| Some(*i) != leader));
                v.truncate(n / 2 + 1);
                v.sort_unstable();
                v
            }
        };
        Ok((nodes, placement))
    }
}
