//! The publish loop and its pacing.
//!
//! Paced runs are open loop: message `seq` is due at a fixed time whether or not earlier ones
//! went out late, so a stall shows up as a burst and as send lag rather than as a quietly
//! shifted schedule. The waits to each due time (`wait_until`, `precise_timers`) live here
//! because only this loop keeps a schedule; the gRPC load loop borrows `precise_timers`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{Frame, Window, FLUSH_AT};
use crate::engine::conn::{SendError, Shared};
use crate::engine::pace::Stop;
use crate::error::ErrorKind;
use crate::stats::latency::{self, SendTimes};
use crate::stats::schedule::PubSchedule;
use crate::stats::throughput::{ClientRun, Role};
use hdrhistogram::Histogram;

/// A paced message due within this much of the oldest one in the buffer counts as ready: the
/// buffer waits for it rather than going out alone. At 100,000 msgs/s of 4 KiB this cut the
/// median latency from about 1 ms to 0.2 ms and the P99 by a quarter (one syscall per several
/// messages instead of one each), while at 1,000 msgs/s nothing changes: every gap is far
/// longer. It is measured from the oldest buffered message, not from now: measured from now,
/// a rate whose interval is at most this (20,000 msgs/s and up for one publisher) kept every
/// next message "ready" and held the buffer until it filled, tens of milliseconds.
pub const COALESCE: Duration = Duration::from_micros(50);

/// In the unpaced loop, clocks and the stop flag are looked at once per this many messages.
const CHECK_EVERY: u64 = 256;

/// One publisher's parameters.
#[derive(Debug, Clone)]
pub struct PubSpec {
    pub id: u32,
    pub stop: Stop,
    /// This publisher's share of the run's schedule (publisher i of n sends the run's messages
    /// i, i+n, …, so n paced publishers interleave evenly); `None` for a closed loop.
    pub pace: Option<PubSchedule>,
    /// How long to wait for the server to confirm the final flush.
    pub flush_timeout: Duration,
    /// The schedule's time zero, when several parties must share it (latency runs); otherwise
    /// the loop's own start.
    pub start_at: Option<Instant>,
    /// A paced send later than this behind its schedule counts as late.
    pub late_bound: Duration,
    /// Paced sends due before this are left out of the send lag and the late sends: a latency
    /// run's warm-up, whose messages latency does not time either, so both cover the same
    /// messages.
    pub lag_from: Duration,
}

/// What a publish loop did.
#[derive(Debug, Clone)]
pub struct PubOutcome {
    pub run: ClientRun,
    /// The error that ended it early, if any.
    pub error: Option<ErrorKind>,
    /// Paced sends that went out more than `late_bound` behind schedule.
    pub late_sends: u64,
    /// Time the paced loop spent inside writes, or waiting for a free slot in its window
    /// (paced runs only).
    pub write_blocked: Option<Duration>,
    /// How far behind schedule each paced send went out (paced runs only).
    pub send_lag: Option<Histogram<u64>>,
}

