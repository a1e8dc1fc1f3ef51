//! The last step of a pub, sub or pubsub run: the result, from what each client measured.
//! Nothing here touches a connection; every figure comes from the clients' own counts, stamps
//! and logs ([`Measured`]) and the run's settings ([`Run`]).

use std::sync::atomic::Ordering;

use super::options::ScenarioKind;
use super::run::{Measured, Run};
use crate::engine::pace::{Pace, Stop};
use crate::error::ErrorCounts;
use crate::result::{
    throughput_sections, Pacing, RoleStats, RunResult, ScheduleReport, ServerMeta,
};
use crate::stats::delivery::{self, Delivery, DeliveryLog, Expectation};
use crate::stats::recovery::{FaultReport, RecoveryLog};
use crate::stats::stages::StageTotals;
use crate::stats::throughput::ClientRun;

/// The result of a run.
pub(super) fn assemble(
    run: &Run<'_>,
    m: &Measured,
    started_at: String,
    server: ServerMeta,
    errors: &ErrorCounts,
) -> RunResult {
    let opts = run.opts;
    // In pubsub a subscriber's span starts when publishing starts, not at its first message:
    // delivery rate is end to end, and a short run that arrives in one read is not "infinitely"
    // fast. A lone `sub` has no publish clock and spans first to last message.
    let publish_start = m
        .common_zero
        .or(m.pubs.iter().filter_map(|o| o.run.start).min());
    let runs: Vec<ClientRun> = m
        .pubs
        .iter()
        .map(|o| o.run)
        .chain(m.subs.iter().map(|r| ClientRun {
            start: publish_start.or(r.out.run.start),
            ..r.out.run
        }))
        .collect();
    run.meter.counted_until(runs.iter().map(|r| r.end));
    let (throughput, by_role, clients) = throughput_sections(&runs);
    let sent = sent_by_publisher(run, m);
    let (delivery, missed) = delivery(run, m, &sent);
    RunResult {
        schedule: stages(run, m),
        plan: None,
        fault: fault(run, m),
        pacing: pacing(run, m, by_role.get("pub")),
        throughput,
        by_role,
        clients,
        delivery,
        ..RunResult::new(
            opts.scenario.as_str(),
            started_at,
            opts.params(),
            server,
            errors,
            run.stop.load(Ordering::Relaxed),
        )
    }
    .with_missed(&missed)
}

/// What each publisher sent, indexed by global publisher id: on an agent, every publisher's
/// count when its subscribers were told them, else its own publishers' in their places.
fn sent_by_publisher(run: &Run<'_>, m: &Measured) -> Vec<u64> {
    if let Some(all) = &m.everyone {
        return all.clone();
    }
    let (n_pubs, pub_base) = (run.mine.n_pubs, run.mine.pub_base);
    let total = run.share.map_or(n_pubs, |sh| sh.seg.pubs_total);
    let mut v = vec![0; total.max(pub_base + n_pubs) as usize];
    for (i, o) in m.pubs.iter().enumerate() {
        v[pub_base as usize + i] = o.run.msgs;
    }
    // A run on agents stopped before every publisher's count came: another agent's
    // publisher sent at least what its stamps show arrived (all below the highest
    // sequence seen), so delivery is accounted against that.
    if run.share.is_some() {
        for (id, n) in v.iter_mut().enumerate() {
            let mine = (pub_base..pub_base + n_pubs).contains(&(id as u32));
            if !mine {
                let key = delivery::PublisherKey {
                    run_tag: run.run_tag,
                    publisher: id as u32,
                };
                *n = m
                    .subs
                    .iter()
                    .filter_map(|r| r.log.tracker(key))
                    .map(delivery::SeqTracker::high_mark)
                    .max()
                    .unwrap_or(0);
            }
        }
    }
    v
}

