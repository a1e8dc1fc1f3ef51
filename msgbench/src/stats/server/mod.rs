//! The server's side of a run, as figures: what one reading of a server's monitoring endpoints
//! says ([`Reading`]), what a tick of the run's timeline holds of every server at once
//! ([`ServerTick`]: each server's CPU, memory, connections and traffic, every stream and
//! consumer), the events found by comparing successive ticks ([`events`]), and the rule that
//! names what bounded a run ([`limit`]).
//!
//! Nothing here does I/O: the readings are made by `engine::monitor`, which parses the
//! servers' JSON into these types, on a thread of their own. Keeping the figures and the rules
//! apart from the HTTP means both rules (events and limit) are unit tested on made-up ticks,
//! and a reader of a result file sees the same types the run kept.

pub mod events;
pub mod limit;
mod merge;

pub use events::{Around, Detector, EventKind, ServerEvent};
pub use merge::{merge, Source};

use std::sync::Mutex;

use serde::Serialize;

use crate::stats::timeline::{Tick, MAX_TICKS};

/// Streams and consumers kept per tick at most: a server holding thousands would make every
/// tick of the timeline a list of thousands. The first by name are kept, and the tick says so.
pub const MAX_ASSETS: usize = 50;

/// One server's monitoring endpoints read once: `/varz` (always), `/jsz` with streams and
/// consumers, `/routez` and `/healthz` (each when it answered).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    /// When the reading was made, in seconds on the run's clock (the middle of its requests).
    pub t_s: f64,
    /// The server's own clock (`now` of `/varz`), in nanoseconds since the Unix epoch: rates
    /// are counted over its intervals, not over when msgbench happened to ask.
    pub server_now_ns: Option<i128>,
    pub name: String,
    pub version: String,
    /// When the process started (`start` of `/varz`): a restart changes it.
    pub start: String,
    /// Logical CPUs the process may run on, and Go's GOMAXPROCS.
    pub cores: u32,
    pub gomaxprocs: u32,
    /// CPU use in percent of one core, as the server measures it (over about its last second).
    pub cpu_pct: f64,
    pub mem_bytes: u64,
    pub connections: u64,
    pub in_msgs: u64,
    pub out_msgs: u64,
    pub in_bytes: u64,
    pub out_bytes: u64,
    /// The server's `slow_consumers` counter since it started.
    pub slow_consumers: u64,
    /// The other servers its routes reach, by name, each once (a route pool has several
    /// connections to one server); `None` when `/routez` did not answer.
    pub route_peers: Option<Vec<String>>,
    /// `/healthz` said ok; `None` when it did not answer.
    pub healthy: Option<bool>,
    /// The JetStream meta leader as this server sees it.
    pub meta_leader: Option<String>,
    /// Streams this server hosts, as it sees them.
    pub streams: Vec<StreamView>,
    /// Consumers this server leads.
    pub consumers: Vec<ConsumerPoint>,
}

/// A stream as one server sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamView {
    pub name: String,
    pub msgs: u64,
    pub bytes: u64,
    pub leader: Option<String>,
    /// The other replicas (the viewing server is not among them); only the leader's view of
    /// them is current.
    pub replicas: Vec<ReplicaPoint>,
}

/// One server in one tick: what its reading says, or nulls when it did not answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerPoint {
    /// The server's name (its `server_name`), or where it is read from until it has answered.
    pub name: String,
    /// Whether `/varz` answered in this tick.
    pub up: bool,
    pub cpu_pct: Option<f64>,
    /// The cores the server may use: the fewer of its logical CPUs and GOMAXPROCS.
    pub cores: Option<u32>,
    pub mem_bytes: Option<u64>,
    pub connections: Option<u64>,
    /// Rates since the server's previous reading, by its own clock; null on the first reading
    /// and across a restart.
    pub in_msgs_per_sec: Option<f64>,
    pub out_msgs_per_sec: Option<f64>,
    pub in_bytes_per_sec: Option<f64>,
    pub out_bytes_per_sec: Option<f64>,
    /// Its `slow_consumers` counter (since it started).
    pub slow_consumers: Option<u64>,
    /// The servers its routes reach.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routes_to: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthy: Option<bool>,
    /// When the process started, as it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
}

