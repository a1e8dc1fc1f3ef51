//! Delivery accounting, by the rules of msgbench's docs/scenarios.md ("Delivery accounting"):
//! each subscriber tracks each publisher's sequence numbers in a sliding window of 8,192;
//! a number seen twice is a duplicate, a number arriving after a higher one is reordered, and
//! lost = what each publisher sent − the distinct numbers each subscriber saw of it.
//! Without stamps only totals are compared (`count`), and duplicates and reordering are
//! unknown (`null`), not a reassuring 0.
//!
//! The same pieces, by the same names, are in every driver: [`SeqTracker`] (one publisher at
//! one subscriber), [`DeliveryLog`] (one subscriber) and [`summarize`] (the result's delivery
//! section); each records with `record`. `spec/vectors/delivery` holds the sequences they must
//! all count alike.

use crate::protocol::{Accounting, Delivery};
use crate::stamp::Stamp;

/// Sequence numbers remembered below the highest one seen.
pub const WINDOW: u64 = 8192;
const WORDS: usize = (WINDOW / 64) as usize;

/// What one subscriber saw of one publisher. Fixed memory whatever the message count.
#[derive(Debug, Clone)]
pub struct SeqTracker {
    /// One past the highest sequence seen.
    next: u64,
    /// Bit `s % WINDOW` is set when sequence `s` (within the window below `next`) was seen.
    seen: Box<[u64; WORDS]>,
    pub unique: u64,
    pub duplicated: u64,
    pub reordered: u64,
}

impl Default for SeqTracker {
    fn default() -> Self {
        Self {
            next: 0,
            seen: Box::new([0; WORDS]),
            unique: 0,
            duplicated: 0,
            reordered: 0,
        }
    }
}

impl SeqTracker {
    #[inline]
    fn slot(seq: u64) -> (usize, u64) {
        let s = seq % WINDOW;
        ((s / 64) as usize, 1 << (s % 64))
    }

    /// Records one arrival of `seq`.
    #[inline]
    pub fn record(&mut self, seq: u64) {
        if seq >= self.next {
            // The slots between the old high mark and `seq` now stand for newer sequences not
            // seen yet: clear them (all of them when the jump is a whole window or more).
            if seq - self.next >= WINDOW {
                self.seen.fill(0);
            } else {
                for s in self.next..seq {
                    let (w, m) = Self::slot(s);
                    self.seen[w] &= !m;
                }
            }
            let (w, m) = Self::slot(seq);
            self.seen[w] |= m;
            self.next = seq + 1;
            self.unique += 1;
        } else if self.next - seq > WINDOW {
            // Older than the window: NATS keeps order per connection, so this is not expected.
            // It counts as reordered, and the duplicate count becomes a lower bound.
            self.reordered += 1;
            self.unique += 1;
        } else {
            let (w, m) = Self::slot(seq);
            if self.seen[w] & m != 0 {
                self.duplicated += 1;
            } else {
                self.seen[w] |= m;
                self.unique += 1;
                self.reordered += 1;
            }
        }
    }
}

/// Everything one subscriber counts.
#[derive(Debug, Clone)]
pub struct DeliveryLog {
    /// Indexed by publisher.
    trackers: Vec<SeqTracker>,
    /// Deliveries, duplicates included.
    pub received: u64,
    pub bytes: u64,
    /// Messages whose stamp names no publisher of this run (or that carry none in a stamped
    /// run): someone else's traffic on the subject.
    pub foreign: u64,
    stamped: bool,
}

impl DeliveryLog {
    pub fn new(publishers: usize, stamped: bool) -> Self {
        Self {
            trackers: if stamped {
                vec![SeqTracker::default(); publishers]
            } else {
                Vec::new()
            },
            received: 0,
            bytes: 0,
            foreign: 0,
            stamped,
        }
    }

    /// Records one delivered payload.
    #[inline]
    pub fn record(&mut self, payload: &[u8]) {
        self.received += 1;
        self.bytes += payload.len() as u64;
        if !self.stamped {
            return;
        }
        match crate::stamp::read(payload) {
            Some(Stamp { seq, publisher }) => match self.trackers.get_mut(publisher as usize) {
                Some(t) => t.record(seq),
                None => self.foreign += 1,
            },
            None => self.foreign += 1,
        }
    }

