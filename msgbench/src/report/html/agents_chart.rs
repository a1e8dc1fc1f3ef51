//! The live page's latency chart of a run on agents: each agent's P99, second by second, as its
//! progress reports give it, with the run's SLOs on P99 drawn across it. There is no merged
//! latency while the run goes (a percentile of all samples cannot be made from each agent's),
//! so the chart shows every agent's own, and the result has the true merged one.

use super::page::figure;
use super::svg::{self, num};
use super::PALETTE;
use crate::format;

/// One agent's P99 over the run: `(seconds since the start, P99 in ns)`, oldest first.
pub struct AgentSeries {
    pub agent: String,
    pub points: Vec<(f64, f64)>,
}

/// The chart, or none before any agent has reported a P99. `slos` are as `--threshold` takes
/// them; those on `p99` are drawn (the other percentiles are not on the chart).
pub fn agents_p99(series: &[AgentSeries], label: &str, slos: &[String]) -> Option<String> {
    if series.iter().all(|s| s.points.is_empty()) {
        return None;
    }
    let lines: Vec<svg::Line> = series
        .iter()
        .enumerate()
        .map(|(i, s)| svg::Line {
            id: s.agent.clone(),
            color: PALETTE[i % PALETTE.len()],
            dashed: false,
            points: s
                .points
                .iter()
                .map(|&(t, v)| {
                    Some(svg::Point {
                        x: t,
                        x0: Some((t - 1.0).max(0.0)),
                        y: v,
                        attrs: vec![("data-t", num(t))],
                        tip: format!("{}, {} s: P99 {}", s.agent, num(t), format::ns(v, false)),
                        hollow: false,
                    })
                })
                .collect(),
        })
        .collect();
    let refs: Vec<svg::RefLine> = slos
        .iter()
        .filter_map(|expr| {
            let t = crate::gate::parse(expr).ok()?;
            (t.metric().name() == "p99").then(|| svg::RefLine {
                y: t.limit(),
                label: format!("SLO {t}"),
                style: svg::RefStyle::Limit(PALETTE[1]),
            })
        })
        .collect();
    let ys = lines
        .iter()
        .flat_map(|l| l.points.iter().flatten().map(|p| p.y))
        .chain(refs.iter().map(|r| r.y));
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v.max(1.0)), hi.max(v))
    });
    let end = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    let x = svg::Axis::linear_exact(0.0, end, "seconds since the start", |v| {
        format::sig(v, 3, true)
    });
    let y = svg::Axis::log(lo, hi, "latency (log scale)", |v| format::ns(v, true));
    let chart = svg::Chart {
        kind: "latency-timeline",
        wide: false,
        input: Some(label.to_string()),
        title: format!("P99 over time, per agent: {label}"),
    };
    let caption = "Each agent's P99 of the second it last reported, from its own clock's \
                   start of the run. The merged latency is in the result.";
    Some(figure(
        &svg::lines(&chart, &x, &y, &lines, &refs, &[]),
        caption,
        false,
    ))
}