/// A replica of a stream as its leader sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReplicaPoint {
    pub name: String,
    pub current: bool,
    /// Operations behind the leader (0 when the server leaves it out).
    pub lag: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub offline: bool,
}

/// A stream in one tick, from its leader's view when the leader answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StreamPoint {
    pub name: String,
    pub msgs: u64,
    pub bytes: u64,
    pub leader: Option<String>,
    pub replicas: Vec<ReplicaPoint>,
}

/// A consumer in one tick, from the server that leads it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConsumerPoint {
    pub stream: String,
    pub name: String,
    /// Messages in the stream not yet delivered to it.
    pub pending: u64,
    /// Delivered and not yet acknowledged.
    pub ack_pending: u64,
    pub redelivered: u64,
    /// Pull requests waiting.
    pub waiting: u64,
}

/// Every server of the run at one moment: what a tick of the timeline carries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerTick {
    /// When the servers were read, in seconds on the run's clock.
    pub t_s: f64,
    pub servers: Vec<ServerPoint>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<StreamPoint>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub consumers: Vec<ConsumerPoint>,
    /// The JetStream meta leader, as most servers that answered see it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta_leader: Option<String>,
    /// More than [`MAX_ASSETS`] streams or consumers were seen; the first by name are kept.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Events found at this reading.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<ServerEvent>,
}

/// What a result says of each server sampled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerInfo {
    /// Its name once it answered, else where it is read.
    pub name: String,
    /// Where it was read: the endpoint (without credentials), or `started` for a server
    /// msgbench started.
    pub monitor: String,
    pub version: Option<String>,
    /// Its logical CPUs and GOMAXPROCS, as it last said.
    pub cores: Option<u32>,
    pub gomaxprocs: Option<u32>,
    /// Readings made, and of them answered.
    pub readings: u64,
    pub answered: u64,
}

/// What a result says of the servers' side of a run, under `server_side`.
#[derive(Debug, Clone, Serialize)]
pub struct ServerSide {
    /// Each server sampled: its name, where it was read, its version and cores, and how many
    /// of its readings answered.
    pub servers: Vec<ServerInfo>,
    /// What the samples showed happening, in time order.
    pub events: Vec<ServerEvent>,
    /// The servers' CPU per message, in nanoseconds ([`cpu_ns_per_msg`]); null when no tick
    /// read every server's CPU, or the run moved no message in those ticks.
    pub cpu_ns_per_msg: Option<f64>,
}

/// The CPU of every server sampled per message of the run, in nanoseconds: the servers'
/// CPU-seconds over the ticks in which each of them read its CPU (a server reads 0 until it has
/// sampled itself, and one that did not answer has no figure: such ticks are left out rather
/// than counted as idle), over the messages the run sent in those same ticks, or received when
/// it sent none (a subscriber alone). With the figure in the history, a server upgrade that
/// spends more CPU per message while the throughput holds is found like a slower P99.
pub fn cpu_ns_per_msg(ticks: &[Tick]) -> Option<f64> {
    let (mut cpu_s, mut sent, mut received) = (0.0, 0.0, 0.0);
    for k in ticks {
        let Some(s) = k.server.as_ref().filter(|s| !s.servers.is_empty()) else {
            continue;
        };
        let Some(pct) = s.servers.iter().map(|p| p.cpu_pct).sum::<Option<f64>>() else {
            continue;
        };
        cpu_s += pct / 100.0 * k.span_s;
        sent += k.sent_per_sec * k.span_s;
        received += k.received_per_sec * k.span_s;
    }
    let msgs = if sent > 0.0 { sent } else { received };
    (msgs > 0.0).then(|| cpu_s * 1e9 / msgs)
}

