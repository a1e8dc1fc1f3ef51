//! The servers' side of a run in the report and on the live page: each server's CPU over the
//! run (and msgbench's own, so the two can be read against each other) on the time axis of the
//! latency and throughput charts, the events the servers' samples showed (a leader change, a
//! slow consumer, a restart, …) marked on those charts, and a table of the events with the
//! run's rate and P99 just before and after each.
//!
//! A fault msgbench injected is marked with a solid line (faults.rs); an event it only
//! observed is dotted (`observed` marks), so the two are told apart on one chart. A figure a
//! file does not have is left out (a gap in a line, "—" in the table), never drawn as zero.

use std::fmt::Write as _;

use serde::Deserialize;

use super::model::{Input, Tick, Timeline};
use super::page::{figure, swatch};
use super::svg::{self, esc, num};
use super::PALETTE;
use crate::format;

/// Events marked on a chart at most: a flapping replica would otherwise hide the lines under
/// its marks. The table lists every event.
const MAX_MARKS: usize = 12;

/// A tick's `server` section: each server as it was read, and the events found since the
/// previous tick.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct TickServers {
    servers: Vec<ServerPoint>,
    events: Vec<Event>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ServerPoint {
    name: String,
    /// Percent of one core, as the server measures it.
    cpu_pct: Option<f64>,
    /// The cores it may use.
    cores: Option<f64>,
}

/// A tick's `tool` section: msgbench's own CPU in the interval.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct TickTool {
    cpu_cores: Option<f64>,
    cores: Option<f64>,
}

/// The result's `server_side` section: the events with the run's figures around each.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ServerSide {
    events: Vec<Event>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event {
    t_s: f64,
    since_s: Option<f64>,
    kind: String,
    server: Option<String>,
    stream: Option<String>,
    consumer: Option<String>,
    detail: String,
    before: Option<Around>,
    after: Option<Around>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Around {
    msgs_per_sec: Option<f64>,
    p99_ns: Option<f64>,
}

impl Event {
    /// `stream_leader_change` as words: `stream leader change`.
    fn name(&self) -> String {
        self.kind.replace('_', " ")
    }

    /// What it is about: `server n2, stream orders`.
    fn place(&self) -> String {
        [
            ("server", &self.server),
            ("stream", &self.stream),
            ("consumer", &self.consumer),
        ]
        .iter()
        .filter_map(|(what, v)| v.as_ref().map(|v| format!("{what} {v}")))
        .collect::<Vec<_>>()
        .join(", ")
    }
}

/// Every event of a timeline's ticks, in time order.
fn tick_events(t: &Timeline) -> impl Iterator<Item = &Event> {
    t.ticks
        .iter()
        .filter_map(|k| k.server.as_ref())
        .flat_map(|s| s.events.iter())
}

/// The events of `t` as marks: a dotted line where the reading first showed them, shaded back
/// to the last reading that did not (it happened in between). Events one reading showed
/// together share a mark, named by their kinds (`server unreachable, 2× route down`), so
/// their labels do not print over each other. At most [`MAX_MARKS`].
pub(super) fn marks(t: &Timeline) -> Vec<svg::XRef> {
    // Each mark: where, since when, and its kinds with how many of each.
    type Mark = (f64, Option<f64>, Vec<(String, usize)>);
    let mut marks: Vec<Mark> = Vec::new();
    for e in tick_events(t) {
        let since = e.since_s.filter(|s| *s < e.t_s);
        match marks.last_mut() {
            Some((at, _, kinds)) if *at == e.t_s => {
                match kinds.iter_mut().find(|(k, _)| *k == e.name()) {
                    Some((_, n)) => *n += 1,
                    None => kinds.push((e.name(), 1)),
                }
            }
            _ => marks.push((e.t_s, since, vec![(e.name(), 1)])),
        }
    }
    marks
        .into_iter()
        .take(MAX_MARKS)
        .map(|(x, since, kinds)| svg::XRef {
            x,
            band: since.map(|s| (s, x)),
            label: kinds
                .iter()
                .map(|(k, n)| {
                    if *n > 1 {
                        format!("{n}× {k}")
                    } else {
                        k.clone()
                    }
                })
                .collect::<Vec<_>>()
                .join(", "),
            observed: true,
        })
        .collect()
}

/// What the charts' captions say of the marks, or nothing when there are none.
pub(super) fn marks_caption(t: &Timeline) -> String {
    let n = tick_events(t).count();
    let drawn = marks(t).len();
    let readings = t
        .ticks
        .iter()
        .filter_map(|k| k.server.as_ref())
        .flat_map(|s| s.events.iter().map(|e| e.t_s.to_bits()))
        .collect::<std::collections::BTreeSet<u64>>()
        .len();
    match n {
        0 => String::new(),
        _ if readings > drawn => format!(
            " Dotted lines mark the events of the first {drawn} of the {readings} readings that \
             showed any ({} in all), each shaded back to the reading before it.",
            format::counted(n as u64, "event")
        ),
        _ => format!(
            " Dotted lines mark {} the servers' samples showed (those one reading showed \
             together share a line), each shaded back to the reading before it.",
            format::counted(n as u64, "event")
        ),
    }
}

/// The report's CPU chart of a result: [`cpu_over_time`] of its timeline.
pub(super) fn cpu_timeline(r: &Input) -> Option<String> {
    cpu_over_time(r.run.timeline.as_ref()?, &r.label)
}

/// Each server's CPU and msgbench's own, per tick, in percent of the cores each may use; none
/// when no tick has either.
pub(super) fn cpu_over_time(t: &Timeline, label: &str) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for s in t.ticks.iter().filter_map(|k| k.server.as_ref()) {
        for p in &s.servers {
            if !names.contains(&p.name.as_str()) {
                names.push(&p.name);
            }
        }
    }
    let share = |used: Option<f64>, cores: Option<f64>| match (used, cores) {
        (Some(u), Some(c)) if c > 0.0 => Some(u / c),
        _ => None,
    };
    type Read<'a> = Box<dyn Fn(&Tick) -> Option<f64> + 'a>;
    let mut series: Vec<(String, Read)> = names
        .iter()
        .map(|&name| {
            let read: Read = Box::new(move |k: &Tick| {
                let p = k.server.as_ref()?.servers.iter().find(|p| p.name == name)?;
                share(p.cpu_pct, p.cores)
            });
            (format!("server {name}"), read)
        })
        .collect();
    series.push((
        "msgbench".into(),
        Box::new(move |k: &Tick| {
            let tool = k.tool.as_ref()?;
            share(tool.cpu_cores.map(|c| c * 100.0), tool.cores)
        }),
    ));
    let lines: Vec<svg::Line> = series
        .iter()
        .enumerate()
        .map(|(i, (id, read))| svg::Line {
            id: id.clone(),
            color: PALETTE[i % PALETTE.len()],
            dashed: id == "msgbench",
            points: t
                .ticks
                .iter()
                .map(|k| {
                    let v = read(k)?;
                    Some(svg::Point {
                        x: k.t_s,
                        x0: Some(k.t_s - k.span_s),
                        y: v,
                        attrs: vec![("data-t", num(k.t_s))],
                        tip: format!(
                            "{id}, {:.2}–{:.2} s: {} % of its cores",
                            k.t_s - k.span_s,
                            k.t_s,
                            format::sig(v, 3, true)
                        ),
                        hollow: false,
                    })
                })
                .collect(),
        })
        .filter(|l| l.points.iter().any(Option::is_some))
        .collect();
    if lines.is_empty() {
        return None;
    }
    let hi = lines
        .iter()
        .flat_map(|l| l.points.iter().flatten().map(|p| p.y))
        .fold(100.0, f64::max);
    let y = svg::Axis::linear(0.0, hi, "% of the cores it may use", |v| {
        format::sig(v, 3, true)
    });
    let chart = svg::Chart {
        kind: "cpu-timeline",
        wide: false,
        input: Some(label.to_string()),
        title: format!("CPU over time: {label}"),
    };
    let mut caption = format!(
        "The CPU of each server sampled, as the server measures it (over about its last \
         second), and msgbench's own in each {} interval (dashed), in percent of the cores \
         each may use: a line at 100 % is a process that had no more to give. Gaps: readings \
         that did not answer or could not count yet.",
        format::secs(t.interval_s)
    );
    caption.push_str(&marks_caption(t));
    Some(figure(
        &svg::lines(
            &chart,
            &super::charts::time_axis(&t.ticks),
            &y,
            &lines,
            &[],
            &marks(t),
        ),
        &caption,
        false,
    ))
}

