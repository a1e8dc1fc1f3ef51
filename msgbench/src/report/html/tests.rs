//! Tests of the report: the number formats, the tick rules, the percentile axis, escaping, the
//! plotting kit, and whole pages rendered from small documents. In a file of their own so the
//! code they test reads without them.

use super::*;
use std::path::PathBuf;

use crate::format;

use hdrhistogram::Histogram;
use serde_json::Value;

use super::model::{percentile_label, percentile_x, Curve};

fn doc(name: &str, value: Value) -> Doc {
    let kind = if value["schema"] == crate::scenario::calibrate::SCHEMA {
        DocKind::Calibration
    } else {
        DocKind::Result
    };
    Doc {
        path: PathBuf::from(format!("/tmp/x/{name}")),
        name: name.into(),
        kind,
        value,
    }
}

fn histogram(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
    let mut h = crate::stats::latency::new_histogram();
    for v in values {
        h.record(v).unwrap();
    }
    h
}

/// A small result with every section the report draws, including the ones added with
/// `--runs` and the timeline.
fn full_result() -> Value {
    let h = histogram((1..=1000u64).map(|i| i * 1_000));
    let u = histogram((1..=1000u64).map(|i| i * 900));
    let lat = |h: &Histogram<u64>| {
        serde_json::json!({
            "count": h.len(), "min_ns": h.min(), "mean_ns": h.mean(), "stddev_ns": h.stdev(),
            "max_ns": h.max(),
            "percentiles_ns": {"50": h.value_at_quantile(0.5), "99": h.value_at_quantile(0.99)},
            "hdr": crate::stats::hdr::encode_base64(h)
        })
    };
    serde_json::json!({
        "schema": "msgbench.result/v1",
        "tool": {"name": "msgbench", "version": "0.1.0"},
        "scenario": "latency", "run_id": "r1", "started_at": "2026-01-01T00:00:00Z",
        "interrupted": false,
        "params": {"rate": 1000.0, "size": 8, "connection": {"tls": null}, "note": "<b>x</b>"},
        "server": {"url": "nats://127.0.0.1:4222", "name": "n", "version": "2.15.2",
                   "embedded": true, "max_payload": 1048576, "auth": "none"},
        "throughput": {"msgs": 2000, "bytes": 16000, "seconds": 1.0, "msgs_per_sec": 2000.0,
                       "bytes_per_sec": 16000.0},
        "by_role": {"pub": {"msgs_per_sec": 1000.0, "clients": 1},
                    "sub": {"msgs_per_sec": 1000.0, "clients": 1}},
        "clients": [
            {"role": "pub", "id": 0, "msgs": 1000, "bytes": 8000, "seconds": 1.0,
             "msgs_per_sec": 1000.5, "bytes_per_sec": 8000.0},
            {"role": "sub", "id": 0, "msgs": 1000, "bytes": 8000, "seconds": 1.0,
             "msgs_per_sec": 999.25, "bytes_per_sec": 8000.0}
        ],
        "delivery": {"sent": 1000, "expected": 1000, "received": 1000, "lost": 0,
                     "duplicated": 0, "reordered": 0},
        "errors": {},
        "latency": lat(&h),
        "latency_uncorrected": lat(&u),
        "host": {"cpu": "AMD EPYC 7B13", "cores": 2, "os": "linux", "arch": "x86_64"},
        "timeline": {
            "interval_s": 1.0,
            "clients": [{"role": "pub", "id": 0}, {"role": "sub", "id": 0}],
            "ticks": [
                {"t_s": 1.0, "span_s": 1.0, "msgs": [1200, 1199], "sent_per_sec": 1200.0,
                 "received_per_sec": 1199.0,
                 "latency": {"count": 1199, "p50_ns": 51200, "p99_ns": 98000, "max_ns": 120000},
                 "errors": 0},
                {"t_s": 2.0, "span_s": 1.0, "msgs": [1000, 1000], "sent_per_sec": 1000.0,
                 "received_per_sec": 1000.0, "errors": 2},
                {"t_s": 2.5, "span_s": 0.5, "msgs": [500, 501], "sent_per_sec": 1000.0,
                 "received_per_sec": 1002.0,
                 "latency": {"count": 501, "p50_ns": 50000, "p99_ns": 90000, "max_ns": 100000},
                 "errors": 0}
            ]
        },
        "runs": {
            "n": 3, "representative": 1, "representative_by": "p99",
            "runs": [],
            "metrics": {
                "msgs_per_sec": {"median": 2000.0, "min": 1900.0, "max": 2100.0, "mad": 50.0,
                                 "values": [1900.0, 2000.0, 2100.0]},
                "p99": {"median": 990000.0, "min": 980000.0, "max": 1000000.0, "mad": 1.0,
                        "values": [980000.0, 990000.0, 1000000.0]}
            }
        },
        "thresholds": [{"expr": "p99<2ms", "measured": 990000.0, "pass": true},
                       {"expr": "lost==0", "measured": 0.0, "pass": true}],
        "connections": {"opened": 2, "lost": 0, "reconnects": 0, "gave_up": 0, "reconnect_ns": []}
    })
}

