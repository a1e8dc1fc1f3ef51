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
    // When the oldest message in the buffer was due (paced runs).
    let mut buf_due = start;
    let mut failed = None;
    let mut late = Lateness::new(paced.is_some(), spec.late_bound, spec.lag_from);
    let mut out = Out {
        shared,
        progress,
        paced: paced.is_some(),
        written: 0,
        written_bytes: 0,
        blocked: Duration::ZERO,
    };
    // Payload bytes appended so far (sizes may be drawn per message).
    let mut appended: u64 = 0;

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
                    if let Err(k) = out.write(&mut buf, seq, appended) {
                        failed = Some(k);
                        break;
                    }
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
            late.note(due_ns, now.saturating_duration_since(due));
            if let Some(t) = send_times {
                t.put(seq, now.saturating_duration_since(start).as_nanos() as u64);
            }
        } else if seq.is_multiple_of(CHECK_EVERY)
            && (stop.load(Ordering::Relaxed)
                || shared.is_ended()
                || deadline.is_some_and(|d| Instant::now() >= d))
        {
            break;
        }
        if let Some(w) = window {
            // No free slot means nothing more is ready: what is buffered must go out before
            // waiting, or the replies that free a slot could never come.
            if !w.try_acquire(seq) {
                if !buf.is_empty() {
                    if let Err(k) = out.write(&mut buf, seq, appended) {
                        failed = Some(k);
                        break;
                    }
                }
                // Waiting for a reply to free a slot is the far side holding the sends back,
                // like a write the socket would not take.
                if !out.held(|| w.acquire(seq, stop)) {
                    break;
                }
            }
            if paced.is_none() {
                if let Some(t) = send_times {
                    t.put(seq, start.elapsed().as_nanos() as u64);
                }
            }
        }
        appended += frame.append(&mut buf, seq) as u64;
        seq += 1;
        if buf.len() >= FLUSH_AT {
            if let Err(k) = out.write(&mut buf, seq, appended) {
                failed = Some(k);
                break;
            }
        }
    }

    if failed.is_none() {
        let (all_out, error) = final_flush(shared, &mut buf, spec.flush_timeout);
        if all_out {
            out.written = seq;
            out.written_bytes = appended;
        }
        failed = error;
    }
    // A write or flush cut short by Ctrl-C is the interruption, not a failure of the server.
    if let Some(k) = failed.filter(|_| !stop.load(Ordering::Relaxed)) {
        count_failure(shared, k);
    }
    let (written, written_bytes) = (out.written, out.written_bytes);
    progress.store(written, Ordering::Relaxed);
    PubOutcome {
        run: ClientRun {
            role: Role::Pub,
            id: spec.id,
            msgs: written,
            bytes: written_bytes,
            start: Some(start),
            end: Some(Instant::now()),
        },
        error: failed,
        late_sends: late.sends,
        send_lag: late.lag,
        write_blocked: paced.map(|_| out.blocked),
    }
}

/// Where a publish loop's buffer goes: the connection, and what is known to be in its socket.
struct Out<'a> {
    shared: &'a Shared,
    /// What the live view reads: a paced loop has no other place that stores its progress.
    progress: &'a AtomicU64,
    paced: bool,
    /// Messages known to be in the socket (the buffer's contents are not, until written).
    written: u64,
    /// Their payload bytes.
    written_bytes: u64,
    /// Time a paced loop spent inside writes, or waiting for a free slot: a send that is late
    /// because the socket would not take more (the server or the path is slow) tells apart
    /// from one late because this thread did not run (the tool is slow).
    blocked: Duration,
}

impl Out<'_> {
    /// Runs `f`, a wait on the far side, counting its time as blocked when the loop is paced.
    #[inline]
    fn held<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let began = self.paced.then(Instant::now);
        let r = f();
        if let Some(t) = began {
            self.blocked += t.elapsed();
        }
        r
    }

    /// Writes the buffer out; the first `seq` messages are then in the socket. A write lost
    /// with a connection that `--reconnect` replaced is not a failure of the loop: those
    /// messages count as sent, and the subscribers' accounting shows which arrived.
    fn write(&mut self, buf: &mut Vec<u8>, seq: u64, bytes: u64) -> Result<(), ErrorKind> {
        let shared = self.shared;
        let r = self.held(|| shared.write_all(buf));
        buf.clear();
        match r {
            Ok(()) | Err(SendError::Reconnected) => {
                self.written = seq;
                self.written_bytes = bytes;
                self.progress.store(seq, Ordering::Relaxed);
                Ok(())
            }
            Err(SendError::Failed(k)) => Err(k),
        }
    }
}

/// How late a paced loop's sends went out: each one's lag behind its due time, and how many
/// were later than the run's bound.
struct Lateness {
    lag: Option<Histogram<u64>>,
    sends: u64,
    bound_ns: u64,
    /// Sends due before this (a latency run's warm-up) are left out: the Pacing line covers
    /// the messages the run times.
    from_ns: u64,
}

impl Lateness {
    /// For a paced loop (`paced`), whose waits also want the finest timers the system gives.
    fn new(paced: bool, bound: Duration, from: Duration) -> Self {
        if paced {
            precise_timers();
        }
        Self {
            lag: paced.then(latency::new_histogram),
            sends: 0,
            bound_ns: bound.as_nanos() as u64,
            from_ns: from.as_nanos() as u64,
        }
    }

    #[inline]
    fn note(&mut self, due_ns: u64, lag: Duration) {
        if due_ns < self.from_ns {
            return;
        }
        let lag = lag.as_nanos() as u64;
        if let Some(h) = self.lag.as_mut() {
            h.saturating_record(lag.max(1));
        }
        self.sends += u64::from(lag > self.bound_ns);
    }
}

/// The end of a publisher's run is when the server confirms it has everything, not when the
/// last bytes left the buffer. A connection replaced during the flush is flushed again on the
/// new one, a few times at most (a server flapping faster than that is a failure worth
/// reporting). Returns whether every message made it into a socket, and the error, if any.
fn final_flush(shared: &Shared, buf: &mut Vec<u8>, timeout: Duration) -> (bool, Option<ErrorKind>) {
    for _ in 0..=3 {
        match shared.flush(buf, timeout) {
            Ok(()) => return (true, None),
            Err(SendError::Reconnected) => continue,
            // The bytes were written; the server just did not confirm in time.
            Err(SendError::Failed(ErrorKind::FlushTimeout)) => {
                return (true, Some(ErrorKind::FlushTimeout))
            }
            Err(SendError::Failed(k)) => return (false, Some(k)),
        }
    }
    (true, Some(ErrorKind::Disconnected))
}

/// Counts the error that ended a publish loop; a disconnect the reader saw too is the same
/// event, counted once.
fn count_failure(shared: &Shared, k: ErrorKind) {
    if k != ErrorKind::Disconnected || !shared.is_ended() {
        shared.errors.add(k);
    }
    shared.errors.failed(k, false);
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
