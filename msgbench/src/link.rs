//! The impaired link (`--link`): a TCP proxy on loopback, inside msgbench, between its clients
//! and the server. Each direction of each connection gets a one-way delay, jitter and a
//! bandwidth cap, and keeps its byte order. No privilege or kernel module is needed, and the
//! proxy's own cost is measured (at zero delay) and reported with the results.
//!
//! Each direction is a reader thread that stamps every chunk it reads with the time it may be
//! delivered, and a writer thread that sleeps until then. The queue between them is bounded, so
//! a sender faster than the link is held back by TCP itself, as it would be by a real
//! bottleneck.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::result::{LinkReport, LinkSpec, Shape};
use crate::wire::url::ServerUrl;

/// The bytes a direction may hold beyond the bandwidth-delay product before the reader waits.
const QUEUE_SLACK: usize = 4 << 20;
const CHUNK: usize = 64 * 1024;
const DIAL_TIMEOUT: Duration = Duration::from_secs(2);

/// When each chunk of one direction may be delivered.
#[derive(Debug)]
pub struct Schedule {
    shape: Shape,
    /// With a bandwidth cap, when the link finishes sending what it already has.
    link_free: Option<Instant>,
    last: Option<Instant>,
    rng: u64,
}

impl Schedule {
    pub fn new(shape: Shape, seed: u64) -> Self {
        Self {
            shape,
            link_free: None,
            last: None,
            rng: seed | 1,
        }
    }

    /// The delivery time of `len` bytes read at `now`: after the link has serialised them at its
    /// rate, plus the delay and its jitter, and never before the previous chunk.
    pub fn deliver_at(&mut self, now: Instant, len: usize) -> Instant {
        let departed = match self.shape.rate_bps {
            Some(bps) => {
                let start = self.link_free.map_or(now, |f| f.max(now));
                let wire =
                    Duration::from_nanos((len as u64 * 8).saturating_mul(1_000_000_000) / bps);
                let done = start + wire;
                self.link_free = Some(done);
                done
            }
            None => now,
        };
        let at = departed + self.delay();
        let at = self.last.map_or(at, |l| l.max(at));
        self.last = Some(at);
        at
    }

    /// `delay ± jitter`, uniform, not below zero.
    fn delay(&mut self) -> Duration {
        let j = self.shape.jitter.as_nanos() as u64;
        if j == 0 {
            return self.shape.delay;
        }
        // xorshift64*: enough randomness for jitter, no dependency.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) % (2 * j + 1);
        let d = self.shape.delay.as_nanos() as u64;
        Duration::from_nanos((d + r).saturating_sub(j))
    }
}

/// A chunk on its way, or the end of the direction.
enum Item {
    Chunk(Instant, Vec<u8>),
    End,
}

/// The bounded queue between a direction's reader and writer.
struct Queue {
    state: Mutex<(VecDeque<Item>, usize, bool)>,
    cv: Condvar,
    limit: usize,
}

impl Queue {
    fn new(limit: usize) -> Self {
        Self {
            state: Mutex::new((VecDeque::new(), 0, false)),
            cv: Condvar::new(),
            limit,
        }
    }

    /// Waits while the queue is full; false when the other side has gone.
    fn push(&self, item: Item) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let len = match &item {
            Item::Chunk(_, b) => b.len(),
            Item::End => 0,
        };
        while s.1 + len > self.limit && !s.0.is_empty() && !s.2 {
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        if s.2 {
            return false;
        }
        s.1 += len;
        s.0.push_back(item);
        self.cv.notify_all();
        true
    }

