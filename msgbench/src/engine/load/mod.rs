//! The load loops: one publish loop and one subscribe loop, each parametrised by values (when to
//! stop, how to pace, what to send) rather than copied per mode.
//!
//! The publish loop never allocates: each message is one `extend_from_slice` of a prebuilt frame
//! plus an 8-byte sequence patch into a reused buffer. The buffer goes to the socket when it is
//! large or when nothing more is ready (the next message is not due yet), never on a timer.
//! The subscribe loop sees each message as a borrowed slice of the read buffer and records only
//! counters and the stamp.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::engine::conn::{End, Event, Flow, Reader, SendError, Shared};
use crate::engine::stamp::{self, STAMP_LEN};
use crate::engine::{jsframe, proto};
use crate::error::ErrorKind;
use crate::options::{Pace, Stop};
use crate::stats::delivery::DeliveryLog;
use crate::stats::latency::{self, SendTimes};
use crate::stats::recovery::RecoveryLog;
use crate::stats::throughput::{ClientRun, Role};
use hdrhistogram::Histogram;

/// Hand the buffer to the socket once it holds this much. Large enough that syscalls are rare
/// (one per ~2,000 small messages), small enough to stay in cache and keep the server's reads
/// full-sized.
pub const FLUSH_AT: usize = 64 * 1024;

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

/// How often an idle subscriber wakes to check its clocks.
pub const TICK: Duration = Duration::from_millis(50);

/// What a publisher sends: the bytes of one message, prebuilt, with the place of the sequence
/// number known.
#[derive(Debug, Clone)]
pub struct Frame {
    /// With a fixed control line: the whole `PUB …\r\n<headers><payload>\r\n`. With a
    /// per-message one: the part after the control line.
    bytes: Vec<u8>,
    /// Offset of the stamp's sequence within `bytes`, when the payload is stamped.
    seq_at: Option<usize>,
    /// Offset of the send time, with [`StampKind::Timed`].
    time_at: Option<usize>,
    /// The control line when it changes per message (multisubject, per-request reply subject).
    line: Option<DynamicLine>,
    headers_len: usize,
    payload_len: usize,
}

impl Frame {
    /// Builds the frame for one publisher. When the payload has room for the chosen stamp, its
    /// first bytes carry it; otherwise the payload goes out as given.
    pub fn new(
        subject: &str,
        multisubject: Option<Keys>,
        headers: &[u8],
        payload: &[u8],
        stamp: StampKind,
    ) -> Self {
        Self::with_reply(subject, multisubject, None, headers, payload, stamp)
    }

    /// A frame whose messages carry the reply subject `reply_prefix<seq>`, so each reply names
    /// the request it answers.
    pub fn with_reply(
        subject: &str,
        multisubject: Option<Keys>,
        reply_prefix: Option<&str>,
        headers: &[u8],
        payload: &[u8],
        stamp: StampKind,
    ) -> Self {
        let dynamic = multisubject.is_some() || reply_prefix.is_some();
        let mut bytes = Vec::with_capacity(subject.len() + headers.len() + payload.len() + 32);
        if !dynamic {
            proto::encode_pub_line(
                &mut bytes,
                subject.as_bytes(),
                None,
                headers.len(),
                payload.len(),
            );
        }
        bytes.extend_from_slice(headers);
        let payload_at = bytes.len();
        bytes.extend_from_slice(payload);
        bytes.extend_from_slice(b"\r\n");
        let seq_at = match stamp {
            StampKind::Delivery { run_tag, publisher } if payload.len() >= STAMP_LEN => {
                stamp::write_template(
                    &mut bytes[payload_at..payload_at + STAMP_LEN],
                    run_tag,
                    publisher,
                );
                Some(payload_at + stamp::SEQ_OFFSET)
            }
            StampKind::Sequence | StampKind::Timed if payload.len() >= stamp::SEQ_LEN => {
                Some(payload_at)
            }
            _ => None,
        };
        let time_at = (stamp == StampKind::Timed && payload.len() >= jsframe::TIMED_LEN)
            .then_some(payload_at + jsframe::SEQ_LEN);
        Self {
            bytes,
            seq_at,
            time_at,
            line: dynamic.then(|| DynamicLine {
                subject: subject.as_bytes().to_vec(),
                multi: multisubject,
                reply_prefix: reply_prefix.map(|r| r.as_bytes().to_vec()),
            }),
            headers_len: headers.len(),
            payload_len: payload.len(),
        }
    }

