//! `msgbench conns`: connections as the load. Opens `--clients` connections from a fleet (at
//! `--connect-rate`, at most `--in-flight` under way), holds them for `--hold` while a light
//! publisher checks that every subscribed one still receives, and, with `--fault restart`,
//! watches the herd find its way back.
//!
//! The hold bounds what is reported: a connection back only after it ended is never back. The
//! checks a cut connection missed during its outage are the fault's (excused, see [`excused`]);
//! any other missed check is a failure of the run, fault or not.
//!
//! Memory is read three times: before the first connect, with every connection up, and at
//! the end (the peak). The server's is read from its monitoring endpoint (`--server-monitor`)
//! or, for the server msgbench started, from its process.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::cli::Subscribe;
use crate::engine::conn::{self, ConnectSpec};
use crate::engine::fleet::{Fleet, FleetSpec, Interest, Member, Recovery};
use crate::engine::load::{self, Frame, Keys, PubSpec, StampKind, SubControl, UNKNOWN};
use crate::engine::memory::{self, Figure};
use crate::engine::pace::Stop;
use crate::error::{Error, ErrorCounts, Result};
use crate::options::conns::ConnsOptions;
use crate::result::{
    Checks, ConnectLatency, ConnsReport, Herd, Keepalives, Memory, PhaseTimes, RunResult,
    ServerMeta,
};
use crate::server::Target;
use crate::stats::delivery::PublisherKey;
use crate::stats::schedule::{PubSchedule, RateSchedule};
use crate::wire::stamp;

use super::fault::Injector;

/// How long after the hold the connections may still take to receive the last checks.
const DRAIN: Duration = Duration::from_secs(2);
/// Connections named as missing checks, at most.
const MISSING_SHOWN: usize = 10;

/// `msgbench conns`.
pub struct Conns;

super::registry::flags!(crate::cli::ConnsArgs, out, conn);

impl super::Scenario for Conns {
    type Args = crate::cli::ConnsArgs;
    const NAME: &'static str = "conns";
    const WORDS: &'static [&'static str] = &["conns"];
    const ABOUT: &'static str = "Connections as the load: open N at a connect rate, optionally \
                                 subscribe each, hold them while a light publisher checks each \
                                 still receives; connect latency by phase, failures by kind, \
                                 memory per connection (msgbench's and the server's), and with \
                                 --fault restart@T:HOLD --reconnect the reconnect herd.";
    fn validate(a: &Self::Args) -> Result<Box<dyn super::Runnable>> {
        Ok(Box::new(ConnsOptions::new(a)?))
    }
}

impl super::Runnable for ConnsOptions {
    fn output(&self) -> &crate::options::Output {
        &self.output
    }
    fn server(
        &self,
    ) -> Option<(
        &crate::options::ServerChoice,
        Option<crate::result::LinkSpec>,
    )> {
        Some((&self.server, self.conn.link))
    }
    fn split(&self) -> Result<super::Split> {
        Err(super::not_on_agents("conns"))
    }
    fn timeout(&self) -> std::time::Duration {
        self.timeout
    }
    fn duration(&self) -> Option<std::time::Duration> {
        Some(self.hold)
    }
    fn params(&self) -> crate::result::Params {
        ConnsOptions::params(self).into()
    }
    fn run(&self, ctx: &super::Ctx<'_>) -> Result<RunResult> {
        run(self, ctx.target()?, ctx.stop)
    }
}

