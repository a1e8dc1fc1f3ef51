//! Request/reply: requesters that time every reply, and the responders that answer them.
//!
//! A requester is the publish loop with two additions: each request carries the reply subject
//! `<inbox>.<seq>`, so a reply names its request even when it carries no payload (a
//! no-responders status); and a [`Window`] gates sending, which makes the loop closed (wait for
//! the reply) or pipelined (K in flight), or, with a rate, open loop with corrected latency.
//! Responders are the reply loop, in a queue group, in this process unless told otherwise
//! (`msgbench reply` is [`super::reply`]).
//!
//! [`run_requests`] is one orchestration shared by request/reply, JetStream publishing and KV
//! gets (a publish with an acknowledgement is a request). Its steps: connect every client
//! ([`super::connect`]), start the responders and wait for their subscriptions ([`Run::serve`]),
//! subscribe each requester to its replies and fix time zero, run the requesters, closed loop
//! ([`Run::closed_loop`]) or open ([`Run::open_loop`]), join everyone ([`Run::finish`]), and
//! make the result ([`super::assemble`]). A requester's own bookkeeping is
//! [`super::requester`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant, SystemTime};

use super::assemble;
use super::connect::{connect, mine, subscribe, Clients};
use super::options::RequestOptions;
use crate::engine::conn::{self, Conn, Event, Flow, Reader};
use crate::engine::jsfast::{FastFlow, FastFrame};
use crate::engine::jsframe::JsFrame;
use crate::engine::load::{self, Frame, PubOutcome, PubSpec, RespondSpec, StampKind, Window};
use crate::engine::pace::Pace;
use crate::engine::request::fast::{fast_loop, FastSpec};
use crate::engine::request::requester::{
    abandon_if_relinked, closed_loop, new_replies, on_reply, Replies, Shape,
};
use crate::engine::request::JsAcks;
use crate::error::{Error, ErrorCounts, Result};
use crate::result::{RunResult, ServerMeta};
use crate::scenario::fault::Injector;
use crate::scenario::segment::Share;
use crate::server::Target;
use crate::stats::draw::{SenderSizes, Stream, Template};
use crate::stats::latency::SendTimes;
use crate::stats::schedule::PubSchedule;
use crate::stats::stages::StageTotals;
use crate::stats::throughput::{ClientRun, Role};
use crate::stats::timeline::{ClientMeter, Meter};
use crate::wire::proto;
use crate::wire::stamp;

/// The queue group responders join, so each request is answered once.
pub(super) const QUEUE: &str = "msgbench";

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
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let clients = connect(opts, target, share, &errors)?;
    let run = Run::new(opts, target, meter, stop, share, &errors, &clients)?;
    let Clients {
        responders,
        requesters,
        server: (info, url),
    } = clients;
    let (pub_outs, replies) = std::thread::scope(|s| {
        let serving = run.serve(s, responders)?;
        let outs = if run.open {
            run.open_loop(s, requesters, &serving)?
        } else {
            run.closed_loop(s, requesters, &serving)?
        };
        Ok::<_, Error>(run.finish(outs, serving))
    })?;
    assemble::count_failures(&run.windows, &replies, &errors);
    let base = RunResult::new(
        opts.scenario,
        started_at,
        opts.params(),
        ServerMeta::new(&info, &url, target.local),
        &errors,
        stop.load(Ordering::Relaxed),
    );
    Ok(assemble::assemble(&run, &pub_outs, &replies, base))
}

