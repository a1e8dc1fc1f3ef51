//! Figures per stage of a `--rate-schedule`: each message belongs to the stage its due time falls
//! in (not the one it arrived in), so a stall late in a stage is charged to the stage whose
//! messages it delayed.
//!
//! One [`StageTotals`] per run holds each stage's histograms and arrival count. Recorders (one
//! per subscriber or requester, on their own threads) write through a [`StageSplit`], which
//! batches values and hands them over under the lock once per [`BATCH`] or at a stage change:
//! per-recorder memory stays at two small buffers however many stages there are, and the lock
//! is taken about once per thousand messages.

use std::sync::Mutex;

use hdrhistogram::Histogram;

use crate::stats::latency::new_histogram;
use crate::stats::schedule::{PubSchedule, RateSchedule};
use crate::wire::stamp::Stamp;

/// Values a recorder keeps before handing them to the totals.
const BATCH: usize = 1024;

/// One stage's figures.
pub struct StageFigures {
    /// Latency from each message's due time (corrected).
    pub corrected: Histogram<u64>,
    /// Latency from each message's actual send, where known.
    pub uncorrected: Histogram<u64>,
    /// Messages due in the stage that arrived (a duplicate counts again; warm-up ones too).
    pub received: u64,
    /// Messages that arrived while the stage ran, whenever they were due: the stage's achieved
    /// throughput, which falls behind its target when the system does.
    pub arrived_within: u64,
}

/// The run's figures for every stage.
pub struct StageTotals {
    schedule: RateSchedule,
    stages: Mutex<Vec<Option<StageFigures>>>,
}

impl StageTotals {
    /// Totals for `schedule`; `None` for a fixed rate (one stage is the whole result).
    pub fn new(schedule: &RateSchedule) -> Option<Self> {
        (!schedule.is_fixed()).then(|| Self {
            schedule: schedule.clone(),
            stages: Mutex::new((0..schedule.stages().len()).map(|_| None).collect()),
        })
    }

    pub fn schedule(&self) -> &RateSchedule {
        &self.schedule
    }

    /// A writer for one recorder.
    pub fn split(&self) -> StageSplit<'_> {
        StageSplit {
            totals: self,
            stage: 0,
            corrected: Vec::with_capacity(BATCH),
            uncorrected: Vec::with_capacity(BATCH),
            received: 0,
            within: vec![0; self.schedule.stages().len()],
        }
    }

    /// Records `weight` arrivals due at `due_ns`, arrived at `recv_ns`, straight into the
    /// totals, under the lock: for loops whose per-message cost dwarfs it (gRPC calls).
    pub fn record_one(&self, due_ns: u64, recv_ns: u64, latency: (u64, u64), weight: u64) {
        let stage = self.schedule.stage_at_ns(due_ns);
        let within = self.window_of(recv_ns);
        let mut stages = self.stages.lock().expect("stage totals lock");
        let f = figures(&mut stages[stage]);
        f.received += weight;
        f.corrected.saturating_record_n(latency.0, weight);
        f.uncorrected.saturating_record_n(latency.1, weight);
        if let Some(w) = within {
            figures(&mut stages[w]).arrived_within += weight;
        }
    }

    /// The stage running at `t_ns`; `None` after the last one ended.
    fn window_of(&self, t_ns: u64) -> Option<usize> {
        let i = self.schedule.stage_at_ns(t_ns);
        let s = &self.schedule.stages()[i];
        ((t_ns as f64) < s.end_ns()).then_some(i)
    }

    /// Adds arrivals counted elsewhere (subscribers that time nothing): by the stage they
    /// were due in, and by the stage running when they came.
    pub fn add_received(&self, due: &[u64], within: &[u64]) {
        let mut stages = self.stages.lock().expect("stage totals lock");
        for (slot, (d, w)) in stages.iter_mut().zip(due.iter().zip(within)) {
            if *d + *w > 0 {
                let f = figures(slot);
                f.received += d;
                f.arrived_within += w;
            }
        }
    }

    /// Each stage's figures, in order (`None` for a stage in which nothing arrived). Writers
    /// must have flushed: what they hand over later is not counted.
    pub fn take(&self) -> Vec<Option<StageFigures>> {
        let mut stages = self.stages.lock().expect("stage totals lock");
        let empty = (0..stages.len()).map(|_| None).collect();
        std::mem::replace(&mut *stages, empty)
    }
}

fn figures(slot: &mut Option<StageFigures>) -> &mut StageFigures {
    slot.get_or_insert_with(|| StageFigures {
        corrected: new_histogram(),
        uncorrected: new_histogram(),
        received: 0,
        arrived_within: 0,
    })
}

/// One recorder's writer into the [`StageTotals`].
pub struct StageSplit<'a> {
    totals: &'a StageTotals,
    /// The stage the buffered values belong to.
    stage: usize,
    corrected: Vec<u64>,
    uncorrected: Vec<u64>,
    received: u64,
    /// Arrivals by the stage running when they came.
    within: Vec<u64>,
}

