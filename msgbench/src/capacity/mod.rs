//! `msgbench capacity <scenario> … --slo 'p99<5ms'`: the highest rate a scenario sustains while
//! every SLO holds. The rate doubles from `--start-rate` until a probe fails, then the bracket
//! between the highest rate that held and the lowest that did not is halved until it is
//! `--precision` wide. Each probe is the scenario's own plan run `--probe-runs` times with the
//! schedule `RATE@WARMUP,RATE@HOLD`, judged on the hold stage alone; a rate holds only when every
//! run held it.
//!
//! A probe at which msgbench itself could not keep its schedule (the achieved rate fell short
//! or sends went out late while the socket was taking them: the tool did not run, the system
//! was not the limit) never counts as a pass, and a search that ends there names the tool as
//! the limit. Every probe's figures are in the document, so nothing measured is lost.
//!
//! With `--agents N` each probe run is a run on the agents (the fleet is found once, before
//! the first probe): the rate is the aggregate they share, and each probe's entry in the
//! document lists every agent's share.
//!
//! Such a run is void rather than failed, and it is run again, up to [`TOOL_RETRIES`] times:
//! on a shared machine a moment's scheduling hiccup can make the tool miss its schedule once,
//! and that says nothing about the system. A run that stays void after its retries puts the
//! rate down to the tool. The progress line of each repeat says it is one and why, and the
//! summary counts them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use crate::cli::SearchArgs;
use crate::error::{exit, Error, Result};
use crate::plan::Plan;
use crate::result::{RunResult, ToolInfo, Verdict};
use crate::session::{Local, Runner, Showing, Sinks};

mod doc;
mod judge;
pub mod mix;

use doc::{Attempt, Capacity, Probe};
use judge::{classify, hold_view, Outcome};

/// What a probe sets, by flag id: its rate, its length and latency's warm-up. Typing one is
/// refused as the command line is read (it would be replaced), and the document's plan leaves
/// them out.
pub(crate) const SET_BY_SEARCH: [&str; 7] = [
    "rate",
    "rate_schedule",
    "msgs",
    "duration",
    "requests",
    "total",
    "warmup",
];

/// A search probes this many rates at most (the doubling from 1/s to 5M/s is 23, and the
/// bisection to 5 % about 5 more): it always ends by itself.
const MAX_PROBED_RATES: usize = 40;

/// Runs again, at most, a run in which the tool could not keep its schedule: a scheduling
/// hiccup of the machine should not end a search, a tool that cannot keep up should.
const TOOL_RETRIES: u32 = 2;

/// Runs the search and writes its document.
///
/// # Errors
/// A bad flag or plan, no server, or a destination that cannot be written, before any load;
/// a probe that cannot run at all (not one that fails its SLO) after.
pub fn run(plan: Plan, search: SearchArgs, stop: &AtomicBool) -> Result<u8> {
    let (json, first) = preflight(&plan, &search)?;
    if let Some(path) = &json {
        crate::output::dest::check("--json", path)?;
    }
    // Bound before any server is started or connected to: a port in use refuses the search.
    let sinks = Sinks::open(plan.out(), &search.slo)?;
    // On agents, the fleet is found once; else the servers are started once, for every probe.
    let runner: Box<dyn Runner> = if plan.out().distributed() {
        let probe = probe_plan(&plan, search.start_rate, &search)?;
        Box::new(crate::dist::fleet::Fleet::find(&probe)?)
    } else {
        Box::new(Local::resolve(&plan, &first)?)
    };
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let doc = Capacity::new(
        plan.name(),
        started_at,
        &search,
        plan.recorded(),
        ToolInfo::default(),
    );
    eprintln!(
        "msgbench capacity {}: SLO {}; each rate {} × ({} warm-up + {} judged)",
        plan.name(),
        doc.slo.join(", "),
        search.probe_runs,
        crate::values::ser::text(search.probe_warmup),
        crate::values::ser::text(search.probe_duration),
    );
    let mut s = Search {
        base: plan,
        search,
        runner: runner.as_ref(),
        sinks: &sinks,
        stop,
        doc,
    };
    let (held, broke) = s.bracket();
    let Search {
        base, search, doc, ..
    } = s;
    let mut doc = doc;
    doc.conclude(held, broke, &search, stop.load(Ordering::Relaxed));
    if let Some(w) = &sinks.web {
        show_knee(&sinks, &doc, base.name());
        w.finish_search(doc::bytes(&doc), doc.text(), &doc.run_id);
    }
    // With the document on standard output, the summary goes to standard error.
    if json.as_deref() == Some(std::path::Path::new("-")) {
        eprint!("{}", doc.text());
    } else {
        print!("{}", doc.text());
    }
    doc::write(&doc, json.as_deref())?;
    // Judged before --web-linger's wait: Ctrl-C ending the wait does not interrupt the search.
    let code = if stop.load(Ordering::Relaxed) {
        exit::INTERRUPTED
    } else if doc.sustainable_rate.is_some() {
        exit::OK
    } else {
        exit::THRESHOLD
    };
    sinks.linger(base.out(), stop);
    Ok(code)
}

