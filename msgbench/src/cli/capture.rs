//! The flags of `msgbench capture` (watch a live system and write the workload that reproduces
//! its traffic) and of `msgbench capture diff` (how close a replay came to the capture).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::ConnArgs;
use crate::values::{parse_count, parse_duration};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CaptureArgs {
    #[command(subcommand)]
    pub action: Option<CaptureAction>,
    #[command(flatten)]
    pub watch: WatchArgs,
}

#[derive(Debug, Subcommand)]
pub enum CaptureAction {
    /// Compare two captures (a system's, and one of its replay): per pattern, the rate ratio,
    /// the sizes' Kolmogorov-Smirnov distance and the key-rank skew.
    Diff(CaptureDiffArgs),
}

/// What to watch, for how long, and where the workload goes.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// How long to watch.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub duration: Duration,
    /// The subjects to watch, comma separated (wildcards allowed): 'orders.>,svc.>'.
    #[arg(long, default_value = ">", value_name = "SUBJECTS")]
    pub subjects: String,
    /// Where the workload file goes ('-' for stdout).
    #[arg(long, short = 'o', value_name = "FILE", required = true)]
    pub out: Option<PathBuf>,
    /// A token position with more distinct values than this becomes a drawn number (its
    /// values' skew kept by rank, the values dropped); one with at most this many keeps its
    /// words, each with its share.
    #[arg(long, default_value = "16", value_name = "N", value_parser = parse_count)]
    pub max_words: u64,
    /// Distinct subjects kept with their own counts, at most; messages on subjects beyond it
    /// still count toward their pattern's rate and sizes, and the file says how many.
    #[arg(long, default_value = "100000", value_name = "N", value_parser = parse_count)]
    pub max_subjects: u64,
    /// Replace every subject token and header name with a stable hash, and the server's
    /// address with "(redacted)": for a file that may leave the team.
    #[arg(long)]
    pub redact: bool,
    /// Write the file even when the capture could not keep up (slow consumer, a lost
    /// connection); without it such a capture exits 3 and says what it missed.
    #[arg(long)]
    pub allow_loss: bool,
    /// Do not read the streams and consumers from the JetStream API (its only requests):
    /// with it, capture sends nothing but its subscriptions.
    #[arg(long)]
    pub no_jetstream: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
}

#[derive(Debug, Args)]
pub struct CaptureDiffArgs {
    /// The first capture (a workload file `msgbench capture` wrote).
    #[arg(value_name = "A.yaml")]
    pub a: PathBuf,
    /// The capture to compare with it (of the replay).
    #[arg(value_name = "B.yaml")]
    pub b: PathBuf,
    /// Exit 8 unless every pattern's rate ratio is within this fraction of 1 and its sizes'
    /// KS distance below --max-ks.
    #[arg(long, value_name = "FRACTION", default_value = "0.05")]
    pub max_rate_error: f64,
    /// The largest Kolmogorov-Smirnov distance between two patterns' sizes that passes.
    #[arg(long, value_name = "D", default_value = "0.05")]
    pub max_ks: f64,
}
