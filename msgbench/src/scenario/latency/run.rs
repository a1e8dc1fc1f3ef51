//! The latency scenario: one publisher on server A at a fixed rate, one subscriber on server B
//! (the same server unless told otherwise), one monotonic clock in one process.
//!
//! Order of a run: connect both sides, measure the round trip to each server ([`connect`]),
//! subscribe and wait until the interest is in place (across servers, until a probe published
//! on A arrives on B), fix time zero ([`Run::arm`]), run the open-loop publisher, then wait for
//! the last messages ([`Run::load`]), and make the result of what each side measured
//! ([`super::assemble`]). Each delivery is recorded from its intended send time (derived from its
//! sequence number alone) and from its actual send time (looked up in a ring the publisher
//! fills).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant, SystemTime};

use super::assemble;
use super::options::{LatencyOptions, Polling};
use crate::engine::conn::{self, Conn, ConnectSpec, Flow, Reader};
use crate::engine::cpu;
use crate::engine::load::{
    self, Frame, PubOutcome, PubSpec, Recorder, Recovering, StampKind, SubControl, SubOutcome,
    SubSpec, UNKNOWN,
};
use crate::error::{Error, ErrorCounts, Result};
use crate::result::{Rtt, RunResult, ServerMeta};
use crate::scenario::fault::Injector;
use crate::scenario::segment::Share;
use crate::server::Target;
use crate::stats::hdr::IntervalLog;
use crate::stats::latency::{IntervalSink, LatencyRecorder, SendTimes};
use crate::stats::recovery::RecoveryLog;
use crate::stats::schedule::PubSchedule;
use crate::stats::stages::StageTotals;
use crate::stats::throughput::Role;
use crate::stats::timeline::{ClientMeter, Meter};
use crate::wire::proto::{self, ServerInfo};
use crate::wire::stamp;
use crate::wire::url::ServerUrl;

/// The sequence number of a probe message (never a real sequence).
const PROBE: u64 = u64::MAX;

/// Round trips measured per server before the run.
const RTT_SAMPLES: usize = 5;

/// The publisher's read side hands nothing over (PONGs, and PINGs to answer): it wakes once a
/// second for its keepalives rather than every `load::TICK`, so that on a busy machine it
/// takes no turn from the threads the latency goes through.
const PUB_READER_TICK: Duration = Duration::from_secs(1);

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
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    // `--busy-poll auto` watches the CPUs while the clients connect, then decides.
    let has_sub = share.is_none_or(|sh| sh.seg.subs > 0);
    let window = (has_sub && opts.busy_poll == Polling::Measure).then(cpu::Window::open);
    let clients = connect(opts, target_a, target_b, share, &errors)?;
    let polling = opts.busy_poll.choose(window, has_sub);
    let mut interval_log = match &opts.hist {
        Some(prefix) => Some(IntervalLog::create(
            &with_suffix(prefix, "hlog"),
            SystemTime::now(),
        )?),
        None => None,
    };
    let run =
        Run::new(opts, target_a, meter, stop, share, &clients)?.polling(polling.on == Some(true));
    let Clients {
        pub_conn,
        sub_conn,
        server: (info, url),
        server_b,
        rtt,
    } = clients;
    let measured = std::thread::scope(|s| {
        let armed = run.arm(s, pub_conn, sub_conn, interval_log.as_mut())?;
        Ok::<_, Error>(run.load(s, armed))
    })?;
    if let (Some(prefix), Some(sub)) = (&opts.hist, &measured.sub) {
        assemble::write_hist(prefix, &sub.recorder.rec)?;
    }
    let base = RunResult::new(
        "latency",
        started_at,
        opts.params_with(polling),
        ServerMeta::new(&info, &url, target_a.local),
        &errors,
        stop.load(Ordering::Relaxed),
    );
    Ok(assemble::assemble(&run, &measured, rtt, server_b, base))
}

/// The two clients of a run, before anyone subscribes. On agents the publisher and the
/// subscriber may be on different hosts; each side then runs alone, and they meet at the
/// common start time and the final count.
struct Clients {
    pub_conn: Option<Conn>,
    sub_conn: Option<Conn>,
    /// The server the result names (the publisher's, else the subscriber's) and its URL.
    server: (ServerInfo, ServerUrl),
    /// The subscriber's server, when it is another one.
    server_b: Option<ServerMeta>,
    /// The round trip to each server, when both sides run here.
    rtt: Option<Rtt>,
}

