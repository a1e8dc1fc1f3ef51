//! JetStream publishing: make sure the stream exists (purged if asked), run the publishers as
//! requesters whose replies are PubAcks, then reconcile what was acknowledged with what the
//! stream holds, sequence by sequence.

use std::sync::atomic::AtomicBool;

use serde::Serialize;

use crate::engine::conn::{self, ConnectSpec};
use crate::engine::jsapi::{self, StreamState};
use crate::error::{ErrorCounts, Result};
use crate::options::js::JsPubOptions;
use crate::result::RunResult;
use crate::scenario::request;
use crate::server::Target;

/// The result's `jetstream` section.
#[derive(Debug, Clone, Serialize)]
pub struct JsReport {
    pub stream: String,
    pub storage: String,
    pub mode: &'static str,
    /// Distinct stream sequences acknowledged to the publishers.
    pub acked: u64,
    /// Acknowledgements for a sequence already acknowledged, or marked duplicate by the server.
    pub duplicate_acks: u64,
    /// The stream before and after the run.
    pub before: StreamState,
    pub after: StreamState,
    /// Sequences the stream assigned during the run (`after.last_seq - before.last_seq`).
    pub stored: u64,
    /// Sequences stored during the run whose acknowledgement never arrived, and the first few.
    pub unacked_stored: u64,
    pub unacked_seqs: Vec<u64>,
    /// Whether every stored message was acknowledged exactly once and (with no limits that
    /// discard) the stream grew by exactly that many.
    pub reconciled: bool,
}

/// Runs `msgbench js pub`.
///
/// # Errors
/// Failures before publishing: server, connection, JetStream disabled, a stream that cannot be
/// created.
pub fn run_pub(opts: &JsPubOptions, target: &Target, stop: &AtomicBool) -> Result<RunResult> {
    let p = &opts.publish;
    let mut setup = conn::connect(
        &ConnectSpec {
            servers: &target.urls,
            name: "msgbench-js-setup",
            opts: &p.conn,
            stall_limit: p.timeout,
        },
        std::sync::Arc::new(ErrorCounts::default()),
    )?;
    let api_timeout = p.timeout;
    jsapi::ensure_stream(&mut setup, &opts.stream, api_timeout)?;
    if opts.purge {
        jsapi::purge_stream(&mut setup, &opts.stream.name, api_timeout)?;
    }
    let before = jsapi::stream_state(&mut setup, &opts.stream.name, api_timeout)?;
    let publish = crate::options::request::RequestOptions {
        js_base: Some(before.last_seq + 1),
        ..p.clone()
    };
    let (mut result, acks) = request::run_requests(&publish, target, stop)?;
    let after = jsapi::stream_state(&mut setup, &opts.stream.name, api_timeout)?;
    let (acked, dups) = acks.expect("js_base set");
    let stored = after.last_seq.saturating_sub(before.last_seq);
    let (unacked_stored, unacked_seqs) = acked.gaps_through(after.last_seq);
    let unlimited = opts.stream.max_bytes < 0;
    let grew_by_acked = !unlimited || after.messages.saturating_sub(before.messages) == acked.len();
    result.params = opts.params();
    result.jetstream = Some(JsReport {
        stream: opts.stream.name.clone(),
        storage: opts.stream.storage.clone(),
        mode: opts.mode,
        acked: acked.len(),
        duplicate_acks: dups,
        before,
        after,
        stored,
        unacked_stored,
        unacked_seqs,
        reconciled: dups == 0 && unacked_stored == 0 && stored == acked.len() && grew_by_acked,
    });
    if opts.delete_after {
        jsapi::delete_stream(&mut setup, &opts.stream.name, api_timeout)?;
    }
    setup.shared.close();
    Ok(result)
}
