//! The gRPC service the end-to-end tests run msgbench against: `msgbench.test.v1.Probe` from
//! tests/it/proto/testsvc.proto, served in process by a real tonic server on a free loopback port
//! (plaintext or TLS) with server reflection, and stopped on drop.
//!
//! The service is defined only by the .proto file: it is compiled at run time with protox and
//! served through `DynamicMessage`s, so the tests exercise the same descriptor-driven path
//! msgbench itself takes, and no generated code is needed for a service that exists only here.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use prost::Message;
use prost_reflect::{
    DescriptorPool, DynamicMessage, MapKey, MessageDescriptor, ReflectMessage, ServiceDescriptor,
    Value,
};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tonic::body::Body;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::{http, BoxFuture, BoxStream, Service};
use tonic::metadata::{KeyAndValueRef, MetadataMap};
use tonic::server::{Grpc, NamedService};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};
use tonic::{Code, Request, Response, Status, Streaming};

/// The service's .proto file, relative to [`proto_dir`].
pub const PROTO: &str = "testsvc.proto";

/// The fully qualified name of the service.
pub const SERVICE: &str = "msgbench.test.v1.Probe";

/// How long a stopping server waits for calls still in flight (a `Slow` call, an open `Chat`)
/// before the runtime is dropped under them; long enough for a clean close, short enough that a
/// test that leaves a call open does not hang in drop.
const DRAIN: Duration = Duration::from_secs(2);

/// The folder holding the test .proto files (the import path for [`PROTO`]).
pub fn proto_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/proto")
}

/// The compiled descriptors, once per test process: the encoded FileDescriptorSet is kept for
/// the life of the process because the reflection service is built from a borrowed slice.
fn descriptors() -> &'static (Vec<u8>, DescriptorPool) {
    static DESCRIPTORS: OnceLock<(Vec<u8>, DescriptorPool)> = OnceLock::new();
    DESCRIPTORS.get_or_init(|| {
        let set =
            protox::compile([PROTO], [proto_dir()]).expect("tests/it/proto/testsvc.proto compiles");
        let bytes = set.encode_to_vec();
        let pool = DescriptorPool::decode(bytes.as_slice()).expect("the compiled set decodes");
        (bytes, pool)
    })
}

/// The descriptors of testsvc.proto (and anything it imports).
pub fn descriptor_pool() -> DescriptorPool {
    descriptors().1.clone()
}

/// A certificate and key (both PEM) for "localhost" and 127.0.0.1, self-signed, so a client
/// can trust the certificate itself as its only CA.
pub fn self_signed() -> (String, String) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("a self-signed certificate");
    (certified.cert.pem(), certified.signing_key.serialize_pem())
}

/// A running Probe server; dropping it stops the server and its runtime.
pub struct ProbeService {
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT`, or `https://localhost:PORT` when serving TLS (the name the
    /// certificate from [`self_signed`] is for).
    pub url: String,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for ProbeService {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts the service over plaintext HTTP/2 (h2c).
pub fn start() -> ProbeService {
    serve(Server::builder(), "http", "127.0.0.1", true)
}

/// Starts the service with only the older reflection version (v1alpha), as servers built
/// before v1 existed have it.
pub fn start_v1alpha_only() -> ProbeService {
    serve(Server::builder(), "http", "127.0.0.1", false)
}

/// Starts the service over TLS with the given certificate chain and key (PEM).
pub fn start_tls(cert_pem: &str, key_pem: &str) -> ProbeService {
    let tls = ServerTlsConfig::new().identity(Identity::from_pem(cert_pem, key_pem));
    let builder = Server::builder()
        .tls_config(tls)
        .expect("the TLS certificate and key are usable");
    serve(builder, "https", "localhost", true)
}

fn serve(mut builder: Server, scheme: &str, host: &str, v1: bool) -> ProbeService {
    let bytes: &'static [u8] = &descriptors().0;
    // Both reflection versions: current clients ask for v1, older ones know only v1alpha.
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(bytes)
        .build_v1()
        .expect("reflection v1 builds");
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(bytes)
        .build_v1alpha()
        .expect("reflection v1alpha builds");
    let router = builder
        .add_service(ProbeServer::new())
        .add_optional_service(v1.then_some(reflection_v1))
        .add_service(reflection_v1alpha);

    // Its own runtime, so that synchronous tests (which run msgbench as a child process) can
    // start a server without being async themselves.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let incoming = {
        // Binding here, not in the thread, so the port is known (and listening) on return.
        let _context = runtime.enter();
        TcpIncoming::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("binds a loopback port")
            .with_nodelay(Some(true))
    };
    let addr = incoming.local_addr().expect("the bound address");

    let (shutdown, stop) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("probe-grpc".into())
        .spawn(move || {
            runtime.block_on(async move {
                let (drain_tx, drain_rx) = oneshot::channel::<()>();
                let server = router.serve_with_incoming_shutdown(incoming, async {
                    let _ = drain_rx.await;
                });
                tokio::pin!(server);
                tokio::select! {
                    result = &mut server => result.expect("the probe server runs"),
                    // A dropped sender counts as a stop too: nothing can stop it later.
                    _ = stop => {
                        let _ = drain_tx.send(());
                        let _ = tokio::time::timeout(DRAIN, server).await;
                    }
                }
            });
            // Dropping the runtime here cancels whatever the drain left running.
            drop(runtime);
        })
        .expect("a thread for the probe server");
    ProbeService {
        addr,
        url: format!("{scheme}://{host}:{}", addr.port()),
        shutdown: Some(shutdown),
        thread: Some(thread),
    }
}

/// A gRPC codec for messages known only by descriptor: it encodes any `DynamicMessage` and
/// decodes into the one message type it was made for (the request type on a server, the
/// response type on a client).
#[derive(Clone)]
pub struct DynamicCodec {
    decode: MessageDescriptor,
}

impl DynamicCodec {
    pub fn new(decode: MessageDescriptor) -> Self {
        Self { decode }
    }
}

impl Codec for DynamicCodec {
    type Encode = DynamicMessage;
    type Decode = DynamicMessage;
    type Encoder = DynamicEncoder;
    type Decoder = DynamicDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        DynamicEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        DynamicDecoder(self.decode.clone())
    }
}

