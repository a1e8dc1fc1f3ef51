//! Where a `conns` run reads the server's memory: its monitoring endpoint (`--server-monitor`),
//! or the process of the server msgbench started.

use std::io::{Read, Write};
use std::time::Duration;

use super::options::ConnsOptions;
use crate::engine::memory::{self, Figure};
use crate::server::Target;

/// Where the server's memory is read from.
pub(super) enum ServerMemory {
    Monitor(String),
    Process(u32),
    None,
}

impl ServerMemory {
    pub(super) fn new(opts: &ConnsOptions, target: &Target) -> Self {
        match (&opts.server_monitor, &target.embedded) {
            (Some(url), _) => ServerMemory::Monitor(url.trim_end_matches('/').to_string()),
            (None, Some(e)) => e.pid().map_or(ServerMemory::None, ServerMemory::Process),
            (None, None) => ServerMemory::None,
        }
    }

    pub(super) fn source(&self) -> Option<String> {
        match self {
            ServerMemory::Monitor(u) => Some(u.clone()),
            ServerMemory::Process(_) => Some("embedded".into()),
            ServerMemory::None => None,
        }
    }

    /// The server's resident memory now, in bytes.
    pub(super) fn read(&self) -> Option<u64> {
        match self {
            ServerMemory::Monitor(url) => varz_mem(url),
            ServerMemory::Process(pid) => memory::bytes(Some(*pid), Figure::Resident),
            ServerMemory::None => None,
        }
    }
}

/// `mem` from the server's `/varz` (its resident memory in bytes), over plain HTTP/1.0.
fn varz_mem(base: &str) -> Option<u64> {
    let url = url::Url::parse(base).ok()?;
    let host = url.host_str()?;
    let port = url.port_or_known_default()?;
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .ok()?
        .next()?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET /varz HTTP/1.0\r\nHost: {host}\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    let json = &body[body.find("\r\n\r\n")? + 4..];
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v.get("mem")?.as_u64()
}
