//! What the report reads from a result, calibration or capacity-search document, and the
//! latency curves drawn from it. Kept apart from the drawing so that how a file is read is
//! decided in one place, whichever table or chart shows it.
//!
//! Every field is optional here: files from older or newer msgbench versions lack some
//! sections or carry more, and a missing section leaves its row or chart out rather than
//! failing the report. A field of the wrong type does fail: the file is then not what it says
//! it is.

use std::collections::BTreeMap;

use base64::Engine as _;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::metric::Metric;
use crate::report::Doc;

/// Steps per halving of the remaining tail when the percentile curve is read off a histogram:
/// HdrHistogram's own `.hgrm` uses 5, enough for a smooth curve at ~100 points.
const QUANTILE_STEPS_PER_HALF: u32 = 5;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Run {
    pub(super) scenario: String,
    pub(super) run_id: String,
    pub(super) started_at: String,
    pub(super) interrupted: bool,
    pub(super) tool: Tool,
    pub(super) params: serde_json::Map<String, Value>,
    pub(super) server: Option<Server>,
    pub(super) server_b: Option<Server>,
    pub(super) by_role: BTreeMap<String, Rates>,
    pub(super) clients: Vec<Client>,
    pub(super) errors: BTreeMap<String, f64>,
    pub(super) latency: Option<Latency>,
    pub(super) latency_uncorrected: Option<Latency>,
    pub(super) thresholds: Vec<Verdict>,
    pub(super) host: Option<Host>,
    pub(super) timeline: Option<Timeline>,
    pub(super) runs: Option<Runs>,
    pub(super) link: Option<Link>,
    pub(super) cluster: Option<Cluster>,
    pub(super) rtt_ns: Option<Rtt>,
    pub(super) failure: Option<String>,
    pub(super) schedule: Option<Schedule>,
    pub(super) fault: Option<super::faults::Fault>,
    pub(super) server_side: Option<super::servers::ServerSide>,
    /// Every other key of the file: the sections of the run's own (`jetstream`, `conns`, …)
    /// among them, which the tables show as their scenarios say, looked up by key.
    #[serde(flatten)]
    pub(super) own: serde_json::Map<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Tool {
    pub(super) version: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Server {
    pub(super) url: String,
    pub(super) name: String,
    pub(super) version: String,
    pub(super) embedded: Option<bool>,
    pub(super) max_payload: Option<f64>,
    pub(super) auth: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Rates {
    pub(super) msgs_per_sec: f64,
    pub(super) clients: Option<f64>,
    /// What the side's messages are ("publishes", "acknowledgements"); absent in files from
    /// before it was written.
    pub(super) counts: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Client {
    pub(super) role: String,
    pub(super) id: u64,
    pub(super) msgs: f64,
    pub(super) seconds: f64,
    pub(super) msgs_per_sec: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Latency {
    pub(super) count: f64,
    pub(super) percentiles_ns: BTreeMap<String, f64>,
    pub(super) hdr: String,
}

/// A `--rate-schedule` run's stages, each with what it achieved.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Schedule {
    pub(super) spec: String,
    pub(super) stages: Vec<Stage>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Stage {
    pub(super) index: u64,
    pub(super) target_rate: f64,
    /// Achieved: what the stage is placed at on the throughput axis.
    pub(super) msgs_per_sec: f64,
    /// Corrected; null when the stage measured none (a pubsub run).
    pub(super) latency: Option<Latency>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Verdict {
    pub(super) expr: String,
    pub(super) measured: Option<f64>,
    pub(super) pass: bool,
    pub(super) why: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Host {
    pub(super) cpu: Option<String>,
    pub(super) cores: Option<f64>,
    pub(super) os: Option<String>,
    pub(super) arch: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Timeline {
    pub(super) interval_s: f64,
    pub(super) clients: Vec<TimelineClient>,
    pub(super) ticks: Vec<Tick>,
    pub(super) truncated: bool,
    /// When the load's time zero came on the ticks' clock, where faults are placed from.
    pub(super) load_start_s: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct TimelineClient {
    pub(super) role: String,
    pub(super) id: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Tick {
    pub(super) t_s: f64,
    pub(super) span_s: f64,
    pub(super) msgs: Vec<f64>,
    pub(super) sent_per_sec: f64,
    pub(super) received_per_sec: f64,
    pub(super) latency: Option<TickLatency>,
    pub(super) errors: f64,
    /// The servers sampled in this tick, and msgbench's own CPU in it (both absent from a
    /// result of a run that sampled none, or of an older msgbench).
    pub(super) server: Option<super::servers::TickServers>,
    pub(super) tool: Option<super::servers::TickTool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct TickLatency {
    pub(super) p50_ns: f64,
    pub(super) p99_ns: f64,
    pub(super) max_ns: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Runs {
    pub(super) n: u64,
    pub(super) representative: Option<u64>,
    pub(super) representative_by: Option<String>,
    pub(super) runs: Vec<RunExit>,
}

/// One of `--runs`, as far as the report needs it: the status it exited with on its own.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RunExit {
    pub(super) exit_status: u8,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Link {
    pub(super) spec: String,
    pub(super) proxy_added_rtt_ns: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Cluster {
    pub(super) nodes: Vec<Node>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Node {
    pub(super) name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Rtt {
    pub(super) a: f64,
    pub(super) b: f64,
}

/// A calibration document, as far as the report shows it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Calibration {
    pub(super) started_at: String,
    pub(super) tool: Tool,
    pub(super) server: Option<Server>,
    pub(super) environment: Option<CalEnvironment>,
    pub(super) link: Option<Link>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct CalEnvironment {
    pub(super) cpus: Option<f64>,
    pub(super) samples: Option<f64>,
    pub(super) size: Option<f64>,
    pub(super) floor_ns: BTreeMap<String, BTreeMap<String, f64>>,
}

/// A capacity search (`msgbench.capacity/v1`): the rate it found sustainable under its SLO,
/// and every probe it ran to find it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Capacity {
    pub(super) scenario: String,
    pub(super) run_id: String,
    pub(super) started_at: String,
    pub(super) tool: Tool,
    pub(super) slo: Vec<String>,
    pub(super) probe_duration_s: Option<f64>,
    pub(super) warmup_s: Option<f64>,
    pub(super) probe_runs: Option<f64>,
    /// Null when no probed rate held the SLO.
    pub(super) sustainable_rate: Option<f64>,
    pub(super) confidence: Option<Confidence>,
    pub(super) limiter: Option<Limiter>,
    pub(super) probes: Vec<Probe>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Confidence {
    pub(super) level: f64,
    pub(super) low: f64,
    pub(super) high: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Limiter {
    pub(super) kind: LimiterKind,
    pub(super) detail: String,
}

/// What stopped the search from going higher.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum LimiterKind {
    /// A probe broke the SLO.
    Slo,
    /// msgbench fell behind its own schedule: the rate measured the tool.
    Tool,
    /// The subscriber fell behind.
    Subscriber,
    /// The server refused or failed.
    Server,
    /// Nothing: the search reached the top of its range.
    None,
    /// A kind this msgbench does not know (a newer file): shown by its detail only.
    #[default]
    #[serde(other)]
    Other,
}

impl LimiterKind {
    /// As the document spells it.
    pub(super) fn name(self) -> &'static str {
        match self {
            LimiterKind::Slo => "slo",
            LimiterKind::Tool => "tool",
            LimiterKind::Subscriber => "subscriber",
            LimiterKind::Server => "server",
            LimiterKind::None => "none",
            LimiterKind::Other => "other",
        }
    }
}

/// One run at one probed rate.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Probe {
    pub(super) rate: f64,
    pub(super) run: u64,
    pub(super) pass: bool,
    pub(super) tool_kept_schedule: Option<bool>,
    /// Absent in documents written before it was recorded: then a late run was void.
    #[serde(rename = "void")]
    pub(super) is_void: Option<bool>,
    /// Null when the probe could not measure it.
    pub(super) msgs_per_sec: Option<f64>,
    pub(super) shortfall_pct: Option<f64>,
    /// Corrected; null when the probe measured none.
    pub(super) latency: Option<ProbeLatency>,
    pub(super) lost: Option<f64>,
    pub(super) errors: Option<f64>,
    pub(super) verdicts: Vec<Verdict>,
}

impl Probe {
    /// A run in which msgbench fell behind its own schedule and failed nothing its lateness
    /// cannot explain: it measured the tool, not the system, so it neither held nor failed the
    /// rate (the search ran it again).
    pub(super) fn void(&self) -> bool {
        self.is_void
            .unwrap_or(self.tool_kept_schedule == Some(false))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ProbeLatency {
    pub(super) p50_ns: Option<f64>,
    pub(super) p99_ns: Option<f64>,
    pub(super) p999_ns: Option<f64>,
}

fn shape_error(doc: &Doc, e: &serde_json::Error) -> Error {
    Error::Usage(format!(
        "'{}' says it is a msgbench document but a field has the wrong type ({e})",
        doc.path.display()
    ))
}

/// One result file being reported.
pub(super) struct Input<'a> {
    pub(super) doc: &'a Doc,
    pub(super) label: String,
    /// This input's colour wherever one colour stands for one input.
    pub(super) color: &'static str,
    pub(super) run: Run,
    pub(super) corrected: Option<Curve>,
    pub(super) uncorrected: Option<Curve>,
}

impl<'a> Input<'a> {
    /// What the publishers' and the subscribers' messages are, as the result names them;
    /// none for a file from before it did.
    pub(super) fn series_names(&self) -> Option<[&str; 2]> {
        let named = |role: &str| self.run.by_role.get(role).and_then(|r| r.counts.as_deref());
        match (named("pub"), named("sub")) {
            (None, None) => None,
            (p, s) => Some([p.unwrap_or("publishes"), s.unwrap_or("deliveries")]),
        }
    }

    /// What `role`'s messages are, or `otherwise`.
    pub(super) fn series_name<'s>(&'s self, role: &str, otherwise: &'s str) -> &'s str {
        self.run
            .by_role
            .get(role)
            .and_then(|r| r.counts.as_deref())
            .unwrap_or(otherwise)
    }

    pub(super) fn read(doc: &'a Doc, label: String, color: &'static str) -> Result<Self> {
        let run: Run =
            serde_json::from_value(doc.value.clone()).map_err(|e| shape_error(doc, &e))?;
        let curve = |l: &Option<Latency>, field: &str| -> Result<Option<Curve>> {
            match l {
                None => Ok(None),
                Some(l) => Curve::of(l).map_err(|why| {
                    Error::Usage(format!("'{}': {field}.hdr {why}", doc.path.display()))
                }),
            }
        };
        let corrected = curve(&run.latency, "latency")?;
        let uncorrected = curve(&run.latency_uncorrected, "latency_uncorrected")?;
        Ok(Self {
            doc,
            label,
            color,
            run,
            corrected,
            uncorrected,
        })
    }

    /// A named figure (as `--threshold` names it): the value (the median over `--runs`), and
    /// the range and count of runs when there were several.
    pub(super) fn figure(&self, name: &str) -> std::result::Result<Figure, &'static str> {
        let m = Metric::parse(name).map_err(|_| "not a metric this msgbench knows")?;
        let value = m.read(&self.doc.value)?;
        let values = m.values(&self.doc.value).unwrap_or_default();
        let spread = (values.len() > 1).then(|| {
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (lo, hi, values.len())
        });
        Ok(Figure { value, spread })
    }
}

/// A figure of one input: its value, and (min, max, n) over repeated runs.
pub(super) struct Figure {
    pub(super) value: f64,
    pub(super) spread: Option<(f64, f64, usize)>,
}

/// One calibration file being reported.
pub(super) struct CalInput {
    pub(super) label: String,
    pub(super) cal: Calibration,
}

impl CalInput {
    pub(super) fn read(doc: &Doc, label: String) -> Result<Self> {
        let cal = serde_json::from_value(doc.value.clone()).map_err(|e| shape_error(doc, &e))?;
        Ok(Self { label, cal })
    }

    /// The floor's round trips in a fixed order (tcp, one hop, two hops), then any others.
    pub(super) fn floors(&self) -> Vec<(&str, &BTreeMap<String, f64>)> {
        let Some(env) = &self.cal.environment else {
            return Vec::new();
        };
        let order = |k: &str| ["tcp", "one_hop", "two_hop"].iter().position(|o| *o == k);
        let mut f: Vec<(&str, &BTreeMap<String, f64>)> =
            env.floor_ns.iter().map(|(k, v)| (k.as_str(), v)).collect();
        f.sort_by_key(|(k, _)| order(k).unwrap_or(usize::MAX));
        f
    }
}

/// One capacity-search file being reported.
pub(super) struct CapInput<'a> {
    pub(super) doc: &'a Doc,
    pub(super) label: String,
    pub(super) cap: Capacity,
}

impl<'a> CapInput<'a> {
    pub(super) fn read(doc: &'a Doc, label: String) -> Result<Self> {
        let cap = serde_json::from_value(doc.value.clone()).map_err(|e| shape_error(doc, &e))?;
        Ok(Self { doc, label, cap })
    }
}

/// A latency percentile distribution: (quantile 0..=1, value in ns) in rising order.
#[derive(Debug, Clone)]
pub(super) struct Curve {
    pub(super) points: Vec<(f64, f64)>,
    /// Observations behind it: where the top of the distribution sits on the percentile axis.
    pub(super) count: f64,
    /// False when drawn from the summary percentiles because the file carries no histogram.
    pub(super) from_histogram: bool,
}

impl Curve {
    /// Reads the distribution from the full histogram (`hdr`), or from the nine summary
    /// percentiles when a file has none. An empty histogram has no curve.
    fn of(l: &Latency) -> std::result::Result<Option<Self>, String> {
        if l.hdr.trim().is_empty() {
            return Ok(Self::from_summary(l));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(l.hdr.trim())
            .map_err(|e| format!("is not base64 ({e})"))?;
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| format!("is not an HdrHistogram V2 encoding ({e})"))?;
        Ok(Self::from_histogram(&h))
    }

    pub(super) fn from_histogram(h: &Histogram<u64>) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        // The same walk as the `.hgrm` export: each step's quantile is the share of
        // observations at or below the value reached, so the last step is the maximum.
        let points = h
            .iter_quantiles(QUANTILE_STEPS_PER_HALF)
            .map(|v| (v.quantile_iterated_to(), v.value_iterated_to() as f64))
            .collect();
        Some(Self {
            points,
            count: h.len() as f64,
            from_histogram: true,
        })
    }

    fn from_summary(l: &Latency) -> Option<Self> {
        let mut points: Vec<(f64, f64)> = l
            .percentiles_ns
            .iter()
            .filter_map(|(k, v)| Some((k.parse::<f64>().ok()? / 100.0, *v)))
            .filter(|(q, _)| (0.0..=1.0).contains(q))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        (!points.is_empty() && l.count > 0.0).then_some(Self {
            points,
            count: l.count,
            from_histogram: false,
        })
    }
}

/// Where quantile `q` sits on HdrHistogram's percentile axis: log10(1/(1−q)), so 90 % is at 1,
/// 99 % at 2, 99.9 % at 3. The top (q = 1) has no finite place; it is drawn where the rarest
/// of `count` observations sits (1 in `count`, log10 count), which no other step of the
/// distribution passes, so the curve stays monotonic and ends at the maximum.
pub(super) fn percentile_x(q: f64, count: f64) -> f64 {
    let top = count.max(1.0).log10();
    if q >= 1.0 {
        top
    } else {
        (-(1.0 - q).log10()).clamp(0.0, top)
    }
}

/// The label of position `k` on the percentile axis: 0 %, 90 %, 99 %, 99.9 %, …
pub(super) fn percentile_label(k: u32) -> String {
    match k {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        k => format!("99.{}%", "9".repeat(k as usize - 2)),
    }
}