    /// Bytes of payload per message.
    pub fn payload_len(&self) -> usize {
        self.payload_len
    }

    /// Whether messages carry a delivery stamp.
    pub fn stamped(&self) -> bool {
        self.seq_at.is_some()
    }

    /// Appends message `seq` to `out`.
    #[inline]
    pub fn append(&self, out: &mut Vec<u8>, seq: u64) {
        if let Some(l) = &self.line {
            let (mut n1, mut n2) = (itoa::Buffer::new(), itoa::Buffer::new());
            let suffix: [&[u8]; 3] = match l.multi {
                Some(keys) => [&l.subject, b".", n1.format(keys.of(seq)).as_bytes()],
                None => [&l.subject, b"", b""],
            };
            let reply: [&[u8]; 2] = match &l.reply_prefix {
                Some(prefix) => [prefix, n2.format(seq).as_bytes()],
                None => [b"", b""],
            };
            let reply: &[&[u8]] = if l.reply_prefix.is_some() {
                &reply
            } else {
                &[]
            };
            proto::encode_pub_line_parts(out, &suffix, reply, self.headers_len, self.payload_len);
        }
        let at = out.len();
        out.extend_from_slice(&self.bytes);
        if let Some(off) = self.seq_at {
            out[at + off..at + off + 8].copy_from_slice(&seq.to_le_bytes());
        }
        if let Some(off) = self.time_at {
            out[at + off..at + off + 8].copy_from_slice(&jsframe::unix_ns().to_le_bytes());
        }
    }
}

/// A control line built per message.
#[derive(Debug, Clone)]
struct DynamicLine {
    subject: Vec<u8>,
    /// `--multisubject` or KV keys: the subject gets `.<key>`.
    multi: Option<Keys>,
    /// Request/reply: the reply subject is this prefix followed by the sequence number.
    reply_prefix: Option<Vec<u8>>,
}

/// Subjects (or KV keys) that vary per message: message `seq` goes to `<subject>.<key>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys {
    pub n: u64,
    /// Sequential keys cycle 0, 1, …, n-1; random ones are drawn from a fixed pseudo-random
    /// sequence, the same every run, so runs compare.
    pub random: bool,
}

impl Keys {
    pub fn cycle(n: u64) -> Self {
        Self { n, random: false }
    }

    /// The key of message `seq`.
    #[inline]
    pub fn of(self, seq: u64) -> u64 {
        if self.random {
            // splitmix64's finaliser: every input bit reaches every output bit.
            let mut z = seq.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % self.n
        } else {
            seq % self.n
        }
    }
}

/// What a publisher writes at the front of each payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampKind {
    /// Nothing: the payload goes out byte for byte.
    None,
    /// The 16-byte delivery stamp (run tag, publisher id, sequence).
    Delivery { run_tag: u16, publisher: u32 },
    /// Only the 8-byte sequence: with a time-driven schedule it alone says when the message
    /// was due, so latency runs work down to 8-byte messages.
    Sequence,
    /// The sequence and, from 16 bytes, the send time since the Unix epoch: JetStream
    /// messages, which a consumer in another process may time.
    Timed,
}

