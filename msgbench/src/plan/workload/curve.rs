//! A class's captured rate curve (`curve: [r0, r1, …]`, its messages per second in each second
//! of a capture) and how `--time-warp F` replays it: each captured second lasts 1/F s, at the
//! captured rate, as a list rate schedule `R@D,R@D,…`.
//!
//! A schedule holds at most [`MAX_STAGES`] stages (each stage keeps histograms of its own), so
//! a longer curve is merged into that many stages of equal length, each at the mean rate of the
//! seconds it covers (a second split between two stages counts in each for the part it gives
//! it). The schedule then sends exactly the messages the curve holds, whatever the merge; only
//! the shape within a stage is flattened.
//!
//! Only the arithmetic is here: the class's reading and the plan it becomes are the workload's.

use serde_json::Value;

use std::time::Duration;

use crate::stats::schedule::MAX_STAGES;
use crate::values::ser::text;

/// Points in a curve at most: a day of seconds.
pub const MAX_POINTS: usize = 86_400;

/// Reads a class's `curve`: a list of numbers, each finite and at least 0, not all 0, one to
/// [`MAX_POINTS`] of them.
///
/// # Errors
/// What is wrong, as a sentence the caller prefixes with the file and the class.
pub fn read(v: &Value) -> Result<Vec<f64>, String> {
    let Value::Array(items) = v else {
        return Err(format!(
            "curve {} is not a list of rates per second, such as [200, 1000]",
            short(v)
        ));
    };
    if items.is_empty() || items.len() > MAX_POINTS {
        return Err(format!(
            "curve has {} points; it has 1 to {MAX_POINTS} (a day of seconds)",
            items.len()
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.as_f64() {
            Some(r) if r.is_finite() && r >= 0.0 => out.push(r),
            _ => {
                return Err(format!(
                    "curve[{i}] is {}, not a rate of 0 or more messages per second",
                    short(item)
                ))
            }
        }
    }
    if out.iter().all(|&r| r == 0.0) {
        return Err("curve: every second's rate is 0: nothing would be sent".into());
    }
    Ok(out)
}

/// A value in a message, cut short: a curve may be long.
fn short(v: &Value) -> String {
    let mut t = v.to_string();
    if t.len() > 40 {
        t.truncate(t.char_indices().nth(37).map_or(t.len(), |(i, _)| i));
        t.push('…');
    }
    t
}

/// The curve's mean rate: what a plain run (without `--time-warp`) sends at.
pub fn mean(curve: &[f64]) -> f64 {
    curve.iter().sum::<f64>() / curve.len() as f64
}

/// The curve replayed at `warp` (each second lasting 1/`warp` s): its stages, each a rate and
/// a length in nanoseconds, at most [`MAX_STAGES`] of them.
pub fn stages(curve: &[f64], warp: f64) -> Vec<(f64, u64)> {
    let n = curve.len();
    let k = n.min(MAX_STAGES);
    // Each stage covers n/k captured seconds: [i·n/k, (i+1)·n/k), in whole k-ths of a second
    // so the bounds are exact integers.
    (0..k)
        .map(|i| {
            let (a, b) = (i * n, (i + 1) * n);
            // Messages in the stage, in units of 1/k message: second j covers [j·k, (j+1)·k).
            let msgs: f64 = (a / k..b.div_ceil(k))
                .map(|j| {
                    let (lo, hi) = ((j * k).max(a), ((j + 1) * k).min(b));
                    curve[j] * (hi - lo) as f64
                })
                .sum();
            let rate = msgs / n as f64 * warp;
            let len_ns = (n as f64 / k as f64 / warp * 1e9).round() as u64;
            (rate, len_ns.max(1))
        })
        .collect()
}

/// The stages as a list rate schedule, `R@D,…`: each length in the largest unit that holds it
/// whole (`500ms`; a third of a second is `333333333ns`), so that any warp is written exactly
/// as the schedule's parser reads it.
pub fn schedule(stages: &[(f64, u64)]) -> String {
    stages
        .iter()
        .map(|&(r, ns)| format!("{r}@{}", text(Duration::from_nanos(ns))))
        .collect::<Vec<_>>()
        .join(",")
}