fn calibration() -> Value {
    let rt = |p50: u64| {
        serde_json::json!({"count": 10, "min": p50 / 2, "p50": p50, "p90": p50 + 1,
                                          "p99": p50 + 2, "p99.9": p50 + 3, "max": p50 * 3})
    };
    serde_json::json!({
        "schema": "msgbench.calibration/v1",
        "tool": {"name": "msgbench", "version": "0.1.0"},
        "started_at": "2026-01-01T00:00:00Z",
        "server": {"url": "nats://127.0.0.1:4222", "version": "2.15.2", "embedded": true},
        "environment": {"cpus": 2, "samples": 10, "size": 16,
                        "floor_ns": {"tcp": rt(20_000), "one_hop": rt(40_000), "two_hop": rt(80_000)}}
    })
}

/// The `data-values` of the series `id` in the chart `kind`, read back from the HTML.
fn series_values(html: &str, kind: &str, id: &str) -> Vec<f64> {
    let start = html.find(&format!("data-chart=\"{kind}\"")).expect(kind);
    let chart = &html[start..start + html[start..].find("</svg>").unwrap()];
    let at = chart
        .match_indices("<path class=\"line\"")
        .map(|(i, _)| &chart[i..])
        .find(|p| p[..p.find("/>").unwrap()].contains(&format!("data-series=\"{}\"", esc(id))))
        .unwrap_or_else(|| panic!("no series {id} in {kind}"));
    let v = &at[at.find("data-values=\"").unwrap() + 13..];
    v[..v.find('"').unwrap()]
        .split(' ')
        .map(|s| s.parse().unwrap())
        .collect()
}

#[test]
fn numbers_read_in_their_units() {
    assert_eq!(format::ns(850.0, false), "850\u{a0}ns");
    assert_eq!(format::ns(54_303.0, false), "54.3\u{a0}µs");
    assert_eq!(format::ns(2_293_759.0, false), "2.29\u{a0}ms");
    assert_eq!(format::ns(999_960.0, false), "1.00\u{a0}ms");
    assert_eq!(format::ns(1_000_000.0, true), "1\u{a0}ms");
    assert_eq!(format::ns(1.5e9, false), "1.50\u{a0}s");
    assert_eq!(format::si(2_097_110.0, false), "2.10M");
    assert_eq!(format::si(359_548.7, true), "360k");
    assert_eq!(format::si(200_000.0, true), "200k");
    assert_eq!(format::si(850.0, true), "850");
    assert_eq!(format::si(0.0, true), "0");
    assert_eq!(format::count(1_200_000.0), "1,200,000");
    assert_eq!(format::count(999.0), "999");
    assert_eq!(format::count(0.5), "0.5");
    assert_eq!(format::sig(0.30000000000000004, 3, true), "0.3");
}

#[test]
fn linear_ticks_are_whole_steps_covering_the_data() {
    assert_eq!(
        svg::linear_ticks(0.0, 97.0, 5),
        (0.0, 100.0, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0])
    );
    let (lo, hi, t) = svg::linear_ticks(0.0, 0.3, 3);
    assert_eq!((lo, hi), (0.0, 0.3));
    assert_eq!(t, vec![0.0, 0.1, 0.2, 0.3]);
    let (lo, hi, t) = svg::linear_ticks(0.0, 2_097_110.0, 5);
    assert_eq!((lo, hi), (0.0, 2_500_000.0));
    assert_eq!(t.len(), 6);
    // One value or nothing still gives an axis.
    assert_eq!(svg::linear_ticks(0.0, 0.0, 5).1, 1.0);
    assert!(svg::linear_ticks(5.0, 5.0, 5).1 >= 5.0);
    assert_eq!(svg::nice_step(10.0, 5), 2.0);
    assert_eq!(svg::nice_step(7.0, 5), 2.0);
    assert_eq!(svg::nice_step(30.0, 5), 10.0);
}