/// Delivery, and each subscriber's own loss by id. The latter goes beside its throughput:
/// the spread of a fan-out names its slowest subscribers with what they missed.
fn delivery(run: &Run<'_>, m: &Measured, sent: &[u64]) -> (Delivery, Vec<(u32, u64)>) {
    let opts = run.opts;
    match opts.scenario {
        ScenarioKind::Pub => (
            Delivery {
                sent: sent.iter().sum(),
                accounting: "none",
                unmeasured: crate::stats::delivery::Unmeasured::ARRIVALS,
                ..Delivery::default()
            },
            Vec::new(),
        ),
        ScenarioKind::Pubsub | ScenarioKind::Sub => {
            let logs: Vec<(u64, &DeliveryLog)> =
                m.subs.iter().map(|r| (r.out.run.msgs, &r.log)).collect();
            let expect = match (opts.scenario, opts.stop) {
                (ScenarioKind::Pubsub, _) => Expectation::Published {
                    run_tag: run.run_tag,
                    sent,
                },
                (_, Stop::Count(n)) => Expectation::PerSubscriber(Some(n)),
                // `sub --duration` is owed no count: only the stamps' gaps tell a loss.
                (_, Stop::For(_)) => Expectation::PerSubscriber(None),
            };
            let summary = delivery::summarize(&logs, &expect);
            // Each subscriber's misses, where loss was counted at all.
            let missed: Vec<(u32, u64)> = if summary.counts().lost.is_some() {
                let ids = m.subs.iter().map(|r| r.out.run.id);
                ids.zip(delivery::missed_by_subscriber(&logs, &expect))
                    .collect()
            } else {
                Vec::new()
            };
            (summary, missed)
        }
    }
}

/// The fault and the recovery from it, from every subscriber's arrivals around it.
fn fault(run: &Run<'_>, m: &Measured) -> Option<FaultReport> {
    let opts = run.opts;
    run.injector.as_ref().map(|inj| {
        let logs: Vec<&RecoveryLog> = m.subs.iter().filter_map(|r| r.recovery.as_ref()).collect();
        let end_ns = match opts.stop {
            Stop::For(d) => d.as_nanos() as u64,
            Stop::Count(n) => opts
                .pace
                .schedule()
                .and_then(|sc| sc.due_ns(n as f64 * f64::from(opts.pubs.max(1))))
                .unwrap_or(u64::MAX),
        };
        // Every subscriber receives every publisher's messages.
        let mut report = inj.report(&logs, &opts.pace, 1, end_ns);
        report.missed_allowed = opts.conn.allow_missed_faults;
        report
    })
}

/// How closely the publishers kept to the rate, when there is one.
fn pacing(run: &Run<'_>, m: &Measured, pubs: Option<&RoleStats>) -> Option<Pacing> {
    let (opts, n_pubs) = (run.opts, run.mine.n_pubs);
    match &opts.pace {
        // An agent's target is its publishers' share of the aggregate rate.
        Pace::Open(sc) if n_pubs > 0 => crate::scenario::pacing::pacing(
            sc.mean_rate() * f64::from(n_pubs) / f64::from(opts.pubs.max(1)),
            &m.pubs,
            pubs,
        ),
        Pace::Open(_) | Pace::Unlimited => None,
    }
}

/// With a schedule of stages: what was sent in each stage, and what arrived.
fn stages(run: &Run<'_>, m: &Measured) -> Option<ScheduleReport> {
    let opts = run.opts;
    run.staged.map(|sc| {
        let mut sent_by_stage = vec![0u64; sc.stages().len()];
        for (i, o) in m.pubs.iter().enumerate() {
            let part = sc.share(run.mine.pub_base + i as u32, opts.pubs.max(1));
            for (t, n) in sent_by_stage.iter_mut().zip(part.sent_by_stage(o.run.msgs)) {
                *t += n;
            }
        }
        // Each subscriber receives every publisher's messages: a stage's arrivals are summed
        // over the subscribers, and each of them expected the stage's every message.
        // Without stamps (a --payload of the user's) no arrival can be placed: null, not 0.
        let stamped = run.stamp_with.is_some();
        let n_subs = run.mine.n_subs;
        let received =
            (opts.scenario == ScenarioKind::Pubsub && n_subs > 0 && stamped).then(|| {
                let totals = StageTotals::new(sc).expect("a schedule of stages");
                let n = sc.stages().len();
                let (mut due, mut within) = (vec![0u64; n], vec![0u64; n]);
                for (d, w) in m.subs.iter().filter_map(|r| r.by_stage.as_ref()) {
                    due.iter_mut().zip(d).for_each(|(t, x)| *t += x);
                    within.iter_mut().zip(w).for_each(|(t, x)| *t += x);
                }
                totals.add_received(&due, &within);
                totals.take()
            });
        ScheduleReport::new(sc, &sent_by_stage, u64::from(n_subs.max(1)), received)
    })
}
