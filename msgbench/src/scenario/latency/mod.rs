//! `latency`: one publisher at a fixed rate (or on a schedule), one subscriber, one clock;
//! every delivery timed from when it was due (corrected for coordinated omission) and from
//! when it left. The flags (args.rs), their checks (options.rs), the run (run.rs), and what a
//! result records of it ([`Params`]) and says of it in words.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::options::conn::ConnParams;
use crate::result::{Describe, RunResult};

mod args;
mod assemble;
mod options;
mod run;

pub use args::LatencyArgs;
pub use options::LatencyOptions;

/// `msgbench latency`.
pub struct Latency;

impl crate::scenario::Flags for LatencyArgs {
    fn conn(&self) -> Option<&crate::cli::ConnArgs> {
        Some(&self.conn)
    }
    fn conn_mut(&mut self) -> Option<&mut crate::cli::ConnArgs> {
        Some(&mut self.conn)
    }
    fn pace_mut(&mut self) -> Option<&mut crate::cli::PaceArgs> {
        Some(&mut self.pace)
    }
    fn warmup_mut(&mut self) -> Option<&mut Duration> {
        Some(&mut self.warmup)
    }
    // `--hist PREFIX` writes three files next to each other.
    fn files(&self) -> Vec<(&'static str, PathBuf)> {
        let Some(prefix) = &self.hist else {
            return Vec::new();
        };
        ["hgrm", "uncorrected.hgrm", "hlog"]
            .into_iter()
            .map(|suffix| {
                let mut p = prefix.clone().into_os_string();
                p.push(".");
                p.push(suffix);
                ("--hist", PathBuf::from(p))
            })
            .collect()
    }
}

impl crate::scenario::Scenario for Latency {
    type Args = LatencyArgs;
    const NAME: &'static str = "latency";
    const WORDS: &'static [&'static str] = &["latency"];
    const ABOUT: &'static str =
        "End-to-end latency at a fixed rate, open loop, corrected for coordinated omission.";
    const COMPARE: Option<&'static str> = Some("latency");
    const CAPACITY: Option<&'static str> = Some("latency");
    const COMPARE_ABOUT: Option<&'static str> = Some("Open-loop latency at a fixed rate");
    const CAPACITY_ABOUT: Option<&'static str> =
        Some("One publisher and one subscriber: end-to-end latency");
    fn command(cmd: clap::Command) -> clap::Command {
        crate::cli::PaceArgs::shape(cmd, &args::PACE)
    }
    fn validate(a: &Self::Args) -> Result<Box<dyn crate::scenario::Runnable>> {
        Ok(Box::new(LatencyOptions::new(a)?))
    }
}

impl crate::scenario::Runnable for LatencyOptions {
    fn common(&self) -> crate::scenario::Common {
        use crate::scenario::{Common, Load, Second};
        let second = match &self.server_b {
            Some(b) => Second::Server(b.clone()),
            // In a local cluster the subscriber sits on the second node: latency across a route.
            None => Second::NextNode,
        };
        Common {
            allow_loss: self.allow_loss,
            schedule: Common::staged(Some(&self.schedule)),
            timeout: self.timeout,
            duration: self.stop.duration(),
            ..Common::new(Load::Nats {
                server: self.server_a.clone(),
                link: self.conn.link,
                second,
            })
        }
    }
    fn split(&self) -> Result<crate::scenario::Split> {
        if self.server_b.is_some() {
            return Err(Error::Usage(
                "--server-b cannot be combined with --agents yet: agents share one server".into(),
            ));
        }
        Ok(crate::scenario::Split { pubs: 1, subs: 1 })
    }
    fn params(&self) -> crate::result::Params {
        crate::result::Params::of(LatencyOptions::params(self))
    }
    fn run(&self, ctx: &crate::scenario::Ctx<'_>) -> Result<RunResult> {
        run::run(
            self,
            ctx.target()?,
            ctx.second,
            ctx.meter,
            ctx.stop,
            ctx.share,
        )
    }
    fn compare(&self) -> Result<crate::scenario::Compared> {
        crate::scenario::refuse_for_drivers(&[
            ("--rate-schedule", !self.schedule.is_fixed()),
            ("--arrivals poisson", self.schedule.poisson_seed().is_some()),
            ("--server-b", self.server_b.is_some()),
            ("--hist", self.hist.is_some()),
        ])?;
        Ok(crate::scenario::Compared {
            kind: "latency",
            params: serde_json::to_value(LatencyOptions::params(self)).expect("serialises"),
            around: None,
            connect_timeout: self.conn.dial.connect_timeout,
        })
    }
}

