//! The command line as typed: subcommands, flags and their help. Values are parsed here only as
//! far as clap needs to report a bad one with the flag's name; turning them into a runnable,
//! cross-checked configuration is `options`' job.
//!
//! This file holds the commands that are not scenarios (run, report, diff, calibrate, demo) and
//! the flag groups every scenario shares (connection, output), so those groups are seen and
//! reused rather than redeclared. Each scenario's own flags are in its module under
//! `scenario/`; agents' and capacity's flags and the named choices (`modes.rs`) have files of
//! their own here.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

mod agent;
mod capacity;
mod capture;
mod history;
mod modes;
mod pace;
mod shell;

pub use agent::{AgentAction, AgentArgs, KeygenArgs};
pub use capacity::{MixSearchArgs, SearchArgs};
pub use capture::{CaptureAction, CaptureArgs, CaptureDiffArgs, WatchArgs};
pub use history::{
    CheckArgs, ExportArgs, ExportFormat, HistoryAction, HistoryArgs, ImportArgs, ListArgs,
    ReportSeriesArgs, SeriesArgs, ShowArgs, StoreArgs, TrendArgs,
};
pub use modes::{
    Arrivals, BusyPoll, Discard, JsPubMode, KeyOrder, Persist, Publish, Record, Storage, Subscribe,
    Switch,
};
pub use pace::{PaceArgs, PaceShape};
pub use shell::{CompletionsArgs, ManArgs};

use crate::values::{parse_count, parse_duration, parse_rate, parse_size};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file: JSON as `msgbench <scenario> … --print-plan` writes it, or a workload
    /// (YAML: a mix of classes run together).
    #[arg(value_name = "PLAN.json|WORKLOAD.yaml")]
    pub plan: PathBuf,
    /// A workload at a scale: every class's rate times FACTOR (2: twice today's traffic).
    #[arg(long, value_name = "FACTOR", value_parser = parse_rate)]
    pub scale: Option<f64>,
    /// A workload's captured curves replayed at FACTOR× speed: each class's rate in each
    /// captured second (its `curve`) instead of its mean, each second lasting 1/FACTOR s (10:
    /// ten minutes in one).
    #[arg(long, value_name = "FACTOR", value_parser = parse_rate)]
    pub time_warp: Option<f64>,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files written by --json (one or more; several are shown side by side).
    #[arg(
        required_unless_present = "history",
        conflicts_with = "history",
        value_name = "RESULT.json"
    )]
    pub inputs: Vec<PathBuf>,
    /// Draw the runs kept in a history instead: each benchmark's headline metrics over time,
    /// with their change points. PATH defaults as `history` does: MSGBENCH_HISTORY, else
    /// msgbench/history.db under the user's data folder.
    #[arg(long, visible_alias = "history-file", value_name = "PATH", num_args = 0..=1)]
    pub history: Option<Option<PathBuf>>,
    #[command(flatten)]
    pub series: ReportSeriesArgs,
    /// The HTML file to write.
    #[arg(
        short = 'o',
        long = "output",
        default_value = "report.html",
        value_name = "FILE"
    )]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The baseline result file.
    #[arg(value_name = "BASE.json")]
    pub base: PathBuf,
    /// The result file to judge against the baseline.
    #[arg(value_name = "NEW.json")]
    pub new: PathBuf,
    /// Exit with status 8 when any compared metric is significantly worse by more than PCT
    /// (e.g. 5%).
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
    /// Compare only these metrics (repeatable; default: msgs_per_sec and the latency
    /// percentiles both results have).
    #[arg(long, value_name = "NAME")]
    pub metric: Vec<String>,
    /// Also write the comparison as JSON to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// With workloads' results (`msgbench run WORKLOAD.yaml --json`): compare this class of
    /// each.
    #[arg(long, value_name = "NAME")]
    pub class: Option<String>,
}

/// `5%`, `5` or `0.5%`: a percentage, returned as a fraction (0.05).
fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let n: f64 = t
        .strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage such as 5%"))?;
    if !(n.is_finite() && n >= 0.0) {
        return Err(format!("'{s}' must be a percentage of 0 or more"));
    }
    Ok(n / 100.0)
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Round trips per measurement.
    #[arg(long, default_value = "10000", value_parser = parse_count)]
    pub samples: u64,
    /// Message size.
    #[arg(long, default_value = "16", value_parser = parse_size)]
    pub size: usize,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Write the calibration as JSON to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Do not draw progress bars.
    #[arg(long)]
    pub no_progress: bool,
}

