//! The charts the page shows and where each reads its numbers in a result: latency by
//! percentile (every input in one chart), throughput and latency side by side (when there are
//! several inputs), and per input: latency and throughput over time, and throughput per client.
//! Drawing is [`svg`]'s; this file chooses the series, axes, scales and captions.

use std::fmt::Write as _;

use super::model::{percentile_label, percentile_x, CalInput, Input, Tick, TickLatency, Timeline};
use super::page::figure;
use super::servers;
use super::svg::{self, esc, num};
use super::tables::Unit;
use super::PALETTE;
use crate::format;

/// Beyond this many clients a per-client line chart is a tangle of lines; the timeline's
/// sent/received totals are drawn instead.
const MAX_CLIENT_LINES: usize = 16;

/// Latency by percentile, every input with latency in one chart.
///
/// y is logarithmic: a latency distribution's body (tens of µs) and its tail (ms) are orders of
/// magnitude apart, and on a linear axis the body flattens into the bottom edge so that only
/// the tail can be read; on a log axis both can, and the gap between corrected and
/// uncorrected reads as a ratio wherever it occurs.
pub(super) fn percentile_chart(results: &[Input], cals: &[CalInput]) -> Option<String> {
    let mut lines = Vec::new();
    let mut from_summary = Vec::new();
    for r in results {
        for (curve, which, dashed) in [
            (&r.corrected, "corrected", false),
            (&r.uncorrected, "uncorrected", true),
        ] {
            let Some(curve) = curve else { continue };
            if !curve.from_histogram {
                from_summary.push(format!("{} {which}", r.label));
            }
            let id = format!("{} {which}", r.label);
            let points = curve
                .points
                .iter()
                .map(|(q, v)| {
                    let pct = q * 100.0;
                    Some(svg::Point {
                        x: percentile_x(*q, curve.count),
                        x0: None,
                        y: *v,
                        attrs: vec![("data-percentile", num(pct))],
                        hollow: false,
                        tip: format!(
                            "{id}: P{} = {}",
                            format::sig(pct, 6, true),
                            format::ns(*v, false)
                        ),
                    })
                })
                .collect();
            lines.push(svg::Line {
                id,
                color: r.color,
                dashed,
                points,
            });
        }
    }
    if lines.is_empty() {
        return None;
    }
    // The floor through the server, once (one hop: what `latency` measures) and twice (a
    // request and its reply), from the first calibration given.
    let mut refs = Vec::new();
    if let Some(cal) = cals.first() {
        for (hop, name) in [("one_hop", "one hop"), ("two_hop", "two hops")] {
            if let Some(p50) = cal
                .floors()
                .iter()
                .find(|(k, _)| *k == hop)
                .and_then(|(_, v)| v.get("p50"))
            {
                refs.push(svg::RefLine {
                    y: *p50,
                    label: format!("floor P50, {name} ({})", cal.label),
                    style: svg::RefStyle::Floor,
                });
            }
        }
    }
    let ys = lines
        .iter()
        .flat_map(|l| l.points.iter().flatten().map(|p| p.y))
        .chain(refs.iter().map(|r| r.y));
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v.max(1.0)), hi.max(v))
    });
    let y = svg::Axis::log(lo, hi, "latency (log scale)", |v| format::ns(v, true));
    let top = lines
        .iter()
        .flat_map(|l| l.points.iter().flatten().map(|p| p.x))
        .fold(5.0f64, f64::max)
        .ceil();
    let x = svg::Axis {
        scale: svg::Scale::Linear { lo: 0.0, hi: top },
        ticks: (0..=top as u32)
            .map(|k| svg::Tick {
                at: f64::from(k),
                label: percentile_label(k),
            })
            .collect(),
        label: "percentile (each step right is ten times rarer)".into(),
    };
    let chart = svg::Chart {
        kind: "percentiles",
        input: None,
        title: "Latency by percentile".into(),
        wide: true,
    };
    let mut caption = String::from(
        "Solid: corrected for coordinated omission (timed from when each message was due). \
         Dashed: uncorrected (timed from when it was actually sent), what tools without the \
         correction report. The latency axis is logarithmic so the body of the distribution \
         and its tail can both be read; the curve ends at the maximum, placed at 1 in N \
         observations.",
    );
    if !refs.is_empty() {
        caption.push_str(" Dotted lines: this machine's calibrated floor (median round trip).");
    }
    if !from_summary.is_empty() {
        let _ = write!(
            caption,
            " Drawn from the summary percentiles only (the file carries no histogram): {}.",
            esc(&from_summary.join(", "))
        );
    }
    Some(figure(
        &svg::lines(&chart, &x, &y, &lines, &refs, &[]),
        &caption,
        true,
    ))
}

