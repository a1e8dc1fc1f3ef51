//! The connection fleet: many NATS connections served by a few threads, for runs whose cost
//! should grow with their traffic rather than with their connection count (`conns`, and
//! `pubsub` with many subscribers).
//!
//! Each worker thread (one per core) owns a share of the connections and multiplexes them with
//! readiness-based I/O (mio over epoll). A connection ([`Member`]) is a non-blocking state
//! machine with a small read buffer that grows while it is busy and shrinks back when it is
//! quiet, and its own exact counts; nothing is shared between connections but the counters on
//! the [`Board`], so a fleet of 10,000 subscribers costs a few KiB each.
//!
//! The dedicated engine (`conn`: a thread per connection, a 128 KiB buffer, blocking reads) is
//! still what publishers, requesters and a handful of subscribers use: a blocked read wakes its
//! own thread directly, with no readiness round in between, which is what a latency measurement
//! of one connection wants. The switch is made by the scenarios (see [`FLEET_FROM`]).

use std::net::{SocketAddr, ToSocketAddrs};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use crate::engine::conn::Dialing;
use crate::engine::load::SubControl;
use crate::error::{Error, ErrorCounts, ErrorKind, Result};
use crate::stats::timeline::ClientMeter;
use crate::wire::url::ServerUrl;

mod buf;
mod member;
mod worker;

pub use member::{Ending, Member};

/// Subscribers in one `pubsub` run from which they are served by a fleet. Below this
/// many, each keeps a thread of its own: the thread costs little at that count, and its blocking
/// read is woken directly by the kernel, one readiness round sooner than a fleet's.
pub const FLEET_FROM: u32 = 9;

use crate::engine::{BACKOFF_FIRST, BACKOFF_MAX};

/// How often each worker looks at all its connections (keepalives, timeouts, stop conditions,
/// buffers).
const SWEEP: Duration = Duration::from_millis(100);

/// What each connection subscribes to once it is up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interest {
    None,
    /// Every connection on one subject.
    Shared(String),
    /// Connection `id` on `<prefix>.<id>`.
    Own(String),
}

impl Interest {
    pub fn subject(&self, id: u32) -> String {
        match self {
            Interest::None => String::new(),
            Interest::Shared(s) => s.clone(),
            Interest::Own(prefix) => format!("{prefix}.{id}"),
        }
    }
}

/// One server a fleet dials: its URL (credentials, TLS name) and address.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: ServerUrl,
    pub addr: SocketAddr,
}

/// Everything a fleet's connections share.
#[derive(Debug)]
pub struct FleetSpec {
    /// Connection `id` dials `targets[id % len]`.
    pub targets: Vec<Target>,
    /// Shown by the server in its connection list.
    pub name: String,
    pub dialing: Dialing,
    pub interest: Interest,
    /// Record a delivery log per connection, of the stamps of this run.
    pub run_tag: Option<u16>,
    pub errors: Arc<ErrorCounts>,
    /// How long a lost connection is dialled again before it counts as lost for good.
    pub give_up_after: Duration,
    /// A subscriber waiting for a count gives up after this long without a message...
    pub idle_timeout: Duration,
    /// ...or this long without any message at all.
    pub start_timeout: Duration,
    pub threads: usize,
    /// Connects under way at once, at most (first connects only; reconnects are not held back,
    /// since a herd is what a restart is measured for).
    pub in_flight: usize,
    /// New connections a second; `None` as fast as `in_flight` allows.
    pub connect_rate: Option<f64>,
}

impl FleetSpec {
    /// Resolves the servers' addresses once, before any connection.
    ///
    /// # Errors
    /// [`Error::Connect`] for a server whose address cannot be resolved.
    pub fn targets(servers: &[ServerUrl]) -> Result<Vec<Target>> {
        servers
            .iter()
            .map(|url| {
                let addr = url
                    .host_port()
                    .to_socket_addrs()
                    .ok()
                    .and_then(|mut a| a.next())
                    .ok_or_else(|| Error::Connect {
                        url: url.to_string(),
                        reason: "cannot resolve host".into(),
                    })?;
                Ok(Target {
                    url: url.clone(),
                    addr,
                })
            })
            .collect()
    }

    fn target(&self, id: u32) -> &Target {
        &self.targets[id as usize % self.targets.len()]
    }
}

