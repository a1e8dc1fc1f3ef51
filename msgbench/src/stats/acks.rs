//! The stream sequences a JetStream publisher was acknowledged with: one bit per sequence from
//! the first one the run could be given, so duplicates are caught as they arrive and gaps
//! (messages stored without an acknowledgement reaching us) can be listed at the end.

/// Acknowledged stream sequences at and above `base`.
#[derive(Debug, Clone, Default)]
pub struct AckSet {
    base: u64,
    bits: Vec<u64>,
    count: u64,
}

/// How many gap sequences a report lists by number; beyond that only the count.
pub const GAPS_LISTED: usize = 20;

/// One sequence's term in a set's fingerprint: a 64-bit mix (SplitMix64's finaliser), so that
/// sets of different members almost never sum to the same value.
fn mix(seq: u64) -> u64 {
    let mut z = seq.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A fingerprint as a result writes it: 16 hex digits.
pub fn hex(fingerprint: u64) -> String {
    format!("{fingerprint:016x}")
}

/// The sum of fingerprints as results wrote them; None when one is missing or unreadable.
pub fn sum_hex<'a>(parts: impl IntoIterator<Item = Option<&'a str>>) -> Option<u64> {
    parts.into_iter().try_fold(0u64, |acc, hex| {
        Some(acc.wrapping_add(u64::from_str_radix(hex?, 16).ok()?))
    })
}

/// The fingerprint of every sequence from `first` through `last`, each once: what the agents'
/// fingerprints add up to when, between them, they were acknowledged every stored sequence.
pub fn range_fingerprint(first: u64, last: u64) -> u64 {
    (first..=last).fold(0u64, |acc, s| acc.wrapping_add(mix(s)))
}

impl AckSet {
    /// An empty set for a stream whose next sequence is `base`.
    pub fn new(base: u64) -> Self {
        Self {
            base,
            bits: Vec::new(),
            count: 0,
        }
    }

