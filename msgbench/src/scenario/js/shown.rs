//! How the reports show the JetStream sections read from a result file: the publishes'
//! acknowledgements reconciled with the stream, the replicas' agreement with their leader, and
//! what the consumers were owed and got.

use crate::result::{count_in, Row, Shown};

pub(super) const JETSTREAM: Shown = Shown {
    key: "jetstream",
    rows: |js| {
        // A stream that did not reconcile only by writes stored without an acknowledgement,
        // each explained, passes the run: the row says what the exit status said.
        let allowed = !reconciled(js)
            && js
                .get("unacked_allowed")
                .and_then(serde_json::Value::as_bool)
                == Some(true);
        let mut text = format!(
            "{} acked, {} stored",
            count_in(js, "acked"),
            count_in(js, "stored")
        );
        if allowed {
            let unacked = count_in(js, "unacked_stored");
            text.push_str(&format!(" ({unacked} without an acknowledgement)"));
        }
        vec![Row::judged(
            "JetStream acks",
            text,
            reconciled(js) || allowed,
            if allowed {
                "explained, allowed"
            } else {
                "reconciled"
            },
            "not reconciled",
        )]
    },
};

pub(super) const DURABILITY: Shown = Shown {
    key: "durability",
    rows: |d| {
        // Only where the replicas were read back. A copy that differs from its leader fails the
        // run as loss does (the section's exit), so the row judges by the same rule.
        let Some(divergent) = d.get("divergent").and_then(serde_json::Value::as_array) else {
            return Vec::new();
        };
        let text = if divergent.is_empty() {
            "every copy read agrees with its leader".to_string()
        } else {
            let n = (d.get("divergent_count").and_then(serde_json::Value::as_u64))
                .unwrap_or(divergent.len() as u64);
            format!(
                "{} from their leader",
                crate::format::counted(n, "difference")
            )
        };
        vec![Row::judged(
            "replicas",
            text,
            divergent.is_empty(),
            "agree",
            "divergent",
        )]
    },
};

pub(super) const CONSUMER: Shown = Shown {
    key: "consumer",
    rows: |c| {
        vec![Row::judged(
            "consumer",
            format!(
                "{} of {} consumed, {} redelivered",
                count_in(c, "consumed"),
                count_in(c, "expected"),
                count_in(c, "redelivered")
            ),
            reconciled(c),
            "reconciled",
            "not reconciled",
        )]
    },
};

fn reconciled(v: &serde_json::Value) -> bool {
    v.get("reconciled").and_then(serde_json::Value::as_bool) == Some(true)
}
