//! Open-loop schedules: when message `k` of a run is due. A fixed `--rate` is a schedule of one
//! stage that never ends; `--rate-schedule` gives several (`step:…`, `ramp:…` or a list of
//! `RATE@DURATION`). Each stage's rate changes linearly from `from` to `to` over its length
//! (equal for a step), so the count due by time t is a piecewise quadratic and its inverse — the
//! due time of message k — is exact: latency stays corrected against these due times, which are
//! no longer evenly spaced.
//!
//! Publishers share one schedule: publisher `p` of `n` sends the run's messages `p, p+n, p+2n,
//! …`, so the merged stream follows the schedule whatever the split. Nothing here reads a clock.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::arrivals::Poisson;
use crate::values::{parse_duration, parse_rate};

/// A ramp is reported in stages of this length (or in [`RAMP_MAX_STAGES`] if that is more
/// coarse): one stage per second is what the latency-against-throughput curve needs.
const RAMP_STAGE: Duration = Duration::from_secs(1);
const RAMP_MAX_STAGES: u32 = 60;
/// Stages of a schedule at most: a step schedule typed with a tiny step would otherwise make
/// thousands, each with its own histograms (two of ~260 KB a stage).
pub const MAX_STAGES: usize = 100;
/// The longest schedule: a year (a run's clock counts nanoseconds in 64 bits, 584 years).
const MAX_LENGTH: Duration = Duration::from_secs(365 * 24 * 3600);

/// One stage: its start and length on the run's clock, its rate at the start and the end, and
/// the run's messages due before it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub start_ns: f64,
    /// `f64::INFINITY` for the last stage of a fixed `--rate`.
    pub len_ns: f64,
    pub from: f64,
    pub to: f64,
    before: f64,
}

impl Stage {
    /// Messages due within the stage, from its start to `t_ns` after it.
    fn count_at(&self, t_ns: f64) -> f64 {
        let t = t_ns / 1e9;
        if self.len_ns.is_infinite() || self.from == self.to {
            return self.from * t;
        }
        let slope = (self.to - self.from) / (self.len_ns / 1e9);
        self.from * t + 0.5 * slope * t * t
    }

    /// When message `m` (counted from the stage's start) is due within the stage, in ns.
    fn time_of(&self, m: f64) -> f64 {
        if m <= 0.0 {
            return 0.0;
        }
        if self.len_ns.is_infinite() || (self.to - self.from).abs() < 1e-12 {
            return m / self.from * 1e9;
        }
        // from·t + a·t² = m with a = slope/2; the root that is ≥ 0. Written to stay exact when
        // `from` is 0 (a ramp from nothing) and stable when a is small.
        let a = 0.5 * (self.to - self.from) / (self.len_ns / 1e9);
        let disc = (self.from * self.from + 4.0 * a * m).max(0.0);
        let t = 2.0 * m / (self.from + disc.sqrt());
        t * 1e9
    }

    /// Its mean rate: the target a stage's throughput is judged against.
    pub fn target_rate(&self) -> f64 {
        if self.len_ns.is_infinite() {
            self.from
        } else {
            (self.from + self.to) / 2.0
        }
    }

    pub fn end_ns(&self) -> f64 {
        self.start_ns + self.len_ns
    }

    /// The run's messages due in the stage (infinite for an endless one).
    pub fn msgs(&self) -> f64 {
        self.count_at(self.len_ns)
    }
}

/// The run's schedule, as typed, with its stages; with Poisson arrivals, the run's message k
/// is due when the schedule has Γₖ messages due (`stats::arrivals`), rather than k.
#[derive(Debug, Clone, PartialEq)]
pub struct RateSchedule {
    spec: String,
    stages: Arc<[Stage]>,
    arrivals: Option<Arc<Poisson>>,
}

impl fmt::Display for RateSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec)
    }
}

impl RateSchedule {
    /// A fixed rate forever: the schedule behind `--rate`.
    pub fn fixed(per_sec: f64) -> Self {
        Self::from_stages(format!("{per_sec}"), &[(per_sec, per_sec, f64::INFINITY)])
    }

