//! The JetStream API as msgbench uses it: stream management over `$JS.API.…` request subjects,
//! and the reading of a publish acknowledgement. API errors become typed kinds, so a run can
//! count them and a setup failure can name them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::conn::Conn;
use crate::error::{Error, ErrorKind, Result};

/// The JetStream error codes msgbench tells apart (the server's `err_code`).
pub mod codes {
    pub const STREAM_NOT_FOUND: u64 = 10059;
    pub const WRONG_LAST_SEQUENCE: u64 = 10071;
}

/// A stream's configuration, as far as a benchmark sets it.
#[derive(Debug, Clone, Serialize)]
pub struct StreamConfig {
    pub name: String,
    pub subjects: Vec<String>,
    /// `file` or `memory`.
    pub storage: String,
    pub num_replicas: u32,
    /// -1 for no limit.
    pub max_bytes: i64,
    /// `old` or `new`: which side gives way when a limit is reached.
    pub discard: String,
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
    error: Option<ApiError>,
    state: Option<StreamState>,
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

/// One `$JS.API` call on a connection whose read loop has not started.
fn call(conn: &mut Conn, api: &str, body: &[u8], timeout: Duration) -> Result<InfoReply> {
    let subject = format!("$JS.API.{api}");
    let (headers, payload) = conn.request(&subject, body, timeout)?;
    if headers.is_some_and(|h| h.starts_with(b"NATS/1.0 503")) {
        return Err(Error::JetStream {
            kind: ErrorKind::NoResponders,
            text: "no responders: JetStream is not enabled on this server (start it with -js)"
                .into(),
        });
    }
    let reply: InfoReply = serde_json::from_slice(&payload).map_err(|e| Error::JetStream {
        kind: ErrorKind::JsOther,
        text: format!("{subject} answered with something that is not its JSON: {e}"),
    })?;
    match reply.error {
        Some(err) => Err(Error::JetStream {
            kind: error_kind(err.err_code, &err.description),
            text: format!("{subject}: {} (err_code {})", err.description, err.err_code),
        }),
        None => Ok(reply),
    }
}

/// Creates the stream, or leaves an existing one with the same name as it is.
///
/// # Errors
/// [`Error::JetStream`] with the server's reason.
pub fn ensure_stream(conn: &mut Conn, cfg: &StreamConfig, timeout: Duration) -> Result<()> {
    let body = serde_json::to_vec(cfg).expect("a stream config serialises");
    // The server treats a create with an identical config as a no-op; a different config under
    // the same name is its error ("stream name already in use"), passed on as is.
    call(conn, &format!("STREAM.CREATE.{}", cfg.name), &body, timeout).map(|_| ())
}

/// Removes every message from the stream.
///
/// # Errors
/// [`Error::JetStream`] with the server's reason.
pub fn purge_stream(conn: &mut Conn, name: &str, timeout: Duration) -> Result<()> {
    call(conn, &format!("STREAM.PURGE.{name}"), b"", timeout).map(|_| ())
}

/// Deletes the stream.
///
/// # Errors
/// [`Error::JetStream`] with the server's reason.
pub fn delete_stream(conn: &mut Conn, name: &str, timeout: Duration) -> Result<()> {
    call(conn, &format!("STREAM.DELETE.{name}"), b"", timeout).map(|_| ())
}

/// The stream's current state.
///
/// # Errors
/// [`Error::JetStream`] with the server's reason.
pub fn stream_state(conn: &mut Conn, name: &str, timeout: Duration) -> Result<StreamState> {
    call(conn, &format!("STREAM.INFO.{name}"), b"", timeout)?
        .state
        .ok_or_else(|| Error::JetStream {
            kind: ErrorKind::JsOther,
            text: format!("STREAM.INFO.{name} carried no state"),
        })
}

/// What a publish acknowledgement said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ack {
    /// Stored at this stream sequence; `duplicate` when the server recognised the message id.
    Stored {
        seq: u64,
        duplicate: bool,
    },
    Failed(ErrorKind),
}

#[derive(Deserialize)]
struct PubAck {
    #[serde(default)]
    seq: u64,
    #[serde(default)]
    duplicate: bool,
    error: Option<ApiError>,
}

/// Reads a PubAck payload.
pub fn read_ack(payload: &[u8]) -> Ack {
    match serde_json::from_slice::<PubAck>(payload) {
        Ok(PubAck { error: Some(e), .. }) => Ack::Failed(error_kind(e.err_code, &e.description)),
        Ok(PubAck { seq, duplicate, .. }) if seq > 0 => Ack::Stored { seq, duplicate },
        _ => Ack::Failed(ErrorKind::JsOther),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_acknowledgements_and_their_errors() {
        assert_eq!(
            read_ack(br#"{"stream":"S","seq":42}"#),
            Ack::Stored {
                seq: 42,
                duplicate: false
            }
        );
        assert_eq!(
            read_ack(br#"{"stream":"S","seq":7,"duplicate":true}"#),
            Ack::Stored {
                seq: 7,
                duplicate: true
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
}
