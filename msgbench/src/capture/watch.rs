//! What `capture` keeps of each message it sees: counts, never payloads. Messages are tallied in
//! groups (a subject's first token, its number of tokens, whether it carries a reply subject),
//! each with its rate per second, its sizes, its header names and its subjects' counts; a
//! request's reply is matched on its inbox and timed. Memory is bounded whatever the traffic:
//! subjects past `--max-subjects`, requests past [`MAX_PENDING`] and header names past
//! [`MAX_HEADER_NAMES`] are counted, not kept, and the file says so.
//!
//! The tally runs on the connection's reader thread, in the read loop: per message two hash
//! lookups on borrowed bytes and a few additions; it allocates only for a subject, group or
//! request it has not seen.

use std::collections::{BTreeMap, HashMap};

/// Requests awaiting their reply, at most; more in flight are counted as untimed.
pub const MAX_PENDING: usize = 100_000;
/// Header names kept across the capture.
pub const MAX_HEADER_NAMES: usize = 64;
/// Distinct sizes a group keeps exactly before it keeps buckets instead.
const EXACT_SIZES: usize = 64;
/// Buckets per power of two once a group has too many distinct sizes: each about 1.6% wide.
const SUB_BUCKETS: u32 = 64;

/// One group of subjects and what was seen on it.
#[derive(Debug, Default)]
pub struct Group {
    /// The first token; `tokens` the number of tokens.
    pub first: String,
    pub tokens: usize,
    /// Whether its messages carry a reply subject.
    pub reply: bool,
    pub msgs: u64,
    pub bytes: u64,
    /// Messages in each second of the capture.
    pub per_sec: Vec<u64>,
    /// Sizes seen exactly (while there are few of them), else by bucket: `(lo, hi) -> count`.
    pub sizes: BTreeMap<(u32, u32), u64>,
    exact: bool,
    /// Messages on each subject kept; `overflow` those on subjects past the limit.
    pub subjects: HashMap<Box<[u8]>, u64>,
    pub overflow: u64,
    /// Messages that carried headers, and the names seen (indexes into the tally's table).
    pub with_headers: u64,
    pub header_names: u64,
    /// Requests answered on their inbox, and the times to their answers, in ns.
    pub answered: u64,
    pub service_ns: Option<hdrhistogram::Histogram<u64>>,
}

impl Group {
    fn size(&mut self, n: usize) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        if self.exact {
            *self.sizes.entry((n, n)).or_default() += 1;
            if self.sizes.len() > EXACT_SIZES {
                self.exact = false;
                let old = std::mem::take(&mut self.sizes);
                for ((s, _), c) in old {
                    *self.sizes.entry(bucket(s)).or_default() += c;
                }
            }
        } else {
            *self.sizes.entry(bucket(n)).or_default() += 1;
        }
    }
}

/// The bucket of size `n`: exact below 128 bytes, then [`SUB_BUCKETS`] per power of two.
fn bucket(n: u32) -> (u32, u32) {
    if n < 2 * SUB_BUCKETS {
        return (n, n);
    }
    let shift = (31 - n.leading_zeros()) - SUB_BUCKETS.trailing_zeros();
    let lo = (n >> shift) << shift;
    (lo, lo + ((1 << shift) - 1))
}

/// A request waiting for its answer.
struct Pending {
    group: usize,
    at_ns: u64,
}

/// Everything seen, in groups.
#[derive(Default)]
pub struct Tally {
    pub groups: Vec<Group>,
    index: HashMap<Box<[u8]>, usize>,
    key: Vec<u8>,
    subjects_kept: u64,
    max_subjects: u64,
    seconds: usize,
    pending: HashMap<Box<[u8]>, Pending>,
    /// Inbox messages that answered no request seen yet, and when they came.
    early: HashMap<Box<[u8]>, u64>,
    /// Messages seen in all; answers matched to a request; inbox messages past the bound on
    /// those kept ([`Tally::unmatched`] counts all that answered no request seen).
    pub msgs: u64,
    pub answers: u64,
    unmatched_inbox: u64,
    /// Requests not timed because [`MAX_PENDING`] were already waiting.
    pub untimed: u64,
    /// Messages on `$`-subjects (the system's own: the JetStream API, acks, KV), by their
    /// first two tokens.
    pub system: BTreeMap<String, u64>,
    /// Header names seen, in order; `more_header_names` once the table was full.
    pub header_names: Vec<String>,
    pub more_header_names: bool,
}

