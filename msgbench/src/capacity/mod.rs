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
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::cli::SearchArgs;
use crate::error::{exit, Error, Result};
use crate::plan::Plan;
use crate::result::{RunResult, ToolInfo, Verdict};
use crate::stats::timeline::Meter;

mod doc;
mod judge;

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
    // --no-progress leaves out the line each probe run prints as it ends.
    let progress = !plan.out().no_progress;
    let base = plan;
    if let Some(path) = &json {
        crate::output::dest::check("--json", path)?;
    }
    // Bound before any server is started or connected to: a port in use refuses the search.
    let web = base
        .out()
        .web
        .as_deref()
        .map(|a| {
            let slos = search.slo.iter().map(ToString::to_string).collect();
            crate::output::web::Web::bind(a).map(|w| w.with_slos(slos))
        })
        .transpose()?;
    if let Some(w) = &web {
        eprintln!("--web: the live page is on http://{}/", w.local_addr());
    }
    // Each probe that ends adds its point to the page's knee chart.
    let show_knee = |doc: &Capacity| {
        if let Some(w) = &web {
            let value = serde_json::to_value(doc).expect("the capacity document serialises");
            w.show_knee(&value, base.name(), doc.probes.len());
        }
    };
    // On agents, the fleet is found once; else the servers are started once, for every probe.
    let (fleet, targets) = if base.out().distributed() {
        let probe = probe_plan(&base, search.start_rate, &search)?;
        (Some(crate::dist::fleet::Fleet::find(&probe)?), None)
    } else {
        (None, Some(crate::plan::Targets::resolve(&first)?))
    };
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let mut doc = Capacity::new(
        base.name(),
        started_at,
        &search,
        base.recorded(),
        ToolInfo::default(),
    );
    eprintln!(
        "msgbench capacity {}: SLO {}; each rate {} × ({} warm-up + {} judged)",
        base.name(),
        doc.slo.join(", "),
        search.probe_runs,
        crate::values::ser::text(search.probe_warmup),
        crate::values::ser::text(search.probe_duration),
    );

    // One rate: its runs, back to back. A run the tool could not drive measured nothing about
    // the system, so it is run again (twice at most) before the rate is put down to the tool.
    // A probe that cannot run at all ends the search as a failure of that rate: what was
    // measured before it is kept.
    let probe_at = |rate: f64, doc: &mut Capacity| -> Outcome {
        let (probe, validated) = match probe_plan(&base, rate, &search)
            .and_then(|p| Ok((p.validate()?, p)))
        {
            Ok((v, p)) => (p, v),
            Err(e) => return Outcome::Server(format!("the probe at {rate}/s could not run: {e}")),
        };
        let mut outcomes = Vec::new();
        for run in 1..=search.probe_runs {
            let mut retry = 0;
            loop {
                // Interrupted: the rate's runs are not all in, so nothing is known about it.
                if stop.load(Ordering::Relaxed) {
                    return Outcome::Unknown;
                }
                let r = match (&fleet, &targets) {
                    (Some(fleet), _) => {
                        let watch = crate::dist::fleet::Watch {
                            web: web.as_ref(),
                            ..Default::default()
                        };
                        fleet.run(&probe, &watch, stop)
                    }
                    (None, Some(targets)) => {
                        let meter = Arc::new(Meter::default());
                        // With --web the probe's run is shown live, as any run is.
                        let live = web.as_ref().map(|w| {
                            crate::output::live::Live::start(
                                Arc::clone(&meter),
                                crate::output::live::View {
                                    line: false,
                                    stream: None,
                                    scenario: base.name(),
                                    run: None,
                                    metrics: None,
                                    web: Some(w.probe_feed(
                                        base.name(),
                                        rate,
                                        run,
                                        search.probe_runs,
                                    )),
                                },
                            )
                        });
                        let r = crate::plan::execute(
                            &validated,
                            targets.main.as_ref(),
                            targets.second.as_ref(),
                            &meter,
                            stop,
                            None,
                        );
                        if let Some(l) = live {
                            l.finish();
                        }
                        r
                    }
                    (None, None) => unreachable!("a search has a fleet or targets"),
                };
                // A run cut short says nothing about the rate, whatever it came to: the
                // interrupt can land after the run's own check (a short run judged as late,
                // or an error from a connection closed under it), so the flag decides.
                if stop.load(Ordering::Relaxed) {
                    return Outcome::Unknown;
                }
                let r = match r {
                    Ok(r) if r.interrupted => return Outcome::Unknown,
                    Ok(r) => r,
                    Err(e) => return Outcome::Server(format!("the probe at {rate}/s failed: {e}")),
                };
                // An agent that sent nothing leaves the probe's figures partial: the search
                // cannot go on without it.
                if let Some(gone) = r.agents.as_ref().filter(|a| !a.missing.is_empty()) {
                    doc.probes.push(judge_probe(&r, rate, run, &search));
                    show_knee(doc);
                    return Outcome::Server(format!(
                        "the probe at {rate}/s lost agent {}",
                        gone.missing.join(", ")
                    ));
                }
                let mut probe = judge_probe(&r, rate, run, &search);
                let out = classify(&r, &probe, &search.slo);
                probe.void = matches!(out, Outcome::Tool(_));
                let again = matches!(out, Outcome::Tool(_)) && retry < TOOL_RETRIES;
                if progress {
                    eprintln!(
                        "{}",
                        probe.line(search.probe_runs, Attempt::new(retry, TOOL_RETRIES))
                    );
                }
                doc.probes.push(probe);
                show_knee(doc);
                if again {
                    retry += 1;
                    continue;
                }
                outcomes.push(out);
                break;
            }
        }
        Outcome::worst(&outcomes)
    };

    let (mut held, mut broke): (Option<f64>, Option<(f64, Outcome)>) = (None, None);
    let mut rate = search.start_rate;
    let mut probed = 0;
    // Doubling until a probe fails or the top of the range.
    while probed < MAX_PROBED_RATES && !stop.load(Ordering::Relaxed) {
        let out = probe_at(rate, &mut doc);
        probed += 1;
        match out {
            Outcome::Held => {
                held = Some(rate);
                if rate >= search.max_rate {
                    break;
                }
                rate = (rate * 2.0).min(search.max_rate);
            }
            Outcome::Unknown => break,
            failed => {
                broke = Some((rate, failed));
                break;
            }
        }
    }
    // Bisection of the bracket, down to --precision, or to neighbouring rates a probe can tell
    // apart (a step of 1/s, or a thousandth of the rate below 1/s).
    while let (Some(lo), Some((hi, _))) = (held, broke.as_ref()) {
        let hi = *hi;
        if (hi - lo) / lo * 100.0 <= search.precision
            || probed >= MAX_PROBED_RATES
            || stop.load(Ordering::Relaxed)
        {
            break;
        }
        let mut mid = (lo + hi) / 2.0;
        if mid >= 100.0 {
            mid = mid.round();
        }
        if mid <= lo || mid >= hi {
            break;
        }
        let out = probe_at(mid, &mut doc);
        probed += 1;
        match out {
            Outcome::Held => held = Some(mid),
            Outcome::Unknown => break,
            failed => broke = Some((mid, failed)),
        }
    }
    doc.stopped_at_limit = probed >= MAX_PROBED_RATES;
    doc.conclude(held, broke, &search, stop.load(Ordering::Relaxed));
    if let Some(w) = &web {
        show_knee(&doc);
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
    if let Some(w) = web {
        w.linger(base.out().web_linger, stop);
    }
    Ok(code)
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
    let json = refuse_outputs(plan.out())?;
    let first = probe_plan(plan, search.start_rate, search)?.validate()?;
    if first.allow_loss() {
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

/// The output flags a search can honour: `--json` (the capacity document) and the progress
/// switches. Every other one is refused by name rather than ignored.
fn refuse_outputs(o: &crate::cli::OutputArgs) -> Result<Option<std::path::PathBuf>> {
    const NOT_RECORDED: &str =
        "a search is many probes, not runs of one benchmark; record the scenario's own runs";
    let why = [
        (
            "--csv",
            o.csv.is_some(),
            "a search writes its document with --json",
        ),
        (
            "--markdown",
            o.markdown.is_some(),
            "a search writes its document with --json",
        ),
        (
            "--stream-stats",
            o.stream_stats.is_some(),
            "probes are printed as they end",
        ),
        ("--runs", o.runs != 1, "use --probe-runs"),
        ("--record", o.record.is_some(), NOT_RECORDED),
        ("--history-file", o.history_file.is_some(), NOT_RECORDED),
        ("--name", o.name.is_some(), NOT_RECORDED),
        ("--label", !o.labels.is_empty(), NOT_RECORDED),
        ("--threshold", !o.threshold.is_empty(), "use --slo"),
        (
            "--print-plan",
            o.print_plan,
            "a search is many plans; print one without capacity",
        ),
        (
            "--metrics-listen",
            o.metrics_listen.is_some(),
            "probes are printed as they end",
        ),
        (
            "--live",
            o.live,
            "probes are printed as they end (--no-progress leaves them out)",
        ),
        (
            "--control",
            o.control.is_some() && !o.distributed(),
            "it names where agents meet (with --agents)",
        ),
        (
            "--sign",
            o.sign.is_some() && !o.distributed(),
            "it signs the plans sent to agents (with --agents)",
        ),
        (
            "--agent-silence",
            o.agent_silence.is_some() && !o.distributed(),
            "it is how long an agent may go unheard (with --agents)",
        ),
    ];
    if let Some((flag, _, hint)) = why.iter().find(|(_, on, _)| *on) {
        return Err(Error::Usage(format!(
            "{flag} does not apply to `msgbench capacity`: {hint}"
        )));
    }
    Ok(o.json.clone())
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
    probe
        .pace_mut()
        .ok_or_else(|| {
            Error::Usage(format!(
                "`msgbench capacity {}`: this scenario has no --rate a search can set",
                base.name()
            ))
        })?
        .set_schedule(spec);
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
                .schedule()
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
