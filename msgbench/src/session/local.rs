//! A plan run in this process, against servers found or started once for the whole session
//! (every `--runs` repetition, every probe of a search, every plan of the default suite), each
//! run shown live by a reader of its meter that also keeps its timeline.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::servers::Servers;
use super::{Runner, Showing, Sinks};
use crate::error::Result;
use crate::output::live::{Live, View};
use crate::output::metrics::RunLabels;
use crate::plan::{Plan, Targets, Validated};
use crate::result::RunResult;
use crate::scenario::Ctx;
use crate::server::Target;
use crate::stats::timeline::Meter;

/// The servers of a session run here.
pub struct Local {
    targets: Targets,
    servers: Servers,
}

impl Local {
    /// Checks the `--server-monitor` endpoints of `plan`, then finds or starts the servers
    /// `validated` names.
    ///
    /// # Errors
    /// A monitoring endpoint that is not one; no server binary, a server that does not start,
    /// a link that cannot be set up.
    pub fn resolve(plan: &Plan, validated: &Validated) -> Result<Self> {
        let servers = Servers::check(plan)?;
        Ok(Self {
            targets: Targets::resolve(validated)?,
            servers,
        })
    }

    /// Runs on servers already found or started (the default suite's one server), sampling
    /// the endpoints `servers` checked.
    pub fn on(targets: Targets, servers: Servers) -> Self {
        Self { targets, servers }
    }
}

impl Runner for Local {
    fn once(
        &self,
        plan: &Plan,
        validated: &Validated,
        sinks: &Sinks,
        showing: Showing,
        stop: &AtomicBool,
    ) -> Result<RunResult> {
        let on = On {
            main: self.targets.main.as_ref(),
            second: self.targets.second.as_ref(),
            servers: &self.servers,
        };
        on.run(
            plan,
            validated,
            |run_id| view(plan, sinks, showing, run_id),
            stop,
        )
    }
}

/// What a run in this process goes to: its servers, and the sampler of their monitoring
/// endpoints. A workload's classes each run on the workload's one set.
pub(super) struct On<'a> {
    pub main: Option<&'a Target>,
    pub second: Option<&'a Target>,
    pub servers: &'a Servers,
}

impl On<'_> {
    /// Runs a plan once, shown live through the view `view` makes of its run id.
    pub(super) fn run(
        &self,
        plan: &Plan,
        validated: &Validated,
        view: impl FnOnce(&str) -> View,
        stop: &AtomicBool,
    ) -> Result<RunResult> {
        // The id is made before the run, so that the live figures carry the one the result
        // will.
        let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
        let run_id = crate::result::new_run_id(plan.name(), &started_at.to_string());
        let meter = Arc::new(Meter::default());
        // The servers are sampled from before the live reader's first tick.
        let watch = self.servers.start([self.main, self.second], &meter);
        let live = Live::start(Arc::clone(&meter), view(&run_id));
        let r = crate::plan::execute(
            validated,
            &Ctx {
                main: self.main,
                second: self.second,
                meter: &meter,
                stop,
                share: None,
                progress: !plan.out().no_progress,
            },
        );
        let timeline = live.finish();
        let mut r = r?;
        r.timeline = timeline;
        r.run_id = run_id;
        if let Some(t) = self.main {
            t.annotate(&mut r);
        }
        // Both read the timeline (and the verdict the link, which `annotate` adds).
        if let Some(w) = watch {
            super::servers::finish(w, &mut r);
        }
        super::limit::judge(&mut r);
        Ok(r)
    }
}

/// What the live reader of one run feeds: the line, the stream file, the metrics and the page
/// of a session's run; only the page of a search's probe (its runs are printed as they end).
fn view(plan: &Plan, sinks: &Sinks, showing: Showing, run_id: &str) -> View {
    let scenario = plan.name();
    match showing {
        Showing::Run { .. } => View {
            line: sinks.line,
            stream: sinks.stream.clone(),
            class: None,
            scenario,
            run: showing.of_several(),
            metrics: sinks.metrics.as_ref().map(|m| {
                m.feed(RunLabels {
                    run: run_id.to_string(),
                    scenario,
                })
            }),
            web: sinks
                .web
                .as_ref()
                .map(|w| w.feed(scenario, run_id, showing.of_several())),
        },
        Showing::Probe { rate, k, n } => View {
            line: false,
            stream: None,
            class: None,
            scenario,
            run: None,
            metrics: None,
            web: sinks
                .web
                .as_ref()
                .map(|w| w.probe_feed(scenario, rate, k, n)),
        },
    }
}
