//! The latency-against-throughput chart, one per input that has a curve (a rate-schedule run
//! or a capacity search): corrected P50, P99 and P99.9 against achieved msgs/s, the SLO as
//! dashed lines, and a capacity search's sustainable rate as a vertical line in its confidence
//! band. Which numbers are drawn is [`super::knee`]'s; this file chooses the axes, series,
//! attributes and caption.
//!
//! The axes:
//! - x is linear from zero. The knee is a change of slope, and slopes only read true on a
//!   linear axis: on a log axis a queue's climb near saturation is squeezed into the last few
//!   pixels. Zero anchors it, so a gap between stages is as wide as it was.
//! - y is logarithmic, as on the other latency charts. Before the knee, latency is tens of µs;
//!   past it, it grows by orders of magnitude as a queue builds. On a linear axis everything
//!   before the knee lies flat on the bottom edge, so where the curve leaves the floor, and how
//!   far below its SLO line it was, cannot be read; on a log axis both can, and the distance
//!   from a point to its SLO line reads as a ratio (headroom) wherever it is.

use std::fmt::Write as _;

use super::knee::{Knee, KneePoint, Origin, SERIES};
use super::model::{CapInput, Input};
use super::page::figure;
use super::svg::{self, esc, num};
use super::PALETTE;
use crate::format;

/// P50, P99, P99.9 in [`SERIES`] order; the order of the values tells them apart as well, since
/// a higher percentile is never lower.
const COLORS: [&str; 3] = [PALETTE[0], PALETTE[1], PALETTE[3]];

/// The curve of a rate-schedule run, when it has one.
pub(super) fn result_knee(r: &Input) -> Option<String> {
    let knee = Knee::of_result(&r.run)?;
    let spec = r
        .run
        .schedule
        .as_ref()
        .map(|s| s.spec.as_str())
        .unwrap_or_default();
    let caption = format!(
        "Each point is one stage of the rate schedule <code>{}</code> of {}: the throughput \
         it achieved (the rate it aimed for is in the tooltip) against its corrected latency, \
         joined in order of throughput.",
        esc(spec),
        esc(&r.label)
    );
    Some(chart(&r.label, &knee, caption))
}

/// The curve of a capacity search, when any probe measured latency.
pub(super) fn capacity_knee(c: &CapInput) -> Option<String> {
    let knee = Knee::of_capacity(&c.cap)?;
    let mut caption = format!(
        "Each point is one rate the search of {} probed: the median over its runs of the \
         throughput achieved and of each corrected percentile (the range over the runs is in \
         the tooltip; every run is in the probes table). Hollow points: rates at which a run \
         did not hold (it failed the SLO, or its publishers were held back). A run in which \
         msgbench fell behind its own schedule is void: it measured the tool, not the \
         system, so it is left out and is neither held nor failed.",
        esc(&c.label)
    );
    if !knee.void_rates.is_empty() {
        let rates: Vec<String> = knee
            .void_rates
            .iter()
            .map(|r| format!("{}/s", format::count(*r)))
            .collect();
        let _ = write!(
            caption,
            " Not drawn, as every run there was void: {}.",
            rates.join(", ")
        );
    }
    if let Some(s) = &knee.sustainable {
        caption.push_str(" Green line: the sustainable rate it found");
        if let Some((level, _, _)) = s.confidence {
            let _ = write!(
                caption,
                ", in its {} % confidence interval (shaded)",
                format::sig(level * 100.0, 3, true)
            );
        }
        caption.push('.');
    }
    Some(chart(&c.label, &knee, caption))
}

