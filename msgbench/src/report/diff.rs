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

use std::io::Write;

use serde::Serialize;
use serde_json::Value;

use crate::cli::DiffArgs;
use crate::error::{exit, Error, Result};
use crate::format::{duration_ns, group};
use crate::metric::Metric;
use crate::report::{load, Doc, DocKind};
use crate::stats::significance::{compare, median, Change};

/// Significance level of every verdict.
const ALPHA: f64 = 0.05;

/// Compared when `--metric` is not given: throughput and the latency percentiles people quote.
const DEFAULT_METRICS: [&str; 5] = ["msgs_per_sec", "p50", "p90", "p99", "p99.9"];

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
    let metrics: Vec<Metric> = if args.metric.is_empty() {
        DEFAULT_METRICS
            .iter()
            .map(|m| Metric::parse(m).expect("a known metric"))
            .collect()
    } else {
        args.metric
            .iter()
            .map(|m| Metric::parse(m).map_err(|why| Error::flag("--metric", m, why)))
            .collect::<Result<_>>()?
    };
    let base = result_doc(&args.base)?;
    let new = result_doc(&args.new)?;
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

fn result_doc(path: &std::path::Path) -> Result<Doc> {
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
    let summary = sentence(m, &c, verdict);
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
    }
}

/// "NEW is 1.23 ± 0.04× faster in msgs/s (p < 0.01)", "no significant change (…)".
fn sentence(m: Metric, c: &Change, verdict: Verdict) -> String {
    let name = m.name().replace("msgs_per_sec", "msgs/s");
    let p = match c.p_value {
        Some(p) if p < 0.001 => "p < 0.001".to_string(),
        Some(p) if p < 0.01 => "p < 0.01".to_string(),
        Some(p) => format!("p = {}", p_text(p)),
        None => String::new(),
    };
    // The factor is told in the direction of the change, so it is always ≥ 1: "1.25× slower",
    // never "0.8× faster".
    let up = c.ratio >= 1.0;
    let factor = |r: f64| if up { r } else { 1.0 / r };
    // Rates go faster or slower; everything else (latency, counts) goes higher or lower.
    let word = match (m.name().ends_with("_per_sec"), up) {
        (true, true) => "faster",
        (true, false) => "slower",
        (false, true) => "higher",
        (false, false) => "lower",
    };
    if !c.ratio.is_finite() {
        return format!("{name}: from zero to non-zero ({p})");
    }
    let pm = match (c.ci_low, c.ci_high) {
        (Some(lo), Some(hi)) => {
            let (a, b) = (factor(lo), factor(hi));
            format!(" ± {:.2}", (a - b).abs() / 2.0)
        }
        _ => String::new(),
    };
    match verdict {
        Verdict::Better | Verdict::Worse => {
            format!("NEW is {:.2}{pm}× {word} in {name} ({p})", factor(c.ratio))
        }
        Verdict::NoChange => format!(
            "no significant change in {name} ({:.2}× {word}, {p})",
            factor(c.ratio)
        ),
        Verdict::Untested => format!(
            "{name}: {:.2}× {word}, one run on a side: not tested (use --runs 5 or more)",
            factor(c.ratio)
        ),
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

fn figure(m: &str, v: f64) -> String {
    match Metric::parse(m) {
        Ok(m) if m.is_latency() => duration_ns(v),
        _ => group(v.round() as u64),
    }
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
    for d in &r.metrics {
        let flag = if d.regression { "  REGRESSION" } else { "" };
        let _ = writeln!(
            o,
            "  {:<8} {:>12} → {:<12}  {}{flag}",
            d.metric.replace("msgs_per_sec", "msgs/s"),
            figure(&d.metric, d.base_median),
            figure(&d.metric, d.new_median),
            d.summary
        );
    }
    for s in &r.skipped {
        let _ = writeln!(o, "  {:<8} not compared: {}", s.metric, s.why);
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

    #[test]
    fn a_p_value_never_reads_as_the_other_side_of_alpha() {
        assert_eq!(p_text(0.0496), "0.0496");
        assert_eq!(p_text(0.0504), "0.05");
        assert_eq!(p_text(0.049), "0.049");
        assert_eq!(p_text(0.5), "0.50");
        assert_eq!(p_text(0.05), "0.05");
    }
}
