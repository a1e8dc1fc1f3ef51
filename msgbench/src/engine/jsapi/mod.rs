//! The JetStream API as msgbench uses it: stream management over `$JS.API.…` request subjects,
//! and the reading of a publish acknowledgement. API errors become typed kinds, so a run can
//! count them and a setup failure can name them.
//!
//! [`Api`] makes the calls on a connection of its own whose read loop never runs. Such a
//! connection cannot reconnect by itself (the reconnect lives in the read loop), so `Api` dials
//! again when a call finds its connection lost: the reconciliation after a run must reach a
//! server that was restarted while the load ran, or the run would lose what it measured.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::conn::{self, Conn, ConnectSpec, Dialing};
use crate::engine::{BACKOFF_FIRST, BACKOFF_MAX};
use crate::error::{Error, ErrorCounts, ErrorKind, Result};
use crate::wire::url::ServerUrl;

mod config;
mod copy;
mod msg;
pub use config::{Opened, Setup, StreamConfig};
pub use copy::{Differs, Digest};

/// The JetStream error codes msgbench tells apart (the server's `err_code`).
pub mod codes {
    pub const STREAM_NOT_FOUND: u64 = 10059;
    pub const WRONG_LAST_SEQUENCE: u64 = 10071;
    /// A message read found no message at the sequence.
    pub const NO_MESSAGE: u64 = 10037;
    /// "JetStream system temporarily unavailable": a node that knows of no leader for the group.
    pub const CLUSTER_NOT_AVAILABLE: u64 = 10008;
    /// "No suitable peers for placement": too few nodes for the replicas, or (with "peer
    /// offline") a node the meta leader has not heard from lately.
    pub const NO_SUITABLE_PEERS: u64 = 10005;
}

/// What the server reports of a stream's contents.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize)]
pub struct StreamState {
    pub messages: u64,
    pub bytes: u64,
    pub first_seq: u64,
    pub last_seq: u64,
}

#[derive(Debug, Deserialize)]
struct ApiError {
    #[serde(default)]
    err_code: u64,
    #[serde(default)]
    description: String,
}

#[derive(Debug, Deserialize)]
struct InfoReply {
    state: Option<StreamState>,
    config: Option<StreamConfig>,
}

/// The kind to count for a JetStream error.
pub fn error_kind(err_code: u64, description: &str) -> ErrorKind {
    match err_code {
        codes::STREAM_NOT_FOUND => ErrorKind::JsStreamNotFound,
        codes::WRONG_LAST_SEQUENCE => ErrorKind::JsWrongLastSequence,
        // A store refusing a message for size shows in the text only (its code is the generic
        // "store failed").
        _ if description.contains("maximum bytes") || description.contains("maximum messages") => {
            ErrorKind::JsStreamFull
        }
        _ => ErrorKind::JsOther,
    }
}

/// One `$JS.API` call on a connection whose read loop has not started: its reply, an error
/// reply included (see [`checked`]).
fn call_once(conn: &mut Conn, api: &str, body: &[u8], timeout: Duration) -> Result<Value> {
    let subject = format!("$JS.API.{api}");
    let (headers, payload) = conn.request(&subject, body, timeout)?;
    if headers.is_some_and(|h| h.starts_with(b"NATS/1.0 503")) {
        return Err(Error::JetStream {
            kind: ErrorKind::NoResponders,
            text: "no responders: JetStream is not enabled on this server (start it with -js)"
                .into(),
        });
    }
    serde_json::from_slice(&payload).map_err(|e| Error::JetStream {
        kind: ErrorKind::JsOther,
        text: format!("{subject} answered with something that is not its JSON: {e}"),
    })
}

/// A reply, or the error it carries.
fn checked(api: &str, reply: Value) -> Result<Value> {
    match reply.get("error").map(ApiError::deserialize) {
        Some(Ok(err)) => Err(Error::JetStream {
            kind: error_kind(err.err_code, &err.description),
            text: format!(
                "$JS.API.{api}: {} (err_code {})",
                err.description, err.err_code
            ),
        }),
        _ => Ok(reply),
    }
}

/// Whether an error reply is a state the cluster passes through rather than an answer: a
/// placement that found a peer offline, which a node whose heartbeats a busy host delayed is
/// for a moment (issue 42). Too few nodes for the replicas is an answer.
fn passing(reply: &Value) -> bool {
    (reply.get("error"))
        .and_then(|e| ApiError::deserialize(e).ok())
        .is_some_and(|e| {
            e.err_code == codes::NO_SUITABLE_PEERS && e.description.contains("offline")
        })
}

