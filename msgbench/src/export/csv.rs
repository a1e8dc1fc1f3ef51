//! CSV in `nats bench`'s columns, one row per client, so existing spreadsheets and scripts that
//! read its `--csv` files read ours. A `conns` run has no message clients: its file has a row
//! per run (each of `--runs`) with the figures `--threshold` names, in their units
//! ([`CONNS_HEADER`]); a figure the run could not measure is an empty cell.

use std::fmt::Write;

use super::Exporter;
use crate::metric::Metric;
use crate::result::RunResult;
use crate::stats::throughput::Role;

pub const HEADER: &str = "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs";

/// The figures of a `conns` row, by metric name; the header gives latency in nanoseconds.
const CONNS_COLUMNS: [&str; 15] = [
    "opened",
    "failed",
    "connects_per_sec",
    "connect_p50",
    "connect_p90",
    "connect_p99",
    "connect_p99.9",
    "connect_max",
    "missed",
    "herd_lost",
    "never_back",
    "back_p50",
    "back_p99",
    "back_max",
    "errors",
];

pub const CONNS_HEADER: &str = "#RunID,opened,failed,connects_per_sec,connect_p50_ns,\
    connect_p90_ns,connect_p99_ns,connect_p99.9_ns,connect_max_ns,missed,herd_lost,never_back,\
    back_p50_ns,back_p99_ns,back_max_ns,errors";

pub struct Csv;

impl Exporter for Csv {
    fn serialize(&self, result: &RunResult) -> Vec<u8> {
        if result.own.family() == crate::metric::Family::Connections {
            return conns(result).into_bytes();
        }
        let mut out = String::from(HEADER);
        out.push('\n');
        for c in &result.clients {
            let id = match c.role {
                Role::Pub => format!("P{}", c.id),
                Role::Sub => format!("S{}", c.id),
            };
            let _ = writeln!(
                out,
                "{},{},{},{},{:.0},{:.0},{:.6}",
                result.run_id, id, c.msgs, c.bytes, c.msgs_per_sec, c.bytes_per_sec, c.seconds
            );
        }
        out.into_bytes()
    }
}

/// A row per run of a `conns` result: its figures as `--runs` kept them (a figure some run
/// did not measure is empty in every row), or the one run's own.
fn conns(r: &RunResult) -> String {
    let doc = serde_json::to_value(r).expect("a result serialises");
    let ids: Vec<&str> = match &r.runs {
        Some(runs) => runs.runs.iter().map(|e| e.run_id.as_str()).collect(),
        None => vec![r.run_id.as_str()],
    };
    // Each column's values, and whether it is a duration (whole nanoseconds).
    let columns: Vec<(Option<Vec<f64>>, bool)> = CONNS_COLUMNS
        .iter()
        .filter_map(|name| Metric::parse(name).ok())
        .map(|m| {
            let values = m.values(&doc).ok().filter(|v| v.len() == ids.len());
            (values, m.is_latency())
        })
        .collect();
    let mut out = String::from(CONNS_HEADER);
    out.push('\n');
    for (i, id) in ids.iter().enumerate() {
        out.push_str(id);
        for (col, latency) in &columns {
            out.push(',');
            if let Some(v) = col.as_ref().map(|vs| vs[i]) {
                if *latency || v.fract() == 0.0 {
                    let _ = write!(out, "{v:.0}");
                } else {
                    let _ = write!(out, "{v:.3}");
                }
            }
        }
        out.push('\n');
    }
    out
}

/// The header of a workload's CSV: its classes' timelines, one row per class and second.
pub const MIX_HEADER: &str = "class,t_s,span_s,sent_per_sec,received_per_sec,latency_count,\
    latency_p50_ns,latency_p99_ns,latency_max_ns,errors";

/// A workload's combined timeline: every class's ticks, each class's in order, the classes in
/// the file's order. Every class's timeline starts at the workload's one start, so rows with one
/// `t_s` are the same second of the mix (times to the millisecond, rates to a tenth). A second
/// with no latency measured has empty latency cells; a class with no result (it failed before
/// measuring) has no rows.
pub fn mix_timeline(mix: &crate::result::mix::MixResult) -> String {
    let mut out = String::from(MIX_HEADER);
    out.push('\n');
    for c in &mix.classes {
        let Some(t) = c.result.as_ref().and_then(|r| r.timeline.as_ref()) else {
            continue;
        };
        for tick in &t.ticks {
            let lat = tick.latency.as_ref();
            let cell = |f: fn(&crate::stats::timeline::TickLatency) -> u64| {
                lat.map_or_else(String::new, |l| f(l).to_string())
            };
            let _ = writeln!(
                out,
                "{},{:.3},{:.3},{:.1},{:.1},{},{},{},{},{}",
                c.class,
                tick.t_s,
                tick.span_s,
                tick.sent_per_sec,
                tick.received_per_sec,
                cell(|l| l.count),
                cell(|l| l.p50_ns),
                cell(|l| l.p99_ns),
                cell(|l| l.max_ns),
                tick.errors
            );
        }
    }
    out
}
