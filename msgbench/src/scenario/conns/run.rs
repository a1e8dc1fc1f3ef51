//! The run of `msgbench conns`, step by step: one plain connection first ([`probe`]: the
//! server's INFO, and a clear error before the storm when it cannot be reached), the fleet's
//! settings ([`fleet_spec`]), the connections opened and held ([`hold`]: the fault and the
//! checks on threads of their own, memory read with every connection up), and the result
//! (`summary`).
//!
//! The hold bounds what is reported: a connection back only after it ended is never back.
//!
//! On an agent the run is its [`Block`] of the plan's connections: global ids (so the own
//! subjects are the plan's), the run's common tag, its share of `--connect-rate` and
//! `--in-flight`, and a storm that starts at the agents' common start. Its `conns` section
//! carries what the coordinator merges exactly ([`crate::result::ConnsShare`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::checks::{start_checker, CheckClock};
use super::memory::ServerMemory;
use super::options::ConnsOptions;
use super::summary::summarize;
use crate::cli::Subscribe;
use crate::engine::conn::{self, ConnectSpec};
use crate::engine::fleet::{Board, Fleet, FleetSpec, Interest, Member};
use crate::engine::load::{SubControl, UNKNOWN};
use crate::engine::memory::{self, Figure};
use crate::error::{Error, ErrorCounts, Result};
use crate::result::{Keepalives, RunResult, ServerMeta};
use crate::scenario::fault::Injector;
use crate::scenario::Share;
use crate::server::Target;
use crate::stats::timeline::{ConnsGauge, Meter};
use crate::wire::stamp;

/// How long after the hold the connections may still take to receive the last checks.
const DRAIN: Duration = Duration::from_secs(2);

/// The connections this process opens: all of the run's, or on an agent its share.
#[derive(Debug, Clone, Copy)]
pub(super) struct Block {
    /// The first one's global id: connection `base + i` subscribes to `<prefix>.<base + i>`.
    pub base: u32,
    pub count: u32,
    /// This block's share of `--connect-rate` (the whole run's), in proportion to its count.
    pub connect_rate: Option<f64>,
    /// Its share of `--in-flight` (the whole run's), at least 1.
    pub in_flight: usize,
}

impl Block {
    /// The whole run, or an agent's share of it.
    pub(super) fn of(opts: &ConnsOptions, share: Option<Share<'_>>) -> Self {
        let Some(sh) = share else {
            return Block {
                base: 0,
                count: opts.clients,
                connect_rate: opts.connect_rate,
                in_flight: opts.in_flight,
            };
        };
        let (count, all) = (sh.seg.subs, opts.clients.max(1));
        let part = f64::from(count) / f64::from(all);
        Block {
            base: sh.seg.sub_base,
            count,
            connect_rate: opts.connect_rate.map(|r| r * part),
            in_flight: (opts.in_flight as u64 * u64::from(count))
                .div_ceil(u64::from(all))
                .max(1) as usize,
        }
    }
}

/// Runs `msgbench conns`: all of it, or on an agent (`share`) its block, from the common
/// start.
///
/// # Errors
/// Failures before any connection: an address that does not resolve, a checker publisher
/// that cannot connect; on an agent, a stop before the common start.
pub fn run(
    opts: &ConnsOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
    progress: bool,
) -> Result<RunResult> {
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let meta = probe(opts, target)?;
    if let Some(note) = &opts.fd_note {
        say(progress, note);
    }
    // On agents the tag is the run's, so every agent's subjects are named alike.
    let run_tag = share.map_or_else(stamp::new_run_tag, |sh| sh.seg.run_tag);
    let su = Setup {
        opts,
        block: Block::of(opts, share),
        share,
        target,
        prefix: opts
            .subject
            .clone()
            .unwrap_or_else(|| format!("msgbench.conns.{run_tag:04x}")),
        run_tag,
        errors: Arc::new(ErrorCounts::default()),
        gauge: meter.conns(),
        progress,
    };
    meter.watch_errors(&su.errors);
    let spec = fleet_spec(&su)?;
    let server_mem = ServerMemory::new(opts, target);
    let rss_before = memory::bytes(None, Figure::Resident);
    let server_before = server_mem.read();
    let injector = Injector::new(opts.conn.fault, target)?;
    let outcome = hold(&su, &spec, &server_mem, injector.as_ref(), stop)?;
    let fault = FaultSeen::of(injector.as_ref(), outcome.zero);
    let report = summarize(
        opts,
        su.block,
        &outcome,
        fault,
        rss_before,
        server_before,
        &server_mem,
    );
    let mut result = RunResult::new(
        "conns",
        started_at,
        crate::result::Params::of(opts.params()),
        meta,
        &su.errors,
        stop.load(Ordering::Relaxed),
    );
    result.delivery.accounting = "none";
    result.delivery.unmeasured = crate::stats::delivery::Unmeasured::ALL;
    result.own.put(report);
    Ok(result)
}

