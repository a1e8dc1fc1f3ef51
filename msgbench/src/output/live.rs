//! What a run shows while it is under way: once a second, one thread reads the run's
//! [`Meter`] into a [`Tick`] and hands it to the live line on stderr (on a terminal, or with
//! `--live`), to `--stream-stats` as one JSON line, to `--metrics-listen` as the page a scrape
//! gets, to `--web` as the live page's event, and to the timeline kept for the result.
//! Nothing here runs on a load path; a slow terminal or file delays only this thread.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::format::{duration_ns, group};
use crate::output::metrics::Feed;
use crate::stats::timeline::{Meter, Sampler, Tick, Timeline, MAX_TICKS};

/// `--stream-stats`: one file for every run of an invocation (`--runs` tags each line).
pub struct StreamStats {
    out: BufWriter<File>,
    path: std::path::PathBuf,
    /// Lines written so far: a file that got none can be removed when the run fails.
    lines: u64,
}

impl StreamStats {
    /// Creates (truncates) the file.
    ///
    /// # Errors
    /// [`Error::Io`] naming the flag and file.
    pub fn create(path: &Path) -> Result<Self> {
        let f = File::create(path).map_err(|e| {
            Error::io(
                format!("cannot write --stream-stats file '{}'", path.display()),
                e,
            )
        })?;
        Ok(Self {
            out: BufWriter::new(f),
            path: path.to_path_buf(),
            lines: 0,
        })
    }

    /// Appends a tick and flushes it, so a dashboard tailing the file sees it at once. A write
    /// that fails is reported once and the run goes on: the measurement matters more.
    fn write(&mut self, line: &StreamLine<'_>) -> bool {
        self.write_line(line)
    }

    /// Appends one line of another shape (a distributed run's per-agent rows).
    pub fn write_line(&mut self, line: &impl serde::Serialize) -> bool {
        let ok = serde_json::to_writer(&mut self.out, line).is_ok()
            && self.out.write_all(b"\n").is_ok()
            && self.out.flush().is_ok();
        if !ok {
            eprintln!(
                "warning: --stream-stats '{}': write failed; no more lines",
                self.path.display()
            );
        }
        self.lines += u64::from(ok);
        ok
    }

