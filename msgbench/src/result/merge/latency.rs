//! Latency of the whole run from the agents' histograms: each is decoded and added bucket by
//! bucket, so the merged histogram is the one a single recorder would have filled, and every
//! percentile of it is exact.

use hdrhistogram::Histogram;

use super::read::Doc;
use super::MergeError;
use crate::result::LatencyStats;
use crate::stats::hdr::decode_base64;

/// The sum of the agents' `section` histograms (`latency` or `latency_uncorrected`); agents
/// without the section add nothing, and with none having it there is none.
pub(super) fn merged(
    docs: &[Doc<'_>],
    section: &'static str,
) -> Result<Option<LatencyStats>, MergeError> {
    let mut total: Option<Histogram<u64>> = None;
    for d in docs {
        let Some(part) = d.part(&format!("/{section}")) else {
            continue;
        };
        let bad = |reason: String| MergeError::BadHistogram {
            agent: d.agent.to_string(),
            section,
            reason,
        };
        let h = decode_base64(part.str("/hdr")?).map_err(bad)?;
        match &mut total {
            // The first histogram is the base, so the merged one keeps the agents' range and
            // precision.
            None => total = Some(h),
            Some(t) => t
                .add(&h)
                .map_err(|e| bad(format!("it does not fit the others' range: {e:?}")))?,
        }
    }
    Ok(total.map(|h| LatencyStats::of(&h)))
}
