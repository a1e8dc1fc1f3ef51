//! One node's copy of a replicated stream, read message by message: the stream's leadership
//! moved to that node, then every sequence asked of the stream's leader.
//!
//! Why this way: a message read (`STREAM.MSG.GET`) is answered by the stream's leader alone,
//! from its own store, while a direct get is answered by whichever replica's queue subscriber
//! the server picks, and its reply does not name the replica. So to read a chosen node's copy,
//! that node is made leader (`STREAM.LEADER.STEPDOWN` with a preferred placement, since
//! nats-server 2.11), and the read counts only if the same node leads before and after it.
//!
//! Each message is kept as a digest of its subject and of its payload (as the server encodes
//! it), never the message: comparing copies costs one small value per sequence.

use std::borrow::Cow;
use std::hash::Hasher;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::{codes, error_kind, Api, ApiError};
use crate::engine::conn::Answer;
use crate::error::{Error, ErrorKind, Result};

/// How many message reads are in flight at once.
const WINDOW: usize = 256;

/// How recently the leader must have heard from a replica to hand it the leadership safely
/// (the server's own limit is three heartbeats, three seconds).
const HEARD_WITHIN: Duration = Duration::from_secs(1);

/// A message as a digest: 32 bits of a hash of its subject, 32 of its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    pub subject: u32,
    pub payload: u32,
}

impl Digest {
    /// The digest of a message with `subject` and `payload`.
    pub fn of(subject: &[u8], payload: &[u8]) -> Self {
        Digest {
            subject: hash32(subject),
            payload: hash32(payload),
        }
    }
}

/// A fast hash that is the same for the same bytes throughout a process (the standard
/// library's, with its fixed keys), folded to 32 bits.
fn hash32(bytes: &[u8]) -> u32 {
    let mut h = std::hash::DefaultHasher::new();
    h.write(bytes);
    let x = h.finish();
    (x ^ (x >> 32)) as u32
}

/// How one sequence of a copy differs from the leader's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Differs {
    /// The leader holds a message there, the copy none.
    Missing,
    /// The copy holds a message the leader does not.
    Extra,
    Subject,
    Payload,
}

impl Differs {
    pub fn as_str(self) -> &'static str {
        match self {
            Differs::Missing => "missing",
            Differs::Extra => "extra",
            Differs::Subject => "subject",
            Differs::Payload => "payload",
        }
    }

    /// How a copy's message at one sequence (`None`: none) differs from the leader's.
    pub fn between(leader: Option<Digest>, copy: Option<Digest>) -> Option<Differs> {
        match (leader, copy) {
            (Some(_), None) => Some(Differs::Missing),
            (None, Some(_)) => Some(Differs::Extra),
            (Some(l), Some(c)) if l.subject != c.subject => Some(Differs::Subject),
            (Some(l), Some(c)) if l.payload != c.payload => Some(Differs::Payload),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct GetReply<'a> {
    #[serde(borrow)]
    message: Option<Stored<'a>>,
    error: Option<ApiError>,
}

#[derive(Deserialize)]
struct Stored<'a> {
    #[serde(borrow)]
    subject: Cow<'a, str>,
    #[serde(borrow, default)]
    data: Option<Cow<'a, str>>,
}

impl Api {
    /// The node leading `stream` as its leader answers `STREAM.INFO`; `None` while it has none.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason.
    pub fn stream_leader(&mut self, stream: &str) -> Result<Option<String>> {
        let reply = self.call(&format!("STREAM.INFO.{stream}"), b"")?;
        Ok((reply.pointer("/cluster/leader").and_then(Value::as_str))
            .filter(|l| !l.is_empty())
            .map(str::to_string))
    }

    /// Whether `STREAM.INFO` says `node` is a current replica of `stream` with no lag, heard
    /// from by the leader within the last second. Only then does the leader hand it the
    /// leadership: a leader that has not heard from a replica for three heartbeats (as a leader
    /// just elected may not have) passes it over, and may step down with no one to take over,
    /// leaving the stream without a leader for a whole election timeout (seconds).
    fn current(&mut self, stream: &str, node: &str) -> bool {
        let Ok(reply) = self.call(&format!("STREAM.INFO.{stream}"), b"") else {
            return false;
        };
        (reply.pointer("/cluster/replicas").and_then(Value::as_array))
            .into_iter()
            .flatten()
            .find(|r| r.get("name").and_then(Value::as_str) == Some(node))
            .is_some_and(|r| {
                r.get("current").and_then(Value::as_bool) == Some(true)
                    && r.get("lag").and_then(Value::as_u64).unwrap_or(0) == 0
                    && (r.get("active").and_then(Value::as_u64))
                        .is_some_and(|ns| ns < HEARD_WITHIN.as_nanos() as u64)
            })
    }

