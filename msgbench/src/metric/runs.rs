//! `--runs N`: one scenario repeated, and what the repetitions say together. Every metric
//! (see [`crate::metric`]) gets its median, range and median absolute deviation over the runs,
//! with the per-run values kept so `diff` can test a change against the noise. The sections of
//! one run stand at the top level of the result: the run whose headline figure is the median
//! (P99 for the latency scenario, whose rate is fixed; the connect P99 for `conns`, whose load
//! is connections; msgs/s for the rest), so the histograms,
//! timeline and delivery shown belong together and are typical.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::metric::Metric;
use crate::stats::significance::{mad, median};

/// One metric over the runs.
#[derive(Debug, Clone, Serialize)]
pub struct MetricRuns {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Median absolute deviation from the median: the spread, robust to one odd run.
    pub mad: f64,
    /// In run order.
    pub values: Vec<f64>,
}

/// One run's identity and how it ended.
#[derive(Debug, Clone, Serialize)]
pub struct RunEntry {
    pub run_id: String,
    pub started_at: String,
    pub interrupted: bool,
    /// The exit status this run alone would have had (thresholds aside).
    pub exit_status: u8,
}

/// The `runs` section of a result.
#[derive(Debug, Clone, Serialize)]
pub struct RunsReport {
    pub n: usize,
    /// Which run (0-based) the top-level sections come from.
    pub representative: usize,
    /// The metric that chose it.
    pub representative_by: String,
    pub runs: Vec<RunEntry>,
    /// Metrics every run measured.
    pub metrics: BTreeMap<String, MetricRuns>,
}

/// Summarises the runs' documents (their JSON form). `entries` describe the same runs.
pub fn summarize(scenario: &str, docs: &[Value], entries: Vec<RunEntry>) -> RunsReport {
    let mut metrics = BTreeMap::new();
    for m in Metric::all() {
        let values: Result<Vec<f64>, _> = docs.iter().map(|d| m.read_one(d)).collect();
        let Ok(values) = values else { continue };
        if values.is_empty() {
            continue;
        }
        let (min, max) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        metrics.insert(
            m.name(),
            MetricRuns {
                median: median(&values),
                min,
                max,
                mad: mad(&values),
                values,
            },
        );
    }
    let by = if scenario == "latency" && metrics.contains_key("p99") {
        "p99"
    } else if metrics.contains_key("msgs_per_sec") {
        "msgs_per_sec"
    } else {
        // `conns`: its load is connections, and the whole first connect is its headline.
        "connect_p99"
    };
    let representative = metrics.get(by).map_or(0, |m| closest_to_median(&m.values));
    RunsReport {
        n: docs.len(),
        representative,
        representative_by: by.to_string(),
        runs: entries,
        metrics,
    }
}

/// The index of the value nearest the median (the lower middle one for an even count, so the
/// choice is a run that happened, not an average of two).
fn closest_to_median(values: &[f64]) -> usize {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|a, b| values[*a].total_cmp(&values[*b]));
    order
        .get((values.len().saturating_sub(1)) / 2)
        .copied()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(rate: f64, p99: u64) -> Value {
        json!({
            "throughput": {"msgs": 100, "msgs_per_sec": rate, "bytes_per_sec": rate * 8.0},
            "delivery": {"sent": 100, "received": 100, "lost": 0},
            "errors": {},
            "latency": {"min_ns": 1, "max_ns": p99 * 2, "mean_ns": 5.0,
                        "percentiles_ns": {"50": p99 / 2, "99": p99}}
        })
    }

    fn entries(n: usize) -> Vec<RunEntry> {
        (0..n)
            .map(|i| RunEntry {
                run_id: format!("r{i}"),
                started_at: String::new(),
                interrupted: false,
                exit_status: 0,
            })
            .collect()
    }

    #[test]
    fn each_metric_gets_median_range_and_spread() {
        let docs = [doc(100.0, 9), doc(300.0, 7), doc(200.0, 8)];
        let r = summarize("pubsub", &docs, entries(3));
        let m = &r.metrics["msgs_per_sec"];
        assert_eq!(
            (m.median, m.min, m.max, m.mad),
            (200.0, 100.0, 300.0, 100.0)
        );
        assert_eq!(m.values, vec![100.0, 300.0, 200.0]);
        assert_eq!(r.metrics["p99"].median, 8.0);
        // The median run by msgs/s is the third.
        assert_eq!(
            (r.representative, r.representative_by.as_str()),
            (2, "msgs_per_sec")
        );
        // The latency scenario picks by P99 instead: run 2 (p99 8).
        let r = summarize("latency", &docs, entries(3));
        assert_eq!((r.representative, r.representative_by.as_str()), (2, "p99"));
        // Percentiles the documents lack are left out, not zero.
        assert!(!r.metrics.contains_key("p99.9"));
        assert!(!r.metrics.contains_key("duplicated"));
    }

    #[test]
    fn a_metric_missing_from_one_run_is_left_out() {
        let mut odd = doc(100.0, 9);
        odd.as_object_mut().unwrap().remove("latency");
        let r = summarize("pubsub", &[doc(200.0, 8), odd], entries(2));
        assert!(r.metrics.contains_key("msgs_per_sec"));
        assert!(!r.metrics.contains_key("p99"));
        // Even count: the lower middle run.
        assert_eq!(r.representative, 1);
    }
}
