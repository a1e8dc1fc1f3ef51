//! `msgbench grpc`'s flags: the load run, and its two helpers `grpc serve` and `grpc encode`
//! (the helpers hang under the scenario's command, [`super::Grpc`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::cli::{parse_clients, PaceArgs, PaceShape};
use crate::values::{parse_count, parse_duration};

/// Which service definition to use, and which method or message of it.
#[derive(Debug, Clone, Args, Serialize)]
pub struct GrpcSchemaArgs {
    /// The .proto file defining the service, compiled here (no protoc needed). Without it,
    /// msgbench asks the server (server reflection), or uses its own log service's definition.
    #[arg(long, value_name = "FILE")]
    pub proto: Option<PathBuf>,
    /// A folder imports are resolved in (repeatable); the .proto's own folder is always one.
    #[arg(short = 'I', long = "import-path", value_name = "DIR")]
    pub import_path: Vec<PathBuf>,
    /// The message: JSON (proto3 JSON mapping), or @FILE of JSON lines used in turn. Templated
    /// per message: {{seq}}, {{client}}, {{stream}}, {{ts}} (unix ns), {{uuid}}, {{bytes N}}
    /// (N bytes as base64).
    #[arg(short = 'd', long, value_name = "JSON|@FILE")]
    pub data: Option<String>,
    /// {{stream}} takes the values 0 to K-1 in turn (message i of client c: (c + i) mod K):
    /// the K target streams of a write flood.
    #[arg(long, default_value = "1", value_name = "K", value_parser = parse_count)]
    pub streams: u64,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct GrpcArgs {
    /// The method: package.Service/Method (default: msgbench.log.v1.Log/Append).
    #[arg(long, value_name = "METHOD")]
    pub call: Option<String>,
    #[command(flatten)]
    #[serde(rename = "definition")] // "schema" is the plan document's own key
    pub schema: GrpcSchemaArgs,
    /// The service: http://HOST:PORT (plaintext HTTP/2) or https://HOST:PORT (TLS, verified).
    /// Without it, msgbench serves its own log service on a free loopback port and loads that.
    #[arg(short = 's', long, value_name = "URL")]
    pub server: Option<String>,
    /// Clients; each keeps its own --in-flight window and sends an equal share of the rate,
    /// request k of every client due together (-c as in ghz).
    #[arg(short = 'c', long, default_value_t = 1, value_parser = parse_clients)]
    pub clients: u32,
    /// HTTP/2 connections the clients share, round robin (default: one per client).
    #[arg(long, value_parser = parse_clients)]
    pub connections: Option<u32>,
    /// Requests per client: calls for unary, client-streaming and server-streaming methods,
    /// messages for bidi ones.
    #[arg(long, default_value = "10000", value_parser = parse_count, allow_hyphen_values = true,
          conflicts_with_all = ["duration", "rate_schedule"])]
    pub requests: u64,
    /// Requests in total, split evenly over the clients (ghz's -n); a multiple of --clients.
    #[arg(short = 'n', long, value_parser = parse_count, value_name = "N",
          conflicts_with_all = ["requests", "duration", "rate_schedule"])]
    pub total: Option<u64>,
    #[command(flatten)]
    #[serde(flatten)]
    pub pace: PaceArgs,
    /// Requests (or bidi messages) each client keeps outstanding at most.
    #[arg(long, default_value = "1", value_parser = parse_count)]
    pub in_flight: u64,
    /// Messages per call of a client-streaming or bidi method (default: 100 for client
    /// streaming; bidi sends all of a client's messages on one call).
    #[arg(long, value_parser = parse_count, value_name = "N")]
    pub messages_per_call: Option<u64>,
    /// Metadata on every call (repeatable): -H 'key: value'; a key ending in -bin takes base64.
    #[arg(short = 'H', long = "header", value_name = "K:V")]
    #[serde(rename = "header")]
    pub headers: Vec<String>,
    /// The deadline of each call, sent to the server as grpc-timeout; a call past it counts as
    /// DEADLINE_EXCEEDED.
    #[arg(long, value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::opt_duration")]
    pub deadline: Option<Duration>,
    /// With no --deadline, a call unanswered after this long is abandoned and counted as
    /// DEADLINE_EXCEEDED (nothing is sent to the server); also how long to wait for the last
    /// calls at the end.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub timeout: Duration,
    /// How long to wait for the connection.
    #[arg(long, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub connect_timeout: Duration,
    /// CA certificates (PEM) to verify the server with, instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Client certificate chain (PEM), for servers that verify clients (mutual TLS).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Do not verify the server's certificate (prints a warning).
    #[arg(long)]
    pub tls_insecure: bool,
    /// Plaintext HTTP/2, as ghz's --insecure means: the default for http:// and HOST:PORT
    /// targets, refused with https:// or any --tls-* flag.
    #[arg(long)]
    pub insecure: bool,
    /// The name to verify the server's certificate against (default: the URL's host).
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
    /// Exit 0 even if calls failed.
    #[arg(long)]
    pub allow_loss: bool,
}

/// What `--rate` means for `grpc`: requests, open loop, or closed loop at 0; `--rps` as in ghz.
pub const PACE: PaceShape = PaceShape {
    rate_alias: Some("rps"),
    ..PaceShape::rate(
        "Aggregate requests per second, open loop with latency from each one's due time \
         (corrected for coordinated omission); 0 = closed loop. Also --rps, as in ghz",
    )
};

#[derive(Debug, Args)]
pub struct GrpcServeArgs {
    /// Address to listen on (port 0: any free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:50051", value_name = "ADDR")]
    pub listen: std::net::SocketAddr,
    /// Records kept per stream; older ones are dropped (positions keep counting), so memory
    /// stays flat.
    #[arg(long, default_value = "10000", value_parser = parse_count, value_name = "N")]
    pub retain: u64,
    /// Stop after this long (default: run until Ctrl-C).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Serve TLS with this certificate chain (PEM)…
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// …and this private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Worker threads (default: the number of CPUs).
    #[arg(long, value_parser = parse_clients, value_name = "N")]
    pub threads: Option<u32>,
}

#[derive(Debug, Args)]
pub struct GrpcEncodeArgs {
    /// The message type to build (package.Message), or give --call to use a method's input.
    #[arg(long, value_name = "TYPE", conflicts_with = "call")]
    pub message: Option<String>,
    /// A method (package.Service/Method) whose input type to build.
    #[arg(long, value_name = "METHOD")]
    pub call: Option<String>,
    #[command(flatten)]
    pub schema: GrpcSchemaArgs,
    /// Messages to build and encode per step.
    #[arg(long, default_value = "200000", value_parser = parse_count, value_name = "N")]
    pub count: u64,
    /// Also time base64 of each encoded message (as carried by text transports).
    #[arg(long)]
    pub base64: bool,
    /// Write the figures as JSON to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}
