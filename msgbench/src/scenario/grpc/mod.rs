//! `msgbench grpc`: gRPC load against any service, as one module. Its flags ([`args`]), their
//! checks ([`options`]), the run in steps (find the service and the method's definition in
//! [`run`], the clients on their connections in [`drive`], the result in [`assemble`]), the log
//! service it serves in process when given no --server ([`service`]), its parameters as a
//! result records them ([`Params`]) and its words in the text report ([`text`]).
//!
//! Also the two helpers: `grpc serve` (the log service as a process of its own, [`serve`])
//! and `grpc encode` (the cost of building and encoding messages apart from any I/O,
//! [`encode`]).

use std::sync::atomic::AtomicBool;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::result::{Describe, RunResult, ServerMeta};

mod args;
mod assemble;
mod drive;
mod encode;
mod options;
mod run;
mod serve;
mod service;
mod text;

use args::{GrpcArgs, GrpcEncodeArgs, GrpcServeArgs};
use encode::encode;
use options::{GrpcOptions, GrpcTarget};
use serve::serve;

/// `msgbench grpc`, with its two helpers `grpc serve` and `grpc encode`.
pub struct Grpc;

super::registry::flags!(GrpcArgs, pace = pace);

impl super::Scenario for Grpc {
    type Args = GrpcArgs;
    const SHOWN: &'static [crate::result::Shown] = &[text::SHOWN];
    const NAME: &'static str = "grpc";
    const WORDS: &'static [&'static str] = &["grpc"];
    const ABOUT: &'static str = "gRPC load against any service (unary, client/server \
                                 streaming, bidi), open or closed loop, with per-message \
                                 latency; `grpc serve` runs the reference log service and \
                                 `grpc encode` times message building and encoding apart from \
                                 I/O.";
    const CAPACITY: Option<&'static str> = Some("grpc");
    const CAPACITY_ABOUT: Option<&'static str> = Some("gRPC calls at a rate");
    fn command(cmd: clap::Command) -> clap::Command {
        crate::cli::PaceArgs::shape(cmd, &args::PACE)
    }
    fn helpers(cmd: clap::Command) -> clap::Command {
        use clap::Args as _;
        cmd.args_conflicts_with_subcommands(true)
            .subcommand(
                GrpcServeArgs::augment_args(clap::Command::new("serve")).about(
                    "Serve the reference service, msgbench.log.v1.Log (an append-only log of \
                     named streams; proto/msgbench/log/v1/log.proto), with server reflection",
                ),
            )
            .subcommand(
                GrpcEncodeArgs::augment_args(clap::Command::new("encode")).about(
                    "Time building messages from JSON, protobuf encoding and base64 apart from \
                     any I/O: ns and bytes per message for each step",
                ),
            )
    }
    fn validate(a: &Self::Args) -> Result<Box<dyn super::Runnable>> {
        Ok(Box::new(GrpcOptions::new(a)?))
    }
    fn helper(name: &str, m: &clap::ArgMatches, stop: &AtomicBool) -> Result<u8> {
        use clap::FromArgMatches as _;
        let bad = |e: clap::Error| Error::Usage(crate::cli::one_line(&e));
        match name {
            "serve" => serve(&GrpcServeArgs::from_arg_matches(m).map_err(bad)?, stop),
            "encode" => {
                let a = GrpcEncodeArgs::from_arg_matches(m).map_err(bad)?;
                if let Some(p) = a
                    .json
                    .as_deref()
                    .filter(|p| *p != std::path::Path::new("-"))
                {
                    crate::options::dest::check("--json", p)?;
                }
                let report = encode(&a)?;
                encode::print(&report, a.json.as_deref())?;
                Ok(crate::error::exit::OK)
            }
            other => Err(Error::Usage(format!("`grpc {other}` is not a command"))),
        }
    }
}