#[test]
fn log_ticks_follow_one_two_five_or_decades() {
    let (lo, hi, t) = svg::log_ticks(22_960.0, 2_293_759.0);
    assert_eq!((lo, hi), (20_000.0, 5_000_000.0));
    assert_eq!(
        t,
        vec![20e3, 50e3, 100e3, 200e3, 500e3, 1e6, 2e6, 5e6],
        "eight 1-2-5 values fit"
    );
    // Over more decades, more than ten 1-2-5 values: powers of ten only.
    let (lo, hi, t) = svg::log_ticks(800.0, 3e9);
    assert_eq!((lo, hi), (500.0, 5e9));
    assert_eq!(t, vec![1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]);
    let (lo, hi, t) = svg::log_ticks(30.0, 400.0);
    assert_eq!((lo, hi), (20.0, 500.0));
    assert_eq!(t, vec![20.0, 50.0, 100.0, 200.0, 500.0]);
    // One value gets room either side.
    let (lo, hi, _) = svg::log_ticks(100.0, 100.0);
    assert!(lo < 100.0 && hi > 100.0, "{lo} {hi}");
    let s = svg::Scale::Log {
        lo: 10.0,
        hi: 1000.0,
    };
    assert!((s.frac(100.0) - 0.5).abs() < 1e-12);
    assert_eq!(s.frac(1.0), 0.0, "values below the domain sit on the axis");
    assert_eq!(svg::Scale::Linear { lo: 0.0, hi: 4.0 }.frac(1.0), 0.25);
}

#[test]
fn percentiles_sit_on_the_hdr_axis() {
    assert_eq!(percentile_x(0.0, 1e6), 0.0);
    assert!((percentile_x(0.9, 1e6) - 1.0).abs() < 1e-9);
    assert!((percentile_x(0.999, 1e6) - 3.0).abs() < 1e-9);
    // The maximum sits at 1 in N, and nothing passes it.
    assert!((percentile_x(1.0, 4000.0) - 4000f64.log10()).abs() < 1e-12);
    assert!(percentile_x(0.99999, 4000.0) <= percentile_x(1.0, 4000.0));
    let labels: Vec<String> = (0..=5).map(percentile_label).collect();
    assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
}

#[test]
fn the_curve_ends_at_the_histograms_maximum() {
    let h = histogram((1..=4000u64).map(|i| i * 100));
    let c = Curve::from_histogram(&h).unwrap();
    let (q, v) = *c.points.last().unwrap();
    assert_eq!((q, v), (1.0, h.max() as f64));
    let xs: Vec<f64> = c
        .points
        .iter()
        .map(|(q, _)| percentile_x(*q, c.count))
        .collect();
    assert!(xs.windows(2).all(|w| w[0] <= w[1]), "{xs:?}");
    assert!(Curve::from_histogram(&histogram([])).is_none());
}

#[test]
fn escaping_keeps_input_text_inert() {
    assert_eq!(
        esc("<script>alert('x')</script>&\""),
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
    );
    let v = serde_json::json!({"a": "</script><!-- & -->", "b": [1, 2.5]});
    let s = json_in_script(&v);
    assert!(
        !s.contains('<') && !s.contains('>') && !s.contains('&'),
        "{s}"
    );
    assert_eq!(serde_json::from_str::<Value>(&s).unwrap(), v);
}