/// Runs `msgbench conns`.
///
/// # Errors
/// Failures before any connection: an address that does not resolve, a checker publisher
/// that cannot connect.
pub fn run(opts: &ConnsOptions, target: &Target, stop: &AtomicBool) -> Result<RunResult> {
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    // One plain connection first: the server's INFO for the result, and a clear error when it
    // cannot be reached at all, before the storm.
    let url = target
        .urls
        .first()
        .ok_or_else(|| Error::Usage("no server to connect to".into()))?;
    let probe = conn::connect(
        &ConnectSpec {
            servers: std::slice::from_ref(url),
            name: "msgbench-conns-probe",
            opts: &crate::engine::conn::Dialing {
                reconnect: false,
                ..opts.conn.dial
            },
            stall_limit: opts.conn.dial.connect_timeout,
        },
        Arc::new(ErrorCounts::default()),
    )?;
    let meta = ServerMeta::new(&probe.info, &probe.url, target.local);
    probe.shared.close();
    drop(probe);
    let errors = Arc::new(ErrorCounts::default());
    let say = |s: String| {
        if opts.output.progress {
            eprintln!("{s}");
        }
    };
    if let Some(note) = &opts.fd_note {
        say(note.clone());
    }
    let run_tag = stamp::new_run_tag();
    let prefix = opts
        .subject
        .clone()
        .unwrap_or_else(|| format!("msgbench.conns.{run_tag:04x}"));
    let interest = match opts.subscribe {
        Subscribe::None => Interest::None,
        Subscribe::Own => Interest::Own(prefix.clone()),
        Subscribe::Shared => Interest::Shared(prefix.clone()),
    };
    let spec = FleetSpec {
        targets: FleetSpec::targets(&target.urls)?,
        name: "msgbench-conns".into(),
        dialing: opts.conn.dial,
        interest,
        run_tag: opts.check_every.map(|_| run_tag),
        errors: Arc::clone(&errors),
        give_up_after: opts.timeout,
        idle_timeout: opts.timeout,
        start_timeout: opts.timeout,
        threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
        in_flight: opts.in_flight,
        connect_rate: opts.connect_rate,
    };
    let server_mem = ServerMemory::new(opts, target);
    let rss_before = memory::bytes(None, Figure::Resident);
    let server_before = server_mem.read();
    let ctl = SubControl::new(UNKNOWN);
    let n = u64::from(opts.clients);
    let injector = Injector::new(opts.conn.fault, target)?;

    let outcome = std::thread::scope(|s| -> Result<_> {
        say(format!(
            "opening {n} connections ({})",
            match opts.connect_rate {
                Some(r) => format!("{r:.0}/s"),
                None => format!("as fast as {} at a time allow", opts.in_flight),
            }
        ));
        let fleet = Fleet::start(s, &spec, &ctl, stop, 0..opts.clients, &[]);
        // Every connection up, or given up on (bounded: each attempt has --connect-timeout,
        // and retries end after --timeout).
        let bound = opts.timeout
            + opts.conn.dial.connect_timeout * 2
            + opts
                .connect_rate
                .map_or(Duration::ZERO, |r| Duration::from_secs_f64(n as f64 / r));
        let mut last_said = Instant::now();
        fleet.wait(bound, stop, |b| {
            if last_said.elapsed() >= Duration::from_secs(1) {
                last_said = Instant::now();
                say(format!(
                    "  {} up, {} ended",
                    b.ready_now(),
                    b.finished_count()
                ));
            }
            b.settled_count() >= n
        });
        let rss_connected = memory::bytes(None, Figure::Resident);
        let server_connected = server_mem.read();
        let buffers_connected = fleet.board().buffer_bytes();
        say(format!(
            "{} of {n} up; holding for {}",
            fleet.board().ready_now(),
            humantime::format_duration(opts.hold)
        ));

        // The hold: the fault (if any) and the checks run on their own threads, and end by
        // themselves.
        let zero = Instant::now();
        if let Some(inj) = &injector {
            s.spawn(move || inj.run(zero, stop));
        }
        let (checker, clock) = match opts.check_every {
            Some(every) => {
                match start_checker(s, opts, target, &prefix, run_tag, every, stop, &errors) {
                    Ok((h, clock)) => (Some(h), Some(clock)),
                    Err(e) => {
                        // The fleet's connections hold until told: end them, or the scope
                        // waits for them.
                        fleet.stop();
                        if let Some(inj) = &injector {
                            inj.finish();
                        }
                        return Err(e);
                    }
                }
            }
            None => (None, None),
        };
        let mut buffers_peak = buffers_connected;
        let until = zero + opts.hold;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100).min(until - Instant::now().min(until)));
            buffers_peak = buffers_peak.max(fleet.board().buffer_bytes());
        }
        // The end of the hold is the end of what is reported as the herd's return: the fleet
        // keeps running until the checks have drained, but a connection back after this counts
        // as never back, and the connections up are counted now.
        let hold_end = Instant::now();
        let up_at_end = fleet.board().ready_now();
        let sent = checker.map(|h| h.join().expect("checker panicked"));
        if let Some(inj) = &injector {
            inj.finish();
        }
        // Taken before the drain: a PING sent during it would have no time to be answered.
        let (pings, pongs) = fleet.board().keepalives();
        // The last checks are in flight: give them a moment to arrive.
        if sent.is_some() {
            let drain_until = Instant::now() + DRAIN;
            while Instant::now() < drain_until && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let failures: BTreeMap<&'static str, u64> = fleet
            .board()
            .failures()
            .into_iter()
            .map(|(f, n)| (f.as_str(), n))
            .collect();
        let buffers_end = fleet.board().buffer_bytes();
        fleet.stop();
        let members = fleet.join();
        Ok(Hold {
            members,
            run_tag,
            zero,
            hold_end,
            rss_connected,
            server_connected,
            buffers_peak,
            buffers_end,
            up_at_end,
            keepalives: Keepalives {
                sent: pings,
                answered: pongs,
            },
            failures,
            sent,
            clock,
        })
    })?;
    let fault = FaultSeen {
        at: injector.as_ref().and_then(|inj| {
            inj.injected_ns()
                .map(|ns| outcome.zero + Duration::from_nanos(ns))
        }),
        error: injector.as_ref().and_then(Injector::error),
        server_back_ms: injector
            .as_ref()
            .and_then(|inj| Some((inj.undone_ns()? as f64 - inj.injected_ns()? as f64) / 1e6)),
    };
    let report = summarize(
        opts,
        &outcome,
        fault,
        rss_before,
        server_before,
        &server_mem,
    );
    let mut result = RunResult::new(
        "conns",
        started_at,
        opts.params(),
        meta,
        &errors,
        stop.load(Ordering::Relaxed),
    );
    result.delivery.accounting = "none";
    result.conns = Some(report);
    Ok(result)
}

