//! Latency histograms as msgbench wants them: nanoseconds, 1 ns to one hour, 3 significant
//! digits, shipped as base64 of the V2 deflate-compressed HdrHistogram encoding (cookie
//! `0x1c849304`) so that msgbench computes every percentile itself.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::protocol::LatencyOut;

/// Lowest discernible value, ns.
pub const LOWEST: u64 = 1;
/// Highest trackable value, ns: one hour.
pub const HIGHEST: u64 = 3_600_000_000_000;
pub const SIGFIG: u8 = 3;

/// An empty histogram with msgbench's bounds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST, HIGHEST, SIGFIG).expect("constant bounds are valid")
}

/// Records `ns`, clamped into the trackable range: a value beyond an hour is an hour (it is
/// a failure either way), and recording must never fail mid-run.
#[inline]
pub fn record(h: &mut Histogram<u64>, ns: u64) {
    h.saturating_record(ns.min(HIGHEST));
}

/// The V2 deflate-compressed encoding, base64.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing to memory cannot fail");
    STANDARD.encode(bytes)
}

/// The `latency` object of a result.
pub fn latency_out(h: &Histogram<u64>) -> LatencyOut {
    LatencyOut {
        count: h.len(),
        hdr: encode(h),
    }
}

/// The two latencies of one delivery, kept apart from the warm-up ones.
#[derive(Debug)]
pub struct LatencyPair {
    pub corrected: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    /// Deliveries due before this, in ns since the start, are counted but not recorded.
    warmup_ns: u64,
}

impl LatencyPair {
    pub fn new(warmup_ns: u64) -> Self {
        Self {
            corrected: new_histogram(),
            uncorrected: new_histogram(),
            warmup_ns,
        }
    }

    /// Records one delivery: everything in ns since the run's start. A receive time before
    /// the due time (a message sent early never happens, but clocks are read on different
    /// threads) counts as 0.
    #[inline]
    pub fn record(&mut self, due_ns: u64, sent_ns: u64, recv_ns: u64) {
        if due_ns < self.warmup_ns {
            return;
        }
        record(&mut self.corrected, recv_ns.saturating_sub(due_ns));
        record(&mut self.uncorrected, recv_ns.saturating_sub(sent_ns));
    }

    pub fn merge(&mut self, other: &LatencyPair) {
        self.corrected
            .add(&other.corrected)
            .expect("same bounds on both sides");
        self.uncorrected
            .add(&other.uncorrected)
            .expect("same bounds on both sides");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;

    #[test]
    fn round_trip_keeps_counts() {
        let mut h = new_histogram();
        for v in [1, 2, 1000, 123_456, HIGHEST, HIGHEST * 2] {
            record(&mut h, v);
        }
        let bytes = STANDARD.decode(encode(&h)).unwrap();
        assert_eq!(&bytes[..4], &[0x1c, 0x84, 0x93, 0x14]);
        let back: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
        assert_eq!(back.len(), 6);
        assert_eq!(back, h);
    }

    #[test]
    fn warmup_is_not_recorded() {
        let mut p = LatencyPair::new(1_000);
        p.record(999, 999, 2_000);
        p.record(1_000, 1_500, 2_000);
        assert_eq!(p.corrected.len(), 1);
        assert_eq!(p.corrected.max(), p.corrected.highest_equivalent(1_000));
        assert_eq!(p.uncorrected.max(), p.uncorrected.highest_equivalent(500));
    }
}
