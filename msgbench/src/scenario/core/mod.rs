//! `pub`, `sub` and `pubsub`: publishers, subscribers or both, on one subject (or many, with
//! `--multisubject`), at full speed or a rate, with exact delivery accounting. One module for
//! the three: they share their flags, their options and their run, and differ only in who
//! takes part ([`options::Sides`]).

use serde::Serialize;

use super::{Common, Compared, Ctx, Runnable, Scenario, Split};
use crate::error::{Error, Result};
use crate::options::conn::ConnParams;
use crate::result::{Describe, RunResult};

mod args;
mod assemble;
mod connect;
mod options;
mod run;

pub use args::{LoadArgs, PubArgs, PubSubArgs, SubArgs};
pub use options::{Options, ScenarioKind};

/// `msgbench pub`.
pub struct Pub;
/// `msgbench sub`.
pub struct Sub;
/// `msgbench pubsub`.
pub struct Pubsub;

super::registry::flags!(PubArgs, conn, pace = load.pace);
super::registry::flags!(SubArgs, conn, pace = load.pace);
super::registry::flags!(PubSubArgs, conn, pace = load.pace);

impl Scenario for Pub {
    type Args = PubArgs;
    const NAME: &'static str = "pub";
    const WORDS: &'static [&'static str] = &["pub"];
    const ABOUT: &'static str = "Publish messages, as fast as possible or at a rate.";
    fn command(cmd: clap::Command) -> clap::Command {
        crate::cli::PaceArgs::shape(cmd, &args::PACE)
    }
    fn validate(a: &Self::Args) -> Result<Box<dyn Runnable>> {
        let sides = options::Sides {
            scenario: ScenarioKind::Pub,
            pubs: a.clients,
            subs: 0,
            stall: None,
            start_timeout: None,
        };
        Ok(Box::new(Options::new(&sides, &shared(&a.load, a)?)?))
    }
}

impl Scenario for Sub {
    type Args = SubArgs;
    const NAME: &'static str = "sub";
    const WORDS: &'static [&'static str] = &["sub"];
    const ABOUT: &'static str = "Subscribe and count messages published by someone else, with \
                                 per-publisher accounting.";
    fn command(cmd: clap::Command) -> clap::Command {
        crate::cli::PaceArgs::shape(cmd, &args::PACE)
    }
    fn validate(a: &Self::Args) -> Result<Box<dyn Runnable>> {
        let sides = options::Sides {
            scenario: ScenarioKind::Sub,
            pubs: 0,
            subs: a.clients,
            stall: Some(&a.stall),
            start_timeout: Some(a.start_timeout),
        };
        Ok(Box::new(Options::new(&sides, &shared(&a.load, a)?)?))
    }
}

impl Scenario for Pubsub {
    type Args = PubSubArgs;
    const NAME: &'static str = "pubsub";
    const WORDS: &'static [&'static str] = &["pubsub"];
    const ABOUT: &'static str = "Publishers and subscribers in one process: throughput and \
                                 exact delivery accounting.";
    const COMPARE: Option<&'static str> = Some("pubsub");
    const CAPACITY: Option<&'static str> = Some("pubsub");
    const COMPARE_ABOUT: Option<&'static str> =
        Some("Publishers and subscribers: throughput and delivery");
    const CAPACITY_ABOUT: Option<&'static str> =
        Some("Publishers and subscribers: delivery at a rate");
    fn command(cmd: clap::Command) -> clap::Command {
        crate::cli::PaceArgs::shape(cmd, &args::PACE)
    }
    fn validate(a: &Self::Args) -> Result<Box<dyn Runnable>> {
        let sides = options::Sides {
            scenario: ScenarioKind::Pubsub,
            pubs: a.pubs,
            subs: a.subs,
            stall: Some(&a.stall),
            start_timeout: None,
        };
        Ok(Box::new(Options::new(&sides, &shared(&a.load, a)?)?))
    }
}

/// The flag groups of any of the three.
fn shared<'a>(load: &'a LoadArgs, a: &'a impl super::Flags) -> Result<options::Shared<'a>> {
    Ok(options::Shared {
        load,
        conn: a
            .conn()
            .ok_or_else(|| Error::Usage("pub, sub and pubsub connect to NATS".into()))?,
    })
}

