//! A loopback server's monitoring endpoints (`/varz`, `/jsz`) read as JSON over plain
//! HTTP/1.0: how msgbench sees the settings and the JetStream roles of the servers it started.
//! Only for servers it started itself, on 127.0.0.1, so no TLS, no auth and no redirects.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// `GET path` on 127.0.0.1:`port`, its body parsed as JSON; `None` on any failure within
/// `limit` (each of connecting and reading).
pub fn get_json(port: u16, path: &str, limit: Duration) -> Option<serde_json::Value> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut s = TcpStream::connect_timeout(&addr, limit).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    s.set_write_timeout(Some(limit)).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut body = Vec::new();
    s.read_to_end(&mut body).ok()?;
    let text = String::from_utf8_lossy(&body);
    let (head, json) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.0 200").then_some(())?;
    serde_json::from_str(json).ok()
}
