//! The reply loop of request/reply runs: a responder answers each request with its own payload.
//! It runs on the connection's reader, so replies go out from the thread that parsed the
//! requests, batched per read rather than one write each.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{FLUSH_AT, TICK};
use crate::engine::conn::{Event, Flow, Reader, SendError, Shared};
use crate::stats::throughput::{ClientRun, Role};
use crate::wire::proto;

/// A responder's parameters.
#[derive(Debug, Clone, Copy)]
pub struct RespondSpec {
    pub id: u32,
    /// Simulated processing time per request.
    pub delay: Duration,
    /// Stop once all responders together have served this many requests.
    pub max: Option<u64>,
    /// Stop at this instant.
    pub until: Option<Instant>,
}

/// The reply loop: answers every request with its own payload. Replies collected while one read
/// is dispatched go out in one write after it, so a burst of requests costs one syscall.
pub fn respond(
    reader: &mut Reader,
    shared: &Shared,
    spec: &RespondSpec,
    total: &AtomicU64,
    done: &AtomicBool,
    stop: &AtomicBool,
) -> ClientRun {
    let mut out = Vec::with_capacity(FLUSH_AT);
    let (mut served, mut bytes) = (0u64, 0u64);
    let (mut first, mut last) = (None, None);
    let mut failed = false;
    reader.run(shared, TICK, |event| {
        match event {
            Event::Msg(m) => {
                let Some(reply) = m.reply else {
                    return Flow::Continue;
                };
                if !spec.delay.is_zero() {
                    std::thread::sleep(spec.delay);
                }
                proto::encode_pub(&mut out, reply, None, b"", m.payload);
                served += 1;
                total.fetch_add(1, Ordering::Relaxed);
                bytes += m.payload.len() as u64;
                first.get_or_insert_with(Instant::now);
                if out.len() >= FLUSH_AT {
                    failed |= matches!(shared.write_all(&out), Err(SendError::Failed(_)));
                    out.clear();
                }
            }
            Event::Tick => {
                if !out.is_empty() {
                    failed |= matches!(shared.write_all(&out), Err(SendError::Failed(_)));
                    out.clear();
                    last = Some(Instant::now());
                }
                let over = spec.max.is_some_and(|m| total.load(Ordering::Relaxed) >= m)
                    || spec.until.is_some_and(|t| Instant::now() >= t);
                if failed || over || done.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                    return Flow::Stop;
                }
            }
        }
        Flow::Continue
    });
    if !out.is_empty() {
        let _ = shared.write_all(&out);
        last = Some(Instant::now());
    }
    ClientRun {
        role: Role::Sub,
        id: spec.id,
        msgs: served,
        bytes,
        start: first,
        end: last.or(first),
    }
}
