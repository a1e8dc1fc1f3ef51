//! The progress bar: drawn on stderr only when stdout is a terminal, only for runs that last
//! longer than a second, and never on the load path. A separate thread polls the counters the
//! load loops already publish (relaxed atomic stores once per batch) ten times a second.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::export::text::group;
use crate::options::{Options, Stop};

/// A running progress bar; dropping it removes the bar.
pub struct Progress {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts watching the counters, or returns `None` when no bar should be drawn.
    pub fn start(opts: &Options, pubs: Arc<[AtomicU64]>, subs: Arc<[AtomicU64]>) -> Option<Self> {
        if !opts.output.progress
            || !std::io::stdout().is_terminal()
            || !std::io::stderr().is_terminal()
        {
            return None;
        }
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let stop = opts.stop;
        let per_pub = match stop {
            Stop::Count(n) => n,
            Stop::For(_) => 0,
        };
        // In pubsub each subscriber expects every publisher's messages.
        let sub_target = if pubs.is_empty() {
            per_pub
        } else {
            per_pub * pubs.len() as u64
        };
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut bar: Option<ProgressBar> = None;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if started.elapsed() < Duration::from_secs(1) {
                    continue;
                }
                let sent: u64 = pubs.iter().map(|a| a.load(Ordering::Relaxed)).sum();
                let got: u64 = subs.iter().map(|a| a.load(Ordering::Relaxed)).sum();
                let b = bar.get_or_insert_with(|| {
                    new_bar(stop, pubs.len(), subs.len(), per_pub, sub_target)
                });
                match stop {
                    Stop::Count(_) => b.set_position(sent + got),
                    Stop::For(d) => b.set_position(started.elapsed().min(d).as_millis() as u64),
                }
                // The bar appears a second in; its own clock would start there.
                b.set_prefix(format!("{:.0}s", started.elapsed().as_secs_f64()));
                let mut msg = Vec::new();
                if !pubs.is_empty() {
                    msg.push(format!("sent {}", group(sent)));
                }
                if !subs.is_empty() {
                    msg.push(format!("received {}", group(got)));
                }
                b.set_message(msg.join(", "));
            }
            if let Some(b) = bar {
                b.finish_and_clear();
            }
        });
        Some(Self {
            done,
            thread: Some(thread),
        })
    }
}

fn new_bar(stop: Stop, pubs: usize, subs: usize, per_pub: u64, sub_target: u64) -> ProgressBar {
    let len = match stop {
        Stop::Count(_) => per_pub * pubs as u64 + sub_target * subs as u64,
        Stop::For(d) => d.as_millis() as u64,
    };
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{prefix:>5} [{bar:30}] {percent:>3}% {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
