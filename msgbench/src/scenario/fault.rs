//! Fault injection: at a set time from the start of the load, kill, restart or pause the
//! embedded server, and remember exactly when, so recovery can be measured from that instant.
//!
//! The injector runs on its own thread inside the scenario's scope and ends by itself: at the
//! fault's time plus its hold at most, or as soon as the run is over or interrupted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::engine::pace::Pace;
use crate::error::{Error, Result};
use crate::server::{EmbeddedServer, Target};
use crate::stats::recovery::{FaultKind, FaultSpec};
use crate::stats::recovery::{FaultReport, Owed, RecoveryLog};

/// Not injected (yet): the value subscribers compare due times against.
pub const NOT_YET: u64 = u64::MAX;

pub struct Injector<'a> {
    spec: FaultSpec,
    server: &'a EmbeddedServer,
    injected_ns: AtomicU64,
    /// When a restarted server accepted clients again (or a paused one was thawed).
    undone_ns: AtomicU64,
    error: Mutex<Option<String>>,
    done: AtomicBool,
}

impl<'a> Injector<'a> {
    /// An injector for `spec` on the target's embedded server; `None` without a fault.
    ///
    /// # Errors
    /// [`Error::Usage`] when there is a fault but no embedded server to inject it into.
    pub fn new(spec: Option<FaultSpec>, target: &'a Target) -> Result<Option<Self>> {
        let Some(spec) = spec else { return Ok(None) };
        let server = target.embedded.as_ref().ok_or_else(|| {
            Error::Usage("--fault needs the server msgbench starts itself".into())
        })?;
        Ok(Some(Self {
            spec,
            server,
            injected_ns: AtomicU64::new(NOT_YET),
            undone_ns: AtomicU64::new(NOT_YET),
            error: Mutex::new(None),
            done: AtomicBool::new(false),
        }))
    }

    /// When the fault was injected, in ns from time zero; [`NOT_YET`] before.
    pub fn fault_ns(&self) -> &AtomicU64 {
        &self.injected_ns
    }

    /// Waits for the fault's time (from `zero`) and injects it. Returns early, doing nothing,
    /// once [`Injector::finish`] is called or `stop` is raised.
    pub fn run(&self, zero: Instant, stop: &AtomicBool) {
        let over = || self.done.load(Ordering::Acquire) || stop.load(Ordering::Relaxed);
        if !sleep_until(zero + self.spec.at, &over) {
            return;
        }
        // The fault's time is taken once it has happened, not when it was asked for: a thread
        // preempted in between would otherwise date it early, and messages the server still
        // delivered would count as sent after it.
        let injected = || {
            self.injected_ns
                .store(zero.elapsed().as_nanos() as u64, Ordering::Release);
        };
        match self.spec.kind {
            FaultKind::Kill => {
                self.server.kill();
                injected();
            }
            FaultKind::Restart => {
                self.server.kill();
                injected();
                // The restart happens even if the run ends meanwhile: a fault must be undone.
                sleep_until(Instant::now() + self.spec.hold, &|| {
                    stop.load(Ordering::Relaxed)
                });
                match self.server.restart() {
                    Ok(()) => self
                        .undone_ns
                        .store(zero.elapsed().as_nanos() as u64, Ordering::Release),
                    Err(e) => {
                        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                    }
                }
            }
            FaultKind::Pause => {
                self.server.freeze(true);
                injected();
                sleep_until(Instant::now() + self.spec.hold, &|| {
                    stop.load(Ordering::Relaxed)
                });
                self.server.freeze(false);
            }
        }
    }

    /// The load is over: an injector still waiting for its time gives up.
    pub fn finish(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// Why the fault could not be injected or undone (a restarted server that did not come
    /// back), if it could not.
    pub fn error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// When the fault was undone (a restarted server listening again), in ns from the load's
    /// time zero.
    pub fn undone_ns(&self) -> Option<u64> {
        let at = self.undone_ns.load(Ordering::Acquire);
        (at != NOT_YET).then_some(at)
    }

    /// When the fault was injected, in ns from the load's time zero.
    pub fn injected_ns(&self) -> Option<u64> {
        let at = self.injected_ns.load(Ordering::Acquire);
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
    /// owed an equal share of what `pace` has due; `end_ns` is when sending stopped.
    pub fn report(
        &self,
        logs: &[&RecoveryLog],
        pace: &Pace,
        parts: u32,
        end_ns: u64,
    ) -> FaultReport {
        let at = self.injected_ns.load(Ordering::Acquire);
        let share = 1.0 / f64::from(parts.max(1));
        let owed = match pace.schedule() {
            Some(s) => Owed::schedule(s, share),
            None => Owed::rate(pace.target_rate() * share),
        };
        FaultReport::new(
            self.spec,
            (at != NOT_YET).then_some(at),
            self.error.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            logs,
            (owed, self.rate(pace, parts)),
            end_ns,
        )
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
