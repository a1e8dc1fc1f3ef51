//! `msgbench report`: result files (`--json` output) and capacity searches in, one
//! self-contained HTML file out.
//!
//! This module is the entry the rest of the crate calls ([`run`], [`render`]): it takes the
//! parsed input documents ([`super::load`]), gives each a label and a colour, and hands them
//! to the page. The work between those documents and the bytes written is split by what it
//! owns, so that a chart can change without touching how files are read, and the plotting kit
//! can be tested without a result:
//!
//! - `model`: what the report reads from a result, calibration or capacity search, and the
//!   latency curves;
//! - `knee`: the latency-against-throughput curve's points (a rate schedule's stages, a
//!   capacity search's probes), its SLO lines and the sustainable rate;
//! - numbers read as everywhere else in msgbench ([`crate::format`]);
//! - [`svg`]: the small plotting kit every chart is drawn with (scales, ticks, axes, legends,
//!   lines, bars and reference lines), and the escaping it needs ([`esc`], [`num`]);
//! - `charts`: which charts the page shows and where each is read from in a result;
//!   `knee_chart`: the latency-against-throughput chart;
//! - `tables`: the summary and environment tables; `capacity`: a capacity search's section;
//!   `faults`: a run's faults, marked on its throughput over time and in a table;
//! - `page`: the skeleton, its CSS and script, and the order the rest is assembled in;
//! - `history`: the page of `report --history`, a history's series over time, drawn with the
//!   same kit, style and script.
//!
//! The charts are drawn here, in Rust, as inline SVG rather than by a script in the browser, so
//! the file prints, works with scripts off and fetches nothing; the page's one small script
//! (`report.js`) only toggles series from the legends. Every drawn series, point and bar carries
//! its raw numbers in `data-*` attributes (in the input's units: ns, msgs/s) so a test, or a
//! person with the browser's inspector, can check a chart against the file it came from.
//!
//! Everything taken from an input is untrusted: text and attributes go through [`esc`], the
//! embedded copies of the inputs through [`json_in_script`], and nothing from an input ever
//! becomes script source.

mod agents_chart;
mod capacity;
mod charts;
mod environment;
mod faults;
mod knee;
mod knee_chart;
#[cfg(test)]
mod knee_tests;
mod model;
pub(crate) mod page;
mod servers;
pub mod svg;
pub(crate) mod tables;
#[cfg(test)]
mod tests;

pub use agents_chart::{agents_p99, AgentSeries};

pub(crate) use page::{CSS, JS};

#[cfg(test)]
use page::json_in_script;
#[cfg(test)]
use svg::{esc, num};

use serde::Deserialize;

use super::{Doc, DocKind};
use crate::cli::{ReportArgs, ReportSeriesArgs};
use crate::error::{exit, Error, Result};
use model::{CalInput, CapInput, Input};

/// The Okabe–Ito palette, which stays distinguishable under the common colour-vision
/// deficiencies; its yellow is left out because it is too faint on white. Lines also differ by
/// dash where colour alone would have to carry the meaning (corrected vs uncorrected).
pub(crate) const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#333333",
];

/// Writes the report `args` asks for and returns the exit status.
///
/// # Errors
/// Unreadable or foreign input files, no result among them, or an output file that cannot be
/// written.
pub fn run(args: &ReportArgs) -> Result<u8> {
    refuse_without_history(&args.series)?;
    let docs = args
        .inputs
        .iter()
        .map(|p| super::load_for_report(p))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    refuse_to_overwrite_an_input(args)?;
    let html = render(&docs)?;
    std::fs::write(&args.output, html)
        .map_err(|e| Error::io(format!("cannot write '{}'", args.output.display()), e))?;
    let what: Vec<String> = [
        (DocKind::Result, "result"),
        (DocKind::Calibration, "calibration"),
        (DocKind::Capacity, "capacity search"),
    ]
    .into_iter()
    .map(|(kind, name)| (docs.iter().filter(|d| d.kind == kind).count(), name))
    .filter(|(n, _)| *n > 0)
    .map(|(n, name)| plural(n, name))
    .collect();
    let what = what.join(", ");
    println!("report: wrote {} ({what})", args.output.display());
    Ok(exit::OK)
}

/// `-o a.json` next to `a.json` as an input would replace a result with its own report.
fn refuse_to_overwrite_an_input(args: &ReportArgs) -> Result<()> {
    let Ok(out) = std::fs::canonicalize(&args.output) else {
        return Ok(()); // not there yet, so it is none of the inputs
    };
    for input in &args.inputs {
        if std::fs::canonicalize(input).is_ok_and(|p| p == out) {
            return Err(Error::Usage(format!(
                "the output '{}' is one of the inputs; give another file with -o",
                args.output.display()
            )));
        }
    }
    Ok(())
}

