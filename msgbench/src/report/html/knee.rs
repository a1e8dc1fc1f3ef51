//! The latency-against-throughput curve ("the knee") as numbers: its points, read from a rate
//! schedule's stages or a capacity search's probes, the SLO lines, and the sustainable rate.
//! Drawing it is `knee_chart`'s; this file decides which numbers the curve shows, so that a test
//! can check them without a drawing and the two kinds of input end up in one shape.
//!
//! x is the throughput each point *achieved*, not the rate it aimed for: past the knee a
//! publisher falls short of its target, and a curve over targets would hide that. The target
//! stays on the point as an attribute and in its tooltip.
//!
//! A capacity search runs each probed rate several times. Its curve has one point per rate,
//! the median over the runs of the achieved throughput and of each percentile (as `--runs`
//! reports a median): a line through every run would zigzag with run-to-run noise at each
//! rate and hide the trend the chart is for. Each run's own numbers are in the probes table,
//! and the point carries the range over its runs and how many of them failed.
//!
//! A run counts by its last try: the search runs a void one again (msgbench fell behind its
//! own schedule, so it measured the tool). A run still void after its tries measured nothing
//! of the system either: it is left out of the medians and counts as neither held nor failed,
//! and a rate where every run was void has no point (the knee would otherwise show the tool's
//! latency as the system's).

use super::model::{Capacity, Latency, Probe, ProbeLatency, Run, Verdict};
use crate::metric::Metric;
use crate::stats::significance::median;

/// The series drawn, in order: (legend id, metric name as a threshold names it, key of the
/// result's `percentiles_ns`).
pub(super) const SERIES: [(&str, &str, &str); 3] = [
    ("P50", "p50", "50"),
    ("P99", "p99", "99"),
    ("P99.9", "p99.9", "99.9"),
];

/// One point of the curve: a stage or a probed rate, with its three percentiles.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct KneePoint {
    /// Achieved throughput, msgs/s.
    pub(super) msgs_per_sec: f64,
    /// The rate the stage or probe aimed for, msgs/s.
    pub(super) target_rate: f64,
    /// Corrected latency in ns for each of [`SERIES`]; `None` where it was not measured.
    pub(super) latency_ns: [Option<f64>; 3],
    pub(super) origin: Origin,
}

/// Where a point comes from.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Origin {
    /// The stage of a rate schedule with this index.
    Stage { index: u64 },
    /// A probed rate of a capacity search: `runs` runs at it (each by its last try), `void`
    /// of them void (msgbench fell behind in every try), `measured` of the others with latency
    /// (the ones the medians are over), `failed` of the others not holding the rate (an SLO
    /// failed, or the publishers were held back); the range of each percentile over the
    /// measured runs.
    Rate {
        runs: usize,
        void: usize,
        measured: usize,
        failed: usize,
        range_ns: [Option<(f64, f64)>; 3],
    },
}

impl KneePoint {
    /// Whether a run behind the point that measured the system did not hold the rate (a stage
    /// is never judged on its own, and a void run is not judged at all).
    pub(super) fn failed(&self) -> bool {
        matches!(self.origin, Origin::Rate { failed, .. } if failed > 0)
    }
}

/// A latency SLO: the line drawn across the chart at its bound.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Slo {
    /// As written: `p99<2ms`.
    pub(super) expr: String,
    /// The bound in ns.
    pub(super) limit_ns: f64,
    /// Which of [`SERIES`] it bounds, when it bounds one (a `max<` or `p90<` bounds none
    /// drawn).
    pub(super) series: Option<usize>,
    /// The run's verdict on it, when the document holds one.
    pub(super) pass: Option<bool>,
}

/// The sustainable rate a capacity search found, with its confidence interval.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sustainable {
    pub(super) rate: f64,
    /// (level, low, high).
    pub(super) confidence: Option<(f64, f64, f64)>,
}

/// Everything the chart draws for one input.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Knee {
    /// In rising order of achieved throughput.
    pub(super) points: Vec<KneePoint>,
    pub(super) slos: Vec<Slo>,
    pub(super) sustainable: Option<Sustainable>,
    /// Probed rates with no point because every run at them was void, in rising order.
    pub(super) void_rates: Vec<f64>,
}

impl Knee {
    /// The curve of a rate-schedule run: one point per stage that measured latency. `None`
    /// when there is no schedule or no stage measured latency (a pubsub run).
    pub(super) fn of_result(run: &Run) -> Option<Self> {
        let schedule = run.schedule.as_ref()?;
        let points: Vec<KneePoint> = schedule
            .stages
            .iter()
            .filter_map(|s| {
                let l = s.latency.as_ref()?;
                let latency_ns = stage_percentiles(l);
                latency_ns.iter().any(Option::is_some).then_some(KneePoint {
                    msgs_per_sec: s.msgs_per_sec,
                    target_rate: s.target_rate,
                    latency_ns,
                    origin: Origin::Stage { index: s.index },
                })
            })
            .collect();
        let slos = run
            .thresholds
            .iter()
            .filter_map(|v| slo(&v.expr, Some(v)))
            .collect();
        Self::new(points, slos, None, Vec::new())
    }

