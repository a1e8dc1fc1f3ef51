//! The result of a workload: every class's own result, whole (its throughput, corrected
//! latency, exact accounting, errors and SLO verdicts), side by side, with the workload's plan
//! and one exit status, the worst class's. Its JSON form is the schema
//! `msgbench.workload-result/v1` (`schema/workload-result-v1.schema.json`), whose classes'
//! results are `msgbench.result/v1` documents.
//!
//! Every class's timeline starts at the same instant, the workload's start, so second k of
//! one class's timeline is second k of every other's: together they are the mix's timeline,
//! a series per class.

use serde::Serialize;

use super::{RunResult, ToolInfo};
use crate::error::exit;

pub const SCHEMA: &str = "msgbench.workload-result/v1";

#[derive(Debug, Clone, Serialize)]
pub struct MixResult {
    pub schema: &'static str,
    pub tool: ToolInfo,
    pub workload: String,
    /// `--scale`: every class's rate was its file's times this; null when run as written.
    pub scale: Option<f64>,
    /// `--time-warp`: the classes' captured curves were replayed at this speed (each captured
    /// second lasting 1/F s) instead of their mean rates; null when not given.
    pub time_warp: Option<f64>,
    /// Wall-clock start of every class, RFC 3339 UTC.
    pub started_at: String,
    /// True when SIGINT/SIGTERM cut the run short; figures cover what ran.
    pub interrupted: bool,
    /// The workload that ran, written out in full, with no credentials in it.
    pub plan: serde_json::Value,
    pub classes: Vec<ClassResult>,
    /// The worst class's exit status.
    pub exit_status: u8,
}

/// One class: its result, or why it has none.
#[derive(Debug, Clone, Serialize)]
pub struct ClassResult {
    pub class: String,
    pub scenario: &'static str,
    /// Whether every SLO of the class held; null for a class with none (or no result).
    pub slo_pass: Option<bool>,
    pub exit_status: u8,
    /// Why the class has no result (it failed before measuring anything), or why its result
    /// is partial (an agent of a workload on agents sent none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub result: Option<RunResult>,
}

impl ClassResult {
    /// A class that ran; `allow_loss` is its plan's.
    pub fn ran(class: String, result: RunResult, allow_loss: bool) -> Self {
        let slo_pass =
            (!result.thresholds.is_empty()).then(|| result.thresholds.iter().all(|t| t.pass));
        // On agents, one that sent no result leaves the class's figures partial: a failure of
        // its own, as it is for a run on agents alone. (Its result reads as interrupted, since
        // the class's other agents were told to stop; that is not a signal's interruption.)
        let missing = (result.agents.as_ref()).map_or_else(Vec::new, |a| a.missing.clone());
        let (exit_status, error) = match missing.is_empty() {
            true => (result.exit_code(allow_loss), None),
            false => (
                exit::AGENT,
                Some(format!(
                    "agent {} sent no result; the class's figures are partial",
                    missing.join(", ")
                )),
            ),
        };
        Self {
            class,
            scenario: result.scenario,
            slo_pass,
            exit_status,
            error,
            result: Some(result),
        }
    }

    /// A class that failed before it had a result.
    pub fn failed(class: String, scenario: &'static str, why: String, status: u8) -> Self {
        Self {
            class,
            scenario,
            slo_pass: None,
            exit_status: status,
            error: Some(why),
            result: None,
        }
    }
}

impl MixResult {
    pub fn new(
        workload: String,
        scale: Option<f64>,
        time_warp: Option<f64>,
        started_at: String,
        plan: serde_json::Value,
        classes: Vec<ClassResult>,
    ) -> Self {
        let interrupted = (classes.iter().filter_map(|c| c.result.as_ref())).any(|r| r.interrupted);
        let codes: Vec<u8> = classes.iter().map(|c| c.exit_status).collect();
        Self {
            schema: SCHEMA,
            tool: ToolInfo::default(),
            workload,
            scale,
            time_warp,
            started_at,
            interrupted,
            plan,
            exit_status: worst(&codes),
            classes,
        }
    }
}

/// The worst of several exit statuses, by the precedence one result's own status follows: an
/// interruption, then a failure that ended a run (a lost connection, a refused server), then
/// loss, a missed fault, a failed threshold, and success last. The classes of a workload and
/// the runs of `--runs` are both judged by it.
pub fn worst(codes: &[u8]) -> u8 {
    let judged = [
        exit::OK,
        exit::LOSS,
        exit::FAULT_MISSED,
        exit::THRESHOLD,
        exit::INTERRUPTED,
    ];
    let order = [
        exit::INTERRUPTED,
        exit::LOSS,
        exit::FAULT_MISSED,
        exit::THRESHOLD,
    ];
    if codes.contains(&exit::INTERRUPTED) {
        return exit::INTERRUPTED;
    }
    if let Some(fatal) = codes.iter().find(|c| !judged.contains(c)) {
        return *fatal;
    }
    order
        .into_iter()
        .find(|c| codes.contains(c))
        .unwrap_or(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_status_follows_the_results_own_precedence() {
        assert_eq!(worst(&[exit::OK, exit::OK]), exit::OK);
        assert_eq!(worst(&[exit::THRESHOLD, exit::LOSS]), exit::LOSS);
        assert_eq!(worst(&[exit::LOSS, exit::CONNECT]), exit::CONNECT);
        assert_eq!(
            worst(&[exit::CONNECT, exit::INTERRUPTED]),
            exit::INTERRUPTED
        );
        assert_eq!(worst(&[exit::OK, exit::THRESHOLD]), exit::THRESHOLD);
        assert_eq!(
            worst(&[exit::FAULT_MISSED, exit::THRESHOLD]),
            exit::FAULT_MISSED
        );
    }
}
