//! Tests of the latency-against-throughput curve: reading a rate schedule's stages and a
//! capacity search from their documents (hand-made here in the documented shapes), the SLO
//! lines read with the gate's parser, and the page drawn from them.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::knee::{Knee, Origin, Slo};
use super::model::{CapInput, Capacity, LimiterKind, Run};
use super::*;

fn doc(name: &str, kind: DocKind, value: Value) -> Doc {
    Doc {
        path: PathBuf::from(format!("/tmp/x/{name}")),
        name: name.into(),
        kind,
        value,
    }
}

/// A stage's latency section with the given P50, P99 and P99.9 (the other fields as a result
/// writes them).
fn stage_latency(p50: u64, p99: u64, p999: u64) -> Value {
    json!({"count": 1000, "min_ns": p50 / 2, "mean_ns": p50 as f64, "stddev_ns": 1.0,
           "max_ns": p999 * 2,
           "percentiles_ns": {"10": p50 / 2, "50": p50, "75": p50, "90": p99, "99": p99,
                              "99.9": p999, "99.99": p999, "99.999": p999, "100": p999 * 2},
           "hdr": ""})
}

fn schedule_result() -> Value {
    let stage = |index: u64, target: f64, achieved: f64, latency: Value| {
        json!({"index": index, "start_s": index as f64 * 2.0, "end_s": index as f64 * 2.0 + 2.0,
               "target_rate": target, "sent": 2000, "received": 2000, "lost": 0,
               "msgs_per_sec": achieved, "latency": latency, "latency_uncorrected": latency})
    };
    json!({
        "schema": "msgbench.result/v1",
        "tool": {"name": "msgbench", "version": "0.1.0"},
        "scenario": "latency", "run_id": "r1", "started_at": "2026-11-25T14:00:00Z",
        "throughput": {"msgs_per_sec": 2500.0},
        "schedule": {
            "spec": "step:1000:1000:2s:4000",
            "stages": [
                // Out of throughput order on purpose: the curve sorts by what was achieved.
                stage(1, 2000.0, 1999.5, stage_latency(60_000, 110_000, 150_000)),
                stage(0, 1000.0, 1000.0, stage_latency(50_000, 90_000, 120_000)),
                stage(3, 4000.0, 3100.0, stage_latency(900_000, 8_000_000, 20_000_000)),
                stage(2, 3000.0, 2990.0, stage_latency(80_000, 400_000, 1_500_000)),
                stage(4, 5000.0, 3000.0, Value::Null),
            ]
        },
        "thresholds": [
            {"expr": "p99<2ms", "measured": 8_000_000.0, "pass": false},
            {"expr": "lost==0", "measured": 0.0, "pass": true},
            {"expr": "p99.9<=5ms", "measured": 20_000_000.0, "pass": false},
            {"expr": "max<1s", "measured": 40_000_000.0, "pass": true}
        ]
    })
}

fn probe(rate: f64, run: u64, pass: bool, achieved: f64, lat: Option<(u64, u64, u64)>) -> Value {
    let latency = lat.map_or(
        Value::Null,
        |(a, b, c)| json!({"p50_ns": a, "p99_ns": b, "p999_ns": c}),
    );
    json!({"rate": rate, "run": run, "pass": pass, "tool_kept_schedule": true,
           "msgs_per_sec": achieved, "shortfall_pct": (rate - achieved) / rate * 100.0,
           "latency": latency, "lost": 0, "errors": 0,
           "verdicts": [{"expr": "p99<2ms", "measured": lat.map(|l| l.1), "pass": pass}]})
}

fn capacity_doc() -> Value {
    json!({
        "schema": "msgbench.capacity/v1",
        "tool": {"name": "msgbench", "version": "0.1.0"},
        "scenario": "latency", "run_id": "c1", "started_at": "2026-11-25T14:00:00Z",
        "slo": ["p99<2ms", "lost==0", "p50 < 500us"],
        "probe_duration_s": 5.0, "warmup_s": 1.0, "probe_runs": 3,
        "sustainable_rate": 41000.0,
        "confidence": {"level": 0.95, "low": 39000.0, "high": 43000.0},
        "limiter": {"kind": "slo", "detail": "p99<2ms failed at 45000/s"},
        "probes": [
            probe(45000.0, 1, false, 44000.0, Some((300_000, 2_500_000, 6_000_000))),
            probe(1000.0, 1, true, 999.8, Some((50_000, 90_000, 120_000))),
            probe(1000.0, 2, true, 1000.1, Some((52_000, 95_000, 125_000))),
            probe(1000.0, 3, true, 999.9, Some((51_000, 91_000, 130_000))),
            probe(45000.0, 2, true, 44900.0, Some((200_000, 1_900_000, 3_000_000))),
            probe(45000.0, 3, false, 44500.0, None),
            probe(60000.0, 1, false, 30000.0, None),
        ]
    })
}

