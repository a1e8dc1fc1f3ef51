//! `msgbench diff` on synthetic results whose runs are drawn from known distributions: the same
//! distribution twice is "no significant change", a 20% shift is found with its size and
//! direction, `--fail-on-regression` sets the exit status, and bad input is named.

use std::path::{Path, PathBuf};

use crate::support::{self, run, stderr};
use serde_json::{json, Value};

/// A deterministic generator (splitmix64) and normal draws (Box–Muller).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (a, b) = (self.next().max(f64::MIN_POSITIVE), self.next());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }
}

/// A result of `n` runs: throughput around `rate`, P99 around `p99_ns`, 3% noise each.
fn synthetic(dir: &Path, name: &str, seed: u64, n: usize, rate: f64, p99_ns: f64) -> PathBuf {
    let mut rng = Rng(seed);
    let mut draw = |level: f64| {
        (0..n)
            .map(|_| level * (1.0 + 0.03 * rng.normal()))
            .collect::<Vec<f64>>()
    };
    let (rates, p99s) = (draw(rate), draw(p99_ns));
    let stats = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        json!({"median": s[n / 2], "min": s[0], "max": s[n - 1], "mad": 0.0, "values": v})
    };
    let doc = json!({
        "schema": "msgbench.result/v1",
        "scenario": "pubsub",
        "throughput": {"msgs_per_sec": rates[0]},
        "latency": {"percentiles_ns": {"99": p99s[0]}},
        "runs": {"n": n, "metrics": {"msgs_per_sec": stats(&rates), "p99": stats(&p99s)}}
    });
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

fn diff(args: &[&str]) -> (Option<i32>, String, Value) {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    all.extend(["--json", "-"]);
    let out = run(&all);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), stderr(&out), v)
}

fn verdicts(v: &Value) -> Vec<(String, String)> {
    v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["metric"].as_str().unwrap().to_string(),
                m["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_same_distribution_twice_is_no_significant_change() {
    let dir = support::scratch_dir("diff-same");
    let a = synthetic(&dir, "a.json", 1, 8, 1e6, 2e6);
    let a = a.to_str().unwrap();
    // The very same runs: nothing changed at all.
    let (code, text, v) = diff(&[
        a,
        a,
        "--metric",
        "msgs_per_sec",
        "--metric",
        "p99",
        "--fail-on-regression",
        "5%",
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        verdicts(&v),
        vec![
            ("msgs_per_sec".into(), "no_change".into()),
            ("p99".into(), "no_change".into())
        ]
    );
    assert!(
        text.contains("no significant change in msgs/s (1.00×"),
        "{text}"
    );
    assert!(text.contains("PASS --fail-on-regression 5%"), "{text}");
    // Fresh runs from one distribution: a test at 5% may call a change by chance, so the claim
    // is about many pairs (every pair is used, none chosen): few false alarms, intervals that
    // hold 1 nearly always, and never a failed gate at 5%.
    let (mut alarms, mut misses, mut total) = (0, 0, 0);
    for pair in 0..40u64 {
        let a = synthetic(&dir, "a.json", 100 + 2 * pair, 8, 1e6, 2e6);
        let b = synthetic(&dir, "b.json", 101 + 2 * pair, 8, 1e6, 2e6);
        let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
        let (code, text, v) = diff(&[
            a,
            b,
            "--metric",
            "msgs_per_sec",
            "--metric",
            "p99",
            "--fail-on-regression",
            "5%",
        ]);
        assert_eq!(code, Some(0), "pair {pair}: {text}");
        for m in v["metrics"].as_array().unwrap() {
            total += 1;
            alarms += usize::from(m["verdict"] != "no_change");
            let c = &m["change"];
            let (lo, hi) = (
                c["ci_low"].as_f64().unwrap(),
                c["ci_high"].as_f64().unwrap(),
            );
            misses += usize::from(!(lo < 1.0 && hi > 1.0));
        }
    }
    assert_eq!(total, 80);
    assert!(alarms <= 8, "{alarms} of 80 called a change");
    assert!(misses <= 8, "{misses} of 80 intervals missed 1");
}

#[test]
fn a_twenty_percent_shift_is_found_with_its_size_and_direction() {
    let dir = support::scratch_dir("diff-shift");
    let base = synthetic(&dir, "base.json", 3, 8, 1e6, 2e6);
    // 20% less throughput and 20% more latency: worse on both.
    let worse = synthetic(&dir, "worse.json", 4, 8, 0.8e6, 2.4e6);
    let (base, worse) = (base.to_str().unwrap(), worse.to_str().unwrap());
    let (code, text, v) = diff(&[
        base,
        worse,
        "--metric",
        "msgs_per_sec",
        "--metric",
        "p99",
        "--fail-on-regression",
        "5%",
    ]);
    assert_eq!(code, Some(8), "{text}");
    assert_eq!(
        verdicts(&v),
        vec![
            ("msgs_per_sec".into(), "worse".into()),
            ("p99".into(), "worse".into())
        ]
    );
    let rate = &v["metrics"][0]["change"];
    let ratio = rate["ratio"].as_f64().unwrap();
    assert!((ratio - 0.8).abs() < 0.04, "{ratio}");
    assert!(rate["p_value"].as_f64().unwrap() < 0.01);
    assert!(text.contains("× slower in msgs/s (p < 0.0"), "{text}");
    assert!(text.contains("× higher in p99 (p < 0.0"), "{text}");
    assert!(
        text.contains("REGRESSION") && text.contains("FAIL --fail-on-regression 5%"),
        "{text}"
    );
    // Read the other way it is an improvement, and no gate fails.
    let (code, text, v) = diff(&[
        worse,
        base,
        "--fail-on-regression",
        "5%",
        "--metric",
        "msgs_per_sec",
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(verdicts(&v), vec![("msgs_per_sec".into(), "better".into())]);
    let summary = v["metrics"][0]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("NEW is 1.2") && summary.contains("× faster in msgs/s"),
        "{summary}"
    );
    // A 20% regression passes a 30% allowance.
    let (code, _, _) = diff(&[base, worse, "--fail-on-regression", "30%"]);
    assert_eq!(code, Some(0));
}

#[test]
fn bad_input_is_one_line_naming_it() {
    let dir = support::scratch_dir("diff-bad");
    let good = synthetic(&dir, "good.json", 5, 3, 1e6, 2e6);
    let good = good.to_str().unwrap();
    let not_json = dir.join("not.json");
    std::fs::write(&not_json, "hello").unwrap();
    let foreign = dir.join("foreign.json");
    std::fs::write(&foreign, r#"{"schema": "something/v9"}"#).unwrap();
    let nj = not_json.to_str().unwrap();
    let fj = foreign.to_str().unwrap();
    for (args, code, needle) in [
        (vec![good, "/nonexistent.json"], 1, "/nonexistent.json"),
        (vec![good, nj], 2, "is not JSON"),
        (vec![fj, good], 2, "something/v9"),
        (vec![good, good, "--metric", "p95"], 2, "--metric"),
        (
            vec![good, good, "--fail-on-regression", "lots"],
            2,
            "--fail-on-regression",
        ),
        (vec![good], 2, "NEW.json"),
    ] {
        let mut all = vec!["diff"];
        all.extend(args.iter().copied());
        let out = run(&all);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
