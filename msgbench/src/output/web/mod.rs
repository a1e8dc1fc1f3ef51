//! `--web ADDR`: a live page of the run on `http://ADDR/`, for one person at a browser.
//!
//! The page's figures are the live view's ticks, the very ones the result's `timeline` records
//! (and `--metrics-listen` serves), with the totals they add up to: once a second the live
//! thread turns its tick into one event ([`Feed::show`]), which goes to every open page over
//! Server-Sent Events. The charts in it are drawn by the HTML report's own code
//! ([`crate::report::html::live_charts`]) and the page carries the report's style and script,
//! so the report and the live page are one design. When the run ends the page gets the final
//! result and offers the result JSON and the HTML report for download ([`Web::finish`]);
//! `--web-linger` keeps it up that long after the run.
//!
//! A browser never slows the run: each page's events go through a channel of [`QUEUE`]
//! places, filled with `try_send`, so a page that falls behind loses updates (the next one
//! brings it up to date: every event carries the whole picture), and one that stops reading
//! is dropped when its socket's writes stall. Nor does a browser hold up the end: when the
//! server stops, each page has a moment to send what it has queued, and a page that stopped
//! reading is then cut off. The server is the one `--metrics-listen` uses
//! ([`crate::output::serve`]): its own thread, bounded connections, timeouts for clients that
//! say nothing. The page is self-contained (its style and script are inlined, and its
//! Content-Security-Policy lets it fetch nothing but its own stream), and it carries no
//! credentials: server URLs appear on it only in the final result,
//! as the text and `--json` outputs show them (without their user part), and the downloads
//! are the result as `--json` writes it.

mod agents;
mod http;
mod page;

pub use agents::{AgentInfo, AgentsFeed};

use std::collections::VecDeque;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::mpsc::{channel, Receiver, Sender};

use crate::error::{Error, Result};
use crate::format;
use crate::output::metrics::why;
use crate::output::serve::{Limits, Server};
use crate::result::RunResult;
use crate::stats::throughput::Role;
use crate::stats::timeline::{Tick, TimelineClient, Totals};

const FLAG: &str = "--web";
/// Events a page may be behind before its updates are dropped.
pub const QUEUE: usize = 4;
/// How often `--web-linger`'s wait looks at the clock and Ctrl-C.
const POLL: Duration = Duration::from_millis(20);
/// The last seconds drawn on the page's charts: a day-long soak redrawn whole every second
/// would cost the live thread more than a page is worth. The figures are every tick's.
const WINDOW: usize = 600;

/// The listening server; dropping it stops it.
pub struct Web {
    hub: Arc<Hub>,
    /// The SLOs the latency chart draws (`--threshold`, a search's `--slo`).
    slos: Vec<String>,
    addr: SocketAddr,
    server: Server,
}

/// What every page is sent, and the pages' channels.
#[derive(Default)]
pub(super) struct Hub {
    state: Mutex<State>,
}

#[derive(Default)]
pub(super) struct State {
    /// The last tick's event of each run shown (one, or a workload's classes, keyed by class),
    /// for a page that opens between ticks.
    ticks: Vec<(String, Arc<str>)>,
    /// How many runs tick at once (a workload's classes): a page's queue holds that many
    /// seconds' events.
    runs: usize,
    /// A capacity search's knee chart event, once a probe has finished.
    knee: Option<Arc<str>>,
    /// The final result's event, once the run has ended.
    result: Option<Arc<str>>,
    /// The result as `--json` writes it, and its HTML report.
    json: Option<Bytes>,
    report: Option<Bytes>,
    pages: Vec<Sender<Arc<str>>>,
    /// The server is stopping: a page that opens now gets what there is, and its stream ends.
    closed: bool,
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Offers `event` to every page; a page whose channel is full misses it, a page gone is
    /// forgotten. Never waits for a page.
    fn publish(&self, event: &Arc<str>) {
        self.lock()
            .pages
            .retain(|p| !matches!(p.try_send(Arc::clone(event)), Err(TrySendError::Closed(_))));
    }

