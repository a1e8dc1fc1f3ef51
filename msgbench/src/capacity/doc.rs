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
use crate::format::{duration_ns, group, sig};
use crate::result::{RunResult, ToolInfo, Verdict};
use crate::stats::server::limit::Limit;

pub const SCHEMA: &str = "msgbench.capacity/v1";

/// Confidence of the interval given for the sustainable rate.
pub(super) const LEVEL: f64 = 0.95;

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
    /// The run measured msgbench, not the system: it fell behind its schedule and failed no SLO
    /// on figures its lateness cannot explain. A void run counts neither as held nor as failed,
    /// and is run again.
    pub void: bool,
    /// Achieved in the judged part; null when it could not be measured.
    pub msgs_per_sec: Option<f64>,
    /// Of the whole probe, against its target; null when too little was sent to time it.
    pub shortfall_pct: Option<f64>,
    pub latency: Option<ProbeLatency>,
    /// Null where the scenario cannot tell (nothing stamped).
    pub lost: Option<u64>,
    pub errors: u64,
    pub verdicts: Vec<Verdict>,
    /// What bounded the run, by the rule every run is judged by, with the SLOs it failed
    /// taken in (docs/server-side.md); absent for a run on agents, which is not judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<Limit>,
    /// On agents: each agent's share of the run; absent on one host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<ProbeAgent>>,
}

/// One agent's share of a probe run.
#[derive(Debug, Serialize)]
pub struct ProbeAgent {
    pub name: String,
    /// complete, missing or failed.
    pub status: crate::result::AgentStatus,
    pub pubs: u32,
    pub subs: u32,
    /// What its publishers sent over the whole probe; null without a result from it.
    pub sent: Option<u64>,
    /// What its subscribers received (or its requesters had answered); null likewise, or
    /// where it receives nothing.
    pub received: Option<u64>,
}

/// The SLOs a run failed, in words (`p99<5ms failed at 40,000/s`); `None` when it failed
/// none.
fn failed_slo(verdicts: &[Verdict], rate: f64) -> Option<String> {
    let failed: Vec<&str> = verdicts
        .iter()
        .filter(|v| !v.pass)
        .map(|v| v.expr.as_str())
        .collect();
    (!failed.is_empty()).then(|| {
        format!(
            "{} failed at {}/s",
            failed.join(", "),
            group(rate.round() as u64)
        )
    })
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
            // Until judged: a late run is void unless its failure is the system's.
            void: !kept,
            msgs_per_sec: view
                .pointer("/throughput/msgs_per_sec")
                .and_then(Value::as_f64),
            shortfall_pct: r.pacing.as_ref().and_then(|p| p.shortfall_pct),
            latency,
            lost: at("/delivery/lost"),
            errors: r.errors.values().sum(),
            limit: crate::session::limit::of_probe(r, failed_slo(&verdicts, rate)),
            verdicts,
            agents: r.agents.as_ref().map(|a| {
                a.agents
                    .iter()
                    .map(|e| {
                        let msgs = |role: &str| {
                            e.result
                                .as_ref()?
                                .pointer(&format!("/by_role/{role}/msgs"))?
                                .as_u64()
                        };
                        ProbeAgent {
                            name: e.name.clone(),
                            status: e.status,
                            pubs: e.pubs,
                            subs: e.subs,
                            sent: msgs("pub"),
                            received: msgs("sub"),
                        }
                    })
                    .collect()
            }),
        }
    }

    /// Whether the run measured msgbench, not the system: void (neither a pass nor an SLO
    /// failure). See [`Probe::void`]'s field.
    pub fn void(&self) -> bool {
        self.void
    }

    /// The progress line printed when the run ends: which run of the rate it was (and, for a
    /// repeat, that it is one and why), what it measured, and its verdict; for a void run,
    /// what happens next.
    pub fn line(&self, runs: u32, attempt: Attempt) -> String {
        let failed = || {
            let failed: Vec<&str> = self
                .verdicts
                .iter()
                .filter(|v| !v.pass)
                .map(|v| v.expr.as_str())
                .collect();
            failed.join(", ")
        };
        let verdict = if self.void {
            let next = if attempt.retry < attempt.of {
                format!(
                    "running it again (retry {} of {})",
                    attempt.retry + 1,
                    attempt.of
                )
            } else {
                "no retries left, so the rate is put down to the tool".to_string()
            };
            format!(
                "TOOL: msgbench fell behind its schedule, so this run measured the tool; {next}"
            )
        } else if self.pass {
            "held".to_string()
        } else if !self.tool_kept_schedule {
            format!(
                "failed {}, which msgbench's own late sends cannot explain",
                failed()
            )
        } else if self.verdicts.iter().all(|v| v.pass) {
            "held back: the publishers could not send at the rate".to_string()
        } else {
            format!("failed {}", failed())
        };
        let lat = self.latency.as_ref().map_or(String::new(), |l| {
            format!(
                "  p50 {}  p99 {}",
                duration_ns(l.p50_ns as f64),
                duration_ns(l.p99_ns as f64)
            )
        });
        let again = if attempt.retry == 0 {
            String::new()
        } else {
            format!(" again (retry {} of {})", attempt.retry, attempt.of)
        };
        format!(
            "  {:>10}/s  run {}/{runs}{again}  achieved {}/s{lat}  {verdict}",
            group(self.rate.round() as u64),
            self.run,
            self.msgs_per_sec
                .map_or_else(|| "—".into(), |r| group(r.round() as u64)),
        )
    }
}

