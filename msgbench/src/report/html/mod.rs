//! `msgbench report`: result files (`--json` output) in, one self-contained HTML file out.
//!
//! This module owns everything between the parsed input documents ([`super::load`]) and the
//! bytes written: which figures the page shows and where each is read from in a result, the
//! page's layout, and [`svg`], the small plotting kit every chart is drawn with (scales, ticks,
//! axes, legends, lines and bars), plus the unit formatting the page and the charts share
//! ([`units`]).
//!
//! The charts are drawn here, in Rust, as inline SVG rather than by a script in the browser, so
//! the file prints, works with scripts off and fetches nothing; the page's one small script
//! (`report.js`) only toggles series from the legends. Every drawn series, point and bar carries
//! its raw numbers in `data-*` attributes (in the input's units: ns, msgs/s) so a test, or a
//! person with the browser's inspector, can check a chart against the file it came from.
//!
//! Everything taken from an input is untrusted: text and attributes go through [`esc`], the
//! embedded copies of the inputs through [`json_in_script`], and nothing from an input ever
//! becomes script source.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use base64::Engine as _;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use serde::Deserialize;
use serde_json::Value;

use super::{Doc, DocKind};
use crate::cli::ReportArgs;
use crate::error::{exit, Error, Result};
use crate::metric::Metric;

const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");

/// The Okabe–Ito palette, which stays distinguishable under the common colour-vision
/// deficiencies; its yellow is left out because it is too faint on white. Lines also differ by
/// dash where colour alone would have to carry the meaning (corrected vs uncorrected).
const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#333333",
];

/// Steps per halving of the remaining tail when the percentile curve is read off a histogram:
/// HdrHistogram's own `.hgrm` uses 5, enough for a smooth curve at ~100 points.
const QUANTILE_STEPS_PER_HALF: u32 = 5;

/// Beyond this many clients a per-client line chart is a tangle of lines; the timeline's
/// sent/received totals are drawn instead.
const MAX_CLIENT_LINES: usize = 16;

/// Writes the report `args` asks for and returns the exit status.
///
/// # Errors
/// Unreadable or foreign input files, no result among them, or an output file that cannot be
/// written.
pub fn run(args: &ReportArgs) -> Result<u8> {
    let docs = args
        .inputs
        .iter()
        .map(|p| super::load_for_report(p))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    refuse_to_overwrite_an_input(args)?;
    let html = render(&docs)?;
    std::fs::write(&args.output, html)
        .map_err(|e| Error::io(format!("cannot write '{}'", args.output.display()), e))?;
    let results = docs.iter().filter(|d| d.kind == DocKind::Result).count();
    let cals = docs.len() - results;
    let mut what = plural(results, "result");
    if cals > 0 {
        what = format!("{what}, {}", plural(cals, "calibration"));
    }
    println!("report: wrote {} ({what})", args.output.display());
    Ok(exit::OK)
}

