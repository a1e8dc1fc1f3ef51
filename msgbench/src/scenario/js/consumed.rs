//! What a `js consume` run adds up to: the consumers' pulls made into one result. Delivery is
//! accounted by stream sequence against what the consumers owed (what this run's publisher was
//! acknowledged, or the stream's first messages), the consumer's report says how they pulled,
//! and the publisher's side (its rate, its errors, its own reconciliation) joins in.

use std::time::Instant;

use super::consume::Owed;
use super::{ConsumeParams, JsConsumeOptions, Source};
use crate::engine::pull::{PullCounts, PullEnd};
use crate::engine::request::JsAcks;
use crate::error::ErrorCounts;
use crate::result::{throughput_sections, ConsumeReport, JsReport, LatencyStats};
use crate::result::{RunResult, ServerMeta};
use crate::stats::acks::AckSet;
use crate::stats::delivery::Delivery;
use crate::stats::latency::new_histogram;
use crate::stats::throughput::{ClientRun, Role};
use crate::stats::timeline::Meter;

/// What every consumer shares: the stream sequences delivered so far.
pub(super) struct Seen {
    pub set: AckSet,
    pub duplicates: u64,
    pub duplicate_seqs: Vec<u64>,
}

/// What one consumer measured.
pub(super) struct Consumed {
    pub msgs: u64,
    pub bytes: u64,
    pub last: Option<Instant>,
    pub latency: hdrhistogram::Histogram<u64>,
    pub end: PullEnd,
    pub counts: PullCounts,
}

/// What the consumers did together: each one's figures, the sequences they saw, and when
/// they started.
pub(super) struct Pulled {
    pub consumers: Vec<Consumed>,
    pub seen: Seen,
    pub zero: Instant,
}

/// What this run published: the publisher's result, its reconciliation with the stream, and
/// the sequences acknowledged to it.
pub(super) type Published = (RunResult, JsReport, Vec<JsAcks>);

/// What the result says of the run besides the pulls.
pub(super) struct Run<'a> {
    pub opts: &'a JsConsumeOptions,
    pub started_at: String,
    pub server: ServerMeta,
    pub errors: &'a ErrorCounts,
    pub interrupted: bool,
    pub consumer: String,
    /// The first consumer's global id (on agents, this agent's block).
    pub base: u32,
    /// An agent's share: its section is what it consumed, for the coordinator to add up.
    pub share: bool,
}

