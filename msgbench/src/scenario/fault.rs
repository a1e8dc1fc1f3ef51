//! Fault injection: at set times from the start of the load, kill, restart, pause, partition
//! (a local cluster's nodes, through [`crate::server::partition`]), power off or damage the
//! disk of (through [`super::fault_disk`]) the embedded
//! server, or nodes of a local cluster picked by their JetStream role when the fault
//! comes ([`super::fault_roles`]); remember exactly when each was injected and undone, so
//! recovery can be measured from that instant.
//!
//! The injector runs on its own thread inside the scenario's scope, as one timeline of steps
//! (inject, undo, look for the new leader), so faults whose holds overlap stay on time. It
//! ends by itself: no fault is injected once the run is over or interrupted, but a fault that
//! was injected is always undone, and the look for a new leader is bounded.
//!
//! A fault aimed at a role whose holder cannot be found when its time comes (no stream leader
//! answers during an election) waits for it, asking again every [`LEADER_POLL`] for
//! [`TARGET_WAIT`] at most, as a step of the timeline that does not hold up the others; the
//! result says how long it waited. One never injected fails the run with an exit status of its
//! own unless the user allows it ([`crate::result::RunResult::exit_code`]).
//!
//! `restart-TARGET` listed after `kill-TARGET` starts the nodes that kill took down (if they
//! are still down) rather than killing whoever holds the role then: "restart the leader" after
//! "kill the leader" means the node that was killed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::fault_roles::Cluster;
use crate::engine::pace::Pace;
use crate::error::{Error, Result};
use crate::server::Target;
use crate::stats::fault_phases::FaultPhases;
use crate::stats::faults::{AckGaps, FaultEvent, Faults};
use crate::stats::recovery::{FaultKind, FaultSpec};
use crate::stats::recovery::{FaultReport, Owed, RecoveryLog};

/// Not injected (yet): the value subscribers compare due times against.
pub const NOT_YET: u64 = u64::MAX;

/// How long after a fault a new stream leader is looked for, and how often. nats-server's
/// raft groups wait 4 to 9 s (drawn at random) before they elect, and a loaded machine adds to
/// that: 30 s leaves room for both without letting a cluster that never recovers hold the run
/// for long.
const LEADER_WAIT: Duration = Duration::from_secs(30);
const LEADER_POLL: Duration = Duration::from_millis(50);

/// How long past its time a fault waits for its target to be found, for the same reason.
const TARGET_WAIT: Duration = Duration::from_secs(30);

pub struct Injector<'a> {
    pub(super) specs: Vec<FaultSpec>,
    pub(super) cluster: Cluster<'a>,
    /// The proxies that cut nodes off, when the run has a partition.
    mesh: Option<&'a crate::server::partition::Mesh>,
    /// Whether a new stream leader is looked for after each fault (a list, or a fault aimed
    /// at a role).
    roles: bool,
    /// When each fault was injected, in ns from time zero; [`NOT_YET`] before.
    times: Vec<AtomicU64>,
    /// When each fault was undone, or its injection for one with nothing to undo (a kill);
    /// [`NOT_YET`] before. The readers end a fault's *during* phase by it.
    pub(super) undone: Vec<AtomicU64>,
    state: Mutex<State>,
    done: AtomicBool,
}

/// What the faults did so far, and which nodes are paused.
#[derive(Default)]
pub(super) struct State {
    pub(super) events: Vec<Seen>,
    frozen: Vec<usize>,
}

#[derive(Default, Clone)]
pub(super) struct Seen {
    pub(super) nodes: Vec<usize>,
    /// A fault of the disk: what it did and what each node had before and after.
    pub(super) disk: super::fault_disk::DiskSeen,
    undone_ns: Option<u64>,
    error: Option<String>,
    leader_before: Option<usize>,
    leader_after: Option<usize>,
    leader_answered_ns: Option<u64>,
    /// Past its time, how long it has waited for its target, and why it is not found yet.
    waited_ns: Option<u64>,
    pending: Option<String>,
}

