//! Hand-made documents for the report's latency-against-throughput curve: a result of a run
//! with a rate schedule (its `schedule` section) and a capacity search
//! (`msgbench.capacity/v1`). They are built here, in the documented shapes, because the code
//! that writes them is not in this tree yet; when it is, the report test should produce them
//! with real runs instead, as it does its other inputs.
//!
//! The numbers behave like a queue that saturates near 4,200 msgs/s (the schedule) or
//! 45,000 msgs/s (the search): latency flat at first, then climbing steeply, with the achieved
//! rate falling short of the target past the knee. Latency sections are made from real
//! histograms, so their percentiles, counts and `hdr` agree with each other as in a real file.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use msgbench::stats::{hdr::encode_base64, latency::new_histogram};

/// A latency section (`count`, `min_ns` … `percentiles_ns`, `hdr`) of a histogram.
fn latency_section(h: &Histogram<u64>) -> Value {
    let pct = |q: f64| h.value_at_quantile(q / 100.0);
    json!({
        "count": h.len(), "min_ns": h.min(), "mean_ns": h.mean(), "stddev_ns": h.stdev(),
        "max_ns": h.max(),
        "percentiles_ns": {
            "10": pct(10.0), "50": pct(50.0), "75": pct(75.0), "90": pct(90.0),
            "99": pct(99.0), "99.9": pct(99.9), "99.99": pct(99.99), "99.999": pct(99.999),
            "100": h.max()
        },
        "hdr": encode_base64(h)
    })
}

/// `n` latencies with the body at `body_ns` and a tail `tail` times higher at the top.
fn queue_latencies(n: u64, body_ns: f64, tail: f64) -> Histogram<u64> {
    let mut h = new_histogram();
    for i in 0..n {
        let q = (i as f64 + 0.5) / n as f64;
        h.record((body_ns * (1.0 + tail * q.powi(12))) as u64)
            .unwrap();
    }
    h
}

/// A latency run (`step:1000:1000:2s:5000`) whose stages climb past the knee; thresholds on
/// P99 and P99.9 (the first fails, the run as a whole having passed the knee) and on loss.
pub fn schedule_result() -> Value {
    let capacity = 4200.0;
    let mut total = new_histogram();
    let mut total_u = new_histogram();
    let mut stages = Vec::new();
    let (mut sent_all, mut received_all) = (0u64, 0u64);
    for (index, achieved) in [1000.0, 2000.0, 2999.6, 3890.0, 4010.5]
        .into_iter()
        .enumerate()
    {
        let target = 1000.0 * (index as f64 + 1.0);
        let load = f64::min(achieved / capacity, 0.97);
        let body = 48_000.0 / (1.0 - load);
        let received = (achieved * 2.0) as u64;
        let corrected = queue_latencies(received, body, 8.0 + 40.0 * load.powi(4));
        let uncorrected = queue_latencies(received, body * 0.9, 6.0);
        total.add(&corrected).unwrap();
        total_u.add(&uncorrected).unwrap();
        sent_all += received;
        received_all += received;
        stages.push(json!({
            "index": index, "start_s": index as f64 * 2.0, "end_s": index as f64 * 2.0 + 2.0,
            "target_rate": target, "sent": received, "received": received, "lost": 0,
            "msgs_per_sec": achieved,
            "latency": latency_section(&corrected),
            "latency_uncorrected": latency_section(&uncorrected)
        }));
    }
    let p = |q: f64| total.value_at_quantile(q) as f64;
    json!({
        "schema": "msgbench.result/v1",
        "tool": {"name": "msgbench", "version": env!("CARGO_PKG_VERSION")},
        "scenario": "latency", "run_id": "hand-made-schedule",
        "started_at": "2026-11-25T14:00:00Z", "interrupted": false,
        "params": {"rate_schedule": "step:1000:1000:2s:5000", "size": 128},
        "throughput": {"msgs": received_all, "bytes": received_all * 128, "seconds": 10.0,
                       "msgs_per_sec": received_all as f64 / 10.0,
                       "bytes_per_sec": (received_all * 128) as f64 / 10.0},
        "delivery": {"sent": sent_all, "expected": sent_all, "received": received_all, "lost": 0,
                     "duplicated": 0, "reordered": 0},
        "errors": {},
        "latency": latency_section(&total),
        "latency_uncorrected": latency_section(&total_u),
        "schedule": {"spec": "step:1000:1000:2s:5000", "stages": stages},
        "thresholds": [
            {"expr": "p99<2ms", "measured": p(0.99), "pass": p(0.99) < 2e6},
            {"expr": "p99.9<5ms", "measured": p(0.999), "pass": p(0.999) < 5e6},
            {"expr": "lost==0", "measured": 0.0, "pass": true}
        ]
    })
}

/// A search under `p99<2ms` and `lost==0`, three runs at each of seven rates: at 45,000/s one
/// run of three breaks the SLO, at 50,000/s every run does (the publisher can no longer keep
/// up), and one run there measured no latency (it lost its connection).
pub fn capacity_search() -> Value {
    // (rate, the P50 of a typical run at it in ns, the achieved rate of run 1).
    let rates = [
        (5000.0, 45_000.0, 4999.5),
        (10000.0, 47_000.0, 9999.0),
        (20000.0, 55_000.0, 19998.0),
        (30000.0, 80_000.0, 29997.0),
        (40000.0, 250_000.0, 39996.0),
        (45000.0, 520_000.0, 44955.0),
        (50000.0, 3_000_000.0, 46300.0),
    ];
    let mut probes = Vec::new();
    for (rate, p50, achieved) in rates {
        for run in 1..=3u64 {
            // Runs differ a little, as real ones do.
            let wobble: f64 = [1.0, 1.08, 0.95][run as usize - 1];
            let achieved = achieved - 10.0 * (run - 1) as f64;
            let p50 = (p50 * wobble).round();
            let p99 = (p50 * 3.6 * wobble).round();
            let p999 = (p99 * 1.8).round();
            let measured = !(rate == 50000.0 && run == 2);
            let pass = measured && p99 < 2e6;
            let (latency, p99_verdict) = if measured {
                (
                    json!({"p50_ns": p50 as u64, "p99_ns": p99 as u64, "p999_ns": p999 as u64}),
                    json!({"expr": "p99<2ms", "measured": p99, "pass": p99 < 2e6}),
                )
            } else {
                (
                    Value::Null,
                    json!({"expr": "p99<2ms", "measured": null, "pass": false,
                           "why": "this run measured no latency"}),
                )
            };
            probes.push(json!({
                "rate": rate, "run": run, "pass": pass, "tool_kept_schedule": rate < 50000.0,
                "msgs_per_sec": achieved,
                "shortfall_pct": (rate - achieved) / rate * 100.0,
                "latency": latency, "lost": 0, "errors": if measured { 0 } else { 1 },
                "verdicts": [p99_verdict, {"expr": "lost==0", "measured": 0.0, "pass": true}]
            }));
        }
    }
    json!({
        "schema": "msgbench.capacity/v1",
        "tool": {"name": "msgbench", "version": env!("CARGO_PKG_VERSION")},
        "scenario": "latency", "run_id": "hand-made-search",
        "started_at": "2026-11-25T14:00:00Z",
        "slo": ["p99<2ms", "lost==0"],
        "probe_duration_s": 5.0, "warmup_s": 1.0, "probe_runs": 3,
        "sustainable_rate": 40000.0,
        "confidence": {"level": 0.95, "low": 37000.0, "high": 44000.0},
        "limiter": {"kind": "slo", "detail": "p99<2ms failed at 45000/s in 1 of 3 runs"},
        "probes": probes
    })
}
