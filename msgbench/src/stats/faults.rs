//! Several faults in one run, aimed at a JetStream cluster's roles (`--fault
//! kill-leader@3s,restart-leader@6s`): the list as the options hold it, what each fault did
//! as the result records it, and the acknowledgement gaps around each fault that the
//! publishers' readers record.
//!
//! The list is a fixed array so that the options that carry it stay `Copy`, and so that a
//! reader records its gaps with no allocation.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::recovery::FaultSpec;

/// Faults one run may list.
pub const MAX_FAULTS: usize = 8;

/// Which node(s) a fault is aimed at, found when the fault comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultTarget {
    /// The stream's leader.
    Leader,
    /// A replica of the stream that is not its leader (the first such node by name).
    Follower,
    /// The JetStream meta leader.
    MetaLeader,
    /// More than half of the nodes, the stream's leader among them.
    Majority,
    /// Every node.
    All,
}

impl FaultTarget {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "leader" => Self::Leader,
            "follower" => Self::Follower,
            "meta-leader" => Self::MetaLeader,
            "majority" => Self::Majority,
            "all" => Self::All,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Leader => "leader",
            Self::Follower => "follower",
            Self::MetaLeader => "meta-leader",
            Self::Majority => "majority",
            Self::All => "all",
        }
    }
}

/// The faults of a run, in the order given (which is the order of their times).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    items: [Option<FaultSpec>; MAX_FAULTS],
}

impl Faults {
    /// # Errors
    /// More than [`MAX_FAULTS`].
    pub fn of(list: &[FaultSpec]) -> Result<Self, String> {
        if list.len() > MAX_FAULTS {
            return Err(format!("at most {MAX_FAULTS} faults in one run"));
        }
        let mut items = [None; MAX_FAULTS];
        for (slot, f) in items.iter_mut().zip(list) {
            *slot = Some(*f);
        }
        Ok(Self { items })
    }

    pub fn iter(&self) -> impl Iterator<Item = &FaultSpec> {
        self.items.iter().flatten()
    }

    pub fn len(&self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.items[0].is_none()
    }

    /// Whether some fault names a target: the run needs roles found in a cluster.
    pub fn targeted(&self) -> bool {
        self.iter().any(|f| f.target.is_some())
    }
}

/// SplitMix64: a small generator whose stream is fixed by its seed, on every platform (the
/// nemesis's draws, a corruption's place).
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0); the slight bias of a modulo does not matter here.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// What one fault did, as a result records it.
#[derive(Debug, Clone, Serialize)]
pub struct FaultEvent {
    #[serde(flatten)]
    pub spec: FaultSpec,
    /// The nodes it acted on, found when it came; empty when none could be.
    pub nodes: Vec<String>,
    /// When it was injected, from the start of the load; null when it was not.
    pub injected_at_ns: Option<u64>,
    /// How long it waited past its time for its target to be found (a stream leader that
    /// answers, after an election); null when it did not wait.
    pub waited_ns: Option<u64>,
    /// When it was undone (a restarted node listening again, a paused one thawed, a
    /// partitioned one healed); null for a kill, or when it was not undone.
    pub undone_at_ns: Option<u64>,
    /// Why it could not be injected or undone, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The stream's leader just before the fault, as STREAM.INFO named it.
    pub leader_before: Option<String>,
    /// The first leader STREAM.INFO named after the fault that is not a faulted node, and
    /// from the fault until that answer came; null when none did in time.
    pub leader_after: Option<String>,
    pub leader_answered_ns: Option<u64>,
    /// From the last acknowledgement received before the fault to the first one after it
    /// for a publish due after the fault (all publishers together); null when there was no
    /// acknowledgement on one side.
    pub no_ack_ns: Option<u64>,
    /// Acknowledgement latency before, during and after it (see
    /// [`super::fault_phases`]); null when it was not injected.
    pub ack_latency: Option<super::fault_phases::AckLatency>,
    /// A corrupt fault's damage: where it landed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corruption: Option<Corruption>,
    /// A fault of the disk (power loss, corruption): each node's stream as the node reported
    /// it just before the fault and right after its restart.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub restarts: Vec<NodeRestart>,
}

