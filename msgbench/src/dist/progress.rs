//! Progress of distributed runs, both ends. On an agent, [`Reporter`] samples the run's meter
//! every interval, sends each tick's counts to the coordinator and keeps the ticks as the
//! agent's own timeline. On the coordinator, [`Board`] holds every agent's reports and
//! makes the live view: for each second all agents have reported, the aggregate and one row per
//! agent, and the figures `--metrics-listen` serves of the same reports.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::control::msg::Progress;
use crate::format;
use crate::output::metrics::{AgentFigures, AgentsFigures as Figures};
use crate::stats::throughput::Role;
use crate::stats::timeline::{Meter, Sampler, Timeline, MAX_TICKS};

/// The agent's side: ticks to the coordinator, and the timeline kept.
pub struct Reporter {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<Timeline>>,
}

impl Reporter {
    /// Samples `meter` every `every` from the common start (`start` says when it is, once the
    /// coordinator has), so an agent's seconds are the run's seconds on every agent; what came
    /// before (connecting, subscribing) is no load and is left out.
    pub fn start(
        meter: Arc<Meter>,
        every: Duration,
        start: impl Fn() -> Option<Instant> + Send + 'static,
        send: impl Fn(Progress) + Send + 'static,
    ) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let thread = std::thread::spawn(move || {
            let mut sampler = Sampler::new(Arc::clone(&meter));
            let mut ticks = Vec::new();
            let mut total = Progress::default();
            let mut zero: Option<Instant> = None;
            // The meter's clock, from its making, read at the start: the ticks are dated from
            // the start instead, so that every agent's second k (and the servers' readings,
            // sampled from the start) is the run's second k, whatever each agent's setup took.
            let mut offset = 0.0;
            let mut next = every;
            loop {
                let finished = flag.load(Ordering::Relaxed);
                if zero.is_none() {
                    match start() {
                        Some(at) if Instant::now() >= at => {
                            // Up to the start: the setup, dropped from the ticks. This reading
                            // comes up to one poll after the start, and what the load did in
                            // that moment is the run's: it counts, or the counts sent would
                            // fall short of the agent's result.
                            let setup = sampler.tick();
                            total.pub_msgs += (setup.sent_per_sec * setup.span_s).round() as u64;
                            total.sub_msgs +=
                                (setup.received_per_sec * setup.span_s).round() as u64;
                            total.errors += setup.errors;
                            offset = meter.elapsed().saturating_sub(at.elapsed()).as_secs_f64();
                            zero = Some(at);
                        }
                        _ if !finished => {
                            std::thread::sleep(Duration::from_millis(10));
                            continue;
                        }
                        // Stopped before the start: one tick with whatever there was.
                        _ => {}
                    }
                }
                if !finished {
                    // Short sleeps, so the last tick is taken soon after the run ends.
                    std::thread::sleep(Duration::from_millis(20).min(every));
                    if zero.is_some_and(|z| z.elapsed() < next) {
                        continue;
                    }
                    next += every;
                }
                let mut t = sampler.tick();
                t.t_s -= offset;
                total.elapsed_ms =
                    zero.map_or((t.t_s * 1000.0) as u64, |z| z.elapsed().as_millis() as u64);
                total.pub_msgs += (t.sent_per_sec * t.span_s).round() as u64;
                total.sub_msgs += (t.received_per_sec * t.span_s).round() as u64;
                total.errors += t.errors;
                total.p99_ns = t.latency.as_ref().map(|l| l.p99_ns);
                send(total.clone());
                if ticks.len() < MAX_TICKS {
                    ticks.push(t);
                }
                if finished {
                    break;
                }
            }
            Timeline {
                interval_s: every.as_secs_f64(),
                clients: sampler.clients(),
                truncated: ticks.len() >= MAX_TICKS,
                // On the ticks' clock: what began before the start (a bucket's fill) is setup,
                // left out as the ticks leave it out.
                load_start_s: sampler.load_start_s().map(|s| (s - offset).max(0.0)),
                ticks,
            }
        });
        Self {
            done,
            thread: Some(thread),
        }
    }

    /// Takes the last tick, sends it, and returns the timeline.
    pub fn finish(mut self) -> Timeline {
        self.done.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .expect("the progress thread does not panic")
    }
}

