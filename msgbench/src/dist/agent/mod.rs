//! `msgbench agent`: a long-running load host. It connects to the control server, announces
//! itself every half second, answers clock exchanges, and runs the plans a trusted coordinator
//! signs, down the same path as any run: one at a time, or the classes of one workload
//! together. While a run is under way it reports progress, meets the other agents at the
//! common start and the final count, and stops its load by itself when the coordinator's
//! lease lapses: an agent never keeps loading a system for a coordinator that is gone.
//!
//! This file holds the agent's loop and what it does with a plan; its settings are
//! config.rs's, the state of each run under way state.rs's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::cli::{AgentAction, AgentArgs};
use crate::control::clock::{self, Stamps};
use crate::control::msg::{self, Abort, Answer, Assignment, Lease, Published, Report, Start};
use crate::control::signed::{self, Signed};
use crate::control::Bus;
use crate::error::{exit, Error, Result};
use crate::plan::Plan;
use crate::scenario::segment::Share;
use crate::stats::timeline::Meter;

mod config;
mod state;

pub use config::parse_label;
use config::{raise_priority, Config};
use state::{Doing, RunState};

/// The runs an agent holds: one, or the classes of one workload at once.
type Held = Arc<Mutex<Vec<Arc<RunState>>>>;

/// Runs the agent (or `agent keygen`) until `stop` is raised or the control connection is lost
/// for good.
///
/// # Errors
/// Bad flags, an unreachable control server.
pub fn run(args: &AgentArgs, stop: &AtomicBool) -> Result<u8> {
    if let Some(AgentAction::Keygen(k)) = &args.action {
        let public = signed::keygen(&k.out)?;
        eprintln!(
            "wrote a signing seed to '{}' (keep it secret); give agents its public key:",
            k.out.display()
        );
        println!("{public}");
        return Ok(exit::OK);
    }
    let cfg = Config::new(args)?;
    let bus = Arc::new(super::fleet::connect_control(
        &args.conn,
        args.control.as_deref(),
        &format!("msgbench-agent-{}", cfg.name),
        true,
    )?);
    let commands = bus.subscribe(&msg::command_subject(&cfg.name))?;
    let clock_rx = bus.subscribe(&msg::clock_subject(&cfg.name))?;
    eprintln!(
        "agent {}: listening on {} ({})",
        cfg.name,
        bus.url,
        if cfg.signed_only {
            "signed plans only"
        } else {
            "UNSIGNED plans accepted"
        }
    );
    let busy: Held = Arc::default();
    std::thread::scope(|s| -> Result<u8> {
        let b = Arc::clone(&bus);
        s.spawn(move || answer_clock(&b, &clock_rx, stop));
        let (b, busy_hb, cfg_hb) = (Arc::clone(&bus), Arc::clone(&busy), &cfg);
        // The heartbeat has a thread of its own, shares no lock with the load, and asks for a
        // higher priority than the load's threads: a load generator saturates its own host,
        // and its heartbeat must still go out.
        s.spawn(move || {
            raise_priority();
            while !stop.load(Ordering::Relaxed) && !b.is_closed() {
                let runs: Vec<(String, &str)> = (busy_hb.lock().unwrap_or_else(|p| p.into_inner()))
                    .iter()
                    .map(|r| (r.run.clone(), r.doing()))
                    .collect();
                let hb = cfg_hb.heartbeat(&runs);
                let _ = b.publish(
                    &msg::heartbeat_subject(&cfg_hb.name),
                    None,
                    &serde_json::to_vec(&hb).expect("a heartbeat serialises"),
                );
                std::thread::sleep(Duration::from_millis(msg::HEARTBEAT_EVERY_MS));
            }
        });
        let code = loop {
            if stop.load(Ordering::Relaxed) {
                break exit::INTERRUPTED;
            }
            let m = match commands.recv_timeout(Duration::from_millis(200)) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    eprintln!(
                        "agent {}: the control connection was lost for good",
                        cfg.name
                    );
                    break exit::DISCONNECTED;
                }
            };
            let Ok(sealed) = serde_json::from_slice::<Signed>(&m.payload) else {
                eprintln!(
                    "agent {}: refused a message that is not a sealed command",
                    cfg.name
                );
                continue;
            };
            if sealed.kind == "plan" {
                let answer = accept(&cfg, &bus, &busy, &sealed, s, stop);
                if let Some(reply) = &m.reply {
                    let _ = bus.publish(reply, None, &serde_json::to_vec(&answer).expect("json"));
                }
            } else {
                route(&cfg, &busy, &sealed);
            }
        };
        for r in busy.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            r.stop.store(true, Ordering::SeqCst);
        }
        Ok(code)
    })
}