/// Where the sampler leaves its newest tick for the run's timeline to pick up: the one place
/// the two threads meet, so the timeline's reader never waits on a server.
#[derive(Debug, Default)]
pub struct Slot {
    state: Mutex<SlotState>,
}

#[derive(Debug, Default)]
struct SlotState {
    latest: Option<ServerTick>,
    /// Events not yet handed to a tick of the timeline.
    unshown: Vec<ServerEvent>,
    /// Every tick put, with its events, for a timeline made after the run ([`Slot::keeping`]).
    kept: Option<Vec<ServerTick>>,
}

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A slot that also keeps every tick put (at most a timeline's [`MAX_TICKS`]): for a run
    /// whose timeline is made only at its end (on agents), where [`place`] puts them.
    pub fn keeping() -> Self {
        let slot = Self::default();
        slot.lock().kept = Some(Vec::new());
        slot
    }

    /// Every tick put, when it keeps them.
    pub fn kept(&self) -> Vec<ServerTick> {
        self.lock().kept.clone().unwrap_or_default()
    }

    /// Leaves `tick` (with the events found at it) as the newest.
    pub fn put(&self, mut tick: ServerTick) {
        let mut s = self.lock();
        if let Some(kept) = s.kept.as_mut().filter(|k| k.len() < MAX_TICKS) {
            kept.push(tick.clone());
        }
        s.unshown.append(&mut tick.events);
        s.latest = Some(tick);
    }

    /// The newest tick, with every event found since the last call: each event is handed out
    /// once, with the first tick of the timeline taken after it.
    pub fn take(&self) -> Option<ServerTick> {
        let mut s = self.lock();
        let mut tick = s.latest.clone()?;
        tick.events = std::mem::take(&mut s.unshown);
        Some(tick)
    }
}

/// Puts kept readings (in time order) on a timeline made after the run, as its reader would
/// have taken them during it: each tick the newest reading made by its end, with the events
/// found since the tick before. A reading made after the last tick has no tick to go on (its
/// events are still in the run's list).
pub fn place(ticks: &mut [Tick], readings: &[ServerTick]) {
    let mut next = 0;
    let mut latest: Option<ServerTick> = None;
    for tick in ticks {
        let mut events = Vec::new();
        while let Some(r) = readings.get(next).filter(|r| r.t_s <= tick.t_s) {
            events.extend(r.events.iter().cloned());
            latest = Some(r.clone());
            next += 1;
        }
        tick.server = latest.clone().map(|mut r| {
            r.events = events;
            r
        });
    }
}

