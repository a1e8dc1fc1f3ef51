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
//! is dropped when its socket's write times out. The page is self-contained (its style and
//! script are inlined, and its Content-Security-Policy lets it fetch nothing but its own
//! stream), and it carries no credentials: no server URL is on it, and the downloads are the
//! result as `--json` writes it, whose URLs are redacted.

mod page;

use std::collections::VecDeque;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::format;
use crate::output::metrics::http::{read_head, respond};
use crate::output::metrics::{why, AgentsFigures};
use crate::result::RunResult;
use crate::stats::throughput::Role;
use crate::stats::timeline::{Tick, TimelineClient, Totals};

const FLAG: &str = "--web";
/// Events a page may be behind before its updates are dropped.
pub const QUEUE: usize = 4;
/// Connections served at once; more are answered 503, so a crowd cannot cost the run threads.
const MAX_CONNECTIONS: usize = 16;
/// How long a connection may take to send its request or take an event.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the idle accept loop looks for a connection or the order to stop.
const POLL: Duration = Duration::from_millis(20);
/// The last seconds drawn on the page's charts: a day-long soak redrawn whole every second
/// would cost the live thread more than a page is worth. The figures are every tick's.
const WINDOW: usize = 600;

/// The listening server; dropping it stops it.
pub struct Web {
    hub: Arc<Hub>,
    addr: SocketAddr,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// What every page is sent, and the pages' channels.
#[derive(Default)]
struct Hub {
    state: Mutex<State>,
    /// Connections being answered.
    open: AtomicUsize,
}

#[derive(Default)]
struct State {
    /// The last tick's event, for a page that opens between ticks.
    tick: Option<Arc<str>>,
    /// The final result's event, once the run has ended.
    result: Option<Arc<str>>,
    /// The result as `--json` writes it, and its HTML report.
    json: Option<Arc<[u8]>>,
    report: Option<Arc<[u8]>>,
    pages: Vec<SyncSender<Arc<str>>>,
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Offers `event` to every page; a page whose channel is full misses it, a page gone is
    /// forgotten. Never waits for a page.
    fn publish(&self, event: &Arc<str>) {
        self.lock().pages.retain(|p| {
            !matches!(
                p.try_send(Arc::clone(event)),
                Err(TrySendError::Disconnected(_))
            )
        });
    }

    /// A new page's channel, primed with what it would have seen last.
    fn subscribe(&self) -> Receiver<Arc<str>> {
        let (tx, rx) = sync_channel(QUEUE);
        let mut s = self.lock();
        for e in s.tick.iter().chain(s.result.iter()) {
            let _ = tx.try_send(Arc::clone(e));
        }
        s.pages.push(tx);
        rx
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
        listener
            .set_nonblocking(true)
            .map_err(|e| refuse(why(&e)))?;
        if !local.ip().is_loopback() {
            eprintln!(
                "warning: {FLAG} {addr} is not a loopback address: anyone who can reach it can \
                 watch the run and download its result"
            );
        }
        let hub = Arc::new(Hub::default());
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let (hub, done) = (Arc::clone(&hub), Arc::clone(&done));
            std::thread::Builder::new()
                .name("msgbench-web".into())
                .spawn(move || accept(&listener, &hub, &done))
                .expect("spawn the web thread")
        };
        Ok(Self {
            hub,
            addr: local,
            done,
            thread: Some(thread),
        })
    }

