//! The outputs a session shows its runs through while they go: `--metrics-listen`, `--web`,
//! `--stream-stats` and the live line. They are opened once, before any server is started or
//! connected to (a port in use or a file that cannot be created refuses the run then, not after
//! it), shared by every run of the session, and kept up after the last one for as long as
//! `--metrics-linger` and `--web-linger` say.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use crate::cli::OutputArgs;
use crate::error::Result;
use crate::gate::Threshold;
use crate::output::live::{StreamStats, View};
use crate::output::metrics::Metrics;
use crate::output::web::Web;
use crate::result::RunResult;

/// The bound outputs of one session.
pub struct Sinks {
    pub metrics: Option<Metrics>,
    /// The live page, showing `slos` as lines on its charts.
    pub web: Option<Web>,
    pub stream: Option<Arc<Mutex<StreamStats>>>,
    /// Whether the live line is printed on stderr once a second.
    pub line: bool,
}

impl Sinks {
    /// Binds and creates what `out` asks for; the live page draws `slos` (the run's
    /// `--threshold`s, a search's `--slo`s) as lines.
    ///
    /// # Errors
    /// A port in use, an address that cannot be bound, a stream file that cannot be created.
    pub fn open(out: &OutputArgs, slos: &[Threshold]) -> Result<Self> {
        let metrics = out
            .metrics_listen
            .as_deref()
            .map(Metrics::bind)
            .transpose()?;
        if let Some(m) = metrics
            .as_ref()
            .filter(|_| out.metrics_listen_port_chosen())
        {
            eprintln!("--metrics-listen: http://{}/metrics", m.local_addr());
        }
        let slos: Vec<String> = slos.iter().map(ToString::to_string).collect();
        let web = out
            .web
            .as_deref()
            .map(|a| Web::bind(a).map(|w| w.with_slos(slos)))
            .transpose()?;
        if let Some(w) = &web {
            eprintln!("--web: the live page is on http://{}/", w.local_addr());
        }
        let stream = out
            .stream_stats
            .as_deref()
            .map(StreamStats::create)
            .transpose()?
            .map(|s| Arc::new(Mutex::new(s)));
        Ok(Self {
            metrics,
            web,
            stream,
            line: View::line_wanted(out.live, !out.no_progress),
        })
    }

    /// The stream file of a session that measured nothing is not left behind empty.
    pub fn discard_empty(&self) {
        if let Some(s) = &self.stream {
            s.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove_if_empty();
        }
    }

    /// The final result on the live page.
    pub fn finish(&self, result: &RunResult) {
        if let Some(w) = &self.web {
            w.finish(result);
        }
    }

    /// Keeps the final figures up, at most `--metrics-linger` and `--web-linger` (Ctrl-C ends
    /// the wait), then closes everything.
    pub fn linger(self, out: &OutputArgs, stop: &AtomicBool) {
        if let Some(m) = self.metrics {
            m.linger(out.metrics_linger, stop);
        }
        if let Some(w) = self.web {
            w.linger(out.web_linger, stop);
        }
    }
}
