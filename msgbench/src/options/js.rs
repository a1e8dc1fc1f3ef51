//! Validated options of `js pub`: the stream to publish into, and the request/reply machinery's
//! options that publishing with acknowledgements is (a JetStream publish is a request whose
//! reply is the PubAck).

use crate::cli::JsPubArgs;
use crate::engine::jsapi::StreamConfig;
use crate::engine::stamp::SEQ_LEN;
use crate::error::{Error, Result};
use crate::options::conn::ConnOptions;
use crate::options::request::RequestOptions;
use crate::options::{check_subject, server_choice, Pace, Stop};

#[derive(Debug, Clone)]
pub struct JsPubOptions {
    /// One stream, or one per target subject in a write flood.
    pub streams: Vec<StreamConfig>,
    pub purge: bool,
    pub delete_after: bool,
    pub mode: &'static str,
    /// The publishing run itself.
    pub publish: RequestOptions,
}

impl JsPubOptions {
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn new(a: &JsPubArgs) -> Result<Self> {
        if a.size < SEQ_LEN {
            return Err(Error::flag(
                "--size",
                &a.size.to_string(),
                "must be at least 8 bytes (the sequence number)",
            ));
        }
        check_subject(&a.subject, false)
            .map_err(|why| Error::flag("--subject", &a.subject, why))?;
        // A stream name is one token: no dots, wildcards or spaces (it becomes part of API
        // subjects).
        if a.stream.is_empty()
            || a.stream
                .chars()
                .any(|c| c == '.' || c == '*' || c == '>' || c.is_whitespace() || c.is_control())
        {
            return Err(Error::flag(
                "--stream",
                &a.stream,
                "a stream name cannot be empty or contain '.', '*', '>' or spaces",
            ));
        }
        let window = match (a.mode.as_str(), a.max_in_flight) {
            (_, Some(0)) => return Err(Error::flag("--max-in-flight", "0", "must be at least 1")),
            ("sync", Some(n)) => {
                return Err(Error::flag(
                    "--max-in-flight",
                    &n.to_string(),
                    "applies to --mode async (sync waits for each acknowledgement)",
                ))
            }
            ("sync", None) => 1,
            (_, n) => usize::try_from(n.unwrap_or(256)).unwrap_or(usize::MAX),
        };
        if a.replicas == 0 || a.replicas > 5 {
            return Err(Error::flag(
                "--replicas",
                &a.replicas.to_string(),
                "must be 1 to 5",
            ));
        }
        let stop = match a.duration {
            Some(d) => Stop::For(d),
            None if a.msgs == 0 => return Err(Error::flag("--msgs", "0", "must be at least 1")),
            None => Stop::Count(a.msgs),
        };
        if a.streams == 0 || a.streams > 1000 {
            return Err(Error::flag(
                "--streams",
                &a.streams.to_string(),
                "must be 1 to 1000",
            ));
        }
        if a.streams > u64::from(a.clients) {
            return Err(Error::flag(
                "--streams",
                &a.streams.to_string(),
                format!(
                    "is more than --clients {}: a stream would get no publisher",
                    a.clients
                ),
            ));
        }
        let spread = (a.streams > 1).then_some(a.streams as u32);
        let conn = ConnOptions::new(&a.conn)?;
        conn.no_fault("js pub")?;
        let mode: &'static str = if a.mode == "sync" { "sync" } else { "async" };
        Ok(Self {
            streams: (0..a.streams)
                .map(|k| {
                    let (name, subject) = match spread {
                        Some(_) => (format!("{}_{k}", a.stream), format!("{}.{k}", a.subject)),
                        None => (a.stream.clone(), a.subject.clone()),
                    };
                    StreamConfig {
                        name,
                        subjects: vec![subject],
                        storage: a.storage.clone(),
                        num_replicas: a.replicas as u32,
                        max_bytes: a.max_bytes.map_or(-1, |b| b as i64),
                        discard: a.discard.clone(),
                    }
                })
                .collect(),
            purge: a.purge,
            delete_after: a.delete_after,
            mode,
            publish: RequestOptions {
                clients: a.clients,
                in_flight: window,
                pace: Pace::Unlimited,
                stop,
                size: a.size,
                subject: a.subject.clone(),
                responders: 0,
                delay: std::time::Duration::ZERO,
                timeout: a.timeout,
                allow_loss: a.allow_loss,
                server: server_choice(&a.conn)?,
                conn,
                output: (&a.out).into(),
                scenario: "js.pub",
                spread,
                js_bases: None,
            },
        })
    }

    /// The parameters as they go into a result.
    pub fn params(&self) -> serde_json::Value {
        let mut p = self.publish.params();
        p["mode"] = self.mode.into();
        p["streams"] = serde_json::to_value(&self.streams).expect("serialisable");
        p["purge"] = self.purge.into();
        p["delete_after"] = self.delete_after.into();
        p
    }
}
