//! A JetStream run's stream, before and after its clients: creating (or finding) the streams
//! and checking that they capture what will be published, purging them if asked, publishing
//! with acknowledgements, then reconciling the acknowledgements with each stream's state, and
//! deleting what the run made when asked to. `js pub`, `kv` and `js consume` all stand on it.

use std::sync::atomic::AtomicBool;

use crate::engine::jsapi::{Api, StreamConfig, StreamState};
use crate::error::{Error, Result};
use crate::options::conn::ConnOptions;
use crate::result::{JsReport, RunResult, StreamReport};
use crate::scenario::request::RequestOptions;
use crate::scenario::request::{self, JsAcks};
use crate::server::Target;
use crate::stats::timeline::Meter;

/// One stream's reconciliation: the acknowledgements against its state after the run, or,
/// when that state could not be read (`after` is the error), what was acknowledged and why
/// nothing more can be said.
pub(super) fn reconcile(
    cfg: &StreamConfig,
    before: StreamState,
    after: Result<StreamState>,
    acks: &JsAcks,
) -> StreamReport {
    let (acked, dups) = (&acks.acked, acks.duplicate_acks);
    let mut report = StreamReport {
        name: cfg.name.clone(),
        acked: acked.len(),
        duplicate_acks: dups,
        deduplicated: acks.deduplicated,
        before,
        after: None,
        stored: None,
        unacked_stored: None,
        unacked_seqs: Vec::new(),
        reconciled: false,
        unread: None,
    };
    let after = match after {
        Ok(a) => a,
        Err(e) => {
            let mut why = e.to_string();
            if cfg.storage == "memory"
                && matches!(
                    e,
                    Error::JetStream {
                        kind: crate::error::ErrorKind::JsStreamNotFound,
                        ..
                    }
                )
            {
                why.push_str(
                    " (a memory stream does not survive a server restart: the messages acknowledged \
                     into it are gone with it)",
                );
            }
            report.unread = Some(why);
            return report;
        }
    };
    let stored = after.last_seq.saturating_sub(before.last_seq);
    let (unacked_stored, unacked_seqs) = acked.gaps_through(after.last_seq);
    let grew_by_acked =
        cfg.limited() || after.messages.saturating_sub(before.messages) == acked.len();
    report.reconciled = dups == 0 && unacked_stored == 0 && stored == acked.len() && grew_by_acked;
    report.after = Some(after);
    report.stored = Some(stored);
    report.unacked_stored = Some(unacked_stored);
    report.unacked_seqs = unacked_seqs;
    report
}

/// The API client of a run, on a connection of its own.
pub(super) fn api_conn(
    target: &Target,
    opts: &ConnOptions,
    timeout: std::time::Duration,
) -> Result<Api> {
    Api::connect(&target.urls, "msgbench-js-setup", &opts.dial, timeout)
}

/// Deletes what the run made when asked to; a failure is told on stderr and does not cost the
/// result (the run's figures are all in by now).
pub(super) fn clean_up(api: Api, streams: &[StreamConfig], delete: bool) {
    let mut api = api;
    if delete {
        for cfg in streams {
            if let Err(e) = api.delete_stream(&cfg.name) {
                eprintln!(
                    "warning: --delete-after: stream {} was not deleted: {e}",
                    cfg.name
                );
            }
        }
    }
    api.close();
}

/// Creates (or finds) the streams, checks that they capture what `publish` will send (by the
/// subjects the server reports), purges them if asked, and returns their states.
pub(super) fn open_streams(
    api: &mut Api,
    streams: &[StreamConfig],
    publish: Option<&RequestOptions>,
    purge: bool,
) -> Result<Vec<StreamState>> {
    let mut before = Vec::new();
    let mut captured = Vec::new();
    for cfg in streams {
        captured.push(api.ensure_stream(cfg)?);
    }
    if let Some(p) = publish {
        // An empty list means the server did not say; the options were checked already.
        super::capture::check_publish(p, |k| {
            Some((streams.get(k)?.name.as_str(), captured.get(k)?.as_slice()))
                .filter(|(_, subjects)| !subjects.is_empty())
        })?;
    }
    for cfg in streams {
        if purge {
            api.purge_stream(&cfg.name)?;
        }
        before.push(api.stream_state(&cfg.name)?);
    }
    Ok(before)
}

/// Publishes with acknowledgements into streams whose states are `before`, then reconciles.
/// A stream whose state cannot be read afterwards is reported as such: what was published and
/// acknowledged is kept.
#[allow(clippy::too_many_arguments)] // each is a distinct part of the run; a struct would only rename them
pub(super) fn publish_and_reconcile(
    p: &RequestOptions,
    mode: &'static str,
    streams: &[StreamConfig],
    before: &[StreamState],
    api: &mut Api,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
) -> Result<(RunResult, JsReport, Vec<JsAcks>)> {
    let publish = RequestOptions {
        js_bases: Some(before.iter().map(|s| s.last_seq + 1).collect()),
        ..p.clone()
    };
    let (result, acks) = request::run_requests(&publish, target, meter, stop, None)?;
    let acks = acks.expect("js_bases set");
    let reports = streams
        .iter()
        .zip(before)
        .zip(&acks)
        .map(|((cfg, before), acks)| reconcile(cfg, *before, api.stream_state(&cfg.name), acks))
        .collect();
    let report = JsReport::of(&streams[0].storage, mode, reports);
    Ok((result, report, acks))
}
