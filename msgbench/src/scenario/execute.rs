//! The one path a plan takes to a result: its targets resolved, then its scenario run against
//! them. Every command that runs load comes through here (a typed scenario, `run PLAN.json`,
//! each `--runs` repetition, the default suite, and compare's native client), so what one of
//! them gets, every one of them gets.

use std::sync::atomic::AtomicBool;

use crate::error::Result;
use crate::plan::Validated;
use crate::result::RunResult;
use crate::scenario::segment::Share;
use crate::server::{self, Target};
use crate::stats::timeline::Meter;

/// The servers a run uses: its clients' server (none for gRPC, which serves or names its
/// own), and for `latency` the subscriber's when it is another one.
pub struct Targets {
    pub main: Option<Target>,
    pub second: Option<Target>,
}

impl Targets {
    /// Finds or starts the servers a validated plan names.
    ///
    /// # Errors
    /// No server binary, a server that does not start, a link that cannot be set up.
    pub fn resolve(v: &Validated) -> Result<Self> {
        let Some((choice, link)) = v.server() else {
            return Ok(Self {
                main: None,
                second: None,
            });
        };
        let main = server::resolve(choice, link)?;
        let second = match v {
            Validated::Latency(o) => match &o.server_b {
                Some(b) => Some(server::resolve(b, link)?),
                // In a local cluster the subscriber sits on the second node: latency across a
                // route.
                None => main.node(1),
            },
            _ => None,
        };
        Ok(Self {
            main: Some(main),
            second,
        })
    }
}

/// Runs a validated plan once against `main` (and, for latency, `second`); on an agent, only
/// its `share`.
///
/// # Errors
/// Failures that prevent a result: refused connections, a server that went away for good.
pub fn execute(
    v: &Validated,
    main: Option<&Target>,
    second: Option<&Target>,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<RunResult> {
    let target = || main.expect("a NATS scenario has a target");
    let on_agents = matches!(
        v,
        Validated::Load(_) | Validated::Latency(_) | Validated::Request(_)
    );
    if share.is_some() && !on_agents {
        return Err(crate::error::Error::Usage(
            "this scenario does not run on agents yet (pub, sub, pubsub, latency and request do)"
                .into(),
        ));
    }
    match v {
        Validated::Load(o) => super::run(o, target(), meter, stop, share),
        Validated::Latency(o) => super::latency::run(o, target(), second, meter, stop, share),
        Validated::Request(o) => super::request::run_request(o, target(), meter, stop, share),
        Validated::Reply(o) => super::reply::run_reply(o, target(), meter, stop),
        Validated::Conns(o) => super::conns::run(o, target(), stop),
        Validated::JsPub(o) => super::js::run_pub(o, target(), meter, stop),
        Validated::JsConsume(o) => super::js::run_consume(o, target(), meter, stop),
        Validated::Kv(o) => super::js::run_kv(o, target(), meter, stop),
        Validated::Grpc(o) => super::grpc::run(o, meter, stop),
    }
}