/// Where the server is and how to reach it.
#[derive(Debug, Clone, Args, Serialize)]
pub struct ConnArgs {
    /// Server URLs, comma separated: nats://[user:pass@|token@]host:port. Without it (and
    /// without NATS_URL) msgbench starts a local nats-server.
    #[arg(
        short = 's',
        long,
        env = "NATS_URL",
        value_name = "URLS",
        hide_env_values = true
    )]
    pub server: Option<String>,
    /// The nats-server binary to start when no server is given (default: the one beside
    /// msgbench, else the first on PATH; the README lists where else it looks).
    #[arg(
        long,
        env = "MSGBENCH_NATS_SERVER",
        value_name = "PATH",
        hide_env_values = true
    )]
    pub nats_server: Option<PathBuf>,
    /// How long to wait for a TCP connection and the server's handshake.
    #[arg(long, default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub connect_timeout: Duration,
    /// After a lost connection, dial again with backoff (10 ms doubling to 1 s) and replay the
    /// subscriptions, for up to --timeout; without it a lost connection ends the run.
    #[arg(long)]
    pub reconnect: bool,
    /// With --reconnect: spread each pause between attempts at random (uniform over half to
    /// one and a half of the backoff) so clients lost together do not dial again in lockstep.
    /// On by default; `off` shows the herd it tames.
    #[arg(long, value_name = "on|off")]
    pub reconnect_jitter: Option<Switch>,
    /// Send a keepalive PING after this long without hearing from the server; two unanswered
    /// PINGs end the connection (counted as ping_timeout).
    #[arg(long, default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub ping_interval: Duration,
    /// Inject a fault into the embedded server: kill@5s, restart@5s[:DOWN], pause@3s:200ms
    /// (time from the start of the load). Reports the recovery time. For `js pub` and `kv put`
    /// on --cluster 3 or 5: a comma-separated list aimed at roles, KIND-TARGET@TIME[:HOLD] with
    /// TARGET leader, follower, meta-leader, majority or all (kill-leader@3s,restart-leader@6s),
    /// and partition-TARGET@TIME:HOLD, which cuts the nodes off from their peers and clients.
    #[arg(long, value_name = "KIND[-TARGET]@TIME[:HOLD]")]
    pub fault: Option<String>,
    /// For `js pub` and `kv put` on --cluster 3 or 5, in a run of a set length: draw the faults at
    /// random rather than list them. random:SEED:EVERY draws, every EVERY from EVERY until the
    /// load ends, a restart, pause or partition aimed at a role, held for a tenth to a half of
    /// EVERY; at most 8. The same seed draws the same list.
    #[arg(long, value_name = "random:SEED:EVERY")]
    pub nemesis: Option<String>,
    /// A fault of --fault or --nemesis that was never injected (the run ended first, or its
    /// target was not found within 30 s) does not fail the run; without this it exits 10.
    #[arg(long)]
    pub allow_missed_faults: bool,
    /// Put an impaired link between the clients and the server: delay=1ms,jitter=200us,
    /// rate=100mbit (each way; prefix an item with up: or down: for one direction). A proxy
    /// inside msgbench does it; its own cost is measured and reported.
    #[arg(long, value_name = "SPEC")]
    pub link: Option<String>,
    /// User name; the password comes from NATS_PASSWORD (never from a flag, so it cannot show
    /// in the process list).
    #[arg(long, env = "NATS_USER", value_name = "USER")]
    pub user: Option<String>,
    /// NKey seed file to authenticate with.
    #[arg(long, env = "NATS_NKEY", value_name = "FILE")]
    pub nkey: Option<PathBuf>,
    /// Credentials file (user JWT and seed, as nsc writes it).
    #[arg(long, env = "NATS_CREDS", value_name = "FILE")]
    pub creds: Option<PathBuf>,
    /// A NATS CLI context (its server URL and credentials), by name.
    #[arg(long, env = "NATS_CONTEXT", value_name = "NAME")]
    pub context: Option<String>,
    /// With no --server: start N local nats-servers routed into one cluster (2 to 5). Clients
    /// use the first node (with --reconnect, those of request, js pub and kv dial the others
    /// when it fails); `latency` puts its subscriber on the second.
    #[arg(long, value_name = "N", value_parser = parse_nodes)]
    pub cluster: Option<u32>,
    /// A setting for the servers msgbench starts, written into their config file (repeat the
    /// flag for more): sync_interval=always, max_payload=2000000, jetstream.max_file_store=1G.
    #[arg(long, value_name = "KEY=VALUE")]
    pub server_config: Vec<String>,
    /// CA certificates (PEM) to verify the server with, instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Client certificate chain (PEM), for servers that verify clients (mutual TLS).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Do not verify the server's certificate (prints a warning).
    #[arg(long)]
    pub tls_insecure: bool,
    /// Start TLS at once, before the server's INFO (servers with handshake_first).
    #[arg(long)]
    pub tls_first: bool,
    /// The servers' monitoring endpoints, comma separated: http[s]://[user:pass@|token@]host:port.
    /// Each is sampled once a second for the run's server side (CPU, memory, connections,
    /// streams, consumers, events), as the servers msgbench starts always are; https is
    /// verified with --tls-ca (else the system's roots) and shows --tls-cert when asked.
    #[arg(
        long,
        env = "MSGBENCH_SERVER_MONITOR",
        value_name = "URLS",
        hide_env_values = true
    )]
    pub server_monitor: Option<String>,
}

