//! A session: everything that happens around the runs of one plan, written once for every
//! mode that runs one. It opens the outputs that show runs while they go ([`Sinks`]), runs the
//! plan `--runs` times through a [`Runner`] (in this process, or on agents), and then, whatever
//! happened, combines what was measured, judges the `--threshold`s, writes the result
//! everywhere it was asked to go, records it in the history, and keeps the live outputs up
//! for their linger.
//!
//! The scenarios know nothing of this: a plan holds its output flags beside the scenario's
//! (`Plan::out`), and only a session reads them. A capacity search uses the same runners and
//! sinks for its probes, and writes a document of its own instead of a result; which output
//! flags each mode refuses is one table ([`refusals`]).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::options::Output;
use crate::plan::{Plan, Validated};
use crate::result::RunResult;

pub mod limit;
mod local;
pub mod mix;
pub mod refusals;
pub mod servers;
mod sinks;

pub use local::Local;
pub use sinks::Sinks;

/// What a run is to the live outputs: one of a session's `--runs`, or one run of a capacity
/// search's probe at a rate.
#[derive(Debug, Clone, Copy)]
pub enum Showing {
    /// Run `k` of `n`.
    Run { k: u32, n: u32 },
    /// Run `k` of `n` at `rate` msgs/s, of a search.
    Probe { rate: f64, k: u32, n: u32 },
}

impl Showing {
    /// `(k, n)` when it is one of several runs of a session.
    pub fn of_several(self) -> Option<(u32, u32)> {
        match self {
            Showing::Run { k, n } if n > 1 => Some((k, n)),
            _ => None,
        }
    }
}

/// Runs a validated plan once, where the mode says: in this process against servers resolved
/// once for the session ([`Local`]), or on a fleet of agents found once. What it returns is
/// the whole run's result, shown live through `sinks` while it went.
pub trait Runner {
    /// # Errors
    /// Failures that prevent a result: refused connections, a server gone for good, a refused
    /// plan.
    fn once(
        &self,
        plan: &Plan,
        validated: &Validated,
        sinks: &Sinks,
        showing: Showing,
        stop: &AtomicBool,
    ) -> Result<RunResult>;
}

/// Runs `plan` `--runs` times through `runner`, then combines, judges, writes and records the
/// result, and returns the exit status. A run that fails after others succeeded ends the
/// series: what was measured is still written, then the failure is reported. So does an agent
/// that sent no result, since the figures are partial without it.
///
/// # Errors
/// The first run failing (nothing measured, nothing written); a later run failing, a lost
/// agent or a result file that cannot be written, after what was measured is written.
pub fn run(
    plan: &Plan,
    validated: &Validated,
    sinks: Sinks,
    runner: &dyn Runner,
    stop: &AtomicBool,
) -> Result<u8> {
    let out = Output::from(plan.out());
    let allow_loss = validated.common().allow_loss;
    let (results, failure) = repeat(plan, validated, &sinks, runner, stop)?;
    let mut result = RunResult::combine(results.runs, allow_loss);
    result.interrupted |= results.cut_short;
    result.plan = Some(plan.recorded());
    result.thresholds = crate::gate::judge(&out.thresholds, &result);
    sinks.finish(&result);
    crate::output::write::emit(&result, &out)?;
    if let Some(rec) = &out.record {
        crate::history::record::after_run(&result, rec)?;
    }
    sinks.linger(plan.out(), stop);
    match failure {
        Some(e) => Err(e),
        None => Ok(result.exit_code(allow_loss)),
    }
}

/// The runs a session finished, and whether the series was cut short by a stop.
struct Series {
    runs: Vec<RunResult>,
    cut_short: bool,
}

/// The `--runs` loop: each run through the runner, its line when there are several, until the
/// last, a failure, a lost agent or a stop.
fn repeat(
    plan: &Plan,
    validated: &Validated,
    sinks: &Sinks,
    runner: &dyn Runner,
    stop: &AtomicBool,
) -> Result<(Series, Option<Error>)> {
    let n = plan.out().runs.max(1);
    let mut series = Series {
        runs: Vec::new(),
        cut_short: false,
    };
    for k in 1..=n {
        let r = match runner.once(plan, validated, sinks, Showing::Run { k, n }, stop) {
            Ok(r) => r,
            // Interrupted while a later run was still connecting: that run failed because it
            // was stopped, not because the server would not have it. The series ends
            // interrupted with the runs it finished, as it does when the signal comes during
            // a run.
            Err(_) if !series.runs.is_empty() && stop.load(Ordering::Relaxed) => {
                series.cut_short = true;
                break;
            }
            Err(e) if series.runs.is_empty() => {
                sinks.discard_empty();
                return Err(e);
            }
            Err(e) => return Ok((series, Some(e))),
        };
        if n > 1 {
            eprintln!("{}", crate::export::text::run_line(k, n, &r));
        }
        // Agents that went silent, or answered with a failure instead of a result.
        let missing = r
            .agents
            .as_ref()
            .map(|a| a.missing.clone())
            .unwrap_or_default();
        series.runs.push(r);
        if !missing.is_empty() {
            let lost = Error::Agent(format!(
                "agent {} sent no result (see above); the partial result was written",
                missing.join(", ")
            ));
            return Ok((series, Some(lost)));
        }
        // Stopped between runs: the series is cut short even though its last run was not.
        if stop.load(Ordering::Relaxed) {
            series.cut_short = k < n;
            break;
        }
    }
    Ok((series, None))
}