    /// Parses `--rate-schedule`. `run_for` is `--duration`: a step schedule without MAX needs
    /// it for its end; every other schedule sets its own length and refuses it.
    ///
    /// # Errors
    /// What is wrong with the value, for the caller to name the flag.
    pub fn parse(spec: &str, run_for: Option<Duration>) -> Result<Self, String> {
        let spec = spec.trim();
        let pieces: Vec<(f64, f64, f64)> = if let Some(rest) = spec.strip_prefix("step:") {
            step(rest, run_for)?
        } else if let Some(rest) = spec.strip_prefix("ramp:") {
            no_duration(run_for, "a ramp")?;
            ramp(rest)?
        } else if spec.contains('@') {
            no_duration(run_for, "a list of stages")?;
            list(spec)?
        } else {
            return Err(
                "expected step:START:STEP:EVERY[:MAX], ramp:FROM:TO:OVER or RATE@DURATION,… \
                 such as step:1000:1000:2s:5000"
                    .into(),
            );
        };
        if pieces.len() > MAX_STAGES {
            return Err(format!(
                "{} stages; at most {MAX_STAGES} (use a larger step or fewer stages)",
                pieces.len()
            ));
        }
        let total_ns: f64 = pieces.iter().map(|(_, _, len)| len).sum();
        if total_ns > MAX_LENGTH.as_nanos() as f64 {
            return Err(format!(
                "lasts {:.0} s; a schedule may last a year at most",
                total_ns / 1e9
            ));
        }
        if pieces.iter().all(|(a, b, _)| *a == 0.0 && *b == 0.0) {
            return Err("every stage has a rate of 0: nothing would be sent".into());
        }
        Ok(Self::from_stages(spec.to_string(), &pieces))
    }

    fn from_stages(spec: String, pieces: &[(f64, f64, f64)]) -> Self {
        let mut stages = Vec::with_capacity(pieces.len());
        let (mut start, mut before) = (0.0, 0.0);
        for &(from, to, len_ns) in pieces {
            let s = Stage {
                start_ns: start,
                len_ns,
                from,
                to,
                before,
            };
            before += s.msgs();
            start += len_ns;
            stages.push(s);
        }
        Self {
            spec,
            stages: stages.into(),
            arrivals: None,
        }
    }

    /// The same schedule with Poisson arrivals drawn under `seed`, tabled for a run that ends
    /// after `msgs` of the run's messages or `run_for`, whichever is given.
    ///
    /// # Errors
    /// A run too long to table (about 4 billion messages).
    pub fn poisson(
        &self,
        seed: u64,
        msgs: Option<u64>,
        run_for: Option<Duration>,
    ) -> Result<Self, String> {
        // In unit time, the run ends where the schedule has that many messages due; a schedule
        // of its own length ends at its total.
        let until = run_for
            .map(|d| self.due_before(d.as_nanos() as f64))
            .or_else(|| self.length().map(|_| self.total()));
        let p = Poisson::new(seed, until, msgs)?;
        Ok(Self {
            arrivals: Some(Arc::new(p)),
            ..self.clone()
        })
    }

    /// The Poisson arrivals' seed; `None` for the fixed spacing.
    pub fn poisson_seed(&self) -> Option<u64> {
        self.arrivals.as_ref().map(|p| p.seed())
    }

    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// True for the one endless stage of a fixed `--rate`.
    pub fn is_fixed(&self) -> bool {
        self.stages.len() == 1 && self.stages[0].len_ns.is_infinite()
    }

    /// How long the schedule lasts; `None` for a fixed rate.
    pub fn length(&self) -> Option<Duration> {
        let end = self.stages.last().map_or(0.0, Stage::end_ns);
        end.is_finite().then(|| Duration::from_nanos(end as u64))
    }

