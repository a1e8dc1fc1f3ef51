//! `history check` and `history trend`: a metric's series, analysed by
//! `stats::changepoint`, and what the analysis means for the newest run given which way the
//! metric is better. The newest run is judged by the change that put it where it is: the
//! window test when the newest runs have moved (significantly) from the level since the last
//! change point, else that last change point. It is a regression when it makes the metric
//! worse by more than `--tolerate`.

use serde::Serialize;

use super::store::{Point, RunRow};
use crate::metric::Metric;
use crate::stats::changepoint::{self, Analysis, Settings};
use crate::stats::significance::Change;

/// Where a change is: the first run at the new level.
#[derive(Debug, Clone, Serialize)]
pub struct At {
    pub run_id: String,
    pub started_at: String,
    pub labels: std::collections::BTreeMap<String, String>,
    /// Its index in the series analysed, oldest first.
    pub index: usize,
}

impl At {
    fn of(run: &RunRow, index: usize) -> At {
        At {
            run_id: run.run_id.clone(),
            started_at: run.started_at.clone(),
            labels: run.labels.clone(),
            index,
        }
    }
}

/// One change point of the series, placed and sized.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    pub at: At,
    /// For a drift, where its last step is; absent for a step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift_until: Option<At>,
    /// The level after against the level before: ratio, 95% interval, Welch's p.
    pub change: Change,
    /// The permutation test's p-value.
    pub p_value: f64,
    /// Whether the change makes the metric worse.
    pub worse: bool,
}

