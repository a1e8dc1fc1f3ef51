//! The fleet of a run on agents: every check before anything connects ([`preflight`]), the
//! control connection, the agents found on it ([`Fleet::find`]), and a plan run on them
//! through the coordinator ([`Fleet::run_on`]): once per `--runs` of a session, once per
//! probe of `capacity --agents`, or as one class of a workload (mix.rs).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::coordinator::{CommonStart, Coordinated, Heard};
use crate::cli::ConnArgs;
use crate::control::msg::{self, Heartbeat};
use crate::control::signed::Signer;
use crate::control::{bus, Bus};
use crate::error::{Error, Result};
use crate::options::ServerChoice;
use crate::plan::{Plan, Validated};
use crate::result::RunResult;

/// How long agents are listened for before the run picks from those heard: the whole time,
/// also when the named agents were heard at once, so two agents sharing a name are seen.
const DISCOVER_FOR: Duration = Duration::from_millis(3 * msg::HEARTBEAT_EVERY_MS);
/// `--agent-silence` by default: an agent unheard this long is missing. Twenty heartbeats: an
/// agent whose own load saturates its host (as a load generator's does) still gets one out in
/// that time, where two seconds were missed on a busy 2-core machine (issue 42).
const AGENT_SILENCE: Duration = Duration::from_secs(10);
/// The least `--agent-silence`: two heartbeats.
const AGENT_SILENCE_MIN: Duration = Duration::from_millis(2 * msg::HEARTBEAT_EVERY_MS);
/// Opens a control connection: to `control`, else the `--server` of `conn`, with `conn`'s
/// credentials and TLS.
///
/// # Errors
/// No URL, bad connection flags, an unreachable server.
pub fn connect_control(
    conn: &ConnArgs,
    control: Option<&str>,
    name: &str,
    reconnect: bool,
) -> Result<Bus> {
    let url = control
        .or(conn.server.as_deref())
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            Error::Usage(
                "--control: give the NATS server agents and coordinator talk through (or \
                 --server)"
                    .into(),
            )
        })?;
    let mut c = conn.clone();
    c.server = Some(url.to_string());
    c.fault = None;
    c.nemesis = None;
    c.link = None;
    c.cluster = None;
    let ServerChoice::Urls(urls) = crate::options::server_choice(&c)
        .map_err(|e| Error::Usage(e.to_string().replace("--server", "--control")))?
    else {
        unreachable!("a URL was given");
    };
    let mut dial = crate::options::conn::ConnOptions::new(&c)?.dial;
    dial.reconnect = reconnect;
    Bus::connect(&urls, name, &dial, Duration::from_secs(10))
}

/// Which agents a run wants.
struct Wanted {
    count: Option<usize>,
    names: Vec<String>,
    labels: BTreeMap<String, String>,
}

impl Wanted {
    fn parse(agents: Option<&str>, labels: &[String]) -> Result<Self> {
        let mut w = Wanted {
            count: None,
            names: Vec::new(),
            labels: BTreeMap::new(),
        };
        if let Some(a) = agents.map(str::trim) {
            match a.parse::<usize>() {
                Ok(0) => return Err(Error::flag("--agents", a, "must be at least 1")),
                Ok(n) => w.count = Some(n),
                Err(_) => {
                    for name in a.split(',').map(str::trim) {
                        msg::check_name(name).map_err(|why| Error::flag("--agents", a, why))?;
                        w.names.push(name.to_string());
                    }
                }
            }
        }
        for l in labels {
            let (k, v) =
                super::agent::parse_label(l).map_err(|why| Error::flag("--agent-label", l, why))?;
            w.labels.insert(k, v);
        }
        Ok(w)
    }

    fn matches(&self, hb: &Heartbeat) -> bool {
        self.labels.iter().all(|(k, v)| hb.labels.get(k) == Some(v))
            && (self.names.is_empty() || self.names.contains(&hb.name))
    }

    fn describe(&self) -> String {
        match (self.count, self.names.is_empty()) {
            (Some(n), _) => format!("--agents {n}"),
            (None, false) => format!("--agents {}", self.names.join(",")),
            (None, true) => "--agent-label".into(),
        }
    }
}

