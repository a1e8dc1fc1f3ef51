//! `request` and `reply`: requesters that time every reply (closed loop, pipelined, or open
//! loop at a rate), and the service of responders that answers them. `request` starts its own
//! responders unless told not to; `reply` is that service alone. JetStream publishing and KV
//! gets run through the same requesters ([`run_requests`]), since a publish with an
//! acknowledgement is a request.

use std::time::Duration;

use serde::Serialize;

use crate::error::Result;
use crate::options::conn::ConnParams;
use crate::result::{Describe, RunResult};
use crate::scenario::{Common, Compared, Ctx, Runnable, Scenario, Split};

mod args;
mod assemble;
mod connect;
mod options;
mod reply;
mod run;

pub use args::{ReplyArgs, RequestArgs};
pub use options::{Announce, DrawnSizes, DrawnSubjects, ReplyOptions, RequestOptions};
pub use run::{run_request, run_requests};

/// `msgbench request`.
pub struct Request;

crate::scenario::registry::flags!(RequestArgs, conn, pace = pace);

impl Scenario for Request {
    type Args = RequestArgs;
    const NAME: &'static str = "request";
    const WORDS: &'static [&'static str] = &["request"];
    const ABOUT: &'static str = "Request/reply: clients send requests and time each reply \
                                 (closed loop, or open loop with --rate). Starts its own \
                                 responders unless --responders 0.";
    const COMPARE: Option<&'static str> = Some("request");
    const CAPACITY: Option<&'static str> = Some("request");
    const COMPARE_ABOUT: Option<&'static str> =
        Some("Request/reply against msgbench's own echo service");
    const CAPACITY_ABOUT: Option<&'static str> =
        Some("Requests against responders: round trips at a rate");
    fn command(cmd: clap::Command) -> clap::Command {
        crate::cli::PaceArgs::shape(cmd, &args::PACE)
    }
    fn validate(a: &Self::Args) -> Result<Box<dyn Runnable>> {
        Ok(Box::new(RequestOptions::new(a)?))
    }
}

impl Runnable for RequestOptions {
    fn common(&self) -> Common {
        Common {
            allow_loss: self.allow_loss,
            schedule: Common::staged(self.pace.schedule()),
            timeout: self.timeout,
            duration: self.stop.duration(),
            ..Common::nats(&self.server, self.conn.link)
        }
    }
    fn split(&self) -> Result<Split> {
        // Requesters split like publishers, responders like subscribers (from the last agent):
        // with one of each on two agents, every request crosses between hosts.
        Ok(Split {
            pubs: self.clients,
            subs: self.responders,
        })
    }
    fn params(&self) -> crate::result::Params {
        crate::result::Params::of(RequestOptions::params(self))
    }
    fn run(&self, ctx: &Ctx<'_>) -> Result<RunResult> {
        run::run_request(self, ctx.target()?, ctx.meter, ctx.stop, ctx.share)
    }
    fn compare(&self) -> Result<Compared> {
        let [schedule, poisson] = crate::scenario::pace_shaping(&self.pace);
        crate::scenario::refuse_for_drivers(&[
            schedule,
            poisson,
            ("--size (a distribution)", self.sizes.is_some()),
            ("--subject (a template)", self.template.is_some()),
        ])?;
        // Drivers ask the service the native run asks: msgbench's own echo service, or with
        // --responders 0 the user's, already running.
        let echo = (self.responders > 0).then(|| ReplyOptions {
            clients: self.responders,
            delay: self.delay,
            subject: self.subject.clone(),
            max: None,
            duration: Duration::from_secs(24 * 3600),
            server: self.server.clone(),
            conn: self.conn,
            // Its lifetime is the driver's run, not the day it is bounded by; the driver
            // starts once it is up.
            announce: Announce::Quiet,
        });
        Ok(Compared {
            kind: "request",
            params: self.params_value(),
            around: echo.map(|r| std::sync::Arc::new(reply::Echo(r)) as _),
            connect_timeout: self.conn.dial.connect_timeout,
        })
    }
}

/// `msgbench reply`.
pub struct Reply;

crate::scenario::registry::flags!(ReplyArgs, conn);

