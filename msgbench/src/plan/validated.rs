//! A plan after every check: the validated options of its scenario. Built by
//! [`Plan::validate`](super::Plan::validate) alone, whether the plan came from typed flags or
//! from a file, so both are held to the same rules.

use crate::options::conns::ConnsOptions;
use crate::options::js::{JsConsumeOptions, JsPubOptions, KvOptions};
use crate::options::latency::LatencyOptions;
use crate::options::request::{ReplyOptions, RequestOptions};
use crate::options::{grpc::GrpcOptions, Options, Output, ServerChoice};
use crate::result::LinkSpec;
use crate::stats::schedule::RateSchedule;

/// One scenario's validated options.
#[derive(Debug)]
pub enum Validated {
    /// pub, sub and pubsub.
    Load(Options),
    Latency(LatencyOptions),
    Request(RequestOptions),
    Reply(ReplyOptions),
    Conns(ConnsOptions),
    JsPub(JsPubOptions),
    JsConsume(JsConsumeOptions),
    Kv(KvOptions),
    Grpc(GrpcOptions),
}

impl Validated {
    /// Where results go and how often the scenario runs.
    pub fn output(&self) -> &Output {
        match self {
            Validated::Load(o) => &o.output,
            Validated::Latency(o) => &o.output,
            Validated::Request(o) => &o.output,
            Validated::Reply(o) => &o.output,
            Validated::Conns(o) => &o.output,
            Validated::JsPub(o) => &o.publish.output,
            Validated::JsConsume(o) => &o.output,
            Validated::Kv(o) => o.gets.as_ref().map_or(&o.put.publish.output, |g| &g.output),
            Validated::Grpc(o) => &o.output,
        }
    }

    /// `--allow-loss`: whether lost messages leave the exit status alone.
    pub fn allow_loss(&self) -> bool {
        match self {
            Validated::Load(o) => o.allow_loss,
            Validated::Latency(o) => o.allow_loss,
            Validated::Request(o) => o.allow_loss,
            Validated::Reply(_) | Validated::Conns(_) => false,
            Validated::JsPub(o) => o.publish.allow_loss,
            Validated::JsConsume(o) => o.allow_loss,
            Validated::Kv(o) => o.put.publish.allow_loss,
            Validated::Grpc(o) => o.allow_loss,
        }
    }

    /// The `--rate-schedule` the run follows, when it has one (a fixed `--rate` is none).
    pub fn schedule(&self) -> Option<&RateSchedule> {
        let pace = match self {
            Validated::Load(o) => &o.pace,
            Validated::Latency(o) => return Some(&o.schedule).filter(|s| !s.is_fixed()),
            Validated::Request(o) => &o.pace,
            Validated::JsPub(o) => &o.publish.pace,
            Validated::Grpc(o) => &o.pace,
            Validated::Reply(_)
            | Validated::Conns(_)
            | Validated::JsConsume(_)
            | Validated::Kv(_) => return None,
        };
        pace.schedule().filter(|s| !s.is_fixed())
    }

    /// The NATS server the scenario's clients use, and the link to reach it over; none for
    /// gRPC.
    pub fn server(&self) -> Option<(&ServerChoice, Option<LinkSpec>)> {
        Some(match self {
            Validated::Load(o) => (&o.server, o.conn.link),
            Validated::Latency(o) => (&o.server_a, o.conn.link),
            Validated::Request(o) => (&o.server, o.conn.link),
            Validated::Reply(o) => (&o.server, o.conn.link),
            Validated::Conns(o) => (&o.server, o.conn.link),
            Validated::JsPub(o) => (&o.publish.server, o.publish.conn.link),
            Validated::JsConsume(o) => (&o.server, o.conn.link),
            Validated::Kv(o) => (&o.put.publish.server, o.put.publish.conn.link),
            Validated::Grpc(_) => return None,
        })
    }
}