#[test]
fn a_chart_holds_the_points_it_was_given() {
    let pts = [(1.0, 10.0), (2.0, 250.5), (3.0, 40.0)];
    let line = svg::Line {
        id: "a <series>".into(),
        color: PALETTE[0],
        dashed: false,
        points: pts
            .iter()
            .map(|(x, y)| {
                Some(svg::Point {
                    x: *x,
                    x0: None,
                    y: *y,
                    attrs: vec![("data-t", num(*x))],
                    tip: format!("{y}"),
                    hollow: false,
                })
            })
            .chain([None])
            .collect(),
    };
    let chart = svg::Chart {
        kind: "test",
        input: Some("in".into()),
        title: "T".into(),
        wide: false,
    };
    let x = svg::Axis::linear(0.0, 3.0, "x", |v| format::sig(v, 3, true));
    let y = svg::Axis::log(10.0, 250.5, "y", |v| format::sig(v, 3, true));
    let out = svg::lines(&chart, &x, &y, &[line], &[], &[]);
    assert!(out.starts_with("<svg class=\"chart\" data-chart=\"test\" data-input=\"in\""));
    assert!(out.contains("data-series=\"a &lt;series&gt;\" data-points=\"3\""));
    assert!(out.contains("data-values=\"10 250.5 40\""));
    assert_eq!(out.matches("<circle").count(), 3);
    for (_, y) in pts {
        assert!(out.contains(&format!("data-value=\"{y}\"")), "{y}");
    }
    assert!(!out.contains("a <series>"));

    // A value over an interval is a step across it, its marker mid-step.
    let step = svg::Line {
        id: "s".into(),
        color: PALETTE[0],
        dashed: false,
        points: vec![Some(svg::Point {
            x: 2.0,
            x0: Some(1.0),
            y: 100.0,
            attrs: Vec::new(),
            tip: String::new(),
            hollow: false,
        })],
    };
    let out = svg::lines(&chart, &x, &y, &[step], &[], &[]);
    let d = &out[out.find(" d=\"").unwrap() + 4..];
    let d = &d[..d.find('"').unwrap()];
    let (m, l) = d.split_once('L').unwrap();
    let (mx, my) = m[1..].split_once(' ').unwrap();
    let (lx, ly) = l.split_once(' ').unwrap();
    assert_eq!(my, ly, "level: {d}");
    let (mx, lx): (f64, f64) = (mx.parse().unwrap(), lx.parse().unwrap());
    assert!(lx > mx, "{d}");
    assert!(
        out.contains(&format!("cx=\"{}\"", (mx + lx) / 2.0)),
        "{out}"
    );

    let set = svg::BarSet {
        id: "s".into(),
        color: PALETTE[1],
        bars: vec![
            Some(svg::Bar {
                value: 5.5,
                range: Some((5.0, 6.0)),
                color: None,
                label: None,
                tip: String::new(),
            }),
            None,
            Some(svg::Bar {
                value: 2.0,
                range: None,
                color: None,
                label: Some("2".into()),
                tip: String::new(),
            }),
        ],
    };
    let cats = ["a".to_string(), "b".into(), "c".into()];
    let out = svg::bars(&chart, &cats, "v", &[set], |v| format::sig(v, 3, true));
    assert_eq!(out.matches("<rect class=\"bar\"").count(), 2);
    assert!(out.contains("data-category=\"a\" data-value=\"5.5\" data-min=\"5\" data-max=\"6\""));
    assert!(out.contains("data-category=\"c\" data-value=\"2\""));
    assert!(out.contains("class=\"whisker\""));
}

#[test]
fn a_full_result_draws_every_chart_from_its_own_numbers() {
    let docs = [doc("a.json", full_result()), doc("cal.json", calibration())];
    let html = render(&docs).unwrap();
    for kind in [
        "percentiles",
        "latency-timeline",
        "throughput-timeline",
        "clients",
    ] {
        assert!(html.contains(&format!("data-chart=\"{kind}\"")), "{kind}");
    }
    // One input: nothing to compare.
    assert!(!html.contains("data-chart=\"compare-throughput\""));
    let tp = series_values(&html, "throughput-timeline", "pub 0");
    assert_eq!(tp, vec![1200.0, 1000.0, 1000.0]);
    let lat = series_values(&html, "latency-timeline", "P99");
    assert_eq!(
        lat,
        vec![98000.0, 90000.0],
        "the tick without latency is a gap"
    );
    let corrected = series_values(&html, "percentiles", "a.json corrected");
    assert_eq!(
        corrected.iter().copied().fold(0.0, f64::max),
        full_result()["latency"]["max_ns"].as_f64().unwrap()
    );
    assert!(!series_values(&html, "percentiles", "a.json uncorrected").is_empty());
    // Runs: median, range and count.
    assert!(html.contains("data-metric=\"p99\" data-value=\"990000\" data-min=\"980000\" data-max=\"1000000\" data-n=\"3\""));
    assert!(html.contains("n\u{a0}=\u{a0}3"));
    // Host, calibrated floor, parameters (escaped), the floor on the chart.
    assert!(html.contains("AMD EPYC 7B13"));
    assert!(html.contains("data-ref=\"floor P50, one hop (cal.json)\" data-value=\"40000\""));
    assert!(html.contains("connection.tls"));
    assert!(html.contains("&lt;b&gt;x&lt;/b&gt;") && !html.contains("<b>x</b>"));
    assert!(html.contains("Errors were counted in the intervals ending at 2 s (2)"));
}

