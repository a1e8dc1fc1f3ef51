//! The in-process gRPC test service (support/grpc_service.rs) checked on its own, with a
//! dynamic tonic client: every call shape, the chosen failure status, a deadline overrun,
//! server reflection, and TLS. The msgbench gRPC tests rely on all of it, so a fault here is
//! named here rather than as a puzzling msgbench failure.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::support::grpc_service::{self, DynamicCodec, ProbeService, SERVICE};
use prost_reflect::{DescriptorPool, DynamicMessage, MapKey, Value};
use serde_json::json;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request, Status};

/// Runs one test's client side on a runtime of its own, dropped (closing its connections)
/// before the test's service is, so the server's graceful stop has nothing to wait for.
fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// A client for the Probe service that knows its messages only from the .proto.
struct Client {
    grpc: tonic::client::Grpc<Channel>,
    pool: DescriptorPool,
}

impl Client {
    async fn connect(service: &ProbeService) -> Self {
        let channel = Endpoint::from_shared(service.url.clone())
            .unwrap()
            .connect()
            .await
            .expect("connects to the probe service");
        Self::over(channel)
    }

    fn over(channel: Channel) -> Self {
        Self {
            grpc: tonic::client::Grpc::new(channel),
            pool: grpc_service::descriptor_pool(),
        }
    }

    /// A message of the service's package from its JSON form.
    fn message(&self, name: &str, value: serde_json::Value) -> DynamicMessage {
        let desc = self
            .pool
            .get_message_by_name(&format!("msgbench.test.v1.{name}"))
            .unwrap();
        DynamicMessage::deserialize(desc, value).unwrap()
    }

    /// The path of `method`, and a codec that decodes its response type.
    async fn prepare(&mut self, method: &str) -> (PathAndQuery, DynamicCodec) {
        let output = self
            .pool
            .get_service_by_name(SERVICE)
            .unwrap()
            .methods()
            .find(|m| m.name() == method)
            .unwrap()
            .output();
        self.grpc.ready().await.expect("the channel is ready");
        let path = PathAndQuery::try_from(format!("/{SERVICE}/{method}")).unwrap();
        (path, DynamicCodec::new(output))
    }

    async fn unary(
        &mut self,
        method: &str,
        request: Request<DynamicMessage>,
    ) -> Result<DynamicMessage, Status> {
        let (path, codec) = self.prepare(method).await;
        Ok(self.grpc.unary(request, path, codec).await?.into_inner())
    }

    async fn client_streaming(
        &mut self,
        method: &str,
        requests: Vec<DynamicMessage>,
    ) -> Result<DynamicMessage, Status> {
        let (path, codec) = self.prepare(method).await;
        let stream = tokio_stream::iter(requests);
        Ok(self
            .grpc
            .client_streaming(Request::new(stream), path, codec)
            .await?
            .into_inner())
    }

    async fn server_streaming(
        &mut self,
        method: &str,
        request: DynamicMessage,
    ) -> Result<Vec<DynamicMessage>, Status> {
        let (path, codec) = self.prepare(method).await;
        let mut replies = self
            .grpc
            .server_streaming(Request::new(request), path, codec)
            .await?
            .into_inner();
        let mut all = Vec::new();
        while let Some(reply) = replies.message().await? {
            all.push(reply);
        }
        Ok(all)
    }
}

fn int(message: &DynamicMessage, field: &str) -> i64 {
    match message.get_field_by_name(field).unwrap().as_ref() {
        Value::I64(v) => *v,
        Value::U64(v) => *v as i64,
        Value::I32(v) => i64::from(*v),
        Value::U32(v) => i64::from(*v),
        other => panic!("{field} is not an integer: {other:?}"),
    }
}

