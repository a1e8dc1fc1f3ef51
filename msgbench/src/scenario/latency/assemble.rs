//! The last step of a latency run: the result, from what each side measured. Nothing here
//! touches a connection; every figure comes from the publisher's counts and send-time ring,
//! the subscriber's recorder, and the run's settings ([`Run`]).

use std::sync::atomic::Ordering;

use super::run::{with_suffix, Measured, Received, Run};
use crate::engine::load::PubOutcome;
use crate::engine::pace::Stop;
use crate::error::{Error, Result};
use crate::result::{
    throughput_sections, LatencyStats, Pacing, Rtt, RunResult, ScheduleReport, ServerMeta,
};
use crate::stats::delivery::{Delivery, PublisherDelivery};
use crate::stats::hdr::percentile_distribution;
use crate::stats::latency::LatencyRecorder;
use crate::stats::recovery::FaultReport;
use crate::stats::throughput::ClientRun;

/// Writes the corrected and uncorrected percentile distributions beside `--hist`'s interval
/// log.
pub(super) fn write_hist(prefix: &std::path::Path, rec: &LatencyRecorder<'_>) -> Result<()> {
    for (suffix, h) in [
        ("hgrm", &rec.corrected),
        ("uncorrected.hgrm", &rec.uncorrected),
    ] {
        let path = with_suffix(prefix, suffix);
        std::fs::write(&path, percentile_distribution(h))
            .map_err(|e| Error::io(format!("cannot write --hist file '{}'", path.display()), e))?;
    }
    Ok(())
}

/// The result, from what each side measured, into `base` (the run's header).
pub(super) fn assemble(
    run: &Run<'_>,
    m: &Measured<'_>,
    rtt: Option<Rtt>,
    server_b: Option<ServerMeta>,
    base: RunResult,
) -> RunResult {
    let opts = run.opts;
    // What the publisher sent: its own count, or (subscriber alone) what its agent said.
    let sent = m.publisher.as_ref().map_or_else(
        || m.everyone.as_ref().map_or(0, |a| a.iter().sum()),
        |p| p.run.msgs,
    );
    let zero = run.epoch.get().copied();
    let probes_seen = run.probes.load(Ordering::Acquire);
    let sub_run = m.sub.as_ref().map(|r| ClientRun {
        msgs: r.out.run.msgs.saturating_sub(probes_seen),
        bytes: (r.out.run.bytes).saturating_sub(probes_seen * opts.size as u64),
        start: zero.or(r.out.run.start),
        ..r.out.run
    });
    let runs: Vec<ClientRun> = m.publisher.iter().map(|p| p.run).chain(sub_run).collect();
    run.meter.counted_until(runs.iter().map(|r| r.end));
    let (throughput, by_role, clients) = throughput_sections(&runs);
    let recorder = m.sub.as_ref().map(|r| &r.recorder);
    let latency = recorder.map(|r| LatencyStats::of(&r.rec.corrected));
    // Across hosts there is no send time to read: the publisher's ring is in another process.
    let latency_uncorrected = recorder
        .filter(|_| !run.cross)
        .map(|r| LatencyStats::of(&r.rec.uncorrected));
    let stages = run.stage_totals.as_ref().map(|totals| {
        ScheduleReport::new(
            &opts.schedule,
            &run.schedule.sent_by_stage(sent),
            1,
            m.sub.is_some().then(|| totals.take()),
        )
        .with_warmup(opts.warmup)
    });
    RunResult {
        schedule: stages,
        plan: None,
        throughput,
        by_role,
        clients,
        delivery: delivery(sent, m.sub.as_ref().zip(sub_run)),
        latency,
        latency_uncorrected,
        pacing: pacing(run, m.publisher.as_ref(), sent),
        rtt_ns: rtt,
        server_b,
        fault: fault(run, m),
        ..base
    }
}

/// Exact delivery from the subscriber's sequence numbers, or a publisher alone's count.
fn delivery(sent: u64, sub: Option<(&Received<'_>, ClientRun)>) -> Delivery {
    let Some((r, sub_run)) = sub else {
        // A publisher alone: what it sent, for the subscriber's agent to account for.
        return Delivery {
            sent,
            accounting: "none",
            publishers: vec![PublisherDelivery {
                id: 0,
                sent,
                received: 0,
                lost: 0,
                duplicated: 0,
                reordered: 0,
            }],
            unmeasured: crate::stats::delivery::Unmeasured::ARRIVALS,
            ..Delivery::default()
        };
    };
    let t = &r.recorder.rec.tracker;
    let lost = sent.saturating_sub(t.unique);
    Delivery {
        sent,
        expected: sent,
        received: sub_run.msgs,
        lost,
        duplicated: Some(t.duplicated),
        reordered: Some(t.reordered),
        unstamped: r.recorder.unstamped,
        accounting: "exact",
        publishers: vec![PublisherDelivery {
            id: 0,
            sent,
            received: t.unique + t.duplicated,
            lost,
            duplicated: t.duplicated,
            reordered: t.reordered,
        }],
        missing_seqs: None,
        duplicate_seqs: None,
        unmeasured: Default::default(),
    }
}

/// How closely the publisher kept to the rate, from its own send times.
fn pacing(run: &Run<'_>, publisher: Option<&PubOutcome>, sent: u64) -> Option<Pacing> {
    let opts = run.opts;
    let last_send_ns = sent
        .checked_sub(1)
        .and_then(|last| run.send_times.get(last));
    let actual_rate = match last_send_ns {
        Some(ns) if sent > 1 && ns > 0 => Some((sent - 1) as f64 / (ns as f64 / 1e9)),
        _ => None,
    };
    publisher.and_then(|p| {
        p.send_lag.as_ref().map(|lag| {
            Pacing::new(
                opts.rate(),
                actual_rate,
                opts.late_bound.as_nanos() as u64,
                p.late_sends,
                lag,
            )
            .with_write_blocked(crate::scenario::pacing::write_blocked_pct(
                std::slice::from_ref(p),
            ))
        })
    })
}

/// The fault and the subscriber's recovery from it.
fn fault(run: &Run<'_>, m: &Measured<'_>) -> Option<FaultReport> {
    let opts = run.opts;
    let recovery = m.sub.as_ref().map(|r| &r.recovery);
    run.injector.as_ref().zip(recovery).map(|(inj, recovery)| {
        let end_ns = match opts.stop {
            Stop::For(d) => d.as_nanos() as u64,
            Stop::Count(n) => run.schedule.due_ns(n).unwrap_or(u64::MAX),
        };
        let pace = crate::engine::pace::Pace::Open(opts.schedule.clone());
        let mut report = inj.report(&[recovery], &pace, 1, end_ns);
        report.missed_allowed = opts.conn.allow_missed_faults;
        report
    })
}