/// A search under way: the plan it probes, where each probe runs and is shown, and the
/// document its probes are added to.
struct Search<'a> {
    base: Plan,
    search: SearchArgs,
    runner: &'a dyn Runner,
    sinks: &'a Sinks,
    stop: &'a AtomicBool,
    doc: Capacity,
}

/// Each probe that ends adds its point to the live page's knee chart.
fn show_knee(sinks: &Sinks, doc: &Capacity, label: &str) {
    if let Some(w) = &sinks.web {
        let value = serde_json::to_value(doc).expect("the capacity document serialises");
        w.show_knee(&value, label, doc.probes.len());
    }
}

/// Where a search walks: from `start`, doubling up to `max`, then halving the bracket down to
/// `precision` percent. Rates are probed at whole numbers from 100/s up (`whole`); a mix's
/// scale factors are not rounded.
pub(crate) struct Walk {
    pub start: f64,
    pub max: f64,
    pub precision: f64,
    pub whole: bool,
}

impl Walk {
    /// Doubling until a probe fails or the top of the range, then a bisection of the bracket,
    /// down to the precision, or to neighbouring values a probe can tell apart. Returns the
    /// highest value that held, the lowest that did not with why, and whether the walk ran
    /// out of probes ([`MAX_PROBED_RATES`]) first.
    pub fn run(
        &self,
        stop: &AtomicBool,
        probe: &mut dyn FnMut(f64) -> Outcome,
    ) -> (Option<f64>, Option<(f64, Outcome)>, bool) {
        let (mut held, mut broke): (Option<f64>, Option<(f64, Outcome)>) = (None, None);
        let mut at = self.start;
        let mut probed = 0;
        while probed < MAX_PROBED_RATES && !stop.load(Ordering::Relaxed) {
            let out = probe(at);
            probed += 1;
            match out {
                Outcome::Held => {
                    held = Some(at);
                    if at >= self.max {
                        break;
                    }
                    at = (at * 2.0).min(self.max);
                }
                Outcome::Unknown => break,
                failed => {
                    broke = Some((at, failed));
                    break;
                }
            }
        }
        while let (Some(lo), Some((hi, _))) = (held, broke.as_ref()) {
            let hi = *hi;
            if (hi - lo) / lo * 100.0 <= self.precision
                || probed >= MAX_PROBED_RATES
                || stop.load(Ordering::Relaxed)
            {
                break;
            }
            let mut mid = (lo + hi) / 2.0;
            if self.whole && mid >= 100.0 {
                mid = mid.round();
            }
            if mid <= lo || mid >= hi {
                break;
            }
            let out = probe(mid);
            probed += 1;
            match out {
                Outcome::Held => held = Some(mid),
                Outcome::Unknown => break,
                failed => broke = Some((mid, failed)),
            }
        }
        (held, broke, probed >= MAX_PROBED_RATES)
    }
}

