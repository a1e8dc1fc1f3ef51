//! Reading an agent's result document back into the model's types. The model is written, not
//! read, elsewhere (it holds `&'static str` names), so each field is read here by its JSON
//! pointer, and every failure names the agent and the field.

use std::time::Duration;

use serde_json::Value;

use super::MergeError;
use crate::result::{ClientStats, ClusterNode, ClusterReport, LinkReport, Rtt, ServerMeta, Shape};
use crate::stats::throughput::Role;

/// The values `server.auth` takes (`wire::url::Auth::method`).
const AUTH: &[&str] = &["none", "user_password", "token", "nkey", "creds"];
/// The values `delivery.accounting` takes.
pub(super) const ACCOUNTING: &[&str] = &[
    "exact",
    "count",
    "none",
    "stream_sequence",
    "acknowledged",
    "stored",
];

/// One agent's document, or a part of it, with where that part is for error messages.
#[derive(Clone)]
pub(super) struct Doc<'a> {
    pub agent: &'a str,
    pub v: &'a Value,
    /// The JSON pointer of `v` in the agent's document; empty for the document itself.
    pub at: String,
}

impl<'a> Doc<'a> {
    /// The value at a JSON pointer (`/delivery/sent`); absent and null read as `None`.
    pub fn get(&self, ptr: &str) -> Option<&'a Value> {
        self.v.pointer(ptr).filter(|v| !v.is_null())
    }

    /// The part at `ptr`, when there is one.
    pub fn part(&self, ptr: &str) -> Option<Doc<'a>> {
        self.get(ptr).map(|v| Doc {
            agent: self.agent,
            v,
            at: format!("{}{ptr}", self.at),
        })
    }

    /// The part at `ptr`, which must be there.
    pub fn need(&self, ptr: &str) -> Result<Doc<'a>, MergeError> {
        self.part(ptr).ok_or_else(|| self.bad(ptr, "present"))
    }

    pub fn bad(&self, field: &str, want: &'static str) -> MergeError {
        MergeError::BadField {
            agent: self.agent.to_string(),
            field: format!("{}{field}", self.at),
            want,
        }
    }

    pub fn u64(&self, ptr: &str) -> Result<u64, MergeError> {
        self.opt_u64(ptr)?
            .ok_or_else(|| self.bad(ptr, "an unsigned integer"))
    }

    /// Absent or null is `None`; present, it must be an unsigned integer.
    pub fn opt_u64(&self, ptr: &str) -> Result<Option<u64>, MergeError> {
        self.get(ptr)
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| self.bad(ptr, "an unsigned integer"))
            })
            .transpose()
    }

    /// A count that must be there but may be null (one the agent could not take).
    pub fn nullable_u64(&self, ptr: &str) -> Result<Option<u64>, MergeError> {
        if self.v.pointer(ptr).is_none() {
            return Err(self.bad(ptr, "an unsigned integer or null"));
        }
        self.opt_u64(ptr)
    }

    pub fn opt_i64(&self, ptr: &str) -> Result<Option<i64>, MergeError> {
        self.get(ptr)
            .map(|v| v.as_i64().ok_or_else(|| self.bad(ptr, "an integer")))
            .transpose()
    }

    pub fn u32(&self, ptr: &str) -> Result<u32, MergeError> {
        u32::try_from(self.u64(ptr)?).map_err(|_| self.bad(ptr, "a 32-bit unsigned integer"))
    }

    pub fn f64(&self, ptr: &str) -> Result<f64, MergeError> {
        self.opt_f64(ptr)?.ok_or_else(|| self.bad(ptr, "a number"))
    }

    pub fn opt_f64(&self, ptr: &str) -> Result<Option<f64>, MergeError> {
        self.get(ptr)
            .map(|v| v.as_f64().ok_or_else(|| self.bad(ptr, "a number")))
            .transpose()
    }

    pub fn bool(&self, ptr: &str) -> Result<bool, MergeError> {
        self.get(ptr)
            .and_then(Value::as_bool)
            .ok_or_else(|| self.bad(ptr, "a boolean"))
    }

    pub fn str(&self, ptr: &str) -> Result<&'a str, MergeError> {
        self.get(ptr)
            .and_then(Value::as_str)
            .ok_or_else(|| self.bad(ptr, "a string"))
    }

    /// An array; absent or null reads as empty.
    pub fn list(&self, ptr: &str) -> Result<Vec<Doc<'a>>, MergeError> {
        match self.get(ptr) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, v)| Doc {
                    agent: self.agent,
                    v,
                    at: format!("{}{ptr}/{i}", self.at),
                })
                .collect()),
            Some(_) => Err(self.bad(ptr, "an array")),
        }
    }

    /// A string that must be one of `known`, returned as the model's own `&'static str`.
    pub fn known(&self, ptr: &str, known: &[&'static str]) -> Result<&'static str, MergeError> {
        let value = self.str(ptr)?;
        known
            .iter()
            .find(|k| **k == value)
            .copied()
            .ok_or_else(|| self.unknown(ptr, value))
    }

    pub fn unknown(&self, field: &str, value: &str) -> MergeError {
        MergeError::UnknownValue {
            agent: self.agent.to_string(),
            field: format!("{}{field}", self.at),
            value: value.to_string(),
        }
    }

    pub fn role(&self, ptr: &str) -> Result<Role, MergeError> {
        match self.known(ptr, &["pub", "sub"])? {
            "pub" => Ok(Role::Pub),
            _ => Ok(Role::Sub),
        }
    }

    pub fn client(&self) -> Result<ClientStats, MergeError> {
        Ok(ClientStats {
            role: self.role("/role")?,
            id: self.u32("/id")?,
            msgs: self.u64("/msgs")?,
            bytes: self.u64("/bytes")?,
            seconds: self.f64("/seconds")?,
            msgs_per_sec: self.f64("/msgs_per_sec")?,
            bytes_per_sec: self.f64("/bytes_per_sec")?,
            missed: self.opt_u64("/missed")?,
        })
    }

    pub fn server(&self) -> Result<ServerMeta, MergeError> {
        Ok(ServerMeta {
            url: self.str("/url")?.to_string(),
            name: self.str("/name")?.to_string(),
            version: self.str("/version")?.to_string(),
            embedded: self.bool("/embedded")?,
            max_payload: usize::try_from(self.u64("/max_payload")?)
                .map_err(|_| self.bad("/max_payload", "a size"))?,
            auth: self.known("/auth", AUTH)?,
            config: None,
        })
    }

    pub fn rtt(&self) -> Result<Rtt, MergeError> {
        Ok(Rtt {
            a: self.u64("/a")?,
            b: self.u64("/b")?,
        })
    }

    pub fn cluster(&self) -> Result<ClusterReport, MergeError> {
        let nodes = self.list("/nodes")?;
        Ok(ClusterReport {
            nodes: nodes
                .iter()
                .map(|n| {
                    Ok(ClusterNode {
                        name: n.str("/name")?.to_string(),
                        url: n.str("/url")?.to_string(),
                    })
                })
                .collect::<Result<_, MergeError>>()?,
        })
    }

    pub fn link(&self) -> Result<LinkReport, MergeError> {
        let shape = |dir: &str| -> Result<Shape, MergeError> {
            Ok(Shape {
                delay: Duration::from_nanos(self.u64(&format!("/{dir}/delay_ns"))?),
                jitter: Duration::from_nanos(self.u64(&format!("/{dir}/jitter_ns"))?),
                rate_bps: self.opt_u64(&format!("/{dir}/rate_bps"))?,
            })
        };
        Ok(LinkReport {
            via: self.known("/via", &["proxy"])?,
            spec: self.str("/spec")?.to_string(),
            up: shape("up")?,
            down: shape("down")?,
            proxy_added_rtt_ns: self.opt_i64("/proxy_added_rtt_ns")?,
            servers: self
                .list("/servers")?
                .iter()
                .map(|s| s.str("").map(str::to_string))
                .collect::<Result<_, MergeError>>()?,
        })
    }
}
