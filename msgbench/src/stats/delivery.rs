//! Delivery accounting: from the stamps a subscriber saw, exactly how many messages of each
//! publisher arrived, arrived twice, or arrived out of order; and from what publishers sent,
//! how many were lost, in total and by each subscriber.
//!
//! Memory is fixed per (subscriber, publisher) pair, whatever the message count: a sliding
//! bitmap remembers the last [`WINDOW`] sequence numbers below the highest one seen, which is
//! enough to tell a duplicate from a late arrival. NATS keeps order per connection, so anything
//! older than the window is not expected; if it happens it is counted as reordered and in
//! `beyond_window`, and the duplicate count is then a lower bound.

use serde::Serialize;

use crate::wire::stamp::Stamp;

/// Sequence numbers remembered below the highest one seen.
pub const WINDOW: u64 = 8192;
const WORDS: usize = (WINDOW / 64) as usize;

/// What one subscriber saw of one publisher.
#[derive(Debug, Clone)]
pub struct SeqTracker {
    /// One past the highest sequence seen.
    next: u64,
    /// The lowest sequence seen; `u64::MAX` before any.
    first: u64,
    /// Bit `s % WINDOW` is set when sequence `s` (within the window below `next`) was seen.
    seen: Box<[u64; WORDS]>,
    pub unique: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub beyond_window: u64,
}

impl Default for SeqTracker {
    fn default() -> Self {
        Self {
            next: 0,
            first: u64::MAX,
            seen: Box::new([0; WORDS]),
            unique: 0,
            duplicated: 0,
            reordered: 0,
            beyond_window: 0,
        }
    }
}

impl SeqTracker {
    #[inline]
    fn bit(seq: u64) -> (usize, u64) {
        let slot = seq % WINDOW;
        ((slot / 64) as usize, 1u64 << (slot % 64))
    }

    /// Records one arrival of `seq`.
    #[inline]
    pub fn record(&mut self, seq: u64) {
        self.first = self.first.min(seq);
        if seq >= self.next {
            // Slots between the old high mark and `seq` now stand for newer sequences that have
            // not been seen: clear them. A jump of a whole window clears everything.
            if seq - self.next >= WINDOW {
                self.seen.fill(0);
            } else {
                for s in self.next..seq {
                    let (w, m) = Self::bit(s);
                    self.seen[w] &= !m;
                }
            }
            let (w, m) = Self::bit(seq);
            self.seen[w] |= m;
            self.next = seq + 1;
            self.unique += 1;
        } else if self.next - seq > WINDOW {
            self.beyond_window += 1;
            self.reordered += 1;
            self.unique += 1;
        } else {
            let (w, m) = Self::bit(seq);
            if self.seen[w] & m != 0 {
                self.duplicated += 1;
            } else {
                self.seen[w] |= m;
                self.unique += 1;
                self.reordered += 1;
            }
        }
    }

    /// One past the highest sequence seen: every sequence below it was sent.
    pub fn high_mark(&self) -> u64 {
        self.next
    }

    /// The lowest sequence seen: where a subscriber that may have joined a publisher's stream
    /// late starts counting it (0 before any).
    pub fn first(&self) -> u64 {
        self.first.min(self.next)
    }
}

/// Identifies a publisher across runs: the run tag and its id within the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PublisherKey {
    pub run_tag: u16,
    pub publisher: u32,
}

/// Everything one subscriber counts.
#[derive(Debug, Clone, Default)]
pub struct DeliveryLog {
    /// Trackers per publisher. Few publishers per run, so a vector with a remembered last hit
    /// beats a hash map on the per-message path.
    trackers: Vec<(PublisherKey, SeqTracker)>,
    last: usize,
    /// Messages without a stamp (too small, a fixed `--payload`, or someone else's).
    pub unstamped: u64,
    /// Stamped messages from a run other than the one this subscriber belongs to.
    pub foreign: u64,
    /// When set, only stamps with this run tag are tracked.
    pub run_tag: Option<u16>,
}