impl Tally {
    /// A tally of a capture `seconds` long, keeping at most `max_subjects` subjects' counts.
    pub fn new(seconds: usize, max_subjects: u64) -> Self {
        Self {
            seconds: seconds.max(1),
            max_subjects,
            ..Self::default()
        }
    }

    /// One message, `at_ns` after the capture's start.
    pub fn add(
        &mut self,
        subject: &[u8],
        reply: Option<&[u8]>,
        headers: Option<&[u8]>,
        payload: usize,
        at_ns: u64,
    ) {
        self.msgs += 1;
        if let Some(p) = self.pending.remove(subject) {
            self.answers += 1;
            let g = &mut self.groups[p.group];
            g.answered += 1;
            record(&mut g.service_ns, at_ns.saturating_sub(p.at_ns));
            return;
        }
        if subject.starts_with(b"_INBOX.") {
            // An answer may reach this subscriber before its request does (JetStream acks a
            // publish before the server delivers it to other subscribers): kept a while.
            if self.early.len() < MAX_PENDING {
                self.early.insert(subject.into(), at_ns);
            } else {
                self.unmatched_inbox += 1;
            }
            return;
        }
        if subject.first() == Some(&b'$') {
            self.system_msg(subject);
            return;
        }
        let g = self.group_of(subject, reply.is_some());
        let sec = usize::try_from(at_ns / 1_000_000_000)
            .unwrap_or(usize::MAX)
            .min(self.seconds - 1);
        let names = headers.map(|h| self.names_of(h));
        let kept = self.subjects_kept < self.max_subjects;
        let group = &mut self.groups[g];
        group.msgs += 1;
        group.bytes += payload as u64;
        group.per_sec[sec] += 1;
        group.size(payload);
        if let Some(mask) = names {
            group.with_headers += 1;
            group.header_names |= mask;
        }
        match group.subjects.get_mut(subject) {
            Some(n) => *n += 1,
            None if kept => {
                group.subjects.insert(subject.into(), 1);
                self.subjects_kept += 1;
            }
            None => group.overflow += 1,
        }
        if let Some(r) = reply {
            if self.early.remove(r).is_some() {
                // Answered before it was seen here: its service time is below what this
                // subscriber can tell, so it is counted as the shortest.
                self.answers += 1;
                let group = &mut self.groups[g];
                group.answered += 1;
                record(&mut group.service_ns, 1);
            } else if self.pending.len() < MAX_PENDING {
                self.pending.insert(r.into(), Pending { group: g, at_ns });
            } else {
                self.untimed += 1;
            }
        }
    }

    /// A message on a `$`-subject, counted under its first two tokens.
    fn system_msg(&mut self, subject: &[u8]) {
        let end = (subject.iter().enumerate())
            .filter(|(_, &b)| b == b'.')
            .nth(1)
            .map_or(subject.len(), |(i, _)| i);
        let name = String::from_utf8_lossy(&subject[..end]);
        match self.system.get_mut(name.as_ref()) {
            Some(n) => *n += 1,
            None => {
                self.system.insert(name.into_owned(), 1);
            }
        }
    }

    /// The group of `subject`, made on first sight.
    fn group_of(&mut self, subject: &[u8], reply: bool) -> usize {
        let first = subject.split(|&b| b == b'.').next().unwrap_or_default();
        let tokens = subject.iter().filter(|&&b| b == b'.').count() + 1;
        self.key.clear();
        self.key.extend_from_slice(first);
        self.key.push(0);
        self.key.extend_from_slice(&(tokens as u32).to_le_bytes());
        self.key.push(u8::from(reply));
        if let Some(&g) = self.index.get(self.key.as_slice()) {
            return g;
        }
        let g = self.groups.len();
        self.groups.push(Group {
            first: String::from_utf8_lossy(first).into_owned(),
            tokens,
            reply,
            per_sec: vec![0; self.seconds],
            exact: true,
            ..Group::default()
        });
        self.index.insert(self.key.as_slice().into(), g);
        g
    }

    /// The header names of a header block (`NATS/1.0\r\nName: value\r\n…`) as a mask over
    /// the table of names.
    fn names_of(&mut self, block: &[u8]) -> u64 {
        let mut mask = 0u64;
        for line in block.split(|&b| b == b'\n').skip(1) {
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let name = String::from_utf8_lossy(line[..colon].trim_ascii());
            if name.is_empty() {
                continue;
            }
            let i = match self.header_names.iter().position(|n| *n == name) {
                Some(i) => i,
                None if self.header_names.len() < MAX_HEADER_NAMES => {
                    self.header_names.push(name.into_owned());
                    self.header_names.len() - 1
                }
                None => {
                    self.more_header_names = true;
                    continue;
                }
            };
            mask |= 1 << i;
        }
        mask
    }

