//! The sampler of a run's servers: a thread of its own that reads every server's monitoring
//! endpoints once at the start and then just before each second of the run's clock, makes the
//! readings into a [`ServerTick`], finds the events in it, and leaves it in the meter's
//! [`Slot`] for the timeline's next tick to take.
//!
//! It never holds up the load or the timeline: the servers are read concurrently, each reading
//! within [`ROUND_LIMIT`], and the timeline takes whatever was read last without waiting. A
//! server that does not answer has null figures in that tick, and (for an endpoint the user
//! named) one warning on stderr, once; the run goes on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustls::ClientConfig;

use super::client::{Client, Conn};
use super::Endpoint;
pub use crate::stats::server::ServerInfo;
use crate::stats::server::{merge, Detector, Reading, ServerEvent, Slot, Source as Side};

/// How long one round of readings may take, every server at once: a round ends before the
/// next second's.
pub const ROUND_LIMIT: Duration = Duration::from_millis(900);
/// How long before each second of the run's clock a round starts, so its reading is there
/// when the timeline's tick is taken.
const LEAD: Duration = Duration::from_millis(250);

/// A server msgbench started: its monitoring port now, if it is running.
pub type PortFn = Arc<dyn Fn() -> Option<u16> + Send + Sync>;

/// Where one server is read.
pub enum Source {
    /// An endpoint the user named (`--server-monitor`).
    Endpoint(Endpoint),
    /// A server msgbench started, by name; its monitoring port now (a restart gives it a new
    /// one, and a killed server has none).
    Started { name: String, port: PortFn },
}

impl Source {
    /// How it is named until it has answered.
    pub fn label(&self) -> String {
        match self {
            Source::Endpoint(e) => e.shown(),
            Source::Started { name, .. } => name.clone(),
        }
    }

    fn endpoint(&self) -> Result<Endpoint, String> {
        match self {
            Source::Endpoint(e) => Ok(e.clone()),
            Source::Started { port, .. } => port()
                .map(Endpoint::loopback)
                .ok_or_else(|| "not running".to_string()),
        }
    }
}

/// What the sampler found over the run.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub servers: Vec<ServerInfo>,
    /// Every event, in the order found.
    pub events: Vec<ServerEvent>,
}

/// The running sampler; [`Watch::finish`] stops it.
pub struct Watch {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<Summary>>,
}

impl Watch {
    /// Starts reading `sources` against the run's clock (`started`), leaving each round in
    /// `slot`. `tls` verifies `https://` endpoints (the system's roots when `None`).
    pub fn start(
        sources: Vec<Source>,
        tls: Option<Arc<ClientConfig>>,
        started: Instant,
        slot: Arc<Slot>,
    ) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let thread = std::thread::Builder::new()
            .name("msgbench-servers".into())
            .spawn(move || sample(&sources, tls, started, &slot, &flag))
            .expect("spawn the servers' sampler thread");
        Self {
            done,
            thread: Some(thread),
        }
    }

    /// Stops sampling (a round under way ends within [`ROUND_LIMIT`]) and returns what was
    /// found.
    pub fn finish(mut self) -> Summary {
        self.done.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn sample(
    sources: &[Source],
    tls: Option<Arc<ClientConfig>>,
    started: Instant,
    slot: &Slot,
    done: &AtomicBool,
) -> Summary {
    let mut summary = Summary {
        servers: sources
            .iter()
            .map(|s| ServerInfo {
                name: s.label(),
                monitor: match s {
                    Source::Endpoint(e) => e.shown(),
                    Source::Started { .. } => "started".into(),
                },
                version: None,
                cores: None,
                gomaxprocs: None,
                readings: 0,
                answered: 0,
            })
            .collect(),
        events: Vec::new(),
    };
    let client = match Client::new(tls) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("warning: the servers are not sampled: {e}");
            return summary;
        }
    };
    let mut conns: Vec<Conn> = sources.iter().map(|_| Conn::default()).collect();
    let mut last: Vec<Option<Reading>> = vec![None; sources.len()];
    let mut warned = vec![false; sources.len()];
    let mut detector = Detector::default();
    let clock = move || started.elapsed().as_secs_f64();
    // The first round at once: the baseline the first second's rates are counted from.
    let mut next = Duration::ZERO;
    while !done.load(Ordering::Relaxed) {
        if started.elapsed() + LEAD < next {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let from = clock();
        let round = client.block_on(futures_util::future::join_all(
            sources.iter().zip(conns.iter_mut()).map(|(s, conn)| {
                let client = &client;
                let clock = &clock;
                async move {
                    let endpoint = s.endpoint()?;
                    super::read::read(client, conn, &endpoint, ROUND_LIMIT, clock).await
                }
            }),
        ));
        let now: Vec<Option<Reading>> = round
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let info = &mut summary.servers[i];
                info.readings += 1;
                match r {
                    Ok(mut r) => {
                        if r.name.is_empty() {
                            r.name = sources[i].label();
                        }
                        info.answered += 1;
                        info.name.clone_from(&r.name);
                        info.version = Some(r.version.clone());
                        info.cores = Some(r.cores);
                        info.gomaxprocs = Some(r.gomaxprocs);
                        Some(r)
                    }
                    Err(why) => {
                        if let (Source::Endpoint(e), false) = (&sources[i], warned[i]) {
                            warned[i] = true;
                            eprintln!(
                                "warning: --server-monitor {e} did not answer at {:.1} s \
                                 ({why}); its figures are null while it does not, and the run \
                                 goes on",
                                from
                            );
                        }
                        None
                    }
                }
            })
            .collect();
        let labels: Vec<String> = summary.servers.iter().map(|s| s.name.clone()).collect();
        let sides: Vec<Side<'_>> = now
            .iter()
            .zip(&last)
            .zip(&labels)
            .map(|((now, before), label)| Side {
                label,
                now: now.as_ref(),
                before: before.as_ref(),
            })
            .collect();
        let mut tick = merge((from + clock()) / 2.0, &sides);
        tick.events = detector.feed(&tick);
        summary.events.extend(tick.events.iter().cloned());
        slot.put(tick);
        for (l, n) in last.iter_mut().zip(now) {
            if n.is_some() {
                *l = n;
            }
        }
        // The next whole second whose round has not yet begun: a slow round skips seconds,
        // never crowds them.
        next = Duration::from_secs((started.elapsed() + LEAD).as_secs() + 1);
    }
    summary
}