impl super::Runnable for GrpcOptions {
    fn common(&self) -> super::Common {
        let url = match &self.target {
            GrpcTarget::Url { uri, .. } => Some(options::url_of(uri)),
            GrpcTarget::Embedded => None,
        };
        super::Common {
            allow_loss: self.allow_loss,
            schedule: super::Common::staged(self.pace.schedule()),
            timeout: self.timeout,
            ..super::Common::service(url)
        }
    }
    fn split(&self) -> Result<super::Split> {
        // The clients spread over the agents, each on connection `id mod --connections` of its
        // own host; each paces its share of the rate, as in one process.
        Ok(super::Split {
            pubs: self.clients,
            subs: 0,
        })
    }
    fn conclude(
        &self,
        merged: &mut RunResult,
        _target: Option<&crate::server::Target>,
    ) -> Result<()> {
        assemble::conclude(self, merged)
    }
    fn params(&self) -> crate::result::Params {
        crate::result::Params::of(GrpcOptions::params(self))
    }
    fn run(&self, ctx: &super::Ctx<'_>) -> Result<RunResult> {
        run::run(self, ctx.meter, ctx.stop, ctx.share)
    }
}

/// The parameters of a gRPC run, as its result records them (no metadata values, no secrets).
#[derive(Debug, Clone, Serialize)]
pub struct Params {
    /// The service's URL; for the log service msgbench serves itself, known once the run has
    /// started it (null before).
    pub url: Option<String>,
    pub call: String,
    /// The method's kind, known once the run has read its definition (null before).
    pub kind: Option<&'static str>,
    pub clients: u32,
    pub connections: u32,
    /// Requests per client; null with a duration.
    pub requests: Option<u64>,
    pub duration_secs: Option<f64>,
    /// The aggregate target rate in requests a second; 0 for closed loop.
    pub rate: f64,
    pub rate_schedule: Option<String>,
    pub in_flight: usize,
    pub messages_per_call: Option<u64>,
    pub streams: u64,
    /// The first (or only) line of the data template.
    pub data: String,
    pub data_lines: usize,
    /// The metadata keys given with -H (not their values).
    pub headers: Vec<String>,
    pub deadline_secs: Option<f64>,
    pub timeout_secs: f64,
    /// Where the definition came from: the .proto file, `reflection` or `builtin`.
    pub schema: String,
    pub tls: Option<TlsParams>,
}

/// How the client reached a TLS service (the CA file's path, never a key).
#[derive(Debug, Clone, Serialize)]
pub struct TlsParams {
    pub ca: Option<String>,
    pub client_cert: bool,
    pub verify: bool,
}

impl Describe for Params {
    /// Its one series is the calls' requests.
    fn role_counts(&self, _role: &str) -> &'static str {
        "requests"
    }

    /// "unary msgbench.log.v1.Log/Append; 1 client, 1 connection, 100 in flight; 20,000 per
    /// client at 5,000 req/s".
    fn shape(&self) -> String {
        text::shape(self)
    }

    /// gRPC's target is no nats-server: the service msgbench serves in process says so.
    fn first_line(&self, scenario: &str, server: &ServerMeta) -> String {
        let serve = if server.embedded {
            " (msgbench grpc serve, in process)"
        } else {
            ""
        };
        format!(
            "msgbench {scenario} against {}{serve}: {}",
            server.url,
            self.shape()
        )
    }

    /// "unary log.v1.Log/Append at http://127.0.0.1:50051": the method as the run resolved
    /// it, where the result has its section.
    fn target(&self, r: &RunResult) -> String {
        let g = r.own.get::<crate::result::GrpcReport>();
        let kind = g.map_or(self.kind.unwrap_or("unary"), |g| g.kind);
        let method = g.map_or(self.call.as_str(), |g| g.method.as_str());
        format!("{kind} {method} at {}", r.server.url)
    }

    fn title(&self) -> &'static str {
        "gRPC requests answered OK"
    }

    fn client_names(&self, _role: &str) -> (&'static str, &'static str) {
        ("clients", "client")
    }

    fn latency_heading(&self, count: u64, _untimed: &str) -> Option<(String, &'static str)> {
        Some((text::latency_heading(self.kind, count), "latency"))
    }

    fn account(&self, o: &mut String, r: &RunResult, delivery: &dyn Fn(&mut String)) {
        match r.own.get::<crate::result::GrpcReport>() {
            Some(g) => o.push_str(&text::calls(g)),
            None => delivery(o),
        }
    }
}