/// A reply read as the typed part msgbench checks.
fn info(reply: Value) -> Result<InfoReply> {
    InfoReply::deserialize(reply).map_err(|e| Error::JetStream {
        kind: ErrorKind::JsOther,
        text: format!("a JetStream API reply is not what it should be: {e}"),
    })
}

/// The JetStream API client of a run: msgbench's own calls (streams, consumers, their state),
/// on one connection that is dialled again whenever a call finds it lost.
pub struct Api {
    servers: Vec<ServerUrl>,
    name: String,
    dial: Dialing,
    /// How long one call may take, dialling again included.
    timeout: Duration,
    conn: Option<Conn>,
    /// Whether JetStream has answered a call: a "no responders" after that is JetStream coming
    /// back after a restart, worth waiting for; before it, JetStream is not enabled.
    answered: bool,
}

impl Api {
    /// Connects for API calls.
    ///
    /// # Errors
    /// As [`conn::connect`]: no server, or one that refuses the handshake.
    pub fn connect(
        servers: &[ServerUrl],
        name: &str,
        dial: &Dialing,
        timeout: Duration,
    ) -> Result<Self> {
        let mut api = Api {
            servers: servers.to_vec(),
            name: name.to_string(),
            // Its read loop never runs, so it cannot reconnect itself: a lost connection is
            // dialled again by `call`, and a write on a dead one fails at once.
            dial: Dialing {
                reconnect: false,
                ..*dial
            },
            timeout,
            conn: None,
            answered: false,
        };
        api.conn = Some(api.dial_once()?);
        Ok(api)
    }

    fn dial_once(&self) -> Result<Conn> {
        conn::connect(
            &ConnectSpec {
                servers: &self.servers,
                name: &self.name,
                opts: &self.dial,
                stall_limit: self.timeout,
            },
            Arc::new(ErrorCounts::default()),
        )
    }

    /// One call, within the timeout: a lost connection (or one that cannot be dialled yet) is
    /// dialled again with backoff and the call repeated; a JetStream that answered before and now
    /// has no responders, and a placement that finds a peer offline, are waited for. Every call msgbench makes may be repeated: creating a stream with the same
    /// configuration, purging, reading state and deleting leave the same end state.
    fn call(&mut self, api: &str, body: &[u8]) -> Result<Value> {
        let deadline = Instant::now() + self.timeout;
        let mut pause = BACKOFF_FIRST;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let tried = self.try_once(api, body, left.max(Duration::from_millis(1)));
            let retry = match &tried {
                Ok(reply) => {
                    self.answered = true;
                    passing(reply)
                }
                Err(Error::Connect { .. } | Error::Protocol { .. }) => {
                    if let Some(c) = self.conn.take() {
                        c.shared.close();
                    }
                    true
                }
                Err(Error::JetStream {
                    kind: ErrorKind::NoResponders,
                    ..
                }) => self.answered,
                Err(_) => false,
            };
            if !retry || Instant::now() + pause >= deadline {
                return tried.and_then(|reply| checked(api, reply));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(BACKOFF_MAX);
        }
    }

    /// Creates the stream, or leaves an existing one with the same name as it is, and returns
    /// its configuration as the server reports it.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason.
    pub fn ensure_stream(&mut self, cfg: &StreamConfig) -> Result<StreamConfig> {
        let body = serde_json::to_vec(cfg).expect("a stream config serialises");
        // The server treats a create with an identical config as a no-op; a different config
        // under the same name is its error ("stream name already in use"), passed on as is.
        let reply = info(self.call(&format!("STREAM.CREATE.{}", cfg.name), &body)?)?;
        Ok(reply.config.unwrap_or_else(|| cfg.clone()))
    }

    /// The stream `wanted` names, as `setup` says: one found is used as it is ([`Setup::AsFound`])
    /// or must have the settings asked ([`Setup::Create`]); one missing is created.
    ///
    /// # Errors
    /// [`Error::Usage`] naming each setting a stream found differs in, with `Setup::Create`;
    /// [`Error::JetStream`] with the server's reason.
    pub fn open_stream(&mut self, wanted: &StreamConfig, setup: Setup) -> Result<Opened> {
        let found = match self.call(&format!("STREAM.INFO.{}", wanted.name), b"") {
            Ok(reply) => info(reply)?.config,
            Err(Error::JetStream {
                kind: ErrorKind::JsStreamNotFound,
                ..
            }) => None,
            Err(e) => return Err(e),
        };
        let Some(found) = found else {
            return Ok(Opened {
                config: self.ensure_stream(wanted)?,
                found: false,
            });
        };
        let lacks = wanted.lacks(&found);
        if setup == Setup::AsFound && !lacks.is_empty() {
            return Err(Error::Usage(format!(
                "stream {} does not have {}, which this run needs; give another name, and \
                 msgbench creates that stream with it",
                wanted.name,
                lacks.join(", ")
            )));
        }
        let differ = wanted.differences(&found);
        if setup == Setup::Create && !differ.is_empty() {
            return Err(Error::Usage(format!(
                "stream {} exists with other settings: {}; give none of them to use it as it \
                 is, or another name",
                wanted.name,
                differ.join(", ")
            )));
        }
        Ok(Opened {
            config: found,
            found: true,
        })
    }

