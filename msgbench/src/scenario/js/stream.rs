//! A JetStream run's stream, before and after its clients: creating (or finding) the streams
//! and checking that they capture what will be published, purging them if asked, publishing
//! with acknowledgements, then reconciling the acknowledgements with each stream's state, and
//! deleting what the run made when asked to. `js pub`, `kv` and `js consume` all stand on it.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crate::engine::jsapi::{self, Api, StreamConfig, StreamState};
use crate::engine::request::JsAcks;
use crate::error::{Error, ErrorKind, Result};
use crate::options::conn::ConnOptions;
use crate::result::{JsReport, RunResult, StreamReport};
use crate::scenario::request;
use crate::scenario::request::RequestOptions;
use crate::scenario::Share;
use crate::server::Target;
use crate::stats::acks::{hex, range_fingerprint, sum_hex};
use crate::stats::timeline::Meter;

/// An agent's share of a stream's reconciliation: what its publishers were acknowledged, as a
/// count and a fingerprint. The stream's state after the run is read once, by the coordinator,
/// when every agent is done ([`reconcile_across`]): an agent that read it would see the others
/// still publishing.
pub(super) fn share_report(cfg: &StreamConfig, before: StreamState, acks: &JsAcks) -> StreamReport {
    StreamReport {
        name: cfg.name.clone(),
        acked: acks.acked.len(),
        duplicate_acks: acks.duplicate_acks,
        repeated_acks: acks.repeated_acks,
        deduplicated: acks.deduplicated,
        before,
        after: None,
        stored: None,
        unacked_stored: None,
        unacked_seqs: Vec::new(),
        reconciled: false,
        unread: Some(AGENT_SHARE.into()),
        acked_fingerprint: Some(hex(acks.acked.fingerprint())),
        config: None,
        found: None,
    }
}

/// Why an agent's own stream section has no state after the run.
const AGENT_SHARE: &str = "an agent's share: the coordinator reconciles the stream across agents";

/// One agent's part of a stream's reconciliation, as its result document has it.
#[derive(Debug, serde::Deserialize)]
pub(super) struct SharePart {
    acked: u64,
    duplicate_acks: u64,
    #[serde(default)]
    repeated_acks: u64,
    deduplicated: u64,
    before: StreamState,
    acked_fingerprint: Option<String>,
    #[serde(default)]
    found: Option<bool>,
}

/// A stream reconciled across agents: the sum of what each was acknowledged against the
/// stream's state once all are done. Exact without the sequences themselves: each agent's set
/// has no duplicate (it counts them), the counts add up to the sequences stored, and the
/// fingerprints add up to the stored range's, which a sequence acknowledged to two agents and
/// another to none would change. `parts` is None when an agent sent no result: its
/// acknowledgements are unknown, and the stream is said not to reconcile, with why.
pub(super) fn reconcile_across(
    cfg: &StreamConfig,
    parts: Option<&[SharePart]>,
    after: Result<StreamState>,
) -> StreamReport {
    let parts = parts.unwrap_or_default();
    let before = parts.first().map(|p| p.before).unwrap_or_default();
    let sum = |f: fn(&SharePart) -> u64| parts.iter().map(f).sum::<u64>();
    let fingerprint = sum_hex(parts.iter().map(|p| p.acked_fingerprint.as_deref()));
    let mut report = StreamReport {
        name: cfg.name.clone(),
        acked: sum(|p| p.acked),
        duplicate_acks: sum(|p| p.duplicate_acks),
        repeated_acks: sum(|p| p.repeated_acks),
        deduplicated: sum(|p| p.deduplicated),
        before,
        after: None,
        stored: None,
        unacked_stored: None,
        unacked_seqs: Vec::new(),
        reconciled: false,
        unread: None,
        acked_fingerprint: fingerprint.map(hex),
        config: None,
        // Created by the run when any agent did: the first to open it.
        found: parts
            .iter()
            .map(|p| p.found)
            .collect::<Option<Vec<bool>>>()
            .map(|f| f.iter().all(|found| *found)),
    };
    let after = match after {
        Ok(a) => a,
        Err(e) => {
            report.unread = Some(e.to_string());
            return report;
        }
    };
    let stored = after.last_seq.saturating_sub(before.last_seq);
    let exact = fingerprint == Some(range_fingerprint(before.last_seq + 1, after.last_seq));
    let grew_by_acked =
        cfg.limited() || after.messages.saturating_sub(before.messages) == report.acked;
    report.reconciled = !parts.is_empty()
        && parts.iter().all(|p| p.before.last_seq == before.last_seq)
        && report.duplicate_acks == 0
        && stored == report.acked
        && exact
        && grew_by_acked;
    report.after = Some(after);
    report.stored = Some(stored);
    report.unacked_stored = Some(stored.saturating_sub(report.acked));
    report
}

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
        repeated_acks: acks.repeated_acks,
        deduplicated: acks.deduplicated,
        before,
        after: None,
        stored: None,
        unacked_stored: None,
        unacked_seqs: Vec::new(),
        reconciled: false,
        unread: None,
        acked_fingerprint: None,
        config: None,
        found: None,
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

