//! The last step of an object store run: the result, from what each client measured, and the
//! result's own `object_store` section (objects per second, MB/s, the chunks' latency, and
//! whether every object read back matched its digest), with its lines in the text output.
//! Nothing here touches a connection.

use std::fmt::Write as _;

use serde::Serialize;

use super::client::ClientOut;
use super::client::Outcome;
use super::options::ObjOptions;
use super::ObjParams;
use crate::error::ErrorCounts;
use crate::format::{duration_ns, group, ibytes, sig};
use crate::result::{throughput_sections, LatencyStats, Params, RunResult, Section, ServerMeta};
use crate::stats::latency::new_histogram;
use crate::stats::throughput::ClientRun;

/// Names listed at most for each kind of failure.
const NAMES_SHOWN: usize = 10;

/// What the run knows besides its clients' figures.
pub(super) struct Done<'a> {
    pub started_at: String,
    pub server: ServerMeta,
    pub errors: &'a ErrorCounts,
    pub interrupted: bool,
    /// The objects this run's clients were to put or get (on an agent, its share).
    pub objects: u64,
}

/// The result's `object_store` section.
#[derive(Debug, Clone, Serialize)]
pub struct ObjReport {
    /// `put` or `get`.
    pub op: &'static str,
    pub bucket: String,
    pub stream: String,
    /// Objects the run was to put or get.
    pub objects: u64,
    /// Objects put whole (every chunk and the metadata acknowledged), or read whole.
    pub completed: u64,
    /// Objects whose put or get failed (a chunk refused or not in time); the first few
    /// names, each with its error kind.
    pub failed: u64,
    pub failed_names: Vec<String>,
    /// A get: objects not in the bucket (no metadata, or marked deleted); null for a put.
    pub missing: Option<u64>,
    pub missing_names: Vec<String>,
    /// A get: objects read whole whose SHA-256, size or chunk count differs from their
    /// metadata; null for a put, which has nothing to compare.
    pub digest_mismatches: Option<u64>,
    pub mismatched_names: Vec<String>,
    /// Chunks and bytes of the objects completed.
    pub chunks: u64,
    pub bytes: u64,
    /// Completed objects per second over the run's span; null when it could not be timed.
    pub objects_per_sec: Option<f64>,
    /// Bytes per second of the completed objects (MB/s is this over 10^6); null likewise.
    pub bytes_per_sec: Option<f64>,
    /// Each chunk's time: a put's from its publish to its PubAck, a get's wait for it (from
    /// the previous chunk, or the first pull request). Null when no chunk was timed.
    pub chunk_latency: Option<LatencyStats>,
}

impl ObjReport {
    fn put(&self) -> bool {
        self.op == "put"
    }

    /// Its lines in the text output.
    pub(super) fn text(&self, o: &mut String) {
        let done = if self.put() { "put" } else { "read" };
        let rates = match (self.objects_per_sec, self.bytes_per_sec) {
            (Some(n), Some(b)) => format!(
                "{} objects/s, {} MB/s",
                sig(n, 3, true),
                sig(b / 1e6, 3, true)
            ),
            _ => "objects/s —, MB/s —".into(),
        };
        let _ = writeln!(
            o,
            "Objects: {} of {} {done} whole ({} in {}): {rates}",
            group(self.completed),
            group(self.objects),
            ibytes(self.bytes as f64),
            crate::format::counted(self.chunks, "chunk"),
        );
        if let Some(c) = &self.chunk_latency {
            let what = if self.put() {
                "from publish to PubAck"
            } else {
                "the wait for each (from the previous chunk, or the pull request)"
            };
            let _ = writeln!(
                o,
                "Latency of each chunk, {what}, {}:",
                crate::format::counted(c.count, "chunk")
            );
            let _ = writeln!(o, "  {:>10} {:>12}", "percentile", "chunk");
            for (key, v) in &c.percentiles_ns.0 {
                let _ = writeln!(
                    o,
                    "  {:>10} {:>12}",
                    format!("P{key}"),
                    duration_ns(*v as f64)
                );
            }
            let _ = writeln!(o, "  {:>10} {:>12}", "max", duration_ns(c.max_ns as f64));
        }
        if let Some(bad) = self.digest_mismatches {
            let read = self.completed;
            if bad == 0 {
                let _ = writeln!(
                    o,
                    "Digests: {} read {} their metadata (SHA-256, size, chunks)",
                    match read {
                        1 => "the 1 object".to_string(),
                        n => format!("all {} objects", group(n)),
                    },
                    if read == 1 { "matches" } else { "match" }
                );
            } else {
                let _ = writeln!(
                    o,
                    "DIGEST MISMATCH: {} of {} read {} from their metadata: {}",
                    group(bad),
                    crate::format::counted(read, "object"),
                    if bad == 1 { "differs" } else { "differ" },
                    listed(&self.mismatched_names, bad)
                );
            }
        }
        if let Some(n) = self.missing.filter(|n| *n > 0) {
            let _ = writeln!(
                o,
                "MISSING: {} {} not in bucket {}: {}",
                crate::format::counted(n, "object"),
                if n == 1 { "is" } else { "are" },
                self.bucket,
                listed(&self.missing_names, n)
            );
        }
        if self.failed > 0 {
            let _ = writeln!(
                o,
                "FAILED: {} {} not {done} whole: {}",
                crate::format::counted(self.failed, "object"),
                if self.failed == 1 { "was" } else { "were" },
                listed(&self.failed_names, self.failed)
            );
        }
    }
}

