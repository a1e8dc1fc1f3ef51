//! Scenarios: the kinds of load msgbench runs, each one module, all listed in one registry
//! ([`registry`]). A scenario says what its flags are (a clap `Args` struct, which is also the
//! body of its plan), how they are checked into options, and, once checked, how it runs and
//! what every mode needs to know of it ([`Runnable`]): where its servers are, its schedule,
//! whether and how it splits across agents, what figures it produces.
//!
//! The modes (a typed command, a plan file, `--runs`, agents, capacity, compare, schedules,
//! metrics) are written once, above this layer, against these two traits; none of them names a
//! scenario. Adding one is its module and one line in the registry.

use std::fmt::Debug;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::cli::{ConnArgs, PaceArgs};
use crate::error::{Error, Result};
use crate::options::ServerChoice;
use crate::result::{LinkSpec, RunResult};
use crate::server::Target;
use crate::stats::schedule::RateSchedule;
use crate::stats::timeline::Meter;

pub mod calibrate;
mod conns;
mod core;
pub mod fault;
mod fault_disk;
mod fault_roles;
pub mod grpc;
pub mod js;
pub mod latency;
mod obj;
mod pacing;
pub mod registry;
pub mod request;
pub mod segment;
mod words;

use segment::Share;

/// One kind of load. Implemented once per scenario, by a unit type that names it; the
/// registry holds it behind [`registry::Entry`].
pub trait Scenario: Send + Sync + 'static {
    /// Its flags, which are also its plan's body: clap parses a command line into it, serde
    /// writes it as a plan, and a plan is read back through clap again.
    type Args: Flags;
    /// How results and plans name it (`js.pub`).
    const NAME: &'static str;
    /// The words that run it (`["js", "pub"]`).
    const WORDS: &'static [&'static str];
    /// Its line in `--help`.
    const ABOUT: &'static str;
    /// Its name under `msgbench compare`, when the client libraries' drivers implement it.
    const COMPARE: Option<&'static str> = None;
    /// Its name under `msgbench capacity`, when it runs open loop on a rate a search can set.
    const CAPACITY: Option<&'static str> = None;
    /// Its line under `msgbench compare`, where what the drivers run is narrower than ABOUT.
    const COMPARE_ABOUT: Option<&'static str> = None;
    /// Its line under `msgbench capacity`, where what a search probes is narrower than ABOUT.
    const CAPACITY_ABOUT: Option<&'static str> = None;
    /// How the reports show the sections of its own that its results hold.
    const SHOWN: &'static [crate::result::Shown] = &[];
    /// Per-scenario touches to its command: defaults of shared flags.
    fn command(cmd: clap::Command) -> clap::Command {
        cmd
    }
    /// Its helper subcommands (`grpc serve`), on its own command only: under `compare` and
    /// `capacity` a helper is not a load to run.
    fn helpers(cmd: clap::Command) -> clap::Command {
        cmd
    }
    /// Checks the flags against each other and builds the options a run takes.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    fn validate(args: &Self::Args) -> Result<Box<dyn Runnable>>;
    /// A helper subcommand of the scenario's (`grpc serve`), run with its matches.
    ///
    /// # Errors
    /// As the helper's own.
    fn helper(name: &str, _m: &clap::ArgMatches, _stop: &AtomicBool) -> Result<u8> {
        Err(Error::Usage(format!(
            "`{name}` is not a command of {}",
            Self::NAME
        )))
    }
}

/// The flag groups every mode reaches into, whatever the scenario: for NATS scenarios the
/// connection, and for paced ones the pace. Where results go is not among them: output flags
/// sit beside a scenario's flags in a [`Plan`](crate::plan::Plan), never inside them.
pub trait Flags:
    clap::Args + clap::FromArgMatches + Serialize + Clone + Debug + Send + Sync + 'static
{
    /// The NATS connection flags; none for a scenario with a target of its own (gRPC).
    fn conn(&self) -> Option<&ConnArgs> {
        None
    }
    fn conn_mut(&mut self) -> Option<&mut ConnArgs> {
        None
    }
    /// The pace flags (`--rate`, `--rate-schedule`, `--duration`), for a scenario that sends
    /// on a schedule: how a capacity search sets each probe's rate. None for a scenario that
    /// has no rate to set (capacity does not offer it).
    fn pace_mut(&mut self) -> Option<&mut PaceArgs> {
        None
    }
    /// A warm-up of the scenario's own (`latency --warmup`), which a capacity probe sets to
    /// the probe's warm-up so that only the judged hold is recorded.
    fn warmup_mut(&mut self) -> Option<&mut Duration> {
        None
    }
    /// Files the run writes besides the result (`latency --hist`), with the flag naming each:
    /// checked before the run like `--json`.
    fn files(&self) -> Vec<(&'static str, std::path::PathBuf)> {
        Vec::new()
    }
}