pub struct DynamicEncoder;

impl Encoder for DynamicEncoder {
    type Item = DynamicMessage;
    type Error = Status;

    fn encode(&mut self, item: DynamicMessage, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst).map_err(|e| {
            Status::internal(format!("encoding {}: {e}", item.descriptor().full_name()))
        })
    }
}

pub struct DynamicDecoder(MessageDescriptor);

impl Decoder for DynamicDecoder {
    type Item = DynamicMessage;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<DynamicMessage>, Status> {
        DynamicMessage::decode(self.0.clone(), src)
            .map(Some)
            .map_err(|e| Status::internal(format!("decoding {}: {e}", self.0.full_name())))
    }
}

/// The reply types the handlers build.
struct Probe {
    echo_reply: MessageDescriptor,
    count_reply: MessageDescriptor,
}

/// The Probe service as a tower service: routes a call by its path to the method's handler,
/// with a codec for the method's request type.
#[derive(Clone)]
struct ProbeServer {
    probe: Arc<Probe>,
    service: ServiceDescriptor,
}

impl ProbeServer {
    fn new() -> Self {
        let pool = descriptor_pool();
        let message = |name: &str| {
            pool.get_message_by_name(&format!("msgbench.test.v1.{name}"))
                .unwrap_or_else(|| panic!("testsvc.proto defines {name}"))
        };
        let probe = Arc::new(Probe {
            echo_reply: message("EchoReply"),
            count_reply: message("CountReply"),
        });
        let service = pool
            .get_service_by_name(SERVICE)
            .expect("testsvc.proto defines the service");
        Self { probe, service }
    }
}

impl NamedService for ProbeServer {
    const NAME: &'static str = SERVICE;
}

impl Service<http::Request<Body>> for ProbeServer {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let path = req.uri().path().to_string();
        let method = path
            .strip_prefix(&format!("/{SERVICE}/"))
            .and_then(|name| self.service.methods().find(|m| m.name() == name));
        let Some(method) = method else {
            return Box::pin(async move {
                Ok(Status::unimplemented(format!("no method {path}")).into_http())
            });
        };
        let mut grpc = Grpc::new(DynamicCodec::new(method.input()));
        let p = self.probe.clone();
        Box::pin(async move {
            Ok(match method.name() {
                "Echo" => grpc.unary(Call(move |r| echo(p.clone(), r)), req).await,
                "Fail" => grpc.unary(Call(move |r| fail(p.clone(), r)), req).await,
                "Slow" => grpc.unary(Call(move |r| slow(p.clone(), r)), req).await,
                "Count" => {
                    grpc.client_streaming(Call(move |r| count(p.clone(), r)), req)
                        .await
                }
                "Ticks" => {
                    grpc.server_streaming(Call(move |r| ticks(p.clone(), r)), req)
                        .await
                }
                "Chat" => grpc.streaming(Call(move |r| chat(p.clone(), r)), req).await,
                // In the .proto but not served here: say so rather than hang or panic.
                other => Status::unimplemented(format!("{other} is not implemented")).into_http(),
            })
        })
    }
}

/// One call's handler as a tower service; tonic's blanket impls make it the unary, streaming
/// or client/server-streaming service `Grpc` wants, by its request and response types.
struct Call<F>(F);

impl<F, Fut, Req, Resp> Service<Request<Req>> for Call<F>
where
    F: FnMut(Request<Req>) -> Fut,
    Fut: Future<Output = Result<Response<Resp>, Status>>,
{
    type Response = Response<Resp>;
    type Error = Status;
    type Future = Fut;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Req>) -> Fut {
        (self.0)(req)
    }
}

