//! `history export`: the history in the formats of the tools teams already run, so msgbench's
//! runs can join a Bencher project, a github-action-benchmark page or an Otava analysis:
//!
//! - **Bencher Metric Format** (BMF) JSON: `{benchmark: {measure: {value, lower_value,
//!   upper_value}}}`, the newest run of each benchmark; with `--runs`, the lower and upper
//!   values are the least and greatest of its runs.
//! - **github-action-benchmark**'s custom tools: an array of `{name, unit, value, extra}`, one
//!   file per direction (customBiggerIsBetter for rates, customSmallerIsBetter for latency,
//!   loss and errors), since the action takes one tool per file.
//! - **Apache Otava**'s CSV: a `time` column, the labels as attribute columns, one column per
//!   metric, one row per run of one benchmark, oldest first.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use super::actions::{open_at, series_heads, store_err};
use super::store::{RunRow, Store};
use crate::cli::{ExportArgs, ExportFormat, SeriesArgs};
use crate::error::{exit, Error, Result};
use crate::format::csv_field as field;
use crate::metric::Metric;

/// Counts a plan fixes (`msgs` is `--msgs`): not figures a chart of performance wants.
const PLAN_COUNTS: [&str; 3] = ["msgs", "sent", "received"];

/// Runs `history export`.
///
/// # Errors
/// A store that cannot be read, otava without one benchmark, a file not written.
pub fn run(a: &ExportArgs) -> Result<u8> {
    crate::output::dest::check_files(&[("--output", Some(&a.output))])?;
    let store = open_at(a.history.as_ref())?;
    let series = SeriesArgs {
        benchmark: a.benchmark.clone(),
        last: None,
        all: true,
        alpha: 0.01,
        window: 3,
    };
    let heads = series_heads(&store, &series)?;
    let bytes = match a.format {
        ExportFormat::Bencher => json_bytes(&bencher(&store, &heads)?),
        ExportFormat::GithubBigger => json_bytes(&github(&store, &heads, true)?),
        ExportFormat::GithubSmaller => json_bytes(&github(&store, &heads, false)?),
        ExportFormat::Otava => {
            let [head] = heads.as_slice() else {
                return Err(Error::Usage(format!(
                    "--format otava: the history holds {} benchmarks and an Otava CSV is one; \
                     give --benchmark (history list shows them)",
                    heads.len()
                )));
            };
            otava(&store, head)?.into_bytes()
        }
    };
    crate::output::write::save(&a.output, &bytes, "--output")?;
    Ok(exit::OK)
}

fn json_bytes(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("JSON serialises");
    out.push(b'\n');
    out
}

/// The name a benchmark goes by in other tools: its `--name`, else its scenario and id.
fn bench_name(head: &RunRow) -> String {
    match &head.name {
        Some(n) => n.clone(),
        None => format!("{} {}", head.scenario, head.benchmark),
    }
}

/// The newest run's stored figures and, per metric, its repeated runs' values (`--runs`).
fn newest(store: &Store, head: &RunRow) -> Result<(Vec<(String, f64)>, Value)> {
    let s = store.get(&head.run_id).map_err(store_err)?;
    let doc = serde_json::from_str(&s.result_json).unwrap_or(Value::Null);
    Ok((s.metrics, doc))
}

fn bencher(store: &Store, heads: &[RunRow]) -> Result<Value> {
    let mut out = Map::new();
    for head in heads {
        let (metrics, doc) = newest(store, head)?;
        let mut measures = Map::new();
        for (name, value) in metrics {
            let mut m = json!({ "value": value });
            let runs = Metric::parse(&name)
                .ok()
                .and_then(|metric| metric.values(&doc).ok())
                .filter(|v| v.len() > 1);
            if let Some(vs) = runs {
                m["lower_value"] = json!(vs.iter().copied().fold(f64::INFINITY, f64::min));
                m["upper_value"] = json!(vs.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            }
            measures.insert(name, m);
        }
        out.insert(bench_name(head), Value::Object(measures));
    }
    Ok(Value::Object(out))
}

/// A metric's unit as a chart's axis reads it.
fn unit(m: Metric) -> &'static str {
    match m.name().as_str() {
        _ if m.is_duration() => "ns",
        "msgs_per_sec" => "msgs/s",
        "bytes_per_sec" => "B/s",
        "connects_per_sec" => "connects/s",
        "shortfall_pct" => "%",
        _ => "count",
    }
}

fn github(store: &Store, heads: &[RunRow], bigger: bool) -> Result<Value> {
    let mut out = Vec::new();
    for head in heads {
        let (metrics, _) = newest(store, head)?;
        let labels: Vec<String> = head
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let extra = format!("run {}\n{}", head.run_id, labels.join("\n"));
        for (name, value) in metrics {
            let Ok(m) = Metric::parse(&name) else {
                continue;
            };
            if m.higher_is_better() != bigger || PLAN_COUNTS.contains(&name.as_str()) {
                continue;
            }
            out.push(json!({
                "name": format!("{} - {name}", bench_name(head)),
                "unit": unit(m),
                "value": value,
                "extra": extra.trim_end(),
            }));
        }
    }
    Ok(Value::Array(out))
}

fn otava(store: &Store, head: &RunRow) -> Result<String> {
    let names = store
        .metric_names(&head.benchmark, &head.testbed)
        .map_err(store_err)?;
    // Every run of the series, with every metric it has.
    let mut rows: Vec<(RunRow, BTreeMap<String, f64>)> = Vec::new();
    for name in &names {
        for p in store
            .series(&head.benchmark, &head.testbed, name, None)
            .map_err(store_err)?
        {
            match rows.iter_mut().find(|(r, _)| r.run_id == p.run.run_id) {
                Some((_, m)) => {
                    m.insert(name.clone(), p.value);
                }
                None => rows.push((p.run, BTreeMap::from([(name.clone(), p.value)]))),
            }
        }
    }
    rows.sort_by(|a, b| a.0.started_at.cmp(&b.0.started_at));
    let keys: BTreeSet<&String> = rows.iter().flat_map(|(r, _)| r.labels.keys()).collect();
    let mut header = vec!["time".to_string(), "run_id".to_string()];
    header.extend(keys.iter().map(|k| field(k)));
    header.extend(names.iter().map(|n| field(n)));
    let mut out = header.join(",") + "\n";
    for (run, metrics) in &rows {
        let mut line = vec![field(&run.started_at), field(&run.run_id)];
        line.extend(
            keys.iter()
                .map(|k| field(run.labels.get(*k).map_or("", String::as_str))),
        );
        // A metric a run did not measure is an empty field, not 0.
        line.extend(
            names
                .iter()
                .map(|n| metrics.get(n).map_or(String::new(), |v| v.to_string())),
        );
        out.push_str(&line.join(","));
        out.push('\n');
    }
    Ok(out)
}
