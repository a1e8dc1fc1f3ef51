//! `--markdown FILE`: the run's headline figures as a Markdown table, ready to paste into a pull
//! request or an issue: what ran against what, throughput per side, latency percentiles,
//! delivery, the rows of the run's own sections (JetStream's reconciliation, gRPC's calls by
//! status, …, as their scenarios show them), errors and the thresholds. A `conns` run, whose
//! load is connections, shows its own rows instead of throughput, latency and delivery.

use std::fmt::Write;

use super::Exporter;
use crate::format::{duration_ns, group, ibytes};
use crate::metric::Family;
use crate::result::RunResult;

pub struct Markdown;

impl Exporter for Markdown {
    fn serialize(&self, r: &RunResult) -> Vec<u8> {
        let mut o = String::new();
        let against = r.params.describe().target(r);
        let _ = writeln!(
            o,
            "**msgbench {}** against {against} ({}), {}\n",
            r.scenario,
            if r.server.embedded {
                "embedded"
            } else {
                "external"
            },
            r.started_at
        );
        let _ = writeln!(o, "| figure | value |\n|---|---|");
        let mut row = |k: &str, v: String| {
            let _ = writeln!(o, "| {k} | {v} |");
        };
        // A run whose load is connections has no messages' figures: its own rows stand there.
        if r.own.family() == Family::Messages {
            message_rows(&mut row, r);
        }
        for shown in crate::scenario::registry::all_shown() {
            let Some(section) = r.own.iter().find(|s| s.key() == shown.key) else {
                continue;
            };
            for line in (shown.rows)(&section.to_value()) {
                let text = match line.verdict {
                    Some((true, v)) => format!("{}, {v}", line.text),
                    Some((false, v)) => format!("{}, **{v}**", line.text),
                    None => line.text,
                };
                row(&line.label, text);
            }
        }
        if let Some(runs) = &r.runs {
            let which = format!(
                "{}; the figures are run {}'s, the median by {}",
                runs.n,
                runs.representative + 1,
                runs.representative_by
            );
            row(
                "runs",
                match super::text::failed_runs(runs) {
                    Some(failed) => format!("{which}; **{failed}**"),
                    None => which,
                },
            );
        }
        if let Some(f) = &r.fault {
            // A fault never injected fails the run unless allowed: the table says so too.
            let (asked, missed) = (f.faults.len().max(1), f.missed());
            let injected = format!("{} of {asked} injected", asked - missed);
            row(
                "faults",
                match (missed, f.missed_allowed) {
                    (0, _) => injected,
                    (_, true) => format!("{injected}; allowed by --allow-missed-faults"),
                    (_, false) => format!("{injected}; **{missed} never injected**"),
                },
            );
        }
        let errors: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        row(
            "errors",
            if errors.is_empty() {
                "none".into()
            } else {
                errors.join(", ")
            },
        );
        for t in &r.thresholds {
            let measured = match (t.measured, t.latency) {
                (Some(v), true) => duration_ns(v),
                (Some(v), false) => format!("{v}"),
                (None, _) => "not measured".into(),
            };
            let verdict = if t.pass { "pass" } else { "**FAIL**" };
            row(
                &format!("threshold `{}`", t.expr),
                format!("{verdict} ({measured})"),
            );
        }
        o.into_bytes()
    }
}

/// Throughput per side, latency, gRPC statuses and delivery.
fn message_rows(row: &mut impl FnMut(&str, String), r: &RunResult) {
    let rate = |t: &crate::stats::throughput::Throughput| {
        format!(
            "{} msgs/s ({}/s, {} msgs in {:.3} s)",
            group(t.msgs_per_sec.round() as u64),
            ibytes(t.bytes_per_sec),
            group(t.msgs),
            t.seconds
        )
    };
    row("throughput", rate(&r.throughput));
    for (role, stats) in &r.by_role {
        let clients = match stats.clients {
            1 => "1 client".to_string(),
            n => format!("{n} clients"),
        };
        row(&format!("{role} ({clients})"), rate(&stats.throughput));
    }
    if let Some(l) = &r.latency {
        for (k, label) in [
            ("50", "P50"),
            ("90", "P90"),
            ("99", "P99"),
            ("99.9", "P99.9"),
        ] {
            row(&format!("latency {label}"), latency_cell(l, k, l.at(k)));
        }
        row("latency max", latency_cell(l, "max_ns", l.max_ns));
    }
    // The text's own words, so the two never disagree on what was counted.
    let d = &r.delivery;
    row(
        "delivery",
        if d.accounting == "none" {
            super::text::delivery_unchecked(r)
        } else {
            super::text::delivery_clause(d)
        },
    );
}

