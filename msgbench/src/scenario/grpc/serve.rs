//! `msgbench grpc serve`: the reference log service as a process of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::args::GrpcServeArgs;
use super::service::{cores, serve_on};
use crate::engine::grpc::schema::{self};
use crate::error::{exit, Error, Result};

/// `msgbench grpc serve`: the log service until Ctrl-C or `--duration`.
///
/// # Errors
/// The address cannot be bound, or the TLS files are unusable.
pub fn serve(a: &GrpcServeArgs, stop: &AtomicBool) -> Result<u8> {
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => {
            let read = |flag: &str, p: &std::path::Path| {
                std::fs::read(p).map_err(|e| Error::flag(flag, &p.display().to_string(), e))
            };
            let identity = tonic::transport::Identity::from_pem(
                read("--tls-cert", cert)?,
                read("--tls-key", key)?,
            );
            Some(tonic::transport::ServerTlsConfig::new().identity(identity))
        }
        _ => None,
    };
    let listener = std::net::TcpListener::bind(a.listen)
        .map_err(|e| Error::flag("--listen", &a.listen.to_string(), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("listening address", e))?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let threads = a.threads.map_or_else(cores, |n| n as usize);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", e))?;
    println!(
        "msgbench grpc serve: {} on {scheme}://{addr} (reflection on, {} records kept per stream)",
        schema::LOG_SERVICE,
        a.retain
    );
    let until = a.duration.map(|d| Instant::now() + d);
    let started = Instant::now();
    let state = rt
        .block_on(serve_on(listener, a.retain as usize, tls, async move {
            loop {
                if stop.load(Ordering::Relaxed) || until.is_some_and(|u| Instant::now() >= u) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }))
        .map_err(|why| {
            if why.to_lowercase().contains("certificate") || why.to_lowercase().contains("key") {
                Error::Usage(format!("--tls-cert/--tls-key: {why}"))
            } else {
                Error::Io {
                    context: "the log service".into(),
                    source: std::io::Error::other(why),
                }
            }
        })?;
    let (appended, calls) = state.counts();
    println!(
        "served {calls} calls in {:.1}s: {appended} records appended to {} streams",
        started.elapsed().as_secs_f64(),
        state.streams()
    );
    Ok(exit::OK)
}
