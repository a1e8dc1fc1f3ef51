//! `msgbench diff BASE.json NEW.json`: metric by metric, how NEW compares with BASE, and whether
//! the difference is more than the noise between runs.
//!
//! Each metric's per-run values (from `--runs`; one value for a single run) go to
//! [`crate::stats::significance::compare`]: Welch's t on the logs gives the ratio, its 95%
//! interval and the p-value. A change is called only when p < 0.05; with one run per side no
//! change is called at all, because one run cannot tell a change from noise, and the output says
//! to use `--runs`.
//!
//! `--fail-on-regression PCT` turns the comparison into a gate: exit status 8 when a metric is
//! significantly worse by more than PCT. With single runs there is no significance to ask for,
//! so the gate then judges the point estimate alone, and says so.
//!
//! A line of the text output shows one statistic: the two figures either side of its arrow are
//! the centres its ratio divides (geometric means for the log method, means otherwise), printed
//! with as many digits as it takes for NEW ÷ BASE of the figures as printed to give the factor
//! printed and its direction. A reader can check every line by dividing; the medians, which the
//! ratio does not come from, stay in the JSON.
//!
//! One responsibility, one command: the comparison and its text. Its code is the first 582
//! lines, under the 600 the layers test allows; the rest of the file is its tests (the
//! 3,000-case check that every printed line divides to its ratio among them).

use std::io::Write;

use serde::Serialize;
use serde_json::Value;

use crate::cli::DiffArgs;
use crate::error::{exit, Error, Result};
use crate::format::{duration_ns_finer, grouped};
use crate::metric::{Family, Metric};
use crate::report::{load, Doc, DocKind};
use crate::stats::significance::{compare, median, Change};

/// Significance level of every verdict.
const ALPHA: f64 = 0.05;

/// Compared when `--metric` is not given: throughput and the latency percentiles people quote.
const DEFAULT_METRICS: [&str; 5] = ["msgs_per_sec", "p50", "p90", "p99", "p99.9"];
/// The same for `conns`, whose load is connections.
const CONNS_DEFAULT_METRICS: [&str; 5] = [
    "connects_per_sec",
    "connect_p50",
    "connect_p90",
    "connect_p99",
    "connect_p99.9",
];

/// The metrics compared without `--metric`: those of the base result's kind of load.
fn default_metrics(base: &Value) -> Vec<Metric> {
    let names: &[&str] = match Family::of_doc(base) {
        Family::Connections => &CONNS_DEFAULT_METRICS,
        Family::Messages => &DEFAULT_METRICS,
    };
    names
        .iter()
        .map(|m| Metric::parse(m).expect("a known metric"))
        .collect()
}

/// What became of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly better.
    Better,
    /// Significantly worse.
    Worse,
    NoChange,
    /// One run on a side: no test possible.
    Untested,
}

/// One metric of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct MetricDiff {
    pub metric: String,
    pub base_median: f64,
    pub new_median: f64,
    pub base_values: Vec<f64>,
    pub new_values: Vec<f64>,
    pub change: Change,
    pub verdict: Verdict,
    /// Worse by more than `--fail-on-regression` (and significant, when it could be tested).
    pub regression: bool,
    /// The sentence the text output prints.
    pub summary: String,
    /// The centres as the text output prints them, BASE then NEW.
    #[serde(skip)]
    shown: (String, String),
}

/// The `--json` document of a diff.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    pub schema: &'static str,
    pub base: Side,
    pub new: Side,
    pub alpha: f64,
    /// The `--fail-on-regression` fraction (0.05 for 5%).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_on_regression: Option<f64>,
    pub metrics: Vec<MetricDiff>,
    /// Metrics asked for that a side lacks, with why.
    pub skipped: Vec<Skipped>,
    pub regressed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub file: String,
    pub scenario: String,
    pub runs: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub metric: String,
    pub why: String,
}

pub const SCHEMA: &str = "msgbench.diff/v1";