/// Which try of a run a probe is: the first (`retry` 0) or a repeat of a void one, of at most
/// `of` repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    pub retry: u32,
    pub of: u32,
}

impl Attempt {
    pub fn new(retry: u32, of: u32) -> Self {
        Self { retry, of }
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
        without_search_keys(&mut plan);
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

    /// What bounded the first run at the first failing rate that failed (not a void one), by
    /// the rule every run is judged by: whether a resource was at its limit when the SLO
    /// failed, or none was.
    pub fn failing_limit(&self) -> Option<&Limit> {
        let rate = self.first_failing.as_ref()?.rate;
        self.probes
            .iter()
            .filter(|p| p.rate == rate && !p.pass && !p.void())
            .find_map(|p| p.limit.as_ref())
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
            // A void run's verdicts measured the tool: they are not the system's SLO failing.
            let mut slo: Vec<String> = Vec::new();
            for p in self.probes.iter().filter(|p| p.rate == *rate && !p.void()) {
                for v in p.verdicts.iter().filter(|v| !v.pass) {
                    if !slo.contains(&v.expr) {
                        slo.push(v.expr.clone());
                    }
                }
            }
            self.first_failing = Some(FirstFailing { rate: *rate, slo });
        }
        let Some(held) = held else { return };
        // Each run's own capacity is known only to lie between the highest rate it held and
        // the lowest above that it failed (the rates between were not probed): taken as
        // uniform there, its midpoint and variance enter Student's t over the runs. The
        // interval is never narrower than the bracket the search ended with.
        let brackets: Vec<(f64, f64)> = (1..=s.probe_runs)
            .filter_map(|run| self.run_capacity(run))
            .collect();
        let per_run: Vec<f64> = brackets.iter().map(|(held, _)| *held).collect();
        let top = broke.as_ref().map_or(held, |(r, _)| *r);
        let (lo, hi) = interval(&brackets).unwrap_or((held, top));
        self.confidence = Some(Confidence {
            level: LEVEL,
            low: lo.min(held).max(0.0),
            high: hi.max(top),
            per_run,
        });
    }

    /// Run `run`'s capacity as a bracket ([`run_bracket`]).
    fn run_capacity(&self, run: u32) -> Option<(f64, f64)> {
        run_bracket(self.probes.iter().map(|p| (p.rate, p.run, p.pass)), run)
    }

    /// Void runs that were run again, and void runs that were a run's last try (which put
    /// their rate down to the tool). A run's tries share its rate and number, so a void probe
    /// with a later one of the same rate and run was repeated.
    pub fn retries(&self) -> (usize, usize) {
        let (mut again, mut last) = (0, 0);
        for (i, p) in self.probes.iter().enumerate() {
            if !p.void() {
                continue;
            }
            let repeated = self.probes[i + 1..]
                .iter()
                .any(|q| q.rate == p.rate && q.run == p.run);
            if repeated {
                again += 1;
            } else {
                last += 1;
            }
        }
        (again, last)
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
                        " ({} % interval {}–{}/s, from each run's own capacity {})",
                        sig(c.level * 100.0, 3, true),
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
        if let Some(l) = self.failing_limit() {
            let _ = writeln!(o, "  what bounded its run there: {}", l.text);
        }
        let (again, last) = self.retries();
        if again + last > 0 {
            let runs = |n: usize| if n == 1 { "run" } else { "runs" };
            let _ = write!(
                o,
                "Retries: {again} {} run again after msgbench fell behind its schedule (such \
                 a run measured the tool, not the system; each run gets up to {} retries)",
                if again == 1 { "run was" } else { "runs were" },
                super::TOOL_RETRIES
            );
            if last > 0 {
                let _ = write!(
                    o,
                    "; {last} {} fell behind in every try, which put the rate down to the tool",
                    runs(last)
                );
            }
            let _ = writeln!(o);
        }
        if self.interrupted {
            let _ = writeln!(o, "Interrupted: the search did not finish.");
        }
        o
    }
}

