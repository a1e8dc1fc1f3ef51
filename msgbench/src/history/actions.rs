//! `msgbench history list|show|trend|check`: the store read back, as text (and JSON with
//! `--json`). A store is opened for reading only where it exists: asking about a history that
//! is not there is an error, not an empty file made in passing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use super::check::{judge, Found, Judged};
use super::store::{RunRow, Store};
use crate::cli::{CheckArgs, HistoryAction, HistoryArgs, SeriesArgs, StoreArgs, TrendArgs};
use crate::error::{exit, Error, Result};
use crate::format::{change_pct, counted, sig};
use crate::metric::Metric;
use crate::options::{Recording, HISTORY_ENV};
use crate::stats::changepoint::Settings;

/// The JSON documents' schema names (schema/history-*-v1.schema.json).
pub const CHECK_SCHEMA: &str = "msgbench.history-check/v1";
pub const LIST_SCHEMA: &str = "msgbench.history-list/v1";
pub const RUN_SCHEMA: &str = "msgbench.history-run/v1";
pub const TREND_SCHEMA: &str = "msgbench.history-trend/v1";

/// Analysed when neither --last nor --all is given.
const DEFAULT_LAST: usize = 200;

/// Runs one `history` action and returns the exit status.
///
/// # Errors
/// A store that cannot be read, a run or metric that is not there, a file not written.
pub fn run(args: &HistoryArgs) -> Result<u8> {
    match &args.action {
        HistoryAction::List(a) => {
            let store = open(&a.store)?;
            let runs = store.runs(a.benchmark.as_deref()).map_err(store_err)?;
            let mut text = String::new();
            for r in &runs {
                let _ = writeln!(text, "{}", run_line(r));
            }
            let _ = writeln!(
                text,
                "{} in '{}'",
                counted(runs.len() as u64, "run"),
                store.path().display()
            );
            #[derive(Serialize)]
            struct Doc<'a> {
                schema: &'static str,
                runs: Vec<RunDoc<'a>>,
            }
            let doc = Doc {
                schema: LIST_SCHEMA,
                runs: runs.iter().map(RunDoc::of).collect(),
            };
            emit(&a.store, &text, &doc)
        }
        HistoryAction::Show(a) => {
            let store = open(&a.store)?;
            let s = store.get(&a.run).map_err(store_err)?;
            let mut text = format!("{}\n", run_line(&s.run));
            let _ = writeln!(text, "testbed: {}", s.testbed_json);
            for (m, v) in &s.metrics {
                let _ = writeln!(text, "  {m:<16} {}", sig(*v, 4, true));
            }
            let _ = writeln!(text, "histograms: {}", s.histograms.len());
            let doc = serde_json::json!({
                "schema": RUN_SCHEMA,
                "run": RunDoc::of(&s.run),
                "testbed": serde_json::from_str::<serde_json::Value>(&s.testbed_json).ok(),
                "metrics": s.metrics.iter().cloned().collect::<BTreeMap<_, _>>(),
                "plan": serde_json::from_str::<serde_json::Value>(&s.plan_json).ok(),
                "result": serde_json::from_str::<serde_json::Value>(&s.result_json).ok(),
            });
            emit(&a.store, &text, &doc)
        }
        HistoryAction::Trend(a) => trend(a),
        HistoryAction::Check(a) => check(a),
        HistoryAction::Export(a) => super::export::run(a),
        HistoryAction::Import(a) => super::import::run(a),
    }
}

/// A run as lists show it, in one line.
fn run_line(r: &RunRow) -> String {
    let labels: Vec<String> = r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "{}  {}  {:<10} benchmark {}{}  testbed {}  {}",
        r.run_id,
        r.started_at,
        r.scenario,
        r.benchmark,
        r.name
            .as_deref()
            .map_or(String::new(), |n| format!(" ({n})")),
        r.testbed,
        labels.join(" ")
    )
    .trim_end()
    .to_string()
}

#[derive(Serialize)]
struct RunDoc<'a> {
    run_id: &'a str,
    started_at: &'a str,
    scenario: &'a str,
    benchmark: &'a str,
    name: Option<&'a str>,
    testbed: &'a str,
    labels: &'a BTreeMap<String, String>,
}

impl<'a> RunDoc<'a> {
    fn of(r: &'a RunRow) -> Self {
        RunDoc {
            run_id: &r.run_id,
            started_at: &r.started_at,
            scenario: &r.scenario,
            benchmark: &r.benchmark,
            name: r.name.as_deref(),
            testbed: &r.testbed,
            labels: &r.labels,
        }
    }
}

/// The history file to read: `--history`, MSGBENCH_HISTORY, else the default.
fn open(a: &StoreArgs) -> Result<Store> {
    crate::output::dest::check_files(&[("--json", a.json.as_ref())])?;
    open_at(a.history.as_ref())
}