fn text(message: &DynamicMessage, field: &str) -> String {
    message
        .get_field_by_name(field)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

fn echo_request(client: &Client, seq: i64) -> DynamicMessage {
    client.message(
        "EchoRequest",
        json!({"text": format!("m{seq}"), "seq": seq, "client": 3, "stream": "s1"}),
    )
}

#[test]
fn echo_returns_every_field_and_the_x_metadata() {
    let service = grpc_service::start();
    block_on(async {
        let mut client = Client::connect(&service).await;
        let sent = json!({
            "text": "hello",
            "seq": "42",
            "client": 7,
            "stream": "s-3",
            "ts": "1700000000123456789",
            "blob": "AAEC/w==",
            "inner": {"name": "nested", "values": [1, -2, 3]},
            "color": "COLOR_GREEN"
        });
        let mut request = Request::new(client.message("EchoRequest", sent.clone()));
        request
            .metadata_mut()
            .insert("x-run", "r1".parse().unwrap());
        request
            .metadata_mut()
            .insert("x-client", "7".parse().unwrap());
        request
            .metadata_mut()
            .insert("other", "no".parse().unwrap());
        let reply = client.unary("Echo", request).await.expect("Echo succeeds");

        // Every request field comes back under its own name, in the canonical JSON form.
        let mut got = serde_json::to_value(&reply).unwrap();
        let seen = got
            .as_object_mut()
            .unwrap()
            .remove("receivedMetadata")
            .expect("the reply carries the metadata it saw");
        assert_eq!(got, sent);
        assert_eq!(seen, json!({"x-run": "r1", "x-client": "7"}));
        assert_eq!(int(&reply, "seq"), 42);
        assert_eq!(
            reply.get_field_by_name("color").unwrap().as_enum_number(),
            Some(2)
        );
        let metadata = reply.get_field_by_name("received_metadata").unwrap();
        let metadata = metadata.as_map().unwrap();
        assert_eq!(
            metadata.get(&MapKey::String("x-run".into())),
            Some(&Value::String("r1".into()))
        );
    });
}

#[test]
fn fail_returns_the_chosen_status_and_code_zero_succeeds() {
    let service = grpc_service::start();
    block_on(async {
        let mut client = Client::connect(&service).await;
        let request = client.message(
            "FailRequest",
            json!({"code": 5, "message": "no such thing"}),
        );
        let status = client
            .unary("Fail", Request::new(request))
            .await
            .expect_err("Fail with code 5 fails");
        assert_eq!(status.code(), Code::NotFound);
        assert_eq!(status.message(), "no such thing");

        let request = client.message("FailRequest", json!({"code": 0}));
        let reply = client.unary("Fail", Request::new(request)).await.unwrap();
        assert_eq!(reply.fields().count(), 0, "an empty reply: {reply:?}");
    });
}

#[test]
fn a_short_deadline_expires_before_a_slow_reply() {
    let service = grpc_service::start();
    block_on(async {
        let mut client = Client::connect(&service).await;
        let mut request = Request::new(client.message("SlowRequest", json!({"delayMs": 30000})));
        request.set_timeout(Duration::from_millis(50));
        let started = Instant::now();
        let status = client
            .unary("Slow", request)
            .await
            .expect_err("the deadline expires");
        // The deadline ended the call, not the reply, which would take 30 s: half of that
        // tells the two apart however busy the machine.
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{:?}",
            started.elapsed()
        );
        // tonic (0.14) ends a call whose grpc-timeout expired with CANCELLED "Timeout expired",
        // on the client and the server alike; other stacks say DEADLINE_EXCEEDED.
        assert!(
            matches!(
                (status.code(), status.message()),
                (Code::DeadlineExceeded, _) | (Code::Cancelled, "Timeout expired")
            ),
            "{status:?}"
        );

        // With time to spare, the same call succeeds.
        let mut request = Request::new(client.message("SlowRequest", json!({"delayMs": 20})));
        request.set_timeout(Duration::from_secs(5));
        client
            .unary("Slow", request)
            .await
            .expect("Slow replies in time");
    });
}

#[test]
fn count_tallies_a_client_stream() {
    let service = grpc_service::start();
    block_on(async {
        let mut client = Client::connect(&service).await;
        let requests = (0..10).map(|seq| echo_request(&client, seq)).collect();
        let reply = client.client_streaming("Count", requests).await.unwrap();
        assert_eq!((int(&reply, "count"), int(&reply, "last_seq")), (10, 9));
    });
}

