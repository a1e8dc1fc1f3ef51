//! A workload's session: its classes run together, each on threads of its own, against the
//! one set of servers the workload resolves, from one start; then each class's result is
//! judged by its SLOs, and the mix is written as one document and recorded class by class.
//!
//! Each class runs down the path any plan run here takes ([`On::run`]: the server sampler, the
//! live reader that keeps its timeline, the limit verdict), so a class's figures are what the
//! same plan run alone would report. Every class's live reader starts as the workload does,
//! which puts their timelines on one clock. A class that fails does not stop the others: its
//! error is its entry in the result, and the exit status is the worst class's.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::local::On;
use super::servers::Servers;
use super::Sinks;
use crate::cli::OutputArgs;
use crate::error::{Error, Result};
use crate::options::Output;
use crate::output::live::{StreamStats, View};
use crate::output::metrics::Classes;
use crate::output::web::Web;
use crate::plan::workload::{Class, Workload};
use crate::plan::{Targets, Validated};
use crate::result::mix::{ClassResult, MixResult};
use crate::result::RunResult;
use crate::scenario::{Load, Second};
use crate::server::Target;

/// The servers a workload's classes share, found or started once (for every probe of a
/// search too).
pub struct Mix {
    targets: Targets,
    servers: Servers,
}

impl Mix {
    /// Finds or starts the workload's server: every class's conn is the workload's, so the
    /// first class that talks to NATS resolves it for all of them.
    ///
    /// # Errors
    /// No server binary, a server that does not start, a monitoring endpoint that is not one.
    pub fn resolve(workload: &Workload, validated: &[Validated]) -> Result<Self> {
        let first = validated
            .iter()
            .position(|v| matches!(v.common().load, Load::Nats { .. }));
        let (targets, servers) = match first {
            Some(i) => (
                Targets::resolve(&validated[i])?,
                Servers::check(&workload.classes[i].plan)?,
            ),
            None => (
                Targets {
                    main: None,
                    second: None,
                },
                Servers::default(),
            ),
        };
        Ok(Self { targets, servers })
    }
}

impl Together for Mix {
    /// Runs `classes` here. A class whose scenario wants a second server (latency on a
    /// cluster) gets the next node.
    fn once(
        &self,
        classes: &[(&Class, &Validated)],
        shown: &Shown<'_>,
        stop: &AtomicBool,
    ) -> Vec<Result<RunResult>> {
        let seconds: Vec<Option<Target>> = (classes.iter())
            .map(|(_, v)| match &v.common().load {
                Load::Nats {
                    second: Second::NextNode,
                    ..
                } => self.targets.main.as_ref().and_then(|m| m.node(1)),
                _ => None,
            })
            .collect();
        each(classes, |index, class, v| {
            let on = On {
                main: self.targets.main.as_ref(),
                second: seconds[index].as_ref().or(self.targets.second.as_ref()),
                servers: &self.servers,
            };
            one(index, class, v, &on, shown, stop)
        })
    }
}

/// Runs a workload's classes together, once, each to its own result: in this process
/// ([`Mix`]) or on agents. No class is stopped by another's failure.
pub trait Together {
    /// One result per class of `classes`, in order, each judged by its SLOs and its end shown
    /// ([`ended`]).
    fn once(
        &self,
        classes: &[(&Class, &Validated)],
        shown: &Shown<'_>,
        stop: &AtomicBool,
    ) -> Vec<Result<RunResult>>;
}

/// Runs `workload` (its classes checked into `validated`, in order) through what `find`
/// returns, writes and records the result, and returns the worst class's exit status.
///
/// # Errors
/// The servers or agents cannot be found or started; the result cannot be written (after
/// it was shown).
pub fn run<T: Together>(
    workload: &Workload,
    validated: &[Validated],
    out: &OutputArgs,
    find: impl FnOnce() -> Result<T>,
    stop: &AtomicBool,
) -> Result<u8> {
    // Bound before any server is started: a port in use refuses the workload at once.
    let sinks = Sinks::open(out, &[])?;
    let mix = find()?;
    let progress = !out.no_progress;
    if let Some(w) = &sinks.web {
        w.expect_classes(validated.len());
    }
    let shown = Shown {
        progress,
        stream: sinks.stream.clone(),
        metrics: (sinks.metrics.as_ref()).map(|m| m.classes(&workload.name, validated.len())),
        web: sinks.web.as_ref(),
    };
    if progress {
        eprintln!(
            "workload {}: {} classes start together",
            workload.name,
            workload.classes.len()
        );
    }
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let pairs: Vec<(&Class, &Validated)> = workload.classes.iter().zip(validated).collect();
    let results = mix.once(&pairs, &shown, stop);
    sinks.discard_empty();
    let classes = (results.into_iter().zip(&pairs))
        .map(|(r, (class, v))| match r {
            Ok(r) => ClassResult::ran(class.name.clone(), r, v.common().allow_loss),
            Err(e) => ClassResult::failed(
                class.name.clone(),
                class.plan.name(),
                e.to_string(),
                e.exit_code(),
            ),
        })
        .collect();
    let mix = MixResult::new(
        workload.name.clone(),
        workload.scale,
        workload.time_warp,
        started_at,
        workload.recorded(),
        classes,
    );
    if let Some(w) = &sinks.web {
        w.finish_mix(&mix);
    }
    crate::output::write::emit_mix(&mix, out)?;
    record(&mix, out)?;
    sinks.linger(out, stop);
    Ok(mix.exit_status)
}

