//! Validated options of request/reply: the requesting side (`request`) and the service side
//! (`reply`).

use std::time::Duration;

use super::args::{ReplyArgs, RequestArgs};
use crate::cli::Arrivals;
use crate::engine::jsframe::JsFraming;
use crate::engine::load::Keys;
use crate::engine::pace::{Pace, Stop};
use crate::error::{Error, Result};
use crate::options::{check_subject, server_choice, ServerChoice};
use crate::stats::draw::{Purpose, SenderSizes, SizeDist, Sizes, Stream, Template};
use crate::wire::stamp::SEQ_LEN;

#[derive(Debug, Clone)]
pub struct RequestOptions {
    pub clients: u32,
    pub in_flight: usize,
    pub pace: Pace,
    pub stop: Stop,
    pub size: usize,
    pub subject: String,
    /// In-process responders; 0 means an external service answers.
    pub responders: u32,
    pub delay: Duration,
    pub timeout: Duration,
    pub allow_loss: bool,
    pub server: ServerChoice,
    pub conn: crate::options::conn::ConnOptions,
    /// The scenario's name in results (`request`, or `js.pub` for JetStream publishes).
    pub scenario: &'static str,
    /// `Some(n)`: client i sends to `<subject>.<i mod n>` (a write flood over n streams, each
    /// capturing its own subject); `None`: everyone sends to `subject`.
    pub spread: Option<u32>,
    /// With JetStream publishes: per target subject (one, or `spread` of them), the stream's
    /// next sequence when the run starts. Replies are then PubAcks, read for the stored sequence
    /// or the error.
    pub js_bases: Option<Vec<u64>>,
    /// JetStream publishes with message ids or in atomic batches (closed loop only).
    pub js_framing: Option<JsFraming>,
    /// Subjects varying per request: `<subject>.<key>` (KV keys).
    pub keys: Option<Keys>,
    /// Payload sizes drawn per message (`js pub --size` as a distribution); `size` is then the
    /// largest they draw.
    pub sizes: Option<DrawnSizes>,
    /// Subjects drawn per message (`js pub --subject` as a template); `subject` is then its
    /// text.
    pub template: Option<DrawnSubjects>,
}

/// A subject template with its `--token`s as given and `--seed`.
#[derive(Debug, Clone)]
pub struct DrawnSubjects {
    pub template: Template,
    pub tokens: Vec<String>,
    pub seed: u64,
}

impl DrawnSubjects {
    /// What publisher `g` (its global id) draws its subjects from.
    pub fn of_sender(&self, g: u32) -> (Template, Stream) {
        (
            self.template.clone(),
            Stream::new(self.seed, Purpose::Subject, u64::from(g)),
        )
    }
}

/// Drawn payload sizes: `--size` as given, its sampler and `--seed`.
#[derive(Debug, Clone)]
pub struct DrawnSizes {
    pub spec: SizeDist,
    pub sizes: Sizes,
    pub seed: u64,
}

impl DrawnSizes {
    /// The sizes of publisher `g` (its global id).
    pub fn of_sender(&self, g: u32) -> SenderSizes {
        SenderSizes::new(self.sizes.clone(), self.seed, u64::from(g))
    }
}

impl RequestOptions {
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn new(a: &RequestArgs) -> Result<Self> {
        if a.size < SEQ_LEN {
            return Err(Error::flag(
                "--size",
                &a.size.to_string(),
                "must be at least 8 bytes",
            ));
        }
        if a.in_flight == 0 {
            return Err(Error::flag("--in-flight", "0", "must be at least 1"));
        }
        if a.responders > 1000 {
            return Err(Error::flag(
                "--responders",
                &a.responders.to_string(),
                "at most 1000",
            ));
        }
        if a.responders == 0 && !a.delay.is_zero() {
            return Err(Error::Usage(
                "--delay is the responders' work per request, and --responders 0 starts none; \
                 give it to `msgbench reply`"
                    .into(),
            ));
        }
        let (pace, schedule_stop) = crate::options::pace(&a.pace)?;
        let stop = match (schedule_stop, a.pace.duration) {
            (Some(s), _) => s,
            (None, Some(d)) => Stop::For(d),
            (None, None) if a.msgs == 0 => {
                return Err(Error::flag("--msgs", "0", "must be at least 1"))
            }
            (None, None) => Stop::Count(a.msgs),
        };
        check_subject(&a.subject, false)
            .map_err(|why| Error::flag("--subject", &a.subject, why))?;
        let pace = crate::options::poisson(pace, &a.pace, a.seed, stop, a.clients)?;
        // Open loop means requests go out on schedule whatever is in flight; the window then
        // only bounds memory.
        let in_flight = match pace {
            Pace::Open(_) if a.in_flight == 1 => 1 << 20,
            _ => usize::try_from(a.in_flight).unwrap_or(usize::MAX),
        };
        let conn = crate::options::conn::ConnOptions::new(&a.conn)?;
        if let Stop::For(length) = stop {
            conn.faults_within(&a.conn, length)?;
        }
        if conn.fault.is_some() && pace == Pace::Unlimited {
            return Err(Error::Usage(
                "--fault in request needs --rate: recovery is measured against a constant target \
                 rate"
                    .into(),
            ));
        }
        Ok(Self {
            clients: a.clients,
            in_flight,
            pace,
            stop,
            size: a.size,
            subject: a.subject.clone(),
            responders: a.responders as u32,
            delay: a.delay,
            timeout: a.timeout,
            allow_loss: a.allow_loss,
            server: server_choice(&a.conn)?,
            conn,
            scenario: "request",
            spread: None,
            js_bases: None,
            js_framing: None,
            keys: None,
            sizes: None,
            template: None,
        })
    }

