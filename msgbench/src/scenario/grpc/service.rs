//! The log service msgbench serves itself: in this process for a run given no --server
//! ([`embedded`], stopped when dropped), or as `grpc serve` ([`serve_on`], shared by both).

use std::net::SocketAddr;
use std::sync::Arc;

use crate::engine::grpc as g;
use crate::error::{Error, Result};

/// The log service running in this process, for a run given no --server; stopped on drop.
pub(super) struct Embedded {
    pub(super) addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Embedded {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves the log service on a free loopback port, on threads of its own.
pub(super) fn embedded(retain: usize, threads: usize) -> Result<Embedded> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::io("cannot listen on a loopback port for the log service", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("log service address", e))?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("grpc-serve".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads.max(1))
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let _ = serve_on(listener, retain, None, async {
                    let _ = rx.await;
                })
                .await;
            });
        })
        .map_err(|e| Error::io("cannot start the log service thread", e))?;
    Ok(Embedded {
        addr,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}

/// Serves the log service and reflection on `listener` until `shutdown` resolves.
pub(super) async fn serve_on(
    listener: std::net::TcpListener,
    retain: usize,
    tls: Option<tonic::transport::ServerTlsConfig>,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::result::Result<Arc<g::log::LogService>, String> {
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let state = Arc::new(g::log::LogService::new(retain));
    let mut builder = tonic::transport::Server::builder()
        // A write flood keeps thousands of calls open on one connection; the HTTP/2 default of
        // a couple of hundred would make the client queue, not the service.
        .max_concurrent_streams(Some(16_384))
        .initial_stream_window_size(Some(1 << 20))
        .initial_connection_window_size(Some(16 << 20));
    if let Some(tls) = tls {
        builder = builder.tls_config(tls).map_err(|e| e.to_string())?;
    }
    builder
        .add_service(g::log::server(Arc::clone(&state)))
        .add_service(g::log::reflection())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(|e| e.to_string())?;
    Ok(state)
}

/// The CPUs this process may use, to size thread pools.
pub(super) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