    /// A new page's channel, primed with what it would have seen last (a knee chart, each
    /// run's tick and a result), of [`QUEUE`] places for each run that ticks at once.
    fn subscribe(&self) -> Receiver<Arc<str>> {
        let mut s = self.lock();
        let (tx, rx) = channel(QUEUE * s.runs.max(1));
        let ticks = s.ticks.iter().map(|(_, e)| e);
        for e in s.knee.iter().chain(ticks).chain(s.result.iter()) {
            let _ = tx.try_send(Arc::clone(e));
        }
        if !s.closed {
            s.pages.push(tx);
        }
        rx
    }

    /// Keeps `event` as the last tick of the run `key` names.
    fn put_tick(&self, key: &str, event: &Arc<str>) {
        let mut s = self.lock();
        match s.ticks.iter_mut().find(|(k, _)| k == key) {
            Some((_, e)) => *e = Arc::clone(event),
            None => s.ticks.push((key.to_string(), Arc::clone(event))),
        }
    }

    /// The server is stopping: every page's channel closes, so its stream ends as soon as it
    /// has sent what was queued (the final result among it).
    fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        s.pages.clear();
    }
}

impl Web {
    /// Listens on `addr` (`HOST:PORT`) and starts serving the page. A non-loopback address is
    /// served, with a one-line warning: the page is then anyone's who can reach it.
    ///
    /// # Errors
    /// [`Error::Listen`] naming the flag and address, when it cannot be listened on.
    pub fn bind(addr: &str) -> Result<Self> {
        let refuse = |reason: String| Error::Listen {
            flag: FLAG,
            addr: addr.to_string(),
            reason,
        };
        let listener = TcpListener::bind(addr).map_err(|e| refuse(why(&e)))?;
        let local = listener.local_addr().map_err(|e| refuse(why(&e)))?;
        if !local.ip().is_loopback() {
            eprintln!(
                "warning: {FLAG} {addr} is not a loopback address: anyone who can reach it can \
                 watch the run and download its result"
            );
        }
        let hub = Arc::new(Hub::default());
        let site = Arc::new(http::Pages::new(Arc::clone(&hub)));
        let server = Server::start(listener, "msgbench-web", site, Limits::default())
            .map_err(|e| refuse(why(&e)))?;
        Ok(Self {
            hub,
            slos: Vec::new(),
            addr: local,
            server,
        })
    }

    /// Draws `slos` (as `--threshold` takes them: `p99<2ms`) on the latency chart of every
    /// run shown after this; those that bound no drawn series (P50, P99, max) draw nothing.
    pub fn with_slos(mut self, slos: Vec<String>) -> Self {
        self.slos = slos;
        self
    }

    /// The address bound (its port is the one chosen when the user gave port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What the live view of run `k` of `n` (named `run_id`) publishes through.
    pub fn feed(&self, scenario: &'static str, run_id: &str, run: Option<(u32, u32)>) -> Feed {
        let title = match run {
            Some((k, n)) => format!("{scenario} (run {k} of {n})"),
            None => scenario.to_string(),
        };
        Feed {
            hub: Arc::clone(&self.hub),
            class: None,
            scenario,
            slos: self.slos.clone(),
            title,
            run_id: run_id.to_string(),
            ticks: VecDeque::new(),
            last: None,
            names: ["sent", "received"],
        }
    }

    /// Readies the page for a workload of `classes` classes, each shown in a section of its
    /// own.
    pub fn expect_classes(&self, classes: usize) {
        self.hub.lock().runs = classes;
    }

    /// What the live view of a workload's class `index` (`class`, running `scenario` as
    /// `run_id`) publishes through: its section of the page (the sections in the classes'
    /// order), its latency chart drawing the class's `slos`.
    pub fn class_feed(
        &self,
        index: usize,
        class: &str,
        scenario: &'static str,
        run_id: &str,
        slos: Vec<String>,
    ) -> Feed {
        let mut f = self.feed(scenario, run_id, None);
        f.title = format!("class {class} ({})", scenario.replace('.', " "));
        f.class = Some((index, class.to_string()));
        f.slos = slos;
        f
    }