impl Section for ObjReport {
    fn key(&self) -> &'static str {
        "object_store"
    }

    /// An object not written, missing when read back, or not matching its digest.
    fn exit(&self, _: &RunResult) -> Option<u8> {
        (self.failed > 0
            || self.missing.is_some_and(|n| n > 0)
            || self.digest_mismatches.is_some_and(|n| n > 0))
        .then_some(crate::error::exit::LOSS)
    }
}

/// Names, with how many more there are.
fn listed(names: &[String], n: u64) -> String {
    let more = n.saturating_sub(names.len() as u64);
    if more > 0 {
        format!("{} and {} more", names.join(", "), group(more))
    } else {
        names.join(", ")
    }
}

/// The result of a run.
pub(super) fn assemble(o: &ObjOptions, outs: Vec<ClientOut>, done: Done<'_>) -> RunResult {
    let runs: Vec<ClientRun> = outs.iter().map(|c| c.run).collect();
    let (throughput, by_role, clients) = throughput_sections(&runs);
    let (mut objects, mut chunks) = (new_histogram(), new_histogram());
    let mut r = ObjReport {
        op: if o.put.is_some() { "put" } else { "get" },
        bucket: o.bucket.clone(),
        stream: o.stream(),
        objects: done.objects,
        completed: 0,
        failed: 0,
        failed_names: Vec::new(),
        missing: o.put.is_none().then_some(0),
        missing_names: Vec::new(),
        digest_mismatches: o.put.is_none().then_some(0),
        mismatched_names: Vec::new(),
        chunks: throughput.msgs,
        bytes: throughput.bytes,
        objects_per_sec: None,
        bytes_per_sec: None,
        chunk_latency: None,
    };
    let mut all: Vec<(u64, Outcome)> = Vec::new();
    for c in outs {
        let _ = objects.add(&c.object_ns);
        let _ = chunks.add(&c.chunk_ns);
        all.extend(c.objects);
    }
    all.sort_by_key(|(i, _)| *i);
    let note = |names: &mut Vec<String>, i: u64| {
        if names.len() < NAMES_SHOWN {
            names.push(ObjOptions::name(i));
        }
    };
    for (i, outcome) in all {
        match outcome {
            Outcome::Done { intact, .. } => {
                r.completed += 1;
                if !intact {
                    *r.digest_mismatches.get_or_insert(0) += 1;
                    note(&mut r.mismatched_names, i);
                }
            }
            Outcome::Missing => {
                *r.missing.get_or_insert(0) += 1;
                note(&mut r.missing_names, i);
            }
            Outcome::Failed(kind) => {
                r.failed += 1;
                if r.failed_names.len() < NAMES_SHOWN {
                    r.failed_names
                        .push(format!("{} ({})", ObjOptions::name(i), kind.as_str()));
                }
            }
        }
    }
    if throughput.seconds > 0.0 {
        r.objects_per_sec = Some(r.completed as f64 / throughput.seconds);
        r.bytes_per_sec = Some(throughput.bytes_per_sec);
    }
    r.chunk_latency = (!chunks.is_empty()).then(|| LatencyStats::of(&chunks));
    let mut result = RunResult {
        throughput,
        by_role,
        clients,
        latency: (!objects.is_empty()).then(|| LatencyStats::of(&objects)),
        ..RunResult::new(
            if o.put.is_some() {
                "obj.put"
            } else {
                "obj.get"
            },
            done.started_at,
            Params::of(ObjParams::of(o)),
            done.server,
            done.errors,
            done.interrupted,
        )
    };
    result.delivery.accounting = "none";
    result.delivery.unmeasured = crate::stats::delivery::Unmeasured::ALL;
    result.own.put(r);
    result
}

