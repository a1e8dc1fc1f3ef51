//! The OpenMetrics text of a run on agents, served by its coordinator for `--metrics-listen`:
//! the merged figures without an `agent` label and every agent's own with one, under the same
//! names as a single run's (see [`super::exposition`]), so one dashboard reads both.
//!
//! What the coordinator has of an agent is its last progress report: counts since the start,
//! the length of its last second and that second's P99 latency, not its histogram. So the
//! merged counts and rates are sums, and there is no merged latency: a percentile of all
//! samples cannot be made from each agent's percentile (an average or the largest of P99s is
//! not the P99 of the run), and a quantity that cannot be measured is absent, not made up. An
//! agent's errors come as one count, without their kinds (the result has the kinds).
//!
//! An agent that goes missing keeps its last figures on the page with `msgbench_agent_up 0`,
//! rather than its series stopping: the merged counters include what it sent, so they stay the
//! sum of the per-agent ones and never go backwards, and a dashboard can tell "lost" from "not
//! scraped".

use std::borrow::Cow;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

use super::exposition::RunLabels;
use super::http::Board;
use crate::stats::throughput::Role;

/// One agent's figures at its latest second.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentFigures {
    pub agent: String,
    /// False once the coordinator has given it up as missing.
    pub up: bool,
    /// True once it has sent its result (or its failure).
    pub finished: bool,
    /// End of its latest second, in seconds since the common start, and that second's length.
    pub t_s: f64,
    pub span_s: f64,
    /// By role: messages since the start, and per second in its latest second. A role is here
    /// when the agent runs clients of it.
    pub msgs: Vec<(Role, u64, f64)>,
    pub errors: u64,
    pub p99_ns: Option<u64>,
    /// Whether its latest second is the run's latest: only those add to the merged rates (an
    /// agent that finished earlier sends nothing now).
    pub current: bool,
}

/// Every agent's figures, and whether the run is over.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    pub agents: Vec<AgentFigures>,
    pub finished: bool,
}

/// The merged figures: counts summed over every agent, rates over the agents at the run's latest
/// second.
#[derive(Debug, Default, PartialEq)]
struct Merged {
    t_s: f64,
    /// By role, in role order: messages since the start and per second.
    msgs: Vec<(Role, u64, f64)>,
    errors: u64,
}

fn merged(f: &Figures) -> Merged {
    let mut m = Merged::default();
    let mut by_role = std::collections::BTreeMap::<Role, (u64, f64)>::new();
    for a in &f.agents {
        m.t_s = m.t_s.max(a.t_s);
        m.errors += a.errors;
        for (role, n, rate) in &a.msgs {
            let e = by_role.entry(*role).or_default();
            e.0 += n;
            if a.current {
                e.1 += rate;
            }
        }
    }
    m.msgs = by_role.into_iter().map(|(r, (n, s))| (r, n, s)).collect();
    m
}

/// The whole exposition of `figures` (ending in `# EOF`).
pub fn render(labels: &RunLabels, figures: &Figures) -> String {
    let mut registry = Registry::with_prefix_and_labels(
        "msgbench",
        [
            (Cow::Borrowed("run"), Cow::Owned(labels.run.clone())),
            (Cow::Borrowed("scenario"), Cow::Borrowed(labels.scenario)),
        ]
        .into_iter(),
    );
    registry.register_collector(Box::new(Page(figures.clone())));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .expect("encoding into a String cannot fail");
    text
}

#[derive(Debug)]
struct Page(Figures);

const NO_LABELS: [(&str, &str); 0] = [];