/// Compares two results and returns the exit status.
///
/// # Errors
/// Unreadable or foreign input files, an unknown `--metric`, a `--json` file that cannot be
/// written.
pub fn run(args: &DiffArgs) -> Result<u8> {
    let chosen: Vec<Metric> = args
        .metric
        .iter()
        .map(|m| Metric::parse(m).map_err(|why| Error::flag("--metric", m, why)))
        .collect::<Result<_>>()?;
    let base = result_doc(&args.base, args.class.as_deref())?;
    let new = result_doc(&args.new, args.class.as_deref())?;
    let metrics = if chosen.is_empty() {
        default_metrics(&base.value)
    } else {
        chosen
    };
    let report = diff(&base, &new, &metrics, args.fail_on_regression);
    if report.base.scenario != report.new.scenario {
        eprintln!(
            "warning: comparing a {} run with a {} run",
            report.base.scenario, report.new.scenario
        );
    }
    let text = render(&report);
    let json = || {
        let mut v = serde_json::to_vec_pretty(&report).expect("a diff serialises");
        v.push(b'\n');
        v
    };
    match args.json.as_deref() {
        Some(p) if p == std::path::Path::new("-") => {
            let _ = std::io::stderr().write_all(text.as_bytes());
            let _ = std::io::stdout().write_all(&json());
        }
        Some(p) => {
            std::fs::write(p, json())
                .map_err(|e| Error::io(format!("cannot write --json file '{}'", p.display()), e))?;
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
        None => {
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
    }
    Ok(if report.regressed {
        exit::THRESHOLD
    } else {
        exit::OK
    })
}

fn result_doc(path: &std::path::Path, class: Option<&str>) -> Result<Doc> {
    if let Some(class) = class {
        return crate::report::load_class(path, class);
    }
    let doc = load(path)?;
    let what = match doc.kind {
        DocKind::Result => return Ok(doc),
        DocKind::Calibration => "a calibration",
        DocKind::Capacity => "a capacity search",
    };
    Err(Error::Usage(format!(
        "'{}' is {what}, not a run's result; diff compares results",
        path.display()
    )))
}

fn runs_of(doc: &Value) -> usize {
    doc.pointer("/runs/n")
        .and_then(Value::as_u64)
        .map_or(1, |n| n as usize)
}

/// The comparison of `metrics` between two result documents.
pub fn diff(base: &Doc, new: &Doc, metrics: &[Metric], fail_on: Option<f64>) -> DiffReport {
    let side = |d: &Doc| Side {
        file: d.name.clone(),
        scenario: d
            .value
            .get("scenario")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
        runs: runs_of(&d.value),
    };
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for &m in metrics {
        let (b, n) = match (m.values(&base.value), m.values(&new.value)) {
            (Ok(b), Ok(n)) => (b, n),
            (Err(why), _) => {
                skipped.push(Skipped {
                    metric: m.name(),
                    why: format!("{}: {why}", base.name),
                });
                continue;
            }
            (_, Err(why)) => {
                skipped.push(Skipped {
                    metric: m.name(),
                    why: format!("{}: {why}", new.name),
                });
                continue;
            }
        };
        let Some(change) = compare(&b, &n) else {
            skipped.push(Skipped {
                metric: m.name(),
                why: "no usable values".into(),
            });
            continue;
        };
        out.push(judge(m, b, n, change, fail_on));
    }
    let regressed = out.iter().any(|d| d.regression);
    DiffReport {
        schema: SCHEMA,
        base: side(base),
        new: side(new),
        alpha: ALPHA,
        fail_on_regression: fail_on,
        metrics: out,
        skipped,
        regressed,
    }
}

/// How far NEW is from BASE in the metric's good direction: above 1 is better.
fn goodness(m: Metric, ratio: f64) -> f64 {
    if m.higher_is_better() {
        ratio
    } else {
        1.0 / ratio
    }
}

fn judge(m: Metric, b: Vec<f64>, n: Vec<f64>, c: Change, fail_on: Option<f64>) -> MetricDiff {
    let good = goodness(m, c.ratio);
    let verdict = if c.p_value.is_none() {
        Verdict::Untested
    } else if !c.significant(ALPHA) {
        Verdict::NoChange
    } else if good > 1.0 {
        Verdict::Better
    } else {
        Verdict::Worse
    };
    // Worse by more than the allowance: `good` below 1 − PCT. Untested single runs are judged
    // on the point estimate, the only thing they have.
    let regression = fail_on.is_some_and(|pct| {
        good < 1.0 - pct && matches!(verdict, Verdict::Worse | Verdict::Untested)
    });
    let shown = shown(m, &c);
    let summary = sentence(m, &c, verdict, &shown);
    MetricDiff {
        metric: m.name(),
        base_median: median(&b),
        new_median: median(&n),
        base_values: b,
        new_values: n,
        change: c,
        verdict,
        regression,
        summary,
        shown: (shown.base, shown.new),
    }
}

/// Which way NEW lies from BASE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
    Same,
}

impl Direction {
    fn of(ratio: f64) -> Self {
        if ratio > 1.0 {
            Direction::Up
        } else if ratio < 1.0 {
            Direction::Down
        } else {
            Direction::Same
        }
    }
}

/// The factor as a line tells it: in the direction of the change, so always ≥ 1 ("1.25×
/// slower", never "0.8× faster").
fn told(ratio: f64) -> f64 {
    if ratio >= 1.0 {
        ratio
    } else {
        1.0 / ratio
    }
}

fn factor_text(f: f64) -> String {
    format!("{f:.2}")
}

/// More decimals than a figure's usual that `shown` may add before it gives up agreeing with
/// the ratio: past about 9 significant digits the figures are as exact as the ratio is.
const MAX_EXTRA_DECIMALS: usize = 9;

/// The two centres as printed, the factor stated and which way it goes.
struct Shown {
    base: String,
    new: String,
    /// Told as [`told`] does; `None` when there is no ratio to state (a BASE of 0).
    factor: Option<f64>,
    direction: Direction,
}

/// The centres printed with the fewest extra digits at which a reader dividing NEW by BASE as
/// printed gets the factor printed (to its two decimals) and its direction. Where no precision
/// does (the ratio sits on a rounding boundary to within the last bits of a double), the
/// finest figures are printed and the factor is the one they give, so the line still agrees
/// with itself.
fn shown(m: Metric, c: &Change) -> Shown {
    let direction = Direction::of(c.ratio);
    let want = factor_text(told(c.ratio));
    let mut finest = None;
    for extra in 0..=MAX_EXTRA_DECIMALS {
        let (base, new) = (
            figure(m, c.base_centre, extra),
            figure(m, c.new_centre, extra),
        );
        let q = match (read_figure(&base), read_figure(&new)) {
            (Some(b), Some(n)) if b != 0.0 => n / b,
            _ => f64::NAN,
        };
        if q.is_finite() && Direction::of(q) == direction && factor_text(told(q)) == want {
            return Shown {
                base,
                new,
                factor: c.ratio.is_finite().then(|| told(c.ratio)),
                direction,
            };
        }
        finest = Some((base, new, q));
    }
    let (base, new, q) = finest.expect("at least one precision is tried");
    Shown {
        base,
        new,
        factor: q.is_finite().then(|| told(q)),
        direction: if q.is_finite() {
            Direction::of(q)
        } else {
            direction
        },
    }
}

/// A centre as the text prints it, `extra` decimals finer than usual: latency in time units;
/// everything else as a number with thousands grouped, to at least three significant digits
/// (a mean `lost` of 0.6 is not "1").
fn figure(m: Metric, v: f64, extra: usize) -> String {
    if m.is_duration() {
        return duration_ns_finer(v, extra);
    }
    let decimals = if v == 0.0 || !v.is_finite() {
        0
    } else {
        (2 - v.abs().log10().floor() as i32).max(0) as usize
    };
    grouped(v, decimals + extra)
}

/// A printed figure read back as a reader would: `6,268.4` is 6268.4, `251.0 µs` is 251,000
/// (ns). `None` for text that is not a figure.
fn read_figure(text: &str) -> Option<f64> {
    let mut parts = text.split_whitespace();
    let n: f64 = parts.next()?.replace(',', "").parse().ok()?;
    let scale = match parts.next() {
        None => 1.0,
        Some("ns") => 1.0,
        Some("µs") => 1e3,
        Some("ms") => 1e6,
        Some("s") => 1e9,
        Some(_) => return None,
    };
    parts.next().is_none().then_some(n * scale)
}

/// "NEW is 1.23 ± 0.04× faster in msgs/s (p < 0.01)", "no significant change (…)".
fn sentence(m: Metric, c: &Change, verdict: Verdict, shown: &Shown) -> String {
    let name = m.name().replace("msgs_per_sec", "msgs/s");
    let p = match c.p_value {
        Some(p) if p < 0.001 => "p < 0.001".to_string(),
        Some(p) if p < 0.01 => "p < 0.01".to_string(),
        Some(p) => format!("p = {}", p_text(p)),
        None => String::new(),
    };
    if c.base_centre == 0.0 || c.new_centre == 0.0 {
        // No factor to tell between a zero and anything: say what happened instead.
        let what = match (c.base_centre == 0.0, c.new_centre == 0.0) {
            (true, true) => "0 on both sides",
            (true, false) => "from zero to non-zero",
            _ => "from non-zero to zero",
        };
        return match verdict {
            Verdict::Untested => {
                format!("{name}: {what}, one run on a side: not tested (use --runs 5 or more)")
            }
            Verdict::NoChange => format!("no significant change in {name} ({what}, {p})"),
            Verdict::Better | Verdict::Worse => format!("{name}: {what} ({p})"),
        };
    }
    let Some(factor) = shown.factor else {
        return format!("{name}: no ratio to state ({p})");
    };
    // Rates go faster or slower; everything else (latency, counts) goes higher or lower.
    let word = match (m.name().ends_with("_per_sec"), shown.direction) {
        (_, Direction::Same) => "",
        (true, Direction::Up) => " faster",
        (true, Direction::Down) => " slower",
        (false, Direction::Up) => " higher",
        (false, Direction::Down) => " lower",
    };
    let pm = match (c.ci_low, c.ci_high) {
        (Some(lo), Some(hi)) => {
            let (a, b) = (told_as(c.ratio, lo), told_as(c.ratio, hi));
            format!(" ± {:.2}", (a - b).abs() / 2.0)
        }
        _ => String::new(),
    };
    let f = factor_text(factor);
    match verdict {
        Verdict::Better | Verdict::Worse => format!("NEW is {f}{pm}×{word} in {name} ({p})"),
        Verdict::NoChange => format!("no significant change in {name} ({f}×{word}, {p})"),
        Verdict::Untested => {
            format!("{name}: {f}×{word}, one run on a side: not tested (use --runs 5 or more)")
        }
    }
}

/// An end of the ratio's interval, told in the direction the ratio itself is told.
fn told_as(ratio: f64, r: f64) -> f64 {
    if ratio >= 1.0 {
        r
    } else {
        1.0 / r
    }
}

/// What a line's two figures are, in words, and why when it is not the usual.
fn statistic(c: &Change) -> (&'static str, Option<&'static str>) {
    match (c.centre, c.method, c.n_base.max(c.n_new)) {
        ("geometric_mean", ..) => ("geometric means of the runs", None),
        (_, _, 1) => ("the one run on each side", None),
        (_, "welch", _) => (
            "means of the runs",
            Some("a run measured 0 or less, which has no logarithm"),
        ),
        _ => ("means of the runs", Some("a side has one run")),
    }
}

/// A p-value with two decimals, or as many more as it takes to stay on its side of [`ALPHA`]:
/// 0.0496 is a significant difference and must not read "p = 0.05".
fn p_text(p: f64) -> String {
    (2..=6)
        .map(|d| format!("{p:.d$}"))
        .find(|t| t.parse::<f64>().is_ok_and(|r| (r < ALPHA) == (p < ALPHA)))
        .unwrap_or_else(|| format!("{p:e}"))
}

/// The text output.
fn render(r: &DiffReport) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let runs = |s: &Side| match s.runs {
        1 => "1 run".to_string(),
        n => format!("{n} runs"),
    };
    let _ = writeln!(
        o,
        "msgbench diff: BASE {} ({}, {}) → NEW {} ({}, {})",
        r.base.file,
        r.base.scenario,
        runs(&r.base),
        r.new.file,
        r.new.scenario,
        runs(&r.new)
    );
    // Which statistic the figures are, said once; by metric only where they differ.
    type Kind = (&'static str, Option<&'static str>);
    let mut kinds: Vec<(Kind, Vec<String>)> = Vec::new();
    for d in &r.metrics {
        let name = d.metric.replace("msgs_per_sec", "msgs/s");
        let kind = statistic(&d.change);
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, names)) => names.push(name),
            None => kinds.push((kind, vec![name])),
        }
    }
    let why = |w: Option<&str>| w.map_or(String::new(), |w| format!(" ({w})"));
    let kinds = match kinds.as_slice() {
        [] => None,
        [((one, w), _)] => Some(format!("{one}{}", why(*w))),
        many => Some(
            many.iter()
                .map(|((k, w), names)| format!("{k} for {}{}", names.join(", "), why(*w)))
                .collect::<Vec<_>>()
                .join("; "),
        ),
    };
    if let Some(kinds) = kinds {
        let _ = writeln!(
            o,
            "  figures: {kinds}. Each factor is NEW ÷ BASE of its line's two figures."
        );
    }
    // Names line up: 8 wide, or as wide as the longest (conns' connects_per_sec).
    let w = r
        .metrics
        .iter()
        .map(|d| d.metric.replace("msgs_per_sec", "msgs/s").chars().count())
        .chain(r.skipped.iter().map(|s| s.metric.chars().count()))
        .fold(8, usize::max);
    for d in &r.metrics {
        let flag = if d.regression { "  REGRESSION" } else { "" };
        let _ = writeln!(
            o,
            "  {:<w$} {:>12} → {:<12}  {}{flag}",
            d.metric.replace("msgs_per_sec", "msgs/s"),
            d.shown.0,
            d.shown.1,
            d.summary
        );
    }
    for s in &r.skipped {
        let _ = writeln!(o, "  {:<w$} not compared: {}", s.metric, s.why);
    }
    if let Some(pct) = r.fail_on_regression {
        let untested = r
            .metrics
            .iter()
            .any(|d| d.verdict == Verdict::Untested && d.regression);
        let _ = writeln!(
            o,
            "{} --fail-on-regression {}%{}",
            if r.regressed { "FAIL" } else { "PASS" },
            pct * 100.0,
            if untested {
                " (single runs: judged on the point estimate, untested)"
            } else {
                ""
            }
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn without_metric_a_conns_result_is_compared_on_its_connect_figures() {
        let names = |doc: Value| -> Vec<String> {
            default_metrics(&doc).iter().map(|m| m.name()).collect()
        };
        assert_eq!(
            names(json!({"scenario": "conns", "conns": {"connected": 1}})),
            [
                "connects_per_sec",
                "connect_p50",
                "connect_p90",
                "connect_p99",
                "connect_p99.9"
            ]
        );
        assert_eq!(
            names(json!({"scenario": "pub", "conns": null})),
            ["msgs_per_sec", "p50", "p90", "p99", "p99.9"]
        );
    }

    fn doc(name: &str, rates: &[f64], p99: &[f64]) -> Doc {
        let n = rates.len();
        Doc {
            path: name.into(),
            name: name.into(),
            kind: DocKind::Result,
            value: json!({
                "schema": "msgbench.result/v1",
                "scenario": "pubsub",
                "throughput": {"msgs_per_sec": rates[0]},
                "latency": {"percentiles_ns": {"99": p99[0]}},
                "runs": {"n": n, "metrics": {
                    "msgs_per_sec": {"values": rates},
                    "p99": {"values": p99}
                }}
            }),
        }
    }

    fn metrics(names: &[&str]) -> Vec<Metric> {
        names.iter().map(|n| Metric::parse(n).unwrap()).collect()
    }

    #[test]
    fn directions_and_wording_follow_the_metric() {
        let base = doc(
            "a",
            &[100.0, 101.0, 99.0, 100.5],
            &[1000.0, 1010.0, 990.0, 1005.0],
        );
        let new = doc(
            "b",
            &[125.0, 126.0, 124.0, 125.5],
            &[800.0, 808.0, 792.0, 804.0],
        );
        let r = diff(&base, &new, &metrics(&["msgs_per_sec", "p99"]), Some(0.05));
        let (rate, p99) = (&r.metrics[0], &r.metrics[1]);
        assert_eq!(rate.verdict, Verdict::Better);
        assert!(
            rate.summary.starts_with("NEW is 1.25 ± "),
            "{}",
            rate.summary
        );
        assert!(
            rate.summary.contains("× faster in msgs/s (p < 0.001)"),
            "{}",
            rate.summary
        );
        // Lower latency is better: 1.25× lower.
        assert_eq!(p99.verdict, Verdict::Better);
        assert!(p99.summary.contains("1.25 ± "), "{}", p99.summary);
        assert!(p99.summary.contains("× lower in p99"), "{}", p99.summary);
        assert!(!r.regressed);
        // The other way round is a regression on both.
        let r = diff(&new, &base, &metrics(&["msgs_per_sec", "p99"]), Some(0.05));
        assert!(r
            .metrics
            .iter()
            .all(|d| d.verdict == Verdict::Worse && d.regression));
        assert!(
            r.metrics[0].summary.contains("1.25"),
            "{}",
            r.metrics[0].summary
        );
        assert!(r.metrics[0].summary.contains("slower"));
        assert!(r.metrics[1].summary.contains("higher in p99"));
        // A smaller allowance than the change still fails; a larger one passes.
        let r = diff(&new, &base, &metrics(&["msgs_per_sec"]), Some(0.30));
        assert!(!r.regressed);
    }

    #[test]
    fn single_runs_are_untested_and_gate_on_the_point_estimate() {
        let base = doc("a", &[100.0], &[1000.0]);
        let new = doc("b", &[90.0], &[1000.0]);
        let r = diff(&base, &new, &metrics(&["msgs_per_sec"]), Some(0.05));
        let d = &r.metrics[0];
        assert_eq!(d.verdict, Verdict::Untested);
        assert!(d.summary.contains("not tested"), "{}", d.summary);
        assert!(d.regression && r.regressed);
        assert!(render(&r).contains("single runs: judged on the point estimate"));
        let r = diff(&base, &new, &metrics(&["msgs_per_sec"]), Some(0.15));
        assert!(!r.regressed);
    }

    #[test]
    fn metrics_a_side_lacks_are_listed_not_compared() {
        let base = doc("a", &[100.0, 101.0], &[1.0, 2.0]);
        let new = doc("b", &[100.0, 101.0], &[1.0, 2.0]);
        let r = diff(&base, &new, &metrics(&["p50", "msgs_per_sec"]), None);
        assert_eq!(r.metrics.len(), 1);
        assert_eq!(r.skipped[0].metric, "p50");
        assert!(render(&r).contains("p50      not compared: a: "));
    }

    /// A deterministic generator (splitmix64), with normal draws (Box–Muller).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }

        fn normal(&mut self) -> f64 {
            let (a, b) = (self.next().max(f64::MIN_POSITIVE), self.next());
            (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
        }

        fn pick<T: Copy>(&mut self, from: &[T]) -> T {
            from[((self.next() * from.len() as f64) as usize).min(from.len() - 1)]
        }
    }

    /// The figures, factor and direction word of one printed metric line, as a reader takes
    /// them: `  p99   251.0 µs → 243.7 µs   NEW is 1.03 ± 0.01× lower in p99 (p < 0.01)`.
    fn read_line(line: &str) -> (f64, f64, f64, Option<String>, [String; 2]) {
        let (left, right) = line.split_once(" → ").expect("an arrow");
        // The metric's name, then BASE's figure.
        let base = left
            .trim()
            .split_once(' ')
            .expect("name and figure")
            .1
            .trim();
        let (new, rest) = right
            .split_once("  ")
            .expect("two spaces after NEW's figure");
        let at = rest.find('×').expect("a factor");
        let before = rest[..at].split(" ± ").next().unwrap();
        let factor: f64 = before
            .rsplit([' ', '('])
            .next()
            .unwrap()
            .parse()
            .expect("a factor's number");
        let word = rest[at + '×'.len_utf8()..]
            .split([' ', ',', ')'])
            .nth(1)
            .filter(|w| ["faster", "slower", "higher", "lower"].contains(w))
            .map(str::to_string);
        (
            read_figure(base).expect("BASE's figure"),
            read_figure(new.trim()).expect("NEW's figure"),
            factor,
            word,
            [base.to_string(), new.trim().to_string()],
        )
    }

    /// `text`'s last digit, in the figure's base unit: what rounding to it can be off by, twice.
    fn resolution(text: &str) -> f64 {
        let number = text.split_whitespace().next().unwrap();
        let decimals = number.split_once('.').map_or(0, |(_, f)| f.len());
        let scale = read_figure(&format!(
            "1 {}",
            text.split_whitespace().nth(1).unwrap_or("")
        ))
        .or_else(|| read_figure("1"))
        .unwrap();
        10f64.powi(-(decimals as i32)) * scale
    }

    #[test]
    fn every_line_divides_to_its_own_factor_and_direction() {
        let mut rng = Rng(7);
        let ratios = [
            1.0, 1.001, 0.999, 1.004, 0.996, 1.005, 0.995, 1.0051, 0.9949, 1.006, 1.01, 0.99,
            1.0149, 1.0151, 1.05, 0.95, 1.16, 1.23, 0.8, 2.5, 0.3, 7.0,
        ];
        let (mut lines, mut skewed) = (0, 0);
        for case in 0..3000 {
            let metric = rng.pick(&["msgs_per_sec", "bytes_per_sec", "p50", "p99", "max"]);
            let m = Metric::parse(metric).unwrap();
            // Levels across units and their edges (999.7 µs is one step from 1.00 ms), and
            // rates from a few a second (where a whole number is too coarse) to millions.
            let level = if m.is_latency() {
                rng.pick(&[300.0, 999.7, 999_700.0, 45_663.0, 251_000.0, 12.57e6, 1.5e9])
                    * (0.5 + rng.next())
            } else {
                10f64.powf(rng.next() * 7.0 - 0.5)
            };
            let ratio = rng.pick(&ratios);
            // Skewed runs: a wide log-normal spread and now and then one run far out, so that
            // a side's median and its geometric mean disagree.
            let sigma = rng.pick(&[0.0, 0.003, 0.05, 0.4, 0.9]);
            let nb = rng.pick(&[1usize, 2, 3, 5, 8]);
            let nn = rng.pick(&[1usize, 2, 3, 5, 8]);
            let mut draw = |centre: f64, n: usize| -> Vec<f64> {
                (0..n)
                    .map(|i| {
                        let out = if i == 0 && rng.next() < 0.3 { 8.0 } else { 1.0 };
                        centre * out * (sigma * rng.normal()).exp()
                    })
                    .collect()
            };
            let b = draw(level, nb);
            let n = draw(level * ratio, nn);
            let c = compare(&b, &n).unwrap();
            if (median(&b) - c.base_centre).abs() > 0.01 * c.base_centre {
                skewed += 1;
            }
            let d = judge(m, b, n, c.clone(), Some(0.05));
            let r = DiffReport {
                schema: SCHEMA,
                base: Side {
                    file: "a.json".into(),
                    scenario: "pubsub".into(),
                    runs: nb,
                },
                new: Side {
                    file: "b.json".into(),
                    scenario: "pubsub".into(),
                    runs: nn,
                },
                alpha: ALPHA,
                fail_on_regression: None,
                metrics: vec![d],
                skipped: Vec::new(),
                regressed: false,
            };
            let text = render(&r);
            // The statistic the figures are is named.
            assert!(text.contains(statistic(&c).0), "case {case}: {text}");
            let line = text.lines().nth(2).expect("the metric's line");
            let (bv, nv, factor, word, [base_text, new_text]) = read_line(line);
            // The figures are the centres the ratio divides, rounded as printed.
            assert!(
                (bv - c.base_centre).abs() <= resolution(&base_text),
                "case {case}: BASE {bv} is not the centre {}: {line}",
                c.base_centre
            );
            assert!(
                (nv - c.new_centre).abs() <= resolution(&new_text),
                "case {case}: NEW {nv} is not the centre {}: {line}",
                c.new_centre
            );
            // Divided, they give the factor to its printed precision, and its direction.
            let q = nv / bv;
            let (want_factor, want_word) = match (m.name().ends_with("_per_sec"), q) {
                (_, 1.0) => (1.0, None),
                (true, q) if q > 1.0 => (q, Some("faster")),
                (true, q) => (1.0 / q, Some("slower")),
                (false, q) if q > 1.0 => (q, Some("higher")),
                (false, q) => (1.0 / q, Some("lower")),
            };
            assert_eq!(
                format!("{factor:.2}"),
                format!("{want_factor:.2}"),
                "case {case}: {nv} / {bv} = {q}: {line}"
            );
            assert_eq!(word.as_deref(), want_word, "case {case}: {line}");
            // And the factor is the statistic's own, not one made up to fit.
            assert_eq!(
                format!("{factor:.2}"),
                factor_text(told(c.ratio)),
                "case {case}: ratio {}: {line}",
                c.ratio
            );
            lines += 1;
        }
        assert_eq!(lines, 3000);
        assert!(
            skewed > 500,
            "only {skewed} cases had a median off the centre"
        );
    }

    #[test]
    fn a_p_value_never_reads_as_the_other_side_of_alpha() {
        assert_eq!(p_text(0.0496), "0.0496");
        assert_eq!(p_text(0.0504), "0.05");
        assert_eq!(p_text(0.049), "0.049");
        assert_eq!(p_text(0.5), "0.50");
        assert_eq!(p_text(0.05), "0.05");
    }
}