/// The value and range of a named figure for a comparison bar.
fn compare_bar(r: &Input, name: &str, unit: Unit, color: Option<&'static str>) -> Option<svg::Bar> {
    let f = r.figure(name).ok()?;
    let mut tip = format!("{}: {}", r.label, unit.fmt(f.value));
    if let Some((lo, hi, n)) = f.spread {
        let _ = write!(
            tip,
            " (median of {n} runs, {} – {})",
            unit.fmt(lo),
            unit.fmt(hi)
        );
    }
    Some(svg::Bar {
        value: f.value,
        range: f.spread.map(|(lo, hi, _)| (lo, hi)),
        color,
        label: Some(match unit {
            Unit::Ns => format::ns(f.value, true),
            _ => format::si(f.value, true),
        }),
        tip,
    })
}

pub(super) fn compare_throughput(results: &[Input]) -> String {
    let cats: Vec<String> = results.iter().map(|r| r.label.clone()).collect();
    let set = svg::BarSet {
        id: "msgs/s".into(),
        color: PALETTE[0],
        bars: results
            .iter()
            .map(|r| compare_bar(r, "msgs_per_sec", Unit::Rate, Some(r.color)))
            .collect(),
    };
    let chart = svg::Chart {
        kind: "compare-throughput",
        wide: false,
        input: None,
        title: "Throughput by input (msgs/s, all clients)".into(),
    };
    figure(
        &svg::bars(&chart, &cats, "msgs/s", &[set], |v| format::si(v, true)),
        "Messages per second over all clients (for pubsub: published plus received). \
         Whiskers: the range over repeated runs, where there were several.",
        false,
    )
}

pub(super) fn compare_latency(results: &[Input]) -> Option<String> {
    let with: Vec<&Input> = results.iter().filter(|r| r.figure("p50").is_ok()).collect();
    if with.is_empty() {
        return None;
    }
    let cats: Vec<String> = with.iter().map(|r| r.label.clone()).collect();
    // Two blues, apart in lightness, so they read apart in greyscale too.
    let sets: Vec<svg::BarSet> = [("P50", "p50", "#56B4E9"), ("P99", "p99", "#0072B2")]
        .into_iter()
        .map(|(id, name, color)| svg::BarSet {
            id: id.into(),
            color,
            bars: with
                .iter()
                .map(|r| compare_bar(r, name, Unit::Ns, None))
                .collect(),
        })
        .collect();
    let chart = svg::Chart {
        kind: "compare-latency",
        wide: false,
        input: None,
        title: "Latency by input (P50, P99, corrected)".into(),
    };
    Some(figure(
        &svg::bars(&chart, &cats, "latency", &sets, |v| format::ns(v, true)),
        "Bars start at zero so their lengths compare. Whiskers: the range over repeated runs.",
        false,
    ))
}

/// A tick's interval in words: `1.00–2.00 s`.
fn interval(k: &Tick) -> String {
    format!("{:.2}–{:.2} s", k.t_s - k.span_s, k.t_s)
}

/// From the start of the run to its last tick: time has real ends, no need to round them out.
pub(super) fn time_axis(ticks: &[Tick]) -> svg::Axis {
    let end = ticks.iter().map(|t| t.t_s).fold(0.0, f64::max);
    svg::Axis::linear_exact(0.0, end, "seconds since the start", |v| {
        format::sig(v, 3, true)
    })
}

