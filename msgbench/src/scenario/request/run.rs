//! Request/reply: requesters that time every reply, and the responders that answer them.
//!
//! A requester is the publish loop with two additions: each request carries the reply subject
//! `<inbox>.<seq>`, so a reply names its request even when it carries no payload (a
//! no-responders status); and a [`Window`] gates sending, which makes the loop closed (wait for
//! the reply) or pipelined (K in flight), or, with a rate, open loop with corrected latency.
//! Responders are the reply loop, in a queue group, in this process unless told otherwise
//! (`msgbench reply` is [`super::reply`]).
//!
//! Over 600 lines: [`run_requests`] is one orchestration shared by request/reply, JetStream
//! publishing and KV gets (a publish with an acknowledgement is a request), and its reply
//! bookkeeping is kept beside it rather than spread over files that would each need all of it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use super::options::RequestOptions;
use crate::engine::conn::{self, Conn, ConnectSpec, Event, Flow};
use crate::engine::jsapi::{self, Ack};
use crate::engine::jsframe::JsFrame;
use crate::engine::load::{self, Frame, PubOutcome, PubSpec, RespondSpec, StampKind, Window};
use crate::engine::pace::{Pace, Stop};
use crate::error::{Error, ErrorCounts, ErrorKind, Result};
use crate::result::{throughput_sections, LatencyStats, RunResult, ScheduleReport, ServerMeta};
use crate::scenario::fault::Injector;
use crate::scenario::segment::Share;
use crate::server::Target;
use crate::stats::acks::AckSet;
use crate::stats::delivery::{Delivery, PublisherDelivery};
use crate::stats::latency::{new_histogram, LatencyRecorder, SendTimes};
use crate::stats::recovery::RecoveryLog;
use crate::stats::schedule::PubSchedule;
use crate::stats::stages::StageTotals;
use crate::stats::throughput::{ClientRun, Role};
use crate::stats::timeline::{ClientMeter, Meter};
use crate::wire::{proto, stamp};

/// The queue group responders join, so each request is answered once.
pub(super) const QUEUE: &str = "msgbench";

/// What one requester's reader saw.
struct Replies<'a> {
    rec: LatencyRecorder<'a>,
    ok: u64,
    no_responders: u64,
    late: u64,
    bytes: u64,
    last: Option<Instant>,
    /// Arrivals around an injected fault; `fault_ns` is `None` without one.
    recovery: RecoveryLog,
    fault_ns: Option<&'a AtomicU64>,
    /// With JetStream acknowledgements: the stream sequences acknowledged, duplicates among
    /// them, and where failed acknowledgements are counted by kind.
    acks: Option<AckSet>,
    dup_acks: u64,
    /// Acknowledgements the server marked duplicate: a message id it had already stored.
    deduplicated: u64,
    errors: &'a ErrorCounts,
    /// The live view's count of good replies and their latencies.
    meter: &'a ClientMeter,
    /// Bytes a reply stands for: with JetStream, the payload it acknowledges (a PubAck's own
    /// bytes say nothing about what was stored); otherwise the reply's payload.
    stands_for: Option<u64>,
}

/// How a client's requests go on the wire: one message each, or a JetStream publish with a
/// message id or a whole atomic batch.
enum Shape {
    Plain(Frame),
    Js(JsFrame),
}

impl Shape {
    /// Appends request `k`; returns the messages it holds.
    fn append(&self, out: &mut Vec<u8>, k: u64) -> u64 {
        match self {
            Shape::Plain(f) => {
                f.append(out, k);
                1
            }
            Shape::Js(f) => f.append(out, k),
        }
    }

    fn payload_len(&self) -> usize {
        match self {
            Shape::Plain(f) => f.payload_len(),
            Shape::Js(f) => f.payload_len(),
        }
    }
}

