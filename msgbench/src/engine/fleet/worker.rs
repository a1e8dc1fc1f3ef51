//! One fleet worker: a thread, a poll, and its share of the connections.
//!
//! The loop opens connections as their connect times come (at the fleet's connect rate, with at
//! most `in_flight` connects under way), dials lost ones again when their backoff ends, drives
//! each connection its readiness events name, and sweeps all of them a few times a second. It
//! ends by itself once every connection has ended, or when the fleet or the run is stopped.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::{Events, Poll};

use super::member::{After, Ending, Member};
use super::{Board, FleetSpec, SWEEP};
use crate::engine::load::SubControl;

/// Longest wait for readiness: how soon a stop is noticed.
const MAX_WAIT: Duration = Duration::from_millis(20);
/// First connects started per turn of the loop, so events keep being served during a storm.
const OPEN_BATCH: usize = 256;

/// Which of the fleet's connections this worker opens: its members are the fleet's
/// `first`, `first + every`, …, in connect order.
pub struct Opening {
    pub started: Instant,
    pub first: usize,
    pub every: usize,
}

impl Opening {
    /// When member `j` of this worker is due to connect.
    fn due(&self, j: usize, rate: Option<f64>) -> Instant {
        match rate {
            Some(r) if r > 0.0 => {
                self.started + Duration::from_secs_f64((self.first + j * self.every) as f64 / r)
            }
            _ => self.started,
        }
    }
}

pub fn run(
    mut members: Vec<Member>,
    spec: &FleetSpec,
    ctl: &SubControl,
    board: &Board,
    stop: &AtomicBool,
    plan: Opening,
) -> Vec<Member> {
    let mut poll = match Poll::new() {
        Ok(p) => p,
        Err(_) => {
            // No epoll instance (out of descriptors): every member fails to start.
            for m in &mut members {
                board.failure(super::Failure::NoFds);
                board.settled_without_connecting();
                board.finished();
                m.ending = Some(Ending::Failed(super::Failure::NoFds));
            }
            return members;
        }
    };
    let mut events = Events::with_capacity(1024);
    let mut timers: BinaryHeap<Reverse<(Instant, usize)>> = BinaryHeap::new();
    let n = members.len();
    let (mut next_open, mut done) = (0usize, 0usize);
    let mut next_sweep = Instant::now() + SWEEP;
    let mut my_bytes = 0u64;
    // Connections whose last turn stopped at its read limit.
    let mut again: Vec<usize> = Vec::new();
    let outcome = |a: After, i: usize, timers: &mut BinaryHeap<_>, done: &mut usize| match a {
        After::Nothing => {}
        After::RetryAt(t) => timers.push(Reverse((t, i))),
        After::Finished => *done += 1,
    };
    loop {
        let now = Instant::now();
        let registry = poll.registry();
        let mut opened = 0;
        while next_open < n
            && opened < OPEN_BATCH
            && plan.due(next_open, spec.connect_rate) <= now
            && (board.in_flight.load(Ordering::Relaxed).max(0) as usize) < spec.in_flight
        {
            let m = &mut members[next_open];
            let a = m.dial(spec.target(m.id).addr, spec, registry, board);
            outcome(a, next_open, &mut timers, &mut done);
            next_open += 1;
            opened += 1;
        }
        while let Some(&Reverse((at, i))) = timers.peek() {
            if at > now {
                break;
            }
            timers.pop();
            let m = &mut members[i];
            if !m.is_done() {
                let a = m.dial(spec.target(m.id).addr, spec, registry, board);
                outcome(a, i, &mut timers, &mut done);
            }
        }

        let mut wait = next_sweep.saturating_duration_since(now).min(MAX_WAIT);
        if next_open < n {
            // Opening is held back by the in-flight limit or waits for its time.
            let due = plan.due(next_open, spec.connect_rate);
            wait = wait.min(
                due.saturating_duration_since(now)
                    .max(Duration::from_millis(1)),
            );
        }
        if let Some(Reverse((at, _))) = timers.peek() {
            wait = wait.min(at.saturating_duration_since(now));
        }
        if !again.is_empty() {
            // Connections with bytes still waiting: look for events without sleeping.
            wait = Duration::ZERO;
        }
        if let Err(e) = poll.poll(&mut events, Some(wait)) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                break;
            }
        }
        let registry = poll.registry();
        let waiting = std::mem::take(&mut again);
        for i in events.iter().map(|ev| ev.token().0).chain(waiting) {
            let m = &mut members[i];
            if !m.is_done() {
                let a = m.drive(spec, ctl, registry, board);
                outcome(a, i, &mut timers, &mut done);
                if m.wants_more() && !m.is_done() && !again.contains(&i) {
                    again.push(i);
                }
            }
        }

        let now = Instant::now();
        if now >= next_sweep {
            let mut bytes = 0u64;
            for (i, m) in members.iter_mut().enumerate() {
                if !m.is_done() {
                    let a = m.sweep(spec, ctl, registry, board);
                    outcome(a, i, &mut timers, &mut done);
                }
                bytes += m.buffer_bytes() as u64;
            }
            // The board holds the sum over workers: each adds the change in its own share.
            board
                .buffer_bytes
                .fetch_add(bytes.wrapping_sub(my_bytes), Ordering::Relaxed);
            my_bytes = bytes;
            next_sweep = now + SWEEP;
        }
        if done == n && next_open == n {
            break;
        }
        if stop.load(Ordering::Relaxed) || board.stopping.load(Ordering::Acquire) {
            for m in members.iter_mut().filter(|m| !m.is_done()) {
                m.finish(Ending::Stopped, registry, board);
            }
            break;
        }
    }
    members
}