/// The phases of one connect, each timed on its own.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectTimes {
    /// When the attempt began.
    pub at: Option<Instant>,
    /// TCP connect (SYN to established).
    pub tcp: Duration,
    /// TLS handshake, when there was one.
    pub tls: Option<Duration>,
    /// From connected (or TLS done, with handshake-first) to the server's INFO.
    pub info: Duration,
    /// CONNECT and PING to the PONG.
    pub connect: Duration,
    /// SUB and PING to the PONG, when the connection subscribes.
    pub subscribe: Option<Duration>,
    /// The whole attempt, to ready.
    pub total: Duration,
}

impl ConnectTimes {
    /// The NATS handshake: waiting for INFO plus CONNECT to PONG.
    pub fn handshake(&self) -> Duration {
        self.info + self.connect
    }
}

/// One outage of a connection and its way back.
///
/// The two sequence marks are of the run's first stamped publisher (`run_tag`, publisher 0:
/// in `conns`, its checker). NATS delivers one publisher's messages to a subscription in
/// order, so with them the messages this outage cost the connection are known exactly: those
/// from `seq_mark` up to `first_seq` (or to the first sent once it was back).
#[derive(Debug, Clone, Copy)]
pub struct Recovery {
    pub lost_at: Instant,
    /// Connected and (when it subscribes) subscribed again; `None` while still out.
    pub back_at: Option<Instant>,
    /// Connect attempts since the loss.
    pub attempts: u32,
    /// One past the highest sequence received before the loss (0: none).
    pub seq_mark: u64,
    /// The first sequence received after the loss (during the re-subscription or later).
    pub first_seq: Option<u64>,
}

/// Why a connect attempt failed or a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Refused,
    TimedOut,
    Reset,
    /// The server closed the connection.
    Closed,
    Tls,
    /// The server refused CONNECT (authorization, limits).
    Rejected,
    Protocol,
    /// Out of file descriptors (the process's or the system's limit).
    NoFds,
    /// Out of local ports or addresses.
    NoPorts,
    PingTimeout,
    Other,
}

impl Failure {
    pub const ALL: [Failure; 11] = [
        Failure::Refused,
        Failure::TimedOut,
        Failure::Reset,
        Failure::Closed,
        Failure::Tls,
        Failure::Rejected,
        Failure::Protocol,
        Failure::NoFds,
        Failure::NoPorts,
        Failure::PingTimeout,
        Failure::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Failure::Refused => "refused",
            Failure::TimedOut => "timed_out",
            Failure::Reset => "reset",
            Failure::Closed => "closed",
            Failure::Tls => "tls",
            Failure::Rejected => "rejected",
            Failure::Protocol => "protocol",
            Failure::NoFds => "no_fds",
            Failure::NoPorts => "no_ports",
            Failure::PingTimeout => "ping_timeout",
            Failure::Other => "other",
        }
    }

    pub(crate) fn of_io(e: &std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ECONNREFUSED) => Failure::Refused,
            Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED) => Failure::Reset,
            Some(libc::ETIMEDOUT) => Failure::TimedOut,
            Some(libc::EMFILE | libc::ENFILE) => Failure::NoFds,
            Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE) => Failure::NoPorts,
            _ => Failure::Other,
        }
    }

    /// The run's error kind for a connection that ended this way.
    pub fn counted(self) -> ErrorKind {
        match self {
            Failure::PingTimeout => ErrorKind::PingTimeout,
            Failure::Protocol => ErrorKind::ProtocolError,
            Failure::Rejected => ErrorKind::Authorization,
            Failure::Refused | Failure::Reset | Failure::Closed => ErrorKind::Disconnected,
            Failure::TimedOut
            | Failure::Tls
            | Failure::NoFds
            | Failure::NoPorts
            | Failure::Other => ErrorKind::Io,
        }
    }
}

/// The counters a fleet's workers share, read by the scenario while the fleet runs.
#[derive(Debug, Default)]
pub struct Board {
    in_flight: AtomicI64,
    ready: AtomicI64,
    opened: AtomicU64,
    /// Connections whose first connect is over: up, or given up on.
    settled: AtomicU64,
    finished: AtomicU64,
    lost: AtomicU64,
    recovered: AtomicU64,
    failures: [AtomicU64; Failure::ALL.len()],
    pings: AtomicU64,
    pongs: AtomicU64,
    buffer_bytes: AtomicU64,
    stopping: AtomicBool,
}