/// The coordinator's side: every agent's reports in order (its n-th is its n-th second), and
/// how many seconds have been shown.
#[derive(Default)]
pub struct Board {
    ticks: BTreeMap<String, Vec<Progress>>,
    shown: usize,
}

/// What the coordinator knows of an agent besides its reports, for `--metrics-listen`.
pub struct Standing {
    /// False once it is given up as missing.
    pub up: bool,
    /// True once it has sent its result or its failure.
    pub finished: bool,
    /// Whether its share has publishers, and subscribers.
    pub pubs: bool,
    pub subs: bool,
}

/// One row of the live view: an agent's rates over one of its seconds, or their sum.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub agent: String,
    pub t_s: f64,
    pub sent_per_sec: f64,
    pub received_per_sec: f64,
    pub errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<u64>,
}

/// A `--stream-stats` line of a distributed run: a row, tagged like a single run's lines.
#[derive(serde::Serialize)]
pub struct Line<'a> {
    /// The workload class the row is of, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<&'a str>,
    pub scenario: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<u32>,
    #[serde(flatten)]
    pub row: &'a Row,
}

impl Board {
    pub fn record(&mut self, agent: &str, p: Progress) {
        self.ticks.entry(agent.to_string()).or_default().push(p);
    }

    /// Rows for every second that all `running` agents have reported and that was not shown
    /// yet: the aggregate ("all") first, then one per agent. A second is shown only once every
    /// agent still running has reported it, so the aggregate is never a partial sum; agents
    /// that finished earlier simply have no row for it.
    pub fn rows(&mut self, running: &[&str]) -> Vec<Row> {
        let complete = running
            .iter()
            .map(|a| self.ticks.get(*a).map_or(0, Vec::len))
            .min()
            .unwrap_or_else(|| self.ticks.values().map(Vec::len).max().unwrap_or(0));
        let mut rows = Vec::new();
        while self.shown < complete {
            let k = self.shown;
            let mut all = Row {
                agent: "all".into(),
                t_s: 0.0,
                sent_per_sec: 0.0,
                received_per_sec: 0.0,
                errors: 0,
                p99_ns: None,
            };
            let mut mine = Vec::new();
            for (name, ticks) in &self.ticks {
                let Some((row, _)) = interval(name, ticks, k) else {
                    continue;
                };
                all.t_s = all.t_s.max(row.t_s);
                all.sent_per_sec += row.sent_per_sec;
                all.received_per_sec += row.received_per_sec;
                all.errors += row.errors;
                // The worst agent's P99 bounds the aggregate's from above; it is not the P99
                // of all samples, which the result's merged histogram gives.
                all.p99_ns = all.p99_ns.max(row.p99_ns);
                mine.push(row);
            }
            rows.push(all);
            rows.extend(mine);
            self.shown += 1;
        }
        rows
    }

    /// The figures `--metrics-listen` serves: each agent's at its latest second up to the last
    /// one shown (an agent that finished earlier stays at its own last one), with what the
    /// coordinator knows of it besides (`standing`). `finished` when the run is over.
    pub fn figures(&self, standing: impl Fn(&str) -> Standing, finished: bool) -> Figures {
        let Some(k) = self.shown.checked_sub(1) else {
            return Figures::default();
        };
        let agents = self
            .ticks
            .iter()
            .filter_map(|(name, ticks)| {
                let j = k.min(ticks.len().checked_sub(1)?);
                let (row, span_s) = interval(name, ticks, j)?;
                let (p, s) = (&ticks[j], standing(name));
                // A role is the agent's when it runs clients of it, or counted messages of it
                // all the same.
                let msgs = [
                    (Role::Pub, s.pubs, p.pub_msgs, row.sent_per_sec),
                    (Role::Sub, s.subs, p.sub_msgs, row.received_per_sec),
                ]
                .into_iter()
                .filter(|(_, runs, n, _)| *runs || *n > 0)
                .map(|(role, _, n, rate)| (role, n, rate))
                .collect();
                Some(AgentFigures {
                    agent: row.agent,
                    up: s.up,
                    finished: s.finished,
                    t_s: row.t_s,
                    span_s,
                    msgs,
                    errors: p.errors,
                    p99_ns: row.p99_ns,
                    current: j == k,
                })
            })
            .collect();
        Figures { agents, finished }
    }
}

