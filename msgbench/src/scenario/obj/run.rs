//! The run of `obj put` and `obj get`, in steps: connect (the API client, and every client,
//! before the clock), open the bucket and check that the objects fit, then each client on a
//! thread of its own with its share of the objects (`client`), then the result (`report`).

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
) -> Result<RunResult> {
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let mut api = Api::connect(&target.urls, "msgbench-obj-setup", &o.conn.dial, o.timeout)?;
    let clients = (0..o.clients)
        .map(|id| Client::connect(target, o, id, &errors))
        .collect::<Result<Vec<_>>>()?;
    let first = clients[0].conn();
    let server = ServerMeta::new(&first.info, &first.url, target.local);
    match &o.put {
        Some(p) => bucket::open(&mut api, o, p, first.info.max_payload)?,
        None => bucket::find(&mut api, o)?,
    };
    let role = if o.put.is_some() {
        Role::Pub
    } else {
        Role::Sub
    };
    let outs = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .zip(0u32..)
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
    bucket::clean_up(api, o);
    Ok(assemble(
        o,
        outs,
        Done {
            started_at,
            server,
            errors: &errors,
            interrupted: stop.load(Ordering::Relaxed),
        },
    ))
}
