//! The object store commands' flags: `obj put` and `obj get`. What both take (the bucket, how
//! many objects, the clients, the timeout) is one group flattened into each; what only a put
//! can act on (the objects' size, the chunk size, how a missing bucket is made) is the put's
//! alone, so `obj get` has no flag it would ignore.

use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::cli::{parse_clients, ConnArgs, Storage};
use crate::values::{parse_count, parse_duration, parse_size};

/// What `obj put` and `obj get` both take.
#[derive(Debug, Clone, Args, Serialize)]
pub struct ObjCommon {
    /// Bucket name (its stream is OBJ_<bucket>).
    #[arg(long, default_value = "msgbench")]
    pub bucket: String,
    /// Objects per run, named msgbench-0, msgbench-1, …, shared out over the clients.
    #[arg(long, default_value = "10", value_parser = parse_count)]
    pub objects: u64,
    /// Connections, each putting or getting one object at a time.
    #[arg(long, default_value_t = 1, value_parser = parse_clients)]
    pub clients: u32,
    /// A chunk's acknowledgement or delivery not received after this long fails its object.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    #[serde(serialize_with = "crate::values::ser::duration")]
    pub timeout: Duration,
    /// Delete the bucket afterwards.
    #[arg(long)]
    pub delete_after: bool,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct ObjPutArgs {
    #[command(flatten)]
    pub common: ObjCommon,
    /// Each object's size, 1 KiB to 1 GiB.
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    pub size: usize,
    /// The chunk size objects are cut into, as the NATS clients' default (128 KiB).
    #[arg(long, default_value = "128KiB", value_parser = parse_size)]
    pub chunk_size: usize,
    /// Storage of a bucket this run creates (default: file, as the NATS clients create
    /// buckets); an existing bucket with other storage is refused.
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<Storage>,
    /// Byte limit of a bucket this run creates (default: none); an existing bucket with
    /// another limit is refused. Objects that cannot fit are refused before the run.
    #[arg(long, value_parser = parse_size)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<usize>,
    #[command(flatten)]
    pub conn: ConnArgs,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct ObjGetArgs {
    #[command(flatten)]
    pub common: ObjCommon,
    #[command(flatten)]
    pub conn: ConnArgs,
}
