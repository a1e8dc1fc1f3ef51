//! The run of pub, sub and pubsub: one orchestration for all three, shaped only by how many
//! publishers and subscribers there are and what subscribers expect.
//!
//! Order of a run: connect everyone (nothing is timed while connecting), check the message size
//! against the server's limit ([`super::connect`]), subscribe and wait until the server has
//! confirmed every subscription, release the publishers together, wait for them, tell the
//! subscribers how many messages were really sent, wait for the subscribers, then assemble the
//! result ([`super::assemble`]). Here: the steps from subscribing ([`Run::arm`]) to the last
//! subscriber's end ([`Run::load`]), and what the threads of a run share ([`Run`]).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier, OnceLock};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Instant, SystemTime};

use super::assemble;
use super::connect::{self, Clients, Mine};
use super::options::{Options, ScenarioKind};
use crate::engine::conn::{self, Conn, Reader, Unconfirmed};
use crate::engine::fleet::{Ending, Fleet, FleetSpec};
use crate::engine::load::{
    self, Frame, PubOutcome, PubSpec, Recovering, Staged, StampKind, SubControl, SubOutcome,
    SubSpec, UNKNOWN,
};
use crate::engine::pace::Stop;
use crate::error::{Error, ErrorCounts, Result};
use crate::result::{RunResult, ServerMeta};
use crate::scenario::fault::Injector;
use crate::scenario::segment::Share;
use crate::server::Target;
use crate::stats::delivery::DeliveryLog;
use crate::stats::draw::{Purpose, Stream};
use crate::stats::recovery::RecoveryLog;
use crate::stats::schedule::RateSchedule;
use crate::stats::stages::StageArrivals;
use crate::stats::throughput::Role;
use crate::stats::timeline::{ClientMeter, Meter};
use crate::wire::{proto, stamp};

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
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let clients = connect::connect(opts, target, share, &errors)?;
    let run = Run::new(opts, target, meter, stop, share, &clients)?;
    let Clients {
        pubs,
        subs,
        fleet,
        server,
        ..
    } = clients;
    let measured = std::thread::scope(|s| -> Result<Measured> {
        let armed = run.arm(s, pubs, subs, fleet.as_ref())?;
        Ok(run.load(s, armed))
    })?;
    let (info, url) = server.expect("at least one client");
    let server = ServerMeta::new(&info, &url, target.local);
    Ok(assemble::assemble(
        &run, &measured, started_at, server, &errors,
    ))
}

/// One run's settings and the cells its threads meet at: the subscribers' expected count,
/// the publishers' barrier, time zero, the fault. It outlives the threads' scope, so every
/// thread borrows from it and nothing on the per-message path is shared any other way.
pub(super) struct Run<'a> {
    pub opts: &'a Options,
    pub meter: &'a Meter,
    pub stop: &'a AtomicBool,
    pub share: Option<Share<'a>>,
    pub mine: Mine,
    pub run_tag: u16,
    header_block: Vec<u8>,
    payload: Vec<u8>,
    /// The run tag stamped into each message, or `None`: a user's --payload goes out byte for
    /// byte, with no stamp written into it.
    pub stamp_with: Option<u16>,
    ctl: SubControl,
    barrier: Barrier,
    pub_meters: Vec<Arc<ClientMeter>>,
    sub_meters: Vec<Arc<ClientMeter>>,
    subject: String,
    pub injector: Option<Injector<'a>>,
    /// With a fault, publishers share one time zero so a subscriber can tell from a stamp alone
    /// when its message was scheduled (Options ensures such a run is paced).
    epoch: OnceLock<Instant>,
    /// A schedule of stages: every subscriber counts its arrivals by stage.
    pub staged: Option<&'a RateSchedule>,
    url: String,
}

/// What one subscriber measured: its run, what arrived from whom, arrivals around a fault, and
/// with a schedule of stages, its arrivals and those on time, by stage.
pub(super) struct Received {
    pub out: SubOutcome,
    pub log: DeliveryLog,
    pub recovery: Option<RecoveryLog>,
    pub by_stage: Option<(Vec<u64>, Vec<u64>)>,
}

/// What the clients measured, for [`assemble`].
pub(super) struct Measured {
    pub pubs: Vec<PubOutcome>,
    pub subs: Vec<Received>,
    /// On agents, every publisher's count (index = global id), once every share's are done.
    pub everyone: Option<Vec<u64>>,
    /// On agents, the moment everyone started.
    pub common_zero: Option<Instant>,
}

/// A subscriber's thread, with the ticket of the PONG that confirms its subscription.
struct SubThread<'s> {
    shared: Arc<conn::Shared>,
    ticket: u64,
    handle: ScopedJoinHandle<'s, Received>,
}