fn run_of(v: &Value) -> Run {
    serde_json::from_value(v.clone()).unwrap()
}

#[test]
fn a_schedule_gives_one_point_per_stage_with_latency_in_throughput_order() {
    let knee = Knee::of_result(&run_of(&schedule_result())).unwrap();
    let got: Vec<(f64, f64, Option<f64>, Origin)> = knee
        .points
        .iter()
        .map(|p| {
            (
                p.msgs_per_sec,
                p.target_rate,
                p.latency_ns[1],
                p.origin.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1000.0, 1000.0, Some(90e3), Origin::Stage { index: 0 }),
            (1999.5, 2000.0, Some(110e3), Origin::Stage { index: 1 }),
            (2990.0, 3000.0, Some(400e3), Origin::Stage { index: 2 }),
            (3100.0, 4000.0, Some(8e6), Origin::Stage { index: 3 }),
        ],
        "the stage without latency has no point"
    );
    assert_eq!(
        knee.points[0].latency_ns,
        [Some(50e3), Some(90e3), Some(120e3)]
    );
    assert!(knee.points.iter().all(|p| !p.failed()));
    assert!(knee.sustainable.is_none());
}

#[test]
fn latency_thresholds_become_slo_lines_read_by_the_gate() {
    let knee = Knee::of_result(&run_of(&schedule_result())).unwrap();
    assert_eq!(
        knee.slos,
        [
            Slo {
                expr: "p99<2ms".into(),
                limit_ns: 2e6,
                series: Some(1),
                pass: Some(false)
            },
            Slo {
                expr: "p99.9<=5ms".into(),
                limit_ns: 5e6,
                series: Some(2),
                pass: Some(false)
            },
            // A latency bound on no drawn percentile still gets its line.
            Slo {
                expr: "max<1s".into(),
                limit_ns: 1e9,
                series: None,
                pass: Some(true)
            },
        ],
        "lost==0 bounds no latency"
    );
}

#[test]
fn no_schedule_or_no_latency_means_no_curve() {
    let mut v = schedule_result();
    v.as_object_mut().unwrap().remove("schedule");
    assert!(Knee::of_result(&run_of(&v)).is_none());
    let mut v = schedule_result();
    for s in v["schedule"]["stages"].as_array_mut().unwrap() {
        s["latency"] = Value::Null;
    }
    assert!(Knee::of_result(&run_of(&v)).is_none(), "a pubsub schedule");
}

#[test]
fn a_capacity_search_reads_with_its_findings_and_probes() {
    let d = doc("cap.json", DocKind::Capacity, capacity_doc());
    let c = CapInput::read(&d, "cap.json".into()).unwrap();
    let cap: &Capacity = &c.cap;
    assert_eq!(cap.sustainable_rate, Some(41000.0));
    let ci = cap.confidence.as_ref().unwrap();
    assert_eq!((ci.level, ci.low, ci.high), (0.95, 39000.0, 43000.0));
    let l = cap.limiter.as_ref().unwrap();
    assert_eq!(
        (l.kind, l.detail.as_str()),
        (LimiterKind::Slo, "p99<2ms failed at 45000/s")
    );
    assert_eq!(cap.probes.len(), 7);
    assert_eq!(cap.probes[1].latency.as_ref().unwrap().p999_ns, Some(120e3));
    assert!(cap.probes[5].latency.is_none());
    assert_eq!(cap.probe_runs, Some(3.0));

    // Nulls where a search found nothing, and a limiter kind from a newer msgbench.
    let mut v = capacity_doc();
    v["sustainable_rate"] = Value::Null;
    v["confidence"] = Value::Null;
    v["limiter"] = json!({"kind": "cosmic-rays", "detail": "x"});
    let d = doc("cap.json", DocKind::Capacity, v);
    let c = CapInput::read(&d, "cap.json".into()).unwrap();
    assert_eq!(c.cap.sustainable_rate, None);
    assert_eq!(c.cap.limiter.unwrap().kind, LimiterKind::Other);

    let mut v = capacity_doc();
    v["probes"] = "many".into();
    let d = doc("cap.json", DocKind::Capacity, v);
    let e = CapInput::read(&d, "cap.json".into()).err().unwrap();
    assert!(
        e.to_string().contains("cap.json") && e.to_string().contains("wrong type"),
        "{e}"
    );
}

