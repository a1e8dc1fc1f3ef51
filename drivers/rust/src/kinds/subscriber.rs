//! The receiving side shared by `pubsub` and `latency`: each subscriber consumes its
//! async-nats `Subscriber` stream in a task of its own until it has every message that was
//! sent, or until the run ends it (drain deadline or stop).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::Subscriber;
use futures::{FutureExt, StreamExt};

use crate::control::Stop;
use crate::meter::Meter;

/// How many deliveries each subscriber waits for: the expected count while publishers run,
/// the true total once they are done. `u64::MAX` while unknown (runs with a duration).
#[derive(Debug)]
pub struct Target(AtomicU64);

impl Target {
    pub fn new(expected: Option<u64>) -> Arc<Self> {
        Arc::new(Self(AtomicU64::new(expected.unwrap_or(u64::MAX))))
    }

    pub fn set(&self, n: u64) {
        self.0.store(n, Ordering::Relaxed);
    }

    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// How a subscriber's consumption ended.
#[derive(Debug, Clone, Copy)]
pub struct Consumed {
    /// When the last message was handled (`None` if none came).
    pub last: Option<Instant>,
}

/// Consumes `sub`, calling `on_msg` with each payload, until the target is reached, `end` is
/// raised, or the stream closes. `meter.received[id]` follows the count.
///
/// Reading the clock for every message would cost the hot path; the time of the last receive
/// is taken instead whenever the subscription's queue runs dry (and when the target is
/// reached), which is the moment the last message so far was handled.
pub async fn consume<F>(
    mut sub: Subscriber,
    id: usize,
    meter: &Meter,
    target: &Target,
    end: &Stop,
    mut on_msg: F,
) -> Consumed
where
    F: FnMut(&[u8]),
{
    let counter = &meter.received[id];
    let mut received = 0u64;
    let mut last = None;
    let mut marked = 0u64;
    let ended = end.raised();
    tokio::pin!(ended);
    loop {
        if end.is_raised() || received >= target.get() {
            break;
        }
        let msg = match sub.next().now_or_never() {
            Some(Some(m)) => m,
            Some(None) => break,
            None => {
                if received != marked {
                    last = Some(Instant::now());
                    marked = received;
                }
                tokio::select! {
                    biased;
                    m = sub.next() => match m {
                        Some(m) => m,
                        None => break,
                    },
                    () = &mut ended => break,
                }
            }
        };
        on_msg(&msg.payload);
        received += 1;
        counter.set(received);
    }
    if received != marked {
        last = Some(Instant::now());
    }
    // Unsubscribe now rather than when the task's memory goes: no more deliveries to queue.
    let _ = sub.unsubscribe().await;
    Consumed { last }
}

/// After the publishers are done: waits until every subscriber has `target` deliveries or
/// `timeout` has passed (or, once stopped, whichever comes first), then raises `end`.
pub async fn drain(meter: &Meter, target: u64, timeout: Duration, end: &Stop) {
    let deadline = Instant::now() + timeout;
    // Bounded by the deadline: at most timeout / 1 ms rounds.
    while Instant::now() < deadline {
        if meter.received.iter().all(|c| c.get() >= target) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    end.raise();
}
