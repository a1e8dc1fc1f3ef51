//! A result document turned into what the store keeps: its identity, testbed, headline figures
//! and histograms, read from the JSON that `--json` writes (the same reading `diff` and gates
//! use, so a stored figure is the figure a file shows); and the recording of a run after its
//! files are written (`after_run`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use serde_json::Value;

use super::identity::{self, Testbed};
use super::store::{NewRun, Store};
use crate::error::Error;
use crate::export::json::Json;
use crate::export::Exporter;
use crate::metric::Metric;
use crate::options::Recording;
use crate::result::RunResult;

/// What the user gave for the run's place in history.
#[derive(Debug, Clone, Default)]
pub struct Tags {
    /// `--name`.
    pub name: Option<String>,
    /// `--label k=v`, repeated.
    pub labels: BTreeMap<String, String>,
}

/// The store's form of a result document, given as the exact text written for it.
///
/// # Errors
/// A document without a run id, scenario, start or plan (not a result of this msgbench).
pub fn new_run(result_json: &str, tags: &Tags) -> Result<NewRun, String> {
    let doc: Value =
        serde_json::from_str(result_json).map_err(|e| format!("not a result document: {e}"))?;
    let text = |key: &str| {
        doc.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("the result has no \"{key}\""))
    };
    let plan = doc
        .get("plan")
        .filter(|p| p.is_object())
        .ok_or("the result has no plan")?;
    let testbed = Testbed::of(&doc, &tags.labels);
    Ok(NewRun {
        run_id: text("run_id")?,
        benchmark: identity::benchmark(plan, tags.name.as_deref()),
        name: tags.name.clone(),
        scenario: text("scenario")?,
        testbed: testbed.fingerprint(),
        testbed_json: serde_json::to_string(&testbed).expect("a testbed serialises"),
        started_at: text("started_at")?,
        labels: tags.labels.clone(),
        plan_json: plan.to_string(),
        result_json: result_json.to_string(),
        metrics: Metric::all()
            .filter_map(|m| m.read(&doc).ok().map(|v| (m.name(), v)))
            .filter(|(_, v)| v.is_finite())
            .collect(),
        histograms: histograms(&doc),
    })
}

/// Every HDR histogram in the document (each `hdr` string), by its JSON pointer, decoded from
/// base64 to the encoding's own bytes.
fn histograms(doc: &Value) -> Vec<(String, Vec<u8>)> {
    fn walk(v: &Value, at: &str, out: &mut Vec<(String, Vec<u8>)>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    match (k.as_str(), v) {
                        ("hdr", Value::String(s)) => {
                            if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(s) {
                                out.push((here, bytes));
                            }
                        }
                        _ => walk(v, &here, out),
                    }
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc, "", &mut out);
    out
}

/// The history a recording goes to: `--history-file`, MSGBENCH_HISTORY (a file, or a
/// `postgres://` URL), else `msgbench/history.db` under `$XDG_DATA_HOME` or `~/.local/share`
/// (its folder is made).
///
/// # Errors
/// No path given and neither `XDG_DATA_HOME` nor `HOME` set.
pub fn path_of(rec: &Recording) -> Result<PathBuf, String> {
    if let Some(p) = &rec.path {
        return Ok(p.clone());
    }
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let data = var("XDG_DATA_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".local").join("share")))
        .ok_or("no --history-file, MSGBENCH_HISTORY, XDG_DATA_HOME or HOME to find it by")?;
    let dir = data.join("msgbench");
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot make the folder '{}': {e}", dir.display()))?;
    Ok(dir.join("history.db"))
}

/// Keeps a written result in the history. Called after the run's files are written, so it can
/// cost the run nothing: a failure is one line on stderr, and an error only under
/// `--record=required`.
///
/// # Errors
/// [`Error::Io`] (status 1) when the run could not be recorded and `required` was asked for.
pub fn after_run(result: &RunResult, rec: &Recording) -> crate::error::Result<()> {
    // A run cut short measured less than its plan says: in the series it would read as a
    // change of the benchmark.
    if result.interrupted {
        eprintln!("history: the run was interrupted, so it was not recorded");
        return Ok(());
    }
    match keep(result, rec) {
        Ok(line) => {
            eprintln!("{line}");
            Ok(())
        }
        Err(why) if rec.required => Err(Error::Io {
            context: "--record=required: the run was not recorded".into(),
            source: std::io::Error::other(why),
        }),
        Err(why) => {
            eprintln!("history: the run was not recorded: {why}");
            Ok(())
        }
    }
}

/// Records `result`, returning the line that says where.
fn keep(result: &RunResult, rec: &Recording) -> Result<String, String> {
    let path = path_of(rec)?;
    let text = String::from_utf8(Json.serialize(result)).expect("JSON is UTF-8");
    let tags = Tags {
        name: rec.name.clone(),
        labels: rec.labels.clone(),
    };
    let run = new_run(&text, &tags)?;
    let mut store = Store::open(&path).map_err(|e| e.to_string())?;
    store.insert(&run).map_err(|e| e.to_string())?;
    // The store's own name for itself: a server's URL without its password.
    Ok(format!(
        "history: recorded {} (benchmark {}) in '{}'",
        run.run_id,
        run.benchmark,
        store.path().display()
    ))
}