/// A clap error as one line without its `error: ` prefix; "…were not provided:" gets the
/// missing flags clap lists on the indented lines below it.
pub fn one_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let mut lines = rendered.lines().skip_while(|l| l.trim().is_empty());
    let mut line = lines
        .next()
        .unwrap_or("invalid arguments")
        .trim_start_matches("error: ")
        .to_string();
    if line.ends_with(':') {
        let listed: Vec<&str> = lines
            .take_while(|l| l.starts_with(char::is_whitespace) && !l.trim().is_empty())
            .map(str::trim)
            .collect();
        line = format!("{line} {}", listed.join(", "));
    }
    line
}

fn parse_nodes(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n @ 2..=5) => Ok(n),
        _ => Err("must be 2 to 5 nodes".into()),
    }
}

/// Where results go.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Write the result as JSON to FILE ('-' for stdout; the text report then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the figures as CSV to FILE: per-client rows in nats bench's columns (conns: one
    /// row per run of its own figures). The servers' samples, when the run has any, go beside
    /// it in NAME.servers.csv.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the headline figures as a Markdown table to FILE, for a pull request.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Do not print the live line (once a second: rates, current P99, errors) on a terminal.
    #[arg(long)]
    pub no_progress: bool,
    /// Print the live line even when stderr is not a terminal (into a CI log, say).
    #[arg(long, conflicts_with = "no_progress")]
    pub live: bool,
    /// Append one JSON line of statistics per second to FILE, for dashboards.
    #[arg(long, value_name = "FILE")]
    pub stream_stats: Option<PathBuf>,
    /// Serve the live figures on http://ADDR/metrics in the OpenMetrics text format, for
    /// Prometheus: per-role counts and rates, the second's latency, errors by kind, the stage.
    /// ADDR is HOST:PORT, e.g. 127.0.0.1:9464 (port 0: any free port, printed).
    #[arg(long, value_name = "ADDR", value_parser = crate::values::parse_listen)]
    pub metrics_listen: Option<String>,
    /// After the run, how long --metrics-listen keeps the final figures up at most, waiting for
    /// a scrape to take them (0s: no wait).
    #[arg(long, value_name = "DURATION", default_value = "60s",
          value_parser = parse_duration_or_zero, requires = "metrics_listen")]
    pub metrics_linger: Duration,
    /// Serve a live page of the run on http://ADDR/: rates per role, the second's latency,
    /// errors, the stage, and the report's charts, once a second; the final result and its
    /// files at the end. ADDR is HOST:PORT, e.g. 127.0.0.1:8080 (port 0: any free port).
    #[arg(long, value_name = "ADDR", value_parser = crate::values::parse_listen)]
    pub web: Option<String>,
    /// After the run, how long --web keeps the page up with the final result (0s: exit at once).
    #[arg(long, value_name = "DURATION", default_value = "0s",
          value_parser = parse_duration_or_zero, requires = "web")]
    pub web_linger: Duration,
    /// Repeat the run N times and report each figure's median and spread over the runs.
    #[arg(long, default_value = "1", value_name = "N", value_parser = parse_runs)]
    pub runs: u32,
    /// A pass/fail gate, repeatable: p99<2ms, msgs_per_sec>1e6, lost==0. Any failed one makes
    /// the exit status 8.
    #[arg(long, value_name = "EXPR", value_parser = crate::gate::parse)]
    pub threshold: Vec<crate::gate::Threshold>,
    /// Print the run as a plan (JSON) and run nothing; `msgbench run PLAN.json` runs it.
    #[arg(long)]
    pub print_plan: bool,
    /// Run on msgbench agents (`msgbench agent`): N of them, or the ones named (comma
    /// separated). The clients and the rate are split between them and the results merged.
    #[arg(long, value_name = "N|NAMES")]
    pub agents: Option<String>,
    /// Use only agents carrying this label (repeatable, K=V); alone, every such agent.
    #[arg(long = "agent-label", value_name = "K=V")]
    pub agent_labels: Vec<String>,
    /// The NATS server the agents listen on (default: --server, the server under test).
    #[arg(long, value_name = "URL")]
    pub control: Option<String>,
    /// NKey seed file the plans sent to agents are signed with (`msgbench agent keygen`).
    #[arg(long, value_name = "FILE")]
    pub sign: Option<PathBuf>,
    /// With --agents: an agent unheard this long (no heartbeat, no report) is missing; the
    /// others are stopped and get as long again to send what they measured. Agents send a
    /// heartbeat every 500ms from a thread of its own [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub agent_silence: Option<Duration>,
    /// Keep the run in the history (`msgbench history`), after its files are written. A store
    /// that cannot be used is one line on stderr and leaves the exit status alone;
    /// `--record=required` makes it a failure (status 1). MSGBENCH_HISTORY set records too.
    #[arg(long, value_name = "required", num_args = 0..=1, require_equals = true,
          default_missing_value = "on")]
    pub record: Option<Record>,
    /// The history file (SQLite) to record into, or a postgres:// URL (its password in
    /// PGPASSWORD, never here); implies --record. Default: MSGBENCH_HISTORY, else
    /// msgbench/history.db under the user's data folder ($XDG_DATA_HOME or ~/.local/share).
    /// (Not --history: `kv put` has that flag for its bucket.)
    #[arg(long = "history-file", value_name = "PATH")]
    pub history_file: Option<PathBuf>,
    /// With --record: a name that joins the plan in the benchmark's identity (to keep apart
    /// runs of one plan against different servers, say).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// With --record: a label kept with the run and shown where a change starts, repeatable
    /// (commit=abc123, branch=main).
    #[arg(long = "label", value_name = "K=V", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
}

