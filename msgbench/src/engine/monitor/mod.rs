//! Servers' monitoring endpoints (`/varz`, `/jsz`, `/routez`, `/healthz`), read over HTTP or
//! HTTPS with the usual credentials: how msgbench sees the servers of a run from their side.
//!
//! - [`endpoint`]: a monitoring URL, its TLS and credentials, and how it shows itself (never
//!   with the credentials);
//! - [`client`]: the HTTP client (hyper's, with rustls), its time limits and error kinds;
//! - [`read`]: one server's endpoints read into figures (`stats::server::Reading`);
//! - [`watch`]: the sampler thread of a run, one round of readings a second.
//!
//! [`get_json`] is the one-off read the servers msgbench starts use (their roles at a fault,
//! their replicas' read-back, their settings), and [`check`] the test a `--server-monitor` URL
//! passes before a run.

pub mod client;
pub mod endpoint;
pub mod read;
pub mod watch;

pub use endpoint::Endpoint;
pub use watch::{Source, Summary, Watch};

use std::sync::Arc;
use std::time::Duration;

/// `GET path` of the server msgbench started with its monitoring port on 127.0.0.1:`port`,
/// its body parsed as JSON; `None` on any failure within `limit`.
pub fn get_json(port: u16, path: &str, limit: Duration) -> Option<serde_json::Value> {
    get_json_at(&Endpoint::loopback(port), None, path, limit)
}

/// `GET path` of `endpoint` (verified with `tls` where it is `https://`), its body parsed as
/// JSON; `None` on any failure within `limit`.
pub fn get_json_at(
    endpoint: &Endpoint,
    tls: Option<Arc<rustls::ClientConfig>>,
    path: &str,
    limit: Duration,
) -> Option<serde_json::Value> {
    let client = client::Client::new(tls).ok()?;
    let mut conn = client::Conn::default();
    let answer = client
        .block_on(client.get(&mut conn, endpoint, path, limit))
        .ok()?;
    (answer.status == 200).then_some(())?;
    answer.json().ok()
}

/// What a `--server-monitor` endpoint is at the start of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// A NATS server's monitoring endpoint answered.
    Nats,
    /// It did not answer (it may come up later): a warning, and the run goes on.
    Unreachable(String),
}

/// Reads `/varz` of `endpoint` once, within `limit`: a NATS server's answer, or no answer.
///
/// # Errors
/// The endpoint answered, but not as a NATS server's monitoring endpoint does (an HTML page,
/// a 404, JSON of another shape): the reason, in one line.
pub fn check(
    endpoint: &Endpoint,
    tls: Option<Arc<rustls::ClientConfig>>,
    limit: Duration,
) -> Result<Checked, String> {
    let client = client::Client::new(tls).map_err(|e| e.to_string())?;
    let mut conn = client::Conn::default();
    match client.block_on(client.get(&mut conn, endpoint, "/varz", limit)) {
        Err(e) => Ok(Checked::Unreachable(e.to_string())),
        Ok(a) => read::check_varz(a.status, a.json()).map(|()| Checked::Nats),
    }
}