/// One run's settings and the cells its threads meet at: each requester's window, send-time
/// ring and share of the schedule, time zero, the responders' stop, the fault. It outlives the
/// threads' scope, so every thread borrows from it and nothing on the per-message path is
/// shared any other way.
pub(super) struct Run<'a> {
    pub opts: &'a RequestOptions,
    pub meter: &'a Meter,
    stop: &'a AtomicBool,
    share: Option<Share<'a>>,
    n_responders: u32,
    /// The global id of this process's first requester.
    base: u32,
    run_tag: u16,
    inbox: String,
    /// Requester i of n sends the run's requests i, i+n, … of the one schedule.
    pub schedules: Vec<Option<PubSchedule>>,
    pub open: bool,
    pub stage_totals: Option<StageTotals>,
    pub windows: Vec<Window>,
    pub send_times: Vec<SendTimes>,
    pub epoch: OnceLock<Instant>,
    /// Tells the responders every request is in.
    done: AtomicBool,
    served: AtomicU64,
    payload: Vec<u8>,
    /// Each client shows as a sender (requests out) and a receiver (timed replies in).
    progress: Vec<Arc<ClientMeter>>,
    reply_meters: Vec<Arc<ClientMeter>>,
    pub injector: Option<Injector<'a>>,
    errors: &'a ErrorCounts,
    /// The server's URL, for errors about it.
    url: String,
}

/// The responders' threads, and every connection whose subscription is awaited or whose read
/// loop runs: closing them all ends every thread started so far, so the scope can be left.
struct Serving<'s> {
    threads: Vec<ScopedJoinHandle<'s, ClientRun>>,
    tickets: Vec<(Arc<conn::Shared>, u64)>,
}

impl Serving<'_> {
    fn abort(&self, more: &[(Arc<conn::Shared>, u64)]) {
        self.tickets.iter().chain(more).for_each(|(s, _)| s.close());
    }
}

/// A requester's thread, ending with what it sent and what its reader saw.
type Requester<'s, 'e> = ScopedJoinHandle<'s, (PubOutcome, Replies<'e>)>;

impl<'a> Run<'a> {
    fn new(
        opts: &'a RequestOptions,
        target: &'a Target,
        meter: &'a Meter,
        stop: &'a AtomicBool,
        share: Option<Share<'a>>,
        errors: &'a ErrorCounts,
        clients: &Clients,
    ) -> Result<Self> {
        let (n_clients, n_responders, base) = mine(opts, share);
        let run_tag = share.map_or_else(stamp::new_run_tag, |sh| sh.seg.run_tag);
        let ring = match &opts.pace {
            Pace::Open(sc) => {
                ((sc.peak_rate() / f64::from(opts.clients) * 4.0) as usize).clamp(1 << 12, 1 << 22)
            }
            Pace::Unlimited => opts.in_flight.clamp(1 << 12, 1 << 22),
        };
        let meters = |role, timed| -> Vec<_> {
            (0..n_clients)
                .map(|i| meter.client(role, base + i, timed))
                .collect()
        };
        Ok(Self {
            schedules: (0..n_clients)
                .map(|i| {
                    opts.pace
                        .schedule()
                        .map(|sc| sc.share(base + i, opts.clients))
                })
                .collect(),
            open: opts.pace.is_open(),
            stage_totals: opts.pace.schedule().and_then(StageTotals::new),
            windows: (0..n_clients)
                .map(|_| Window::new(opts.in_flight, opts.timeout))
                .collect(),
            send_times: (0..n_clients).map(|_| SendTimes::new(ring)).collect(),
            epoch: OnceLock::new(),
            done: AtomicBool::new(false),
            served: AtomicU64::new(0),
            payload: vec![if opts.js_bases.is_some() { b'j' } else { b'r' }; opts.size],
            progress: meters(Role::Pub, false),
            reply_meters: meters(Role::Sub, true),
            injector: Injector::of(opts.conn.faults, target, Some(&opts.target_of(0).0))?,
            inbox: format!("_INBOX.msgbench{run_tag:04x}"),
            url: clients.server.1.to_string(),
            run_tag,
            n_responders,
            base,
            opts,
            meter,
            stop,
            share,
            errors,
        })
    }

    /// A requester's id across all agents: its inbox, its stamp and its rows use it.
    pub fn g(&self, i: usize) -> u32 {
        self.base + i as u32
    }

    /// The stream sequence client i's acknowledgements start from: its target stream's.
    fn js_base(&self, i: usize) -> Option<u64> {
        self.opts
            .js_bases
            .as_ref()
            .and_then(|b| b.get(self.opts.target_of(i).1).copied())
    }