#[test]
fn a_capacity_curve_has_one_point_per_rate_the_median_of_its_runs() {
    let v = capacity_doc();
    let knee = Knee::of_capacity(&serde_json::from_value(v).unwrap()).unwrap();
    assert_eq!(
        knee.points.len(),
        2,
        "60000/s measured no latency: no point"
    );
    let low = &knee.points[0];
    assert_eq!((low.target_rate, low.msgs_per_sec), (1000.0, 999.9));
    assert_eq!(low.latency_ns, [Some(51e3), Some(91e3), Some(125e3)]);
    assert_eq!(
        low.origin,
        Origin::Rate {
            runs: 3,
            void: 0,
            measured: 3,
            failed: 0,
            range_ns: [Some((50e3, 52e3)), Some((90e3, 95e3)), Some((120e3, 130e3))]
        }
    );
    // Two runs measured latency (the median of two is their mean); two of three failed.
    let high = &knee.points[1];
    assert_eq!((high.target_rate, high.msgs_per_sec), (45000.0, 44450.0));
    assert_eq!(high.latency_ns[1], Some(2.2e6));
    assert!(high.failed());
    assert!(matches!(
        high.origin,
        Origin::Rate {
            runs: 3,
            measured: 2,
            failed: 2,
            ..
        }
    ));
    let s = knee.sustainable.as_ref().unwrap();
    assert_eq!(
        (s.rate, s.confidence),
        (41000.0, Some((0.95, 39000.0, 43000.0)))
    );
    let slos: Vec<(&str, f64, Option<usize>, Option<bool>)> = knee
        .slos
        .iter()
        .map(|s| (s.expr.as_str(), s.limit_ns, s.series, s.pass))
        .collect();
    assert_eq!(
        slos,
        [
            ("p99<2ms", 2e6, Some(1), None),
            ("p50<500us", 500e3, Some(0), None)
        ]
    );
}

/// A search in which msgbench fell behind its schedule: at 4,000/s run 1 was void (its latency,
/// the tool's, broke the SLO) and held when run again, and run 2 held; at 8,000/s both runs
/// were void in every try.
fn capacity_with_void_runs() -> Value {
    let void = |rate: f64, run: u64| {
        let mut p = probe(
            rate,
            run,
            false,
            rate,
            Some((900_000, 9_000_000, 12_000_000)),
        );
        p["tool_kept_schedule"] = false.into();
        p
    };
    let mut v = capacity_doc();
    v["sustainable_rate"] = 4000.0.into();
    v["confidence"] = json!({"level": 0.95, "low": 4000.0, "high": 8000.0});
    v["limiter"] = json!({"kind": "tool", "detail": "msgbench could not keep its schedule"});
    v["probes"] = json!([
        probe(2000.0, 1, true, 2000.0, Some((50_000, 90_000, 120_000))),
        probe(2000.0, 2, true, 2000.0, Some((52_000, 95_000, 125_000))),
        void(4000.0, 1),
        probe(4000.0, 1, true, 4000.0, Some((60_000, 110_000, 150_000))),
        probe(4000.0, 2, true, 4000.0, Some((62_000, 120_000, 160_000))),
        void(8000.0, 1),
        void(8000.0, 1),
        void(8000.0, 1),
        void(8000.0, 2),
        void(8000.0, 2),
        void(8000.0, 2),
    ]);
    v
}

#[test]
fn a_void_run_is_neither_held_nor_failed_on_the_curve() {
    let v = capacity_with_void_runs();
    let knee = Knee::of_capacity(&serde_json::from_value(v.clone()).unwrap()).unwrap();
    assert_eq!(knee.points.len(), 2, "8,000/s measured only the tool");
    assert_eq!(knee.void_rates, [8000.0]);
    // 4,000/s held: its void try is left out of the medians and does not make it hollow.
    let held = &knee.points[1];
    assert_eq!(held.target_rate, 4000.0);
    assert!(!held.failed());
    assert_eq!(held.latency_ns[1], Some(115e3));
    assert_eq!(
        held.origin,
        Origin::Rate {
            runs: 2,
            void: 0,
            measured: 2,
            failed: 0,
            range_ns: [
                Some((60e3, 62e3)),
                Some((110e3, 120e3)),
                Some((150e3, 160e3))
            ]
        }
    );
    let html = render(&[doc("cap.json", DocKind::Capacity, v)]).unwrap();
    assert!(
        elements(&html, "<circle", "hollow").is_empty(),
        "no rate failed"
    );
    assert!(html.contains("Not drawn, as every run there was void: 8,000/s."));
    // The probes table: each void try says so and what followed, and none reads "fail".
    let rows: Vec<&str> = html
        .split("<tr data-input=\"cap.json\"")
        .skip(1)
        .map(|r| &r[..r.find("</tr>").unwrap()])
        .collect();
    assert_eq!(rows.len(), 11);
    let voids: Vec<&&str> = rows
        .iter()
        .filter(|r| r.contains("data-void=\"true\""))
        .collect();
    assert_eq!(voids.len(), 7);
    assert!(voids
        .iter()
        .all(|r| r.contains("⊘ void") && !r.contains("✗")));
    assert_eq!(voids.iter().filter(|r| r.contains("run again")).count(), 5);
    assert_eq!(
        voids
            .iter()
            .filter(|r| r.contains("rate put down to the tool"))
            .count(),
        2
    );
    assert!(!html.contains("✗ fail"), "no run failed");
    assert!(html.contains("⊘ void: msgbench fell behind its own schedule"));
    assert!(html.contains("6 runs at 3 rates, up to 3 per rate, and 5 repeats of void runs;"));
    // The one repeated at 4,000/s comes before its repeat.
    let at_4k: Vec<&&str> = rows
        .iter()
        .filter(|r| r.contains("data-rate=\"4000\" data-run=\"1\""))
        .collect();
    assert!(at_4k[0].contains("run again") && at_4k[1].contains("✓ pass"));
}

