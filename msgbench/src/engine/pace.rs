//! When a load loop sends and when it stops: the two settings every publisher, requester and
//! gRPC client is given. They belong to the engine, which acts on them; options and plans only
//! choose them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::stats::schedule::RateSchedule;

/// When a load loop stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// After this many messages per publisher (or per subscriber, for `sub`).
    Count(u64),
    /// After this long.
    For(Duration),
}

impl Stop {
    /// The `msgs` and `duration_secs` a result's params record (one of them is null).
    pub fn as_params(self) -> (Option<u64>, Option<f64>) {
        match self {
            Stop::Count(n) => (Some(n), None),
            Stop::For(d) => (None, Some(d.as_secs_f64())),
        }
    }

    /// The run's length, when it is given as one.
    pub fn duration(self) -> Option<Duration> {
        match self {
            Stop::For(d) => Some(d),
            Stop::Count(_) => None,
        }
    }
}

/// How the publishers space their messages.
#[derive(Debug, Clone, PartialEq)]
pub enum Pace {
    /// Closed loop: the next message goes as soon as the previous one is in the buffer.
    Unlimited,
    /// Open loop: the run's message k is due when the schedule says (start + k / rate for a
    /// fixed `--rate`), whatever happened to earlier ones.
    Open(RateSchedule),
}

impl Pace {
    /// A fixed rate of `per_sec` for the whole run (0 = unlimited).
    pub fn rate(per_sec: f64) -> Self {
        if per_sec == 0.0 {
            Pace::Unlimited
        } else {
            Pace::Open(RateSchedule::fixed(per_sec))
        }
    }

    /// The schedule, for an open loop.
    pub fn schedule(&self) -> Option<&RateSchedule> {
        match self {
            Pace::Open(s) => Some(s),
            Pace::Unlimited => None,
        }
    }

    /// The rate a run is judged against: a fixed rate, or a schedule's mean; 0 when unlimited.
    pub fn target_rate(&self) -> f64 {
        self.schedule().map_or(0.0, RateSchedule::mean_rate)
    }

    /// The highest rate the run reaches; 0 when unlimited.
    pub fn peak_rate(&self) -> f64 {
        self.schedule().map_or(0.0, RateSchedule::peak_rate)
    }

    pub fn is_open(&self) -> bool {
        matches!(self, Pace::Open(_))
    }
}
