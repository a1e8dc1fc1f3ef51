//! The `schedule` section of a run on agents. Every agent followed the one `--rate-schedule`
//! from the common start, so its stages are the run's: each stage's sends, arrivals and
//! latency histograms are added across agents, and the section is made again from the sums,
//! as one process would have made it. Each agent's own section stays in its document.

use hdrhistogram::Histogram;

use super::read::Doc;
use super::MergeError;
use crate::result::{AgentEntry, AgentStatus, ScheduleReport};
use crate::stats::hdr::decode_base64;
use crate::stats::latency::new_histogram;
use crate::stats::schedule::RateSchedule;
use crate::stats::stages::StageFigures;

/// The run's `schedule` section from its agents' (those that completed); `fanout` is how many
/// times each message sent was expected to arrive over the whole run (the subscribers of a
/// `pubsub`, else 1). None when no agent has the section.
///
/// # Errors
/// A section that cannot be read, or whose stages are not the schedule's, naming its agent.
pub fn schedule(
    agents: &[AgentEntry],
    schedule: &RateSchedule,
    fanout: u64,
) -> Result<Option<ScheduleReport>, MergeError> {
    let n = schedule.stages().len();
    let mut sent = vec![0u64; n];
    let mut figures: Vec<Option<StageFigures>> = (0..n).map(|_| None).collect();
    let (mut any, mut warmup_s) = (false, None);
    for a in agents.iter().filter(|a| a.status == AgentStatus::Complete) {
        let Some(v) = a.result.as_ref() else { continue };
        let doc = Doc {
            agent: &a.name,
            v,
            at: String::new(),
        };
        let Some(section) = doc.part("/schedule") else {
            continue;
        };
        any = true;
        warmup_s = warmup_s.or(section.opt_f64("/warmup_s")?);
        let stages = section.list("/stages")?;
        if stages.len() != n {
            return Err(section.bad("/stages", "one entry per stage of the schedule"));
        }
        for (i, st) in stages.iter().enumerate() {
            // Sends are counted where the publishers are (a subscriber's agent repeats what it
            // was told was sent).
            if a.pubs > 0 {
                sent[i] += st.u64("/sent")?;
            }
            let Some(received) = st.opt_u64("/received")? else {
                continue;
            };
            let f = figures[i].get_or_insert_with(|| StageFigures {
                corrected: new_histogram(),
                uncorrected: new_histogram(),
                received: 0,
                arrived_within: 0,
            });
            f.received += received;
            f.arrived_within += st.opt_u64("/arrived_within")?.unwrap_or(0);
            add(&mut f.corrected, st, "/latency")?;
            add(&mut f.uncorrected, st, "/latency_uncorrected")?;
        }
    }
    if !any {
        return Ok(None);
    }
    // Received is null where no agent received (a `pub`), as on one host.
    let received = figures.iter().any(Option::is_some).then_some(figures);
    let mut report = ScheduleReport::new(schedule, &sent, fanout.max(1), received);
    report.warmup_s = warmup_s;
    Ok(Some(report))
}

/// Adds a stage's histogram at `ptr`, when it has one.
fn add(total: &mut Histogram<u64>, stage: &Doc<'_>, ptr: &str) -> Result<(), MergeError> {
    let Some(part) = stage.part(ptr) else {
        return Ok(());
    };
    let h = decode_base64(part.str("/hdr")?).map_err(|reason| MergeError::BadHistogram {
        agent: stage.agent.to_string(),
        section: "schedule",
        reason,
    })?;
    total.add(&h).map_err(|e| MergeError::BadHistogram {
        agent: stage.agent.to_string(),
        section: "schedule",
        reason: format!("it does not fit the others' range: {e:?}"),
    })
}
