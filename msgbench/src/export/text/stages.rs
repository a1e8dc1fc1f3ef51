//! The per-stage table of a `--rate-schedule` run: each stage's target and achieved rate, what
//! was lost, and its corrected P50/P99/P99.9 (with the uncorrected P99 beside them, so a stall
//! hidden by closed-loop timing shows as the gap between the two). A stage the warm-up covers
//! says so, instead of showing dashes that read as "nothing arrived".

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
        let in_warmup = s.warmup_s.is_some_and(|w| st.end_s <= w + 1e-9);
        if timed && in_warmup {
            let _ = write!(row, "  in the warm-up: not timed");
        } else if timed {
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
    if let Some(w) = s.warmup_s.filter(|_| timed) {
        let covered = s.stages.iter().filter(|st| st.start_s < w - 1e-9).count();
        if covered > 0 {
            let _ = writeln!(
                o,
                "  The {} warm-up reaches into {}: messages due in it were sent, not timed \
                 (--warmup 0s times every stage)",
                crate::format::duration_ns(w * 1e9),
                match covered {
                    1 => "stage 1".to_string(),
                    n => format!("stages 1–{n}"),
                }
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::ScheduleReport;
    use crate::stats::schedule::RateSchedule;

    fn table(warmup_ms: u64) -> String {
        let sc = RateSchedule::parse("step:500:500:700ms:1500", None).unwrap();
        let mut report = ScheduleReport::new(&sc, &[350, 700, 1050], 1, None)
            .with_warmup(std::time::Duration::from_millis(warmup_ms));
        let mut h = crate::stats::latency::new_histogram();
        h.record(50_000).unwrap();
        // Stage 1 lies in a 1 s warm-up, so only the later stages were timed.
        for st in &mut report.stages[1..] {
            st.latency = Some(LatencyStats::of(&h));
            st.latency_uncorrected = Some(LatencyStats::of(&h));
        }
        let mut r = RunResult::new(
            "latency",
            "2026-11-26T00:00:00Z".into(),
            serde_json::Value::Null,
            crate::result::ServerMeta::for_tests(),
            &crate::error::ErrorCounts::default(),
            false,
        );
        r.schedule = Some(report);
        let mut o = String::new();
        stages(&mut o, &r);
        o
    }

    #[test]
    fn a_stage_the_warm_up_covers_says_so() {
        let o = table(1000);
        let row = |n: &str| o.lines().find(|l| l.trim_start().starts_with(n)).unwrap();
        assert!(row("1 ").ends_with("in the warm-up: not timed"), "{o}");
        assert!(row("2 ").contains("50.0 µs"), "{o}");
        assert!(
            o.contains("The 1.00 s warm-up reaches into stages 1–2: messages due in it were sent, not timed"),
            "{o}"
        );
        // Without a warm-up there is nothing to say.
        assert!(!table(0).contains("warm-up"));
    }
}