/// P50, P99 and max of each tick with latency. Log y, for the same reason as the percentile
/// chart: a tick's max is often many times its median.
pub(super) fn latency_timeline(r: &Input) -> Option<String> {
    latency_over_time(r.run.timeline.as_ref()?, &r.label, &[])
}

/// The marks on a timeline's charts: `faults` msgbench injected, then what the servers'
/// samples showed.
fn with_events(faults: &[svg::XRef], t: &Timeline) -> Vec<svg::XRef> {
    let mut all = faults.to_vec();
    all.extend(servers::marks(t));
    all
}

/// [`latency_timeline`] of a timeline and its label: the report's chart of a result, and the
/// live page's of a run under way, which also draws the run's SLOs (`slos`, as
/// `--threshold` takes them) on the series they bound: P50, P99 and max.
pub(super) fn latency_over_time(t: &Timeline, label: &str, slos: &[String]) -> Option<String> {
    if !t.ticks.iter().any(|k| k.latency.is_some()) {
        return None;
    }
    type Pick = fn(&TickLatency) -> f64;
    let picks: [(&str, Pick, &'static str, bool); 3] = [
        ("P50", |l| l.p50_ns, PALETTE[0], false),
        ("P99", |l| l.p99_ns, PALETTE[1], false),
        ("max", |l| l.max_ns, PALETTE[6], true),
    ];
    let lines: Vec<svg::Line> = picks
        .iter()
        .map(|(id, pick, color, dashed)| svg::Line {
            id: (*id).into(),
            color,
            dashed: *dashed,
            points: t
                .ticks
                .iter()
                .map(|k| {
                    let v = pick(k.latency.as_ref()?);
                    Some(svg::Point {
                        x: k.t_s,
                        x0: Some(k.t_s - k.span_s),
                        y: v,
                        attrs: vec![("data-t", num(k.t_s)), ("data-span", num(k.span_s))],
                        tip: format!("{id}, {}: {}", interval(k), format::ns(v, false)),
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
            let (_, _, color, _) = picks
                .iter()
                .find(|(id, ..)| id.to_ascii_lowercase() == t.metric().name())?;
            Some(svg::RefLine {
                y: t.limit(),
                label: format!("SLO {t}"),
                style: svg::RefStyle::Limit(color),
            })
        })
        .collect();
    // The SLO lines are on the scale too, so a run well under its SLO shows how far under.
    let ys = lines
        .iter()
        .flat_map(|l| l.points.iter().flatten().map(|p| p.y))
        .chain(refs.iter().map(|r| r.y));
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v.max(1.0)), hi.max(v))
    });
    let y = svg::Axis::log(lo, hi, "latency (log scale)", |v| format::ns(v, true));
    let chart = svg::Chart {
        kind: "latency-timeline",
        wide: false,
        input: Some(label.to_string()),
        title: format!("Latency over time: {label}"),
    };
    let mut caption = format!(
        "Each step is one {} interval of {}, corrected latency of the messages that arrived \
         in it, to within 2 %. Gaps: intervals in which no latency was measured (warm-up, \
         nothing arrived).",
        format::secs(t.interval_s),
        esc(label)
    );
    if t.truncated {
        caption
            .push_str(" The run outlasted what the timeline keeps; later intervals are not shown.");
    }
    caption.push_str(&servers::marks_caption(t));
    Some(figure(
        &svg::lines(
            &chart,
            &time_axis(&t.ticks),
            &y,
            &lines,
            &refs,
            &servers::marks(t),
        ),
        &caption,
        false,
    ))
}

/// Shorter than this share of the interval, a run's last tick is drawn as partial. Whole
/// ticks are read a little late or early (by the sampler's polling), never by this much.
const PARTIAL: f64 = 0.98;

/// Each client's rate per tick; the totals when the timeline has no per-client columns or
/// too many clients to tell apart. A run's last tick usually ends inside its interval, when
/// the last message was counted: its rate is over its own length (as every tick's is), and
/// its point is a ring, so that a short tail is not read as a whole interval.
pub(super) fn throughput_timeline(r: &Input) -> Option<String> {
    let t = r.run.timeline.as_ref()?;
    throughput_over_time(t, &r.label, &super::faults::marks(r, t), r.series_names())
}

/// Whether a timeline lacks a side: no client of `role`, and nothing counted on it (`pick`).
/// Such a side is not drawn as a line at zero; a side the run has that got nothing is. A file
/// that lists no clients cannot tell the two apart: its sides are all drawn.
fn side_absent(t: &Timeline, role: &str, pick: fn(&Tick) -> f64) -> bool {
    !t.clients.is_empty()
        && !t.clients.iter().any(|c| c.role == role)
        && t.ticks.iter().all(|k| pick(k) == 0.0)
}

/// [`throughput_timeline`] of a timeline and its label: the report's chart of a result, and
/// the live page's of a run under way. `faults` are drawn across it, each a line at its
/// injection shaded to its undo.
pub(super) fn throughput_over_time(
    t: &Timeline,
    label: &str,
    faults: &[svg::XRef],
    names: Option<[&str; 2]>,
) -> Option<String> {
    // Each side is named by what it counts (a `js pub` run's replies are acknowledgements);
    // a file from before results named them keeps the roles' and "sent"/"received".
    let name = |role: &str| -> String {
        match (names, role) {
            (Some([p, _]), "pub") => p.to_string(),
            (Some([_, s]), "sub") => s.to_string(),
            _ => role.to_string(),
        }
    };
    let [pubs, subs] = names.unwrap_or(["sent", "received"]);
    let last = t.ticks.last()?;
    let partial = (last.span_s < PARTIAL * t.interval_s).then_some(last.t_s);
    let n = t.clients.len();
    let per_client = n > 0 && n <= MAX_CLIENT_LINES && t.ticks.iter().all(|k| k.msgs.len() == n);
    let rate = |msgs: f64, span: f64| if span > 0.0 { msgs / span } else { 0.0 };
    let point = |id: &str, k: &Tick, v: f64| {
        let cut = partial == Some(k.t_s);
        let mut attrs = vec![("data-t", num(k.t_s)), ("data-span", num(k.span_s))];
        if cut {
            attrs.push(("data-partial", "true".into()));
        }
        svg::Point {
            x: k.t_s,
            x0: Some(k.t_s - k.span_s),
            y: v,
            attrs,
            tip: format!(
                "{id}, {}{}: {} msgs/s",
                interval(k),
                if cut {
                    " (partial: the run ended in it)"
                } else {
                    ""
                },
                format::si(v, false)
            ),
            hollow: cut,
        }
    };
    let lines: Vec<svg::Line> = if per_client {
        t.clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let id = format!("{} {}", name(&c.role), c.id);
                svg::Line {
                    color: PALETTE[i % PALETTE.len()],
                    dashed: (i / PALETTE.len()) % 2 == 1,
                    points: t
                        .ticks
                        .iter()
                        .map(|k| Some(point(&id, k, rate(k.msgs[i], k.span_s))))
                        .collect(),
                    id,
                }
            })
            .collect()
    } else {
        type Pick = fn(&Tick) -> f64;
        let totals: [(&str, &str, Pick, &'static str); 2] = [
            (pubs, "pub", |k| k.sent_per_sec, PALETTE[0]),
            (subs, "sub", |k| k.received_per_sec, PALETTE[1]),
        ];
        totals
            .iter()
            .filter(|(_, role, pick, _)| !side_absent(t, role, *pick))
            .map(|(id, _, pick, color)| svg::Line {
                id: (*id).into(),
                color,
                dashed: false,
                points: t
                    .ticks
                    .iter()
                    .map(|k| Some(point(id, k, pick(k))))
                    .collect(),
            })
            .collect()
    };
    let hi = lines
        .iter()
        .flat_map(|l| l.points.iter().flatten().map(|p| p.y))
        .fold(0.0, f64::max);
    // Linear from zero: a dip in a rate has to look as deep as it was.
    let y = svg::Axis::linear(0.0, hi, "msgs/s", |v| format::si(v, true));
    let chart = svg::Chart {
        kind: "throughput-timeline",
        wide: false,
        input: Some(label.to_string()),
        title: format!("Throughput over time: {label}"),
    };
    let mut caption = if per_client {
        format!(
            "Messages per second of each client of {}, per {} interval (a client's count in \
             the interval over its length).",
            esc(label),
            format::secs(t.interval_s)
        )
    } else {
        format!(
            "The {} and {} per second of all {} of {} together, per {} interval.",
            esc(pubs),
            esc(subs),
            format::counted(n as u64, "client"),
            esc(label),
            format::secs(t.interval_s)
        )
    };
    if partial.is_some() {
        let _ = write!(
            caption,
            " The last interval is partial: the run ended {} into it, so its rate is over \
             those {} (drawn as a ring), not over the whole interval.",
            format::secs(last.span_s),
            format::secs(last.span_s)
        );
    }
    if !faults.is_empty() {
        caption.push_str(
            " Each fault is marked where it was injected and shaded until it was undone (a \
             kill is never undone: a line alone).",
        );
    }
    caption.push_str(&servers::marks_caption(t));
    caption.push_str(&errors_caption(t));
    Some(figure(
        &svg::lines(
            &chart,
            &time_axis(&t.ticks),
            &y,
            &lines,
            &[],
            &with_events(faults, t),
        ),
        &caption,
        false,
    ))
}

