//! The one process-wide stop: raised by SIGINT or SIGTERM (the binary's handler), read by the
//! run as its stop flag and by blocking waits inside connections (a write to a server that
//! stopped reading, a wait for a PONG or a reconnect), which give up at their next wake-up
//! instead of at their time limit, so an interrupted run writes its results at once.
//!
//! A run that is stopped for another reason (an agent told to stop by its coordinator, a
//! capacity probe that is over) passes a flag of its own down as `stop`; only a signal raises
//! this one.

use std::sync::atomic::{AtomicBool, Ordering};

/// Raised by the signal handler; never lowered.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// Whether the process was told to stop.
pub fn raised() -> bool {
    STOP.load(Ordering::Relaxed)
}