    /// The subject client `i` sends to, and the index of its target among the spread ones.
    pub fn target_of(&self, i: usize) -> (String, usize) {
        match self.spread {
            Some(n) => {
                let k = i % n.max(1) as usize;
                (format!("{}.{k}", self.subject), k)
            }
            None => (self.subject.clone(), 0),
        }
    }

    pub fn params(&self) -> super::Params {
        let (msgs, duration_secs) = self.stop.as_params();
        let arrivals_seed = self.pace.schedule().and_then(|s| s.poisson_seed());
        super::Params {
            arrivals: if arrivals_seed.is_some() {
                Arrivals::Poisson
            } else {
                Arrivals::Fixed
            },
            arrivals_seed,
            connection: self.conn.params(),
            pubs: self.clients,
            subs: self.responders,
            in_flight: self.in_flight,
            rate: self.pace.target_rate(),
            rate_schedule: self
                .pace
                .schedule()
                .filter(|s| !s.is_fixed())
                .map(ToString::to_string),
            msgs,
            duration_secs,
            size: self.size,
            subject: self.subject.clone(),
            delay_secs: self.delay.as_secs_f64(),
            timeout_secs: self.timeout.as_secs_f64(),
            allow_loss: self.allow_loss,
        }
    }

    /// [`RequestOptions::params`] as JSON, for a scenario that publishes through requests and
    /// adds parameters of its own.
    pub fn params_value(&self) -> serde_json::Value {
        serde_json::to_value(self.params()).expect("serialises")
    }
}

#[derive(Debug, Clone)]
pub struct ReplyOptions {
    pub clients: u32,
    pub delay: Duration,
    pub subject: String,
    pub max: Option<u64>,
    pub duration: Duration,
    pub server: ServerChoice,
    pub conn: crate::options::conn::ConnOptions,
    /// Who hears that the service is up: once the server has confirmed every responder's
    /// subscription.
    pub announce: Announce,
}

/// Who hears that a reply service is up.
#[derive(Debug, Clone)]
pub enum Announce {
    /// A line on stderr saying what is served: the `reply` command.
    Line,
    /// Nobody.
    Quiet,
    /// A run waiting on the service (compare's drivers), which starts once it hears.
    Ready(std::sync::mpsc::SyncSender<()>),
}

impl ReplyOptions {
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn new(a: &ReplyArgs) -> Result<Self> {
        check_subject(&a.subject, true).map_err(|why| Error::flag("--subject", &a.subject, why))?;
        if a.msgs == Some(0) {
            return Err(Error::flag("--msgs", "0", "must be at least 1"));
        }
        Ok(Self {
            clients: a.clients,
            delay: a.delay,
            subject: a.subject.clone(),
            max: a.msgs,
            // A service must end by itself too: an hour at most unless told otherwise.
            duration: a.duration.unwrap_or(if a.msgs.is_some() {
                Duration::from_secs(3600)
            } else {
                Duration::from_secs(60)
            }),
            announce: Announce::Line,
            server: server_choice(&a.conn)?,
            conn: {
                let c = crate::options::conn::ConnOptions::new(&a.conn)?;
                c.no_fault("reply")?;
                c
            },
        })
    }

    pub fn params(&self) -> super::ReplyParams {
        super::ReplyParams {
            connection: self.conn.params(),
            pubs: 0,
            subs: self.clients,
            msgs: self.max,
            duration_secs: self.duration.as_secs_f64(),
            subject: self.subject.clone(),
            delay_secs: self.delay.as_secs_f64(),
        }
    }
}
