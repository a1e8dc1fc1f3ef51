//! The object store commands' checked options: every flag's value checked alone and against the
//! others, before anything connects. What only the server can say (an existing bucket's limits,
//! its maximum payload) is checked by the run, still before its clock starts (`bucket`).

use std::time::Duration;

use super::args::{ObjCommon, ObjGetArgs, ObjPutArgs};
use crate::cli::Storage;
use crate::error::{Error, Result};
use crate::options::conn::ConnOptions;
use crate::options::{server_choice, ServerChoice};

/// The smallest and largest object a put makes.
pub const MIN_SIZE: usize = 1 << 10;
pub const MAX_SIZE: usize = 1 << 30;
/// The largest chunk: the server's own ceiling on a message's payload (64 MiB).
pub const MAX_CHUNK: usize = 64 << 20;

/// What a put adds to the common options.
#[derive(Debug, Clone)]
pub struct PutOptions {
    pub size: usize,
    pub chunk_size: usize,
    /// As given: `None` leaves an existing bucket's setting alone, and makes a new one with the
    /// NATS clients' default.
    pub storage: Option<Storage>,
    pub max_bytes: Option<usize>,
}

/// A checked `obj put` or `obj get`.
#[derive(Debug, Clone)]
pub struct ObjOptions {
    pub bucket: String,
    pub objects: u64,
    pub clients: u32,
    pub timeout: Duration,
    pub delete_after: bool,
    /// Some for a put, none for a get.
    pub put: Option<PutOptions>,
    pub server: ServerChoice,
    pub conn: ConnOptions,
}

impl ObjOptions {
    /// The objects' names: the same for a put and the get that reads it back.
    pub fn name(i: u64) -> String {
        format!("msgbench-{i}")
    }

    /// The bucket's stream.
    pub fn stream(&self) -> String {
        format!("OBJ_{}", self.bucket)
    }

    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn put(a: &ObjPutArgs) -> Result<Self> {
        let size_text = a.size.to_string();
        if !(MIN_SIZE..=MAX_SIZE).contains(&a.size) {
            return Err(Error::flag("--size", &size_text, "must be 1 KiB to 1 GiB"));
        }
        if a.chunk_size == 0 || a.chunk_size > MAX_CHUNK {
            return Err(Error::flag(
                "--chunk-size",
                &a.chunk_size.to_string(),
                "must be 1 B to 64 MiB (the server's ceiling on a message)",
            ));
        }
        if let Some(max) = a.max_bytes {
            if a.size > max {
                return Err(Error::Usage(format!(
                    "--size {} is larger than the bucket's limit (--max-bytes {max}): the \
                     object cannot be stored",
                    a.size
                )));
            }
            let total = (a.size as u128) * u128::from(a.common.objects);
            if total > max as u128 {
                return Err(Error::Usage(format!(
                    "--objects {} of --size {} ({total} B) do not fit in the bucket's limit \
                     (--max-bytes {max})",
                    a.common.objects, a.size
                )));
            }
        }
        let mut o = Self::common(&a.common, &a.conn, "obj put")?;
        o.put = Some(PutOptions {
            size: a.size,
            chunk_size: a.chunk_size,
            storage: a.storage,
            max_bytes: a.max_bytes,
        });
        Ok(o)
    }

    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn get(a: &ObjGetArgs) -> Result<Self> {
        Self::common(&a.common, &a.conn, "obj get")
    }

    fn common(c: &ObjCommon, conn: &crate::cli::ConnArgs, command: &str) -> Result<Self> {
        check_bucket(&c.bucket)?;
        if c.objects == 0 {
            return Err(Error::flag("--objects", "0", "must be at least 1"));
        }
        if u64::from(c.clients) > c.objects {
            return Err(Error::Usage(format!(
                "--clients {} is more than --objects {}: a client would have no object",
                c.clients, c.objects
            )));
        }
        if c.timeout.is_zero() {
            return Err(Error::flag("--timeout", "0", "must be more than 0"));
        }
        let conn_opts = ConnOptions::new(conn)?;
        conn_opts.no_fault(command)?;
        Ok(Self {
            bucket: c.bucket.clone(),
            objects: c.objects,
            clients: c.clients,
            timeout: c.timeout,
            delete_after: c.delete_after,
            put: None,
            server: server_choice(conn)?,
            conn: conn_opts,
        })
    }
}

/// A bucket name as the NATS clients accept it: letters, digits, `-` and `_`.
fn check_bucket(name: &str) -> Result<()> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(Error::flag(
            "--bucket",
            name,
            "a bucket name is letters, digits, '-' and '_' only",
        ));
    }
    Ok(())
}