    /// What the live view of one probe run of a capacity search publishes through: `run` of
    /// `runs` at `rate`.
    pub fn probe_feed(&self, scenario: &'static str, rate: f64, run: u32, runs: u32) -> Feed {
        let mut f = self.feed(scenario, "", None);
        f.title = format!(
            "{scenario}, probe at {}/s (run {run} of {runs})",
            format::grouped(rate, 0)
        );
        f
    }

    /// A capacity search's progress: its document so far (`capacity`, the probes that have
    /// finished) drawn as the report's knee chart, which so builds up probe by probe.
    pub fn show_knee(&self, capacity: &Value, label: &str, probes: usize) {
        let event: Arc<str> = Arc::from(
            json!({
                "kind": "knee",
                "probes": probes,
                "chart": crate::report::html::live_knee(capacity, label),
            })
            .to_string(),
        );
        self.hub.lock().knee = Some(Arc::clone(&event));
        self.hub.publish(&event);
    }

    /// What the coordinator of run `run_k` on agents (named `run_id`) publishes through.
    pub fn agents_feed(
        &self,
        scenario: &'static str,
        run_id: &str,
        run_k: Option<u32>,
    ) -> AgentsFeed {
        AgentsFeed {
            hub: Arc::clone(&self.hub),
            scenario,
            run_id: run_id.to_string(),
            run_k,
            slos: self.slos.clone(),
            p99: Vec::new(),
            last: None,
        }
    }

    /// The run is over: the page shows `result` and offers it (as `--json` writes it) and its
    /// HTML report for download.
    pub fn finish(&self, result: &RunResult) {
        use crate::export::{json::Json, text::Text, Exporter};
        let text = String::from_utf8_lossy(&Text.serialize(result)).into_owned();
        let json = Json.serialize(result);
        let docs = one_doc(&json, crate::report::DocKind::Result);
        self.finish_with(json, text, &result.run_id, docs);
    }

    /// The search is over: the page shows its summary and offers its document (`json`, as
    /// `--json` writes it) and its HTML report for download.
    pub fn finish_search(&self, json: Vec<u8>, text: String, run_id: &str) {
        let docs = one_doc(&json, crate::report::DocKind::Capacity);
        self.finish_with(json, text, run_id, docs);
    }

    /// The workload is over: the page shows its report and offers its document (as `--json`
    /// writes it) and the HTML report of its classes side by side.
    pub fn finish_mix(&self, mix: &crate::result::mix::MixResult) {
        let mut json = serde_json::to_vec_pretty(mix).expect("a workload's result serialises");
        json.push(b'\n');
        let text = String::from_utf8_lossy(&crate::export::text::mix(mix)).into_owned();
        let docs = (mix.classes.iter())
            .filter_map(|c| {
                let value = serde_json::to_value(c.result.as_ref()?).ok()?;
                Some(crate::report::Doc {
                    path: "result.json".into(),
                    name: format!("result.json: {}", c.class),
                    kind: crate::report::DocKind::Result,
                    value,
                })
            })
            .collect();
        self.finish_with(json, text, &mix.workload, Ok(docs));
    }

    fn finish_with(
        &self,
        json: Vec<u8>,
        text: String,
        run_id: &str,
        docs: std::result::Result<Vec<crate::report::Doc>, String>,
    ) {
        let report =
            docs.and_then(|docs| crate::report::html::render(&docs).map_err(|e| e.to_string()));
        let (report, report_error) = match report {
            Ok(html) => (Some(Bytes::from(html)), None),
            Err(e) => (None, Some(e)),
        };
        let event: Arc<str> = Arc::from(
            json!({
                "kind": "result",
                "run_id": run_id,
                "text": text,
                "json": "/result.json",
                "report": report.as_ref().map(|_| "/report.html"),
                "report_error": report_error,
            })
            .to_string(),
        );
        {
            let mut s = self.hub.lock();
            s.json = Some(Bytes::from(json));
            s.report = report;
            s.result = Some(Arc::clone(&event));
        }
        self.hub.publish(&event);
    }