    /// Client i's prebuilt request.
    fn frame_for(&self, i: usize) -> Frame {
        // JetStream messages carry their send time, for a consumer to time them.
        let stamp_kind = if self.opts.js_bases.is_some() {
            StampKind::Timed
        } else {
            StampKind::Sequence
        };
        let frame = Frame::with_reply(
            &self.opts.target_of(i).0,
            self.opts.keys.map(|k| k.sender(u64::from(self.g(i)))),
            Some(&format!("{}.{}.", self.inbox, self.g(i))),
            b"",
            &self.payload,
            stamp_kind,
        );
        let frame = match self.sizes_of(i) {
            Some(s) => frame.sized(&self.opts.target_of(i).0, s.sizes, s.stream),
            None => frame,
        };
        match self.subjects_of(i) {
            Some((t, stream)) => frame.templated(t, stream),
            None => frame,
        }
    }

    /// Client i's subject template and stream, when `--subject` is a template.
    fn subjects_of(&self, i: usize) -> Option<(Template, Stream)> {
        self.opts.template.as_ref().map(|d| d.of_sender(self.g(i)))
    }

    /// Client i's drawn sizes, when `--size` is a distribution.
    fn sizes_of(&self, i: usize) -> Option<SenderSizes> {
        self.opts.sizes.as_ref().map(|d| d.of_sender(self.g(i)))
    }

    /// Client i's requests on the wire, in the closed loop.
    fn shape_for(&self, i: usize) -> Shape {
        match &self.opts.js_framing {
            Some(f) if f.batch > 1 || f.dedup.is_some() => Shape::Js(
                JsFrame::new(
                    &self.opts.target_of(i).0,
                    &format!("{}.{}.", self.inbox, self.g(i)),
                    self.opts.size,
                    f,
                    i as u32,
                    self.run_tag,
                )
                .sized(self.sizes_of(i))
                .templated(self.subjects_of(i)),
            ),
            _ => Shape::Plain(self.frame_for(i)),
        }
    }

    /// A SUB for client i's replies (a fast batch's reply subjects are many tokens long).
    fn reply_sub(&self, i: usize) -> Vec<u8> {
        let tail = if self.fast().is_some() { ">" } else { "*" };
        let mut cmd = Vec::new();
        proto::encode_sub(
            &mut cmd,
            &format!("{}.{}.{tail}", self.inbox, self.g(i)),
            None,
            1,
        );
        cmd
    }

    /// With fast batch publishing, its flow settings.
    fn fast(&self) -> Option<FastFlow> {
        self.opts.js_framing.as_ref().and_then(|f| f.fast)
    }

    /// Client i's fast batches on the wire.
    fn fast_frame_for(&self, i: usize, flow: FastFlow) -> FastFrame {
        FastFrame::new(
            &self.opts.target_of(i).0,
            &format!("{}.{}.", self.inbox, self.g(i)),
            self.opts.size,
            flow,
            self.g(i),
            self.run_tag,
        )
        .sized(self.sizes_of(i))
        .templated(self.subjects_of(i))
    }

