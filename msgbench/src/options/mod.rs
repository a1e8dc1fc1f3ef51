//! Validated run options: the CLI's values checked against each other and turned into the plain
//! values the scenario runs on. Everything a user can get wrong is rejected here, before any
//! connection is made, with a message that names the flag.

pub mod auth;
pub mod conn;
pub mod dest;
pub mod link;
pub mod monitor;
pub mod nemesis;
pub mod server_config;

use std::path::PathBuf;

use crate::cli::{Arrivals, ConnArgs, OutputArgs, PaceArgs};
use crate::engine::pace::{Pace, Stop};
use crate::error::{Error, Result};
use crate::wire::url::{self, ServerUrl};

/// Which server to use.
#[derive(Debug, Clone)]
pub enum ServerChoice {
    /// Servers the user named.
    Urls(Vec<ServerUrl>),
    /// Start a local nats-server (or `nodes` of them, routed into one cluster); `binary`
    /// overrides the PATH lookup.
    /// `settings` go into each server's config file (`--server-config`).
    Embedded {
        binary: Option<PathBuf>,
        nodes: u32,
        settings: Vec<crate::result::ServerSetting>,
        /// The run partitions nodes: routes and clients go through msgbench's proxies.
        partitions: bool,
        /// The run's faults act on the disks: each store sits on msgbench's lazy filesystem.
        lazy: bool,
        /// The credentials clients present (from flags, the environment or a context): a
        /// `--server-config` may have the servers ask for them. Boxed: most runs have none.
        auth: Box<url::Auth>,
    },
}

/// Where a finished result goes: its files, how it is judged and whether it is recorded. (What
/// shows a run while it goes is the session's: `session::Sinks`.)
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// `-` means stdout.
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    /// How many times to run the scenario.
    pub runs: u32,
    /// `--threshold`s to judge the result by.
    pub thresholds: Vec<crate::gate::Threshold>,
    /// `--record` (or `--history`, or MSGBENCH_HISTORY): keep the run in the history.
    pub record: Option<Recording>,
}

/// Where and how a run is kept in the history.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    /// `--history-file`, else MSGBENCH_HISTORY; `None`: the default file in the user's data folder.
    pub path: Option<PathBuf>,
    /// `--record=required`: a run that could not be recorded fails.
    pub required: bool,
    /// `--name`.
    pub name: Option<String>,
    /// `--label`s; a key given twice keeps its last value.
    pub labels: std::collections::BTreeMap<String, String>,
}

/// The environment variable that names the history file and, set, records every run.
pub const HISTORY_ENV: &str = "MSGBENCH_HISTORY";