    /// The highest rate anywhere in the schedule (sizes buffers and windows).
    pub fn peak_rate(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.from.max(s.to))
            .fold(0.0, f64::max)
    }

    /// The mean rate over the schedule (the fixed rate itself for `--rate`).
    pub fn mean_rate(&self) -> f64 {
        match self.length() {
            Some(len) if len > Duration::ZERO => self.total() / len.as_secs_f64(),
            _ => self.stages[0].from,
        }
    }

    /// The run's messages due over the whole schedule (infinite for a fixed rate).
    pub fn total(&self) -> f64 {
        self.stages.last().map_or(0.0, |s| s.before + s.msgs())
    }

    /// The rate the schedule asks for at `t_ns`.
    pub fn rate_at_ns(&self, t_ns: u64) -> f64 {
        let s = &self.stages[self.stage_at_ns(t_ns)];
        if s.len_ns.is_infinite() {
            return s.from;
        }
        let f = ((t_ns as f64 - s.start_ns) / s.len_ns).clamp(0.0, 1.0);
        s.from + (s.to - s.from) * f
    }

    /// The stage that holds time `t_ns` (the last one past the end).
    pub fn stage_at_ns(&self, t_ns: u64) -> usize {
        let t = t_ns as f64;
        self.stages
            .partition_point(|s| s.start_ns <= t)
            .saturating_sub(1)
    }

    /// Where message `k` of the run falls in the schedule's count: `k` itself, or with
    /// Poisson arrivals Γₖ (`None` past the table, which ends past the run's end).
    #[inline]
    fn unit_of(&self, k: f64) -> Option<f64> {
        match &self.arrivals {
            Some(p) => p.arrival(k as u64),
            None => Some(k),
        }
    }

    /// The stage message `k` of the run is due in.
    fn stage_of_msg(&self, k: f64) -> usize {
        let k = self.unit_of(k).unwrap_or(f64::INFINITY);
        self.stages
            .partition_point(|s| s.before <= k)
            .saturating_sub(1)
    }

    /// When message `k` of the run is due, in ns since the start; `None` past the end. The end
    /// test is the very sum `sent_by_stage` counts up to, so the two agree on the last message.
    pub fn due_ns(&self, k: f64) -> Option<u64> {
        let k = self.unit_of(k)?;
        let s = &self.stages[self
            .stages
            .partition_point(|s| s.before <= k)
            .saturating_sub(1)];
        if k >= s.before + s.msgs() {
            return None;
        }
        Some((s.start_ns + s.time_of(k - s.before)) as u64)
    }

    /// The run's messages due before `t_ns`.
    pub fn due_before(&self, t_ns: f64) -> f64 {
        let s = &self.stages[self.stage_at_ns(t_ns as u64)];
        s.before + s.count_at((t_ns - s.start_ns).clamp(0.0, s.len_ns))
    }

    /// Publisher `p` of `n`: it sends the run's messages `p, p+n, …`.
    pub fn share(&self, p: u32, n: u32) -> PubSchedule {
        PubSchedule {
            schedule: self.clone(),
            p: f64::from(p),
            n: f64::from(n.max(1)),
        }
    }
}

/// One publisher's part of a schedule.
#[derive(Debug, Clone)]
pub struct PubSchedule {
    schedule: RateSchedule,
    p: f64,
    n: f64,
}

impl PubSchedule {
    /// When this publisher's message `seq` is due, in ns since the start; `None` past the end.
    #[inline]
    pub fn due_ns(&self, seq: u64) -> Option<u64> {
        let s = &self.schedule.stages;
        let k = seq as f64 * self.n + self.p;
        // A fixed rate, the common case, needs no search.
        if s.len() == 1 && s[0].len_ns.is_infinite() && self.schedule.arrivals.is_none() {
            return Some((k / s[0].from * 1e9) as u64);
        }
        self.schedule.due_ns(k)
    }

    /// The stage this publisher's message `seq` is due in.
    pub fn stage_of(&self, seq: u64) -> usize {
        self.schedule.stage_of_msg(seq as f64 * self.n + self.p)
    }

    /// How many of this publisher's messages are due before each stage ends: with the count it
    /// sent, this gives how many it sent in each stage without counting in the send loop.
    pub fn sent_by_stage(&self, sent: u64) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.schedule.stages.len());
        let mut below = 0u64;
        for s in self.schedule.stages.iter() {
            let end = s.before + s.msgs();
            // This publisher's messages k = seq·n + p with k < end (Γₖ < end with Poisson
            // arrivals, which rise with k: the first run message at or past the end, then
            // this publisher's messages before it).
            let end = match &self.schedule.arrivals {
                Some(p) if end.is_finite() => p.first_at_or_after(end) as f64,
                _ => end,
            };
            let upto = if end.is_finite() {
                (((end - self.p) / self.n).ceil().max(0.0) as u64).min(sent)
            } else {
                sent
            };
            out.push(upto.saturating_sub(below));
            below = below.max(upto);
        }
        out
    }

    pub fn schedule(&self) -> &RateSchedule {
        &self.schedule
    }
}

fn no_duration(run_for: Option<Duration>, what: &str) -> Result<(), String> {
    match run_for {
        Some(_) => Err(format!(
            "{what} sets the run's length; leave out --duration"
        )),
        None => Ok(()),
    }
}

fn rate(s: &str, what: &str) -> Result<f64, String> {
    let r = parse_rate(s).map_err(|e| format!("{what} '{s}': {e}"))?;
    if r < 0.0 {
        return Err(format!("{what} '{s}' is negative"));
    }
    Ok(r)
}

fn positive_duration(s: &str, what: &str) -> Result<f64, String> {
    let d = parse_duration(s).map_err(|e| format!("{what} '{s}': {e}"))?;
    if d.is_zero() {
        return Err(format!("{what} must be longer than 0"));
    }
    Ok(d.as_nanos() as f64)
}