/// The clients once every subscription is in place and time zero is fixed.
struct Armed<'s> {
    /// The publishers' connections, whose read sides already run.
    pubs: Vec<Arc<conn::Shared>>,
    subs: Vec<SubThread<'s>>,
    fleet: Option<Fleet<'s>>,
    /// On agents, the moment everyone starts.
    common_zero: Option<Instant>,
    /// The publishers' shared time zero, when a fault or a schedule of stages needs one.
    zero: Option<Instant>,
}

impl Armed<'_> {
    /// Ends every read loop started so far, or the scope waits for it.
    fn abort(&self) {
        self.fleet.iter().for_each(Fleet::stop);
        self.subs.iter().for_each(|t| t.shared.close());
        self.pubs.iter().for_each(|sh| sh.close());
    }
}

impl<'a> Run<'a> {
    fn new(
        opts: &'a Options,
        target: &'a Target,
        meter: &'a Meter,
        stop: &'a AtomicBool,
        share: Option<Share<'a>>,
        clients: &Clients,
    ) -> Result<Self> {
        let mine = clients.mine;
        // Subscribers in `sub` expect --msgs each from the start; in pubsub the count is only
        // known once the publishers are done (a --duration run sends an unknown number).
        let ctl = SubControl::new(UNKNOWN);
        if opts.scenario == ScenarioKind::Sub {
            ctl.arm(match opts.stop {
                Stop::Count(n) => n,
                Stop::For(_) => UNKNOWN - 1,
            });
        }
        let meters = |role, base: u32, n: u32| -> Vec<_> {
            (0..n)
                .map(|i| meter.client(role, base + i, false))
                .collect()
        };
        Ok(Self {
            payload: opts
                .payload
                .clone()
                .unwrap_or_else(|| vec![b'm'; opts.size]),
            stamp_with: opts.payload.is_none().then_some(clients.run_tag),
            ctl,
            barrier: Barrier::new(mine.n_pubs as usize),
            pub_meters: meters(Role::Pub, mine.pub_base, mine.n_pubs),
            sub_meters: meters(Role::Sub, mine.sub_base, mine.n_subs),
            subject: opts.sub_subject(),
            injector: Injector::new(opts.conn.fault, target)?,
            epoch: OnceLock::new(),
            staged: opts.pace.schedule().filter(|s| !s.is_fixed()),
            opts,
            meter,
            stop,
            share,
            mine,
            run_tag: clients.run_tag,
            header_block: clients.header_block.clone(),
            // The server's URL, for errors about it.
            url: (clients.server.as_ref())
                .map(|s| s.1.to_string())
                .unwrap_or_default(),
        })
    }