/// What a run on agents knows before it looks for any: the server it loads, which agents it
/// wants, the checked plan and how it splits.
pub struct Prepared {
    pub(super) target: String,
    wanted: Wanted,
    pub validated: Validated,
}

/// Every check a run on agents makes before it connects to anything.
///
/// # Errors
/// The first flag that cannot work, named in one line.
pub fn preflight(plan: &Plan) -> Result<Prepared> {
    let out = plan.out();
    let nats = match plan.conn() {
        Some(conn) => Some(nats_target(conn, out.control.as_deref())?),
        // A scenario with a service of its own (gRPC): agents still meet over NATS.
        None if out.control.is_none() => {
            return Err(Error::Usage(format!(
                "--agents: `{}` needs --control URL, the NATS server agents and the \
                 coordinator meet on (its load goes to its own --server)",
                plan.name()
            )))
        }
        None => None,
    };
    let wanted = Wanted::parse(out.agents.as_deref(), &out.agent_labels)?;
    if let Some(d) = out.agent_silence.filter(|d| *d < AGENT_SILENCE_MIN) {
        return Err(Error::flag(
            "--agent-silence",
            &humantime::format_duration(d).to_string(),
            format!(
                "must be at least {} (agents send a heartbeat every {} ms)",
                humantime::format_duration(AGENT_SILENCE_MIN),
                msg::HEARTBEAT_EVERY_MS
            ),
        ));
    }
    let validated = plan.validate()?;
    let target = match (&validated.common().load, nats) {
        (crate::scenario::Load::Service(Some(url)), _) => url.clone(),
        (crate::scenario::Load::Service(None), _) => {
            return Err(Error::Usage(format!(
                "--agents needs --server URL: agents cannot share a service `{}` starts itself",
                plan.name()
            )))
        }
        (crate::scenario::Load::Nats { .. }, Some(url)) => url,
        (crate::scenario::Load::Nats { .. }, None) => {
            return Err(Error::Usage(format!(
                "--agents: `{}` loads NATS but has no connection flags",
                plan.name()
            )))
        }
    };
    // How it splits, or why it cannot run on agents.
    validated.split()?;
    Ok(Prepared {
        target,
        wanted,
        validated,
    })
}

/// The NATS server a run on agents loads: `--server`, else `--control`; never one msgbench
/// would start, nor a fault or link on one.
fn nats_target(conn: &ConnArgs, control: Option<&str>) -> Result<String> {
    for (flag, given) in [
        ("--fault", conn.fault.is_some()),
        ("--nemesis", conn.nemesis.is_some()),
        ("--link", conn.link.is_some()),
        ("--cluster", conn.cluster.is_some()),
    ] {
        if given {
            return Err(Error::Usage(format!(
                "{flag} cannot be combined with --agents: it acts on a server or link msgbench \
                 starts itself, which agents on other hosts cannot share"
            )));
        }
    }
    conn.server
        .clone()
        .or_else(|| control.map(str::to_string))
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| {
            Error::Usage(
                "--agents needs --server URL (or --control URL): agents cannot share a server \
                 msgbench starts itself"
                    .into(),
            )
        })
}

/// The agents a coordinator found, and what it talks to them with: one distributed run after
/// another goes through it (`--runs`, and each probe of `capacity --agents`), or a workload's
/// classes all at once.
pub struct Fleet {
    bus: Bus,
    signer: Option<Signer>,
    pub(super) agents: Vec<Heartbeat>,
    heard: Heard,
    /// Where the plan it was found for sends its load.
    aim: Aim,
    /// The `--server-monitor` endpoints, checked.
    monitors: crate::session::servers::Servers,
    /// `--agent-silence`, or its default.
    silent_limit: Duration,
}

/// Where a plan's load goes, as its agents are told it.
#[derive(Debug, Clone)]
pub struct Aim {
    /// The service under test (no credentials).
    target: String,
    /// Whether that is the NATS server (else a service of the scenario's own).
    nats: bool,
}

impl Aim {
    /// Where `plan`'s load goes, as [`preflight`] found it.
    pub(super) fn of(plan: &Plan, prepared: &Prepared) -> Self {
        Aim {
            target: prepared.target.clone(),
            nats: plan.conn().is_some(),
        }
    }
}

