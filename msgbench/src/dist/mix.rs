//! A workload on agents: every class checked as a run on agents would be, one fleet found
//! for all of them, and then every class run at once, each split across its agents as its
//! scenario splits alone, merged and reconciled on its own, from one start.
//!
//! An agent holds the plans of several classes at once because the coordinator sends them
//! with one group, the workload's run. A class runs on as many agents as it has clients to
//! spread (all of them when it has enough), starting at its own place in the fleet, so that
//! the one-publisher classes of a mix do not all load the first agent.

use std::sync::atomic::AtomicBool;

use super::coordinator::CommonStart;
use super::fleet::{preflight, Aim, Fleet, InMix, Showing};
use crate::control::bus;
use crate::error::{Error, Result};
use crate::plan::workload::{Class, Workload};
use crate::plan::Validated;
use crate::result::RunResult;
use crate::scenario::Load;
use crate::session::mix::{each, ended, Shown, Together};

/// A workload's fleet, and where each class's load goes.
pub struct OnAgents {
    fleet: Fleet,
    aims: Vec<Aim>,
}

impl OnAgents {
    /// Checks every class for a run on agents, then connects once and finds the agents.
    ///
    /// # Errors
    /// A class that cannot run on agents (named), bad flags, no control server, too few
    /// agents.
    pub fn find(workload: &Workload) -> Result<Self> {
        let prepared = (workload.classes.iter())
            .map(|c| {
                preflight(&c.plan).map_err(|e| match e {
                    Error::Usage(m) => Error::Usage(format!("class '{}': {m}", c.name)),
                    Error::Agent(m) => Error::Agent(format!("class '{}': {m}", c.name)),
                    other => other,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let aims: Vec<Aim> = (workload.classes.iter().zip(&prepared))
            .map(|(c, p)| Aim::of(&c.plan, p))
            .collect();
        // The classes share the workload's connection: the first that loads NATS has its
        // control server and the monitoring endpoints for all.
        let first = (prepared.iter())
            .position(|p| matches!(p.validated.common().load, Load::Nats { .. }))
            .unwrap_or(0);
        let fleet = Fleet::gather(
            &workload.classes[first].plan,
            aims[first].clone(),
            &prepared[first],
        )?;
        Ok(Self { fleet, aims })
    }
}

impl Together for OnAgents {
    fn once(
        &self,
        classes: &[(&Class, &Validated)],
        shown: &Shown<'_>,
        stop: &AtomicBool,
    ) -> Vec<Result<RunResult>> {
        let common = CommonStart::new(classes.len());
        let group = bus::unique();
        let n = self.fleet.agents.len();
        each(classes, |index, class, v| {
            let agents = match v.split() {
                Ok(split) => super::split::chosen(n, index, split.pubs, split.subs)
                    .into_iter()
                    .map(|i| self.fleet.agents[i].clone())
                    .collect(),
                Err(_) => self.fleet.agents.clone(),
            };
            let showing = Showing {
                stream: shown.stream.as_deref(),
                class: Some(InMix {
                    name: &class.name,
                    group: &group,
                    common: &common,
                    index,
                }),
                ..Showing::default()
            };
            // A class that ends before its agents are ready, by an error or a panic, holds no
            // one back: it leaves the common start as it unwinds too.
            let _leaves = Leaves(&common, index);
            let r = (self.fleet).run_on(&class.plan, v, &self.aims[index], &agents, showing, stop);
            ended(class, r, shown.progress)
        })
    }
}

/// Leaves the common start when dropped (nothing for a class that joined it).
struct Leaves<'a>(&'a CommonStart, usize);

impl Drop for Leaves<'_> {
    fn drop(&mut self) {
        self.0.leave(self.1);
    }
}
