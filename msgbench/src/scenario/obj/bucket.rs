//! The bucket a run works on, before and after its clients: found (or, for a put, created as
//! the NATS clients create one), its limits checked against the objects the run will put, so
//! an object that cannot fit is refused in one line before the clock starts; and deleted
//! afterwards when asked.

use serde::Deserialize;

use super::meta::stream_subjects;
use super::options::{ObjOptions, PutOptions};
use crate::cli::Storage;
use crate::engine::jsapi::{Api, StreamConfig};
use crate::error::{Error, ErrorKind, Result};
use crate::options::ServerChoice;

/// What the server says of a bucket's stream that a run checks.
#[derive(Debug, Deserialize)]
struct Info {
    config: InfoConfig,
}

#[derive(Debug, Deserialize)]
struct InfoConfig {
    #[serde(default)]
    storage: String,
    /// -1 (or absent) for no limit.
    #[serde(default = "no_limit")]
    max_bytes: i64,
    #[serde(default = "no_limit")]
    max_msg_size: i64,
}

fn no_limit() -> i64 {
    -1
}

/// The bucket's stream as this run found or made it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Bytes the bucket may hold; none for no limit.
    pub max_bytes: Option<u64>,
    /// The largest message (chunk) it takes; none for no limit.
    pub max_msg_size: Option<u64>,
}

/// Reads the bucket's stream: its storage and limits; `None` when there is none.
fn info_raw(api: &mut Api, stream: &str) -> Result<Option<(String, Limits)>> {
    match api.call_json(&format!("STREAM.INFO.{stream}"), b"") {
        Ok(v) => {
            let i = Info::deserialize(v).map_err(|e| Error::JetStream {
                kind: ErrorKind::JsOther,
                text: format!("STREAM.INFO.{stream} is not what it should be: {e}"),
            })?;
            let limit = |n: i64| u64::try_from(n).ok().filter(|n| *n > 0);
            Ok(Some((
                i.config.storage,
                Limits {
                    max_bytes: limit(i.config.max_bytes),
                    max_msg_size: limit(i.config.max_msg_size),
                },
            )))
        }
        Err(Error::JetStream {
            kind: ErrorKind::JsStreamNotFound,
            ..
        }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Finds the bucket a get reads.
///
/// # Errors
/// [`Error::Usage`] naming `--bucket` when there is no such bucket; the server's error else.
pub(super) fn find(api: &mut Api, o: &ObjOptions) -> Result<Limits> {
    info_raw(api, &o.stream())?.map(|(_, l)| l).ok_or_else(|| {
        // A server msgbench starts itself starts empty, and the bucket of an earlier run went
        // with that run's server.
        let hint = match o.server {
            ServerChoice::Embedded { .. } => {
                " (a server msgbench starts itself starts empty: \
                                              give --server)"
            }
            _ => "",
        };
        Error::Usage(format!(
            "--bucket {}: no such bucket (no stream {}); `msgbench obj put` fills one \
             first{hint}",
            o.bucket,
            o.stream()
        ))
    })
}

/// Finds or creates the bucket a put fills, and checks that its objects fit: each object
/// within the bucket's byte limit, all of them together too, and each chunk within its
/// largest message and the server's `max_payload`.
///
/// # Errors
/// [`Error::Usage`] naming the flag that cannot work with this bucket or server.
pub(super) fn open(
    api: &mut Api,
    o: &ObjOptions,
    p: &PutOptions,
    max_payload: usize,
) -> Result<Limits> {
    let stream = o.stream();
    let limits = match info_raw(api, &stream)? {
        Some((storage, limits)) => {
            if let Some(s) = p.storage.filter(|s| s.as_str() != storage) {
                return Err(Error::Usage(format!(
                    "--storage {}: bucket {} exists with {storage} storage, which a put does \
                     not change",
                    s.as_str(),
                    o.bucket
                )));
            }
            if let Some(m) = p.max_bytes.filter(|m| Some(*m as u64) != limits.max_bytes) {
                return Err(Error::Usage(format!(
                    "--max-bytes {m}: bucket {} exists with {}, which a put does not change",
                    o.bucket,
                    limits
                        .max_bytes
                        .map_or("no byte limit".to_string(), |b| format!("a limit of {b} B"))
                )));
            }
            limits
        }
        None => {
            api.ensure_stream(&StreamConfig {
                name: stream.clone(),
                subjects: stream_subjects(&o.bucket),
                storage: p.storage.unwrap_or(Storage::File).as_str().into(),
                num_replicas: 1,
                max_bytes: p.max_bytes.map_or(-1, |m| m as i64),
                // As the NATS clients make a bucket: a full one refuses new chunks rather than
                // dropping old ones, and a metadata message replaces the one before.
                discard: "new".into(),
                allow_rollup_hdrs: true,
                allow_direct: true,
                ..StreamConfig::default()
            })?;
            Limits {
                max_bytes: p.max_bytes.map(|m| m as u64),
                max_msg_size: None,
            }
        }
    };
    check_fit(o, p, limits, max_payload)?;
    Ok(limits)
}

/// The refusal of objects that cannot fit, in one line naming the flag.
fn check_fit(o: &ObjOptions, p: &PutOptions, l: Limits, max_payload: usize) -> Result<()> {
    if let Some(max) = l.max_bytes {
        if p.size as u64 > max {
            return Err(Error::Usage(format!(
                "--size {}: larger than bucket {}'s limit of {max} B; the object cannot be stored",
                p.size, o.bucket
            )));
        }
        let total = p.size as u128 * u128::from(o.objects);
        if total > u128::from(max) {
            return Err(Error::Usage(format!(
                "--objects {} of --size {} ({total} B) do not fit in bucket {}'s limit of {max} B",
                o.objects, p.size, o.bucket
            )));
        }
    }
    if let Some(max) = l.max_msg_size.filter(|m| p.chunk_size as u64 > *m) {
        return Err(Error::Usage(format!(
            "--chunk-size {}: larger than bucket {}'s largest message ({max} B)",
            p.chunk_size, o.bucket
        )));
    }
    if max_payload > 0 && p.chunk_size > max_payload {
        return Err(Error::Usage(format!(
            "--chunk-size {}: larger than the server's max_payload ({max_payload} B)",
            p.chunk_size
        )));
    }
    Ok(())
}

/// Deletes the bucket when asked; a failure is told on stderr and does not cost the result.
pub(super) fn clean_up(mut api: Api, o: &ObjOptions, delete: bool) {
    if o.delete_after && delete {
        if let Err(e) = api.delete_stream(&o.stream()) {
            eprintln!(
                "warning: --delete-after: bucket {} was not deleted: {e}",
                o.bucket
            );
        }
    }
    api.close();
}