impl Scenario for Reply {
    type Args = ReplyArgs;
    const NAME: &'static str = "reply";
    const WORDS: &'static [&'static str] = &["reply"];
    const ABOUT: &'static str = "A reply service: responders in a queue group that echo each \
                                 request.";
    fn validate(a: &Self::Args) -> Result<Box<dyn Runnable>> {
        Ok(Box::new(ReplyOptions::new(a)?))
    }
}

impl Runnable for ReplyOptions {
    fn common(&self) -> Common {
        Common {
            duration: Some(self.duration),
            ..Common::nats(&self.server, self.conn.link)
        }
    }
    fn split(&self) -> Result<Split> {
        // Responders fill agents from the last, as they do in a request run on agents.
        Ok(Split {
            pubs: 0,
            subs: self.clients,
        })
    }
    fn params(&self) -> crate::result::Params {
        crate::result::Params::of(ReplyOptions::params(self))
    }
    fn run(&self, ctx: &Ctx<'_>) -> Result<RunResult> {
        reply::run_reply(self, ctx.target()?, ctx.meter, ctx.stop, ctx.share)
    }
}

/// The parameters of a request run, as its result records them.
#[derive(Debug, Clone, Serialize)]
pub struct Params {
    pub connection: ConnParams,
    /// Requesters.
    pub pubs: u32,
    /// Responders started in this process (0: an outside service answered).
    pub subs: u32,
    /// Requests each requester keeps in flight.
    pub in_flight: usize,
    pub rate: f64,
    pub rate_schedule: Option<String>,
    pub msgs: Option<u64>,
    pub duration_secs: Option<f64>,
    pub size: usize,
    pub subject: String,
    pub delay_secs: f64,
    pub timeout_secs: f64,
    pub allow_loss: bool,
    /// `--arrivals`: when paced requests are due.
    pub arrivals: crate::cli::Arrivals,
    /// The seed of Poisson arrivals; null with fixed ones.
    pub arrivals_seed: Option<u64>,
}

impl Describe for Params {
    fn shape(&self) -> String {
        let pace = crate::scenario::words::Pace {
            msgs: self.msgs,
            duration_secs: self.duration_secs,
            each: "client",
            rate: self.rate,
            schedule: self.rate_schedule.as_deref(),
        };
        crate::scenario::words::who_what_how_long(
            &[(self.pubs, "client"), (self.subs, "responder")],
            Some(self.size),
            &pace,
        ) + &crate::scenario::words::arrivals(self.arrivals_seed)
    }

    fn title(&self) -> &'static str {
        "NATS request/reply stats"
    }

    fn role_name(&self, role: &str) -> &'static str {
        if role == "pub" {
            "Requests"
        } else {
            "Replies"
        }
    }

    fn role_counts(&self, role: &str) -> &'static str {
        if role == "pub" {
            "requests"
        } else {
            "replies"
        }
    }

    fn client_names(&self, _role: &str) -> (&'static str, &'static str) {
        ("requesters", "requester")
    }

    fn ping_interval_secs(&self) -> Option<f64> {
        Some(self.connection.ping_interval_secs)
    }
}

/// The parameters of a reply service's run.
#[derive(Debug, Clone, Serialize)]
pub struct ReplyParams {
    pub connection: ConnParams,
    pub pubs: u32,
    /// Responders.
    pub subs: u32,
    /// Requests to serve in all before stopping; null for a time limit alone.
    pub msgs: Option<u64>,
    pub duration_secs: f64,
    pub subject: String,
    pub delay_secs: f64,
}

impl Describe for ReplyParams {
    fn shape(&self) -> String {
        let pace = crate::scenario::words::Pace {
            msgs: self.msgs,
            duration_secs: self.msgs.is_none().then_some(self.duration_secs),
            each: "service",
            rate: 0.0,
            schedule: None,
        };
        crate::scenario::words::who_what_how_long(&[(self.subs, "responder")], None, &pace)
    }

    fn title(&self) -> &'static str {
        "NATS reply service stats"
    }

    fn role_counts(&self, role: &str) -> &'static str {
        if role == "pub" {
            "replies"
        } else {
            "requests"
        }
    }

    fn ping_interval_secs(&self) -> Option<f64> {
        Some(self.connection.ping_interval_secs)
    }
}
