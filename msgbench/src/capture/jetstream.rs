//! The streams and consumers a captured system has, read once from the JetStream API before
//! the watch begins (`STREAM.LIST`, then `CONSUMER.LIST` of each stream): the only requests
//! `capture` makes, and read-only ones. A publish into a stream's subjects becomes a `js pub`
//! class into that stream; its consumers are written beside it.

use std::time::Duration;

use serde_json::Value;

use crate::engine::conn::Dialing;
use crate::engine::jsapi::Api;
use crate::error::{Error, ErrorKind, Result};
use crate::options::subject_matches;
use crate::wire::url::ServerUrl;

/// Streams listed at most: a page of the API is 256; more would be a system of its own kind.
const MAX_STREAMS: usize = 1024;

/// A stream as the API lists it: what a replay needs to make one like it.
#[derive(Debug, Clone)]
pub struct Stream {
    pub name: String,
    pub subjects: Vec<String>,
    /// `file` or `memory`.
    pub storage: String,
    pub replicas: u64,
    pub consumers: Vec<Consumer>,
}

/// A consumer of a stream: pull or push, and how it acknowledges.
#[derive(Debug, Clone)]
pub struct Consumer {
    pub name: String,
    pub push: bool,
    pub ack: String,
}

impl Stream {
    /// Whether a message on `subject` goes into this stream.
    pub fn takes(&self, subject: &str) -> bool {
        self.subjects.iter().any(|f| subject_matches(f, subject))
    }

    /// A KV bucket's or an object store's own stream: its traffic is on `$`-subjects, which
    /// the capture counts but does not replay.
    pub fn is_store(&self) -> bool {
        self.name.starts_with("KV_") || self.name.starts_with("OBJ_")
    }
}

/// Every stream, with its consumers; empty where JetStream is not enabled.
///
/// # Errors
/// A connection that fails, or an API answer that is not one.
pub fn read(servers: &[ServerUrl], dial: &Dialing, timeout: Duration) -> Result<Vec<Stream>> {
    let mut api = Api::connect(servers, "msgbench-capture-api", dial, timeout)?;
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let page = match api.call_json("STREAM.LIST", format!("{{\"offset\":{offset}}}").as_bytes())
        {
            Ok(p) => p,
            // No JetStream on this server, or not for this account: nothing to read.
            Err(Error::JetStream {
                kind: ErrorKind::NoResponders,
                ..
            }) => break,
            Err(e) => return Err(e),
        };
        let listed = page["streams"].as_array().cloned().unwrap_or_default();
        let total = page["total"].as_u64().unwrap_or(0) as usize;
        for s in &listed {
            let c = &s["config"];
            let name = c["name"].as_str().unwrap_or_default().to_string();
            if name.is_empty() {
                continue;
            }
            out.push(Stream {
                consumers: consumers(&mut api, &name)?,
                subjects: strings(&c["subjects"]),
                storage: c["storage"].as_str().unwrap_or("file").to_string(),
                replicas: c["num_replicas"].as_u64().unwrap_or(1),
                name,
            });
        }
        offset += listed.len();
        if listed.is_empty() || offset >= total || out.len() >= MAX_STREAMS {
            break;
        }
    }
    api.close();
    Ok(out)
}

fn consumers(api: &mut Api, stream: &str) -> Result<Vec<Consumer>> {
    let page = api.call_json(&format!("CONSUMER.LIST.{stream}"), b"{\"offset\":0}")?;
    Ok(page["consumers"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| Consumer {
                    name: c["name"].as_str().unwrap_or_default().to_string(),
                    push: c["config"]["deliver_subject"].as_str().is_some(),
                    ack: c["config"]["ack_policy"]
                        .as_str()
                        .unwrap_or("explicit")
                        .to_string(),
                })
                .collect()
        })
        .unwrap_or_default())
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