    /// Removes the file when no line was written to it: a run that failed before its first
    /// second leaves no empty file behind.
    pub fn remove_if_empty(&self) {
        if self.lines == 0 {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[derive(serde::Serialize)]
struct StreamLine<'a> {
    /// A workload's class; absent for a run alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    class: Option<&'a str>,
    scenario: &'a str,
    /// Which of `--runs` this is (1-based); absent for a single run.
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<u32>,
    #[serde(flatten)]
    tick: &'a Tick,
}

/// How a run shows itself.
#[derive(Clone)]
pub struct View {
    /// Print a line per second on stderr.
    pub line: bool,
    pub stream: Option<Arc<Mutex<StreamStats>>>,
    /// The workload's class this run is, whose name tags its `--stream-stats` lines.
    pub class: Option<String>,
    pub scenario: &'static str,
    /// `(k, n)`: this is run k of n.
    pub run: Option<(u32, u32)>,
    /// `--metrics-listen`: this run's side of the exposition.
    pub metrics: Option<Feed>,
    /// `--web`: this run's side of the live page.
    pub web: Option<crate::output::web::Feed>,
}

impl View {
    /// The live line goes to a terminal by default; `--live` forces it (into a log, say) and
    /// `--no-progress` turns it off.
    pub fn line_wanted(force: bool, progress: bool) -> bool {
        force || (progress && std::io::stderr().is_terminal())
    }
}

/// The running reader; [`Live::finish`] stops it and returns the timeline.
pub struct Live {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<Timeline>>,
}

impl Live {
    pub fn start(meter: Arc<Meter>, view: View) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let thread = std::thread::Builder::new()
            .name("msgbench-live".into())
            .spawn(move || watch(&meter, view, &flag))
            .expect("spawn the live view thread");
        Self {
            done,
            thread: Some(thread),
        }
    }

    /// Takes the last (partial) tick and returns everything seen.
    pub fn finish(mut self) -> Option<Timeline> {
        self.done.store(true, Ordering::Relaxed);
        self.thread.take().and_then(|t| {
            t.thread().unpark();
            t.join().ok()
        })
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

fn watch(meter: &Arc<Meter>, view: View, done: &AtomicBool) -> Timeline {
    watch_into(meter, view, done, &mut |l| eprintln!("{l}"))
}

/// [`watch`], with the live line handed to `print`.
fn watch_into(
    meter: &Arc<Meter>,
    mut view: View,
    done: &AtomicBool,
    print: &mut dyn FnMut(&str),
) -> Timeline {
    let mut sampler = Sampler::new(Arc::clone(meter));
    // msgbench's own CPU, read with each tick: what says whether the tool was the limit.
    let mut tool = crate::engine::tool_cpu::ToolCpu::default();
    let mut ticks = Vec::new();
    let mut truncated = false;
    let mut stream_ok = true;
    let mut next = 1u64;
    loop {
        // Asleep until the next second is due, or woken by `finish`: one wake-up a second, not
        // fifty, so on a busy machine this thread takes no turn from the run's own.
        let finished = done.load(Ordering::Relaxed);
        let elapsed = meter.elapsed();
        let due = elapsed >= Duration::from_secs(next);
        if !(finished || due) {
            std::thread::park_timeout(Duration::from_secs(next) - elapsed);
            continue;
        }
        let mut tick = sampler.tick();
        tick.tool = tool.tick();
        // The last tick of a run is usually partial; one with nothing in it is noise, and so is
        // any empty one that began after the load was over (it spans only the clean-up). Errors
        // counted at the end (requests that found no responder) are something: such a tick
        // stays, or the timeline and the metrics page would miss what the result counts.
        let empty = tick.msgs.iter().all(|&m| m == 0)
            && tick.latency.is_none()
            && tick.errors == 0
            && tick
                .conns
                .is_none_or(|c| c.opened_per_sec == 0.0 && c.lost == 0);
        let after_load = meter.ended_by(tick.t_s - tick.span_s + 1e-9);
        if !(finished && empty && (tick.span_s < 0.5 || after_load)) {
            // The last tick too: a run that ends just before a whole second would otherwise
            // leave its last second out of the live lines (2 lines for a 3 s run).
            let names = meter.series_names();
            if view.line {
                print(&line(&tick, view.run, names));
            }
            if let (Some(s), true) = (&view.stream, stream_ok) {
                let l = StreamLine {
                    class: view.class.as_deref(),
                    scenario: view.scenario,
                    run: view.run.map(|(k, _)| k),
                    tick: &tick,
                };
                stream_ok = s.lock().map(|mut s| s.write(&l)).unwrap_or(false);
            }
            if let Some(m) = &mut view.metrics {
                m.show(&tick, sampler.totals(), finished);
            }
            if let Some(w) = &mut view.web {
                w.name_series(names);
                w.show(&tick, sampler.totals(), &sampler.clients(), finished);
            }
            if ticks.len() < MAX_TICKS {
                ticks.push(tick);
            } else {
                truncated = true;
            }
        }
        if finished {
            if let Some(m) = &mut view.metrics {
                m.finish();
            }
            if let Some(w) = &mut view.web {
                w.finish();
            }
            break;
        }
        next += 1;
    }
    Timeline {
        interval_s: 1.0,
        clients: sampler.clients(),
        ticks,
        truncated,
        load_start_s: sampler.load_start_s(),
    }
}

/// `  3s  sent 1,203,113/s  received 1,201,000/s  p99 1.23 ms  errors 0`, each side named
/// by what it counts (`names`: "publishes", "acknowledgements", …).
fn line(t: &Tick, run: Option<(u32, u32)>, [pubs, subs]: [&str; 2]) -> String {
    let mut s = String::new();
    if let Some((k, n)) = run {
        s.push_str(&format!("run {k}/{n} "));
    }
    // A tick shorter than its second (the run's last) says how long it was: its rates are
    // over that span.
    if t.span_s < 0.95 {
        s.push_str(&format!(
            "{:>4.1}s (last {} s)",
            t.t_s,
            crate::format::sig(t.span_s, 2, true)
        ));
    } else {
        s.push_str(&format!("{:>4.0}s", t.t_s));
    }
    if let Some(st) = &t.stage {
        s.push_str(&format!(
            "  stage {}/{} at {}/s",
            st.index + 1,
            st.of,
            group(st.target_rate.round() as u64)
        ));
    }
    if let Some(c) = &t.conns {
        s.push_str(&format!(
            "  up {}  opened {}/s  lost {}",
            group(c.up),
            group(c.opened_per_sec.round() as u64),
            group(c.lost)
        ));
    }
    // A conns run's load is its connections: its checks are not metered as messages.
    if t.conns.is_none() && (t.sent_per_sec > 0.0 || t.received_per_sec == 0.0) {
        s.push_str(&format!(
            "  {pubs} {}/s",
            group(t.sent_per_sec.round() as u64)
        ));
    }
    if t.received_per_sec > 0.0 {
        s.push_str(&format!(
            "  {subs} {}/s",
            group(t.received_per_sec.round() as u64)
        ));
    }
    if let Some(l) = &t.latency {
        s.push_str(&format!("  p99 {}", duration_ns(l.p99_ns as f64)));
    }
    s.push_str(&format!("  errors {}", group(t.errors)));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::throughput::Role;

    #[test]
    fn the_timeline_adds_up_to_the_counters() {
        let dir = crate::testdir::TestDir::new("live-ticks");
        let path = dir.path().join("ticks.jsonl");
        let stream = Arc::new(Mutex::new(StreamStats::create(&path).unwrap()));
        let meter = Arc::new(Meter::default());
        let view = View {
            line: false,
            stream: Some(Arc::clone(&stream)),
            class: None,
            scenario: "pub",
            run: None,
            metrics: None,
            web: None,
        };
        let live = Live::start(Arc::clone(&meter), view);
        let c = meter.client(Role::Pub, 0, false);
        for n in 1..=30u64 {
            c.msgs.store(n * 1000, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(50));
            // Half-way, until the first whole second has been taken (its line is written): the
            // rest then falls in a later tick, whenever a busy machine ran the live thread. (The
            // deadline only guards against a hang.)
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while n == 15
                && std::fs::read_to_string(&path)
                    .unwrap_or_default()
                    .is_empty()
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let t = live.finish().expect("a timeline");
        let total: u64 = t.ticks.iter().map(|k| k.msgs.iter().sum::<u64>()).sum();
        assert_eq!(total, 30_000);
        // One whole second at least, and the rest.
        assert!(t.ticks.len() >= 2, "{} ticks", t.ticks.len());
        assert_eq!(t.clients.len(), 1);
    }

    #[test]
    fn errors_counted_after_the_last_message_stay_in_the_timeline() {
        // Requests that found no responder are counted when the run ends, after its last
        // message: the tick that carries only them is not an empty one to drop.
        let dir = crate::testdir::TestDir::new("live-late-errors");
        let path = dir.path().join("ticks.jsonl");
        let meter = Arc::new(Meter::default());
        let errors = Arc::new(crate::error::ErrorCounts::default());
        meter.watch_errors(&errors);
        let view = View {
            line: false,
            stream: Some(Arc::new(Mutex::new(StreamStats::create(&path).unwrap()))),
            class: None,
            scenario: "request",
            run: None,
            metrics: None,
            web: None,
        };
        let live = Live::start(Arc::clone(&meter), view);
        let c = meter.client(Role::Pub, 0, false);
        c.msgs.store(10, Ordering::Relaxed);
        meter.counted_until([Some(std::time::Instant::now())]);
        // The messages' tick is taken (its line written) before the errors come. (The deadline
        // only guards against a hang.)
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while std::fs::read_to_string(&path)
            .unwrap_or_default()
            .is_empty()
        {
            assert!(std::time::Instant::now() < deadline, "no tick in 60 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        errors.add_n(crate::error::ErrorKind::NoResponders, 10);
        let tl = live.finish().unwrap();
        let counted: u64 = tl.ticks.iter().map(|t| t.errors).sum();
        assert_eq!(counted, 10, "{:?}", tl.ticks);
    }

    #[test]
    fn a_run_that_ends_before_its_next_second_still_shows_its_last_line() {
        // The run ends 0.3 s in: its one tick is the last, taken when the run is over, and
        // the live line must show it (it once showed only the whole seconds before the end).
        let meter = Arc::new(Meter::default());
        let view = View {
            line: true,
            stream: None,
            class: None,
            scenario: "pub",
            run: None,
            metrics: None,
            web: None,
        };
        let c = meter.client(Role::Pub, 0, false);
        c.msgs.store(300, Ordering::Relaxed);
        let done = AtomicBool::new(false);
        let mut lines = Vec::new();
        let tl = std::thread::scope(|s| {
            let h = s.spawn(|| {
                watch_into(&meter, view, &done, &mut |l: &str| {
                    lines.push(l.to_string())
                })
            });
            std::thread::sleep(Duration::from_millis(300));
            done.store(true, Ordering::Relaxed);
            h.join().unwrap()
        });
        // Every tick of the timeline has its line, the last one included. (Unless a busy
        // machine held this thread past the first second, the one tick is the partial last.)
        assert_eq!(lines.len(), tl.ticks.len(), "{lines:?} {:?}", tl.ticks);
        let last = tl.ticks.last().expect("the messages' tick");
        if last.span_s < 0.95 {
            assert!(lines[lines.len() - 1].contains("(last 0."), "{lines:?}");
        }
    }

    const NAMES: [&str; 2] = ["sent", "received"];

    #[test]
    fn each_side_is_named_by_what_it_counts() {
        let t = Tick {
            t_s: 2.0,
            span_s: 1.0,
            msgs: vec![],
            sent_per_sec: 1000.0,
            received_per_sec: 998.0,
            latency: None,
            errors: 0,
            stage: None,
            server: None,
            tool: None,
            conns: None,
        };
        assert_eq!(
            line(&t, None, ["publishes", "acknowledgements"]),
            "   2s  publishes 1,000/s  acknowledgements 998/s  errors 0"
        );
    }

    #[test]
    fn the_line_shows_rates_p99_and_errors() {
        let t = Tick {
            t_s: 3.0,
            span_s: 1.0,
            msgs: vec![],
            sent_per_sec: 1_203_113.0,
            received_per_sec: 1_201_000.0,
            latency: Some(crate::stats::timeline::TickLatency {
                count: 1,
                p50_ns: 1,
                p99_ns: 1_230_000,
                max_ns: 2,
            }),
            errors: 2,
            stage: None,
            conns: None,
            server: None,
            tool: None,
        };
        assert_eq!(
            line(&t, Some((2, 5)), NAMES),
            "run 2/5    3s  sent 1,203,113/s  received 1,201,000/s  p99 1.23 ms  errors 2"
        );
        let staged = Tick {
            stage: Some(crate::stats::timeline::TickStage {
                index: 2,
                of: 5,
                target_rate: 3000.0,
            }),
            ..t
        };
        assert_eq!(
            line(&staged, None, NAMES),
            "   3s  stage 3/5 at 3,000/s  sent 1,203,113/s  received 1,201,000/s  p99 1.23 ms  \
             errors 2"
        );
        // A conns run: its connections, and no message rates it does not meter.
        let conns = Tick {
            sent_per_sec: 0.0,
            received_per_sec: 0.0,
            latency: None,
            stage: None,
            conns: Some(crate::stats::timeline::TickConns {
                up: 1500,
                opened_per_sec: 499.6,
                lost: 3,
            }),
            ..staged
        };
        assert_eq!(
            line(&conns, None, NAMES),
            "   3s  up 1,500  opened 500/s  lost 3  errors 2"
        );
    }
}
