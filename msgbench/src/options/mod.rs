//! Validated run options: the CLI's values checked against each other and turned into the plain
//! values the scenario runs on. Everything a user can get wrong is rejected here, before any
//! connection is made, with a message that names the flag.

pub mod auth;
pub mod capture;
pub mod conn;
pub mod conns;
pub mod dest;
pub mod grpc;
pub mod js;
pub mod latency;
pub mod link;
pub mod request;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::cli::{ConnArgs, LoadArgs, OutputArgs, StallArgs};
use crate::engine::pace::{Pace, Stop};
use crate::error::{Error, Result};
use crate::wire::url::{self, ServerUrl};

/// Which scenario runs. The scenario code is one; this only names it and fixes its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScenarioKind {
    Pub,
    Sub,
    Pubsub,
}

impl ScenarioKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ScenarioKind::Pub => "pub",
            ScenarioKind::Sub => "sub",
            ScenarioKind::Pubsub => "pubsub",
        }
    }
}

/// `sub` only listens: the flags that shape what is published have nothing to act on there.
fn refuse_publishing_flags(load: &LoadArgs) -> Result<()> {
    let typed = [
        ("--rate", load.rate != 0.0),
        ("--rate-schedule", load.rate_schedule.is_some()),
        ("--payload", load.payload.is_some()),
        ("--header", !load.headers.is_empty()),
        // 128 is the default; any other size was typed.
        ("--size", load.size != 128),
    ];
    match typed.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(Error::Usage(format!(
            "{flag} shapes what is published, and `sub` publishes nothing; give it to the \
             publisher (`msgbench pub`, or `pubsub`)"
        ))),
        None => Ok(()),
    }
}

/// Which server to use.
#[derive(Debug, Clone)]
pub enum ServerChoice {
    /// Servers the user named.
    Urls(Vec<ServerUrl>),
    /// Start a local nats-server (or `nodes` of them, routed into one cluster); `binary`
    /// overrides the PATH lookup.
    Embedded { binary: Option<PathBuf>, nodes: u32 },
}

/// Where output goes.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// `-` means stdout.
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub progress: bool,
    /// Print the live line even off a terminal.
    pub live: bool,
    pub stream_stats: Option<PathBuf>,
    /// `--metrics-listen`: where to serve the live figures (`HOST:PORT`).
    pub metrics_listen: Option<String>,
    /// `--metrics-linger`: how long the final figures wait for a scrape after the run.
    pub metrics_linger: Duration,
    /// How many times to run the scenario.
    pub runs: u32,
    /// `--threshold`s to judge the result by.
    pub thresholds: Vec<crate::gate::Threshold>,
}

impl From<&OutputArgs> for Output {
    fn from(out: &OutputArgs) -> Self {
        Self {
            json: out.json.clone(),
            csv: out.csv.clone(),
            markdown: out.markdown.clone(),
            progress: !out.no_progress,
            live: out.live,
            stream_stats: out.stream_stats.clone(),
            metrics_listen: out.metrics_listen.clone(),
            metrics_linger: out.metrics_linger,
            runs: out.runs,
            thresholds: out.threshold.clone(),
        }
    }
}

impl Output {
    pub fn json_to_stdout(&self) -> bool {
        self.json.as_deref() == Some(std::path::Path::new("-"))
    }

    /// `--metrics-listen HOST:0`: the system picks the port, so the user must be told it.
    pub fn metrics_listen_port_chosen(&self) -> bool {
        self.metrics_listen
            .as_deref()
            .is_some_and(|a| a.rsplit_once(':').is_some_and(|(_, p)| p == "0"))
    }
}

/// Everything one run needs, validated.
#[derive(Debug, Clone)]
pub struct Options {
    pub scenario: ScenarioKind,
    pub server: ServerChoice,
    pub conn: conn::ConnOptions,
    pub pubs: u32,
    pub subs: u32,
    pub stop: Stop,
    pub pace: Pace,
    /// Payload bytes per message (the stamp included).
    pub size: usize,
    /// A fixed payload from `--payload`; when set, messages carry no stamp.
    pub payload: Option<Vec<u8>>,
    pub subject: String,
    /// `--multisubject`: the number of distinct subjects.
    pub multisubject: Option<u64>,
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    pub start_timeout: Duration,
    pub allow_loss: bool,
    pub sub_stall: Option<(u64, Duration)>,
    pub output: Output,
}