    /// Keeps the page up for `limit` after the run (`--web-linger`; Ctrl-C ends the wait),
    /// then stops the server.
    pub fn linger(mut self, limit: Duration, stop: &AtomicBool) {
        if !limit.is_zero() && !stop.load(Ordering::Relaxed) {
            eprintln!(
                "{FLAG}: the final result stays on http://{}/ for {} (--web-linger; Ctrl-C ends \
                 the wait)",
                self.addr,
                humantime::format_duration(limit)
            );
            let start = Instant::now();
            while start.elapsed() < limit && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(POLL);
            }
        }
        self.stop();
    }

    /// Ends every page's stream after what it has queued, then stops the server (which gives
    /// them a moment to send it, and cuts off a page that stopped reading).
    fn stop(&mut self) {
        self.hub.close();
        self.server.stop();
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A document as the report reads it, from the JSON `--json` writes.
fn one_doc(
    json: &[u8],
    kind: crate::report::DocKind,
) -> std::result::Result<Vec<crate::report::Doc>, String> {
    let value = serde_json::from_slice::<Value>(json).map_err(|e| e.to_string())?;
    Ok(vec![crate::report::Doc {
        path: "result.json".into(),
        name: "result.json".into(),
        kind,
        value,
    }])
}

/// One run's side of the page, owned by its live view: each tick it is shown becomes the
/// event every page is sent.
#[derive(Clone)]
pub struct Feed {
    hub: Arc<Hub>,
    /// The workload's class this run is, with its place among them: the page shows it in a
    /// section of its own.
    class: Option<(usize, String)>,
    scenario: &'static str,
    /// What the page calls this run: the scenario, and which run or probe it is.
    title: String,
    /// The SLO lines of its latency chart.
    slos: Vec<String>,
    run_id: String,
    /// The ticks the charts draw (the last [`WINDOW`]).
    ticks: VecDeque<Tick>,
    /// The last tick shown, its totals and clients, and whether it was shown as final.
    last: Option<(Tick, Totals, Vec<TimelineClient>, bool)>,
    /// What the publishers' and subscribers' messages are ("publishes", "acknowledgements").
    names: [&'static str; 2],
}

impl Feed {
    /// Names the publishers' and subscribers' series, as the run counts them.
    pub fn name_series(&mut self, names: [&'static str; 2]) {
        self.names = names;
    }

    /// Publishes `tick`, the `totals` read with it and the run's `clients`; `last` when the
    /// run has ended.
    pub fn show(&mut self, tick: &Tick, totals: &Totals, clients: &[TimelineClient], last: bool) {
        if self.ticks.len() == WINDOW {
            self.ticks.pop_front();
        }
        self.ticks.push_back(tick.clone());
        let event: Arc<str> = Arc::from(self.event(tick, totals, clients, last).to_string());
        let key = self.class.as_ref().map_or("", |(_, name)| name.as_str());
        self.hub.put_tick(key, &event);
        self.hub.publish(&event);
        self.last = Some((tick.clone(), totals.clone(), clients.to_vec(), last));
    }

    /// Marks the run's figures final: the last tick shown is shown again as such.
    pub fn finish(&mut self) {
        if let Some((tick, totals, clients, false)) = self.last.take() {
            self.ticks.pop_back();
            self.show(&tick, &totals, &clients, true);
        }
    }

    fn event(&self, tick: &Tick, totals: &Totals, clients: &[TimelineClient], last: bool) -> Value {
        let timeline = json!({
            "interval_s": 1.0,
            "clients": clients,
            "ticks": self.ticks,
        });
        json!({
            "kind": "tick",
            "class": self.class.as_ref().map(|(_, name)| name),
            "class_index": self.class.as_ref().map(|(i, _)| i),
            "scenario": self.scenario,
            "title": self.title,
            "run_id": self.run_id,
            "t_s": tick.t_s,
            "span_s": tick.span_s,
            "finished": last,
            "figures": figures(tick, totals, self.names),
            "charts": crate::report::html::live_charts(
                &timeline,
                &self.title,
                &self.slos,
                Some(self.names),
            ),
        })
    }
}

/// A figure as the page shows it: `id` names it for a test or a person with the inspector,
/// `value` is the raw number (null where nothing was measured) and `text` is it in words.
pub(super) fn figure(
    id: String,
    label: String,
    value: Option<f64>,
    text: impl FnOnce(f64) -> String,
) -> Value {
    json!({
        "id": id,
        "label": label,
        "value": value,
        "text": value.map_or_else(|| "—".to_string(), text),
    })
}

/// The tick's figures in the order the page lists them: throughput per role, the interval's
/// corrected latency, the schedule's stage and target, messages so far by role (delivery so
/// far), and errors by kind so far.
fn figures(tick: &Tick, totals: &Totals, [pubs, subs]: [&'static str; 2]) -> Vec<Value> {
    let mut out = Vec::new();
    for role in totals.msgs.keys() {
        let (rate, word) = match role {
            Role::Pub => (tick.sent_per_sec, pubs),
            Role::Sub => (tick.received_per_sec, subs),
        };
        out.push(figure(
            format!("rate-{}", role.as_str()),
            format!("{word} per second ({})", role.as_str()),
            Some(rate),
            |v| format!("{}/s", format::grouped(v, 0)),
        ));
    }
    type Pick = fn(&crate::stats::timeline::TickLatency) -> u64;
    let picks: [(&str, &str, Pick); 3] = [
        ("p50", "latency P50 (corrected)", |l| l.p50_ns),
        ("p99", "latency P99 (corrected)", |l| l.p99_ns),
        ("max", "latency max (corrected)", |l| l.max_ns),
    ];
    for (id, label, pick) in picks {
        out.push(figure(
            id.into(),
            label.into(),
            tick.latency.as_ref().map(|l| pick(l) as f64),
            format::duration_ns,
        ));
    }
    if let Some(st) = &tick.stage {
        out.push(figure(
            "stage".into(),
            "stage".into(),
            Some((st.index + 1) as f64),
            |v| format!("{} of {}", v, st.of),
        ));
        out.push(figure(
            "target".into(),
            "target rate".into(),
            Some(st.target_rate),
            |v| format!("{}/s", format::grouped(v, 0)),
        ));
    }
    for (role, n) in &totals.msgs {
        let word = match role {
            Role::Pub => pubs,
            Role::Sub => subs,
        };
        out.push(figure(
            format!("total-{}", role.as_str()),
            format!("{word} so far ({})", role.as_str()),
            Some(*n as f64),
            |v| format::group(v as u64),
        ));
    }
    out.push(figure(
        "errors".into(),
        "errors so far".into(),
        Some(totals.errors.values().sum::<u64>() as f64),
        |v| format::group(v as u64),
    ));
    for (kind, n) in &totals.errors {
        out.push(figure(
            format!("errors-{kind}"),
            format!("errors: {kind}"),
            Some(*n as f64),
            |v| format::group(v as u64),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc::error::TryRecvError;

    #[test]
    fn a_page_that_falls_behind_loses_updates_and_the_run_never_waits() {
        let hub = Hub::default();
        let mut rx = hub.subscribe();
        // Nobody reads: the channel holds QUEUE events, the rest are dropped, and publishing
        // returns every time.
        for n in 0..QUEUE * 10 {
            hub.publish(&Arc::from(n.to_string()));
        }
        let got: Vec<Arc<str>> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(got.len(), QUEUE);
        assert_eq!(&*got[0], "0");
        // A page gone is forgotten at the next event.
        drop(rx);
        hub.publish(&Arc::from("x"));
        assert!(hub.lock().pages.is_empty());
    }

    /// Stopping closes every page's channel after what it holds; a page that opens after
    /// that gets what there is and its stream ends.
    #[test]
    fn stopping_closes_the_channels_after_what_they_hold() {
        let hub = Hub::default();
        let mut rx = hub.subscribe();
        hub.publish(&Arc::from("final"));
        hub.lock().result = Some(Arc::from("result"));
        hub.close();
        assert_eq!(
            &*rx.try_recv().unwrap(),
            "final",
            "what was queued is still taken"
        );
        assert!(
            matches!(rx.try_recv(), Err(TryRecvError::Disconnected)),
            "then the channel is closed"
        );
        let mut late = hub.subscribe();
        assert_eq!(&*late.try_recv().unwrap(), "result");
        assert!(matches!(late.try_recv(), Err(TryRecvError::Disconnected)));
    }
}