/// The run's result.
pub(super) fn assemble(run: Run<'_>, owed: Owed, pulled: Pulled, meter: &Meter) -> RunResult {
    let Pulled {
        consumers,
        seen,
        zero,
    } = pulled;
    // What the consumers owed: what this run's publisher was acknowledged, or the stream's
    // first `goal` messages.
    let (expected, missing, missing_seqs) = match &owed.published {
        Some((_, _, acks)) => {
            let (n, listed) = acks[0].acked.missing_from(&seen.set);
            (acks[0].acked.len(), n, listed)
        }
        // An agent of consumers alone, beside others' publishers: what was owed is the
        // coordinator's to say (a live schedule's count is not known here).
        None if run.share && run.opts.source != Source::Stream => (seen.set.len(), 0, Vec::new()),
        None => {
            let (n, listed) = seen.set.gaps_through(owed.start + owed.goal - 1);
            (owed.goal, n, listed)
        }
    };
    let counts = consumers.iter().fold(PullCounts::default(), |mut a, c| {
        a.requests += c.counts.requests;
        a.acks_sent += c.counts.acks_sent;
        a.redelivered += c.counts.redelivered;
        a.sequence_breaks += c.counts.sequence_breaks;
        a
    });
    let runs: Vec<ClientRun> = consumers
        .iter()
        .enumerate()
        .map(|(i, c)| ClientRun {
            role: Role::Sub,
            id: run.base + i as u32,
            msgs: c.msgs,
            bytes: c.bytes,
            start: Some(zero),
            end: c.last.or(Some(zero)),
        })
        .collect();
    meter.counted_until(runs.iter().map(|r| r.end));
    let (throughput, by_role, clients) = throughput_sections(&runs);
    let mut latency = new_histogram();
    for c in &consumers {
        latency.add(&c.latency).expect("same bounds");
    }
    let opts = run.opts;
    let report = ConsumeReport {
        stream: opts.stream.name.clone(),
        consumer: run.consumer,
        mode: opts.mode.as_str(),
        ack: opts.ack.as_str(),
        batch: opts.batch,
        publish: opts.source.as_str(),
        expected,
        consumed: seen.set.len(),
        pull_requests: counts.requests,
        acks_sent: counts.acks_sent,
        redelivered: counts.redelivered,
        sequence_breaks: counts.sequence_breaks,
        ended: ended(&consumers),
        reconciled: missing == 0 && seen.duplicates == 0 && counts.sequence_breaks == 0,
        first_seq: owed.start,
        consumed_fingerprint: None,
    };
    // An agent speaks for what it consumed only: the coordinator adds the shares up.
    let (report, expected, missing, missing_seqs) = if run.share {
        let share = ConsumeReport {
            reconciled: false,
            consumed_fingerprint: Some(crate::stats::acks::hex(seen.set.fingerprint())),
            ..report
        };
        (share, seen.set.len(), 0, None)
    } else {
        (report, expected, missing, Some(missing_seqs))
    };
    let mut result = RunResult {
        plan: None,
        throughput,
        by_role,
        clients,
        delivery: Delivery {
            sent: owed
                .published
                .as_ref()
                .map_or(expected, |(r, _, _)| r.delivery.sent),
            expected,
            received: consumers.iter().map(|c| c.msgs).sum(),
            lost: missing,
            duplicated: Some(seen.duplicates),
            reordered: None,
            unstamped: 0,
            accounting: "stream_sequence",
            publishers: Vec::new(),
            missing_seqs,
            duplicate_seqs: Some(seen.duplicate_seqs),
            unmeasured: Default::default(),
        },
        latency: (!latency.is_empty()).then(|| LatencyStats::of(&latency)),
        ..RunResult::new(
            "js.consume",
            run.started_at,
            crate::result::Params::of(ConsumeParams::of(opts)),
            run.server,
            run.errors,
            run.interrupted,
        )
    };
    // An agent given publishers alone consumed nothing to speak of.
    if !run.share || !consumers.is_empty() {
        result.own.put(report);
    }
    if let Some(published) = owed.published {
        add_publisher(&mut result, published);
    }
    result
}

/// How the consumers' pulling ended: the first that failed, was stopped or went idle, or else
/// how the first ended.
fn ended(consumers: &[Consumed]) -> &'static str {
    let end = consumers
        .iter()
        .map(|c| c.end)
        .find(|e| matches!(e, PullEnd::Failed(_) | PullEnd::Stopped | PullEnd::Idle))
        .or(consumers.first().map(|c| c.end))
        .unwrap_or(PullEnd::Stopped);
    match end {
        PullEnd::Done => "done",
        PullEnd::Drained => "drained",
        PullEnd::Idle => "idle",
        PullEnd::Stopped => "stopped",
        PullEnd::Failed(_) => "failed",
    }
}

/// The publisher's side: its rate, its clients, its errors, and its own reconciliation with
/// the stream.
fn add_publisher(result: &mut RunResult, (published, js, _): Published) {
    if let Some(p) = published.by_role.get("pub") {
        result.by_role.insert("pub", p.clone());
    }
    result.clients.extend(
        published
            .clients
            .into_iter()
            .filter(|c| c.role == Role::Pub),
    );
    for (k, n) in published.errors {
        *result.errors.entry(k).or_default() += n;
    }
    result.connections.absorb(&published.connections);
    // A scheduled publisher's stages.
    result.schedule = published.schedule;
    result.failure = result.failure.or(published.failure);
    result.own.put(js);
}

/// One agent's consumer section, as its result document has it.
#[derive(Debug, serde::Deserialize)]
struct ConsumeShare {
    consumer: String,
    expected: u64,
    consumed: u64,
    pull_requests: u64,
    acks_sent: u64,
    redelivered: u64,
    sequence_breaks: u64,
    ended: String,
    first_seq: u64,
    consumed_fingerprint: Option<String>,
}