/// The table of every input's server events, with the run's rate and P99 around each;
/// nothing when no input has one.
pub(super) fn table(o: &mut String, results: &[Input]) {
    let with: Vec<(&Input, &Event)> = results
        .iter()
        .filter_map(|r| Some((r, r.run.server_side.as_ref()?)))
        .flat_map(|(r, s)| s.events.iter().map(move |e| (r, e)))
        .collect();
    if with.is_empty() {
        return;
    }
    o.push_str(
        "<section id=\"server-events\">\n<h2>Server events</h2>\n<p class=\"note\">What the \
         servers' samples showed happening, in time order (docs/server-side.md lists the \
         kinds). At: the reading that first showed it; it happened after the reading before \
         (since). Before and after: the run's messages per second and corrected P99 in the \
         timeline's interval just before and just after it. These are observed, not \
         injected: faults msgbench injected are in the Faults table.</p>\n\
         <div class=\"table-wrap\"><table class=\"server-events\">\n<thead><tr>\
         <th scope=\"col\" class=\"text\">event</th><th scope=\"col\">at</th>\
         <th scope=\"col\">since</th><th scope=\"col\" class=\"text\">where</th>\
         <th scope=\"col\" class=\"text\">what</th><th scope=\"col\">msgs/s before → after</th>\
         <th scope=\"col\">P99 before → after</th></tr></thead>\n<tbody>\n",
    );
    let secs = |v: f64| format!("{}\u{a0}s", format::sig(v, 3, true));
    for (r, e) in with {
        let rate = |a: &Option<Around>| {
            a.as_ref()
                .and_then(|a| a.msgs_per_sec)
                .map_or("—".to_string(), |v| format::si(v, false))
        };
        let p99 = |a: &Option<Around>| {
            a.as_ref()
                .and_then(|a| a.p99_ns)
                .map_or("—".to_string(), |v| format::ns(v, false))
        };
        let _ = writeln!(
            o,
            "<tr data-input=\"{}\" data-kind=\"{}\" data-t=\"{}\"><th scope=\"row\" \
             class=\"text\">{}{}</th><td>{}</td><td>{}</td><td class=\"text\">{}</td>\
             <td class=\"text\">{}</td><td>{} → {}</td><td>{} → {}</td></tr>",
            esc(&r.label),
            esc(&e.kind),
            num(e.t_s),
            swatch(r.color),
            esc(&e.name()),
            secs(e.t_s),
            e.since_s.map_or("—".to_string(), secs),
            esc(&e.place()),
            esc(&e.detail),
            rate(&e.before),
            rate(&e.after),
            p99(&e.before),
            p99(&e.after),
        );
    }
    o.push_str("</tbody></table></div>\n</section>\n");
}
