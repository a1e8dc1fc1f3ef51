//! The latency scenario: one publisher on server A at a fixed rate, one subscriber on server B
//! (the same server unless told otherwise), one monotonic clock in one process.
//!
//! Order of a run: connect both sides, measure the round trip to each server, subscribe and
//! wait until the interest is in place (across servers, until a probe published on A arrives
//! on B), fix time zero, run the open-loop publisher, then wait for the last messages. Each
//! delivery is recorded from its intended send time (derived from its sequence number alone)
//! and from its actual send time (looked up in a ring the publisher fills).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use super::options::LatencyOptions;
use crate::engine::conn::{self, Conn, ConnectSpec, Flow};
use crate::engine::load::{
    self, Frame, PubSpec, Recorder, Recovering, StampKind, SubControl, SubSpec, UNKNOWN,
};
use crate::engine::pace::Stop;
use crate::error::{Error, ErrorCounts, Result};
use crate::result::{
    throughput_sections, LatencyStats, Pacing, Rtt, RunResult, ScheduleReport, ServerMeta,
};
use crate::scenario::fault::Injector;
use crate::scenario::segment::Share;
use crate::server::Target;
use crate::stats::delivery::{Delivery, PublisherDelivery};
use crate::stats::hdr::{percentile_distribution, IntervalLog};
use crate::stats::latency::{IntervalSink, LatencyRecorder, SendTimes};
use crate::stats::schedule::PubSchedule;
use crate::stats::stages::StageTotals;
use crate::stats::throughput::{ClientRun, Role};
use crate::stats::timeline::Meter;
use crate::wire::{proto, stamp};

/// The sequence number of a probe message (never a real sequence).
const PROBE: u64 = u64::MAX;

/// Round trips measured per server before the run.
const RTT_SAMPLES: usize = 5;

