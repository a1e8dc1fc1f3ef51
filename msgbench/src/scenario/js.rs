//! JetStream publishing: make sure the streams exist (purged if asked), run the publishers as
//! requesters whose replies are PubAcks, then reconcile what was acknowledged with what each
//! stream holds, sequence by sequence.

use std::sync::atomic::AtomicBool;

use serde::Serialize;

use crate::engine::conn::{self, ConnectSpec};
use crate::engine::jsapi::{self, StreamState};
use crate::error::{ErrorCounts, Result};
use crate::options::js::JsPubOptions;
use crate::result::RunResult;
use crate::scenario::request::{self, JsAcks};
use crate::server::Target;

/// The result's `jetstream` section: totals over the streams, and each stream.
#[derive(Debug, Clone, Serialize)]
pub struct JsReport {
    pub storage: String,
    pub mode: &'static str,
    pub acked: u64,
    pub duplicate_acks: u64,
    pub stored: u64,
    pub unacked_stored: u64,
    /// Every stream reconciled.
    pub reconciled: bool,
    pub streams: Vec<StreamReport>,
}

/// One stream's reconciliation.
#[derive(Debug, Clone, Serialize)]
pub struct StreamReport {
    pub name: String,
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
    /// Every stored message acknowledged exactly once and (with no limit that discards) the
    /// stream grown by exactly that many.
    pub reconciled: bool,
}

impl StreamReport {
    fn new(
        name: &str,
        before: StreamState,
        after: StreamState,
        acks: &JsAcks,
        limited: bool,
    ) -> Self {
        let (acked, dups) = acks;
        let stored = after.last_seq.saturating_sub(before.last_seq);
        let (unacked_stored, unacked_seqs) = acked.gaps_through(after.last_seq);
        let grew_by_acked =
            limited || after.messages.saturating_sub(before.messages) == acked.len();
        Self {
            name: name.to_string(),
            acked: acked.len(),
            duplicate_acks: *dups,
            before,
            after,
            stored,
            unacked_stored,
            unacked_seqs,
            reconciled: *dups == 0 && unacked_stored == 0 && stored == acked.len() && grew_by_acked,
        }
    }
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
    let mut before = Vec::new();
    for cfg in &opts.streams {
        jsapi::ensure_stream(&mut setup, cfg, api_timeout)?;
        if opts.purge {
            jsapi::purge_stream(&mut setup, &cfg.name, api_timeout)?;
        }
        before.push(jsapi::stream_state(&mut setup, &cfg.name, api_timeout)?);
    }
    let publish = crate::options::request::RequestOptions {
        js_bases: Some(before.iter().map(|s| s.last_seq + 1).collect()),
        ..p.clone()
    };
    let (mut result, acks) = request::run_requests(&publish, target, stop)?;
    let acks = acks.expect("js_bases set");
    let mut streams = Vec::new();
    for ((cfg, before), acks) in opts.streams.iter().zip(before).zip(&acks) {
        let after = jsapi::stream_state(&mut setup, &cfg.name, api_timeout)?;
        streams.push(StreamReport::new(
            &cfg.name,
            before,
            after,
            acks,
            cfg.max_bytes >= 0,
        ));
    }
    let sum = |f: fn(&StreamReport) -> u64| streams.iter().map(f).sum::<u64>();
    result.params = opts.params();
    result.jetstream = Some(JsReport {
        storage: opts.streams[0].storage.clone(),
        mode: opts.mode,
        acked: sum(|s| s.acked),
        duplicate_acks: sum(|s| s.duplicate_acks),
        stored: sum(|s| s.stored),
        unacked_stored: sum(|s| s.unacked_stored),
        reconciled: streams.iter().all(|s| s.reconciled),
        streams,
    });
    if opts.delete_after {
        for cfg in &opts.streams {
            jsapi::delete_stream(&mut setup, &cfg.name, api_timeout)?;
        }
    }
    setup.shared.close();
    Ok(result)
}