/// A latency figure, or, between agents, that it is below the clock offsets' uncertainty.
fn latency_cell(l: &crate::result::LatencyStats, figure: &str, ns: u64) -> String {
    match l.unresolved(figure) {
        Some(u) => format!(
            "below the clock offset's uncertainty (±{})",
            duration_ns(u as f64)
        ),
        None => duration_ns(ns as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCounts;
    use crate::result::{JsReport, ServerMeta};

    fn run(scenario: &'static str) -> RunResult {
        RunResult::new(
            scenario,
            "2026-11-29T12:00:00Z".into(),
            serde_json::Value::Null,
            ServerMeta::for_tests(),
            &ErrorCounts::default(),
            false,
        )
    }

    #[test]
    fn the_delivery_row_shows_a_count_the_run_did_not_take_as_such_never_as_0() {
        let md = |r: &RunResult| String::from_utf8(Markdown.serialize(r)).unwrap();
        // A publisher alone: what it sent, and that nobody here counted arrivals.
        let mut r = run("pub");
        (r.delivery.sent, r.delivery.accounting) = (1000, "none");
        r.delivery.unmeasured = crate::stats::delivery::Unmeasured::ARRIVALS;
        assert!(
            md(&r).contains(
                "| delivery | 1,000 sent; not checked here (this run has no subscriber of its own) |"
            ),
            "{}",
            md(&r)
        );
        // A subscriber for a time, without stamps: no count was owed, nothing tells a loss.
        let mut r = run("sub");
        (r.delivery.received, r.delivery.accounting) = (800, "count");
        r.delivery.unmeasured = crate::stats::delivery::Unmeasured {
            received: false,
            ..crate::stats::delivery::Unmeasured::ALL
        };
        assert!(
            md(&r).contains(
                "| delivery | received 800, lost unknown, duplicated unknown, reordered unknown |"
            ),
            "{}",
            md(&r)
        );
    }

    #[test]
    fn a_fault_never_injected_is_a_failure_in_the_table_unless_allowed() {
        use crate::stats::recovery::{FaultKind, FaultReport, FaultSpec, Owed};
        let mut r = run("js.pub");
        let spec = FaultSpec {
            kind: FaultKind::Restart,
            target: None,
            at: std::time::Duration::from_secs(60),
            hold: std::time::Duration::ZERO,
            corrupt: None,
        };
        r.fault = Some(FaultReport::new(
            spec,
            None,
            None,
            &[],
            (Owed::rate(1.0), 1.0),
            0,
        ));
        let md = |r: &RunResult| String::from_utf8(Markdown.serialize(r)).unwrap();
        assert!(
            md(&r).contains("| faults | 0 of 1 injected; **1 never injected** |"),
            "{}",
            md(&r)
        );
        r.fault.as_mut().unwrap().missed_allowed = true;
        assert!(
            md(&r).contains("| faults | 0 of 1 injected; allowed by --allow-missed-faults |"),
            "{}",
            md(&r)
        );
    }

    #[test]
    fn a_run_of_several_that_failed_is_named_in_the_runs_row() {
        use crate::metric::runs::{RunEntry, RunsReport};
        let mut r = run("pubsub");
        let entry = |exit_status| RunEntry {
            run_id: "r".into(),
            started_at: "2026-11-29T12:00:00Z".into(),
            interrupted: false,
            exit_status,
        };
        r.runs = Some(RunsReport {
            n: 3,
            representative: 1,
            representative_by: "msgs_per_sec".into(),
            runs: vec![entry(0), entry(0), entry(3)],
            metrics: Default::default(),
        });
        let md = String::from_utf8(Markdown.serialize(&r)).unwrap();
        assert!(
            md.contains(
                "| runs | 3; the figures are run 2's, the median by msgs_per_sec; **run 3 exited 3** |"
            ),
            "{md}"
        );
        let text = String::from_utf8(crate::export::text::Text.serialize(&r)).unwrap();
        assert!(
            text.contains("!! run 3 exited 3: the exit status is the worst run's"),
            "{text}"
        );
    }

    #[test]
    fn a_runs_own_sections_are_rows_as_their_scenarios_show_them() {
        let mut r = run("js.pub");
        let mut js = JsReport::of("file", "async", Vec::new());
        (js.acked, js.stored, js.reconciled) = (1200, Some(1201), false);
        r.own.put(js);
        let md = String::from_utf8(Markdown.serialize(&r)).unwrap();
        assert!(
            md.contains("| JetStream acks | 1,200 acked, 1,201 stored, **not reconciled** |"),
            "{md}"
        );
        assert!(
            md.contains("| throughput |"),
            "a message run keeps its rows: {md}"
        );
        // A section no scenario shows (none here) adds nothing, and a run with none has none.
        let bare = String::from_utf8(Markdown.serialize(&run("pub"))).unwrap();
        assert!(!bare.contains("JetStream"), "{bare}");
    }
}