/// `START:STEP:EVERY[:MAX]`: START, START+STEP, … each held for EVERY, up to MAX (held for
/// EVERY too) or until `--duration`.
fn step(rest: &str, run_for: Option<Duration>) -> Result<Vec<(f64, f64, f64)>, String> {
    let parts: Vec<&str> = rest.split(':').collect();
    if !(3..=4).contains(&parts.len()) {
        return Err(
            "a step schedule is step:START:STEP:EVERY[:MAX], such as step:1000:1000:2s:5000".into(),
        );
    }
    let start = rate(parts[0], "START")?;
    let step = rate(parts[1], "STEP")?;
    let every = positive_duration(parts[2], "EVERY")?;
    if step == 0.0 {
        return Err("STEP must be more than 0 (for one rate use --rate)".into());
    }
    let mut out = Vec::new();
    match parts.get(3) {
        Some(max) => {
            no_duration(run_for, "a step schedule with MAX")?;
            let max = rate(max, "MAX")?;
            if max < start {
                return Err(format!("MAX {max} is below START {start}"));
            }
            let mut r = start;
            while r <= max * (1.0 + 1e-12) && out.len() <= MAX_STAGES {
                out.push((r, r, every));
                r += step;
            }
        }
        None => {
            let total = run_for
                .ok_or("a step schedule without MAX needs --duration for its end")?
                .as_nanos() as f64;
            let mut r = start;
            let mut at = 0.0;
            while at < total && out.len() <= MAX_STAGES {
                out.push((r, r, every.min(total - at)));
                at += every;
                r += step;
            }
        }
    }
    Ok(out)
}

/// `FROM:TO:OVER`: the rate changes linearly; reported in stages of a second (at most 60).
fn ramp(rest: &str) -> Result<Vec<(f64, f64, f64)>, String> {
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.len() != 3 {
        return Err("a ramp is ramp:FROM:TO:OVER, such as ramp:1000:20000:30s".into());
    }
    let from = rate(parts[0], "FROM")?;
    let to = rate(parts[1], "TO")?;
    let over = positive_duration(parts[2], "OVER")?;
    let n = ((over / RAMP_STAGE.as_nanos() as f64).ceil() as u32).clamp(1, RAMP_MAX_STAGES);
    let len = over / f64::from(n);
    Ok((0..n)
        .map(|i| {
            let a = from + (to - from) * f64::from(i) / f64::from(n);
            let b = from + (to - from) * f64::from(i + 1) / f64::from(n);
            (a, b, len)
        })
        .collect())
}

