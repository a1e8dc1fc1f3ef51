//! Recovery from an injected fault: for each subscriber, when the first message sent after the
//! fault arrived, and from when on the delivered rate stayed back at the target.
//!
//! "Sent after the fault" is judged by each message's scheduled time, not by when it arrived:
//! right after a fault, messages that were already in the subscriber's socket still trickle in,
//! and counting those would call a dead server healthy.
//!
//! "Back at the target" is judged bucket by bucket against what the schedule had due in that
//! bucket ([`Owed`]): on a stepped or ramped schedule the target moves, and a rate that keeps
//! up with each new step has recovered, though it no longer matches the step the fault fell in.

use std::time::Duration;

use serde::Serialize;

use crate::stats::schedule::RateSchedule;

/// What one subscriber is owed: a share of the messages a schedule has due, or a fixed rate.
#[derive(Debug, Clone, Copy)]
pub struct Owed<'a> {
    schedule: Option<&'a RateSchedule>,
    /// Messages per second with no schedule.
    rate: f64,
    /// The subscriber's share of the schedule's messages.
    share: f64,
}

impl<'a> Owed<'a> {
    /// A share of what `schedule` has due.
    pub fn schedule(schedule: &'a RateSchedule, share: f64) -> Self {
        Self {
            schedule: Some(schedule),
            rate: 0.0,
            share,
        }
    }

    /// A fixed rate.
    pub fn rate(per_sec: f64) -> Self {
        Self {
            schedule: None,
            rate: per_sec,
            share: 1.0,
        }
    }

    /// The messages due in bucket `b`.
    fn in_bucket(&self, b: usize) -> f64 {
        let width = BUCKET.as_nanos() as f64;
        match self.schedule {
            Some(s) => {
                let (from, to) = (b as f64 * width, (b + 1) as f64 * width);
                (s.due_before(to) - s.due_before(from)) * self.share
            }
            None => self.rate * BUCKET.as_secs_f64(),
        }
    }
}

/// Width of the rate buckets.
pub const BUCKET: Duration = Duration::from_millis(100);

/// The rate counts as recovered once a whole [`SUSTAIN`] delivered within this fraction of what
/// it owed, with no bucket in it below [`BUCKET_FLOOR`] of its own share.
pub const TOLERANCE: f64 = 0.10;
pub const SUSTAIN: Duration = Duration::from_secs(1);

/// The least share of what it owed a bucket in a recovered second may hold. A stall of a bucket
/// shows (a server that stops again is not back), while a delivery a few tens of milliseconds
/// late, which moves messages into the next bucket on a busy host, does not: judging each bucket
/// within [`TOLERANCE`] called a restarted server never back on a saturated 2-core machine
/// whose seconds each held their 2,000 messages (issue 42).
pub const BUCKET_FLOOR: f64 = 0.5;

/// A day of buckets at most: a bound on memory whatever the run length.
const MAX_BUCKETS: usize = 864_000;

/// What one subscriber saw: arrivals per [`BUCKET`] since time zero, and the arrival time of
/// the first message scheduled at or after the fault.
#[derive(Debug, Clone, Default)]
pub struct RecoveryLog {
    buckets: Vec<u64>,
    first_after_ns: Option<u64>,
}

impl RecoveryLog {
    /// Records one arrival at `recv_ns` (since time zero) of a message due at `due_ns`; the
    /// fault happened at `fault_ns` (`u64::MAX` while it has not).
    #[inline]
    pub fn record(&mut self, due_ns: Option<u64>, recv_ns: u64, fault_ns: u64) {
        let b = (recv_ns / BUCKET.as_nanos() as u64) as usize;
        if b >= self.buckets.len() {
            if b >= MAX_BUCKETS {
                return;
            }
            // Grows by whole seconds: a reallocation every ten buckets at most, never per message.
            self.buckets.resize((b + 10).min(MAX_BUCKETS), 0);
        }
        self.buckets[b] += 1;
        if self.first_after_ns.is_none() && due_ns.is_some_and(|d| d >= fault_ns) {
            self.first_after_ns = Some(recv_ns);
        }
    }

    /// From the fault to the first delivery of a message due after it.
    fn first_delivery(&self, fault_ns: u64) -> Option<u64> {
        self.first_after_ns.map(|t| t.saturating_sub(fault_ns))
    }

    /// From the fault until the first [`SUSTAIN`] (whole buckets, from the first delivery after
    /// the fault on) that delivered within [`TOLERANCE`] of what it owed, none of its buckets
    /// below [`BUCKET_FLOOR`] of its share; only buckets that end by `end_ns` (when sending
    /// stopped) count.
    fn rate_recovered(&self, fault_ns: u64, owed: &Owed<'_>, end_ns: u64) -> Option<u64> {
        let width = BUCKET.as_nanos() as u64;
        let need = (SUSTAIN.as_nanos() / BUCKET.as_nanos()) as usize;
        let from = (self.first_after_ns? / width) as usize;
        let complete = ((end_ns / width) as usize).min(self.buckets.len());
        let steady = |start: usize| {
            let window = start..start + need;
            let floor_held = (window.clone())
                .all(|b| self.buckets[b] as f64 >= owed.in_bucket(b) * BUCKET_FLOOR);
            let got: f64 = window.clone().map(|b| self.buckets[b] as f64).sum();
            let expect: f64 = window.map(|b| owed.in_bucket(b)).sum();
            floor_held && (got - expect).abs() <= expect * TOLERANCE
        };
        let start = (from..complete.saturating_sub(need - 1)).find(|&b| steady(b))?;
        let start = (start as u64 * width).max(self.first_after_ns?);
        Some(start.saturating_sub(fault_ns))
    }
}

