//! When a load loop sends and when it stops: the two settings every publisher, requester and
//! gRPC client is given. They belong to the engine, which acts on them; options and plans only
//! choose them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

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
}

/// How a publisher spaces its messages.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pace {
    /// Closed loop: the next message goes as soon as the previous one is in the buffer.
    Unlimited,
    /// Open loop: message i is due at start + i / rate, whatever happened to earlier ones.
    Rate { per_sec: f64 },
}
