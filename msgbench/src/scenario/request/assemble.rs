//! The last step of a request run: the result, from what each requester measured. Nothing
//! here touches a connection; every figure comes from the requesters' own counts, windows and
//! reply logs, and the run's settings ([`Run`]).

use super::run::Run;
use crate::engine::load::{PubOutcome, Window};
use crate::engine::pace::{Pace, Stop};
use crate::engine::request::requester::Replies;
use crate::engine::request::{given_up_of, JsAcks};
use crate::error::{ErrorCounts, ErrorKind};
use crate::result::{throughput_sections, LatencyStats, RunResult, ScheduleReport};
use crate::stats::acks::AckSet;
use crate::stats::delivery::{Delivery, PublisherDelivery};
use crate::stats::fault_phases::FaultPhases;
use crate::stats::faults::AckGaps;
use crate::stats::latency::new_histogram;
use crate::stats::recovery::{FaultReport, RecoveryLog};
use crate::stats::throughput::{ClientRun, Role};

/// Counts what failed in flight (timeouts, requests lost with a connection, no responders)
/// into `errors`, before the result reads them.
pub(super) fn count_failures(windows: &[Window], replies: &[Replies<'_>], errors: &ErrorCounts) {
    let no_responders: u64 = replies.iter().map(|r| r.no_responders).sum();
    let timeouts: u64 = windows.iter().map(Window::timeouts).sum();
    errors.add_n(ErrorKind::RequestTimeout, timeouts);
    errors.add_n(
        ErrorKind::LostInFlight,
        windows.iter().map(Window::abandoned).sum(),
    );
    for _ in 0..no_responders {
        errors.add(ErrorKind::NoResponders);
    }
}

/// The result of a run, into `base` (its header), and with JetStream, what each stream
/// acknowledged.
pub(super) fn assemble(
    run: &Run<'_>,
    pub_outs: &[PubOutcome],
    replies: &[Replies<'_>],
    base: RunResult,
) -> (RunResult, Option<Vec<JsAcks>>) {
    let opts = run.opts;
    let zero = run.epoch.get().copied();
    let mut corrected = new_histogram();
    let mut uncorrected = new_histogram();
    for r in replies {
        corrected.add(&r.rec.corrected).expect("same bounds");
        uncorrected.add(&r.rec.uncorrected).expect("same bounds");
    }
    // The requesters' side of the traffic: replies received, from the first request on, until
    // the last answer of any kind or the last request sent, whichever is later: a run whose
    // last good replies came early (a stream full, refusing the rest) must not read as having
    // stored at their rate over the whole run.
    let reply_runs: Vec<ClientRun> = replies
        .iter()
        .zip(pub_outs)
        .enumerate()
        .map(|(i, (r, o))| ClientRun {
            role: Role::Sub,
            id: run.g(i),
            msgs: r.ok,
            bytes: r.bytes,
            start: zero,
            end: [r.last, r.answered, o.run.end]
                .into_iter()
                .flatten()
                .max()
                .or(zero),
        })
        .collect();
    let pub_runs: Vec<ClientRun> = pub_outs.iter().map(|o| o.run).collect();
    run.meter
        .counted_until(pub_runs.iter().chain(&reply_runs).map(|r| r.end));
    let (_, by_role, clients) =
        throughput_sections(&[pub_runs.as_slice(), reply_runs.as_slice()].concat());
    // The headline is completed requests per second.
    let throughput = crate::stats::throughput::Throughput::aggregate(&reply_runs);
    let pacing = match &opts.pace {
        // On an agent the target is its requesters' share of the aggregate rate.
        Pace::Open(sc) => crate::scenario::pacing::pacing(
            sc.mean_rate() * pub_outs.len() as f64 / f64::from(opts.clients.max(1)),
            pub_outs,
            by_role.get("pub"),
        ),
        Pace::Unlimited => None,
    };
    let result = RunResult {
        schedule: stages(run, pub_outs),
        plan: None,
        throughput,
        by_role,
        clients,
        delivery: delivery(pub_outs, replies),
        fault: fault(run, replies),
        pacing,
        latency: Some(LatencyStats::of(&corrected)),
        // Closed loop has no schedule: the round trip is the only latency there is.
        latency_uncorrected: run.open.then(|| LatencyStats::of(&uncorrected)),
        ..base
    };
    (result, js_acks(run, replies))
}

/// Exact delivery: a request is delivered when its good reply came.
fn delivery(pub_outs: &[PubOutcome], replies: &[Replies<'_>]) -> Delivery {
    let sent: u64 = pub_outs.iter().map(|o| o.run.msgs).sum();
    let ok: u64 = replies.iter().map(|r| r.ok).sum();
    let lost = sent.saturating_sub(ok);
    Delivery {
        sent,
        expected: sent,
        received: ok,
        lost,
        duplicated: Some(replies.iter().map(|r| r.rec.tracker.duplicated).sum()),
        reordered: Some(replies.iter().map(|r| r.rec.tracker.reordered).sum()),
        unstamped: 0,
        accounting: "exact",
        publishers: pub_outs
            .iter()
            .zip(replies)
            .map(|(o, r)| PublisherDelivery {
                id: o.run.id,
                sent: o.run.msgs,
                received: r.ok,
                lost: o.run.msgs.saturating_sub(r.ok),
                duplicated: r.rec.tracker.duplicated,
                reordered: r.rec.tracker.reordered,
            })
            .collect(),
        missing_seqs: None,
        duplicate_seqs: None,
        unmeasured: Default::default(),
    }
}

/// The fault and the requesters' recovery from it.
fn fault(run: &Run<'_>, replies: &[Replies<'_>]) -> Option<FaultReport> {
    let opts = run.opts;
    run.injector.as_ref().map(|inj| {
        let logs: Vec<&RecoveryLog> = replies.iter().map(|r| &r.recovery).collect();
        // Closed loop has no schedule to be back on: its end is 0, so it never "recovers".
        let end_ns = match (&run.schedules.first(), opts.stop) {
            (Some(Some(_)), Stop::For(d)) => d.as_nanos() as u64,
            (Some(Some(sc)), Stop::Count(n)) => sc.due_ns(n).unwrap_or(u64::MAX),
            _ => 0,
        };
        let gaps: Vec<&AckGaps<'_>> = replies.iter().filter_map(|r| r.gaps.as_ref()).collect();
        let mut report = inj.report(&logs, &opts.pace, opts.clients, end_ns);
        let phases: Vec<&FaultPhases<'_>> =
            replies.iter().filter_map(|r| r.phases.as_ref()).collect();
        report.faults = inj.events(&gaps, &phases);
        report.missed_allowed = opts.conn.allow_missed_faults;
        report
    })
}

/// Per target stream: every sequence acknowledged to the clients publishing into it.
fn js_acks(run: &Run<'_>, replies: &[Replies<'_>]) -> Option<Vec<JsAcks>> {
    let opts = run.opts;
    opts.js_bases.as_ref().map(|bases| {
        let mut per: Vec<JsAcks> = bases
            .iter()
            .map(|b| JsAcks {
                acked: AckSet::new(*b),
                duplicate_acks: 0,
                repeated_acks: 0,
                deduplicated: 0,
                given_up: Vec::new(),
            })
            .collect();
        for (i, r) in replies.iter().enumerate() {
            let js = &mut per[opts.target_of(i).1];
            js.duplicate_acks += r.dup_acks;
            js.repeated_acks += r.repeated_acks;
            js.deduplicated += r.deduplicated;
            if let Some(zero) = run.epoch.get() {
                let mine = given_up_of(&run.windows[i], r, &run.send_times[i], *zero);
                js.given_up.extend(mine.into_iter().map(|g| (run.g(i), g)));
            }
            if let Some(set) = &r.acks {
                js.duplicate_acks += js.acked.merge(set);
            }
        }
        per
    })
}

/// With a schedule of stages: what was sent in each stage, and what was answered on time.
fn stages(run: &Run<'_>, pub_outs: &[PubOutcome]) -> Option<ScheduleReport> {
    run.stage_totals.as_ref().map(|totals| {
        let sc = totals.schedule();
        let mut sent_by_stage = vec![0u64; sc.stages().len()];
        for (o, part) in pub_outs.iter().zip(&run.schedules) {
            let part = part
                .as_ref()
                .expect("an open loop has a schedule per requester");
            for (t, n) in sent_by_stage.iter_mut().zip(part.sent_by_stage(o.run.msgs)) {
                *t += n;
            }
        }
        let mut report = ScheduleReport::new(sc, &sent_by_stage, 1, Some(totals.take()));
        if run.opts.js_bases.is_some() {
            report.loss_judged_for_the_run();
        }
        report
    })
}