/// Run `run`'s capacity as a bracket, from every probe's (value, run, pass): the highest probed
/// value it held with every lower probed value held too, and the lowest probed value above that
/// it did not hold (the same value when it held every one). A run repeated because the tool fell
/// behind counts by its last attempt.
pub(super) fn run_bracket(
    probes: impl Iterator<Item = (f64, u32, bool)>,
    run: u32,
) -> Option<(f64, f64)> {
    let mut last: Vec<(f64, bool)> = Vec::new();
    for (at, _, pass) in probes.filter(|p| p.1 == run) {
        match last.iter_mut().find(|q| q.0 == at) {
            Some(q) => q.1 = pass,
            None => last.push((at, pass)),
        }
    }
    last.sort_by(|a, b| a.0.total_cmp(&b.0));
    let first_fail = last.iter().position(|p| !p.1).unwrap_or(last.len());
    let held = last[..first_fail].last()?.0;
    let above = last.get(first_fail).map_or(held, |p| p.0);
    Some((held, above))
}

/// The `LEVEL` interval of the mean capacity from each run's bracket: Student's t over the
/// brackets' midpoints, with each bracket's own spread (a uniform's, width²/12) added to the
/// runs' variance. `None` with fewer than two runs.
pub(super) fn interval(brackets: &[(f64, f64)]) -> Option<(f64, f64)> {
    if brackets.len() < 2 {
        return None;
    }
    let n = brackets.len() as f64;
    let mids: Vec<f64> = brackets.iter().map(|(a, b)| (a + b) / 2.0).collect();
    let mean = mids.iter().sum::<f64>() / n;
    let spread = mids.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let within = brackets
        .iter()
        .map(|(a, b)| (b - a).powi(2) / 12.0)
        .sum::<f64>()
        / n;
    let half = crate::stats::significance::t_quantile(n - 1.0, 0.5 + LEVEL / 2.0)
        * ((spread + within) / n).sqrt();
    Some((mean - half, mean + half))
}

/// Writes the document to `--json` (`-` is stdout); nothing without it. A file that cannot be
/// written at the end is saved elsewhere rather than lost.
pub fn write(doc: &Capacity, json: Option<&Path>) -> Result<()> {
    let Some(path) = json else { return Ok(()) };
    crate::output::write::save(path, &bytes(doc), "--json")
}

/// The document as `--json` writes it (and `--web` offers it).
pub fn bytes(doc: &Capacity) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(doc).expect("the capacity document serialises");
    bytes.push(b'\n');
    bytes
}

