//! The clients of a gRPC run on their connections: connections spread over threads (each a
//! current-thread runtime), every client released at once, one pacer per thread for an open
//! loop, and what each client measured gathered when all have ended.
//!
//! On an agent only its block of the clients runs (global ids), on the connections they use
//! (client `id` on connection `id mod --connections`, opened on this host), released at the
//! common start.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::Instant;

use super::options::GrpcOptions;
use super::service::cores;
use crate::engine::grpc::load::{Client, ClientOutcome, Conn, Pacer, Plan};
use crate::engine::grpc::schema::CallKind;
use crate::engine::grpc::template::Template;
use crate::engine::grpc::{self as g};
use crate::scenario::Share;
use crate::stats::stages::StageTotals;
use crate::stats::throughput::Role;
use crate::stats::timeline::Meter;

/// Opens this thread's connections `mine`. A connection of one client's own is driven by that
/// client's loop (engine::grpc::h2raw); one that clients share, by h2's connection task
/// (engine::grpc::wire); streaming calls go through tonic.
async fn open(
    o: &GrpcOptions,
    mine: &[u32],
    ids: std::ops::Range<u32>,
    target: &g::Target,
    head: Option<&std::sync::Arc<g::wire::CallHead>>,
) -> std::result::Result<Vec<Conn>, String> {
    let mut channels = Vec::new();
    for c in mine {
        let sole = ids.clone().filter(|id| id % o.connections == *c).count() == 1;
        channels.push(match head {
            Some(h) if sole => Conn::Raw(std::sync::Arc::new(std::sync::Mutex::new(Some(
                g::h2raw::connect(target, h).await?,
            )))),
            Some(h) => Conn::Wire(g::wire::connect(target).await?, h.clone()),
            None => Conn::Tonic(g::connect(target).await?),
        });
    }
    Ok(channels)
}

/// Opens the connections (each on one thread, with the clients using it), starts every
/// client at once, and gathers what they measured.
#[allow(clippy::too_many_arguments)] // each is a distinct part of the run; a struct would only rename them
pub(super) fn drive(
    o: &GrpcOptions,
    plan: &Plan,
    template: &Template,
    target: &g::Target,
    meter: &Meter,
    stages: Option<&StageTotals>,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> std::result::Result<Vec<ClientOutcome>, String> {
    let (mine, base) = share.map_or((o.clients, 0), |sh| (sh.seg.pubs, sh.seg.pub_base));
    let ids = base..base + mine;
    // The connections this process's clients use.
    let mut used: Vec<u32> = ids.clone().map(|id| id % o.connections).collect();
    used.sort_unstable();
    used.dedup();
    let threads = used.len().min(cores()).max(1);
    let client_meters: Vec<_> = ids
        .clone()
        .map(|id| meter.client(Role::Pub, id, true))
        .collect();
    // Unary calls: one head for every call, whichever path carries them (see `open`).
    let head = match plan.kind {
        CallKind::Unary => Some(std::sync::Arc::new(g::wire::CallHead::new(
            &target.uri,
            &plan.path,
            &plan.headers,
            plan.deadline,
        )?)),
        _ => None,
    };
    let head = &head;
    let (ready_tx, ready_rx) = mpsc::channel::<std::result::Result<(), String>>();
    let mut starts = Vec::new();
    let outcomes = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for t in 0..threads {
            let (start_tx, start_rx) = mpsc::channel::<Option<Instant>>();
            starts.push(start_tx);
            let ready_tx = ready_tx.clone();
            let client_meters = &client_meters;
            let (used, ids) = (&used, ids.clone());
            handles.push(scope.spawn(move || -> Vec<ClientOutcome> {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return Vec::new();
                    }
                };
                // This thread's connections, and which clients use each.
                let mine: Vec<u32> = used
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| k % threads == t)
                    .map(|(_, c)| *c)
                    .collect();
                let connected = rt.block_on(open(o, &mine, ids.clone(), target, head.as_ref()));
                let channels = match connected {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return Vec::new();
                    }
                };
                let _ = ready_tx.send(Ok(()));
                let Ok(Some(start)) = start_rx.recv() else {
                    return Vec::new();
                };
                let pacer = plan.schedule.as_ref().map(|_| Pacer::default());
                let clients = ids.clone().filter_map(|id| {
                    let conn = id % o.connections;
                    let k = mine.iter().position(|c| *c == conn)?;
                    Some(
                        Client {
                            id,
                            conn: channels[k].clone(),
                            plan,
                            template,
                            start,
                            meter: &client_meters[(id - base) as usize],
                            stop,
                            pacer: pacer.as_ref(),
                            stages,
                        }
                        .run(),
                    )
                });
                let all = futures_util::future::join_all(clients);
                std::thread::scope(|s| {
                    if let (Some(pacer), Some(schedule)) = (&pacer, plan.schedule.as_ref()) {
                        s.spawn(move || pacer.run(schedule, start, plan.stop, stop));
                    }
                    let out = rt.block_on(all);
                    if let Some(p) = &pacer {
                        p.finish();
                    }
                    out
                })
            }));
        }
        drop(ready_tx);
        let mut failure = None;
        for _ in 0..threads {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    failure.get_or_insert(e);
                }
                Err(_) => {
                    failure.get_or_insert_with(|| "a connection thread ended early".to_string());
                }
            }
        }
        // Every connection is up: on agents, all clients start together across hosts.
        let start = failure
            .is_none()
            .then(|| crate::scenario::segment::start(share, stop).ok())
            .flatten();
        if let (Some(at), Some(sc)) = (start, o.pace.schedule()) {
            meter.follow_schedule(at, sc);
        }
        for s in &starts {
            let _ = s.send(start);
        }
        let mut all: Vec<ClientOutcome> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect();
        all.sort_by_key(|c| c.id);
        match (failure, start) {
            (Some(e), _) => Err(e),
            (None, None) => Err("stopped before the common start".to_string()),
            (None, Some(_)) => Ok(all),
        }
    })?;
    Ok(outcomes)
}