#[test]
fn a_run_ending_inside_its_last_second_draws_no_drop() {
    // Ten whole seconds at 1,000 msgs/s and 100 more messages in the 0.1 s the run lasted past
    // them: the last interval is drawn at 1,000 msgs/s (over its own 0.1 s), marked partial.
    let mut v = full_result();
    let mut ticks: Vec<Value> = (1..=10)
        .map(|s| {
            serde_json::json!({"t_s": f64::from(s), "span_s": 1.0, "msgs": [1000, 1000],
                               "sent_per_sec": 1000.0, "received_per_sec": 1000.0, "errors": 0})
        })
        .collect();
    ticks.push(
        serde_json::json!({"t_s": 10.1, "span_s": 0.1, "msgs": [100, 100],
                                  "sent_per_sec": 1000.0, "received_per_sec": 1000.0,
                                  "errors": 0}),
    );
    v["timeline"]["ticks"] = Value::Array(ticks);
    let html = render(&[doc("a.json", v)]).unwrap();
    for id in ["pub 0", "sub 0"] {
        let tp = series_values(&html, "throughput-timeline", id);
        assert_eq!(tp.len(), 11);
        assert!(
            tp.iter().all(|r| (r - 1000.0).abs() < 1e-9),
            "{id}: a drop drawn: {tp:?}"
        );
    }
    // Its points are rings, the other ten are not, and the caption says why.
    let start = html.find("data-chart=\"throughput-timeline\"").unwrap();
    let chart = &html[start..start + html[start..].find("</svg>").unwrap()];
    assert_eq!(chart.matches("data-partial=\"true\"").count(), 2);
    assert_eq!(chart.matches("class=\"pt few hollow\"").count(), 2);
    assert!(chart.contains("10.00–10.10 s (partial: the run ended in it): 1.00k msgs/s"));
    assert!(html.contains("The last interval is partial: the run ended 0.1\u{a0}s into it"));
    // A last interval that is whole is drawn like the others.
    let html = render(&[doc("a.json", full_result())]).unwrap();
    assert!(
        html.contains("data-partial=\"true\""),
        "2.0–2.5 s is half an interval"
    );
    let mut v = full_result();
    v["timeline"]["ticks"][2]["span_s"] = 0.99.into();
    let html = render(&[doc("a.json", v)]).unwrap();
    assert!(!html.contains("data-partial") && !html.contains("The last interval is partial"));
}

#[test]
fn absent_sections_leave_no_chart_behind() {
    let mut v = full_result();
    for k in ["timeline", "runs", "latency", "latency_uncorrected", "host"] {
        v.as_object_mut().unwrap().remove(k);
    }
    let mut b = v.clone();
    b["clients"] = serde_json::json!([]);
    let html = render(&[doc("a.json", v), doc("b.json", b)]).unwrap();
    for kind in [
        "percentiles",
        "latency-timeline",
        "throughput-timeline",
        "compare-latency",
    ] {
        assert!(!html.contains(&format!("data-chart=\"{kind}\"")), "{kind}");
    }
    assert!(!html.contains("id=\"distribution\""));
    assert_eq!(html.matches("data-chart=\"clients\"").count(), 1);
    assert_eq!(
        html.matches("<rect class=\"bar\" ").count(),
        2 + 2,
        "two client bars, and one comparison bar per input"
    );
    assert!(
        !html.contains("data-metric=\"p50\""),
        "no latency rows without latency"
    );
}

#[test]
fn calibrations_alone_are_not_a_report() {
    let e = render(&[doc("cal.json", calibration())]).unwrap_err();
    assert!(matches!(e, Error::Usage(_)));
    assert!(e.to_string().contains("no result file") && e.to_string().contains("'cal.json'"));
}