    fn new_replies(&self, i: usize) -> Replies<'_> {
        let mut r = new_replies(
            self.injector.as_ref().map(Injector::fault_ns),
            self.injector.as_ref().map(|i| (i.times(), i.undone())),
            self.js_base(i),
            self.opts.size,
            self.errors,
            &self.reply_meters[i],
        );
        // An acknowledgement stands for the sizes its messages were drawn at.
        let batch = (self.opts.js_framing.as_ref()).map_or(1, |f| f.batch);
        r.sized = self.sizes_of(i).map(|s| (s, batch));
        r
    }

    /// Starts the responders and waits until the server has confirmed every subscription.
    fn serve<'s, 'e>(&'e self, s: &'s Scope<'s, 'e>, responders: Vec<Conn>) -> Result<Serving<'s>> {
        let mut serving = Serving {
            threads: Vec::new(),
            tickets: Vec::new(),
        };
        for (i, c) in responders.into_iter().enumerate() {
            let Conn {
                mut reader, shared, ..
            } = c;
            let mut cmd = Vec::new();
            proto::encode_sub(&mut cmd, &self.opts.subject, Some(QUEUE), 1);
            let ticket = match subscribe(&shared, cmd) {
                Ok(t) => t,
                Err(e) => {
                    serving.abort(&[]);
                    return Err(e);
                }
            };
            serving.tickets.push((shared.clone(), ticket));
            let spec = RespondSpec {
                id: i as u32,
                delay: self.opts.delay,
                max: None,
                until: None,
            };
            let (done, served, stop) = (&self.done, &self.served, self.stop);
            serving.threads.push(s.spawn(move || {
                let run = load::respond(&mut reader, &shared, &spec, served, done, stop);
                shared.close();
                run
            }));
        }
        self.confirmed(&serving, &[])?;
        Ok(serving)
    }

    /// How long a subscription may take to be confirmed. Confirming is setting up, like the
    /// handshake: it gets --connect-timeout at least. --timeout is how long a request waits for
    /// its reply, and may be set to milliseconds that a busy host takes to answer a PING.
    fn setup_timeout(&self) -> Duration {
        self.opts.timeout.max(self.opts.conn.dial.connect_timeout)
    }

    /// Waits for the PONG after each SUB in `serving` and `more`; on a missing one, or one the
    /// server refused, closes them all.
    fn confirmed(&self, serving: &Serving<'_>, more: &[(Arc<conn::Shared>, u64)]) -> Result<()> {
        let timeout = self.setup_timeout();
        let confirmed = (serving.tickets.iter().chain(more))
            .try_for_each(|(sh, t)| sh.confirm_subscribed(*t, timeout));
        if let Err(e) = confirmed {
            serving.abort(more);
            return Err(e.error(&self.url));
        }
        Ok(())
    }

    /// Time zero: on agents, everyone starts together; until then a requester-less agent only
    /// serves. The fault's thread and the live view's schedule start from it.
    fn start<'s, 'e>(&'e self, s: &'s Scope<'s, 'e>) -> Result<Instant> {
        let at = crate::scenario::segment::start(self.share, self.stop)?;
        let zero = *self.epoch.get_or_init(|| at);
        self.meter.load_started(zero);
        if let Some(sc) = self.opts.pace.schedule() {
            self.meter.follow_schedule(zero, sc);
        }
        if let Some(inj) = &self.injector {
            s.spawn(move || inj.run(zero, self.stop));
        }
        Ok(zero)
    }

    /// Closed loop: each client's own reader thread sends the next request as soon as a reply
    /// frees a slot. No hand-off between threads sits inside the round trip.
    fn closed_loop<'s, 'e>(
        &'e self,
        s: &'s Scope<'s, 'e>,
        requesters: Vec<Conn>,
        serving: &Serving<'s>,
    ) -> Result<Vec<Requester<'s, 'e>>> {
        let mut ready = Vec::new();
        for (i, mut c) in requesters.into_iter().enumerate() {
            if let Err(e) = c.subscribe_and_confirm(&self.reply_sub(i), self.setup_timeout()) {
                serving.abort(&[]);
                return Err(e);
            }
            ready.push(c);
        }
        let zero = self.start(s).inspect_err(|_| serving.abort(&[]))?;
        let spawn = |(i, c): (usize, Conn)| {
            let Conn {
                mut reader, shared, ..
            } = c;
            if let Some(flow) = self.fast() {
                let frame = self.fast_frame_for(i, flow);
                let progress = &self.progress[i].msgs;
                return s.spawn(move || {
                    let mut r = self.new_replies(i);
                    let spec = FastSpec {
                        frame: &frame,
                        flow,
                        until: self.opts.stop,
                        timeout: self.opts.timeout,
                        zero,
                        stop: self.stop,
                        id: self.g(i),
                        progress,
                    };
                    let out = fast_loop(&mut reader, &shared, &spec, &mut r);
                    shared.close();
                    (out, r)
                });
            }
            let frame = self.shape_for(i);
            let (window, times) = (&self.windows[i], &self.send_times[i]);
            let sent_meter = &self.progress[i];
            s.spawn(move || {
                let mut r = self.new_replies(i);
                let out = closed_loop(
                    &mut reader,
                    &shared,
                    &frame,
                    window,
                    times,
                    self.opts.stop,
                    zero,
                    self.stop,
                    self.g(i),
                    &mut r,
                    &sent_meter.msgs,
                );
                shared.close();
                (out, r)
            })
        };
        Ok(ready.into_iter().enumerate().map(spawn).collect())
    }

    /// Open loop: requests leave on schedule from the publish loop; a reader per client times
    /// the replies.
    fn open_loop<'s, 'e>(
        &'e self,
        s: &'s Scope<'s, 'e>,
        requesters: Vec<Conn>,
        serving: &Serving<'s>,
    ) -> Result<Vec<Requester<'s, 'e>>> {
        let mut readers = Vec::new();
        let mut writers = Vec::new();
        let mut client_tickets = Vec::new();
        for (i, c) in requesters.into_iter().enumerate() {
            let Conn { reader, shared, .. } = c;
            let ticket = match subscribe(&shared, self.reply_sub(i)) {
                Ok(t) => t,
                Err(e) => {
                    serving.abort(&client_tickets);
                    return Err(e);
                }
            };
            client_tickets.push((shared.clone(), ticket));
            let sh = shared.clone();
            readers.push(s.spawn(move || self.read_replies(reader, &sh, i)));
            writers.push(shared);
        }
        self.confirmed(serving, &client_tickets)?;
        let zero = self
            .start(s)
            .inspect_err(|_| serving.abort(&client_tickets))?;
        let mut pubs = Vec::new();
        for (i, shared) in writers.into_iter().enumerate() {
            let frame = self.frame_for(i);
            let spec = PubSpec {
                id: self.g(i),
                stop: self.opts.stop,
                pace: self.schedules[i].clone(),
                flush_timeout: self.opts.timeout,
                start_at: Some(zero),
                late_bound: crate::scenario::pacing::PACING_LATE_BOUND,
                lag_from: Duration::ZERO,
            };
            let (window, times, progress) = (
                &self.windows[i],
                &self.send_times[i],
                &self.progress[i].msgs,
            );
            let stop = self.stop;
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
        let mut outs = Vec::new();
        for (p, r) in pubs.into_iter().zip(readers) {
            let out = p.join().expect("requester panicked");
            outs.push(s.spawn(move || (out, r.join().expect("reader panicked"))));
        }
        Ok(outs)
    }

    /// An open-loop client's reader: times each reply against its request's due time.
    fn read_replies(&self, mut reader: Reader, sh: &conn::Shared, i: usize) -> Replies<'_> {
        let schedule = self.schedules[i].as_ref();
        let (window, times) = (&self.windows[i], &self.send_times[i]);
        let mut r = self.new_replies(i);
        r.rec = r.rec.with_stages(self.stage_totals.as_ref(), schedule);
        let mut link = sh.link_generation();
        reader.run(sh, load::TICK, |event| {
            match event {
                Event::Msg(m) => {
                    if let Some(zero) = self.epoch.get() {
                        on_reply(&mut r, &m, window, times, schedule, *zero);
                    }
                }
                Event::Tick => abandon_if_relinked(sh, &mut link, window),
            }
            Flow::Continue
        });
        r.rec.flush_stages();
        r
    }

    /// Joins the requesters, then stops and joins the responders.
    fn finish<'e>(
        &self,
        outs: Vec<Requester<'_, 'e>>,
        serving: Serving<'_>,
    ) -> (Vec<PubOutcome>, Vec<Replies<'e>>) {
        let results: Vec<(PubOutcome, Replies<'_>)> = outs
            .into_iter()
            .map(|h| h.join().expect("requester panicked"))
            .collect();
        if let Some(sh) = self.share {
            sh.peers
                .published(&results.iter().map(|(o, _)| o.run.msgs).collect::<Vec<_>>());
            // Responders here may be answering other agents' requesters: they stay until
            // every agent's requesters are done.
            if self.n_responders > 0 {
                sh.peers.all_published(self.stop);
            }
        }
        self.done.store(true, Ordering::Relaxed);
        if let Some(inj) = &self.injector {
            inj.finish();
        }
        for h in serving.threads {
            h.join().expect("responder panicked");
        }
        results.into_iter().unzip()
    }
}
