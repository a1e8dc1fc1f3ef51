//! `msgbench reply`: responders in a queue group that echo every request, until a count or a
//! time is reached. `request` starts the same responders for itself. On agents each runs its
//! share of the responders (global ids from the segment's subscriber base), all from the
//! common start, so the service's time is the same on every host.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use super::options::{Announce, ReplyOptions};
use crate::engine::conn::Conn;
use crate::engine::load::{self, RespondSpec};
use crate::error::{Error, ErrorCounts, Result};
use crate::result::{throughput_sections, RunResult, Section, ServerMeta};
use crate::scenario::{Around, DriverOutcome, DriverRun, Share};
use crate::server::Target;
use crate::stats::delivery::Delivery;
use crate::stats::throughput::{ClientRun, Role};
use crate::stats::timeline::Meter;
use crate::wire::proto;

use super::connect::{connect_to, subscribe};
/// The queue group responders join, so each request is answered once.
use super::run::QUEUE;

/// Runs `msgbench reply`: responders in a queue group until the count or the time is reached.
///
/// # Errors
/// Failures before serving: server, connections, subscriptions.
pub fn run_reply(
    opts: &ReplyOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<RunResult> {
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let (mine, base) = share.map_or((opts.clients, 0), |sh| (sh.seg.subs, sh.seg.sub_base));
    let conns: Vec<Conn> = (base..base + mine)
        .map(|i| {
            connect_to(
                target,
                &format!("msgbench-responder-{i}"),
                &opts.conn,
                opts.duration,
                &errors,
            )
        })
        .collect::<Result<_>>()?;
    let (info, url) = (conns[0].info.clone(), conns[0].url.clone());
    let done = AtomicBool::new(false);
    // All responders add to one count; the live view shows it as received requests.
    let served_meter = meter.client(Role::Sub, 0, false);
    let served = &served_meter.msgs;
    let runs: Vec<ClientRun> = std::thread::scope(|s| -> Result<_> {
        // Each responder reads from the moment it subscribes: a request the server routes here
        // before it confirms the subscription (another member of the queue group is already
        // serving) is answered, not dropped. The service is up once every subscription is
        // confirmed; until then, and on any failure, `done` ends what was started.
        let (mut threads, mut tickets) = (Vec::new(), Vec::new());
        let fail = |e: Error| {
            done.store(true, Ordering::Relaxed);
            Err(e)
        };
        for (i, c) in conns.into_iter().enumerate() {
            let Conn {
                mut reader, shared, ..
            } = c;
            let mut cmd = Vec::new();
            proto::encode_sub(&mut cmd, &opts.subject, Some(QUEUE), 1);
            match subscribe(&shared, cmd) {
                Ok(ticket) => tickets.push((Arc::clone(&shared), ticket)),
                Err(e) => return fail(e),
            }
            let spec = RespondSpec {
                id: base + i as u32,
                delay: opts.delay,
                max: opts.max,
                until: None,
            };
            let done = &done;
            threads.push(s.spawn(move || {
                let run = load::respond(&mut reader, &shared, &spec, served, done, stop);
                shared.close();
                run
            }));
        }
        let timeout = opts.conn.dial.connect_timeout;
        if let Err(e) = (tickets.iter()).try_for_each(|(sh, t)| sh.confirm_subscribed(*t, timeout))
        {
            return fail(e.error(&url));
        }
        // On agents, the service's time starts with the others'.
        let start = match crate::scenario::segment::start(share, stop) {
            Ok(at) => at,
            Err(e) => return fail(e),
        };
        match &opts.announce {
            Announce::Line => eprintln!(
                "serving requests on '{}' with {} responder(s) for up to {}",
                opts.subject,
                opts.clients,
                humantime::format_duration(opts.duration)
            ),
            Announce::Quiet => {}
            Announce::Ready(up) => {
                let _ = up.try_send(());
            }
        }
        // Served for --duration from the start, unless --msgs, an interruption or a lost
        // connection ends every responder first.
        let until = start + opts.duration;
        while !stop.load(Ordering::Relaxed) && !threads.iter().all(|h| h.is_finished()) {
            let Some(left) = until.checked_duration_since(std::time::Instant::now()) else {
                break;
            };
            std::thread::sleep(left.min(std::time::Duration::from_millis(100)));
        }
        done.store(true, Ordering::Relaxed);
        Ok(threads
            .into_iter()
            .map(|h| h.join().expect("responder panicked"))
            .collect())
    })?;
    meter.counted_until(runs.iter().map(|r| r.end));
    let (throughput, by_role, clients) = throughput_sections(&runs);
    Ok(RunResult {
        plan: None,
        throughput,
        by_role,
        clients,
        delivery: Delivery {
            received: served.load(Ordering::Relaxed),
            accounting: "none",
            unmeasured: crate::stats::delivery::Unmeasured::SENT_AND_LOSS,
            ..Delivery::default()
        },
        ..RunResult::new(
            "reply",
            started_at,
            opts.params(),
            ServerMeta::new(&info, &url, target.local),
            &errors,
            stop.load(Ordering::Relaxed),
        )
    })
}

/// `request` under `msgbench compare`: the drivers are measured against msgbench's own echo
/// service, as the native run is. The service runs beside the driver, which starts once the
/// server has confirmed every responder's subscription, and stops when the driver is done.
#[derive(Debug)]
pub(super) struct Echo(pub(super) ReplyOptions);

impl Around for Echo {
    fn run(
        &self,
        target: &Target,
        driver: &mut DriverRun<'_>,
    ) -> Result<(DriverOutcome, Option<Box<dyn Section>>)> {
        let (up, heard) = std::sync::mpsc::sync_channel(1);
        let opts = ReplyOptions {
            announce: Announce::Ready(up),
            ..self.0.clone()
        };
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let done = &done;
            // The options move in, so a service that ends before it is up drops the sender and
            // the wait below ends with it.
            let service = s.spawn(move || run_reply(&opts, target, &Meter::default(), done, None));
            if heard.recv().is_err() {
                let failed = service.join().expect("the echo service panicked");
                return Err(failed.err().unwrap_or_else(|| {
                    Error::Usage("the echo service ended before it was up".into())
                }));
            }
            let out = driver(None);
            done.store(true, Ordering::Relaxed);
            let _ = service.join();
            Ok((out, None))
        })
    }
}
