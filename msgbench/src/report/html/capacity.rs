//! The section of a capacity search (`msgbench.capacity/v1`): what it found (the sustainable
//! rate, its confidence interval, what limited it, the SLO it held) and every probe it ran, one
//! row per run. Its curve is drawn with the other latency-against-throughput charts
//! (`knee_chart`); this file holds the tables. Cells carry their raw numbers in `data-*`
//! attributes, as the summary's do, so a test can check them against the file.

use std::fmt::Write as _;

use super::model::{CapInput, LimiterKind, Probe, Verdict};
use super::svg::{esc, num};
use crate::format;

pub(super) fn capacity(o: &mut String, caps: &[CapInput]) {
    if caps.is_empty() {
        return;
    }
    o.push_str(
        "<section id=\"capacity\">\n<h2>Capacity search</h2>\n<p class=\"note\">The highest \
         rate at which the scenario held its SLO, found by probing rates, each for a fixed \
         time and several times over. Latency is corrected for coordinated omission.</p>\n",
    );
    for c in caps {
        let _ = write!(
            o,
            "<div class=\"capacity\" data-input=\"{}\">\n<h3>{}</h3>\n",
            esc(&c.label),
            esc(&c.label)
        );
        findings(o, c);
        probes(o, c);
        o.push_str("</div>\n");
    }
    o.push_str("</section>\n");
}

