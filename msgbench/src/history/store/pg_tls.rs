//! TLS to the PostgreSQL store: what a URL's `sslmode` and `sslrootcert` ask for, and the
//! rustls configuration that does it (through tokio-postgres-rustls, the connector
//! rust-postgres's synchronous client takes). Managed PostgreSQL services require TLS, so a
//! shared history must speak it, and verify whom it speaks to.
//!
//! The modes are libpq's, with one difference: msgbench never speaks TLS it has not verified.
//! - `disable`: in clear.
//! - `prefer` (libpq's default, also when the URL has no `sslmode`): TLS when the server offers
//!   it, in clear when it does not. libpq would accept any certificate here; msgbench checks it
//!   as `verify-ca` does, so a server whose certificate it cannot verify is refused in one line.
//! - `require`: TLS or nothing, the certificate chain checked against the roots (libpq checks it
//!   only when a root certificate file exists; here the roots always exist).
//! - `verify-ca`: TLS, the chain checked, not the host name.
//! - `verify-full`: TLS, the chain and the host name checked.
//! - `allow` (clear first, TLS only if the server insists) is refused, as are client
//!   certificates (`sslcert`, `sslkey`) and the other `ssl*` parameters.
//!
//! The roots: the PEM file `sslrootcert` names, else the system's (`sslrootcert=system` says so
//! explicitly, as libpq 16 does).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// What a URL asks of TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    /// The mode rust-postgres knows (it negotiates; the checking is the connector's).
    pub(super) fn negotiation(self) -> postgres::config::SslMode {
        use postgres::config::SslMode;
        match self {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }
}

/// A URL's TLS parameters, taken out of it (rust-postgres reads neither `verify-*` nor
/// `sslrootcert`).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Asked {
    /// The URL without `sslmode` and `sslrootcert`.
    pub url: String,
    pub mode: Mode,
    /// `sslrootcert`'s file; `None` for the system's roots.
    pub roots: Option<PathBuf>,
}

/// Takes the TLS parameters out of `url`.
///
/// # Errors
/// One line naming the parameter and why, for a mode or parameter msgbench does not support.
pub(super) fn asked(url: &str) -> Result<Asked, String> {
    let Ok(mut u) = url::Url::parse(url) else {
        // rust-postgres says what is wrong with it.
        return Ok(Asked {
            url: url.to_string(),
            mode: Mode::Prefer,
            roots: None,
        });
    };
    let mut mode = Mode::Prefer;
    let mut roots = None;
    let mut kept = Vec::new();
    for (k, v) in u.query_pairs() {
        match &*k {
            "sslmode" => {
                mode = match &*v {
                    "disable" => Mode::Disable,
                    "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    "allow" => {
                        return Err(
                            "sslmode=allow is not supported (it tries the connection in \
                                    clear first): use prefer, require, verify-ca or verify-full"
                                .into(),
                        )
                    }
                    other => {
                        return Err(format!(
                            "sslmode={other} is not a mode: use disable, prefer, require, \
                             verify-ca or verify-full"
                        ))
                    }
                }
            }
            "sslrootcert" if v == "system" => roots = None,
            "sslrootcert" => roots = Some(PathBuf::from(&*v)),
            "sslcert" | "sslkey" | "sslpassword" => {
                return Err(format!(
                    "{k} is not supported: msgbench's PostgreSQL store has no client \
                     certificates; log in with a password (PGPASSWORD)"
                ))
            }
            other if other.starts_with("ssl") && other != "sslnegotiation" => {
                return Err(format!(
                    "{other} is not supported: the TLS parameters taken are sslmode and \
                     sslrootcert"
                ))
            }
            _ => kept.push((k.into_owned(), v.into_owned())),
        }
    }
    if roots.is_some() && mode == Mode::Disable {
        return Err(
            "sslrootcert with sslmode=disable: a root certificate is for TLS; drop \
                    one or the other"
                .into(),
        );
    }
    if kept.is_empty() {
        u.set_query(None);
    } else {
        u.query_pairs_mut().clear().extend_pairs(kept);
    }
    Ok(Asked {
        url: u.to_string(),
        mode,
        roots,
    })
}

