//! `--server-monitor`: the user's servers' monitoring endpoints, checked as URLs, and the TLS
//! they are read with (the run's own `--tls-*` settings: a nats-server serves its monitoring
//! port with the TLS of its client port). Built from the connection flags once, for every
//! scenario that loads a NATS server.

use std::sync::Arc;

use crate::cli::ConnArgs;
use crate::engine::monitor::Endpoint;
use crate::engine::tls::{Tls, TlsOptions};
use crate::error::{Error, Result};

const FLAG: &str = "--server-monitor";

/// The endpoints to sample besides the servers msgbench starts, and how to verify them.
#[derive(Clone, Default)]
pub struct Monitors {
    pub endpoints: Vec<Endpoint>,
    /// The `--tls-*` configuration; `None` verifies with the system's roots.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

impl std::fmt::Debug for Monitors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitors")
            .field("endpoints", &self.endpoints)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Monitors {
    /// The endpoints `conn` names, parsed.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the flag and the URL (without its credentials) that is not a
    /// monitoring endpoint's.
    pub fn from_conn(conn: &ConnArgs) -> Result<Self> {
        let Some(list) = conn.server_monitor.as_deref() else {
            return Ok(Self::default());
        };
        let mut endpoints = Vec::new();
        for text in list.split(',').map(str::trim) {
            let e = Endpoint::parse(text).map_err(|why| {
                Error::flag(
                    FLAG,
                    &crate::engine::monitor::endpoint::without_credentials(text),
                    why,
                )
            })?;
            if endpoints.contains(&e) {
                return Err(Error::flag(FLAG, &e.shown(), "given twice"));
            }
            endpoints.push(e);
        }
        if endpoints.is_empty() {
            return Err(Error::flag(FLAG, "", "give at least one URL"));
        }
        let wanted = TlsOptions {
            ca: conn.tls_ca.clone(),
            cert: conn.tls_cert.clone(),
            key: conn.tls_key.clone(),
            insecure: conn.tls_insecure,
            first: false,
        };
        let tls = if wanted.wanted() && endpoints.iter().any(Endpoint::tls) {
            Some(Arc::clone(
                &Tls::shared(wanted)
                    .map_err(|(flag, value, why)| Error::flag(&flag, &value, why))?
                    .config,
            ))
        } else {
            None
        };
        Ok(Self { endpoints, tls })
    }
}

/// Refuses `--server-monitor` for `command`, which samples no server. The variable may be set
/// for every run in an environment, so only a value other than its own is refused.
///
/// # Errors
/// [`Error::Usage`] naming the flag and the command.
pub fn refuse_typed(conn: &ConnArgs, command: &str, why: &str) -> Result<()> {
    let from_env = std::env::var("MSGBENCH_SERVER_MONITOR").ok();
    match conn.server_monitor.as_deref() {
        Some(v) if !v.trim().is_empty() && Some(v) != from_env.as_deref() => Err(Error::Usage(
            format!("--server-monitor does not apply to `msgbench {command}`: {why}"),
        )),
        _ => Ok(()),
    }
}