#[test]
fn bad_histograms_and_field_types_are_named() {
    let mut v = full_result();
    v["latency"]["hdr"] = "not base64!".into();
    let e = render(&[doc("a.json", v)]).unwrap_err().to_string();
    assert!(e.contains("a.json") && e.contains("latency.hdr"), "{e}");
    let mut v = full_result();
    v["clients"] = "many".into();
    let e = render(&[doc("a.json", v)]).unwrap_err().to_string();
    assert!(e.contains("a.json") && e.contains("wrong type"), "{e}");
    // Without a histogram, the summary percentiles still draw a curve (and say so).
    let mut v = full_result();
    v["latency"]["hdr"] = "".into();
    let html = render(&[doc("a.json", v)]).unwrap();
    assert!(html.contains("Drawn from the summary percentiles only"));
}

#[test]
fn repeated_names_are_told_apart() {
    let a = Doc {
        path: PathBuf::from("x/r.json"),
        ..doc("r.json", full_result())
    };
    let b = Doc {
        path: PathBuf::from("y/r.json"),
        ..doc("r.json", full_result())
    };
    assert_eq!(labels(&[a.clone(), b]), ["x/r.json", "y/r.json"]);
    assert_eq!(labels(&[a.clone(), a]), ["x/r.json", "x/r.json (2)"]);
}

#[test]
fn server_samples_draw_cpu_over_time_and_their_events_are_marked_apart_from_faults() {
    let mut v = full_result();
    let ticks = v["timeline"]["ticks"].as_array_mut().unwrap();
    // Server n1 may use 2 cores: 150 % of one core is 75 % of what it may use. n2 did not
    // answer its first reading: a gap, not a zero. msgbench used half of its 2 cores.
    ticks[0]["server"] = serde_json::json!({"t_s": 0.9, "servers": [
        {"name": "n1", "up": true, "cpu_pct": 150.0, "cores": 2},
        {"name": "n2", "up": false, "cpu_pct": null, "cores": null}]});
    ticks[1]["server"] = serde_json::json!({"t_s": 1.9, "servers": [
        {"name": "n1", "up": true, "cpu_pct": 40.0, "cores": 2},
        {"name": "n2", "up": true, "cpu_pct": 30.0, "cores": 1}],
        "events": [{"t_s": 1.9, "since_s": 0.9, "kind": "stream_leader_change",
                    "stream": "orders", "detail": "leader n1 → n2", "before": null, "after": null},
                   {"t_s": 1.9, "since_s": 0.9, "kind": "route_down", "detail": "a"},
                   {"t_s": 1.9, "since_s": 0.9, "kind": "route_down", "detail": "b"}]});
    for t in ticks.iter_mut() {
        t["tool"] = serde_json::json!({"cpu_cores": 1.0, "cores": 2.0, "busiest_thread": 0.5});
    }
    v["server_side"] = serde_json::json!({"servers": [], "events": [
        {"t_s": 1.9, "since_s": 0.9, "kind": "stream_leader_change", "stream": "orders",
         "detail": "leader n1 → n2",
         "before": {"t_s": 1.0, "msgs_per_sec": 1199.0, "p99_ns": 98000},
         "after": {"t_s": 2.5, "msgs_per_sec": 1002.0, "p99_ns": null}}]});
    v["timeline"]["load_start_s"] = 0.5.into();
    v["fault"] = serde_json::json!({"kind": "kill", "target": "leader", "injected_at_ns": 1.0e9});
    let html = render(&[doc("a.json", v)]).unwrap();

    assert_eq!(
        series_values(&html, "cpu-timeline", "server n1"),
        vec![75.0, 20.0]
    );
    assert_eq!(
        series_values(&html, "cpu-timeline", "server n2"),
        vec![30.0]
    );
    assert_eq!(
        series_values(&html, "cpu-timeline", "msgbench"),
        vec![50.0, 50.0, 50.0]
    );
    // The event is dotted on every timeline chart; the fault, on the throughput chart, is not.
    // Events one reading showed share a mark, named by their kinds.
    let event = "<g class=\"xref observed\" data-ref=\"stream leader change, 2× route down\" \
                 data-value=\"1.9\" data-lo=\"0.9\" data-hi=\"1.9\"";
    for kind in ["latency-timeline", "throughput-timeline", "cpu-timeline"] {
        let start = html.find(&format!("data-chart=\"{kind}\"")).unwrap();
        let chart = &html[start..start + html[start..].find("</svg>").unwrap()];
        assert!(chart.contains(event), "{kind}: {chart}");
    }
    assert!(html.contains("<g class=\"xref\" data-ref=\"kill-leader\" data-value=\"1.5\""));
    // The table: the event with what the run did around it, a figure not measured as "—".
    let row = &html[html
        .find("<tr data-input=\"a.json\" data-kind=\"stream_leader_change\" data-t=\"1.9\"")
        .expect("the event's row")..];
    let row = &row[..row.find("</tr>").unwrap()];
    for cell in [
        "stream orders",
        "leader n1 → n2",
        "0.9\u{a0}s",
        "1.20k → 1.00k",
        "98.0\u{a0}µs → —",
    ] {
        assert!(row.contains(&esc(cell)), "{cell} in {row}");
    }
}