impl Board {
    fn in_flight(&self, d: i64) {
        self.in_flight.fetch_add(d, Ordering::Relaxed);
    }
    fn ready(&self, d: i64) {
        self.ready.fetch_add(d, Ordering::Relaxed);
    }
    fn opened(&self) {
        self.opened.fetch_add(1, Ordering::Relaxed);
        self.settled.fetch_add(1, Ordering::Relaxed);
    }
    pub(super) fn settled_without_connecting(&self) {
        self.settled.fetch_add(1, Ordering::Relaxed);
    }
    pub(super) fn finished(&self) {
        self.finished.fetch_add(1, Ordering::Relaxed);
    }
    fn lost(&self) {
        self.lost.fetch_add(1, Ordering::Relaxed);
    }
    fn recovered(&self) {
        self.recovered.fetch_add(1, Ordering::Relaxed);
    }
    fn failure(&self, f: Failure) {
        self.failures[f as usize].fetch_add(1, Ordering::Relaxed);
    }
    fn ping(&self) {
        self.pings.fetch_add(1, Ordering::Relaxed);
    }
    fn pong(&self) {
        self.pongs.fetch_add(1, Ordering::Relaxed);
    }

    /// Connections up now.
    pub fn ready_now(&self) -> u64 {
        self.ready.load(Ordering::Relaxed).max(0) as u64
    }
    /// Connections that came up the first time.
    pub fn opened_count(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }
    /// Connections whose first connect is over: up, or given up on.
    pub fn settled_count(&self) -> u64 {
        self.settled.load(Ordering::Relaxed)
    }
    /// Connections that ended (done, stopped, or failed for good).
    pub fn finished_count(&self) -> u64 {
        self.finished.load(Ordering::Relaxed)
    }
    /// Losses of a connection that was up, and returns from one.
    pub fn lost_count(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }
    pub fn recovered_count(&self) -> u64 {
        self.recovered.load(Ordering::Relaxed)
    }
    /// Failed connect attempts and ended connections, by kind.
    pub fn failures(&self) -> Vec<(Failure, u64)> {
        Failure::ALL
            .iter()
            .map(|&f| (f, self.failures[f as usize].load(Ordering::Relaxed)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }
    /// Keepalive PINGs sent, and those answered.
    pub fn keepalives(&self) -> (u64, u64) {
        (
            self.pings.load(Ordering::Relaxed),
            self.pongs.load(Ordering::Relaxed),
        )
    }
    /// Heap bytes of all connections' buffers at the last sweep.
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_bytes.load(Ordering::Relaxed)
    }
}

/// A running fleet.
pub struct Fleet<'s> {
    board: Arc<Board>,
    workers: Vec<ScopedJoinHandle<'s, Vec<Member>>>,
    size: u64,
}

impl<'s> Fleet<'s> {
    /// Starts connections `ids` on `spec.threads` workers inside `scope`. `meters[i]`, when
    /// given, shows connection `ids.start + i`'s message count live.
    pub fn start<'e: 's>(
        scope: &'s Scope<'s, 'e>,
        spec: &'e FleetSpec,
        ctl: &'e SubControl,
        stop: &'e AtomicBool,
        ids: Range<u32>,
        meters: &[Arc<ClientMeter>],
    ) -> Self {
        let board = Arc::new(Board::default());
        let size = u64::from(ids.end - ids.start);
        let threads = spec.threads.clamp(1, (size as usize).max(1));
        let started = Instant::now();
        let workers = (0..threads)
            .map(|k| {
                let members: Vec<Member> = ids
                    .clone()
                    .skip(k)
                    .step_by(threads)
                    .enumerate()
                    .map(|(j, id)| {
                        let meter = meters.get((id - ids.start) as usize).cloned();
                        Member::new(id, j, spec, meter)
                    })
                    .collect();
                let board = Arc::clone(&board);
                let plan = worker::Opening {
                    started,
                    first: k,
                    every: threads,
                };
                scope.spawn(move || worker::run(members, spec, ctl, &board, stop, plan))
            })
            .collect();
        Self {
            board,
            workers,
            size,
        }
    }

    pub fn board(&self) -> &Board {
        &self.board
    }

    /// Connections in the fleet.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Waits until `done` says so, `stop` is raised or `timeout` passes; true when `done` did.
    pub fn wait(
        &self,
        timeout: Duration,
        stop: &AtomicBool,
        mut done: impl FnMut(&Board) -> bool,
    ) -> bool {
        let until = Instant::now() + timeout;
        loop {
            if done(&self.board) {
                return true;
            }
            if stop.load(Ordering::Relaxed) || Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Asks every connection to end; [`Fleet::join`] then returns at once.
    pub fn stop(&self) {
        self.board.stopping.store(true, Ordering::Release);
    }

    /// Waits for the workers and returns every connection, in id order.
    pub fn join(self) -> Vec<Member> {
        let mut all: Vec<Member> = self
            .workers
            .into_iter()
            .flat_map(|w| w.join().expect("fleet worker panicked"))
            .collect();
        all.sort_by_key(|m| m.id);
        all
    }
}
