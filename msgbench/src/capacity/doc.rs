//! The capacity document (`msgbench.capacity/v1`, schema/capacity-v1.schema.json): every probe
//! run, the sustainable rate with its confidence interval, the first failing SLO above it, and
//! what limited the search. Also its text form and where it is written.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::judge::Outcome;
use crate::cli::SearchArgs;
use crate::error::Result;
use crate::format::{duration_ns, group};
use crate::result::{RunResult, ToolInfo, Verdict};

pub const SCHEMA: &str = "msgbench.capacity/v1";

/// Confidence of the interval given for the sustainable rate.
const LEVEL: f64 = 0.95;

#[derive(Debug, Serialize)]
pub struct Capacity {
    pub schema: &'static str,
    pub tool: ToolInfo,
    pub scenario: &'static str,
    pub run_id: String,
    pub started_at: String,
    pub interrupted: bool,
    /// The scenario's plan as typed (without rate and length, which each probe sets).
    pub plan: Value,
    pub slo: Vec<String>,
    pub probe_duration_s: f64,
    pub warmup_s: f64,
    pub probe_runs: u32,
    pub precision_pct: f64,
    /// The highest rate at which every run held every SLO; null when none did.
    pub sustainable_rate: Option<f64>,
    pub confidence: Option<Confidence>,
    /// The lowest probed rate above the sustainable one that did not hold, and why.
    pub first_failing: Option<FirstFailing>,
    pub limiter: Limiter,
    pub probes: Vec<Probe>,
    /// The search ran out of probes (`MAX_PROBED_RATES`) rather than ending.
    #[serde(skip)]
    pub stopped_at_limit: bool,
}

#[derive(Debug, Serialize)]
pub struct Confidence {
    pub level: f64,
    pub low: f64,
    pub high: f64,
    /// Each run's own capacity: the highest rate it held with every rate below held too.
    pub per_run: Vec<f64>,
}

#[derive(Debug, Serialize)]
pub struct FirstFailing {
    pub rate: f64,
    /// The SLOs that failed there (in some run).
    pub slo: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Limiter {
    /// slo, tool, subscriber, server, or none (the top of the range held).
    pub kind: &'static str,
    pub detail: String,
}

#[derive(Debug, Serialize)]
pub struct ProbeLatency {
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
}

/// One run at one rate.
#[derive(Debug, Serialize)]
pub struct Probe {
    pub rate: f64,
    pub run: u32,
    /// The tool kept its schedule and every SLO held.
    pub pass: bool,
    pub tool_kept_schedule: bool,
    /// Achieved in the judged part; null when it could not be measured.
    pub msgs_per_sec: Option<f64>,
    /// Of the whole probe, against its target; null when too little was sent to time it.
    pub shortfall_pct: Option<f64>,
    pub latency: Option<ProbeLatency>,
    /// Null where the scenario cannot tell (nothing stamped).
    pub lost: Option<u64>,
    pub errors: u64,
    pub verdicts: Vec<Verdict>,
}

impl Probe {
    pub fn new(
        rate: f64,
        run: u32,
        view: &Value,
        r: &RunResult,
        kept: bool,
        held_back: bool,
        verdicts: Vec<Verdict>,
    ) -> Self {
        let at = |p: &str| view.pointer(p).and_then(Value::as_u64);
        let latency = match (
            at("/latency/percentiles_ns/50"),
            at("/latency/percentiles_ns/99"),
            at("/latency/percentiles_ns/99.9"),
        ) {
            (Some(p50_ns), Some(p99_ns), Some(p999_ns)) => Some(ProbeLatency {
                p50_ns,
                p99_ns,
                p999_ns,
            }),
            _ => None,
        };
        Probe {
            rate,
            run,
            pass: kept && !held_back && verdicts.iter().all(|v| v.pass),
            tool_kept_schedule: kept,
            msgs_per_sec: view
                .pointer("/throughput/msgs_per_sec")
                .and_then(Value::as_f64),
            shortfall_pct: r.pacing.as_ref().and_then(|p| p.shortfall_pct),
            latency,
            lost: at("/delivery/lost"),
            errors: r.errors.values().sum(),
            verdicts,
        }
    }

    /// The progress line printed when the run ends.
    pub fn line(&self, runs: u32) -> String {
        let verdict = match (self.tool_kept_schedule, self.pass) {
            (false, _) => "TOOL: msgbench fell behind its schedule".to_string(),
            (true, true) => "held".to_string(),
            (true, false) if self.verdicts.iter().all(|v| v.pass) => {
                "held back: the publishers could not send at the rate".to_string()
            }
            (true, false) => {
                let failed: Vec<&str> = self
                    .verdicts
                    .iter()
                    .filter(|v| !v.pass)
                    .map(|v| v.expr.as_str())
                    .collect();
                format!("failed {}", failed.join(", "))
            }
        };
        let lat = self.latency.as_ref().map_or(String::new(), |l| {
            format!(
                "  p50 {}  p99 {}",
                duration_ns(l.p50_ns as f64),
                duration_ns(l.p99_ns as f64)
            )
        });
        format!(
            "  {:>10}/s  run {}/{runs}  achieved {}/s{lat}  {verdict}",
            group(self.rate.round() as u64),
            self.run,
            self.msgs_per_sec
                .map_or_else(|| "—".into(), |r| group(r.round() as u64)),
        )
    }
}

impl Capacity {
    pub fn new(
        scenario: &'static str,
        started_at: String,
        s: &SearchArgs,
        plan: Value,
        tool: ToolInfo,
    ) -> Self {
        let mut plan = plan;
        super::remove_search_keys(&mut plan);
        Capacity {
            schema: SCHEMA,
            tool,
            scenario,
            run_id: format!(
                "{}-capacity-{:04x}",
                started_at.replace([':', '-'], ""),
                crate::wire::stamp::new_run_tag()
            ),
            started_at,
            interrupted: false,
            plan,
            slo: s.slo.iter().map(ToString::to_string).collect(),
            probe_duration_s: s.probe_duration.as_secs_f64(),
            warmup_s: s.probe_warmup.as_secs_f64(),
            probe_runs: s.probe_runs,
            precision_pct: s.precision,
            sustainable_rate: None,
            confidence: None,
            first_failing: None,
            limiter: Limiter {
                kind: "none",
                detail: String::new(),
            },
            probes: Vec::new(),
            stopped_at_limit: false,
        }
    }

