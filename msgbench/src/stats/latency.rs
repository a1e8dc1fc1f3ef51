//! Latency recording, corrected for coordinated omission: every delivered message is timed twice,
//! from when it was *due* by the schedule (corrected) and from when it was *actually sent*
//! (uncorrected), into HdrHistograms that cover 1 ns to 1 hour at 3 significant digits.
//!
//! All times are nanoseconds since the run's start on one monotonic clock, passed in by the
//! caller: the maths here never reads a clock, so tests drive it with a fake one.

use std::sync::atomic::{AtomicU64, Ordering};

use hdrhistogram::Histogram;

use crate::stats::delivery::SeqTracker;
use crate::stats::schedule::PubSchedule;
use crate::stats::stages::{StageSplit, StageTotals};
use crate::stats::timeline::LiveHist;

/// Largest latency recorded without saturating: one hour.
pub const MAX_NS: u64 = 3_600_000_000_000;

/// A new latency histogram: 1 ns to one hour, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// When each message really left: a fixed ring, written by the publisher and read by the
/// subscriber, so uncorrected latency needs no send time in the payload (8-byte messages work)
/// and memory does not grow with the run.
pub struct SendTimes {
    seqs: Box<[AtomicU64]>,
    times: Box<[AtomicU64]>,
}

impl SendTimes {
    /// A ring holding the last `slots` send times (rounded up to a power of two).
    pub fn new(slots: usize) -> Self {
        let n = slots.next_power_of_two();
        let make = || {
            (0..n)
                .map(|_| AtomicU64::new(u64::MAX))
                .collect::<Vec<_>>()
                .into_boxed_slice()
        };
        Self {
            seqs: make(),
            times: make(),
        }
    }

    #[inline]
    fn slot(&self, seq: u64) -> usize {
        (seq as usize) & (self.seqs.len() - 1)
    }

    /// Records that `seq` was sent at `sent_ns`.
    #[inline]
    pub fn put(&self, seq: u64, sent_ns: u64) {
        let i = self.slot(seq);
        self.times[i].store(sent_ns, Ordering::Relaxed);
        // Release: a reader that sees this seq also sees the time stored before it.
        self.seqs[i].store(seq, Ordering::Release);
    }

    /// When `seq` was sent, if its slot has not been reused since.
    #[inline]
    pub fn get(&self, seq: u64) -> Option<u64> {
        let i = self.slot(seq);
        if self.seqs[i].load(Ordering::Acquire) != seq {
            return None;
        }
        let t = self.times[i].load(Ordering::Relaxed);
        // The slot may have been overwritten between the two loads.
        (self.seqs[i].load(Ordering::Acquire) == seq).then_some(t)
    }
}

/// Called with each finished one-second interval: its histogram and its span in ns since start.
pub type IntervalSink<'a> = dyn FnMut(&Histogram<u64>, u64, u64) + Send + 'a;

/// Everything the latency subscriber records.
pub struct LatencyRecorder<'a> {
    pub corrected: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    /// Delivery accounting from the sequence numbers.
    pub tracker: SeqTracker,
    /// Messages whose send time had left the ring (far more in flight than expected).
    pub unknown_send_time: u64,
    /// Messages due during the warm-up: delivered and counted, not recorded.
    pub warmup_skipped: u64,
    warmup_ns: u64,
    interval: Histogram<u64>,
    interval_start_ns: u64,
    interval_ns: u64,
    sink: Option<Box<IntervalSink<'a>>>,
    /// The live view's copy of the corrected latencies.
    live: Option<&'a LiveHist>,
    /// Each stage's share of a `--rate-schedule` run, and the publisher's part of the schedule
    /// that places each sequence number in its stage.
    stages: Option<(StageSplit<'a>, PubSchedule)>,
}

