//! The first step of a request run: connect this process's responders and requesters and
//! check the request size against the server's limit; also the connection and subscription
//! helpers `msgbench reply` shares. Nothing here is timed.

use std::sync::Arc;
use std::time::Duration;

use super::options::RequestOptions;
use crate::engine::conn::{self, Conn, ConnectSpec};
use crate::error::{Error, ErrorCounts, Result};
use crate::scenario::segment::Share;
use crate::server::Target;
use crate::wire::proto::ServerInfo;
use crate::wire::url::ServerUrl;

/// The connected clients of a run, before anyone subscribes.
pub(super) struct Clients {
    pub responders: Vec<Conn>,
    pub requesters: Vec<Conn>,
    /// The server the result names and the URL it was reached at.
    pub server: (ServerInfo, ServerUrl),
}

/// Connects this process's responders, then its requesters, and checks the request size
/// against the server's limit. Nothing here is timed.
pub(super) fn connect(
    opts: &RequestOptions,
    target: &Target,
    share: Option<Share<'_>>,
    errors: &Arc<ErrorCounts>,
) -> Result<Clients> {
    let (n_clients, n_responders, base) = mine(opts, share);
    let connect = |name: String| connect_to(target, &name, &opts.conn, opts.timeout, errors);
    let responders: Vec<Conn> = (0..n_responders)
        .map(|i| {
            connect(format!(
                "msgbench-responder-{}",
                share.map_or(0, |sh| sh.seg.sub_base) + i
            ))
        })
        .collect::<Result<_>>()?;
    let requesters: Vec<Conn> = (0..n_clients)
        .map(|i| connect(format!("msgbench-requester-{}", base + i)))
        .collect::<Result<_>>()?;
    let first = requesters
        .first()
        .or(responders.first())
        .expect("a share has a client");
    let (info, url) = (first.info.clone(), first.url.clone());
    if info.max_payload > 0 && opts.size > info.max_payload {
        return Err(Error::PayloadTooLarge {
            size: opts.size,
            max_payload: info.max_payload,
        });
    }
    Ok(Clients {
        responders,
        requesters,
        server: (info, url),
    })
}

/// This process's requesters and responders, and the global id of its first requester: all
/// of them, or its agent's share.
pub(super) fn mine(opts: &RequestOptions, share: Option<Share<'_>>) -> (u32, u32, u32) {
    match share {
        Some(sh) => (sh.seg.pubs, sh.seg.subs, sh.seg.pub_base),
        None => (opts.clients, opts.responders, 0),
    }
}

/// Sends a SUB plus PING and returns the PONG to wait for.
pub(super) fn subscribe(shared: &conn::Shared, cmd: Vec<u8>) -> Result<u64> {
    shared
        .subscribe(&cmd)
        .map_err(|e| e.during("cannot subscribe"))
}

pub(super) fn connect_to(
    target: &Target,
    name: &str,
    conn_opts: &crate::options::conn::ConnOptions,
    stall: Duration,
    errors: &Arc<ErrorCounts>,
) -> Result<Conn> {
    conn::connect(
        &ConnectSpec {
            // A reconnect after a node of a local cluster fails goes to the next node.
            servers: target.every_node(),
            name,
            opts: &conn_opts.dial,
            stall_limit: stall,
        },
        errors.clone(),
    )
}
