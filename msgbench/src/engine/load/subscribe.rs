//! The subscribe loop, and what it records.
//!
//! The loop sees each message as a borrowed slice of the connection's read buffer and reads the
//! clock once per socket read, not per message. What it does with a payload is a [`Recorder`],
//! the one thing that differs between a throughput and a latency subscriber, so the loop itself
//! is written once.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::TICK;
use crate::engine::conn::{End, Event, Flow, Reader, Shared};
use crate::stats::delivery::DeliveryLog;
use crate::stats::recovery::RecoveryLog;
use crate::stats::stages::StageArrivals;
use crate::stats::throughput::{ClientRun, Role};
use crate::wire::stamp;

/// When a subscriber's expectation is not known yet (publishers still running).
pub const UNKNOWN: u64 = u64::MAX;

/// What the scenario tells running subscribers: how many messages to wait for, and since when
/// that is known (the idle clock starts there).
#[derive(Debug)]
pub struct SubControl {
    epoch: Instant,
    expected: AtomicU64,
    armed_ns: AtomicU64,
}

impl SubControl {
    pub fn new(expected: u64) -> Self {
        Self {
            epoch: Instant::now(),
            expected: AtomicU64::new(expected),
            armed_ns: AtomicU64::new(0),
        }
    }

    /// Sets the count each subscriber waits for, and starts the idle clock now.
    pub fn arm(&self, expected: u64) {
        let ns = self.epoch.elapsed().as_nanos() as u64;
        self.armed_ns.store(ns, Ordering::Release);
        self.expected.store(expected, Ordering::Release);
    }

    pub(crate) fn expected(&self) -> u64 {
        self.expected.load(Ordering::Acquire)
    }

    pub(crate) fn armed_at(&self) -> Instant {
        self.epoch + Duration::from_nanos(self.armed_ns.load(Ordering::Acquire))
    }
}

/// One subscriber's parameters.
#[derive(Debug, Clone, Copy)]
pub struct SubSpec {
    pub id: u32,
    /// Give up after this long without a message, once the expectation is known.
    pub idle_timeout: Duration,
    /// Give up after this long if no message at all arrived.
    pub start_timeout: Duration,
    /// Stop this long after the first message (`sub --duration`).
    pub duration: Option<Duration>,
    /// Stop reading for a while after this many messages (slow-consumer simulation).
    pub stall: Option<(u64, Duration)>,
    /// Track only stamps of this run.
    pub run_tag: Option<u16>,
}

/// What a subscriber saw.
#[derive(Debug, Clone)]
pub struct SubOutcome {
    pub run: ClientRun,
    pub end: End,
}

/// What a subscriber does with each payload: the one thing that differs between a throughput
/// subscriber and a latency subscriber.
pub trait Recorder {
    /// Whether `on_message` needs each message's receive time. Reading the clock per message
    /// costs ~20 ns, so recorders that do not need it do not get it.
    const CLOCK: bool;
    fn on_message(&mut self, payload: &[u8], received_at: Option<Instant>);
}

impl Recorder for DeliveryLog {
    const CLOCK: bool = false;
    #[inline]
    fn on_message(&mut self, payload: &[u8], _: Option<Instant>) {
        self.record(stamp::read(payload));
    }
}

/// A recorder that also logs each arrival for measuring recovery from an injected fault. It
/// reads the clock per message, so it wraps a recorder only when a fault is injected.
pub struct Recovering<'a, R, F> {
    pub inner: R,
    pub log: RecoveryLog,
    /// A message's scheduled send time (ns from time zero), from its payload.
    due: F,
    epoch: &'a OnceLock<Instant>,
    fault_ns: &'a AtomicU64,
}

impl<'a, R, F> Recovering<'a, R, F> {
    pub fn new(inner: R, due: F, epoch: &'a OnceLock<Instant>, fault_ns: &'a AtomicU64) -> Self {
        Self {
            inner,
            log: RecoveryLog::default(),
            due,
            epoch,
            fault_ns,
        }
    }
}

