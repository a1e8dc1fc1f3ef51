//! Latency between agents that their clocks cannot resolve: a cross-agent latency is corrected
//! by the agents' clock offsets, which are known only to within an uncertainty, so a figure
//! below it cannot be told from zero. Kept apart from the result's common types so that the
//! rule is read in one place: which figures are below it, and how a reader asks.

use serde::Serialize;

use super::LatencyStats;

/// Latency from one agent to another is corrected by their clock offsets, to within
/// ±`uncertainty_ns`. A figure below that cannot be told from zero (a corrected value that
/// came out negative is clamped to 1 ns, which is the clocks' limit, not a latency): such
/// figures are named here, the text shows them as below the uncertainty, and a gate on one
/// fails as not measured.
#[derive(Debug, Clone, Serialize)]
pub struct ClockLimit {
    pub uncertainty_ns: u64,
    /// The figures below it: `min_ns`, `mean_ns`, `max_ns`, or a percentile's key (`"50"`).
    pub figures: Vec<&'static str>,
}

impl LatencyStats {
    /// Marks the figures below the clock offsets' uncertainty `uncertainty_ns` (latency
    /// between agents), when there are any.
    #[must_use]
    pub fn with_clock_limit(mut self, uncertainty_ns: u64) -> Self {
        let below = |v: f64| v < uncertainty_ns as f64;
        let mut figures: Vec<&'static str> = Vec::new();
        if below(self.min_ns as f64) {
            figures.push("min_ns");
        }
        if below(self.mean_ns) {
            figures.push("mean_ns");
        }
        figures.extend(
            self.percentiles_ns
                .0
                .iter()
                .filter(|(_, v)| below(*v as f64))
                .map(|(k, _)| *k),
        );
        if below(self.max_ns as f64) {
            figures.push("max_ns");
        }
        self.below_clock_uncertainty = (!figures.is_empty()).then_some(ClockLimit {
            uncertainty_ns,
            figures,
        });
        self
    }

    /// The clock offsets' uncertainty when `figure` (as [`ClockLimit::figures`] names it) is
    /// below it.
    pub fn unresolved(&self, figure: &str) -> Option<u64> {
        self.below_clock_uncertainty
            .as_ref()
            .filter(|c| c.figures.contains(&figure))
            .map(|c| c.uncertainty_ns)
    }
}
