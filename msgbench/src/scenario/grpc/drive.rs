//! The clients of a gRPC run on their connections: connections spread over threads (each a
//! current-thread runtime), every client released at once, one pacer per thread for an open
//! loop, and what each client measured gathered when all have ended.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::Instant;

use super::options::GrpcOptions;
use super::service::cores;
use crate::engine::grpc::load::{Client, ClientOutcome, Pacer, Plan};
use crate::engine::grpc::template::Template;
use crate::engine::grpc::{self as g};
use crate::stats::stages::StageTotals;
use crate::stats::throughput::Role;
use crate::stats::timeline::Meter;

/// Opens the connections (each on one thread, with the clients using it), starts every
/// client at once, and gathers what they measured.
pub(super) fn drive(
    o: &GrpcOptions,
    plan: &Plan,
    template: &Template,
    target: &g::Target,
    meter: &Meter,
    stages: Option<&StageTotals>,
    stop: &AtomicBool,
) -> std::result::Result<Vec<ClientOutcome>, String> {
    let threads = (o.connections as usize).min(cores()).max(1);
    let client_meters: Vec<_> = (0..o.clients)
        .map(|id| meter.client(Role::Pub, id, true))
        .collect();
    let (ready_tx, ready_rx) = mpsc::channel::<std::result::Result<(), String>>();
    let mut starts = Vec::new();
    let outcomes = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for t in 0..threads {
            let (start_tx, start_rx) = mpsc::channel::<Option<Instant>>();
            starts.push(start_tx);
            let ready_tx = ready_tx.clone();
            let client_meters = &client_meters;
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
                let mine: Vec<u32> = (0..o.connections)
                    .filter(|c| *c as usize % threads == t)
                    .collect();
                let connected = rt.block_on(async {
                    let mut channels = Vec::new();
                    for _ in &mine {
                        channels.push(g::connect(target).await?);
                    }
                    Ok::<_, String>(channels)
                });
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
                let clients = (0..o.clients).filter_map(|id| {
                    let conn = id % o.connections;
                    let k = mine.iter().position(|c| *c == conn)?;
                    Some(
                        Client {
                            id,
                            channel: channels[k].clone(),
                            plan,
                            template,
                            start,
                            meter: &client_meters[id as usize],
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
        let start = failure.is_none().then(Instant::now);
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
        match failure {
            Some(e) => Err(e),
            None => Ok(all),
        }
    })?;
    Ok(outcomes)
}
