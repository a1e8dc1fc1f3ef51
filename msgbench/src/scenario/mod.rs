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
use std::time::Duration;

use serde::Serialize;

use crate::cli::{ConnArgs, OutputArgs, PaceArgs};
use crate::error::{Error, Result};
use crate::options::{Output, ServerChoice};
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

/// The flag groups every mode reaches into, whatever the scenario: where results go, and
/// (for NATS scenarios) the connection.
pub trait Flags:
    clap::Args + clap::FromArgMatches + Serialize + Clone + Debug + Send + Sync + 'static
{
    fn out(&self) -> &OutputArgs;
    fn out_mut(&mut self) -> &mut OutputArgs;
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
pub enum Second<'a> {
    None,
    /// A server of its own.
    Server(&'a ServerChoice),
    /// The next node of a local cluster, when the main target is one.
    NextNode,
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
}

impl Ctx<'_> {
    /// The main target of a NATS scenario.
    ///
    /// # Errors
    /// None was resolved (a caller that skipped [`Runnable::server`]).
    pub fn target(&self) -> Result<&Target> {
        self.main
            .ok_or_else(|| Error::Usage("this scenario needs a NATS server".into()))
    }
}

/// A scenario's checked options: what every mode asks of a run before, while and after it
/// runs.
pub trait Runnable: Debug + Send + Sync {
    /// Where results go and how often the scenario runs.
    fn output(&self) -> &Output;
    /// `--allow-loss`: whether lost messages leave the exit status alone.
    fn allow_loss(&self) -> bool {
        false
    }
    /// The `--rate-schedule` the run follows, when it has one with stages.
    fn schedule(&self) -> Option<&RateSchedule> {
        None
    }
    /// The NATS server the clients use and the link to it; none for a target of its own.
    fn server(&self) -> Option<(&ServerChoice, Option<LinkSpec>)> {
        None
    }
    fn second(&self) -> Second<'_> {
        Second::None
    }
    /// How the run splits across agents, or why it cannot run on them.
    ///
    /// # Errors
    /// [`Error::Usage`] saying why, in one line.
    fn split(&self) -> Result<Split>;
    /// How long a peer may be silent before it counts as gone: the run's own `--timeout`.
    fn timeout(&self) -> Duration {
        Duration::from_secs(5)
    }
    /// The run's length when it is given as a duration.
    fn duration(&self) -> Option<Duration> {
        None
    }
    /// The figures its result can produce, which `--threshold` and `--slo` may name: those of
    /// a load of messages, unless the scenario says otherwise.
    fn measures(&self) -> Vec<crate::metric::Metric> {
        crate::metric::Metric::of(crate::metric::Family::Messages)
    }
    /// The parameters a result records.
    fn params(&self) -> crate::result::Params;
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
    /// How many times each message sent is expected to arrive over the whole run: the
    /// subscribers of a `pubsub`, else 1. A run on agents makes its `schedule` section with it.
    fn fanout(&self) -> u64 {
        1
    }
    /// On agents, the service under test when the scenario names its own (gRPC's `--server`);
    /// none for one that loads the NATS `--server`.
    ///
    /// # Errors
    /// [`Error::Usage`] when the scenario would start its service itself, which agents on
    /// other hosts cannot share.
    fn agents_target(&self) -> Result<Option<String>> {
        Ok(None)
    }
    /// Runs once against the context's servers (on an agent, its share only).
    ///
    /// # Errors
    /// Failures that prevent a result: refused connections, a server gone for good.
    fn run(&self, ctx: &Ctx<'_>) -> Result<RunResult>;
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
/// parameters, and the services msgbench runs beside a driver.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The driver protocol's scenario name.
    pub kind: &'static str,
    pub params: serde_json::Value,
    /// `js-pub`: the stream setup and reconciliation msgbench does around the driver.
    pub js: Option<crate::scenario::js::JsPubOptions>,
    /// `request`: the echo service the drivers are measured against.
    pub responder: Option<crate::scenario::request::ReplyOptions>,
    /// `--connect-timeout`, which drivers get too.
    pub connect_timeout: Duration,
}