impl Runnable for Options {
    fn common(&self) -> Common {
        Common {
            allow_loss: self.allow_loss,
            schedule: Common::staged(self.pace.schedule()),
            timeout: self.timeout,
            duration: self.stop.duration(),
            fanout: u64::from(self.subs.max(1)),
            ..Common::nats(&self.server, self.conn.link)
        }
    }
    fn split(&self) -> Result<Split> {
        Ok(Split {
            pubs: self.pubs,
            subs: self.subs,
        })
    }
    fn params(&self) -> crate::result::Params {
        crate::result::Params::of(Options::params(self))
    }
    fn run(&self, ctx: &Ctx<'_>) -> Result<RunResult> {
        run::run(self, ctx.target()?, ctx.meter, ctx.stop, ctx.share)
    }
    fn compare(&self) -> Result<Compared> {
        if self.scenario != ScenarioKind::Pubsub {
            return Err(Error::Usage(format!(
                "compare runs pubsub, latency, request and js-pub, not {}",
                self.scenario.as_str()
            )));
        }
        let [schedule, poisson] = crate::scenario::pace_shaping(&self.pace);
        crate::scenario::refuse_for_drivers(&[
            schedule,
            poisson,
            ("--size (a distribution)", !self.sizes.is_fixed()),
            ("--subject (a template)", self.template.is_some()),
            ("--multisubject", self.multisubject.is_some()),
            ("--header", !self.headers.is_empty()),
            ("--payload", self.payload.is_some()),
            ("--sub-stall", self.sub_stall.is_some()),
        ])?;
        Ok(Compared {
            kind: "pubsub",
            params: serde_json::to_value(Options::params(self)).expect("serialises"),
            around: None,
            connect_timeout: self.conn.dial.connect_timeout,
        })
    }
}

/// The parameters of a pub, sub or pubsub run, as its result records them.
#[derive(Debug, Clone, Serialize)]
pub struct Params {
    /// Which of the three ran.
    #[serde(skip)]
    pub scenario: ScenarioKind,
    pub connection: ConnParams,
    pub pubs: u32,
    pub subs: u32,
    /// Messages per publisher (or expected by each subscriber); null with a duration.
    pub msgs: Option<u64>,
    pub duration_secs: Option<f64>,
    /// Payload bytes per message; with drawn sizes, their mean, rounded.
    pub size: usize,
    /// `--size` as a distribution; null for a fixed size.
    pub size_distribution: Option<SizeDistribution>,
    pub subject: String,
    /// `subject` as a template: its wildcard, tokens and seed; null for a plain subject.
    pub subject_template: Option<SubjectTemplate>,
    /// `--arrivals`: when paced messages are due.
    pub arrivals: crate::cli::Arrivals,
    /// The seed of Poisson arrivals; null with fixed ones.
    pub arrivals_seed: Option<u64>,
    /// `--multisubject`: the number of distinct subjects.
    pub multisubject: Option<u64>,
    /// The aggregate target rate; 0 for as fast as possible.
    pub rate: f64,
    pub rate_schedule: Option<String>,
    /// Every payload came from `--payload` (no delivery stamp).
    pub payload_file: bool,
    /// The header names given with `-H` (not their values).
    pub headers: Vec<String>,
    pub timeout_secs: f64,
    pub allow_loss: bool,
    pub sub_stall: Option<SubStall>,
}

/// Drawn sizes, as the result records them: the distribution as typed, the seed, and what it
/// draws.
#[derive(Debug, Clone, Serialize)]
pub struct SizeDistribution {
    pub spec: String,
    pub seed: u64,
    pub min: usize,
    pub max: usize,
    /// The mean the draws tend to.
    pub mean: f64,
}

impl SizeDistribution {
    /// How the first line says it: "sizes drawn from … (seed …, mean … B)".
    pub fn words(&self) -> String {
        format!(
            "sizes drawn from {} (seed {}, mean {} B)",
            self.spec,
            self.seed,
            crate::format::group(self.mean.round() as u64)
        )
    }
}

/// A subject template, as the result records it: what subscribers listened on, the tokens'
/// values as given, and the seed.
#[derive(Debug, Clone, Serialize)]
pub struct SubjectTemplate {
    pub wildcard: String,
    pub tokens: Vec<String>,
    pub seed: u64,
}

/// `--sub-stall N:DURATION`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SubStall {
    pub after_msgs: u64,
    pub for_secs: f64,
}

impl Describe for Params {
    fn shape(&self) -> String {
        let each = if self.pubs > 0 {
            "publisher"
        } else {
            "subscriber"
        };
        let pace = super::words::Pace {
            msgs: self.msgs,
            duration_secs: self.duration_secs,
            each,
            rate: self.rate,
            schedule: self.rate_schedule.as_deref(),
        };
        // A subscriber takes whatever size arrives; --size does not apply.
        let who = [(self.pubs, "pub"), (self.subs, "sub")];
        if self.pubs == 0 {
            return super::words::who_what_how_long(&who, None, &pace);
        }
        let sizes = match &self.size_distribution {
            Some(d) => d.words(),
            None => format!("{} B messages", crate::format::group(self.size as u64)),
        };
        let what = match &self.subject_template {
            Some(t) => format!(
                "{sizes}; subjects drawn from {} (seed {})",
                self.subject, t.seed
            ),
            None => sizes,
        };
        super::words::who_what_how_long_text(&who, Some(&what), &pace)
            + &super::words::arrivals(self.arrivals_seed)
    }

    fn ping_interval_secs(&self) -> Option<f64> {
        Some(self.connection.ping_interval_secs)
    }

    fn title(&self) -> &'static str {
        match self.scenario {
            ScenarioKind::Pub => "NATS Core publisher stats",
            ScenarioKind::Sub => "NATS Core subscriber stats",
            ScenarioKind::Pubsub => "NATS Pub/Sub stats",
        }
    }
}
