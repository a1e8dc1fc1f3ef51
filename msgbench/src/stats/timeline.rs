//! The run as it happens, second by second: a [`Meter`] the load loops write to, and the
//! [`Timeline`] of [`Tick`]s read off it. The same ticks feed three consumers: the live line on
//! the terminal, `--stream-stats` (JSON lines), `--metrics-listen` (with the [`Totals`] they add
//! up to), and the `timeline` section of the result that the HTML report draws.
//!
//! Writers pay almost nothing: each client owns its counter and its latency buckets and is their
//! only writer, so an update is a relaxed load and store on a cache line no other thread
//! writes. The reader (one thread, once a second) keeps the previous snapshot and works on the
//! differences, so nothing is ever reset under a writer's feet.
//!
//! The servers' side rides on the same ticks: a sampler on its own thread leaves its newest
//! reading of the servers in the meter's [`Slot`], and each tick takes it from there (never
//! waiting for a server), with the events found since the last tick.
//!
//! A run rarely ends on a tick. Its last tick is taken when the run is over, after the
//! connections are closed, so it would span the close too and a rate over it would show a
//! collapse that never happened. The scenario therefore tells the meter when its last message
//! was counted ([`Meter::counted_until`]), and the last tick ends there: a partial interval
//! whose rate is over its own length.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;

use crate::error::ErrorCounts;
use crate::stats::schedule::RateSchedule;
use crate::stats::server::{ServerTick, Slot, ToolTick};
use crate::stats::throughput::Role;

/// Significant bits kept per power of two: 64 buckets per octave, so a value is known to
/// within 1/64 (1.6 %), plenty for a live P99 and a latency-over-time chart. The exact
/// histograms of the result are kept separately by the recorders.
const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
/// Values below `SUB` get a bucket each; each octave above gets `SUB` buckets.
const BUCKETS: usize = SUB + (64 - SUB_BITS as usize) * SUB;

/// Latency counts by log-linear bucket, written by one thread.
pub struct LiveHist {
    counts: Box<[AtomicU64]>,
}

