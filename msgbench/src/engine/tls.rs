//! TLS for a connection: the client configuration (roots, client certificate, the explicit
//! opt-out from verification), the handshake, and the encrypted read and write paths that the
//! reader thread and the writers share.
//!
//! One rustls session serves both halves of a connection, behind a mutex. The reader reads
//! ciphertext from the socket without holding it, then takes it to decrypt; a writer takes it to
//! encrypt and hands the records to the socket. A writer that cannot make progress lets go of the
//! session between attempts, so the reader can still drain what the server sends: a full-duplex
//! stall on both sides' buffers cannot turn into a deadlock.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// What the user asked of TLS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    pub ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// Accept any certificate (an explicit opt-out; msgbench warns).
    pub insecure: bool,
    /// Start TLS before the server's INFO (servers configured with `handshake_first`).
    pub first: bool,
}

impl TlsOptions {
    /// Whether the user asked for TLS at all (a server may still require it).
    pub fn wanted(&self) -> bool {
        self.ca.is_some() || self.cert.is_some() || self.insecure || self.first
    }
}

/// A built client configuration, shared by every connection of a run.
pub struct Tls {
    pub options: TlsOptions,
    pub config: Arc<ClientConfig>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tls({:?})", self.options)
    }
}

impl Tls {
    /// The configuration for `options`, built once per process and shared by every run that
    /// asks for the same: connections hold it as `&'static`, and a process that validates
    /// many plans (a capacity search, one per probe) must not build and keep one per plan.
    ///
    /// # Errors
    /// As [`Tls::new`].
    pub fn shared(options: TlsOptions) -> Result<&'static Tls, (String, String, String)> {
        static BUILT: std::sync::Mutex<Vec<&'static Tls>> = std::sync::Mutex::new(Vec::new());
        let mut built = BUILT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(t) = built.iter().find(|t| t.options == options) {
            return Ok(t);
        }
        let t: &'static Tls = Box::leak(Box::new(Tls::new(options)?));
        built.push(t);
        Ok(t)
    }

    /// Builds the configuration, reading every file now so that a bad one is a usage error
    /// naming it, before any connection.
    ///
    /// # Errors
    /// The flag and the reason.
    pub fn new(options: TlsOptions) -> Result<Self, (String, String, String)> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ("--tls-ca".into(), String::new(), e.to_string()))?;
        let builder = if options.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnything(provider)))
        } else {
            builder.with_root_certificates(roots(options.ca.as_deref())?)
        };
        let config = match (&options.cert, &options.key) {
            (Some(cert), Some(key)) => {
                let chain = certificates("--tls-cert", cert)?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                    (
                        "--tls-key".into(),
                        key.display().to_string(),
                        format!("no private key in it: {e}"),
                    )
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    (
                        "--tls-cert".into(),
                        cert.display().to_string(),
                        e.to_string(),
                    )
                })?
            }
            (None, None) => builder.with_no_client_auth(),
            (Some(c), None) => {
                return Err((
                    "--tls-cert".into(),
                    c.display().to_string(),
                    "needs --tls-key".into(),
                ))
            }
            (None, Some(k)) => {
                return Err((
                    "--tls-key".into(),
                    k.display().to_string(),
                    "needs --tls-cert".into(),
                ))
            }
        };
        Ok(Self {
            options,
            config: Arc::new(config),
        })
    }
}

fn certificates(
    flag: &str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, (String, String, String)> {
    let bad = |why: String| (flag.to_string(), path.display().to_string(), why);
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(format!("cannot read it: {e}")))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(bad("holds no certificate".into()));
    }
    Ok(certs)
}

/// `--tls-ca`'s certificates, or the system's roots.
fn roots(ca: Option<&Path>) -> Result<RootCertStore, (String, String, String)> {
    let mut store = RootCertStore::empty();
    match ca {
        Some(path) => {
            for c in certificates("--tls-ca", path)? {
                store
                    .add(c)
                    .map_err(|e| ("--tls-ca".into(), path.display().to_string(), e.to_string()))?;
            }
        }
        None => {
            for c in rustls_native_certs::load_native_certs().certs {
                let _ = store.add(c);
            }
        }
    }
    Ok(store)
}

