//! The object store's format (ADR-20), as every NATS client writes and reads it: bucket `B` is
//! stream `OBJ_B`; an object's chunks are messages on `$O.B.C.<nuid>`; its metadata is one JSON
//! message on `$O.B.M.<name in base64url>`, published with `Nats-Rollup: sub` so it replaces
//! the one before. The digest is `SHA-256=` and the base64url (padded, as the Go client writes
//! it) of the SHA-256 of the whole object.

use std::hash::{BuildHasher, Hasher};

use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The header block of a metadata publish: it rolls up (replaces) the subject's older ones.
pub const ROLLUP_HEADERS: &[u8] = b"NATS/1.0\r\nNats-Rollup: sub\r\n\r\n";

const DIGEST_PREFIX: &str = "SHA-256=";

/// The subjects of bucket `bucket`'s stream.
pub fn stream_subjects(bucket: &str) -> Vec<String> {
    vec![format!("$O.{bucket}.C.>"), format!("$O.{bucket}.M.>")]
}

/// The subject of an object's chunks.
pub fn chunk_subject(bucket: &str, nuid: &str) -> String {
    format!("$O.{bucket}.C.{nuid}")
}

/// The subject of an object's metadata: its name in base64url, padded (as the Go client
/// encodes it), so any name makes one subject token.
pub fn meta_subject(bucket: &str, name: &str) -> String {
    format!("$O.{bucket}.M.{}", URL_SAFE.encode(name.as_bytes()))
}

/// A new object id: 22 characters of 0-9, A-Z, a-z, as a NUID is. Only unique, not secret:
/// the standard library's randomly keyed hasher is its source.
pub fn new_nuid() -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut out = String::with_capacity(22);
    let mut bits = 0u64;
    for i in 0..22 {
        if i % 10 == 0 {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            bits = h.finish();
        }
        out.push(char::from(ALPHABET[(bits % 62) as usize]));
        bits /= 62;
    }
    out
}

/// The digest as the metadata writes it.
pub fn digest_text(hash: Sha256) -> String {
    format!("{DIGEST_PREFIX}{}", URL_SAFE.encode(hash.finalize()))
}

/// Whether a metadata digest is the SHA-256 `got`; a digest of another form never matches.
/// Padding is optional on reading: the digest is compared as bytes.
pub fn digest_matches(meta: &str, got: &[u8]) -> bool {
    let Some(b64) = meta.strip_prefix(DIGEST_PREFIX) else {
        return false;
    };
    let decoded = URL_SAFE
        .decode(b64)
        .or_else(|_| URL_SAFE_NO_PAD.decode(b64));
    decoded.is_ok_and(|d| d == got)
}

/// Extra options a metadata message carries.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct MetaOptions {
    #[serde(default)]
    pub max_chunk_size: u64,
}

/// An object's metadata message, the fields msgbench writes and reads (others are ignored).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<MetaOptions>,
    pub bucket: String,
    pub nuid: String,
    pub size: u64,
    /// When the put was made, RFC 3339.
    #[serde(default)]
    pub mtime: String,
    pub chunks: u64,
    #[serde(default)]
    pub digest: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_encode_as_the_go_client_does_and_digests_compare_as_bytes() {
        // base64url with padding: "msgbench-0" is 10 bytes, so two '=' follow.
        assert_eq!(meta_subject("b", "msgbench-0"), "$O.b.M.bXNnYmVuY2gtMA==");
        let mut h = Sha256::new();
        h.update(b"abc");
        let text = digest_text(h);
        // The well-known SHA-256 of "abc", in base64url.
        assert_eq!(text, "SHA-256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0=");
        let bytes = Sha256::digest(b"abc");
        assert!(digest_matches(&text, &bytes));
        assert!(digest_matches(text.trim_end_matches('='), &bytes));
        assert!(!digest_matches(&text, &Sha256::digest(b"abd")));
        assert!(!digest_matches("MD5=xyz", &bytes));
    }

    #[test]
    fn nuids_are_22_alphanumerics_and_differ() {
        let (a, b) = (new_nuid(), new_nuid());
        assert_eq!(a.len(), 22);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
    }
}
