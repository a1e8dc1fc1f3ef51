//! The run of `obj put` and `obj get`, in steps: connect (the API client, and every client,
//! before the clock), open the bucket and check that the objects fit, then each client on a
//! thread of its own with its share of the objects (`client`), then the result (`report`).
//!
//! On agents each runs its block of the clients (global ids, so object `i` still goes to
//! client `i mod clients` plan-wide) from the common start, and the coordinator adds their
//! `object_store` sections up ([`super::report::conclude`]) and deletes the bucket when asked.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use super::bucket;
use super::client::Client;
use super::options::ObjOptions;
use super::report::{assemble, Done};
use crate::engine::jsapi::Api;
use crate::error::{ErrorCounts, Result};
use crate::result::{RunResult, ServerMeta};
use crate::scenario::Share;
use crate::server::Target;
use crate::stats::throughput::Role;
use crate::stats::timeline::Meter;

/// Runs `obj put` or `obj get` once.
///
/// # Errors
/// Failures before the clock: no server, no JetStream, a bucket missing (get) or one its
/// objects cannot fit in (put).
pub(super) fn run(
    o: &ObjOptions,
    target: &Target,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<Share<'_>>,
) -> Result<RunResult> {
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let mut api = Api::connect(&target.urls, "msgbench-obj-setup", &o.conn.dial, o.timeout)?;
    let (mine, base) = share.map_or((o.clients, 0), |sh| (sh.seg.pubs, sh.seg.pub_base));
    let ids = base..base + mine;
    let clients = ids
        .clone()
        .map(|id| Client::connect(target, o, id, &errors))
        .collect::<Result<Vec<_>>>()?;
    let first = clients[0].conn();
    let server = ServerMeta::new(&first.info, &first.url, target.local);
    match &o.put {
        Some(p) => bucket::open(&mut api, o, p, first.info.max_payload)?,
        None => bucket::find(&mut api, o)?,
    };
    crate::scenario::segment::start(share, stop)?;
    let role = if o.put.is_some() {
        Role::Pub
    } else {
        Role::Sub
    };
    let outs = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .zip(ids.clone())
            .map(|(c, id)| {
                let live = meter.client(role, id, false);
                let errors = &errors;
                s.spawn(move || c.work(o, errors, &live, stop))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("an object client does not panic"))
            .collect::<Vec<_>>()
    });
    meter.counted_until(outs.iter().map(|c| c.run.end));
    // On agents the others may still be at it: the coordinator deletes the bucket.
    bucket::clean_up(api, o, share.is_none());
    Ok(assemble(
        o,
        outs,
        Done {
            started_at,
            server,
            errors: &errors,
            interrupted: stop.load(Ordering::Relaxed),
            // An agent's objects: those of its clients.
            objects: ids
                .map(|id| {
                    o.objects
                        .saturating_sub(u64::from(id))
                        .div_ceil(u64::from(o.clients))
                })
                .sum(),
        },
    ))
}
