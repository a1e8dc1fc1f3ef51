//! A stream's configuration as msgbench asks for it or finds it, how two differ, and how a run
//! comes by its stream: found as it is, or created with the settings asked.

use serde::{Deserialize, Serialize};

/// A stream's configuration, as far as a benchmark sets or checks it: what a run asks to
/// create, or what it found (read from the server's reply, other fields ignored). Fields left at
/// their zero value are not sent, so the server's defaults apply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
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
    /// Values kept per subject (a bucket's history); 0 for no limit.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_msgs_per_subject: i64,
    /// Accept atomic batches (`Nats-Batch-*` headers).
    #[serde(skip_serializing_if = "is_false")]
    pub allow_atomic: bool,
    /// `async` to have writes reach the file in the background, after their acknowledgement;
    /// empty for the server's default (not sent).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub persist_mode: String,
    /// Accept fast batches (reply subjects ending `.$FI`; JetStream API level 4).
    #[serde(skip_serializing_if = "is_false")]
    pub allow_batched: bool,
    /// Answer direct gets (`$JS.API.DIRECT.GET.…`), as buckets do.
    #[serde(skip_serializing_if = "is_false")]
    pub allow_direct: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_rollup_hdrs: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub deny_delete: bool,
    /// `limits`, `interest` or `workqueue`; msgbench creates `limits` (the default) only, but
    /// a stream it finds may remove messages by the others.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub retention: String,
    /// Message and age limits of a stream found; msgbench sets neither.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_msgs: i64,
    /// Nanoseconds.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_age: i64,
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &i64) -> bool {
    *n == 0
}

#[allow(clippy::trivially_copy_pass_by_ref)]
pub(super) fn is_false(b: &bool) -> bool {
    !*b
}

impl StreamConfig {
    /// Whether a limit may remove messages the run stored, so the stream need not grow by
    /// what was acknowledged.
    pub fn limited(&self) -> bool {
        self.max_bytes >= 0
            || self.max_msgs > 0
            || self.max_age > 0
            || self.max_msgs_per_subject > 0
            || !matches!(self.retention.as_str(), "" | "limits")
    }

    /// How `found` differs from this configuration, field by field, in the settings msgbench
    /// sets ("storage file (asked memory)"); empty when it is the same stream.
    pub fn differences(&self, found: &StreamConfig) -> Vec<String> {
        let mut out = Vec::new();
        let mut check = |field: &str, has: String, asked: String| {
            if has != asked {
                out.push(format!("{field} {has} (asked {asked})"));
            }
        };
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v.join(",")
        };
        check("subjects", sorted(&found.subjects), sorted(&self.subjects));
        check("storage", found.storage.clone(), self.storage.clone());
        check(
            "num_replicas",
            found.num_replicas.to_string(),
            self.num_replicas.to_string(),
        );
        check(
            "max_bytes",
            found.max_bytes.to_string(),
            self.max_bytes.to_string(),
        );
        check("discard", found.discard.clone(), self.discard.clone());
        // The server reports no persist mode for its default.
        let persist = |m: &str| {
            if m.is_empty() {
                "default".to_string()
            } else {
                m.to_string()
            }
        };
        check(
            "persist_mode",
            persist(&found.persist_mode),
            persist(&self.persist_mode),
        );
        // A value msgbench does not set is the server's default, whatever it reports.
        let per_subject = |n: i64| if n <= 0 { -1 } else { n };
        check(
            "max_msgs_per_subject",
            per_subject(found.max_msgs_per_subject).to_string(),
            per_subject(self.max_msgs_per_subject).to_string(),
        );
        out.extend(
            self.lacks(found)
                .iter()
                .map(|f| format!("{f} false (asked true)")),
        );
        out
    }

    /// The features this configuration asks for that `found` lacks (atomic batches, direct
    /// gets): a run needs them even from a stream it uses as it is. One the stream adds does no
    /// harm.
    pub fn lacks(&self, found: &StreamConfig) -> Vec<&'static str> {
        [
            ("allow_atomic", found.allow_atomic, self.allow_atomic),
            ("allow_batched", found.allow_batched, self.allow_batched),
            ("allow_direct", found.allow_direct, self.allow_direct),
            (
                "allow_rollup_hdrs",
                found.allow_rollup_hdrs,
                self.allow_rollup_hdrs,
            ),
            ("deny_delete", found.deny_delete, self.deny_delete),
        ]
        .into_iter()
        .filter(|(_, has, asked)| *asked && !*has)
        .map(|(field, _, _)| field)
        .collect()
    }
}

/// How a run comes by its stream: [`super::Api::open_stream`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// No stream setting was given: an existing stream is used as it is; a missing one is
    /// created with msgbench's defaults.
    AsFound,
    /// Settings were given (or `--create`): the stream is created with them, or one that
    /// exists must have them.
    Create,
}

/// A stream as a run opened it: its configuration as the server has it, and whether the run
/// found it there rather than created it.
#[derive(Debug, Clone)]
pub struct Opened {
    pub config: StreamConfig,
    pub found: bool,
}
