//! The run of pub, sub and pubsub: one orchestration for all three, shaped only by how many
//! publishers and subscribers there are and what subscribers expect.
//!
//! Order of a run: connect everyone (nothing is timed while connecting), check the message size
//! against the server's limit, subscribe and wait until the server has confirmed every
//! subscription, release the publishers together, wait for them, tell the subscribers how many
//! messages were really sent, wait for the subscribers, then assemble the result.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Instant, SystemTime};

use super::options::{Options, ScenarioKind};
use crate::engine::conn::{self, Conn, ConnectSpec};
use crate::engine::fleet::{self, Ending, Fleet, FleetSpec, Interest};
use crate::engine::load::{
    self, Frame, PubOutcome, PubSpec, Recovering, Staged, StampKind, SubControl, SubOutcome,
    SubSpec, UNKNOWN,
};
use crate::engine::pace::{Pace, Stop};
use crate::error::{Error, ErrorCounts, Result};
use crate::result::{throughput_sections, RunResult, ScheduleReport, ServerMeta};
use crate::scenario::fault::Injector;
use crate::server::Target;
use crate::stats::delivery::{self, Delivery, DeliveryLog, Expectation};
use crate::stats::recovery::RecoveryLog;
use crate::stats::stages::{StageArrivals, StageTotals};
use crate::stats::throughput::{ClientRun, Role};
use crate::stats::timeline::Meter;
use crate::wire::{proto, stamp};

use crate::scenario::segment::Share;

