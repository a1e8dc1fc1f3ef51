//! Acknowledgement latency before, during and after each fault of a run: what a client saw
//! of the service while it was hurt, as exact histograms (not the timeline's 1-second,
//! 2 %-wide buckets).
//!
//! A publish falls in a phase by when it was *due* (by the schedule with `--rate`, when it was
//! sent without), so a publish held up by a fault counts where it was asked for, not where
//! its answer finally came. For fault k, injected at `t_k`:
//! - *during* runs from `t_k` to its end: the later of its undo (a restarted node listening
//!   again, a paused one thawed; a kill has none) and the first acknowledgement this publisher
//!   received for a publish due after `t_k`. It stops at the next fault's injection at the
//!   latest, so the phases of a run never overlap;
//! - *after* runs from that end to the next fault's injection (or the end of the load);
//! - *before* is the previous fault's *after*, or from the start of the load to the first
//!   fault.
//!
//! Every acknowledged publish is therefore counted once: in the first fault's *before*, or
//! in one fault's *during* or *after*. The end is each publisher's own, so that it is known
//! exactly in the publisher's reader thread, which sees its acknowledgements in the order they
//! came; the undo time comes from the injector, which publishes it the moment it has it.
//!
//! Memory does not grow with the run: each publisher holds at most `2 × faults + 1`
//! histograms, each made the first time a latency falls in it (once per phase, never per
//! message), and they are merged after the load.

use std::sync::atomic::{AtomicU64, Ordering};

use hdrhistogram::Histogram;
use serde::Serialize;

use super::latency::new_histogram;

/// Not yet: a fault not injected, or not undone.
const NOT_YET: u64 = u64::MAX;

/// One phase's acknowledgement latency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseLatency {
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

impl PhaseLatency {
    /// `None` for a phase with no acknowledged publish: there is nothing to summarise.
    fn of(h: Option<&Histogram<u64>>) -> Option<Self> {
        let h = h.filter(|h| !h.is_empty())?;
        Some(Self {
            count: h.len(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            max_ns: h.max(),
        })
    }
}

/// A fault's three phases; each is null when no publish due in it was acknowledged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AckLatency {
    pub before: Option<PhaseLatency>,
    pub during: Option<PhaseLatency>,
    pub after: Option<PhaseLatency>,
}

/// One publisher's phases, recorded in its reader thread.
pub struct FaultPhases<'a> {
    /// Each fault's injection, in ns from time zero; [`NOT_YET`] before.
    times: &'a [AtomicU64],
    /// Each fault's undo, or its injection for a fault with nothing to undo (a kill);
    /// [`NOT_YET`] before.
    undone: &'a [AtomicU64],
    /// The first acknowledgement this publisher received for a publish due after each fault.
    first_after: Vec<u64>,
    /// From the start of the load to the first fault.
    first_before: Option<Histogram<u64>>,
    during: Vec<Option<Histogram<u64>>>,
    after: Vec<Option<Histogram<u64>>>,
}

impl<'a> FaultPhases<'a> {
    pub fn new(times: &'a [AtomicU64], undone: &'a [AtomicU64]) -> Self {
        let n = times.len();
        Self {
            times,
            undone,
            first_after: vec![NOT_YET; n],
            first_before: None,
            during: vec![None; n],
            after: vec![None; n],
        }
    }

    /// A publish due at `due_ns` acknowledged at `recv_ns` (both from time zero), timed as the
    /// run's corrected latency is.
    #[inline]
    pub fn record(&mut self, due_ns: u64, recv_ns: u64) {
        let latency = recv_ns.saturating_sub(due_ns).max(1);
        // The latest fault injected by the publish's due time (faults come in their order).
        let mut fault = None;
        for (k, t) in self.times.iter().enumerate() {
            let at = t.load(Ordering::Acquire);
            if at == NOT_YET {
                continue;
            }
            if due_ns >= at {
                fault = Some(k);
                let first = &mut self.first_after[k];
                *first = (*first).min(recv_ns);
            }
        }
        let slot = match fault {
            None => &mut self.first_before,
            Some(k) => {
                let undone = self.undone[k].load(Ordering::Acquire);
                // Unknown ends are NOT_YET: the fault is still on.
                let end = undone.max(self.first_after[k]);
                if due_ns < end {
                    &mut self.during[k]
                } else {
                    &mut self.after[k]
                }
            }
        };
        slot.get_or_insert_with(new_histogram)
            .saturating_record(latency);
    }

