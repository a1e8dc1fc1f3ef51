//! `msgbench conns`: connections as the load, as one module. Opens `--clients` connections
//! from a fleet (at `--connect-rate`, at most `--in-flight` under way), holds them for `--hold`
//! while a light publisher checks that every subscribed one still receives, and, with
//! `--fault restart`, watches the herd find its way back.
//!
//! Its flags ([`args`]) and their checks ([`options`]); the run in steps ([`run`]); the checks
//! and what a fault excuses of them ([`checks`]); where the server's memory is read
//! ([`memory`]); the `conns` section of the result ([`summary`]), and on agents the sections
//! of every agent merged into one ([`merged`]); its parameters as a result records them
//! ([`Params`]) and its text report ([`text`]).
//!
//! Memory is read three times: before the first connect, with every connection up, and at
//! the end (the peak). The server's is read from its monitoring endpoint (`--server-monitor`)
//! or, for the server msgbench started, from its process.

use serde::Serialize;

use crate::cli::Subscribe;
use crate::error::{Error, Result};
use crate::options::conn::ConnParams;
use crate::result::{Describe, RunResult};

mod args;
mod checks;
mod memory;
mod merged;
mod options;
mod run;
mod shown;
mod summary;
mod text;

use args::ConnsArgs;
use options::ConnsOptions;

/// `msgbench conns`.
pub struct Conns;

super::registry::flags!(ConnsArgs, conn);

impl super::Scenario for Conns {
    type Args = ConnsArgs;
    const SHOWN: &'static [crate::result::Shown] = &[shown::CONNS];
    const NAME: &'static str = "conns";
    const WORDS: &'static [&'static str] = &["conns"];
    const ABOUT: &'static str = "Connections as the load: open N at a connect rate, optionally \
                                 subscribe each, hold them while a light publisher checks each \
                                 still receives; connect latency by phase, failures by kind, \
                                 memory per connection (msgbench's and the server's), and with \
                                 --fault restart@T:HOLD --reconnect the reconnect herd.";
    fn validate(a: &Self::Args) -> Result<Box<dyn super::Runnable>> {
        Ok(Box::new(ConnsOptions::new(a)?))
    }
}

impl super::Runnable for ConnsOptions {
    /// Its load is connections: connect times, connections opened and failed, the checks
    /// missed, the herd's way back, and errors. Its length is not the hold alone: the
    /// connections open before it, at --connect-rate.
    fn common(&self) -> super::Common {
        super::Common {
            timeout: self.timeout,
            duration: Some(run::longest(self)),
            measures: crate::metric::Metric::of(crate::metric::Family::Connections),
            ..super::Common::nats(&self.server, self.conn.link)
        }
    }
    /// The connections spread over the agents as subscribers do (from the last agent): they
    /// are the receiving end of the checks. Each agent opens its block with global ids, at its
    /// share of `--connect-rate` and `--in-flight`, from the common start.
    fn split(&self) -> Result<super::Split> {
        if self.subscribe == Subscribe::Shared && self.check_every.is_some() {
            return Err(Error::Usage(
                "--agents: `conns --subscribe shared` checks cannot be counted across agents \
                 (every connection would get every agent's checks, and no agent knows what the \
                 others sent): give --subscribe own, or --check-every 0"
                    .into(),
            ));
        }
        if self.server_monitor.is_some() {
            return Err(Error::Usage(
                "--server-monitor cannot be combined with --agents: the server's memory grows \
                 with every agent's connections, so no agent's share of it can be told apart"
                    .into(),
            ));
        }
        Ok(super::Split {
            pubs: 0,
            subs: self.clients,
        })
    }
    fn conclude(
        &self,
        merged: &mut RunResult,
        _target: Option<&crate::server::Target>,
    ) -> Result<()> {
        merged::conclude(self, merged)
    }
    fn params(&self) -> crate::result::Params {
        crate::result::Params::of(ConnsOptions::params(self))
    }
    fn run(&self, ctx: &super::Ctx<'_>) -> Result<RunResult> {
        run::run(
            self,
            ctx.target()?,
            ctx.meter,
            ctx.stop,
            ctx.share,
            ctx.progress,
        )
    }
}

/// The parameters of a conns run, as its result records them.
#[derive(Debug, Clone, Serialize)]
pub struct Params {
    pub connection: ConnParams,
    pub clients: u32,
    /// New connections a second; null for as fast as `in_flight` allows.
    pub connect_rate: Option<f64>,
    /// Connects under way at once, at most.
    pub in_flight: usize,
    pub subscribe: Subscribe,
    /// `--subject`; null for the run's own `msgbench.conns.<run tag>`.
    pub subject: Option<String>,
    pub hold_secs: f64,
    /// How often each subscribed connection is sent a check; null for no checks.
    pub check_every_secs: Option<f64>,
    pub timeout_secs: f64,
}

impl Describe for Params {
    /// "1,000 connections at 500/s, subscribing: own, held 10 s".
    fn shape(&self) -> String {
        text::shape(self)
    }

    fn ping_interval_secs(&self) -> Option<f64> {
        Some(self.connection.ping_interval_secs)
    }

    fn account(&self, o: &mut String, r: &RunResult, _delivery: &dyn Fn(&mut String)) {
        if let Some(c) = r.own.get::<crate::result::ConnsReport>() {
            o.push_str(&text::report(c));
        }
    }

    /// Connections are the load: no messages' throughput, latency or delivery to report.
    fn section_only(&self) -> bool {
        true
    }
}
