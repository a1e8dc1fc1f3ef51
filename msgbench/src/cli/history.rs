//! `msgbench history`'s flags: list, show, trend, check and export over a store that `--record`
//! fills, and import, which fills it from result files.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::parse_percent;
use crate::values::parse_count;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub action: HistoryAction,
}

#[derive(Debug, Subcommand)]
pub enum HistoryAction {
    /// The stored runs, oldest first: id, time, scenario, benchmark, testbed, labels.
    List(ListArgs),
    /// One stored run: its benchmark, testbed, labels and headline figures.
    Show(ShowArgs),
    /// One metric of one benchmark over time, with the change points found in it.
    Trend(TrendArgs),
    /// Judge the newest run of each benchmark, metric by metric: change points over the
    /// history (E-divisive means) and a window test of the newest runs; exit 8 on a
    /// regression beyond --tolerate.
    Check(CheckArgs),
    /// Write the history for the tools teams already run: Bencher Metric Format JSON,
    /// github-action-benchmark's customBiggerIsBetter / customSmallerIsBetter JSON (the newest
    /// run of each benchmark), or one CSV row per run in Apache Otava's layout.
    Export(ExportArgs),
    /// Keep results written with --json in the history, as if they had been recorded (each
    /// with its own run id and start time): for runs made before a team began to record. A
    /// run already in the history is skipped with a line; a file that is not a whole result
    /// refuses the import before anything is kept.
    Import(ImportArgs),
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Result files, as --json wrote them.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// The history file, or a postgres:// URL (as --history-file takes it when recording;
    /// made when it is not there).
    #[arg(long, visible_alias = "history-file", value_name = "PATH")]
    pub history: Option<PathBuf>,
    /// A name that joins the plan in the benchmark's identity, as --record's --name (give the
    /// one the recorded runs of the same benchmark carry).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// A label kept with every imported run, as --record's --label (commit=abc123).
    #[arg(long = "label", value_name = "K=V", value_parser = super::parse_label)]
    pub labels: Vec<(String, String)>,
}

/// The formats `history export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Bencher Metric Format JSON: the newest run of each benchmark, every stored metric.
    Bencher,
    /// github-action-benchmark's customBiggerIsBetter: the rates of the newest runs.
    GithubBigger,
    /// github-action-benchmark's customSmallerIsBetter: latency, loss and errors of the newest
    /// runs.
    GithubSmaller,
    /// Apache Otava's CSV: one row per run of one benchmark (time, labels, metrics).
    Otava,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The history file or postgres:// URL (as for the other actions).
    #[arg(long, visible_alias = "history-file", value_name = "PATH")]
    pub history: Option<PathBuf>,
    /// What to write.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Only this benchmark (required for otava when the history holds several).
    #[arg(long, value_name = "ID")]
    pub benchmark: Option<String>,
    /// Where to write it ('-' for stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "-")]
    pub output: PathBuf,
}

/// The store every action reads.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// The history file, or a postgres:// URL (its password in PGPASSWORD, never here).
    /// Default: MSGBENCH_HISTORY, else msgbench/history.db under the user's data folder
    /// ($XDG_DATA_HOME or ~/.local/share). --history-file, as scenarios spell it, works too.
    #[arg(long, visible_alias = "history-file", value_name = "PATH")]
    pub history: Option<PathBuf>,
    /// Also write the answer as JSON to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Only the runs of this benchmark (its id, as `history list` shows it).
    #[arg(long, value_name = "ID")]
    pub benchmark: Option<String>,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The run's id.
    #[arg(value_name = "RUN")]
    pub run: String,
}

/// Which series: one benchmark on one testbed.
#[derive(Debug, Clone, Args)]
pub struct SeriesArgs {
    /// The benchmark (default: every benchmark in the store, each on the testbed of its newest
    /// run).
    #[arg(long, value_name = "ID")]
    pub benchmark: Option<String>,
    /// Analyse only the newest N runs of each series (default 200); --all for the whole
    /// history.
    #[arg(long, value_name = "N", value_parser = parse_at_least_4, conflicts_with = "all")]
    pub last: Option<u64>,
    /// Analyse every stored run of each series.
    #[arg(long)]
    pub all: bool,
    /// The significance level of both tests (default 0.01).
    #[arg(long, value_name = "P", default_value = "0.01", value_parser = parse_alpha)]
    pub alpha: f64,
    /// How many of the newest runs the window test judges.
    #[arg(long, value_name = "N", default_value = "3", value_parser = parse_window)]
    pub window: u64,
}

#[derive(Debug, Args)]
pub struct TrendArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub series: SeriesArgs,
    /// The metric (msgs_per_sec, p99, …).
    #[arg(long, value_name = "NAME", default_value = "msgs_per_sec")]
    pub metric: String,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub series: SeriesArgs,
    /// Judge only these metrics (repeatable; default: msgs_per_sec and p50, p99, p99.9 where
    /// stored; connects_per_sec and connect_p50, connect_p99 for conns).
    #[arg(long, value_name = "NAME")]
    pub metric: Vec<String>,
    /// A change worse than this is a regression (exit 8); smaller ones are reported only.
    #[arg(long, value_name = "PCT", default_value = "3%", value_parser = parse_percent)]
    pub tolerate: f64,
}

pub(super) fn parse_at_least_4(s: &str) -> Result<u64, String> {
    match parse_count(s)? {
        n if n >= 4 => Ok(n),
        _ => Err("must be at least 4 runs".into()),
    }
}

fn parse_window(s: &str) -> Result<u64, String> {
    match parse_count(s)? {
        n if n >= 1 => Ok(n),
        _ => Err("must be at least 1 run".into()),
    }
}

pub(super) fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(a) if a > 0.0 && a < 0.5 => Ok(a),
        _ => Err(format!(
            "'{s}' is not a significance level between 0 and 0.5"
        )),
    }
}

/// Which runs `report --history` draws: the series of `history check`, chosen by the same
/// flags (all of them need `--history`).
#[derive(Debug, Clone, Args)]
pub struct ReportSeriesArgs {
    /// Only this benchmark (default: every benchmark in the store, each on the testbed of its
    /// newest run).
    #[arg(long, value_name = "ID", requires = "history")]
    pub benchmark: Option<String>,
    /// Draw only the newest N runs of each series (default 200); --all for the whole history.
    #[arg(long, value_name = "N", value_parser = parse_at_least_4, conflicts_with = "all",
          requires = "history")]
    pub last: Option<u64>,
    /// Draw every stored run of each series.
    #[arg(long, requires = "history")]
    pub all: bool,
    /// The significance level of the change points marked (default 0.01, as `history check`).
    #[arg(long, value_name = "P", value_parser = parse_alpha, requires = "history")]
    pub alpha: Option<f64>,
}
