//! The text report's lines for a run on agents: who ran which share, how far each one's clock
//! was from the coordinator's, and which agents sent no result (the figures lack their share).

use std::fmt::Write as _;

use crate::format;
use crate::result::{AgentStatus, RunResult};

pub(super) fn agents(o: &mut String, r: &RunResult) {
    let Some(a) = &r.agents else { return };
    let each: Vec<String> = a
        .agents
        .iter()
        .map(|e| {
            let clock = match (e.clock_offset_ns, e.clock_uncertainty_ns) {
                (Some(off), Some(u)) => format!(
                    ", clock {}{} ±{}",
                    if off >= 0 { "+" } else { "" },
                    format::duration_ns_signed(off),
                    format::duration_ns(u as f64)
                ),
                _ => String::new(),
            };
            format!(
                "{} ({} pub, {} sub{clock})",
                e.name,
                format::group(u64::from(e.pubs)),
                format::group(u64::from(e.subs))
            )
        })
        .collect();
    let _ = writeln!(o, "Agents: {}", each.join("; "));
    if let Some(u) = a.cross_agent_latency_uncertainty_ns {
        let _ = writeln!(
            o,
            "Latency from one agent to another is corrected by their clock offsets, to within ±{}",
            format::duration_ns(u as f64)
        );
    }
    for e in a
        .agents
        .iter()
        .filter(|e| e.status != AgentStatus::Complete)
    {
        let said = e
            .last_progress
            .as_ref()
            .map(|p| {
                format!(
                    "; last reported {} sent, {} received",
                    format::group(p["pub_msgs"].as_u64().unwrap_or(0)),
                    format::group(p["sub_msgs"].as_u64().unwrap_or(0))
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "!! AGENT {} {}: {}{said}; the figures above lack its share !!",
            e.name,
            match e.status {
                AgentStatus::Missing => "MISSING",
                _ => "FAILED",
            },
            e.reason.as_deref().unwrap_or("no result")
        );
    }
}