/// What the search found, one row per fact.
fn findings(o: &mut String, c: &CapInput) {
    let cap = &c.cap;
    let label = esc(&c.label);
    o.push_str("<div class=\"table-wrap\"><table class=\"capacity\">\n<tbody>\n");
    let row = |o: &mut String, key: &str, name: &str, attrs: String, cell: String| {
        let _ = writeln!(
            o,
            "<tr data-metric=\"{key}\"><th scope=\"row\">{name}</th><td class=\"text\" \
             data-input=\"{label}\" data-metric=\"{key}\"{attrs}>{cell}</td></tr>"
        );
    };
    match cap.sustainable_rate {
        Some(rate) => row(
            o,
            "sustainable_rate",
            "sustainable rate",
            format!(" data-value=\"{}\"", num(rate)),
            format!("<b>{}</b> msgs/s", esc(&format::count(rate))),
        ),
        None => row(
            o,
            "sustainable_rate",
            "sustainable rate",
            String::new(),
            "<span class=\"fail\">✗ none: no probed rate held the SLO</span>".into(),
        ),
    }
    if let Some(ci) = &cap.confidence {
        row(
            o,
            "confidence",
            "confidence interval",
            format!(
                " data-level=\"{}\" data-lo=\"{}\" data-hi=\"{}\"",
                num(ci.level),
                num(ci.low),
                num(ci.high)
            ),
            esc(&format!(
                "{} – {} msgs/s ({} %)",
                format::count(ci.low),
                format::count(ci.high),
                format::sig(ci.level * 100.0, 3, true)
            )),
        );
    }
    if let Some(l) = &cap.limiter {
        let what = match l.kind {
            LimiterKind::Slo => "the SLO",
            LimiterKind::Tool => "msgbench: it could not publish at the probed rate",
            LimiterKind::Subscriber => "the subscriber: it fell behind",
            LimiterKind::Server => "the server",
            LimiterKind::None => "nothing: the search reached the top of its range",
            LimiterKind::Other => "",
        };
        let text = match (what.is_empty(), l.detail.is_empty()) {
            (false, false) => format!("{what} ({})", l.detail),
            (false, true) => what.to_string(),
            (true, _) => l.detail.clone(),
        };
        row(
            o,
            "limiter",
            "limited by",
            format!(" data-kind=\"{}\"", l.kind.name()),
            esc(&text),
        );
    }
    row(
        o,
        "slo",
        "SLO",
        String::new(),
        cap.slo
            .iter()
            .map(|s| format!("<code>{}</code>", esc(s)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let mut rates: Vec<f64> = cap.probes.iter().map(|p| p.rate).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let mut how = format!(
        "{} runs at {} rates",
        format::count(cap.probes.len() as f64),
        format::count(rates.len() as f64)
    );
    if let Some(n) = cap.probe_runs {
        let _ = write!(how, ", up to {} per rate", format::count(n));
    }
    if let Some(d) = cap.probe_duration_s {
        let _ = write!(how, "; each {}", format::secs(d));
        if let Some(w) = cap.warmup_s.filter(|w| *w > 0.0) {
            let _ = write!(how, " after {} of warm-up", format::secs(w));
        }
    }
    row(o, "probes", "probes", String::new(), esc(&how));
    o.push_str("</tbody></table></div>\n");
}

/// Every probe, by rate and then run.
fn probes(o: &mut String, c: &CapInput) {
    let mut ps: Vec<&Probe> = c.cap.probes.iter().collect();
    if ps.is_empty() {
        return;
    }
    ps.sort_by(|a, b| a.rate.total_cmp(&b.rate).then(a.run.cmp(&b.run)));
    let label = esc(&c.label);
    o.push_str(
        "<h4>Probes</h4>\n<div class=\"table-wrap\"><table class=\"probes\">\n<thead><tr>\
         <th scope=\"col\">rate (msgs/s)</th><th scope=\"col\">run</th>\
         <th scope=\"col\">verdict</th><th scope=\"col\">achieved msgs/s</th>\
         <th scope=\"col\">shortfall</th><th scope=\"col\">P50</th><th scope=\"col\">P99</th>\
         <th scope=\"col\">P99.9</th><th scope=\"col\">lost</th><th scope=\"col\">errors</th>\
         <th scope=\"col\">kept schedule</th><th scope=\"col\">checks</th></tr></thead>\n<tbody>\n",
    );
    for p in ps {
        let _ = write!(
            o,
            "<tr data-input=\"{label}\" data-rate=\"{}\" data-run=\"{}\" data-pass=\"{}\">\
             <th scope=\"row\">{}</th><td>{}</td><td>{}</td>",
            num(p.rate),
            p.run,
            p.pass,
            esc(&format::count(p.rate)),
            p.run,
            if p.pass {
                "<span class=\"pass\">✓ pass</span>"
            } else {
                "<span class=\"fail\">✗ fail</span>"
            }
        );
        cell(o, "msgs_per_sec", p.msgs_per_sec, |v| format::si(v, false));
        cell(o, "shortfall_pct", p.shortfall_pct, |v| {
            format!("{} %", format::sig(v, 3, true))
        });
        let l = p.latency.as_ref();
        for (key, v) in [
            ("p50", l.and_then(|l| l.p50_ns)),
            ("p99", l.and_then(|l| l.p99_ns)),
            ("p99.9", l.and_then(|l| l.p999_ns)),
        ] {
            cell(o, key, v, |v| format::ns(v, false));
        }
        cell(o, "lost", p.lost, format::count);
        cell(o, "errors", p.errors, format::count);
        let _ = write!(
            o,
            "<td>{}</td><td class=\"text\">",
            match p.tool_kept_schedule {
                Some(true) => "yes",
                Some(false) => "<span class=\"fail\">no</span>",
                None => "—",
            }
        );
        for v in &p.verdicts {
            verdict(o, v);
        }
        o.push_str("</td></tr>\n");
    }
    o.push_str("</tbody></table></div>\n");
}

/// A number cell with its raw value, or a dash when the probe has none.
fn cell(o: &mut String, key: &str, v: Option<f64>, fmt: impl Fn(f64) -> String) {
    match v {
        Some(v) => {
            let _ = write!(
                o,
                "<td data-metric=\"{key}\" data-value=\"{}\">{}</td>",
                num(v),
                esc(&fmt(v))
            );
        }
        None => {
            let _ = write!(o, "<td class=\"missing\" data-metric=\"{key}\">—</td>");
        }
    }
}

/// One SLO check of a probe: `✓ p99<2ms: 90.0 µs`, latency in time units as the gate reads it.
fn verdict(o: &mut String, v: &Verdict) {
    let latency = crate::gate::parse(&v.expr).is_ok_and(|t| t.metric().is_latency());
    let measured = match (v.measured, &v.why) {
        (Some(m), _) if latency => format::ns(m, false),
        (Some(m), _) => format::sig(m, 4, true),
        (None, Some(why)) => why.clone(),
        (None, None) => "not measured".into(),
    };
    let _ = write!(
        o,
        "<span class=\"range {}\">{} {}: {}</span>",
        if v.pass { "pass" } else { "fail" },
        if v.pass { "✓" } else { "✗" },
        esc(&v.expr),
        esc(&measured)
    );
}
