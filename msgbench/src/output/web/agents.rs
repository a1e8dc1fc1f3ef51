//! A coordinator's side of the live page (`--web` on a run on agents): the merged rates and
//! counts, and one row per agent with its share, clock offset and latest figures, from the
//! agents' progress reports (the figures `--metrics-listen` serves of them).

use std::sync::Arc;

use serde_json::{json, Value};

use super::{figure, Hub};
use crate::format;
use crate::output::metrics::AgentsFigures;
use crate::stats::throughput::Role;
use crate::stats::timeline::Totals;

/// What the coordinator knows of an agent besides its progress: its share of the run and its
/// clock, and whether it went missing.
#[derive(Debug, Clone)]
pub struct AgentInfo {
    pub agent: String,
    /// Its clients against the run's: `pubs 1 of 2, subs 1 of 2`.
    pub share: String,
    /// Its clock minus the coordinator's, and how well that is known.
    pub clock_offset_ns: i64,
    pub clock_uncertainty_ns: u64,
    /// Why it was given up as missing.
    pub missing: Option<String>,
}

/// A coordinator's side of the page: the merged figures and one row per agent, from the
/// agents' progress reports (the figures `--metrics-listen` serves of them).
pub struct AgentsFeed {
    pub(super) hub: Arc<Hub>,
    pub(super) scenario: &'static str,
    pub(super) run_id: String,
    pub(super) run_k: Option<u32>,
    /// The SLOs the latency chart draws (`--threshold`).
    pub(super) slos: Vec<String>,
    /// Each agent's P99 second by second, as reported, for the latency chart (the last
    /// [`super::WINDOW`] of each).
    pub(super) p99: Vec<crate::report::html::AgentSeries>,
    /// The last event sent: the coordinator looks every 50 ms, and the same picture is not
    /// sent again.
    pub(super) last: Option<Arc<str>>,
}

impl AgentsFeed {
    /// Publishes the agents' figures at the latest second all have reported, with what is
    /// known of each (`info`, every agent of the run, reporting or not); `last` when the run
    /// is over.
    pub fn show(&mut self, figures: &AgentsFigures, info: &[AgentInfo], last: bool) {
        self.keep_p99(figures);
        let event: Arc<str> = Arc::from(self.event(figures, info, last).to_string());
        if self.last.as_ref() == Some(&event) {
            return;
        }
        self.hub.put_tick("", &event);
        self.hub.publish(&event);
        self.last = Some(event);
    }

    /// Adds each agent's newest P99 to its series, once per second it reports.
    fn keep_p99(&mut self, f: &AgentsFigures) {
        for a in &f.agents {
            let Some(p99) = a.p99_ns else {
                continue;
            };
            let series = match self.p99.iter_mut().position(|s| s.agent == a.agent) {
                Some(i) => &mut self.p99[i],
                None => {
                    self.p99.push(crate::report::html::AgentSeries {
                        agent: a.agent.clone(),
                        points: Vec::new(),
                    });
                    self.p99.last_mut().expect("just pushed")
                }
            };
            if series.points.last().is_none_or(|&(t, _)| a.t_s > t) {
                if series.points.len() == super::WINDOW {
                    series.points.remove(0);
                }
                series.points.push((a.t_s, p99 as f64));
            }
        }
    }

    fn event(&self, f: &AgentsFigures, info: &[AgentInfo], last: bool) -> Value {
        // Merged as `--metrics-listen` merges them: counts summed over every agent, rates over
        // those at the latest second. There is no merged latency: a percentile of all samples
        // cannot be made from each agent's, and the result has the true one.
        let t = f.agents.iter().map(|a| a.t_s).fold(0.0, f64::max);
        let mut totals = Totals::default();
        let mut rates = std::collections::BTreeMap::<Role, f64>::new();
        let mut errors = 0;
        for a in &f.agents {
            errors += a.errors;
            for (role, n, rate) in &a.msgs {
                *totals.msgs.entry(*role).or_default() += n;
                let r = rates.entry(*role).or_default();
                if a.current {
                    *r += rate;
                }
            }
        }
        let mut figs = Vec::new();
        for (role, rate) in &rates {
            figs.push(figure(
                format!("rate-{}", role.as_str()),
                format!("{} per second ({}, all agents)", word(*role), role.as_str()),
                Some(*rate),
                |v| format!("{}/s", format::grouped(v, 0)),
            ));
        }
        for (role, n) in &totals.msgs {
            figs.push(figure(
                format!("total-{}", role.as_str()),
                format!(
                    "messages {} so far ({}, all agents)",
                    word(*role),
                    role.as_str()
                ),
                Some(*n as f64),
                |v| format::group(v as u64),
            ));
        }
        figs.push(figure(
            "errors".into(),
            "errors so far (all agents)".into(),
            Some(errors as f64),
            |v| format::group(v as u64),
        ));
        let agents: Vec<Value> = info
            .iter()
            .map(|i| {
                let a = f.agents.iter().find(|a| a.agent == i.agent);
                let rate = |role: Role| {
                    a.and_then(|a| a.msgs.iter().find(|m| m.0 == role))
                        .map(|m| m.2)
                };
                let per_sec = |v: Option<f64>| {
                    v.map_or_else(|| "—".into(), |v| format!("{}/s", format::grouped(v, 0)))
                };
                let (sent, received) = (rate(Role::Pub), rate(Role::Sub));
                let p99 = a.and_then(|a| a.p99_ns);
                let state = match (&i.missing, a.is_some_and(|a| a.finished)) {
                    (Some(why), _) => format!("missing: {why}"),
                    (None, true) => "finished".into(),
                    (None, false) => "running".into(),
                };
                json!({
                    "agent": i.agent,
                    "missing": i.missing.is_some(),
                    "state": state,
                    "share": i.share,
                    "clock_offset_ns": i.clock_offset_ns,
                    "clock": format!(
                        "{} ± {}",
                        format::duration_ns_signed(i.clock_offset_ns),
                        format::duration_ns(i.clock_uncertainty_ns as f64)
                    ),
                    "t_s": a.map(|a| a.t_s),
                    "sent_per_sec": sent,
                    "sent": per_sec(sent),
                    "received_per_sec": received,
                    "received": per_sec(received),
                    "p99_ns": p99,
                    "p99": p99.map_or_else(|| "—".into(), |v| format::duration_ns(v as f64)),
                    "errors": a.map(|a| a.errors),
                })
            })
            .collect();
        json!({
            "kind": "tick",
            "scenario": self.scenario,
            "title": match self.run_k {
                Some(k) => format!("{} (run {k})", self.scenario),
                None => self.scenario.to_string(),
            },
            "run_id": self.run_id,
            "t_s": t,
            "finished": last,
            "figures": figs,
            "charts": crate::report::html::agents_p99(&self.p99, self.scenario, &self.slos)
                .into_iter()
                .collect::<Vec<_>>(),
            "agents": agents,
        })
    }
}

fn word(role: Role) -> &'static str {
    match role {
        Role::Pub => "sent",
        Role::Sub => "received",
    }
}