/// Connects both sides (or this agent's), checks the size against the server's limit and
/// measures the round trip to each server. Nothing here is timed.
fn connect(
    opts: &LatencyOptions,
    target_a: &Target,
    target_b: Option<&Target>,
    share: Option<Share<'_>>,
    errors: &Arc<ErrorCounts>,
) -> Result<Clients> {
    let (has_pub, has_sub) = share.map_or((true, true), |sh| (sh.seg.pubs > 0, sh.seg.subs > 0));
    let dial = |t: &Target, name: &str| {
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
        .then(|| dial(target_a, "msgbench-latency-pub"))
        .transpose()?;
    let mut sub_conn = has_sub
        .then(|| dial(target_b.unwrap_or(target_a), "msgbench-latency-sub"))
        .transpose()?;
    let first = pub_conn
        .as_ref()
        .or(sub_conn.as_ref())
        .expect("a share has a client");
    let server = (first.info.clone(), first.url.clone());
    let server_b = target_b
        .zip(sub_conn.as_ref())
        .map(|(t, c)| ServerMeta::new(&c.info, &c.url, t.local));
    let max = server.0.max_payload;
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
    Ok(Clients {
        pub_conn,
        sub_conn,
        server,
        server_b,
        rtt,
    })
}

/// One run's settings and the cells its two sides meet at: the send-time ring, time zero,
/// the probe count, the subscriber's expected count, the fault. It outlives the threads'
/// scope, so the subscriber's recorder borrows from it and nothing on the per-message path is
/// shared any other way.
pub(super) struct Run<'a> {
    pub(super) opts: &'a LatencyOptions,
    pub(super) meter: &'a Meter,
    pub(super) stop: &'a AtomicBool,
    pub(super) share: Option<Share<'a>>,
    /// The subscriber is on another server than the publisher.
    pub(super) across: bool,
    /// This side is alone on its host (on agents): no send time can be read across hosts.
    pub(super) cross: bool,
    pub(super) schedule: PubSchedule,
    pub(super) stage_totals: Option<StageTotals>,
    pub(super) send_times: SendTimes,
    pub(super) epoch: OnceLock<Instant>,
    pub(super) probes: AtomicU64,
    pub(super) ctl: SubControl,
    pub(super) pub_meter: Arc<ClientMeter>,
    pub(super) sub_meter: Arc<ClientMeter>,
    pub(super) frame: Frame,
    /// A publish of a message stamped [`PROBE`].
    pub(super) probe: Vec<u8>,
    pub(super) injector: Option<Injector<'a>>,
    /// The fault time a subscriber reads when there is no fault.
    pub(super) no_fault: AtomicU64,
    /// The server's URL, for errors about it.
    pub(super) url: String,
    /// The subscriber polls its socket instead of sleeping.
    busy_poll: bool,
}

/// The subscriber's thread and the connection it reads.
struct SubSide<'s, 'e> {
    shared: Arc<conn::Shared>,
    handle: ScopedJoinHandle<'s, Received<'e>>,
}

/// What the subscriber measured.
pub(super) struct Received<'e> {
    pub(super) out: SubOutcome,
    pub(super) recorder: LatencySubscriber<'e>,
    pub(super) recovery: RecoveryLog,
}

/// The sides once the interest is in place and time zero is fixed: the publisher's
/// connection (its read side running) and the subscriber's thread, where each runs here.
struct Armed<'s, 'e> {
    publisher: Option<Arc<conn::Shared>>,
    sub: Option<SubSide<'s, 'e>>,
    zero: Instant,
}

/// What the two sides measured, for [`assemble`].
pub(super) struct Measured<'e> {
    pub(super) publisher: Option<PubOutcome>,
    pub(super) sub: Option<Received<'e>>,
    /// A subscriber alone on its agent: what the publisher's agent said it sent.
    pub(super) everyone: Option<Vec<u64>>,
}

impl<'a> Run<'a> {
    fn new(
        opts: &'a LatencyOptions,
        target_a: &'a Target,
        meter: &'a Meter,
        stop: &'a AtomicBool,
        share: Option<Share<'a>>,
        clients: &Clients,
    ) -> Result<Self> {
        let payload = vec![b'l'; opts.size];
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
        let here = clients.pub_conn.is_some() && clients.sub_conn.is_some();
        Ok(Self {
            across: clients.server_b.is_some(),
            cross: share.is_some() && !here,
            schedule: opts.schedule.share(0, 1),
            stage_totals: StageTotals::new(&opts.schedule),
            // Four seconds of sends (at least 64 Ki) in flight before a send time is forgotten.
            send_times: SendTimes::new(
                ((opts.schedule.peak_rate() * 4.0) as usize).clamp(1 << 16, 1 << 22),
            ),
            epoch: OnceLock::new(),
            probes: AtomicU64::new(0),
            ctl: SubControl::new(UNKNOWN),
            pub_meter: meter.client(Role::Pub, 0, false),
            sub_meter: meter.client(Role::Sub, 0, true),
            frame: Frame::new(&opts.subject, None, b"", &payload, StampKind::Sequence),
            probe,
            injector: Injector::new(opts.conn.fault, target_a)?,
            no_fault: AtomicU64::new(crate::scenario::fault::NOT_YET),
            url: clients.server.1.to_string(),
            busy_poll: false,
            opts,
            meter,
            stop,
            share,
        })
    }