/// How a run on a fleet is shown while it goes, and, for a workload's class, the workload it
/// is one class of.
#[derive(Default)]
pub(super) struct Showing<'a> {
    pub(super) live: bool,
    pub(super) stream: Option<&'a std::sync::Mutex<crate::output::live::StreamStats>>,
    pub(super) metrics: Option<&'a crate::output::metrics::Metrics>,
    pub(super) web: Option<&'a crate::output::web::Web>,
    pub(super) run_k: Option<u32>,
    pub(super) class: Option<InMix<'a>>,
}

/// A workload's class run on a fleet: its name, the workload's run, and the classes' start.
pub(super) struct InMix<'a> {
    pub(super) name: &'a str,
    pub(super) group: &'a str,
    pub(super) common: &'a CommonStart,
    pub(super) index: usize,
}

impl Fleet {
    /// Checks `plan`'s flags for a run on agents, connects to the control server and finds the
    /// agents it wants.
    ///
    /// # Errors
    /// Bad flags, no control server, too few agents, agents of another version.
    pub fn find(plan: &Plan) -> Result<Self> {
        let prepared = preflight(plan)?;
        Self::gather(plan, Aim::of(plan, &prepared), &prepared)
    }

    /// Connects to the control server of `plan` (whose connection flags and agent flags it
    /// reads) and finds the agents `prepared` wants; its load goes to `aim`.
    pub(super) fn gather(plan: &Plan, aim: Aim, prepared: &Prepared) -> Result<Self> {
        let out = plan.out();
        let plain;
        let conn = match plan.conn() {
            Some(c) => c,
            None => {
                plain = ConnArgs::plain();
                &plain
            }
        };
        // The servers are sampled from here, the coordinator's machine: the endpoints must
        // answer it.
        let monitors = crate::session::servers::Servers::check(plan)?;
        let signer = out.sign.as_deref().map(Signer::from_file).transpose()?;
        let bus = connect_control(conn, out.control.as_deref(), "msgbench-coordinator", false)?;
        let (agents, heartbeats) = discover(&bus, &prepared.wanted)?;
        if signer.is_none() {
            // An agent started with --trust says so in its heartbeat: an unsigned plan is a
            // refusal here, before any load (and before a capacity search's first probe),
            // not an agent's answer to the first plan sent.
            if let Some(hb) = agents.iter().find(|hb| hb.signed_only) {
                return Err(Error::Agent(format!(
                    "agent {} runs only signed plans (it was started with --trust), and this \
                     plan is not signed: give --sign FILE, the seed of a key it trusts",
                    hb.name
                )));
            }
            eprintln!(
                "warning: no --sign: plans go unsigned, and only agents run with \
                 --insecure-control accept them"
            );
        }
        Ok(Self {
            bus,
            signer,
            agents,
            heard: Heard::new(heartbeats),
            aim,
            monitors,
            silent_limit: out.agent_silence.unwrap_or(AGENT_SILENCE),
        })
    }

    /// Runs `plan` once on `agents`, its load aimed at `aim`: each agent its share, the results
    /// merged and concluded, shown live through `showing`.
    pub(super) fn run_on(
        &self,
        plan: &Plan,
        validated: &Validated,
        aim: &Aim,
        agents: &[Heartbeat],
        showing: Showing<'_>,
        stop: &AtomicBool,
    ) -> Result<RunResult> {
        let crate::scenario::Split { pubs, subs } = validated.split()?;
        let mut doc = plan.to_json()?;
        // The NATS server the agents load, when they load one (they are told it, and the
        // coordinator concludes against it).
        let nats = aim.nats.then_some(aim.target.as_str());
        if nats.is_some() {
            doc["conn"]["server"] = aim.target.clone().into();
        }
        let c = Coordinated {
            bus: &self.bus,
            signer: self.signer.as_ref(),
            agents,
            doc: &doc,
            validated,
            servers: nats,
            target: match nats {
                Some(t) => crate::wire::url::parse_servers(t)
                    .ok()
                    .and_then(|u| u.first().map(ToString::to_string))
                    .unwrap_or_default(),
                None => aim.target.clone(),
            },
            heard: &self.heard,
            monitors: &self.monitors,
            silent_limit: self.silent_limit,
            live: showing.live,
            stream: showing.stream,
            metrics: showing.metrics,
            web: showing.web,
            scenario: plan.name(),
            run_k: showing.run_k,
            class: showing.class.as_ref().map(|c| c.name),
            group: showing.class.as_ref().map(|c| c.group),
            together: showing.class.as_ref().map(|c| (c.common, c.index)),
        };
        c.once(pubs, subs, stop)
    }
}