/// What happens to the embedded server during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// SIGKILL, and the server stays down.
    Kill,
    /// SIGKILL, then the server starts again on the same port (after `hold`, if given).
    Restart,
    /// SIGSTOP for `hold`, then SIGCONT: a server that stops responding without closing.
    Pause,
    /// Cut off from the other nodes and from its clients for `hold`, then healed: a server
    /// that keeps running but hears no one (a local cluster's nodes only).
    Partition,
    /// SIGKILL and the loss of every write its filesystem had not synced, then a start on
    /// what survived after `hold` (a lazy filesystem under the store).
    PowerLoss,
    /// SIGKILL, one message block damaged on its disk (see [`Corrupt`]), and a start again.
    Corrupt,
}

impl FaultKind {
    /// The name `--fault` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Kill => "kill",
            Self::Restart => "restart",
            Self::Pause => "pause",
            Self::Partition => "partition",
            Self::PowerLoss => "power-loss",
            Self::Corrupt => "corrupt",
        }
    }

    /// Whether the fault needs the lazy filesystem under the store.
    pub fn on_disk(self) -> bool {
        matches!(self, Self::PowerLoss | Self::Corrupt)
    }
}

/// How a corrupt fault damages a message block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CorruptKind {
    /// One bit flipped in one of the stream's block files, the place drawn over all their bytes.
    Bitflip,
    /// The stream's last block file cut at a length drawn below its size.
    Truncate,
}

impl CorruptKind {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "bitflip" => Some(Self::Bitflip),
            "truncate" => Some(Self::Truncate),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bitflip => "bitflip",
            Self::Truncate => "truncate",
        }
    }
}

/// A corrupt fault's damage and the seed that draws its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Corrupt {
    pub kind: CorruptKind,
    pub seed: u64,
}

/// A fault to inject (`--fault KIND[-TARGET]@AT[:HOLD]`), and the spec a result records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FaultSpec {
    pub kind: FaultKind,
    /// The role in a cluster it is aimed at; none for the one server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<super::faults::FaultTarget>,
    /// When, from the start of the load.
    #[serde(serialize_with = "secs")]
    pub at: Duration,
    /// How long the server stays paused, partitioned, or down before a restart.
    #[serde(serialize_with = "secs")]
    pub hold: Duration,
    /// A corrupt fault's damage; absent for every other kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrupt: Option<Corrupt>,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// The fault section of a result.
#[derive(Debug, Clone, Serialize)]
pub struct FaultReport {
    #[serde(flatten)]
    pub spec: FaultSpec,
    /// When the fault was injected, from the start of the load; absent when the run ended
    /// before its time came.
    pub injected_at_ns: Option<u64>,
    /// Why injecting (or undoing) the fault failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rate each subscriber was owed at the moment of the fault. On a schedule whose rate
    /// changes, recovery is judged against what was due bucket by bucket, not this alone.
    pub target_rate: f64,
    /// From the fault to the first delivery of a message sent after it (the slowest
    /// subscriber); absent when none arrived.
    pub first_delivery_ns: Option<u64>,
    /// From the fault until the delivered rate stayed within 10% of what was due for 1 s (the
    /// slowest subscriber); absent when it never did before sending stopped.
    pub rate_recovered_ns: Option<u64>,
    /// With faults aimed at a cluster's roles: each fault, the first being the one above.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<super::faults::FaultEvent>,
    /// `--allow-missed-faults`: a fault that was not injected does not fail the run.
    pub missed_allowed: bool,
}