/// The connector for `mode` with `roots` (`None`: the system's).
///
/// # Errors
/// One line naming `sslrootcert`'s file when it cannot be read or holds no certificate.
pub(super) fn connector(
    mode: Mode,
    roots: Option<&std::path::Path>,
) -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let store = Arc::new(root_store(roots)?);
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let config = if mode == Mode::VerifyFull {
        builder.with_root_certificates(store).with_no_client_auth()
    } else {
        let chain = WebPkiServerVerifier::builder_with_provider(store, provider)
            .build()
            .map_err(|e| format!("sslrootcert: {e}"))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(chain)))
            .with_no_client_auth()
    };
    Ok(MakeRustlsConnect::new(config))
}

fn root_store(file: Option<&std::path::Path>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    let Some(path) = file else {
        for c in rustls_native_certs::load_native_certs().certs {
            let _ = store.add(c);
        }
        return Ok(store);
    };
    let bad = |why: String| format!("sslrootcert {}: {why}", path.display());
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(format!("cannot read it: {e}")))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(bad("holds no certificate".into()));
    }
    for c in certs {
        store.add(c).map_err(|e| bad(e.to_string()))?;
    }
    Ok(store)
}

/// `verify-ca`'s check (and `require`'s, `prefer`'s): the chain must lead to a trusted root,
/// whatever host name the certificate is for.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Why a TLS handshake failed, in the user's terms, when the failure was the certificate.
pub(super) fn certificate_refused(e: &postgres::Error) -> Option<String> {
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let found = c.downcast_ref::<rustls::Error>().or_else(|| {
            c.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(rustls::Error::InvalidCertificate(why)) = found {
            let fix = match why {
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => {
                    "connect by a name it carries, or use sslmode=verify-ca to check only \
                     who signed it"
                }
                _ => {
                    "give the CA that signed it as sslrootcert=FILE, or use sslmode=disable \
                     on a trusted network"
                }
            };
            return Some(format!(
                "the server's TLS certificate is not trusted ({why}): {fix}"
            ));
        }
        cause = c.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modes_and_roots_come_out_of_the_url_and_the_rest_stays() {
        let a =
            asked("postgres://u@db:5432/h?sslmode=verify-full&sslrootcert=/ca.pem&x=1").unwrap();
        assert_eq!(a.mode, Mode::VerifyFull);
        assert_eq!(a.roots, Some(PathBuf::from("/ca.pem")));
        assert_eq!(a.url, "postgres://u@db:5432/h?x=1");
        let a = asked("postgres://u@db/h").unwrap();
        assert_eq!(
            (a.mode, a.roots, a.url.as_str()),
            (Mode::Prefer, None, "postgres://u@db/h")
        );
        let a = asked("postgres://u@db/h?sslmode=require&sslrootcert=system").unwrap();
        assert_eq!((a.mode, a.roots), (Mode::Require, None));
        assert_eq!(a.url, "postgres://u@db/h");
        assert_eq!(
            asked("postgres://u@db/h?sslmode=verify-ca").unwrap().mode,
            Mode::VerifyCa
        );
        assert_eq!(
            asked("postgres://u@db/h?sslmode=disable").unwrap().mode,
            Mode::Disable
        );
    }

    #[test]
    fn what_is_not_supported_is_refused_in_one_line_naming_it() {
        for (url, says) in [
            ("postgres://u@db/h?sslmode=allow", "sslmode=allow"),
            (
                "postgres://u@db/h?sslmode=verify",
                "sslmode=verify is not a mode",
            ),
            (
                "postgres://u@db/h?sslcert=/c.pem",
                "sslcert is not supported",
            ),
            ("postgres://u@db/h?sslcrl=/c.pem", "sslcrl is not supported"),
            (
                "postgres://u@db/h?sslmode=disable&sslrootcert=/ca.pem",
                "sslrootcert with",
            ),
        ] {
            let e = asked(url).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{url}: {e}");
        }
    }

    #[test]
    fn an_unreadable_root_file_is_named() {
        let e = connector(
            Mode::VerifyFull,
            Some(std::path::Path::new("/no/such/ca.pem")),
        )
        .err()
        .unwrap();
        assert!(
            e.starts_with("sslrootcert /no/such/ca.pem: cannot read it"),
            "{e}"
        );
        assert!(connector(Mode::Require, None).is_ok(), "the system's roots");
    }
}
