//! Poisson arrivals: an open-loop schedule whose gaps are drawn rather than even, at the same
//! mean rate (and, under `--rate-schedule`, the same rate at every moment).
//!
//! A schedule says how many of the run's messages are due by time t, Λ(t); the fixed schedule
//! sends message k at Λ⁻¹(k). Poisson arrivals send it at Λ⁻¹(Γₖ) instead, where Γₖ is the
//! k-th arrival of a Poisson process of rate 1 (a sum of k exponential gaps): by the time-change
//! theorem that is a Poisson process whose intensity is the schedule's rate, exactly, ramps
//! and steps included.
//!
//! Every party must find Γₖ from k alone: a publisher for its message, a subscriber or a
//! requester for the due time its latency is corrected against, on this machine or an agent.
//! So Γ is built in blocks of [`BLOCK`] messages. Each block's length (a sum of `BLOCK`
//! exponentials, so Gamma(`BLOCK`, 1)) is drawn from the seed and the block's number, and
//! their running sums are tabled before the clock starts: 8 bytes per block, one draw each.
//! Inside a block, given its two ends, the arrivals are distributed as `BLOCK` exponential gaps
//! scaled to fill it (by the Dirichlet property, the order statistics of uniforms, independent
//! of the block's length); they are drawn again from the seed and the block's number when a
//! thread first needs that block, and kept in a per-thread cache of two blocks (an even and an
//! odd one, so a receiver whose publishers straddle a block's end does not redraw at every
//! message), so in-order lookups cost one table read each and allocate nothing.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use rand_distr::{Distribution, Exp1, Gamma};

use super::draw::{Purpose, Stream};

/// Messages per block of the table.
pub const BLOCK: usize = 1024;

/// Blocks a table may hold: 2^22 of them cover 4.3 billion messages in 32 MiB.
const MAX_BLOCKS: usize = 1 << 22;

/// Tables get a number each, so a thread's cache never mistakes one for another.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The run's arrival times in unit time (Γₖ), tabled by block.
#[derive(Debug)]
pub struct Poisson {
    id: u64,
    seed: u64,
    /// `starts[b]` is Γ at block b's first message; one more entry than blocks.
    starts: Vec<f64>,
}

impl PartialEq for Poisson {
    fn eq(&self, other: &Self) -> bool {
        self.seed == other.seed && self.starts.len() == other.starts.len()
    }
}

impl Poisson {
    /// The arrivals under `seed`, tabled until they pass `until` (in unit time: the messages the
    /// schedule has due by the run's end) or `msgs` messages, whichever comes first.
    ///
    /// # Errors
    /// A run too long for the table (more than about 4 billion messages).
    pub fn new(seed: u64, until: Option<f64>, msgs: Option<u64>) -> Result<Self, String> {
        let blocks_for_msgs = msgs.map(|m| (m as usize).div_ceil(BLOCK) + 1);
        let gamma = Gamma::new(BLOCK as f64, 1.0).map_err(|e| format!("gamma: {e}"))?;
        let lengths = Stream::new(seed, Purpose::Arrivals, 0);
        let mut starts = vec![0.0];
        loop {
            let last = *starts.last().expect("never empty");
            let blocks = starts.len() - 1;
            if until.is_some_and(|u| last > u) || blocks_for_msgs.is_some_and(|b| blocks >= b) {
                break;
            }
            if until.is_none() && blocks_for_msgs.is_none() {
                return Err("Poisson arrivals need a run of a set length or count".into());
            }
            if blocks >= MAX_BLOCKS {
                return Err(format!(
                    "Poisson arrivals are tabled for {} messages at most; shorten the run",
                    MAX_BLOCKS * BLOCK
                ));
            }
            let len: f64 = gamma.sample(&mut lengths.at(blocks as u64));
            starts.push(last + len);
        }
        Ok(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            seed,
            starts,
        })
    }

    /// Γₖ, the unit-time arrival of the run's message `k`; `None` past the table (past the
    /// run's end).
    #[inline]
    pub fn arrival(&self, k: u64) -> Option<f64> {
        let b = (k / BLOCK as u64) as usize;
        let i = (k % BLOCK as u64) as usize;
        let (start, end) = (*self.starts.get(b)?, *self.starts.get(b + 1)?);
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            let slot = &mut c[b % 2];
            if slot.id != self.id || slot.block != b as u64 {
                slot.fill(self, b as u64);
            }
            Some(start + (end - start) * slot.share[i])
        })
    }

    /// The run's messages tabled: every `k` below it has an arrival.
    pub fn len(&self) -> u64 {
        (self.starts.len() as u64 - 1) * BLOCK as u64
    }

    pub fn is_empty(&self) -> bool {
        self.starts.len() < 2
    }

    /// The seed the arrivals were drawn with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The first `k` whose arrival is at or past `unit` (the table's length if none is).
    pub fn first_at_or_after(&self, unit: f64) -> u64 {
        // The block by the table, then the message within it.
        let b = self.starts.partition_point(|s| *s < unit).saturating_sub(1);
        let (mut lo, mut hi) = (b as u64 * BLOCK as u64, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.arrival(mid) {
                Some(a) if a < unit => lo = mid + 1,
                _ => hi = mid,
            }
        }
        lo
    }
}