/// Where a scenario's second server is, when it has one (`latency`'s subscriber).
#[derive(Debug, Clone, Default)]
pub enum Second {
    #[default]
    None,
    /// A server of its own.
    Server(ServerChoice),
    /// The next node of a local cluster, when the main target is one.
    NextNode,
}

/// What a scenario loads: a NATS server (with the link to it, and a second server for
/// `latency`'s subscriber), or a service of its own (gRPC's `--server`, or the one it serves
/// itself).
#[derive(Debug, Clone)]
pub enum Load {
    Nats {
        server: ServerChoice,
        link: Option<LinkSpec>,
        second: Second,
    },
    /// A service of the scenario's own: its URL, or none when msgbench serves it in process
    /// (which agents on other hosts cannot share).
    Service(Option<String>),
}

/// What every mode asks of a scenario before, while and after it runs, decided once when its
/// flags are checked: one struct a scenario fills in, instead of a getter per question.
#[derive(Debug, Clone)]
pub struct Common {
    pub load: Load,
    /// `--allow-loss`: whether lost messages leave the exit status alone.
    pub allow_loss: bool,
    /// The `--rate-schedule` the run follows, when it has one with stages.
    pub schedule: Option<RateSchedule>,
    /// How long a peer may be silent before it counts as gone: the run's own `--timeout`.
    pub timeout: Duration,
    /// The run's length when it is given as a duration.
    pub duration: Option<Duration>,
    /// The figures its result can produce, which `--threshold` and `--slo` may name.
    pub measures: Vec<crate::metric::Metric>,
    /// How many times each message sent is expected to arrive over the whole run: the
    /// subscribers of a `pubsub`, else 1. A run on agents makes its `schedule` section with it.
    pub fanout: u64,
}

impl Common {
    /// A scenario that loads the NATS `server` over `link`: the defaults every scenario starts
    /// from (a load of messages, a 5 s timeout, one delivery per message sent).
    pub fn nats(server: &ServerChoice, link: Option<LinkSpec>) -> Self {
        Self::new(Load::Nats {
            server: server.clone(),
            link,
            second: Second::None,
        })
    }

    /// A scenario with a service of its own: its URL, or none when msgbench serves it.
    pub fn service(url: Option<String>) -> Self {
        Self::new(Load::Service(url))
    }

    /// The defaults for a scenario that loads `load`.
    pub fn new(load: Load) -> Self {
        Self {
            load,
            allow_loss: false,
            schedule: None,
            timeout: Duration::from_secs(5),
            duration: None,
            measures: crate::metric::Metric::of(crate::metric::Family::Messages),
            fanout: 1,
        }
    }

    /// The schedule a pace follows, kept only when it has stages.
    pub fn staged(schedule: Option<&RateSchedule>) -> Option<RateSchedule> {
        schedule.filter(|s| !s.is_fixed()).cloned()
    }
}

/// How a scenario's clients split across agents: publishers (or requesters) fill agents from
/// the first, subscribers (or responders) from the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    pub pubs: u32,
    pub subs: u32,
}

/// What a run needs besides the options: the servers, the live meter, the stop flag, and on
/// an agent its share.
pub struct Ctx<'a> {
    pub main: Option<&'a Target>,
    pub second: Option<&'a Target>,
    pub meter: &'a Meter,
    pub stop: &'a AtomicBool,
    pub share: Option<Share<'a>>,
    /// Whether the scenario may print lines of progress on stderr as it goes (`conns`'s
    /// phases); `--no-progress` turns them off.
    pub progress: bool,
}

impl Ctx<'_> {
    /// The main target of a NATS scenario.
    ///
    /// # Errors
    /// None was resolved (a scenario whose [`Load`] is a service of its own).
    pub fn target(&self) -> Result<&Target> {
        self.main
            .ok_or_else(|| Error::Usage("this scenario needs a NATS server".into()))
    }
}