    fn pop(&self) -> Item {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(item) = s.0.pop_front() {
                if let Item::Chunk(_, b) = &item {
                    s.1 -= b.len();
                }
                self.cv.notify_all();
                return item;
            }
            if s.2 {
                return Item::End;
            }
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Ends the queue from either side.
    fn close(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.2 = true;
        self.cv.notify_all();
    }
}

/// One proxy: a listener on loopback that forwards every connection to one server.
pub struct Proxy {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    sockets: Arc<Mutex<Vec<TcpStream>>>,
    accept: Option<JoinHandle<()>>,
}

impl Proxy {
    /// Starts forwarding to `upstream` (`host:port`).
    ///
    /// # Errors
    /// When no loopback port can be bound.
    pub fn start(upstream: String, spec: LinkSpec) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let sockets: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let (stop2, sockets2) = (stop.clone(), sockets.clone());
        let accept = std::thread::Builder::new()
            .name("msgbench-link".into())
            .spawn(move || {
                let mut n = 0u64;
                for client in listener.incoming() {
                    if stop2.load(Ordering::Acquire) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    n += 1;
                    let Some(server) = dial(&upstream) else {
                        let _ = client.shutdown(Shutdown::Both);
                        continue;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    {
                        let mut live = sockets2.lock().unwrap_or_else(|p| p.into_inner());
                        live.retain(|s| s.peer_addr().is_ok());
                        for s in [&client, &server] {
                            if let Ok(c) = s.try_clone() {
                                live.push(c);
                            }
                        }
                    }
                    let seed = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed_from_clock();
                    forward(&client, &server, spec.up, seed);
                    forward(&server, &client, spec.down, seed.rotate_left(17));
                }
            })?;
        Ok(Self {
            addr,
            stop,
            sockets,
            accept: Some(accept),
        })
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop, then cut every connection so every pump thread ends.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        for s in self
            .sockets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            let _ = s.shutdown(Shutdown::Both);
        }
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

fn dial(upstream: &str) -> Option<TcpStream> {
    upstream
        .to_socket_addrs()
        .ok()?
        .find_map(|a| TcpStream::connect_timeout(&a, DIAL_TIMEOUT).ok())
}

/// One direction: `from` → `to`, shaped.
fn forward(from: &TcpStream, to: &TcpStream, shape: Shape, seed: u64) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    if shape.is_clear() {
        // Nothing to shape: copy straight through on one thread, so a clear direction costs one
        // wake-up per chunk rather than two.
        let _ = std::thread::Builder::new()
            .name("msgbench-link".into())
            .spawn(move || {
                let mut buf = vec![0u8; CHUNK];
                loop {
                    match from.read(&mut buf) {
                        Ok(0) | Err(_) => {
                            let _ = to.shutdown(Shutdown::Write);
                            break;
                        }
                        Ok(n) => {
                            if to.write_all(&buf[..n]).is_err() {
                                let _ = to.shutdown(Shutdown::Both);
                                let _ = from.shutdown(Shutdown::Both);
                                break;
                            }
                        }
                    }
                }
            });
        return;
    }
    // Room for what the link holds in flight at full rate, plus slack.
    let in_flight = shape.rate_bps.map_or(0, |bps| {
        (bps as f64 / 8.0 * (shape.delay + shape.jitter).as_secs_f64()) as usize
    });
    let queue = Arc::new(Queue::new(QUEUE_SLACK + in_flight));
    let q = queue.clone();
    let reader = std::thread::Builder::new()
        .name("msgbench-link-rd".into())
        .spawn(move || {
            let mut schedule = Schedule::new(shape, seed);
            let mut buf = vec![0u8; CHUNK];
            loop {
                match from.read(&mut buf) {
                    Ok(0) | Err(_) => {
                        q.push(Item::End);
                        break;
                    }
                    Ok(n) => {
                        let at = schedule.deliver_at(Instant::now(), n);
                        if !q.push(Item::Chunk(at, buf[..n].to_vec())) {
                            // The writer's side is gone: stop reading this side too.
                            let _ = from.shutdown(Shutdown::Both);
                            break;
                        }
                    }
                }
            }
        });
    if reader.is_err() {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("msgbench-link-wr".into())
        .spawn(move || loop {
            match queue.pop() {
                Item::Chunk(at, bytes) => {
                    let now = Instant::now();
                    if at > now {
                        std::thread::sleep(at - now);
                    }
                    if to.write_all(&bytes).is_err() {
                        queue.close();
                        let _ = to.shutdown(Shutdown::Both);
                        break;
                    }
                }
                Item::End => {
                    // Pass the half-close on, after everything before it.
                    let _ = to.shutdown(Shutdown::Write);
                    queue.close();
                    break;
                }
            }
        });
}

/// Proxies for every server of a target, and what the run should report about them.
pub struct Link {
    pub proxies: Vec<Proxy>,
    pub report: LinkReport,
}

/// Puts a proxy in front of each server; returns the URLs clients should use instead.
///
/// # Errors
/// [`Error::Io`] when a proxy cannot listen.
pub fn attach(servers: &[ServerUrl], spec: LinkSpec) -> Result<(Vec<ServerUrl>, Link)> {
    let io = |e| Error::Io {
        context: "cannot start the link proxy".into(),
        source: e,
    };
    let mut proxies = Vec::new();
    let mut urls = Vec::new();
    for s in servers {
        let p = Proxy::start(s.host_port(), spec).map_err(io)?;
        urls.push(ServerUrl {
            host: "127.0.0.1".into(),
            port: p.addr.port(),
            auth: s.auth.clone(),
            tls: s.tls,
            tls_name: Some(s.tls_name().to_string()),
        });
        proxies.push(p);
    }
    // A failed measurement is unknown, not free.
    let added = added_rtt(&servers[0]).ok();
    Ok((
        urls,
        Link {
            proxies,
            report: LinkReport {
                via: "proxy",
                spec: spec.to_string(),
                up: spec.up,
                down: spec.down,
                proxy_added_rtt_ns: added,
                servers: servers.iter().map(ToString::to_string).collect(),
            },
        },
    ))
}

/// What the proxy adds to a round trip with no delay configured: the median of 200 PING/PONGs
/// through a clear proxy minus the median of 200 direct ones.
///
/// # Errors
/// When the server cannot be reached.
pub fn added_rtt(server: &ServerUrl) -> Result<i64> {
    let clear = Proxy::start(server.host_port(), LinkSpec::default()).map_err(|e| Error::Io {
        context: "cannot start the link proxy".into(),
        source: e,
    })?;
    let via = ServerUrl {
        host: "127.0.0.1".into(),
        port: clear.addr.port(),
        auth: server.auth.clone(),
        tls: server.tls,
        tls_name: Some(server.tls_name().to_string()),
    };
    let median = |url: &ServerUrl| -> Result<u64> {
        let mut c =
            crate::engine::conn::connect_for_check(url, "msgbench-link-calibration", DIAL_TIMEOUT)?;
        let mut rtts = c.ping_rtts(200, DIAL_TIMEOUT)?;
        c.shared.close();
        rtts.sort();
        Ok(rtts[rtts.len() / 2].as_nanos() as u64)
    };
    let direct = median(server)?;
    let proxied = median(&via)?;
    Ok(proxied as i64 - direct as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(delay_us: u64, jitter_us: u64, rate: Option<u64>) -> Shape {
        Shape {
            delay: Duration::from_micros(delay_us),
            jitter: Duration::from_micros(jitter_us),
            rate_bps: rate,
        }
    }

    #[test]
    fn delay_and_jitter_stay_in_bounds_and_never_reorder() {
        // Chunks 5 ms apart: order never holds one back, so each delay is the drawn one.
        let mut s = Schedule::new(shape(2000, 1000, None), 42);
        let t0 = Instant::now();
        let (mut below, mut above) = (0, 0);
        for i in 0..2_000u64 {
            let now = t0 + Duration::from_millis(i * 5);
            let d = s.deliver_at(now, 100) - now;
            assert!(
                d >= Duration::from_micros(1000) && d <= Duration::from_micros(3000),
                "{d:?}"
            );
            below += u32::from(d < Duration::from_micros(1500));
            above += u32::from(d > Duration::from_micros(2500));
        }
        // Uniform over ±1 ms: about a quarter of draws in each outer half-millisecond.
        assert!(below > 300 && above > 300, "{below} {above}");
        // Chunks 10 µs apart: jitter would reorder them; the schedule holds them in order.
        let mut s = Schedule::new(shape(2000, 1000, None), 7);
        let mut last = t0;
        for i in 0..10_000u64 {
            let now = t0 + Duration::from_micros(i * 10);
            let at = s.deliver_at(now, 100);
            assert!(at >= last, "chunk {i} would overtake the one before it");
            assert!(at - now >= Duration::from_micros(1000));
            last = at;
        }
    }

    #[test]
    fn a_rate_cap_spaces_chunks_by_their_size() {
        // 8 Mbit/s is 1 byte per µs: 1,000-byte chunks read at once leave 1 ms apart.
        let mut s = Schedule::new(shape(0, 0, Some(8_000_000)), 1);
        let now = Instant::now();
        let times: Vec<Instant> = (0..5).map(|_| s.deliver_at(now, 1000)).collect();
        for w in times.windows(2) {
            assert_eq!(w[1] - w[0], Duration::from_millis(1));
        }
        assert_eq!(times[0] - now, Duration::from_millis(1));
    }

    #[test]
    fn the_proxy_forwards_both_ways_with_the_configured_delay() {
        // An echo server behind a proxy with 5 ms each way: a round trip takes at least 10 ms.
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let echo_addr = echo.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = echo.accept().unwrap();
            let mut buf = [0u8; 1024];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 || s.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        });
        let spec = LinkSpec::parse("delay=5ms").unwrap();
        let proxy = Proxy::start(echo_addr.to_string(), spec).unwrap();
        let mut c = TcpStream::connect(proxy.addr).unwrap();
        c.set_nodelay(true).unwrap();
        let mut rtts = Vec::new();
        for i in 0..20u8 {
            let t = Instant::now();
            c.write_all(&[i; 10]).unwrap();
            let mut got = [0u8; 10];
            c.read_exact(&mut got).unwrap();
            assert_eq!(got, [i; 10]);
            rtts.push(t.elapsed());
        }
        rtts.sort();
        assert!(rtts[0] >= Duration::from_millis(10), "{rtts:?}");
        drop(proxy);
        // Once the proxy is gone, so is the connection through it.
        let mut buf = [0u8; 1];
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert!(matches!(c.read(&mut buf), Ok(0) | Err(_)));
    }
}
