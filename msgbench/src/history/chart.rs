//! `msgbench report --history`: the runs kept in a history, drawn as one page with a section
//! per benchmark and a chart per headline metric over its runs in time order. The series and
//! their change points are read and judged by `over_time` (the analysis `history check`
//! runs); this file only draws them, with the report's own kit, style and script, so a history
//! page and a result's report are one design. It lives here, not in `report`, as the live page
//! lives in `output`: the report's kit is below both, and the report reads no history.
//!
//! What a chart shows, and why:
//! - one point per run at its stored figure, which for a run of several repeats (`--runs`) is
//!   their median, with a whisker over their range: a point alone would hide how far one
//!   run's repeats already disagree;
//! - per segment between change points, the segment's median as a level line, shaded across
//!   its interquartile range: the level a change moved from and to, and the run-to-run noise
//!   it moved against (the middle half of the runs, which one outlier does not stretch);
//! - each change point as a vertical line at the first run of the new level (shaded over a
//!   drift's runs), labelled with its size and the permutation test's p-value;
//! - on hover over a point, the run's id, start time and labels (commit, branch, …).
//!
//! The x axis is the runs' order, not their clock: a history has bursts of runs and quiet
//! weeks, and on a time axis a week of CI runs would crowd into one spot. The ticks name the
//! start time of the run they sit under.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::over_time::{self, Benchmark, MetricSeries};
use crate::cli::ReportArgs;
use crate::error::{exit, Error, Result};
use crate::format;
use crate::report::html::page::{figure, section, CSS, JS};
use crate::report::html::svg::{self, esc};
use crate::report::html::tables::Unit;
use crate::report::html::{plural, PALETTE};

/// Ticks under the x axis at most; more would overlap their time labels.
const X_TICKS: usize = 6;

/// Writes the page of the history at `path` (None: the default, as `history` finds it).
///
/// # Errors
/// A history that is not there or cannot be read, a `--benchmark` not in it, an output file
/// that cannot be written or is the history itself.
pub fn run(path: Option<&PathBuf>, args: &ReportArgs) -> Result<u8> {
    let (db, benchmarks) = over_time::read(path, &args.series)?;
    if std::fs::canonicalize(&args.output)
        .is_ok_and(|o| std::fs::canonicalize(&db).is_ok_and(|d| d == o))
    {
        return Err(Error::Usage(format!(
            "the output '{}' is the history itself; give another file with -o",
            args.output.display()
        )));
    }
    let html = page(&db, &benchmarks);
    std::fs::write(&args.output, html)
        .map_err(|e| Error::io(format!("cannot write '{}'", args.output.display()), e))?;
    let runs: usize = benchmarks
        .iter()
        .map(|b| b.metrics.iter().map(|m| m.runs.len()).max().unwrap_or(0))
        .sum();
    println!(
        "report: wrote {} ({}, {} from '{}')",
        args.output.display(),
        plural(benchmarks.len(), "benchmark"),
        plural(runs, "run"),
        db.display()
    );
    Ok(exit::OK)
}

/// The whole page.
fn page(db: &Path, benchmarks: &[Benchmark]) -> String {
    let mut o = String::with_capacity(64 * 1024);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"msgbench {v}\">\n\
         <title>msgbench history: {}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
         <header>\n<h1>msgbench history</h1>\n<p class=\"sub\">{} in <code>{}</code>, written by \
         msgbench {v}</p>\n</header>\n<main>\n<p class=\"note\">One point per run, oldest first: \
         its figure, which for a run of several repeats (<code>--runs</code>) is their median, \
         with a whisker over their range. The horizontal lines are each segment's median \
         between change points, shaded across its interquartile range (the middle half of its \
         runs). Vertical lines mark the change points <code>history check</code> finds, at the \
         first run of the new level, with the change's size and p-value. Hover over a point for \
         its run, start time and labels.</p>\n",
        esc(&db.display().to_string()),
        esc(&plural(benchmarks.len(), "benchmark")),
        esc(&db.display().to_string()),
        v = esc(env!("CARGO_PKG_VERSION"))
    );
    for b in benchmarks {
        benchmark(&mut o, b);
    }
    o.push_str("</main>\n");
    let _ = write!(
        o,
        "<footer>Written by msgbench {}. Charts are drawn in the page (no scripts, no network).\
         </footer>\n<script>\n{JS}</script>\n</body>\n</html>\n",
        esc(env!("CARGO_PKG_VERSION"))
    );
    o
}