impl DeliveryLog {
    pub fn new(run_tag: Option<u16>) -> Self {
        Self {
            run_tag,
            ..Self::default()
        }
    }

    /// Records one message's stamp (or its absence).
    #[inline]
    pub fn record(&mut self, stamp: Option<Stamp>) {
        let Some(s) = stamp else {
            self.unstamped += 1;
            return;
        };
        if self.run_tag.is_some_and(|t| t != s.run_tag) {
            self.foreign += 1;
            return;
        }
        let key = PublisherKey {
            run_tag: s.run_tag,
            publisher: s.publisher,
        };
        if self.trackers.get(self.last).map(|(k, _)| *k) != Some(key) {
            self.last = match self.trackers.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    self.trackers.push((key, SeqTracker::default()));
                    self.trackers.len() - 1
                }
            };
        }
        self.trackers[self.last].1.record(s.seq);
    }

    /// The tracker for a publisher, if it was heard from.
    pub fn tracker(&self, key: PublisherKey) -> Option<&SeqTracker> {
        self.trackers
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, t)| t)
    }

    pub fn trackers(&self) -> impl Iterator<Item = &(PublisherKey, SeqTracker)> {
        self.trackers.iter()
    }
}

/// The counts of a delivery section that a run could not take, written as null: a figure
/// that was not measured is null, never 0. A publisher with no subscriber of its own cannot
/// count arrivals or loss; a responder counts what arrived but not what was sent; a run whose
/// load is not messages (`conns`, the object store's own section) counts none of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unmeasured {
    /// `sent`.
    pub sent: bool,
    /// `expected`.
    pub expected: bool,
    /// `received`.
    pub received: bool,
    /// `lost`.
    pub lost: bool,
}

impl Unmeasured {
    /// A publisher alone: what arrived, and so what was lost, is not known here.
    pub const ARRIVALS: Unmeasured = Unmeasured {
        sent: false,
        expected: true,
        received: true,
        lost: true,
    };
    /// No message was counted.
    pub const ALL: Unmeasured = Unmeasured {
        sent: true,
        expected: true,
        received: true,
        lost: true,
    };
    /// A responder: it counts what arrived, not what its requesters sent.
    pub const SENT_AND_LOSS: Unmeasured = Unmeasured {
        sent: true,
        expected: true,
        received: false,
        lost: true,
    };
}

/// The delivery section of a result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Messages published (by this run's publishers; for `sub`, as far as stamps tell).
    pub sent: u64,
    /// Deliveries expected: each subscriber expects every message.
    pub expected: u64,
    /// Deliveries that arrived, duplicates included.
    pub received: u64,
    pub lost: u64,
    /// `null` when messages carry no stamp and duplicates cannot be told apart.
    pub duplicated: Option<u64>,
    pub reordered: Option<u64>,
    /// Received messages without a stamp.
    pub unstamped: u64,
    /// `exact` when every message was stamped, `count` when only totals could be compared.
    pub accounting: &'static str,
    /// Per publisher, summed over subscribers (empty without stamps).
    pub publishers: Vec<PublisherDelivery>,
    /// With JetStream consumers: the first stream sequences never delivered, and the first
    /// delivered more than once.
    pub missing_seqs: Option<Vec<u64>>,
    pub duplicate_seqs: Option<Vec<u64>>,
    /// The counts this run could not take: written as null.
    pub unmeasured: Unmeasured,
}

/// The four counts of a delivery section as the run took them: None where it could not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub sent: Option<u64>,
    pub expected: Option<u64>,
    pub received: Option<u64>,
    pub lost: Option<u64>,
}