/// `RATE@DURATION,RATE@DURATION,…`.
fn list(spec: &str) -> Result<Vec<(f64, f64, f64)>, String> {
    spec.split(',')
        .map(|stage| {
            let (r, d) = stage
                .split_once('@')
                .ok_or_else(|| format!("stage '{stage}' is not RATE@DURATION, such as 2000@5s"))?;
            let r = rate(r, "rate")?;
            Ok((r, r, positive_duration(d, "duration")?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Option<Duration> {
        Some(Duration::from_secs(s))
    }

    #[test]
    fn a_step_schedule_with_max_has_one_stage_per_rate() {
        let s = RateSchedule::parse("step:1000:1000:2s:5000", None).unwrap();
        let rates: Vec<f64> = s.stages().iter().map(Stage::target_rate).collect();
        assert_eq!(rates, vec![1000.0, 2000.0, 3000.0, 4000.0, 5000.0]);
        assert_eq!(s.length(), secs(10));
        // 2 000 + 4 000 + 6 000 + 8 000 + 10 000 messages in all.
        assert!((s.total() - 30_000.0).abs() < 1e-6);
        assert!((s.mean_rate() - 3000.0).abs() < 1e-6);
        assert_eq!(s.rate_at_ns(4_500_000_000), 3000.0);
        let ramp = RateSchedule::parse("ramp:0:1000:10s", None).unwrap();
        assert!((ramp.rate_at_ns(2_500_000_000) - 250.0).abs() < 1e-6);
        assert_eq!(s.peak_rate(), 5000.0);
    }

    #[test]
    fn due_times_follow_each_stage_rate() {
        let s = RateSchedule::parse("1000@1s,4000@1s", None).unwrap();
        let one = s.share(0, 1);
        assert_eq!(one.due_ns(0), Some(0));
        assert_eq!(one.due_ns(500), Some(500_000_000));
        // Message 1000 opens the second stage; then 0.25 ms apart.
        assert_eq!(one.due_ns(1000), Some(1_000_000_000));
        assert_eq!(one.due_ns(1004), Some(1_001_000_000));
        assert_eq!(one.due_ns(4999), Some(1_999_750_000));
        assert_eq!(one.due_ns(5000), None);
        assert_eq!(one.stage_of(999), 0);
        assert_eq!(one.stage_of(1000), 1);
    }

    #[test]
    fn a_ramp_is_exact_and_inverts_its_own_count() {
        let s = RateSchedule::parse("ramp:0:2000:2s", None).unwrap();
        assert_eq!(s.stages().len(), 2);
        // From 0 to 2 000/s over 2 s: 2 000 messages, message k due at sqrt(k/500) s.
        assert!((s.total() - 2000.0).abs() < 1e-6);
        for k in [1u64, 10, 499, 500, 1234, 1999] {
            let want = (k as f64 / 500.0).sqrt() * 1e9;
            let got = s.share(0, 1).due_ns(k).unwrap() as f64;
            assert!(
                (got - want).abs() < 2.0,
                "message {k}: {got} against {want}"
            );
            assert!((s.due_before(got + 1.0) - (k as f64 + 1.0)).abs() < 1e-3 + 1.0);
        }
        let down = RateSchedule::parse("ramp:3000:1000:4s", None).unwrap();
        let times: Vec<u64> = (0..8000)
            .map(|k| down.share(0, 1).due_ns(k).unwrap())
            .collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]), "due times must rise");
        assert_eq!(down.share(0, 1).due_ns(8000), None);
    }

    #[test]
    fn publishers_interleave_the_one_schedule() {
        let s = RateSchedule::parse("1000@1s,3000@1s", None).unwrap();
        let (a, b) = (s.share(0, 2), s.share(1, 2));
        let mut all: Vec<u64> = (0..2000)
            .flat_map(|q| [a.due_ns(q), b.due_ns(q)])
            .flatten()
            .collect();
        assert_eq!(all.len(), 4000);
        let whole: Vec<u64> = (0..4000).map(|k| s.due_ns(k as f64).unwrap()).collect();
        all.sort_unstable();
        assert_eq!(all, whole);
        // Each sent 2 000: 500 in the first stage and 1 500 in the second.
        assert_eq!(a.sent_by_stage(2000), vec![500, 1500]);
        assert_eq!(b.sent_by_stage(2000), vec![500, 1500]);
        // One stopped early, in the first stage.
        assert_eq!(a.sent_by_stage(300), vec![300, 0]);
    }

    #[test]
    fn a_fixed_rate_is_one_endless_stage() {
        let s = RateSchedule::fixed(2000.0);
        assert!(s.is_fixed());
        assert_eq!(s.length(), None);
        assert_eq!(s.share(1, 4).due_ns(10), Some(20_500_000));
        assert_eq!(s.share(0, 1).sent_by_stage(77), vec![77]);
    }

    #[test]
    fn a_step_without_max_runs_for_the_duration() {
        let s = RateSchedule::parse("step:100:100:4s", secs(10)).unwrap();
        let rates: Vec<f64> = s.stages().iter().map(Stage::target_rate).collect();
        assert_eq!(rates, vec![100.0, 200.0, 300.0]);
        assert_eq!(s.length(), secs(10));
    }

    #[test]
    fn bad_schedules_say_what_is_wrong() {
        let err = |s: &str, d: Option<Duration>| RateSchedule::parse(s, d).unwrap_err();
        assert!(err("step:100:100:1s", None).contains("needs --duration"));
        assert!(err("step:100:100:1s:500", secs(5)).contains("leave out --duration"));
        assert!(err("ramp:1:2", None).contains("ramp:FROM:TO:OVER"));
        assert!(err("1000@0s", None).contains("duration '0s'"));
        assert!(err("1000", None).contains("expected step:"));
        assert!(err("step:5:0:1s:10", None).contains("STEP"));
        assert!(err("step:10:1:1s:5", None).contains("below START"));
        assert!(err("0@1s,0@2s", None).contains("nothing would be sent"));
        assert!(err("step:1:1:1ms:500", None).contains("at most"));
        assert!(err("abc@1s", None).contains("rate 'abc'"));
        assert!(err("4@400000d", None).contains("a year at most"));
    }
}

#[cfg(test)]
mod edge_tests {
    use super::*;

    /// Found by the fuzzer: a ramp whose stages hold fractional counts. What a publisher is
    /// due to send and what the stages count it sent must agree at the last message.
    #[test]
    fn the_last_message_of_a_ramp_counts_in_a_stage() {
        let s = RateSchedule::parse("ramp:0:0200:3s", None).unwrap();
        let one = s.share(0, 1);
        let sent = (0..1000).take_while(|k| one.due_ns(*k).is_some()).count() as u64;
        assert_eq!(one.sent_by_stage(sent).iter().sum::<u64>(), sent);
    }
}
