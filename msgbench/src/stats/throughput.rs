//! Throughput: per-client rates from counts and first/last instants, and the aggregate of a set
//! of clients measured over the span from the earliest start to the latest end, as `nats bench`
//! does, so figures compare one to one.

use std::time::Instant;

use serde::Serialize;

/// Which side of the traffic a client is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Pub,
    Sub,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Pub => "pub",
            Role::Sub => "sub",
        }
    }
}

/// What one client did, as raw facts.
#[derive(Debug, Clone, Copy)]
pub struct ClientRun {
    pub role: Role,
    pub id: u32,
    pub msgs: u64,
    pub bytes: u64,
    /// First message sent or received.
    pub start: Option<Instant>,
    /// For a publisher, when the server confirmed it had everything; for a subscriber, the last
    /// message received.
    pub end: Option<Instant>,
}

impl ClientRun {
    pub fn seconds(&self) -> f64 {
        match (self.start, self.end) {
            (Some(s), Some(e)) => e.saturating_duration_since(s).as_secs_f64(),
            _ => 0.0,
        }
    }
}

/// Counts over a span of time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Throughput {
    pub msgs: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub msgs_per_sec: f64,
    pub bytes_per_sec: f64,
}

impl Throughput {
    pub fn new(msgs: u64, bytes: u64, seconds: f64) -> Self {
        // A run too short to time (one message) has no meaningful rate; report 0, not infinity.
        let per = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        Self {
            msgs,
            bytes,
            seconds,
            msgs_per_sec: per(msgs),
            bytes_per_sec: per(bytes),
        }
    }

    /// The aggregate of `clients`: total counts over the span from the earliest start to the
    /// latest end.
    pub fn aggregate<'a>(clients: impl IntoIterator<Item = &'a ClientRun>) -> Self {
        let (mut msgs, mut bytes) = (0, 0);
        let (mut first, mut last): (Option<Instant>, Option<Instant>) = (None, None);
        for c in clients {
            msgs += c.msgs;
            bytes += c.bytes;
            if let Some(s) = c.start {
                first = Some(first.map_or(s, |f| f.min(s)));
            }
            if let Some(e) = c.end {
                last = Some(last.map_or(e, |l| l.max(e)));
            }
        }
        let seconds = match (first, last) {
            (Some(f), Some(l)) => l.saturating_duration_since(f).as_secs_f64(),
            _ => 0.0,
        };
        Self::new(msgs, bytes, seconds)
    }
}

/// Min, mean, max and population standard deviation of a set of rates (the spread `nats bench`
/// prints under its per-client lines).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spread {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
    pub stddev: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        let n = values.len() as f64;
        let avg = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - avg).powi(2)).sum::<f64>() / n;
        Self {
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            avg,
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            stddev: var.sqrt(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn spread_matches_hand_computation() {
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!((s.min, s.avg, s.max, s.stddev), (2.0, 5.0, 9.0, 2.0));
        assert_eq!(Spread::of(&[]), Spread::default());
        assert_eq!(Spread::of(&[3.0]).stddev, 0.0);
    }

    #[test]
    fn aggregate_spans_earliest_start_to_latest_end() {
        let t0 = Instant::now();
        let at = |ms| Some(t0 + Duration::from_millis(ms));
        let a = ClientRun {
            role: Role::Pub,
            id: 0,
            msgs: 100,
            bytes: 1000,
            start: at(0),
            end: at(500),
        };
        let b = ClientRun {
            role: Role::Pub,
            id: 1,
            msgs: 300,
            bytes: 3000,
            start: at(250),
            end: at(1000),
        };
        let t = Throughput::aggregate([&a, &b]);
        assert_eq!((t.msgs, t.bytes), (400, 4000));
        assert!((t.seconds - 1.0).abs() < 1e-9);
        assert!((t.msgs_per_sec - 400.0).abs() < 1e-6);
        assert!((b.seconds() - 0.75).abs() < 1e-9);
    }

    #[test]
    fn no_time_means_no_rate() {
        let t = Throughput::new(1, 16, 0.0);
        assert_eq!((t.msgs_per_sec, t.bytes_per_sec), (0.0, 0.0));
        let idle = ClientRun {
            role: Role::Sub,
            id: 0,
            msgs: 0,
            bytes: 0,
            start: None,
            end: None,
        };
        assert_eq!(Throughput::aggregate([&idle]).seconds, 0.0);
    }
}