    /// Every subscription in place and confirmed, on agents the common start reached, and
    /// time zero fixed: after this, a publisher's first message is counted on to arrive.
    fn arm<'s, 'e>(
        &'e self,
        s: &'s Scope<'s, 'e>,
        pubs: Vec<Conn>,
        subs: Vec<Conn>,
        fleet: Option<&'e FleetSpec>,
    ) -> Result<Armed<'s>> {
        let mut armed = Armed {
            pubs: self.start_publishers_reading(s, pubs),
            subs: Vec::new(),
            fleet: None,
            common_zero: None,
            zero: None,
        };
        self.subscribe(s, subs, fleet, &mut armed)?;
        // The PONG after SUB means the server has registered the interest: only then can a
        // publisher's first message be counted on to reach the subscriber. The fleet's
        // subscribers are ready by now, and a refusal among them counted.
        let fleet_refused = fleet.and_then(|f| f.errors.first_refusal());
        let confirmed = (armed.subs.iter())
            .try_for_each(|t| t.shared.confirm_subscribed(t.ticket, self.opts.timeout))
            .and(fleet_refused.map_or(Ok(()), |why| Err(Unconfirmed::Refused(why))));
        if let Err(e) = confirmed {
            // Closing ends every subscriber's read loop, so the scope can be left.
            armed.abort();
            return Err(e.error(&self.url));
        }
        if self.opts.scenario == ScenarioKind::Sub && self.share.is_none() {
            eprintln!("waiting for messages on '{}'", self.subject);
        }
        // On agents, everyone starts together, on one schedule.
        if let Some(sh) = self.share {
            let Some(at) = sh.peers.ready(self.stop) else {
                armed.abort();
                return Err(Error::Agent("stopped before the common start".into()));
            };
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            armed.common_zero = Some(at);
        }
        armed.zero = self.time_zero(s, armed.common_zero);
        Ok(armed)
    }

    /// A publisher's own read side answers PINGs and collects PONGs and -ERRs from the
    /// start: connecting thousands of subscribers can take longer than two keepalives.
    fn start_publishers_reading<'s>(
        &'s self,
        s: &'s Scope<'s, '_>,
        pubs: Vec<Conn>,
    ) -> Vec<Arc<conn::Shared>> {
        pubs.into_iter()
            .map(|conn| {
                let Conn {
                    mut reader, shared, ..
                } = conn;
                let reader_shared = shared.clone();
                s.spawn(move || reader.run(&reader_shared, load::TICK, |_| conn::Flow::Continue));
                shared
            })
            .collect()
    }

    /// Subscribes every subscriber connection (each then reads on a thread of its own) or
    /// starts the fleet and waits until each of its subscribers is ready.
    fn subscribe<'s, 'e>(
        &'e self,
        s: &'s Scope<'s, 'e>,
        subs: Vec<Conn>,
        fleet: Option<&'e FleetSpec>,
        armed: &mut Armed<'s>,
    ) -> Result<()> {
        for (i, conn) in subs.into_iter().enumerate() {
            let Conn { reader, shared, .. } = conn;
            let mut cmd = Vec::new();
            proto::encode_sub(&mut cmd, &self.subject, None, 1);
            let ticket = match shared.subscribe(&cmd) {
                Ok(t) => t,
                Err(e) => {
                    armed.abort();
                    return Err(e.during("cannot subscribe"));
                }
            };
            let sh = shared.clone();
            let handle = s.spawn(move || self.receive(reader, &sh, i));
            armed.subs.push(SubThread {
                shared,
                ticket,
                handle,
            });
        }
        let Some(spec) = fleet else {
            return Ok(());
        };
        let (base, n) = (self.mine.sub_base, self.mine.n_subs);
        let f = Fleet::start(
            s,
            spec,
            &self.ctl,
            self.stop,
            base..base + n,
            &self.sub_meters,
        );
        // Each fleet subscriber is ready once the PONG after its SUB came back.
        let all = u64::from(n);
        let up = f.wait(self.opts.timeout, self.stop, |b| b.settled_count() >= all);
        let opened = f.board().opened_count();
        armed.fleet = Some(f);
        if !up || opened < all {
            armed.abort();
            return Err(self.not_connected(format!(
                "{opened} of {all} subscribers connected and subscribed"
            )));
        }
        Ok(())
    }

    /// Subscriber `i`'s thread: the one subscribe loop, with the recorder this run needs.
    fn receive(&self, mut reader: Reader, sh: &conn::Shared, i: usize) -> Received {
        let opts = self.opts;
        let spec = SubSpec {
            id: self.mine.sub_base + i as u32,
            idle_timeout: opts.timeout,
            start_timeout: opts.start_timeout,
            duration: match (opts.scenario, opts.stop) {
                (ScenarioKind::Sub, Stop::For(d)) => Some(d),
                _ => None,
            },
            stall: opts.sub_stall,
            run_tag: (opts.scenario == ScenarioKind::Pubsub).then_some(self.run_tag),
        };
        let (ctl, stop, progress, epoch) =
            (&self.ctl, self.stop, &self.sub_meters[i].msgs, &self.epoch);
        let schedule = opts.pace.schedule();
        let npubs = f64::from(opts.pubs.max(1));
        let due = move |p: &[u8]| {
            let st = stamp::read(p)?;
            schedule?.due_ns(st.seq as f64 * npubs + f64::from(st.publisher))
        };
        let fault_ns = self.injector.as_ref().map(Injector::fault_ns);
        let mut log = DeliveryLog::new(spec.run_tag);
        let mut by_stage = None;
        let arrivals = || StageArrivals::new(self.staged?, opts.pubs, spec.run_tag).into();
        let (out, recovery) = match (fault_ns, arrivals()) {
            (None, Some(arrivals)) => {
                let mut r = Staged {
                    inner: log,
                    arrivals,
                    epoch,
                };
                let out = load::subscribe(&mut reader, sh, &spec, ctl, stop, progress, &mut r);
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
                let out = load::subscribe(&mut reader, sh, &spec, ctl, stop, progress, &mut r);
                log = r.inner.inner;
                by_stage = Some((r.inner.arrivals.counts, r.inner.arrivals.within));
                (out, Some(r.log))
            }
            (Some(fault_ns), None) => {
                let mut r = Recovering::new(log, due, epoch, fault_ns);
                let out = load::subscribe(&mut reader, sh, &spec, ctl, stop, progress, &mut r);
                log = r.inner;
                (out, Some(r.log))
            }
            (None, None) => (
                load::subscribe(&mut reader, sh, &spec, ctl, stop, progress, &mut log),
                None,
            ),
        };
        sh.close();
        Received {
            out,
            log,
            recovery,
            by_stage,
        }
    }

    /// The publishers' shared time zero, when a fault or a schedule of stages needs one; the
    /// fault's thread starts from it.
    fn time_zero<'s>(
        &'s self,
        s: &'s Scope<'s, '_>,
        common_zero: Option<Instant>,
    ) -> Option<Instant> {
        let zero = self.injector.as_ref().map(|inj| {
            let zero = *self.epoch.get_or_init(Instant::now);
            s.spawn(move || inj.run(zero, self.stop));
            zero
        });
        // Stages of a schedule are shared: every publisher starts them at one time zero.
        let zero = match (zero, self.staged) {
            // Subscribers time arrivals by stage from the same zero.
            (None, Some(_)) => Some(
                *self
                    .epoch
                    .get_or_init(|| common_zero.unwrap_or_else(Instant::now)),
            ),
            (z, _) => z,
        };
        if let (Some(at), Some(sched)) = (zero, self.staged) {
            self.meter.follow_schedule(at, sched);
        }
        zero
    }

    /// The load: the publishers released together and joined; then the subscribers, told how
    /// many messages to expect, joined.
    fn load<'s>(&'s self, s: &'s Scope<'s, '_>, armed: Armed<'s>) -> Measured {
        let start_at = armed.zero.or(armed.common_zero);
        let pub_threads: Vec<_> = armed
            .pubs
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, shared)| {
                let frame = self.frame(i);
                let spec = self.pub_spec(i, start_at);
                let progress = &self.pub_meters[i].msgs;
                s.spawn(move || {
                    self.barrier.wait();
                    let out =
                        load::publish(&shared, &frame, &spec, self.stop, progress, None, None);
                    shared.close();
                    out
                })
            })
            .collect();
        let pubs: Vec<PubOutcome> = pub_threads
            .into_iter()
            .map(|h| h.join().expect("publisher thread panicked"))
            .collect();
        if let Some(inj) = &self.injector {
            inj.finish();
        }
        let everyone = self.tell_subscribers(&pubs);
        let subs = armed
            .subs
            .into_iter()
            .map(|t| t.handle.join().expect("subscriber thread panicked"))
            .chain(armed.fleet.into_iter().flat_map(Fleet::join).map(|m| {
                let end = match m.ending {
                    Some(Ending::Failed(f)) => conn::End::Failed(f.counted()),
                    _ => conn::End::Stopped,
                };
                let out = SubOutcome {
                    run: m.outcome(),
                    end,
                };
                Received {
                    out,
                    log: m.log.unwrap_or_default(),
                    recovery: None,
                    by_stage: None,
                }
            }))
            .collect();
        Measured {
            pubs,
            subs,
            everyone,
            common_zero: armed.common_zero,
        }
    }

    /// Publisher `i`'s prebuilt message.
    fn frame(&self, i: usize) -> Frame {
        let opts = self.opts;
        let frame = Frame::new(
            &opts.subject,
            opts.multisubject.map(crate::engine::load::Keys::cycle),
            &self.header_block,
            &self.payload,
            match self.stamp_with {
                Some(run_tag) => StampKind::Delivery {
                    run_tag,
                    publisher: self.mine.pub_base + i as u32,
                },
                None => StampKind::None,
            },
        );
        let g = u64::from(self.mine.pub_base) + i as u64;
        let frame = frame.sized(
            &opts.subject,
            opts.sizes.clone(),
            Stream::new(opts.seed, Purpose::Size, g),
        );
        match &opts.template {
            Some(t) => frame.templated(t.clone(), Stream::new(opts.seed, Purpose::Subject, g)),
            None => frame,
        }
    }

    fn pub_spec(&self, i: usize, start_at: Option<Instant>) -> PubSpec {
        let (opts, id) = (self.opts, self.mine.pub_base + i as u32);
        PubSpec {
            id,
            stop: opts.stop,
            pace: opts
                .pace
                .schedule()
                .map(|sc| sc.share(id, opts.pubs.max(1))),
            start_at,
            late_bound: crate::scenario::pacing::PACING_LATE_BOUND,
            lag_from: std::time::Duration::ZERO,
            flush_timeout: opts.timeout,
        }
    }

    /// Sets the count pubsub's subscribers wait for: what this process's publishers sent, or
    /// on agents what every agent's sent. Returns the latter.
    fn tell_subscribers(&self, pubs: &[PubOutcome]) -> Option<Vec<u64>> {
        let sent: u64 = pubs.iter().map(|o| o.run.msgs).sum();
        let everyone = match self.share {
            Some(sh) => {
                sh.peers
                    .published(&pubs.iter().map(|o| o.run.msgs).collect::<Vec<_>>());
                if self.opts.scenario == ScenarioKind::Pubsub && self.mine.n_subs > 0 {
                    sh.peers.all_published(self.stop)
                } else {
                    None
                }
            }
            None => None,
        };
        if self.opts.scenario == ScenarioKind::Pubsub {
            self.ctl
                .arm(everyone.as_ref().map_or(sent, |all| all.iter().sum()));
        }
        everyone
    }

    fn not_connected(&self, reason: String) -> Error {
        Error::Connect {
            url: self.url.clone(),
            reason,
        }
    }
}
