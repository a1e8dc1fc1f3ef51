//! Error counts by msgbench's error kinds, shared by every connection of a run.
//!
//! async-nats reports connection trouble through its event callback and operation failures
//! through error kinds; both are mapped here onto the names msgbench uses in `result.errors`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use async_nats::{Event, ServerError};

/// The kinds this driver can count, by their key in `result.errors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    SlowConsumer,
    Disconnected,
    Authorization,
    RequestTimeout,
    NoResponders,
    JsStreamNotFound,
    JsWrongLastSequence,
    JsOther,
    /// Anything async-nats reports that msgbench has no name for.
    Other,
}

const KINDS: [Kind; 9] = [
    Kind::SlowConsumer,
    Kind::Disconnected,
    Kind::Authorization,
    Kind::RequestTimeout,
    Kind::NoResponders,
    Kind::JsStreamNotFound,
    Kind::JsWrongLastSequence,
    Kind::JsOther,
    Kind::Other,
];

impl Kind {
    pub fn key(self) -> &'static str {
        match self {
            Kind::SlowConsumer => "slow_consumer",
            Kind::Disconnected => "disconnected",
            Kind::Authorization => "authorization",
            Kind::RequestTimeout => "request_timeout",
            Kind::NoResponders => "no_responders",
            Kind::JsStreamNotFound => "js_stream_not_found",
            Kind::JsWrongLastSequence => "js_wrong_last_sequence",
            Kind::JsOther => "js_other",
            Kind::Other => "other",
        }
    }
}

/// Counters, one per kind; cheap to bump from any task or callback.
#[derive(Debug, Default)]
pub struct ErrorCounts {
    counts: [AtomicU64; KINDS.len()],
}

impl ErrorCounts {
    pub fn add(&self, kind: Kind) {
        self.add_n(kind, 1);
    }

    pub fn add_n(&self, kind: Kind, n: u64) {
        let i = KINDS
            .iter()
            .position(|k| *k == kind)
            .expect("every kind is listed");
        self.counts[i].fetch_add(n, Ordering::Relaxed);
    }

    /// Counts what an async-nats connection event says went wrong; events that are not
    /// errors (connected, draining, closed, lame duck) count nothing.
    pub fn on_event(&self, event: &Event) {
        match event {
            Event::SlowConsumer(_) | Event::ServerError(ServerError::SlowConsumer(_)) => {
                self.add(Kind::SlowConsumer)
            }
            Event::Disconnected => self.add(Kind::Disconnected),
            Event::ServerError(ServerError::AuthorizationViolation) => {
                self.add(Kind::Authorization)
            }
            Event::ServerError(ServerError::Other(_)) | Event::ClientError(_) => {
                self.add(Kind::Other)
            }
            Event::Connected | Event::LameDuckMode | Event::Draining | Event::Closed => {}
        }
    }

    /// The non-zero counts, plus `always` at zero: the kinds a scenario measures are reported
    /// even when nothing went wrong, so "0 timeouts" reads as checked rather than absent.
    pub fn snapshot(&self, always: &[Kind]) -> BTreeMap<&'static str, u64> {
        KINDS
            .iter()
            .zip(&self.counts)
            .filter_map(|(k, c)| {
                let n = c.load(Ordering::Relaxed);
                (n > 0 || always.contains(k)).then_some((k.key(), n))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_keeps_nonzero_and_always() {
        let e = ErrorCounts::default();
        e.add(Kind::SlowConsumer);
        e.on_event(&Event::Disconnected);
        e.on_event(&Event::Connected);
        let s = e.snapshot(&[Kind::RequestTimeout]);
        assert_eq!(s.get("slow_consumer"), Some(&1));
        assert_eq!(s.get("disconnected"), Some(&1));
        assert_eq!(s.get("request_timeout"), Some(&0));
        assert_eq!(s.len(), 3);
    }
}
