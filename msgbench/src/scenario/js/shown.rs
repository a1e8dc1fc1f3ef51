//! How the reports show the JetStream sections read from a result file: the publishes'
//! acknowledgements reconciled with the stream, and what the consumers were owed and got.

use crate::result::{count_in, Row, Shown};

pub(super) const JETSTREAM: Shown = Shown {
    key: "jetstream",
    rows: |js| {
        vec![Row::judged(
            "JetStream acks",
            format!(
                "{} acked, {} stored",
                count_in(js, "acked"),
                count_in(js, "stored")
            ),
            reconciled(js),
            "reconciled",
            "not reconciled",
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
