//! The coordinator of one distributed run: it gives each agent its signed share of the plan,
//! starts them together, renews their lease, relays every publisher's final count to the
//! subscribers' agents, shows the progress, and merges and concludes the results. An agent that
//! goes silent for the run's `--timeout` is named, the others are told to stop, and what they
//! measured is still written, with an exit status of its own. Finding the agents and running
//! plans on them, once or many times, is the fleet's (fleet.rs); following the run turn by
//! turn is follow.rs's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::control::clock::{self, Offset};
use crate::control::msg::{self, Abort, Answer, Assignment, Heartbeat, Lease, Report, Segment};
use crate::control::signed::{self, Signed, Signer};
use crate::control::{bus, Bus};
use crate::error::{Error, Result};
use crate::options::ServerChoice;
use crate::plan::Validated;
use crate::result::{AgentEntry, AgentStatus, RunResult, ServerMeta};

mod follow;
mod shared;

pub use shared::{CommonStart, Heard};

/// How often agents report progress and the coordinator renews the lease.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);
const LEASE_EVERY: Duration = Duration::from_millis(250);
/// Clock exchanges per agent: the one with the least round trip is kept.
const CLOCK_EXCHANGES: usize = 8;
/// How long a sealed command stays valid (agents' clocks must agree this well).
const TTL_MS: u64 = 30_000;

/// A command sealed with the coordinator's key (or unsigned without one).
fn seal(signer: Option<&Signer>, kind: &str, id: &str, body: &impl serde::Serialize) -> Vec<u8> {
    let now = clock::now_ms();
    let s: Signed = match signer {
        Some(k) => k.seal(kind, id, body, now, TTL_MS),
        None => signed::seal_unsigned(kind, id, body, now, TTL_MS),
    };
    serde_json::to_vec(&s).expect("a sealed command serialises")
}

/// Seals and sends a command to one agent; a lost control connection shows in the reports.
fn send(
    bus: &Bus,
    signer: Option<&Signer>,
    agent: &str,
    kind: &str,
    id: &str,
    body: &impl serde::Serialize,
) {
    let _ = bus.publish(
        &msg::command_subject(agent),
        None,
        &seal(signer, kind, id, body),
    );
}

/// What the coordinator knows of agent `name` besides its reports.
fn standing(tracked: &[Tracked], name: &str) -> super::progress::Standing {
    let t = tracked.iter().find(|t| t.hb.name == name);
    super::progress::Standing {
        up: t.is_none_or(|t| t.missing.is_none()),
        finished: t.is_some_and(|t| t.done.is_some()),
        pubs: t.is_some_and(|t| t.seg.pubs > 0),
        subs: t.is_some_and(|t| t.seg.subs > 0),
    }
}

/// What the live page (`--web`) shows of each agent besides its progress.
fn agent_info(tracked: &[Tracked]) -> Vec<crate::output::web::AgentInfo> {
    tracked
        .iter()
        .map(|t| crate::output::web::AgentInfo {
            agent: t.hb.name.clone(),
            share: format!(
                "pubs {} of {}, subs {} of {}",
                t.seg.pubs, t.seg.pubs_total, t.seg.subs, t.seg.subs_total
            ),
            clock_offset_ns: t.clock.offset_ns,
            clock_uncertainty_ns: t.clock.uncertainty_ns,
            missing: t.missing.clone(),
        })
        .collect()
}

/// One run on the chosen agents.
pub(super) struct Coordinated<'a> {
    pub(super) bus: &'a Bus,
    pub(super) signer: Option<&'a Signer>,
    pub(super) agents: &'a [Heartbeat],
    pub(super) doc: &'a serde_json::Value,
    pub(super) validated: &'a Validated,
    /// The agents' heartbeats, as heard (shared with the other classes of a workload).
    pub(super) heard: &'a Heard,
    /// The server under test, as the agents were told it (no credentials).
    pub(super) target: String,
    /// The NATS servers the agents were given (`--server`), which the coordinator reads what
    /// it concludes from (a stream's state after the run); none for a service of the
    /// scenario's own (gRPC).
    pub(super) servers: Option<&'a str>,
    /// The `--server-monitor` endpoints, sampled by the coordinator from the common start.
    pub(super) monitors: &'a crate::session::servers::Servers,
    /// `--agent-silence`: how long an agent may go unheard before it is missing.
    pub(super) silent_limit: Duration,
    pub(super) live: bool,
    /// `--stream-stats`: the aggregate and each agent's row, once a second.
    pub(super) stream: Option<&'a std::sync::Mutex<crate::output::live::StreamStats>>,
    /// `--metrics-listen`: the merged figures and each agent's, once a second.
    pub(super) metrics: Option<&'a crate::output::metrics::Metrics>,
    /// `--web`: the merged figures and one row per agent, once a second.
    pub(super) web: Option<&'a crate::output::web::Web>,
    pub(super) scenario: &'static str,
    /// Which of `--runs` this is, when there are several.
    pub(super) run_k: Option<u32>,
    /// For a workload's class: its name (on its `--stream-stats` rows), the workload run it
    /// belongs to (which lets an agent hold it beside the other classes), and the classes'
    /// one start with its index there.
    pub(super) class: Option<&'a str>,
    pub(super) group: Option<&'a str>,
    pub(super) together: Option<(&'a CommonStart, usize)>,
}