impl Default for LiveHist {
    fn default() -> Self {
        Self {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

fn bucket(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let octave = 63 - v.leading_zeros(); // ≥ SUB_BITS
    let shift = octave - SUB_BITS;
    let mantissa = ((v >> shift) as usize) & (SUB - 1);
    SUB + shift as usize * SUB + mantissa
}

/// The middle of bucket `i`: the value reported for anything counted in it.
fn bucket_value(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let shift = ((i - SUB) / SUB) as u32;
    let mantissa = ((i - SUB) % SUB) as u64;
    let low = (SUB as u64 + mantissa) << shift;
    low + ((1u64 << shift) >> 1)
}

impl LiveHist {
    /// Counts one latency. Only the owning thread may call this: the plain load and store
    /// (no read-modify-write) are what keep it cheap.
    #[inline]
    pub fn record(&self, ns: u64) {
        let c = &self.counts[bucket(ns)];
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

/// One client's live figures.
pub struct ClientMeter {
    pub role: Role,
    pub id: u32,
    /// Messages so far (sent for a publisher or requester, received for a subscriber); the
    /// load loops store it about once per batch.
    pub msgs: AtomicU64,
    /// Latencies this client measured, when it measures any.
    pub latency: Option<LiveHist>,
}

/// A `conns` run's connections, which its run stores while they open and hold: connections
/// are its load, as messages are the others'.
#[derive(Debug, Default)]
pub struct ConnsGauge {
    /// Up now.
    pub up: AtomicU64,
    /// Came up the first time, so far.
    pub opened: AtomicU64,
    /// Losses of a connection that was up, so far.
    pub lost: AtomicU64,
}

/// What every client of a run registers with, and the reader samples.
pub struct Meter {
    started: Instant,
    clients: Mutex<Vec<Arc<ClientMeter>>>,
    /// Every error count of the run (a JetStream consume has its publisher's and its own).
    errors: Mutex<Vec<Arc<ErrorCounts>>>,
    /// The rate schedule and when it started, so each tick can name its stage.
    schedule: Mutex<Option<(Instant, RateSchedule)>>,
    /// When the run's last message was counted, once the scenario knows.
    counted_until: Mutex<Option<Instant>>,
    /// A `conns` run's connections.
    conns: Mutex<Option<Arc<ConnsGauge>>>,
    /// The load's time zero, once the scenario has one: what its times "from the start of the
    /// load" (a fault's injection, …) count from.
    load_zero: Mutex<Option<Instant>>,
    /// Where the servers' sampler leaves its readings, when the run samples servers.
    servers: Mutex<Option<Arc<Slot>>>,
    /// What the publishers' and the subscribers' messages are, in the scenario's words, once
    /// the run knows (`["publishes", "acknowledgements"]`): the live line and page name the
    /// series so.
    names: std::sync::OnceLock<[&'static str; 2]>,
}

impl Default for Meter {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            clients: Mutex::new(Vec::new()),
            errors: Mutex::new(Vec::new()),
            schedule: Mutex::new(None),
            counted_until: Mutex::new(None),
            conns: Mutex::new(None),
            load_zero: Mutex::new(None),
            servers: Mutex::new(None),
            names: std::sync::OnceLock::new(),
        }
    }
}

impl Meter {
    /// Names the two sides' series (publishers', subscribers'); the first naming holds.
    pub fn name_series(&self, publishers: &'static str, subscribers: &'static str) {
        let _ = self.names.set([publishers, subscribers]);
    }

    /// The two sides' series names: "sent" and "received" until the run names them.
    pub fn series_names(&self) -> [&'static str; 2] {
        self.names.get().copied().unwrap_or(["sent", "received"])
    }

    /// Registers a client; `timed` when it records latencies.
    pub fn client(&self, role: Role, id: u32, timed: bool) -> Arc<ClientMeter> {
        let c = Arc::new(ClientMeter {
            role,
            id,
            msgs: AtomicU64::new(0),
            latency: timed.then(LiveHist::default),
        });
        self.clients
            .lock()
            .expect("meter lock")
            .push(Arc::clone(&c));
        c
    }

    /// The gauge a `conns` run keeps its connections' counts in, so each tick shows them.
    pub fn conns(&self) -> Arc<ConnsGauge> {
        let g = Arc::new(ConnsGauge::default());
        *self.conns.lock().expect("meter lock") = Some(Arc::clone(&g));
        g
    }

    /// The slot a sampler of the run's servers leaves its readings in, for each tick to take.
    pub fn watch_servers(&self) -> Arc<Slot> {
        let slot = Arc::new(Slot::default());
        *self.servers.lock().expect("meter lock") = Some(Arc::clone(&slot));
        slot
    }

    /// When the meter was made: the run's time zero, which every `t_s` counts from.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The load's time zero came at `zero`. The first one stands (a scenario of two phases
    /// dates its times from the first).
    pub fn load_started(&self, zero: Instant) {
        self.load_zero
            .lock()
            .expect("meter lock")
            .get_or_insert(zero);
    }

    /// [`Meter::load_started`] in seconds since the run started.
    pub fn load_start_s(&self) -> Option<f64> {
        let zero = *self.load_zero.lock().expect("meter lock");
        zero.map(|z| z.saturating_duration_since(self.started).as_secs_f64())
    }

    /// Time since the meter was made (the run's start).
    pub fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// The run's error counters, so each tick can say how many errors it saw.
    pub fn watch_errors(&self, errors: &Arc<ErrorCounts>) {
        self.errors
            .lock()
            .expect("meter lock")
            .push(Arc::clone(errors));
    }

    /// The run follows `schedule` from `start` (a `--rate-schedule`; a fixed rate has no stages
    /// to show).
    pub fn follow_schedule(&self, start: Instant, schedule: &RateSchedule) {
        if !schedule.is_fixed() {
            *self.schedule.lock().expect("meter lock") = Some((start, schedule.clone()));
        }
    }

    /// The run's load is over: `ends` are when its clients counted their last message (`None`
    /// for a client that counted none), and the latest is the run's end. Called again (a
    /// scenario of two phases), the latest end of all stands.
    pub fn counted_until(&self, ends: impl IntoIterator<Item = Option<Instant>>) {
        let Some(at) = ends.into_iter().flatten().max() else {
            return;
        };
        let mut end = self.counted_until.lock().expect("meter lock");
        *end = Some(end.map_or(at, |e| e.max(at)));
    }

    /// [`Meter::counted_until`] in seconds since the run started.
    fn end_s(&self) -> Option<f64> {
        let end = *self.counted_until.lock().expect("meter lock");
        end.map(|e| e.saturating_duration_since(self.started).as_secs_f64())
    }

    /// Whether the load was over by `t_s` seconds into the run, so that time after it holds
    /// nothing of the run.
    pub fn ended_by(&self, t_s: f64) -> bool {
        self.end_s().is_some_and(|e| e <= t_s)
    }

    /// The stage the schedule was in `ago` before now.
    pub fn stage_before(&self, ago: std::time::Duration) -> Option<TickStage> {
        let guard = self.schedule.lock().expect("meter lock");
        let (start, schedule) = guard.as_ref()?;
        let t = start.elapsed().saturating_sub(ago).as_nanos() as u64;
        let index = schedule.stage_at_ns(t);
        Some(TickStage {
            index,
            of: schedule.stages().len(),
            target_rate: schedule.stages()[index].target_rate(),
        })
    }

    /// Every error count of the run, by kind, summed over its counters.
    pub fn errors_by_kind(&self) -> BTreeMap<&'static str, u64> {
        let mut out = BTreeMap::new();
        for (k, n) in self
            .errors
            .lock()
            .expect("meter lock")
            .iter()
            .flat_map(|e| e.snapshot())
        {
            *out.entry(k.as_str()).or_insert(0) += n;
        }
        out
    }
}

/// Latency within one tick.
#[derive(Debug, Clone, Serialize)]
pub struct TickLatency {
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

/// The schedule's stage during a tick.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TickStage {
    /// From 0.
    pub index: usize,
    /// Stages in the schedule.
    pub of: usize,
    /// The stage's target rate (its mean, for a stage of a ramp).
    pub target_rate: f64,
}

/// A `conns` run's connections during a tick.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TickConns {
    /// Up at the end of the interval.
    pub up: u64,
    /// Connections that came up the first time, per second of the interval.
    pub opened_per_sec: f64,
    /// Connections that were up and were lost in the interval.
    pub lost: u64,
}

/// One interval of the run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Tick {
    /// End of the interval, seconds since the run started.
    pub t_s: f64,
    /// Its length. The last one of a run is usually shorter: it ends when the run's last
    /// message was counted, and its rates are over that length.
    pub span_s: f64,
    /// Each client's messages in the interval, in the order of [`Timeline::clients`]; empty
    /// when the run has more clients than [`PER_CLIENT_LIMIT`].
    pub msgs: Vec<u64>,
    pub sent_per_sec: f64,
    pub received_per_sec: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<TickLatency>,
    /// Errors counted in the interval.
    pub errors: u64,
    /// Where a `--rate-schedule` was in the middle of the interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<TickStage>,
    /// A `conns` run's connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conns: Option<TickConns>,
    /// The servers' newest reading (its own `t_s` says when it was made) and the events found
    /// since the last tick; absent when the run samples no server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerTick>,
    /// msgbench's own CPU in the interval, where it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolTick>,
}

/// Per-client columns stop here: beyond it a tick would be mostly a list of numbers.
pub const PER_CLIENT_LIMIT: usize = 100;
/// A day of one-second ticks; a longer run keeps its first day (and says so).
pub const MAX_TICKS: usize = 86_400;

#[derive(Debug, Clone, Serialize)]
pub struct TimelineClient {
    pub role: Role,
    pub id: u32,
}

/// The `timeline` section of a result.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    pub interval_s: f64,
    pub clients: Vec<TimelineClient>,
    pub ticks: Vec<Tick>,
    /// True when the run outlasted [`MAX_TICKS`] and later ticks were not kept.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// When the load's time zero came, in seconds on the ticks' clock: a time "from the start
    /// of the load" (a fault's `injected_at_ns`, …) is this much later on the timeline. Absent
    /// when the scenario does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_start_s: Option<f64>,
}

