//! How paced publishers kept their schedule, as every open-loop scenario reports it: the send
//! lag, the achieved rate, and the share of time the far side held the publishers back.

use std::time::Duration;

use crate::engine::load::PubOutcome;

/// A paced send later than this behind its schedule counts as late.
pub(crate) const PACING_LATE_BOUND: Duration = Duration::from_millis(1);

/// How the publishers together kept an aggregate schedule of `per_sec`.
pub(crate) fn pacing(
    per_sec: f64,
    pubs: &[PubOutcome],
    stats: Option<&crate::result::RoleStats>,
) -> Option<crate::result::Pacing> {
    let mut lag = crate::stats::latency::new_histogram();
    for h in pubs.iter().filter_map(|o| o.send_lag.as_ref()) {
        lag.add(h).ok()?;
    }
    let actual = stats.map(|s| s.throughput.msgs_per_sec);
    Some(
        crate::result::Pacing::new(
            per_sec,
            actual,
            PACING_LATE_BOUND.as_nanos() as u64,
            pubs.iter().map(|o| o.late_sends).sum(),
            &lag,
        )
        .with_write_blocked(write_blocked_pct(pubs)),
    )
}

/// The publishers' mean share of their run spent blocked in writes, in percent.
pub(crate) fn write_blocked_pct(pubs: &[PubOutcome]) -> Option<f64> {
    let shares: Vec<f64> = pubs
        .iter()
        .filter_map(|o| {
            let blocked = o.write_blocked?;
            let span = o.run.end?.saturating_duration_since(o.run.start?);
            (!span.is_zero()).then(|| blocked.as_secs_f64() / span.as_secs_f64())
        })
        .collect();
    (!shares.is_empty()).then(|| 100.0 * shares.iter().sum::<f64>() / shares.len() as f64)
}
