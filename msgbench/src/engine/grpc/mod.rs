//! gRPC, msgbench's second protocol: connections (HTTP/2 over TCP, or TLS with the same rustls
//! configuration the NATS side uses), a codec that moves prebuilt bytes, server reflection, and
//! the submodules for definitions ([`schema`]), message templates ([`template`]), the load loop
//! ([`load`]) and the reference log service ([`log`]).
//!
//! Messages are encoded before they reach the codec, so the codec copies bytes and nothing
//! else; responses are counted, never decoded, since only their arrival and status matter.

pub mod h2frame;
pub mod h2raw;
pub mod load;
pub mod log;
pub mod schema;
pub mod template;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::{Channel, Endpoint, Uri};

/// Moves already-encoded messages out, and counts the bytes of those that come back.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = usize;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Self::Error> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = usize;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<usize>, Self::Error> {
        let n = src.remaining();
        src.advance(n);
        Ok(Some(n))
    }
}

/// Where and how to connect.
#[derive(Clone)]
pub struct Target {
    /// `http://host:port` or `https://host:port`.
    pub uri: Uri,
    /// TLS, when the URL is https.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The name the certificate must carry (default: the URL's host).
    pub server_name: String,
    pub connect_timeout: Duration,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Target({})", self.uri)
    }
}

/// Opens one HTTP/2 connection. Must run inside a tokio runtime: the connection's task lives
/// on it, so a client and its connection share one thread.
///
/// # Errors
/// Why the connection could not be made.
pub async fn connect(t: &Target) -> Result<Channel, String> {
    let authority = t
        .uri
        .authority()
        .map(|a| a.as_str().to_string())
        .ok_or_else(|| format!("{}: no host:port", t.uri))?;
    // Large windows: with many calls in flight on one connection, the 64 KiB defaults of
    // HTTP/2 would throttle the sender rather than the service.
    let plain = Endpoint::from_shared(format!("http://{authority}"))
        .map_err(|e| e.to_string())?
        .connect_timeout(t.connect_timeout)
        .tcp_nodelay(true)
        .initial_stream_window_size(Some(1 << 20))
        .initial_connection_window_size(Some(16 << 20));
    let Some(config) = &t.tls else {
        return plain.connect().await.map_err(|e| explain(&e));
    };
    // tonic's own TLS cannot skip verification, and msgbench's flags must mean the same for
    // gRPC as for NATS; so TLS is done here, and the requests still say https.
    let mut config = (**config).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = rustls::pki_types::ServerName::try_from(t.server_name.clone())
        .map_err(|e| format!("'{}' is not a valid server name: {e}", t.server_name))?;
    let endpoint = plain.origin(t.uri.clone());
    let service = tower::service_fn(move |_: Uri| {
        let connector = connector.clone();
        let name = name.clone();
        let authority = authority.clone();
        async move {
            let tcp = tokio::net::TcpStream::connect(authority.as_str()).await?;
            tcp.set_nodelay(true)?;
            let tls = connector.connect(name, tcp).await?;
            Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tls))
        }
    });
    endpoint
        .connect_with_connector(service)
        .await
        .map_err(|e| explain(&e))
}

/// A transport error with its causes, which is where the useful part is.
fn explain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let c_s = c.to_string();
        if !s.contains(&c_s) {
            s.push_str(": ");
            s.push_str(&c_s);
        }
        cause = c.source();
    }
    s
}

/// Asks the server's reflection service for the file defining `symbol`, and for the files it
/// imports, until the set is complete. `grpc.reflection.v1` first, then the older v1alpha that
/// servers built before v1 existed offer (the two have the same messages on the wire).
///
/// # Errors
/// No reflection service, or an answer that does not hold the symbol.
pub async fn reflect(
    channel: Channel,
    symbol: &str,
) -> Result<prost_reflect::DescriptorPool, String> {
    const V1: &str = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
    const V1ALPHA: &str = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
    match reflect_at(channel.clone(), V1, symbol).await {
        Err(s) if s.code() == tonic::Code::Unimplemented => {
            reflect_at(channel, V1ALPHA, symbol).await.map_err(|s| {
                format!(
                    "server reflection is not available ({}: {}); give the service's \
                     definition with --proto",
                    code_name(s.code()),
                    s.message()
                )
            })?
        }
        Err(s) => Err(format!("server reflection failed: {}", s.message())),
        Ok(r) => r,
    }
}

async fn reflect_at(
    channel: Channel,
    path: &'static str,
    symbol: &str,
) -> Result<Result<prost_reflect::DescriptorPool, String>, tonic::Status> {
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::{ServerReflectionRequest, ServerReflectionResponse};

    let mut grpc = tonic::client::Grpc::new(channel);
    let mut files: Vec<Vec<u8>> = Vec::new();
    let mut asks = vec![MessageRequest::FileContainingSymbol(symbol.to_string())];
    let mut asked = std::collections::HashSet::new();
    // Each round asks for what is still missing; a server answers with the file and often its
    // imports too. Bounded: a definition with more than 64 levels of imports is not real.
    for _ in 0..64 {
        if asks.is_empty() {
            break;
        }
        let requests: Vec<ServerReflectionRequest> = asks
            .drain(..)
            .map(|m| ServerReflectionRequest {
                host: String::new(),
                message_request: Some(m),
            })
            .collect();
        grpc.ready()
            .await
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        let codec =
            tonic_prost::ProstCodec::<ServerReflectionRequest, ServerReflectionResponse>::default();
        let mut stream = grpc
            .streaming(
                tonic::Request::new(tokio_stream::iter(requests)),
                tonic::codegen::http::uri::PathAndQuery::from_static(path),
                codec,
            )
            .await?
            .into_inner();
        while let Some(r) = stream.message().await? {
            match r.message_response {
                Some(MessageResponse::FileDescriptorResponse(f)) => {
                    files.extend(f.file_descriptor_proto);
                }
                Some(MessageResponse::ErrorResponse(e)) => {
                    return Ok(Err(format!("server reflection: {}", e.error_message)));
                }
                _ => {}
            }
        }
        for name in schema::missing_imports(&files) {
            if asked.insert(name.clone()) {
                asks.push(MessageRequest::FileByFilename(name));
            }
        }
    }
    Ok(schema::from_files(&files))
}

/// The canonical name of a status code, as gRPC writes it (`DEADLINE_EXCEEDED`).
pub fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code as C;
    match code {
        C::Ok => "OK",
        C::Cancelled => "CANCELLED",
        C::Unknown => "UNKNOWN",
        C::InvalidArgument => "INVALID_ARGUMENT",
        C::DeadlineExceeded => "DEADLINE_EXCEEDED",
        C::NotFound => "NOT_FOUND",
        C::AlreadyExists => "ALREADY_EXISTS",
        C::PermissionDenied => "PERMISSION_DENIED",
        C::ResourceExhausted => "RESOURCE_EXHAUSTED",
        C::FailedPrecondition => "FAILED_PRECONDITION",
        C::Aborted => "ABORTED",
        C::OutOfRange => "OUT_OF_RANGE",
        C::Unimplemented => "UNIMPLEMENTED",
        C::Internal => "INTERNAL",
        C::Unavailable => "UNAVAILABLE",
        C::DataLoss => "DATA_LOSS",
        C::Unauthenticated => "UNAUTHENTICATED",
    }
}
