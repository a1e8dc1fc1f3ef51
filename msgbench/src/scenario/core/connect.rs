//! The first step of a pub, sub or pubsub run: connect every client this process runs (or
//! describe the fleet that will serve many subscribers), and make the checks that need a
//! server's answer before any load (the message size against its limit, header support).
//! Nothing here is timed.

use std::sync::Arc;

use super::options::{Options, ScenarioKind};
use crate::engine::conn::{self, Conn, ConnectSpec};
use crate::engine::fleet::{self, FleetSpec, Interest};
use crate::error::{Error, ErrorCounts, Result};
use crate::scenario::segment::Share;
use crate::server::Target;
use crate::wire::proto::{self, ServerInfo};
use crate::wire::stamp;
use crate::wire::url::ServerUrl;

/// This process's clients: all of them, or its agent's share, whose global ids start at the
/// segment's bases.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mine {
    pub n_pubs: u32,
    pub n_subs: u32,
    pub pub_base: u32,
    pub sub_base: u32,
}

impl Mine {
    fn of(opts: &Options, share: Option<Share<'_>>) -> Self {
        match share {
            Some(sh) => Self {
                n_pubs: sh.seg.pubs,
                n_subs: sh.seg.subs,
                pub_base: sh.seg.pub_base,
                sub_base: sh.seg.sub_base,
            },
            None => Self {
                n_pubs: opts.pubs,
                n_subs: opts.subs,
                pub_base: 0,
                sub_base: 0,
            },
        }
    }
}

/// The connected clients of a run, before anyone subscribes.
pub(super) struct Clients {
    pub mine: Mine,
    pub pubs: Vec<Conn>,
    /// A connection per subscriber, or none when `fleet` serves them.
    pub subs: Vec<Conn>,
    pub fleet: Option<FleetSpec>,
    /// The server the result names and the URL it was reached at; `None` only for a share
    /// with no client at all.
    pub server: Option<(ServerInfo, ServerUrl)>,
    /// The encoded `-H` headers every message carries.
    pub header_block: Vec<u8>,
    pub run_tag: u16,
}

/// Connects publishers, then subscribers (or only describes their fleet).
///
/// # Errors
/// A connection or handshake that fails, a message the server would reject for its size, or
/// headers it does not support.
pub(super) fn connect(
    opts: &Options,
    target: &Target,
    share: Option<Share<'_>>,
    errors: &Arc<ErrorCounts>,
) -> Result<Clients> {
    let mine = Mine::of(opts, share);
    let dial = |role: &str, id: u32| {
        let name = format!("msgbench-{role}-{id}");
        conn::connect(
            &ConnectSpec {
                servers: &target.urls,
                name: &name,
                opts: &opts.conn.dial,
                stall_limit: opts.timeout,
            },
            errors.clone(),
        )
    };

    let pubs: Vec<Conn> = (0..mine.n_pubs)
        .map(|i| dial("pub", mine.pub_base + i))
        .collect::<Result<_>>()?;
    let header_block = proto::header_block(&opts.headers);
    if let Some(first) = pubs.first() {
        check_server(opts, &first.info, header_block.len())?;
    }
    let run_tag = share.map_or_else(stamp::new_run_tag, |sh| sh.seg.run_tag);
    let fleet = fleet_spec(opts, target, mine, run_tag, errors)?;
    let subs: Vec<Conn> = match fleet {
        Some(_) => Vec::new(),
        None => (0..mine.n_subs)
            .map(|i| dial("sub", mine.sub_base + i))
            .collect::<Result<_>>()?,
    };
    let mut server = pubs
        .first()
        .or(subs.first())
        .map(|c| (c.info.clone(), c.url.clone()));
    if server.is_none() && fleet.is_some() {
        // Only fleet subscribers here (an agent's share without publishers): one plain
        // connection says what the server is.
        let probe = dial("probe", 0)?;
        server = Some((probe.info.clone(), probe.url.clone()));
        probe.shared.close();
    }
    Ok(Clients {
        mine,
        pubs,
        subs,
        fleet,
        server,
        header_block,
        run_tag,
    })
}

/// What a publisher's server must accept: the whole message within its `max_payload`, and
/// headers when `-H` gave any.
fn check_server(opts: &Options, info: &ServerInfo, header_len: usize) -> Result<()> {
    let max = info.max_payload;
    if max > 0 && opts.size + header_len > max {
        return Err(Error::PayloadTooLarge {
            size: opts.size + header_len,
            max_payload: max,
        });
    }
    if !opts.headers.is_empty() && !info.headers {
        return Err(Error::Usage(
            "-H: this server does not support message headers".into(),
        ));
    }
    Ok(())
}

/// Many subscribers are served by a fleet (a few threads for all of them); a handful, or
/// subscribers that need a per-message recorder (stalls, faults, schedule stages), keep a
/// thread each. See engine::fleet for why the switch sits where it does.
fn fleet_spec(
    opts: &Options,
    target: &Target,
    mine: Mine,
    run_tag: u16,
    errors: &Arc<ErrorCounts>,
) -> Result<Option<FleetSpec>> {
    let staged_run = opts.pace.schedule().is_some_and(|s| !s.is_fixed());
    let fleet = opts.scenario == ScenarioKind::Pubsub
        && mine.n_subs >= fleet::FLEET_FROM
        && opts.sub_stall.is_none()
        && opts.conn.fault.is_none()
        && !staged_run;
    if !fleet {
        return Ok(None);
    }
    Ok(Some(FleetSpec {
        targets: FleetSpec::targets(&target.urls)?,
        name: "msgbench-sub".into(),
        dialing: opts.conn.dial,
        interest: Interest::Shared(opts.sub_subject()),
        run_tag: Some(run_tag),
        errors: Arc::clone(errors),
        give_up_after: opts.timeout,
        idle_timeout: opts.timeout,
        start_timeout: opts.start_timeout,
        threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
        in_flight: 256,
        connect_rate: None,
    }))
}
