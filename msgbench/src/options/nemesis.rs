//! `--nemesis random:SEED:EVERY`: faults drawn at random rather than listed, from a seeded
//! generator, so the same seed draws the same list. Every EVERY from EVERY on, until the load
//! ends, one fault aimed at a role, of a kind that heals: a restart after a hold, a pause or a
//! partition, held for a tenth to a half of EVERY so that each is undone before the next comes.
//! Never a kill that is not undone: the cluster must be whole again for the verdict.
//!
//! `random:SEED:EVERY:disk` may also draw faults of the disk, with weights of their own: a power
//! loss (a fifth of the draws) or a corruption (a tenth), decided by a second generator seeded
//! from the same seed, so that a seed without `:disk` draws the very list it drew before these
//! faults existed, and with `:disk` the same list with some of its faults replaced.
//!
//! A run holds at most [`MAX_FAULTS`] faults (a fixed list keeps the options `Copy` and the
//! publishers' readers free of allocation): the nemesis draws no more, and says so when the
//! load would have had room for more.

use std::time::Duration;

use crate::stats::faults::{FaultTarget, SplitMix, MAX_FAULTS};
use crate::stats::recovery::{Corrupt, CorruptKind, FaultKind, FaultSpec};
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
    /// `:disk`: power losses and corruptions may be drawn too.
    pub disk: bool,
}

/// In a thousand draws with `:disk`: how many become a power loss, and how many a corruption.
const POWER_LOSS_PER_MILLE: u64 = 200;
const CORRUPT_PER_MILLE: u64 = 100;

/// What the second generator's seed differs from the first's by.
const DISK_STREAM: u64 = 0xd15c_fa17;

/// The list a nemesis drew for a load, and whether the bound cut it short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawn {
    pub faults: Vec<FaultSpec>,
    pub bounded: bool,
}

impl Nemesis {
    /// `random:SEED:EVERY[:disk]`.
    ///
    /// # Errors
    /// Why the text is not a nemesis.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut parts = s.splitn(4, ':');
        let (Some("random"), Some(seed), Some(every)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err("expected random:SEED:EVERY[:disk], such as random:42:3s".into());
        };
        let disk = match parts.next() {
            None => false,
            Some("disk") => true,
            Some(other) => {
                return Err(format!(
                    "unknown '{other}' after EVERY (only disk, which draws power losses and \
                     corruptions too)"
                ))
            }
        };
        let seed = seed
            .parse()
            .map_err(|_| format!("the seed '{seed}' is not a whole number"))?;
        let every = parse_duration(every)?;
        if every < MIN_EVERY {
            return Err("EVERY must be at least 1s: a fault and its heal need time to show".into());
        }
        Ok(Self { seed, every, disk })
    }

    /// The faults for a load of `load`: one every EVERY from EVERY, while before its end.
    pub fn draw(&self, load: Duration) -> Drawn {
        let mut rng = SplitMix(self.seed);
        let mut disk = SplitMix(self.seed ^ DISK_STREAM);
        let ms = self.every.as_millis() as u64;
        let (lo, hi) = (ms / 10, ms / 2);
        let mut faults = Vec::new();
        let mut at = self.every;
        while at < load && faults.len() < MAX_FAULTS {
            let kind = KINDS[rng.below(KINDS.len() as u64) as usize];
            let target = TARGETS[rng.below(TARGETS.len() as u64) as usize];
            let hold = Duration::from_millis(lo + rng.below(hi - lo + 1));
            let mut f = FaultSpec {
                kind,
                target: Some(target),
                at,
                hold,
                corrupt: None,
            };
            if self.disk {
                let draw = disk.below(1000);
                if draw < POWER_LOSS_PER_MILLE {
                    f.kind = FaultKind::PowerLoss;
                } else if draw < POWER_LOSS_PER_MILLE + CORRUPT_PER_MILLE {
                    let how = [CorruptKind::Bitflip, CorruptKind::Truncate][disk.below(2) as usize];
                    f.kind = FaultKind::Corrupt;
                    f.hold = Duration::ZERO;
                    f.corrupt = Some(Corrupt {
                        kind: how,
                        seed: disk.below(1_000_000),
                    });
                }
            }
            faults.push(f);
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
        let kind = f.kind.as_str().to_string();
        let target = f
            .target
            .map_or(String::new(), |t| format!("-{}", t.as_str()));
        match f.corrupt {
            Some(c) => format!(
                "{kind}{target}@{}ms:{}:{}",
                f.at.as_millis(),
                c.kind.as_str(),
                c.seed
            ),
            None => format!(
                "{kind}{target}@{}ms:{}ms",
                f.at.as_millis(),
                f.hold.as_millis()
            ),
        }
    };
    faults.iter().map(one).collect::<Vec<_>>().join(",")
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
    fn with_disk_some_faults_become_power_losses_or_corruptions_and_the_rest_stay_as_drawn() {
        let load = Duration::from_secs(60);
        let plain = Nemesis::parse("random:7:5s").unwrap().draw(load);
        let disk = Nemesis::parse("random:7:5s:disk").unwrap().draw(load);
        assert!(!plain.faults.iter().any(|f| f.kind.on_disk()));
        let mut replaced = 0;
        for (p, d) in plain.faults.iter().zip(&disk.faults) {
            assert_eq!((p.at, p.target), (d.at, d.target));
            if d.kind.on_disk() {
                replaced += 1;
            } else {
                assert_eq!(p, d);
            }
        }
        assert_eq!(plain.faults.len(), disk.faults.len());
        let text = as_fault_list(&disk.faults);
        assert_eq!(
            crate::options::conn::parse_faults(&text).unwrap(),
            disk.faults
        );
        // Over many seeds, both kinds are drawn, and most faults are left as they were.
        let all: Vec<FaultSpec> = (0..50)
            .flat_map(|s| {
                Nemesis {
                    seed: s,
                    every: Duration::from_secs(5),
                    disk: true,
                }
                .draw(load)
                .faults
            })
            .collect();
        let count = |k| all.iter().filter(|f| f.kind == k).count();
        assert!(count(FaultKind::PowerLoss) > 0 && count(FaultKind::Corrupt) > 0);
        assert!(count(FaultKind::PowerLoss) + count(FaultKind::Corrupt) < all.len() / 2);
        let _ = replaced;
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
            "random:1:2s:tape",
        ] {
            assert!(Nemesis::parse(bad).is_err(), "{bad}");
        }
    }
}