/// A plan document without the keys a probe sets, at its top and in its `load` group: the
/// document shows the plan as typed, and these hold only defaults the search does not read.
fn without_search_keys(doc: &mut Value) {
    if let Some(obj) = doc.as_object_mut() {
        for key in super::SET_BY_SEARCH {
            obj.remove(key);
        }
        if let Some(load) = obj.get_mut("load").and_then(Value::as_object_mut) {
            for key in super::SET_BY_SEARCH {
                load.remove(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(runs: u32) -> SearchArgs {
        SearchArgs {
            slo: vec![crate::gate::parse("p99<5ms").unwrap()],
            probe_duration: std::time::Duration::from_secs(1),
            probe_warmup: std::time::Duration::from_millis(200),
            probe_runs: runs,
            start_rate: 2000.0,
            max_rate: 5e6,
            precision: 5.0,
        }
    }

    /// A probe run: `kept` whether the tool kept its schedule, `p99_ms` against `p99<5ms`.
    fn probe(rate: f64, run: u32, kept: bool, p99_ms: f64) -> Probe {
        let held = p99_ms < 5.0;
        Probe {
            rate,
            run,
            pass: kept && held,
            tool_kept_schedule: kept,
            void: !kept,
            msgs_per_sec: Some(rate),
            shortfall_pct: Some(0.000_002_47),
            latency: Some(ProbeLatency {
                p50_ns: 80_000,
                p99_ns: (p99_ms * 1e6) as u64,
                p999_ns: (p99_ms * 1.2e6) as u64,
            }),
            lost: Some(0),
            errors: 0,
            verdicts: vec![Verdict {
                expr: "p99<5ms".into(),
                measured: Some(p99_ms * 1e6),
                pass: held,
                why: None,
                latency: true,
            }],
            limit: None,
            agents: None,
        }
    }

    #[test]
    fn a_repeated_run_says_it_is_one_and_why() {
        let first = probe(4000.0, 1, false, 9.0).line(3, Attempt::new(0, 2));
        assert!(
            first.starts_with("       4,000/s  run 1/3  achieved 4,000/s"),
            "{first}"
        );
        assert!(
            first.ends_with(
                "TOOL: msgbench fell behind its schedule, so this run measured the tool; \
                 running it again (retry 1 of 2)"
            ),
            "{first}"
        );
        let second = probe(4000.0, 1, true, 1.0).line(3, Attempt::new(1, 2));
        assert!(
            second.contains("run 1/3 again (retry 1 of 2)  achieved 4,000/s")
                && second.ends_with("held"),
            "{second}"
        );
        let last = probe(4000.0, 1, false, 1.0).line(3, Attempt::new(2, 2));
        assert!(last.contains("run 1/3 again (retry 2 of 2)"), "{last}");
        assert!(
            last.ends_with("no retries left, so the rate is put down to the tool"),
            "{last}"
        );
    }

    #[test]
    fn the_summary_counts_retries_and_a_void_run_fails_no_slo() {
        let s = search(2);
        let mut doc = Capacity::new(
            "latency",
            "2026-11-26T14:45:19Z".into(),
            &s,
            Value::Null,
            ToolInfo::default(),
        );
        doc.probes = vec![
            probe(2000.0, 1, true, 1.0),
            probe(2000.0, 2, true, 1.0),
            // Run 1 at 4,000/s missed its schedule (and its latency, of the tool, broke the
            // SLO), then held; run 2 held.
            probe(4000.0, 1, false, 9.0),
            probe(4000.0, 1, true, 1.0),
            probe(4000.0, 2, true, 1.0),
            // At 8,000/s run 1 fell behind in all three tries.
            probe(8000.0, 1, false, 9.0),
            probe(8000.0, 1, false, 9.0),
            probe(8000.0, 1, false, 9.0),
        ];
        assert_eq!(doc.retries(), (3, 1));
        let why = Outcome::Tool("msgbench could not keep its schedule at 8,000/s".into());
        doc.conclude(Some(4000.0), Some((8000.0, why)), &s, false);
        let f = doc.first_failing.as_ref().unwrap();
        assert_eq!(
            (f.rate, f.slo.len()),
            (8000.0, 0),
            "the tool's runs failed no SLO"
        );
        let text = doc.text();
        assert!(
            text.contains("First failing rate: 8,000/s (no SLO failed there"),
            "{text}"
        );
        assert!(
            text.contains(
                "Retries: 3 runs were run again after msgbench fell behind its schedule (such a \
                 run measured the tool, not the system; each run gets up to 2 retries); 1 run \
                 fell behind in every try, which put the rate down to the tool\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("Sustainable: 4,000/s (95 % interval "),
            "{text}"
        );
        // Without void runs, no line about retries.
        doc.probes.retain(|p| !p.void());
        assert_eq!(doc.retries(), (0, 0));
        assert!(!doc.text().contains("Retries"));
    }

    #[test]
    fn the_interval_counts_the_runs_spread_and_each_runs_bracket() {
        // Two runs both between 10 and 12: no spread between them, but each is only known to
        // a bracket of width 2 (variance 4/12): half-width t(0.975, 1) × sqrt((4/12) / 2).
        let (lo, hi) = interval(&[(10.0, 12.0), (10.0, 12.0)]).unwrap();
        let half = 12.706_204_736 * (4.0f64 / 12.0 / 2.0).sqrt();
        assert!((lo - (11.0 - half)).abs() < 1e-6 && (hi - (11.0 + half)).abs() < 1e-6);
        // Three runs at 10, 11 and 12 exactly (brackets of no width): the runs' spread alone.
        let (lo, hi) = interval(&[(10.0, 10.0), (11.0, 11.0), (12.0, 12.0)]).unwrap();
        let half = 4.302_652_730 * (1.0f64 / 3.0).sqrt();
        assert!((lo - (11.0 - half)).abs() < 1e-6 && (hi - (11.0 + half)).abs() < 1e-6);
        assert_eq!(interval(&[(5.0, 6.0)]), None);
    }
}
