//! Unary calls straight over `h2`, below tonic and hyper: the load loop's path for unary
//! methods, where a call is one request frame out and one response back.
//!
//! Measured against grpc-go's Greeter (bench/run_grpc_ceiling.py), tonic's `Channel` put two
//! extra tasks between the client and the socket for every call (tower's buffer worker, and
//! hyper's task piping the request body), each a wake-up and a hand-over per call. Here the
//! client opens the stream itself, sends the already-framed request as the stream's only DATA
//! frame, and reads the response on its own task; only h2's connection task stays.
//!
//! What tonic did and this keeps: the headers (`content-type`, `te`, `grpc-timeout`, the
//! user's metadata), every response read to its end, the status taken from the trailers (or
//! the trailers-only headers), HTTP statuses and stream resets mapped to gRPC codes the way
//! tonic maps them, and a unary answer with no message counted as INTERNAL.

use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tonic::codegen::http::{self, HeaderMap, HeaderValue, Method, Request, Uri};
use tonic::Code;

use super::{explain, Target};

/// One HTTP/2 connection for unary calls; clones share it. Its connection task runs on the
/// runtime that opened it.
#[derive(Clone)]
pub struct Wire {
    send: h2::client::SendRequest<Bytes>,
}

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Wire")
    }
}

/// Opens one connection (TCP, or TLS with the same configuration as [`super::connect`]) and
/// starts its connection task. Must run inside a tokio runtime.
///
/// # Errors
/// Why the connection could not be made.
pub async fn connect(t: &Target) -> Result<Wire, String> {
    let authority = t
        .uri
        .authority()
        .map(|a| a.as_str().to_string())
        .ok_or_else(|| format!("{}: no host:port", t.uri))?;
    let tcp = tokio::time::timeout(
        t.connect_timeout,
        tokio::net::TcpStream::connect(authority.as_str()),
    )
    .await
    .map_err(|_| format!("connecting to {authority}: timed out"))?
    .map_err(|e| format!("connecting to {authority}: {e}"))?;
    tcp.set_nodelay(true)
        .map_err(|e| format!("connecting to {authority}: {e}"))?;
    // The same large windows as the tonic connection: with many calls in flight, the 64 KiB
    // defaults of HTTP/2 would throttle the sender rather than the service.
    let mut b = h2::client::Builder::new();
    b.initial_window_size(1 << 20)
        .initial_connection_window_size(16 << 20);
    let Some(config) = &t.tls else {
        return start(b.handshake(tcp).await);
    };
    let mut config = (**config).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = rustls::pki_types::ServerName::try_from(t.server_name.clone())
        .map_err(|e| format!("'{}' is not a valid server name: {e}", t.server_name))?;
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS with {authority}: {}", explain(&e)))?;
    start(b.handshake(tls).await)
}

fn start<T>(
    handshake: Result<
        (
            h2::client::SendRequest<Bytes>,
            h2::client::Connection<T, Bytes>,
        ),
        h2::Error,
    >,
) -> Result<Wire, String>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (send, conn) = handshake.map_err(|e| format!("HTTP/2 handshake: {}", explain(&e)))?;
    // A failed connection fails its calls (each sees the error), so nothing is lost here.
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(Wire { send })
}

/// What every call of a client sends: the URI and the headers, built once.
#[derive(Debug, Clone)]
pub struct CallHead {
    pub(super) uri: Uri,
    pub(super) headers: HeaderMap,
}

impl CallHead {
    /// `base` is the server's URL (its scheme and authority count), `path` the method's.
    ///
    /// # Errors
    /// A URL and path that do not make a URI.
    pub fn new(
        base: &Uri,
        path: &http::uri::PathAndQuery,
        metadata: &tonic::metadata::MetadataMap,
        deadline: Option<std::time::Duration>,
    ) -> Result<Self, String> {
        let mut parts = http::uri::Parts::default();
        parts.scheme = base.scheme().cloned();
        parts.authority = base.authority().cloned();
        parts.path_and_query = Some(path.clone());
        let uri = Uri::from_parts(parts).map_err(|e| format!("{base}{path}: {e}"))?;
        let mut headers = metadata.clone().into_headers();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        headers.insert(http::header::TE, HeaderValue::from_static("trailers"));
        if let Some(d) = deadline {
            let v = HeaderValue::from_str(&grpc_timeout(d)).map_err(|e| e.to_string())?;
            headers.insert("grpc-timeout", v);
        }
        Ok(Self { uri, headers })
    }
}

