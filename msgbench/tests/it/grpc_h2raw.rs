//! Unary calls on msgbench's own HTTP/2 path (engine::grpc::h2raw) against a server that
//! answers in every way a gRPC client must read: an OK answer with trailers, trailers-only
//! errors, errors in the trailers after a message, HTTP errors with no gRPC status, stream
//! resets, and GOAWAY. The server is the `h2` crate's (a real HTTP/2 implementation) on
//! loopback, in process, scripted per call; the Probe schema comes from its .proto file.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::support::{grpc_service, run_json, schema_errors, stderr, u};
use bytes::Bytes;
use serde_json::Value;
use tonic::codegen::http::{Response, StatusCode};

/// What the server does with one call.
#[derive(Clone, Copy)]
enum Act {
    /// 200, one message, trailers with grpc-status 0.
    Ok,
    /// 200 headers carrying grpc-status, ending the stream (trailers-only).
    TrailersOnly(u32),
    /// 200, one message, then trailers with this grpc-status.
    Trailers(u32),
    /// This HTTP status, no gRPC status, the stream ended.
    Http(u16),
    /// RST_STREAM with this reason, nothing else.
    Reset(h2::Reason),
    /// As `Ok`, with a message of this many bytes.
    Big(usize),
}

/// The scripted server; its runtime stops on drop.
struct Scripted {
    url: String,
    connections: Arc<AtomicU64>,
    _rt: tokio::runtime::Runtime,
}

/// Serves call `n` (counted over all connections) by `script(n)`; after `goaway_after` calls
/// on one connection, shuts that connection down gracefully (GOAWAY).
fn serve(script: fn(u64) -> Act, goaway_after: Option<u64>) -> Scripted {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicU64::new(0));
    let calls = Arc::new(AtomicU64::new(0));
    let conns = connections.clone();
    rt.spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            conns.fetch_add(1, Ordering::SeqCst);
            let calls = calls.clone();
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(sock).await else {
                    return;
                };
                let mut here = 0u64;
                while let Some(Ok((req, respond))) = conn.accept().await {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(answer(req, respond, script(n)));
                    here += 1;
                    if goaway_after == Some(here) {
                        conn.graceful_shutdown();
                    }
                }
            });
        }
    });
    Scripted {
        url,
        connections,
        _rt: rt,
    }
}

async fn answer(
    req: tonic::codegen::http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    act: Act,
) {
    let mut body = req.into_body();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let head = |status: u16| {
        Response::builder()
            .status(StatusCode::from_u16(status).unwrap())
            .header("content-type", "application/grpc")
    };
    let trailers = |code: u32| {
        let mut t = tonic::codegen::http::HeaderMap::new();
        t.insert("grpc-status", code.to_string().parse().unwrap());
        t
    };
    // One message: the gRPC frame of a 3-byte body.
    let message = Bytes::from_static(&[0, 0, 0, 0, 3, 10, 1, b'x']);
    let message = match act {
        Act::Big(n) => {
            let mut m = vec![0u8; 5 + n];
            m[1..5].copy_from_slice(&(n as u32).to_be_bytes());
            Bytes::from(m)
        }
        _ => message,
    };
    match act {
        Act::Ok | Act::Trailers(_) | Act::Big(_) => {
            let code = if let Act::Trailers(c) = act { c } else { 0 };
            let Ok(mut s) = respond.send_response(head(200).body(()).unwrap(), false) else {
                return;
            };
            let _ = s.send_data(message, false);
            let _ = s.send_trailers(trailers(code));
        }
        Act::TrailersOnly(code) => {
            let r = head(200).header("grpc-status", code.to_string());
            let _ = respond.send_response(r.body(()).unwrap(), true);
        }
        Act::Http(status) => {
            let _ = respond.send_response(head(status).body(()).unwrap(), true);
        }
        Act::Reset(reason) => respond.send_reset(reason),
    }
}

const X: &str = r#"{"text":"x"}"#;

fn unary(url: &str, data: &str, extra: &[&str]) -> (std::process::Output, Value) {
    let proto = grpc_service::proto_dir().join(grpc_service::PROTO);
    let mut args = vec![
        "grpc",
        "--server",
        url,
        "--proto",
        proto.to_str().unwrap(),
        "--call",
        "msgbench.test.v1.Probe/Echo",
        "--data",
        data,
        "--allow-loss",
    ];
    args.extend_from_slice(extra);
    run_json(&args)
}

#[test]
fn every_way_of_answering_is_counted_by_its_code() {
    let server = serve(
        |n| match n % 7 {
            0 => Act::Ok,
            1 => Act::TrailersOnly(5),
            2 => Act::Trailers(9),
            3 => Act::Http(503),
            4 => Act::Http(404),
            5 => Act::Reset(h2::Reason::ENHANCE_YOUR_CALM),
            _ => Act::Reset(h2::Reason::CANCEL),
        },
        None,
    );
    // One call at a time, so call n meets act n.
    let (out, doc) = unary(&server.url, X, &["--requests", "28", "--in-flight", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(schema_errors(&doc).is_empty(), "{:?}", schema_errors(&doc));
    assert_eq!(
        doc["grpc"]["status"],
        serde_json::json!({
            "OK": 4,
            "NOT_FOUND": 4,
            "FAILED_PRECONDITION": 4,
            "UNAVAILABLE": 4,
            "UNIMPLEMENTED": 4,
            "RESOURCE_EXHAUSTED": 4,
            "CANCELLED": 4,
        })
    );
    assert_eq!(u(&doc["grpc"]["requests_ok"]), 4);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

#[test]
fn after_goaway_the_calls_go_on_over_a_new_connection() {
    // GOAWAY after every 4th call of a connection: the calls already taken up finish, and
    // the next ones open a new connection rather than fail.
    let server = serve(|_| Act::Ok, Some(4));
    let (out, doc) = unary(
        &server.url,
        X,
        &["--requests", "20", "--in-flight", "1", "--clients", "1"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(doc["grpc"]["status"], serde_json::json!({"OK": 20}));
    assert_eq!(server.connections.load(Ordering::SeqCst), 5);
}

#[test]
fn flow_control_holds_both_ways_past_every_window() {
    // 40 kB each way per call, 16 in flight, 500 calls: 20 MB each way, past the server's
    // 64 KiB windows (ours must wait for its WINDOW_UPDATEs, and split DATA at its 16 KiB
    // frame size) and past our 16 MiB connection window (it must get ours).
    let server = serve(|_| Act::Big(40_000), None);
    let data = format!(r#"{{"text":"{}"}}"#, "y".repeat(40_000));
    let (out, doc) = unary(
        &server.url,
        &data,
        &["--requests", "500", "--in-flight", "16"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(doc["grpc"]["status"], serde_json::json!({"OK": 500}));
    assert_eq!(u(&doc["grpc"]["requests_ok"]), 500);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}