    /// Requests still waiting for an answer when the capture ended.
    pub fn unanswered(&self) -> usize {
        self.pending.len()
    }

    /// Inbox messages that answered no request seen: those to requests sent before the
    /// capture began (or past [`MAX_PENDING`]).
    pub fn unmatched(&self) -> u64 {
        self.unmatched_inbox + self.early.len() as u64
    }
}

/// A service time, in a histogram made on first use (1 ns to an hour, 3 digits).
fn record(h: &mut Option<hdrhistogram::Histogram<u64>>, ns: u64) {
    h.get_or_insert_with(|| {
        hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds")
    })
    .saturating_record(ns.max(1));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_below_128_then_a_sixty_fourth_of_their_power_of_two() {
        assert_eq!(bucket(5), (5, 5));
        assert_eq!(bucket(127), (127, 127));
        assert_eq!(bucket(128), (128, 129));
        // 512 … 1023 is 64 buckets of 8 bytes.
        assert_eq!(bucket(1000), (1000, 1007));
        assert_eq!(bucket(1007), (1000, 1007));
        assert_eq!(bucket(999), (992, 999));
        let (lo, hi) = bucket(1_000_000);
        assert!(lo <= 1_000_000 && 1_000_000 <= hi);
        assert!(f64::from(hi - lo + 1) / f64::from(lo) < 0.016);
    }

    #[test]
    fn groups_subjects_requests_and_their_answers() {
        let mut t = Tally::new(2, 3);
        t.add(b"orders.eu.1", None, None, 100, 0);
        t.add(b"orders.us.2", None, None, 200, 1_500_000_000);
        t.add(b"orders.eu.1", None, None, 100, 1_600_000_000);
        t.add(b"svc.price", Some(b"_INBOX.a.1"), None, 16, 10);
        t.add(b"_INBOX.a.1", None, None, 16, 2_010);
        t.add(b"_INBOX.a.9", None, None, 16, 3_000);
        t.add(b"$JS.API.STREAM.LIST", None, None, 0, 5);
        // The fourth subject is past the limit of 3: counted, not kept.
        t.add(
            b"orders.ap.3",
            None,
            Some(b"NATS/1.0\r\nTrace: 1\r\n\r\n"),
            300,
            9,
        );
        assert_eq!(t.msgs, 8);
        assert_eq!(t.groups.len(), 2);
        let orders = &t.groups[0];
        assert_eq!((orders.msgs, orders.bytes), (4, 700));
        assert_eq!(orders.per_sec, vec![2, 2]);
        assert_eq!(orders.subjects.len(), 2);
        assert_eq!(orders.overflow, 1);
        assert_eq!(orders.sizes.get(&(100, 100)), Some(&2));
        assert_eq!((orders.with_headers, orders.header_names), (1, 1));
        assert_eq!(t.header_names, vec!["Trace".to_string()]);
        let svc = &t.groups[1];
        assert!(svc.reply);
        assert_eq!(svc.answered, 1);
        let h = svc.service_ns.as_ref().expect("timed");
        assert_eq!(h.len(), 1);
        assert!(h.equivalent(h.value_at_quantile(0.5), 2_000));
        assert_eq!((t.answers, t.unmatched()), (1, 1));
        // An answer seen before its request is matched when the request comes.
        t.add(b"_INBOX.b.1", None, None, 16, 4_000);
        t.add(b"svc.price", Some(b"_INBOX.b.1"), None, 16, 4_100);
        assert_eq!((t.answers, t.unmatched(), t.unanswered()), (2, 1, 0));
        assert_eq!(t.system.get("$JS.API"), Some(&1));
    }

    #[test]
    fn many_distinct_sizes_turn_into_buckets_keeping_every_count() {
        let mut g = Group {
            exact: true,
            ..Group::default()
        };
        for n in 1000..1200 {
            g.size(n);
        }
        assert!(g.sizes.len() < 200);
        assert_eq!(g.sizes.values().sum::<u64>(), 200);
        assert!(g.sizes.keys().all(|(lo, hi)| lo <= hi));
    }
}