/// Counts from the start of the run to the end of the last tick, read with it: what a
/// scraper's counters show. They agree with the ticks exactly, because they are the same
/// readings: a role's messages are the sum of its clients' messages in every tick so far, and
/// the errors of all kinds the sum of the ticks' errors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Messages by role, for each role that has a client.
    pub msgs: BTreeMap<Role, u64>,
    /// Errors by kind name, as [`Meter::errors_by_kind`] read at the tick.
    pub errors: BTreeMap<&'static str, u64>,
}

/// Turns successive readings of a [`Meter`] into ticks. Owned by the one reader thread.
pub struct Sampler {
    meter: Arc<Meter>,
    last_at: f64,
    last_msgs: Vec<u64>,
    last_hist: Vec<Vec<u64>>,
    last_errors: u64,
    /// A `conns` run's first connects and losses at the previous tick.
    last_conns: (u64, u64),
    merged: Vec<u64>,
    totals: Totals,
}

impl Sampler {
    /// The meter's [`Meter::load_start_s`], for the timeline it ends in.
    pub fn load_start_s(&self) -> Option<f64> {
        self.meter.load_start_s()
    }

    pub fn new(meter: Arc<Meter>) -> Self {
        Self {
            meter,
            last_at: 0.0,
            last_msgs: Vec::new(),
            last_hist: Vec::new(),
            last_errors: 0,
            last_conns: (0, 0),
            merged: vec![0; BUCKETS],
            totals: Totals::default(),
        }
    }

