//! Open-loop pacing: message `n` is due at `n / rate` seconds after the start; a paced sender
//! sleeps or spins until each is due, never skips one, and sends at once when it is behind.
//!
//! Tokio's timer has a 1 ms resolution, which at 1,000 msgs/s is the whole gap between two
//! messages, and any lateness of the driver's own timer would be charged to the library as
//! corrected latency. So paced loops run on a blocking thread (`spawn_blocking`) that sleeps
//! with the OS timer until shortly before each due time and spins the last stretch, and they
//! drive the async-nats calls from there with `Handle::block_on`.

use std::time::{Duration, Instant};

use crate::control::Stop;

/// When each message is due.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    interval_ns: f64,
}

impl Schedule {
    /// `per_sec` messages a second (must be > 0).
    pub fn at_rate(per_sec: f64) -> Self {
        Self {
            interval_ns: 1e9 / per_sec,
        }
    }

    /// When message `n` is due, in ns since the start.
    #[inline]
    pub fn due_ns(&self, n: u64) -> u64 {
        (n as f64 * self.interval_ns) as u64
    }
}

/// The last stretch before a due time is spun: an OS sleep can wake this late.
const SPIN: Duration = Duration::from_micros(200);
/// The longest sleep, so that a stop is seen within 100 ms even at very low rates.
const NAP: Duration = Duration::from_millis(50);

/// Blocks until `due`. Returns false (at once or within [`NAP`]) when the stop was raised.
pub fn wait_until(due: Instant, stop: &Stop) -> bool {
    loop {
        if stop.is_raised() {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        let left = due - now;
        if left > SPIN {
            // Sleeping leaves the CPU to the server and the receiving side, which on a small
            // machine share it with this thread.
            std::thread::sleep((left - SPIN).min(NAP));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Nanoseconds from `start` to `t` (0 if `t` is earlier).
#[inline]
pub fn ns_since(start: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(start).as_nanos() as u64
}

/// How many messages a paced sender sends: `msgs`, or as many as fall due within the duration.
pub fn paced_count(schedule: Schedule, msgs: Option<u64>, duration: Option<Duration>) -> u64 {
    match (msgs, duration) {
        (Some(n), _) => n,
        (None, Some(d)) => {
            let end = d.as_nanos() as u64;
            // Due times grow with n, so the count is the first n due at or after the end.
            let mut n = (end as f64 / schedule.interval_ns) as u64;
            while n > 0 && schedule.due_ns(n - 1) >= end {
                n -= 1;
            }
            while schedule.due_ns(n) < end {
                n += 1;
            }
            n
        }
        (None, None) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_times() {
        let s = Schedule::at_rate(1000.0);
        assert_eq!(s.due_ns(0), 0);
        assert_eq!(s.due_ns(1), 1_000_000);
        assert_eq!(s.due_ns(1500), 1_500_000_000);
    }

    #[test]
    fn counts() {
        let s = Schedule::at_rate(1000.0);
        assert_eq!(paced_count(s, Some(7), None), 7);
        assert_eq!(paced_count(s, None, Some(Duration::from_secs(1))), 1000);
        assert_eq!(paced_count(s, None, Some(Duration::from_micros(1500))), 2);
        let s = Schedule::at_rate(3.0);
        assert_eq!(paced_count(s, None, Some(Duration::from_secs(1))), 3);
    }

    #[test]
    fn wait_until_waits_and_stops() {
        let stop = Stop::default();
        let due = Instant::now() + Duration::from_millis(3);
        assert!(wait_until(due, &stop));
        assert!(Instant::now() >= due);
        stop.raise();
        assert!(!wait_until(Instant::now() + Duration::from_secs(10), &stop));
    }
}
