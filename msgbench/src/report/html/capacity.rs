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
            LimiterKind::Tool => "msgbench itself, not the system",
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
    // A run the search repeated (it was void) is one run of several tries.
    let mut runs: Vec<(f64, u64)> = cap.probes.iter().map(|p| (p.rate, p.run)).collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    runs.dedup();
    let plural = |n: usize, one: &str, many: &str| {
        format!(
            "{} {}",
            format::count(n as f64),
            if n == 1 { one } else { many }
        )
    };
    let mut how = format!(
        "{} at {}",
        plural(runs.len(), "run", "runs"),
        plural(rates.len(), "rate", "rates")
    );
    if let Some(n) = cap.probe_runs {
        let _ = write!(how, ", up to {} per rate", format::count(n));
    }
    let repeats = cap.probes.len() - runs.len();
    if repeats > 0 {
        let _ = write!(
            how,
            ", and {} of void runs",
            plural(repeats, "repeat", "repeats")
        );
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

/// Every probe, by rate and then run (a run's tries in the order run). A void run (msgbench
/// fell behind its own schedule) is shown as one, not as a failure, with its checks greyed:
/// they measured the tool.
fn probes(o: &mut String, c: &CapInput) {
    let all = &c.cap.probes;
    if all.is_empty() {
        return;
    }
    // Each probe with whether the search tried its run again after it.
    let mut ps: Vec<(&Probe, bool)> = all
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let again = all[i + 1..]
                .iter()
                .any(|q| q.rate == p.rate && q.run == p.run);
            (p, again)
        })
        .collect();
    // Stable, so a run's tries keep their order.
    ps.sort_by(|(a, _), (b, _)| a.rate.total_cmp(&b.rate).then(a.run.cmp(&b.run)));
    let label = esc(&c.label);
    o.push_str("<h4>Probes</h4>\n");
    if ps.iter().any(|(p, _)| p.void()) {
        o.push_str(
            "<p class=\"note\">⊘ void: msgbench fell behind its own schedule in that run, so \
             the run measured the tool, not the system. It neither held nor failed its rate, \
             its checks are greyed, and the search ran it again; a run void in every try put \
             its rate down to the tool.</p>\n",
        );
    }
    o.push_str(
        "<div class=\"table-wrap\"><table class=\"probes\">\n<thead><tr>\
         <th scope=\"col\">rate /s</th><th scope=\"col\">run</th>\
         <th scope=\"col\">verdict</th><th scope=\"col\">achieved /s</th>\
         <th scope=\"col\">shortfall</th><th scope=\"col\">P50</th><th scope=\"col\">P99</th>\
         <th scope=\"col\">P99.9</th><th scope=\"col\">lost</th><th scope=\"col\">errors</th>\
         <th scope=\"col\" class=\"text\">checks</th></tr></thead>\n<tbody>\n",
    );
    for (p, again) in ps {
        let outcome = if p.void() {
            format!(
                "<span class=\"void\">⊘ void</span><span class=\"range\">{}</span>",
                if again {
                    "run again"
                } else {
                    "rate put down to the tool"
                }
            )
        } else if p.pass {
            "<span class=\"pass\">✓ pass</span>".to_string()
        } else {
            "<span class=\"fail\">✗ fail</span>".to_string()
        };
        let _ = write!(
            o,
            "<tr data-input=\"{label}\" data-rate=\"{}\" data-run=\"{}\" data-pass=\"{}\" \
             data-void=\"{}\"><th scope=\"row\">{}</th><td>{}</td><td>{outcome}</td>",
            num(p.rate),
            p.run,
            p.pass,
            p.void(),
            esc(&format::count(p.rate)),
            p.run,
        );
        cell(o, "msgs_per_sec", p.msgs_per_sec, |v| format::si(v, false));
        cell(o, "shortfall_pct", p.shortfall_pct, format::pct);
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
        o.push_str("<td class=\"text checks\">");
        for v in &p.verdicts {
            check(o, v, p.void());
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
/// A void run's checks are not judged: greyed, without a mark.
fn check(o: &mut String, v: &Verdict, void: bool) {
    let latency = crate::gate::parse(&v.expr).is_ok_and(|t| t.metric().is_latency());
    let measured = match (v.measured, &v.why) {
        (Some(m), _) if latency => format::ns(m, false),
        (Some(m), _) => format::sig(m, 4, true),
        (None, Some(why)) => why.clone(),
        (None, None) => "not measured".into(),
    };
    let (class, mark) = match (void, v.pass) {
        (true, _) => ("", "–"),
        (false, true) => (" pass", "✓"),
        (false, false) => (" fail", "✗"),
    };
    let _ = write!(
        o,
        "<span class=\"range{class}\">{mark} {}: {}</span>",
        esc(&v.expr),
        esc(&measured)
    );
}