/// The publish loop. Returns what was sent and the error that ended it early, if any.
pub fn publish(
    shared: &Shared,
    frame: &Frame,
    spec: &PubSpec,
    stop: &AtomicBool,
    progress: &AtomicU64,
    send_times: Option<&SendTimes>,
    window: Option<&Window>,
) -> PubOutcome {
    let mut buf: Vec<u8> = Vec::with_capacity(FLUSH_AT + frame.bytes.len() + 300);
    let limit = match spec.stop {
        Stop::Count(n) => n,
        Stop::For(_) => u64::MAX,
    };
    let start = spec.start_at.unwrap_or_else(Instant::now);
    let deadline = match spec.stop {
        Stop::For(d) => Some(start + d),
        Stop::Count(_) => None,
    };
    let paced = spec.pace.as_ref();
    let mut seq: u64 = 0;
    // Messages known to be in the socket (the buffer's contents are not, until written).
    let mut written: u64 = 0;
    // When the oldest message in the buffer was due (paced runs).
    let mut buf_due = start;
    let mut failed = None;
    let mut send_lag = paced.map(|_| latency::new_histogram());
    if paced.is_some() {
        precise_timers();
    }
    let mut late_sends = 0u64;
    let late_ns = spec.late_bound.as_nanos() as u64;
    let lag_from_ns = spec.lag_from.as_nanos() as u64;
    // A write lost with a connection that `--reconnect` replaced is not a failure of the loop:
    // those messages count as sent, and the subscribers' accounting shows which arrived.
    // Time spent inside writes of a paced loop: a send that is late because the socket would
    // not take more (the server or the path is slow) tells apart from one late because this
    // thread did not run (the tool is slow).
    let blocked = std::cell::Cell::new(Duration::ZERO);
    let write = |buf: &mut Vec<u8>| -> Result<(), ErrorKind> {
        let began = paced.map(|_| Instant::now());
        let r = shared.write_all(buf);
        if let Some(t) = began {
            blocked.set(blocked.get() + t.elapsed());
        }
        buf.clear();
        match r {
            Ok(()) | Err(SendError::Reconnected) => Ok(()),
            Err(SendError::Failed(k)) => Err(k),
        }
    };

    while seq < limit {
        if let Some(share) = paced {
            // Open loop: message `seq` is due when the schedule says whether or not earlier
            // ones went out late, so a stall shows up as a burst, not as a shifted schedule.
            let Some(due_ns) = share.due_ns(seq) else {
                break;
            };
            let due = start + Duration::from_nanos(due_ns);
            if deadline.is_some_and(|d| due >= d) || stop.load(Ordering::Relaxed) {
                break;
            }
            let now = Instant::now();
            if now < due {
                if !buf.is_empty() && due.saturating_duration_since(buf_due) > COALESCE {
                    if let Err(k) = write(&mut buf) {
                        failed = Some(k);
                        break;
                    }
                    written = seq;
                    progress.store(written, Ordering::Relaxed);
                }
                if !wait_until(due, stop) {
                    break;
                }
            }
            if buf.is_empty() {
                buf_due = due;
            }
            // The send time is when the message joins the outgoing buffer; the buffer goes out
            // at once unless the next message is already due too.
            let now = Instant::now();
            let lag = now.saturating_duration_since(due).as_nanos() as u64;
            if due_ns >= lag_from_ns {
                if let Some(h) = send_lag.as_mut() {
                    h.saturating_record(lag.max(1));
                }
                late_sends += u64::from(lag > late_ns);
            }
            if let Some(t) = send_times {
                t.put(seq, now.saturating_duration_since(start).as_nanos() as u64);
            }
        } else if seq.is_multiple_of(CHECK_EVERY) {
            if stop.load(Ordering::Relaxed)
                || shared.is_ended()
                || deadline.is_some_and(|d| Instant::now() >= d)
            {
                break;
            }
            progress.store(written, Ordering::Relaxed);
        }
        if let Some(w) = window {
            // No free slot means nothing more is ready: what is buffered must go out before
            // waiting, or the replies that free a slot could never come.
            if !w.try_acquire(seq) {
                if !buf.is_empty() {
                    if let Err(k) = write(&mut buf) {
                        failed = Some(k);
                        break;
                    }
                    written = seq;
                    progress.store(written, Ordering::Relaxed);
                }
                // Waiting for a reply to free a slot is the far side holding the sends back,
                // like a write the socket would not take.
                let began = paced.map(|_| Instant::now());
                let got = w.acquire(seq, stop);
                if let Some(t) = began {
                    blocked.set(blocked.get() + t.elapsed());
                }
                if !got {
                    break;
                }
            }
            if paced.is_none() {
                if let Some(t) = send_times {
                    t.put(seq, start.elapsed().as_nanos() as u64);
                }
            }
        }
        frame.append(&mut buf, seq);
        seq += 1;
        if buf.len() >= FLUSH_AT {
            if let Err(k) = write(&mut buf) {
                failed = Some(k);
                break;
            }
            written = seq;
            // The live view reads this; a paced loop has no other place that stores it.
            progress.store(written, Ordering::Relaxed);
        }
    }

    if failed.is_none() {
        // The end of a publisher's run is when the server confirms it has everything, not when
        // the last bytes left our buffer.
        // A connection replaced during the flush is flushed again on the new one, a few times
        // at most (a server flapping faster than that is a failure worth reporting).
        let mut relinks = 0;
        loop {
            match shared.flush(&mut buf, spec.flush_timeout) {
                Ok(()) => written = seq,
                Err(SendError::Reconnected) if relinks < 3 => {
                    relinks += 1;
                    continue;
                }
                Err(SendError::Reconnected) => {
                    written = seq;
                    failed = Some(ErrorKind::Disconnected);
                }
                Err(SendError::Failed(ErrorKind::FlushTimeout)) => {
                    // The bytes were written; the server just did not confirm in time.
                    written = seq;
                    failed = Some(ErrorKind::FlushTimeout);
                }
                Err(SendError::Failed(k)) => failed = Some(k),
            }
            break;
        }
    }
    // A write or flush cut short by Ctrl-C is the interruption, not a failure of the server.
    if let Some(k) = failed.filter(|_| !stop.load(Ordering::Relaxed)) {
        // Counted once here; a disconnect the reader saw too is the same event.
        if k != ErrorKind::Disconnected || !shared.is_ended() {
            shared.errors.add(k);
        }
        shared.errors.failed(k, false);
    }
    progress.store(written, Ordering::Relaxed);
    PubOutcome {
        run: ClientRun {
            role: Role::Pub,
            id: spec.id,
            msgs: written,
            bytes: written * frame.payload_len as u64,
            start: Some(start),
            end: Some(Instant::now()),
        },
        error: failed,
        late_sends,
        send_lag,
        write_blocked: paced.map(|_| blocked.get()),
    }
}

/// Waits until `due`: sleeps while it is far, yields while it is near, spins for the last few
/// microseconds. Returns false when the stop flag was raised.
fn wait_until(due: Instant, stop: &AtomicBool) -> bool {
    loop {
        let now = Instant::now();
        if now >= due {
            return true;
        }
        let left = due - now;
        if left > SPIN_WINDOW {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            // Sleep until just before the deadline: a waiting publisher must leave the CPU to
            // the server and the subscriber, or on a small machine it delays them.
            std::thread::sleep((left - SPIN_WINDOW).min(Duration::from_millis(50)));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// The last stretch before a due time is spun, not slept: a sleep can wake this late even
/// with the timer slack at its minimum.
const SPIN_WINDOW: Duration = Duration::from_micros(80);

/// Asks the kernel to end this thread's sleeps on time (the default slack is 50 µs), so a
/// paced loop can sleep closer to its deadlines and spin less.
pub(crate) fn precise_timers() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK only changes the calling thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}
