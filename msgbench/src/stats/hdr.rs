//! HdrHistogram formats: the base64 V2-compressed encoding carried in JSON, the `.hgrm`
//! percentile-distribution text, and the interval log (one histogram per second), each
//! readable by HdrHistogram's own tools in every language.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::error::{Error, Result};

/// Nanoseconds per millisecond: `.hgrm` files and interval-log maxima are in milliseconds, the
/// unit HdrHistogram's plotter and log processor assume for latency.
pub const NS_PER_MS: f64 = 1e6;

/// base64 of the V2 deflate-compressed encoding (what HdrHistogram's `encodeIntoCompressed
/// ByteBuffer` writes and every implementation decodes).
pub fn encode_base64(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serialising into memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Reads [`encode_base64`]'s form back (as any HdrHistogram implementation writes it).
///
/// # Errors
/// Why the text is not a V2 (compressed or not) histogram.
pub fn decode_base64(text: &str) -> std::result::Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("not an HdrHistogram encoding: {e:?}"))
}

/// The percentile distribution in HdrHistogram's `.hgrm` text format, values in milliseconds.
pub fn percentile_distribution(h: &Histogram<u64>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0u64;
    for v in h.iter_quantiles(5) {
        total += v.count_since_last_iteration();
        let value = v.value_iterated_to() as f64 / NS_PER_MS;
        let q = v.quantile_iterated_to();
        if q < 1.0 {
            let _ = writeln!(
                out,
                "{value:>12.3} {q:>2.12} {total:>10} {:>14.2}",
                1.0 / (1.0 - q)
            );
        } else {
            let _ = writeln!(out, "{value:>12.3} {q:>2.12} {total:>10}");
        }
    }
    let _ = writeln!(
        out,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        h.mean() / NS_PER_MS,
        h.stdev() / NS_PER_MS
    );
    let _ = writeln!(
        out,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        h.max() as f64 / NS_PER_MS,
        h.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        // Sub-buckets per bucket, as HdrHistogram defines them for this precision.
        (2 * 10u32.pow(u32::from(h.sigfig()))).next_power_of_two()
    );
    out
}

/// An interval log being written: one line per interval, flushed as it goes, so memory stays
/// flat and a run cut short still leaves every finished second on disk.
pub struct IntervalLog {
    file: std::io::BufWriter<std::fs::File>,
    path: std::path::PathBuf,
}

impl IntervalLog {
    /// Creates the log with its headers. `start` is the wall-clock time of the run's zero.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file.
    pub fn create(path: &Path, start: SystemTime) -> Result<Self> {
        let file = std::fs::File::create(path)
            .map_err(|e| Error::io(format!("cannot create --hist file '{}'", path.display()), e))?;
        let mut log = Self {
            file: std::io::BufWriter::new(file),
            path: path.to_path_buf(),
        };
        let secs = start
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let header = format!(
            "#[msgbench corrected latency, one histogram per second, values in ns]\n\
             #[StartTime: {secs:.3} (seconds since epoch)]\n\
             #[BaseTime: {secs:.3} (seconds since epoch)]\n\
             #[MaxValueDivisor: {NS_PER_MS:.3}]\n\
             \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
        );
        log.write_raw(header.as_bytes())?;
        Ok(log)
    }

    /// Appends the histogram of the interval [`start_ns`, `end_ns`) since the run's zero.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file.
    pub fn append(&mut self, h: &Histogram<u64>, start_ns: u64, end_ns: u64) -> Result<()> {
        let line = format!(
            "{:.3},{:.3},{:.3},{}\n",
            start_ns as f64 / 1e9,
            end_ns.saturating_sub(start_ns) as f64 / 1e9,
            h.max() as f64 / NS_PER_MS,
            encode_base64(h)
        );
        self.write_raw(line.as_bytes())
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .and_then(|()| self.file.flush())
            .map_err(|e| {
                Error::io(
                    format!("cannot write --hist file '{}'", self.path.display()),
                    e,
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    fn sample() -> Histogram<u64> {
        let mut h = crate::stats::latency::new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1_000).unwrap();
        }
        h
    }

    #[test]
    fn base64_round_trips_through_a_standard_decoder() {
        let h = sample();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encode_base64(&h))
            .unwrap();
        let back: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn hgrm_has_the_standard_shape() {
        let text = percentile_distribution(&sample());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("Value") && lines[0].contains("1/(1-Percentile)"));
        let rows: Vec<Vec<&str>> = lines[2..]
            .iter()
            .take_while(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().collect())
            .collect();
        let last = rows.last().unwrap();
        assert_eq!((last[1], last[2]), ("1.000000000000", "1000"));
        assert!(
            (last[0].parse::<f64>().unwrap() - 1.0).abs() < 0.001,
            "{last:?}"
        );
        assert!(
            text.contains("#[Max     =        1.000, Total count    =         1000]"),
            "{text}"
        );
    }

    #[test]
    fn interval_log_is_read_back_by_the_standard_parser() {
        let path = std::env::temp_dir().join(format!("msgbench-hlog-{}", std::process::id()));
        {
            let mut log = IntervalLog::create(&path, SystemTime::UNIX_EPOCH).unwrap();
            log.append(&sample(), 0, 1_000_000_000).unwrap();
            log.append(&sample(), 1_000_000_000, 2_000_000_000).unwrap();
        }
        let text = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let mut intervals = 0;
        for entry in IntervalLogIterator::new(&text) {
            if let LogEntry::Interval(i) = entry.unwrap() {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .unwrap();
                let h: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
                assert_eq!(h.len(), 1000);
                assert_eq!(i.start_timestamp().as_secs(), intervals);
                assert!((i.max() - 1.0).abs() < 0.01, "max {}", i.max());
                intervals += 1;
            }
        }
        assert_eq!(intervals, 2);
    }
}