/// The coordinator's part of a `js consume` on agents: the agents' consumer sections added up
/// into one, reconciled when their counts make the messages owed and their fingerprints add up
/// to that of the owed range (a message delivered to two agents and another to none would
/// change it); then the shared consumer deleted, and the stream when asked. An agent that
/// sent no result leaves the run unreconciled: what it consumed is unknown.
///
/// # Errors
/// None: what cannot be concluded is said in the result.
pub(super) fn conclude(
    opts: &JsConsumeOptions,
    merged: &mut RunResult,
    target: &crate::server::Target,
) -> crate::error::Result<()> {
    let agents = merged.agent_entries();
    // Every agent given consumers speaks for what they consumed.
    let shares: Option<Vec<ConsumeShare>> = agents
        .iter()
        .filter(|a| a.subs > 0)
        .map(|a| a.part("/consumer"))
        .collect();
    let Some(shares) = shares.filter(|s| !s.is_empty()) else {
        return Ok(());
    };
    let sum = |f: fn(&ConsumeShare) -> u64| shares.iter().map(f).sum::<u64>();
    let first = shares[0].first_seq;
    let mut api = super::stream::api_conn(target, &opts.conn, opts.timeout);
    // What the consumers owed: the stream's first messages, or every one acknowledged to the
    // agents' publishers (reconciled with the stream here, as js pub's are).
    let (expected, owed, sent) = match opts.source {
        Source::Stream => {
            let n = shares[0].expected;
            let range = crate::stats::acks::range_fingerprint(first, first + n - 1);
            (n, Some(range), n)
        }
        Source::Before | Source::Live => {
            let reports =
                super::publish::across_agents(std::slice::from_ref(&opts.stream), agents, &mut api);
            let acked = reports[0].acked;
            let fingerprint = reports[0].acked_fingerprint.as_deref();
            let owed = crate::stats::acks::sum_hex(std::iter::once(fingerprint));
            let sent = agents
                .iter()
                .filter(|a| a.pubs > 0)
                .filter_map(|a| a.part::<u64>("/delivery/sent"))
                .sum();
            let storage = super::publish::storage_of(&reports, &opts.stream);
            merged.own.put(JsReport::of(&storage, "async", reports));
            (acked, owed, sent)
        }
    };
    let fingerprint =
        crate::stats::acks::sum_hex(shares.iter().map(|s| s.consumed_fingerprint.as_deref()));
    let consumed = sum(|s| s.consumed);
    let duplicated = merged.delivery.duplicated.unwrap_or(0);
    let breaks = sum(|s| s.sequence_breaks);
    // How the pulling ended: the first agent whose consumers did not end well, or drained.
    let ended = shares
        .iter()
        .map(|s| s.ended.as_str())
        .find(|e| matches!(*e, "failed" | "stopped" | "idle"))
        .unwrap_or(shares[0].ended.as_str());
    let ended = ["done", "drained", "idle", "stopped", "failed"]
        .into_iter()
        .find(|e| *e == ended)
        .unwrap_or("failed");
    merged.own.put(ConsumeReport {
        stream: opts.stream.name.clone(),
        consumer: shares[0].consumer.clone(),
        mode: opts.mode.as_str(),
        ack: opts.ack.as_str(),
        batch: opts.batch,
        publish: opts.source.as_str(),
        expected,
        consumed,
        pull_requests: sum(|s| s.pull_requests),
        acks_sent: sum(|s| s.acks_sent),
        redelivered: sum(|s| s.redelivered),
        sequence_breaks: breaks,
        ended,
        reconciled: consumed == expected
            && fingerprint.is_some()
            && fingerprint == owed
            && duplicated == 0
            && breaks == 0,
        first_seq: first,
        consumed_fingerprint: fingerprint.map(crate::stats::acks::hex),
    });
    let d = &mut merged.delivery;
    d.expected = expected;
    d.sent = sent;
    d.lost = expected.saturating_sub(consumed);
    // Across agents the sequences are not listed: each agent holds only its own.
    d.missing_seqs = None;
    if let Ok(mut api) = api {
        let _ = api.delete_consumer(&opts.stream.name, &shares[0].consumer);
        super::stream::clean_up(api, std::slice::from_ref(&opts.stream), opts.delete_after);
    }
    Ok(())
}
