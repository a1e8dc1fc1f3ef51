//! Running totals for `progress` lines, and the ticker that writes them about once a second.
//!
//! Each client owns one counter and stores its own total into it (a plain store, no
//! read-modify-write); the ticker sums them. Counters sit on their own cache lines so that
//! clients on different cores do not slow each other down on every message.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::protocol::{emit, Out};

/// One client's running total.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub fn set(&self, n: u64) {
        self.0.store(n, Ordering::Relaxed);
    }

    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counters for what was sent and what was received, one per client.
#[derive(Debug)]
pub struct Meter {
    pub sent: Vec<Counter>,
    pub received: Vec<Counter>,
}

impl Meter {
    pub fn new(senders: usize, receivers: usize) -> Arc<Self> {
        Arc::new(Self {
            sent: (0..senders).map(|_| Counter::default()).collect(),
            received: (0..receivers).map(|_| Counter::default()).collect(),
        })
    }

    pub fn totals(&self) -> (u64, u64) {
        (
            self.sent.iter().map(Counter::get).sum(),
            self.received.iter().map(Counter::get).sum(),
        )
    }
}

/// Writes a `progress` line every second from `start` until stopped with [`stop_ticker`].
pub fn spawn_ticker(meter: Arc<Meter>, start: Instant) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(
            (start + Duration::from_secs(1)).into(),
            Duration::from_secs(1),
        );
        // A late tick is not worth a burst of lines.
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Bounded: the run aborts the ticker when it ends; a day of ticks is a safety net.
        for _ in 0..86_400 {
            tick.tick().await;
            let (sent, received) = meter.totals();
            emit(&Out::Progress {
                t_s: start.elapsed().as_secs_f64(),
                sent,
                received,
            });
        }
    })
}

/// Stops the ticker and waits until it is gone, so no `progress` line follows the result.
pub async fn stop_ticker(ticker: JoinHandle<()>) {
    ticker.abort();
    let _ = ticker.await;
}
