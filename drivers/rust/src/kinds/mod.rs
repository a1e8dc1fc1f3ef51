//! The four scenario kinds. Each one connects and sets up in `prepare` (before `ready`: nothing
//! measured happens there), then runs from the instant `start` was read.

pub mod js_pub;
pub mod latency;
pub mod pubsub;
pub mod request;
pub mod subscriber;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::control::{DriverError, Stop};
use crate::errors::ErrorCounts;
use crate::meter::Meter;
use crate::protocol::{ErrorKind, RunResult, Scenario, PROTOCOL};

/// What every kind gets.
#[derive(Clone)]
pub struct Ctx {
    pub scn: Arc<Scenario>,
    pub errors: Arc<ErrorCounts>,
    pub stop: Arc<Stop>,
}

impl Ctx {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.scn.timeout_ms)
    }

    pub fn warmup_ns(&self) -> u64 {
        self.scn.warmup_ms.saturating_mul(1_000_000)
    }

    pub fn length(&self) -> Length {
        match (self.scn.msgs, self.scn.duration_ms) {
            (Some(n), _) => Length::Count(n),
            (None, Some(ms)) => Length::For(Duration::from_millis(ms)),
            // `validate` rejects this; an empty run is the harmless reading.
            (None, None) => Length::Count(0),
        }
    }
}

/// How long a sender goes on: `msgs` per sender, or for `duration_ms`.
#[derive(Debug, Clone, Copy)]
pub enum Length {
    Count(u64),
    For(Duration),
}

impl Length {
    pub fn msgs(self) -> Option<u64> {
        match self {
            Length::Count(n) => Some(n),
            Length::For(_) => None,
        }
    }

    pub fn duration(self) -> Option<Duration> {
        match self {
            Length::Count(_) => None,
            Length::For(d) => Some(d),
        }
    }
}

/// Checks what the schema cannot: the combination of fields. An unknown kind is `unsupported`.
pub fn validate(scn: &Scenario) -> Result<(), DriverError> {
    let usage = |m: &str| Err(DriverError::new(ErrorKind::Usage, m));
    if scn.kind_of_line != "scenario" {
        return usage("the first line must be the scenario");
    }
    if scn.protocol != PROTOCOL {
        return Err(DriverError::new(
            ErrorKind::Unsupported,
            format!(
                "protocol {:?} (this driver speaks {PROTOCOL})",
                scn.protocol
            ),
        ));
    }
    if !matches!(
        scn.kind.as_str(),
        "pubsub" | "latency" | "request" | "js_pub"
    ) {
        return Err(DriverError::new(
            ErrorKind::Unsupported,
            format!("scenario kind {:?} is not supported", scn.kind),
        ));
    }
    match (scn.msgs, scn.duration_ms) {
        (Some(0), _) | (_, Some(0)) => return usage("msgs and duration_ms must be at least 1"),
        (Some(_), None) | (None, Some(_)) => {}
        _ => return usage("exactly one of msgs and duration_ms must be set"),
    }
    if !scn.rate.is_finite() || scn.rate < 0.0 {
        return usage("rate must be a finite number >= 0");
    }
    if scn.pubs == 0 || scn.in_flight == 0 || scn.timeout_ms == 0 || scn.connect_timeout_ms == 0 {
        return usage("pubs, in_flight, timeout_ms and connect_timeout_ms must be at least 1");
    }
    if scn.subject.is_empty() {
        return usage("the scenario has no subject");
    }
    if scn.kind == "latency" && scn.rate <= 0.0 {
        return usage("latency needs a rate > 0");
    }
    if scn.kind == "js_pub" && scn.js.is_none() {
        return usage("js_pub needs js: {stream, mode}");
    }
    Ok(())
}

/// A kind, connected and ready to run.
pub enum Prepared {
    PubSub(pubsub::PubSub),
    /// Boxed: it holds a `Subscriber` beside its clients, several times the others' size.
    Latency(Box<latency::Latency>),
    Request(request::Request),
    JsPub(js_pub::JsPub),
}

impl Prepared {
    /// Connects and sets up for `ctx.scn.kind` (already validated).
    pub async fn new(ctx: Ctx) -> Result<Self, DriverError> {
        Ok(match ctx.scn.kind.as_str() {
            "pubsub" => Prepared::PubSub(pubsub::PubSub::prepare(ctx).await?),
            "latency" => Prepared::Latency(Box::new(latency::Latency::prepare(ctx).await?)),
            "request" => Prepared::Request(request::Request::prepare(ctx).await?),
            "js_pub" => Prepared::JsPub(js_pub::JsPub::prepare(ctx).await?),
            other => {
                return Err(DriverError::new(
                    ErrorKind::Unsupported,
                    format!("scenario kind {other:?} is not supported"),
                ))
            }
        })
    }

    /// What `ready.client.notes` says about how the library is used.
    pub fn notes(&self) -> String {
        match self {
            Prepared::PubSub(k) => k.notes(),
            Prepared::Latency(k) => k.notes(),
            Prepared::Request(k) => k.notes(),
            Prepared::JsPub(k) => k.notes(),
        }
    }

    pub fn meter(&self) -> Arc<Meter> {
        match self {
            Prepared::PubSub(k) => k.meter.clone(),
            Prepared::Latency(k) => k.meter.clone(),
            Prepared::Request(k) => k.meter.clone(),
            Prepared::JsPub(k) => k.meter.clone(),
        }
    }

    /// Runs from `start` (when `start` was read) to the end, drained.
    pub async fn run(self, start: Instant) -> RunResult {
        match self {
            Prepared::PubSub(k) => k.run(start).await,
            Prepared::Latency(k) => (*k).run(start).await,
            Prepared::Request(k) => k.run(start).await,
            Prepared::JsPub(k) => k.run(start).await,
        }
    }
}

/// What one publishing client did.
#[derive(Debug, Clone, Copy, Default)]
pub struct PubOutcome {
    pub sent: u64,
    pub bytes: u64,
    pub first: Option<Instant>,
    pub last: Option<Instant>,
}

impl PubOutcome {
    /// Seconds from the first send to the last (0 when nothing was sent).
    pub fn seconds(&self) -> f64 {
        match (self.first, self.last) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        }
    }
}

/// Seconds from `start` to `last` (0 when nothing happened).
pub fn span_from(start: Instant, last: Option<Instant>) -> f64 {
    last.map_or(0.0, |l| l.saturating_duration_since(start).as_secs_f64())
}

/// Joins a task; a panic in it is a bug in this driver, reported as such.
pub async fn join<T>(h: tokio::task::JoinHandle<T>) -> T {
    match h.await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("a driver task was cancelled: {e}"),
    }
}
