//! JetStream: publishing into a stream (`js pub`, `kv put`), consuming from one (`js consume`)
//! and reading a bucket's keys (`kv get`). One module for the four: they share the stream they
//! work on, how it is set up, and the reconciliation afterwards that proves, from the stream's
//! side, that every stored message was acknowledged to a publisher exactly once or delivered to
//! the consumers exactly once.
//!
//! Here are what the four are (their [`Scenario`] impls), what every mode asks of a run
//! ([`Runnable`]); the parameters a result records, with their words in the text output,
//! are in `params`. Their flags are in `args`, their checks in `options`; the run is in
//! `stream` (set-up, reconciliation, clean-up), `publish` (`js pub`, `kv`, and `js pub`
//! around another client's driver for `compare`), `consume` and `consumed` (connect and pull,
//! then the result), and `text` (the text output's JetStream and consumer sections).

use super::{Common, Compared, Ctx, Runnable, Scenario, Split};
use crate::cli::JsPubMode;
use crate::error::{Error, Result};
use crate::result::RunResult;

mod args;
mod capture;
mod consume;
mod consumed;
mod durability;
mod explain;
mod keys;
mod options;
mod params;
#[cfg(test)]
mod planted_loss;
mod pubflags;
mod publish;
mod replicas;
mod shown;
mod stream;
mod streamflags;
mod text;

pub use args::{JsConsumeArgs, JsPubArgs, KvArgs};
pub use options::{JsConsumeOptions, JsPubOptions, KvOptions, Source};
pub use params::{ConsumeParams, JsPubParams, KvParams};

/// `msgbench js pub`.
pub struct JsPub;
/// `msgbench js consume`.
pub struct JsConsume;
/// `msgbench kv put`.
pub struct KvPut;
/// `msgbench kv get`.
pub struct KvGet;

super::registry::flags!(JsPubArgs, conn, pace = pace);
super::registry::flags!(JsConsumeArgs, conn);
super::registry::flags!(KvArgs, conn, pace = pace);

impl Scenario for JsPub {
    type Args = JsPubArgs;
    const SHOWN: &'static [crate::result::Shown] = &[shown::JETSTREAM, shown::DURABILITY];
    const NAME: &'static str = "js.pub";
    const WORDS: &'static [&'static str] = &["js", "pub"];
    const ABOUT: &'static str = "Publish to a stream, sync (one at a time), async (a window in \
                                 flight), in atomic batches or fast batches, timing each \
                                 acknowledgement, then reconcile the acknowledgements with the \
                                 stream's state.";
    const COMPARE: Option<&'static str> = Some("js-pub");
    const CAPACITY: Option<&'static str> = Some("js-pub");
    const COMPARE_ABOUT: Option<&'static str> = Some("JetStream publish, sync or async");
    const CAPACITY_ABOUT: Option<&'static str> =
        Some("JetStream publishes (--mode async): acknowledgements at a rate");
    fn command(cmd: clap::Command) -> clap::Command {
        crate::cli::PaceArgs::shape(cmd, &args::PACE)
    }
    fn validate(a: &Self::Args) -> Result<Box<dyn Runnable>> {
        Ok(Box::new(JsPubOptions::new(a)?))
    }
}

impl Scenario for JsConsume {
    type Args = JsConsumeArgs;
    const SHOWN: &'static [crate::result::Shown] = &[shown::JETSTREAM, shown::CONSUMER];
    const NAME: &'static str = "js.consume";
    const WORDS: &'static [&'static str] = &["js", "consume"];
    const ABOUT: &'static str = "Consume from a stream with a pull consumer (fetch, consume) or \
                                 an ordered one, and check that every stored message was \
                                 delivered exactly once.";
    fn validate(a: &Self::Args) -> Result<Box<dyn Runnable>> {
        Ok(Box::new(JsConsumeOptions::new(a)?))
    }
}

impl Scenario for KvPut {
    type Args = KvArgs;
    const SHOWN: &'static [crate::result::Shown] = &[shown::JETSTREAM, shown::DURABILITY];
    const NAME: &'static str = "kv.put";
    const WORDS: &'static [&'static str] = &["kv", "put"];
    const ABOUT: &'static str = "Write values to keys of a bucket, timing each acknowledgement.";
    fn command(cmd: clap::Command) -> clap::Command {
        crate::cli::PaceArgs::shape(cmd, &args::KV_PACE)
    }
    fn validate(a: &Self::Args) -> Result<Box<dyn Runnable>> {
        Ok(Box::new(KvOptions::new(a, false)?))
    }
}

impl Scenario for KvGet {
    type Args = KvArgs;
    const NAME: &'static str = "kv.get";
    const WORDS: &'static [&'static str] = &["kv", "get"];
    const ABOUT: &'static str = "Read keys of a bucket (filled first), timing each direct get.";
    fn command(cmd: clap::Command) -> clap::Command {
        crate::cli::PaceArgs::shape(cmd, &args::KV_PACE)
    }
    fn validate(a: &Self::Args) -> Result<Box<dyn Runnable>> {
        Ok(Box::new(KvOptions::new(a, true)?))
    }
}