/// Runs the latency scenario.
///
/// # Errors
/// Failures before any load runs: servers, connections, interest that never arrives.
pub fn run(
    opts: &LatencyOptions,
    target_a: &Target,
    target_b: Option<&Target>,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<RunResult> {
    // On agents the publisher and the subscriber may be on different hosts; each side then
    // runs alone, and they meet at the common start time and the final count.
    let (has_pub, has_sub) = share.map_or((true, true), |sh| (sh.seg.pubs > 0, sh.seg.subs > 0));
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let connect = |t: &Target, name: &str| {
        conn::connect(
            &ConnectSpec {
                servers: &t.urls,
                name,
                opts: &opts.conn.dial,
                stall_limit: opts.timeout,
            },
            errors.clone(),
        )
    };
    let mut pub_conn = has_pub
        .then(|| connect(target_a, "msgbench-latency-pub"))
        .transpose()?;
    let mut sub_conn = has_sub
        .then(|| connect(target_b.unwrap_or(target_a), "msgbench-latency-sub"))
        .transpose()?;
    let first = pub_conn
        .as_ref()
        .or(sub_conn.as_ref())
        .expect("a share has a client");
    let (info, url) = (first.info.clone(), first.url.clone());
    let server_b = target_b
        .zip(sub_conn.as_ref())
        .map(|(t, c)| ServerMeta::new(&c.info, &c.url, t.local));
    let max = info.max_payload;
    if max > 0 && opts.size > max {
        return Err(Error::PayloadTooLarge {
            size: opts.size,
            max_payload: max,
        });
    }
    let rtt = match (pub_conn.as_mut(), sub_conn.as_mut()) {
        (Some(p), Some(s)) => Some(Rtt {
            a: median_ns(p.ping_rtts(RTT_SAMPLES, opts.timeout)?),
            b: median_ns(s.ping_rtts(RTT_SAMPLES, opts.timeout)?),
        }),
        _ => None,
    };

    let schedule = opts.schedule.share(0, 1);
    let stage_totals = StageTotals::new(&opts.schedule);
    // Four seconds of sends (at least 64 Ki) in flight before a send time is forgotten.
    let send_times =
        SendTimes::new(((opts.schedule.peak_rate() * 4.0) as usize).clamp(1 << 16, 1 << 22));
    let epoch: OnceLock<Instant> = OnceLock::new();
    let probes = AtomicU64::new(0);
    let ctl = SubControl::new(UNKNOWN);
    let pub_meter = meter.client(Role::Pub, 0, false);
    let sub_meter = meter.client(Role::Sub, 0, true);
    let mut interval_log = match &opts.hist {
        Some(prefix) => Some(IntervalLog::create(
            &with_suffix(prefix, "hlog"),
            SystemTime::now(),
        )?),
        None => None,
    };
    let payload = vec![b'l'; opts.size];
    let frame = Frame::new(&opts.subject, None, b"", &payload, StampKind::Sequence);
    let mut probe = Vec::new();
    let mut probe_payload = payload.clone();
    probe_payload[..stamp::SEQ_LEN].copy_from_slice(&PROBE.to_le_bytes());
    proto::encode_pub(
        &mut probe,
        opts.subject.as_bytes(),
        None,
        b"",
        &probe_payload,
    );

    let injector = Injector::new(opts.conn.fault, target_a)?;
    let no_fault = AtomicU64::new(crate::scenario::fault::NOT_YET);
    let (pub_out, sub, everyone) = std::thread::scope(|s| -> Result<_> {
        let sub_side = match sub_conn {
            Some(Conn {
                mut reader,
                shared: sub_shared,
                ..
            }) => {
                if opts.busy_poll {
                    // Long enough to bridge the gap between messages at the rates where it is on.
                    reader.set_busy_poll(Some(Duration::from_millis(2)));
                }
                let mut cmd = Vec::new();
                proto::encode_sub(&mut cmd, &opts.subject, None, 1);
                let ticket = sub_shared
                    .subscribe(&cmd)
                    .map_err(|e| e.during("cannot subscribe"))?;
                let sink: Option<Box<IntervalSink<'_>>> = interval_log.as_mut().map(|log| {
                    Box::new(move |h: &hdrhistogram::Histogram<u64>, start, end| {
                        // A full disk must not end the measurement; the file simply stops growing.
                        let _ = log.append(h, start, end);
                    }) as Box<IntervalSink<'_>>
                });
                let recorder = LatencySubscriber {
                    rec: LatencyRecorder::new(opts.warmup.as_nanos() as u64, 1_000_000_000, sink)
                        .with_live(sub_meter.latency.as_ref())
                        .with_stages(stage_totals.as_ref(), Some(&schedule)),
                    schedule: schedule.clone(),
                    epoch: &epoch,
                    send_times: &send_times,
                    probes: &probes,
                    unstamped: 0,
                };
                let spec = SubSpec {
                    id: 0,
                    idle_timeout: opts.timeout,
                    start_timeout: opts.timeout,
                    duration: None,
                    stall: None,
                    run_tag: None,
                };
                let (ctl_ref, sub_progress, epoch_ref) = (&ctl, &sub_meter.msgs, &epoch);
                let sh = sub_shared.clone();
                let fault_ns = injector.as_ref().map_or(&no_fault, Injector::fault_ns);
                let sub_thread = s.spawn(move || {
                    // Recovery is logged whether or not a fault comes: this recorder reads the clock
                    // per message anyway, so the log costs one counter per message.
                    let due_of = recorder.schedule.clone();
                    let due = move |p: &[u8]| {
                        sequence(p)
                            .filter(|seq| *seq != PROBE)
                            .and_then(|seq| due_of.due_ns(seq))
                    };
                    let mut r = Recovering::new(recorder, due, epoch_ref, fault_ns);
                    let out = load::subscribe(
                        &mut reader,
                        &sh,
                        &spec,
                        ctl_ref,
                        stop,
                        sub_progress,
                        &mut r,
                    );
                    let (mut recorder, recovery) = (r.inner, r.log);
                    let now = recorder.now_ns(Instant::now());
                    recorder.rec.finish(now);
                    sh.close();
                    (out, recorder, recovery)
                });
                if !sub_shared.wait_pong(ticket, opts.timeout) {
                    sub_shared.close();
                    return Err(Error::Connect {
                        url: url.to_string(),
                        reason: "the server did not confirm the subscription".into(),
                    });
                }
                Some((sub_shared, sub_thread))
            }
            None => None,
        };
        let fail = |why: &str| {
            if let Some((sh, _)) = &sub_side {
                sh.close();
            }
            Error::Connect {
                url: url.to_string(),
                reason: why.to_string(),
            }
        };
        // Only a subscriber that sees a probe tells the publisher the interest is in place;
        // on agents, the common start comes after every agent's subscriptions instead.
        let Some(Conn {
            mut reader, shared, ..
        }) = pub_conn
        else {
            let zero = match share.map(|sh| sh.peers.ready(stop)) {
                Some(Some(at)) => at,
                _ => return Err(fail("stopped before the common start")),
            };
            // Time zero is set before the publisher (elsewhere) starts, so no message can
            // arrive before it and be taken for a probe.
            let _ = epoch.set(zero);
            let all = share.and_then(|sh| sh.peers.all_published(stop));
            ctl.arm(all.as_ref().map_or(0, |a| a.iter().sum()));
            let (_, handle) = sub_side.expect("a subscriber-only share");
            let sub = handle.join().expect("subscriber thread panicked");
            return Ok((None, Some(sub), all));
        };
        let reader_shared = shared.clone();
        s.spawn(move || reader.run(&reader_shared, load::TICK, |_| Flow::Continue));
        if target_b.is_some() && sub_side.is_some() {
            // Interest travels from B to A over the route asynchronously: publish probes on A
            // until one arrives on B, so the first measured message cannot be dropped for lack
            // of interest.
            let deadline = Instant::now() + opts.timeout;
            while probes.load(Ordering::Acquire) == 0 {
                if Instant::now() >= deadline || stop.load(Ordering::Relaxed) {
                    shared.close();
                    return Err(fail("the subscription's interest never reached server A"));
                }
                let _ = shared.write_all(&probe);
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let zero = match share {
            Some(sh) => match sh.peers.ready(stop) {
                Some(at) => at,
                None => {
                    shared.close();
                    return Err(fail("stopped before the common start"));
                }
            },
            None => Instant::now(),
        };
        let zero = *epoch.get_or_init(|| zero);
        std::thread::sleep(zero.saturating_duration_since(Instant::now()));
        if let Some(inj) = &injector {
            s.spawn(move || inj.run(zero, stop));
        }
        meter.follow_schedule(zero, &opts.schedule);
        let spec = PubSpec {
            id: 0,
            stop: opts.stop,
            pace: Some(schedule.clone()),
            flush_timeout: opts.timeout,
            start_at: Some(zero),
            late_bound: opts.late_bound,
        };
        let pub_out = load::publish(
            &shared,
            &frame,
            &spec,
            stop,
            &pub_meter.msgs,
            Some(&send_times),
            None,
        );
        shared.close();
        if let Some(inj) = &injector {
            inj.finish();
        }
        if let Some(sh) = share {
            sh.peers.published(&[pub_out.run.msgs]);
        }
        let sub = sub_side.map(|(_, handle)| {
            // Probes that were still in flight arrive before the measured messages (same
            // route, same order), so by now their count is final.
            ctl.arm(pub_out.run.msgs + probes.load(Ordering::Acquire));
            handle.join().expect("subscriber thread panicked")
        });
        Ok((Some(pub_out), sub, None))
    })?;
    let cross = share.is_some() && !(has_pub && has_sub);

    if let (Some(prefix), Some((_, recorder, _))) = (&opts.hist, &sub) {
        for (suffix, h) in [
            ("hgrm", &recorder.rec.corrected),
            ("uncorrected.hgrm", &recorder.rec.uncorrected),
        ] {
            let path = with_suffix(prefix, suffix);
            std::fs::write(&path, percentile_distribution(h)).map_err(|e| {
                Error::io(format!("cannot write --hist file '{}'", path.display()), e)
            })?;
        }
    }

    // What the publisher sent: its own count, or (subscriber alone) what its agent said.
    let sent = pub_out.as_ref().map_or_else(
        || everyone.as_ref().map_or(0, |a| a.iter().sum()),
        |p| p.run.msgs,
    );
    let zero = epoch.get().copied();
    let probes_seen = probes.load(Ordering::Acquire);
    let sub_run = sub.as_ref().map(|(sub_out, _, _)| ClientRun {
        msgs: sub_out.run.msgs.saturating_sub(probes_seen),
        bytes: sub_out
            .run
            .bytes
            .saturating_sub(probes_seen * opts.size as u64),
        start: zero.or(sub_out.run.start),
        ..sub_out.run
    });
    let runs: Vec<ClientRun> = pub_out.iter().map(|p| p.run).chain(sub_run).collect();
    meter.counted_until(runs.iter().map(|r| r.end));
    let (throughput, by_role, clients) = throughput_sections(&runs);
    let delivery = match (&sub, sub_run) {
        (Some((_, recorder, _)), Some(sub_run)) => {
            let t = &recorder.rec.tracker;
            let lost = sent.saturating_sub(t.unique);
            Delivery {
                sent,
                expected: sent,
                received: sub_run.msgs,
                lost,
                duplicated: Some(t.duplicated),
                reordered: Some(t.reordered),
                unstamped: recorder.unstamped,
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
            }
        }
        // A publisher alone: what it sent, for the subscriber's agent to account for.
        _ => Delivery {
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
            ..Delivery::default()
        },
    };
    let last_send_ns = sent.checked_sub(1).and_then(|last| send_times.get(last));
    let actual_rate = match last_send_ns {
        Some(ns) if sent > 1 && ns > 0 => Some((sent - 1) as f64 / (ns as f64 / 1e9)),
        _ => None,
    };
    let pacing = pub_out.as_ref().and_then(|p| {
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
    });
    let latency = sub
        .as_ref()
        .map(|(_, r, _)| LatencyStats::of(&r.rec.corrected));
    // Across hosts there is no send time to read: the publisher's ring is in another process.
    let latency_uncorrected = sub
        .as_ref()
        .filter(|_| !cross)
        .map(|(_, r, _)| LatencyStats::of(&r.rec.uncorrected));
    let recovery = sub.as_ref().map(|(_, _, r)| r);
    let stages = stage_totals.as_ref().map(|totals| {
        ScheduleReport::new(
            &opts.schedule,
            &schedule.sent_by_stage(sent),
            1,
            sub.is_some().then(|| totals.take()),
        )
        .with_warmup(opts.warmup)
    });
    Ok(RunResult {
        schedule: stages,
        plan: None,
        throughput,
        by_role,
        clients,
        delivery,
        latency,
        latency_uncorrected,
        pacing,
        rtt_ns: rtt,
        server_b,
        fault: injector.as_ref().zip(recovery).map(|(inj, recovery)| {
            let end_ns = match opts.stop {
                Stop::For(d) => d.as_nanos() as u64,
                Stop::Count(n) => schedule.due_ns(n).unwrap_or(u64::MAX),
            };
            let pace = crate::engine::pace::Pace::Open(opts.schedule.clone());
            inj.report(&[recovery], &pace, 1, end_ns)
        }),
        ..RunResult::new(
            "latency",
            started_at,
            opts.params(),
            ServerMeta::new(&info, &url, target_a.local),
            &errors,
            stop.load(Ordering::Relaxed),
        )
    })
}

/// The subscriber's per-message work: sequence → due time, ring → send time, clock → receive.
struct LatencySubscriber<'a> {
    rec: LatencyRecorder<'a>,
    schedule: PubSchedule,
    epoch: &'a OnceLock<Instant>,
    send_times: &'a SendTimes,
    probes: &'a AtomicU64,
    unstamped: u64,
}