    /// Removes every message from the stream.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason.
    pub fn purge_stream(&mut self, name: &str) -> Result<()> {
        self.call(&format!("STREAM.PURGE.{name}"), b"").map(|_| ())
    }

    /// Deletes the stream; one that is not there (any more) is no error.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason.
    pub fn delete_stream(&mut self, name: &str) -> Result<()> {
        match self.call(&format!("STREAM.DELETE.{name}"), b"") {
            Err(Error::JetStream {
                kind: ErrorKind::JsStreamNotFound,
                ..
            }) => Ok(()),
            r => r.map(|_| ()),
        }
    }

    /// The stream's configuration and current state.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason.
    pub fn stream_info(&mut self, name: &str) -> Result<(StreamConfig, StreamState)> {
        let reply = info(self.call(&format!("STREAM.INFO.{name}"), b"")?)?;
        match (reply.config, reply.state) {
            (Some(c), Some(s)) => Ok((c, s)),
            _ => Err(Error::JetStream {
                kind: ErrorKind::JsOther,
                text: format!("STREAM.INFO.{name} carried no configuration or state"),
            }),
        }
    }

    /// The stream's current state, with the sequences inside its range that are gone
    /// (deleted, or removed by a limit such as a bucket's history), ascending.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason.
    pub fn stream_state_detailed(&mut self, name: &str) -> Result<(StreamState, Vec<u64>)> {
        #[derive(Deserialize)]
        struct Detailed {
            state: Option<DetailedState>,
        }
        #[derive(Deserialize)]
        struct DetailedState {
            #[serde(flatten)]
            state: StreamState,
            #[serde(default)]
            deleted: Vec<u64>,
        }
        let reply = self.call(
            &format!("STREAM.INFO.{name}"),
            br#"{"deleted_details":true}"#,
        )?;
        let d = Detailed::deserialize(reply).map_err(|e| Error::JetStream {
            kind: ErrorKind::JsOther,
            text: format!("STREAM.INFO.{name}: {e}"),
        })?;
        let mut st = d.state.ok_or_else(|| Error::JetStream {
            kind: ErrorKind::JsOther,
            text: format!("STREAM.INFO.{name} carried no state"),
        })?;
        st.deleted.sort_unstable();
        Ok((st.state, st.deleted))
    }

    /// The stream's current state.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason.
    pub fn stream_state(&mut self, name: &str) -> Result<StreamState> {
        info(self.call(&format!("STREAM.INFO.{name}"), b"")?)?
            .state
            .ok_or_else(|| Error::JetStream {
                kind: ErrorKind::JsOther,
                text: format!("STREAM.INFO.{name} carried no state"),
            })
    }

    /// Creates a consumer on `stream`.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason.
    pub fn create_consumer(&mut self, stream: &str, cfg: &ConsumerConfig) -> Result<()> {
        let body = serde_json::json!({ "stream_name": stream, "config": cfg, "action": "create" });
        let body = serde_json::to_vec(&body).expect("serialisable");
        self.call(&format!("CONSUMER.CREATE.{stream}.{}", cfg.name), &body)
            .map(|_| ())
    }

    /// Any other `$JS.API.<api>` call, with its reply as JSON (already checked for the
    /// server's error), dialled again and repeated as every call here is: a scenario with API
    /// needs of its own makes them through this.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason; [`Error::Connect`] when no server answers
    /// within the timeout.
    pub fn call_json(&mut self, api: &str, body: &[u8]) -> Result<Value> {
        self.call(api, body)
    }

