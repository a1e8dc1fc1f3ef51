//! A requester's in-flight window: how many requests may await a reply at once, and when an
//! unanswered one is given up on. The publish loop takes a slot before each request and the
//! reply loop frees it, so the two threads meet only here, under one short-held lock.
//!
//! A freed slot wakes a waiting publisher only when one is waiting: the closed loop takes its
//! slots on the reader's own thread and never waits, and a notification per reply with no one
//! to hear it was a futex system call per acknowledgement.
//!
//! A request given up on (timed out, or in flight on a connection that was lost) is remembered
//! with its send time: a reply that comes for it after all is an answer, late, and is timed like
//! any other ([`Completion::Late`]), so a request has one fate however slow its answer; the ones
//! never answered are what a JetStream run's verdict matches unacknowledged stored writes with
//! ([`Window::given_up`]).

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
    /// Requests timed out and not answered since.
    timeouts: u64,
    /// Requests in flight when their connection was lost, and not answered since.
    abandoned: u64,
    /// The requests given up on and not answered since, by sequence (which is their order):
    /// a reply may still come for one (late, or over a cluster on the new connection).
    given_up: std::collections::BTreeMap<u64, GivenUp>,
    /// Threads waiting in `acquire` or `drain` for a slot to be freed.
    waiting: usize,
    /// Wake-ups sent so far (what the waiter count saves is visible in tests).
    notified: u64,
}

/// Requests given up on remembered at most (the oldest are forgotten first, and stay counted):
/// 16 MiB at worst, for a run whose server stopped answering for a long while.
const GIVEN_UP_KEPT: usize = 1 << 20;

/// Why a request was given up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaveUp {
    /// No reply within the timeout.
    TimedOut,
    /// In flight when its connection was lost; `at` is when the requester saw the new link.
    Abandoned { at: Instant },
}

/// A request given up on and never answered since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GivenUp {
    pub sent: Instant,
    pub why: GaveUp,
}