fn answer_clock(
    bus: &Bus,
    rx: &std::sync::mpsc::Receiver<crate::control::Inbound>,
    stop: &AtomicBool,
) {
    // Woken now and then to see `stop`: the agent's threads must all end for it to exit.
    while !stop.load(Ordering::Relaxed) {
        let m = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let t1 = clock::now_ns();
        let Some(reply) = m.reply else { continue };
        let seq = std::str::from_utf8(&m.payload)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(u64::MAX);
        let stamps = Stamps {
            seq,
            t1,
            t2: clock::now_ns(),
        };
        let _ = bus.publish(&reply, None, &serde_json::to_vec(&stamps).expect("json"));
    }
}

/// Checks a plan and, when it is acceptable, starts it on its own thread.
fn accept<'s>(
    cfg: &'s Config,
    bus: &Arc<Bus>,
    busy: &'s Held,
    sealed: &Signed,
    s: &'s std::thread::Scope<'s, '_>,
    stop: &'s AtomicBool,
) -> Answer {
    let refuse = |reason: String| {
        eprintln!("agent {}: refused plan {}: {reason}", cfg.name, sealed.id);
        Answer {
            accepted: false,
            reason: Some(reason),
        }
    };
    let a: Assignment = match cfg.gate.read(sealed, clock::now_ms(), true) {
        Ok(a) => a,
        Err(r) => return refuse(r.to_string()),
    };
    if a.agent != cfg.name {
        return refuse(format!("it is addressed to agent '{}'", a.agent));
    }
    let mut slot = busy.lock().unwrap_or_else(|p| p.into_inner());
    let held = slot.iter().map(|r| (r.run.as_str(), r.group.as_deref()));
    if let Some(run) = clash(held, &a.run, a.group.as_deref()) {
        return refuse(format!("busy with run {run}"));
    }
    let plan = match Plan::from_json(&a.plan) {
        Ok(p) => p,
        Err(e) => return refuse(format!("the plan is not valid here: {e}")),
    };
    let validated = match plan.validate() {
        Ok(v) => v,
        Err(e) => return refuse(format!("the plan is not valid here: {e}")),
    };
    let state = Arc::new(RunState {
        run: a.run.clone(),
        group: a.group.clone(),
        agent: cfg.name.clone(),
        report_to: msg::report_subject(&a.run),
        seg: a.segment,
        stop: AtomicBool::new(false),
        start_at_ns: Mutex::new(None),
        everyone: Mutex::new(None),
        lease_renewed: Mutex::new(Instant::now()),
        changed: Condvar::new(),
        bus: Arc::clone(bus),
        doing: Mutex::new(Doing::STARTING),
    });
    slot.push(Arc::clone(&state));
    drop(slot);
    eprintln!(
        "agent {}: accepted plan {} ({}, run {}, {} from id {}, {} from id {})",
        cfg.name,
        sealed.id,
        plan.name(),
        a.run,
        crate::format::counted(u64::from(a.segment.pubs), "publisher"),
        a.segment.pub_base,
        crate::format::counted(u64::from(a.segment.subs), "subscriber"),
        a.segment.sub_base
    );
    let progress_every = Duration::from_millis(a.progress_ms.max(50));
    s.spawn(move || {
        let out = run_share(&state, &plan, &validated, cfg, progress_every, stop);
        state.set_doing(Doing::REPORTING);
        let report = match out {
            Ok(mut r) => {
                r.plan = Some(plan.recorded());
                let mut doc = serde_json::to_value(&r).expect("a result serialises");
                // One control message holds the result; a long run's timeline could make it
                // larger than the server accepts, and then the whole result would be lost.
                // The timeline goes first (the coordinator still has every second's progress).
                let room = state.bus.max_payload.saturating_sub(4096);
                if state.bus.max_payload > 0
                    && serde_json::to_vec(&doc).map_or(0, |b| b.len()) > room
                {
                    if let Some(o) = doc.as_object_mut() {
                        o.remove("timeline");
                    }
                    eprintln!(
                        "agent {}: the result is larger than the control server's max_payload; \
                         sent without its timeline",
                        cfg.name
                    );
                }
                Report::Done {
                    agent: cfg.name.clone(),
                    result: Some(doc),
                    error: None,
                }
            }
            Err(e) => Report::Done {
                agent: cfg.name.clone(),
                result: None,
                error: Some(e.to_string()),
            },
        };
        // A result that cannot be sent (too large even so) must still end the coordinator's
        // wait: a failure in its place names why.
        let sent = state.bus.publish(
            &state.report_to,
            None,
            &serde_json::to_vec(&report).expect("a report serialises"),
        );
        if let Err(e) = sent {
            state.report(&Report::Done {
                agent: cfg.name.clone(),
                result: None,
                error: Some(format!("cannot send the result: {e}")),
            });
        }
        eprintln!("agent {}: run {} ended", cfg.name, state.run);
        (busy.lock().unwrap_or_else(|p| p.into_inner())).retain(|r| r.run != state.run);
    });
    Answer {
        accepted: true,
        reason: None,
    }
}