/// One benchmark's section: its identity, then a chart per metric.
fn benchmark(o: &mut String, b: &Benchmark) {
    let title = format!(
        "{}{} ({}), testbed {}",
        b.benchmark,
        b.name
            .as_deref()
            .map_or(String::new(), |n| format!(" '{n}'")),
        b.scenario,
        b.testbed
    );
    let _ = writeln!(
        o,
        "<div class=\"benchmark\" data-benchmark=\"{}\" data-testbed=\"{}\">",
        esc(&b.benchmark),
        esc(&b.testbed)
    );
    let charts: Vec<String> = b.metrics.iter().map(|m| chart(b, m)).collect();
    if charts.is_empty() {
        let _ = writeln!(
            o,
            "<h2>Benchmark {}</h2>\n<p class=\"note\">No headline metric is stored for it.</p>",
            esc(&title)
        );
    } else {
        section(
            o,
            &format!("benchmark-{}", esc(&b.benchmark)),
            &format!("Benchmark {title}"),
            &charts,
        );
    }
    o.push_str("</div>\n");
}

/// A run's start time, short enough for a tick: `11-27 03:46` from RFC 3339.
fn short_time(t: &str) -> String {
    t.get(5..16)
        .map_or_else(|| t.to_string(), |s| s.replacen('T', " ", 1))
}

fn unit(m: &MetricSeries) -> Unit {
    if m.metric.is_duration() {
        Unit::Ns
    } else if m.metric.name().ends_with("_per_sec") {
        Unit::Rate
    } else {
        Unit::Count
    }
}

/// The `q` quantile of sorted `xs`, interpolated linearly between order statistics.
fn quantile(xs: &[f64], q: f64) -> f64 {
    let at = q * (xs.len() - 1) as f64;
    let (i, frac) = (at.floor() as usize, at.fract());
    match xs.get(i + 1) {
        Some(next) => xs[i] + (next - xs[i]) * frac,
        None => xs[i],
    }
}

/// The segments of `n` runs between change points given as (first run of the new level, first
/// run of a drift's last step; equal for a step), as (first, last) run indices: a drift's own
/// runs, moving from one level to the next, belong to no segment.
fn segments(n: usize, changes: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for &(at, end) in changes {
        if at > start {
            out.push((start, at - 1));
        }
        start = end;
    }
    if start < n {
        out.push((start, n - 1));
    }
    out
}

/// One metric's chart.
fn chart(b: &Benchmark, m: &MetricSeries) -> String {
    let unit = unit(m);
    let name = m.metric.name();
    let n = m.runs.len();
    let points = run_points(m, unit, &name);
    let whiskers = whiskers(m);
    let levels = levels(m, unit);
    let xrefs = change_marks(m);
    let hi = m
        .runs
        .iter()
        .map(|r| {
            r.spread
                .map_or(r.point.value, |(_, hi, _)| hi.max(r.point.value))
        })
        .fold(0.0, f64::max);
    // From zero, as the report's rates are: a drop has to look as deep as it was.
    let y = svg::Axis::linear(0.0, hi, &name, |v| match unit {
        Unit::Ns => format::ns(v, true),
        _ => format::si(v, true),
    });
    let every = n.div_ceil(X_TICKS).max(1);
    let x = svg::Axis {
        scale: svg::Scale::Linear {
            lo: -0.5,
            hi: n as f64 - 0.5,
        },
        ticks: (0..n)
            .step_by(every)
            .map(|i| svg::Tick {
                at: i as f64,
                label: short_time(&m.runs[i].point.run.started_at),
            })
            .collect(),
        label: "runs, oldest first (start time, UTC)".into(),
    };
    let line = svg::Line {
        id: name.clone(),
        color: PALETTE[0],
        dashed: false,
        points,
    };
    let chart = svg::Chart {
        kind: "history",
        input: Some(format!("{}/{name}", b.benchmark)),
        title: format!("{name} over {}", plural(n, "run")),
        wide: true,
    };
    let mut caption = format!(
        "{} of benchmark {}, one point per run. {}",
        esc(&name),
        esc(&b.benchmark),
        if m.metric.higher_is_better() {
            "Higher is better."
        } else {
            "Lower is better."
        }
    );
    match m.changes.len() {
        0 => caption.push_str(" No change point."),
        k => {
            let _ = write!(
                caption,
                " {}: {}.",
                esc(&plural(k, "change point")),
                esc(&xrefs
                    .iter()
                    .map(|x| x.label.clone())
                    .collect::<Vec<_>>()
                    .join("; "))
            );
        }
    }
    figure(
        &svg::lines_marked(
            &chart,
            &x,
            &y,
            &[line],
            &[],
            &xrefs,
            &svg::Marks { levels, whiskers },
        ),
        &caption,
        true,
    )
}

