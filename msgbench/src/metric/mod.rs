//! The named figures of a result (`p99`, `msgs_per_sec`, `lost`, …): one table that says where
//! each lives in the result document, its unit, and which way is better. Gates judge them,
//! `--runs` summarises them across runs, and `diff` compares them between two files, so all
//! three read a figure the same way: from the JSON form of the result, which is also what a
//! saved file holds.

pub mod runs;

use serde_json::Value;

/// What a metric measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A reported percentile of the (corrected) latency, by its key ("99.9").
    Percentile(&'static str),
    LatencyMin,
    LatencyMax,
    LatencyMean,
    MsgsPerSec,
    BytesPerSec,
    Msgs,
    Sent,
    Received,
    Lost,
    Duplicated,
    Reordered,
    /// Every counted error kind together.
    Errors,
    /// Percent by which a paced run's achieved rate fell short of its target.
    ShortfallPct,
}

/// The percentiles every latency result reports, in order.
pub const PERCENTILES: [(&str, f64); 9] = [
    ("10", 10.0),
    ("50", 50.0),
    ("75", 75.0),
    ("90", 90.0),
    ("99", 99.0),
    ("99.9", 99.9),
    ("99.99", 99.99),
    ("99.999", 99.999),
    ("100", 100.0),
];

/// One named figure of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric(Kind);

const PLAIN: [(&str, Kind); 13] = [
    ("min", Kind::LatencyMin),
    ("max", Kind::LatencyMax),
    ("mean", Kind::LatencyMean),
    ("msgs_per_sec", Kind::MsgsPerSec),
    ("bytes_per_sec", Kind::BytesPerSec),
    ("msgs", Kind::Msgs),
    ("sent", Kind::Sent),
    ("received", Kind::Received),
    ("lost", Kind::Lost),
    ("duplicated", Kind::Duplicated),
    ("reordered", Kind::Reordered),
    ("errors", Kind::Errors),
    ("shortfall_pct", Kind::ShortfallPct),
];

impl Metric {
    /// Every metric, percentiles first.
    pub fn all() -> impl Iterator<Item = Metric> {
        PERCENTILES
            .iter()
            .map(|(k, _)| Metric(Kind::Percentile(k)))
            .chain(PLAIN.iter().map(|(_, k)| Metric(*k)))
    }

    /// The metric called `name`.
    ///
    /// # Errors
    /// Which names exist, for the flag's error line.
    pub fn parse(name: &str) -> Result<Self, String> {
        if let Some((_, k)) = PLAIN.iter().find(|(n, _)| *n == name) {
            return Ok(Metric(*k));
        }
        if let Some(key) = name.strip_prefix('p') {
            return match PERCENTILES.iter().find(|(k, _)| *k == key) {
                Some((k, _)) => Ok(Metric(Kind::Percentile(k))),
                None => {
                    let known: Vec<String> =
                        PERCENTILES.iter().map(|(k, _)| format!("p{k}")).collect();
                    Err(format!(
                        "'{name}' is not a reported percentile (use {})",
                        known.join(", ")
                    ))
                }
            };
        }
        // The list comes from the table, so a new metric can't be left out of it.
        let plain: Vec<&str> = PLAIN.iter().map(|(n, _)| *n).collect();
        Err(format!(
            "unknown metric '{name}' (use p50…p100, {})",
            plain.join(", ")
        ))
    }

    /// The name users type.
    pub fn name(self) -> String {
        match self.0 {
            Kind::Percentile(k) => format!("p{k}"),
            k => PLAIN
                .iter()
                .find(|(_, p)| *p == k)
                .map_or_else(String::new, |(n, _)| (*n).to_string()),
        }
    }

    /// Latency metrics are in nanoseconds.
    pub fn is_latency(self) -> bool {
        matches!(
            self.0,
            Kind::Percentile(_) | Kind::LatencyMin | Kind::LatencyMax | Kind::LatencyMean
        )
    }

    /// Whether a larger value is an improvement (rates), or a worse result (latency, loss,
    /// errors). Plain counts of messages are neither; they read as "more".
    pub fn higher_is_better(self) -> bool {
        matches!(
            self.0,
            Kind::MsgsPerSec | Kind::BytesPerSec | Kind::Msgs | Kind::Sent | Kind::Received
        )
    }