    /// The stream's persist mode as the server has it: `default` or `async`.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason.
    pub fn persist_mode(&mut self, name: &str) -> Result<String> {
        let config = info(self.call(&format!("STREAM.INFO.{name}"), b"")?)?.config;
        Ok(config
            .map(|c| c.persist_mode)
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "default".into()))
    }

    /// The JetStream API level the server reports in its account info (`$JS.API.INFO`);
    /// 0 from a server older than API levels (before 2.11), which reports none.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason.
    pub fn api_level(&mut self) -> Result<u64> {
        let info = self.call("INFO", b"")?;
        Ok(info
            .pointer("/api/level")
            .and_then(Value::as_u64)
            .unwrap_or(0))
    }

    /// The version the server gave in its INFO.
    pub fn server_version(&self) -> Option<&str> {
        self.conn.as_ref().map(|c| c.info.version.as_str())
    }

    /// Deletes a consumer.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason.
    pub fn delete_consumer(&mut self, stream: &str, name: &str) -> Result<()> {
        self.call(&format!("CONSUMER.DELETE.{stream}.{name}"), b"")
            .map(|_| ())
    }

    /// One attempt: dials first when the connection was lost.
    fn try_once(&mut self, api: &str, body: &[u8], timeout: Duration) -> Result<Value> {
        if self.conn.is_none() {
            self.conn = Some(self.dial_once()?);
        }
        call_once(
            self.conn.as_mut().expect("dialled above"),
            api,
            body,
            timeout,
        )
    }

    /// Closes the connection.
    pub fn close(mut self) {
        if let Some(c) = self.conn.take() {
            c.shared.close();
        }
    }
}

/// A pull consumer as a benchmark makes it: named, starting at a sequence (or the stream's
/// first), acknowledging as told; an ordered one lives in memory and acknowledges nothing.
#[derive(Debug, Clone, Serialize)]
pub struct ConsumerConfig {
    pub name: String,
    /// `all` or `by_start_sequence`.
    pub deliver_policy: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_start_seq: Option<u64>,
    /// `explicit`, `all` or `none`.
    pub ack_policy: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ack_pending: Option<i64>,
    /// Pull requests the consumer keeps waiting at once.
    pub max_waiting: i64,
    /// The server removes the consumer after this long unused, in ns: a run that dies leaves
    /// nothing behind for long.
    pub inactive_threshold: u64,
    #[serde(skip_serializing_if = "config::is_false")]
    pub mem_storage: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_replicas: Option<u32>,
    /// Deliver only the messages of this subject (an object's chunks, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter_subject: Option<String>,
}

/// What the reply subject of a delivered JetStream message says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    /// Times the consumer has delivered this message (above 1: a redelivery).
    pub delivered: u64,
    pub stream_seq: u64,
    pub consumer_seq: u64,
    /// Messages the consumer has left to deliver after this one.
    pub pending: u64,
}

/// Reads `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>`, or the newer
/// form with a domain and an account hash after `ACK` and a random token at the end.
pub fn read_delivered(reply: &[u8]) -> Option<Delivered> {
    let rest = reply.strip_prefix(b"$JS.ACK.")?;
    let mut tokens = [&b""[..]; 12];
    let mut n = 0;
    for t in rest.split(|b| *b == b'.') {
        if n == tokens.len() {
            return None;
        }
        tokens[n] = t;
        n += 1;
    }
    // After "$JS.ACK.": 7 tokens in the old form, 9 or 10 in the new one.
    let at = match n {
        7 => 2,
        9 | 10 => 4,
        _ => return None,
    };
    let num = |t: &[u8]| std::str::from_utf8(t).ok()?.parse::<u64>().ok();
    Some(Delivered {
        delivered: num(tokens[at])?,
        stream_seq: num(tokens[at + 1])?,
        consumer_seq: num(tokens[at + 2])?,
        pending: num(tokens[at + 4])?,
    })
}

/// What a publish acknowledgement said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ack {
    /// Stored at this stream sequence; `duplicate` when the server recognised the message id;
    /// `batch` messages (an atomic batch's commit) ending at `seq`, or 0 for a single publish.
    Stored {
        seq: u64,
        duplicate: bool,
        batch: u64,
    },
    Failed(ErrorKind),
}

#[derive(Deserialize)]
struct PubAck {
    #[serde(default)]
    seq: u64,
    #[serde(default)]
    duplicate: bool,
    /// With an atomic batch's commit: the messages the batch stored.
    #[serde(default)]
    count: u64,
    error: Option<ApiError>,
}

/// Reads a PubAck payload.
pub fn read_ack(payload: &[u8]) -> Ack {
    match serde_json::from_slice::<PubAck>(payload) {
        Ok(PubAck { error: Some(e), .. }) => Ack::Failed(error_kind(e.err_code, &e.description)),
        Ok(PubAck {
            seq,
            duplicate,
            count,
            ..
        }) if seq > 0 => Ack::Stored {
            seq,
            duplicate,
            batch: count,
        },
        _ => Ack::Failed(ErrorKind::JsOther),
    }
}