    /// The address bound (its port is the one chosen when the user gave port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What the live view of run `k` of `n` (named `run_id`) publishes through.
    pub fn feed(&self, scenario: &'static str, run_id: &str, run: Option<(u32, u32)>) -> Feed {
        Feed {
            hub: Arc::clone(&self.hub),
            scenario,
            run_id: run_id.to_string(),
            run,
            ticks: VecDeque::new(),
            last: None,
        }
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
        }
    }

    /// The run is over: the page shows `result` and offers it (as `--json` writes it) and its
    /// HTML report for download.
    pub fn finish(&self, result: &RunResult) {
        use crate::export::{json::Json, text::Text, Exporter};
        let json = Json.serialize(result);
        let text = String::from_utf8_lossy(&Text.serialize(result)).into_owned();
        let report = serde_json::from_slice::<Value>(&json)
            .map_err(|e| e.to_string())
            .and_then(|value| {
                let doc = crate::report::Doc {
                    path: "result.json".into(),
                    name: "result.json".into(),
                    kind: crate::report::DocKind::Result,
                    value,
                };
                crate::report::html::render(&[doc]).map_err(|e| e.to_string())
            });
        let (report, report_error) = match report {
            Ok(html) => (Some(Arc::<[u8]>::from(html.into_bytes())), None),
            Err(e) => (None, Some(e)),
        };
        let event: Arc<str> = Arc::from(
            json!({
                "kind": "result",
                "run_id": result.run_id,
                "text": text,
                "json": "/result.json",
                "report": report.as_ref().map(|_| "/report.html"),
                "report_error": report_error,
            })
            .to_string(),
        );
        {
            let mut s = self.hub.lock();
            s.json = Some(Arc::from(json));
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

    fn stop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Takes connections until `done`, each on a thread of its own (an event stream lasts as long
/// as its page).
fn accept(listener: &TcpListener, hub: &Arc<Hub>, done: &Arc<AtomicBool>) {
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    while !done.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                threads.retain(|t| !t.is_finished());
                if hub.open.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                    busy(stream);
                    continue;
                }
                hub.open.fetch_add(1, Ordering::Relaxed);
                let (page_hub, page_done) = (Arc::clone(hub), Arc::clone(done));
                let t = std::thread::Builder::new()
                    .name("msgbench-web-page".into())
                    .spawn(move || {
                        answer(stream, &page_hub, &page_done);
                        page_hub.open.fetch_sub(1, Ordering::Relaxed);
                    });
                match t {
                    Ok(t) => threads.push(t),
                    Err(_) => {
                        hub.open.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            }
            // Nothing waiting, or a connection that failed before it was accepted.
            Err(_) => std::thread::sleep(POLL),
        }
    }
    for t in threads {
        let _ = t.join();
    }
}

fn busy(mut stream: TcpStream) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(CLIENT_TIMEOUT));
    let text = "503 Service Unavailable: too many pages open\n";
    respond(
        &mut stream,
        "503 Service Unavailable",
        "text/plain; charset=utf-8",
        text.len(),
        text.as_bytes(),
    );
}

/// What a request asks for.
#[derive(Debug, PartialEq)]
enum Route {
    Page,
    Events,
    Json,
    Report,
    Refuse(&'static str),
}

fn route(head: &[u8]) -> Route {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.trim_end_matches('\r').split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Route::Refuse("400 Bad Request");
    };
    if !version.starts_with("HTTP/1.") {
        return Route::Refuse("400 Bad Request");
    }
    let path = target.split('?').next().unwrap_or_default();
    let known = matches!(path, "/" | "/events" | "/result.json" | "/report.html");
    match (method, path) {
        ("GET", "/") => Route::Page,
        ("GET", "/events") => Route::Events,
        ("GET", "/result.json") => Route::Json,
        ("GET", "/report.html") => Route::Report,
        _ if known => Route::Refuse("405 Method Not Allowed"),
        _ => Route::Refuse("404 Not Found"),
    }
}

/// Answers one connection. A client that goes away midway is its own problem.
fn answer(mut stream: TcpStream, hub: &Hub, done: &AtomicBool) {
    let ready = stream.set_nonblocking(false).is_ok()
        && stream.set_read_timeout(Some(CLIENT_TIMEOUT)).is_ok()
        && stream.set_write_timeout(Some(CLIENT_TIMEOUT)).is_ok();
    let Some(head) = ready.then(|| read_head(&mut stream)).flatten() else {
        return;
    };
    let file = |pick: fn(&State) -> Option<Arc<[u8]>>| pick(&hub.lock());
    match route(&head) {
        Route::Page => send(
            &mut stream,
            "text/html; charset=utf-8",
            page::page().as_bytes(),
        ),
        Route::Events => events(stream, hub, done),
        Route::Json => match file(|s| s.json.clone()) {
            Some(b) => send(&mut stream, "application/json", &b),
            None => refuse(&mut stream, "404 Not Found"),
        },
        Route::Report => match file(|s| s.report.clone()) {
            Some(b) => send(&mut stream, "text/html; charset=utf-8", &b),
            None => refuse(&mut stream, "404 Not Found"),
        },
        Route::Refuse(status) => refuse(&mut stream, status),
    }
}

