//! The `schedule` section of a result: a `--rate-schedule` run's figures stage by stage, so the
//! report can draw latency against throughput and a gate can find the stage where it bent.

use serde::Serialize;

use super::LatencyStats;
use crate::stats::schedule::RateSchedule;
use crate::stats::stages::StageFigures;

/// The schedule as typed, and each stage's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ScheduleReport {
    pub spec: String,
    pub stages: Vec<StageStats>,
    /// The warm-up at the start of the run, in s: messages due before it were sent and
    /// counted but not timed, so a stage that ends by then has no latency. Absent where the
    /// scenario has no warm-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup_s: Option<f64>,
}

/// One stage. Messages belong to the stage they were due in.
#[derive(Debug, Clone, Serialize)]
pub struct StageStats {
    pub index: usize,
    pub start_s: f64,
    pub end_s: f64,
    /// The stage's rate (its mean, for a stage of a ramp).
    pub target_rate: f64,
    /// Messages (requests) sent that were due in the stage.
    pub sent: u64,
    /// Of those, the ones that arrived (were answered, acknowledged; summed over the
    /// subscribers in `pubsub`); null where nothing in the run receives (`pub`).
    pub received: Option<u64>,
    /// What arrived while the stage ran, whenever it was due (summed over the subscribers):
    /// what `msgs_per_sec` is made of; null with `received`.
    pub arrived_within: Option<u64>,
    /// Expected (sent, times the subscribers when each receives every message) but never
    /// arrived; null with `received`, and in JetStream publishing, whose loss (an acknowledged
    /// write missing from the stream) is judged for the whole run: there `received` counts
    /// acknowledgements, and what was not acknowledged is not lost.
    pub lost: Option<u64>,
    /// Achieved throughput: what arrived while the stage ran (whenever it was due) over the
    /// stage's length, per subscriber in `pubsub`, so it compares with `target_rate` and falls
    /// behind it when the system does; sends by due time where nothing receives (`pub`).
    pub msgs_per_sec: f64,
    /// Latency from each message's due time; null where the scenario times nothing.
    pub latency: Option<LatencyStats>,
    pub latency_uncorrected: Option<LatencyStats>,
}

impl ScheduleReport {
    /// The section for `schedule`, from what each stage sent and, where the run receives, what
    /// arrived (`figures`, one per stage); each message sent was expected `fanout` times.
    pub fn new(
        schedule: &RateSchedule,
        sent: &[u64],
        fanout: u64,
        figures: Option<Vec<Option<StageFigures>>>,
    ) -> Self {
        let stages = schedule
            .stages()
            .iter()
            .enumerate()
            .map(|(i, st)| {
                let secs = st.len_ns / 1e9;
                let sent = sent.get(i).copied().unwrap_or(0);
                let got = figures.as_ref().map(|f| f.get(i).and_then(Option::as_ref));
                let received = got.map(|f| f.map_or(0, |f| f.received));
                let within = got.map(|f| f.map_or(0, |f| f.arrived_within));
                let timed = |pick: fn(&StageFigures) -> &hdrhistogram::Histogram<u64>| {
                    got.flatten()
                        .map(pick)
                        .filter(|h| !h.is_empty())
                        .map(LatencyStats::of)
                };
                StageStats {
                    index: i,
                    start_s: st.start_ns / 1e9,
                    end_s: st.end_ns() / 1e9,
                    target_rate: st.target_rate(),
                    sent,
                    received,
                    arrived_within: within,
                    lost: received.map(|r| (sent * fanout).saturating_sub(r)),
                    msgs_per_sec: within.map_or(sent as f64, |r| r as f64 / fanout as f64) / secs,
                    latency: timed(|f| &f.corrected),
                    latency_uncorrected: timed(|f| &f.uncorrected),
                }
            })
            .collect();
        Self {
            spec: schedule.to_string(),
            stages,
            warmup_s: None,
        }
    }

    /// For JetStream publishing, whose `received` counts acknowledgements: what was not
    /// acknowledged is not lost, and loss (an acknowledged write missing from the stream) is
    /// judged for the whole run, not by the stage it was due in. Each stage's `lost` is null.
    pub fn loss_judged_for_the_run(&mut self) {
        for st in &mut self.stages {
            st.lost = None;
        }
    }

    /// With the run's warm-up (none when zero).
    #[must_use]
    pub fn with_warmup(mut self, warmup: std::time::Duration) -> Self {
        self.warmup_s = (!warmup.is_zero()).then_some(warmup.as_secs_f64());
        self
    }
}
