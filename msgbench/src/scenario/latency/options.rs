//! Validated options of the latency scenario: a rate, a length, a size with room for the
//! sequence number, and which server each side uses.

use std::path::PathBuf;
use std::time::Duration;

use super::args::LatencyArgs;
use crate::cli::BusyPoll;
use crate::engine::pace::Stop;
use crate::error::{Error, Result};
use crate::options::{check_subject, server_choice, server_choice_from, ServerChoice};
use crate::stats::schedule::RateSchedule;
use crate::wire::stamp::SEQ_LEN;

/// Up to this rate `--busy-poll auto` turns polling on. Measured on a 2-core machine: at 1,000
/// msgs/s polling took the median from about 85 µs to about 45 µs; at 100,000 msgs/s of 4 KiB
/// the poller competed with the server for the CPU and made the tail worse.
pub const BUSY_POLL_MAX_RATE: f64 = 10_000.0;

#[derive(Debug, Clone)]
pub struct LatencyOptions {
    /// `--rate` as a schedule of one endless stage, or `--rate-schedule`.
    pub schedule: RateSchedule,
    pub stop: Stop,
    pub size: usize,
    pub warmup: Duration,
    pub subject: String,
    /// Where the publisher connects.
    pub server_a: ServerChoice,
    /// Where the subscriber connects; `None` means the same server as A.
    pub server_b: Option<ServerChoice>,
    pub conn: crate::options::conn::ConnOptions,
    pub late_bound: Duration,
    pub hist: Option<PathBuf>,
    /// The subscriber polls instead of sleeping between messages.
    pub busy_poll: bool,
    pub timeout: Duration,
    pub allow_loss: bool,
}

impl LatencyOptions {
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn new(a: &LatencyArgs) -> Result<Self> {
        let rate = a.pace.rate;
        if rate.is_nan() || rate <= 0.0 || rate.is_infinite() {
            return Err(Error::flag(
                "--rate",
                &rate.to_string(),
                "must be more than 0 msgs/s",
            ));
        }
        let (pace, schedule_stop) = crate::options::pace(&a.pace)?;
        let schedule = pace.schedule().expect("latency is always paced").clone();
        if a.size < SEQ_LEN {
            return Err(Error::flag(
                "--size",
                &a.size.to_string(),
                "must be at least 8 bytes (the sequence number)",
            ));
        }
        let interval = Duration::from_secs_f64(1.0 / rate);
        let stop = match (a.msgs, a.pace.duration) {
            _ if schedule_stop.is_some() => schedule_stop.expect("just checked"),
            (Some(0), _) => return Err(Error::flag("--msgs", "0", "must be at least 1")),
            (Some(n), _) => Stop::Count(n),
            (None, Some(d)) if d < interval => {
                return Err(Error::flag(
                    "--duration",
                    &humantime::format_duration(d).to_string(),
                    format!("is shorter than one message at {rate} msgs/s"),
                ))
            }
            (None, Some(d)) => Stop::For(d),
            (None, None) => Stop::For(Duration::from_secs(5)),
        };
        let length = match stop {
            Stop::For(d) => d,
            Stop::Count(n) => interval * u32::try_from(n).unwrap_or(u32::MAX),
        };
        if a.warmup >= length {
            return Err(Error::flag(
                "--warmup",
                &humantime::format_duration(a.warmup).to_string(),
                "leaves nothing to measure: it must be shorter than the run",
            ));
        }
        check_subject(&a.subject, false)
            .map_err(|why| Error::flag("--subject", &a.subject, why))?;
        let server_a = match &a.server_a {
            Some(list) => server_choice_from(Some(list), "--server-a", None)?,
            None => server_choice(&a.conn)?,
        };
        let server_b = a
            .server_b
            .as_deref()
            .map(|list| server_choice_from(Some(list), "--server-b", None))
            .transpose()?;
        let conn = crate::options::conn::ConnOptions::new(&a.conn)?;
        if let Stop::For(length) = stop {
            conn.faults_within(&a.conn, length)?;
        }
        Ok(Self {
            schedule,
            stop,
            size: a.size,
            warmup: a.warmup,
            subject: a.subject.clone(),
            server_a,
            server_b,
            conn,
            late_bound: a.late_bound,
            hist: a.hist.clone(),
            busy_poll: match a.busy_poll {
                BusyPoll::On => true,
                BusyPoll::Off => false,
                BusyPoll::Auto => pace.peak_rate() <= BUSY_POLL_MAX_RATE,
            },
            timeout: a.timeout,
            allow_loss: a.allow_loss,
        })
    }

    /// The mean rate (the rate itself without a schedule).
    pub fn rate(&self) -> f64 {
        self.schedule.mean_rate()
    }

    /// The parameters as they go into a result.
    pub fn params(&self) -> super::Params {
        let (msgs, duration_secs) = self.stop.as_params();
        super::Params {
            pubs: 1,
            subs: 1,
            rate: self.schedule.mean_rate(),
            rate_schedule: (!self.schedule.is_fixed()).then(|| self.schedule.to_string()),
            msgs,
            duration_secs,
            size: self.size,
            warmup_secs: self.warmup.as_secs_f64(),
            subject: self.subject.clone(),
            late_bound_secs: self.late_bound.as_secs_f64(),
            connection: self.conn.params(),
            separate_servers: self.server_b.is_some(),
            busy_poll: self.busy_poll,
            timeout_secs: self.timeout.as_secs_f64(),
            allow_loss: self.allow_loss,
        }
    }
}