    /// Fills in the verdict once the search has ended: `held` is the highest rate every run
    /// held, `broke` the lowest above it that did not, with why.
    pub fn conclude(
        &mut self,
        held: Option<f64>,
        broke: Option<(f64, Outcome)>,
        s: &SearchArgs,
        interrupted: bool,
    ) {
        self.interrupted = interrupted;
        self.sustainable_rate = held;
        self.limiter = match (&broke, held) {
            (Some((_, why)), _) => Limiter {
                kind: why.kind(),
                detail: why.detail().to_string(),
            },
            (None, _) if interrupted => Limiter {
                kind: "none",
                detail: "interrupted before the search ended".into(),
            },
            (None, Some(_)) if self.stopped_at_limit => Limiter {
                kind: "none",
                detail: "the search used up its probes before the bracket was narrow enough".into(),
            },
            (None, Some(h)) => Limiter {
                kind: "none",
                detail: format!(
                    "every probe held up to --max-rate {}/s",
                    group(h.round() as u64)
                ),
            },
            (None, None) => Limiter {
                kind: "none",
                detail: "no probe ran".into(),
            },
        };
        if let Some((rate, _)) = &broke {
            let mut slo: Vec<String> = Vec::new();
            for p in self.probes.iter().filter(|p| p.rate == *rate) {
                for v in p.verdicts.iter().filter(|v| !v.pass) {
                    if !slo.contains(&v.expr) {
                        slo.push(v.expr.clone());
                    }
                }
            }
            self.first_failing = Some(FirstFailing { rate: *rate, slo });
        }
        let Some(held) = held else { return };
        // Each run's own capacity; the interval is Student's t over them, and never narrower
        // than the bracket the search ended with (the rates between were not probed).
        let per_run: Vec<f64> = (1..=s.probe_runs)
            .filter_map(|run| self.run_capacity(run))
            .collect();
        let top = broke.as_ref().map_or(held, |(r, _)| *r);
        let (lo, hi) =
            crate::stats::significance::mean_interval(&per_run, LEVEL).unwrap_or((held, top));
        self.confidence = Some(Confidence {
            level: LEVEL,
            low: lo.min(held).max(0.0),
            high: hi.max(top),
            per_run,
        });
    }

    /// The highest probed rate run `run` held with every lower probed rate held too.
    fn run_capacity(&self, run: u32) -> Option<f64> {
        let mut mine: Vec<&Probe> = self.probes.iter().filter(|p| p.run == run).collect();
        mine.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        let mut best = None;
        for p in mine {
            if !p.pass {
                break;
            }
            best = Some(p.rate);
        }
        best
    }

    /// The summary printed at the end.
    pub fn text(&self) -> String {
        let mut o = String::new();
        let rate = |r: f64| group(r.round() as u64);
        match self.sustainable_rate {
            Some(r) => {
                let _ = write!(o, "Sustainable: {}/s", rate(r));
                if let Some(c) = &self.confidence {
                    let _ = write!(
                        o,
                        " ({:.0}% interval {}–{}/s, from each run's own capacity {})",
                        c.level * 100.0,
                        rate(c.low),
                        rate(c.high),
                        c.per_run
                            .iter()
                            .map(|r| rate(*r))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                let _ = writeln!(o);
            }
            None => {
                let _ = writeln!(o, "Sustainable: none of the probed rates held the SLO");
            }
        }
        if let Some(f) = &self.first_failing {
            let failed = if f.slo.is_empty() {
                " (no SLO failed there: see what limited it)".to_string()
            } else {
                format!(": {}", f.slo.join(", "))
            };
            let _ = writeln!(o, "First failing rate: {}/s{failed}", rate(f.rate));
        }
        let _ = writeln!(
            o,
            "Limited by: {} — {}",
            self.limiter.kind, self.limiter.detail
        );
        if self.interrupted {
            let _ = writeln!(o, "Interrupted: the search did not finish.");
        }
        o
    }
}

/// Writes the document to `--json` (`-` is stdout); nothing without it. A file that cannot be
/// written at the end is saved elsewhere rather than lost.
pub fn write(doc: &Capacity, json: Option<&Path>) -> Result<()> {
    let Some(path) = json else { return Ok(()) };
    let mut bytes = serde_json::to_vec_pretty(doc).expect("the capacity document serialises");
    bytes.push(b'\n');
    crate::output::write::save(path, &bytes, "--json")
}
