//! Validated options of the latency scenario: a rate, a length, a size with room for the
//! sequence number, and which server each side uses.

use std::path::PathBuf;
use std::time::Duration;

use super::args::LatencyArgs;
use crate::cli::BusyPoll;
use crate::engine::cpu::Free;
use crate::engine::pace::Stop;
use crate::error::{Error, Result};
use crate::options::{check_subject, server_choice_with, ServerChoice};
use crate::stats::schedule::RateSchedule;
use crate::wire::stamp::SEQ_LEN;

/// Up to this rate `--busy-poll auto` considers polling. Measured on a 2-core machine: at 1,000
/// msgs/s polling took the median from about 85 µs to about 45 µs; at 100,000 msgs/s of 4 KiB
/// the poller competed with the server for the CPU and made the tail worse.
pub const BUSY_POLL_MAX_RATE: f64 = 10_000.0;

/// The idle CPUs `--busy-poll auto` wants to see before it polls: one for the poller, and half
/// of one for the server and the publisher. With one core of two kept busy by a spin loop,
/// polling took the uncorrected P99 at 1,000 msgs/s from about 0.23 ms to about 1 ms (issue
/// 42): the poller had taken the core the server needed.
pub const BUSY_POLL_MIN_IDLE_CORES: f64 = 1.5;

/// The most `--busy-poll auto` lets tasks wait for a CPU in its window, in percent: above
/// this, the machine has no core to spare, whatever the idle time says.
pub const BUSY_POLL_MAX_PRESSURE_PCT: f64 = 10.0;

/// How long `--busy-poll auto` watches the CPUs before it decides (connecting overlaps it).
pub const CPU_WINDOW: Duration = Duration::from_millis(250);

/// How the subscriber's polling is chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum Polling {
    /// Already decided, by the flag or by the rate: whether it polls, and why.
    Fixed(bool, String),
    /// `auto` at a rate where polling can pay: decided when the run starts, from what a short
    /// window shows of the machine's free CPU ([`Polling::decide`]).
    Measure,
}

impl Polling {
    fn new(setting: BusyPoll, peak_rate: f64) -> Self {
        match setting {
            BusyPoll::On => Polling::Fixed(true, "--busy-poll on".into()),
            BusyPoll::Off => Polling::Fixed(false, "--busy-poll off".into()),
            BusyPoll::Auto if peak_rate > BUSY_POLL_MAX_RATE => Polling::Fixed(
                false,
                format!(
                    "auto: off, the rate reaches {} msgs/s, above the {} up to which polling \
                     pays",
                    crate::format::group(peak_rate.round() as u64),
                    crate::format::group(BUSY_POLL_MAX_RATE as u64)
                ),
            ),
            BusyPoll::Auto => Polling::Measure,
        }
    }

    /// Whether the subscriber polls, and why: the flag or the rate decided already, or `auto`
    /// decides now from `window`, opened when the run began (and watched while it connected).
    pub fn choose(&self, window: Option<crate::engine::cpu::Window>, has_sub: bool) -> Chosen {
        match (self, window) {
            (Polling::Fixed(on, why), _) => Chosen {
                on: Some(*on && has_sub),
                why: why.clone(),
                cpu_free: None,
            },
            (Polling::Measure, Some(w)) => {
                let free = w.close(CPU_WINDOW);
                let (on, why) = Polling::decide(&free);
                Chosen {
                    on: Some(on),
                    why,
                    cpu_free: Some(free),
                }
            }
            (Polling::Measure, None) => Chosen {
                on: Some(false),
                why: "auto: no subscriber here to poll".into(),
                cpu_free: None,
            },
        }
    }

