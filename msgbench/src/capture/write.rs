//! The captured workload as a file: a header of comments saying what was captured, when, from
//! where, for how long and what the capturer missed; then the workload, one class per pattern,
//! each with comments on what was seen. Values are written as JSON, which YAML reads as its
//! flow style, so every string is quoted and escaped exactly.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::jetstream::Stream;
use super::learn::Learned;
use super::watch::{Tally, MAX_PENDING};
use crate::engine::conn::End;
use crate::engine::monitor::Endpoint;
use crate::error::ErrorCounts;
use crate::format::group;

/// What the capturer could not see or keep.
#[derive(Debug, Default)]
pub struct Missed {
    /// Errors that mean messages were not delivered to the capturer, by name.
    pub errors: Vec<(&'static str, u64)>,
    /// Times the connection was lost and made again.
    pub reconnects: usize,
    /// The connection ended for good before the capture's end.
    pub lost: bool,
    /// Patterns past the most classes a workload holds: name and messages.
    pub dropped: Vec<(String, u64)>,
}

impl Missed {
    pub fn of(errors: &ErrorCounts, end: End) -> Self {
        let (_, _, reconnects) = errors.connection_events();
        Self {
            errors: (errors.snapshot().into_iter())
                .filter(|(k, _)| super::lossy(*k))
                .map(|(k, n)| (k.as_str(), n))
                .collect(),
            reconnects: reconnects.len(),
            lost: matches!(end, End::Failed(_)),
            dropped: Vec::new(),
        }
    }

    /// Whether the file is thinner than the traffic.
    pub fn any(&self) -> bool {
        !self.errors.is_empty() || self.reconnects > 0 || self.lost || !self.dropped.is_empty()
    }