impl StageSplit<'_> {
    /// One arrival at `recv_ns` of a message due in `stage` (from its sequence number, as its
    /// publisher counted it), with its corrected and (when known) uncorrected latency; `None`
    /// for a message not timed (the warm-up).
    #[inline]
    pub fn record(&mut self, stage: usize, recv_ns: u64, latency: Option<(u64, Option<u64>)>) {
        if let Some(w) = self.totals.window_of(recv_ns) {
            self.within[w] += 1;
        }
        let stage = stage.min(self.within.len() - 1);
        if stage != self.stage || self.corrected.len() >= BATCH {
            self.flush();
            self.stage = stage;
        }
        self.received += 1;
        if let Some((c, u)) = latency {
            self.corrected.push(c);
            if let Some(u) = u {
                self.uncorrected.push(u);
            }
        }
    }

    /// Hands what is buffered to the totals.
    pub fn flush(&mut self) {
        if self.received == 0 {
            return;
        }
        let mut stages = self.totals.stages.lock().expect("stage totals lock");
        for (slot, n) in stages.iter_mut().zip(self.within.iter_mut()) {
            if *n > 0 {
                figures(slot).arrived_within += *n;
                *n = 0;
            }
        }
        let f = figures(&mut stages[self.stage]);
        f.received += self.received;
        for v in self.corrected.drain(..) {
            f.corrected.saturating_record(v);
        }
        for v in self.uncorrected.drain(..) {
            f.uncorrected.saturating_record(v);
        }
        self.received = 0;
    }
}

impl Drop for StageSplit<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Arrivals per stage for a subscriber that times nothing (`pubsub`): a message's stage follows
/// from its publisher and sequence number, since every publisher keeps its share of the one
/// schedule.
pub struct StageArrivals {
    shares: Vec<PubSchedule>,
    /// Only this run's messages count.
    run_tag: Option<u16>,
    /// Arrivals by the stage they were due in.
    pub counts: Vec<u64>,
    /// Arrivals by the stage running when they came.
    pub within: Vec<u64>,
    ends_ns: Vec<f64>,
}

impl StageArrivals {
    /// For `pubs` publishers with ids `0..pubs`, whose stamps carry `run_tag` (when given).
    pub fn new(schedule: &RateSchedule, pubs: u32, run_tag: Option<u16>) -> Self {
        Self {
            shares: (0..pubs).map(|p| schedule.share(p, pubs)).collect(),
            run_tag,
            counts: vec![0; schedule.stages().len()],
            within: vec![0; schedule.stages().len()],
            ends_ns: schedule.stages().iter().map(|s| s.end_ns()).collect(),
        }
    }

    /// One arrival at `recv_ns` (since the schedule's start), whatever it carried.
    #[inline]
    pub fn arrived_at(&mut self, recv_ns: u64) {
        let t = recv_ns as f64;
        let i = self.ends_ns.partition_point(|e| *e <= t);
        if let Some(n) = self.within.get_mut(i) {
            *n += 1;
        }
    }

    #[inline]
    pub fn record(&mut self, stamp: Option<Stamp>) {
        let Some(st) = stamp else { return };
        if self.run_tag.is_some_and(|t| t != st.run_tag) {
            return;
        }
        if let Some(share) = self.shares.get(st.publisher as usize) {
            self.counts[share.stage_of(st.seq)] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_counts_in_the_stage_it_was_due_in() {
        let s = RateSchedule::parse("1000@1s,2000@1s", None).unwrap();
        let totals = StageTotals::new(&s).unwrap();
        {
            let mut a = totals.split();
            let mut b = totals.split();
            let one = s.share(0, 1);
            for i in 0..3000u64 {
                let due = one.due_ns(i).unwrap();
                // A message due at the end of stage 0 that arrives in stage 1 stays in stage 0.
                let lat = if i == 999 { 400_000_000 } else { 1000 + i };
                let w = if i % 2 == 0 { &mut a } else { &mut b };
                w.record(one.stage_of(i), due + lat, Some((lat, Some(lat / 2))));
            }
            b.record(0, 5, None);
        }
        let stages = totals.take();
        let (s0, s1) = (stages[0].as_ref().unwrap(), stages[1].as_ref().unwrap());
        assert_eq!((s0.received, s1.received), (1001, 2000));
        assert_eq!(s0.corrected.len(), 1000);
        assert_eq!(s1.corrected.len(), 2000);
        assert!(s0.corrected.max() >= 399_000_000);
        assert!(s1.corrected.max() < 10_000);
        assert_eq!(s1.uncorrected.len(), 2000);
        // By arrival: the late one came in the second stage's window; the untimed one at 5 ns
        // in the first.
        assert_eq!((s0.arrived_within, s1.arrived_within), (1000, 2001));
    }

    #[test]
    fn arrivals_follow_each_publishers_share() {
        let s = RateSchedule::parse("1000@1s,3000@1s", None).unwrap();
        let mut arr = StageArrivals::new(&s, 2, Some(1));
        let stamp = |publisher, seq| {
            Some(Stamp {
                run_tag: 1,
                publisher,
                seq,
            })
        };
        for seq in 0..2000 {
            arr.record(stamp(0, seq));
            arr.record(stamp(1, seq));
        }
        arr.record(None);
        arr.record(stamp(7, 0));
        arr.record(Some(Stamp {
            run_tag: 2,
            publisher: 0,
            seq: 0,
        }));
        assert_eq!(arr.counts, vec![1000, 3000]);
        let totals = StageTotals::new(&s).unwrap();
        for t in [0, 999_999_999, 1_000_000_000, 1_999_999_999, 2_000_000_000] {
            arr.arrived_at(t);
        }
        assert_eq!(arr.within, vec![2, 2]);
        totals.add_received(&arr.counts, &arr.within);
        let got: Vec<u64> = totals
            .take()
            .iter()
            .map(|f| f.as_ref().unwrap().received)
            .collect();
        assert_eq!(got, vec![1000, 3000]);
        assert!(StageTotals::new(&RateSchedule::fixed(10.0)).is_none());
    }
}