/// The request's ASCII metadata under "x-" keys, as the `received_metadata` map value.
fn x_metadata(metadata: &MetadataMap) -> Value {
    let mut seen = HashMap::new();
    for entry in metadata.iter() {
        if let KeyAndValueRef::Ascii(key, value) = entry {
            if let (true, Ok(value)) = (key.as_str().starts_with("x-"), value.to_str()) {
                seen.insert(
                    MapKey::String(key.as_str().to_string()),
                    Value::String(value.to_string()),
                );
            }
        }
    }
    Value::Map(seen)
}

/// An EchoReply carrying every set field of `request` and the call's "x-" metadata. Fields are
/// copied by name, so a field added to both messages in the .proto is echoed with no change
/// here.
fn echo_of(probe: &Probe, request: &DynamicMessage, metadata: &Value) -> DynamicMessage {
    let mut reply = DynamicMessage::new(probe.echo_reply.clone());
    for (field, value) in request.fields() {
        if let Some(target) = probe.echo_reply.get_field_by_name(field.name()) {
            reply.set_field(&target, value.clone());
        }
    }
    reply.set_field_by_name("received_metadata", metadata.clone());
    reply
}

async fn echo(
    probe: Arc<Probe>,
    req: Request<DynamicMessage>,
) -> Result<Response<DynamicMessage>, Status> {
    let metadata = x_metadata(req.metadata());
    Ok(Response::new(echo_of(&probe, req.get_ref(), &metadata)))
}

async fn fail(
    probe: Arc<Probe>,
    req: Request<DynamicMessage>,
) -> Result<Response<DynamicMessage>, Status> {
    let req = req.into_inner();
    let code = field(&req, "code").as_i32().unwrap_or_default();
    let message = field(&req, "message")
        .as_str()
        .unwrap_or_default()
        .to_string();
    match Code::from(code) {
        Code::Ok => Ok(Response::new(DynamicMessage::new(probe.echo_reply.clone()))),
        code => Err(Status::new(code, message)),
    }
}

async fn slow(
    probe: Arc<Probe>,
    req: Request<DynamicMessage>,
) -> Result<Response<DynamicMessage>, Status> {
    let delay = field(req.get_ref(), "delay_ms")
        .as_u32()
        .unwrap_or_default();
    tokio::time::sleep(Duration::from_millis(delay.into())).await;
    Ok(Response::new(DynamicMessage::new(probe.echo_reply.clone())))
}

async fn count(
    probe: Arc<Probe>,
    req: Request<Streaming<DynamicMessage>>,
) -> Result<Response<DynamicMessage>, Status> {
    let mut stream = req.into_inner();
    let (mut count, mut last_seq) = (0u64, 0i64);
    while let Some(message) = stream.message().await? {
        count += 1;
        last_seq = field(&message, "seq").as_i64().unwrap_or_default();
    }
    let mut reply = DynamicMessage::new(probe.count_reply.clone());
    reply.set_field_by_name("count", Value::U64(count));
    reply.set_field_by_name("last_seq", Value::I64(last_seq));
    Ok(Response::new(reply))
}

async fn ticks(
    probe: Arc<Probe>,
    req: Request<DynamicMessage>,
) -> Result<Response<BoxStream<DynamicMessage>>, Status> {
    let n = field(req.get_ref(), "n").as_u32().unwrap_or_default();
    let interval = Duration::from_millis(
        field(req.get_ref(), "interval_ms")
            .as_u32()
            .unwrap_or_default()
            .into(),
    );
    // A small buffer: the producer runs at most a few replies ahead of a slow reader, and
    // stops when the call goes away (the send fails).
    let (tx, rx) = mpsc::channel(8);
    tokio::spawn(async move {
        for seq in 0..n {
            if seq > 0 && !interval.is_zero() {
                tokio::time::sleep(interval).await;
            }
            let mut reply = DynamicMessage::new(probe.echo_reply.clone());
            reply.set_field_by_name("seq", Value::I64(seq.into()));
            if tx.send(Ok(reply)).await.is_err() {
                return;
            }
        }
    });
    Ok(Response::new(
        Box::pin(ReceiverStream::new(rx)) as BoxStream<_>
    ))
}

async fn chat(
    probe: Arc<Probe>,
    req: Request<Streaming<DynamicMessage>>,
) -> Result<Response<BoxStream<DynamicMessage>>, Status> {
    let metadata = x_metadata(req.metadata());
    // Each reply is made as its request is read, so replies keep the requests' order and pace.
    let replies = req
        .into_inner()
        .map(move |message| message.map(|m| echo_of(&probe, &m, &metadata)));
    Ok(Response::new(Box::pin(replies) as BoxStream<_>))
}

/// A field's value, or its default when unset.
fn field<'a>(message: &'a DynamicMessage, name: &str) -> std::borrow::Cow<'a, Value> {
    message
        .get_field_by_name(name)
        .unwrap_or_else(|| panic!("{} has a field {name}", message.descriptor().full_name()))
}