/// The `<g class="ref…">` or `<circle …>` elements of `html` holding `needle`, as text.
fn elements<'a>(html: &'a str, open: &str, needle: &str) -> Vec<&'a str> {
    html.match_indices(open)
        .map(|(i, _)| &html[i..i + html[i..].find('>').unwrap()])
        .filter(|e| e.contains(needle))
        .collect()
}

#[test]
fn a_capacity_search_alone_makes_a_page_with_its_section_and_curve() {
    let html = render(&[doc("cap.json", DocKind::Capacity, capacity_doc())]).unwrap();
    assert!(html.contains("id=\"capacity\""));
    assert!(html.contains("data-chart=\"latency-throughput\" data-input=\"cap.json\""));
    assert!(
        !html.contains("table class=\"summary\"") && !html.contains("id=\"environment\""),
        "no result, no calibration: no summary and no environment"
    );
    assert!(
        html.contains("data-metric=\"sustainable_rate\" data-value=\"41000\"><b>41,000</b> msgs/s")
    );
    assert!(html.contains("data-level=\"0.95\" data-lo=\"39000\" data-hi=\"43000\""));
    assert!(html.contains("data-kind=\"slo\""));
    assert_eq!(
        html.matches("<tr data-input=\"cap.json\" data-rate=")
            .count(),
        7
    );
    // Probes by rate, then run.
    let rows: Vec<&str> = elements(&html, "<tr data-input=\"cap.json\"", "data-rate");
    assert!(
        rows[0].contains("data-rate=\"1000\" data-run=\"1\""),
        "{rows:?}"
    );
    assert!(rows[6].contains("data-rate=\"60000\" data-run=\"1\" data-pass=\"false\""));
    // Three series of two points; the failing rate's three markers are rings.
    assert_eq!(elements(&html, "<circle", "data-msgs-per-sec").len(), 6);
    assert_eq!(elements(&html, "<circle", "hollow").len(), 3);
    assert_eq!(elements(&html, "<circle", "data-failed=\"2\"").len(), 3);
    let slo = elements(
        &html,
        "<g class=\"ref limit\"",
        "data-ref=\"SLO p99&lt;2ms\"",
    );
    assert_eq!(slo.len(), 1);
    assert!(slo[0].contains("data-value=\"2000000\""), "{slo:?}");
    let xref = elements(&html, "<g class=\"xref\"", "data-value=\"41000\"");
    assert_eq!(xref.len(), 1);
    assert!(xref[0].contains("data-lo=\"39000\" data-hi=\"43000\""));
    // Both embedded, and named in the header.
    assert!(html.contains("class=\"input-data\" data-input=\"cap.json\""));
    assert!(html.contains("1 capacity search, written by"));
}

#[test]
fn a_schedule_run_draws_its_curve_beside_its_other_charts() {
    let html = render(&[doc("sched.json", DocKind::Result, schedule_result())]).unwrap();
    assert!(html.contains("data-chart=\"latency-throughput\" data-input=\"sched.json\""));
    assert!(html.contains("<code>step:1000:1000:2s:4000</code>"));
    let stages = elements(&html, "<circle", "data-stage=");
    assert_eq!(stages.len(), 12, "three series of four stages");
    assert!(stages[0]
        .contains("data-value=\"50000\" data-msgs-per-sec=\"1000\" data-target-rate=\"1000\""));
    assert!(elements(&html, "<circle", "hollow").is_empty());
    let refs = elements(&html, "<g class=\"ref limit\"", "data-ref");
    assert_eq!(refs.len(), 3);
    assert!(refs[0].contains("data-ref=\"SLO p99&lt;2ms (failed)\" data-value=\"2000000\""));
    assert!(!html.contains("class=\"xref\""));
}
