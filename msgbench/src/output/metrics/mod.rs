//! `--metrics-listen ADDR`: the run's live figures for Prometheus, Grafana and the like, in the
//! OpenMetrics text format on `http://ADDR/metrics`.
//!
//! The figures are the live view's ticks, the very ones the result's `timeline` records, with
//! the counts they add up to: each tick is rendered once into a page ([`exposition`]) that a
//! server thread hands to every scrape ([`http`], on the HTTP server `--web` shares, which
//! bounds and times out its clients). A scrape so never sees half a tick, and scraping costs the
//! run nothing but a copy of the page. The address is bound before any server is started or
//! connected to, so a port in use refuses the run instead of surfacing after it. After the last
//! run, the final page is kept up until a scraper has taken it (at most `--metrics-linger`;
//! Ctrl-C ends the wait): a scraper that comes every 15 s would otherwise miss the end of the
//! run. The coordinator of a run on agents serves the merged figures and
//! each agent's through the same server ([`agents`]).

mod agents;
mod exposition;
mod http;

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use agents::{AgentFigures, AgentsFeed, Figures as AgentsFigures};
use exposition::Item;
pub use exposition::RunLabels;

use crate::error::{Error, Result};
use crate::output::serve::{Limits, Server};
use crate::stats::timeline::{Tick, Totals};
use http::{Board, Scrapes};

const FLAG: &str = "--metrics-listen";

/// The listening server; dropping it stops it.
pub struct Metrics {
    board: Arc<Board>,
    addr: SocketAddr,
    server: Server,
}

impl Metrics {
    /// Listens on `addr` (`HOST:PORT`) and starts serving an empty exposition.
    ///
    /// # Errors
    /// [`Error::Listen`] naming the flag and address, when it cannot be listened on.
    pub fn bind(addr: &str) -> Result<Self> {
        let refuse = |reason: String| Error::Listen {
            flag: FLAG,
            addr: addr.to_string(),
            reason,
        };
        let listener = TcpListener::bind(addr).map_err(|e| refuse(why(&e)))?;
        let local = listener.local_addr().map_err(|e| refuse(why(&e)))?;
        let board = Arc::new(Board::default());
        let site = Arc::new(Scrapes(Arc::clone(&board)));
        let server = Server::start(listener, "msgbench-metrics", site, Limits::default())
            .map_err(|e| refuse(why(&e)))?;
        Ok(Self {
            board,
            addr: local,
            server,
        })
    }

    /// The address bound (its port is the one chosen when the user gave port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What the live view of one run publishes through.
    pub fn feed(&self, labels: RunLabels) -> Feed {
        let page = Shared::new(
            vec![
                ("run", labels.run),
                ("scenario", labels.scenario.to_string()),
            ],
            1,
        );
        page.feed(&self.board, 0, Vec::new())
    }

    /// The page of a workload's `classes` (name and scenario, in the file's order), each
    /// class's samples under `class`, `scenario` and the `run` id its result will carry, the
    /// page's under `workload`.
    pub fn classes(&self, workload: &str, classes: usize) -> Classes {
        Classes {
            board: Arc::clone(&self.board),
            page: Shared::new(vec![("workload", workload.to_string())], classes),
        }
    }

    /// What the coordinator of one run on agents publishes through.
    pub fn agents_feed(&self, labels: RunLabels) -> AgentsFeed {
        AgentsFeed {
            board: Arc::clone(&self.board),
            labels,
            last: None,
        }
    }

    /// Serves until the final page has been scraped, `limit` has passed or `stop` is raised,
    /// then stops the server. Nothing is awaited when no tick was ever published.
    pub fn linger(mut self, limit: Duration, stop: &AtomicBool) {
        let last = self.board.published();
        if last > 0 && !self.board.taken(last) && !limit.is_zero() && !stop.load(Ordering::Relaxed)
        {
            eprintln!(
                "{FLAG}: the final figures stay on http://{}/metrics until scraped, at most {} \
                 (--metrics-linger; Ctrl-C ends the wait)",
                self.addr,
                humantime::format_duration(limit)
            );
            let start = Instant::now();
            while !self.board.taken(last)
                && start.elapsed() < limit
                && !stop.load(Ordering::Relaxed)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.server.stop();
    }
}

/// Why an address cannot be listened on, in the user's terms.
pub(crate) fn why(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::AddrInUse => "the address is already in use".into(),
        K::AddrNotAvailable => "it is not an address of this machine".into(),
        K::PermissionDenied => "permission denied (ports below 1024 need privileges)".into(),
        _ => e.to_string(),
    }
}

/// The page the feeds of one session share: its own labels, and each run's latest figures.
struct Shared {
    labels: Vec<(&'static str, String)>,
    items: Mutex<Vec<Option<Item>>>,
}

impl Shared {
    fn new(labels: Vec<(&'static str, String)>, runs: usize) -> Arc<Self> {
        Arc::new(Self {
            labels,
            items: Mutex::new(vec![None; runs]),
        })
    }

    fn feed(
        self: &Arc<Self>,
        board: &Arc<Board>,
        index: usize,
        labels: Vec<(&'static str, String)>,
    ) -> Feed {
        Feed {
            board: Arc::clone(board),
            page: Arc::clone(self),
            index,
            labels,
            last: None,
        }
    }
}

/// A workload's page, from which each class's live view gets its feed.
pub struct Classes {
    board: Arc<Board>,
    page: Arc<Shared>,
}

impl Classes {
    /// The feed of class `index` (`class`, running `scenario` as run `run`).
    pub fn feed(&self, index: usize, class: &str, scenario: &str, run: &str) -> Feed {
        let labels = vec![
            ("class", class.to_string()),
            ("scenario", scenario.to_string()),
            ("run", run.to_string()),
        ];
        self.page.feed(&self.board, index, labels)
    }
}

/// One run's side of the exposition, owned by its live view: each tick it is shown becomes its
/// part of the page on offer (the whole page, for a run alone).
#[derive(Clone)]
pub struct Feed {
    board: Arc<Board>,
    page: Arc<Shared>,
    index: usize,
    /// This run's labels on a page of several.
    labels: Vec<(&'static str, String)>,
    /// The last tick shown, with its totals, and whether it was shown as the run's final one.
    last: Option<(Tick, Totals, bool)>,
}

impl Feed {
    /// Publishes `tick` and the `totals` read with it; `last` when the run has ended.
    pub fn show(&mut self, tick: &Tick, totals: &Totals, last: bool) {
        // Rendered and published under the page's lock: two classes ticking at once cannot
        // put up their pages in the other order, an older one last.
        let mut items = self
            .page
            .items
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        items[self.index] = Some(Item {
            labels: self.labels.clone(),
            tick: tick.clone(),
            totals: totals.clone(),
            finished: last,
        });
        let shown: Vec<Item> = items.iter().flatten().cloned().collect();
        self.board
            .publish(exposition::render_items(&self.page.labels, &shown));
        drop(items);
        self.last = Some((tick.clone(), totals.clone(), last));
    }

    /// Marks the run's figures final: the last tick shown is shown again as such (when the run's
    /// last interval was too empty to keep, the timeline ends with that tick too).
    pub fn finish(&mut self) {
        if let Some((tick, totals, false)) = &self.last {
            let (tick, totals) = (tick.clone(), totals.clone());
            self.show(&tick, &totals, true);
        }
    }
}
