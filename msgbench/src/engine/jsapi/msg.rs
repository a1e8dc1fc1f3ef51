//! One stored message read back by its stream sequence (`STREAM.MSG.GET`, answered by the
//! stream's leader from its store), for a verdict that must know whose a message is: its
//! payload, decoded from the API's base64.

use base64::Engine as _;
use serde::Deserialize;

use super::Api;
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
struct GetReply {
    message: Option<Stored>,
}

#[derive(Deserialize)]
struct Stored {
    #[serde(default)]
    data: Option<String>,
}

impl Api {
    /// The payload of the message at `seq` in `stream`.
    ///
    /// # Errors
    /// [`Error::JetStream`] with the server's reason (no message at `seq` among them), or a
    /// reply that carries no message or no base64 payload.
    pub fn stored_payload(&mut self, stream: &str, seq: u64) -> Result<Vec<u8>> {
        let body = format!("{{\"seq\":{seq}}}");
        let reply = self.call(&format!("STREAM.MSG.GET.{stream}"), body.as_bytes())?;
        let bad = |why: String| Error::JetStream {
            kind: ErrorKind::JsOther,
            text: format!("STREAM.MSG.GET.{stream} for sequence {seq}: {why}"),
        };
        let got = GetReply::deserialize(reply).map_err(|e| bad(e.to_string()))?;
        let data = got
            .message
            .ok_or_else(|| bad("no message in the reply".into()))?
            .data
            .unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| bad(format!("a payload that is not base64: {e}")))
    }
}