    /// The metric's value in a result document: the median over its runs when it has several
    /// (`--runs`), else the run's own figure.
    ///
    /// # Errors
    /// The reason the document has no such figure (no latency measured, a count not kept).
    pub fn read(self, doc: &Value) -> Result<f64, &'static str> {
        let values = self.values(doc)?;
        Ok(crate::stats::significance::median(&values))
    }

    /// The metric's value in each run of a result document, in run order: one value for a
    /// single run.
    ///
    /// # Errors
    /// As [`Metric::read`].
    pub fn values(self, doc: &Value) -> Result<Vec<f64>, &'static str> {
        let per_run = doc
            .pointer(&format!("/runs/metrics/{}/values", self.name()))
            .and_then(Value::as_array);
        match per_run {
            Some(vs) => Ok(vs.iter().filter_map(Value::as_f64).collect()),
            // A result with runs that lacks this metric: some run did not measure it.
            None if doc.get("runs").is_some_and(|r| !r.is_null()) => {
                self.read_one(doc).and(Err("not measured in every run"))
            }
            None => self.read_one(doc).map(|v| vec![v]),
        }
    }

    /// The metric as one run's own sections give it (the representative run's, in a result
    /// with several).
    ///
    /// # Errors
    /// As [`Metric::read`].
    pub fn read_one(self, doc: &Value) -> Result<f64, &'static str> {
        let num = |ptr: &str| doc.pointer(ptr).and_then(Value::as_f64);
        let lat = |field: &str| {
            if doc.get("latency").is_none_or(Value::is_null) {
                return Err("this run measured no latency");
            }
            num(&format!("/latency/{field}")).ok_or("this run measured no latency")
        };
        let counted = |ptr: &str| num(ptr).ok_or("not counted in this run");
        match self.0 {
            Kind::Percentile(k) => lat(&format!("percentiles_ns/{k}")),
            Kind::LatencyMin => lat("min_ns"),
            Kind::LatencyMax => lat("max_ns"),
            Kind::LatencyMean => lat("mean_ns"),
            Kind::MsgsPerSec => counted("/throughput/msgs_per_sec"),
            Kind::BytesPerSec => counted("/throughput/bytes_per_sec"),
            Kind::Msgs => counted("/throughput/msgs"),
            Kind::Sent => counted("/delivery/sent"),
            Kind::Received => counted("/delivery/received"),
            Kind::Lost => counted("/delivery/lost"),
            Kind::Duplicated => counted("/delivery/duplicated"),
            Kind::Reordered => counted("/delivery/reordered"),
            Kind::ShortfallPct => num("/pacing/shortfall_pct").ok_or("this run had no target rate"),
            Kind::Errors => doc
                .get("errors")
                .and_then(Value::as_object)
                .map(|m| m.values().filter_map(Value::as_f64).sum())
                .ok_or("not counted in this run"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_name_parses_back_to_its_metric() {
        for m in Metric::all() {
            assert_eq!(Metric::parse(&m.name()), Ok(m), "{}", m.name());
        }
        assert_eq!(Metric::all().count(), PERCENTILES.len() + PLAIN.len());
        assert!(Metric::parse("p95")
            .unwrap_err()
            .contains("not a reported percentile"));
        assert!(Metric::parse("speed")
            .unwrap_err()
            .contains("unknown metric"));
    }

    #[test]
    fn figures_are_read_from_the_document_or_say_why_not() {
        let doc = json!({
            "throughput": {"msgs": 10, "msgs_per_sec": 5.0, "bytes_per_sec": 80.0},
            "delivery": {"sent": 10, "received": 9, "lost": 1, "duplicated": null},
            "errors": {"slow_consumer": 2, "io": 1},
            "latency": {"min_ns": 7, "max_ns": 90, "mean_ns": 30.5,
                        "percentiles_ns": {"50": 20, "99.9": 88}}
        });
        let read = |n: &str| Metric::parse(n).unwrap().read(&doc);
        assert_eq!(read("msgs_per_sec"), Ok(5.0));
        assert_eq!(read("p99.9"), Ok(88.0));
        assert_eq!(read("mean"), Ok(30.5));
        assert_eq!(read("lost"), Ok(1.0));
        assert_eq!(read("errors"), Ok(3.0));
        assert_eq!(read("duplicated"), Err("not counted in this run"));
        // With runs, the median of the runs' values; the top-level figure is one run's.
        let mut runs = doc.clone();
        runs["runs"] = json!({"metrics": {"msgs_per_sec": {"values": [4.0, 9.0, 6.0]}}});
        assert_eq!(Metric::parse("msgs_per_sec").unwrap().read(&runs), Ok(6.0));
        assert_eq!(
            Metric::parse("msgs_per_sec").unwrap().values(&runs),
            Ok(vec![4.0, 9.0, 6.0])
        );
        assert_eq!(
            Metric::parse("msgs_per_sec").unwrap().read_one(&runs),
            Ok(5.0)
        );
        assert_eq!(
            Metric::parse("lost").unwrap().read(&runs),
            Err("not measured in every run")
        );
        let no_latency = json!({"throughput": {"msgs_per_sec": 1.0}, "latency": null});
        assert_eq!(
            Metric::parse("p50").unwrap().read(&no_latency),
            Err("this run measured no latency")
        );
    }

    #[test]
    fn direction_follows_the_unit() {
        let better_high = |n: &str| Metric::parse(n).unwrap().higher_is_better();
        assert!(better_high("msgs_per_sec") && better_high("bytes_per_sec"));
        assert!(!better_high("p99") && !better_high("lost") && !better_high("errors"));
    }
}