    fn lines(&self) -> Vec<String> {
        if !self.any() {
            return vec![
                "Missed: nothing (no slow consumer, no lost connection, every pattern written)."
                    .into(),
            ];
        }
        let mut out = vec!["MISSED: this file is thinner than the traffic was:".to_string()];
        for (name, n) in &self.errors {
            out.push(format!("  {name}: {}", group(*n)));
        }
        if self.reconnects > 0 {
            out.push(format!(
                "  the connection was lost and made again {} time(s): messages in between were \
                 not seen",
                self.reconnects
            ));
        }
        if self.lost {
            out.push("  the connection was lost for good before the end".into());
        }
        if !self.dropped.is_empty() {
            let msgs: u64 = self.dropped.iter().map(|(_, n)| n).sum();
            out.push(format!(
                "  {} patterns past the {} classes a workload holds, {} msgs: {}",
                self.dropped.len(),
                crate::plan::workload::MAX_CLASSES,
                group(msgs),
                (self.dropped.iter().take(8))
                    .map(|(p, n)| format!("{p} ({})", group(*n)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out
    }
}

/// Connections as the monitoring endpoint counts them, the capturer's own left out.
#[derive(Debug, Clone, Copy)]
pub struct Connections {
    pub count: u64,
    pub subscriptions: u64,
}

impl Connections {
    /// `/connz` of `endpoint`; `None` when it does not answer.
    pub fn read(endpoint: &Endpoint, tls: Option<Arc<rustls::ClientConfig>>) -> Option<Self> {
        let v = crate::engine::monitor::get_json_at(
            endpoint,
            tls,
            "/connz?limit=100000",
            std::time::Duration::from_secs(5),
        )?;
        let conns = v["connections"].as_array()?;
        let others = conns.iter().filter(|c| {
            !c["name"]
                .as_str()
                .unwrap_or("")
                .starts_with("msgbench-capture")
        });
        let (mut count, mut subscriptions) = (0, 0);
        for c in others {
            count += 1;
            subscriptions += c["subscriptions"].as_u64().unwrap_or(0);
        }
        Some(Self {
            count,
            subscriptions,
        })
    }
}

/// A stable stand-in for a name that must not leave the team: `h` and the first 8 hex digits of
/// its SHA-256, the same in every capture, so two redacted captures still compare.
pub fn hashed(s: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(s.as_bytes());
    format!(
        "h{}",
        d.iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    )
}

/// Everything the file says.
pub struct Capture<'a> {
    pub from: &'a str,
    pub subjects: &'a str,
    pub seconds: f64,
    pub tally: &'a Tally,
    pub streams: &'a [Stream],
    pub classes: Vec<Learned>,
    pub missed: &'a Missed,
    pub conns: Option<Connections>,
    pub cpu_ns: Option<u64>,
    pub redact: &'a dyn Fn(&str) -> String,
}

impl Capture<'_> {
    /// The workload file.
    pub fn text(&self) -> String {
        let mut head = vec![
            format!(
                "A workload captured by msgbench capture from {}, at {}, for {} s,",
                self.from,
                humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
                crate::format::grouped(self.seconds, 0)
            ),
            format!(
                "on subjects '{}': {} in {} (payloads are never kept).",
                self.subjects,
                crate::format::counted(self.tally.msgs, "message"),
                crate::format::counted(
                    (self.classes.len() + self.missed.dropped.len()) as u64,
                    "pattern"
                )
            ),
        ];
        head.extend(self.missed.lines());
        head.extend(self.not_replayed());
        head.extend(self.stream_lines());
        if let Some(c) = self.conns {
            head.push(format!(
                "Connections (the monitoring endpoint's, this capture's own left out): {}, with \
                 {} subscriptions in all ({} each on average).",
                group(c.count),
                group(c.subscriptions),
                crate::format::grouped(c.subscriptions as f64 / c.count.max(1) as f64, 1)
            ));
        }
        if let Some(ns) = self.cpu_ns {
            head.push(format!(
                "The capture's CPU: {:.2} s in all, {} per message.",
                ns as f64 / 1e9,
                crate::format::duration_ns(ns as f64 / self.tally.msgs.max(1) as f64)
            ));
        }
        head.push(
            "Replay: msgbench run FILE (--scale 2 doubles every rate; --time-warp F replays each \
             class's curve, F times faster)."
                .into(),
        );
        let mut out = String::new();
        for line in head {
            let _ = writeln!(out, "# {line}");
        }
        out.push_str("workload: capture\n");
        let _ = writeln!(out, "duration: {}s", self.seconds.round().max(1.0));
        out.push_str("classes:\n");
        for c in &self.classes {
            let _ = writeln!(out, "  {}:", c.name);
            for line in &c.comment {
                let _ = writeln!(out, "    # {line}");
            }
            for (k, v) in &c.keys {
                let _ = writeln!(out, "    {k}: {v}");
            }
        }
        out
    }

    /// What was seen and is not in any class.
    fn not_replayed(&self) -> Vec<String> {
        let t = self.tally;
        let mut parts = Vec::new();
        if !t.system.is_empty() {
            let sys: u64 = t.system.values().sum();
            parts.push(format!(
                "{} on $-subjects ({})",
                group(sys),
                (t.system.iter().take(8))
                    .map(|(k, n)| format!("{k} {}", group(*n)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if t.unmatched() > 0 {
            parts.push(format!(
                "{} on inboxes answering requests not seen (sent before the capture began)",
                group(t.unmatched())
            ));
        }
        if t.untimed > 0 {
            parts.push(format!(
                "{} requests untimed ({MAX_PENDING} were already awaiting answers)",
                group(t.untimed)
            ));
        }
        if t.unanswered() > 0 {
            parts.push(format!(
                "{} still awaiting an answer when the capture ended",
                crate::format::counted(t.unanswered() as u64, "request")
            ));
        }
        if parts.is_empty() {
            return Vec::new();
        }
        vec![format!("Not replayed: {}.", parts.join("; "))]
    }

    fn stream_lines(&self) -> Vec<String> {
        let r = self.redact;
        self.streams
            .iter()
            .map(|s| {
                let consumers = if s.consumers.is_empty() {
                    "no consumers".to_string()
                } else {
                    s.consumers
                        .iter()
                        .map(|c| {
                            format!(
                                "{} ({}, ack {})",
                                r(&c.name),
                                if c.push { "push" } else { "pull" },
                                c.ack
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                format!(
                    "Stream {}: {} storage, {} replica(s); {consumers}{}.",
                    r(&s.name),
                    s.storage,
                    s.replicas,
                    if s.is_store() {
                        " (a KV bucket's or object store's: its traffic is on $-subjects)"
                    } else {
                        ""
                    }
                )
            })
            .collect()
    }

    /// The line on stderr at the end.
    pub fn summary(&self, out: &Path) -> String {
        let mut s = format!(
            "captured {} in {} s: {} written to {}",
            crate::format::counted(self.tally.msgs, "message"),
            crate::format::grouped(self.seconds, 0),
            crate::format::counted_as(self.classes.len() as u64, "class", "classes"),
            out.display()
        );
        for c in &self.classes {
            let kind = c
                .keys
                .iter()
                .find(|(k, _)| *k == "scenario")
                .and_then(|(_, v)| v.as_str())
                .unwrap_or("?");
            let _ = write!(
                s,
                "\n  {} ({kind}): {}, {} msgs/s",
                c.name,
                c.pattern,
                crate::format::grouped(c.msgs as f64 / self.seconds, 1)
            );
        }
        if self.missed.any() {
            let _ = write!(s, "\n{}", self.missed.lines().join("\n"));
        }
        s
    }
}