#[test]
fn a_run_that_sampled_nothing_has_no_cpu_chart_and_no_server_events() {
    let html = render(&[doc("a.json", full_result())]).unwrap();
    assert!(!html.contains("data-chart=\"cpu-timeline\""));
    assert!(!html.contains("id=\"server-events\""));
    assert!(!html.contains("xref observed"));
}

#[test]
fn each_runs_own_sections_are_rows_as_their_scenarios_show_them() {
    let mut js = full_result();
    js["scenario"] = "js.pub".into();
    js["jetstream"] = serde_json::json!({"acked": 1200, "stored": 1201, "reconciled": false});
    // A file's keys come back sorted ("consumer" before "jetstream"); the rows keep the
    // scenarios' order.
    js["consumer"] = serde_json::json!({"consumed": 1200, "expected": 1200, "redelivered": 0,
        "reconciled": true});
    let mut conns = full_result();
    conns["scenario"] = "conns".into();
    conns["conns"] = serde_json::json!({"clients": 40, "connected": 39, "never_connected": 1,
        "up_at_end": 39, "connects_per_sec": 812.4, "connect_latency": {"total": null},
        "failures": {"refused": 1}, "checks": null, "memory": {}, "herd": null});
    let html = render(&[doc("js.json", js), doc("conns.json", conns)]).unwrap();
    let row = |key: &str, label: &str| {
        let start = html
            .find(&format!(
                "<tr data-metric=\"{key}\"><th scope=\"row\">{label}</th>"
            ))
            .unwrap_or_else(|| panic!("no {key} row {label}"));
        html[start..start + html[start..].find("</tr>").unwrap()].to_string()
    };
    let acks = row("jetstream", "JetStream acks");
    assert!(
        acks.contains("1,200 acked, 1,201 stored, <span class=\"fail\">✗ not reconciled</span>"),
        "{acks}"
    );
    let consumer = row("consumer", "consumer");
    assert!(
        consumer.contains(
            "1,200 of 1,200 consumed, 0 redelivered, <span class=\"pass\">✓ reconciled</span>"
        ),
        "{consumer}"
    );
    assert!(html.find("JetStream acks").unwrap() < html.find("1,200 of 1,200 consumed").unwrap());
    // The conns run has no JetStream section: its cell is empty, and the reverse.
    assert!(acks.contains("data-input=\"conns.json\" data-metric=\"jetstream\"></td>"));
    let up = row("conns", "connections");
    assert!(
        up.contains(">39 of 40 up (1 never), 39 up at the end</td>"),
        "{up}"
    );
    assert!(row("conns", "failures").contains(">refused 1</td>"));
    assert!(
        row("conns", "connect P99").contains(">—</td>"),
        "not measured"
    );
    // Keys no scenario shows (the run's plan, its agents) add no row.
    assert!(!html.contains("data-metric=\"schema\""));
}