impl<R: Recorder, F: Fn(&[u8]) -> Option<u64>> Recorder for Recovering<'_, R, F> {
    const CLOCK: bool = true;

    #[inline]
    fn on_message(&mut self, payload: &[u8], received_at: Option<Instant>) {
        self.inner.on_message(payload, received_at);
        if let (Some(zero), Some(at)) = (self.epoch.get(), received_at) {
            let recv_ns = at.saturating_duration_since(*zero).as_nanos() as u64;
            let fault_ns = self.fault_ns.load(Ordering::Relaxed);
            self.log.record((self.due)(payload), recv_ns, fault_ns);
        }
    }
}

/// A recorder that also counts each arrival in the stage of a rate schedule it was due in,
/// and in the stage running when it came (so it reads the clock per message: only schedule
/// runs use it).
pub struct Staged<'a, R> {
    pub inner: R,
    pub arrivals: StageArrivals,
    /// The schedule's time zero, once the publishers have it.
    pub epoch: &'a OnceLock<Instant>,
}

impl<R: Recorder> Recorder for Staged<'_, R> {
    const CLOCK: bool = true;

    #[inline]
    fn on_message(&mut self, payload: &[u8], received_at: Option<Instant>) {
        self.arrivals.record(stamp::read(payload));
        if let (Some(zero), Some(at)) = (self.epoch.get(), received_at) {
            self.arrivals
                .arrived_at(at.saturating_duration_since(*zero).as_nanos() as u64);
        }
        self.inner.on_message(payload, received_at);
    }
}

/// The subscribe loop, run on the connection's reader after its SUB was sent.
pub fn subscribe<R: Recorder>(
    reader: &mut Reader,
    shared: &Shared,
    spec: &SubSpec,
    ctl: &SubControl,
    stop: &AtomicBool,
    progress: &AtomicU64,
    recorder: &mut R,
) -> SubOutcome {
    let (mut received, mut bytes) = (0u64, 0u64);
    // Clocks are read once per socket read (at each tick), not per message: a read carries
    // thousands of small messages, and the error is one read's duration.
    let (mut first, mut last): (Option<Instant>, Option<Instant>) = (None, None);
    let mut seen_at_tick = 0u64;
    let end = reader.run(shared, TICK, |event| match event {
        Event::Msg(m) => {
            received += 1;
            if received == 1 {
                // The start of a subscriber's span is exact; later instants are per read.
                first = Some(Instant::now());
            }
            bytes += m.payload.len() as u64;
            let at = R::CLOCK.then(Instant::now);
            recorder.on_message(m.payload, at);
            if let Some((after, pause)) = spec.stall {
                if received == after {
                    sleep_unless_stopped(pause, stop);
                }
            }
            if received >= ctl.expected() {
                Flow::Stop
            } else {
                Flow::Continue
            }
        }
        Event::Tick => {
            let now = Instant::now();
            if received > seen_at_tick {
                first.get_or_insert(now);
                last = Some(now);
                seen_at_tick = received;
                progress.store(received, Ordering::Relaxed);
            }
            if stop.load(Ordering::Relaxed) {
                return Flow::Stop;
            }
            if let (Some(d), Some(f)) = (spec.duration, first) {
                if now >= f + d {
                    return Flow::Stop;
                }
            }
            let expected = ctl.expected();
            if expected == UNKNOWN {
                return Flow::Continue;
            }
            // Everything may have arrived before the count was known.
            if received >= expected {
                return Flow::Stop;
            }
            let armed = ctl.armed_at();
            let (since, limit) = match last {
                Some(l) => (l.max(armed), spec.idle_timeout),
                None => (armed, spec.start_timeout),
            };
            if now.saturating_duration_since(since) > limit {
                Flow::Stop
            } else {
                Flow::Continue
            }
        }
    });
    if received > seen_at_tick {
        let now = Instant::now();
        first.get_or_insert(now);
        last = Some(now);
    }
    progress.store(received, Ordering::Relaxed);
    SubOutcome {
        run: ClientRun {
            role: Role::Sub,
            id: spec.id,
            msgs: received,
            bytes,
            start: first,
            end: last,
        },
        end,
    }
}

fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let until = Instant::now() + total;
    while !stop.load(Ordering::Relaxed) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}