    /// The counts up to the end of the last tick.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// The clients registered so far.
    pub fn clients(&self) -> Vec<TimelineClient> {
        let clients = self.meter.clients.lock().expect("meter lock");
        clients
            .iter()
            .map(|c| TimelineClient {
                role: c.role,
                id: c.id,
            })
            .collect()
    }

    /// Everything since the previous call, as one tick. Once the scenario has said when its
    /// last message was counted, a tick that reaches past that ends there: the time after it
    /// (closing connections) holds no load, and counting it in would dilute the rates.
    pub fn tick(&mut self) -> Tick {
        let elapsed = self.meter.started.elapsed().as_secs_f64();
        let now = match self.meter.end_s() {
            Some(end) if end > self.last_at => end.min(elapsed),
            // Over before this tick began: anything counted now was counted late (a loop's
            // last store), and when it happened is not known any better than the sampler's
            // own reading.
            _ => elapsed,
        };
        let span = (now - self.last_at).max(1e-9);
        self.last_at = now;
        let clients: Vec<Arc<ClientMeter>> = self.meter.clients.lock().expect("meter lock").clone();
        self.last_msgs.resize(clients.len(), 0);
        self.last_hist.resize(clients.len(), Vec::new());
        self.merged.iter_mut().for_each(|c| *c = 0);
        let (mut sent, mut received) = (0u64, 0u64);
        let mut msgs = Vec::with_capacity(clients.len().min(PER_CLIENT_LIMIT));
        for (i, c) in clients.iter().enumerate() {
            let now_msgs = c.msgs.load(Ordering::Relaxed);
            let d = now_msgs.saturating_sub(self.last_msgs[i]);
            self.last_msgs[i] = now_msgs;
            match c.role {
                Role::Pub => sent += d,
                Role::Sub => received += d,
            }
            *self.totals.msgs.entry(c.role).or_insert(0) += d;
            if clients.len() <= PER_CLIENT_LIMIT {
                msgs.push(d);
            }
            if let Some(h) = &c.latency {
                let last = &mut self.last_hist[i];
                last.resize(BUCKETS, 0);
                for (b, (count, prev)) in h.counts.iter().zip(last.iter_mut()).enumerate() {
                    let v = count.load(Ordering::Relaxed);
                    self.merged[b] += v.saturating_sub(*prev);
                    *prev = v;
                }
            }
        }
        // The kinds and the tick's count come from one reading, so they cannot disagree.
        self.totals.errors = self.meter.errors_by_kind();
        let errors_now: u64 = self.totals.errors.values().sum();
        let errors = errors_now.saturating_sub(self.last_errors);
        self.last_errors = errors_now;
        let conns = self.meter.conns.lock().expect("meter lock").clone();
        let conns = conns.map(|g| {
            let opened = g.opened.load(Ordering::Relaxed);
            let lost = g.lost.load(Ordering::Relaxed);
            let (last_opened, last_lost) = std::mem::replace(&mut self.last_conns, (opened, lost));
            TickConns {
                up: g.up.load(Ordering::Relaxed),
                opened_per_sec: opened.saturating_sub(last_opened) as f64 / span,
                lost: lost.saturating_sub(last_lost),
            }
        });
        Tick {
            t_s: now,
            span_s: span,
            msgs,
            sent_per_sec: sent as f64 / span,
            received_per_sec: received as f64 / span,
            latency: summarize(&self.merged),
            errors,
            // The stage in the middle of the interval: the one its figures belong to, even when
            // the sampler's second and the schedule's are a little apart.
            stage: self
                .meter
                .stage_before(std::time::Duration::from_secs_f64(span / 2.0)),
            conns,
            server: self
                .meter
                .servers
                .lock()
                .expect("meter lock")
                .as_ref()
                .and_then(|s| s.take()),
            tool: None,
        }
    }
}