impl FaultReport {
    /// Summarises the subscribers' logs around a fault injected at `injected_ns` (if it was):
    /// each was `owed` its messages, at `target_rate` when the fault came.
    pub fn new(
        spec: FaultSpec,
        injected_ns: Option<u64>,
        error: Option<String>,
        logs: &[&RecoveryLog],
        (owed, target_rate): (Owed<'_>, f64),
        end_ns: u64,
    ) -> Self {
        // The slowest subscriber is the recovery time; one that never recovered means none.
        let worst = |f: &dyn Fn(&RecoveryLog, u64) -> Option<u64>| {
            let fault = injected_ns?;
            logs.iter()
                .map(|l| f(l, fault))
                .collect::<Option<Vec<u64>>>()?
                .into_iter()
                .max()
        };
        Self {
            spec,
            injected_at_ns: injected_ns,
            error,
            target_rate,
            first_delivery_ns: worst(&|l, f| l.first_delivery(f)),
            rate_recovered_ns: worst(&|l, f| l.rate_recovered(f, &owed, end_ns)),
            faults: Vec::new(),
            missed_allowed: false,
        }
    }

    /// How many of the faults asked for were never injected (the run ended first, or their
    /// target was not found within the wait).
    pub fn missed(&self) -> usize {
        if self.faults.is_empty() {
            usize::from(self.injected_at_ns.is_none())
        } else {
            (self.faults.iter())
                .filter(|f| f.injected_at_ns.is_none())
                .count()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A subscriber at 1,000 msgs/s whose deliveries stop at 2 s, resume at 2.5 s with the
    /// backlog in one burst, then continue on schedule until 5 s.
    fn outage_log(fault_ns: u64) -> RecoveryLog {
        let mut log = RecoveryLog::default();
        for seq in 0..5000u64 {
            let due = seq * MS;
            let recv = if (2000 * MS..2500 * MS).contains(&due) {
                2500 * MS + seq
            } else {
                due + 100_000
            };
            log.record(Some(due), recv, fault_ns);
        }
        log
    }

    #[test]
    fn recovery_is_measured_from_messages_sent_after_the_fault() {
        let fault = 2000 * MS;
        let log = outage_log(fault);
        assert_eq!(log.first_delivery(fault), Some(500 * MS + 2000));
        // The burst bucket (2.5–2.6 s) holds 600 messages, far above 100: the rate is back from
        // 2.6 s on, 600 ms after the fault.
        let at = |r: f64| Owed::rate(r);
        assert_eq!(
            log.rate_recovered(fault, &at(1000.0), 5000 * MS),
            Some(600 * MS)
        );
        // A run that stops before a full second of steady rate never recovered.
        assert_eq!(log.rate_recovered(fault, &at(1000.0), 3500 * MS), None);
        // Judged against the wrong target, it never recovers either.
        assert_eq!(log.rate_recovered(fault, &at(2000.0), 5000 * MS), None);
    }

    #[test]
    fn deliveries_a_little_late_are_back_but_a_bucket_that_stalls_is_not() {
        // 1,000/s from 0.5 s on after a fault at 0; a busy host moves 30 of each pair of
        // buckets' messages into the next one: 70, 130, 70, 130, …
        let fault = 0;
        let mut log = RecoveryLog::default();
        let mut t = 500 * MS;
        for b in 5..40u64 {
            let n = if b % 2 == 1 { 70 } else { 130 };
            for _ in 0..n {
                log.record(Some(t), b * 100 * MS + 1, fault);
                t += MS;
            }
        }
        let owed = Owed::rate(1000.0);
        assert_eq!(
            log.rate_recovered(fault, &owed, 4000 * MS),
            Some(500 * MS + 1)
        );
        // A bucket with 40 of its 100 (a stall of 60 ms) is not back: the second counts from
        // the bucket after it.
        log.buckets[6] = 40;
        log.buckets[7] = 160;
        let back = log.rate_recovered(fault, &owed, 4000 * MS);
        assert_eq!(back, Some(700 * MS));
    }

    #[test]
    fn the_slowest_subscriber_sets_the_figure_and_a_missing_one_voids_it() {
        let spec = FaultSpec {
            kind: FaultKind::Restart,
            target: None,
            at: Duration::from_secs(2),
            hold: Duration::ZERO,
            corrupt: None,
        };
        let fault = 2000 * MS;
        let (a, b) = (outage_log(fault), outage_log(fault - 300 * MS));
        let owed = (Owed::rate(1000.0), 1000.0);
        let r = FaultReport::new(spec, Some(fault), None, &[&a, &b], owed, 5000 * MS);
        assert_eq!(r.first_delivery_ns, Some(500 * MS + 2000));
        let never = RecoveryLog::default();
        let r = FaultReport::new(spec, Some(fault), None, &[&a, &never], owed, 5000 * MS);
        assert_eq!((r.first_delivery_ns, r.rate_recovered_ns), (None, None));
        let r = FaultReport::new(spec, None, None, &[&a], owed, 5000 * MS);
        assert_eq!(r.first_delivery_ns, None);
    }

    #[test]
    fn on_a_step_schedule_recovery_follows_each_step() {
        // 1,000/s for 2 s, then 2,000/s: a subscriber that misses 1.5–1.8 s, gets the backlog
        // at 1.8 s, and keeps up with every step after it.
        let sc = RateSchedule::parse("step:1000:1000:2s:2000", None).unwrap();
        let fault = 1500 * MS;
        let mut log = RecoveryLog::default();
        for k in 0..5000u64 {
            let due = sc.due_ns(k as f64).unwrap();
            let recv = if (1500 * MS..1800 * MS).contains(&due) {
                1800 * MS + k
            } else {
                due + 100_000
            };
            log.record(Some(due), recv, fault);
        }
        // Against the schedule it is back from 1.9 s on; against the first step's 1,000/s
        // alone it never is, since the second second runs at 2,000/s.
        assert_eq!(
            log.rate_recovered(fault, &Owed::schedule(&sc, 1.0), 3500 * MS),
            Some(400 * MS)
        );
        assert_eq!(
            log.rate_recovered(fault, &Owed::rate(1000.0), 3500 * MS),
            None
        );
    }
}