/// A duration as gRPC's `grpc-timeout` wants it: at most 8 digits and a unit, in the finest
/// unit that fits.
pub fn grpc_timeout(d: std::time::Duration) -> String {
    const MAX: u128 = 99_999_999;
    let ns = d.as_nanos();
    for (unit, per) in [
        ('n', 1u128),
        ('u', 1_000),
        ('m', 1_000_000),
        ('S', 1_000_000_000),
        ('M', 60_000_000_000),
    ] {
        if ns / per <= MAX {
            return format!("{}{unit}", ns / per);
        }
    }
    format!("{}H", (ns / 3_600_000_000_000).min(MAX))
}

/// A message with its gRPC frame header (not compressed, 4-byte length), ready to send.
pub fn frame(msg: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + msg.len());
    b.put_u8(0);
    b.put_u32(u32::try_from(msg.len()).unwrap_or(u32::MAX));
    b.put_slice(msg);
    b.freeze()
}

/// The end of one unary call: its status, and the messages and their bytes that came back
/// (frame headers not counted, as tonic's decoder counts them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub code: Code,
    pub msgs: u64,
    pub bytes: u64,
}

impl Answer {
    fn failed(code: Code) -> Self {
        Self {
            code,
            msgs: 0,
            bytes: 0,
        }
    }
}

impl Wire {
    /// One unary call: `framed` (see [`frame`]) as the request's only DATA frame, the response
    /// read to its trailers.
    pub async fn unary(&mut self, head: &CallHead, framed: Bytes) -> Answer {
        match self.exchange(head, framed).await {
            Ok(a) => a,
            Err(e) => Answer::failed(code_from_h2(&e)),
        }
    }

    async fn exchange(&mut self, head: &CallHead, framed: Bytes) -> Result<Answer, h2::Error> {
        futures_util::future::poll_fn(|cx| self.send.poll_ready(cx)).await?;
        let mut req = Request::new(());
        *req.method_mut() = Method::POST;
        *req.uri_mut() = head.uri.clone();
        *req.headers_mut() = head.headers.clone();
        let (response, mut body_out) = self.send.send_request(req, false)?;
        body_out.send_data(framed, true)?;
        let (parts, mut body) = response.await?.into_parts();
        let mut frames = Frames::default();
        // Trailers-only: the status is in the headers and nothing follows.
        let code = match status_of(&parts.headers) {
            Some(c) => c,
            None => {
                while let Some(chunk) = body.data().await {
                    let chunk = chunk?;
                    let _ = body.flow_control().release_capacity(chunk.len());
                    frames.feed(&chunk);
                }
                match body.trailers().await?.as_ref().and_then(status_of) {
                    Some(c) => c,
                    None => code_from_http(parts.status.as_u16()),
                }
            }
        };
        Ok(Answer {
            code: settle(code, &frames),
            msgs: frames.msgs,
            bytes: frames.bytes,
        })
    }
}

/// Counts the gRPC messages of a response body as its chunks arrive, wherever they split.
#[derive(Debug, Default)]
pub(super) struct Frames {
    /// Bytes of the current frame header seen so far (0 to 5) and the header itself.
    head: [u8; 5],
    head_len: usize,
    /// Bytes of the current message still to come.
    left: u64,
    pub(super) msgs: u64,
    pub(super) bytes: u64,
    compressed: bool,
}

