//! The JetStream publishes a run gave up on and never had acknowledged: timed out, lost in
//! flight with a connection, or answered with an error. The verdict on the run's writes
//! matches each write stored without an acknowledgement with one of them, by the message
//! number and send time the write's payload carries; this is what it matches against.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::requester::Replies;
use crate::engine::load::{GaveUp, Window};
use crate::error::ErrorKind;
use crate::stats::latency::SendTimes;

/// A publish (a whole batch, in batch mode) given up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GivenUp {
    /// The request's number, per publisher: its first message is `request * batch`.
    pub request: u64,
    /// When it was sent, in ns since the Unix epoch; null where it is no longer known.
    pub sent_unix_ns: Option<u64>,
    /// `LostInFlight`, `RequestTimeout`, or the kind of error the server answered with.
    pub why: ErrorKind,
    /// For one lost in flight: when its requester saw the connection replaced, in ns from
    /// time zero.
    pub at_ns: Option<u64>,
}

/// One requester's publishes given up on, from its window and its reader's refusals; `zero`
/// is the run's time zero.
pub(crate) fn of(
    window: &Window,
    r: &Replies<'_>,
    times: &SendTimes,
    zero: Instant,
) -> Vec<GivenUp> {
    // The wall clock at time zero: send times are kept as instants, payloads carry wall time.
    let zero_unix_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        .saturating_sub(zero.elapsed().as_nanos() as u64);
    let unix = |t: Instant| zero_unix_ns + t.saturating_duration_since(zero).as_nanos() as u64;
    let mut all: Vec<GivenUp> = window
        .given_up()
        .into_iter()
        .map(|(request, g)| {
            let (why, at_ns) = match g.why {
                GaveUp::TimedOut => (ErrorKind::RequestTimeout, None),
                GaveUp::Abandoned { at } => (
                    ErrorKind::LostInFlight,
                    Some(at.saturating_duration_since(zero).as_nanos() as u64),
                ),
            };
            GivenUp {
                request,
                sent_unix_ns: Some(unix(g.sent)),
                why,
                at_ns,
            }
        })
        .collect();
    all.extend(r.refused.iter().map(|&(request, why)| GivenUp {
        request,
        sent_unix_ns: times.get(request).map(|ns| zero_unix_ns + ns),
        why,
        at_ns: None,
    }));
    all
}
