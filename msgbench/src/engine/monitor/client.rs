//! The HTTP client that reads monitoring endpoints: hyper's HTTP/1 client (already in the tree
//! for the gRPC stack and the `--metrics-listen` server) over tokio's TCP, with rustls for
//! `https://`, basic or bearer credentials from the endpoint, a keep-alive connection per
//! endpoint, a bound on the size of an answer, and a time limit on every request. It runs on
//! a single-threaded tokio runtime of its own, so it needs no thread but the caller's.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{ACCEPT, AUTHORIZATION, HOST, USER_AGENT};
use hyper::Request;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::net::TcpStream;

use super::Endpoint;

/// The largest answer read: a `/jsz` of many streams and consumers is megabytes, never this.
const MAX_BODY: usize = 64 << 20;

/// Why an endpoint gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MonitorError {
    #[error("cannot connect ({0})")]
    Connect(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("TLS handshake failed ({0})")]
    Tls(String),
    #[error("HTTP failed ({0})")]
    Http(String),
    #[error("its answer is larger than {} MiB", MAX_BODY >> 20)]
    TooLarge,
    #[error("cannot start the HTTP client ({0})")]
    Runtime(String),
}

/// One answer: its status and body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Bytes,
}

impl Answer {
    /// The body as JSON.
    ///
    /// # Errors
    /// Why it is not: HTML, text, truncated JSON.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body).map_err(|e| {
            let start = String::from_utf8_lossy(&self.body[..self.body.len().min(40)])
                .trim_start()
                .to_ascii_lowercase();
            if start.starts_with("<!doctype") || start.starts_with("<html") {
                "an HTML page, not JSON".to_string()
            } else {
                format!("not JSON ({e})")
            }
        })
    }
}

/// A kept-alive connection to one endpoint (none until the first request).
#[derive(Default)]
pub struct Conn {
    sender: Option<SendRequest<Empty<Bytes>>>,
}

/// The client, with its runtime and TLS configuration.
pub struct Client {
    rt: tokio::runtime::Runtime,
    tls: Option<Arc<ClientConfig>>,
}

impl Client {
    /// A client that verifies `https://` endpoints with `tls` (the run's `--tls-*` settings),
    /// or the system's roots when it is `None`.
    ///
    /// # Errors
    /// [`MonitorError::Runtime`] when the runtime cannot be made (out of file descriptors).
    pub fn new(tls: Option<Arc<ClientConfig>>) -> Result<Self, MonitorError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| MonitorError::Runtime(e.to_string()))?;
        Ok(Self { rt, tls })
    }

    /// Runs `f` on the client's runtime, on this thread; on a thread of its own when this one
    /// already runs a runtime (which may not be blocked on).
    pub fn block_on<F: Future + Send>(&self, f: F) -> F::Output
    where
        F::Output: Send,
    {
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|s| {
                s.spawn(|| self.rt.block_on(f))
                    .join()
                    .expect("the monitor's thread does not panic")
            })
        } else {
            self.rt.block_on(f)
        }
    }

    /// `GET path` of `endpoint` over `conn` (made, or made again, as needed), all of it within
    /// `limit`.
    ///
    /// # Errors
    /// Why no answer came: see [`MonitorError`].
    pub async fn get(
        &self,
        conn: &mut Conn,
        endpoint: &Endpoint,
        path: &str,
        limit: Duration,
    ) -> Result<Answer, MonitorError> {
        match tokio::time::timeout(limit, self.request(conn, endpoint, path)).await {
            Ok(r) => r,
            Err(_) => {
                // A connection in the middle of an answer cannot be used again.
                conn.sender = None;
                Err(MonitorError::Timeout(limit))
            }
        }
    }

    async fn request(
        &self,
        conn: &mut Conn,
        endpoint: &Endpoint,
        path: &str,
    ) -> Result<Answer, MonitorError> {
        // A kept connection the server has since closed fails at once: it is made again once.
        for fresh in [false, true] {
            let reused = !fresh && conn.sender.is_some();
            if conn.sender.as_ref().is_none_or(SendRequest::is_closed) || fresh {
                conn.sender = Some(self.connect(endpoint).await?);
            }
            let sender = conn.sender.as_mut().expect("connected");
            match send(sender, endpoint, path).await {
                Ok(a) => return Ok(a),
                Err(e) => {
                    conn.sender = None;
                    if !reused {
                        return Err(e);
                    }
                }
            }
        }
        unreachable!("the second attempt returns")
    }

    async fn connect(
        &self,
        endpoint: &Endpoint,
    ) -> Result<SendRequest<Empty<Bytes>>, MonitorError> {
        let tcp = TcpStream::connect((endpoint.host(), endpoint.port()))
            .await
            .map_err(|e| MonitorError::Connect(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        if !endpoint.tls() {
            return handshake(TokioIo::new(tcp)).await;
        }
        let config = match &self.tls {
            Some(c) => Arc::clone(c),
            None => Arc::clone(
                &crate::engine::tls::default_config()
                    .map_err(MonitorError::Tls)?
                    .config,
            ),
        };
        let name = ServerName::try_from(endpoint.host().to_string())
            .map_err(|e| MonitorError::Tls(e.to_string()))?;
        let stream = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .map_err(|e| MonitorError::Tls(e.to_string()))?;
        handshake(TokioIo::new(stream)).await
    }
}

async fn handshake<T>(io: T) -> Result<SendRequest<Empty<Bytes>>, MonitorError>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| MonitorError::Http(e.to_string()))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

async fn send(
    sender: &mut SendRequest<Empty<Bytes>>,
    endpoint: &Endpoint,
    path: &str,
) -> Result<Answer, MonitorError> {
    let http = |e: hyper::Error| MonitorError::Http(e.to_string());
    sender.ready().await.map_err(http)?;
    let mut req = Request::get(endpoint.target(path))
        .header(HOST, endpoint.authority())
        .header(USER_AGENT, concat!("msgbench/", env!("CARGO_PKG_VERSION")))
        .header(ACCEPT, "application/json");
    if let Some(auth) = endpoint.authorization() {
        req = req.header(AUTHORIZATION, auth);
    }
    let req = req
        .body(Empty::<Bytes>::new())
        .map_err(|e| MonitorError::Http(e.to_string()))?;
    let res = sender.send_request(req).await.map_err(http)?;
    let status = res.status().as_u16();
    let body = Limited::new(res.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                MonitorError::TooLarge
            } else {
                MonitorError::Http(e.to_string())
            }
        })?
        .to_bytes();
    Ok(Answer { status, body })
}
