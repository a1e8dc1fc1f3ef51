//! `--nemesis random:SEED:EVERY`: faults drawn at random rather than listed, from a seeded
//! generator, so the same seed draws the same list. Every EVERY from EVERY on, until the load
//! ends, one fault aimed at a role, of a kind that heals: a restart after a hold, a pause or a
//! partition, held for a tenth to a half of EVERY so that each is undone before the next comes.
//! Never a kill that is not undone: the cluster must be whole again for the verdict.
//!
//! A run holds at most [`MAX_FAULTS`] faults (a fixed list keeps the options `Copy` and the
//! publishers' readers free of allocation): the nemesis draws no more, and says so when the
//! load would have had room for more.

use std::time::Duration;

use crate::stats::faults::{FaultTarget, MAX_FAULTS};
use crate::stats::recovery::{FaultKind, FaultSpec};
use crate::values::parse_duration;

/// The shortest EVERY: a fault, its hold and what follows need a second to show.
const MIN_EVERY: Duration = Duration::from_secs(1);

const KINDS: [FaultKind; 3] = [FaultKind::Restart, FaultKind::Pause, FaultKind::Partition];
const TARGETS: [FaultTarget; 5] = [
    FaultTarget::Leader,
    FaultTarget::Follower,
    FaultTarget::MetaLeader,
    FaultTarget::Majority,
    FaultTarget::All,
];

/// A nemesis as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nemesis {
    pub seed: u64,
    pub every: Duration,
}

/// The list a nemesis drew for a load, and whether the bound cut it short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawn {
    pub faults: Vec<FaultSpec>,
    pub bounded: bool,
}

impl Nemesis {
    /// `random:SEED:EVERY`.
    ///
    /// # Errors
    /// Why the text is not a nemesis.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut parts = s.splitn(3, ':');
        let (Some("random"), Some(seed), Some(every)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err("expected random:SEED:EVERY, such as random:42:3s".into());
        };
        let seed = seed
            .parse()
            .map_err(|_| format!("the seed '{seed}' is not a whole number"))?;
        let every = parse_duration(every)?;
        if every < MIN_EVERY {
            return Err("EVERY must be at least 1s: a fault and its heal need time to show".into());
        }
        Ok(Self { seed, every })
    }

    /// The faults for a load of `load`: one every EVERY from EVERY, while before its end.
    pub fn draw(&self, load: Duration) -> Drawn {
        let mut rng = SplitMix(self.seed);
        let ms = self.every.as_millis() as u64;
        let (lo, hi) = (ms / 10, ms / 2);
        let mut faults = Vec::new();
        let mut at = self.every;
        while at < load && faults.len() < MAX_FAULTS {
            let kind = KINDS[rng.below(KINDS.len() as u64) as usize];
            let target = TARGETS[rng.below(TARGETS.len() as u64) as usize];
            let hold = Duration::from_millis(lo + rng.below(hi - lo + 1));
            faults.push(FaultSpec {
                kind,
                target: Some(target),
                at,
                hold,
            });
            at += self.every;
        }
        Drawn {
            bounded: at < load,
            faults,
        }
    }
}

/// `faults` as `--fault` would take them, so a drawn run can be repeated by hand.
pub fn as_fault_list(faults: &[FaultSpec]) -> String {
    let one = |f: &FaultSpec| {
        let kind = format!("{:?}", f.kind).to_lowercase();
        let target = f
            .target
            .map_or(String::new(), |t| format!("-{}", t.as_str()));
        format!(
            "{kind}{target}@{}ms:{}ms",
            f.at.as_millis(),
            f.hold.as_millis()
        )
    };
    faults.iter().map(one).collect::<Vec<_>>().join(",")
}

/// SplitMix64: a small generator whose stream is fixed by its seed, on every platform.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0); the slight bias of a modulo does not matter here.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_list_and_another_seed_another() {
        let n = Nemesis::parse("random:42:2s").unwrap();
        let load = Duration::from_secs(11);
        let a = n.draw(load);
        assert_eq!(a, n.draw(load));
        // At 2, 4, 6, 8 and 10 s, each held for 200 ms to 1 s, healing kinds only.
        let at: Vec<u64> = a.faults.iter().map(|f| f.at.as_secs()).collect();
        assert_eq!(at, [2, 4, 6, 8, 10]);
        assert!(!a.bounded);
        for f in &a.faults {
            assert!(f.hold >= Duration::from_millis(200) && f.hold <= Duration::from_secs(1));
            assert_ne!(f.kind, FaultKind::Kill);
            assert!(f.target.is_some());
        }
        let other = Nemesis::parse("random:43:2s").unwrap().draw(load);
        assert_ne!(a.faults, other.faults);
        // What it drew reads back as the same list of faults.
        let text = as_fault_list(&a.faults);
        assert_eq!(crate::options::conn::parse_faults(&text).unwrap(), a.faults);
    }

    #[test]
    fn a_long_load_is_bounded_at_the_most_faults_a_run_holds() {
        let d = Nemesis::parse("random:1:1s")
            .unwrap()
            .draw(Duration::from_secs(60));
        assert_eq!(d.faults.len(), MAX_FAULTS);
        assert!(d.bounded);
    }

    #[test]
    fn bad_nemeses_are_refused() {
        for bad in [
            "random:1",
            "seeded:1:2s",
            "random:x:2s",
            "random:1:500ms",
            "random:1:x",
        ] {
            assert!(Nemesis::parse(bad).is_err(), "{bad}");
        }
    }
}