impl Collector for Page {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let f = &self.0;
        let all = merged(f);
        let agents = &f.agents;
        let g = ConstGauge::new(0.0f64);
        {
            let mut m = e.encode_descriptor(
                "tick_end",
                "End of the interval these figures are from, in seconds since the run started \
                 (merged: the latest of the agents').",
                Some(&Unit::Seconds),
                g.metric_type(),
            )?;
            ConstGauge::new(all.t_s).encode(m.encode_family(&NO_LABELS)?)?;
            for a in agents {
                ConstGauge::new(a.t_s).encode(m.encode_family(&[("agent", a.agent.as_str())])?)?;
            }
        }
        {
            let mut m = e.encode_descriptor(
                "tick_span",
                "Length of an agent's interval.",
                Some(&Unit::Seconds),
                g.metric_type(),
            )?;
            for a in agents {
                ConstGauge::new(a.span_s)
                    .encode(m.encode_family(&[("agent", a.agent.as_str())])?)?;
            }
        }
        {
            let mut m = e.encode_descriptor(
                "run_finished",
                "1 when these are the run's (or the agent's) final figures.",
                None,
                ConstGauge::new(0i64).metric_type(),
            )?;
            ConstGauge::new(i64::from(f.finished)).encode(m.encode_family(&NO_LABELS)?)?;
            for a in agents {
                ConstGauge::new(i64::from(a.finished))
                    .encode(m.encode_family(&[("agent", a.agent.as_str())])?)?;
            }
        }
        {
            let mut m = e.encode_descriptor(
                "agent_up",
                "0 once the coordinator has given the agent up as missing; its figures are its last.",
                None,
                ConstGauge::new(0i64).metric_type(),
            )?;
            for a in agents {
                ConstGauge::new(i64::from(a.up))
                    .encode(m.encode_family(&[("agent", a.agent.as_str())])?)?;
            }
        }
        {
            let c = ConstCounter::new(0u64);
            let mut m = e.encode_descriptor(
                "messages",
                "Messages since the run started, sent (role pub) or received (role sub).",
                None,
                c.metric_type(),
            )?;
            for (role, n, _) in &all.msgs {
                ConstCounter::new(*n).encode(m.encode_family(&[("role", role.as_str())])?)?;
            }
            for a in agents {
                for (role, n, _) in &a.msgs {
                    let on = [("agent", a.agent.as_str()), ("role", role.as_str())];
                    ConstCounter::new(*n).encode(m.encode_family(&on)?)?;
                }
            }
        }
        {
            let mut m = e.encode_descriptor(
                "messages_per_second",
                "Messages per second in the interval, sent (role pub) or received (role sub).",
                None,
                g.metric_type(),
            )?;
            for (role, _, rate) in &all.msgs {
                ConstGauge::new(*rate).encode(m.encode_family(&[("role", role.as_str())])?)?;
            }
            for a in agents {
                for (role, _, rate) in &a.msgs {
                    let on = [("agent", a.agent.as_str()), ("role", role.as_str())];
                    ConstGauge::new(*rate).encode(m.encode_family(&on)?)?;
                }
            }
        }
        if agents.iter().any(|a| a.p99_ns.is_some()) {
            // Per agent only: see the header for why there is no merged P99.
            let mut m = e.encode_descriptor(
                "latency_p99",
                "99th percentile of the latencies an agent measured in its interval.",
                Some(&Unit::Seconds),
                g.metric_type(),
            )?;
            for a in agents {
                if let Some(p99) = a.p99_ns {
                    ConstGauge::new(p99 as f64 / 1e9)
                        .encode(m.encode_family(&[("agent", a.agent.as_str())])?)?;
                }
            }
        }
        {
            let c = ConstCounter::new(0u64);
            let mut m = e.encode_descriptor(
                "errors",
                "Errors since the run started, of every kind (the result's errors section has \
                 the kinds).",
                None,
                c.metric_type(),
            )?;
            ConstCounter::new(all.errors).encode(m.encode_family(&NO_LABELS)?)?;
            for a in agents {
                ConstCounter::new(a.errors)
                    .encode(m.encode_family(&[("agent", a.agent.as_str())])?)?;
            }
        }
        Ok(())
    }
}

/// What the coordinator of one run on agents publishes through.
pub struct AgentsFeed {
    pub(super) board: Arc<Board>,
    pub(super) labels: RunLabels,
    pub(super) last: Option<Figures>,
}

impl AgentsFeed {
    /// Publishes `figures`, unless they are the ones on offer already or hold no agent yet
    /// (before the first second the page stays empty, as a single run's does).
    pub fn show(&mut self, figures: Figures) {
        if figures.agents.is_empty() || self.last.as_ref() == Some(&figures) {
            return;
        }
        self.board.publish(render(&self.labels, &figures));
        self.last = Some(figures);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str, sent: u64, rate: f64, current: bool) -> AgentFigures {
        AgentFigures {
            agent: name.into(),
            up: true,
            finished: !current,
            t_s: if current { 3.001 } else { 2.0 },
            span_s: 1.0,
            msgs: vec![(Role::Pub, sent, rate)],
            errors: 1,
            p99_ns: Some(1_500_000),
            current,
        }
    }

    fn samples(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn counts_add_up_over_every_agent_and_rates_over_those_still_sending() {
        let f = Figures {
            agents: vec![
                agent("a", 3000, 1000.0, true),
                agent("b", 2000, 990.0, false),
            ],
            finished: false,
        };
        let text = render(
            &RunLabels {
                run: "r1".into(),
                scenario: "pub",
            },
            &f,
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
        let on = r#"run="r1",scenario="pub""#;
        for want in [
            format!(r#"msgbench_messages_total{{{on},role="pub"}} 5000"#),
            format!(r#"msgbench_messages_total{{{on},agent="a",role="pub"}} 3000"#),
            format!(r#"msgbench_messages_total{{{on},agent="b",role="pub"}} 2000"#),
            format!(r#"msgbench_messages_per_second{{{on},role="pub"}} 1000.0"#),
            format!(r#"msgbench_messages_per_second{{{on},agent="b",role="pub"}} 990.0"#),
            format!("msgbench_tick_end_seconds{{{on}}} 3.001"),
            format!(r#"msgbench_tick_end_seconds{{{on},agent="b"}} 2.0"#),
            format!(r#"msgbench_run_finished{{{on},agent="b"}} 1"#),
            format!(r#"msgbench_agent_up{{{on},agent="a"}} 1"#),
            format!("msgbench_errors_total{{{on}}} 2"),
            format!(r#"msgbench_latency_p99_seconds{{{on},agent="a"}} 0.0015"#),
        ] {
            assert!(
                samples(&text).contains(&want.as_str()),
                "{want} not in\n{text}"
            );
        }
        // No merged latency: only the agents' own.
        assert!(
            !samples(&text)
                .iter()
                .any(|l| l.starts_with("msgbench_latency") && !l.contains("agent=")),
            "{text}"
        );
    }
}