/// The verdict on one metric of one series.
#[derive(Debug, Clone, Serialize)]
pub struct Judged {
    pub metric: String,
    pub higher_is_better: bool,
    /// Runs analysed.
    pub runs: usize,
    /// `regression`, `improvement`, `no change`, or `too few runs`.
    pub verdict: &'static str,
    /// The change the verdict is about: the window's when it is significant, else the last
    /// change point's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Found>,
    /// The window test as it came out (the newest runs against the runs since the last change
    /// point).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// Every change point in the series analysed.
    pub changes: Vec<Found>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Window {
    pub from: At,
    pub baseline_from: At,
    pub change: Change,
}

/// Analyses `points` (oldest first) of `metric`, judging the newest run with `tolerate` (a
/// fraction) at significance `settings.alpha`.
pub fn judge(metric: Metric, points: &[Point], settings: &Settings, tolerate: f64) -> Judged {
    let values: Vec<f64> = points.iter().map(|p| p.value).collect();
    let higher = metric.higher_is_better();
    let worse = |c: &Change| {
        if higher {
            c.ratio < 1.0 - tolerate
        } else {
            c.ratio > 1.0 + tolerate
        }
    };
    let better = |c: &Change| {
        if higher {
            c.ratio > 1.0 + tolerate
        } else {
            c.ratio < 1.0 - tolerate
        }
    };
    let mut judged = Judged {
        metric: metric.name(),
        higher_is_better: higher,
        runs: values.len(),
        verdict: "too few runs",
        change: None,
        window: None,
        changes: Vec::new(),
    };
    if values.len() < 4 {
        return judged;
    }
    let Analysis { changes, window } = changepoint::analyse(&values, settings);
    judged.changes = changes
        .iter()
        .map(|c| Found {
            at: At::of(&points[c.index].run, c.index),
            drift_until: (c.end != c.index).then(|| At::of(&points[c.end].run, c.end)),
            change: c.change.clone(),
            p_value: c.p_value,
            worse: worse(&c.change),
        })
        .collect();
    judged.window = window.map(|w| Window {
        from: At::of(&points[w.start].run, w.start),
        baseline_from: At::of(&points[w.base_start].run, w.base_start),
        change: w.change,
    });
    // The newest run sits after the last change point, at the level it started: that change
    // is the newest run's news, however many runs ago it began (a gate keeps failing until the
    // level is back, as a threshold would). A significant window is newer still: the newest
    // runs have moved away from the level since the last change point, too recently for a
    // change point of their own.
    //
    // Either way the change is named by the first run at the new level, as `trend` marks it: a
    // change point at the window's start or inside it is the window's move, already placed
    // (and sized over all its runs); else the new level starts where the window's runs split
    // best from their baseline, which is the window's first run only when all of it moved.
    let last = judged.changes.last();
    let windowed = judged
        .window
        .as_ref()
        .filter(|w| w.change.significant(settings.alpha))
        .map(|w| match last.filter(|c| c.at.index >= w.from.index) {
            Some(c) => c.clone(),
            None => {
                let at = changepoint::level_start(&values, w.baseline_from.index, w.from.index);
                Found {
                    at: At::of(&points[at].run, at),
                    drift_until: None,
                    change: w.change.clone(),
                    p_value: w.change.p_value.unwrap_or(1.0),
                    worse: worse(&w.change),
                }
            }
        });
    let pick = windowed.or_else(|| last.cloned());
    judged.verdict = match &pick {
        Some(f) if worse(&f.change) => "regression",
        Some(f) if better(&f.change) => "improvement",
        _ => "no change",
    };
    judged.change = pick;
    judged
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn points(values: &[f64]) -> Vec<Point> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| Point {
                run: RunRow {
                    run_id: format!("r{i}"),
                    benchmark: "b".into(),
                    name: None,
                    scenario: "latency".into(),
                    testbed: "t".into(),
                    started_at: format!("2026-01-01T00:00:{i:02}Z"),
                    labels: BTreeMap::new(),
                },
                value: *v,
            })
            .collect()
    }

    /// 20 runs at `a`, then 10 at `b`, with a fixed ±1% pattern.
    fn step(a: f64, b: f64) -> Vec<Point> {
        let wobble = [0.01, -0.01, 0.005, -0.005, 0.0];
        let v: Vec<f64> = (0..30)
            .map(|i| if i < 20 { a } else { b } * (1.0 + wobble[i % 5]))
            .collect();
        points(&v)
    }

    #[test]
    fn latency_that_grows_is_a_regression_and_throughput_that_grows_is_not() {
        let s = Settings::default();
        let p99 = Metric::parse("p99").unwrap();
        let rate = Metric::parse("msgs_per_sec").unwrap();
        let up = step(100.0, 120.0);
        let j = judge(p99, &up, &s, 0.03);
        assert_eq!(j.verdict, "regression");
        assert_eq!(j.change.as_ref().unwrap().at.run_id, "r20");
        assert_eq!(judge(rate, &up, &s, 0.03).verdict, "improvement");
        assert_eq!(
            judge(rate, &step(100.0, 80.0), &s, 0.03).verdict,
            "regression"
        );
        assert_eq!(
            judge(p99, &step(100.0, 80.0), &s, 0.03).verdict,
            "improvement"
        );
    }

    #[test]
    fn a_change_within_the_tolerance_is_no_regression() {
        let s = Settings::default();
        let p99 = Metric::parse("p99").unwrap();
        let j = judge(p99, &step(100.0, 120.0), &s, 0.25);
        assert_eq!(j.verdict, "no change");
        // Still reported.
        assert_eq!(j.changes.len(), 1);
    }

    /// 7 runs at 100, then `slow` runs at 38 (the newcomer's -62%), with a fixed ±1% pattern.
    fn seven_then_slow(slow: usize) -> Vec<Point> {
        let wobble = [0.01, -0.01, 0.005, -0.005, 0.0, 0.0075, -0.0075];
        let v: Vec<f64> = (0..7 + slow)
            .map(|i| if i < 7 { 100.0 } else { 38.0 } * (1.0 + wobble[i % 7]))
            .collect();
        points(&v)
    }

    #[test]
    fn the_first_slow_run_is_named_however_many_slow_runs_follow() {
        // Three slow runs are the fewest the default window of three can judge; with four, the
        // change point sits one run before the window, which the window's baseline once left
        // out of both sides and so named the second slow run.
        let rate = Metric::parse("msgs_per_sec").unwrap();
        for slow in 3..=9 {
            let j = judge(rate, &seven_then_slow(slow), &Settings::default(), 0.03);
            assert_eq!(j.verdict, "regression", "{slow} slow runs: {j:?}");
            let at = &j.change.as_ref().unwrap().at;
            assert_eq!(at.run_id, "r7", "{slow} slow runs: {j:?}");
            // The window leaves no run out between its baseline and itself.
            let w = j.window.as_ref().unwrap();
            assert!(w.from.index <= 7 || w.baseline_from.index == 7, "{w:?}");
        }
    }

    #[test]
    fn a_window_wider_than_the_change_names_its_first_run_at_the_new_level() {
        // A window of 6 over 7 + 5 slow runs starts at a run of the old level: the change is
        // named where the new level starts, not where the window does.
        let rate = Metric::parse("msgs_per_sec").unwrap();
        let s = Settings {
            window: 6,
            ..Settings::default()
        };
        for slow in 3..=5 {
            let j = judge(rate, &seven_then_slow(slow), &s, 0.03);
            if let Some(c) = &j.change {
                assert_eq!(c.at.run_id, "r7", "{slow} slow runs: {j:?}");
            }
        }
        let j = judge(rate, &seven_then_slow(5), &s, 0.03);
        assert_eq!(j.verdict, "regression", "{j:?}");
    }

    #[test]
    fn three_runs_are_too_few() {
        let p99 = Metric::parse("p99").unwrap();
        let j = judge(p99, &points(&[1.0, 2.0, 3.0]), &Settings::default(), 0.03);
        assert_eq!(j.verdict, "too few runs");
    }
}