/// One point per run, its hover text naming the run, its time, its repeats and its labels.
fn run_points(m: &MetricSeries, unit: Unit, name: &str) -> Vec<Option<svg::Point>> {
    m.runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let run = &r.point.run;
            let mut tip = format!(
                "run {}, {}: {} = {}",
                run.run_id,
                run.started_at,
                name,
                unit.fmt(r.point.value)
            );
            if let Some((lo, hi, k)) = r.spread {
                let _ = write!(
                    tip,
                    " (median of {k} repeats, {} – {})",
                    unit.fmt(lo),
                    unit.fmt(hi)
                );
            }
            for (k, v) in &run.labels {
                let _ = write!(tip, "\n{k}={v}");
            }
            Some(svg::Point {
                x: i as f64,
                x0: None,
                y: r.point.value,
                attrs: vec![
                    ("data-run", run.run_id.clone()),
                    ("data-index", i.to_string()),
                    ("data-started", run.started_at.clone()),
                ],
                tip,
                hollow: false,
            })
        })
        .collect()
}

/// A whisker over each run's repeats, where it has them.
fn whiskers(m: &MetricSeries) -> Vec<svg::Whisker> {
    m.runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            r.spread.map(|(lo, hi, _)| svg::Whisker {
                x: i as f64,
                lo,
                hi,
            })
        })
        .collect()
}

/// Each segment between change points as its median over its interquartile band.
fn levels(m: &MetricSeries, unit: Unit) -> Vec<svg::Level> {
    let n = m.runs.len();
    let changes: Vec<(usize, usize)> = m
        .changes
        .iter()
        .map(|c| {
            (
                c.at.index,
                c.drift_until.as_ref().map_or(c.at.index, |d| d.index),
            )
        })
        .collect();
    segments(n, &changes)
        .into_iter()
        .map(|(first, last)| {
            let mut vs: Vec<f64> = m.runs[first..=last].iter().map(|r| r.point.value).collect();
            vs.sort_by(f64::total_cmp);
            let (q1, mid, q3) = (quantile(&vs, 0.25), quantile(&vs, 0.5), quantile(&vs, 0.75));
            let band = (vs.len() > 1).then_some((q1, q3));
            let mut label = format!(
                "runs {}–{}: median {}",
                m.runs[first].point.run.run_id,
                m.runs[last].point.run.run_id,
                unit.fmt(mid)
            );
            if band.is_some() {
                let _ = write!(
                    label,
                    ", interquartile range {} – {} ({})",
                    unit.fmt(q1),
                    unit.fmt(q3),
                    format::counted(vs.len() as u64, "run")
                );
            }
            svg::Level {
                x0: first as f64 - 0.4,
                x1: last as f64 + 0.4,
                y: mid,
                band,
                label,
                // Grey, apart from the runs' blue: a summary of them, not another series.
                color: PALETTE[6],
            }
        })
        .collect()
}

/// Each change point as a vertical mark (a band over a drift) with its size and p-value.
fn change_marks(m: &MetricSeries) -> Vec<svg::XRef> {
    m.changes
        .iter()
        .map(|c| {
            let ci = match (c.change.ci_low, c.change.ci_high) {
                (Some(l), Some(h)) => {
                    format!(" [{}, {}]", format::change_pct(l), format::change_pct(h))
                }
                _ => String::new(),
            };
            svg::XRef {
                x: c.at.index as f64,
                band: c
                    .drift_until
                    .as_ref()
                    .map(|d| (c.at.index as f64, d.index as f64)),
                label: format!(
                    "{}{ci}, p {} at {}",
                    format::change_pct(c.change.ratio).trim(),
                    format::sig(c.p_value, 2, true),
                    c.at.run_id
                ),
                observed: false,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{quantile, segments, short_time};

    #[test]
    fn segments_lie_between_change_points_and_leave_a_drift_out() {
        assert_eq!(segments(10, &[]), vec![(0, 9)]);
        assert_eq!(segments(10, &[(4, 4)]), vec![(0, 3), (4, 9)]);
        // A drift over runs 3..6: its runs are neither level.
        assert_eq!(segments(10, &[(3, 6)]), vec![(0, 2), (6, 9)]);
        assert_eq!(segments(5, &[(2, 2), (4, 4)]), vec![(0, 1), (2, 3), (4, 4)]);
    }

    #[test]
    fn quartiles_interpolate_between_runs() {
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&xs, 0.25), 2.0);
        assert_eq!(quantile(&xs, 0.5), 3.0);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.25), 1.75);
        assert_eq!(quantile(&[7.0], 0.75), 7.0);
    }

    #[test]
    fn a_tick_shows_month_day_and_minute() {
        assert_eq!(short_time("2026-11-27T03:46:44Z"), "11-27 03:46");
        assert_eq!(short_time("soon"), "soon");
    }
}
