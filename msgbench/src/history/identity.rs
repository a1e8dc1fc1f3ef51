//! What makes two runs comparable: the benchmark (what was run) and the testbed (what it ran
//! on). Runs are judged against each other only within one benchmark on one testbed.
//!
//! A benchmark is the SHA-256 of its typed plan with the run's own fields taken out, plus the
//! user's `--name`. The run's own fields are those that change from run to run without changing
//! what is measured: output files (`hist`), where the servers are (a CI job's server gets a new
//! port each time) and how to log in to them (files and names, not the load). Two servers that
//! differ are told apart by `--name`.
//!
//! A testbed's fingerprint is the machine: CPU model, logical cores, OS and architecture. The
//! kernel, the msgbench and server versions and the labels are recorded beside it but left out
//! of the fingerprint on purpose: an upgrade of the server or of msgbench, or a new commit, is
//! exactly the change `history check` exists to find, and a fingerprint that included them
//! would start a new, empty history at every one.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Plan keys that belong to one run, not to the benchmark, taken out at any depth.
const RUN_OWN: &[&str] = &[
    "hist",
    "server",
    "server_a",
    "server_b",
    "server_monitor",
    "nats_server",
    "context",
    "creds",
    "nkey",
    "user",
    "tls_ca",
    "tls_cert",
    "tls_key",
    "tls_server_name",
    "seed",
];

/// The benchmark a plan (as a result records it) and a `--name` make: 16 hex digits.
pub fn benchmark(plan: &Value, name: Option<&str>) -> String {
    let mut plan = plan.clone();
    strip(&mut plan);
    let mut h = Sha256::new();
    // serde_json's maps are sorted by key, so the text is canonical.
    h.update(plan.to_string().as_bytes());
    h.update([0]);
    h.update(name.unwrap_or("").as_bytes());
    hex16(&h.finalize())
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !RUN_OWN.contains(&k.as_str()));
            map.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

fn hex16(bytes: &[u8]) -> String {
    bytes[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// What a run ran on. `fingerprint` is made from the machine alone (see the module's header).
#[derive(Debug, Clone, Serialize)]
pub struct Testbed {
    pub cpu: String,
    pub cores: u64,
    pub os: String,
    pub arch: String,
    /// The kernel release, where the OS says (`/proc/sys/kernel/osrelease`); empty otherwise.
    pub kernel: String,
    pub msgbench: String,
    /// The server's version from its INFO; empty when the result has none (gRPC).
    pub server: String,
    pub labels: BTreeMap<String, String>,
}

impl Testbed {
    /// The testbed of a result document (its `host`, `tool` and `server` sections), with this
    /// machine's kernel and the user's labels.
    pub fn of(doc: &Value, labels: &BTreeMap<String, String>) -> Testbed {
        let s = |ptr: &str| {
            doc.pointer(ptr)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        Testbed {
            cpu: s("/host/cpu"),
            cores: doc
                .pointer("/host/cores")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            os: s("/host/os"),
            arch: s("/host/arch"),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|k| k.trim().to_string())
                .unwrap_or_default(),
            msgbench: s("/tool/version"),
            server: s("/server/version"),
            labels: labels.clone(),
        }
    }

    /// The machine's fingerprint: 16 hex digits.
    pub fn fingerprint(&self) -> String {
        let mut h = Sha256::new();
        for part in [&self.cpu, &self.cores.to_string(), &self.os, &self.arch] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        hex16(&h.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_runs_own_fields_do_not_change_the_benchmark() {
        let a = json!({"scenario": "latency", "rate": 1000, "hist": "a.hgrm",
            "conn": {"server": "nats://127.0.0.1:4222", "reconnect": false}});
        let b = json!({"scenario": "latency", "rate": 1000, "hist": "b.hgrm",
            "conn": {"server": "nats://127.0.0.1:39811", "reconnect": false}});
        assert_eq!(benchmark(&a, None), benchmark(&b, None));
        let faster = json!({"scenario": "latency", "rate": 2000, "hist": "a.hgrm",
            "conn": {"server": "nats://127.0.0.1:4222", "reconnect": false}});
        assert_ne!(benchmark(&a, None), benchmark(&faster, None));
        assert_ne!(benchmark(&a, None), benchmark(&a, Some("staging")));
    }

    #[test]
    fn versions_and_labels_are_recorded_but_not_fingerprinted() {
        let doc = json!({"host": {"cpu": "X", "cores": 2, "os": "linux", "arch": "x86_64"},
            "tool": {"version": "0.1.0"}, "server": {"version": "2.10.0"}});
        let newer = json!({"host": {"cpu": "X", "cores": 2, "os": "linux", "arch": "x86_64"},
            "tool": {"version": "0.2.0"}, "server": {"version": "2.11.0"}});
        let labels = BTreeMap::from([("commit".to_string(), "abc".to_string())]);
        let a = Testbed::of(&doc, &BTreeMap::new());
        let b = Testbed::of(&newer, &labels);
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_eq!(b.server, "2.11.0");
        let other = json!({"host": {"cpu": "Y", "cores": 2, "os": "linux", "arch": "x86_64"}});
        assert_ne!(a.fingerprint(), Testbed::of(&other, &labels).fingerprint());
    }
}