/// What the run settles before its connections open, and the checks work with.
pub(super) struct Setup<'a> {
    pub opts: &'a ConnsOptions,
    /// The connections this process opens.
    pub block: Block,
    /// On an agent: where it meets the others.
    pub share: Option<Share<'a>>,
    pub target: &'a Target,
    /// The shared subject, or the prefix of the own ones.
    pub prefix: String,
    /// The stamps' run tag: the checks are the messages that carry it.
    pub run_tag: u16,
    pub errors: Arc<ErrorCounts>,
    /// The connections up, opened and lost, for the live figures.
    pub gauge: Arc<ConnsGauge>,
    /// Lines of progress on stderr, unless --no-progress.
    pub progress: bool,
}

/// A line of progress on stderr, unless --no-progress.
fn say(progress: bool, s: &str) {
    if progress {
        eprintln!("{s}");
    }
}

/// One plain connection before the storm: the server's INFO for the result, and a clear error
/// when it cannot be reached at all.
fn probe(opts: &ConnsOptions, target: &Target) -> Result<ServerMeta> {
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
    Ok(meta)
}

/// The fleet: every connection with the run's dialling, subscribing as --subscribe says, its
/// receipt of the checks tracked when there are checks.
fn fleet_spec(su: &Setup<'_>) -> Result<FleetSpec> {
    let opts = su.opts;
    let interest = match opts.subscribe {
        Subscribe::None => Interest::None,
        Subscribe::Own => Interest::Own(su.prefix.clone()),
        Subscribe::Shared => Interest::Shared(su.prefix.clone()),
    };
    Ok(FleetSpec {
        targets: FleetSpec::targets(&su.target.urls)?,
        name: "msgbench-conns".into(),
        dialing: opts.conn.dial,
        interest,
        run_tag: checks(su).map(|_| su.run_tag),
        errors: Arc::clone(&su.errors),
        give_up_after: opts.timeout,
        idle_timeout: opts.timeout,
        start_timeout: opts.timeout,
        threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
        in_flight: su.block.in_flight,
        connect_rate: su.block.connect_rate,
    })
}

/// How often the checks go out, when there are checks: none for a block of no connections
/// (an agent with no share), whose checker would have no subject to send to.
pub(super) fn checks(su: &Setup<'_>) -> Option<Duration> {
    su.opts.check_every.filter(|_| su.block.count > 0)
}

/// On an agent, once everything before the storm is ready: waits for the common start and
/// returns it, so every agent's connections start opening at the same moment.
///
/// # Errors
/// The run was stopped first.
fn common_start(share: Option<Share<'_>>, stop: &AtomicBool) -> Result<Option<Instant>> {
    let Some(sh) = share else {
        return Ok(None);
    };
    let at = sh
        .peers
        .ready(stop)
        .ok_or_else(|| Error::Agent("stopped before the common start".into()))?;
    std::thread::sleep(at.saturating_duration_since(Instant::now()));
    Ok(Some(at))
}

/// Opens the connections, holds them for --hold with the fault and the checks running beside
/// them, and gathers what every connection saw.
///
/// # Errors
/// The checker publisher cannot connect.
fn hold(
    su: &Setup<'_>,
    spec: &FleetSpec,
    server_mem: &ServerMemory,
    injector: Option<&Injector<'_>>,
    stop: &AtomicBool,
) -> Result<Hold> {
    let opts = su.opts;
    let ctl = SubControl::new(UNKNOWN);
    let start = common_start(su.share, stop)?;
    let block = su.block;
    std::thread::scope(|s| -> Result<_> {
        let ids = block.base..block.base + block.count;
        let fleet = Fleet::start(s, spec, &ctl, stop, ids, &[]);
        open(su, &fleet, stop);
        // A refused SUB leaves its connection up, so the hold would check subscriptions that
        // are not there: stop before it, with the server's words, which name the subject.
        if let Some(why) = su.errors.first_refusal() {
            fleet.stop();
            let url = su.target.urls.first().map(ToString::to_string);
            return Err(Error::refused(url.unwrap_or_default(), &why));
        }
        let rss_connected = memory::bytes(None, Figure::Resident);
        let server_connected = server_mem.read();
        let buffers_connected = fleet.board().buffer_bytes();
        say(
            su.progress,
            &format!(
                "{} of {} up; holding for {}",
                fleet.board().ready_now(),
                block.count,
                humantime::format_duration(opts.hold)
            ),
        );

        // The hold: the fault (if any) and the checks run on their own threads, and end by
        // themselves.
        let zero = Instant::now();
        if let Some(inj) = injector {
            s.spawn(move || inj.run(zero, stop));
        }
        let (checker, clock) = match checks(su) {
            Some(every) => match start_checker(s, su, every, stop) {
                Ok((h, clock)) => (Some(h), Some(clock)),
                Err(e) => {
                    // The fleet's connections hold until told: end them, or the scope waits
                    // for them.
                    fleet.stop();
                    if let Some(inj) = injector {
                        inj.finish();
                    }
                    return Err(e);
                }
            },
            None => (None, None),
        };
        let mut buffers_peak = buffers_connected;
        let until = zero + opts.hold;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100).min(until - Instant::now().min(until)));
            buffers_peak = buffers_peak.max(fleet.board().buffer_bytes());
            show(&su.gauge, fleet.board());
        }
        // The end of the hold is the end of what is reported as the herd's return: the fleet
        // keeps running until the checks have drained, but a connection back after this counts
        // as never back, and the connections up are counted now.
        let hold_end = Instant::now();
        let up_at_end = fleet.board().ready_now();
        let sent = checker.map(|h| h.join().expect("checker panicked"));
        if let Some(inj) = injector {
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
        Ok(Hold {
            members: fleet.join(),
            run_tag: su.run_tag,
            start,
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
    })
}