    /// Fault `k`'s phases over every publisher; `None` when it was not injected.
    pub fn merged(all: &[&FaultPhases<'_>], k: usize) -> Option<AckLatency> {
        let injected = |j: usize| {
            all.first()
                .is_some_and(|p| p.times[j].load(Ordering::Acquire) != NOT_YET)
        };
        if !injected(k) {
            return None;
        }
        // Before this fault: the previous injected fault's after, or the load's start.
        let before = match (0..k).rev().find(|&j| injected(j)) {
            Some(j) => merge(all, |p| p.after[j].as_ref()),
            None => merge(all, |p| p.first_before.as_ref()),
        };
        Some(AckLatency {
            before: PhaseLatency::of(before.as_ref()),
            during: PhaseLatency::of(merge(all, |p| p.during[k].as_ref()).as_ref()),
            after: PhaseLatency::of(merge(all, |p| p.after[k].as_ref()).as_ref()),
        })
    }
}

/// The histograms `pick` chooses from each publisher's, added up; `None` when none has one.
fn merge<'p, 'a: 'p>(
    all: &[&'p FaultPhases<'a>],
    pick: impl Fn(&'p FaultPhases<'a>) -> Option<&'p Histogram<u64>>,
) -> Option<Histogram<u64>> {
    let mut out: Option<Histogram<u64>> = None;
    for h in all.iter().filter_map(|p| pick(p)) {
        out.get_or_insert_with(new_histogram)
            .add(h)
            .expect("same bounds");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn atomics(n: usize) -> Vec<AtomicU64> {
        (0..n).map(|_| AtomicU64::new(NOT_YET)).collect()
    }

    /// `(count, max in whole ms)` of a phase: a histogram keeps 3 significant digits, so its
    /// max is the recorded value to within 0.1 %.
    fn cm(p: &Option<PhaseLatency>) -> Option<(u64, u64)> {
        p.as_ref().map(|p| (p.count, p.max_ns / MS))
    }

    #[test]
    fn a_publish_counts_in_the_phase_of_when_it_was_due() {
        let (times, undone) = (atomics(1), atomics(1));
        let mut p = FaultPhases::new(&times, &undone);
        // Before the fault: 1 ms each.
        for t in 0..10 {
            p.record(t * MS, t * MS + MS);
        }
        // A restart at 10 ms, listening again at 50 ms.
        times[0].store(10 * MS, Ordering::Release);
        // Due before the fault, answered after it: still before.
        p.record(9 * MS, 60 * MS);
        // Due during the outage, answered once it was over.
        p.record(20 * MS, 70 * MS);
        undone[0].store(50 * MS, Ordering::Release);
        // The first acknowledgement for a publish due after the fault came at 70 ms: due before
        // that is during, even though the undo was at 50 ms.
        p.record(65 * MS, 72 * MS);
        p.record(71 * MS, 73 * MS);
        let a = FaultPhases::merged(&[&p], 0).unwrap();
        assert_eq!(a.before.as_ref().unwrap().count, 11);
        assert_eq!(cm(&a.during), Some((2, 50)));
        assert_eq!(cm(&a.after), Some((1, 2)));
    }

    #[test]
    fn a_fault_still_on_when_the_next_comes_ends_there_and_phases_never_overlap() {
        let (times, undone) = (atomics(3), atomics(3));
        let (mut a, mut b) = (
            FaultPhases::new(&times, &undone),
            FaultPhases::new(&times, &undone),
        );
        a.record(0, MS);
        // A kill at 10 ms (nothing to undo), no acknowledgement until after the next fault.
        times[0].store(10 * MS, Ordering::Release);
        undone[0].store(10 * MS, Ordering::Release);
        // A restart of the killed node at 20 ms, undone at 21 ms.
        times[1].store(20 * MS, Ordering::Release);
        undone[1].store(21 * MS, Ordering::Release);
        // Due in the first fault's time, answered late: that fault's during.
        b.record(15 * MS, 40 * MS);
        // Due after the second: the second's during, then its after once acknowledged.
        a.record(25 * MS, 41 * MS);
        a.record(42 * MS, 43 * MS);
        // b's own first acknowledgement after the second fault is this one: during, for b.
        b.record(42 * MS, 44 * MS);
        b.record(45 * MS, 46 * MS);
        // The third fault never came.
        let f0 = FaultPhases::merged(&[&a, &b], 0).unwrap();
        let f1 = FaultPhases::merged(&[&a, &b], 1).unwrap();
        assert_eq!(cm(&f0.before), Some((1, 1)));
        assert_eq!(cm(&f0.during), Some((1, 25)));
        // The first fault had not ended by the second's injection: nothing after it.
        assert_eq!(f0.after, None);
        assert_eq!(f1.before, None);
        assert_eq!(cm(&f1.during), Some((2, 16)));
        assert_eq!(cm(&f1.after), Some((2, 1)));
        assert_eq!(FaultPhases::merged(&[&a, &b], 2), None);
        let total: u64 = [&f0.before, &f0.during, &f1.during, &f1.after]
            .iter()
            .filter_map(|p| p.as_ref().map(|p| p.count))
            .sum();
        assert_eq!(total, 6);
    }

    #[test]
    fn each_publisher_ends_the_fault_at_its_own_first_acknowledgement() {
        let (times, undone) = (atomics(1), atomics(1));
        let (mut a, mut b) = (
            FaultPhases::new(&times, &undone),
            FaultPhases::new(&times, &undone),
        );
        times[0].store(10 * MS, Ordering::Release);
        undone[0].store(10 * MS, Ordering::Release);
        a.record(11 * MS, 12 * MS);
        a.record(13 * MS, 14 * MS);
        // b's first acknowledgement after the fault is at 30 ms: its publish due at 13 ms is
        // still during for b, whatever a saw.
        b.record(13 * MS, 30 * MS);
        b.record(31 * MS, 32 * MS);
        let f = FaultPhases::merged(&[&a, &b], 0).unwrap();
        assert_eq!(f.before, None);
        assert_eq!(cm(&f.during), Some((2, 17)));
        assert_eq!(cm(&f.after), Some((2, 1)));
    }
}
