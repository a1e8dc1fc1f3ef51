//! The page: the HTML skeleton with its inlined CSS and script, the header listing the inputs,
//! the order of the sections, and the embedded copies of the inputs. What goes in a section is
//! drawn by `charts` and `tables`; this file decides only where it goes, so the page's layout
//! reads in one function ([`page`]).

use std::fmt::Write as _;

use serde_json::Value;

use super::capacity::capacity;
use super::charts::{
    client_bars, compare_latency, compare_throughput, latency_timeline, percentile_chart,
    throughput_timeline,
};
use super::environment::environment;
use super::knee_chart::{capacity_knee, result_knee};
use super::model::{CalInput, CapInput, Input};
use super::plural;
use super::svg::esc;
use super::tables::summary;
use crate::format;

/// The report's style and script, which the live page (`--web`) uses too: one design.
pub(crate) const CSS: &str = include_str!("report.css");
pub(crate) const JS: &str = include_str!("report.js");

/// JSON safe inside `<script type="application/json">`: `<`, `>` and `&` only occur inside
/// JSON strings, where their `\u` escapes mean the same, so no `</script`, `<!--` or entity
/// can end or bend the element, and `JSON.parse` of the element's text gives the value back.
pub fn json_in_script(v: &Value) -> String {
    let s = serde_json::to_string(v).expect("a JSON value serialises");
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("\\u003c"),
            '>' => o.push_str("\\u003e"),
            '&' => o.push_str("\\u0026"),
            c => o.push(c),
        }
    }
    o
}

pub(super) fn page(results: &[Input], cals: &[CalInput], caps: &[CapInput]) -> String {
    let mut o = String::with_capacity(128 * 1024);
    let names: Vec<&str> = results
        .iter()
        .map(|r| r.label.as_str())
        .chain(caps.iter().map(|c| c.label.as_str()))
        .collect();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"msgbench {}\">\n<title>msgbench report: {}</title>\n\
         <style>\n{CSS}</style>\n</head>\n<body>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&names.join(", "))
    );
    header(&mut o, results, cals, caps);
    o.push_str("<main>\n");
    if !results.is_empty() {
        summary(&mut o, results);
    }
    capacity(&mut o, caps);

    // The knee comes first among the charts: it is what a schedule or a search is run for.
    let knees: Vec<String> = results
        .iter()
        .filter_map(result_knee)
        .chain(caps.iter().filter_map(capacity_knee))
        .collect();
    section(
        &mut o,
        "latency-throughput",
        "Latency against throughput",
        &knees,
    );

    let mut dist = Vec::new();
    dist.extend(percentile_chart(results, cals));
    section(&mut o, "distribution", "Latency distribution", &dist);

    if results.len() > 1 {
        let mut cmp = vec![compare_throughput(results)];
        cmp.extend(compare_latency(results));
        section(&mut o, "comparison", "Side by side", &cmp);
    }
    let lat_time: Vec<String> = results.iter().filter_map(latency_timeline).collect();
    section(&mut o, "latency-over-time", "Latency over time", &lat_time);
    let thr_time: Vec<String> = results.iter().filter_map(throughput_timeline).collect();
    section(
        &mut o,
        "throughput-over-time",
        "Throughput over time",
        &thr_time,
    );
    let cpu_time: Vec<String> = results
        .iter()
        .filter_map(super::servers::cpu_timeline)
        .collect();
    section(&mut o, "cpu-over-time", "CPU over time", &cpu_time);
    super::faults::table(&mut o, results);
    super::servers::table(&mut o, results);
    let per_client: Vec<String> = results.iter().filter_map(client_bars).collect();
    section(&mut o, "clients", "Throughput per client", &per_client);

    if !results.is_empty() || !cals.is_empty() {
        environment(&mut o, results, cals);
    }
    o.push_str("</main>\n");
    let _ = writeln!(
        o,
        "<footer>Written by msgbench {}. Charts are drawn in the page (no scripts, no network); \
         click a legend entry to hide or show its series. The input files are embedded below \
         the page as JSON.</footer>",
        esc(env!("CARGO_PKG_VERSION"))
    );
    let embedded = results
        .iter()
        .map(|r| (&r.label, r.doc))
        .chain(caps.iter().map(|c| (&c.label, c.doc)));
    for (label, doc) in embedded {
        let _ = writeln!(
            o,
            "<script type=\"application/json\" class=\"input-data\" data-input=\"{}\">{}</script>",
            esc(label),
            json_in_script(&doc.value)
        );
    }
    let _ = write!(o, "<script>\n{JS}</script>\n</body>\n</html>\n");
    o
}

/// A section of figures in a responsive grid; nothing at all when there are none, so a result
/// without a section leaves no empty heading behind.
pub(crate) fn section(o: &mut String, id: &str, title: &str, figures: &[String]) {
    if figures.is_empty() {
        return;
    }
    let _ = write!(
        o,
        "<section id=\"{id}\">\n<h2>{}</h2>\n<div class=\"charts\">\n",
        esc(title)
    );
    for f in figures {
        o.push_str(f);
        o.push('\n');
    }
    o.push_str("</div>\n</section>\n");
}

pub(crate) fn figure(svg: &str, caption: &str, wide: bool) -> String {
    format!(
        "<figure class=\"chart-box{}\">{svg}<figcaption>{caption}</figcaption></figure>",
        if wide { " wide" } else { "" }
    )
}

