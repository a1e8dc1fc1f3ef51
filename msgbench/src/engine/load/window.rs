//! A requester's in-flight window: how many requests may await a reply at once, and when an
//! unanswered one is given up on. The publish loop takes a slot before each request and the
//! reply loop frees it, so the two threads meet only here, under one short-held lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::TICK;

/// The requests one requester has in flight: at most `limit`, each given up on after `timeout`.
/// The publish loop takes a slot per request; the reply's arrival frees it.
pub struct Window {
    limit: usize,
    timeout: Duration,
    state: std::sync::Mutex<WindowState>,
    freed: std::sync::Condvar,
}

#[derive(Default)]
struct WindowState {
    /// Sequence and send time of each request in flight, oldest first.
    outstanding: std::collections::VecDeque<(u64, Instant)>,
    timeouts: u64,
}

impl Window {
    pub fn new(limit: usize, timeout: Duration) -> Self {
        Self {
            limit: limit.max(1),
            timeout,
            state: std::sync::Mutex::new(WindowState::default()),
            freed: std::sync::Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WindowState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts requests older than the timeout as timed out, freeing their slots.
    fn expire(&self, st: &mut WindowState, now: Instant) {
        while let Some(&(_, sent)) = st.outstanding.front() {
            if now.saturating_duration_since(sent) < self.timeout {
                break;
            }
            st.outstanding.pop_front();
            st.timeouts += 1;
        }
    }

    /// Takes a slot for `seq` if one is free now.
    pub fn try_acquire(&self, seq: u64) -> bool {
        let mut st = self.lock();
        let now = Instant::now();
        self.expire(&mut st, now);
        if st.outstanding.len() < self.limit {
            st.outstanding.push_back((seq, now));
            true
        } else {
            false
        }
    }

    /// Waits for a slot for `seq`. False when the stop flag was raised.
    pub fn acquire(&self, seq: u64, stop: &AtomicBool) -> bool {
        let mut st = self.lock();
        loop {
            let now = Instant::now();
            self.expire(&mut st, now);
            if st.outstanding.len() < self.limit {
                st.outstanding.push_back((seq, now));
                return true;
            }
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let oldest = st.outstanding.front().map_or(now, |&(_, t)| t);
            let wait = (oldest + self.timeout)
                .saturating_duration_since(now)
                .min(TICK)
                .max(Duration::from_micros(100));
            st = self
                .freed
                .wait_timeout(st, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// A reply for `seq` arrived. True when it was still awaited; false when it came after its
    /// request had timed out (or was never sent).
    pub fn complete(&self, seq: u64) -> bool {
        let mut st = self.lock();
        // Replies mostly come in order: the match is almost always at the front.
        let Some(i) = st.outstanding.iter().position(|&(s, _)| s == seq) else {
            return false;
        };
        st.outstanding.remove(i);
        drop(st);
        self.freed.notify_one();
        true
    }

    /// Waits until every request in flight is answered or timed out, or `stop` is raised.
    pub fn drain(&self, stop: &AtomicBool) {
        let mut st = self.lock();
        loop {
            self.expire(&mut st, Instant::now());
            if st.outstanding.is_empty() || stop.load(Ordering::Relaxed) {
                return;
            }
            st = self
                .freed
                .wait_timeout(st, TICK)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Requests in flight now (after expiring the overdue ones).
    pub fn in_flight(&self) -> usize {
        let mut st = self.lock();
        self.expire(&mut st, Instant::now());
        st.outstanding.len()
    }

    /// Requests given up on so far.
    pub fn timeouts(&self) -> u64 {
        self.lock().timeouts
    }
}