fn chart(label: &str, knee: &Knee, mut caption: String) -> String {
    let lines: Vec<svg::Line> = SERIES
        .iter()
        .enumerate()
        .map(|(i, (id, _, _))| svg::Line {
            id: (*id).into(),
            color: COLORS[i],
            dashed: false,
            points: knee
                .points
                .iter()
                .filter_map(|p| Some(Some(point(id, p, p.latency_ns[i]?, i))))
                .collect(),
        })
        .filter(|l| !l.points.is_empty())
        .collect();
    let refs: Vec<svg::RefLine> = knee
        .slos
        .iter()
        .map(|s| svg::RefLine {
            y: s.limit_ns,
            label: format!(
                "SLO {}{}",
                s.expr,
                if s.pass == Some(false) {
                    " (failed)"
                } else {
                    ""
                }
            ),
            style: svg::RefStyle::Limit(s.series.map_or(PALETTE[6], |i| COLORS[i])),
        })
        .collect();
    let xrefs: Vec<svg::XRef> = knee
        .sustainable
        .iter()
        .map(|s| {
            let mut label = format!("sustainable {} msgs/s", format::si(s.rate, false));
            if let Some((level, lo, hi)) = s.confidence {
                let _ = write!(
                    label,
                    " ({} %: {} – {})",
                    format::sig(level * 100.0, 3, true),
                    format::si(lo, false),
                    format::si(hi, false)
                );
            }
            svg::XRef {
                x: s.rate,
                band: s.confidence.map(|(_, lo, hi)| (lo, hi)),
                label,
                observed: false,
            }
        })
        .collect();

    let ys = lines
        .iter()
        .flat_map(|l| l.points.iter().flatten().map(|p| p.y))
        .chain(refs.iter().map(|r| r.y));
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v.max(1.0)), hi.max(v))
    });
    let y = svg::Axis::log(lo, hi, "corrected latency (log scale)", |v| {
        format::ns(v, true)
    });
    let x_hi = knee
        .points
        .iter()
        .map(|p| p.msgs_per_sec)
        .chain(
            xrefs
                .iter()
                .map(|x| x.band.map_or(x.x, |(_, hi)| hi.max(x.x))),
        )
        .fold(0.0, f64::max);
    let x = svg::Axis::linear(0.0, x_hi, "achieved throughput (msgs/s)", |v| {
        format::si(v, true)
    });
    let chart = svg::Chart {
        kind: "latency-throughput",
        input: Some(label.to_string()),
        title: format!("Latency against throughput: {label}"),
        wide: true,
    };
    caption.push_str(
        " Latency is on a log scale so that the flat stretch before the knee and the climb \
         after it can both be read.",
    );
    if !refs.is_empty() {
        caption.push_str(
            " Dashed lines: the latency SLO, in the colour of the percentile each bounds.",
        );
    }
    figure(
        &svg::lines(&chart, &x, &y, &lines, &refs, &xrefs),
        &caption,
        true,
    )
}

/// Series `id`'s point for `p`, at `latency_ns`; `i` is the series' index in [`SERIES`].
fn point(id: &str, p: &KneePoint, latency_ns: f64, i: usize) -> svg::Point {
    let mut attrs = vec![
        ("data-msgs-per-sec", num(p.msgs_per_sec)),
        ("data-target-rate", num(p.target_rate)),
    ];
    let at = format!(
        "{} msgs/s achieved of {}/s",
        format::si(p.msgs_per_sec, false),
        format::si(p.target_rate, false)
    );
    let tip = match &p.origin {
        Origin::Stage { index } => {
            attrs.push(("data-stage", index.to_string()));
            format!(
                "{id}, stage {index}: {}, {at}",
                format::ns(latency_ns, false)
            )
        }
        Origin::Rate {
            runs,
            void,
            measured,
            failed,
            range_ns,
        } => {
            attrs.push(("data-runs", runs.to_string()));
            attrs.push(("data-void", void.to_string()));
            attrs.push(("data-measured", measured.to_string()));
            attrs.push(("data-failed", failed.to_string()));
            let mut tip = format!(
                "{id}, rate {}/s: {} (median of {measured}",
                format::si(p.target_rate, false),
                format::ns(latency_ns, false)
            );
            if let Some((lo, hi)) = range_ns[i] {
                attrs.push(("data-min", num(lo)));
                attrs.push(("data-max", num(hi)));
                if *measured > 1 {
                    let _ = write!(
                        tip,
                        ", {} – {}",
                        format::ns(lo, false),
                        format::ns(hi, false)
                    );
                }
            }
            let _ = write!(tip, "), {at}; ");
            let judged = runs - void;
            if *failed == 0 {
                let _ = write!(
                    tip,
                    "{judged} of {} held",
                    crate::format::counted(*runs as u64, "run")
                );
            } else {
                let _ = write!(
                    tip,
                    "{failed} of {} did not hold",
                    crate::format::counted(*runs as u64, "run")
                );
            }
            if *void > 0 {
                let _ = write!(
                    tip,
                    ", {void} void (msgbench fell behind its schedule in every try)"
                );
            }
            tip
        }
    };
    svg::Point {
        x: p.msgs_per_sec,
        x0: None,
        y: latency_ns,
        attrs,
        tip,
        hollow: p.failed(),
    }
}