/// How long a stream's state is waited for after the run, while no one answers for it: a
/// stream whose leader went down with a node (a user's own cluster losing one under the run)
/// answers again once a leader is elected, which nats-server's raft groups take 4 to 9 s to
/// do, and a loaded machine longer. A run that gave up sooner would call the stream unread.
const STATE_WAIT: Duration = Duration::from_secs(30);

/// `read` (a state of the stream, after the run) asked again while nobody answers for the
/// stream (the request times out, or has no responders), for [`STATE_WAIT`] at most; any
/// other answer, an error too, at once.
pub(super) fn after_run<T>(
    api: &mut Api,
    mut read: impl FnMut(&mut Api) -> Result<T>,
) -> Result<T> {
    let until = Instant::now() + STATE_WAIT;
    loop {
        match read(api) {
            Err(
                Error::Connect { .. }
                | Error::JetStream {
                    kind: ErrorKind::NoResponders,
                    ..
                },
            ) if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(200));
            }
            other => return other,
        }
    }
}

/// The API client of a run, on a connection of its own.
pub(super) fn api_conn(
    target: &Target,
    opts: &ConnOptions,
    timeout: std::time::Duration,
) -> Result<Api> {
    Api::connect(
        target.every_node(),
        "msgbench-js-setup",
        &opts.dial,
        timeout,
    )
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

/// The run's streams as it opened them: each one's configuration as the server has it, and
/// its state before the run.
pub(super) struct Opened {
    pub streams: Vec<jsapi::Opened>,
    pub before: Vec<StreamState>,
}

/// Opens the run's streams as `setup` says ([`Api::open_stream`]), checks that they capture
/// what `publish` sends, and purges them when asked, before reading their states.
///
/// # Errors
/// A stream that cannot be had, or does not capture a publish subject.
pub(super) fn open_streams(
    api: &mut Api,
    streams: &[StreamConfig],
    setup: jsapi::Setup,
    publish: Option<&RequestOptions>,
    purge: bool,
) -> Result<Opened> {
    let opened = streams
        .iter()
        .map(|cfg| api.open_stream(cfg, setup))
        .collect::<Result<Vec<_>>>()?;
    if let Some(p) = publish {
        // An empty list means the server did not say; the options were checked already.
        super::capture::check_publish(p, |k| {
            let o = opened.get(k)?;
            Some((o.config.name.as_str(), o.config.subjects.as_slice()))
                .filter(|(_, subjects)| !subjects.is_empty())
        })?;
    }
    let mut before = Vec::new();
    for cfg in streams {
        if purge {
            api.purge_stream(&cfg.name)?;
        }
        before.push(api.stream_state(&cfg.name)?);
    }
    Ok(Opened {
        streams: opened,
        before,
    })
}

/// Publishes with acknowledgements into the streams the run `opened`, then reconciles.
/// A stream whose state cannot be read afterwards is reported as such: what was published and
/// acknowledged is kept. On an agent (`share`), only its publishers run, from the common start,
/// and each stream's section is its share ([`share_report`]).
#[allow(clippy::too_many_arguments)] // each is a distinct part of the run; a struct would only rename them
pub(super) fn publish_and_reconcile(
    p: &RequestOptions,
    mode: &'static str,
    opened: &Opened,
    api: &mut Api,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<(RunResult, JsReport, Vec<JsAcks>)> {
    let publish = RequestOptions {
        js_bases: Some(opened.before.iter().map(|s| s.last_seq + 1).collect()),
        ..p.clone()
    };
    let (result, acks) = request::run_requests(&publish, target, meter, stop, share)?;
    let acks = acks.expect("js_bases set");
    let reports = (opened.streams.iter())
        .zip(&opened.before)
        .zip(&acks)
        .map(|((o, before), acks)| {
            let cfg = &o.config;
            let report = match share {
                Some(_) => share_report(cfg, *before, acks),
                None => reconcile(
                    cfg,
                    *before,
                    after_run(api, |a| a.stream_state(&cfg.name)),
                    acks,
                ),
            };
            report.opened(o)
        })
        .collect();
    let report = JsReport::of(&opened.streams[0].config.storage, mode, reports);
    Ok((result, report, acks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::acks::AckSet;

    fn part(acked: u64, fingerprint: u64) -> SharePart {
        SharePart {
            acked,
            duplicate_acks: 0,
            repeated_acks: 0,
            deduplicated: 0,
            before: StreamState {
                last_seq: 100,
                ..StreamState::default()
            },
            acked_fingerprint: Some(format!("{fingerprint:016x}")),
            found: None,
        }
    }

    fn after(last_seq: u64) -> Result<StreamState> {
        Ok(StreamState {
            messages: last_seq - 100,
            last_seq,
            ..StreamState::default()
        })
    }

    #[test]
    fn a_stream_reconciles_across_agents_only_when_their_fingerprints_add_up_to_the_stored_range() {
        let cfg = StreamConfig {
            name: "s".into(),
            ..StreamConfig::default()
        };
        let (mut a, mut b) = (AckSet::new(101), AckSet::new(101));
        for s in 101..=300 {
            if s % 3 == 0 {
                a.insert(s)
            } else {
                b.insert(s)
            };
        }
        let parts = [
            part(a.len(), a.fingerprint()),
            part(b.len(), b.fingerprint()),
        ];
        let r = reconcile_across(&cfg, Some(&parts), after(300));
        assert!(r.reconciled, "{r:?}");
        assert_eq!(
            (r.acked, r.stored, r.unacked_stored),
            (200, Some(200), Some(0))
        );
        // The same counts, but 299 acknowledged to nobody and 102 to both agents.
        let mut wrong = AckSet::new(101);
        for s in (101..=300).filter(|s| s % 3 != 0 && *s != 299) {
            wrong.insert(s);
        }
        wrong.insert(102);
        assert_eq!(a.len() + wrong.len(), 200);
        let parts = [
            part(a.len(), a.fingerprint()),
            part(wrong.len(), wrong.fingerprint()),
        ];
        let r = reconcile_across(&cfg, Some(&parts), after(300));
        assert!(!r.reconciled, "fingerprints differ: {r:?}");
        assert_eq!(
            r.unacked_stored,
            Some(0),
            "the counts alone would not have told"
        );
        // An agent that sent nothing: unknown, so never reconciled.
        let r = reconcile_across(
            &cfg,
            None,
            Err(Error::Agent("agent x sent no share".into())),
        );
        assert!(!r.reconciled && r.unread.as_deref() == Some("agent x sent no share"));
    }
}