/// The status code of a header block that starts with one (`NATS/1.0 404 …`).
pub fn status(headers: &[u8]) -> Option<u16> {
    let rest = headers.strip_prefix(b"NATS/1.0 ")?;
    let code = rest.get(..3)?;
    std::str::from_utf8(code).ok()?.parse().ok()
}

/// The kind to count for a reply whose headers carry a failure status; `None` for a plain
/// header block or an informational status.
pub fn status_kind(headers: &[u8]) -> Option<ErrorKind> {
    match status(headers)? {
        100..=299 => None,
        404 => Some(ErrorKind::JsNotFound),
        408 => Some(ErrorKind::RequestTimeout),
        409 => Some(ErrorKind::JsPullRejected),
        503 => Some(ErrorKind::NoResponders),
        _ => Some(ErrorKind::JsOther),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placement_that_found_a_peer_offline_is_waited_out_and_other_errors_are_answers() {
        let reply = |code: u64, text: &str| -> Value {
            serde_json::json!({"error": {"code": 500, "err_code": code, "description": text}})
        };
        let offline = reply(10005, "no suitable peers for placement, peer offline");
        assert!(passing(&offline));
        assert!(!passing(&reply(10005, "no suitable peers for placement")));
        assert!(!passing(&reply(10059, "stream not found")));
        assert!(!passing(&serde_json::json!({"config": {}})));
        let Err(Error::JetStream { kind, text }) = checked("STREAM.CREATE.s", offline) else {
            panic!("an error reply is an error");
        };
        assert_eq!(kind, ErrorKind::JsOther);
        assert!(text.contains("$JS.API.STREAM.CREATE.s") && text.contains("err_code 10005"));
    }

    #[test]
    fn reads_acknowledgements_and_their_errors() {
        assert_eq!(
            read_ack(br#"{"stream":"S","seq":42}"#),
            Ack::Stored {
                seq: 42,
                duplicate: false,
                batch: 0
            }
        );
        assert_eq!(
            read_ack(br#"{"stream":"S","seq":50,"batch":"b1","count":10}"#),
            Ack::Stored {
                seq: 50,
                duplicate: false,
                batch: 10
            }
        );
        assert_eq!(
            read_ack(br#"{"stream":"S","seq":7,"duplicate":true}"#),
            Ack::Stored {
                seq: 7,
                duplicate: true,
                batch: 0
            }
        );
        assert_eq!(
            read_ack(br#"{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"}}"#),
            Ack::Failed(ErrorKind::JsWrongLastSequence)
        );
        assert_eq!(
            read_ack(br#"{"error":{"code":503,"err_code":10077,"description":"maximum bytes exceeded"}}"#),
            Ack::Failed(ErrorKind::JsStreamFull)
        );
        assert_eq!(read_ack(b"not json"), Ack::Failed(ErrorKind::JsOther));
        assert_eq!(read_ack(b"{}"), Ack::Failed(ErrorKind::JsOther));
    }

    #[test]
    fn delivery_subjects_are_read_in_both_forms() {
        let want = Delivered {
            delivered: 1,
            stream_seq: 42,
            consumer_seq: 7,
            pending: 99,
        };
        assert_eq!(
            read_delivered(b"$JS.ACK.S.C.1.42.7.1700000000000000000.99"),
            Some(want)
        );
        assert_eq!(
            read_delivered(b"$JS.ACK._.ACCHASH.S.C.1.42.7.1700000000000000000.99.rnd"),
            Some(want)
        );
        assert_eq!(
            read_delivered(b"$JS.ACK.hub.ACCHASH.S.C.1.42.7.1700000000000000000.99"),
            Some(want)
        );
        assert_eq!(read_delivered(b"$JS.ACK.S.C.1.x.7.1.99"), None);
        assert_eq!(read_delivered(b"_INBOX.x.1"), None);
        assert_eq!(read_delivered(b"$JS.ACK.a.b.c.d.e.f.g.h.i.j.k.l.m"), None);
    }

    #[test]
    fn statuses_in_headers_become_kinds() {
        assert_eq!(
            status_kind(b"NATS/1.0 404 Message Not Found\r\n\r\n"),
            Some(ErrorKind::JsNotFound)
        );
        assert_eq!(
            status_kind(b"NATS/1.0 409 Consumer Deleted\r\n\r\n"),
            Some(ErrorKind::JsPullRejected)
        );
        assert_eq!(status_kind(b"NATS/1.0 100 Idle Heartbeat\r\n\r\n"), None);
        assert_eq!(status_kind(b"NATS/1.0\r\nNats-Stream: KV_b\r\n\r\n"), None);
        assert_eq!(status(b"NATS/1.0 408 Request Timeout\r\n"), Some(408));
    }
}