/// Runs `msgbench request`.
///
/// # Errors
/// Failures before any request is sent: server, connections, subscriptions.
pub fn run_request(
    opts: &RequestOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<RunResult> {
    run_requests(opts, target, meter, stop, share).map(|(result, _)| result)
}

/// For one stream of a JetStream run (`opts.js_bases`): every sequence acknowledged to its
/// publishers, how many acknowledgements were for a sequence already acknowledged, and how many
/// the server marked as duplicates of a stored message id.
#[derive(Debug, Clone)]
pub struct JsAcks {
    pub acked: AckSet,
    pub duplicate_acks: u64,
    pub deduplicated: u64,
}

/// [`run_request`], also returning the acknowledged stream sequences when requests are
/// JetStream publishes.
///
/// With a `share` (a run on agents), this process runs its agent's requesters (global ids from
/// the segment's publisher base) and responders (its subscribers), starts at the common start,
/// and keeps its responders answering until every agent's requesters are done.
///
/// # Errors
/// As [`run_request`].
pub fn run_requests(
    opts: &RequestOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<(RunResult, Option<Vec<JsAcks>>)> {
    let (n_clients, n_responders, base) = match share {
        Some(sh) => (sh.seg.pubs, sh.seg.subs, sh.seg.pub_base),
        None => (opts.clients, opts.responders, 0),
    };
    // A requester's id across all agents: its inbox, its stamp and its rows use it.
    let g = |i: usize| base + i as u32;
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let connect = |name: String| connect_to(target, &name, &opts.conn, opts.timeout, &errors);
    let errors_ref: &ErrorCounts = &errors;
    let responders: Vec<Conn> = (0..n_responders)
        .map(|i| {
            connect(format!(
                "msgbench-responder-{}",
                share.map_or(0, |sh| sh.seg.sub_base) + i
            ))
        })
        .collect::<Result<_>>()?;
    let clients: Vec<Conn> = (0..n_clients)
        .map(|i| connect(format!("msgbench-requester-{}", base + i)))
        .collect::<Result<_>>()?;
    let first = clients
        .first()
        .or(responders.first())
        .expect("a share has a client");
    let (info, url) = (first.info.clone(), first.url.clone());
    if info.max_payload > 0 && opts.size > info.max_payload {
        return Err(Error::PayloadTooLarge {
            size: opts.size,
            max_payload: info.max_payload,
        });
    }
    let run_tag = share.map_or_else(stamp::new_run_tag, |sh| sh.seg.run_tag);
    let inbox = format!("_INBOX.msgbench{run_tag:04x}");
    // Requester i of n sends the run's requests i, i+n, … of the one schedule.
    let schedules: Vec<Option<PubSchedule>> = (0..n_clients as usize)
        .map(|i| opts.pace.schedule().map(|sc| sc.share(g(i), opts.clients)))
        .collect();
    let open = opts.pace.is_open();
    let stage_totals = opts.pace.schedule().and_then(StageTotals::new);
    let (schedules_ref, totals_ref) = (&schedules, stage_totals.as_ref());
    let windows: Vec<Window> = (0..n_clients)
        .map(|_| Window::new(opts.in_flight, opts.timeout))
        .collect();
    let ring = match &opts.pace {
        Pace::Open(sc) => {
            ((sc.peak_rate() / f64::from(opts.clients) * 4.0) as usize).clamp(1 << 12, 1 << 22)
        }
        Pace::Unlimited => opts.in_flight.clamp(1 << 12, 1 << 22),
    };
    let send_times: Vec<SendTimes> = (0..n_clients).map(|_| SendTimes::new(ring)).collect();
    let epoch: OnceLock<Instant> = OnceLock::new();
    let done = AtomicBool::new(false);
    let served = AtomicU64::new(0);
    let payload = vec![if opts.js_bases.is_some() { b'j' } else { b'r' }; opts.size];
    // Each client shows as a sender (requests out) and a receiver (timed replies in).
    let progress: Vec<_> = (0..n_clients)
        .map(|i| meter.client(Role::Pub, base + i, false))
        .collect();
    let reply_meters: Vec<_> = (0..n_clients)
        .map(|i| meter.client(Role::Sub, base + i, true))
        .collect();
    // On agents, everyone starts together; until then a requester-less agent only serves.
    let common_start = || -> Result<Instant> {
        match share {
            Some(sh) => {
                let at = sh
                    .peers
                    .ready(stop)
                    .ok_or_else(|| Error::Agent("stopped before the common start".into()))?;
                std::thread::sleep(at.saturating_duration_since(Instant::now()));
                Ok(at)
            }
            None => Ok(Instant::now()),
        }
    };

    let injector = Injector::new(opts.conn.fault, target)?;
    let fault_ns = injector.as_ref().map(Injector::fault_ns);
    // The stream sequence client i's acknowledgements start from: its target stream's.
    let js_base = |i: usize| {
        opts.js_bases
            .as_ref()
            .and_then(|b| b.get(opts.target_of(i).1).copied())
    };
    // JetStream messages carry their send time, for a consumer to time them.
    let stamp_kind = if opts.js_bases.is_some() {
        StampKind::Timed
    } else {
        StampKind::Sequence
    };
    let frame_for = |i: usize| {
        Frame::with_reply(
            &opts.target_of(i).0,
            opts.keys,
            Some(&format!("{inbox}.{}.", g(i))),
            b"",
            &payload,
            stamp_kind,
        )
    };
    let shape_for = |i: usize| match &opts.js_framing {
        Some(f) if f.batch > 1 || f.dedup.is_some() => Shape::Js(JsFrame::new(
            &opts.target_of(i).0,
            &format!("{inbox}.{}.", g(i)),
            opts.size,
            f,
            i as u32,
            run_tag,
        )),
        _ => Shape::Plain(frame_for(i)),
    };
    let (pub_outs, replies): (Vec<PubOutcome>, Vec<Replies<'_>>) =
        std::thread::scope(|s| -> Result<_> {
            let mut responder_threads = Vec::new();
            let mut tickets = Vec::new();
            for (i, c) in responders.into_iter().enumerate() {
                let Conn {
                    mut reader, shared, ..
                } = c;
                let mut cmd = Vec::new();
                proto::encode_sub(&mut cmd, &opts.subject, Some(QUEUE), 1);
                tickets.push((shared.clone(), subscribe(&shared, cmd)?));
                let spec = RespondSpec {
                    id: i as u32,
                    delay: opts.delay,
                    max: None,
                    until: None,
                };
                let (done, served) = (&done, &served);
                responder_threads.push(s.spawn(move || {
                    let run = load::respond(&mut reader, &shared, &spec, served, done, stop);
                    shared.close();
                    run
                }));
            }
            let not_confirmed = |tickets: &[(Arc<conn::Shared>, u64)]| {
                tickets.iter().for_each(|(s, _)| s.close());
                Error::Connect {
                    url: url.to_string(),
                    reason: "the server did not confirm a subscription".into(),
                }
            };
            if tickets
                .iter()
                .any(|(sh, t)| !sh.wait_pong(*t, opts.timeout))
            {
                return Err(not_confirmed(&tickets));
            }
            let mut outs = Vec::new();
            if !open {
                // Closed loop: each client's own reader thread sends the next request as soon as a
                // reply frees a slot. No hand-off between threads sits inside the round trip.
                let mut ready = Vec::new();
                for (i, mut c) in clients.into_iter().enumerate() {
                    let mut cmd = Vec::new();
                    proto::encode_sub(&mut cmd, &format!("{inbox}.{}.*", g(i)), None, 1);
                    if let Err(e) = c.subscribe_and_confirm(&cmd, opts.timeout) {
                        tickets.iter().for_each(|(s, _)| s.close());
                        return Err(e);
                    }
                    ready.push(c);
                }
                let zero = match common_start() {
                    Ok(at) => *epoch.get_or_init(|| at),
                    Err(e) => {
                        tickets.iter().for_each(|(s, _)| s.close());
                        return Err(e);
                    }
                };
                if let Some(inj) = &injector {
                    s.spawn(move || inj.run(zero, stop));
                }
                for (i, c) in ready.into_iter().enumerate() {
                    let Conn {
                        mut reader, shared, ..
                    } = c;
                    let frame = shape_for(i);
                    let (window, times) = (&windows[i], &send_times[i]);
                    let (sent_meter, reply_meter) = (&progress[i], &reply_meters[i]);
                    outs.push(s.spawn(move || {
                        let mut r =
                            new_replies(fault_ns, js_base(i), opts.size, errors_ref, reply_meter);
                        let out = closed_loop(
                            &mut reader,
                            &shared,
                            &frame,
                            window,
                            times,
                            opts.stop,
                            zero,
                            stop,
                            g(i),
                            &mut r,
                            &sent_meter.msgs,
                        );
                        shared.close();
                        (out, r)
                    }));
                }
            } else {
                // Open loop: requests leave on schedule from the publish loop; a reader per client
                // times the replies.
                let mut readers = Vec::new();
                let mut writers = Vec::new();
                let mut client_tickets = Vec::new();
                for (i, c) in clients.into_iter().enumerate() {
                    let Conn {
                        mut reader, shared, ..
                    } = c;
                    let mut cmd = Vec::new();
                    proto::encode_sub(&mut cmd, &format!("{inbox}.{}.*", g(i)), None, 1);
                    client_tickets.push((shared.clone(), subscribe(&shared, cmd)?));
                    let (window, times, epoch, sh) =
                        (&windows[i], &send_times[i], &epoch, shared.clone());
                    let reply_meter = &reply_meters[i];
                    readers.push(s.spawn(move || {
                        let schedule = schedules_ref[i].as_ref();
                        let mut r =
                            new_replies(fault_ns, js_base(i), opts.size, errors_ref, reply_meter);
                        r.rec = r.rec.with_stages(totals_ref, schedule);
                        let mut link = sh.link_generation();
                        reader.run(&sh, load::TICK, |event| {
                            match event {
                                Event::Msg(m) => {
                                    if let Some(zero) = epoch.get() {
                                        on_reply(&mut r, &m, window, times, schedule, *zero);
                                    }
                                }
                                Event::Tick => abandon_if_relinked(&sh, &mut link, window),
                            }
                            Flow::Continue
                        });
                        r.rec.flush_stages();
                        r
                    }));
                    writers.push(shared);
                }
                if client_tickets
                    .iter()
                    .any(|(sh, t)| !sh.wait_pong(*t, opts.timeout))
                {
                    tickets.extend(client_tickets);
                    return Err(not_confirmed(&tickets));
                }
                let zero = match common_start() {
                    Ok(at) => *epoch.get_or_init(|| at),
                    Err(e) => {
                        tickets.iter().for_each(|(s, _)| s.close());
                        return Err(e);
                    }
                };
                if let Some(sc) = opts.pace.schedule() {
                    meter.follow_schedule(zero, sc);
                }
                if let Some(inj) = &injector {
                    s.spawn(move || inj.run(zero, stop));
                }
                let mut pubs = Vec::new();
                for (i, shared) in writers.into_iter().enumerate() {
                    let frame = frame_for(i);
                    let spec = PubSpec {
                        id: g(i),
                        stop: opts.stop,
                        pace: schedules_ref[i].clone(),
                        flush_timeout: opts.timeout,
                        start_at: Some(zero),
                        late_bound: crate::scenario::pacing::PACING_LATE_BOUND,
                    };
                    let (window, times, progress) =
                        (&windows[i], &send_times[i], &progress[i].msgs);
                    pubs.push(s.spawn(move || {
                        let out = load::publish(
                            &shared,
                            &frame,
                            &spec,
                            stop,
                            progress,
                            Some(times),
                            Some(window),
                        );
                        window.drain(stop);
                        shared.close();
                        out
                    }));
                }
                for (p, r) in pubs.into_iter().zip(readers) {
                    let out = p.join().expect("requester panicked");
                    outs.push(s.spawn(move || (out, r.join().expect("reader panicked"))));
                }
            }
            let results: Vec<(PubOutcome, Replies<'_>)> = outs
                .into_iter()
                .map(|h| h.join().expect("requester panicked"))
                .collect();
            if let Some(sh) = share {
                sh.peers
                    .published(&results.iter().map(|(o, _)| o.run.msgs).collect::<Vec<_>>());
                // Responders here may be answering other agents' requesters: they stay until
                // every agent's requesters are done.
                if n_responders > 0 {
                    sh.peers.all_published(stop);
                }
            }
            done.store(true, Ordering::Relaxed);
            if let Some(inj) = &injector {
                inj.finish();
            }
            for h in responder_threads {
                h.join().expect("responder panicked");
            }
            Ok(results.into_iter().unzip())
        })?;

    let zero = epoch.get().copied();
    let sent: u64 = pub_outs.iter().map(|o| o.run.msgs).sum();
    let ok: u64 = replies.iter().map(|r| r.ok).sum();
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
    let mut corrected = new_histogram();
    let mut uncorrected = new_histogram();
    for r in &replies {
        corrected.add(&r.rec.corrected).expect("same bounds");
        uncorrected.add(&r.rec.uncorrected).expect("same bounds");
    }
    // The requesters' side of the traffic: replies received, from the first request on.
    let reply_runs: Vec<ClientRun> = replies
        .iter()
        .enumerate()
        .map(|(i, r)| ClientRun {
            role: Role::Sub,
            id: g(i),
            msgs: r.ok,
            bytes: r.bytes,
            start: zero,
            end: r.last.or(zero),
        })
        .collect();
    let pub_runs: Vec<ClientRun> = pub_outs.iter().map(|o| o.run).collect();
    meter.counted_until(pub_runs.iter().chain(&reply_runs).map(|r| r.end));
    let (_, by_role, clients) =
        throughput_sections(&[pub_runs.as_slice(), reply_runs.as_slice()].concat());
    // The headline is completed requests per second.
    let throughput = crate::stats::throughput::Throughput::aggregate(&reply_runs);
    let lost = sent.saturating_sub(ok);
    let delivery = Delivery {
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
            .zip(&replies)
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
    };
    let open_loop = open;
    let fault = injector.as_ref().map(|inj| {
        let logs: Vec<&RecoveryLog> = replies.iter().map(|r| &r.recovery).collect();
        // Closed loop has no schedule to be back on: its end is 0, so it never "recovers".
        let end_ns = match (&schedules.first(), opts.stop) {
            (Some(Some(_)), Stop::For(d)) => d.as_nanos() as u64,
            (Some(Some(sc)), Stop::Count(n)) => sc.due_ns(n).unwrap_or(u64::MAX),
            _ => 0,
        };
        inj.report(&logs, &opts.pace, opts.clients, end_ns)
    });
    // Per target stream: every sequence acknowledged to the clients publishing into it.
    let acks = opts.js_bases.as_ref().map(|bases| {
        let mut per: Vec<JsAcks> = bases
            .iter()
            .map(|b| JsAcks {
                acked: AckSet::new(*b),
                duplicate_acks: 0,
                deduplicated: 0,
            })
            .collect();
        for (i, r) in replies.iter().enumerate() {
            let js = &mut per[opts.target_of(i).1];
            js.duplicate_acks += r.dup_acks;
            js.deduplicated += r.deduplicated;
            if let Some(set) = &r.acks {
                js.duplicate_acks += js.acked.merge(set);
            }
        }
        per
    });
    let pacing = match &opts.pace {
        Pace::Open(sc) => {
            crate::scenario::pacing::pacing(sc.mean_rate(), &pub_outs, by_role.get("pub"))
        }
        Pace::Unlimited => None,
    };
    let stages = stage_totals.as_ref().map(|totals| {
        let sc = totals.schedule();
        let mut sent_by_stage = vec![0u64; sc.stages().len()];
        for (o, part) in pub_outs.iter().zip(&schedules) {
            let part = part
                .as_ref()
                .expect("an open loop has a schedule per requester");
            for (t, n) in sent_by_stage.iter_mut().zip(part.sent_by_stage(o.run.msgs)) {
                *t += n;
            }
        }
        ScheduleReport::new(sc, &sent_by_stage, 1, Some(totals.take()))
    });
    let result = RunResult {
        schedule: stages,
        plan: None,
        throughput,
        by_role,
        clients,
        delivery,
        fault,
        pacing,
        latency: Some(LatencyStats::of(&corrected)),
        // Closed loop has no schedule: the round trip is the only latency there is.
        latency_uncorrected: open_loop.then(|| LatencyStats::of(&uncorrected)),
        ..RunResult::new(
            opts.scenario,
            started_at,
            opts.params(),
            ServerMeta::new(&info, &url, target.local),
            &errors,
            stop.load(Ordering::Relaxed),
        )
    };
    Ok((result, acks))
}

fn new_replies<'a>(
    fault_ns: Option<&'a AtomicU64>,
    js_base: Option<u64>,
    size: usize,
    errors: &'a ErrorCounts,
    meter: &'a ClientMeter,
) -> Replies<'a> {
    Replies {
        acks: js_base.map(AckSet::new),
        dup_acks: 0,
        deduplicated: 0,
        errors,
        meter,
        stands_for: js_base.map(|_| size as u64),
        recovery: RecoveryLog::default(),
        fault_ns,
        rec: LatencyRecorder::new(0, u64::MAX / 2, None).with_live(meter.latency.as_ref()),
        ok: 0,
        no_responders: 0,
        late: 0,
        bytes: 0,
        last: None,
    }
}

/// Handles one reply: frees its request's slot and times it.
fn on_reply(
    r: &mut Replies<'_>,
    m: &proto::Msg<'_>,
    window: &Window,
    times: &SendTimes,
    schedule: Option<&PubSchedule>,
    zero: Instant,
) {
    let now = Instant::now();
    // The reply subject's last token is the request's sequence number.
    let Some(seq) = m
        .subject
        .rsplit(|b| *b == b'.')
        .next()
        .and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| t.parse::<u64>().ok())
    else {
        return;
    };
    let on_time = window.complete(seq);
    // A server with no one listening answers at once with a 503 status and no payload.
    if m.headers.is_some_and(|h| h.starts_with(b"NATS/1.0 503")) {
        r.no_responders += u64::from(on_time);
        return;
    }
    // Any other status (a direct get's 404 for a key with no value, …) is a failed request.
    if let Some(kind) = m.headers.and_then(jsapi::status_kind) {
        r.errors.add(kind);
        return;
    }
    // Messages this reply acknowledges: a whole batch at its commit.
    let mut count = 1;
    if let Some(acks) = r.acks.as_mut() {
        // A late acknowledgement still says the message was stored: it counts for the
        // reconciliation with the stream, only not for latency.
        match jsapi::read_ack(m.payload) {
            // The sequence of a recognised message id is where the first copy went: not this
            // run's to account for.
            Ack::Stored {
                duplicate: true, ..
            } => r.deduplicated += 1,
            Ack::Stored { seq, batch, .. } => {
                count = batch.max(1);
                for s in seq.saturating_sub(count - 1)..=seq {
                    if !acks.insert(s) {
                        r.dup_acks += 1;
                    }
                }
            }
            Ack::Failed(kind) => {
                r.errors.add(kind);
                return;
            }
        }
    }
    if !on_time {
        r.late += 1;
        return;
    }
    let recv_ns = now.saturating_duration_since(zero).as_nanos() as u64;
    let sent_ns = times.get(seq);
    // Closed loop has no schedule: a request is due when it is sent.
    let due_ns = match schedule {
        Some(s) => s.due_ns(seq).unwrap_or(recv_ns),
        None => sent_ns.unwrap_or(recv_ns),
    };
    r.rec.record(seq, due_ns, sent_ns, recv_ns);
    if let Some(f) = r.fault_ns {
        r.recovery
            .record(Some(due_ns), recv_ns, f.load(Ordering::Relaxed));
    }
    r.ok += count;
    r.meter.msgs.store(r.ok, Ordering::Relaxed);
    r.bytes += r
        .stands_for
        .map_or(m.payload.len() as u64, |size| size * count);
    r.last = Some(now);
}

/// One closed-loop requester on one thread: after every read, the slots that replies (or
/// timeouts) freed are refilled with new requests, written in one go.
#[allow(clippy::too_many_arguments)]
fn closed_loop(
    reader: &mut conn::Reader,
    shared: &conn::Shared,
    frame: &Shape,
    window: &Window,
    times: &SendTimes,
    until: Stop,
    zero: Instant,
    stop: &AtomicBool,
    id: u32,
    r: &mut Replies<'_>,
    progress: &AtomicU64,
) -> PubOutcome {
    // In requests: with batches, the last one may be short.
    let limit = match (until, frame) {
        (Stop::Count(n), Shape::Js(f)) => n.div_ceil(f.messages_in(0).max(1)),
        (Stop::Count(n), Shape::Plain(_)) => n,
        (Stop::For(_), _) => u64::MAX,
    };
    let deadline = match until {
        Stop::For(d) => Some(zero + d),
        Stop::Count(_) => None,
    };
    let mut out = Vec::with_capacity(load::FLUSH_AT);
    let mut sent = 0u64;
    let mut msgs = 0u64;
    let mut failed = None;
    let mut link = shared.link_generation();
    reader.run(shared, load::TICK, |event| match event {
        Event::Msg(m) => {
            on_reply(r, &m, window, times, None, zero);
            Flow::Continue
        }
        Event::Tick => {
            abandon_if_relinked(shared, &mut link, window);
            let now = Instant::now();
            let sending = failed.is_none()
                && !stop.load(Ordering::Relaxed)
                && deadline.is_none_or(|d| now < d);
            let mut write = |out: &mut Vec<u8>| {
                // Requests lost with a replaced connection time out in the window.
                if let Err(conn::SendError::Failed(k)) = shared.write_all(out) {
                    failed = Some(k);
                }
                out.clear();
            };
            while sending && sent < limit && window.try_acquire(sent) {
                times.put(sent, zero.elapsed().as_nanos() as u64);
                msgs += frame.append(&mut out, sent);
                sent += 1;
                if out.len() >= load::FLUSH_AT {
                    write(&mut out);
                }
            }
            if !out.is_empty() {
                write(&mut out);
            }
            progress.store(msgs, Ordering::Relaxed);
            let more = sending && sent < limit;
            if (!more && window.in_flight() == 0)
                || failed.is_some()
                || stop.load(Ordering::Relaxed)
            {
                Flow::Stop
            } else {
                Flow::Continue
            }
        }
    });
    if let Some(k) = failed {
        shared.errors.add(k);
        shared.errors.failed(k, false);
    }
    PubOutcome {
        run: ClientRun {
            role: Role::Pub,
            id,
            msgs,
            bytes: msgs * frame.payload_len() as u64,
            start: Some(zero),
            end: Some(Instant::now()),
        },
        error: failed,
        late_sends: 0,
        send_lag: None,
        write_blocked: None,
    }
}

/// After a reconnect, the requests in flight on the lost link are void: their slots are freed
/// at once (see [`Window::abandon_all`]).
fn abandon_if_relinked(shared: &conn::Shared, seen: &mut u64, window: &Window) {
    let now = shared.link_generation();
    if now != *seen {
        *seen = now;
        window.abandon_all();
    }
}

/// Sends a SUB plus PING and returns the PONG to wait for.
pub(super) fn subscribe(shared: &conn::Shared, cmd: Vec<u8>) -> Result<u64> {
    shared
        .subscribe(&cmd)
        .map_err(|e| e.during("cannot subscribe"))
}

pub(super) fn connect_to(
    target: &Target,
    name: &str,
    conn_opts: &crate::options::conn::ConnOptions,
    stall: Duration,
    errors: &Arc<ErrorCounts>,
) -> Result<Conn> {
    conn::connect(
        &ConnectSpec {
            servers: &target.urls,
            name,
            opts: &conn_opts.dial,
            stall_limit: stall,
        },
        errors.clone(),
    )
}
