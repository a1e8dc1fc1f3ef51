//! Signed control messages. Everything a coordinator sends an agent (a plan, the start time,
//! lease renewals, the publishers' counts, an abort) is sealed with the coordinator's NKey, and
//! an agent opens only what a key it trusts signed, before its expiry, and (for plans) once.
//! Without that, an agent would be a load relay for anyone who can publish on its subject.
//!
//! What is signed is the message's kind, id, expiry and body together, so a lease renewal
//! cannot be replayed as a plan, nor a plan's body moved under another id.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Signed bytes start with this, so a signature made here means nothing anywhere else.
const CONTEXT: &str = "msgbench.control/v1";

/// A sealed message as it travels.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Signed {
    pub kind: String,
    pub id: String,
    /// Wall-clock expiry, milliseconds since the Unix epoch (the receiver's clock judges it).
    pub expires_unix_ms: u64,
    /// The message itself, as JSON text (signed byte for byte).
    pub body: String,
    /// The signer's public key; absent on an unsigned message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// Ed25519 signature, base64url without padding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

fn signed_bytes(kind: &str, id: &str, expires: u64, body: &str) -> Vec<u8> {
    format!("{CONTEXT}\n{kind}\n{id}\n{expires}\n{body}").into_bytes()
}

/// Why an agent refused a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("it is not signed (this agent trusts only signed plans)")]
    Unsigned,
    #[error("it is signed by {0}, a key this agent does not trust")]
    Untrusted(String),
    #[error("its signature does not match its contents")]
    BadSignature,
    #[error("it expired {0} ms ago")]
    Expired(u64),
    #[error("plan {0} was already received once (a replay)")]
    Replayed(String),
    #[error("it cannot be read: {0}")]
    Malformed(String),
}

/// The coordinator's signing key.
pub struct Signer {
    kp: nkeys::KeyPair,
}

impl Signer {
    /// Reads a seed file written by `msgbench agent keygen` (or any NKey user seed).
    ///
    /// # Errors
    /// [`Error::Usage`] naming `--sign` when the file cannot be read or holds no valid seed.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Usage(format!("cannot read --sign file '{}': {e}", path.display()))
        })?;
        let seed = text
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with('S'))
            .unwrap_or("");
        let kp = nkeys::KeyPair::from_seed(seed).map_err(|_| {
            Error::Usage(format!(
                "--sign file '{}' holds no NKey seed (write one with `msgbench agent keygen`)",
                path.display()
            ))
        })?;
        Ok(Self { kp })
    }

    pub fn public_key(&self) -> String {
        self.kp.public_key()
    }

    /// Seals `body` as a message of `kind`, valid for `ttl_ms` from `now_ms`.
    pub fn seal(
        &self,
        kind: &str,
        id: &str,
        body: &impl Serialize,
        now_ms: u64,
        ttl_ms: u64,
    ) -> Signed {
        let mut s = seal_unsigned(kind, id, body, now_ms, ttl_ms);
        let sig = self
            .kp
            .sign(&signed_bytes(&s.kind, &s.id, s.expires_unix_ms, &s.body))
            .expect("a seed key pair signs");
        use base64::Engine;
        s.signer = Some(self.kp.public_key());
        s.sig = Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sig));
        s
    }
}

/// A message with no signature, for agents run with `--insecure-control`.
pub fn seal_unsigned(
    kind: &str,
    id: &str,
    body: &impl Serialize,
    now_ms: u64,
    ttl_ms: u64,
) -> Signed {
    Signed {
        kind: kind.into(),
        id: id.into(),
        expires_unix_ms: now_ms + ttl_ms,
        body: serde_json::to_string(body).expect("control messages serialise"),
        signer: None,
        sig: None,
    }
}

/// What an agent accepts.
pub struct Gate {
    trusted: Vec<String>,
    /// Accept unsigned messages (`--insecure-control`, and only with no trusted key).
    insecure: bool,
    /// Plan ids already accepted, with their expiry: a replay inside its validity is refused,
    /// and after it the expiry refuses it anyway, so the memory stays bounded.
    seen: Mutex<HashMap<String, u64>>,
}

impl Gate {
    /// # Errors
    /// [`Error::Usage`] for a trusted key that is not an NKey public key.
    pub fn new(trusted: Vec<String>, insecure: bool) -> Result<Self> {
        for k in &trusted {
            if nkeys::KeyPair::from_public_key(k).is_err() {
                return Err(Error::flag("--trust", k, "not an NKey public key"));
            }
        }
        Ok(Self {
            trusted,
            insecure,
            seen: Mutex::default(),
        })
    }