/// The history at `--history`, MSGBENCH_HISTORY or the default, which must exist (a file; a
/// server's database is created by opening it, as a new history holds no run either way).
pub(super) fn open_at(history: Option<&PathBuf>) -> Result<Store> {
    let given = history.cloned().or_else(|| {
        std::env::var_os(HISTORY_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    // A password typed on the command line is refused; one in MSGBENCH_HISTORY is the way to
    // give it in a URL.
    if let Some(url) = history.and_then(|h| h.to_str()) {
        super::store::refuse_password("--history", url).map_err(Error::Usage)?;
    }
    let path = super::record::path_of(&Recording {
        path: given,
        ..Recording::default()
    })
    .map_err(|why| Error::Usage(format!("--history: {why}")))?;
    let url = path.to_str().is_some_and(super::store::is_url);
    if !url && !path.exists() {
        return Err(Error::flag(
            "--history",
            &path.display().to_string(),
            "no history there (runs given --record are kept in it)",
        ));
    }
    Store::open(&path).map_err(store_err)
}

pub(crate) fn store_err(e: super::store::StoreError) -> Error {
    use super::store::StoreError as E;
    match e {
        E::NoSuchRun(_) => Error::Usage(e.to_string()),
        other => Error::Io {
            context: "reading the history".into(),
            source: std::io::Error::other(other),
        },
    }
}

/// Prints `text`, and writes `doc` as JSON where `--json` says (on stdout, the text goes to
/// stderr).
fn emit(a: &StoreArgs, text: &str, doc: &impl Serialize) -> Result<u8> {
    use std::io::Write;
    let to_stdout = a.json.as_deref() == Some(std::path::Path::new("-"));
    if to_stdout {
        let _ = std::io::stderr().write_all(text.as_bytes());
    } else {
        let _ = std::io::stdout().write_all(text.as_bytes());
    }
    if let Some(p) = &a.json {
        let mut bytes = serde_json::to_vec_pretty(doc).expect("the document serialises");
        bytes.push(b'\n');
        crate::output::write::save(p, &bytes, "--json")?;
    }
    Ok(exit::OK)
}

/// The series to analyse: one per benchmark, on the testbed of its newest run.
pub(crate) fn series_heads(store: &Store, s: &SeriesArgs) -> Result<Vec<RunRow>> {
    let runs = store.runs(s.benchmark.as_deref()).map_err(store_err)?;
    if runs.is_empty() {
        return Err(match &s.benchmark {
            Some(b) => Error::flag("--benchmark", b, "no run of it in the history"),
            None => Error::Usage("the history holds no run".into()),
        });
    }
    let mut newest: BTreeMap<&str, &RunRow> = BTreeMap::new();
    for r in &runs {
        newest.insert(&r.benchmark, r);
    }
    Ok(newest.into_values().cloned().collect())
}

pub(crate) fn settings(s: &SeriesArgs) -> Settings {
    Settings {
        alpha: s.alpha,
        window: s.window as usize,
        ..Settings::default()
    }
}

pub(crate) fn limit(s: &SeriesArgs) -> Option<usize> {
    if s.all {
        None
    } else {
        Some(s.last.map_or(DEFAULT_LAST, |n| n as usize))
    }
}

fn parse_metric(name: &str) -> Result<Metric> {
    Metric::parse(name).map_err(|why| Error::flag("--metric", name, why))
}

fn trend(a: &TrendArgs) -> Result<u8> {
    let metric = parse_metric(&a.metric)?;
    let store = open(&a.store)?;
    let mut text = String::new();
    let mut docs = Vec::new();
    for head in series_heads(&store, &a.series)? {
        let points = store
            .series(
                &head.benchmark,
                &head.testbed,
                &metric.name(),
                limit(&a.series),
            )
            .map_err(store_err)?;
        let judged = judge(metric, &points, &settings(&a.series), 0.0);
        let _ = writeln!(text, "{}", series_title(&head, points.len()));
        for (i, p) in points.iter().enumerate() {
            // The change points, and the newest runs' move when it is none of them, at the
            // first run of its new level: where `history check` names it.
            let mark = judged
                .changes
                .iter()
                .find(|f| f.at.index == i)
                .map(|f| format!("  ← change {}", change_text(f)))
                .or_else(|| {
                    judged
                        .change
                        .as_ref()
                        .filter(|f| f.at.index == i)
                        .map(|f| format!("  ← newest runs moved {}", change_text(f)))
                })
                .unwrap_or_default();
            let labels: Vec<String> = p
                .run
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let _ = writeln!(
                text,
                "  {}  {}  {:>12}  {}{mark}",
                p.run.started_at,
                p.run.run_id,
                sig(p.value, 4, true),
                labels.join(" ")
            );
        }
        docs.push(serde_json::json!({
            "benchmark": head.benchmark,
            "testbed": head.testbed,
            "metric": metric.name(),
            "points": points.iter().map(|p| serde_json::json!({
                "run_id": p.run.run_id, "started_at": p.run.started_at,
                "labels": p.run.labels, "value": p.value})).collect::<Vec<_>>(),
            "changes": judged.changes,
            "newest_move": judged.change.as_ref()
                .filter(|f| !judged.changes.iter().any(|c| c.at.index == f.at.index)),
        }));
    }
    emit(
        &a.store,
        &text,
        &serde_json::json!({ "schema": TREND_SCHEMA, "series": docs }),
    )
}

fn series_title(head: &RunRow, runs: usize) -> String {
    format!(
        "benchmark {}{} ({}), testbed {}: {}, newest {}",
        head.benchmark,
        head.name
            .as_deref()
            .map_or(String::new(), |n| format!(" '{n}'")),
        head.scenario,
        head.testbed,
        counted(runs as u64, "run"),
        head.run_id
    )
}

/// A change as one phrase: its size with interval and p-value, and where it began.
fn change_text(f: &Found) -> String {
    let ci = match (f.change.ci_low, f.change.ci_high) {
        (Some(l), Some(h)) => format!(" [{}, {}]", change_pct(l), change_pct(h)),
        _ => String::new(),
    };
    let labels: Vec<String> =
        f.at.labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
    let until = f.drift_until.as_ref().map_or(String::new(), |d| {
        format!(", drifting until run {}", d.run_id)
    });
    format!(
        "{}{ci}, p {}; from run {} ({}{}{}){until}",
        change_pct(f.change.ratio),
        sig(f.p_value, 2, true),
        f.at.run_id,
        f.at.started_at,
        if labels.is_empty() { "" } else { ", " },
        labels.join(" ")
    )
}

/// The metrics checked without `--metric`, where the series has them. The servers' CPU per
/// message is among them: a server upgrade that spends more per message while the throughput
/// holds is a regression too.
pub(crate) const DEFAULT_METRICS: [&str; 8] = [
    "msgs_per_sec",
    "p50",
    "p99",
    "p99.9",
    "connects_per_sec",
    "connect_p50",
    "connect_p99",
    "server_cpu_per_msg",
];

#[derive(Serialize)]
struct CheckDoc {
    schema: &'static str,
    tolerate: f64,
    alpha: f64,
    window: usize,
    regressions: usize,
    series: Vec<SeriesDoc>,
}

#[derive(Serialize)]
struct SeriesDoc {
    benchmark: String,
    name: Option<String>,
    scenario: String,
    testbed: String,
    newest: String,
    metrics: Vec<Judged>,
}

fn check(a: &CheckArgs) -> Result<u8> {
    let asked: Vec<Metric> = a
        .metric
        .iter()
        .map(|m| parse_metric(m))
        .collect::<Result<_>>()?;
    let store = open(&a.store)?;
    let settings = settings(&a.series);
    let mut text = format!(
        "History check of '{}': tolerance {}, α {}, window {}\n",
        store.path().display(),
        change_pct(1.0 + a.tolerate).trim_start_matches('+'),
        a.series.alpha,
        counted(settings.window as u64, "run")
    );
    let mut doc = CheckDoc {
        schema: CHECK_SCHEMA,
        tolerate: a.tolerate,
        alpha: a.series.alpha,
        window: settings.window,
        regressions: 0,
        series: Vec::new(),
    };
    for head in series_heads(&store, &a.series)? {
        let stored = store
            .metric_names(&head.benchmark, &head.testbed)
            .map_err(store_err)?;
        let metrics: Vec<Metric> = if asked.is_empty() {
            DEFAULT_METRICS
                .iter()
                .filter(|m| stored.iter().any(|s| s == *m))
                .map(|m| Metric::parse(m).expect("a known metric"))
                .collect()
        } else {
            asked.clone()
        };
        let mut judged_all = Vec::new();
        let mut runs = 0;
        for m in metrics {
            let points = store
                .series(&head.benchmark, &head.testbed, &m.name(), limit(&a.series))
                .map_err(store_err)?;
            runs = runs.max(points.len());
            judged_all.push(judge(m, &points, &settings, a.tolerate));
        }
        let _ = writeln!(text, "{}", series_title(&head, runs));
        for j in &judged_all {
            let detail = j.change.as_ref().map_or_else(
                || match &j.window {
                    Some(w) => format!(
                        "newest {} {} (p {})",
                        counted((j.runs - w.from.index) as u64, "run"),
                        change_pct(w.change.ratio),
                        w.change.p_value.map_or("—".into(), |p| sig(p, 2, true))
                    ),
                    None => String::new(),
                },
                change_text,
            );
            let _ = writeln!(text, "  {:<14} {:<12} {detail}", j.metric, j.verdict);
            doc.regressions += usize::from(j.verdict == "regression");
        }
        doc.series.push(SeriesDoc {
            benchmark: head.benchmark.clone(),
            name: head.name.clone(),
            scenario: head.scenario.clone(),
            testbed: head.testbed.clone(),
            newest: head.run_id.clone(),
            metrics: judged_all,
        });
    }
    let _ = writeln!(
        text,
        "{}",
        match doc.regressions {
            0 => "No regression.".to_string(),
            n => format!(
                "{n} regression{} beyond the tolerance.",
                if n == 1 { "" } else { "s" }
            ),
        }
    );
    emit(&a.store, &text, &doc)?;
    Ok(if doc.regressions > 0 {
        exit::THRESHOLD
    } else {
        exit::OK
    })
}