    /// Has the subscriber poll its socket.
    fn polling(mut self, on: bool) -> Self {
        self.busy_poll = on;
        self
    }

    /// The subscription in place and confirmed, the interest known to reach the publisher's
    /// server, and time zero fixed (on agents, the common start reached).
    fn arm<'s, 'e>(
        &'e self,
        s: &'s Scope<'s, 'e>,
        pub_conn: Option<Conn>,
        sub_conn: Option<Conn>,
        interval_log: Option<&'e mut IntervalLog>,
    ) -> Result<Armed<'s, 'e>> {
        let sub = sub_conn
            .map(|c| self.subscribe(s, c, interval_log))
            .transpose()?;
        let fail = |why: &str| {
            if let Some(side) = &sub {
                side.shared.close();
            }
            self.not_connected(why)
        };
        // Only a subscriber that sees a probe tells the publisher the interest is in place;
        // on agents, the common start comes after every agent's subscriptions instead.
        let Some(Conn {
            mut reader, shared, ..
        }) = pub_conn
        else {
            let zero = match self.share.map(|sh| sh.peers.ready(self.stop)) {
                Some(Some(at)) => at,
                _ => return Err(fail("stopped before the common start")),
            };
            // Time zero is set before the publisher (elsewhere) starts, so no message can
            // arrive before it and be taken for a probe.
            let _ = self.epoch.set(zero);
            return Ok(Armed {
                publisher: None,
                sub,
                zero,
            });
        };
        let reader_shared = shared.clone();
        s.spawn(move || reader.run(&reader_shared, PUB_READER_TICK, |_| Flow::Continue));
        if self.across && sub.is_some() {
            if let Err(why) = self.probe_until_interest(&shared) {
                shared.close();
                return Err(fail(why));
            }
        }
        let zero = match self.share {
            Some(sh) => match sh.peers.ready(self.stop) {
                Some(at) => at,
                None => {
                    shared.close();
                    return Err(fail("stopped before the common start"));
                }
            },
            None => Instant::now(),
        };
        let zero = *self.epoch.get_or_init(|| zero);
        Ok(Armed {
            publisher: Some(shared),
            sub,
            zero,
        })
    }