/// One thread's copy of a block it used: where each of its messages falls between the
/// block's two ends, as a share of its length.
struct Cache {
    id: u64,
    block: u64,
    share: [f64; BLOCK],
}

impl Cache {
    fn fill(&mut self, p: &Poisson, block: u64) {
        let mut g = Stream::new(p.seed, Purpose::Arrivals, 1).at(block);
        // Message 0 of the block is at its start; each gap is an exponential, and the last
        // gap ends the block.
        let mut at = 0.0;
        for s in self.share.iter_mut() {
            *s = at;
            let gap: f64 = Exp1.sample(&mut g);
            at += gap;
        }
        for s in self.share.iter_mut() {
            *s /= at;
        }
        self.id = p.id;
        self.block = block;
    }
}

const EMPTY: Cache = Cache {
    id: 0,
    block: 0,
    share: [0.0; BLOCK],
};

thread_local! {
    static CACHE: RefCell<[Cache; 2]> = const { RefCell::new([EMPTY, EMPTY]) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_rise_and_keep_the_mean_rate() {
        let p = Poisson::new(7, None, Some(200_000)).unwrap();
        let times: Vec<f64> = (0..200_000).map(|k| p.arrival(k).unwrap()).collect();
        assert_eq!(times[0], 0.0);
        assert!(times.windows(2).all(|w| w[0] < w[1]), "arrivals must rise");
        // Γ_k has mean k and standard deviation √k.
        let k = 199_999.0;
        assert!(
            (times[199_999] - k).abs() < 5.0 * f64::sqrt(k),
            "{}",
            times[199_999]
        );
        // Looked up out of order, the same values.
        assert_eq!(p.arrival(5000), Some(times[5000]));
        assert_eq!(p.arrival(3), Some(times[3]));
        let again = Poisson::new(7, None, Some(200_000)).unwrap();
        assert_eq!(again.arrival(123_456), Some(times[123_456]));
        let other = Poisson::new(8, None, Some(200_000)).unwrap();
        assert_ne!(other.arrival(123_456), Some(times[123_456]));
    }

    /// The gaps of a Poisson process are exponential: Kolmogorov-Smirnov against the
    /// exponential CDF (statrs), over 10^6 gaps spanning many blocks.
    #[test]
    fn gaps_are_exponential() {
        use statrs::distribution::{ContinuousCDF, Exp};
        let n = 1_000_000u64;
        let p = Poisson::new(3, None, Some(n + 1)).unwrap();
        let mut gaps: Vec<f64> = (0..n)
            .map(|k| p.arrival(k + 1).unwrap() - p.arrival(k).unwrap())
            .collect();
        gaps.sort_by(f64::total_cmp);
        let exp = Exp::new(1.0).unwrap();
        let d = gaps
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = exp.cdf(x);
                (f - i as f64 / n as f64)
                    .abs()
                    .max(((i + 1) as f64 / n as f64 - f).abs())
            })
            .fold(0.0, f64::max);
        assert!(d < 0.01, "KS distance {d}");
        // Counts per unit of time are Poisson(1): mean 1, variance 1.
        let end = p.arrival(n).unwrap().floor() as usize;
        let mut per = vec![0u32; end];
        (0..n)
            .map(|k| p.arrival(k).unwrap() as usize)
            .filter(|&t| t < end)
            .for_each(|t| per[t] += 1);
        let mean = per.iter().map(|&c| f64::from(c)).sum::<f64>() / end as f64;
        let var = per
            .iter()
            .map(|&c| (f64::from(c) - mean).powi(2))
            .sum::<f64>()
            / end as f64;
        assert!(
            (mean - 1.0).abs() < 0.01 && (var - 1.0).abs() < 0.02,
            "{mean} {var}"
        );
    }

    #[test]
    fn the_table_ends_where_the_run_does() {
        let p = Poisson::new(1, Some(10_000.0), None).unwrap();
        let last = (0..).take_while(|&k| p.arrival(k).is_some()).count() as u64;
        assert!(p.arrival(last - 1).unwrap() > 0.0);
        // The table reaches past the run's end (unit time 10,000) and no further than a block.
        assert!(p.starts.last().unwrap() > &10_000.0);
        assert!(
            last >= 10_000 && last <= 10_000 + 3 * BLOCK as u64,
            "{last}"
        );
        assert!(Poisson::new(1, None, None).is_err());
    }

    /// On a schedule, message k is due where the schedule has Γₖ messages due: a ramp's
    /// intensity is followed, each stage gets its share of the arrivals (within five standard
    /// deviations of its mean count), and a publisher's count by stage agrees with the stage
    /// each of its messages is due in.
    #[test]
    fn a_schedule_with_poisson_arrivals_is_due_where_its_count_reaches_each_arrival() {
        use crate::stats::schedule::RateSchedule;
        let fixed = RateSchedule::parse("ramp:1000:20000:3s", None).unwrap();
        let p = fixed.poisson(4, None, None).unwrap();
        assert_eq!(p.poisson_seed(), Some(4));
        let table = Poisson::new(4, Some(fixed.total()), None).unwrap();
        let mut per_stage = vec![0u64; fixed.stages().len()];
        let mut k = 0u64;
        while let Some(due) = p.due_ns(k as f64) {
            let g = table.arrival(k).unwrap();
            assert_eq!(Some(due), fixed.due_ns(g), "message {k}");
            per_stage[fixed.stages().partition_point(|s| s.start_ns <= due as f64) - 1] += 1;
            k += 1;
        }
        for (st, n) in fixed.stages().iter().zip(&per_stage) {
            let mean = st.msgs();
            assert!(
                (*n as f64 - mean).abs() < 5.0 * mean.sqrt(),
                "{n} against {mean}"
            );
        }
        // Publisher 1 of 3: its count by stage is the stage its messages are due in.
        let share = p.share(1, 3);
        let sent = k / 3;
        let mut want = vec![0u64; per_stage.len()];
        (0..sent).for_each(|seq| want[share.stage_of(seq)] += 1);
        assert_eq!(share.sent_by_stage(sent), want);
        // The fixed spacing is another sequence of due times.
        assert_ne!(p.due_ns(5000.0), fixed.due_ns(5000.0));
    }

    #[test]
    fn a_fixed_rate_run_is_tabled_for_its_length_or_its_count() {
        use crate::stats::schedule::RateSchedule;
        let s = RateSchedule::fixed(1000.0);
        let by_time = s
            .poisson(1, None, Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let last = (0..)
            .take_while(|&k| by_time.due_ns(k as f64).is_some())
            .count() as u64;
        assert!(
            (10_000..10_000 + 3 * BLOCK as u64).contains(&last),
            "{last}"
        );
        let by_count = s.poisson(1, Some(5_000), None).unwrap();
        assert!(by_count.due_ns(4_999.0).is_some());
        // Message k of the same seed is due at the same time however the run is bounded.
        assert_eq!(by_count.due_ns(4_000.0), by_time.due_ns(4_000.0));
        let p = Poisson::new(1, None, Some(5_000)).unwrap();
        let t = p.arrival(3_000).unwrap();
        assert_eq!(p.first_at_or_after(t), 3_000);
        assert_eq!(p.first_at_or_after(t + 1e-9), 3_001);
        assert_eq!(p.first_at_or_after(f64::INFINITY), p.len());
    }
}