impl Frames {
    pub(super) fn feed(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            if self.left > 0 {
                let n = (self.left as usize).min(chunk.len());
                self.left -= n as u64;
                chunk.advance(n);
                continue;
            }
            let n = (5 - self.head_len).min(chunk.len());
            self.head[self.head_len..self.head_len + n].copy_from_slice(&chunk[..n]);
            self.head_len += n;
            chunk.advance(n);
            if self.head_len == 5 {
                self.head_len = 0;
                self.compressed |= self.head[0] & 1 == 1;
                let len = u64::from(u32::from_be_bytes([
                    self.head[1],
                    self.head[2],
                    self.head[3],
                    self.head[4],
                ]));
                self.msgs += 1;
                self.bytes += len;
                self.left = len;
            }
        }
    }
}

/// The code of a unary answer, given the messages that came with it.
pub(super) fn settle(code: Code, frames: &Frames) -> Code {
    match code {
        // A message flagged compressed: none was asked for (tonic fails it the same way).
        Code::Ok if frames.compressed => Code::Internal,
        // A unary answer must hold its message (tonic: "Missing response message.").
        Code::Ok if frames.msgs == 0 => Code::Internal,
        c => c,
    }
}

fn status_of(h: &HeaderMap) -> Option<Code> {
    h.get("grpc-status").map(|v| Code::from_bytes(v.as_bytes()))
}

/// No grpc-status: the code the HTTP status stands for (gRPC's mapping, as tonic applies it).
pub(super) fn code_from_http(s: u16) -> Code {
    match s {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502 | 503 | 504 => Code::Unavailable,
        _ => Code::Unknown,
    }
}

/// A stream or connection error as a gRPC code: a reset's reason as gRPC's HTTP/2 mapping
/// says (as tonic maps it); a broken or closed connection as UNAVAILABLE.
fn code_from_h2(e: &h2::Error) -> Code {
    match e.reason() {
        _ if e.is_io() || e.is_go_away() => Code::Unavailable,
        Some(r) => code_from_reason(r),
        None => Code::Unavailable,
    }
}

/// A stream reset's reason as a gRPC code (gRPC's HTTP/2 mapping).
pub(super) fn code_from_reason(r: h2::Reason) -> Code {
    use h2::Reason as R;
    match r {
        R::NO_ERROR
        | R::PROTOCOL_ERROR
        | R::INTERNAL_ERROR
        | R::FLOW_CONTROL_ERROR
        | R::SETTINGS_TIMEOUT
        | R::FRAME_SIZE_ERROR
        | R::COMPRESSION_ERROR
        | R::CONNECT_ERROR => Code::Internal,
        R::REFUSED_STREAM => Code::Unavailable,
        R::CANCEL => Code::Cancelled,
        R::ENHANCE_YOUR_CALM => Code::ResourceExhausted,
        R::INADEQUATE_SECURITY => Code::PermissionDenied,
        _ => Code::Unavailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_counted_across_any_split() {
        let mut body = frame(b"hello").to_vec();
        body.extend_from_slice(&frame(b""));
        body.extend_from_slice(&frame(&[7u8; 300]));
        for split in 1..body.len() {
            let mut f = Frames::default();
            for chunk in body.chunks(split) {
                f.feed(chunk);
            }
            assert_eq!(
                (f.msgs, f.bytes, f.left, f.head_len),
                (3, 305, 0, 0),
                "split {split}"
            );
            assert!(!f.compressed);
        }
    }

    #[test]
    fn a_compressed_flag_is_noticed() {
        let mut f = Frames::default();
        f.feed(&[1, 0, 0, 0, 1, 9]);
        assert!(f.compressed);
        assert_eq!(f.msgs, 1);
    }

    #[test]
    fn grpc_timeout_takes_the_finest_unit_that_fits() {
        use std::time::Duration;
        assert_eq!(grpc_timeout(Duration::from_millis(20)), "20000000n");
        assert_eq!(grpc_timeout(Duration::from_secs(5)), "5000000u");
        assert_eq!(grpc_timeout(Duration::from_secs(3600)), "3600000m");
        assert_eq!(grpc_timeout(Duration::from_secs(200_000)), "200000S");
    }
}