impl Delivery {
    /// The counts as measured, each None where [`Delivery::unmeasured`] says the run could not
    /// take it: what the result file writes, and what every output shows.
    pub fn counts(&self) -> Counts {
        let count = |skip: bool, n: u64| (!skip).then_some(n);
        let u = self.unmeasured;
        Counts {
            sent: count(u.sent, self.sent),
            expected: count(u.expected, self.expected),
            received: count(u.received, self.received),
            lost: count(u.lost, self.lost),
        }
    }
}

impl Serialize for Delivery {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let c = self.counts();
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("sent", &c.sent)?;
        m.serialize_entry("expected", &c.expected)?;
        m.serialize_entry("received", &c.received)?;
        m.serialize_entry("lost", &c.lost)?;
        m.serialize_entry("duplicated", &self.duplicated)?;
        m.serialize_entry("reordered", &self.reordered)?;
        m.serialize_entry("unstamped", &self.unstamped)?;
        m.serialize_entry("accounting", self.accounting)?;
        m.serialize_entry("publishers", &self.publishers)?;
        if let Some(v) = &self.missing_seqs {
            m.serialize_entry("missing_seqs", v)?;
        }
        if let Some(v) = &self.duplicate_seqs {
            m.serialize_entry("duplicate_seqs", v)?;
        }
        m.end()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PublisherDelivery {
    pub id: u32,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub reordered: u64,
}

/// How many messages each subscriber should have had.
#[derive(Debug, Clone)]
pub enum Expectation<'a> {
    /// This run's publishers sent these counts (index = publisher id), under this run tag.
    Published { run_tag: u16, sent: &'a [u64] },
    /// Publishers are elsewhere, started before this run or after it: each subscriber expected
    /// this many messages, or (listening for a time) no count. Each publisher's sequences are
    /// counted from the first any subscriber saw: those before it may have been sent before
    /// the subscribers were there, and are not owed to them.
    PerSubscriber(Option<u64>),
}

/// Combines subscriber logs with what was sent into the result's delivery section.
///
/// `received` holds each subscriber's total message count (stamped or not) next to its log.
pub fn summarize(subs: &[(u64, &DeliveryLog)], expect: &Expectation<'_>) -> Delivery {
    let received: u64 = subs.iter().map(|(n, _)| *n).sum();
    let unstamped: u64 = subs.iter().map(|(_, l)| l.unstamped).sum();
    let stamped = all_stamped(subs);
    // The total loss is the subscribers' own losses added up, so the two never disagree.
    let lost: u64 = missed_by_subscriber(subs, expect).iter().sum();
    let dup: u64 = subs
        .iter()
        .flat_map(|(_, l)| l.trackers())
        .map(|(_, t)| t.duplicated)
        .sum();
    let reo: u64 = subs
        .iter()
        .flat_map(|(_, l)| l.trackers())
        .map(|(_, t)| t.reordered)
        .sum();
    let n_subs = subs.len() as u64;
    match expect {
        Expectation::Published { run_tag, sent } => {
            let total_sent: u64 = sent.iter().sum();
            let expected = total_sent * n_subs;
            if stamped {
                let publishers: Vec<PublisherDelivery> = sent
                    .iter()
                    .enumerate()
                    .map(|(id, &sent)| {
                        let key = PublisherKey {
                            run_tag: *run_tag,
                            publisher: id as u32,
                        };
                        let mut p = PublisherDelivery {
                            id: id as u32,
                            sent,
                            received: 0,
                            lost: 0,
                            duplicated: 0,
                            reordered: 0,
                        };
                        for (_, log) in subs {
                            let t = log.tracker(key);
                            let unique = t.map_or(0, |t| t.unique);
                            p.received += unique + t.map_or(0, |t| t.duplicated);
                            p.lost += sent.saturating_sub(unique);
                            p.duplicated += t.map_or(0, |t| t.duplicated);
                            p.reordered += t.map_or(0, |t| t.reordered);
                        }
                        p
                    })
                    .collect();
                Delivery {
                    sent: total_sent,
                    expected,
                    received,
                    lost,
                    duplicated: Some(dup),
                    reordered: Some(reo),
                    unstamped,
                    accounting: "exact",
                    publishers,
                    missing_seqs: None,
                    duplicate_seqs: None,
                    unmeasured: Unmeasured::default(),
                }
            } else {
                count_only(total_sent, expected, received, lost, unstamped)
            }
        }
        Expectation::PerSubscriber(each) => {
            let expected = each.map_or(0, |e| e * n_subs);
            // Stamps still bound what was sent: every sequence of a publisher from the first
            // any subscriber saw to the highest was published. Losses beyond the highest
            // sequence seen are only visible in totals.
            let firsts = first_seen(subs);
            let sent = subs
                .iter()
                .flat_map(|(_, l)| l.trackers())
                .fold(std::collections::BTreeMap::new(), |mut m, (k, t)| {
                    let high = m.entry(*k).or_insert(0u64);
                    *high = (*high).max(t.high_mark());
                    m
                })
                .iter()
                .map(|(k, high)| high - firsts.get(k).copied().unwrap_or(0))
                .sum::<u64>();
            let mut d = if stamped {
                Delivery {
                    sent,
                    expected,
                    received,
                    lost,
                    duplicated: Some(dup),
                    reordered: Some(reo),
                    unstamped,
                    accounting: "exact",
                    publishers: Vec::new(),
                    missing_seqs: None,
                    duplicate_seqs: None,
                    unmeasured: Unmeasured::default(),
                }
            } else {
                // Without every stamp, what was sent is not known; without an expected count
                // either, neither is what was lost.
                let mut d = count_only(sent, expected, received, lost, unstamped);
                d.unmeasured.sent = true;
                d.unmeasured.lost = each.is_none();
                d
            };
            d.unmeasured.expected = each.is_none();
            // No stamp arrived at all (nothing did, or a subject nobody publishes to): nothing
            // tells what was sent, nor, owed no count, what was lost.
            if !subs.iter().any(|(_, l)| l.trackers().next().is_some()) {
                d.unmeasured.sent = true;
                d.unmeasured.lost |= each.is_none();
            }
            d
        }
    }
}

/// The first sequence any subscriber saw of each publisher: where the run's view of a stream
/// that may have started before it begins. Every subscriber is owed what followed, so one
/// that missed the head the others saw has lost it; what came before the first any of them
/// saw cannot be told from loss (a subscriber started before its publisher that lost the
/// stream's first messages), and is not counted.
fn first_seen(subs: &[(u64, &DeliveryLog)]) -> std::collections::BTreeMap<PublisherKey, u64> {
    let mut firsts = std::collections::BTreeMap::new();
    for (k, t) in subs.iter().flat_map(|(_, l)| l.trackers()) {
        let f = firsts.entry(*k).or_insert(u64::MAX);
        *f = (*f).min(t.first());
    }
    firsts
}

/// Whether every message every subscriber received carried a stamp of this run: only then is
/// loss counted message by message; otherwise from totals.
fn all_stamped(subs: &[(u64, &DeliveryLog)]) -> bool {
    subs.iter().all(|(_, l)| l.unstamped == 0 && l.foreign == 0)
}

/// How many messages each subscriber missed, in the order of `subs`, by the accounting
/// [`summarize`] uses (its `lost` is their sum): with stamps, each publisher's messages that
/// never arrived; without them, the shortfall of the subscriber's count against what it
/// expected.
pub fn missed_by_subscriber(subs: &[(u64, &DeliveryLog)], expect: &Expectation<'_>) -> Vec<u64> {
    let stamped = all_stamped(subs);
    let firsts = first_seen(subs);
    subs.iter()
        .map(|(received, log)| match expect {
            Expectation::Published { run_tag, sent } if stamped => sent
                .iter()
                .enumerate()
                .map(|(id, &sent)| {
                    let key = PublisherKey {
                        run_tag: *run_tag,
                        publisher: id as u32,
                    };
                    sent.saturating_sub(log.tracker(key).map_or(0, |t| t.unique))
                })
                .sum(),
            Expectation::Published { sent, .. } => {
                sent.iter().sum::<u64>().saturating_sub(*received)
            }
            Expectation::PerSubscriber(each) if stamped => {
                // Every sequence between the first and the highest seen of a publisher was
                // sent: a gap is certain loss even when the expected count was met.
                let unique: u64 = log.trackers().map(|(_, t)| t.unique).sum();
                let gaps: u64 = log
                    .trackers()
                    .map(|(k, t)| {
                        let first = firsts.get(k).copied().unwrap_or(0);
                        (t.high_mark().saturating_sub(first)).saturating_sub(t.unique)
                    })
                    .sum();
                each.unwrap_or(0).saturating_sub(unique).max(gaps)
            }
            // Without stamps and without an expected count, nothing tells a loss: 0 here, and
            // `lost` unmeasured in the summary.
            Expectation::PerSubscriber(each) => each.map_or(0, |e| e.saturating_sub(*received)),
        })
        .collect()
}

fn count_only(sent: u64, expected: u64, received: u64, lost: u64, unstamped: u64) -> Delivery {
    Delivery {
        sent,
        expected,
        received,
        lost,
        duplicated: None,
        reordered: None,
        unstamped,
        accounting: "count",
        publishers: Vec::new(),
        missing_seqs: None,
        duplicate_seqs: None,
        unmeasured: Unmeasured::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(publisher: u32, seq: u64) -> Option<Stamp> {
        Some(Stamp {
            run_tag: 1,
            publisher,
            seq,
        })
    }

    #[test]
    fn in_order_stream_is_clean() {
        let mut t = SeqTracker::default();
        for s in 0..100_000 {
            t.record(s);
        }
        assert_eq!((t.unique, t.duplicated, t.reordered), (100_000, 0, 0));
        assert_eq!(t.high_mark(), 100_000);
    }

    #[test]
    fn counts_gaps_duplicates_and_late_arrivals() {
        let mut t = SeqTracker::default();
        for s in [0, 1, 2, 5, 5, 3, 2, 7] {
            t.record(s);
        }
        // Seen: 0 1 2 3 5 7 -> 6 unique; 5 and 2 again -> 2 duplicates; 3 late -> 1 reordered.
        assert_eq!((t.unique, t.duplicated, t.reordered), (6, 2, 1));
        // 4 and 6 were never seen: a late 4 is reordered, not duplicated.
        t.record(4);
        assert_eq!((t.unique, t.duplicated, t.reordered), (7, 2, 2));
    }

    #[test]
    fn window_slots_are_reused_correctly_after_jumps() {
        let mut t = SeqTracker::default();
        t.record(3);
        // Jump by more than a window: slot of 3 now belongs to 3 + WINDOW, unseen.
        t.record(3 + 2 * WINDOW);
        t.record(3 + WINDOW + 1); // within the window below the high mark, never seen
        assert_eq!((t.unique, t.duplicated, t.reordered), (3, 0, 1));
        // A small jump clears exactly the skipped slots.
        let mut t = SeqTracker::default();
        t.record(10);
        t.record(10 + WINDOW - 1);
        t.record(10 + WINDOW + 5); // slots of 10+WINDOW..=10+WINDOW+5 cleared, incl. seq 10's
        t.record(10 + WINDOW); // unseen, late
        assert_eq!((t.duplicated, t.reordered), (0, 1));
        t.record(10 + WINDOW - 1); // seen before, still inside the window
        assert_eq!(t.duplicated, 1);
        t.record(5); // older than the window
        assert_eq!((t.beyond_window, t.reordered), (1, 2));
    }

    #[test]
    fn memory_is_fixed_per_publisher() {
        assert_eq!(std::mem::size_of::<[u64; WORDS]>(), (WINDOW / 8) as usize);
    }

    #[test]
    fn summary_exact_with_loss_duplicates_and_reorder() {
        let mut a = DeliveryLog::new(Some(1));
        let mut b = DeliveryLog::new(Some(1));
        for s in 0..10 {
            a.record(stamp(0, s));
            a.record(stamp(1, s));
        }
        // b misses 0:3..=4, sees 1:2 twice and 1:5 late.
        for s in (0..10).filter(|s| !(3..=4).contains(s)) {
            b.record(stamp(0, s));
        }
        for s in [0, 1, 2, 2, 3, 4, 6, 7, 5, 8, 9] {
            b.record(stamp(1, s));
        }
        let d = summarize(
            &[(20, &a), (19, &b)],
            &Expectation::Published {
                run_tag: 1,
                sent: &[10, 10],
            },
        );
        assert_eq!(d.sent, 20);
        assert_eq!(d.expected, 40);
        assert_eq!(d.received, 39);
        assert_eq!(d.lost, 2);
        assert_eq!(d.duplicated, Some(1));
        assert_eq!(d.reordered, Some(1));
        assert_eq!(d.accounting, "exact");
        assert_eq!(d.publishers[0].lost, 2);
        assert_eq!(d.publishers[1].received, 21);
    }

    #[test]
    fn each_subscriber_misses_its_own_share_of_the_loss() {
        let mut a = DeliveryLog::new(Some(1));
        let mut b = DeliveryLog::new(Some(1));
        for s in 0..10 {
            a.record(stamp(0, s));
            a.record(stamp(1, s));
        }
        // b misses 0:3..=4 and hears nothing from publisher 1, but gets 0:9 twice.
        for s in (0..10).filter(|s| !(3..=4).contains(s)).chain([9]) {
            b.record(stamp(0, s));
        }
        let subs = [(20, &a), (9, &b)];
        let expect = Expectation::Published {
            run_tag: 1,
            sent: &[10, 10],
        };
        let missed = missed_by_subscriber(&subs, &expect);
        assert_eq!(missed, vec![0, 12]);
        let d = summarize(&subs, &expect);
        assert_eq!(d.lost, 12);
        assert_eq!(d.publishers.iter().map(|p| p.lost).sum::<u64>(), 12);

        // Without stamps, each subscriber's shortfall against its expected count.
        let mut plain = DeliveryLog::new(Some(1));
        plain.record(None);
        let subs = [(20, &a), (7, &plain)];
        assert_eq!(missed_by_subscriber(&subs, &expect), vec![0, 13]);
        assert_eq!(summarize(&subs, &expect).lost, 13);

        // A lone subscriber: the shortfall, or the gaps when those are more.
        let mut gappy = DeliveryLog::new(None);
        for s in [0, 1, 2, 5, 6] {
            gappy.record(stamp(0, s));
        }
        let subs = [(5, &gappy), (10, &a)];
        assert_eq!(
            missed_by_subscriber(&subs, &Expectation::PerSubscriber(Some(6))),
            vec![2, 0]
        );
        assert_eq!(
            missed_by_subscriber(&subs, &Expectation::PerSubscriber(Some(25))),
            vec![20, 5]
        );
    }

    #[test]
    fn publisher_never_heard_from_is_all_lost() {
        let mut a = DeliveryLog::new(Some(1));
        for s in 0..5 {
            a.record(stamp(0, s));
        }
        let d = summarize(
            &[(5, &a)],
            &Expectation::Published {
                run_tag: 1,
                sent: &[5, 7],
            },
        );
        assert_eq!((d.lost, d.publishers[1].lost), (7, 7));
    }

    #[test]
    fn unstamped_falls_back_to_counts() {
        let mut a = DeliveryLog::new(Some(1));
        for _ in 0..8 {
            a.record(None);
        }
        let d = summarize(
            &[(8, &a)],
            &Expectation::Published {
                run_tag: 1,
                sent: &[10],
            },
        );
        assert_eq!((d.lost, d.duplicated, d.accounting), (2, None, "count"));
    }

    #[test]
    fn sub_only_uses_expected_count_and_gaps() {
        let mut a = DeliveryLog::new(None);
        for s in [0, 1, 2, 5, 6] {
            a.record(stamp(0, s));
        }
        // Expected 10: 5 unique arrived -> 5 lost (of which 2 are gaps below the high mark).
        let d = summarize(&[(5, &a)], &Expectation::PerSubscriber(Some(10)));
        assert_eq!((d.sent, d.expected, d.lost), (7, 10, 5));
        // Expected only 5 but a gap of 2 is certain loss.
        let d = summarize(&[(5, &a)], &Expectation::PerSubscriber(Some(5)));
        assert_eq!(d.lost, 2);
    }

    #[test]
    fn a_subscriber_that_joined_a_stream_late_is_owed_nothing_sent_before_it() {
        // A publisher elsewhere had sent 1,000 messages before this subscriber was there: it
        // sees 1000..1010, less 1004.
        let mut late = DeliveryLog::new(None);
        for s in (1000..1010).filter(|s| *s != 1004) {
            late.record(stamp(0, s));
        }
        for each in [Some(9), None] {
            let d = summarize(&[(9, &late)], &Expectation::PerSubscriber(each));
            let c = d.counts();
            assert_eq!((c.sent, c.lost), (Some(10), Some(1)), "{each:?}");
            assert_eq!(
                missed_by_subscriber(&[(9, &late)], &Expectation::PerSubscriber(each)),
                vec![1]
            );
            // Listening for a time, no count was owed: expected is not a figure.
            assert_eq!(c.expected, each.map(|_| 9), "{each:?}");
        }
    }

    #[test]
    fn a_subscriber_that_missed_the_head_another_saw_lost_it() {
        // Both subscribed before the stream; one saw 0..100, the other only 50..100.
        let (mut a, mut b) = (DeliveryLog::new(None), DeliveryLog::new(None));
        for s in 0..100 {
            a.record(stamp(0, s));
        }
        for s in 50..100 {
            b.record(stamp(0, s));
        }
        let subs = [(100, &a), (50, &b)];
        let expect = Expectation::PerSubscriber(None);
        assert_eq!(missed_by_subscriber(&subs, &expect), vec![0, 50]);
        let c = summarize(&subs, &expect).counts();
        assert_eq!(
            (c.sent, c.received, c.lost),
            (Some(100), Some(150), Some(50))
        );
    }

    #[test]
    fn a_subscriber_that_got_nothing_knows_nothing_of_what_was_sent() {
        let none = DeliveryLog::new(None);
        let c = summarize(&[(0, &none)], &Expectation::PerSubscriber(None)).counts();
        assert_eq!(
            (c.sent, c.expected, c.received, c.lost),
            (None, None, Some(0), None)
        );
        // Owed a count, all of it was lost.
        let c = summarize(&[(0, &none)], &Expectation::PerSubscriber(Some(10))).counts();
        assert_eq!((c.sent, c.expected, c.lost), (None, Some(10), Some(10)));
    }

    #[test]
    fn unstamped_messages_for_a_time_leave_what_was_sent_and_lost_unmeasured() {
        let mut plain = DeliveryLog::new(None);
        for _ in 0..8 {
            plain.record(None);
        }
        let c = summarize(&[(8, &plain)], &Expectation::PerSubscriber(None)).counts();
        assert_eq!(
            (c.sent, c.expected, c.received, c.lost),
            (None, None, Some(8), None)
        );
        // With a count owed, the shortfall is a loss; what was sent is still not known.
        let c = summarize(&[(8, &plain)], &Expectation::PerSubscriber(Some(10))).counts();
        assert_eq!((c.sent, c.expected, c.lost), (None, Some(10), Some(2)));
    }
}