    /// `auto`'s choice from what the window saw: poll only where a core is idle for the
    /// poller with room left for the server and the publisher, and nothing waited for a CPU.
    pub fn decide(free: &Free) -> (bool, String) {
        let window = crate::format::duration_ns(free.window_secs * 1e9);
        let Some(idle) = free.idle_cores else {
            return (
                false,
                "auto: off, the CPUs' idle time could not be read (/proc/stat)".into(),
            );
        };
        let seen = format!("{idle:.2} of {} CPUs idle over {window}", free.cores);
        if idle < BUSY_POLL_MIN_IDLE_CORES {
            return (
                false,
                format!(
                    "auto: off, {seen}: fewer than the {BUSY_POLL_MIN_IDLE_CORES} a poller needs \
                     beside the server and the publisher"
                ),
            );
        }
        match free.pressure_pct {
            Some(p) if p > BUSY_POLL_MAX_PRESSURE_PCT => (
                false,
                format!(
                    "auto: off, {seen}, but tasks waited for a CPU {p:.0}% of the time (at most \
                     {BUSY_POLL_MAX_PRESSURE_PCT}% for polling)"
                ),
            ),
            Some(p) => (
                true,
                format!("auto: on, {seen}; tasks waited for a CPU {p:.0}% of the time"),
            ),
            None => (true, format!("auto: on, {seen}")),
        }
    }
}

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
    /// Whether the subscriber polls instead of sleeping between messages, or how it is decided.
    pub busy_poll: Polling,
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
        let server_a = server_choice_with(&a.conn, a.server_a.as_deref().zip(Some("--server-a")))?;
        let server_b = (a.server_b.as_deref())
            .map(|list| server_choice_with(&a.conn, Some((list, "--server-b"))))
            .transpose()?;
        let named = matches!(server_a, ServerChoice::Urls(_)) || server_b.is_some();
        if named && (a.conn.fault.is_some() || a.conn.nemesis.is_some()) {
            let flag = if a.conn.fault.is_some() {
                "--fault"
            } else {
                "--nemesis"
            };
            return Err(Error::Usage(format!(
                "{flag} acts on the server msgbench starts itself; it cannot be combined with \
                 --server-a or --server-b"
            )));
        }
        let conn = crate::options::conn::ConnOptions::new(&a.conn)?;
        if let Stop::For(length) = stop {
            conn.faults_within(&a.conn, length)?;
        }
        let schedule = crate::options::poisson(pace.clone(), &a.pace, a.seed, stop, 1)?
            .schedule()
            .cloned()
            .unwrap_or(schedule);
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
            busy_poll: Polling::new(a.busy_poll, pace.peak_rate()),
            timeout: a.timeout,
            allow_loss: a.allow_loss,
        })
    }

    /// The mean rate (the rate itself without a schedule).
    pub fn rate(&self) -> f64 {
        self.schedule.mean_rate()
    }

    /// The parameters as they go into a result, before the run has decided `--busy-poll auto`
    /// (a merged result of agents, where each agent decides for its own subscriber).
    pub fn params(&self) -> super::Params {
        let chosen = match &self.busy_poll {
            Polling::Fixed(on, why) => Chosen {
                on: Some(*on),
                why: why.clone(),
                cpu_free: None,
            },
            Polling::Measure => Chosen {
                on: None,
                why: "auto: decided where the subscriber runs, from the CPU free there".into(),
                cpu_free: None,
            },
        };
        self.params_with(chosen)
    }

    /// The parameters as they go into a result, with the polling as the run chose it.
    pub fn params_with(&self, busy_poll: Chosen) -> super::Params {
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
            busy_poll: busy_poll.on,
            busy_poll_why: busy_poll.why,
            cpu_free: busy_poll.cpu_free,
            timeout_secs: self.timeout.as_secs_f64(),
            allow_loss: self.allow_loss,
            arrivals: if self.schedule.poisson_seed().is_some() {
                crate::cli::Arrivals::Poisson
            } else {
                crate::cli::Arrivals::Fixed
            },
            arrivals_seed: self.schedule.poisson_seed(),
        }
    }
}

/// What a run chose for its subscriber's polling.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// `None` where nothing here decided it.
    pub on: Option<bool>,
    pub why: String,
    /// What `auto` saw of the machine's CPU, where it looked.
    pub cpu_free: Option<Free>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free(idle_cores: Option<f64>, pressure_pct: Option<f64>) -> Free {
        Free {
            cores: 2,
            idle_cores,
            pressure_pct,
            runnable: Some(1),
            window_secs: 0.25,
        }
    }

    #[test]
    fn auto_polls_only_with_a_core_and_a_half_idle_and_no_task_kept_waiting() {
        let (on, why) = Polling::decide(&free(Some(1.96), Some(0.4)));
        assert!(on, "{why}");
        assert!(
            why.starts_with("auto: on, 1.96 of 2 CPUs idle over 250"),
            "{why}"
        );
        // One core of two kept busy: the poller would take the server's.
        let (on, why) = Polling::decide(&free(Some(0.98), Some(0.0)));
        assert!(!on, "{why}");
        assert!(why.contains("0.98 of 2 CPUs idle") && why.contains("fewer than the 1.5"));
        // Idle enough, yet tasks queued for a CPU.
        let (on, why) = Polling::decide(&free(Some(1.6), Some(35.0)));
        assert!(!on && why.contains("waited for a CPU 35%"), "{why}");
        // Without the pressure file the idle time decides; without /proc/stat, nothing polls.
        assert!(Polling::decide(&free(Some(1.6), None)).0);
        let (on, why) = Polling::decide(&free(None, Some(0.0)));
        assert!(!on && why.contains("could not be read"), "{why}");
    }

    #[test]
    fn the_flag_or_the_rate_decide_without_measuring() {
        assert_eq!(
            Polling::new(BusyPoll::On, 100_000.0),
            Polling::Fixed(true, "--busy-poll on".into())
        );
        assert_eq!(
            Polling::new(BusyPoll::Off, 10.0),
            Polling::Fixed(false, "--busy-poll off".into())
        );
        let Polling::Fixed(false, why) = Polling::new(BusyPoll::Auto, 20_000.0) else {
            panic!("auto above the rate limit is off");
        };
        assert!(why.contains("20,000 msgs/s"), "{why}");
        assert_eq!(Polling::new(BusyPoll::Auto, 1_000.0), Polling::Measure);
        // A share without a subscriber polls nothing, whatever the flag.
        let c = Polling::Fixed(true, "--busy-poll on".into()).choose(None, false);
        assert_eq!(c.on, Some(false));
        assert_eq!(Polling::Measure.choose(None, false).on, Some(false));
    }
}