/// The run held (of `held`, each a run and its group) that keeps this agent from taking
/// `run` of `group`: any, unless all are classes of the same workload as it (and none is it).
fn clash<'a>(
    mut held: impl Iterator<Item = (&'a str, Option<&'a str>)>,
    run: &str,
    group: Option<&str>,
) -> Option<&'a str> {
    held.find(|(r, g)| group.is_none() || *g != group || *r == run)
        .map(|(r, _)| r)
}

/// Runs this agent's share with a watchdog on the lease and a progress reporter beside it.
fn run_share(
    state: &Arc<RunState>,
    plan: &Plan,
    validated: &crate::plan::Validated,
    cfg: &Config,
    progress_every: Duration,
    stop: &AtomicBool,
) -> Result<crate::result::RunResult> {
    let meter = Arc::new(Meter::default());
    let done = AtomicBool::new(false);
    let _ = plan;
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                let since = state
                    .lease_renewed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .elapsed();
                if since > cfg.lease && !state.stop.load(Ordering::Relaxed) {
                    eprintln!(
                        "agent {}: the coordinator's lease lapsed ({} without renewal): stopping \
                         run {}",
                        cfg.name,
                        humantime::format_duration(Duration::from_millis(since.as_millis() as u64)),
                        state.run
                    );
                    state.stop.store(true, Ordering::SeqCst);
                }
                if stop.load(Ordering::Relaxed) {
                    state.stop.store(true, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let starts = {
            let st = Arc::clone(state);
            move || {
                let at = *st.start_at_ns.lock().unwrap_or_else(|p| p.into_inner());
                at.map(clock::instant_at)
            }
        };
        let progress =
            super::progress::Reporter::start(Arc::clone(&meter), progress_every, starts, {
                let st = Arc::clone(state);
                move |p| {
                    st.report(&Report::Progress {
                        agent: st.agent.clone(),
                        progress: p,
                    })
                }
            });
        // A bug that panics in the run must still end the coordinator's wait with a failure
        // that says so, rather than leave this agent heartbeating with no result to come.
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let targets = crate::plan::Targets::resolve(validated)?;
            crate::plan::execute(
                validated,
                &crate::scenario::Ctx {
                    main: targets.main.as_ref(),
                    second: targets.second.as_ref(),
                    meter: &meter,
                    stop: &state.stop,
                    share: Some(Share {
                        seg: state.seg,
                        peers: state.as_ref(),
                    }),
                    // Into the agent's own log, as a run in a terminal would print them.
                    progress: true,
                },
            )
        }))
        .unwrap_or_else(|panic| {
            let what = (panic.downcast_ref::<&str>().map(ToString::to_string))
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Error::Agent(format!(
                "the run stopped on a bug in msgbench: {what}"
            )))
        });
        let timeline = progress.finish();
        done.store(true, Ordering::Relaxed);
        out.map(|mut r| {
            r.timeline = Some(timeline);
            r
        })
    })
}

