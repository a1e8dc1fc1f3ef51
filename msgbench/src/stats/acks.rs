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

    /// Whether `seq` is in the set.
    pub fn contains(&self, seq: u64) -> bool {
        seq.checked_sub(self.base).is_some_and(|i| {
            self.bits
                .get((i / 64) as usize)
                .is_some_and(|w| w & (1 << (i % 64)) != 0)
        })
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