/// One publisher's parameters.
#[derive(Debug, Clone, Copy)]
pub struct PubSpec {
    pub id: u32,
    pub stop: Stop,
    /// This publisher's own pace (its share of the aggregate rate).
    pub pace: Pace,
    /// Where in its interval this publisher's schedule starts (0 ≤ phase < 1). Publisher i of
    /// n takes i/n, so n paced publishers interleave evenly instead of sending in bursts of n.
    pub phase: f64,
    /// How long to wait for the server to confirm the final flush.
    pub flush_timeout: Duration,
    /// The schedule's time zero, when several parties must share it (latency runs); otherwise
    /// the loop's own start.
    pub start_at: Option<Instant>,
    /// A paced send later than this behind its schedule counts as late.
    pub late_bound: Duration,
}

/// What a publish loop did.
#[derive(Debug, Clone)]
pub struct PubOutcome {
    pub run: ClientRun,
    /// The error that ended it early, if any.
    pub error: Option<ErrorKind>,
    /// Paced sends that went out more than `late_bound` behind schedule.
    pub late_sends: u64,
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
    let interval_ns = match spec.pace {
        Pace::Unlimited => None,
        Pace::Rate { per_sec } => Some(1e9 / per_sec),
    };
    let mut seq: u64 = 0;
    // Messages known to be in the socket (the buffer's contents are not, until written).
    let mut written: u64 = 0;
    // When the oldest message in the buffer was due (paced runs).
    let mut buf_due = start;
    let mut failed = None;
    let mut send_lag = interval_ns.map(|_| latency::new_histogram());
    if interval_ns.is_some() {
        precise_timers();
    }
    let mut late_sends = 0u64;
    let late_ns = spec.late_bound.as_nanos() as u64;
    // A write lost with a connection that `--reconnect` replaced is not a failure of the loop:
    // those messages count as sent, and the subscribers' accounting shows which arrived.
    let write = |buf: &mut Vec<u8>| -> Result<(), ErrorKind> {
        let r = shared.write_all(buf);
        buf.clear();
        match r {
            Ok(()) | Err(SendError::Reconnected) => Ok(()),
            Err(SendError::Failed(k)) => Err(k),
        }
    };

    while seq < limit {
        if let Some(iv) = interval_ns {
            // Open loop: message `seq` is due at start + seq * interval whether or not earlier
            // ones went out late, so a stall shows up as a burst, not as a shifted schedule.
            let due = start + Duration::from_nanos(((seq as f64 + spec.phase) * iv) as u64);
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
            if let Some(h) = send_lag.as_mut() {
                h.saturating_record(lag.max(1));
            }
            late_sends += u64::from(lag > late_ns);
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
                if !w.acquire(seq, stop) {
                    break;
                }
            }
            if interval_ns.is_none() {
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
    }
}

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

    fn expected(&self) -> u64 {
        self.expected.load(Ordering::Acquire)
    }