/// Runs one scenario against `target` until it completes or `stop` is raised.
///
/// # Errors
/// Failures before any load runs: connection, handshake, or a size the server would reject.
/// Failures during the run are counted in the result instead.
///
/// With a `share`, this process runs only its agent's clients (global ids from the segment's
/// bases), starts at the agents' common start, and its subscribers expect what every agent's
/// publishers sent.
pub fn run(
    opts: &Options,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<RunResult> {
    // This process's clients: all of them, or its agent's share.
    let (n_pubs, n_subs, pub_base, sub_base) = match share {
        Some(sh) => (sh.seg.pubs, sh.seg.subs, sh.seg.pub_base, sh.seg.sub_base),
        None => (opts.pubs, opts.subs, 0, 0),
    };
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let connect = |role: &str, id: u32| {
        let name = format!("msgbench-{role}-{id}");
        conn::connect(
            &ConnectSpec {
                servers: &target.urls,
                name: &name,
                opts: &opts.conn.dial,
                stall_limit: opts.timeout,
            },
            errors.clone(),
        )
    };

    let pubs: Vec<Conn> = (0..n_pubs)
        .map(|i| connect("pub", pub_base + i))
        .collect::<Result<_>>()?;
    let header_block = proto::header_block(&opts.headers);
    if let Some(first) = pubs.first() {
        let max = first.info.max_payload;
        if max > 0 && opts.size + header_block.len() > max {
            return Err(Error::PayloadTooLarge {
                size: opts.size + header_block.len(),
                max_payload: max,
            });
        }
        if !opts.headers.is_empty() && !first.info.headers {
            return Err(Error::Usage(
                "-H: this server does not support message headers".into(),
            ));
        }
    }
    let run_tag = share.map_or_else(stamp::new_run_tag, |sh| sh.seg.run_tag);
    // Many subscribers are served by a fleet (a few threads for all of them); a handful, or
    // subscribers that need a per-message recorder (stalls, faults, schedule stages), keep a
    // thread each. See engine::fleet for why the switch sits where it does.
    let staged_run = opts.pace.schedule().is_some_and(|s| !s.is_fixed());
    let fleet_spec = (opts.scenario == ScenarioKind::Pubsub
        && n_subs >= fleet::FLEET_FROM
        && opts.sub_stall.is_none()
        && opts.conn.fault.is_none()
        && !staged_run)
        .then(|| -> Result<FleetSpec> {
            Ok(FleetSpec {
                targets: FleetSpec::targets(&target.urls)?,
                name: "msgbench-sub".into(),
                dialing: opts.conn.dial,
                interest: Interest::Shared(opts.sub_subject()),
                run_tag: Some(run_tag),
                errors: Arc::clone(&errors),
                give_up_after: opts.timeout,
                idle_timeout: opts.timeout,
                start_timeout: opts.start_timeout,
                threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
                in_flight: 256,
                connect_rate: None,
            })
        })
        .transpose()?;
    let mut subs: Vec<Conn> = match fleet_spec {
        Some(_) => Vec::new(),
        None => (0..n_subs)
            .map(|i| connect("sub", sub_base + i))
            .collect::<Result<_>>()?,
    };
    let mut info = pubs
        .first()
        .or(subs.first())
        .map(|c| (c.info.clone(), c.url.clone()));
    if info.is_none() && fleet_spec.is_some() {
        // Only fleet subscribers here (an agent's share without publishers): one plain
        // connection says what the server is.
        let probe = connect("probe", 0)?;
        info = Some((probe.info.clone(), probe.url.clone()));
        probe.shared.close();
    }

    let payload = opts
        .payload
        .clone()
        .unwrap_or_else(|| vec![b'm'; opts.size]);
    // A user's --payload goes out byte for byte: no stamp is written into it.
    let stamp_with = opts.payload.is_none().then_some(run_tag);

    // Subscribers in `sub` expect --msgs each from the start; in pubsub the count is only
    // known once the publishers are done (a --duration run sends an unknown number).
    let ctl = SubControl::new(UNKNOWN);
    if opts.scenario == ScenarioKind::Sub {
        ctl.arm(match opts.stop {
            Stop::Count(n) => n,
            Stop::For(_) => UNKNOWN - 1,
        });
    }
    let sub_spec = |id: u32| SubSpec {
        id,
        idle_timeout: opts.timeout,
        start_timeout: opts.start_timeout,
        duration: match (opts.scenario, opts.stop) {
            (ScenarioKind::Sub, Stop::For(d)) => Some(d),
            _ => None,
        },
        stall: opts.sub_stall,
        run_tag: (opts.scenario == ScenarioKind::Pubsub).then_some(run_tag),
    };

    let pub_meters: Vec<_> = (0..n_pubs)
        .map(|i| meter.client(Role::Pub, pub_base + i, false))
        .collect();
    let sub_meters: Vec<_> = (0..n_subs)
        .map(|i| meter.client(Role::Sub, sub_base + i, false))
        .collect();

    let subject = opts.sub_subject();
    let barrier = Barrier::new(pubs.len());
    let injector = Injector::new(opts.conn.fault, target)?;
    // With a fault, publishers share one time zero so a subscriber can tell from a stamp alone
    // when its message was scheduled (Options ensures such a run is paced).
    let epoch: OnceLock<Instant> = OnceLock::new();
    let schedule = opts.pace.schedule();
    let npubs = f64::from(opts.pubs.max(1));
    let due = move |p: &[u8]| {
        let st = stamp::read(p)?;
        schedule?.due_ns(st.seq as f64 * npubs + f64::from(st.publisher))
    };
    // A schedule of stages: every subscriber counts its arrivals by stage.
    let staged = schedule.filter(|s| !s.is_fixed());
    let (pub_runs, sub_outcomes, everyone, common_zero) = std::thread::scope(|s| -> Result<_> {
        // A publisher's own read side answers PINGs and collects PONGs and -ERRs from the
        // start: connecting thousands of subscribers can take longer than two keepalives.
        let pubs: Vec<_> = pubs
            .into_iter()
            .map(|conn| {
                let Conn {
                    mut reader, shared, ..
                } = conn;
                let reader_shared = shared.clone();
                s.spawn(move || reader.run(&reader_shared, load::TICK, |_| conn::Flow::Continue));
                shared
            })
            .collect();
        let close_pubs = || pubs.iter().for_each(|sh| sh.close());
        let mut sub_threads = Vec::new();
        for (i, conn) in subs.drain(..).enumerate() {
            let Conn {
                mut reader, shared, ..
            } = conn;
            let mut cmd = Vec::new();
            proto::encode_sub(&mut cmd, &subject, None, 1);
            let ticket = match shared.subscribe(&cmd) {
                Ok(t) => t,
                Err(e) => {
                    // Every read loop started so far ends, or the scope waits for it.
                    sub_threads
                        .iter()
                        .for_each(|(sh, _, _): &(Arc<conn::Shared>, _, _)| sh.close());
                    close_pubs();
                    return Err(e.during("cannot subscribe"));
                }
            };
            let spec = sub_spec(sub_base + i as u32);
            let (ctl, progress, epoch) = (&ctl, &sub_meters[i].msgs, &epoch);
            let sh = shared.clone();
            let fault_ns = injector.as_ref().map(Injector::fault_ns);
            let handle = s.spawn(move || {
                let mut log = DeliveryLog::new(spec.run_tag);
                let mut by_stage = None;
                let arrivals = || StageArrivals::new(staged?, opts.pubs, spec.run_tag).into();
                let (out, recovery) = match (fault_ns, arrivals()) {
                    (None, Some(arrivals)) => {
                        let mut r = Staged {
                            inner: log,
                            arrivals,
                            epoch,
                        };
                        let out =
                            load::subscribe(&mut reader, &sh, &spec, ctl, stop, progress, &mut r);
                        log = r.inner;
                        by_stage = Some((r.arrivals.counts, r.arrivals.within));
                        (out, None)
                    }
                    (Some(fault_ns), Some(arrivals)) => {
                        let inner = Staged {
                            inner: log,
                            arrivals,
                            epoch,
                        };
                        let mut r = Recovering::new(inner, due, epoch, fault_ns);
                        let out =
                            load::subscribe(&mut reader, &sh, &spec, ctl, stop, progress, &mut r);
                        log = r.inner.inner;
                        by_stage = Some((r.inner.arrivals.counts, r.inner.arrivals.within));
                        (out, Some(r.log))
                    }
                    (Some(fault_ns), None) => {
                        let mut r = Recovering::new(log, due, epoch, fault_ns);
                        let out =
                            load::subscribe(&mut reader, &sh, &spec, ctl, stop, progress, &mut r);
                        log = r.inner;
                        (out, Some(r.log))
                    }
                    (None, None) => (
                        load::subscribe(&mut reader, &sh, &spec, ctl, stop, progress, &mut log),
                        None,
                    ),
                };
                sh.close();
                (out, log, recovery, by_stage)
            });
            sub_threads.push((shared, ticket, handle));
        }
        let fleet = fleet_spec.as_ref().map(|spec| {
            Fleet::start(
                s,
                spec,
                &ctl,
                stop,
                sub_base..sub_base + n_subs,
                &sub_meters,
            )
        });
        if let Some(f) = &fleet {
            // Each fleet subscriber is ready once the PONG after its SUB came back.
            let all = u64::from(n_subs);
            let up = f.wait(opts.timeout, stop, |b| b.settled_count() >= all);
            if !up || f.board().opened_count() < all {
                f.stop();
                sub_threads.iter().for_each(|(sh, _, _)| sh.close());
                close_pubs();
                return Err(Error::Connect {
                    url: info.as_ref().map(|i| i.1.to_string()).unwrap_or_default(),
                    reason: format!(
                        "{} of {all} subscribers connected and subscribed",
                        f.board().opened_count()
                    ),
                });
            }
        }
        // The PONG after SUB means the server has registered the interest: only then can a
        // publisher's first message be counted on to reach the subscriber.
        for (shared, ticket, _) in &sub_threads {
            if !shared.wait_pong(*ticket, opts.timeout) {
                // Closing ends every subscriber's read loop, so the scope can be left.
                sub_threads.iter().for_each(|(sh, _, _)| sh.close());
                close_pubs();
                fleet.iter().for_each(Fleet::stop);
                return Err(Error::Connect {
                    url: info.as_ref().map(|i| i.1.to_string()).unwrap_or_default(),
                    reason: "the server did not confirm the subscription".into(),
                });
            }
        }
        if opts.scenario == ScenarioKind::Sub && share.is_none() {
            eprintln!("waiting for messages on '{subject}'");
        }
        // On agents, everyone starts together, on one schedule.
        let common_zero = match share {
            Some(sh) => match sh.peers.ready(stop) {
                Some(at) => {
                    std::thread::sleep(at.saturating_duration_since(Instant::now()));
                    Some(at)
                }
                None => {
                    sub_threads.iter().for_each(|(sh, _, _)| sh.close());
                    close_pubs();
                    fleet.iter().for_each(Fleet::stop);
                    return Err(Error::Agent("stopped before the common start".into()));
                }
            },
            None => None,
        };

        let zero = injector.as_ref().map(|inj| {
            let zero = *epoch.get_or_init(Instant::now);
            s.spawn(move || inj.run(zero, stop));
            zero
        });
        // Stages of a schedule are shared: every publisher starts them at one time zero.
        let zero = match (zero, staged) {
            // Subscribers time arrivals by stage from the same zero.
            (None, Some(_)) => {
                Some(*epoch.get_or_init(|| common_zero.unwrap_or_else(Instant::now)))
            }
            (z, _) => z,
        };
        if let (Some(at), Some(sched)) = (zero, staged) {
            meter.follow_schedule(at, sched);
        }
        let mut pub_threads = Vec::new();
        for (i, shared) in pubs.iter().cloned().enumerate() {
            let frame = Frame::new(
                &opts.subject,
                opts.multisubject.map(crate::engine::load::Keys::cycle),
                &header_block,
                &payload,
                match stamp_with {
                    Some(run_tag) => StampKind::Delivery {
                        run_tag,
                        publisher: pub_base + i as u32,
                    },
                    None => StampKind::None,
                },
            );
            let spec = PubSpec {
                id: pub_base + i as u32,
                stop: opts.stop,
                pace: schedule.map(|sc| sc.share(pub_base + i as u32, opts.pubs.max(1))),
                start_at: zero.or(common_zero),
                late_bound: crate::scenario::pacing::PACING_LATE_BOUND,
                flush_timeout: opts.timeout,
            };
            let (barrier, progress) = (&barrier, &pub_meters[i].msgs);
            pub_threads.push(s.spawn(move || {
                barrier.wait();
                let out = load::publish(&shared, &frame, &spec, stop, progress, None, None);
                shared.close();
                out
            }));
        }
        let pub_runs: Vec<PubOutcome> = pub_threads
            .into_iter()
            .map(|h| h.join().expect("publisher thread panicked"))
            .collect();
        if let Some(inj) = &injector {
            inj.finish();
        }
        let sent: u64 = pub_runs.iter().map(|o| o.run.msgs).sum();
        let everyone = match share {
            Some(sh) => {
                sh.peers
                    .published(&pub_runs.iter().map(|o| o.run.msgs).collect::<Vec<_>>());
                if opts.scenario == ScenarioKind::Pubsub && n_subs > 0 {
                    sh.peers.all_published(stop)
                } else {
                    None
                }
            }
            None => None,
        };
        if opts.scenario == ScenarioKind::Pubsub {
            ctl.arm(everyone.as_ref().map_or(sent, |all| all.iter().sum()));
        }
        #[allow(clippy::type_complexity)]
        let sub_outcomes: Vec<(
            SubOutcome,
            DeliveryLog,
            Option<RecoveryLog>,
            Option<(Vec<u64>, Vec<u64>)>,
        )> = sub_threads
            .into_iter()
            .map(|(_, _, h)| h.join().expect("subscriber thread panicked"))
            .chain(fleet.into_iter().flat_map(Fleet::join).map(|m| {
                let end = match m.ending {
                    Some(Ending::Failed(f)) => conn::End::Failed(f.counted()),
                    _ => conn::End::Stopped,
                };
                let out = SubOutcome {
                    run: m.outcome(),
                    end,
                };
                let log = m.log.unwrap_or_default();
                (out, log, None, None)
            }))
            .collect();
        Ok((pub_runs, sub_outcomes, everyone, common_zero))
    })?;

    // In pubsub a subscriber's span starts when publishing starts, not at its first message:
    // delivery rate is end to end, and a short run that arrives in one read is not "infinitely"
    // fast. A lone `sub` has no publish clock and spans first to last message.
    let publish_start = common_zero.or(pub_runs.iter().filter_map(|o| o.run.start).min());
    let runs: Vec<ClientRun> = pub_runs
        .iter()
        .map(|o| o.run)
        .chain(sub_outcomes.iter().map(|(o, ..)| ClientRun {
            start: publish_start.or(o.run.start),
            ..o.run
        }))
        .collect();
    meter.counted_until(runs.iter().map(|r| r.end));
    let (throughput, by_role, clients) = throughput_sections(&runs);
    // Indexed by global publisher id: on an agent, every publisher's count when its
    // subscribers were told them, else its own publishers' in their places.
    let sent: Vec<u64> = match everyone {
        Some(all) => all,
        None => {
            let total = share.map_or(n_pubs, |sh| sh.seg.pubs_total);
            let mut v = vec![0; total.max(pub_base + n_pubs) as usize];
            for (i, o) in pub_runs.iter().enumerate() {
                v[pub_base as usize + i] = o.run.msgs;
            }
            // A run on agents stopped before every publisher's count came: another agent's
            // publisher sent at least what its stamps show arrived (all below the highest
            // sequence seen), so delivery is accounted against that.
            if share.is_some() {
                for (id, n) in v.iter_mut().enumerate() {
                    let mine = (pub_base..pub_base + n_pubs).contains(&(id as u32));
                    if !mine {
                        let key = delivery::PublisherKey {
                            run_tag,
                            publisher: id as u32,
                        };
                        *n = sub_outcomes
                            .iter()
                            .filter_map(|(_, log, ..)| log.tracker(key))
                            .map(delivery::SeqTracker::high_mark)
                            .max()
                            .unwrap_or(0);
                    }
                }
            }
            v
        }
    };
    // Each subscriber's own loss goes beside its throughput, by id: the spread of a fan-out
    // names its slowest subscribers with what they missed.
    let (delivery, missed) = match opts.scenario {
        ScenarioKind::Pub => (
            Delivery {
                sent: sent.iter().sum(),
                accounting: "none",
                ..Delivery::default()
            },
            Vec::new(),
        ),
        ScenarioKind::Pubsub | ScenarioKind::Sub => {
            let logs: Vec<(u64, &delivery::DeliveryLog)> = sub_outcomes
                .iter()
                .map(|(o, log, ..)| (o.run.msgs, log))
                .collect();
            let expect = match (opts.scenario, opts.stop) {
                (ScenarioKind::Pubsub, _) => Expectation::Published {
                    run_tag,
                    sent: &sent,
                },
                (_, Stop::Count(n)) => Expectation::PerSubscriber(n),
                // `sub --duration` has no expected count; what arrived is what was expected.
                (_, Stop::For(_)) => Expectation::PerSubscriber(0),
            };
            let ids = sub_outcomes.iter().map(|(o, ..)| o.run.id);
            let missed: Vec<(u32, u64)> = ids
                .zip(delivery::missed_by_subscriber(&logs, &expect))
                .collect();
            (delivery::summarize(&logs, &expect), missed)
        }
    };
    let (server_info, url) = info.expect("at least one client");
    let fault = injector.as_ref().map(|inj| {
        let logs: Vec<&RecoveryLog> = sub_outcomes
            .iter()
            .filter_map(|(_, _, r, _)| r.as_ref())
            .collect();
        let end_ns = match opts.stop {
            Stop::For(d) => d.as_nanos() as u64,
            Stop::Count(n) => schedule
                .and_then(|sc| sc.due_ns(n as f64 * npubs))
                .unwrap_or(u64::MAX),
        };
        // Every subscriber receives every publisher's messages.
        inj.report(&logs, &opts.pace, 1, end_ns)
    });
    let pacing = match &opts.pace {
        // An agent's target is its publishers' share of the aggregate rate.
        Pace::Open(sc) if n_pubs > 0 => crate::scenario::pacing::pacing(
            sc.mean_rate() * f64::from(n_pubs) / f64::from(opts.pubs.max(1)),
            &pub_runs,
            by_role.get("pub"),
        ),
        Pace::Open(_) | Pace::Unlimited => None,
    };
    let stages = staged.map(|sc| {
        let mut sent_by_stage = vec![0u64; sc.stages().len()];
        for (i, o) in pub_runs.iter().enumerate() {
            let part = sc.share(pub_base + i as u32, opts.pubs.max(1));
            for (t, n) in sent_by_stage.iter_mut().zip(part.sent_by_stage(o.run.msgs)) {
                *t += n;
            }
        }
        // Each subscriber receives every publisher's messages: a stage's arrivals are summed
        // over the subscribers, and each of them expected the stage's every message.
        // Without stamps (a --payload of the user's) no arrival can be placed: null, not 0.
        let stamped = stamp_with.is_some();
        let received =
            (opts.scenario == ScenarioKind::Pubsub && n_subs > 0 && stamped).then(|| {
                let totals = StageTotals::new(sc).expect("a schedule of stages");
                let n = sc.stages().len();
                let (mut due, mut within) = (vec![0u64; n], vec![0u64; n]);
                for (d, w) in sub_outcomes.iter().filter_map(|(.., c)| c.as_ref()) {
                    due.iter_mut().zip(d).for_each(|(t, x)| *t += x);
                    within.iter_mut().zip(w).for_each(|(t, x)| *t += x);
                }
                totals.add_received(&due, &within);
                totals.take()
            });
        ScheduleReport::new(sc, &sent_by_stage, u64::from(n_subs.max(1)), received)
    });
    Ok(RunResult {
        schedule: stages,
        plan: None,
        fault,
        pacing,
        throughput,
        by_role,
        clients,
        delivery,
        ..RunResult::new(
            opts.scenario.as_str(),
            started_at,
            opts.params(),
            ServerMeta::new(&server_info, &url, target.local),
            &errors,
            stop.load(Ordering::Relaxed),
        )
    }
    .with_missed(&missed))
}