/// A colour square that survives printing without backgrounds (it is a border).
pub(super) fn swatch(color: &str) -> String {
    format!("<span class=\"swatch\" style=\"border-color:{color}\"></span>")
}

/// The parameters that say what a run was, in a line: `msgs 200,000 · pubs 2 · size 128 B`.
fn key_params(params: &serde_json::Map<String, Value>) -> String {
    let mut parts = Vec::new();
    for key in [
        "msgs",
        "duration_secs",
        "warmup_secs",
        "rate",
        "size",
        "pubs",
        "subs",
        "in_flight",
        "mode",
        "storage",
    ] {
        let Some(v) = params.get(key) else { continue };
        let text = match (key, v) {
            (_, Value::Null) => continue,
            ("msgs", Value::Number(n)) => {
                format!("msgs {}", format::count(n.as_f64().unwrap_or(0.0)))
            }
            ("duration_secs", Value::Number(n)) => {
                format!("duration {}", format::secs(n.as_f64().unwrap_or(0.0)))
            }
            ("warmup_secs", Value::Number(n)) => {
                format!("warm-up {}", format::secs(n.as_f64().unwrap_or(0.0)))
            }
            ("rate", Value::Number(n)) => match n.as_f64().unwrap_or(0.0) {
                r if r > 0.0 => format!("rate {}/s", format::count(r)),
                _ => "rate unlimited".into(),
            },
            ("size", Value::Number(n)) => {
                format!("size {}\u{a0}B", format::count(n.as_f64().unwrap_or(0.0)))
            }
            (k, Value::String(s)) => format!("{k} {s}"),
            (k, v) => format!("{k} {v}"),
        };
        parts.push(esc(&text));
    }
    parts.join(" · ")
}

fn header(o: &mut String, results: &[Input], cals: &[CalInput], caps: &[CapInput]) {
    let kinds: Vec<String> = [
        (results.len(), "result"),
        (cals.len(), "calibration"),
        (caps.len(), "capacity search"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, name)| plural(n, name))
    .collect();
    let what = match kinds.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => kinds.join(""),
    };
    let _ = write!(
        o,
        "<header>\n<h1>msgbench report</h1>\n<p class=\"sub\">{what}, written by msgbench {}</p>\n\
         <ul class=\"inputs\">\n",
        esc(env!("CARGO_PKG_VERSION"))
    );
    for r in results {
        let run = &r.run;
        let _ = write!(
            o,
            "<li data-input=\"{}\">{}<b>{}</b>: <code>{}</code>",
            esc(&r.label),
            swatch(r.color),
            esc(&r.label),
            esc(&run.scenario)
        );
        let params = key_params(&run.params);
        if !params.is_empty() {
            let _ = write!(o, " — {params}");
        }
        let _ = write!(
            o,
            "<span class=\"when\">started {}, msgbench {}",
            esc(&run.started_at),
            esc(&run.tool.version)
        );
        if let Some(runs) = &run.runs {
            let _ = write!(o, ", {}", crate::format::counted(runs.n, "run"));
            if let Some(rep) = runs.representative {
                let _ = write!(
                    o,
                    " (charts show run {} of them{})",
                    rep + 1,
                    runs.representative_by
                        .as_ref()
                        .map(|b| format!(", the median by {}", esc(b)))
                        .unwrap_or_default()
                );
            }
            // The run exits with the worst of them: a failed one is named, since the tables
            // show another's figures.
            for (i, r) in runs
                .runs
                .iter()
                .enumerate()
                .filter(|(_, r)| r.exit_status != 0)
            {
                let _ = write!(
                    o,
                    " <span class=\"fail\">✗ run {} exited {}</span>",
                    i + 1,
                    r.exit_status
                );
            }
        }
        o.push_str("</span>");
        if run.interrupted {
            o.push_str(" <span class=\"fail\">interrupted: the figures cover what ran</span>");
        }
        o.push_str("</li>\n");
    }
    for c in cals {
        let env = c.cal.environment.as_ref();
        let _ = writeln!(
            o,
            "<li data-input=\"{}\"><b>{}</b>: <code>calibration</code> — the machine's latency \
             floor{}<span class=\"when\">started {}, msgbench {}</span></li>",
            esc(&c.label),
            esc(&c.label),
            env.and_then(|e| Some(format!(
                ", {} round trips of {}\u{a0}B",
                format::count(e.samples?),
                format::count(e.size?)
            )))
            .map(|s| esc(&s))
            .unwrap_or_default(),
            esc(&c.cal.started_at),
            esc(&c.cal.tool.version)
        );
    }
    for c in caps {
        let cap = &c.cap;
        let _ = writeln!(
            o,
            "<li data-input=\"{}\"><b>{}</b>: <code>capacity search</code> of <code>{}</code>{}\
             <span class=\"when\">started {}, msgbench {}</span></li>",
            esc(&c.label),
            esc(&c.label),
            esc(&cap.scenario),
            if cap.slo.is_empty() {
                String::new()
            } else {
                format!(" — SLO {}", esc(&cap.slo.join(", ")))
            },
            esc(&cap.started_at),
            esc(&cap.tool.version)
        );
    }
    o.push_str("</ul>\n</header>\n");
}
