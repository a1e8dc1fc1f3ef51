//! Following a distributed run as it goes: the coordinator's loop that takes the agents'
//! heartbeats and reports, starts them together once all are ready, relays the publishers'
//! counts, marks the silent, stops the rest when one fails or the run is overdue, and shows
//! the figures each turn.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use super::shared::Start;
use super::{agent_info, standing, Coordinated, Tracked};
use crate::control::clock;
use crate::control::msg::{self, Abort, Published, Report};

/// Where following a run stands: started, the publishers' counts relayed, when it is
/// overdue, when the agents were told to stop, and the progress board.
#[derive(Default)]
struct Following {
    started: bool,
    relayed: bool,
    overdue_at: Option<Instant>,
    aborted: Option<Instant>,
    board: crate::dist::progress::Board,
    /// The servers' sampler, from the common start.
    sampling: Option<crate::session::servers::Sampling>,
}

impl Coordinated<'_> {
    /// Reads the agents' reports until every agent is done or missing: each turn takes what
    /// came in, starts the run once all are ready (and the servers' sampler with it), relays
    /// the publishers' counts, marks the silent and stops the rest when one fails, and shows
    /// the figures. Returns the sampler, still running, when the run started one.
    pub(super) fn follow(
        &self,
        run: &str,
        reports: &std::sync::mpsc::Receiver<crate::control::Inbound>,
        tracked: &mut [Tracked],
        mut metrics: Option<&mut crate::output::metrics::AgentsFeed>,
        mut page: Option<&mut crate::output::web::AgentsFeed>,
        stop: &AtomicBool,
    ) -> Option<crate::session::servers::Sampling> {
        let mut st = Following::default();
        while !tracked
            .iter()
            .all(|t| t.done.is_some() || t.missing.is_some())
        {
            if !self.listen(run, reports, tracked, &mut st.board) {
                break;
            }
            // Not once its agents were told to stop: a start then would set them going again.
            if !st.started && st.aborted.is_none() && tracked.iter().all(|t| t.ready) {
                if let Some((begins, overdue)) = self.start(run, tracked) {
                    st.overdue_at = overdue;
                    st.sampling = self.monitors.sample_from(begins);
                    st.started = true;
                }
            }
            if !st.relayed
                && tracked
                    .iter()
                    .filter(|t| t.seg.pubs > 0)
                    .all(|t| t.published.is_some())
            {
                self.relay_published(run, tracked);
                st.relayed = true;
            }
            self.mark_silent(run, tracked);
            if self.stop_if_needed(run, tracked, &mut st, stop) {
                break;
            }
            if self.live || self.stream.is_some() || metrics.is_some() || page.is_some() {
                self.show(
                    tracked,
                    &mut st.board,
                    metrics.as_deref_mut(),
                    page.as_deref_mut(),
                );
            }
        }
        if metrics.is_some() || page.is_some() {
            // Every second not shown yet (a run cut short leaves some), then the final figures.
            st.board.rows(&[]);
            let last = st.board.figures(|a| standing(tracked, a), true);
            if let Some(p) = page {
                p.show(&last, &agent_info(tracked), true);
            }
            if let Some(m) = metrics {
                m.show(last);
            }
        }
        st.sampling
    }

    /// Takes the heartbeats and at most one report that came in. False when the control
    /// connection is gone: every agent not done is then missing.
    fn listen(
        &self,
        run: &str,
        reports: &std::sync::mpsc::Receiver<crate::control::Inbound>,
        tracked: &mut [Tracked],
        board: &mut crate::dist::progress::Board,
    ) -> bool {
        self.take_heartbeats(run, tracked);
        match reports.recv_timeout(Duration::from_millis(50)) {
            Ok(m) => {
                if let Ok(r) = serde_json::from_slice::<Report>(&m.payload) {
                    self.take(r, tracked, board);
                }
                true
            }
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => {
                for t in tracked.iter_mut().filter(|t| t.done.is_none()) {
                    t.missing = Some("the coordinator lost its control connection".into());
                }
                false
            }
        }
    }

    /// Tells every agent the common start, in its own clock; returns that start on this
    /// machine's clock, and when a run for a duration is overdue. A workload's class joins the
    /// classes' one start: nothing until the last class is ready.
    fn start(&self, run: &str, tracked: &[Tracked]) -> Option<(Instant, Option<Instant>)> {
        let rtt = tracked.iter().map(|t| t.clock.rtt_ns).max().unwrap_or(0);
        let Start { begins, at_ns: at } = match self.together {
            Some((common, index)) => common.join(index, rtt)?,
            None => Start::alone(rtt),
        };
        for t in tracked {
            self.send(
                &t.hb.name,
                "start",
                run,
                &msg::Start {
                    run: run.into(),
                    at_ns: at + t.clock.offset_ns,
                },
            );
        }
        // A run for a duration has a time by which every agent should be done: an agent still
        // at it well after is hung, though its heartbeats go on.
        let overdue = self.duration().map(|d| {
            let ahead = Duration::from_nanos((at - clock::now_ns()).max(0) as u64);
            Instant::now() + ahead + d + 2 * self.silent_limit
        });
        Some((begins, overdue))
    }

    /// Sends every agent every publisher's count, once all publishing agents have reported.
    fn relay_published(&self, run: &str, tracked: &[Tracked]) {
        let mut sent = vec![0u64; tracked.first().map_or(0, |t| t.seg.pubs_total as usize)];
        for t in tracked {
            for (i, n) in t.published.iter().flatten().enumerate() {
                sent[t.seg.pub_base as usize + i] = *n;
            }
        }
        for t in tracked {
            self.send(
                &t.hb.name,
                "published",
                run,
                &Published {
                    run: run.into(),
                    sent: sent.clone(),
                },
            );
        }
    }

    /// Takes every heartbeat that came in: the agent was heard, and says what it is doing in
    /// `run`.
    fn take_heartbeats(&self, run: &str, tracked: &mut [Tracked]) {
        self.heard.take();
        for t in tracked.iter_mut().filter(|t| t.missing.is_none()) {
            if let Some((at, doing)) = self.heard.of(&t.hb.name, run) {
                if at > t.heard {
                    t.heard = at;
                    t.doing = doing;
                }
            }
        }
    }

    /// Marks missing every agent silent for longer than the limit, saying what it was last
    /// seen doing. First a round trip on the control connection: a coordinator starved of the
    /// CPU reads its heartbeats late, and that is no agent's silence.
    fn mark_silent(&self, run: &str, tracked: &mut [Tracked]) {
        let over = |t: &Tracked| {
            t.done.is_none() && t.missing.is_none() && t.heard.elapsed() > self.silent_limit
        };
        if !tracked.iter().any(over) {
            return;
        }
        if self.bus.round_trip(self.silent_limit) {
            self.take_heartbeats(run, tracked);
        }
        for t in tracked.iter_mut().filter(|t| over(t)) {
            let doing = t.doing.as_deref().unwrap_or("before its run began");
            eprintln!(
                "error: agent {} has been silent for {}, last seen {doing}{}; telling the \
                 others to stop",
                t.hb.name,
                humantime::format_duration(Duration::from_millis(
                    t.heard.elapsed().as_millis() as u64
                )),
                last_progress(t)
            );
            // The result's text adds the last progress to this itself.
            t.missing = Some(format!(
                "silent for more than {} (it died, hung or lost the control server), last seen \
                 {doing}",
                humantime::format_duration(self.silent_limit)
            ));
        }
    }

    /// Tells the agents still running to stop when the run is overdue, one failed or went
    /// missing, or the coordinator was interrupted. True once they have had one more
    /// `--agent-silence` to send what they measured: the rest are then missing.
    fn stop_if_needed(
        &self,
        run: &str,
        tracked: &mut [Tracked],
        st: &mut Following,
        stop: &AtomicBool,
    ) -> bool {
        let abort_all = |tracked: &[Tracked], why: &str| {
            for t in tracked
                .iter()
                .filter(|t| t.done.is_none() && t.missing.is_none())
            {
                self.send(
                    &t.hb.name,
                    "abort",
                    run,
                    &Abort {
                        run: run.into(),
                        reason: why.into(),
                    },
                );
            }
        };
        // An agent that failed leaves the others waiting for it (its start, its counts):
        // they are stopped as for a missing one.
        if st.aborted.is_none() && st.overdue_at.is_some_and(|at| Instant::now() > at) {
            for t in tracked.iter().filter(|t| t.done.is_none()) {
                // The run's length as its scenario reckons it (a `conns` run's is its opening,
                // hold and drain), not always a --duration typed.
                eprintln!(
                    "error: agent {} is still running long after the run should have ended \
                     ({} from the start); telling it to stop",
                    t.hb.name,
                    humantime::format_duration(self.duration().unwrap_or_default())
                );
            }
            abort_all(tracked, "the run is overdue");
            st.aborted = Some(Instant::now());
        }
        let someone_missing = tracked
            .iter()
            .any(|t| t.missing.is_some() || matches!(t.done, Some((None, _))));
        if st.aborted.is_none() && (someone_missing || stop.load(Ordering::Relaxed)) {
            abort_all(
                tracked,
                if someone_missing {
                    "another agent failed or went missing"
                } else {
                    "the coordinator was interrupted"
                },
            );
            st.aborted = Some(Instant::now());
        }
        if st
            .aborted
            .is_some_and(|at| at.elapsed() > self.silent_limit)
        {
            for t in tracked
                .iter_mut()
                .filter(|t| t.done.is_none() && t.missing.is_none())
            {
                t.missing = Some("no result after being told to stop".into());
            }
            return true;
        }
        false
    }

    /// The live line, `--stream-stats` rows, `/metrics` and the live page, from the board.
    fn show(
        &self,
        tracked: &[Tracked],
        board: &mut crate::dist::progress::Board,
        metrics: Option<&mut crate::output::metrics::AgentsFeed>,
        page: Option<&mut crate::output::web::AgentsFeed>,
    ) {
        let running: Vec<&str> = tracked
            .iter()
            .filter(|t| t.done.is_none() && t.missing.is_none())
            .map(|t| t.hb.name.as_str())
            .collect();
        let rows = board.rows(&running);
        if self.live {
            crate::dist::progress::print(&rows);
        }
        if let Some(s) = self.stream {
            let mut s = s.lock().unwrap_or_else(|p| p.into_inner());
            for row in &rows {
                s.write_line(&crate::dist::progress::Line {
                    class: self.class,
                    scenario: self.scenario,
                    run: self.run_k,
                    row,
                });
            }
        }
        // Published again when an agent finishes or goes missing, too.
        if let Some(m) = metrics {
            m.show(board.figures(|a| standing(tracked, a), false));
        }
        if let Some(p) = page {
            p.show(
                &board.figures(|a| standing(tracked, a), false),
                &agent_info(tracked),
                false,
            );
        }
    }
}

/// An agent's last progress report, as " (3s in: 6,000 sent, 5,990 received)"; empty before
/// its first.
fn last_progress(t: &Tracked) -> String {
    t.last.as_ref().map_or_else(String::new, |p| {
        format!(
            " ({} in: {} sent, {} received)",
            humantime::format_duration(Duration::from_millis(p.elapsed_ms / 100 * 100)),
            crate::format::group(p.pub_msgs),
            crate::format::group(p.sub_msgs)
        )
    })
}