#[test]
fn ticks_streams_n_replies_in_order() {
    let service = grpc_service::start();
    block_on(async {
        let mut client = Client::connect(&service).await;
        let request = client.message("TicksRequest", json!({"n": 5, "intervalMs": 5}));
        let replies = client.server_streaming("Ticks", request).await.unwrap();
        let seqs: Vec<i64> = replies.iter().map(|r| int(r, "seq")).collect();
        assert_eq!(seqs, vec![0, 1, 2, 3, 4]);
    });
}

#[test]
fn chat_echoes_each_message_as_it_arrives() {
    let service = grpc_service::start();
    block_on(async {
        let mut client = Client::connect(&service).await;
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let (path, codec) = client.prepare("Chat").await;
        let mut request = Request::new(tokio_stream::wrappers::ReceiverStream::new(rx));
        request
            .metadata_mut()
            .insert("x-run", "chat".parse().unwrap());
        let mut replies = client
            .grpc
            .streaming(request, path, codec)
            .await
            .unwrap()
            .into_inner();
        // One message at a time, each reply awaited before the next is sent: the echo comes as
        // each request arrives, not when the client closes.
        for seq in 0..5 {
            tx.send(echo_request(&client, seq)).await.unwrap();
            let reply = replies.message().await.unwrap().expect("an echo");
            assert_eq!(
                (int(&reply, "seq"), text(&reply, "text")),
                (seq, format!("m{seq}"))
            );
            let metadata = reply.get_field_by_name("received_metadata").unwrap();
            assert_eq!(
                metadata
                    .as_map()
                    .unwrap()
                    .get(&MapKey::String("x-run".into())),
                Some(&Value::String("chat".into()))
            );
        }
        drop(tx);
        assert!(
            replies.message().await.unwrap().is_none(),
            "the call ends with the client's side"
        );
    });
}

#[test]
fn reflection_lists_the_probe_service() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;

    let service = grpc_service::start();
    block_on(async {
        let channel = Endpoint::from_shared(service.url.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut client = ServerReflectionClient::new(channel);
        let ask = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut answers = client
            .server_reflection_info(tokio_stream::iter([ask]))
            .await
            .unwrap()
            .into_inner();
        let answer = answers.message().await.unwrap().expect("an answer");
        let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
            panic!("not a service list: {answer:?}");
        };
        let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&SERVICE), "{names:?}");
    });
}

#[test]
fn unknown_methods_are_unimplemented() {
    let service = grpc_service::start();
    block_on(async {
        let mut client = Client::connect(&service).await;
        client.grpc.ready().await.unwrap();
        let codec = DynamicCodec::new(
            client
                .pool
                .get_message_by_name("msgbench.test.v1.EchoReply")
                .unwrap(),
        );
        let request = Request::new(echo_request(&client, 0));
        let path = PathAndQuery::from_static("/msgbench.test.v1.Probe/Nope");
        let status = client
            .grpc
            .unary(request, path, codec)
            .await
            .expect_err("no such method");
        assert_eq!(status.code(), Code::Unimplemented);
    });
}

#[test]
fn echo_over_tls_with_the_self_signed_certificate_trusted() {
    let (cert, key) = grpc_service::self_signed();
    let service = grpc_service::start_tls(&cert, &key);
    assert!(
        service.url.starts_with("https://localhost:"),
        "{}",
        service.url
    );
    block_on(async {
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&cert))
            .domain_name("localhost");
        let channel = Endpoint::from_shared(service.url.clone())
            .unwrap()
            .tls_config(tls)
            .unwrap()
            .connect()
            .await
            .expect("a verified TLS connection");
        let mut client = Client::over(channel);
        let request = Request::new(echo_request(&client, 1));
        let reply = client.unary("Echo", request).await.expect("Echo over TLS");
        assert_eq!(text(&reply, "text"), "m1");
    });
}

#[test]
fn dropping_the_service_stops_it_promptly() {
    let service = grpc_service::start();
    let addr = service.addr;
    block_on(async {
        let mut client = Client::connect(&service).await;
        let request = Request::new(echo_request(&client, 0));
        client.unary("Echo", request).await.unwrap();
    });
    let started = Instant::now();
    drop(service);
    // Its connections are closed, so the graceful stop has nothing to wait for and takes
    // milliseconds; one that waited on a connection would wait for good. The bound only
    // guards against that hang, with seconds to spare for a busy machine.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "still listening on {addr}"
    );
}