    /// Interest travels from B to A over the route asynchronously: publish probes on A until
    /// one arrives on B, so the first measured message cannot be dropped for lack of interest.
    fn probe_until_interest(&self, shared: &conn::Shared) -> std::result::Result<(), &'static str> {
        let deadline = Instant::now() + self.opts.timeout;
        while self.probes.load(Ordering::Acquire) == 0 {
            if Instant::now() >= deadline || self.stop.load(Ordering::Relaxed) {
                return Err("the subscription's interest never reached server A");
            }
            let _ = shared.write_all(&self.probe);
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Subscribes, starts the subscriber's thread and waits for the server to confirm the
    /// subscription.
    fn subscribe<'s, 'e>(
        &'e self,
        s: &'s Scope<'s, 'e>,
        conn: Conn,
        interval_log: Option<&'e mut IntervalLog>,
    ) -> Result<SubSide<'s, 'e>> {
        let Conn {
            mut reader, shared, ..
        } = conn;
        if self.busy_poll {
            // Long enough to bridge the gap between messages at the rates where it is on.
            reader.set_busy_poll(Some(Duration::from_millis(2)));
        }
        let mut cmd = Vec::new();
        proto::encode_sub(&mut cmd, &self.opts.subject, None, 1);
        let ticket = shared
            .subscribe(&cmd)
            .map_err(|e| e.during("cannot subscribe"))?;
        let sh = shared.clone();
        let handle = s.spawn(move || self.receive(reader, &sh, interval_log));
        if let Err(e) = shared.confirm_subscribed(ticket, self.opts.timeout) {
            shared.close();
            return Err(e.error(&self.url));
        }
        Ok(SubSide { shared, handle })
    }

    /// The subscriber's thread: the one subscribe loop, with the latency recorder.
    fn receive<'e>(
        &'e self,
        mut reader: Reader,
        sh: &conn::Shared,
        interval_log: Option<&'e mut IntervalLog>,
    ) -> Received<'e> {
        let opts = self.opts;
        let sink: Option<Box<IntervalSink<'_>>> = interval_log.map(|log| {
            Box::new(move |h: &hdrhistogram::Histogram<u64>, start, end| {
                // A full disk must not end the measurement; the file simply stops growing.
                let _ = log.append(h, start, end);
            }) as Box<IntervalSink<'_>>
        });
        let recorder = LatencySubscriber {
            rec: LatencyRecorder::new(opts.warmup.as_nanos() as u64, 1_000_000_000, sink)
                .with_live(self.sub_meter.latency.as_ref())
                .with_stages(self.stage_totals.as_ref(), Some(&self.schedule)),
            schedule: self.schedule.clone(),
            epoch: &self.epoch,
            send_times: &self.send_times,
            probes: &self.probes,
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
        let fault_ns = self
            .injector
            .as_ref()
            .map_or(&self.no_fault, Injector::fault_ns);
        // Recovery is logged whether or not a fault comes: this recorder reads the clock
        // per message anyway, so the log costs one counter per message.
        let due_of = recorder.schedule.clone();
        let due = move |p: &[u8]| {
            sequence(p)
                .filter(|seq| *seq != PROBE)
                .and_then(|seq| due_of.due_ns(seq))
        };
        let mut r = Recovering::new(recorder, due, &self.epoch, fault_ns);
        let progress = &self.sub_meter.msgs;
        let out = load::subscribe(
            &mut reader,
            sh,
            &spec,
            &self.ctl,
            self.stop,
            progress,
            &mut r,
        );
        let (mut recorder, recovery) = (r.inner, r.log);
        let now = recorder.now_ns(Instant::now());
        recorder.rec.finish(now);
        sh.close();
        Received {
            out,
            recorder,
            recovery,
        }
    }

    /// The load: the open-loop publisher from time zero (with the fault's thread, if any),
    /// then the subscriber, told how many messages to expect, joined.
    fn load<'s, 'e>(&'e self, s: &'s Scope<'s, 'e>, armed: Armed<'s, 'e>) -> Measured<'e> {
        let Armed {
            publisher,
            sub,
            zero,
        } = armed;
        let Some(shared) = publisher else {
            // A subscriber alone: its agent says what the publisher sent.
            let all = self.share.and_then(|sh| sh.peers.all_published(self.stop));
            self.ctl.arm(all.as_ref().map_or(0, |a| a.iter().sum()));
            let side = sub.expect("a subscriber-only share");
            return Measured {
                publisher: None,
                sub: Some(side.handle.join().expect("subscriber thread panicked")),
                everyone: all,
            };
        };
        std::thread::sleep(zero.saturating_duration_since(Instant::now()));
        if let Some(inj) = &self.injector {
            s.spawn(move || inj.run(zero, self.stop));
        }
        self.meter.follow_schedule(zero, &self.opts.schedule);
        let spec = PubSpec {
            id: 0,
            stop: self.opts.stop,
            pace: Some(self.schedule.clone()),
            flush_timeout: self.opts.timeout,
            start_at: Some(zero),
            late_bound: self.opts.late_bound,
            // The send lag covers the messages latency times: those due after the warm-up.
            lag_from: self.opts.warmup,
        };
        let pub_out = load::publish(
            &shared,
            &self.frame,
            &spec,
            self.stop,
            &self.pub_meter.msgs,
            Some(&self.send_times),
            None,
        );
        shared.close();
        if let Some(inj) = &self.injector {
            inj.finish();
        }
        if let Some(sh) = self.share {
            sh.peers.published(&[pub_out.run.msgs]);
        }
        let sub = sub.map(|side| {
            // Probes that were still in flight arrive before the measured messages (same
            // route, same order), so by now their count is final.
            self.ctl
                .arm(pub_out.run.msgs + self.probes.load(Ordering::Acquire));
            side.handle.join().expect("subscriber thread panicked")
        });
        Measured {
            publisher: Some(pub_out),
            sub,
            everyone: None,
        }
    }

    fn not_connected(&self, why: &str) -> Error {
        Error::Connect {
            url: self.url.clone(),
            reason: why.to_string(),
        }
    }
}

/// The subscriber's per-message work: sequence → due time, ring → send time, clock → receive.
pub(super) struct LatencySubscriber<'a> {
    pub(super) rec: LatencyRecorder<'a>,
    pub(super) schedule: PubSchedule,
    pub(super) epoch: &'a OnceLock<Instant>,
    pub(super) send_times: &'a SendTimes,
    pub(super) probes: &'a AtomicU64,
    pub(super) unstamped: u64,
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
pub(super) fn sequence(payload: &[u8]) -> Option<u64> {
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

pub(super) fn with_suffix(prefix: &std::path::Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_os_string();
    s.push(".");
    s.push(suffix);
    PathBuf::from(s)
}