    fn armed_at(&self) -> Instant {
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

/// A responder's parameters.
#[derive(Debug, Clone, Copy)]
pub struct RespondSpec {
    pub id: u32,
    /// Simulated processing time per request.
    pub delay: Duration,
    /// Stop once all responders together have served this many requests.
    pub max: Option<u64>,
    /// Stop at this instant.
    pub until: Option<Instant>,
}

/// The reply loop: answers every request with its own payload. Replies collected while one read
/// is dispatched go out in one write after it, so a burst of requests costs one syscall.
pub fn respond(
    reader: &mut Reader,
    shared: &Shared,
    spec: &RespondSpec,
    total: &AtomicU64,
    done: &AtomicBool,
    stop: &AtomicBool,
) -> ClientRun {
    let mut out = Vec::with_capacity(FLUSH_AT);
    let (mut served, mut bytes) = (0u64, 0u64);
    let (mut first, mut last) = (None, None);
    let mut failed = false;
    reader.run(shared, TICK, |event| {
        match event {
            Event::Msg(m) => {
                let Some(reply) = m.reply else {
                    return Flow::Continue;
                };
                if !spec.delay.is_zero() {
                    std::thread::sleep(spec.delay);
                }
                proto::encode_pub(&mut out, reply, None, b"", m.payload);
                served += 1;
                total.fetch_add(1, Ordering::Relaxed);
                bytes += m.payload.len() as u64;
                first.get_or_insert_with(Instant::now);
                if out.len() >= FLUSH_AT {
                    failed |= matches!(shared.write_all(&out), Err(SendError::Failed(_)));
                    out.clear();
                }
            }
            Event::Tick => {
                if !out.is_empty() {
                    failed |= matches!(shared.write_all(&out), Err(SendError::Failed(_)));
                    out.clear();
                    last = Some(Instant::now());
                }
                let over = spec.max.is_some_and(|m| total.load(Ordering::Relaxed) >= m)
                    || spec.until.is_some_and(|t| Instant::now() >= t);
                if failed || over || done.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                    return Flow::Stop;
                }
            }
        }
        Flow::Continue
    });
    if !out.is_empty() {
        let _ = shared.write_all(&out);
        last = Some(Instant::now());
    }
    ClientRun {
        role: Role::Sub,
        id: spec.id,
        msgs: served,
        bytes,
        start: first,
        end: last.or(first),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::proto::{parse, Parsed, ServerOp};

    fn messages(bytes: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        // Re-read what a publisher wrote as the server would deliver it.
        let delivered = proto::deliver_as_server(bytes, 1);
        let mut out = Vec::new();
        let mut at = 0;
        while at < delivered.len() {
            match parse(&delivered[at..]).unwrap() {
                Parsed::Op(ServerOp::Msg(m), n) => {
                    out.push((m.subject.to_vec(), m.payload.to_vec()));
                    at += n;
                }
                other => panic!("{other:?}"),
            }
        }
        out
    }

    #[test]
    fn frame_stamps_each_message_with_its_sequence() {
        let payload = vec![7u8; 20];
        let f = Frame::new(
            "s",
            None,
            b"",
            &payload,
            StampKind::Delivery {
                run_tag: 0x1234,
                publisher: 3,
            },
        );
        assert!(f.stamped());
        let mut out = Vec::new();
        for seq in 0..3 {
            f.append(&mut out, seq);
        }
        let msgs = messages(&out);
        assert_eq!(msgs.len(), 3);
        for (seq, (subject, p)) in msgs.iter().enumerate() {
            assert_eq!(subject, b"s");
            let s = stamp::read(p).unwrap();
            assert_eq!((s.run_tag, s.publisher, s.seq), (0x1234, 3, seq as u64));
            assert_eq!(&p[STAMP_LEN..], &[7u8; 4]);
        }
    }

    #[test]
    fn frame_without_room_for_a_stamp_sends_the_payload_as_is() {
        let f = Frame::new("s", None, b"", b"abcdefg", StampKind::Sequence);
        assert!(!f.stamped());
        let mut out = Vec::new();
        f.append(&mut out, 5);
        assert_eq!(out, b"PUB s 7\r\nabcdefg\r\n");
    }

    #[test]
    fn sequence_stamp_is_the_first_eight_bytes() {
        let f = Frame::new("s", None, b"", &[0xEEu8; 10], StampKind::Sequence);
        assert!(f.stamped());
        let mut out = Vec::new();
        f.append(&mut out, 0x0102_0304_0506_0708);
        let msgs = messages(&out);
        assert_eq!(msgs[0].1, [8, 7, 6, 5, 4, 3, 2, 1, 0xEE, 0xEE]);
    }

    #[test]
    fn random_keys_are_fixed_spread_and_in_range() {
        let k = Keys {
            n: 10,
            random: true,
        };
        let seen: std::collections::HashSet<u64> = (0..200).map(|s| k.of(s)).collect();
        assert_eq!(seen.len(), 10, "200 draws over 10 keys reach them all");
        assert!((0..1000).all(|s| k.of(s) < 10));
        let first: Vec<u64> = (0..8).map(|s| k.of(s)).collect();
        assert_ne!(
            first,
            (0..8).collect::<Vec<_>>(),
            "not the sequential order"
        );
        assert_eq!(
            first,
            (0..8).map(|s| k.of(s)).collect::<Vec<_>>(),
            "the same every run"
        );
    }

    #[test]
    fn timed_stamp_carries_the_sequence_and_the_send_time() {
        let f = Frame::new("s", None, b"", &[0u8; 20], StampKind::Timed);
        let mut out = Vec::new();
        f.append(&mut out, 9);
        let msgs = messages(&out);
        assert_eq!(u64::from_le_bytes(msgs[0].1[..8].try_into().unwrap()), 9);
        let now = jsframe::unix_ns();
        let sent = jsframe::sent_at(&msgs[0].1, now).expect("a send time");
        assert!(now - sent < 1_000_000_000, "{now} {sent}");
    }

    #[test]
    fn multisubject_frames_cycle_through_subjects() {
        let f = Frame::new(
            "s",
            Some(Keys::cycle(3)),
            b"",
            &[0u8; 16],
            StampKind::Delivery {
                run_tag: 1,
                publisher: 0,
            },
        );
        let mut out = Vec::new();
        for seq in 0..4 {
            f.append(&mut out, seq);
        }
        let text = String::from_utf8_lossy(&out);
        let lines: Vec<&str> = text
            .split("\r\n")
            .filter(|l| l.starts_with("PUB"))
            .collect();
        assert_eq!(
            lines,
            ["PUB s.0 16", "PUB s.1 16", "PUB s.2 16", "PUB s.0 16"]
        );
    }

    #[test]
    fn window_limits_in_flight_and_expires_old_requests() {
        let w = Window::new(2, Duration::from_millis(30));
        let stop = AtomicBool::new(false);
        assert!(w.try_acquire(0) && w.try_acquire(1));
        assert!(!w.try_acquire(2));
        assert!(w.complete(1));
        assert!(
            !w.complete(1),
            "a second reply for the same request is not awaited"
        );
        assert!(w.try_acquire(2));
        // Nothing answers 0 and 2: acquire waits for them to time out, then proceeds.
        let t = Instant::now();
        assert!(w.acquire(3, &stop));
        assert!(t.elapsed() >= Duration::from_millis(25));
        assert!(w.timeouts() >= 1);
        assert!(!w.complete(0), "a reply after the timeout is late");
        w.drain(&stop);
        assert_eq!(w.timeouts(), 3);
    }

    #[test]
    fn reply_subjects_name_each_request() {
        let f = Frame::with_reply(
            "svc",
            None,
            Some("_INBOX.t.0."),
            b"",
            &[0u8; 8],
            StampKind::Sequence,
        );
        let mut out = Vec::new();
        f.append(&mut out, 7);
        f.append(&mut out, 12);
        let text = String::from_utf8_lossy(&out);
        let lines: Vec<&str> = text
            .split("\r\n")
            .filter(|l| l.starts_with("PUB"))
            .collect();
        assert_eq!(lines, ["PUB svc _INBOX.t.0.7 8", "PUB svc _INBOX.t.0.12 8"]);
    }

    #[test]
    fn frame_with_headers_uses_hpub() {
        let block = proto::header_block(&[("A".into(), "b".into())]);
        let f = Frame::new(
            "s",
            None,
            &block,
            &[0u8; 16],
            StampKind::Delivery {
                run_tag: 9,
                publisher: 1,
            },
        );
        let mut out = Vec::new();
        f.append(&mut out, 42);
        assert!(out.starts_with(b"HPUB s 18 34\r\nNATS/1.0\r\nA: b\r\n\r\n"));
        let msgs = messages(&out);
        assert_eq!(stamp::read(&msgs[0].1).unwrap().seq, 42);
    }
}