/// What the coordinator knows of one agent during a run.
struct Tracked {
    hb: Heartbeat,
    seg: Segment,
    clock: Offset,
    heard: Instant,
    ready: bool,
    published: Option<Vec<u64>>,
    done: Option<(Option<serde_json::Value>, Option<String>)>,
    missing: Option<String>,
    last: Option<crate::control::msg::Progress>,
    /// What its last heartbeat said it was doing.
    doing: Option<String>,
}

impl Coordinated<'_> {
    fn seal(&self, kind: &str, id: &str, body: &impl serde::Serialize) -> Vec<u8> {
        seal(self.signer, kind, id, body)
    }

    fn send(&self, agent: &str, kind: &str, id: &str, body: &impl serde::Serialize) {
        send(self.bus, self.signer, agent, kind, id, body);
    }

    pub(super) fn once(&self, pubs: u32, subs: u32, stop: &AtomicBool) -> Result<RunResult> {
        let run = bus::unique();
        let started_at =
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        // Made before the run, so that the live figures carry the id the result will.
        let run_id = crate::result::new_run_id(self.scenario, &started_at);
        let mut feed = self.metrics.map(|m| {
            m.agents_feed(crate::output::metrics::RunLabels {
                run: run_id.clone(),
                scenario: self.scenario,
            })
        });
        let mut page = self
            .web
            .map(|w| w.agents_feed(self.scenario, &run_id, self.run_k));
        let mut tracked = self.track(pubs, subs)?;
        let reports = self.bus.subscribe(&msg::report_subject(&run))?;
        for (i, t) in tracked.iter().enumerate() {
            let a = Assignment {
                run: run.clone(),
                agent: t.hb.name.clone(),
                plan: self.doc.clone(),
                segment: t.seg,
                progress_ms: PROGRESS_EVERY.as_millis() as u64,
                group: self.group.map(str::to_string),
            };
            let id = format!("{run}-{}", t.hb.name);
            let answer = self
                .bus
                .request(
                    &msg::command_subject(&t.hb.name),
                    &self.seal("plan", &id, &a),
                    Duration::from_secs(5),
                )
                .and_then(|m| {
                    serde_json::from_slice::<Answer>(&m.payload)
                        .map_err(|e| Error::Agent(format!("an answer that cannot be read: {e}")))
                });
            let refused = match answer {
                Ok(a) if a.accepted => None,
                Ok(a) => Some(a.reason.unwrap_or_default()),
                Err(e) => Some(e.to_string()),
            };
            if let Some(why) = refused {
                for earlier in &tracked[..i] {
                    self.send(
                        &earlier.hb.name,
                        "abort",
                        &run,
                        &Abort {
                            run: run.clone(),
                            reason: "another agent refused the plan".into(),
                        },
                    );
                }
                // Which key signed it, unless the agent's reason already says.
                let key = match self.signer.map(Signer::public_key) {
                    Some(k) if why.contains(&k) => String::new(),
                    Some(k) => format!(" (signed by {k})"),
                    None => " (unsigned)".into(),
                };
                return Err(Error::Agent(format!(
                    "agent {} refused the plan{key}: {why}",
                    t.hb.name
                )));
            }
        }
        let done = AtomicBool::new(false);
        let (bus, signer, agents) = (self.bus, self.signer, self.agents);
        let sampling = std::thread::scope(|s| {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    for t in agents {
                        send(
                            bus,
                            signer,
                            &t.name,
                            "lease",
                            &run,
                            &Lease { run: run.clone() },
                        );
                    }
                    std::thread::sleep(LEASE_EVERY);
                }
            });
            let sampled = self.follow(
                &run,
                &reports,
                &mut tracked,
                feed.as_mut(),
                page.as_mut(),
                stop,
            );
            done.store(true, Ordering::Relaxed);
            sampled
        });
        let mut result = self.merge(&started_at, tracked)?;
        result.run_id = run_id;
        // A schedule's stages, added across agents (they all followed it from the start).
        let common = self.validated.common();
        if let Some(sc) = &common.schedule {
            let agents = result.agent_entries();
            result.schedule = crate::result::merge::schedule(agents, sc, common.fanout)
                .map_err(|e| Error::Agent(e.to_string()))?;
        }
        // What only the whole run can say (a stream reconciled with every agent's
        // acknowledgements), against the servers the agents loaded.
        let target = match self.servers {
            Some(s) => {
                let urls = crate::wire::url::parse_servers(s)
                    .map_err(|e| Error::Usage(format!("--server: {e}")))?;
                Some(crate::server::resolve(&ServerChoice::Urls(urls), None)?)
            }
            None => None,
        };
        self.validated.conclude(&mut result, target.as_ref())?;
        if let Some(s) = sampling {
            s.finish(&mut result);
        }
        Ok(result)
    }

    /// Each agent's share of `pubs` publishers and `subs` subscribers, and its clock measured:
    /// what the coordinator knows of it before the run.
    fn track(&self, pubs: u32, subs: u32) -> Result<Vec<Tracked>> {
        let n = self.agents.len() as u32;
        let segs = super::split::segments(pubs, subs, n, crate::wire::stamp::new_run_tag());
        if let Some(idle) = segs.iter().position(|s| s.pubs + s.subs == 0) {
            return Err(Error::Usage(format!(
                "--agents {n}: {pubs} publisher(s) and {subs} subscriber(s) leave agent {} \
                 nothing to run",
                self.agents[idle].name
            )));
        }
        let mut tracked = Vec::new();
        for (hb, seg) in self.agents.iter().zip(&segs) {
            let clock = clock::estimate(
                self.bus,
                &msg::clock_subject(&hb.name),
                CLOCK_EXCHANGES,
                Duration::from_secs(2),
            )
            .map_err(|e| Error::Agent(format!("agent {}: {e}", hb.name)))?;
            tracked.push(Tracked {
                hb: hb.clone(),
                seg: *seg,
                clock,
                heard: Instant::now(),
                ready: false,
                published: None,
                done: None,
                missing: None,
                last: None,
                doing: None,
            });
        }
        Ok(tracked)
    }

    /// The run's length when it is given as a duration.
    fn duration(&self) -> Option<Duration> {
        self.validated.common().duration
    }

    fn take(&self, r: Report, tracked: &mut [Tracked], board: &mut super::progress::Board) {
        let name = match &r {
            Report::Ready { agent }
            | Report::Published { agent, .. }
            | Report::Progress { agent, .. }
            | Report::Done { agent, .. } => agent.clone(),
        };
        let Some(t) = tracked.iter_mut().find(|t| t.hb.name == name) else {
            return;
        };
        if t.missing.is_some() {
            return;
        }
        t.heard = Instant::now();
        match r {
            Report::Ready { .. } => t.ready = true,
            Report::Published { sent, .. } => t.published = Some(sent),
            Report::Progress { progress, .. } => {
                board.record(&name, progress.clone());
                t.last = Some(progress);
            }
            Report::Done { result, error, .. } => {
                if let Some(e) = &error {
                    eprintln!("error: agent {name}: {e}");
                }
                t.done = Some((result, error));
            }
        }
    }

    fn merge(&self, started_at: &str, tracked: Vec<Tracked>) -> Result<RunResult> {
        let cross = tracked
            .iter()
            .any(|t| t.seg.subs > 0 && t.seg.pubs < t.seg.pubs_total);
        let uncertainty = cross.then(|| {
            let mut u: Vec<u64> = tracked.iter().map(|t| t.clock.uncertainty_ns).collect();
            u.sort_unstable();
            u.iter().rev().take(2).sum()
        });
        let entries: Vec<AgentEntry> = tracked
            .into_iter()
            .map(|t| {
                let (result, error) = t.done.unwrap_or((None, None));
                let (status, reason) = match (&result, t.missing, error) {
                    (Some(_), _, _) => (AgentStatus::Complete, None),
                    (None, Some(why), _) => (AgentStatus::Missing, Some(why)),
                    (None, None, e) => (AgentStatus::Failed, e),
                };
                AgentEntry {
                    name: t.hb.name,
                    labels: t.hb.labels,
                    status,
                    reason,
                    clock_offset_ns: Some(t.clock.offset_ns),
                    clock_uncertainty_ns: Some(t.clock.uncertainty_ns),
                    pubs: t.seg.pubs,
                    subs: t.seg.subs,
                    last_progress: t.last.map(|p| serde_json::to_value(p).expect("json")),
                    result,
                }
            })
            .collect();
        let (scenario, params) = (self.validated.name(), self.validated.params());
        // Stands in for the server's own description only when no agent completed.
        let server = ServerMeta {
            url: self.target.clone(),
            name: String::new(),
            version: String::new(),
            embedded: false,
            max_payload: 0,
            auth: "unknown",
            config: None,
        };
        crate::result::merge::merge(
            scenario,
            started_at.to_string(),
            params,
            server,
            entries,
            uncertainty,
        )
        .map_err(|e| Error::Agent(e.to_string()))
    }
}
