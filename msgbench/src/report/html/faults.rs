//! A run with faults (`--fault`): what the report reads of its `fault` section, the marks it
//! puts on the throughput-over-time chart (a band from each fault's injection to its undo,
//! named `kill-leader`, `restart`, …), and the table of what each fault did to the service:
//! the window with no acknowledgement, the time until a new stream leader answered, and the
//! acknowledgement latency before, during and after it. A figure the file does not have shows
//! as "—".
//!
//! A fault's times count from the start of the load, the timeline's from the start of the
//! run: a fault is placed on the chart only when the timeline says when the load started
//! (`load_start_s`), never guessed.

use std::fmt::Write as _;

use serde::Deserialize;

use super::model::{Input, Timeline};
use super::page::swatch;
use super::svg::{self, esc, num};
use crate::format;

/// The result's `fault` section: the first fault's own fields, and each fault's report.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Fault {
    #[serde(flatten)]
    first: Event,
    faults: Vec<Event>,
    /// `--allow-missed-faults`: a fault never injected does not fail the run.
    missed_allowed: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event {
    kind: String,
    target: Option<String>,
    nodes: Vec<String>,
    injected_at_ns: Option<f64>,
    undone_at_ns: Option<f64>,
    error: Option<String>,
    leader_after: Option<String>,
    leader_answered_ns: Option<f64>,
    no_ack_ns: Option<f64>,
    ack_latency: Option<AckLatency>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AckLatency {
    before: Option<Phase>,
    during: Option<Phase>,
    after: Option<Phase>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Phase {
    count: f64,
    p50_ns: f64,
    p99_ns: f64,
    max_ns: f64,
}

impl Fault {
    /// Each fault, or the one the section describes when it lists none.
    fn events(&self) -> Vec<&Event> {
        if self.faults.is_empty() {
            vec![&self.first]
        } else {
            self.faults.iter().collect()
        }
    }
}

impl Event {
    /// As `--fault` names it: `kill-leader`, `restart`.
    fn name(&self) -> String {
        match &self.target {
            Some(t) => format!("{}-{t}", self.kind),
            None => self.kind.clone(),
        }
    }
}

/// The marks of `r`'s faults on its timeline `t`: a line at each injection, shaded to its
/// undo when it was undone; none when the timeline does not say when the load started.
pub(super) fn marks(r: &Input, t: &Timeline) -> Vec<svg::XRef> {
    let (Some(fault), Some(start)) = (&r.run.fault, t.load_start_s) else {
        return Vec::new();
    };
    let at = |ns: f64| start + ns / 1e9;
    fault
        .events()
        .into_iter()
        .filter_map(|e| {
            let from = at(e.injected_at_ns?);
            Some(svg::XRef {
                x: from,
                band: e.undone_at_ns.map(|u| (from, at(u))),
                label: e.name(),
                observed: false,
            })
        })
        .collect()
}

/// The table of each input's faults; nothing when no input has one.
pub(super) fn table(o: &mut String, results: &[Input]) {
    let with: Vec<(&Input, &Fault)> = results
        .iter()
        .filter_map(|r| Some((r, r.run.fault.as_ref()?)))
        .collect();
    if with.is_empty() {
        return;
    }
    o.push_str(
        "<section id=\"faults\">\n<h2>Faults</h2>\n<p class=\"note\">What each fault did to \
         the service. No-ack window: from the last acknowledgement before the fault to the \
         first for a publish due after it. Leader answered: from the fault until a stream \
         leader it did not hit answered. Ack latency (corrected, P50 / P99 / max, and how many \
         acknowledgements) of the publishes due before, during and after the fault; \
         docs/durability.md defines the phases.</p>\n<div class=\"table-wrap\">\
         <table class=\"faults\">\n<thead><tr><th scope=\"col\">fault</th>\
         <th scope=\"col\">at</th><th scope=\"col\" class=\"text\">nodes</th>\
         <th scope=\"col\">undone after</th><th scope=\"col\">no-ack window</th>\
         <th scope=\"col\">leader answered</th><th scope=\"col\">before</th>\
         <th scope=\"col\">during</th><th scope=\"col\">after</th></tr></thead>\n<tbody>\n",
    );
    let ns = |v: Option<f64>| v.map_or("—".to_string(), |v| format::ns(v, false));
    for (r, fault) in with {
        for e in fault.events() {
            let undone = e
                .injected_at_ns
                .zip(e.undone_at_ns)
                .map(|(i, u)| (u - i).max(0.0));
            let leader = match (&e.leader_after, e.leader_answered_ns) {
                (Some(l), Some(v)) => format!("{} ({})", format::ns(v, false), esc(l)),
                _ => ns(e.leader_answered_ns),
            };
            let mut at = ns(e.injected_at_ns);
            if let Some(err) = &e.error {
                let _ = write!(at, " <span class=\"fail\">{}</span>", esc(err));
            } else if e.injected_at_ns.is_none() {
                // A fault asked for and never injected fails the run unless allowed: the
                // table says so as the exit status does.
                at = if fault.missed_allowed {
                    "not injected (allowed)".to_string()
                } else {
                    "<span class=\"fail\">✗ not injected</span>".to_string()
                };
            }
            let _ = write!(
                o,
                "<tr data-input=\"{}\" data-fault=\"{}\" data-injected=\"{}\" \
                 data-no-ack=\"{}\"><th scope=\"row\">{}{}</th><td>{at}</td>\
                 <td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{leader}</td>",
                esc(&r.label),
                esc(&e.name()),
                e.injected_at_ns.map_or(String::new(), num),
                e.no_ack_ns.map_or(String::new(), num),
                swatch(r.color),
                esc(&e.name()),
                esc(&e.nodes.join(", ")),
                ns(undone),
                ns(e.no_ack_ns),
            );
            let a = e.ack_latency.as_ref();
            for (which, p) in [
                ("before", a.and_then(|a| a.before.as_ref())),
                ("during", a.and_then(|a| a.during.as_ref())),
                ("after", a.and_then(|a| a.after.as_ref())),
            ] {
                phase_cell(o, which, p);
            }
            o.push_str("</tr>\n");
        }
    }
    o.push_str("</tbody></table></div>\n</section>\n");
}

/// One phase: `1.03 ms / 10.67 ms / 30.98 ms` over its count, its numbers in `data-*`.
fn phase_cell(o: &mut String, which: &str, p: Option<&Phase>) {
    let Some(p) = p else {
        let _ = write!(o, "<td data-phase=\"{which}\">—</td>");
        return;
    };
    let _ = write!(
        o,
        "<td data-phase=\"{which}\" data-count=\"{}\" data-p50=\"{}\" data-p99=\"{}\" \
         data-max=\"{}\">{} / {} / {}<span class=\"range\">{} acks</span></td>",
        num(p.count),
        num(p.p50_ns),
        num(p.p99_ns),
        num(p.max_ns),
        format::ns(p.p50_ns, false),
        format::ns(p.p99_ns, false),
        format::ns(p.max_ns, false),
        format::count(p.count)
    );
}