impl<'a> LatencyRecorder<'a> {
    /// A recorder that ignores messages due before `warmup_ns` and hands each `interval_ns` of
    /// corrected latencies to `sink`.
    pub fn new(warmup_ns: u64, interval_ns: u64, sink: Option<Box<IntervalSink<'a>>>) -> Self {
        Self {
            corrected: new_histogram(),
            uncorrected: new_histogram(),
            tracker: SeqTracker::default(),
            unknown_send_time: 0,
            warmup_skipped: 0,
            warmup_ns,
            interval: new_histogram(),
            interval_start_ns: warmup_ns,
            interval_ns,
            sink,
            live: None,
            stages: None,
        }
    }

    /// Also records each message into the stage of a rate schedule it was due in, by its
    /// sequence number in `share` (exactly as its publisher counted it sent).
    #[must_use]
    pub fn with_stages(
        mut self,
        totals: Option<&'a StageTotals>,
        share: Option<&PubSchedule>,
    ) -> Self {
        self.stages = totals.zip(share).map(|(t, sh)| (t.split(), sh.clone()));
        self
    }

    /// Also counts every corrected latency in `live`, for the per-second view.
    #[must_use]
    pub fn with_live(mut self, live: Option<&'a LiveHist>) -> Self {
        self.live = live;
        self
    }

    /// Records message `seq`, due at `due_ns`, sent at `sent_ns` (if known), received at
    /// `recv_ns`.
    #[inline]
    pub fn record(&mut self, seq: u64, due_ns: u64, sent_ns: Option<u64>, recv_ns: u64) {
        self.tracker.record(seq);
        if due_ns < self.warmup_ns {
            self.warmup_skipped += 1;
            if let Some((st, share)) = self.stages.as_mut() {
                st.record(share.stage_of(seq), recv_ns, None);
            }
            return;
        }
        self.rotate_until(recv_ns);
        // A message cannot arrive before it was due; clamp the clock's granularity to 1 ns.
        let corrected = recv_ns.saturating_sub(due_ns).max(1);
        self.corrected.saturating_record(corrected);
        self.interval.saturating_record(corrected);
        if let Some(live) = self.live {
            live.record(corrected);
        }
        let uncorrected = sent_ns.map(|s| recv_ns.saturating_sub(s).max(1));
        match uncorrected {
            Some(u) => self.uncorrected.saturating_record(u),
            None => self.unknown_send_time += 1,
        }
        if let Some((st, share)) = self.stages.as_mut() {
            st.record(share.stage_of(seq), recv_ns, Some((corrected, uncorrected)));
        }
    }

    /// Closes every interval that ended before `now_ns`.
    pub fn rotate_until(&mut self, now_ns: u64) {
        while now_ns >= self.interval_start_ns + self.interval_ns {
            let end = self.interval_start_ns + self.interval_ns;
            if let Some(sink) = self.sink.as_mut() {
                sink(&self.interval, self.interval_start_ns, end);
            }
            self.interval.reset();
            self.interval_start_ns = end;
        }
    }

    /// Hands what is buffered to the stages' totals.
    pub fn flush_stages(&mut self) {
        if let Some((st, _)) = self.stages.as_mut() {
            st.flush();
        }
    }

