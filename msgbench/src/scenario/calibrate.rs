//! `msgbench calibrate`: this machine's latency floor, so every other figure can be read
//! against it. Three round trips, each one at a time, nothing else in flight:
//! - `tcp`: a loopback TCP echo inside this process, no server;
//! - `one_hop`: publish and receive one's own message through the server;
//! - `two_hop`: a request to an in-process responder and its reply, through the server.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::engine::conn::{self, Conn, ConnectSpec, Event, Flow};
use crate::engine::load::{self, RespondSpec};
use crate::error::{Error, ErrorCounts, Result};
use crate::result::ToolInfo;
use crate::server::Target;
use crate::stats::latency::new_histogram;
use crate::wire::proto;

pub const SCHEMA: &str = "msgbench.calibration/v1";

/// What `calibrate` measures with.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    pub conn: crate::options::conn::ConnOptions,
    pub samples: u64,
    pub size: usize,
}

/// The calibration document.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub schema: &'static str,
    pub tool: ToolInfo,
    pub started_at: String,
    pub server: CalServer,
    pub environment: Environment,
    /// With `--link`: the round trips above went through it; this is the link and what its
    /// proxy adds at zero delay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<crate::result::LinkReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CalServer {
    pub url: String,
    pub version: String,
    pub embedded: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Environment {
    pub cpus: usize,
    pub samples: u64,
    pub size: usize,
    /// Round trips, in nanoseconds.
    pub floor_ns: Floor,
}

#[derive(Debug, Clone, Serialize)]
pub struct Floor {
    pub tcp: RoundTrip,
    pub one_hop: RoundTrip,
    pub two_hop: RoundTrip,
}

#[derive(Debug, Clone, Serialize)]
pub struct RoundTrip {
    pub count: u64,
    pub min: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    #[serde(rename = "p99.9")]
    pub p999: u64,
    pub max: u64,
}