/// One agent's `object_store` section, as its result document has it.
#[derive(Debug, serde::Deserialize)]
struct ObjShare {
    objects: u64,
    completed: u64,
    failed: u64,
    failed_names: Vec<String>,
    missing: Option<u64>,
    missing_names: Vec<String>,
    digest_mismatches: Option<u64>,
    mismatched_names: Vec<String>,
    chunks: u64,
    bytes: u64,
    chunk_latency: Option<HdrPart>,
}

#[derive(Debug, serde::Deserialize)]
struct HdrPart {
    hdr: String,
}

/// The coordinator's part of an `obj put` or `obj get` on agents: the agents' sections added
/// up (counts summed, the first names of each kind kept, chunk latency from their histograms
/// added bucket by bucket, the rates over the merged span), then the bucket deleted when asked.
/// With an agent missing there is no section: what it did is unknown.
///
/// # Errors
/// None: what cannot be concluded is left out of the result.
pub(super) fn conclude(
    o: &ObjOptions,
    merged: &mut RunResult,
    target: &crate::server::Target,
) -> crate::error::Result<()> {
    let agents = merged.agent_entries();
    let shares: Option<Vec<ObjShare>> = agents.iter().map(|a| a.part("/object_store")).collect();
    if let Some(shares) = shares.filter(|s| !s.is_empty()) {
        let sum = |f: fn(&ObjShare) -> u64| shares.iter().map(f).sum::<u64>();
        let some = |f: fn(&ObjShare) -> Option<u64>| shares.iter().map(f).sum::<Option<u64>>();
        let names = |f: fn(&ObjShare) -> &Vec<String>| -> Vec<String> {
            shares
                .iter()
                .flat_map(f)
                .take(NAMES_SHOWN)
                .cloned()
                .collect()
        };
        let mut chunks = new_histogram();
        for s in &shares {
            if let Some(h) = &s.chunk_latency {
                let part = crate::stats::hdr::decode_base64(&h.hdr).map_err(|e| {
                    crate::error::Error::Agent(format!("a chunk latency histogram: {e}"))
                })?;
                let _ = chunks.add(&part);
            }
        }
        let completed = sum(|s| s.completed);
        let seconds = merged.throughput.seconds;
        merged.own.put(ObjReport {
            op: if o.put.is_some() { "put" } else { "get" },
            bucket: o.bucket.clone(),
            stream: o.stream(),
            objects: sum(|s| s.objects),
            completed,
            failed: sum(|s| s.failed),
            failed_names: names(|s| &s.failed_names),
            missing: some(|s| s.missing),
            missing_names: names(|s| &s.missing_names),
            digest_mismatches: some(|s| s.digest_mismatches),
            mismatched_names: names(|s| &s.mismatched_names),
            chunks: sum(|s| s.chunks),
            bytes: sum(|s| s.bytes),
            objects_per_sec: (seconds > 0.0).then(|| completed as f64 / seconds),
            bytes_per_sec: (seconds > 0.0).then(|| sum(|s| s.bytes) as f64 / seconds),
            chunk_latency: (!chunks.is_empty()).then(|| LatencyStats::of(&chunks)),
        });
    }
    if o.delete_after {
        match crate::engine::jsapi::Api::connect(
            &target.urls,
            "msgbench-obj-setup",
            &o.conn.dial,
            o.timeout,
        ) {
            Ok(api) => super::bucket::clean_up(api, o, true),
            Err(e) => eprintln!(
                "warning: --delete-after: bucket {} was not deleted: {e}",
                o.bucket
            ),
        }
    }
    Ok(())
}

/// How the reports show the `object_store` section read from a result file: objects
/// completed of those asked for, and whether every one was whole (put, or read back matching
/// its digest).
pub(super) const SHOWN: crate::result::Shown = crate::result::Shown {
    key: "object_store",
    rows: shown_rows,
};

fn shown_rows(o: &serde_json::Value) -> Vec<crate::result::Row> {
    use crate::result::count_in;
    let op = o
        .get("op")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("?");
    let mut text = format!(
        "{} of {} {op} whole, {} failed",
        count_in(o, "completed"),
        count_in(o, "objects"),
        count_in(o, "failed"),
    );
    // A put has no missing objects or digests to compare: null, and left out.
    let mut whole = o.get("failed").and_then(serde_json::Value::as_u64) == Some(0);
    for (key, words) in [
        ("missing", "missing"),
        ("digest_mismatches", "not matching their digest"),
    ] {
        if let Some(n) = o.get(key).and_then(serde_json::Value::as_u64) {
            text.push_str(&format!(", {} {words}", group(n)));
            whole &= n == 0;
        }
    }
    vec![crate::result::Row::judged(
        "objects",
        text,
        whole,
        "all whole",
        "not all whole",
    )]
}