    /// Hands the last, partial interval to the sink (and what is buffered to the stages).
    pub fn finish(&mut self, now_ns: u64) {
        self.flush_stages();
        self.rotate_until(now_ns);
        if !self.interval.is_empty() {
            if let Some(sink) = self.sink.as_mut() {
                sink(
                    &self.interval,
                    self.interval_start_ns,
                    now_ns.max(self.interval_start_ns + 1),
                );
            }
            self.interval.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulates a run at `rate` for `secs` on a fake clock, where the system is stalled from
    /// `stall_at_ms` for `stall_ms`: the publisher cannot send and nothing is delivered. Normal
    /// latency is `base_ns`.
    fn simulate(
        rate: f64,
        secs: u64,
        base_ns: u64,
        stall_at_ms: u64,
        stall_ms: u64,
    ) -> LatencyRecorder<'static> {
        let schedule = crate::stats::schedule::RateSchedule::fixed(rate).share(0, 1);
        let mut rec = LatencyRecorder::new(0, 1_000_000_000, None);
        let n = (rate as u64) * secs;
        let (stall_from, stall_to) = (
            stall_at_ms * 1_000_000,
            (stall_at_ms + stall_ms) * 1_000_000,
        );
        for seq in 0..n {
            let due = schedule.due_ns(seq).expect("a fixed rate never ends");
            // Open loop: a send due during the stall goes out when the stall ends.
            let sent = if (stall_from..stall_to).contains(&due) {
                stall_to
            } else {
                due
            };
            rec.record(seq, due, Some(sent), sent + base_ns);
        }
        rec
    }

    #[test]
    fn a_stall_shows_in_corrected_latency_only() {
        let (rate, base) = (10_000.0, 50_000);
        let rec = simulate(rate, 2, base, 500, 100);
        // A 100 ms stall at 10,000/s delays about 1,000 messages by up to 100 ms.
        let above_normal = |h: &Histogram<u64>| h.count_between(2 * base, MAX_NS);
        let corrected = above_normal(&rec.corrected);
        assert!(
            (950..=1050).contains(&corrected),
            "corrected tail {corrected}"
        );
        assert_eq!(above_normal(&rec.uncorrected), 0);
        assert!(
            rec.corrected.max() >= 100_000_000 - 1_000_000,
            "max {}",
            rec.corrected.max()
        );
        assert!(rec.uncorrected.max() < 2 * base);
        assert_eq!(rec.corrected.len(), 20_000);
    }

    #[test]
    fn without_a_stall_both_agree() {
        let rec = simulate(1_000.0, 1, 30_000, 0, 0);
        assert_eq!(
            rec.corrected.value_at_quantile(0.99),
            rec.uncorrected.value_at_quantile(0.99)
        );
        assert_eq!(rec.tracker.unique, 1_000);
    }

    #[test]
    fn warmup_is_delivered_but_not_recorded() {
        let schedule = crate::stats::schedule::RateSchedule::fixed(1_000.0).share(0, 1);
        let mut rec = LatencyRecorder::new(100_000_000, 1_000_000_000, None);
        for seq in 0..1_000 {
            let due = schedule.due_ns(seq).expect("a fixed rate never ends");
            rec.record(seq, due, Some(due), due + 10_000);
        }
        assert_eq!(
            (rec.warmup_skipped, rec.corrected.len(), rec.tracker.unique),
            (100, 900, 1_000)
        );
    }

    #[test]
    fn intervals_cover_the_run_in_order() {
        let mut spans = Vec::new();
        {
            let sink: Box<IntervalSink<'_>> =
                Box::new(|h: &Histogram<u64>, s, e| spans.push((s, e, h.len())));
            let mut rec = LatencyRecorder::new(0, 1_000_000_000, Some(sink));
            let schedule = crate::stats::schedule::RateSchedule::fixed(100.0).share(0, 1);
            for seq in 0..250 {
                let due = schedule.due_ns(seq).expect("a fixed rate never ends");
                rec.record(seq, due, Some(due), due + 1_000);
            }
            rec.finish(2_500_000_000);
        }
        assert_eq!(
            spans,
            vec![
                (0, 1_000_000_000, 100),
                (1_000_000_000, 2_000_000_000, 100),
                (2_000_000_000, 2_500_000_000, 50)
            ]
        );
    }

    #[test]
    fn send_time_ring_forgets_overwritten_slots() {
        let ring = SendTimes::new(4);
        ring.put(1, 100);
        assert_eq!(ring.get(1), Some(100));
        ring.put(5, 500); // same slot as 1
        assert_eq!((ring.get(1), ring.get(5)), (None, Some(500)));
        assert_eq!(ring.get(2), None);
    }
}
