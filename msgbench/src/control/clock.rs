//! Clocks of distributed runs: each agent's wall clock against the coordinator's, estimated as
//! NTP does over the control plane, and the common start time expressed in each agent's clock.
//!
//! One exchange: the coordinator notes t0 and asks; the agent answers with when it received
//! (t1) and replied (t2); the coordinator notes t3. Then the agent's offset is
//! ((t1 − t0) + (t2 − t3)) / 2 and the round trip (t3 − t0) − (t2 − t1). Whatever the path's
//! asymmetry, the true offset lies within half the round trip of the estimate, so the exchange
//! with the least round trip gives the tightest bound; that one is kept.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::bus::{recv_until, unique, Bus};
use crate::error::{Error, Result};

/// Shifts this process's clock by so many nanoseconds: tests use it to play a host whose clock
/// is off, which is what the estimate must find.
pub const OFFSET_ENV: &str = "MSGBENCH_TEST_CLOCK_OFFSET_NS";

/// This process's wall clock, nanoseconds since the Unix epoch (shifted as [`OFFSET_ENV`] says).
pub fn now_ns() -> i64 {
    static SHIFT: OnceLock<i64> = OnceLock::new();
    let shift = *SHIFT.get_or_init(|| {
        std::env::var(OFFSET_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    });
    let real = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    real + shift
}

/// Milliseconds since the epoch on the same clock, for expiries.
pub fn now_ms() -> u64 {
    (now_ns() / 1_000_000).max(0) as u64
}

/// The monotonic instant at which this process's clock reads `at_ns`.
pub fn instant_at(at_ns: i64) -> Instant {
    let (now_i, now) = (Instant::now(), now_ns());
    let ahead = at_ns - now;
    if ahead >= 0 {
        now_i + Duration::from_nanos(ahead as u64)
    } else {
        now_i
            .checked_sub(Duration::from_nanos(ahead.unsigned_abs()))
            .unwrap_or(now_i)
    }
}

/// The agent's side of one exchange.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Stamps {
    pub seq: u64,
    pub t1: i64,
    pub t2: i64,
}

/// An agent's clock against the coordinator's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offset {
    /// The agent's clock minus the coordinator's.
    pub offset_ns: i64,
    /// The true offset is within this of `offset_ns`: half the least round trip.
    pub uncertainty_ns: u64,
    pub rtt_ns: u64,
    pub exchanges: usize,
}

impl Offset {
    /// The offset from exchanges `(t0, t1, t2, t3)`, keeping the one with the least round trip.
    pub fn from_exchanges(ex: &[(i64, i64, i64, i64)]) -> Option<Self> {
        ex.iter()
            .map(|&(t0, t1, t2, t3)| {
                let rtt = ((t3 - t0) - (t2 - t1)).max(0) as u64;
                (rtt, ((t1 - t0) + (t2 - t3)) / 2)
            })
            .min_by_key(|(rtt, _)| *rtt)
            .map(|(rtt, offset)| Offset {
                offset_ns: offset,
                uncertainty_ns: rtt.div_ceil(2),
                rtt_ns: rtt,
                exchanges: ex.len(),
            })
    }
}

/// Estimates an agent's offset with `n` exchanges on `subject` (the agent answers with
/// [`Stamps`]).
///
/// # Errors
/// [`Error::Agent`] when the agent does not answer within `timeout`.
pub fn estimate(bus: &Bus, subject: &str, n: usize, timeout: Duration) -> Result<Offset> {
    let inbox = format!("_INBOX.msgbench.clock.{}", unique());
    let rx = bus.subscribe(&inbox)?;
    let mut ex = Vec::with_capacity(n);
    for seq in 0..n as u64 {
        let t0 = now_ns();
        bus.publish(subject, Some(&inbox), seq.to_string().as_bytes())?;
        let deadline = Instant::now() + timeout;
        loop {
            let Some(m) = recv_until(&rx, deadline) else {
                return Err(Error::Agent(format!(
                    "no answer to a clock exchange on {subject} within {}",
                    humantime::format_duration(timeout)
                )));
            };
            let t3 = now_ns();
            match serde_json::from_slice::<Stamps>(&m.payload) {
                // A late answer to an earlier exchange is not this one's.
                Ok(s) if s.seq == seq => {
                    ex.push((t0, s.t1, s.t2, t3));
                    break;
                }
                _ => continue,
            }
        }
    }
    Ok(Offset::from_exchanges(&ex).expect("at least one exchange"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_round_trip_is_kept_and_bounds_the_offset() {
        // Agent 5 ms ahead. One symmetric exchange (1 ms each way), one slow and lopsided
        // (9 ms out, 1 ms back), whose estimate is 4 ms off.
        let off = 5_000_000;
        let ms = 1_000_000;
        let fast = (0, ms + off, ms + off, 2 * ms);
        let slow = (10 * ms, 19 * ms + off, 19 * ms + off, 20 * ms);
        let o = Offset::from_exchanges(&[slow, fast]).unwrap();
        assert_eq!(o.offset_ns, off);
        assert_eq!(o.rtt_ns, 2 * ms as u64);
        assert_eq!(o.uncertainty_ns, ms as u64);
        let only_slow = Offset::from_exchanges(&[slow]).unwrap();
        assert_eq!(only_slow.offset_ns, off + 4 * ms);
        assert!((only_slow.offset_ns - off).unsigned_abs() <= only_slow.uncertainty_ns);
    }
}
