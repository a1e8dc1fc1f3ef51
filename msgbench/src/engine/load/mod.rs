//! The load loops: one publish loop and one subscribe loop, each parametrised by values (when to
//! stop, how to pace, what to send) rather than copied per mode.
//!
//! The publish loop never allocates: each message is one `extend_from_slice` of a prebuilt frame
//! plus an 8-byte sequence patch into a reused buffer. The buffer goes to the socket when it is
//! large or when nothing more is ready (the next message is not due yet), never on a timer.
//! The subscribe loop sees each message as a borrowed slice of the read buffer and records only
//! counters and the stamp.
//!
//! Each loop has its own file (`publish`, `subscribe`, `respond`), beside the prebuilt message
//! (`frame`) and the requester's in-flight window (`window`). This file holds the constants the
//! loops share and re-exports what callers use, so they see one `load` module.

use std::time::Duration;

mod frame;
mod publish;
mod respond;
mod subscribe;
mod window;

pub use frame::{Frame, Keys, StampKind};
pub(crate) use publish::precise_timers;
pub use publish::{publish, PubOutcome, PubSpec, COALESCE};
pub use respond::{respond, RespondSpec};
pub use subscribe::{
    subscribe, Recorder, Recovering, Staged, SubControl, SubOutcome, SubSpec, UNKNOWN,
};
pub use window::{Completion, GaveUp, GivenUp, Window};

/// Hand the buffer to the socket once it holds this much. Large enough that syscalls are rare
/// (one per ~2,000 small messages), small enough to stay in cache and keep the server's reads
/// full-sized.
pub const FLUSH_AT: usize = 64 * 1024;

/// How often an idle subscriber wakes to check its clocks.
pub const TICK: Duration = Duration::from_millis(50);

#[cfg(test)]
mod tests;