impl Recording {
    /// What the output flags and the environment ask for: `None` when nothing asks to record.
    fn of(out: &OutputArgs) -> Option<Recording> {
        let env = std::env::var_os(HISTORY_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        if out.record.is_none() && out.history_file.is_none() && env.is_none() {
            return None;
        }
        Some(Recording {
            path: out.history_file.clone().or(env),
            required: out.record == Some(crate::cli::Record::Required),
            name: out.name.clone(),
            labels: out.labels.iter().cloned().collect(),
        })
    }
}

impl From<&OutputArgs> for Output {
    fn from(out: &OutputArgs) -> Self {
        Self {
            json: out.json.clone(),
            csv: out.csv.clone(),
            markdown: out.markdown.clone(),
            runs: out.runs,
            thresholds: out.threshold.clone(),
            record: Recording::of(out),
        }
    }
}

impl Output {
    pub fn json_to_stdout(&self) -> bool {
        self.json.as_deref() == Some(std::path::Path::new("-"))
    }
}

/// Slowest pace accepted: one message every 1,000 s. Below it the schedule's arithmetic (an
/// interval times a message count) would leave the range of a `Duration`, and no benchmark
/// means it.
pub const MIN_RATE: f64 = 0.001;

/// The pace and stop of an open-loop scenario from its pace flags: a schedule sets the run's
/// length itself (a step without MAX takes `--duration`'s), so the stop is `None` only when
/// there is no schedule and the caller decides it.
///
/// # Errors
/// [`Error::Usage`] naming `--rate` or `--rate-schedule`.
pub fn pace(p: &PaceArgs) -> Result<(Pace, Option<Stop>)> {
    let Some(spec) = p.rate_schedule.as_deref() else {
        check_rate(p.rate)?;
        return Ok((Pace::rate(p.rate), None));
    };
    let s = crate::stats::schedule::RateSchedule::parse(spec, p.duration)
        .map_err(|why| Error::flag("--rate-schedule", spec, why))?;
    if let Some(low) = s
        .stages()
        .iter()
        .map(|st| st.from.max(st.to))
        .find(|&r| r > 0.0 && r < MIN_RATE)
    {
        return Err(Error::flag(
            "--rate-schedule",
            spec,
            format!("a stage at {low} msgs/s; each stage must be 0 or at least {MIN_RATE} msgs/s"),
        ));
    }
    let len = s.length().expect("a parsed schedule has an end");
    Ok((Pace::Open(s), Some(Stop::For(len))))
}

/// The pace with `--arrivals` applied: with `poisson`, the schedule's Poisson arrivals drawn
/// under `seed`, tabled for a run that stops at `stop` (a count per sender, of `senders`).
///
/// # Errors
/// [`Error::Usage`] naming `--arrivals`: Poisson arrivals without a rate, or a run too long
/// to table.
pub fn arrivals(pace: Pace, p: &PaceArgs, seed: u64, stop: Stop, senders: u32) -> Result<Pace> {
    if p.arrivals == Arrivals::Fixed {
        return Ok(pace);
    }
    let Pace::Open(s) = pace else {
        return Err(Error::flag(
            "--arrivals",
            "poisson",
            "spaces paced sends, and this run sends as fast as it can; give --rate or \
             --rate-schedule",
        ));
    };
    let (msgs, run_for) = match stop {
        Stop::Count(n) => (Some(n.saturating_mul(u64::from(senders.max(1)))), None),
        Stop::For(d) => (None, Some(d)),
    };
    s.poisson(seed, msgs, run_for)
        .map(Pace::Open)
        .map_err(|why| Error::flag("--arrivals", "poisson", why))
}

/// `--arrivals` and `--seed` applied to the pace (`options::arrivals`): `--seed` draws only
/// Poisson arrivals here, so without them it is refused.
///
/// # Errors
/// [`Error::Usage`] naming `--seed` or `--arrivals`.
pub fn poisson(
    pace: Pace,
    p: &PaceArgs,
    seed: Option<u64>,
    stop: Stop,
    senders: u32,
) -> Result<Pace> {
    if let (Some(seed), Arrivals::Fixed) = (seed, p.arrivals) {
        return Err(Error::flag(
            "--seed",
            &seed.to_string(),
            "draws Poisson arrivals, and --arrivals is fixed; give --arrivals poisson",
        ));
    }
    arrivals(pace, p, seed.unwrap_or(1), stop, senders)
}

/// Refuses `--arrivals poisson` where `scenario` does not space its sends by it.
///
/// # Errors
/// [`Error::Usage`] naming `--arrivals`.
pub fn fixed_arrivals(p: &PaceArgs, scenario: &str) -> Result<()> {
    if p.arrivals == Arrivals::Fixed {
        return Ok(());
    }
    Err(Error::flag(
        "--arrivals",
        "poisson",
        format!(
            "applies to the paced sends of pub, pubsub, request and latency, not to {scenario}"
        ),
    ))
}

/// Rejects a positive `--rate` below [`MIN_RATE`] (0 means unlimited and is fine).
///
/// # Errors
/// [`Error::Usage`] naming `--rate`.
pub fn check_rate(rate: f64) -> Result<()> {
    if rate > 0.0 && rate < MIN_RATE {
        return Err(Error::flag(
            "--rate",
            &rate.to_string(),
            format!("must be 0 (unlimited) or at least {MIN_RATE} msgs/s"),
        ));
    }
    Ok(())
}

/// The servers `--server` (or NATS_URL) names, or the embedded one.
pub fn server_choice(conn: &ConnArgs) -> Result<ServerChoice> {
    server_choice_with(conn, None)
}

/// As [`server_choice`], with a list given by a flag of the scenario's own in its place
/// (`latency --server-a URLS`): the connection flags act on those servers as on `--server`'s,
/// credentials included, and what starts a local server is refused beside them.
pub fn server_choice_with(conn: &ConnArgs, given: Option<(&str, &str)>) -> Result<ServerChoice> {
    let sources = auth::sources(conn)?;
    let (list, flag) = match (given, conn.server.as_deref(), &sources.url) {
        (Some((list, flag)), _, _) => (Some(list), flag),
        (None, Some(s), _) if !s.trim().is_empty() => (Some(s), "--server"),
        (None, _, Some(ctx)) => (Some(ctx.as_str()), "--context"),
        _ => (None, "--server"),
    };
    if let (Some(_), Some(binary)) = (list, &conn.nats_server) {
        // The binary starts the local server, and a server list means none is started. The
        // variable may be set for every run in an environment, so only the flag is refused.
        let from_env = std::env::var_os("MSGBENCH_NATS_SERVER").is_some_and(|v| *binary == v);
        if !from_env {
            return Err(Error::flag(
                "--nats-server",
                &binary.display().to_string(),
                format!("names the server msgbench starts itself, and {flag} names servers to use instead"),
            ));
        }
    }
    let mut choice = server_choice_from(list, flag, conn.nats_server.clone())?;
    match (&mut choice, conn.cluster) {
        (ServerChoice::Embedded { nodes, .. }, Some(n)) => *nodes = n,
        (ServerChoice::Urls(_), Some(n)) => {
            return Err(Error::flag(
                "--cluster",
                &n.to_string(),
                "starts local servers; it cannot be combined with a server list",
            ))
        }
        _ => {}
    }
    match &mut choice {
        ServerChoice::Embedded {
            settings,
            partitions,
            lazy,
            ..
        } => {
            *settings = server_config::parse_all(&conn.server_config)?;
            *partitions = conn::partitions(conn);
            *lazy = conn::on_disk(conn);
        }
        ServerChoice::Urls(_) if !conn.server_config.is_empty() => {
            return Err(Error::Usage(format!(
                "--server-config sets up the servers msgbench starts; it cannot be combined \
                 with {}",
                if flag == "--server" {
                    "--server or NATS_URL"
                } else {
                    flag
                }
            )))
        }
        ServerChoice::Urls(_) => {}
    }
    // Credentials from flags, the environment or the context go to every server whose URL
    // carries none of its own, and to the servers msgbench starts.
    match &mut choice {
        ServerChoice::Urls(urls) => {
            for u in urls.iter_mut().filter(|u| u.auth == url::Auth::None) {
                u.auth = sources.auth.clone();
            }
        }
        ServerChoice::Embedded { auth, .. } => **auth = sources.auth,
    }
    Ok(choice)
}

/// A server list given with `flag`, or the embedded server (started from `binary`) when none.
pub fn server_choice_from(
    list: Option<&str>,
    flag: &str,
    binary: Option<PathBuf>,
) -> Result<ServerChoice> {
    match list.map(str::trim) {
        // An empty NATS_URL is treated as unset, as the NATS CLI does.
        None | Some("") => Ok(ServerChoice::Embedded {
            binary,
            nodes: 1,
            settings: Vec::new(),
            partitions: false,
            lazy: false,
            auth: Box::default(),
        }),
        Some(list) => url::parse_servers(list)
            .map(ServerChoice::Urls)
            .map_err(|why| Error::Usage(format!("invalid value for {flag}: {why}"))),
    }
}

/// Whether `subject` (no wildcards) matches `filter` by NATS rules: `*` is exactly one token,
/// `>` (last) is one or more tokens.
pub fn subject_matches(filter: &str, subject: &str) -> bool {
    let mut s = subject.split('.');
    for f in filter.split('.') {
        match (f, s.next()) {
            (">", Some(_)) => return true,
            ("*", Some(_)) => {}
            (f, Some(t)) if f == t => {}
            _ => return false,
        }
    }
    s.next().is_none()
}

/// Checks a subject: non-empty tokens separated by dots, no whitespace, and wildcards (`*` as a
/// whole token, `>` as the last token) only where `wildcards_ok`.
pub fn check_subject(subject: &str, wildcards_ok: bool) -> std::result::Result<(), String> {
    if subject.is_empty() {
        return Err("a subject cannot be empty".into());
    }
    if subject.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("a subject cannot contain spaces or control characters".into());
    }
    let tokens: Vec<&str> = subject.split('.').collect();
    for (i, t) in tokens.iter().enumerate() {
        if t.is_empty() {
            return Err("a subject cannot have an empty token (leading, trailing or '..')".into());
        }
        let wildcard = *t == "*" || (*t == ">" && i == tokens.len() - 1);
        if wildcard && !wildcards_ok {
            return Err("a publish subject cannot contain wildcards ('*' or '>')".into());
        }
        if !wildcard && (t.contains('*') || t.contains('>')) {
            return Err("'*' and '>' are only allowed as whole tokens ('>' only last)".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects() {
        for ok in ["a", "a.b.c", "foo_bar-1.2", "$JS.API"] {
            assert!(check_subject(ok, false).is_ok(), "{ok}");
        }
        for ok in ["a.*", "a.>", "*", ">", "a.*.c"] {
            assert!(check_subject(ok, true).is_ok(), "{ok}");
            assert!(check_subject(ok, false).is_err(), "{ok}");
        }
        for bad in [
            "", "a b", "a..b", ".a", "a.", "a.>.b", "a*", "a\tb", "a\r\n",
        ] {
            assert!(check_subject(bad, true).is_err(), "{bad}");
        }
    }
}