#[test]
fn a_stream_unreconciled_only_by_writes_the_run_allowed_reads_as_allowed() {
    // The run judged the writes stored without an acknowledgement explained, and exited 0:
    // the row must not say "not reconciled". An older file, without the judgement, still does.
    let with = |allowed: serde_json::Value| {
        let mut js = full_result();
        js["scenario"] = "js.pub".into();
        js["jetstream"] = serde_json::json!({"acked": 1200, "stored": 1204,
            "unacked_stored": 4, "reconciled": false, "unacked_allowed": allowed});
        render(&[doc("js.json", js)]).unwrap()
    };
    let allowed = with(true.into());
    assert!(
        allowed.contains(
            "1,200 acked, 1,204 stored (4 without an acknowledgement), \
             <span class=\"pass\">✓ explained, allowed</span>"
        ),
        "{allowed}"
    );
    for judged in [false.into(), serde_json::Value::Null] {
        let html = with(judged);
        assert!(
            html.contains(
                "1,200 acked, 1,204 stored, <span class=\"fail\">✗ not reconciled</span>"
            ),
            "{html}"
        );
    }
}

#[test]
fn replicas_that_differ_from_their_leader_and_a_fault_never_injected_read_as_failures() {
    // Each exits the run non-zero (3 and 10): the report must not show them as passing.
    let mut v = full_result();
    v["scenario"] = "js.pub".into();
    v["durability"] = serde_json::json!({"divergent": [{"stream": "s", "node": "n2",
        "leader": "n1", "what": "missing", "seq": 7}], "divergent_count": 3});
    v["fault"] = serde_json::json!({"kind": "restart", "injected_at_ns": null,
        "missed_allowed": false});
    let html = render(&[doc("div.json", v.clone())]).unwrap();
    assert!(
        html.contains("3 differences from their leader, <span class=\"fail\">✗ divergent</span>"),
        "{html}"
    );
    assert!(
        html.contains("<span class=\"fail\">✗ not injected</span>"),
        "{html}"
    );
    // Copies that agree, and a miss the run allowed.
    v["durability"] = serde_json::json!({"divergent": [], "divergent_count": 0});
    v["fault"]["missed_allowed"] = true.into();
    let html = render(&[doc("ok.json", v.clone())]).unwrap();
    assert!(
        html.contains(
            "every copy read agrees with its leader, <span class=\"pass\">✓ agree</span>"
        ),
        "{html}"
    );
    assert!(html.contains(">not injected (allowed)<"), "{html}");
    // Replicas not read: no row.
    v["durability"] = serde_json::json!({"divergent": null});
    let html = render(&[doc("unread.json", v)]).unwrap();
    assert!(!html.contains(">replicas</th>"), "{html}");
}

#[test]
fn a_run_of_several_that_failed_is_named_beside_the_representatives_figures() {
    let mut v = full_result();
    let html = render(&[doc("ok.json", v.clone())]).unwrap();
    assert!(!html.contains("exited"), "every run passed");
    v["runs"]["runs"] = serde_json::json!([{"exit_status": 0}, {"exit_status": 0},
        {"exit_status": 3}]);
    let html = render(&[doc("one-failed.json", v)]).unwrap();
    assert!(
        html.contains("(charts show run 2 of them, the median by p99) <span class=\"fail\">✗ run 3 exited 3</span>"),
        "{html}"
    );
}

#[test]
fn a_side_the_run_does_not_have_is_no_line_at_zero_on_the_throughput_chart() {
    // Twenty publishers (too many for a line each) and nothing here subscribing: the totals
    // are drawn, the publishes' only.
    let mut v = full_result();
    v["timeline"]["clients"] = (0..20)
        .map(|i| serde_json::json!({"role": "pub", "id": i}))
        .collect();
    v["timeline"]["ticks"] = (1..=3)
        .map(|s| {
            serde_json::json!({"t_s": f64::from(s), "span_s": 1.0, "msgs": vec![50; 20],
                               "sent_per_sec": 1000.0, "received_per_sec": 0.0, "errors": 0})
        })
        .collect();
    let html = render(&[doc("a.json", v.clone())]).unwrap();
    assert_eq!(
        series_values(&html, "throughput-timeline", "sent"),
        vec![1000.0; 3]
    );
    let start = html.find("data-chart=\"throughput-timeline\"").unwrap();
    let chart = &html[start..start + html[start..].find("</svg>").unwrap()];
    assert!(!chart.contains("data-series=\"received\""), "{chart}");
    // With subscribers that got nothing, their zero is a figure, and is drawn.
    v["timeline"]["clients"][19]["role"] = "sub".into();
    let html = render(&[doc("a.json", v)]).unwrap();
    assert_eq!(
        series_values(&html, "throughput-timeline", "received"),
        vec![0.0; 3]
    );
}