pub(crate) fn plural(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        // "search" takes -es.
        _ if what.ends_with("ch") => format!("{n} {what}es"),
        _ => format!("{n} {what}s"),
    }
}

/// The charts of a run under way for the live page (`--web`): latency and throughput over
/// time, drawn by the report's own code from `timeline` (a result's `timeline` section) so the
/// page and the report are one design; the latency chart draws `slos` (as `--threshold`
/// takes them) that bound its series. None of them before the timeline has a tick.
pub fn live_charts(
    timeline: &serde_json::Value,
    label: &str,
    slos: &[String],
    names: Option<[&str; 2]>,
) -> Vec<String> {
    let Ok(t) = model::Timeline::deserialize(timeline) else {
        return Vec::new();
    };
    [
        charts::latency_over_time(&t, label, slos),
        charts::throughput_over_time(&t, label, &[], names),
        servers::cpu_over_time(&t, label),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A capacity search's knee chart as far as it has got, for the live page (`--web`): the
/// report's own chart of `capacity` (a capacity document, its probes so far); none before a
/// probe has a point to draw.
pub fn live_knee(capacity: &serde_json::Value, label: &str) -> Option<String> {
    let doc = Doc {
        path: label.into(),
        name: label.into(),
        kind: DocKind::Capacity,
        value: capacity.clone(),
    };
    knee_chart::capacity_knee(&CapInput::read(&doc, label.to_string()).ok()?)
}

/// The whole page for `docs`, in the order given.
///
/// # Errors
/// [`Error::Usage`] when no document is a result or a capacity search, or one is a document
/// in name only (fields of the wrong type, an undecodable histogram).
pub fn render(docs: &[Doc]) -> Result<String> {
    let mut results = Vec::new();
    let mut cals = Vec::new();
    let mut caps = Vec::new();
    for (doc, label) in docs.iter().zip(labels(docs)) {
        match doc.kind {
            DocKind::Result => {
                let color = PALETTE[results.len() % PALETTE.len()];
                results.push(Input::read(doc, label, color)?);
            }
            DocKind::Calibration => cals.push(CalInput::read(doc, label)?),
            DocKind::Capacity => caps.push(CapInput::read(doc, label)?),
        }
    }
    if results.is_empty() && caps.is_empty() {
        let names: Vec<String> = cals.iter().map(|c| format!("'{}'", c.label)).collect();
        return Err(Error::Usage(format!(
            "no result file among the inputs ({} {} a calibration, which only adds the \
             machine's latency floor); give at least one file written by a scenario's --json, or a \
             capacity search",
            names.join(", "),
            if names.len() == 1 { "is" } else { "are each" }
        )));
    }
    Ok(page::page(&results, &cals, &caps))
}

/// Names that tell the inputs apart: they key the columns, series and legends. The file name
/// when it is unique, else the path as given, numbered when even that repeats (the same file
/// given twice).
fn labels(docs: &[Doc]) -> Vec<String> {
    let names: Vec<String> = docs.iter().map(|d| d.name.clone()).collect();
    let mut out: Vec<String> = docs
        .iter()
        .zip(&names)
        .map(|(d, n)| {
            if names.iter().filter(|m| *m == n).count() > 1 {
                d.path.display().to_string()
            } else {
                n.clone()
            }
        })
        .collect();
    for i in 1..out.len() {
        let seen = out[..i].iter().filter(|n| **n == out[i]).count();
        if seen > 0 {
            out[i] = format!("{} ({})", out[i], seen + 1);
        }
    }
    out
}

/// The flags that choose a history's series act only with `--history`: given with result
/// files instead, they are refused rather than ignored. (clap's `requires` covers a command
/// line without result files.)
///
/// # Errors
/// [`Error::Usage`] naming the first such flag.
pub fn refuse_without_history(s: &ReportSeriesArgs) -> Result<()> {
    let given = [
        ("--benchmark", s.benchmark.is_some()),
        ("--last", s.last.is_some()),
        ("--all", s.all),
        ("--alpha", s.alpha.is_some()),
    ];
    match given.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(Error::Usage(format!(
            "{flag} chooses runs of a history and needs --history; result files are drawn as \
             they are"
        ))),
        None => Ok(()),
    }
}