    /// Records a delivery already identified (the latency subscriber reads the stamp itself).
    #[inline]
    pub fn record_seq(&mut self, publisher: usize, seq: u64, len: usize) {
        self.received += 1;
        self.bytes += len as u64;
        match self.trackers.get_mut(publisher) {
            Some(t) => t.record(seq),
            None => self.foreign += 1,
        }
    }

    /// Records a delivery that carries no stamp (unstamped runs).
    #[inline]
    pub fn record_unstamped(&mut self, len: usize) {
        self.received += 1;
        self.bytes += len as u64;
    }

    /// The tracker of publisher `publisher`, if this log tracks it.
    pub fn tracker(&self, publisher: usize) -> Option<&SeqTracker> {
        self.trackers.get(publisher)
    }
}

/// The delivery section: `sent[p]` is what publisher `p` sent, `subs` what each subscriber saw.
pub fn summarize(sent: &[u64], subs: &[&DeliveryLog], stamped: bool) -> Delivery {
    let total_sent: u64 = sent.iter().sum();
    let received: u64 = subs.iter().map(|s| s.received).sum();
    if subs.is_empty() {
        return Delivery {
            sent: total_sent,
            received: 0,
            lost: 0,
            duplicated: None,
            reordered: None,
            accounting: Accounting::None,
        };
    }
    if !stamped {
        let lost = subs
            .iter()
            .map(|s| total_sent.saturating_sub(s.received))
            .sum();
        return Delivery {
            sent: total_sent,
            received,
            lost,
            duplicated: None,
            reordered: None,
            accounting: Accounting::Count,
        };
    }
    let (mut lost, mut dup, mut reo) = (0, 0, 0);
    for s in subs {
        for (p, &n) in sent.iter().enumerate() {
            let t = &s.trackers[p];
            lost += n.saturating_sub(t.unique);
            dup += t.duplicated;
            reo += t.reordered;
        }
    }
    Delivery {
        sent: total_sent,
        received,
        lost,
        duplicated: Some(dup),
        reordered: Some(reo),
        accounting: Accounting::Exact,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_is_clean() {
        let mut t = SeqTracker::default();
        for s in 0..100_000 {
            t.record(s);
        }
        assert_eq!((t.unique, t.duplicated, t.reordered), (100_000, 0, 0));
    }

    #[test]
    fn duplicates_reorders_and_gaps() {
        let mut t = SeqTracker::default();
        for s in [0, 1, 3, 2, 3, 5, 5, 4] {
            t.record(s);
        }
        assert_eq!(t.unique, 6);
        assert_eq!(t.duplicated, 2);
        assert_eq!(t.reordered, 2);
    }

    #[test]
    fn window_slides() {
        let mut t = SeqTracker::default();
        t.record(0);
        t.record(WINDOW * 3);
        // Older than the window: reordered, not a duplicate.
        t.record(0);
        assert_eq!((t.unique, t.duplicated, t.reordered), (3, 0, 1));
        // A slot reused by a newer sequence is not mistaken for a duplicate.
        let mut t = SeqTracker::default();
        t.record(5);
        t.record(5 + WINDOW);
        t.record(6 + WINDOW);
        assert_eq!((t.unique, t.duplicated), (3, 0));
    }

    #[test]
    fn summary_exact_and_count() {
        let mut a = DeliveryLog::new(2, true);
        let mut b = DeliveryLog::new(2, true);
        for seq in 0..10u64 {
            for p in 0..2u64 {
                let mut payload = [0u8; 16];
                payload[..8].copy_from_slice(&seq.to_le_bytes());
                payload[8..].copy_from_slice(&p.to_le_bytes());
                a.record(&payload);
                if seq != 4 {
                    b.record(&payload);
                }
            }
        }
        a.record(&[0u8; 16]);
        let d = summarize(&[10, 10], &[&a, &b], true);
        assert_eq!((d.sent, d.received, d.lost), (20, 39, 2));
        assert_eq!((d.duplicated, d.reordered), (Some(1), Some(0)));
        assert_eq!(d.accounting, Accounting::Exact);

        let mut c = DeliveryLog::new(1, false);
        for _ in 0..7 {
            c.record(b"abc");
        }
        let d = summarize(&[10], &[&c], false);
        assert_eq!((d.received, d.lost, d.duplicated), (7, 3, None));
        assert_eq!(d.accounting, Accounting::Count);
        assert_eq!(summarize(&[5], &[], true).accounting, Accounting::None);
    }
}