/// `--tls-insecure`: every certificate passes; signatures are still checked so the handshake
/// itself is sound.
#[derive(Debug)]
struct AcceptAnything(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnything {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The configuration for a server that requires TLS when no --tls-* flag was given: the
/// system's roots, no client certificate.
///
/// # Errors
/// When the configuration cannot be built.
pub fn default_config() -> Result<&'static Tls, String> {
    static DEFAULT: OnceLock<Result<Tls, String>> = OnceLock::new();
    DEFAULT
        .get_or_init(|| Tls::new(TlsOptions::default()).map_err(|(_, _, why)| why))
        .as_ref()
        .map_err(Clone::clone)
}

/// A connection's TLS session, shared by its reader and its writers.
pub type Session = Arc<Mutex<ClientConnection>>;

fn lock(s: &Session) -> std::sync::MutexGuard<'_, ClientConnection> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs the handshake on `stream` (blocking, within `timeout`), verifying the certificate for
/// `host`.
///
/// # Errors
/// The reason, in words: a verification failure names what failed.
pub fn handshake(
    tls: &Tls,
    mut stream: &TcpStream,
    host: &str,
    timeout: Duration,
) -> Result<Session, String> {
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| format!("'{host}' cannot be checked against a certificate: {e}"))?;
    let mut conn = ClientConnection::new(tls.config.clone(), name)
        .map_err(|e| format!("TLS setup failed: {e}"))?;
    let (old_read, old_write) = (
        stream.read_timeout().ok().flatten(),
        stream.write_timeout().ok().flatten(),
    );
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let deadline = Instant::now() + timeout;
    while conn.is_handshaking() {
        if Instant::now() > deadline {
            return Err(format!("TLS handshake not done within {timeout:?}"));
        }
        if let Err(e) = conn.complete_io(&mut stream) {
            // rustls puts its own error (a certificate it refused) inside the I/O error.
            let why = e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                .map_or_else(|| e.to_string(), ToString::to_string);
            return Err(format!("TLS handshake failed: {why}"));
        }
    }
    let _ = stream.set_read_timeout(old_read);
    let _ = stream.set_write_timeout(old_write);
    Ok(Arc::new(Mutex::new(conn)))
}

/// Ciphertext read from the socket and not yet taken by the session.
pub struct RawIn {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Default for RawIn {
    fn default() -> Self {
        Self {
            buf: vec![0; 32 * 1024],
            start: 0,
            end: 0,
        }
    }
}

/// Reads plaintext into `out`: what the session already holds, else what one socket read
/// brings. `Ok(0)` is the end of the stream.
///
/// # Errors
/// The socket's (timeouts included, as `WouldBlock`/`TimedOut`), or a TLS error as `InvalidData`.
pub fn read(
    session: &Session,
    mut stream: &TcpStream,
    raw: &mut RawIn,
    out: &mut [u8],
) -> io::Result<usize> {
    loop {
        {
            let mut c = lock(session);
            match c.reader().read(out) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if raw.start < raw.end {
                // Feed what we have; the session may take only part of it until its plaintext
                // is read, which the next turn of the loop does.
                let mut rest = &raw.buf[raw.start..raw.end];
                let taken = c.read_tls(&mut rest)?;
                raw.start += taken;
                c.process_new_packets()
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                // Anything the session must answer (a key update, an alert) goes out now.
                while c.wants_write() {
                    if c.write_tls(&mut stream).is_err() {
                        break;
                    }
                }
                continue;
            }
        }
        // Nothing to decrypt: wait for ciphertext without holding the session.
        raw.start = 0;
        raw.end = 0;
        let n = stream.read(&mut raw.buf)?;
        if n == 0 {
            return Ok(0);
        }
        raw.end = n;
    }
}

/// Encrypts `bytes` and writes the records; on a timeout the session is let go before the next
/// try. `give_up` is asked after every timeout.
///
/// # Errors
/// The socket's; `TimedOut` when `give_up` says so.
pub fn write_all(
    session: &Session,
    mut stream: &TcpStream,
    mut bytes: &[u8],
    give_up: &dyn Fn(Instant) -> bool,
) -> io::Result<()> {
    let mut progress_at = Instant::now();
    loop {
        let mut c = lock(session);
        while !bytes.is_empty() {
            let n = c.writer().write(bytes)?;
            if n == 0 {
                break;
            }
            bytes = &bytes[n..];
        }
        match c.write_tls(&mut stream) {
            Ok(_) => progress_at = Instant::now(),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                drop(c);
                if give_up(progress_at) {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the server stopped reading",
                    ));
                }
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        if bytes.is_empty() && !c.wants_write() {
            return Ok(());
        }
    }
}