/// A step of the injector's timeline.
#[derive(Clone, Copy)]
enum Step {
    Inject(usize),
    Undo(usize),
}

impl<'a> Injector<'a> {
    /// An injector for `spec` on the target's embedded server; `None` without a fault.
    ///
    /// # Errors
    /// [`Error::Usage`] when there is a fault but no embedded server to inject it into.
    pub fn new(spec: Option<FaultSpec>, target: &'a Target) -> Result<Option<Self>> {
        let faults = spec.map_or_else(Faults::default, |s| {
            Faults::of(&[s]).expect("one fault fits")
        });
        Self::of(faults, target, None)
    }

    /// An injector for every fault of `faults`; those aimed at a role find their nodes among
    /// the target's cluster, through the stream capturing `subject`. `None` without a fault.
    ///
    /// # Errors
    /// As [`Injector::new`].
    pub fn of(faults: Faults, target: &'a Target, subject: Option<&str>) -> Result<Option<Self>> {
        if faults.is_empty() {
            return Ok(None);
        }
        let first = target.embedded.as_ref().ok_or_else(|| {
            Error::Usage("--fault needs the server msgbench starts itself".into())
        })?;
        let nodes = std::iter::once(first).chain(&target.peers).collect();
        let specs: Vec<FaultSpec> = faults.iter().copied().collect();
        Ok(Some(Self {
            roles: faults.targeted() || specs.len() > 1,
            times: specs.iter().map(|_| AtomicU64::new(NOT_YET)).collect(),
            undone: specs.iter().map(|_| AtomicU64::new(NOT_YET)).collect(),
            state: Mutex::new(State {
                events: vec![Seen::default(); specs.len()],
                frozen: Vec::new(),
            }),
            cluster: Cluster::new(nodes, subject.map(str::to_string)),
            mesh: target.mesh.as_ref(),
            specs,
            done: AtomicBool::new(false),
        }))
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// When the first fault was injected, in ns from time zero; [`NOT_YET`] before.
    pub fn fault_ns(&self) -> &AtomicU64 {
        &self.times[0]
    }

    /// Every fault's injection time, for the readers' acknowledgement gaps.
    pub fn times(&self) -> &[AtomicU64] {
        &self.times
    }

    /// Every fault's undo time (its injection for a kill), for the readers' latency phases.
    pub fn undone(&self) -> &[AtomicU64] {
        &self.undone
    }

    /// Runs the faults' timeline from `zero`. No fault is injected once [`Injector::finish`]
    /// is called or `stop` is raised; the ones injected are still undone.
    ///
    /// After each fault aimed at a role, a thread of its own asks for the stream's leader
    /// (bounded by [`LEADER_WAIT`]), so a slow answer never delays the next fault.
    pub fn run(&self, zero: Instant, stop: &AtomicBool) {
        let over = || self.done.load(Ordering::Acquire) || stop.load(Ordering::Relaxed);
        let stopped = || stop.load(Ordering::Relaxed);
        let mut steps: Vec<(Instant, Step)> = (self.specs.iter().enumerate())
            .map(|(k, s)| (zero + s.at, Step::Inject(k)))
            .collect();
        std::thread::scope(|s| {
            while let Some(i) = (0..steps.len()).min_by_key(|&i| steps[i].0) {
                let (when, step) = steps.remove(i);
                match step {
                    Step::Inject(k) => {
                        if !sleep_until(when, &over) {
                            steps.retain(|(_, s)| !matches!(s, Step::Inject(_)));
                            continue;
                        }
                        if !self.inject(k, zero, &mut steps) {
                            steps.push((Instant::now() + LEADER_POLL, Step::Inject(k)));
                            continue;
                        }
                        if self.roles && self.cluster.clustered() && self.cluster.subject.is_some()
                        {
                            s.spawn(move || self.watch(k, zero, stop));
                        }
                    }
                    Step::Undo(k) => {
                        // A fault must be undone: a run that ends meanwhile only makes it sooner.
                        sleep_until(when, &stopped);
                        self.undo(k, zero);
                        if self.specs[k].kind.on_disk() {
                            s.spawn(move || self.read_after_restart(k, stop));
                        }
                    }
                }
            }
        });
    }

    /// Nodes that cannot answer: down, paused or cut off by a fault.
    fn unavailable(&self) -> Vec<usize> {
        let frozen = self.state().frozen.clone();
        let cut = |i: usize| self.mesh.is_some_and(|m| m.is_cut(i));
        (0..self.cluster.nodes.len())
            .filter(|&i| frozen.contains(&i) || cut(i) || self.cluster.nodes[i].pid().is_none())
            .collect()
    }

    /// The nodes an earlier kill aimed at the same target took down, when some still are.
    fn killed_earlier(&self, k: usize) -> Option<Vec<usize>> {
        let target = self.specs[k].target?;
        let events = self.state().events.clone();
        (0..k)
            .rev()
            .filter(|&j| {
                self.specs[j].kind == FaultKind::Kill && self.specs[j].target == Some(target)
            })
            .map(|j| events[j].nodes.clone())
            .map(|v| {
                v.into_iter()
                    .filter(|&n| self.cluster.nodes[n].pid().is_none())
                    .collect::<Vec<_>>()
            })
            .find(|v| !v.is_empty())
    }

    fn fail(&self, k: usize, why: String) {
        self.state().events[k].error.get_or_insert(why);
    }

    fn stamp(&self, k: usize, zero: Instant) {
        self.times[k].store(zero.elapsed().as_nanos() as u64, Ordering::Release);
    }

    /// Finds fault k's nodes and acts on them; schedules its undo and the look for a leader.
    /// False when its target is not found yet and it may wait longer: ask again later.
    fn inject(&self, k: usize, zero: Instant, steps: &mut Vec<(Instant, Step)>) -> bool {
        let spec = self.specs[k];
        let skip = self.unavailable();
        let earlier = (spec.kind == FaultKind::Restart)
            .then(|| self.killed_earlier(k))
            .flatten();
        let restart_only = earlier.is_some();
        let (nodes, placement) = match (earlier, spec.target) {
            (Some(v), _) => (v, None),
            (None, None) => (vec![0], None),
            (None, Some(t)) => match self.cluster.victims(t, &skip) {
                Ok(found) => {
                    let mut st = self.state();
                    if st.events[k].pending.take().is_some() {
                        let waited = zero.elapsed().saturating_sub(spec.at);
                        st.events[k].waited_ns = Some(waited.as_nanos() as u64);
                    }
                    found
                }
                Err(why) => {
                    let waited = zero.elapsed().saturating_sub(spec.at);
                    let mut st = self.state();
                    st.events[k].waited_ns = Some(waited.as_nanos() as u64);
                    if waited < TARGET_WAIT {
                        st.events[k].pending = Some(why);
                        return false;
                    }
                    drop(st);
                    self.fail(
                        k,
                        format!(
                            "{why} (after waiting {} for it)",
                            crate::format::duration_ns(waited.as_nanos() as f64)
                        ),
                    );
                    return true;
                }
            },
        };
        {
            let mut st = self.state();
            st.events[k].nodes.clone_from(&nodes);
            st.events[k].leader_before = placement.and_then(|p| p.leader);
        }
        let servers = || nodes.iter().map(|&n| self.cluster.nodes[n]);
        // The fault's time is taken once it has happened, not when it was asked for: a thread
        // preempted in between would otherwise date it early, and messages the server still
        // delivered would count as sent after it.
        match spec.kind {
            FaultKind::Restart if restart_only => {
                self.stamp(k, zero);
                self.undo(k, zero);
            }
            FaultKind::Kill | FaultKind::Restart => {
                servers().for_each(|s| s.kill());
                self.stamp(k, zero);
                if spec.kind == FaultKind::Kill {
                    let at = self.times[k].load(Ordering::Acquire);
                    self.undone[k].store(at, Ordering::Release);
                }
            }
            FaultKind::Pause => {
                self.state().frozen.extend(&nodes);
                servers().for_each(|s| s.freeze(true));
                self.stamp(k, zero);
            }
            FaultKind::PowerLoss | FaultKind::Corrupt => {
                let seen = self.strike(spec, &nodes);
                self.stamp(k, zero);
                let mut st = self.state();
                st.events[k].disk = seen;
                if let Some(why) = st.events[k].disk.error.clone() {
                    st.events[k].error.get_or_insert(why);
                }
            }
            FaultKind::Partition => {
                let Some(mesh) = self.mesh else {
                    self.fail(
                        k,
                        "the cluster was started without partition proxies".into(),
                    );
                    return true;
                };
                mesh.cut(&nodes, true);
                self.stamp(k, zero);
            }
        }
        if spec.kind != FaultKind::Kill && !restart_only {
            steps.push((Instant::now() + spec.hold, Step::Undo(k)));
        }
        true
    }

    /// Starts fault k's nodes again, or thaws them.
    fn undo(&self, k: usize, zero: Instant) {
        let nodes = self.state().events[k].nodes.clone();
        let mut failed = None;
        for &n in &nodes {
            let server = self.cluster.nodes[n];
            match self.specs[k].kind {
                FaultKind::Pause => {
                    server.freeze(false);
                    self.state().frozen.retain(|f| *f != n);
                }
                FaultKind::Partition => {
                    if let Some(mesh) = self.mesh {
                        mesh.cut(&[n], false);
                    }
                }
                _ => {
                    if let Err(e) = server.restart() {
                        failed.get_or_insert(e.to_string());
                    }
                }
            }
        }
        match failed {
            Some(why) => self.fail(k, why),
            None => {
                let at = zero.elapsed().as_nanos() as u64;
                // Published to the readers at once: a publish due after `at` is answered a
                // round trip later at the earliest, by when the store is seen.
                self.undone[k].store(at, Ordering::Release);
                self.state().events[k].undone_ns = Some(at);
            }
        }
    }

    /// Asks for the stream's leader after fault k until one it did not act on (or any, once
    /// the fault is undone) answers, for [`LEADER_WAIT`] at most.
    fn watch(&self, k: usize, zero: Instant, stop: &AtomicBool) {
        let until = Instant::now() + LEADER_WAIT;
        while !self.leader_answered(k, zero) && Instant::now() < until {
            if !sleep_until(Instant::now() + LEADER_POLL, &|| {
                stop.load(Ordering::Relaxed)
            }) {
                return;
            }
        }
    }

    /// Asks for the stream's leader once; true when one that fault k did not act on (or any,
    /// once the fault is undone) has answered.
    fn leader_answered(&self, k: usize, zero: Instant) -> bool {
        let (nodes, undone) = {
            let st = self.state();
            (st.events[k].nodes.clone(), st.events[k].undone_ns.is_some())
        };
        let Some(leader) = self
            .cluster
            .placement(&self.unavailable())
            .and_then(|p| p.leader)
        else {
            return false;
        };
        if nodes.contains(&leader) && !undone {
            return false;
        }
        let at = self.times[k].load(Ordering::Acquire);
        let mut st = self.state();
        st.events[k].leader_after = Some(leader);
        st.events[k].leader_answered_ns =
            Some((zero.elapsed().as_nanos() as u64).saturating_sub(at));
        true
    }

    /// The load is over: faults still waiting for their time are not injected.
    pub fn finish(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// Why the first fault could not be injected or undone (a restarted server that did not
    /// come back), if it could not.
    pub fn error(&self) -> Option<String> {
        self.state().events[0].error.clone()
    }

    /// When the first fault, a restart, was undone (the server listening again), in ns from
    /// the load's time zero.
    pub fn undone_ns(&self) -> Option<u64> {
        (self.specs[0].kind == FaultKind::Restart)
            .then(|| self.state().events[0].undone_ns)
            .flatten()
    }

    /// When the first fault was injected, in ns from the load's time zero.
    pub fn injected_ns(&self) -> Option<u64> {
        let at = self.times[0].load(Ordering::Acquire);
        (at != NOT_YET).then_some(at)
    }

    /// The rate each of `parts` subscribers is owed at the moment of the fault: `pace`'s then
    /// (the stage the fault fell in, for a `--rate-schedule`), shared by `parts`.
    fn rate(&self, pace: &Pace, parts: u32) -> f64 {
        let rate = match (pace.schedule(), self.injected_ns()) {
            (Some(s), Some(at)) => s.rate_at_ns(at),
            _ => pace.target_rate(),
        };
        rate / f64::from(parts.max(1))
    }

    /// The result's fault section, from the subscribers' logs: each of `parts` subscribers is
    /// owed an equal share of what `pace` has due; `end_ns` is when sending stopped. The
    /// section describes the first fault; [`Injector::events`] adds each fault's own.
    pub fn report(
        &self,
        logs: &[&RecoveryLog],
        pace: &Pace,
        parts: u32,
        end_ns: u64,
    ) -> FaultReport {
        let share = 1.0 / f64::from(parts.max(1));
        let owed = match pace.schedule() {
            Some(s) => Owed::schedule(s, share),
            None => Owed::rate(pace.target_rate() * share),
        };
        FaultReport::new(
            self.specs[0],
            self.injected_ns(),
            self.error(),
            logs,
            (owed, self.rate(pace, parts)),
            end_ns,
        )
    }

    /// Every fault's own report, with the publishers' acknowledgement `gaps` around it and
    /// their latency `phases`; publishers that acknowledge (the request path) report each
    /// fault, a single one too, so that its phases are there.
    pub fn events(&self, gaps: &[&AckGaps<'_>], phases: &[&FaultPhases<'_>]) -> Vec<FaultEvent> {
        let st = self.state();
        let name = |n: Option<usize>| n.map(|n| self.cluster.name(n));
        (self.specs.iter().zip(&st.events).enumerate())
            .map(|(k, (spec, seen))| {
                let at = self.times[k].load(Ordering::Acquire);
                let injected = (at != NOT_YET).then_some(at);
                // A fault still waiting for its target when the run ended says so.
                let waited = |ns: u64| crate::format::duration_ns(ns as f64);
                let ended = (seen.pending.as_ref().zip(seen.waited_ns)).map(|(why, ns)| {
                    format!(
                        "the run ended while it waited for its target ({} past its time): {why}",
                        waited(ns)
                    )
                });
                FaultEvent {
                    spec: *spec,
                    nodes: seen.nodes.iter().map(|&n| self.cluster.name(n)).collect(),
                    injected_at_ns: injected,
                    waited_ns: seen.waited_ns,
                    undone_at_ns: seen.undone_ns,
                    error: seen.error.clone().or(ended),
                    leader_before: name(seen.leader_before),
                    leader_after: name(seen.leader_after),
                    leader_answered_ns: seen.leader_answered_ns,
                    no_ack_ns: injected.and_then(|_| AckGaps::gap(gaps, k)),
                    ack_latency: FaultPhases::merged(phases, k),
                    corruption: seen.disk.corruption.clone(),
                    restarts: self.restarts(seen),
                }
            })
            .collect()
    }
}

/// Sleeps until `when` in short steps; false if `over` became true first.
fn sleep_until(when: Instant, over: &dyn Fn() -> bool) -> bool {
    loop {
        if over() {
            return false;
        }
        let left = when.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
}