impl Search<'_> {
    /// The search over rates ([`Walk::run`]).
    fn bracket(&mut self) -> (Option<f64>, Option<(f64, Outcome)>) {
        let walk = Walk {
            start: self.search.start_rate,
            max: self.search.max_rate,
            precision: self.search.precision,
            whole: true,
        };
        let stop = self.stop;
        let (held, broke, at_limit) = walk.run(stop, &mut |rate| self.probe_at(rate));
        self.doc.stopped_at_limit = at_limit;
        (held, broke)
    }

    /// One rate: its runs, back to back. A run the tool could not drive measured nothing about
    /// the system, so it is run again (twice at most) before the rate is put down to the tool.
    /// A probe that cannot run at all ends the search as a failure of that rate: what was
    /// measured before it is kept.
    fn probe_at(&mut self, rate: f64) -> Outcome {
        let (probe, validated) = match probe_plan(&self.base, rate, &self.search)
            .and_then(|p| Ok((p.validate()?, p)))
        {
            Ok((v, p)) => (p, v),
            Err(e) => return Outcome::Server(format!("the probe at {rate}/s could not run: {e}")),
        };
        let runs = self.search.probe_runs;
        let mut outcomes = Vec::new();
        for k in 1..=runs {
            let mut retry = 0;
            loop {
                // Interrupted: the rate's runs are not all in, so nothing is known about it.
                if self.stop.load(Ordering::Relaxed) {
                    return Outcome::Unknown;
                }
                let showing = Showing::Probe { rate, k, n: runs };
                let r = self
                    .runner
                    .once(&probe, &validated, self.sinks, showing, self.stop);
                let out = match self.judge(r, rate, k, retry) {
                    Ok(out) => out,
                    Err(out) => return out,
                };
                if matches!(out, Outcome::Tool(_)) && retry < TOOL_RETRIES {
                    retry += 1;
                    continue;
                }
                outcomes.push(out);
                break;
            }
        }
        Outcome::worst(&outcomes)
    }

    /// Judges run `k` of a probe at `rate` and adds it to the document; `Err` ends the probe
    /// (a stop, a run that could not run, a lost agent).
    fn judge(
        &mut self,
        r: Result<RunResult>,
        rate: f64,
        k: u32,
        retry: u32,
    ) -> std::result::Result<Outcome, Outcome> {
        // A run cut short says nothing about the rate, whatever it came to: the interrupt can
        // land after the run's own check (a short run judged as late, or an error from a
        // connection closed under it), so the flag decides.
        if self.stop.load(Ordering::Relaxed) {
            return Err(Outcome::Unknown);
        }
        let r = match r {
            Ok(r) if r.interrupted => return Err(Outcome::Unknown),
            Ok(r) => r,
            Err(e) => {
                return Err(Outcome::Server(format!(
                    "the probe at {rate}/s failed: {e}"
                )))
            }
        };
        // An agent that sent nothing leaves the probe's figures partial: the search cannot go
        // on without it.
        if let Some(gone) = r.agents.as_ref().filter(|a| !a.missing.is_empty()) {
            self.doc.probes.push(judge_probe(&r, rate, k, &self.search));
            show_knee(self.sinks, &self.doc, self.base.name());
            return Err(Outcome::Server(format!(
                "the probe at {rate}/s lost agent {}",
                gone.missing.join(", ")
            )));
        }
        let mut probe = judge_probe(&r, rate, k, &self.search);
        let out = classify(&r, &probe, &self.search.slo);
        probe.void = matches!(out, Outcome::Tool(_));
        // --no-progress leaves out the line each probe run prints as it ends.
        if !self.base.out().no_progress {
            eprintln!(
                "{}",
                probe.line(self.search.probe_runs, Attempt::new(retry, TOOL_RETRIES))
            );
        }
        self.doc.probes.push(probe);
        show_knee(self.sinks, &self.doc, self.base.name());
        Ok(out)
    }
}