/// The parameters of a latency run, as its result records them.
#[derive(Debug, Clone, Serialize)]
pub struct Params {
    pub pubs: u32,
    pub subs: u32,
    /// The mean target rate (the schedule's, with one).
    pub rate: f64,
    pub rate_schedule: Option<String>,
    pub msgs: Option<u64>,
    pub duration_secs: Option<f64>,
    pub size: usize,
    /// Messages due this early in the run were sent but not timed.
    pub warmup_secs: f64,
    pub subject: String,
    /// A send this far behind its schedule counts as late.
    pub late_bound_secs: f64,
    pub connection: ConnParams,
    /// The subscriber used a server of its own (`--server-b`).
    pub separate_servers: bool,
    /// Whether the subscriber polled its socket; null where this result did not decide it (a
    /// merged result of agents: each agent's own result says).
    pub busy_poll: Option<bool>,
    /// Why: the flag, the rate, or what `auto` saw of the CPU.
    pub busy_poll_why: String,
    /// What `--busy-poll auto` measured of the machine's CPU before it chose; null where it
    /// measured nothing.
    pub cpu_free: Option<crate::engine::cpu::Free>,
    pub timeout_secs: f64,
    pub allow_loss: bool,
    /// `--arrivals`: when the publisher's messages are due.
    pub arrivals: crate::cli::Arrivals,
    /// The seed of Poisson arrivals; null with fixed ones.
    pub arrivals_seed: Option<u64>,
}

impl Describe for Params {
    fn shape(&self) -> String {
        let pace = crate::scenario::words::Pace {
            msgs: self.msgs,
            duration_secs: self.duration_secs,
            each: "publisher",
            rate: self.rate,
            schedule: self.rate_schedule.as_deref(),
        };
        crate::scenario::words::who_what_how_long(
            &[(self.pubs, "pub"), (self.subs, "sub")],
            Some(self.size),
            &pace,
        ) + &crate::scenario::words::arrivals(self.arrivals_seed)
    }

    fn title(&self) -> &'static str {
        "NATS latency run"
    }

    fn latency_heading(&self, count: u64, untimed: &str) -> Option<(String, &'static str)> {
        // Publisher and subscriber on different agents: no send time crosses hosts.
        Some((
            format!(
                "Latency of {}{untimed}, from intended send (corrected; uncorrected \
                 needs the send time, which stays on the publisher's agent):",
                crate::format::counted(count, "message")
            ),
            "corrected",
        ))
    }

    fn warmup_secs(&self) -> Option<f64> {
        Some(self.warmup_secs)
    }

    fn ping_interval_secs(&self) -> Option<f64> {
        Some(self.connection.ping_interval_secs)
    }

    // How the subscriber waited is part of what its latency means: say it, and why.
    fn account(&self, o: &mut String, r: &RunResult, delivery: &dyn Fn(&mut String)) {
        let _ = r;
        delivery(o);
        if let Some(on) = self.busy_poll {
            let how = if on {
                "polled its socket"
            } else {
                "slept between messages"
            };
            o.push_str(&format!("Subscriber: {how} ({})\n", self.busy_poll_why));
        }
    }
}