/// What a workload's classes are shown through while they run: a line as each ends, and each
/// tick on `--stream-stats` (tagged with its class), `--metrics-listen` (under its `class`
/// label, on one page) and `--web` (in a section of its own, its SLOs on its latency chart).
#[derive(Default)]
pub struct Shown<'a> {
    pub progress: bool,
    pub stream: Option<Arc<Mutex<StreamStats>>>,
    pub metrics: Option<Classes>,
    pub web: Option<&'a Web>,
}

/// Class `index`'s run here, shown through `shown`, judged by its SLOs; its end is a line
/// on stderr.
fn one(
    index: usize,
    class: &Class,
    v: &Validated,
    on: &On<'_>,
    shown: &Shown<'_>,
    stop: &AtomicBool,
) -> Result<RunResult> {
    let scenario = class.plan.name();
    let view = |run_id: &str| View {
        line: false,
        stream: shown.stream.clone(),
        class: Some(class.name.clone()),
        scenario,
        run: None,
        metrics: (shown.metrics.as_ref()).map(|m| m.feed(index, &class.name, scenario, run_id)),
        web: shown.web.map(|w| {
            let slos = class.slo.iter().map(ToString::to_string).collect();
            w.class_feed(index, &class.name, scenario, run_id, slos)
        }),
    };
    ended(class, on.run(&class.plan, v, view, stop), shown.progress)
}

/// Runs `run` for every class at once, each on a thread of its own, and returns their results
/// in the classes' order: a class that panics is a failed class, not a failed workload.
pub fn each(
    classes: &[(&Class, &Validated)],
    run: impl Fn(usize, &Class, &Validated) -> Result<RunResult> + Sync,
) -> Vec<Result<RunResult>> {
    std::thread::scope(|s| {
        let run = &run;
        let running: Vec<_> = (classes.iter().enumerate())
            .map(|(index, (class, v))| s.spawn(move || run(index, class, v)))
            .collect();
        running
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Usage("a class's run panicked".into())))
            })
            .collect()
    })
}

/// A class's run as it ends, wherever it ran: its plan recorded, judged by its SLOs, and a
/// line on stderr (with `progress`).
pub fn ended(class: &Class, run: Result<RunResult>, progress: bool) -> Result<RunResult> {
    match run {
        Ok(mut r) => {
            r.plan = Some(class.plan.recorded());
            r.thresholds = crate::gate::judge(&class.slo, &r);
            if progress {
                eprintln!(
                    "class {}: {}",
                    class.name,
                    crate::export::text::class_line(&r)
                );
            }
            Ok(r)
        }
        Err(e) => {
            if progress {
                eprintln!("class {}: error: {e}", class.name);
            }
            Err(e)
        }
    }
}

/// Records each class's result as a benchmark of its own, named `WORKLOAD.CLASS` (or
/// `NAME.CLASS` with `--name`) and labelled with both, so `history check` judges each class
/// against its own past.
fn record(mix: &MixResult, out: &OutputArgs) -> Result<()> {
    let Some(rec) = Output::from(out).record else {
        return Ok(());
    };
    let mut failed: Option<Error> = None;
    for c in &mix.classes {
        let Some(r) = &c.result else { continue };
        let mut mine = rec.clone();
        let base = rec.name.clone().unwrap_or_else(|| mix.workload.clone());
        mine.name = Some(format!("{base}.{}", c.class));
        mine.labels.insert("workload".into(), mix.workload.clone());
        mine.labels.insert("class".into(), c.class.clone());
        if let Err(e) = crate::history::record::after_run(r, &mine) {
            failed.get_or_insert(e);
        }
    }
    failed.map_or(Ok(()), Err)
}