/// msgbench's own CPU in one tick of the timeline: what says whether the tool could have
/// been the limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ToolTick {
    /// Cores' worth of CPU the process used in the interval (1.0: one core busy throughout).
    pub cpu_cores: f64,
    /// The cores it may use: its CPU affinity, or its cgroup's quota when that is less.
    pub cores: f64,
    /// Its busiest thread: the share of the interval it ran.
    pub busiest_thread: f64,
    /// Its busiest thread: the share of the interval it ran or waited to run (its run queue
    /// wait, where the kernel counts it); 1.0 means it never blocked and wanted a whole core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_runnable: Option<f64>,
    /// The whole machine's CPU use in the interval, in cores (every process on it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_cores_busy: Option<f64>,
    /// The machine's cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_cores: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_hands_each_event_out_once_and_keeps_the_newest_tick() {
        let slot = Slot::default();
        assert!(slot.take().is_none(), "nothing read yet");
        let ev = |t: f64| ServerEvent::new(t, t - 1.0, EventKind::SlowConsumer, "x".into());
        slot.put(ServerTick {
            t_s: 1.0,
            events: vec![ev(1.0)],
            ..ServerTick::default()
        });
        slot.put(ServerTick {
            t_s: 2.0,
            events: vec![ev(2.0)],
            ..ServerTick::default()
        });
        let t = slot.take().unwrap();
        assert_eq!(t.t_s, 2.0);
        assert_eq!(
            t.events.len(),
            2,
            "both, though the first tick was never taken"
        );
        let again = slot.take().unwrap();
        assert_eq!(again.t_s, 2.0, "the newest stays until a newer one");
        assert!(again.events.is_empty(), "each event once");
    }

    #[test]
    fn kept_readings_are_placed_on_a_later_timeline_as_its_reader_would_take_them() {
        let slot = Slot::keeping();
        let ev = |t: f64| ServerEvent::new(t, t - 1.0, EventKind::SlowConsumer, "x".into());
        for (t, events) in [(0.0, vec![]), (0.8, vec![ev(0.8)]), (1.7, vec![ev(1.7)])] {
            slot.put(ServerTick {
                t_s: t,
                events,
                ..ServerTick::default()
            });
        }
        slot.put(ServerTick {
            t_s: 2.6,
            events: vec![ev(2.6)],
            ..ServerTick::default()
        });
        // The live reader took nothing; the kept readings are all there.
        let kept = slot.kept();
        assert_eq!(kept.len(), 4);
        let mut ticks: Vec<Tick> = [1.0, 2.0, 2.4]
            .iter()
            .map(|&t_s| Tick {
                t_s,
                ..Tick::default()
            })
            .collect();
        place(&mut ticks, &kept);
        let got: Vec<(f64, usize)> = ticks
            .iter()
            .map(|k| {
                let s = k.server.as_ref().unwrap();
                (s.t_s, s.events.len())
            })
            .collect();
        // Tick 1 takes the 0.8 s reading (and its event); tick 2 the 1.7 s one; tick 3 has no
        // newer reading, so it holds the 1.7 s one again with no event; the 2.6 s reading came
        // after the last tick.
        assert_eq!(got, [(0.8, 1), (1.7, 1), (1.7, 0)]);
        // A slot that does not keep: nothing.
        let plain = Slot::default();
        plain.put(ServerTick::default());
        assert!(plain.kept().is_empty());
    }

    fn tick(span_s: f64, sent: f64, received: f64, cpus: &[Option<f64>]) -> Tick {
        Tick {
            span_s,
            sent_per_sec: sent,
            received_per_sec: received,
            server: (!cpus.is_empty()).then(|| ServerTick {
                servers: cpus
                    .iter()
                    .map(|c| ServerPoint {
                        cpu_pct: *c,
                        ..ServerPoint::default()
                    })
                    .collect(),
                ..ServerTick::default()
            }),
            ..Tick::default()
        }
    }

    #[test]
    fn cpu_per_message_counts_only_the_ticks_that_read_every_servers_cpu() {
        let ticks = [
            // Two servers at 50 % and 30 % of a core for 1 s: 0.8 CPU-seconds, 1,000 sent.
            tick(1.0, 1000.0, 5000.0, &[Some(50.0), Some(30.0)]),
            // Half a second at 2,000/s, 100 % and 60 %: 0.8 CPU-seconds over 1,000 more.
            tick(0.5, 2000.0, 0.0, &[Some(100.0), Some(60.0)]),
            // One server not read: left out, its messages too.
            tick(1.0, 9000.0, 0.0, &[Some(10.0), None]),
            // No server sampled in it.
            tick(1.0, 9000.0, 0.0, &[]),
        ];
        let ns = cpu_ns_per_msg(&ticks).unwrap();
        assert!((ns - 1.6e9 / 2000.0).abs() < 1e-6, "{ns}");
        // A subscriber alone: per message received.
        let sub = [tick(1.0, 0.0, 4000.0, &[Some(40.0)])];
        assert!((cpu_ns_per_msg(&sub).unwrap() - 0.4e9 / 4000.0).abs() < 1e-6);
        // Nothing read, or nothing moved: not measured.
        assert_eq!(cpu_ns_per_msg(&ticks[2..]), None);
        assert_eq!(cpu_ns_per_msg(&[tick(1.0, 0.0, 0.0, &[Some(5.0)])]), None);
    }
}