/// A scenario's checked options: what every mode needs of it ([`Common`]), and the few things
/// only the scenario decides: how it splits across agents, what its result records, its run,
/// what the whole run concludes on agents, and how drivers run it.
pub trait Runnable: Debug + Send + Sync {
    /// What every mode asks of the run, filled in by the scenario.
    fn common(&self) -> Common;
    /// How the run splits across agents, or why it cannot run on them.
    ///
    /// # Errors
    /// [`Error::Usage`] saying why, in one line.
    fn split(&self) -> Result<Split>;
    /// The parameters a result records.
    fn params(&self) -> crate::result::Params;
    /// Runs once against the context's servers (on an agent, its share only).
    ///
    /// # Errors
    /// Failures that prevent a result: refused connections, a server gone for good.
    fn run(&self, ctx: &Ctx<'_>) -> Result<RunResult>;
    /// Once every agent of a run on agents is done: what only the whole run can say, from the
    /// merged result (which keeps each agent's own document) and the run's NATS server (none
    /// for a service of the scenario's own). A JetStream stream is reconciled here with every
    /// agent's acknowledgements. Nothing by default.
    ///
    /// # Errors
    /// None by default; a scenario says what it cannot conclude in its result instead.
    fn conclude(&self, merged: &mut RunResult, target: Option<&Target>) -> Result<()> {
        let _ = (merged, target);
        Ok(())
    }
    /// What `compare` needs to run the scenario through the client libraries' drivers, or why
    /// it cannot.
    ///
    /// # Errors
    /// [`Error::Usage`] saying why.
    fn compare(&self) -> Result<crate::scenario::Compared> {
        Err(Error::Usage(
            "compare runs pubsub, latency, request and js-pub through the drivers".into(),
        ))
    }
}

/// A scenario as `compare` runs it through drivers: the driver protocol's name for it, its
/// parameters, and what msgbench runs around a driver.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The driver protocol's scenario name.
    pub kind: &'static str,
    pub params: serde_json::Value,
    /// What the scenario runs around each driver: `js pub` makes the stream and reconciles
    /// it, `request` answers with its echo service; none for the rest.
    pub around: Option<Arc<dyn Around>>,
    /// `--connect-timeout`, which drivers get too.
    pub connect_timeout: Duration,
}

/// The drivers run what driver protocol v1 carries: one literal subject, one fixed size, a
/// fixed rate or none. A flag that shapes the load past that would leave the native column
/// measuring another load than the drivers', so the first of `shaping` that was given is
/// refused, by its flag.
///
/// # Errors
/// [`Error::Usage`] naming the flag.
pub fn refuse_for_drivers(shaping: &[(&str, bool)]) -> Result<()> {
    match shaping.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(Error::Usage(format!(
            "{flag} does not apply to `msgbench compare`: the drivers send one literal subject \
             at one fixed size and a fixed rate (driver protocol v1), so the columns would not \
             measure the same load; use it with `msgbench <scenario>` directly"
        ))),
        None => Ok(()),
    }
}

/// The flags of a pace that drivers cannot follow: a schedule of stages, Poisson arrivals.
pub fn pace_shaping(pace: &crate::engine::pace::Pace) -> [(&'static str, bool); 2] {
    let s = pace.schedule();
    [
        ("--rate-schedule", s.is_some_and(|s| !s.is_fixed())),
        (
            "--arrivals poisson",
            s.is_some_and(|s| s.poisson_seed().is_some()),
        ),
    ]
}

/// How a driver ended, as `compare` ran it.
pub type DriverOutcome =
    std::result::Result<crate::engine::driver::Finished, crate::engine::driver::Failed>;

/// A driver's run: given the driver protocol's `js` object (the stream to publish to) where
/// the scenario has one.
pub type DriverRun<'a> = dyn FnMut(Option<serde_json::Value>) -> DriverOutcome + 'a;

/// What a scenario does around a client library's driver under `msgbench compare`, so that
/// compare names no scenario.
pub trait Around: Debug + Send + Sync {
    /// Runs `driver` inside the scenario's set-up, and gives back how it ended with the
    /// section of the scenario's own that the driver's result gets (the stream's
    /// reconciliation).
    ///
    /// # Errors
    /// The set-up's, before the driver runs (a stream that cannot be made, a service that
    /// cannot start).
    fn run(
        &self,
        target: &Target,
        driver: &mut DriverRun<'_>,
    ) -> Result<(DriverOutcome, Option<Box<dyn crate::result::Section>>)>;
}
