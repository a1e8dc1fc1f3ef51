//! The server's side of a session's runs: which servers are sampled (those msgbench started,
//! and the `--server-monitor` endpoints the user named, checked once before any load), the
//! sampler started beside each run's live reader, and what it found put in the result.
//!
//! Plugged in here, once, rather than in each scenario: every NATS scenario gets the same
//! samples on its timeline, and a scenario knows nothing of them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::monitor::{self, Source, Summary, Watch};
use crate::error::{Error, Result};
use crate::options::monitor::Monitors;
use crate::plan::Plan;
use crate::result::{RunResult, Section};
use crate::server::Target;
use crate::stats::server::{Around, ServerSide, Slot};
use crate::stats::timeline::{Meter, Tick};

/// How long the check of a `--server-monitor` endpoint at the start may take.
const CHECK_LIMIT: Duration = Duration::from_secs(5);

/// The user's endpoints of a session, checked.
#[derive(Debug, Default)]
pub struct Servers {
    monitors: Monitors,
}

impl Servers {
    /// Parses and checks `--server-monitor`: each endpoint must answer `/varz` as a NATS server
    /// does. One that does not answer at all is left to the sampler (one warning, null
    /// figures): a server may come up later, and a monitor is never a reason to fail a run.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the endpoint (without its credentials) that is not a URL or
    /// answered as something other than a NATS monitoring endpoint.
    pub fn check(plan: &Plan) -> Result<Self> {
        plan.conn()
            .map_or_else(|| Ok(Self::default()), Self::check_conn)
    }

    /// As [`Servers::check`], for the connection flags of a command that is not one plan (the
    /// default suite).
    ///
    /// # Errors
    /// As [`Servers::check`].
    pub fn check_conn(conn: &crate::cli::ConnArgs) -> Result<Self> {
        let monitors = Monitors::from_conn(conn)?;
        for e in &monitors.endpoints {
            if let Err(why) = monitor::check(e, monitors.tls.clone(), CHECK_LIMIT) {
                return Err(Error::flag("--server-monitor", &e.shown(), why));
            }
            // One that did not answer (`Checked::Unreachable`): the sampler says so once.
        }
        Ok(Self { monitors })
    }

    /// Starts sampling the servers of `targets` (those msgbench started: a run's main and
    /// second) and the user's endpoints, leaving each round in `meter` for its ticks; `None`
    /// when there is none.
    pub fn start(&self, targets: [Option<&Target>; 2], meter: &Meter) -> Option<Watch> {
        let started = targets
            .into_iter()
            .flatten()
            .flat_map(|t| t.embedded.iter().chain(t.peers.iter()))
            .enumerate()
            .map(|(i, s)| Source::Started {
                name: crate::server::node_name(i),
                port: s.monitor_port_fn(),
            });
        let sources: Vec<Source> = started.chain(self.endpoints()).collect();
        if sources.is_empty() {
            return None;
        }
        Some(Watch::start(
            sources,
            self.monitors.tls.clone(),
            meter.started(),
            meter.watch_servers(),
        ))
    }

    /// Starts sampling the user's endpoints for a run whose timeline is made only at its end
    /// (on agents, each of which keeps its own), on the run's clock from `begins`: the agents'
    /// common start, which may be a moment ahead. `None` without an endpoint.
    pub fn sample_from(&self, begins: Instant) -> Option<Sampling> {
        let sources: Vec<Source> = self.endpoints().collect();
        if sources.is_empty() {
            return None;
        }
        let slot = Arc::new(Slot::keeping());
        let watch = Watch::start(
            sources,
            self.monitors.tls.clone(),
            begins,
            Arc::clone(&slot),
        );
        Some(Sampling { watch, slot })
    }

    fn endpoints(&self) -> impl Iterator<Item = Source> + '_ {
        self.monitors
            .endpoints
            .iter()
            .cloned()
            .map(Source::Endpoint)
    }
}

/// The sampling of a run on agents: the sampler, and every reading it made, kept for the
/// timeline the agents' results make.
pub struct Sampling {
    watch: Watch,
    slot: Arc<Slot>,
}

impl Sampling {
    /// Stops sampling, puts the readings on `r`'s timeline (each tick the newest made by its
    /// end, as a run here takes them) and the rest in `r`, as [`finish`] does for a run here.
    pub fn finish(self, r: &mut RunResult) {
        if let Some(t) = r.timeline.as_mut() {
            crate::stats::server::place(&mut t.ticks, &self.slot.kept());
        }
        finish(self.watch, r);
    }
}

impl Section for ServerSide {
    fn key(&self) -> &'static str {
        "server_side"
    }
}

/// Stops the sampler and puts what it found in `r`, each event with the run's figures just
/// before and after it.
pub fn finish(watch: Watch, r: &mut RunResult) {
    let Summary {
        servers,
        mut events,
    } = watch.finish();
    if let Some(t) = &r.timeline {
        for e in &mut events {
            e.before = t
                .ticks
                .iter()
                .rev()
                .find(|k| k.t_s <= e.since_s)
                .map(around);
            e.after = t
                .ticks
                .iter()
                .find(|k| k.t_s - k.span_s >= e.t_s)
                .map(around);
        }
    }
    events.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let cpu_ns_per_msg = r
        .timeline
        .as_ref()
        .and_then(|t| crate::stats::server::cpu_ns_per_msg(&t.ticks));
    r.own.put(ServerSide {
        servers,
        events,
        cpu_ns_per_msg,
    });
}

/// A tick's figures as an event shows them: received where the run received, else sent.
fn around(k: &Tick) -> Around {
    Around {
        t_s: k.t_s,
        msgs_per_sec: if k.received_per_sec > 0.0 {
            k.received_per_sec
        } else {
            k.sent_per_sec
        },
        p99_ns: k.latency.as_ref().map(|l| l.p99_ns),
    }
}