/// P50, P99 and max of bucket counts; `None` when nothing was counted.
fn summarize(counts: &[u64]) -> Option<TickLatency> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = |q: f64| ((q * total as f64).ceil() as u64).clamp(1, total);
    let (r50, r99) = (rank(0.50), rank(0.99));
    let (mut p50, mut p99, mut max, mut seen) = (None, None, 0, 0u64);
    for (i, &c) in counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        seen += c;
        if p50.is_none() && seen >= r50 {
            p50 = Some(bucket_value(i));
        }
        if p99.is_none() && seen >= r99 {
            p99 = Some(bucket_value(i));
        }
        max = bucket_value(i);
    }
    Some(TickLatency {
        count: total,
        p50_ns: p50.unwrap_or(max),
        p99_ns: p99.unwrap_or(max),
        max_ns: max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_keep_values_within_their_precision() {
        for v in [
            0u64,
            1,
            63,
            64,
            65,
            1000,
            123_456,
            9_999_999,
            3_600_000_000_000,
            u64::MAX,
        ] {
            let i = bucket(v);
            assert!(i < BUCKETS, "{v}");
            let got = bucket_value(i) as f64;
            let err = (got - v as f64).abs() / (v as f64).max(1.0);
            assert!(err <= 1.0 / SUB as f64, "{v} → bucket {i} reads {got}");
        }
        // Ordered: a larger value never lands in an earlier bucket.
        let mut last = 0;
        for v in (0..20_000u64).map(|x| x * x) {
            assert!(bucket(v) >= last);
            last = bucket(v);
        }
    }

    #[test]
    fn a_conns_tick_holds_the_connections_up_and_those_opened_and_lost_since_the_last() {
        let meter = Arc::new(Meter::default());
        let mut sampler = Sampler::new(Arc::clone(&meter));
        assert_eq!(sampler.tick().conns, None, "a run of messages has none");
        let g = meter.conns();
        g.up.store(40, Ordering::Relaxed);
        g.opened.store(40, Ordering::Relaxed);
        let t1 = sampler.tick().conns.unwrap();
        assert_eq!((t1.up, t1.lost), (40, 0));
        assert!(t1.opened_per_sec > 0.0);
        g.up.store(45, Ordering::Relaxed);
        g.opened.store(50, Ordering::Relaxed);
        g.lost.store(5, Ordering::Relaxed);
        let t2 = sampler.tick();
        let c = t2.conns.unwrap();
        assert_eq!((c.up, c.lost), (45, 5));
        // Ten opened in this tick, whatever its length.
        assert!((c.opened_per_sec * t2.span_s - 10.0).abs() < 1e-6, "{c:?}");
    }

    #[test]
    fn a_tick_holds_what_happened_since_the_last_one() {
        let meter = Arc::new(Meter::default());
        let p = meter.client(Role::Pub, 0, false);
        let s = meter.client(Role::Sub, 0, true);
        let mut sampler = Sampler::new(Arc::clone(&meter));
        p.msgs.store(100, Ordering::Relaxed);
        s.msgs.store(98, Ordering::Relaxed);
        let h = s.latency.as_ref().unwrap();
        for v in 1..=98u64 {
            h.record(v * 1000);
        }
        let t1 = sampler.tick();
        assert_eq!(t1.msgs, vec![100, 98]);
        let lat = t1.latency.unwrap();
        assert_eq!(lat.count, 98);
        let near = |got: u64, want: f64| (got as f64 - want).abs() / want <= 1.0 / SUB as f64;
        assert!(near(lat.p50_ns, 49_000.0), "{}", lat.p50_ns);
        assert!(near(lat.p99_ns, 98_000.0), "{}", lat.p99_ns);
        assert!(near(lat.max_ns, 98_000.0), "{}", lat.max_ns);
        // Only the new messages and latencies count in the next tick.
        p.msgs.store(150, Ordering::Relaxed);
        h.record(5);
        let t2 = sampler.tick();
        assert_eq!(t2.msgs, vec![50, 0]);
        let lat = t2.latency.unwrap();
        assert_eq!((lat.count, lat.max_ns), (1, 5));
        assert!(sampler.tick().latency.is_none());
        let totals = sampler.totals();
        assert_eq!(totals.msgs[&Role::Pub], 150);
        assert_eq!(totals.msgs[&Role::Sub], 98);
        assert_eq!(
            sampler.clients().iter().map(|c| c.role).collect::<Vec<_>>(),
            vec![Role::Pub, Role::Sub]
        );
    }

    #[test]
    fn the_last_tick_ends_with_the_last_message_counted() {
        // A run 2.5 s old whose load ended 2.1 s in, with a tick taken at 2 s: the last tick
        // spans 0.1 s, not the half second to the reading, and its rate is over that.
        let started = Instant::now()
            .checked_sub(std::time::Duration::from_millis(2500))
            .expect("a clock 2.5 s past its origin");
        let meter = Arc::new(Meter {
            started,
            ..Meter::default()
        });
        let p = meter.client(Role::Pub, 0, false);
        let mut sampler = Sampler::new(Arc::clone(&meter));
        sampler.last_at = 2.0;
        p.msgs.store(100, Ordering::Relaxed);
        let at = |ms| Some(started + std::time::Duration::from_millis(ms));
        meter.counted_until([at(2050), None, at(2100)]);
        // A second phase that ended earlier does not move the end back.
        meter.counted_until([at(1500)]);
        let t = sampler.tick();
        assert!((t.t_s - 2.1).abs() < 1e-9, "{}", t.t_s);
        assert!((t.span_s - 0.1).abs() < 1e-9, "{}", t.span_s);
        assert!((t.sent_per_sec - 1000.0).abs() < 1e-6, "{}", t.sent_per_sec);
        assert!(meter.ended_by(2.1) && !meter.ended_by(2.0));
        // Past the end, a tick is what the reading says: nothing to stretch or shrink.
        p.msgs.store(101, Ordering::Relaxed);
        let late = sampler.tick();
        assert!(late.t_s >= 2.5 && late.span_s >= 0.4, "{late:?}");
        assert_eq!(late.msgs, vec![1]);
        // Before the scenario says anything, ticks end at the reading.
        let meter = Arc::new(Meter {
            started,
            ..Meter::default()
        });
        let mut sampler = Sampler::new(Arc::clone(&meter));
        assert!(sampler.tick().t_s >= 2.5);
        assert!(!meter.ended_by(1e9));
    }

    #[test]
    fn totals_count_errors_by_kind_as_the_ticks_do() {
        use crate::error::{ErrorCounts, ErrorKind};
        let meter = Arc::new(Meter::default());
        let errors = Arc::new(ErrorCounts::default());
        meter.watch_errors(&errors);
        let mut sampler = Sampler::new(Arc::clone(&meter));
        errors.add_n(ErrorKind::RequestTimeout, 3);
        let t1 = sampler.tick();
        errors.add(ErrorKind::NoResponders);
        let t2 = sampler.tick();
        assert_eq!((t1.errors, t2.errors), (3, 1));
        let by_kind = &sampler.totals().errors;
        assert_eq!(by_kind.values().sum::<u64>(), t1.errors + t2.errors);
        assert_eq!(by_kind[ErrorKind::RequestTimeout.as_str()], 3);
        assert!(sampler.totals().msgs.is_empty());
    }
}