impl Options {
    /// Builds options for a scenario from its parsed arguments.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value is wrong or conflicts with another.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        scenario: ScenarioKind,
        pubs: u32,
        subs: u32,
        load: &LoadArgs,
        conn: &ConnArgs,
        out: &OutputArgs,
        stall: Option<&StallArgs>,
        start_timeout: Option<Duration>,
    ) -> Result<Self> {
        if scenario == ScenarioKind::Sub {
            refuse_publishing_flags(load)?;
        }
        let server = server_choice(conn)?;
        let (pace, schedule_stop) = pace(load.rate, load.rate_schedule.as_deref(), load.duration)?;
        let stop = match (schedule_stop, load.duration) {
            (Some(s), _) => s,
            (None, Some(d)) => Stop::For(d),
            (None, None) if load.msgs == 0 => {
                return Err(Error::flag("--msgs", "0", "must be at least 1"));
            }
            (None, None) => Stop::Count(load.msgs),
        };
        let payload = match &load.payload {
            Some(path) => Some(std::fs::read(path).map_err(|e| {
                Error::Usage(format!("cannot read --payload '{}': {e}", path.display()))
            })?),
            None => None,
        };
        let size = payload.as_ref().map_or(load.size, Vec::len);
        // A sub only listens, so wildcards are fine there; anyone who publishes needs a literal.
        if scenario == ScenarioKind::Sub {
            check_subject(&load.subject, true)
        } else {
            check_subject(&load.subject, false)
        }
        .map_err(|why| Error::flag("--subject", &load.subject, why))?;
        if load.multisubject && load.multisubject_max == 0 {
            return Err(Error::flag("--multisubject-max", "0", "must be at least 1"));
        }
        let conn = conn::ConnOptions::new(conn)?;
        if conn.fault.is_some() {
            match (scenario, &pace) {
                (ScenarioKind::Sub, _) => conn.no_fault("sub")?,
                (ScenarioKind::Pubsub, Pace::Unlimited) => {
                    return Err(Error::Usage(
                        "--fault in pubsub needs --rate: recovery is measured against a constant \
                         target rate"
                            .into(),
                    ))
                }
                _ => {}
            }
        }
        let headers = load
            .headers
            .iter()
            .map(|h| parse_header(h).map_err(|why| Error::flag("-H", h, why)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Options {
            scenario,
            server,
            conn,
            pubs,
            subs,
            stop,
            pace,
            size,
            payload,
            subject: load.subject.clone(),
            multisubject: load.multisubject.then_some(load.multisubject_max),
            headers,
            timeout: load.timeout,
            start_timeout: start_timeout.unwrap_or(load.timeout),
            allow_loss: load.allow_loss,
            sub_stall: stall.and_then(|s| s.sub_stall),
            output: out.into(),
        })
    }

    /// The subject subscribers listen on.
    pub fn sub_subject(&self) -> String {
        match self.multisubject {
            Some(_) => format!("{}.*", self.subject),
            None => self.subject.clone(),
        }
    }

    /// The parameters as they go into a result, without secrets.
    pub fn params(&self) -> serde_json::Value {
        let (msgs, duration) = self.stop.as_params();
        let rate = self.pace.target_rate();
        serde_json::json!({
            "connection": self.conn.params(),
            "pubs": self.pubs,
            "subs": self.subs,
            "msgs": msgs,
            "duration_secs": duration,
            "size": self.size,
            "subject": self.subject,
            "multisubject": self.multisubject,
            "rate": rate,
            "rate_schedule": self.pace.schedule().filter(|s| !s.is_fixed()).map(ToString::to_string),
            "payload_file": self.payload.is_some(),
            "headers": self.headers.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            "timeout_secs": self.timeout.as_secs_f64(),
            "allow_loss": self.allow_loss,
            "sub_stall": self.sub_stall.map(|(n, d)| serde_json::json!({"after_msgs": n, "for_secs": d.as_secs_f64()})),
        })
    }
}

/// Slowest pace accepted: one message every 1,000 s. Below it the schedule's arithmetic (an
/// interval times a message count) would leave the range of a `Duration`, and no benchmark
/// means it.
pub const MIN_RATE: f64 = 0.001;

/// Rejects a positive `--rate` below [`MIN_RATE`] (0 means unlimited and is fine).
///
/// # Errors
/// [`Error::Usage`] naming `--rate`.
/// The pace and stop of an open-loop scenario from `--rate`, `--rate-schedule` and its stop:
/// a schedule sets the run's length itself (a step without MAX takes `--duration`'s), so the
/// stop is `None` only when there is no schedule and the caller decides it.
pub fn pace(
    rate: f64,
    schedule: Option<&str>,
    duration: Option<Duration>,
) -> Result<(Pace, Option<Stop>)> {
    let Some(spec) = schedule else {
        check_rate(rate)?;
        return Ok((Pace::rate(rate), None));
    };
    let s = crate::stats::schedule::RateSchedule::parse(spec, duration)
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
    let sources = auth::sources(conn)?;
    let (list, flag) = match (conn.server.as_deref(), &sources.url) {
        (Some(s), _) if !s.trim().is_empty() => (Some(s), "--server"),
        (_, Some(ctx)) => (Some(ctx.as_str()), "--context"),
        _ => (None, "--server"),
    };
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
    // Credentials from flags, the environment or the context go to every server whose URL
    // carries none of its own.
    if let ServerChoice::Urls(urls) = &mut choice {
        for u in urls.iter_mut().filter(|u| u.auth == url::Auth::None) {
            u.auth = sources.auth.clone();
        }
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
        None | Some("") => Ok(ServerChoice::Embedded { binary, nodes: 1 }),
        Some(list) => url::parse_servers(list)
            .map(ServerChoice::Urls)
            .map_err(|why| Error::Usage(format!("invalid value for {flag}: {why}"))),
    }
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

fn parse_header(h: &str) -> std::result::Result<(String, String), String> {
    let (k, v) = h
        .split_once(':')
        .ok_or_else(|| "expected Key:Value".to_string())?;
    let (k, v) = (k.trim(), v.trim());
    // Header names are HTTP-style tokens; a CR or LF anywhere would break the header block.
    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        return Err("the header name must be non-empty printable ASCII without ':'".into());
    }
    if v.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err("the header value cannot contain CR or LF".into());
    }
    Ok((k.to_string(), v.to_string()))
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

    #[test]
    fn headers() {
        assert_eq!(
            parse_header("X-Id: 42").unwrap(),
            ("X-Id".to_string(), "42".to_string())
        );
        assert_eq!(parse_header("K:a:b").unwrap().1, "a:b");
        for bad in ["novalue", ":v", "a b:c", "k:v\r\nx"] {
            assert!(parse_header(bad).is_err(), "{bad}");
        }
    }
}