    /// Checks a message at `now_ms`; with `once`, also that its id was not accepted before.
    ///
    /// # Errors
    /// Why it is refused.
    pub fn open(&self, s: &Signed, now_ms: u64, once: bool) -> std::result::Result<(), Refusal> {
        match (&s.signer, &s.sig) {
            (Some(signer), Some(sig)) => {
                if !self.trusted.iter().any(|k| k == signer) {
                    return Err(Refusal::Untrusted(signer.clone()));
                }
                use base64::Engine;
                let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(sig)
                    .map_err(|_| Refusal::BadSignature)?;
                let kp = nkeys::KeyPair::from_public_key(signer)
                    .map_err(|_| Refusal::Untrusted(signer.clone()))?;
                kp.verify(
                    &signed_bytes(&s.kind, &s.id, s.expires_unix_ms, &s.body),
                    &sig,
                )
                .map_err(|_| Refusal::BadSignature)?;
            }
            _ if self.insecure && self.trusted.is_empty() => {}
            _ => return Err(Refusal::Unsigned),
        }
        if now_ms > s.expires_unix_ms {
            return Err(Refusal::Expired(now_ms - s.expires_unix_ms));
        }
        if once {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.retain(|_, exp| *exp >= now_ms);
            if seen.contains_key(&s.id) {
                return Err(Refusal::Replayed(s.id.clone()));
            }
            seen.insert(s.id.clone(), s.expires_unix_ms);
        }
        Ok(())
    }

    /// Opens a message and reads its body as `T`.
    ///
    /// # Errors
    /// As [`Gate::open`], or [`Refusal::Malformed`].
    pub fn read<T: for<'de> Deserialize<'de>>(
        &self,
        s: &Signed,
        now_ms: u64,
        once: bool,
    ) -> std::result::Result<T, Refusal> {
        self.open(s, now_ms, once)?;
        serde_json::from_str(&s.body).map_err(|e| Refusal::Malformed(e.to_string()))
    }
}

/// Writes a new user seed to `out` (created, never overwritten, mode 0600) and returns its
/// public key.
///
/// # Errors
/// [`Error::Usage`] naming `--out` when the file exists or cannot be created.
pub fn keygen(out: &Path) -> Result<String> {
    use std::io::Write;
    let kp = nkeys::KeyPair::new_user();
    let seed = kp.seed().expect("a new key pair has a seed");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(out)
        .map_err(|e| Error::Usage(format!("cannot create --out file '{}': {e}", out.display())))?;
    writeln!(f, "{seed}")
        .map_err(|e| Error::Usage(format!("cannot write --out file '{}': {e}", out.display())))?;
    Ok(kp.public_key())
}

/// Reads trusted keys from a file: one per line, blank lines and `#` comments skipped.
///
/// # Errors
/// [`Error::Usage`] naming `--trust-file`.
pub fn read_trust_file(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Usage(format!(
            "cannot read --trust-file '{}': {e}",
            path.display()
        ))
    })?;
    Ok(text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Signer, String) {
        let kp = nkeys::KeyPair::new_user();
        let public = kp.public_key();
        (Signer { kp }, public)
    }

    #[test]
    fn a_trusted_signature_opens_and_everything_else_is_refused_by_kind() {
        let (signer, public) = pair();
        let (other, other_public) = pair();
        let gate = Gate::new(vec![public], false).unwrap();
        let now = 1_000_000;
        let ok = signer.seal("plan", "p1", &"body", now, 30_000);
        assert_eq!(gate.open(&ok, now, true), Ok(()));
        assert_eq!(
            gate.open(&ok, now + 1, true),
            Err(Refusal::Replayed("p1".into()))
        );
        let unsigned = seal_unsigned("plan", "p2", &"body", now, 30_000);
        assert_eq!(gate.open(&unsigned, now, true), Err(Refusal::Unsigned));
        let foreign = other.seal("plan", "p3", &"body", now, 30_000);
        assert_eq!(
            gate.open(&foreign, now, true),
            Err(Refusal::Untrusted(other_public))
        );
        let old = signer.seal("plan", "p4", &"body", now - 60_000, 30_000);
        assert_eq!(gate.open(&old, now, true), Err(Refusal::Expired(30_000)));
        let mut moved = signer.seal("lease", "p5", &"body", now, 30_000);
        moved.kind = "plan".into();
        assert_eq!(gate.open(&moved, now, true), Err(Refusal::BadSignature));
        let mut edited = signer.seal("plan", "p6", &"body", now, 30_000);
        edited.body = "\"other\"".into();
        assert_eq!(gate.open(&edited, now, true), Err(Refusal::BadSignature));
    }

    #[test]
    fn insecure_opens_unsigned_only_without_trusted_keys() {
        let now = 5_000;
        let unsigned = seal_unsigned("plan", "u", &1, now, 1000);
        assert!(Gate::new(vec![], true)
            .unwrap()
            .open(&unsigned, now, true)
            .is_ok());
        assert_eq!(
            Gate::new(vec![], false).unwrap().open(&unsigned, now, true),
            Err(Refusal::Unsigned)
        );
        assert!(Gate::new(vec!["not-a-key".into()], false).is_err());
    }

    #[test]
    fn keygen_writes_a_private_seed_that_signs_for_its_public_key() {
        let dir = crate::testdir::TestDir::new("keygen");
        let path = dir.path().join("k.nk");
        let public = keygen(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let signer = Signer::from_file(&path).unwrap();
        assert_eq!(signer.public_key(), public);
        assert!(
            keygen(&path).is_err(),
            "an existing seed is never overwritten"
        );
    }
}