/// `-o a.json` next to `a.json` as an input would replace a result with its own report.
fn refuse_to_overwrite_an_input(args: &ReportArgs) -> Result<()> {
    let Ok(out) = std::fs::canonicalize(&args.output) else {
        return Ok(()); // not there yet, so it is none of the inputs
    };
    for input in &args.inputs {
        if std::fs::canonicalize(input).is_ok_and(|p| p == out) {
            return Err(Error::Usage(format!(
                "the output '{}' is one of the inputs; give another file with -o",
                args.output.display()
            )));
        }
    }
    Ok(())
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The whole page for `docs`, in the order given.
///
/// # Errors
/// [`Error::Usage`] when no document is a result, or one is a result in name only (fields of
/// the wrong type, an undecodable histogram).
pub fn render(docs: &[Doc]) -> Result<String> {
    let mut results = Vec::new();
    let mut cals = Vec::new();
    for (doc, label) in docs.iter().zip(labels(docs)) {
        match doc.kind {
            DocKind::Result => {
                let color = PALETTE[results.len() % PALETTE.len()];
                results.push(Input::read(doc, label, color)?);
            }
            DocKind::Calibration => cals.push(CalInput::read(doc, label)?),
        }
    }
    if results.is_empty() {
        let names: Vec<String> = cals.iter().map(|c| format!("'{}'", c.label)).collect();
        return Err(Error::Usage(format!(
            "no result file among the inputs ({} {} a calibration, which only adds the \
             machine's latency floor); give at least one file written by a scenario's --json",
            names.join(", "),
            if names.len() == 1 { "is" } else { "are each" }
        )));
    }
    Ok(page(&results, &cals))
}

/// Names that tell the inputs apart: they key the columns, series and legends. The file name
/// when it is unique, else the path as given, numbered when even that repeats (the same file
/// given twice).
fn labels(docs: &[Doc]) -> Vec<String> {
    let names: Vec<String> = docs.iter().map(|d| d.name.clone()).collect();
    let mut out: Vec<String> = docs
        .iter()
        .zip(&names)
        .map(|(d, n)| {
            if names.iter().filter(|m| *m == n).count() > 1 {
                d.path.display().to_string()
            } else {
                n.clone()
            }
        })
        .collect();
    for i in 1..out.len() {
        let seen = out[..i].iter().filter(|n| **n == out[i]).count();
        if seen > 0 {
            out[i] = format!("{} ({})", out[i], seen + 1);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// What the report reads from a result. Every field is optional here: files from older or newer
// msgbench versions lack some sections or carry more, and a missing section leaves its row or
// chart out rather than failing the report. A field of the wrong type does fail: the file is
// then not what it says it is.

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Run {
    scenario: String,
    run_id: String,
    started_at: String,
    interrupted: bool,
    tool: Tool,
    params: serde_json::Map<String, Value>,
    server: Option<Server>,
    server_b: Option<Server>,
    by_role: BTreeMap<String, Rates>,
    clients: Vec<Client>,
    errors: BTreeMap<String, f64>,
    latency: Option<Latency>,
    latency_uncorrected: Option<Latency>,
    thresholds: Vec<Verdict>,
    host: Option<Host>,
    timeline: Option<Timeline>,
    runs: Option<Runs>,
    link: Option<Link>,
    cluster: Option<Cluster>,
    rtt_ns: Option<Rtt>,
    failure: Option<String>,
    jetstream: Option<Value>,
    consumer: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Tool {
    version: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Server {
    url: String,
    name: String,
    version: String,
    embedded: Option<bool>,
    max_payload: Option<f64>,
    auth: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Rates {
    msgs_per_sec: f64,
    clients: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Client {
    role: String,
    id: u64,
    msgs: f64,
    seconds: f64,
    msgs_per_sec: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Latency {
    count: f64,
    percentiles_ns: BTreeMap<String, f64>,
    hdr: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Verdict {
    expr: String,
    measured: Option<f64>,
    pass: bool,
    why: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Host {
    cpu: Option<String>,
    cores: Option<f64>,
    os: Option<String>,
    arch: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Timeline {
    interval_s: f64,
    clients: Vec<TimelineClient>,
    ticks: Vec<Tick>,
    truncated: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TimelineClient {
    role: String,
    id: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Tick {
    t_s: f64,
    span_s: f64,
    msgs: Vec<f64>,
    sent_per_sec: f64,
    received_per_sec: f64,
    latency: Option<TickLatency>,
    errors: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TickLatency {
    p50_ns: f64,
    p99_ns: f64,
    max_ns: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Runs {
    n: u64,
    representative: Option<u64>,
    representative_by: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Link {
    spec: String,
    proxy_added_rtt_ns: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Cluster {
    nodes: Vec<Node>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Node {
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Rtt {
    a: f64,
    b: f64,
}

/// A calibration document, as far as the report shows it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Calibration {
    started_at: String,
    tool: Tool,
    server: Option<Server>,
    environment: Option<CalEnvironment>,
    link: Option<Link>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CalEnvironment {
    cpus: Option<f64>,
    samples: Option<f64>,
    size: Option<f64>,
    floor_ns: BTreeMap<String, BTreeMap<String, f64>>,
}

fn shape_error(doc: &Doc, e: &serde_json::Error) -> Error {
    Error::Usage(format!(
        "'{}' says it is a msgbench document but a field has the wrong type ({e})",
        doc.path.display()
    ))
}

/// One result file being reported.
struct Input<'a> {
    doc: &'a Doc,
    label: String,
    /// This input's colour wherever one colour stands for one input.
    color: &'static str,
    run: Run,
    corrected: Option<Curve>,
    uncorrected: Option<Curve>,
}

impl<'a> Input<'a> {
    fn read(doc: &'a Doc, label: String, color: &'static str) -> Result<Self> {
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
    fn figure(&self, name: &str) -> std::result::Result<Figure, &'static str> {
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
struct Figure {
    value: f64,
    spread: Option<(f64, f64, usize)>,
}

/// One calibration file being reported.
struct CalInput {
    label: String,
    cal: Calibration,
}

impl CalInput {
    fn read(doc: &Doc, label: String) -> Result<Self> {
        let cal = serde_json::from_value(doc.value.clone()).map_err(|e| shape_error(doc, &e))?;
        Ok(Self { label, cal })
    }

    /// The floor's round trips in a fixed order (tcp, one hop, two hops), then any others.
    fn floors(&self) -> Vec<(&str, &BTreeMap<String, f64>)> {
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

/// A latency percentile distribution: (quantile 0..=1, value in ns) in rising order.
#[derive(Debug, Clone)]
struct Curve {
    points: Vec<(f64, f64)>,
    /// Observations behind it: where the top of the distribution sits on the percentile axis.
    count: f64,
    /// False when drawn from the summary percentiles because the file carries no histogram.
    from_histogram: bool,
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

    fn from_histogram(h: &Histogram<u64>) -> Option<Self> {
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
fn percentile_x(q: f64, count: f64) -> f64 {
    let top = count.max(1.0).log10();
    if q >= 1.0 {
        top
    } else {
        (-(1.0 - q).log10()).clamp(0.0, top)
    }
}

/// The label of position `k` on the percentile axis: 0 %, 90 %, 99 %, 99.9 %, …
fn percentile_label(k: u32) -> String {
    match k {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        k => format!("99.{}%", "9".repeat(k as usize - 2)),
    }
}

// ---------------------------------------------------------------------------------------------
// Escaping.

/// `s` made safe as HTML text and as a quoted attribute value.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// JSON safe inside `<script type="application/json">`: `<`, `>` and `&` only occur inside
/// JSON strings, where their `\u` escapes mean the same, so no `</script`, `<!--` or entity
/// can end or bend the element, and `JSON.parse` of the element's text gives the value back.
pub fn json_in_script(v: &Value) -> String {
    let s = serde_json::to_string(v).expect("a JSON value serialises");
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("\\u003c"),
            '>' => o.push_str("\\u003e"),
            '&' => o.push_str("\\u0026"),
            c => o.push(c),
        }
    }
    o
}

/// A raw number for a `data-*` attribute: the shortest text that reads back as the same
/// double, so a test comparing it with the input file can demand equality.
pub fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

// ---------------------------------------------------------------------------------------------
// Units.

pub mod units {
    //! Numbers as people read them: latency in ns/µs/ms/s, rates and counts with k/M/G, to a
    //! few significant digits. Tables keep trailing zeros (they carry the precision); tick
    //! labels drop them.

    /// `v` to `digits` significant digits; `trim` drops trailing zeros after the point.
    pub fn sig(v: f64, digits: i32, trim: bool) -> String {
        if !v.is_finite() {
            return "–".into();
        }
        if v == 0.0 {
            return "0".into();
        }
        let mag = v.abs().log10().floor() as i32;
        let mut decimals = (digits - 1 - mag).max(0) as usize;
        let mut s = format!("{v:.decimals$}");
        // Rounding can carry into a new digit (0.99996 → 1.000): one decimal fewer then.
        if decimals > 0
            && s.parse::<f64>()
                .is_ok_and(|r| r.abs() >= 10f64.powi(mag + 1))
        {
            decimals -= 1;
            s = format!("{v:.decimals$}");
        }
        if trim && s.contains('.') {
            s = s.trim_end_matches('0').trim_end_matches('.').to_string();
        }
        s
    }

    /// `v` in the largest of `scales` that keeps it at 1 or more, to 3 significant digits. A
    /// value that rounds up to 1000 of a unit moves to the next one (999.96 µs is 1.00 ms).
    fn scaled(v: f64, scales: &[(f64, &str)], trim: bool, sep: &str) -> String {
        let a = v.abs();
        let mut pick = scales[0];
        for s in scales {
            if a >= s.0 {
                pick = *s;
            }
        }
        let mut text = sig(v / pick.0, 3, trim);
        if text
            .trim_start_matches('-')
            .parse::<f64>()
            .is_ok_and(|x| x >= 1000.0)
        {
            if let Some(next) = scales.iter().find(|s| s.0 > pick.0) {
                pick = *next;
                text = sig(v / pick.0, 3, trim);
            }
        }
        if pick.1.is_empty() {
            text
        } else {
            format!("{text}{sep}{}", pick.1)
        }
    }

    /// A duration given in nanoseconds: `850 ns`, `54.3 µs`, `2.29 ms`, `1.20 s`.
    pub fn ns(v: f64, trim: bool) -> String {
        if v == 0.0 {
            return "0".into();
        }
        scaled(
            v,
            &[(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")],
            trim,
            "\u{a0}",
        )
    }

    /// A rate or large count: `850`, `359k`, `2.10M`.
    pub fn si(v: f64, trim: bool) -> String {
        scaled(
            v,
            &[(1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G")],
            trim,
            "",
        )
    }

    /// A count with thousands separated: `1,200,000`; fractions to 3 significant digits.
    pub fn count(v: f64) -> String {
        if !v.is_finite() || v.fract() != 0.0 || v.abs() >= 1e15 {
            return sig(v, 3, true);
        }
        let digits = format!("{}", v.abs() as u64);
        let mut o = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                o.push(',');
            }
            o.push(c);
        }
        if v < 0.0 {
            format!("-{o}")
        } else {
            o
        }
    }

    /// A duration given in seconds, for parameters: `3 s`, `0.5 s`.
    pub fn secs(v: f64) -> String {
        format!("{}\u{a0}s", sig(v, 3, true))
    }
}

// ---------------------------------------------------------------------------------------------
// The plotting kit.

pub mod svg {
    //! Charts as inline SVG: linear and logarithmic scales with 1-2-5 ticks, axes with labels,
    //! a legend that wraps, line series (with gaps) and grouped bars (with whiskers). Every
    //! chart is drawn in its own coordinate system ([`NARROW`] or [`WIDE`] units across, about
    //! the pixels it gets on a desktop, so text there is at its nominal size) and scaled by the
    //! page through its `viewBox`, so one drawing serves a phone, a desktop and paper.
    //!
    //! The data contract a test relies on: `<svg class="chart" data-chart=KIND
    //! [data-input=LABEL]>`; each series a `<g class="series" data-series=ID data-points=N>`
    //! holding a `<path data-series data-points data-values>` (lines) or N
    //! `<rect class="bar" data-series data-category data-value>` (bars); line points as
    //! `<circle class="pt" data-value …>` while a series has at most [`MAX_MARKERS`] of them.

    use std::fmt::Write as _;

    use super::{esc, num};

    /// A chart sharing a row with another.
    pub const NARROW: f64 = 600.0;
    /// A chart with a row of its own.
    pub const WIDE: f64 = 960.0;
    /// Room left of the plot for tick labels and the rotated axis label.
    const LEFT: f64 = 84.0;
    const RIGHT: f64 = 28.0;
    /// Room above the plot for the title.
    const TOP: f64 = 44.0;
    /// Room under the plot for tick labels and the axis label.
    const BOTTOM: f64 = 54.0;
    const LEGEND_ROW: f64 = 20.0;
    /// Roughly the advance of one 12 px character: the drawing is laid out without measuring
    /// text, so labels are budgeted by character count (a little generously).
    pub const CHAR_W: f64 = 7.0;
    /// Point markers (hover targets with their values) per series; a longer series (a long
    /// run's timeline) keeps its values on the path only, so the page stays light.
    pub const MAX_MARKERS: usize = 400;
    /// Markers are drawn visibly when a series is this short (a few ticks would otherwise be
    /// an almost invisible line); longer ones show a marker on hover only.
    const VISIBLE_MARKERS: usize = 40;

    /// Maps data values onto 0..1 of an axis.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Scale {
        Linear {
            lo: f64,
            hi: f64,
        },
        /// Both ends above zero; values at or below `lo` sit on the axis.
        Log {
            lo: f64,
            hi: f64,
        },
    }

    impl Scale {
        pub fn frac(self, v: f64) -> f64 {
            match self {
                Scale::Linear { lo, hi } => {
                    if hi > lo {
                        (v - lo) / (hi - lo)
                    } else {
                        0.5
                    }
                }
                Scale::Log { lo, hi } => {
                    let (l, h) = (lo.log10(), hi.log10());
                    if h > l {
                        (v.max(lo).log10() - l) / (h - l)
                    } else {
                        0.5
                    }
                }
            }
        }
    }

    #[derive(Debug, Clone, PartialEq)]
    pub struct Tick {
        pub at: f64,
        pub label: String,
    }

    #[derive(Debug, Clone)]
    pub struct Axis {
        pub scale: Scale,
        pub ticks: Vec<Tick>,
        pub label: String,
    }

    impl Axis {
        /// A linear axis covering `lo..=hi`, widened to whole 1-2-5 steps.
        pub fn linear(lo: f64, hi: f64, label: &str, fmt: impl Fn(f64) -> String) -> Self {
            let (lo, hi, at) = linear_ticks(lo, hi, 5);
            Self {
                scale: Scale::Linear { lo, hi },
                ticks: at
                    .into_iter()
                    .map(|a| Tick {
                        at: a,
                        label: fmt(a),
                    })
                    .collect(),
                label: label.into(),
            }
        }

        /// A linear axis over exactly `lo..=hi`, ticked on the 1-2-5 steps inside it.
        pub fn linear_exact(lo: f64, hi: f64, label: &str, fmt: impl Fn(f64) -> String) -> Self {
            let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
            let (_, _, at) = linear_ticks(lo, hi, 5);
            let inside = at
                .into_iter()
                .filter(|a| *a >= lo - 1e-9 && *a <= hi + 1e-9);
            Self {
                scale: Scale::Linear { lo, hi },
                ticks: inside
                    .map(|a| Tick {
                        at: a,
                        label: fmt(a),
                    })
                    .collect(),
                label: label.into(),
            }
        }

        /// A logarithmic axis covering `lo..=hi`, widened to the 1-2-5 values around them.
        pub fn log(lo: f64, hi: f64, label: &str, fmt: impl Fn(f64) -> String) -> Self {
            let (lo, hi, at) = log_ticks(lo, hi);
            Self {
                scale: Scale::Log { lo, hi },
                ticks: at
                    .into_iter()
                    .map(|a| Tick {
                        at: a,
                        label: fmt(a),
                    })
                    .collect(),
                label: label.into(),
            }
        }
    }

    /// The 1-2-5 step that cuts `span` into about `target` parts.
    pub fn nice_step(span: f64, target: usize) -> f64 {
        let raw = span / target.max(1) as f64;
        let mag = 10f64.powf(raw.log10().floor());
        let norm = raw / mag;
        let m = if norm <= 1.0 {
            1.0
        } else if norm <= 2.0 {
            2.0
        } else if norm <= 5.0 {
            5.0
        } else {
            10.0
        };
        m * mag
    }

    /// Ticks for a linear axis: the domain widened to whole steps, and a tick on each step.
    /// A zero-width range (one value, or all zeros) gets a unit of room so it still draws.
    pub fn linear_ticks(lo: f64, hi: f64, target: usize) -> (f64, f64, Vec<f64>) {
        let (lo, hi) = if hi > lo {
            (lo, hi)
        } else if lo == 0.0 {
            (0.0, 1.0)
        } else {
            (lo.min(0.0), lo.abs().max(hi.abs()))
        };
        let step = nice_step(hi - lo, target);
        // Rounding guards: 0.30000000000000004 / 0.1 must not become a fourth step.
        let first = (lo / step + 1e-9).floor();
        let last = (hi / step - 1e-9).ceil();
        let at: Vec<f64> = (0..=(last - first) as usize)
            .map(|i| clean((first + i as f64) * step))
            .collect();
        (clean(first * step), clean(last * step), at)
    }

    /// Drops float noise from a tick value (0.30000000000000004 → 0.3).
    fn clean(v: f64) -> f64 {
        if v == 0.0 {
            return 0.0;
        }
        let mag = 10f64.powi(v.abs().log10().floor() as i32 - 9);
        (v / mag).round() * mag
    }

    /// Ticks for a logarithmic axis: the domain runs from the 1-2-5 value at or below `lo` to
    /// the one at or above `hi`, with a tick on each 1-2-5 value in it, or on each power of
    /// ten when that would be more than ten ticks (a range over several decades).
    pub fn log_ticks(lo: f64, hi: f64) -> (f64, f64, Vec<f64>) {
        let hi = if hi > 0.0 { hi } else { 1.0 };
        let lo = if lo > 0.0 && lo <= hi { lo } else { hi / 10.0 };
        let seq = |k: i32| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(k));
        let (k_lo, k_hi) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        let all: Vec<f64> = (k_lo..=k_hi).flat_map(seq).collect();
        let eps = 1e-9;
        let mut d_lo = *all
            .iter()
            .rev()
            .find(|v| **v <= lo * (1.0 + eps))
            .unwrap_or(&all[0]);
        let mut d_hi = *all
            .iter()
            .find(|v| **v >= hi * (1.0 - eps))
            .unwrap_or(&all[all.len() - 1]);
        if d_hi <= d_lo {
            // One value: a step of room either side.
            d_lo = all
                .iter()
                .rev()
                .find(|v| **v < d_lo)
                .copied()
                .unwrap_or(d_lo / 2.0);
            d_hi = all
                .iter()
                .find(|v| **v > d_hi)
                .copied()
                .unwrap_or(d_hi * 2.0);
        }
        let inside: Vec<f64> = all
            .iter()
            .copied()
            .filter(|v| *v >= d_lo * (1.0 - eps) && *v <= d_hi * (1.0 + eps))
            .collect();
        let ticks = if inside.len() > 10 {
            let decades: Vec<f64> = inside
                .iter()
                .copied()
                .filter(|v| {
                    let m = v / 10f64.powf(v.log10().floor());
                    (m - 1.0).abs() < 1e-6
                })
                .collect();
            // Very wide ranges: every other power of ten.
            if decades.len() > 10 {
                decades.into_iter().step_by(2).collect()
            } else {
                decades
            }
        } else {
            inside
        };
        (d_lo, d_hi, ticks)
    }

    /// The chart's identity: what it shows (`data-chart`), for which input, and its title.
    pub struct Chart {
        pub kind: &'static str,
        pub input: Option<String>,
        pub title: String,
        /// Drawn across the page rather than in a column.
        pub wide: bool,
    }

    impl Chart {
        fn width(&self) -> f64 {
            if self.wide {
                WIDE
            } else {
                NARROW
            }
        }

        fn plot_height(&self) -> f64 {
            if self.wide {
                300.0
            } else {
                240.0
            }
        }
    }

    /// One point of a line: its position in the axes' data units, the raw value for
    /// `data-value` (what the y position shows, in the input's unit), extra attributes, and
    /// the tooltip.
    pub struct Point {
        pub x: f64,
        /// Where the interval the value covers starts, for a value that holds over an interval
        /// (a tick's rate): drawn as a step from `x0` to `x` rather than at one instant.
        pub x0: Option<f64>,
        pub y: f64,
        pub attrs: Vec<(&'static str, String)>,
        pub tip: String,
    }

    /// A line series; `None` points are gaps (a tick without latency).
    pub struct Line {
        pub id: String,
        pub color: &'static str,
        pub dashed: bool,
        pub points: Vec<Option<Point>>,
    }

    pub struct Bar {
        pub value: f64,
        /// Whisker from min to max (repeated runs).
        pub range: Option<(f64, f64)>,
        /// Overrides the series colour (one colour per input).
        pub color: Option<&'static str>,
        /// Printed above the bar.
        pub label: Option<String>,
        pub tip: String,
    }

    /// A bar series: at most one bar per category.
    pub struct BarSet {
        pub id: String,
        pub color: &'static str,
        pub bars: Vec<Option<Bar>>,
    }

    /// A horizontal reference line (a calibrated floor).
    pub struct RefLine {
        pub y: f64,
        pub label: String,
    }

    /// The plotting area inside the drawing, and the drawing's width.
    struct Rect {
        x0: f64,
        y0: f64,
        x1: f64,
        y1: f64,
        width: f64,
    }

    impl Rect {
        fn plot(chart: &Chart) -> Self {
            Self {
                x0: LEFT,
                y0: TOP,
                x1: chart.width() - RIGHT,
                y1: TOP + chart.plot_height(),
                width: chart.width(),
            }
        }
        fn x(&self, s: Scale, v: f64) -> f64 {
            self.x0 + s.frac(v) * (self.x1 - self.x0)
        }
        fn y(&self, s: Scale, v: f64) -> f64 {
            self.y1 - s.frac(v) * (self.y1 - self.y0)
        }
    }

    /// Coordinates in the drawing: one decimal is finer than any screen or printer resolves.
    fn c(v: f64) -> String {
        format!("{:.1}", v)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }

    /// `s` cut to `max` characters, with an ellipsis when cut.
    pub fn fit(s: &str, max: usize) -> String {
        if s.chars().count() <= max {
            s.to_string()
        } else {
            let mut t: String = s.chars().take(max.saturating_sub(1).max(1)).collect();
            t.push('…');
            t
        }
    }

    struct LegendEntry<'a> {
        id: &'a str,
        color: &'a str,
        dashed: bool,
        bar: bool,
    }

    const LEGEND_LABEL_CHARS: usize = 44;

    /// Places legend entries left to right, wrapping: (x, row) of each, and the row count.
    fn legend_layout(entries: &[LegendEntry], width: f64) -> (Vec<(f64, usize)>, usize) {
        let (mut x, mut row) = (LEFT, 0);
        let mut placed = Vec::new();
        for e in entries {
            let w = 30.0 + fit(e.id, LEGEND_LABEL_CHARS).chars().count() as f64 * CHAR_W + 18.0;
            if x + w > width - RIGHT && x > LEFT {
                row += 1;
                x = LEFT;
            }
            placed.push((x, row));
            x += w;
        }
        let rows = if entries.is_empty() { 0 } else { row + 1 };
        (placed, rows)
    }

    fn legend(o: &mut String, entries: &[LegendEntry], r: &Rect) {
        let top = r.y1 + BOTTOM + 8.0;
        let (placed, _) = legend_layout(entries, r.width);
        for (e, (x, row)) in entries.iter().zip(placed) {
            let y = top + row as f64 * LEGEND_ROW;
            let _ = write!(
                o,
                "<g class=\"legend-item\" data-series=\"{}\" tabindex=\"0\" role=\"button\" \
                 aria-pressed=\"true\"><title>{} (click to hide or show)</title>",
                esc(e.id),
                esc(e.id)
            );
            if e.bar {
                let _ = write!(
                    o,
                    "<rect x=\"{}\" y=\"{}\" width=\"22\" height=\"10\" fill=\"{}\"/>",
                    c(x),
                    c(y - 9.0),
                    e.color
                );
            } else {
                let _ = write!(
                    o,
                    "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" \
                     stroke-width=\"2.5\"{}/>",
                    c(x),
                    c(y - 4.0),
                    c(x + 22.0),
                    c(y - 4.0),
                    e.color,
                    if e.dashed {
                        " stroke-dasharray=\"6 4\""
                    } else {
                        ""
                    }
                );
            }
            let _ = write!(
                o,
                "<text x=\"{}\" y=\"{}\">{}</text></g>",
                c(x + 30.0),
                c(y),
                esc(&fit(e.id, LEGEND_LABEL_CHARS))
            );
        }
    }

    /// Opens the drawing and writes its title.
    fn open(o: &mut String, chart: &Chart, height: f64) {
        let _ = write!(o, "<svg class=\"chart\" data-chart=\"{}\"", esc(chart.kind));
        if let Some(i) = &chart.input {
            let _ = write!(o, " data-input=\"{}\"", esc(i));
        }
        let _ = write!(
            o,
            " viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" \
             xmlns=\"http://www.w3.org/2000/svg\">",
            c(chart.width()),
            c(height),
            esc(&chart.title)
        );
        // Title characters are ~1.25× a label's at 15 px.
        let room = ((chart.width() - 24.0) / (CHAR_W * 1.25)) as usize;
        let _ = write!(
            o,
            "<text class=\"title\" x=\"12\" y=\"24\">{}</text>",
            esc(&fit(&chart.title, room))
        );
    }

    fn y_axis(o: &mut String, r: &Rect, a: &Axis) {
        for t in &a.ticks {
            let y = r.y(a.scale, t.at);
            let _ = write!(
                o,
                "<line class=\"grid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\
                 <text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                c(r.x0),
                c(r.x1),
                c(r.x0 - 8.0),
                c(y + 4.0),
                esc(&t.label),
                y = c(y)
            );
        }
        let mid = (r.y0 + r.y1) / 2.0;
        let _ = write!(
            o,
            "<line class=\"axis\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>\
             <text class=\"axis-label\" transform=\"translate(18 {}) rotate(-90)\" \
             text-anchor=\"middle\">{}</text>",
            c(r.y0),
            c(r.y1),
            c(mid),
            esc(&fit(&a.label, ((r.y1 - r.y0) / CHAR_W) as usize)),
            x = c(r.x0)
        );
    }

    fn x_axis_line(o: &mut String, r: &Rect, label: &str) {
        let _ = write!(
            o,
            "<line class=\"axis\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\
             <text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            c(r.x0),
            c(r.x1),
            c((r.x0 + r.x1) / 2.0),
            c(r.y1 + 44.0),
            esc(&fit(label, ((r.x1 - r.x0) / CHAR_W) as usize)),
            y = c(r.y1)
        );
    }

    fn x_axis(o: &mut String, r: &Rect, a: &Axis) {
        for t in &a.ticks {
            let x = r.x(a.scale, t.at);
            let _ = write!(
                o,
                "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>\
                 <line class=\"axis\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>\
                 <text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                c(r.y0),
                c(r.y1),
                c(r.y1),
                c(r.y1 + 5.0),
                c(r.y1 + 19.0),
                esc(&t.label),
                x = c(x)
            );
        }
        x_axis_line(o, r, &a.label);
    }

    /// Category names under bands; every k-th when they would not fit side by side.
    fn x_categories(o: &mut String, r: &Rect, cats: &[String], label: &str) {
        let band = (r.x1 - r.x0) / cats.len().max(1) as f64;
        let longest = cats.iter().map(|s| s.chars().count()).max().unwrap_or(1);
        let room = ((band / CHAR_W) as usize).saturating_sub(1);
        let (chars, every) = if room >= 4 {
            (room.min(longest), 1)
        } else {
            let want = longest.min(8);
            (want, ((want + 1) as f64 * CHAR_W / band).ceil() as usize)
        };
        for (i, cat) in cats.iter().enumerate() {
            if i % every.max(1) != 0 {
                continue;
            }
            let x = r.x0 + band * (i as f64 + 0.5);
            let _ = write!(
                o,
                "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}<title>{}</title></text>",
                c(x),
                c(r.y1 + 19.0),
                esc(&fit(cat, chars.max(3))),
                esc(cat)
            );
        }
        x_axis_line(o, r, label);
    }

    fn close(o: &mut String) {
        o.push_str("</svg>");
    }

    fn height_with_legend(chart: &Chart, rows: usize) -> f64 {
        TOP + chart.plot_height()
            + BOTTOM
            + rows as f64 * LEGEND_ROW
            + if rows > 0 { 6.0 } else { 0.0 }
    }

    /// A line chart. Legend when there is more than one series.
    pub fn lines(chart: &Chart, x: &Axis, y: &Axis, series: &[Line], refs: &[RefLine]) -> String {
        let entries: Vec<LegendEntry> = if series.len() > 1 {
            series
                .iter()
                .map(|s| LegendEntry {
                    id: &s.id,
                    color: s.color,
                    dashed: s.dashed,
                    bar: false,
                })
                .collect()
        } else {
            Vec::new()
        };
        let r = Rect::plot(chart);
        let (_, rows) = legend_layout(&entries, r.width);
        let mut o = String::new();
        open(&mut o, chart, height_with_legend(chart, rows));
        y_axis(&mut o, &r, y);
        x_axis(&mut o, &r, x);
        for rl in refs {
            let py = r.y(y.scale, rl.y);
            let _ = write!(
                o,
                "<g class=\"ref\" data-ref=\"{}\" data-value=\"{}\"><line x1=\"{}\" y1=\"{py}\" \
                 x2=\"{}\" y2=\"{py}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text></g>",
                esc(&rl.label),
                num(rl.y),
                c(r.x0),
                c(r.x1),
                c(r.x1 - 4.0),
                c(py - 4.0),
                esc(&fit(&rl.label, ((r.x1 - r.x0) / CHAR_W) as usize - 2)),
                py = c(py)
            );
        }
        for s in series {
            let n = s.points.iter().flatten().count();
            let values: Vec<String> = s.points.iter().flatten().map(|p| num(p.y)).collect();
            let mut d = String::new();
            let mut pen_down = false;
            for p in &s.points {
                match p {
                    Some(p) => {
                        let py = c(r.y(y.scale, p.y));
                        // A step starts at its interval's start, joined to the previous step
                        // by a vertical rise or fall.
                        if let Some(x0) = p.x0 {
                            let _ = write!(
                                d,
                                "{}{} {py}",
                                if pen_down { "L" } else { "M" },
                                c(r.x(x.scale, x0))
                            );
                            pen_down = true;
                        }
                        let _ = write!(
                            d,
                            "{}{} {py}",
                            if pen_down { "L" } else { "M" },
                            c(r.x(x.scale, p.x))
                        );
                        pen_down = true;
                    }
                    None => pen_down = false,
                }
            }
            let _ = write!(
                o,
                "<g class=\"series\" data-series=\"{id}\" data-points=\"{n}\">\
                 <path class=\"line\" d=\"{d}\" stroke=\"{}\"{} data-series=\"{id}\" \
                 data-points=\"{n}\" data-values=\"{}\"/>",
                s.color,
                if s.dashed {
                    " stroke-dasharray=\"6 4\""
                } else {
                    ""
                },
                values.join(" "),
                id = esc(&s.id)
            );
            if n <= MAX_MARKERS {
                let class = if n <= VISIBLE_MARKERS { "pt few" } else { "pt" };
                for p in s.points.iter().flatten() {
                    let _ = write!(
                        o,
                        "<circle class=\"{class}\" cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\" \
                         data-value=\"{}\"",
                        // A step's marker sits mid-step.
                        c(r.x(x.scale, p.x0.map_or(p.x, |x0| (x0 + p.x) / 2.0))),
                        c(r.y(y.scale, p.y)),
                        s.color,
                        num(p.y)
                    );
                    for (k, v) in &p.attrs {
                        let _ = write!(o, " {k}=\"{}\"", esc(v));
                    }
                    let _ = write!(o, "><title>{}</title></circle>", esc(&p.tip));
                }
            }
            o.push_str("</g>");
        }
        legend(&mut o, &entries, &r);
        close(&mut o);
        o
    }

    /// A bar chart over categories, linear from zero (a bar's length is its value, so the axis
    /// may not start anywhere else). Bars of several series share a category's band; a
    /// category where only some series have a bar centres those.
    pub fn bars(
        chart: &Chart,
        cats: &[String],
        y_label: &str,
        sets: &[BarSet],
        fmt: impl Fn(f64) -> String,
    ) -> String {
        let top = sets
            .iter()
            .flat_map(|s| s.bars.iter().flatten())
            .map(|b| b.range.map_or(b.value, |(_, hi)| hi.max(b.value)))
            .fold(0.0, f64::max);
        let y = Axis::linear(0.0, top, y_label, fmt);
        let entries: Vec<LegendEntry> = if sets.len() > 1 {
            sets.iter()
                .map(|s| LegendEntry {
                    id: &s.id,
                    color: s.color,
                    dashed: false,
                    bar: true,
                })
                .collect()
        } else {
            Vec::new()
        };
        let r = Rect::plot(chart);
        let (_, rows) = legend_layout(&entries, r.width);
        let mut o = String::new();
        open(&mut o, chart, height_with_legend(chart, rows));
        y_axis(&mut o, &r, &y);
        x_categories(&mut o, &r, cats, "");
        let band = (r.x1 - r.x0) / cats.len().max(1) as f64;
        // Per category: which series have a bar there, in series order.
        let present: Vec<Vec<usize>> = (0..cats.len())
            .map(|ci| {
                (0..sets.len())
                    .filter(|si| sets[*si].bars.get(ci).is_some_and(Option::is_some))
                    .collect()
            })
            .collect();
        for (si, s) in sets.iter().enumerate() {
            let n = s.bars.iter().flatten().count();
            let _ = write!(
                o,
                "<g class=\"series\" data-series=\"{}\" data-points=\"{n}\">",
                esc(&s.id)
            );
            for (ci, bar) in s.bars.iter().enumerate() {
                let Some(b) = bar else { continue };
                let Some(cat) = cats.get(ci) else { continue };
                let m = present[ci].len() as f64;
                let slot = present[ci].iter().position(|i| *i == si).unwrap_or(0) as f64;
                let w = (band * 0.72 / m).min(64.0);
                let x = r.x0 + band * ci as f64 + (band - w * m) / 2.0 + slot * w;
                let top_y = r.y(y.scale, b.value);
                let _ = write!(
                    o,
                    "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" \
                     data-series=\"{}\" data-category=\"{}\" data-value=\"{}\"",
                    c(x + 1.0),
                    c(top_y),
                    c((w - 2.0).max(1.0)),
                    c((r.y1 - top_y).max(0.0)),
                    b.color.unwrap_or(s.color),
                    esc(&s.id),
                    esc(cat),
                    num(b.value)
                );
                if let Some((lo, hi)) = b.range {
                    let _ = write!(o, " data-min=\"{}\" data-max=\"{}\"", num(lo), num(hi));
                }
                let _ = write!(o, "><title>{}</title></rect>", esc(&b.tip));
                let mid = x + w / 2.0;
                let mut label_y = top_y;
                if let Some((lo, hi)) = b.range {
                    let (ylo, yhi) = (r.y(y.scale, lo), r.y(y.scale, hi));
                    let _ = write!(
                        o,
                        "<path class=\"whisker\" d=\"M{} {}V{}M{} {}H{}M{} {}H{}\"/>",
                        c(mid),
                        c(ylo),
                        c(yhi),
                        c(mid - 4.0),
                        c(ylo),
                        c(mid + 4.0),
                        c(mid - 4.0),
                        c(yhi),
                        c(mid + 4.0)
                    );
                    label_y = label_y.min(yhi);
                }
                if let Some(l) = &b.label {
                    if l.chars().count() as f64 * CHAR_W * 0.9 <= band.max(w) {
                        let _ = write!(
                            o,
                            "<text class=\"bar-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                            c(mid),
                            c(label_y - 5.0),
                            esc(l)
                        );
                    }
                }
            }
            o.push_str("</g>");
        }
        legend(&mut o, &entries, &r);
        close(&mut o);
        o
    }
}

// ---------------------------------------------------------------------------------------------
// The page.

fn page(results: &[Input], cals: &[CalInput]) -> String {
    let mut o = String::with_capacity(128 * 1024);
    let names: Vec<&str> = results.iter().map(|r| r.label.as_str()).collect();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"msgbench {}\">\n<title>msgbench report: {}</title>\n\
         <style>\n{CSS}</style>\n</head>\n<body>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&names.join(", "))
    );
    header(&mut o, results, cals);
    o.push_str("<main>\n");
    summary(&mut o, results);

    let mut dist = Vec::new();
    dist.extend(percentile_chart(results, cals));
    section(&mut o, "distribution", "Latency distribution", &dist);

    if results.len() > 1 {
        let mut cmp = vec![compare_throughput(results)];
        cmp.extend(compare_latency(results));
        section(&mut o, "comparison", "Side by side", &cmp);
    }
    let lat_time: Vec<String> = results.iter().filter_map(latency_timeline).collect();
    section(&mut o, "latency-over-time", "Latency over time", &lat_time);
    let thr_time: Vec<String> = results.iter().filter_map(throughput_timeline).collect();
    section(
        &mut o,
        "throughput-over-time",
        "Throughput over time",
        &thr_time,
    );
    let per_client: Vec<String> = results.iter().filter_map(client_bars).collect();
    section(&mut o, "clients", "Throughput per client", &per_client);

    environment(&mut o, results, cals);
    o.push_str("</main>\n");
    let _ = writeln!(
        o,
        "<footer>Written by msgbench {}. Charts are drawn in the page (no scripts, no network); \
         click a legend entry to hide or show its series. The input files are embedded below \
         the page as JSON.</footer>",
        esc(env!("CARGO_PKG_VERSION"))
    );
    for r in results {
        let _ = writeln!(
            o,
            "<script type=\"application/json\" class=\"input-data\" data-input=\"{}\">{}</script>",
            esc(&r.label),
            json_in_script(&r.doc.value)
        );
    }
    let _ = write!(o, "<script>\n{JS}</script>\n</body>\n</html>\n");
    o
}

/// A section of figures in a responsive grid; nothing at all when there are none, so a result
/// without a section leaves no empty heading behind.
fn section(o: &mut String, id: &str, title: &str, figures: &[String]) {
    if figures.is_empty() {
        return;
    }
    let _ = write!(
        o,
        "<section id=\"{id}\">\n<h2>{}</h2>\n<div class=\"charts\">\n",
        esc(title)
    );
    for f in figures {
        o.push_str(f);
        o.push('\n');
    }
    o.push_str("</div>\n</section>\n");
}

fn figure(svg: &str, caption: &str, wide: bool) -> String {
    format!(
        "<figure class=\"chart-box{}\">{svg}<figcaption>{caption}</figcaption></figure>",
        if wide { " wide" } else { "" }
    )
}

/// A colour square that survives printing without backgrounds (it is a border).
fn swatch(color: &str) -> String {
    format!("<span class=\"swatch\" style=\"border-color:{color}\"></span>")
}

/// The parameters that say what a run was, in a line: `msgs 200,000 · pubs 2 · size 128 B`.
fn key_params(params: &serde_json::Map<String, Value>) -> String {
    let mut parts = Vec::new();
    for key in [
        "msgs",
        "duration_secs",
        "warmup_secs",
        "rate",
        "size",
        "pubs",
        "subs",
        "in_flight",
        "mode",
        "storage",
    ] {
        let Some(v) = params.get(key) else { continue };
        let text = match (key, v) {
            (_, Value::Null) => continue,
            ("msgs", Value::Number(n)) => {
                format!("msgs {}", units::count(n.as_f64().unwrap_or(0.0)))
            }
            ("duration_secs", Value::Number(n)) => {
                format!("duration {}", units::secs(n.as_f64().unwrap_or(0.0)))
            }
            ("warmup_secs", Value::Number(n)) => {
                format!("warm-up {}", units::secs(n.as_f64().unwrap_or(0.0)))
            }
            ("rate", Value::Number(n)) => match n.as_f64().unwrap_or(0.0) {
                r if r > 0.0 => format!("rate {}/s", units::count(r)),
                _ => "rate unlimited".into(),
            },
            ("size", Value::Number(n)) => {
                format!("size {}\u{a0}B", units::count(n.as_f64().unwrap_or(0.0)))
            }
            (k, Value::String(s)) => format!("{k} {s}"),
            (k, v) => format!("{k} {v}"),
        };
        parts.push(esc(&text));
    }
    parts.join(" · ")
}

fn header(o: &mut String, results: &[Input], cals: &[CalInput]) {
    let mut what = plural(results.len(), "result");
    if !cals.is_empty() {
        what = format!("{what} and {}", plural(cals.len(), "calibration"));
    }
    let _ = write!(
        o,
        "<header>\n<h1>msgbench report</h1>\n<p class=\"sub\">{what}, written by msgbench {}</p>\n\
         <ul class=\"inputs\">\n",
        esc(env!("CARGO_PKG_VERSION"))
    );
    for r in results {
        let run = &r.run;
        let _ = write!(
            o,
            "<li data-input=\"{}\">{}<b>{}</b>: <code>{}</code>",
            esc(&r.label),
            swatch(r.color),
            esc(&r.label),
            esc(&run.scenario)
        );
        let params = key_params(&run.params);
        if !params.is_empty() {
            let _ = write!(o, " — {params}");
        }
        let _ = write!(
            o,
            "<span class=\"when\">started {}, msgbench {}",
            esc(&run.started_at),
            esc(&run.tool.version)
        );
        if let Some(runs) = &run.runs {
            let _ = write!(o, ", {} runs", runs.n);
            if let Some(rep) = runs.representative {
                let _ = write!(
                    o,
                    " (charts show run {} of them{})",
                    rep + 1,
                    runs.representative_by
                        .as_ref()
                        .map(|b| format!(", the median by {}", esc(b)))
                        .unwrap_or_default()
                );
            }
        }
        o.push_str("</span>");
        if run.interrupted {
            o.push_str(" <span class=\"fail\">interrupted: the figures cover what ran</span>");
        }
        o.push_str("</li>\n");
    }
    for c in cals {
        let env = c.cal.environment.as_ref();
        let _ = writeln!(
            o,
            "<li data-input=\"{}\"><b>{}</b>: <code>calibration</code> — the machine's latency \
             floor{}<span class=\"when\">started {}, msgbench {}</span></li>",
            esc(&c.label),
            esc(&c.label),
            env.and_then(|e| Some(format!(
                ", {} round trips of {}\u{a0}B",
                units::count(e.samples?),
                units::count(e.size?)
            )))
            .map(|s| esc(&s))
            .unwrap_or_default(),
            esc(&c.cal.started_at),
            esc(&c.cal.tool.version)
        );
    }
    o.push_str("</ul>\n</header>\n");
}

// ---------------------------------------------------------------------------------------------
// The summary table.

/// How a summary row shows its numbers.
#[derive(Clone, Copy)]
enum Unit {
    Ns,
    Rate,
    Count,
}

impl Unit {
    fn fmt(self, v: f64) -> String {
        match self {
            Unit::Ns => units::ns(v, false),
            Unit::Rate => units::si(v, false),
            Unit::Count => units::count(v),
        }
    }
}

fn summary(o: &mut String, results: &[Input]) {
    o.push_str(
        "<section id=\"summary\">\n<h2>Summary</h2>\n<p class=\"note\">One column per result. \
         Latency is corrected for coordinated omission: each message is timed from when it was \
         due to be sent. With repeated runs (<code>--runs</code>) a cell shows the median, then \
         the range over the runs.</p>\n<div class=\"table-wrap\"><table class=\"summary\">\n\
         <thead><tr><th scope=\"col\"></th>",
    );
    for r in results {
        let _ = write!(
            o,
            "<th scope=\"col\" data-input=\"{}\">{}{}</th>",
            esc(&r.label),
            swatch(r.color),
            esc(&r.label)
        );
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    text_row(o, results, "scenario", "scenario", |r| {
        Some(esc(&r.run.scenario))
    });
    metric_row(
        o,
        results,
        "msgs_per_sec",
        "msgs/s, all clients",
        Unit::Rate,
        true,
    );
    for role in ["pub", "sub"] {
        if results.iter().any(|r| r.run.by_role.contains_key(role)) {
            let _ = write!(
                o,
                "<tr data-metric=\"{role}.msgs_per_sec\"><th scope=\"row\">msgs/s, {role} side</th>"
            );
            for r in results {
                match r.run.by_role.get(role) {
                    Some(s) => {
                        let clients = s
                            .clients
                            .map(|n| {
                                format!(
                                    "<span class=\"range\">{}</span>",
                                    plural(n as usize, "client")
                                )
                            })
                            .unwrap_or_default();
                        let _ = write!(
                            o,
                            "<td data-input=\"{}\" data-metric=\"{role}.msgs_per_sec\" data-value=\"{}\">{}{clients}</td>",
                            esc(&r.label),
                            num(s.msgs_per_sec),
                            esc(&units::si(s.msgs_per_sec, false))
                        );
                    }
                    None => missing_cell(o, r, &format!("{role}.msgs_per_sec"), "no such clients"),
                }
            }
            o.push_str("</tr>\n");
        }
    }
    for (name, label) in [
        ("p50", "latency P50"),
        ("p90", "latency P90"),
        ("p99", "latency P99"),
        ("p99.9", "latency P99.9"),
        ("max", "latency max"),
    ] {
        metric_row(o, results, name, label, Unit::Ns, false);
    }
    metric_row(o, results, "lost", "lost", Unit::Count, true);
    metric_row(o, results, "duplicated", "duplicated", Unit::Count, false);
    errors_row(o, results);
    if results.iter().any(|r| r.run.jetstream.is_some()) {
        text_row(o, results, "jetstream", "JetStream acks", |r| {
            let js = r.run.jetstream.as_ref()?;
            let n = |k: &str| {
                js.get(k)
                    .and_then(Value::as_f64)
                    .map_or("?".into(), units::count)
            };
            Some(format!(
                "{} acked, {} stored, {}",
                n("acked"),
                n("stored"),
                verdict(
                    js.get("reconciled").and_then(Value::as_bool) == Some(true),
                    "reconciled",
                    "not reconciled"
                )
            ))
        });
    }
    if results.iter().any(|r| r.run.consumer.is_some()) {
        text_row(o, results, "consumer", "consumer", |r| {
            let c = r.run.consumer.as_ref()?;
            let n = |k: &str| {
                c.get(k)
                    .and_then(Value::as_f64)
                    .map_or("?".into(), units::count)
            };
            Some(format!(
                "{} of {} consumed, {} redelivered, {}",
                n("consumed"),
                n("expected"),
                n("redelivered"),
                verdict(
                    c.get("reconciled").and_then(Value::as_bool) == Some(true),
                    "reconciled",
                    "not reconciled"
                )
            ))
        });
    }
    if results.iter().any(|r| r.run.failure.is_some()) {
        text_row(o, results, "failure", "connection lost", |r| {
            r.run
                .failure
                .as_ref()
                .map(|f| format!("<span class=\"fail\">✗ {}</span>", esc(f)))
        });
    }
    if results.iter().any(|r| !r.run.thresholds.is_empty()) {
        thresholds_row(o, results);
    }
    o.push_str("</tbody></table></div>\n</section>\n");
}

/// `✓ yes` / `✗ no`, marked by symbol as well as colour.
fn verdict(ok: bool, yes: &str, no: &str) -> String {
    if ok {
        format!("<span class=\"pass\">✓ {}</span>", esc(yes))
    } else {
        format!("<span class=\"fail\">✗ {}</span>", esc(no))
    }
}

/// A row of HTML `cell` produces (already escaped); empty where it gives nothing.
fn text_row(
    o: &mut String,
    results: &[Input],
    key: &str,
    label: &str,
    cell: impl Fn(&Input) -> Option<String>,
) {
    let _ = write!(
        o,
        "<tr data-metric=\"{key}\"><th scope=\"row\">{}</th>",
        esc(label)
    );
    for r in results {
        let _ = write!(
            o,
            "<td class=\"text\" data-input=\"{}\" data-metric=\"{key}\">{}</td>",
            esc(&r.label),
            cell(r).unwrap_or_default()
        );
    }
    o.push_str("</tr>\n");
}

fn missing_cell(o: &mut String, r: &Input, metric: &str, why: &str) {
    let _ = write!(
        o,
        "<td class=\"missing\" data-input=\"{}\" data-metric=\"{}\" title=\"{}\">—</td>",
        esc(&r.label),
        esc(metric),
        esc(why)
    );
}

/// A row for a named metric. Left out when no input has it, unless `always`.
fn metric_row(
    o: &mut String,
    results: &[Input],
    name: &str,
    label: &str,
    unit: Unit,
    always: bool,
) {
    let figures: Vec<_> = results.iter().map(|r| r.figure(name)).collect();
    if !always && figures.iter().all(std::result::Result::is_err) {
        return;
    }
    let _ = write!(
        o,
        "<tr data-metric=\"{}\"><th scope=\"row\">{}</th>",
        esc(name),
        esc(label)
    );
    for (r, f) in results.iter().zip(figures) {
        match f {
            Ok(f) => {
                let _ = write!(
                    o,
                    "<td data-input=\"{}\" data-metric=\"{}\" data-value=\"{}\"",
                    esc(&r.label),
                    esc(name),
                    num(f.value)
                );
                match f.spread {
                    Some((lo, hi, n)) => {
                        let _ = write!(
                            o,
                            " data-min=\"{}\" data-max=\"{}\" data-n=\"{n}\">{}<span class=\"range\">\
                             [{} – {}], n\u{a0}=\u{a0}{n}</span></td>",
                            num(lo),
                            num(hi),
                            esc(&unit.fmt(f.value)),
                            esc(&unit.fmt(lo)),
                            esc(&unit.fmt(hi))
                        );
                    }
                    None => {
                        let _ = write!(o, ">{}</td>", esc(&unit.fmt(f.value)));
                    }
                }
            }
            Err(why) => missing_cell(o, r, name, why),
        }
    }
    o.push_str("</tr>\n");
}

fn errors_row(o: &mut String, results: &[Input]) {
    let _ = write!(
        o,
        "<tr data-metric=\"errors\"><th scope=\"row\">errors</th>"
    );
    for r in results {
        match r.figure("errors") {
            Ok(f) => {
                let kinds: Vec<String> = r
                    .run
                    .errors
                    .iter()
                    .filter(|(_, n)| **n > 0.0)
                    .map(|(k, n)| format!("{} {}", esc(k), units::count(*n)))
                    .collect();
                let _ = write!(
                    o,
                    "<td data-input=\"{}\" data-metric=\"errors\" data-value=\"{}\"{}>{}",
                    esc(&r.label),
                    num(f.value),
                    if f.value > 0.0 { " class=\"fail\"" } else { "" },
                    esc(&units::count(f.value))
                );
                if let Some((lo, hi, n)) = f.spread {
                    let _ = write!(
                        o,
                        "<span class=\"range\">[{} – {}], n\u{a0}=\u{a0}{n}</span>",
                        units::count(lo),
                        units::count(hi)
                    );
                }
                if !kinds.is_empty() {
                    // With repeated runs the kinds are the charted run's, not the median's.
                    let _ = write!(
                        o,
                        "<span class=\"range\">{}{}</span>",
                        if f.spread.is_some() {
                            "charted run: "
                        } else {
                            ""
                        },
                        kinds.join(", ")
                    );
                }
                o.push_str("</td>");
            }
            Err(why) => missing_cell(o, r, "errors", why),
        }
    }
    o.push_str("</tr>\n");
}

fn thresholds_row(o: &mut String, results: &[Input]) {
    let _ = write!(
        o,
        "<tr data-metric=\"thresholds\"><th scope=\"row\">thresholds</th>"
    );
    for r in results {
        let t = &r.run.thresholds;
        let failed = t.iter().filter(|v| !v.pass).count();
        let _ = write!(
            o,
            "<td class=\"text\" data-input=\"{}\" data-metric=\"thresholds\" data-value=\"{failed}\" \
             data-total=\"{}\">",
            esc(&r.label),
            t.len()
        );
        if !t.is_empty() {
            o.push_str(&verdict(
                failed == 0,
                &format!("all {} pass", t.len()),
                &format!("{failed} of {} fail", t.len()),
            ));
            for v in t {
                // Latency gates measure in ns; show them in time units.
                let metric = v
                    .expr
                    .split(['<', '>', '=', '!'])
                    .next()
                    .unwrap_or("")
                    .trim();
                let latency = Metric::parse(metric).is_ok_and(Metric::is_latency);
                let measured = match (v.measured, &v.why) {
                    (Some(m), _) if latency => units::ns(m, false),
                    (Some(m), _) => units::sig(m, 4, true),
                    (None, Some(why)) => why.clone(),
                    (None, None) => "not measured".into(),
                };
                let _ = write!(
                    o,
                    "<span class=\"range {}\">{} {}: {}</span>",
                    if v.pass { "pass" } else { "fail" },
                    if v.pass { "✓" } else { "✗" },
                    esc(&v.expr),
                    esc(&measured)
                );
            }
        }
        o.push_str("</td>");
    }
    o.push_str("</tr>\n");
}

// ---------------------------------------------------------------------------------------------
// The charts.

/// Latency by percentile, every input with latency in one chart.
///
/// y is logarithmic: a latency distribution's body (tens of µs) and its tail (ms) are orders of
/// magnitude apart, and on a linear axis the body flattens into the bottom edge so that only
/// the tail can be read; on a log axis both can, and the gap between corrected and
/// uncorrected reads as a ratio wherever it occurs.
fn percentile_chart(results: &[Input], cals: &[CalInput]) -> Option<String> {
    let mut lines = Vec::new();
    let mut from_summary = Vec::new();
    for r in results {
        for (curve, which, dashed) in [
            (&r.corrected, "corrected", false),
            (&r.uncorrected, "uncorrected", true),
        ] {
            let Some(curve) = curve else { continue };
            if !curve.from_histogram {
                from_summary.push(format!("{} {which}", r.label));
            }
            let id = format!("{} {which}", r.label);
            let points = curve
                .points
                .iter()
                .map(|(q, v)| {
                    let pct = q * 100.0;
                    Some(svg::Point {
                        x: percentile_x(*q, curve.count),
                        x0: None,
                        y: *v,
                        attrs: vec![("data-percentile", num(pct))],
                        tip: format!(
                            "{id}: P{} = {}",
                            units::sig(pct, 6, true),
                            units::ns(*v, false)
                        ),
                    })
                })
                .collect();
            lines.push(svg::Line {
                id,
                color: r.color,
                dashed,
                points,
            });
        }
    }
    if lines.is_empty() {
        return None;
    }
    // The floor through the server, once (one hop: what `latency` measures) and twice (a
    // request and its reply), from the first calibration given.
    let mut refs = Vec::new();
    if let Some(cal) = cals.first() {
        for (hop, name) in [("one_hop", "one hop"), ("two_hop", "two hops")] {
            if let Some(p50) = cal
                .floors()
                .iter()
                .find(|(k, _)| *k == hop)
                .and_then(|(_, v)| v.get("p50"))
            {
                refs.push(svg::RefLine {
                    y: *p50,
                    label: format!("floor P50, {name} ({})", cal.label),
                });
            }
        }
    }
    let ys = lines
        .iter()
        .flat_map(|l| l.points.iter().flatten().map(|p| p.y))
        .chain(refs.iter().map(|r| r.y));
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v.max(1.0)), hi.max(v))
    });
    let y = svg::Axis::log(lo, hi, "latency (log scale)", |v| units::ns(v, true));
    let top = lines
        .iter()
        .flat_map(|l| l.points.iter().flatten().map(|p| p.x))
        .fold(5.0f64, f64::max)
        .ceil();
    let x = svg::Axis {
        scale: svg::Scale::Linear { lo: 0.0, hi: top },
        ticks: (0..=top as u32)
            .map(|k| svg::Tick {
                at: f64::from(k),
                label: percentile_label(k),
            })
            .collect(),
        label: "percentile (each step right is ten times rarer)".into(),
    };
    let chart = svg::Chart {
        kind: "percentiles",
        input: None,
        title: "Latency by percentile".into(),
        wide: true,
    };
    let mut caption = String::from(
        "Solid: corrected for coordinated omission (timed from when each message was due). \
         Dashed: uncorrected (timed from when it was actually sent), what tools without the \
         correction report. The latency axis is logarithmic so the body of the distribution \
         and its tail can both be read; the curve ends at the maximum, placed at 1 in N \
         observations.",
    );
    if !refs.is_empty() {
        caption.push_str(" Dotted lines: this machine's calibrated floor (median round trip).");
    }
    if !from_summary.is_empty() {
        let _ = write!(
            caption,
            " Drawn from the summary percentiles only (the file carries no histogram): {}.",
            esc(&from_summary.join(", "))
        );
    }
    Some(figure(
        &svg::lines(&chart, &x, &y, &lines, &refs),
        &caption,
        true,
    ))
}

/// The value and range of a named figure for a comparison bar.
fn compare_bar(r: &Input, name: &str, unit: Unit, color: Option<&'static str>) -> Option<svg::Bar> {
    let f = r.figure(name).ok()?;
    let mut tip = format!("{}: {}", r.label, unit.fmt(f.value));
    if let Some((lo, hi, n)) = f.spread {
        let _ = write!(
            tip,
            " (median of {n} runs, {} – {})",
            unit.fmt(lo),
            unit.fmt(hi)
        );
    }
    Some(svg::Bar {
        value: f.value,
        range: f.spread.map(|(lo, hi, _)| (lo, hi)),
        color,
        label: Some(match unit {
            Unit::Ns => units::ns(f.value, true),
            _ => units::si(f.value, true),
        }),
        tip,
    })
}

fn compare_throughput(results: &[Input]) -> String {
    let cats: Vec<String> = results.iter().map(|r| r.label.clone()).collect();
    let set = svg::BarSet {
        id: "msgs/s".into(),
        color: PALETTE[0],
        bars: results
            .iter()
            .map(|r| compare_bar(r, "msgs_per_sec", Unit::Rate, Some(r.color)))
            .collect(),
    };
    let chart = svg::Chart {
        kind: "compare-throughput",
        wide: false,
        input: None,
        title: "Throughput by input (msgs/s, all clients)".into(),
    };
    figure(
        &svg::bars(&chart, &cats, "msgs/s", &[set], |v| units::si(v, true)),
        "Messages per second over all clients (for pubsub: published plus received). \
         Whiskers: the range over repeated runs, where there were several.",
        false,
    )
}

fn compare_latency(results: &[Input]) -> Option<String> {
    let with: Vec<&Input> = results.iter().filter(|r| r.figure("p50").is_ok()).collect();
    if with.is_empty() {
        return None;
    }
    let cats: Vec<String> = with.iter().map(|r| r.label.clone()).collect();
    // Two blues, apart in lightness, so they read apart in greyscale too.
    let sets: Vec<svg::BarSet> = [("P50", "p50", "#56B4E9"), ("P99", "p99", "#0072B2")]
        .into_iter()
        .map(|(id, name, color)| svg::BarSet {
            id: id.into(),
            color,
            bars: with
                .iter()
                .map(|r| compare_bar(r, name, Unit::Ns, None))
                .collect(),
        })
        .collect();
    let chart = svg::Chart {
        kind: "compare-latency",
        wide: false,
        input: None,
        title: "Latency by input (P50, P99, corrected)".into(),
    };
    Some(figure(
        &svg::bars(&chart, &cats, "latency", &sets, |v| units::ns(v, true)),
        "Bars start at zero so their lengths compare. Whiskers: the range over repeated runs.",
        false,
    ))
}

/// A tick's interval in words: `1.00–2.00 s`.
fn interval(k: &Tick) -> String {
    format!("{:.2}–{:.2} s", k.t_s - k.span_s, k.t_s)
}

/// From the start of the run to its last tick: time has real ends, no need to round them out.
fn time_axis(ticks: &[Tick]) -> svg::Axis {
    let end = ticks.iter().map(|t| t.t_s).fold(0.0, f64::max);
    svg::Axis::linear_exact(0.0, end, "seconds since the start", |v| {
        units::sig(v, 3, true)
    })
}

/// P50, P99 and max of each tick with latency. Log y, for the same reason as the percentile
/// chart: a tick's max is often many times its median.
fn latency_timeline(r: &Input) -> Option<String> {
    let t = r.run.timeline.as_ref()?;
    if !t.ticks.iter().any(|k| k.latency.is_some()) {
        return None;
    }
    type Pick = fn(&TickLatency) -> f64;
    let picks: [(&str, Pick, &'static str, bool); 3] = [
        ("P50", |l| l.p50_ns, PALETTE[0], false),
        ("P99", |l| l.p99_ns, PALETTE[1], false),
        ("max", |l| l.max_ns, PALETTE[6], true),
    ];
    let lines: Vec<svg::Line> = picks
        .iter()
        .map(|(id, pick, color, dashed)| svg::Line {
            id: (*id).into(),
            color,
            dashed: *dashed,
            points: t
                .ticks
                .iter()
                .map(|k| {
                    let v = pick(k.latency.as_ref()?);
                    Some(svg::Point {
                        x: k.t_s,
                        x0: Some(k.t_s - k.span_s),
                        y: v,
                        attrs: vec![("data-t", num(k.t_s)), ("data-span", num(k.span_s))],
                        tip: format!("{id}, {}: {}", interval(k), units::ns(v, false)),
                    })
                })
                .collect(),
        })
        .collect();
    let ys = lines
        .iter()
        .flat_map(|l| l.points.iter().flatten().map(|p| p.y));
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v.max(1.0)), hi.max(v))
    });
    let y = svg::Axis::log(lo, hi, "latency (log scale)", |v| units::ns(v, true));
    let chart = svg::Chart {
        kind: "latency-timeline",
        wide: false,
        input: Some(r.label.clone()),
        title: format!("Latency over time: {}", r.label),
    };
    let mut caption = format!(
        "Each step is one {} interval of {}, corrected latency of the messages that arrived \
         in it, to within 2 %. Gaps: intervals in which no latency was measured (warm-up, \
         nothing arrived).",
        units::secs(t.interval_s),
        esc(&r.label)
    );
    if t.truncated {
        caption
            .push_str(" The run outlasted what the timeline keeps; later intervals are not shown.");
    }
    Some(figure(
        &svg::lines(&chart, &time_axis(&t.ticks), &y, &lines, &[]),
        &caption,
        false,
    ))
}

/// Each client's rate per tick; the totals when the timeline has no per-client columns or
/// too many clients to tell apart.
fn throughput_timeline(r: &Input) -> Option<String> {
    let t = r.run.timeline.as_ref()?;
    if t.ticks.is_empty() {
        return None;
    }
    let n = t.clients.len();
    let per_client = n > 0 && n <= MAX_CLIENT_LINES && t.ticks.iter().all(|k| k.msgs.len() == n);
    let rate = |msgs: f64, span: f64| if span > 0.0 { msgs / span } else { 0.0 };
    let point = |id: &str, k: &Tick, v: f64| svg::Point {
        x: k.t_s,
        x0: Some(k.t_s - k.span_s),
        y: v,
        attrs: vec![("data-t", num(k.t_s)), ("data-span", num(k.span_s))],
        tip: format!("{id}, {}: {} msgs/s", interval(k), units::si(v, false)),
    };
    let lines: Vec<svg::Line> = if per_client {
        t.clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let id = format!("{} {}", c.role, c.id);
                svg::Line {
                    color: PALETTE[i % PALETTE.len()],
                    dashed: (i / PALETTE.len()) % 2 == 1,
                    points: t
                        .ticks
                        .iter()
                        .map(|k| Some(point(&id, k, rate(k.msgs[i], k.span_s))))
                        .collect(),
                    id,
                }
            })
            .collect()
    } else {
        type Pick = fn(&Tick) -> f64;
        let totals: [(&str, Pick, &'static str); 2] = [
            ("sent", |k| k.sent_per_sec, PALETTE[0]),
            ("received", |k| k.received_per_sec, PALETTE[1]),
        ];
        totals
            .iter()
            .map(|(id, pick, color)| svg::Line {
                id: (*id).into(),
                color,
                dashed: false,
                points: t
                    .ticks
                    .iter()
                    .map(|k| Some(point(id, k, pick(k))))
                    .collect(),
            })
            .collect()
    };
    let hi = lines
        .iter()
        .flat_map(|l| l.points.iter().flatten().map(|p| p.y))
        .fold(0.0, f64::max);
    // Linear from zero: a dip in a rate has to look as deep as it was.
    let y = svg::Axis::linear(0.0, hi, "msgs/s", |v| units::si(v, true));
    let chart = svg::Chart {
        kind: "throughput-timeline",
        wide: false,
        input: Some(r.label.clone()),
        title: format!("Throughput over time: {}", r.label),
    };
    let mut caption = if per_client {
        format!(
            "Messages per second of each client of {}, per {} interval (a client's count in \
             the interval over its length).",
            esc(&r.label),
            units::secs(t.interval_s)
        )
    } else {
        format!(
            "Messages per second sent and received by all {} clients of {} together, per {} \
             interval.",
            n,
            esc(&r.label),
            units::secs(t.interval_s)
        )
    };
    let errs: Vec<String> = t
        .ticks
        .iter()
        .filter(|k| k.errors > 0.0)
        .take(10)
        .map(|k| {
            format!(
                "{} s ({})",
                units::sig(k.t_s, 4, true),
                units::count(k.errors)
            )
        })
        .collect();
    if !errs.is_empty() {
        let _ = write!(
            caption,
            " Errors were counted in the intervals ending at {}.",
            errs.join(", ")
        );
    }
    Some(figure(
        &svg::lines(&chart, &time_axis(&t.ticks), &y, &lines, &[]),
        &caption,
        false,
    ))
}

/// One bar per client: its msgs/s over its own span. Colour by role.
fn client_bars(r: &Input) -> Option<String> {
    let clients = &r.run.clients;
    if clients.is_empty() {
        return None;
    }
    let cats: Vec<String> = clients
        .iter()
        .map(|c| format!("{} {}", c.role, c.id))
        .collect();
    let mut roles: Vec<&str> = Vec::new();
    for c in clients {
        if !roles.contains(&c.role.as_str()) {
            roles.push(&c.role);
        }
    }
    let few = clients.len() <= 12;
    let sets: Vec<svg::BarSet> = roles
        .iter()
        .enumerate()
        .map(|(ri, role)| svg::BarSet {
            id: (*role).to_string(),
            color: PALETTE[ri % PALETTE.len()],
            bars: clients
                .iter()
                .map(|c| {
                    (c.role == *role).then(|| svg::Bar {
                        value: c.msgs_per_sec,
                        range: None,
                        color: None,
                        label: few.then(|| units::si(c.msgs_per_sec, true)),
                        tip: format!(
                            "{} {}: {} msgs/s ({} msgs in {} s)",
                            c.role,
                            c.id,
                            units::si(c.msgs_per_sec, false),
                            units::count(c.msgs),
                            units::sig(c.seconds, 4, true)
                        ),
                    })
                })
                .collect(),
        })
        .collect();
    let chart = svg::Chart {
        kind: "clients",
        wide: false,
        input: Some(r.label.clone()),
        title: format!("Throughput per client: {}", r.label),
    };
    Some(figure(
        &svg::bars(&chart, &cats, "msgs/s", &sets, |v| units::si(v, true)),
        &format!(
            "Each client's messages per second over its own span, in {}. Even bars mean the \
             load was shared fairly.",
            esc(&r.label)
        ),
        false,
    ))
}

// ---------------------------------------------------------------------------------------------
// The environment table.

/// Rows of text by group, one cell per input column.
struct EnvTable {
    columns: usize,
    rows: Vec<(&'static str, String, Vec<Option<String>>)>,
}

impl EnvTable {
    fn set(&mut self, group: &'static str, key: &str, col: usize, value: impl Into<String>) {
        let value = value.into();
        if let Some(row) = self
            .rows
            .iter_mut()
            .find(|(g, k, _)| *g == group && k == key)
        {
            row.2[col] = Some(value);
        } else {
            let mut cells = vec![None; self.columns];
            cells[col] = Some(value);
            self.rows.push((group, key.to_string(), cells));
        }
    }
}

/// `params` flattened to dotted keys (`connection.ping_interval_secs`); values as JSON, strings
/// bare.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

fn server_rows(t: &mut EnvTable, col: usize, s: &Server) {
    t.set("Server", "version", col, s.version.clone());
    if !s.name.is_empty() {
        t.set("Server", "name", col, s.name.clone());
    }
    t.set("Server", "url", col, s.url.clone());
    if let Some(e) = s.embedded {
        t.set(
            "Server",
            "started by msgbench",
            col,
            if e { "yes" } else { "no" },
        );
    }
    if let Some(m) = s.max_payload {
        t.set(
            "Server",
            "max payload",
            col,
            format!("{} B", units::count(m)),
        );
    }
    if let Some(a) = &s.auth {
        t.set("Server", "auth", col, a.clone());
    }
}

fn environment(o: &mut String, results: &[Input], cals: &[CalInput]) {
    let mut t = EnvTable {
        columns: results.len() + cals.len(),
        rows: Vec::new(),
    };
    for (col, r) in results.iter().enumerate() {
        let run = &r.run;
        t.set("Run", "kind", col, format!("result: {}", run.scenario));
        t.set("Run", "run id", col, run.run_id.clone());
        t.set("Run", "started at", col, run.started_at.clone());
        t.set("Run", "msgbench", col, run.tool.version.clone());
        if run.interrupted {
            t.set("Run", "interrupted", col, "yes: the figures cover what ran");
        }
        if let Some(s) = &run.server {
            server_rows(&mut t, col, s);
        }
        if let Some(b) = &run.server_b {
            t.set(
                "Server",
                "subscriber's server",
                col,
                format!("{} at {}", b.version, b.url),
            );
        }
        if let Some(c) = &run.cluster {
            let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
            t.set(
                "Server",
                "cluster",
                col,
                format!("{} nodes: {}", names.len(), names.join(", ")),
            );
        }
        if let Some(h) = &run.host {
            if let Some(cpu) = h.cpu.as_ref().filter(|c| !c.is_empty()) {
                t.set("Host", "CPU", col, cpu.clone());
            }
            if let Some(n) = h.cores {
                t.set("Host", "cores", col, units::count(n));
            }
            if let Some(os) = &h.os {
                t.set("Host", "OS", col, os.clone());
            }
            if let Some(a) = &h.arch {
                t.set("Host", "architecture", col, a.clone());
            }
        }
        if let Some(l) = &run.link {
            t.set("Network", "link", col, link_text(l));
        }
        if let Some(rtt) = &run.rtt_ns {
            t.set("Network", "round trip before the run", col, {
                let (a, b) = (units::ns(rtt.a, false), units::ns(rtt.b, false));
                if a == b || rtt.b == 0.0 {
                    a
                } else {
                    format!("{a} (publisher's server), {b} (subscriber's)")
                }
            });
        }
        let mut params = Vec::new();
        flatten("", &Value::Object(run.params.clone()), &mut params);
        for (k, v) in params {
            t.set("Parameters", &k, col, v);
        }
    }
    for (i, c) in cals.iter().enumerate() {
        let col = results.len() + i;
        t.set("Run", "kind", col, "calibration");
        t.set("Run", "started at", col, c.cal.started_at.clone());
        t.set("Run", "msgbench", col, c.cal.tool.version.clone());
        if let Some(s) = &c.cal.server {
            server_rows(&mut t, col, s);
        }
        if let Some(env) = &c.cal.environment {
            if let Some(n) = env.cpus {
                t.set("Host", "cores", col, units::count(n));
            }
            if let (Some(n), Some(size)) = (env.samples, env.size) {
                t.set(
                    "Calibrated floor",
                    "round trips",
                    col,
                    format!(
                        "{} of {} B, one at a time",
                        units::count(n),
                        units::count(size)
                    ),
                );
            }
        }
        for (name, rt) in c.floors() {
            // The low end is what a floor is about; the tail of a calibration is noise.
            let parts: Vec<String> = [("min", "min"), ("p50", "P50"), ("p99", "P99")]
                .iter()
                .filter_map(|(k, label)| {
                    rt.get(*k)
                        .map(|v| format!("{label}\u{a0}{}", units::ns(*v, false)))
                })
                .collect();
            let row = match name {
                "tcp" => "loopback TCP round trip".to_string(),
                "one_hop" => "one hop through the server".to_string(),
                "two_hop" => "two hops (request, reply)".to_string(),
                other => other.replace('_', " "),
            };
            t.set("Calibrated floor", &row, col, parts.join(" · "));
        }
        if let Some(l) = &c.cal.link {
            t.set("Network", "link", col, link_text(l));
        }
    }

    o.push_str(
        "<section id=\"environment\">\n<h2>Environment</h2>\n<p class=\"note\">What each run \
         ran on and with. A calibration gives this machine's latency floor: round trips with \
         nothing else in flight, which no result here can beat.</p>\n\
         <div class=\"table-wrap\"><table class=\"env\">\n<thead><tr><th scope=\"col\"></th>",
    );
    for r in results {
        let _ = write!(
            o,
            "<th scope=\"col\" data-input=\"{}\">{}{}</th>",
            esc(&r.label),
            swatch(r.color),
            esc(&r.label)
        );
    }
    for c in cals {
        let _ = write!(
            o,
            "<th scope=\"col\" data-input=\"{}\">{}</th>",
            esc(&c.label),
            esc(&c.label)
        );
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for group in [
        "Run",
        "Server",
        "Host",
        "Network",
        "Calibrated floor",
        "Parameters",
    ] {
        let mut rows: Vec<_> = t.rows.iter().filter(|(g, _, _)| *g == group).collect();
        if group == "Parameters" {
            // One sorted list, whichever input brought a name first.
            rows.sort_by(|a, b| a.1.cmp(&b.1));
        }
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "<tr class=\"group\"><th scope=\"rowgroup\" colspan=\"{}\">{}</th></tr>",
            t.columns + 1,
            esc(group)
        );
        for (_, key, cells) in rows {
            let _ = write!(o, "<tr><th scope=\"row\">{}</th>", esc(key));
            for (col, cell) in cells.iter().enumerate() {
                let label = results
                    .get(col)
                    .map(|r| r.label.as_str())
                    .or_else(|| cals.get(col - results.len()).map(|c| c.label.as_str()))
                    .unwrap_or("");
                let _ = write!(
                    o,
                    "<td class=\"text\" data-input=\"{}\">{}</td>",
                    esc(label),
                    cell.as_deref().map(esc).unwrap_or_default()
                );
            }
            o.push_str("</tr>\n");
        }
    }
    o.push_str("</tbody></table></div>\n</section>\n");
}

fn link_text(l: &Link) -> String {
    match l.proxy_added_rtt_ns {
        Some(ns) => format!(
            "{} (the proxy itself adds {} per round trip)",
            l.spec,
            units::ns(ns, false)
        ),
        None => l.spec.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn doc(name: &str, value: Value) -> Doc {
        let kind = if value["schema"] == crate::scenario::calibrate::SCHEMA {
            DocKind::Calibration
        } else {
            DocKind::Result
        };
        Doc {
            path: PathBuf::from(format!("/tmp/x/{name}")),
            name: name.into(),
            kind,
            value,
        }
    }

    fn histogram(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = crate::stats::latency::new_histogram();
        for v in values {
            h.record(v).unwrap();
        }
        h
    }

    /// A small result with every section the report draws, including the ones added with
    /// `--runs` and the timeline.
    fn full_result() -> Value {
        let h = histogram((1..=1000u64).map(|i| i * 1_000));
        let u = histogram((1..=1000u64).map(|i| i * 900));
        let lat = |h: &Histogram<u64>| {
            serde_json::json!({
                "count": h.len(), "min_ns": h.min(), "mean_ns": h.mean(), "stddev_ns": h.stdev(),
                "max_ns": h.max(),
                "percentiles_ns": {"50": h.value_at_quantile(0.5), "99": h.value_at_quantile(0.99)},
                "hdr": crate::export::hdr::encode_base64(h)
            })
        };
        serde_json::json!({
            "schema": "msgbench.result/v1",
            "tool": {"name": "msgbench", "version": "0.1.0"},
            "scenario": "latency", "run_id": "r1", "started_at": "2026-01-01T00:00:00Z",
            "interrupted": false,
            "params": {"rate": 1000.0, "size": 8, "connection": {"tls": null}, "note": "<b>x</b>"},
            "server": {"url": "nats://127.0.0.1:4222", "name": "n", "version": "2.15.2",
                       "embedded": true, "max_payload": 1048576, "auth": "none"},
            "throughput": {"msgs": 2000, "bytes": 16000, "seconds": 1.0, "msgs_per_sec": 2000.0,
                           "bytes_per_sec": 16000.0},
            "by_role": {"pub": {"msgs_per_sec": 1000.0, "clients": 1},
                        "sub": {"msgs_per_sec": 1000.0, "clients": 1}},
            "clients": [
                {"role": "pub", "id": 0, "msgs": 1000, "bytes": 8000, "seconds": 1.0,
                 "msgs_per_sec": 1000.5, "bytes_per_sec": 8000.0},
                {"role": "sub", "id": 0, "msgs": 1000, "bytes": 8000, "seconds": 1.0,
                 "msgs_per_sec": 999.25, "bytes_per_sec": 8000.0}
            ],
            "delivery": {"sent": 1000, "expected": 1000, "received": 1000, "lost": 0,
                         "duplicated": 0, "reordered": 0},
            "errors": {},
            "latency": lat(&h),
            "latency_uncorrected": lat(&u),
            "host": {"cpu": "AMD EPYC 7B13", "cores": 2, "os": "linux", "arch": "x86_64"},
            "timeline": {
                "interval_s": 1.0,
                "clients": [{"role": "pub", "id": 0}, {"role": "sub", "id": 0}],
                "ticks": [
                    {"t_s": 1.0, "span_s": 1.0, "msgs": [1200, 1199], "sent_per_sec": 1200.0,
                     "received_per_sec": 1199.0,
                     "latency": {"count": 1199, "p50_ns": 51200, "p99_ns": 98000, "max_ns": 120000},
                     "errors": 0},
                    {"t_s": 2.0, "span_s": 1.0, "msgs": [1000, 1000], "sent_per_sec": 1000.0,
                     "received_per_sec": 1000.0, "errors": 2},
                    {"t_s": 2.5, "span_s": 0.5, "msgs": [500, 501], "sent_per_sec": 1000.0,
                     "received_per_sec": 1002.0,
                     "latency": {"count": 501, "p50_ns": 50000, "p99_ns": 90000, "max_ns": 100000},
                     "errors": 0}
                ]
            },
            "runs": {
                "n": 3, "representative": 1, "representative_by": "p99",
                "runs": [],
                "metrics": {
                    "msgs_per_sec": {"median": 2000.0, "min": 1900.0, "max": 2100.0, "mad": 50.0,
                                     "values": [1900.0, 2000.0, 2100.0]},
                    "p99": {"median": 990000.0, "min": 980000.0, "max": 1000000.0, "mad": 1.0,
                            "values": [980000.0, 990000.0, 1000000.0]}
                }
            },
            "thresholds": [{"expr": "p99<2ms", "measured": 990000.0, "pass": true},
                           {"expr": "lost==0", "measured": 0.0, "pass": true}],
            "connections": {"opened": 2, "lost": 0, "reconnects": 0, "gave_up": 0, "reconnect_ns": []}
        })
    }

    fn calibration() -> Value {
        let rt = |p50: u64| {
            serde_json::json!({"count": 10, "min": p50 / 2, "p50": p50, "p90": p50 + 1,
                                              "p99": p50 + 2, "p99.9": p50 + 3, "max": p50 * 3})
        };
        serde_json::json!({
            "schema": "msgbench.calibration/v1",
            "tool": {"name": "msgbench", "version": "0.1.0"},
            "started_at": "2026-01-01T00:00:00Z",
            "server": {"url": "nats://127.0.0.1:4222", "version": "2.15.2", "embedded": true},
            "environment": {"cpus": 2, "samples": 10, "size": 16,
                            "floor_ns": {"tcp": rt(20_000), "one_hop": rt(40_000), "two_hop": rt(80_000)}}
        })
    }

    /// The `data-values` of the series `id` in the chart `kind`, read back from the HTML.
    fn series_values(html: &str, kind: &str, id: &str) -> Vec<f64> {
        let start = html.find(&format!("data-chart=\"{kind}\"")).expect(kind);
        let chart = &html[start..start + html[start..].find("</svg>").unwrap()];
        let at = chart
            .match_indices("<path class=\"line\"")
            .map(|(i, _)| &chart[i..])
            .find(|p| p[..p.find("/>").unwrap()].contains(&format!("data-series=\"{}\"", esc(id))))
            .unwrap_or_else(|| panic!("no series {id} in {kind}"));
        let v = &at[at.find("data-values=\"").unwrap() + 13..];
        v[..v.find('"').unwrap()]
            .split(' ')
            .map(|s| s.parse().unwrap())
            .collect()
    }

    #[test]
    fn numbers_read_in_their_units() {
        assert_eq!(units::ns(850.0, false), "850\u{a0}ns");
        assert_eq!(units::ns(54_303.0, false), "54.3\u{a0}µs");
        assert_eq!(units::ns(2_293_759.0, false), "2.29\u{a0}ms");
        assert_eq!(units::ns(999_960.0, false), "1.00\u{a0}ms");
        assert_eq!(units::ns(1_000_000.0, true), "1\u{a0}ms");
        assert_eq!(units::ns(1.5e9, false), "1.50\u{a0}s");
        assert_eq!(units::si(2_097_110.0, false), "2.10M");
        assert_eq!(units::si(359_548.7, true), "360k");
        assert_eq!(units::si(200_000.0, true), "200k");
        assert_eq!(units::si(850.0, true), "850");
        assert_eq!(units::si(0.0, true), "0");
        assert_eq!(units::count(1_200_000.0), "1,200,000");
        assert_eq!(units::count(999.0), "999");
        assert_eq!(units::count(0.5), "0.5");
        assert_eq!(units::sig(0.30000000000000004, 3, true), "0.3");
    }

    #[test]
    fn linear_ticks_are_whole_steps_covering_the_data() {
        assert_eq!(
            svg::linear_ticks(0.0, 97.0, 5),
            (0.0, 100.0, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0])
        );
        let (lo, hi, t) = svg::linear_ticks(0.0, 0.3, 3);
        assert_eq!((lo, hi), (0.0, 0.3));
        assert_eq!(t, vec![0.0, 0.1, 0.2, 0.3]);
        let (lo, hi, t) = svg::linear_ticks(0.0, 2_097_110.0, 5);
        assert_eq!((lo, hi), (0.0, 2_500_000.0));
        assert_eq!(t.len(), 6);
        // One value or nothing still gives an axis.
        assert_eq!(svg::linear_ticks(0.0, 0.0, 5).1, 1.0);
        assert!(svg::linear_ticks(5.0, 5.0, 5).1 >= 5.0);
        assert_eq!(svg::nice_step(10.0, 5), 2.0);
        assert_eq!(svg::nice_step(7.0, 5), 2.0);
        assert_eq!(svg::nice_step(30.0, 5), 10.0);
    }

    #[test]
    fn log_ticks_follow_one_two_five_or_decades() {
        let (lo, hi, t) = svg::log_ticks(22_960.0, 2_293_759.0);
        assert_eq!((lo, hi), (20_000.0, 5_000_000.0));
        assert_eq!(
            t,
            vec![20e3, 50e3, 100e3, 200e3, 500e3, 1e6, 2e6, 5e6],
            "eight 1-2-5 values fit"
        );
        // Over more decades, more than ten 1-2-5 values: powers of ten only.
        let (lo, hi, t) = svg::log_ticks(800.0, 3e9);
        assert_eq!((lo, hi), (500.0, 5e9));
        assert_eq!(t, vec![1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]);
        let (lo, hi, t) = svg::log_ticks(30.0, 400.0);
        assert_eq!((lo, hi), (20.0, 500.0));
        assert_eq!(t, vec![20.0, 50.0, 100.0, 200.0, 500.0]);
        // One value gets room either side.
        let (lo, hi, _) = svg::log_ticks(100.0, 100.0);
        assert!(lo < 100.0 && hi > 100.0, "{lo} {hi}");
        let s = svg::Scale::Log {
            lo: 10.0,
            hi: 1000.0,
        };
        assert!((s.frac(100.0) - 0.5).abs() < 1e-12);
        assert_eq!(s.frac(1.0), 0.0, "values below the domain sit on the axis");
        assert_eq!(svg::Scale::Linear { lo: 0.0, hi: 4.0 }.frac(1.0), 0.25);
    }

    #[test]
    fn percentiles_sit_on_the_hdr_axis() {
        assert_eq!(percentile_x(0.0, 1e6), 0.0);
        assert!((percentile_x(0.9, 1e6) - 1.0).abs() < 1e-9);
        assert!((percentile_x(0.999, 1e6) - 3.0).abs() < 1e-9);
        // The maximum sits at 1 in N, and nothing passes it.
        assert!((percentile_x(1.0, 4000.0) - 4000f64.log10()).abs() < 1e-12);
        assert!(percentile_x(0.99999, 4000.0) <= percentile_x(1.0, 4000.0));
        let labels: Vec<String> = (0..=5).map(percentile_label).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
    }

    #[test]
    fn the_curve_ends_at_the_histograms_maximum() {
        let h = histogram((1..=4000u64).map(|i| i * 100));
        let c = Curve::from_histogram(&h).unwrap();
        let (q, v) = *c.points.last().unwrap();
        assert_eq!((q, v), (1.0, h.max() as f64));
        let xs: Vec<f64> = c
            .points
            .iter()
            .map(|(q, _)| percentile_x(*q, c.count))
            .collect();
        assert!(xs.windows(2).all(|w| w[0] <= w[1]), "{xs:?}");
        assert!(Curve::from_histogram(&histogram([])).is_none());
    }

    #[test]
    fn escaping_keeps_input_text_inert() {
        assert_eq!(
            esc("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
        );
        let v = serde_json::json!({"a": "</script><!-- & -->", "b": [1, 2.5]});
        let s = json_in_script(&v);
        assert!(
            !s.contains('<') && !s.contains('>') && !s.contains('&'),
            "{s}"
        );
        assert_eq!(serde_json::from_str::<Value>(&s).unwrap(), v);
    }

    #[test]
    fn a_chart_holds_the_points_it_was_given() {
        let pts = [(1.0, 10.0), (2.0, 250.5), (3.0, 40.0)];
        let line = svg::Line {
            id: "a <series>".into(),
            color: PALETTE[0],
            dashed: false,
            points: pts
                .iter()
                .map(|(x, y)| {
                    Some(svg::Point {
                        x: *x,
                        x0: None,
                        y: *y,
                        attrs: vec![("data-t", num(*x))],
                        tip: format!("{y}"),
                    })
                })
                .chain([None])
                .collect(),
        };
        let chart = svg::Chart {
            kind: "test",
            input: Some("in".into()),
            title: "T".into(),
            wide: false,
        };
        let x = svg::Axis::linear(0.0, 3.0, "x", |v| units::sig(v, 3, true));
        let y = svg::Axis::log(10.0, 250.5, "y", |v| units::sig(v, 3, true));
        let out = svg::lines(&chart, &x, &y, &[line], &[]);
        assert!(out.starts_with("<svg class=\"chart\" data-chart=\"test\" data-input=\"in\""));
        assert!(out.contains("data-series=\"a &lt;series&gt;\" data-points=\"3\""));
        assert!(out.contains("data-values=\"10 250.5 40\""));
        assert_eq!(out.matches("<circle").count(), 3);
        for (_, y) in pts {
            assert!(out.contains(&format!("data-value=\"{y}\"")), "{y}");
        }
        assert!(!out.contains("a <series>"));

        // A value over an interval is a step across it, its marker mid-step.
        let step = svg::Line {
            id: "s".into(),
            color: PALETTE[0],
            dashed: false,
            points: vec![Some(svg::Point {
                x: 2.0,
                x0: Some(1.0),
                y: 100.0,
                attrs: Vec::new(),
                tip: String::new(),
            })],
        };
        let out = svg::lines(&chart, &x, &y, &[step], &[]);
        let d = &out[out.find(" d=\"").unwrap() + 4..];
        let d = &d[..d.find('"').unwrap()];
        let (m, l) = d.split_once('L').unwrap();
        let (mx, my) = m[1..].split_once(' ').unwrap();
        let (lx, ly) = l.split_once(' ').unwrap();
        assert_eq!(my, ly, "level: {d}");
        let (mx, lx): (f64, f64) = (mx.parse().unwrap(), lx.parse().unwrap());
        assert!(lx > mx, "{d}");
        assert!(
            out.contains(&format!("cx=\"{}\"", (mx + lx) / 2.0)),
            "{out}"
        );

        let set = svg::BarSet {
            id: "s".into(),
            color: PALETTE[1],
            bars: vec![
                Some(svg::Bar {
                    value: 5.5,
                    range: Some((5.0, 6.0)),
                    color: None,
                    label: None,
                    tip: String::new(),
                }),
                None,
                Some(svg::Bar {
                    value: 2.0,
                    range: None,
                    color: None,
                    label: Some("2".into()),
                    tip: String::new(),
                }),
            ],
        };
        let cats = ["a".to_string(), "b".into(), "c".into()];
        let out = svg::bars(&chart, &cats, "v", &[set], |v| units::sig(v, 3, true));
        assert_eq!(out.matches("<rect class=\"bar\"").count(), 2);
        assert!(
            out.contains("data-category=\"a\" data-value=\"5.5\" data-min=\"5\" data-max=\"6\"")
        );
        assert!(out.contains("data-category=\"c\" data-value=\"2\""));
        assert!(out.contains("class=\"whisker\""));
    }

    #[test]
    fn a_full_result_draws_every_chart_from_its_own_numbers() {
        let docs = [doc("a.json", full_result()), doc("cal.json", calibration())];
        let html = render(&docs).unwrap();
        for kind in [
            "percentiles",
            "latency-timeline",
            "throughput-timeline",
            "clients",
        ] {
            assert!(html.contains(&format!("data-chart=\"{kind}\"")), "{kind}");
        }
        // One input: nothing to compare.
        assert!(!html.contains("data-chart=\"compare-throughput\""));
        let tp = series_values(&html, "throughput-timeline", "pub 0");
        assert_eq!(tp, vec![1200.0, 1000.0, 1000.0]);
        let lat = series_values(&html, "latency-timeline", "P99");
        assert_eq!(
            lat,
            vec![98000.0, 90000.0],
            "the tick without latency is a gap"
        );
        let corrected = series_values(&html, "percentiles", "a.json corrected");
        assert_eq!(
            corrected.iter().copied().fold(0.0, f64::max),
            full_result()["latency"]["max_ns"].as_f64().unwrap()
        );
        assert!(!series_values(&html, "percentiles", "a.json uncorrected").is_empty());
        // Runs: median, range and count.
        assert!(html.contains("data-metric=\"p99\" data-value=\"990000\" data-min=\"980000\" data-max=\"1000000\" data-n=\"3\""));
        assert!(html.contains("n\u{a0}=\u{a0}3"));
        // Host, calibrated floor, parameters (escaped), the floor on the chart.
        assert!(html.contains("AMD EPYC 7B13"));
        assert!(html.contains("data-ref=\"floor P50, one hop (cal.json)\" data-value=\"40000\""));
        assert!(html.contains("connection.tls"));
        assert!(html.contains("&lt;b&gt;x&lt;/b&gt;") && !html.contains("<b>x</b>"));
        assert!(html.contains("Errors were counted in the intervals ending at 2 s (2)"));
    }

    #[test]
    fn absent_sections_leave_no_chart_behind() {
        let mut v = full_result();
        for k in ["timeline", "runs", "latency", "latency_uncorrected", "host"] {
            v.as_object_mut().unwrap().remove(k);
        }
        let mut b = v.clone();
        b["clients"] = serde_json::json!([]);
        let html = render(&[doc("a.json", v), doc("b.json", b)]).unwrap();
        for kind in [
            "percentiles",
            "latency-timeline",
            "throughput-timeline",
            "compare-latency",
        ] {
            assert!(!html.contains(&format!("data-chart=\"{kind}\"")), "{kind}");
        }
        assert!(!html.contains("id=\"distribution\""));
        assert_eq!(html.matches("data-chart=\"clients\"").count(), 1);
        assert_eq!(
            html.matches("<rect class=\"bar\" ").count(),
            2 + 2,
            "two client bars, and one comparison bar per input"
        );
        assert!(
            !html.contains("data-metric=\"p50\""),
            "no latency rows without latency"
        );
    }

    #[test]
    fn calibrations_alone_are_not_a_report() {
        let e = render(&[doc("cal.json", calibration())]).unwrap_err();
        assert!(matches!(e, Error::Usage(_)));
        assert!(e.to_string().contains("no result file") && e.to_string().contains("'cal.json'"));
    }

    #[test]
    fn bad_histograms_and_field_types_are_named() {
        let mut v = full_result();
        v["latency"]["hdr"] = "not base64!".into();
        let e = render(&[doc("a.json", v)]).unwrap_err().to_string();
        assert!(e.contains("a.json") && e.contains("latency.hdr"), "{e}");
        let mut v = full_result();
        v["clients"] = "many".into();
        let e = render(&[doc("a.json", v)]).unwrap_err().to_string();
        assert!(e.contains("a.json") && e.contains("wrong type"), "{e}");
        // Without a histogram, the summary percentiles still draw a curve (and say so).
        let mut v = full_result();
        v["latency"]["hdr"] = "".into();
        let html = render(&[doc("a.json", v)]).unwrap();
        assert!(html.contains("Drawn from the summary percentiles only"));
    }

    #[test]
    fn repeated_names_are_told_apart() {
        let a = Doc {
            path: PathBuf::from("x/r.json"),
            ..doc("r.json", full_result())
        };
        let b = Doc {
            path: PathBuf::from("y/r.json"),
            ..doc("r.json", full_result())
        };
        assert_eq!(labels(&[a.clone(), b]), ["x/r.json", "y/r.json"]);
        assert_eq!(labels(&[a.clone(), a]), ["x/r.json", "x/r.json (2)"]);
    }
}