/// `k=v`: a label's key and value; the key is not empty.
fn parse_label(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("'{s}' is not a label such as commit=abc123")),
    }
}

impl OutputArgs {
    /// Whether the run goes to agents rather than running here.
    pub fn distributed(&self) -> bool {
        self.agents.is_some() || !self.agent_labels.is_empty()
    }

    /// `--metrics-listen HOST:0`: the system picks the port, so the user must be told it.
    pub fn metrics_listen_port_chosen(&self) -> bool {
        self.metrics_listen
            .as_deref()
            .is_some_and(|a| a.rsplit_once(':').is_some_and(|(_, p)| p == "0"))
    }
}

fn parse_runs(s: &str) -> Result<u32, String> {
    let n = parse_count(s)?;
    if n == 0 {
        return Err("must be at least 1".into());
    }
    // Each run is a whole benchmark; past this a loop in a script is the better tool.
    if n > 1000 {
        return Err("at most 1000 runs".into());
    }
    Ok(n as u32)
}

pub(crate) fn parse_duration_or_zero(s: &str) -> Result<Duration, String> {
    match s.trim() {
        "0" | "0s" | "0ms" => Ok(Duration::ZERO),
        other => parse_duration(other),
    }
}

pub(crate) fn parse_clients(s: &str) -> Result<u32, String> {
    let n = parse_count(s)?;
    if n == 0 {
        return Err("must be at least 1".into());
    }
    // Each client is a connection and a thread; past this the machine, not the server, is
    // what gets measured.
    if n > 10_000 {
        return Err("at most 10000 clients".into());
    }
    Ok(n as u32)
}

impl ConnArgs {
    /// Its flags' names as a plan's keys (`tls_ca`): what a workload's class may not set, since
    /// the connection is the workload's.
    pub fn flag_names() -> Vec<String> {
        let group = <Self as Args>::augment_args(clap::Command::new("conn"));
        (group.get_arguments())
            .filter_map(|a| a.get_long().map(|l| l.replace('-', "_")))
            .collect()
    }

    /// Every connection flag at its default: how a command without NATS flags of its own
    /// (gRPC on agents) reaches the control server.
    pub fn plain() -> Self {
        use clap::{Args as _, FromArgMatches as _};
        let m = ConnArgs::augment_args(clap::Command::new("conn"))
            .no_binary_name(true)
            .get_matches_from(std::iter::empty::<String>());
        ConnArgs::from_arg_matches(&m).expect("the defaults parse")
    }
}