    /// The curve of a capacity search: one point per probed rate (medians over its runs), the
    /// search's SLO, and the rate it found sustainable.
    pub(super) fn of_capacity(cap: &Capacity) -> Option<Self> {
        let mut rates: Vec<f64> = cap.probes.iter().map(|p| p.rate).collect();
        rates.sort_by(f64::total_cmp);
        rates.dedup();
        let mut void_rates = Vec::new();
        let points = rates
            .iter()
            .filter_map(|rate| {
                let runs = last_tries(cap.probes.iter().filter(|p| p.rate == *rate));
                if runs.iter().all(|p| p.void()) {
                    void_rates.push(*rate);
                }
                rate_point(*rate, &runs)
            })
            .collect();
        // The SLO is judged per probe, so the search as a whole has no one verdict on it.
        let slos = cap.slo.iter().filter_map(|e| slo(e, None)).collect();
        let sustainable = cap.sustainable_rate.map(|rate| Sustainable {
            rate,
            confidence: cap.confidence.as_ref().map(|c| (c.level, c.low, c.high)),
        });
        Self::new(points, slos, sustainable, void_rates)
    }

    fn new(
        mut points: Vec<KneePoint>,
        slos: Vec<Slo>,
        sustainable: Option<Sustainable>,
        void_rates: Vec<f64>,
    ) -> Option<Self> {
        if points.is_empty() {
            return None;
        }
        // Stable: stages at the same throughput keep their schedule order.
        points.sort_by(|a, b| a.msgs_per_sec.total_cmp(&b.msgs_per_sec));
        Some(Self {
            points,
            slos,
            sustainable,
            void_rates,
        })
    }
}

/// Each run's last try, in the order of the runs' first tries: a run the search repeated
/// (because it was void) counts by how its repeat went.
fn last_tries<'a>(probes: impl Iterator<Item = &'a Probe>) -> Vec<&'a Probe> {
    let mut last: Vec<&Probe> = Vec::new();
    for p in probes {
        match last.iter_mut().find(|q| q.run == p.run) {
            Some(q) => *q = p,
            None => last.push(p),
        }
    }
    last
}

fn stage_percentiles(l: &Latency) -> [Option<f64>; 3] {
    SERIES.map(|(_, _, key)| l.percentiles_ns.get(key).copied())
}

fn probe_percentiles(l: &ProbeLatency) -> [Option<f64>; 3] {
    [l.p50_ns, l.p99_ns, l.p999_ns]
}

/// The point of one probed rate from each run's last try: medians over the runs that
/// measured the system's latency.
fn rate_point(rate: f64, runs: &[&Probe]) -> Option<KneePoint> {
    let judged: Vec<&Probe> = runs.iter().copied().filter(|p| !p.void()).collect();
    let measured: Vec<(&Probe, [Option<f64>; 3])> = judged
        .iter()
        // A point needs both axes: latency and the rate achieved.
        .filter(|p| p.msgs_per_sec.is_some())
        .filter_map(|p| Some((*p, probe_percentiles(p.latency.as_ref()?))))
        .filter(|(_, l)| l.iter().any(Option::is_some))
        .collect();
    if measured.is_empty() {
        return None;
    }
    let throughput: Vec<f64> = measured
        .iter()
        .filter_map(|(p, _)| p.msgs_per_sec)
        .collect();
    let mut latency_ns = [None; 3];
    let mut range_ns = [None; 3];
    for i in 0..SERIES.len() {
        let vs: Vec<f64> = measured.iter().filter_map(|(_, l)| l[i]).collect();
        if vs.is_empty() {
            continue;
        }
        latency_ns[i] = Some(median(&vs));
        let lo = vs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        range_ns[i] = Some((lo, hi));
    }
    Some(KneePoint {
        msgs_per_sec: median(&throughput),
        target_rate: rate,
        latency_ns,
        origin: Origin::Rate {
            runs: runs.len(),
            void: runs.len() - judged.len(),
            measured: measured.len(),
            failed: judged.iter().filter(|p| !p.pass).count(),
            range_ns,
        },
    })
}

/// The SLO line of `expr` when it bounds a latency: read by the gate's own parser, so the
/// report reads `p99<2ms` exactly as `--threshold` does. Anything else (`lost==0`, or an
/// expression this msgbench cannot read) draws no line.
fn slo(expr: &str, verdict: Option<&Verdict>) -> Option<Slo> {
    let t = crate::gate::parse(expr).ok()?;
    let metric: Metric = t.metric();
    if !metric.is_latency() {
        return None;
    }
    let name = metric.name();
    Some(Slo {
        expr: t.to_string(),
        limit_ns: t.limit(),
        series: SERIES.iter().position(|(_, m, _)| *m == name),
        pass: verdict.map(|v| v.pass),
    })
}
