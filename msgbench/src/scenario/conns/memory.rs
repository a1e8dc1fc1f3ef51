//! Where a `conns` run reads the server's memory: the monitoring endpoints it was given
//! (`--server-monitor`, their `mem` summed), or the process of the server msgbench started.

use std::time::Duration;

use super::options::ConnsOptions;
use crate::engine::memory::{self, Figure};
use crate::options::monitor::Monitors;
use crate::server::Target;

/// Where the server's memory is read from.
pub(super) enum ServerMemory {
    Monitor(Monitors),
    Process(u32),
    None,
}

impl ServerMemory {
    pub(super) fn new(opts: &ConnsOptions, target: &Target) -> Self {
        match (&opts.server_monitor, &target.embedded) {
            (Some(m), _) => ServerMemory::Monitor(m.clone()),
            (None, Some(e)) => e.pid().map_or(ServerMemory::None, ServerMemory::Process),
            (None, None) => ServerMemory::None,
        }
    }

    /// Where it is read, as the result says it (never with credentials).
    pub(super) fn source(&self) -> Option<String> {
        match self {
            ServerMemory::Monitor(m) => Some(
                m.endpoints
                    .iter()
                    .map(crate::engine::monitor::Endpoint::shown)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            ServerMemory::Process(_) => Some("embedded".into()),
            ServerMemory::None => None,
        }
    }

    /// The server's resident memory now, in bytes (every endpoint's, summed; `None` when one
    /// of them did not answer).
    pub(super) fn read(&self) -> Option<u64> {
        match self {
            ServerMemory::Monitor(m) => m
                .endpoints
                .iter()
                .map(|e| {
                    crate::engine::monitor::get_json_at(
                        e,
                        m.tls.clone(),
                        "/varz",
                        Duration::from_secs(5),
                    )?
                    .get("mem")?
                    .as_u64()
                })
                .sum(),
            ServerMemory::Process(pid) => memory::bytes(Some(*pid), Figure::Resident),
            ServerMemory::None => None,
        }
    }
}