impl RoundTrip {
    fn of(h: &Histogram<u64>) -> Self {
        Self {
            count: h.len(),
            min: if h.is_empty() { 0 } else { h.min() },
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

const TIMEOUT: Duration = Duration::from_secs(5);

/// Measures the floor.
///
/// # Errors
/// When the server cannot be reached or a round trip does not complete within 5 s.
pub fn run(opts: &CalibrateOptions, target: &Target, stop: &AtomicBool) -> Result<Calibration> {
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let tcp = tcp_round_trips(opts.samples, opts.size, stop)?;
    let errors = Arc::new(ErrorCounts::default());
    let connect = |name: &str| {
        conn::connect(
            &ConnectSpec {
                servers: &target.urls,
                name,
                opts: &opts.conn.dial,
                stall_limit: TIMEOUT,
            },
            errors.clone(),
        )
    };
    let payload = vec![b'c'; opts.size];

    // One hop: our own message back through the server.
    let mut c = connect("msgbench-calibrate-1hop")?;
    let (version, url) = (c.info.version.clone(), c.url.to_string());
    let mut sub = Vec::new();
    proto::encode_sub(&mut sub, "msgbench.calibrate.hop", None, 1);
    c.subscribe_and_confirm(&sub, TIMEOUT)?;
    let mut frame = Vec::new();
    proto::encode_pub(&mut frame, b"msgbench.calibrate.hop", None, b"", &payload);
    let one_hop = nats_round_trips(c, &frame, opts.samples, stop)?;

    // Two hops: request and reply, with a responder of our own.
    let responder = connect("msgbench-calibrate-responder")?;
    let mut requester = connect("msgbench-calibrate-2hop")?;
    let mut sub = Vec::new();
    proto::encode_sub(&mut sub, "_INBOX.msgbench.calibrate", None, 1);
    requester.subscribe_and_confirm(&sub, TIMEOUT)?;
    let mut frame = Vec::new();
    proto::encode_pub(
        &mut frame,
        b"msgbench.calibrate.svc",
        Some(b"_INBOX.msgbench.calibrate"),
        b"",
        &payload,
    );
    let done = AtomicBool::new(false);
    let served = AtomicU64::new(0);
    let two_hop = std::thread::scope(|s| -> Result<_> {
        let Conn {
            mut reader, shared, ..
        } = responder;
        let mut cmd = Vec::new();
        proto::encode_sub(&mut cmd, "msgbench.calibrate.svc", None, 1);
        let ticket = shared
            .subscribe(&cmd)
            .map_err(|e| e.during("cannot subscribe"))?;
        let spec = RespondSpec {
            id: 0,
            delay: Duration::ZERO,
            max: None,
            until: None,
        };
        let (done_ref, served) = (&done, &served);
        let sh = shared.clone();
        let t = s.spawn(move || {
            load::respond(&mut reader, &sh, &spec, served, done_ref, stop);
            sh.close();
        });
        let result = match shared.confirm_subscribed(ticket, TIMEOUT) {
            Ok(()) => nats_round_trips(requester, &frame, opts.samples, stop),
            Err(e) => Err(e.error(&url)),
        };
        done.store(true, Ordering::Relaxed);
        shared.close();
        t.join().expect("responder panicked");
        result
    })?;

    let link = target.link.as_ref().map(|l| l.report.clone());
    Ok(Calibration {
        schema: SCHEMA,
        tool: ToolInfo::default(),
        started_at,
        link: link.clone(),
        server: CalServer {
            url: link.and_then(|l| l.servers.first().cloned()).unwrap_or(url),
            version,
            embedded: target.local,
        },
        environment: Environment {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            samples: opts.samples,
            size: opts.size,
            floor_ns: Floor {
                tcp: RoundTrip::of(&tcp),
                one_hop: RoundTrip::of(&one_hop),
                two_hop: RoundTrip::of(&two_hop),
            },
        },
    })
}

/// Loopback TCP echo, one message at a time.
fn tcp_round_trips(n: u64, size: usize, stop: &AtomicBool) -> Result<Histogram<u64>> {
    let io = |e| Error::io("loopback TCP calibration", e);
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io)?;
    let addr = listener.local_addr().map_err(io)?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut buf = vec![0u8; size.max(1)];
        loop {
            match s.read_exact(&mut buf) {
                Ok(()) => s.write_all(&buf)?,
                Err(_) => return Ok(()),
            }
        }
    });
    let mut client = TcpStream::connect(addr).map_err(io)?;
    client.set_nodelay(true).map_err(io)?;
    client.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
    let mut h = new_histogram();
    let mut buf = vec![7u8; size.max(1)];
    for _ in 0..n {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let t = Instant::now();
        client.write_all(&buf).map_err(io)?;
        client.read_exact(&mut buf).map_err(io)?;
        h.saturating_record((t.elapsed().as_nanos() as u64).max(1));
    }
    drop(client);
    let _ = echo.join();
    Ok(h)
}

/// Sends `frame`, waits for the one message it causes to come back, `n` times. The next frame
/// goes out right after the previous answer is parsed, from the reader's own thread.
fn nats_round_trips(c: Conn, frame: &[u8], n: u64, stop: &AtomicBool) -> Result<Histogram<u64>> {
    let Conn {
        mut reader,
        shared,
        url,
        ..
    } = c;
    let mut h = new_histogram();
    let (mut sent, mut at) = (0u64, None::<Instant>);
    let mut failed = false;
    let mut last_progress = Instant::now();
    reader.run(&shared, load::TICK, |event| {
        match event {
            Event::Msg(_) => {
                if let Some(t) = at.take() {
                    h.saturating_record((t.elapsed().as_nanos() as u64).max(1));
                    last_progress = Instant::now();
                }
            }
            Event::Tick => {
                if at.is_none() && sent < n && !stop.load(Ordering::Relaxed) {
                    at = Some(Instant::now());
                    failed |= shared.write_all(frame).is_err();
                    sent += 1;
                }
            }
        }
        let finished = at.is_none() && (sent >= n || stop.load(Ordering::Relaxed));
        if finished || failed || last_progress.elapsed() > TIMEOUT {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    shared.close();
    if failed || h.len() < sent.min(n) && !stop.load(Ordering::Relaxed) {
        return Err(Error::Connect {
            url: url.to_string(),
            reason: "a calibration round trip did not complete".into(),
        });
    }
    Ok(h)
}