/// A command for one of the runs under way, found by the run it names.
fn route(cfg: &Config, busy: &Mutex<Vec<Arc<RunState>>>, sealed: &Signed) {
    /// What a command asks of its run.
    enum Asks {
        Start(i64),
        Lease,
        Published(Vec<u64>),
        Abort(String),
    }
    let held = |run: &str| {
        (busy.lock().unwrap_or_else(|p| p.into_inner()))
            .iter()
            .find(|r| r.run == run)
            .cloned()
    };
    if busy.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
        return;
    }
    let now = clock::now_ms();
    let read = match sealed.kind.as_str() {
        "start" => {
            (cfg.gate.read::<Start>(sealed, now, false)).map(|m| (m.run, Asks::Start(m.at_ns)))
        }
        "lease" => (cfg.gate.read::<Lease>(sealed, now, false)).map(|m| (m.run, Asks::Lease)),
        "published" => (cfg.gate.read::<Published>(sealed, now, false))
            .map(|m| (m.run, Asks::Published(m.sent))),
        "abort" => {
            (cfg.gate.read::<Abort>(sealed, now, false)).map(|m| (m.run, Asks::Abort(m.reason)))
        }
        other => {
            eprintln!(
                "agent {}: refused a command of unknown kind '{other}'",
                cfg.name
            );
            return;
        }
    };
    let (run, asks) = match read {
        Ok(r) => r,
        Err(r) => {
            eprintln!(
                "agent {}: refused {} {}: {r}",
                cfg.name, sealed.kind, sealed.id
            );
            return;
        }
    };
    // A command for a run this agent no longer holds (ended, or never its) changes nothing.
    let Some(state) = held(&run) else { return };
    match asks {
        Asks::Start(at) => *state.start_at_ns.lock().unwrap_or_else(|p| p.into_inner()) = Some(at),
        Asks::Lease => {
            *state
                .lease_renewed
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Instant::now();
        }
        Asks::Published(sent) => {
            *state.everyone.lock().unwrap_or_else(|p| p.into_inner()) = Some(sent);
        }
        Asks::Abort(reason) => {
            eprintln!("agent {}: run {run} aborted: {reason}", cfg.name);
            state.stop.store(true, Ordering::SeqCst);
        }
    }
    state.changed.notify_all();
}

#[cfg(test)]
mod tests {
    use super::clash;

    #[test]
    fn an_agent_holds_several_runs_only_as_classes_of_one_workload() {
        let none = std::iter::empty();
        assert_eq!(clash(none, "r1", None), None);
        let one = [("r1", None)];
        assert_eq!(clash(one.into_iter(), "r2", None), Some("r1"));
        assert_eq!(clash(one.into_iter(), "r2", Some("w")), Some("r1"));
        let classes = [("r1", Some("w")), ("r2", Some("w"))];
        assert_eq!(clash(classes.into_iter(), "r3", Some("w")), None);
        // Another workload's class, a plain run, or the same run again: refused.
        assert_eq!(clash(classes.into_iter(), "r3", Some("v")), Some("r1"));
        assert_eq!(clash(classes.into_iter(), "r3", None), Some("r1"));
        assert_eq!(clash(classes.into_iter(), "r2", Some("w")), Some("r2"));
    }
}
