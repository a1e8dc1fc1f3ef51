//! What `msgbench report --history` draws, read from the store: for each benchmark (on the
//! testbed of its newest run, as `history check` picks its series), each headline metric's
//! runs in time order, every run's spread over its repeats (`--runs`), and the change points
//! `history check` finds in the series, judged by the same function ([`check::judge`]). The
//! drawing is the report's (`report::html`); this module only reads and judges, so the page and
//! the check cannot disagree about where a series changed.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Value;

use super::actions::{limit, open_at, series_heads, settings, store_err, DEFAULT_METRICS};
use super::check::{judge, Found};
use super::store::{Point, Store};
use crate::cli::{ReportSeriesArgs, SeriesArgs};
use crate::error::Result;
use crate::metric::Metric;
use crate::stats::changepoint::Settings;
use crate::stats::significance::median;

/// One benchmark on one testbed: a section of the page.
pub struct Benchmark {
    pub benchmark: String,
    pub name: Option<String>,
    pub scenario: String,
    pub testbed: String,
    pub metrics: Vec<MetricSeries>,
}

/// One metric of one benchmark over its runs, oldest first.
pub struct MetricSeries {
    pub metric: Metric,
    pub runs: Vec<Run>,
    /// The change points `history check` finds in `runs` (indices into it).
    pub changes: Vec<Found>,
}

/// One run's figure.
pub struct Run {
    pub point: Point,
    /// Over the run's repeats (`--runs`): (min, max, repeats); none for a single run, or when
    /// the stored result's repeats do not give the stored figure as their median (a row
    /// written by hand, whose document is another run's).
    pub spread: Option<(f64, f64, usize)>,
}

/// The history at `path` (or the default, as `history` finds it), read for drawing.
///
/// # Errors
/// A store that is not there or cannot be read; a benchmark that is not in it; no runs.
pub fn read(path: Option<&PathBuf>, args: &ReportSeriesArgs) -> Result<(PathBuf, Vec<Benchmark>)> {
    let store = open_at(path)?;
    let series = SeriesArgs {
        benchmark: args.benchmark.clone(),
        last: args.last,
        all: args.all,
        alpha: args.alpha.unwrap_or(Settings::default().alpha),
        // The window test is not drawn; only the change points are.
        window: 3,
    };
    let settings = settings(&series);
    // Each run's result document, read once for all its metrics.
    let mut docs: HashMap<String, Option<Value>> = HashMap::new();
    let mut out = Vec::new();
    for head in series_heads(&store, &series)? {
        let stored = store
            .metric_names(&head.benchmark, &head.testbed)
            .map_err(store_err)?;
        let mut metrics = Vec::new();
        for m in DEFAULT_METRICS
            .iter()
            .filter(|m| stored.iter().any(|s| s == *m))
        {
            let metric = Metric::parse(m).expect("a known metric");
            let points = store
                .series(&head.benchmark, &head.testbed, m, limit(&series))
                .map_err(store_err)?;
            // No tolerance: the page marks every change point; which are regressions is
            // `history check --tolerate`'s call.
            let judged = judge(metric, &points, &settings, 0.0);
            let runs = points
                .into_iter()
                .map(|point| {
                    let doc = document(&store, &mut docs, &point.run.run_id)?;
                    let values = doc.and_then(|d| metric.values(d).ok()).unwrap_or_default();
                    let spread = spread_of(&values, point.value);
                    Ok(Run { point, spread })
                })
                .collect::<Result<_>>()?;
            metrics.push(MetricSeries {
                metric,
                runs,
                changes: judged.changes,
            });
        }
        out.push(Benchmark {
            benchmark: head.benchmark,
            name: head.name,
            scenario: head.scenario,
            testbed: head.testbed,
            metrics,
        });
    }
    Ok((store.path().to_path_buf(), out))
}

/// A run's stored result document (none when it is not JSON), from `docs` once read.
fn document<'a>(
    store: &Store,
    docs: &'a mut HashMap<String, Option<Value>>,
    run_id: &str,
) -> Result<Option<&'a Value>> {
    if !docs.contains_key(run_id) {
        let stored = store.get(run_id).map_err(store_err)?;
        docs.insert(
            run_id.to_string(),
            serde_json::from_str(&stored.result_json).ok(),
        );
    }
    Ok(docs[run_id].as_ref())
}

/// (min, max, n) of `values` when there are several and their median is `figure`.
fn spread_of(values: &[f64], figure: f64) -> Option<(f64, f64, usize)> {
    if values.len() < 2 {
        return None;
    }
    let m = median(values);
    if (m - figure).abs() > 1e-9 * figure.abs().max(1.0) {
        return None;
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((lo, hi, values.len()))
}

#[cfg(test)]
mod tests {
    use super::spread_of;

    #[test]
    fn a_spread_is_shown_only_around_its_own_median() {
        assert_eq!(spread_of(&[3.0, 1.0, 2.0], 2.0), Some((1.0, 3.0, 3)));
        assert_eq!(spread_of(&[3.0, 1.0, 2.0], 5.0), None);
        assert_eq!(spread_of(&[2.0], 2.0), None);
    }
}