impl LatencySubscriber<'_> {
    fn now_ns(&self, at: Instant) -> u64 {
        self.epoch.get().map_or(0, |zero| {
            at.saturating_duration_since(*zero).as_nanos() as u64
        })
    }
}

impl Recorder for LatencySubscriber<'_> {
    const CLOCK: bool = true;

    #[inline]
    fn on_message(&mut self, payload: &[u8], received_at: Option<Instant>) {
        let Some(seq) = sequence(payload) else {
            self.unstamped += 1;
            return;
        };
        if seq == PROBE || self.epoch.get().is_none() {
            self.probes.fetch_add(1, Ordering::Release);
            return;
        }
        let Some(due_ns) = self.schedule.due_ns(seq) else {
            // Past the schedule's end: not a message of this run.
            self.unstamped += 1;
            return;
        };
        let recv_ns = self.now_ns(received_at.expect("CLOCK recorders get the time"));
        self.rec
            .record(seq, due_ns, self.send_times.get(seq), recv_ns);
    }
}

/// The sequence number at the front of a latency payload.
fn sequence(payload: &[u8]) -> Option<u64> {
    payload
        .get(..stamp::SEQ_LEN)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

fn median_ns(mut samples: Vec<Duration>) -> u64 {
    samples.sort();
    samples
        .get(samples.len() / 2)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn with_suffix(prefix: &std::path::Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_os_string();
    s.push(".");
    s.push(suffix);
    PathBuf::from(s)
}