fn send(stream: &mut TcpStream, ctype: &str, body: &[u8]) {
    respond(stream, "200 OK", ctype, body.len(), body);
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

fn refuse(stream: &mut TcpStream, status: &str) {
    let text = format!("{status}\n");
    respond(
        stream,
        status,
        "text/plain; charset=utf-8",
        text.len(),
        text.as_bytes(),
    );
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// The event stream of one page, until it goes away or the server stops. A comment line every
/// second without an event finds a page that is gone.
fn events(mut stream: TcpStream, hub: &Hub, done: &AtomicBool) {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\
                Connection: close\r\n\r\nretry: 1000\n\n";
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    let rx = hub.subscribe();
    while !done.load(Ordering::Relaxed) {
        let sent = match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(e) => write!(stream, "data: {e}\n\n"),
            Err(RecvTimeoutError::Timeout) => stream.write_all(b": idle\n\n"),
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if sent.and_then(|()| stream.flush()).is_err() {
            return;
        }
    }
}

/// One run's side of the page, owned by its live view: each tick it is shown becomes the
/// event every page is sent.
#[derive(Clone)]
pub struct Feed {
    hub: Arc<Hub>,
    scenario: &'static str,
    run_id: String,
    run: Option<(u32, u32)>,
    /// The ticks the charts draw (the last [`WINDOW`]).
    ticks: VecDeque<Tick>,
    /// The last tick shown, its totals and clients, and whether it was shown as final.
    last: Option<(Tick, Totals, Vec<TimelineClient>, bool)>,
}

impl Feed {
    /// Publishes `tick`, the `totals` read with it and the run's `clients`; `last` when the
    /// run has ended.
    pub fn show(&mut self, tick: &Tick, totals: &Totals, clients: &[TimelineClient], last: bool) {
        if self.ticks.len() == WINDOW {
            self.ticks.pop_front();
        }
        self.ticks.push_back(tick.clone());
        let event: Arc<str> = Arc::from(self.event(tick, totals, clients, last).to_string());
        self.hub.lock().tick = Some(Arc::clone(&event));
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
        let label = match self.run {
            Some((k, n)) => format!("{} (run {k} of {n})", self.scenario),
            None => self.scenario.to_string(),
        };
        let timeline = json!({
            "interval_s": 1.0,
            "clients": clients,
            "ticks": self.ticks,
        });
        json!({
            "kind": "tick",
            "scenario": self.scenario,
            "run_id": self.run_id,
            "run": self.run.map(|(k, n)| json!({"k": k, "n": n})),
            "t_s": tick.t_s,
            "span_s": tick.span_s,
            "finished": last,
            "figures": figures(tick, totals),
            "charts": crate::report::html::live_charts(&timeline, &label),
        })
    }
}

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
    hub: Arc<Hub>,
    scenario: &'static str,
    run_id: String,
    run_k: Option<u32>,
}

impl AgentsFeed {
    /// Publishes the agents' figures at the latest second all have reported, with what is
    /// known of each (`info`, every agent of the run, reporting or not); `last` when the run
    /// is over.
    pub fn show(&mut self, figures: &AgentsFigures, info: &[AgentInfo], last: bool) {
        let event: Arc<str> = Arc::from(self.event(figures, info, last).to_string());
        self.hub.lock().tick = Some(Arc::clone(&event));
        self.hub.publish(&event);
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
            "run_id": self.run_id,
            "run": self.run_k.map(|k| json!({"k": k, "n": null})),
            "t_s": t,
            "finished": last,
            "figures": figs,
            "charts": [],
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

/// A figure as the page shows it: `id` names it for a test or a person with the inspector,
/// `value` is the raw number (null where nothing was measured) and `text` is it in words.
fn figure(
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
fn figures(tick: &Tick, totals: &Totals) -> Vec<Value> {
    let mut out = Vec::new();
    for role in totals.msgs.keys() {
        let (rate, word) = match role {
            Role::Pub => (tick.sent_per_sec, "sent"),
            Role::Sub => (tick.received_per_sec, "received"),
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
            Role::Pub => "sent so far",
            Role::Sub => "received so far",
        };
        out.push(figure(
            format!("total-{}", role.as_str()),
            format!("messages {word} ({})", role.as_str()),
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

    #[test]
    fn routes_the_page_its_stream_and_the_downloads() {
        assert_eq!(route(b"GET / HTTP/1.1"), Route::Page);
        assert_eq!(route(b"GET /events?x HTTP/1.1"), Route::Events);
        assert_eq!(route(b"GET /result.json HTTP/1.0"), Route::Json);
        assert_eq!(route(b"GET /report.html HTTP/1.1"), Route::Report);
        assert_eq!(
            route(b"POST / HTTP/1.1"),
            Route::Refuse("405 Method Not Allowed")
        );
        assert_eq!(route(b"GET /x HTTP/1.1"), Route::Refuse("404 Not Found"));
        assert_eq!(route(b"hello"), Route::Refuse("400 Bad Request"));
    }

    #[test]
    fn a_page_that_falls_behind_loses_updates_and_the_run_never_waits() {
        let hub = Hub::default();
        let rx = hub.subscribe();
        // Nobody reads: the channel holds QUEUE events, the rest are dropped, and publishing
        // returns every time.
        for n in 0..QUEUE * 10 {
            hub.publish(&Arc::from(n.to_string()));
        }
        let got: Vec<Arc<str>> = rx.try_iter().collect();
        assert_eq!(got.len(), QUEUE);
        assert_eq!(&*got[0], "0");
        // A page gone is forgotten at the next event.
        drop(rx);
        hub.publish(&Arc::from("x"));
        assert!(hub.lock().pages.is_empty());
    }
}
