//! The NATS object store: `obj put` writes objects of a given size into a bucket, cut into
//! chunks, as the NATS clients do, and `obj get` reads them back and checks each against its
//! SHA-256 digest. Objects are named `msgbench-0`, `msgbench-1`, …: a get reads what an earlier
//! put wrote (the two are separate runs, so each is timed alone), and objects another client
//! wrote under those names read the same way, since both sides follow the one format (ADR-20).
//!
//! Here are the two commands ([`Scenario`]), what every mode asks of a run ([`Runnable`]) and
//! the parameters a result records, with their words in the text output ([`Describe`]). The
//! flags are in `args`, their checks in `options`; the format (subjects, metadata, digest) in
//! `meta`; the bucket and its limits in `bucket`; one client's objects in `client` (its state
//! machine), `put` and `get` (their steps); the run in `run`; the result and its `object_store` section in `report`.

use serde::Serialize;

use super::{Ctx, Runnable, Scenario, Split};
use crate::cli::Storage;
use crate::error::Result;
use crate::format::{counted, ibytes};
use crate::options::conn::ConnParams;
use crate::result::{Describe, RunResult};

mod args;
mod bucket;
mod client;
mod get;
mod meta;
mod options;
mod put;
mod report;
mod run;

pub use args::{ObjGetArgs, ObjPutArgs};
pub use options::ObjOptions;

/// `msgbench obj put`.
pub struct ObjPut;
/// `msgbench obj get`.
pub struct ObjGet;

super::registry::flags!(ObjPutArgs, conn);
super::registry::flags!(ObjGetArgs, conn);

impl Scenario for ObjPut {
    type Args = ObjPutArgs;
    const SHOWN: &'static [crate::result::Shown] = &[report::SHOWN];
    const NAME: &'static str = "obj.put";
    const WORDS: &'static [&'static str] = &["obj", "put"];
    const ABOUT: &'static str = "Put objects into a bucket in chunks, timing each object and \
                                 each chunk's acknowledgement.";
    fn validate(a: &Self::Args) -> Result<Box<dyn Runnable>> {
        Ok(Box::new(ObjOptions::put(a)?))
    }
}

impl Scenario for ObjGet {
    type Args = ObjGetArgs;
    const SHOWN: &'static [crate::result::Shown] = &[report::SHOWN];
    const NAME: &'static str = "obj.get";
    const WORDS: &'static [&'static str] = &["obj", "get"];
    const ABOUT: &'static str = "Get the objects an earlier obj put wrote, timing each object \
                                 and chunk, and check every object's SHA-256 digest.";
    fn validate(a: &Self::Args) -> Result<Box<dyn Runnable>> {
        Ok(Box::new(ObjOptions::get(a)?))
    }
}

impl Runnable for ObjOptions {
    fn common(&self) -> super::Common {
        super::Common {
            timeout: self.timeout,
            ..super::Common::nats(&self.server, self.conn.link)
        }
    }
    fn split(&self) -> Result<Split> {
        // The clients spread over the agents; object i stays with client i mod clients.
        Ok(Split {
            pubs: self.clients,
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
        report::conclude(self, merged, target)
    }
    fn params(&self) -> crate::result::Params {
        crate::result::Params::of(ObjParams::of(self))
    }
    fn run(&self, ctx: &Ctx<'_>) -> Result<RunResult> {
        run::run(self, ctx.target()?, ctx.meter, ctx.stop, ctx.share)
    }
}

/// The parameters of an `obj put` or `obj get` run.
#[derive(Debug, Clone, Serialize)]
pub struct ObjParams {
    pub connection: ConnParams,
    pub clients: u32,
    /// Objects in the run, shared out over the clients.
    pub objects: u64,
    pub bucket: String,
    /// Each object's size; null for a get (each object's metadata says).
    pub size: Option<usize>,
    /// The chunk size of a put; null for a get.
    pub chunk_size: Option<usize>,
    /// `--storage` as given: null leaves an existing bucket's, and makes a new one file.
    pub storage: Option<Storage>,
    /// `--max-bytes` as given: null for none.
    pub max_bytes: Option<usize>,
    pub timeout_secs: f64,
    pub delete_after: bool,
}

impl ObjParams {
    fn of(o: &ObjOptions) -> Self {
        let p = o.put.as_ref();
        ObjParams {
            connection: o.conn.params(),
            clients: o.clients,
            objects: o.objects,
            bucket: o.bucket.clone(),
            size: p.map(|p| p.size),
            chunk_size: p.map(|p| p.chunk_size),
            storage: p.and_then(|p| p.storage),
            max_bytes: p.and_then(|p| p.max_bytes),
            timeout_secs: o.timeout.as_secs_f64(),
            delete_after: o.delete_after,
        }
    }
}

impl Describe for ObjParams {
    /// Objects move as chunks: a put's publishes, a get's deliveries.
    fn role_counts(&self, _role: &str) -> &'static str {
        "chunks"
    }

    fn shape(&self) -> String {
        let objects = match (self.size, self.chunk_size) {
            (Some(size), Some(chunk)) => format!(
                "{} of {} in {} chunks",
                counted(self.objects, "object"),
                ibytes(size as f64),
                ibytes(chunk as f64)
            ),
            _ => counted(self.objects, "object"),
        };
        format!(
            "bucket {}; {objects}; {}",
            self.bucket,
            counted(u64::from(self.clients), "client")
        )
    }
    fn title(&self) -> &'static str {
        match self.size {
            Some(_) => "NATS Object Store put stats (chunks)",
            None => "NATS Object Store get stats (chunks)",
        }
    }
    fn client_names(&self, _role: &str) -> (&'static str, &'static str) {
        ("clients", "client")
    }
    fn latency_heading(&self, count: u64, _untimed: &str) -> Option<(String, &'static str)> {
        let what = match self.size {
            Some(_) => "each object put, from its first chunk to its metadata's PubAck",
            None => "each object get, from its metadata's lookup to its last chunk",
        };
        Some((
            format!(
                "Latency of {what}, {}:",
                crate::format::counted(count, "object")
            ),
            "object",
        ))
    }
    fn ping_interval_secs(&self) -> Option<f64> {
        Some(self.connection.ping_interval_secs)
    }
    fn account(&self, o: &mut String, r: &RunResult, _delivery: &dyn Fn(&mut String)) {
        // No messages to account for: whether every object came back whole is the
        // `object_store` section's.
        if let Some(s) = r.own.get::<report::ObjReport>() {
            s.text(o);
        }
    }
}