impl crate::session::Runner for Fleet {
    /// Runs `plan` once on every agent of the fleet, shown live (the merged figures and a row
    /// per agent) through the session's sinks.
    fn once(
        &self,
        plan: &Plan,
        validated: &Validated,
        sinks: &crate::session::Sinks,
        showing: crate::session::Showing,
        stop: &AtomicBool,
    ) -> Result<RunResult> {
        // A search's probe shows on the page only; a session's run everywhere it is asked to.
        let run = matches!(showing, crate::session::Showing::Run { .. });
        let shown = Showing {
            live: run && sinks.line,
            stream: sinks.stream.as_deref().filter(|_| run),
            metrics: sinks.metrics.as_ref().filter(|_| run),
            web: sinks.web.as_ref(),
            run_k: showing.of_several().map(|(k, _)| k),
            class: None,
        };
        self.run_on(plan, validated, &self.aim, &self.agents, shown, stop)
    }
}

/// Listens to heartbeats and picks the agents the run wants.
fn discover(
    bus: &Bus,
    wanted: &Wanted,
) -> Result<(
    Vec<Heartbeat>,
    std::sync::mpsc::Receiver<crate::control::Inbound>,
)> {
    let rx = bus.subscribe(&format!("{}.*", msg::HEARTBEATS))?;
    let mut heard: BTreeMap<String, Heartbeat> = BTreeMap::new();
    let deadline = Instant::now() + DISCOVER_FOR;
    while let Some(m) = bus::recv_until(&rx, deadline) {
        if let Ok(hb) = serde_json::from_slice::<Heartbeat>(&m.payload) {
            // Commands go to a name: two agents sharing one would both run the same share.
            if let Some(other) = heard.get(&hb.name) {
                if other.instance != hb.instance {
                    return Err(Error::Agent(format!(
                        "two agents on {} are named {}: give each a name of its own (--name)",
                        bus.url, hb.name
                    )));
                }
            }
            heard.insert(hb.name.clone(), hb);
        }
    }
    let mine = env!("CARGO_PKG_VERSION");
    let mut fit = Vec::new();
    for hb in heard.values().filter(|hb| wanted.matches(hb)) {
        if hb.version != mine || hb.plan_schema != crate::plan::SCHEMA {
            return Err(Error::Agent(format!(
                "agent {} runs msgbench {} (plans {}), this coordinator {mine} ({}): run one \
                 version everywhere",
                hb.name,
                hb.version,
                hb.plan_schema,
                crate::plan::SCHEMA
            )));
        }
        if hb.busy.is_none() {
            fit.push(hb.clone());
        }
    }
    let need = wanted.count.unwrap_or(wanted.names.len().max(1));
    let missing: Vec<&String> = wanted
        .names
        .iter()
        .filter(|n| !fit.iter().any(|hb| &hb.name == *n))
        .collect();
    if fit.len() < need || !missing.is_empty() {
        let found: Vec<&str> = fit.iter().map(|h| h.name.as_str()).collect();
        return Err(Error::Agent(format!(
            "{}: {} idle agent(s) answered on {} within {} ({}){}",
            wanted.describe(),
            fit.len(),
            bus.url,
            humantime::format_duration(DISCOVER_FOR),
            if found.is_empty() {
                "none".into()
            } else {
                found.join(", ")
            },
            if missing.is_empty() {
                format!(", {need} wanted")
            } else {
                format!(
                    "; not found: {}",
                    missing
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        )));
    }
    fit.truncate(wanted.count.unwrap_or(fit.len()));
    // The heartbeats go on being read during the run: an agent is alive while they come.
    Ok((fit, rx))
}