    /// Makes `node` lead `stream`, waiting until `STREAM.INFO` names it (asked every 50 ms),
    /// by `deadline`. Once the node is a current replica, the leader steps down in its favour;
    /// the raft group may elect another node instead, so it asks again while time is left.
    ///
    /// # Errors
    /// [`Error::JetStream`] naming the node that leads instead, or the server's reason.
    pub fn lead_from(&mut self, stream: &str, node: &str, deadline: Instant) -> Result<()> {
        let body = serde_json::json!({ "placement": { "preferred": node } }).to_string();
        let mut leader = self.stream_leader(stream)?;
        loop {
            if leader.as_deref() == Some(node) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::JetStream {
                    kind: ErrorKind::JsOther,
                    text: format!(
                        "leadership of stream {stream} did not move to {node} in time (leader: {})",
                        leader.as_deref().unwrap_or("none")
                    ),
                });
            }
            // A replica that is behind would lose the election and leave the stream without
            // a leader until the next one: wait for it to be current first.
            while leader.is_some() && !self.current(stream, node) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            if leader.is_some() {
                self.call(&format!("STREAM.LEADER.STEPDOWN.{stream}"), body.as_bytes())?;
            }
            // Until a leader is elected, and a little after, STREAM.INFO names none or the old.
            let asked = Instant::now();
            loop {
                std::thread::sleep(Duration::from_millis(50));
                leader = self.stream_leader(stream).ok().flatten();
                let settled = leader.is_some() && asked.elapsed() > Duration::from_millis(200);
                if leader.as_deref() == Some(node) || settled || Instant::now() >= deadline {
                    break;
                }
            }
        }
    }

    /// Reads sequences `first..=last` of `stream` from its leader's store, handing each to
    /// `each` with the digest of the message there (`None` where the store has none), by
    /// `deadline`. Returns how many messages were read.
    ///
    /// # Errors
    /// [`Error::JetStream`] when the leader answers anything but a message or "no message
    /// found" (or no one answers); [`Error::Connect`] when the connection fails or the deadline
    /// passes.
    pub fn read_copy(
        &mut self,
        stream: &str,
        first: u64,
        last: u64,
        deadline: Instant,
        mut each: impl FnMut(u64, Option<Digest>),
    ) -> Result<u64> {
        if self.conn.is_none() {
            self.conn = Some(self.dial_once()?);
        }
        let conn = self.conn.as_mut().expect("dialled above");
        let subject = format!("$JS.API.STREAM.MSG.GET.{stream}");
        let mut read = 0u64;
        let mut failed: Option<Error> = None;
        let mut unavailable: Option<String> = None;
        let mut num = itoa::Buffer::new();
        let asked = conn.requests_windowed(
            &subject,
            first..last.saturating_add(1),
            WINDOW,
            deadline,
            |seq, body| {
                body.extend_from_slice(b"{\"seq\":");
                body.extend_from_slice(num.format(seq).as_bytes());
                body.push(b'}');
            },
            |seq, headers, payload| {
                if headers.is_some_and(|h| h.starts_with(b"NATS/1.0 503")) {
                    failed = Some(Error::JetStream {
                        kind: ErrorKind::NoResponders,
                        text: format!("{subject}: no responders (the stream has no leader)"),
                    });
                    return Answer::Stop;
                }
                match serde_json::from_slice::<GetReply>(payload) {
                    Ok(GetReply {
                        message: Some(m), ..
                    }) => {
                        let data = m.data.as_deref().unwrap_or("");
                        each(seq, Some(Digest::of(m.subject.as_bytes(), data.as_bytes())));
                        read += 1;
                        Answer::Answered
                    }
                    Ok(GetReply { error: Some(e), .. }) if e.err_code == codes::NO_MESSAGE => {
                        each(seq, None);
                        Answer::Answered
                    }
                    // A node that has not yet heard of the new leader answers this as well as
                    // the leader does: wait for the leader's answer (or the deadline).
                    Ok(GetReply { error: Some(e), .. }) if e.err_code == codes::CLUSTER_NOT_AVAILABLE => {
                        unavailable = Some(format!("{} (err_code {})", e.description, e.err_code));
                        Answer::Passed
                    }
                    Ok(GetReply { error: Some(e), .. }) => {
                        failed = Some(Error::JetStream {
                            kind: error_kind(e.err_code, &e.description),
                            text: format!("{subject}: {} (err_code {})", e.description, e.err_code),
                        });
                        Answer::Stop
                    }
                    _ => {
                        failed = Some(Error::JetStream {
                            kind: ErrorKind::JsOther,
                            text: format!("{subject} answered sequence {seq} with neither a message nor an error"),
                        });
                        Answer::Stop
                    }
                }
            },
        );
        // A read that timed out after nodes said the cluster was unavailable says so.
        if let (Err(e), Some(u)) = (&asked, &unavailable) {
            return Err(Error::JetStream {
                kind: ErrorKind::JsOther,
                text: format!("{e}; a node answered: {u}"),
            });
        }
        asked?;
        match failed {
            Some(e) => Err(e),
            None => Ok(read),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_difference_is_told_and_equal_messages_are_not() {
        let a = Digest::of(b"s.1", b"AAAA");
        let other_subject = Digest::of(b"s.2", b"AAAA");
        let other_payload = Digest::of(b"s.1", b"AAAB");
        assert_eq!(Differs::between(Some(a), Some(a)), None);
        assert_eq!(Differs::between(None, None), None);
        assert_eq!(Differs::between(Some(a), None), Some(Differs::Missing));
        assert_eq!(Differs::between(None, Some(a)), Some(Differs::Extra));
        assert_eq!(
            Differs::between(Some(a), Some(other_subject)),
            Some(Differs::Subject)
        );
        assert_eq!(
            Differs::between(Some(a), Some(other_payload)),
            Some(Differs::Payload)
        );
    }
}