/// The caption's sentence naming the first ten intervals that counted errors, or nothing.
fn errors_caption(t: &Timeline) -> String {
    let errs: Vec<String> = t
        .ticks
        .iter()
        .filter(|k| k.errors > 0.0)
        .take(10)
        .map(|k| {
            format!(
                "{} s ({})",
                format::sig(k.t_s, 4, true),
                format::count(k.errors)
            )
        })
        .collect();
    if errs.is_empty() {
        return String::new();
    }
    format!(
        " Errors were counted in the intervals ending at {}.",
        errs.join(", ")
    )
}

/// One bar per client: its msgs/s over its own span. Colour by role.
pub(super) fn client_bars(r: &Input) -> Option<String> {
    let clients = &r.run.clients;
    if clients.is_empty() {
        return None;
    }
    // Each client named by what its side counts: "publishes 0", "acknowledgements 0".
    let names = r.series_names();
    let name = |role: &str| -> String {
        match (names, role) {
            (Some([p, _]), "pub") => p.to_string(),
            (Some([_, s]), "sub") => s.to_string(),
            _ => role.to_string(),
        }
    };
    let cats: Vec<String> = clients
        .iter()
        .map(|c| format!("{} {}", name(&c.role), c.id))
        .collect();
    let mut roles: Vec<&str> = Vec::new();
    for c in clients {
        if !roles.contains(&c.role.as_str()) {
            roles.push(&c.role);
        }
    }
    let few = clients.len() <= 12;
    let sets: Vec<svg::BarSet> = roles
        .iter()
        .enumerate()
        .map(|(ri, role)| svg::BarSet {
            id: name(role),
            color: PALETTE[ri % PALETTE.len()],
            bars: clients
                .iter()
                .map(|c| {
                    (c.role == *role).then(|| svg::Bar {
                        value: c.msgs_per_sec,
                        range: None,
                        color: None,
                        label: few.then(|| format::si(c.msgs_per_sec, true)),
                        tip: format!(
                            "{} {}: {} msgs/s ({} msgs in {} s)",
                            name(&c.role),
                            c.id,
                            format::si(c.msgs_per_sec, false),
                            format::count(c.msgs),
                            format::sig(c.seconds, 4, true)
                        ),
                    })
                })
                .collect(),
        })
        .collect();
    let chart = svg::Chart {
        kind: "clients",
        wide: false,
        input: Some(r.label.clone()),
        title: format!("Throughput per client: {}", r.label),
    };
    Some(figure(
        &svg::bars(&chart, &cats, "msgs/s", &sets, |v| format::si(v, true)),
        &format!(
            "Each client's messages per second over its own span, in {}. Even bars mean the \
             load was shared fairly.",
            esc(&r.label)
        ),
        false,
    ))
}