    /// Adds `seq`; false when it was already there (a duplicate acknowledgement) or below the
    /// base (a sequence this run cannot have been given).
    pub fn insert(&mut self, seq: u64) -> bool {
        let Some(i) = seq.checked_sub(self.base) else {
            return false;
        };
        let (word, bit) = ((i / 64) as usize, i % 64);
        if word >= self.bits.len() {
            // Doubling keeps growth to a reallocation per doubling of the run, never per ack.
            self.bits.resize((word + 1).max(self.bits.len() * 2), 0);
        }
        let mask = 1u64 << bit;
        if self.bits[word] & mask != 0 {
            return false;
        }
        self.bits[word] |= mask;
        self.count += 1;
        true
    }

    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Merges another client's set; returns how many of its sequences were already here.
    pub fn merge(&mut self, other: &AckSet) -> u64 {
        let mut dups = 0;
        for (w, &bits) in other.bits.iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                let bit = u64::from(b.trailing_zeros());
                b &= b - 1;
                if !self.insert(other.base + w as u64 * 64 + bit) {
                    dups += 1;
                }
            }
        }
        dups
    }

    /// The sum of the members' mixed values, wrapping: sets held apart (one per agent) add up
    /// to a whole one's fingerprint, so a run on agents checks that their acknowledgements,
    /// taken together, are exactly the stored sequences without sending the sets themselves.
    /// Two different multisets agree by chance with a probability near 2^-64.
    pub fn fingerprint(&self) -> u64 {
        let mut sum = 0u64;
        for (w, &bits) in self.bits.iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                let seq = self.base + w as u64 * 64 + u64::from(b.trailing_zeros());
                b &= b - 1;
                sum = sum.wrapping_add(mix(seq));
            }
        }
        sum
    }

    /// Whether `seq` is in the set.
    pub fn contains(&self, seq: u64) -> bool {
        seq.checked_sub(self.base).is_some_and(|i| {
            self.bits
                .get((i / 64) as usize)
                .is_some_and(|w| w & (1 << (i % 64)) != 0)
        })
    }

    /// Members for which `pred` holds: the number, and the first `listed` of them.
    pub fn select(&self, listed: usize, mut pred: impl FnMut(u64) -> bool) -> (u64, Vec<u64>) {
        let (mut n, mut first) = (0, Vec::new());
        for (w, &bits) in self.bits.iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                let seq = self.base + w as u64 * 64 + u64::from(b.trailing_zeros());
                b &= b - 1;
                if pred(seq) {
                    n += 1;
                    if first.len() < listed {
                        first.push(seq);
                    }
                }
            }
        }
        (n, first)
    }

    /// Sequences in this set that `other` lacks: the number, and the first [`GAPS_LISTED`].
    pub fn missing_from(&self, other: &AckSet) -> (u64, Vec<u64>) {
        let (mut n, mut listed) = (0, Vec::new());
        for (w, &bits) in self.bits.iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                let seq = self.base + w as u64 * 64 + u64::from(b.trailing_zeros());
                b &= b - 1;
                if !other.contains(seq) {
                    n += 1;
                    if listed.len() < GAPS_LISTED {
                        listed.push(seq);
                    }
                }
            }
        }
        (n, listed)
    }

    /// Sequences from the base through `last` that are not in the set: the number, and the
    /// first [`GAPS_LISTED`] of them.
    pub fn gaps_through(&self, last: u64) -> (u64, Vec<u64>) {
        let (mut n, mut listed) = (0, Vec::new());
        for seq in self.base..=last {
            let i = seq - self.base;
            let set = self
                .bits
                .get((i / 64) as usize)
                .is_some_and(|w| w & (1 << (i % 64)) != 0);
            if !set {
                n += 1;
                if listed.len() < GAPS_LISTED {
                    listed.push(seq);
                }
            }
        }
        (n, listed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_and_gaps_are_found_exactly() {
        let mut a = AckSet::new(100);
        assert!(a.insert(100) && a.insert(101) && a.insert(300));
        assert!(!a.insert(101), "a second ack for 101");
        assert!(!a.insert(99), "below the base");
        let mut b = AckSet::new(100);
        assert!(b.insert(102) && b.insert(300));
        assert_eq!(a.merge(&b), 1, "300 was acknowledged to both");
        assert_eq!(a.len(), 4);
        let (n, listed) = a.gaps_through(105);
        assert_eq!((n, listed), (3, vec![103, 104, 105]));
        assert_eq!(a.gaps_through(102).0, 0);
    }

    #[test]
    fn fingerprints_of_sets_held_apart_add_up_to_the_whole_range_only_when_they_cover_it() {
        // Two agents acknowledged alternate sequences of 1000..=1999.
        let (mut a, mut b) = (AckSet::new(1000), AckSet::new(1000));
        for s in 1000..2000 {
            if s % 2 == 0 {
                a.insert(s)
            } else {
                b.insert(s)
            };
        }
        let whole = range_fingerprint(1000, 1999);
        assert_eq!(a.fingerprint().wrapping_add(b.fingerprint()), whole);
        // One sequence acknowledged to both and another to neither: same count, other sum.
        let mut c = AckSet::new(1000);
        for s in (1000..2000).filter(|s| s % 2 == 1 && *s != 1999) {
            c.insert(s);
        }
        c.insert(1000);
        assert_eq!(a.len() + c.len(), 1000);
        assert_ne!(a.fingerprint().wrapping_add(c.fingerprint()), whole);
        assert_eq!(AckSet::new(5).fingerprint(), 0);
        assert_eq!(range_fingerprint(7, 6), 0, "an empty range");
    }

    #[test]
    fn what_one_set_has_and_another_lacks_is_listed_in_order() {
        let mut owed = AckSet::new(10);
        let mut got = AckSet::new(5);
        for s in 10..200 {
            owed.insert(s);
            if s % 50 != 0 {
                got.insert(s);
            }
        }
        got.insert(7);
        assert!(got.contains(7) && !got.contains(50) && !got.contains(4));
        assert_eq!(owed.missing_from(&got), (3, vec![50, 100, 150]));
        assert_eq!(got.missing_from(&owed), (1, vec![7]));
    }
}