/// Agent `name`'s `k`-th second as a row, with its length in seconds; `None` when it has not
/// reported it.
fn interval(name: &str, ticks: &[Progress], k: usize) -> Option<(Row, f64)> {
    let p = ticks.get(k)?;
    let before = k
        .checked_sub(1)
        .map(|j| ticks[j].clone())
        .unwrap_or_default();
    let span = p.elapsed_ms.saturating_sub(before.elapsed_ms).max(1) as f64 / 1000.0;
    let row = Row {
        agent: name.to_string(),
        t_s: p.elapsed_ms as f64 / 1000.0,
        sent_per_sec: p.pub_msgs.saturating_sub(before.pub_msgs) as f64 / span,
        received_per_sec: p.sub_msgs.saturating_sub(before.sub_msgs) as f64 / span,
        errors: p.errors.saturating_sub(before.errors),
        p99_ns: p.p99_ns,
    };
    Some((row, span))
}

/// Prints rows on stderr, one line each.
pub fn print(rows: &[Row]) {
    let mut err = std::io::stderr().lock();
    for r in rows {
        let p99 = r.p99_ns.map_or(String::new(), |v| {
            format!("  p99 {}", format::duration_ns(v as f64))
        });
        let _ = writeln!(
            err,
            "[{:>5.1}s] {:<12} sent {:>12}/s  received {:>12}/s  errors {}{p99}",
            r.t_s,
            r.agent,
            format::group(r.sent_per_sec.round() as u64),
            format::group(r.received_per_sec.round() as u64),
            r.errors
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(k: u64, sent: u64) -> Progress {
        Progress {
            elapsed_ms: 1000 * k,
            pub_msgs: sent,
            ..Progress::default()
        }
    }

    #[test]
    fn a_second_is_shown_only_when_every_running_agent_has_reported_it() {
        let mut b = Board::default();
        b.record("a", tick(1, 100));
        b.record("a", tick(2, 300));
        assert!(
            b.rows(&["a", "b"]).is_empty(),
            "b has not reported its first second"
        );
        b.record("b", tick(1, 50));
        let rows = b.rows(&["a", "b"]);
        let sent: Vec<(String, f64)> = rows
            .iter()
            .map(|r| (r.agent.clone(), r.sent_per_sec))
            .collect();
        assert_eq!(
            sent,
            [
                ("all".into(), 150.0),
                ("a".into(), 100.0),
                ("b".into(), 50.0)
            ]
        );
        // b finished: a's second second is shown without it, and only once.
        let rows = b.rows(&["a"]);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].sent_per_sec, rows[1].sent_per_sec), (200.0, 200.0));
        assert!(b.rows(&["a"]).is_empty());
    }

    #[test]
    fn an_agent_that_finished_earlier_keeps_its_last_figures_out_of_the_current_second() {
        let mut b = Board::default();
        b.record("a", tick(1, 100));
        b.record("b", tick(1, 50));
        b.record("a", tick(2, 300));
        assert!(b.figures(|_| standing(), false).agents.is_empty());
        b.rows(&["a", "b"]);
        b.rows(&["a"]);
        let f = b.figures(|_| standing(), false);
        type Seen<'a> = (&'a str, f64, bool, Vec<(Role, u64, f64)>);
        let got: Vec<Seen> = f
            .agents
            .iter()
            .map(|a| (a.agent.as_str(), a.t_s, a.current, a.msgs.clone()))
            .collect();
        // Publishers only: no sub role, though its count (0) is there.
        assert_eq!(
            got,
            [
                ("a", 2.0, true, vec![(Role::Pub, 300, 200.0)]),
                ("b", 1.0, false, vec![(Role::Pub, 50, 50.0)]),
            ]
        );
    }

    fn standing() -> Standing {
        Standing {
            up: true,
            finished: false,
            pubs: true,
            subs: false,
        }
    }
}