/// What a reply was to its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Awaited, within the timeout (an abandoned request answered within it, too).
    OnTime,
    /// Its request was given up on, and the reply came after all, past the timeout: an
    /// answer all the same, sent at `sent`.
    Late { sent: Instant },
    /// No request of this window awaits it: a second reply to one already answered, or one
    /// given up on so long ago that it was forgotten.
    Unknown,
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
            let (seq, sent) = st.outstanding.pop_front().expect("a front");
            st.timeouts += 1;
            give_up(st, seq, sent, GaveUp::TimedOut);
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
            st = self.wait(st, wait);
        }
    }

    /// Waits (as one of the `waiting`) until a slot is freed or `wait` has passed.
    fn wait<'a>(
        &'a self,
        mut st: std::sync::MutexGuard<'a, WindowState>,
        wait: Duration,
    ) -> std::sync::MutexGuard<'a, WindowState> {
        st.waiting += 1;
        let mut st = self
            .freed
            .wait_timeout(st, wait)
            .unwrap_or_else(|p| p.into_inner())
            .0;
        st.waiting -= 1;
        st
    }

    /// Wakes the waiters, if any, once `st` is released. The count is read under the lock a
    /// waiter registers under, so no waiter can be missed.
    fn wake(&self, mut st: std::sync::MutexGuard<'_, WindowState>, all: bool) {
        if st.waiting == 0 {
            return;
        }
        st.notified += 1;
        drop(st);
        if all {
            self.freed.notify_all();
        } else {
            self.freed.notify_one();
        }
    }

    /// A reply for `seq` arrived: on time, late (its request was given up on, and is counted
    /// as answered now), or for no request awaited.
    pub fn complete(&self, seq: u64) -> Completion {
        let mut st = self.lock();
        // Replies mostly come in order: the match is almost always at the front.
        if let Some(i) = st.outstanding.iter().position(|&(s, _)| s == seq) {
            st.outstanding.remove(i);
            self.wake(st, false);
            return Completion::OnTime;
        }
        let Some(g) = st.given_up.remove(&seq) else {
            return Completion::Unknown;
        };
        match g.why {
            GaveUp::TimedOut => st.timeouts -= 1,
            GaveUp::Abandoned { .. } => st.abandoned -= 1,
        }
        if g.sent.elapsed() < self.timeout {
            Completion::OnTime
        } else {
            Completion::Late { sent: g.sent }
        }
    }

    /// Waits until every request in flight is answered or timed out, or `stop` is raised.
    pub fn drain(&self, stop: &AtomicBool) {
        let mut st = self.lock();
        loop {
            self.expire(&mut st, Instant::now());
            if st.outstanding.is_empty() || stop.load(Ordering::Relaxed) {
                return;
            }
            st = self.wait(st, TICK);
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

    /// The connection was lost: the requests in flight are most likely lost with it (a
    /// restarted server forgot them). Frees every slot at once, so the requester goes on at its
    /// pace on the new connection instead of waiting out `timeout` for replies that cannot
    /// come. A reply that does come within the timeout after all (a cluster routes it to the
    /// new connection) still counts, and the request is then not counted as abandoned.
    pub fn abandon_all(&self) {
        let mut st = self.lock();
        let gone: Vec<(u64, Instant)> = st.outstanding.drain(..).collect();
        st.abandoned += gone.len() as u64;
        let at = Instant::now();
        for (seq, sent) in gone {
            give_up(&mut st, seq, sent, GaveUp::Abandoned { at });
        }
        self.wake(st, true);
    }

    /// Requests abandoned with a lost connection so far.
    pub fn abandoned(&self) -> u64 {
        self.lock().abandoned
    }

    /// The requests given up on and never answered, by sequence (at most the last
    /// [`GIVEN_UP_KEPT`]; [`Window::timeouts`] and [`Window::abandoned`] count them all).
    pub fn given_up(&self) -> Vec<(u64, GivenUp)> {
        self.lock().given_up.iter().map(|(s, g)| (*s, *g)).collect()
    }
}

/// Remembers request `seq`, sent at `sent`, as given up on for `why`.
fn give_up(st: &mut WindowState, seq: u64, sent: Instant, why: GaveUp) {
    st.given_up.insert(seq, GivenUp { sent, why });
    while st.given_up.len() > GIVEN_UP_KEPT {
        st.given_up.pop_first();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_connection_frees_every_slot_and_a_reply_within_the_timeout_still_counts() {
        let w = Window::new(2, Duration::from_secs(3600));
        assert!(w.try_acquire(0) && w.try_acquire(1));
        assert!(!w.try_acquire(2), "the window is full");
        w.abandon_all();
        assert_eq!((w.in_flight(), w.abandoned(), w.timeouts()), (0, 2, 0));
        // The requester goes on at once; a reply to an abandoned request within the timeout
        // still counts, once, and its request is no longer counted as abandoned.
        assert!(w.try_acquire(2));
        assert_eq!(w.complete(0), Completion::OnTime);
        assert_eq!(w.complete(0), Completion::Unknown);
        assert_eq!(w.abandoned(), 1);
        assert_eq!(w.complete(2), Completion::OnTime);
        // The one never answered is remembered, with why.
        let left = w.given_up();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].0, 1);
        assert!(matches!(left[0].1.why, GaveUp::Abandoned { .. }));
        // Past the timeout, an abandoned request's reply is late: answered all the same, and
        // no longer counted as abandoned.
        let w = Window::new(1, Duration::ZERO);
        assert!(w.try_acquire(7));
        w.abandon_all();
        assert!(matches!(w.complete(7), Completion::Late { .. }));
        assert_eq!(w.abandoned(), 0);
        assert!(w.given_up().is_empty());
    }

    #[test]
    fn a_reply_after_the_timeout_is_late_and_takes_its_request_out_of_the_timeouts() {
        let w = Window::new(4, Duration::ZERO);
        let stop = AtomicBool::new(false);
        assert!(w.try_acquire(0) && w.try_acquire(1));
        w.drain(&stop);
        assert_eq!(w.timeouts(), 2);
        let sent = match w.complete(1) {
            Completion::Late { sent } => sent,
            other => panic!("{other:?}"),
        };
        assert!(sent <= Instant::now());
        assert_eq!(w.timeouts(), 1, "request 1 was answered after all");
        assert_eq!(w.complete(1), Completion::Unknown, "answered once");
        let left = w.given_up();
        assert_eq!((left.len(), left[0].0), (1, 0));
        assert_eq!(left[0].1.why, GaveUp::TimedOut);
    }

    #[test]
    fn a_freed_slot_wakes_a_waiting_publisher_and_no_one_else() {
        // The closed loop: slots taken and freed on one thread, nobody waiting, no wake-ups.
        let w = Window::new(4, Duration::from_secs(3600));
        for seq in 0..1000 {
            assert!(w.try_acquire(seq));
            assert_eq!(w.complete(seq), Completion::OnTime);
        }
        assert_eq!(w.lock().notified, 0);
        // The open loop: a publisher waits for a slot in a full window, and the reply that
        // frees one wakes it (the stop flag is never raised, so only a slot ends the wait).
        let w = Window::new(1, Duration::from_secs(3600));
        assert!(w.try_acquire(0));
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| w.acquire(1, &stop));
            while w.lock().waiting == 0 {
                std::thread::yield_now();
            }
            assert_eq!(w.complete(0), Completion::OnTime);
            assert!(
                waiter.join().unwrap(),
                "the waiting publisher got the freed slot"
            );
        });
        assert!(w.lock().notified >= 1);
    }
}
