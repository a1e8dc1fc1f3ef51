//! Requesters: the request/reply side of the load, shared by `request` (requests answered by
//! responders) and JetStream publishing (a publish with an acknowledgement is a request). How a
//! requester's requests go on the wire and what its reader makes of each reply
//! ([`requester`]), the fast batch publisher's closed loop ([`fast`]), the publishes given up
//! on ([`given_up`]), and what a JetStream run's requesters tell the verdict ([`JsAcks`]).

pub(crate) mod fast;
mod given_up;
pub(crate) mod requester;

pub(crate) use given_up::of as given_up_of;
pub use given_up::GivenUp;

use crate::stats::acks::AckSet;

/// For one stream of a JetStream run : every sequence acknowledged to its
/// publishers, how many acknowledgements were for a sequence already acknowledged, and how many
/// the server marked as duplicates of a stored message id.
#[derive(Debug, Clone)]
pub struct JsAcks {
    pub acked: AckSet,
    pub duplicate_acks: u64,
    /// Acknowledgements repeated to a publish already answered: counted, not a failure.
    pub repeated_acks: u64,
    pub deduplicated: u64,
    /// Its publishers' publishes given up on, and the publishers' global ids.
    pub given_up: Vec<(u32, GivenUp)>,
}
