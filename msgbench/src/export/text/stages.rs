//! The per-stage table of a `--rate-schedule` run: each stage's target and achieved rate, what
//! was lost, and its corrected P50/P99/P99.9 (with the uncorrected P99 beside them, so a stall
//! hidden by closed-loop timing shows as the gap between the two).

use std::fmt::Write;

use crate::format::{duration_ns, group};
use crate::result::{LatencyStats, RunResult};

pub(super) fn stages(o: &mut String, r: &RunResult) {
    let Some(s) = &r.schedule else { return };
    let timed = s.stages.iter().any(|st| st.latency.is_some());
    let _ = writeln!(o, "Stages of {} (by due time):", s.spec);
    let mut head = format!(
        "  {:>5}  {:>13}  {:>10}  {:>10}  {:>8}",
        "stage", "from–to s", "target/s", "achieved/s", "lost"
    );
    if timed {
        let _ = write!(
            head,
            "  {:>9}  {:>9}  {:>9}  {:>9}",
            "P50", "P99", "P99.9", "P99 unc."
        );
    }
    let _ = writeln!(o, "{head}");
    for st in &s.stages {
        let lost = st.lost.map_or_else(|| "—".to_string(), group);
        let mut row = format!(
            "  {:>5}  {:>13}  {:>10}  {:>10}  {:>8}",
            st.index + 1,
            format!("{:.1}–{:.1}", st.start_s, st.end_s),
            group(st.target_rate.round() as u64),
            group(st.msgs_per_sec.round() as u64),
            lost
        );
        if timed {
            let at = |l: &Option<LatencyStats>, p: &str| {
                l.as_ref()
                    .map_or_else(|| "—".to_string(), |l| duration_ns(l.at(p) as f64))
            };
            let _ = write!(
                row,
                "  {:>9}  {:>9}  {:>9}  {:>9}",
                at(&st.latency, "50"),
                at(&st.latency, "99"),
                at(&st.latency, "99.9"),
                at(&st.latency_uncorrected, "99")
            );
        }
        let _ = writeln!(o, "{}", row.trim_end());
    }
}