/// Every check a search makes before anything starts, in the order the run makes them: the
/// search's own flags, the output flags it refuses, and one probe plan (so every flag is
/// checked as a probe will use it, `--allow-loss` included). Returns where the document goes
/// and that probe.
///
/// # Errors
/// The first flag that cannot work, named in one line.
pub fn preflight(
    plan: &Plan,
    search: &SearchArgs,
) -> Result<(Option<std::path::PathBuf>, crate::plan::Validated)> {
    check_search(search)?;
    {
        use crate::session::refusals::{check, Mode};
        check(plan.out(), Mode::Capacity)?;
        // And as each probe runs: here, or on agents.
        let here = if plan.out().distributed() {
            Mode::Agents
        } else {
            Mode::Here
        };
        check(plan.out(), here)?;
    }
    crate::output::dest::one_run_here(
        plan,
        Some("a search runs a probe per rate and would leave only the last one's".into()),
    )?;
    let json = plan.out().json.clone();
    let first = probe_plan(plan, search.start_rate, search)?.validate()?;
    if first.common().allow_loss {
        return Err(Error::Usage(
            "--allow-loss does not apply to a search: loss fails a rate only through an SLO \
             such as --slo 'lost==0'"
                .into(),
        ));
    }
    first.gates("--slo", &search.slo)?;
    if plan.out().distributed() {
        // Every flag of a run on agents, as each probe will be one.
        crate::dist::fleet::preflight(&probe_plan(plan, search.start_rate, search)?)?;
    }
    Ok((json, first))
}

/// Figures an SLO may name: the hold stage's (latency, rate, delivery) and the whole probe's
/// errors and shortfall. Others would be read from the warm-up too, so they are refused.
const WHOLE_RUN_ONLY: [&str; 4] = ["bytes_per_sec", "msgs", "duplicated", "reordered"];

fn check_search(s: &SearchArgs) -> Result<()> {
    if let Some(t) = s
        .slo
        .iter()
        .find(|t| WHOLE_RUN_ONLY.contains(&t.metric().name().as_str()))
    {
        return Err(Error::flag(
            "--slo",
            &t.to_string(),
            "this figure is not kept per stage, so it cannot be judged on the probe's hold; use \
             p50…p100, min, max, mean, msgs_per_sec, sent, received, lost, errors or \
             shortfall_pct",
        ));
    }
    let min = crate::options::MIN_RATE;
    if s.start_rate < min {
        return Err(Error::flag(
            "--start-rate",
            &s.start_rate.to_string(),
            format!("must be at least {min} msgs/s"),
        ));
    }
    if s.max_rate < s.start_rate {
        return Err(Error::flag(
            "--max-rate",
            &s.max_rate.to_string(),
            "is below --start-rate",
        ));
    }
    if !(s.precision > 0.0 && s.precision <= 100.0) {
        return Err(Error::flag(
            "--precision",
            &s.precision.to_string(),
            "must be more than 0 and at most 100 (percent)",
        ));
    }
    Ok(())
}

/// The probe at `rate`: the base plan on the schedule `RATE@WARMUP,RATE@HOLD`, set through
/// the scenario's pace flags. A schedule sets the rate and the length by itself, so the rate
/// and the count the base holds (their defaults: typing them was refused as the command line
/// was read) are not read; a scenario with a warm-up of its own (`latency`) takes the probe's.
///
/// # Errors
/// [`Error::Usage`], in one line, for a scenario with no pace a search can set.
fn probe_plan(base: &Plan, rate: f64, s: &SearchArgs) -> Result<Plan> {
    let text = crate::values::ser::text;
    let hold = format!("{rate}@{}", text(s.probe_duration));
    let spec = if s.probe_warmup.is_zero() {
        hold
    } else {
        format!("{rate}@{},{hold}", text(s.probe_warmup))
    };
    let mut probe = base.clone();
    match probe.pace_mut() {
        Some(pace) => pace.set_schedule(spec),
        // A scenario whose rate is its own (`js consume --publish live`) takes the schedule
        // in its own flags.
        None if crate::plan::workload::own_rate(base).is_some() => {
            probe = crate::plan::workload::scheduled(base, spec).map_err(Error::Usage)?;
        }
        None => {
            return Err(Error::Usage(format!(
                "`msgbench capacity {}`: this scenario has no --rate a search can set",
                base.name()
            )))
        }
    }
    if let Some(warmup) = probe.warmup_mut() {
        // The scenario's warm-up must be shorter than the run, so never 0s.
        *warmup = s.probe_warmup.max(Duration::from_millis(1));
    }
    Ok(probe)
}