/// What the injector saw of the restart.
struct FaultSeen {
    /// The kill.
    at: Option<Instant>,
    /// Why the server could not be restarted, if it could not.
    error: Option<String>,
    /// From the kill until the restarted server accepted clients.
    server_back_ms: Option<f64>,
}

struct Hold {
    members: Vec<Member>,
    /// The stamps' run tag: the checks are the messages that carry it.
    run_tag: u16,
    /// The start of the hold: the fault's time zero.
    zero: Instant,
    /// The end of the hold: a connection back later counts as never back.
    hold_end: Instant,
    rss_connected: Option<u64>,
    server_connected: Option<u64>,
    buffers_peak: u64,
    buffers_end: u64,
    up_at_end: u64,
    keepalives: Keepalives,
    failures: BTreeMap<&'static str, u64>,
    /// What the checker sent, when there were checks.
    sent: Option<u64>,
    /// When each check was due, when there were checks.
    clock: Option<CheckClock>,
}

/// The checker's schedule: when each check was due. A check goes out at its due time or
/// later (never earlier), so every check due after an instant was sent after it.
struct CheckClock {
    start: Instant,
    pace: PubSchedule,
}

impl CheckClock {
    /// The first of the `sent` checks due at or after `at` (`sent` when none was).
    fn first_due_from(&self, at: Instant, sent: u64) -> u64 {
        let due = |seq: u64| {
            self.pace
                .due_ns(seq)
                .is_none_or(|ns| self.start + Duration::from_nanos(ns) >= at)
        };
        // Due times grow with the sequence: the first at or after `at` by bisection.
        let (mut lo, mut hi) = (0u64, sent);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if due(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

/// The light publisher: over the hold, one message per subscribed connection every `every`
/// (to each own subject in turn, or once to the shared one), stamped so receipt is exact.
#[allow(clippy::too_many_arguments)]
fn start_checker<'s, 'e: 's>(
    s: &'s std::thread::Scope<'s, 'e>,
    opts: &'e ConnsOptions,
    target: &'e Target,
    prefix: &str,
    run_tag: u16,
    every: Duration,
    stop: &'e AtomicBool,
    errors: &Arc<ErrorCounts>,
) -> Result<(std::thread::ScopedJoinHandle<'s, u64>, CheckClock)> {
    let conn = conn::connect(
        &ConnectSpec {
            servers: &target.urls,
            name: "msgbench-conns-checker",
            opts: &opts.conn.dial,
            stall_limit: opts.timeout,
        },
        Arc::clone(errors),
    )?;
    let per_round = match opts.subscribe {
        Subscribe::Own => u64::from(opts.clients),
        _ => 1,
    };
    let rate = per_round as f64 / every.as_secs_f64();
    let frame = Frame::new(
        prefix,
        (opts.subscribe == Subscribe::Own).then(|| Keys::cycle(per_round)),
        &[],
        &[b'c'; 32],
        StampKind::Delivery {
            run_tag,
            publisher: 0,
        },
    );
    let clock = CheckClock {
        start: Instant::now(),
        pace: RateSchedule::fixed(rate).share(0, 1),
    };
    let spec = PubSpec {
        id: 0,
        stop: Stop::For(opts.hold),
        pace: Some(clock.pace.clone()),
        // The loop's time zero is the clock's, so the clock knows each check's due time.
        start_at: Some(clock.start),
        late_bound: super::pacing::PACING_LATE_BOUND,
        flush_timeout: opts.timeout,
    };
    let conn::Conn {
        mut reader, shared, ..
    } = conn;
    let reader_shared = Arc::clone(&shared);
    s.spawn(move || reader.run(&reader_shared, load::TICK, |_| conn::Flow::Continue));
    let handle = s.spawn(move || {
        let progress = AtomicU64::new(0);
        let out = load::publish(&shared, &frame, &spec, stop, &progress, None, None);
        shared.close();
        out.run.msgs
    });
    Ok((handle, clock))
}

fn summarize(
    opts: &ConnsOptions,
    h: &Hold,
    fault: FaultSeen,
    rss_before: Option<u64>,
    server_before: Option<u64>,
    server_mem: &ServerMemory,
) -> ConnsReport {
    let firsts: Vec<_> = h.members.iter().filter_map(|m| m.first).collect();
    let connected = firsts.len() as u64;
    let span = firsts
        .iter()
        .filter_map(|t| t.at.map(|at| (at, at + t.total)))
        .fold(None, |acc: Option<(Instant, Instant)>, (a, b)| match acc {
            None => Some((a, b)),
            Some((x, y)) => Some((x.min(a), y.max(b))),
        });
    let span_s = span.map(|(a, b)| (b - a).as_secs_f64());
    let phase = |f: &dyn Fn(&crate::engine::fleet::ConnectTimes) -> Option<Duration>| {
        PhaseTimes::of(firsts.iter().filter_map(f).collect())
    };
    let per_conn = |before: Option<u64>, after: Option<u64>| match (before, after) {
        (Some(b), Some(a)) if connected > 0 => Some((a as f64 - b as f64) / connected as f64),
        _ => None,
    };
    // The connections the restart cut, each with the outage it caused: once the kill has
    // happened (a run stopped before it has no herd).
    let cut: Option<Vec<(&Member, Recovery)>> = fault.at.and(opts.conn.fault).map(|f| {
        let from = h.zero + f.at;
        h.members
            .iter()
            .filter_map(|m| cut_by_restart(m, from, h.hold_end).map(|o| (m, o)))
            .collect()
    });
    let checks = h.sent.map(|sent| {
        let excused = match (&cut, &h.clock) {
            (Some(cut), Some(clock)) => Some((cut.as_slice(), clock)),
            _ => None,
        };
        checks_of(opts, &h.members, h.run_tag, sent, excused)
    });
    let herd = fault
        .at
        .zip(cut.as_ref())
        .map(|(at, cut)| herd_of(opts, cut, h.run_tag, at, h.hold_end, h.sent));
    let fault_at_s = fault
        .at
        .map(|at| at.saturating_duration_since(h.zero).as_secs_f64());
    ConnsReport {
        clients: u64::from(opts.clients),
        connected,
        never_connected: u64::from(opts.clients) - connected,
        up_at_end: h.up_at_end,
        connect_rate_target: opts.connect_rate,
        in_flight: opts.in_flight as u64,
        connects_per_sec: span_s
            .filter(|s| *s > 0.0 && connected > 1)
            .map(|s| connected as f64 / s),
        connect_span_ms: span_s.map(|s| s * 1e3),
        connect_latency: ConnectLatency {
            tcp: phase(&|t| Some(t.tcp)),
            tls: phase(&|t| t.tls),
            handshake: phase(&|t| Some(t.handshake())),
            subscribe: phase(&|t| t.subscribe),
            total: phase(&|t| Some(t.total)),
        },
        failures: h.failures.clone(),
        keepalives: h.keepalives,
        checks,
        memory: Memory {
            rss_before_bytes: rss_before,
            rss_connected_bytes: h.rss_connected,
            peak_rss_bytes: memory::bytes(None, Figure::Peak),
            per_connection_bytes: per_conn(rss_before, h.rss_connected),
            buffers_peak_bytes: h.buffers_peak,
            buffers_end_bytes: h.buffers_end,
            server_source: server_mem.source(),
            server_before_bytes: server_before,
            server_connected_bytes: h.server_connected,
            server_per_connection_bytes: per_conn(server_before, h.server_connected),
        },
        herd: herd.map(|mut hd| {
            hd.fault_at_s = fault_at_s;
            hd.restart_error = fault.error;
            hd.server_back_ms = fault.server_back_ms;
            hd
        }),
    }
}

/// Messages due to connection `i` of `n` when `sent` went out: all of them on a shared
/// subject; on own subjects, message k went to connection k mod n.
fn due_to(i: u32, n: u32, sent: u64, own: bool) -> u64 {
    if !own {
        return sent;
    }
    let n = u64::from(n);
    sent / n + u64::from(u64::from(i) < sent % n)
}

/// The checks connection `m` received, each once.
fn received(m: &Member, run_tag: u16) -> u64 {
    let key = PublisherKey {
        run_tag,
        publisher: 0,
    };
    m.log
        .as_ref()
        .and_then(|l| l.tracker(key))
        .map_or(0, |t| t.unique)
}

/// The outage the restart caused connection `m`: its first loss from the fault's time (`from`,
/// `restart@T` into the hold) until the end of the hold. A connection lost before the fault's
/// time was lost for another reason, and one lost after the hold is not reported.
fn cut_by_restart(m: &Member, from: Instant, hold_end: Instant) -> Option<Recovery> {
    m.recoveries
        .iter()
        .chain(m.outage())
        .find(|o| o.lost_at >= from && o.lost_at <= hold_end)
        .copied()
}

/// The checks due to connection `id` that the restart's outage `o` cost it: those after the
/// last one it received before the loss, and before it was back. "Before it was back" is the
/// earlier of the first check due once it was subscribed again (due then, so sent then or
/// later) and the first it received after the loss (NATS delivers one publisher's messages in
/// order: everything before that one which it did not get was sent before its subscription
/// was in place). A connection that never came back is excused every check after its loss.
/// Each check counted here was missed: none after its mark arrived before the loss, and none
/// before the first after it.
fn excused(id: u32, o: &Recovery, clock: &CheckClock, n: u32, sent: u64, own: bool) -> u64 {
    let back = o.back_at.map_or(sent, |at| clock.first_due_from(at, sent));
    let end = o.first_seq.map_or(back, |f| f.min(back)).min(sent);
    let from = o.seq_mark.min(end);
    due_to(id, n, end, own) - due_to(id, n, from, own)
}

/// The checks: due, received, missed, and (with `cut`, the connections the restart cut) which
/// of the missed the restart excuses.
fn checks_of(
    opts: &ConnsOptions,
    members: &[Member],
    tag: u16,
    sent: u64,
    cut: Option<(&[(&Member, Recovery)], &CheckClock)>,
) -> Checks {
    let own = opts.subscribe == Subscribe::Own;
    let (mut expected, mut got, mut missing) = (0u64, 0u64, Vec::new());
    for m in members {
        let due = due_to(m.id, opts.clients, sent, own);
        let r = received(m, tag).min(due);
        expected += due;
        got += r;
        if r < due {
            missing.push(m.id);
        }
    }
    let excused_by_fault = cut.map_or(0, |(cut, clock)| {
        cut.iter()
            .map(|(m, o)| {
                let missed = due_to(m.id, opts.clients, sent, own).saturating_sub(received(m, tag));
                excused(m.id, o, clock, opts.clients, sent, own).min(missed)
            })
            .sum()
    });
    Checks {
        every_ms: opts.check_every.map_or(0.0, |d| d.as_secs_f64() * 1e3),
        published: sent,
        expected,
        received: got,
        missed: expected - got,
        excused_by_fault,
        connections_missing: missing.len() as u64,
        missing_ids: missing.into_iter().take(MISSING_SHOWN).collect(),
    }
}

/// The herd: every connection the restart cut (`cut`), and how long from the kill each took to
/// be back. One back only after the hold ended counts as never back.
fn herd_of(
    opts: &ConnsOptions,
    cut: &[(&Member, Recovery)],
    tag: u16,
    fault_at: Instant,
    hold_end: Instant,
    sent: Option<u64>,
) -> Herd {
    let mut back_after = Vec::new();
    let mut attempts = Vec::new();
    for (_, o) in cut {
        if let Some(at) = o.back_at.filter(|at| *at <= hold_end) {
            back_after.push(at.saturating_duration_since(fault_at));
            attempts.push(u64::from(o.attempts));
        }
    }
    let lost = cut.len() as u64;
    back_after.sort_unstable();
    attempts.sort_unstable();
    // A window sliding over the sorted return times: the most returns within 100 ms.
    let mut peak = 0usize;
    let mut from = 0usize;
    for (i, t) in back_after.iter().enumerate() {
        while *t - back_after[from] > Duration::from_millis(100) {
            from += 1;
        }
        peak = peak.max(i + 1 - from);
    }
    let back = back_after.len() as u64;
    // The time by which `q` of the lost connections were back: null if that many never were.
    let to = |q: f64| -> Option<f64> {
        let need = ((q * lost as f64).ceil() as usize).max(1);
        back_after.get(need - 1).map(|d| d.as_secs_f64() * 1e3)
    };
    let pick = |q: f64| -> Option<u64> {
        if attempts.is_empty() {
            return None;
        }
        let rank = ((q * attempts.len() as f64).ceil() as usize).clamp(1, attempts.len());
        Some(attempts[rank - 1])
    };
    let msgs_lost = sent.map(|sent| {
        let own = opts.subscribe == Subscribe::Own;
        cut.iter()
            .map(|(m, _)| due_to(m.id, opts.clients, sent, own).saturating_sub(received(m, tag)))
            .sum()
    });
    Herd {
        fault: opts
            .conn
            .fault
            .map(|f| format!("restart@{:?}:{:?}", f.at, f.hold))
            .unwrap_or_default(),
        jitter: opts.conn.dial.jitter,
        fault_at_s: None,
        hold_end_ms: hold_end.saturating_duration_since(fault_at).as_secs_f64() * 1e3,
        lost,
        back,
        never_back: lost - back,
        to_50pct_ms: if lost > 0 { to(0.5) } else { None },
        to_99pct_ms: if lost > 0 { to(0.99) } else { None },
        to_100pct_ms: if lost > 0 { to(1.0) } else { None },
        attempts_mean: (!attempts.is_empty())
            .then(|| attempts.iter().sum::<u64>() as f64 / attempts.len() as f64),
        attempts_p50: pick(0.5),
        attempts_p99: pick(0.99),
        attempts_max: attempts.last().copied(),
        msgs_lost,
        restart_error: None,
        server_back_ms: None,
        peak_back_per_100ms: (peak > 0).then_some(peak as u64),
    }
}

/// Where the server's memory is read from.
enum ServerMemory {
    Monitor(String),
    Process(u32),
    None,
}

impl ServerMemory {
    fn new(opts: &ConnsOptions, target: &Target) -> Self {
        match (&opts.server_monitor, &target.embedded) {
            (Some(url), _) => ServerMemory::Monitor(url.trim_end_matches('/').to_string()),
            (None, Some(e)) => e.pid().map_or(ServerMemory::None, ServerMemory::Process),
            (None, None) => ServerMemory::None,
        }
    }

    fn source(&self) -> Option<String> {
        match self {
            ServerMemory::Monitor(u) => Some(u.clone()),
            ServerMemory::Process(_) => Some("embedded".into()),
            ServerMemory::None => None,
        }
    }

    /// The server's resident memory now, in bytes.
    fn read(&self) -> Option<u64> {
        match self {
            ServerMemory::Monitor(url) => varz_mem(url),
            ServerMemory::Process(pid) => memory::bytes(Some(*pid), Figure::Resident),
            ServerMemory::None => None,
        }
    }
}

/// `mem` from the server's `/varz` (its resident memory in bytes), over plain HTTP/1.0.
fn varz_mem(base: &str) -> Option<u64> {
    let url = url::Url::parse(base).ok()?;
    let host = url.host_str()?;
    let port = url.port_or_known_default()?;
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .ok()?
        .next()?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET /varz HTTP/1.0\r\nHost: {host}\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    let json = &body[body.find("\r\n\r\n")? + 4..];
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v.get("mem")?.as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check every 250 ms: check `seq` is due `seq` × 250 ms after `start`.
    fn clock(start: Instant) -> CheckClock {
        CheckClock {
            start,
            pace: RateSchedule::fixed(4.0).share(0, 1),
        }
    }

    fn outage(
        start: Instant,
        seq_mark: u64,
        back_ms: Option<u64>,
        first_seq: Option<u64>,
    ) -> Recovery {
        Recovery {
            lost_at: start + Duration::from_millis(1000),
            back_at: back_ms.map(|ms| start + Duration::from_millis(ms)),
            attempts: 3,
            seq_mark,
            first_seq,
        }
    }

    #[test]
    fn the_first_check_due_after_an_instant_is_found_by_its_due_time() {
        let t0 = Instant::now();
        let c = clock(t0);
        let at = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(c.first_due_from(at(0), 16), 0);
        assert_eq!(c.first_due_from(at(1600), 16), 7, "6 was due at 1.5 s");
        assert_eq!(c.first_due_from(at(1750), 16), 7, "due at 1.75 s exactly");
        assert_eq!(c.first_due_from(at(9000), 16), 16, "none of the 16 sent");
    }

    #[test]
    fn a_cut_connection_is_excused_the_checks_of_its_outage_and_nothing_else() {
        let t0 = Instant::now();
        let c = clock(t0);
        // Got 0..=3 before the kill, back at 1.6 s (7 was the first due after), 7 the first
        // it got: 4, 5 and 6 are the outage's.
        assert_eq!(
            excused(0, &outage(t0, 4, Some(1600), Some(7)), &c, 1, 16, false),
            3
        );
        // The same, but the first it got after the loss was 9: 7 and 8 were sent once it was
        // back, so they are not the outage's.
        assert_eq!(
            excused(0, &outage(t0, 4, Some(1600), Some(9)), &c, 1, 16, false),
            3
        );
        // A check that reached it after re-subscribing but before the PONG (5) ends the
        // outage there: 4 alone.
        assert_eq!(
            excused(0, &outage(t0, 4, Some(1600), Some(5)), &c, 1, 16, false),
            1
        );
        // Never back, nothing after the loss: every check from its mark on.
        assert_eq!(excused(0, &outage(t0, 4, None, None), &c, 1, 16, false), 12);
        // Back only after the checks ended (a return after the hold): the same.
        assert_eq!(
            excused(0, &outage(t0, 4, Some(9000), None), &c, 1, 16, false),
            12
        );
        // Own subjects, 3 connections: connection 1 is due 1, 4, 7, 10, 13; it got 1 and 4
        // (mark 5), was back at 2.6 s (11 was the first due after) and got 13: 7 and 10.
        assert_eq!(
            excused(1, &outage(t0, 5, Some(2600), Some(13)), &c, 3, 16, true),
            2
        );
    }
}