impl Runnable for JsPubOptions {
    fn common(&self) -> Common {
        let p = &self.publish;
        Common {
            allow_loss: p.allow_loss,
            schedule: Common::staged(p.pace.schedule()),
            timeout: p.timeout,
            ..Common::nats(&p.server, p.conn.link)
        }
    }
    fn split(&self) -> Result<Split> {
        if self.mode == JsPubMode::Fast {
            return Err(Error::Usage(
                "--agents: `js pub --mode fast` does not run on agents yet (its publishers \
                 run in one process)"
                    .into(),
            ));
        }
        // Publishers spread over the agents into the one stream; the coordinator reconciles it
        // with all their acknowledgements (`conclude`).
        Ok(Split {
            pubs: self.publish.clients,
            subs: 0,
        })
    }
    fn conclude(
        &self,
        merged: &mut RunResult,
        target: Option<&crate::server::Target>,
    ) -> Result<()> {
        let Some(target) = target else {
            return Ok(());
        };
        publish::conclude(self, merged, target)
    }
    fn params(&self) -> crate::result::Params {
        crate::result::Params::of(JsPubParams::of(self))
    }
    fn run(&self, ctx: &Ctx<'_>) -> Result<RunResult> {
        publish::run_pub(self, ctx.target()?, ctx.meter, ctx.stop, ctx.share)
    }
    fn compare(&self) -> Result<Compared> {
        if matches!(self.mode, JsPubMode::Batch | JsPubMode::Fast)
            || self.streams.len() > 1
            || self
                .publish
                .js_framing
                .as_ref()
                .is_some_and(|f| f.dedup.is_some())
        {
            return Err(Error::Usage(
                "compare js-pub: drivers publish sync or async into one stream; --mode batch, \
                 --mode fast, --streams and --dedup are for msgbench js pub alone"
                    .into(),
            ));
        }
        let [schedule, poisson] = crate::scenario::pace_shaping(&self.publish.pace);
        crate::scenario::refuse_for_drivers(&[
            schedule,
            poisson,
            ("--size (a distribution)", self.publish.sizes.is_some()),
            ("--subject (a template)", self.publish.template.is_some()),
        ])?;
        Ok(Compared {
            kind: "js_pub",
            params: serde_json::to_value(JsPubParams::of(self)).expect("params serialise"),
            around: Some(std::sync::Arc::new(publish::AroundDriver(self.clone()))),
            connect_timeout: self.publish.conn.dial.connect_timeout,
        })
    }
}

impl JsConsumeOptions {
    /// The live publisher's `--rate-schedule`, when it has stages.
    pub fn schedule(&self) -> Option<&crate::stats::schedule::RateSchedule> {
        (self.publish.as_ref()?.pace.schedule()).filter(|s| !s.is_fixed())
    }
}

impl Runnable for JsConsumeOptions {
    fn common(&self) -> Common {
        Common {
            allow_loss: self.allow_loss,
            schedule: self.schedule().cloned(),
            timeout: self.timeout,
            ..Common::nats(&self.server, self.conn.link)
        }
    }
    fn split(&self) -> Result<Split> {
        // The consumers spread over the agents and share one durable consumer, as the clients
        // of one process do; a fill or a live publisher spreads as js pub's publishers do.
        Ok(Split {
            pubs: self.publish.as_ref().map_or(0, |p| p.clients),
            subs: self.clients,
        })
    }
    fn conclude(
        &self,
        merged: &mut RunResult,
        target: Option<&crate::server::Target>,
    ) -> Result<()> {
        let Some(target) = target else {
            return Ok(());
        };
        consumed::conclude(self, merged, target)
    }
    fn params(&self) -> crate::result::Params {
        crate::result::Params::of(ConsumeParams::of(self))
    }
    fn run(&self, ctx: &Ctx<'_>) -> Result<RunResult> {
        consume::run_consume(self, ctx.target()?, ctx.meter, ctx.stop, ctx.share)
    }
}

impl Runnable for KvOptions {
    fn common(&self) -> Common {
        let p = &self.put.publish;
        let paced = self.gets.as_ref().unwrap_or(p);
        Common {
            allow_loss: p.allow_loss,
            schedule: Common::staged(paced.pace.schedule()),
            duration: paced.stop.duration(),
            timeout: p.timeout,
            ..Common::nats(&p.server, p.conn.link)
        }
    }
    fn split(&self) -> Result<Split> {
        // As js pub: the putters (or getters) spread over the agents; puts are reconciled with
        // the bucket by the coordinator, and a get's fill is made once (see `run_kv`).
        let pubs = self
            .gets
            .as_ref()
            .map_or(self.put.publish.clients, |g| g.clients);
        Ok(Split { pubs, subs: 0 })
    }
    fn conclude(
        &self,
        merged: &mut RunResult,
        target: Option<&crate::server::Target>,
    ) -> Result<()> {
        let Some(target) = target else {
            return Ok(());
        };
        if self.gets.is_none() {
            return publish::conclude(&self.put, merged, target);
        }
        // The gets leave nothing to reconcile; the bucket, when asked, goes once all are done.
        if let Ok(api) = stream::api_conn(target, &self.put.publish.conn, self.put.publish.timeout)
        {
            stream::clean_up(api, &self.put.streams, self.put.delete_after);
        }
        Ok(())
    }
    fn params(&self) -> crate::result::Params {
        crate::result::Params::of(KvParams::of(self))
    }
    fn run(&self, ctx: &Ctx<'_>) -> Result<RunResult> {
        publish::run_kv(self, ctx.target()?, ctx.meter, ctx.stop, ctx.share)
    }
}