/// One run of a probe, judged on its hold stage.
fn judge_probe(r: &RunResult, rate: f64, run: u32, s: &SearchArgs) -> Probe {
    let view = hold_view(r);
    let verdicts: Vec<Verdict> = crate::gate::judge_doc(&s.slo, &view);
    let kept = r
        .pacing
        .as_ref()
        .is_none_or(|p| p.tool_kept_schedule(judge::lag_bound_ns(&s.slo)));
    let short = r.pacing.as_ref().is_some_and(|p| p.below_target);
    Probe::new(rate, run, &view, r, kept, short, verdicts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::registry;

    fn search(warmup: &str) -> SearchArgs {
        use clap::{Args, FromArgMatches};
        let cmd = SearchArgs::augment_args(clap::Command::new("capacity"));
        let m = cmd
            .try_get_matches_from([
                "capacity",
                "--slo",
                "p99<5ms",
                "--probe-duration",
                "3s",
                "--probe-warmup",
                warmup,
            ])
            .unwrap();
        SearchArgs::from_arg_matches(&m).unwrap()
    }

    fn plan(name: &str) -> Plan {
        Plan::from_json(&serde_json::json!({"schema": crate::plan::SCHEMA, "scenario": name}))
            .unwrap()
    }

    #[test]
    fn every_probed_scenario_runs_the_probe_schedule_set_through_its_type() {
        let offered: Vec<_> = registry::ALL
            .iter()
            .filter(|e| e.capacity().is_some())
            .collect();
        assert_eq!(offered.len(), 5);
        for e in offered {
            let probe = probe_plan(&plan(e.name()), 2000.0, &search("1s")).unwrap();
            let v = probe.validate().unwrap();
            let sc = v
                .common()
                .schedule
                .as_ref()
                .unwrap_or_else(|| panic!("{}: no schedule", e.name()));
            let stages: Vec<(f64, f64, f64)> = sc
                .stages()
                .iter()
                .map(|st| (st.from, st.to, st.len_ns / 1e9))
                .collect();
            assert_eq!(
                stages,
                [(2000.0, 2000.0, 1.0), (2000.0, 2000.0, 3.0)],
                "{}",
                e.name()
            );
            // The plan a probe records spells the same schedule, and reads back as itself.
            let doc = probe.to_json().unwrap();
            let back = Plan::from_json(&doc).unwrap().to_json().unwrap();
            assert_eq!(back, doc, "{}", e.name());
        }
    }

    #[test]
    fn latency_takes_the_probe_warm_up_as_its_own() {
        for (given, kept) in [("2s", "2s"), ("0s", "1ms")] {
            let probe = probe_plan(&plan("latency"), 500.0, &search(given)).unwrap();
            assert_eq!(probe.to_json().unwrap()["warmup"], kept, "{given}");
        }
        // Without a warm-up the schedule is the hold alone.
        let probe = probe_plan(&plan("latency"), 500.0, &search("0s")).unwrap();
        assert_eq!(probe.to_json().unwrap()["rate_schedule"], "500@3s");
    }

    #[test]
    fn a_scenario_without_a_rate_to_set_is_refused_in_one_line() {
        let err = probe_plan(&plan("reply"), 1000.0, &search("1s"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("reply") && err.contains("--rate") && !err.contains('\n'),
            "{err}"
        );
    }
}