/// Waits until every connection is up or given up on (bounded: each attempt has
/// --connect-timeout, and retries end after --timeout), saying how many once a second.
fn open(su: &Setup<'_>, fleet: &Fleet<'_>, stop: &AtomicBool) {
    let (opts, block) = (su.opts, su.block);
    let n = u64::from(block.count);
    say(
        su.progress,
        &format!(
            "opening {n} connections ({})",
            match block.connect_rate {
                Some(r) => format!("{r:.0}/s"),
                None => format!("as fast as {} at a time allow", block.in_flight),
            }
        ),
    );
    let bound = opening_bound(opts);
    let mut last_said = Instant::now();
    fleet.wait(bound, stop, |b| {
        show(&su.gauge, b);
        if last_said.elapsed() >= Duration::from_secs(1) {
            last_said = Instant::now();
            say(
                su.progress,
                &format!("  {} up, {} ended", b.ready_now(), b.finished_count()),
            );
        }
        b.settled_count() >= n
    });
}

/// How long the connections may take to open: every attempt has --connect-timeout, retries
/// end after --timeout, and a --connect-rate spreads them out. An agent's block takes as long
/// as the whole run's (its share of the rate, for its share of the connections).
fn opening_bound(opts: &ConnsOptions) -> Duration {
    opts.timeout
        + opts.conn.dial.connect_timeout * 2
        + opts.connect_rate.map_or(Duration::ZERO, |r| {
            Duration::from_secs_f64(f64::from(opts.clients) / r)
        })
}

/// The longest a run takes from its start: the opening, the hold and the drain of the last
/// checks. A coordinator counts an agent still at it well after this as hung, so it must cover
/// a slow storm (10,000 connections at 100/s open for 100 s before the hold begins).
pub(super) fn longest(opts: &ConnsOptions) -> Duration {
    opening_bound(opts) + opts.hold + DRAIN
}

/// The connections' counts where the live figures read them. Stored only while they open and
/// hold: the fleet's end, when every connection is closed, is not the load's.
fn show(gauge: &ConnsGauge, b: &Board) {
    gauge.up.store(b.ready_now(), Ordering::Relaxed);
    gauge.opened.store(b.opened_count(), Ordering::Relaxed);
    gauge.lost.store(b.lost_count(), Ordering::Relaxed);
}

/// What the injector saw of the restart.
pub(super) struct FaultSeen {
    /// The kill.
    pub at: Option<Instant>,
    /// Why the server could not be restarted, if it could not.
    pub error: Option<String>,
    /// From the kill until the restarted server accepted clients.
    pub server_back_ms: Option<f64>,
}

impl FaultSeen {
    /// What `injector` did, its times counted from the hold's start, `zero`.
    fn of(injector: Option<&Injector<'_>>, zero: Instant) -> Self {
        FaultSeen {
            at: injector
                .and_then(|inj| inj.injected_ns().map(|ns| zero + Duration::from_nanos(ns))),
            error: injector.and_then(Injector::error),
            server_back_ms: injector
                .and_then(|inj| Some((inj.undone_ns()? as f64 - inj.injected_ns()? as f64) / 1e6)),
        }
    }
}

/// What the hold saw.
pub(super) struct Hold {
    pub members: Vec<Member>,
    /// The stamps' run tag: the checks are the messages that carry it.
    pub run_tag: u16,
    /// On an agent, the common start: its storm's time zero, as every agent's.
    pub start: Option<Instant>,
    /// The start of the hold: the fault's time zero.
    pub zero: Instant,
    /// The end of the hold: a connection back later counts as never back.
    pub hold_end: Instant,
    pub rss_connected: Option<u64>,
    pub server_connected: Option<u64>,
    pub buffers_peak: u64,
    pub buffers_end: u64,
    pub up_at_end: u64,
    pub keepalives: Keepalives,
    pub failures: BTreeMap<&'static str, u64>,
    /// What the checker sent, when there were checks.
    pub sent: Option<u64>,
    /// When each check was due, when there were checks.
    pub clock: Option<CheckClock>,
}