/// Where a corrupt fault damaged a message block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Corruption {
    /// The block file, from the server's store folder.
    pub file: String,
    /// The byte whose bit was flipped, or the length the file was cut to.
    pub offset: u64,
    /// The bit flipped (0 the lowest); null for a cut.
    pub bit: Option<u8>,
}

/// One node's stream around a fault of its disk, from its monitoring endpoint (`/jsz`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeRestart {
    pub node: String,
    /// The stream's last sequence in the node's store just before the fault (a lower bound of
    /// what it had: a write may land between the read and the kill); null when not read.
    pub last_seq_before: Option<u64>,
    /// Unsynced bytes its filesystem dropped (a power loss); null for a corruption.
    pub bytes_dropped: Option<u64>,
    /// The first state the node reported after its restart (a catch-up from the leader may
    /// already have grown it); null when none came within the wait.
    pub last_seq: Option<u64>,
    pub messages: Option<u64>,
    /// From the restart to that report.
    pub read_after_ns: Option<u64>,
    /// The node answered for the whole wait without the stream: it came back without it.
    pub absent: bool,
    /// It came back with less than it had: `last_seq` below `last_seq_before`, or absent.
    pub came_back_short: bool,
}

/// One publisher's acknowledgements around each fault: the last received before it, and the
/// first received for a publish due after it. `times` are the faults' injection times
/// (`u64::MAX` until injected), shared with the injector.
pub struct AckGaps<'a> {
    times: &'a [AtomicU64],
    last_before: [u64; MAX_FAULTS],
    first_after: [u64; MAX_FAULTS],
}

/// No acknowledgement recorded on that side.
const NONE: u64 = u64::MAX;

impl<'a> AckGaps<'a> {
    pub fn new(times: &'a [AtomicU64]) -> Self {
        Self {
            times,
            last_before: [NONE; MAX_FAULTS],
            first_after: [NONE; MAX_FAULTS],
        }
    }

    /// An acknowledgement received at `recv_ns` for a publish due at `due_ns` (both from
    /// time zero).
    #[inline]
    pub fn record(&mut self, due_ns: u64, recv_ns: u64) {
        for (k, t) in self.times.iter().enumerate().take(MAX_FAULTS) {
            let at = t.load(Ordering::Relaxed);
            if recv_ns < at {
                let last = &mut self.last_before[k];
                *last = if *last == NONE {
                    recv_ns
                } else {
                    (*last).max(recv_ns)
                };
            } else if due_ns >= at {
                self.first_after[k] = self.first_after[k].min(recv_ns);
            }
        }
    }

    /// Fault `k`'s gap over every publisher: from the latest acknowledgement before it to the
    /// earliest after it.
    pub fn gap(all: &[&AckGaps<'_>], k: usize) -> Option<u64> {
        let before = all
            .iter()
            .map(|g| g.last_before[k])
            .filter(|t| *t != NONE)
            .max()?;
        let after = all.iter().map(|g| g.first_after[k]).min()?;
        (after != NONE).then(|| after.saturating_sub(before))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_runs_from_the_last_ack_before_to_the_first_for_a_publish_due_after() {
        let times = [AtomicU64::new(u64::MAX), AtomicU64::new(u64::MAX)];
        let (mut a, mut b) = (AckGaps::new(&times), AckGaps::new(&times));
        for t in (0..100).map(|ms| ms * 1_000_000) {
            a.record(t, t + 10);
        }
        times[0].store(100_000_000, Ordering::Relaxed);
        // A publish due before the fault, acknowledged after it: not the service back.
        b.record(99_000_000, 100_500_000);
        b.record(90_000_000, 99_500_000);
        assert_eq!(AckGaps::gap(&[&a, &b], 0), None);
        b.record(300_000_000, 350_000_000);
        a.record(310_000_000, 340_000_000);
        // Before: b's 99.5 ms; after: a's 340 ms.
        assert_eq!(AckGaps::gap(&[&a, &b], 0), Some(240_500_000));
        // The second fault never came: no acknowledgement after it.
        assert_eq!(AckGaps::gap(&[&a, &b], 1), None);
    }
}
