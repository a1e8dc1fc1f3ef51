//! `--web`, the live page, in a real headless Chromium during a real run: a `pub` at a fixed
//! rate against a real nats-server, its page opened while it runs. The figures the page shows
//! at a tick, and the points of its throughput chart, are matched to the result's JSON timeline
//! at the same tick; after the run (kept up by `--web-linger`) the page shows the final result,
//! and the files it offers are the result as `--json` wrote it and its HTML report. The page
//! logs no error (its Content-Security-Policy would log any fetch from outside).
//!
//! Chromium and chromedriver are found, and their absence handled, as in `report.rs`: a failure
//! in CI (`MSGBENCH_REQUIRE_BROWSER=1`), else a skip that says what is missing. A screenshot of
//! the page during the run is kept in `target/artifacts/web-live.png`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{self, grouped, scratch_dir, spawn_piped, stderr_until, TestServer};
use crate::webdriver::{browser_available, Browser};
use serde_json::{json, Value};

/// The page as it stands: the tick its figures are from, each figure, each throughput chart
/// marker, and whether the final result is shown. Read in one script, so all of it is of the
/// same event.
const READ: &str = r#"
const f = document.getElementById('figures');
const num = (s) => (s === undefined || s === '') ? null : Number(s);
const figures = Object.fromEntries([...f.querySelectorAll('tr[data-figure]')].map((r) =>
  [r.dataset.figure, {value: num(r.dataset.value), text: r.querySelector('td').textContent}]));
const marks = [];
for (const p of document.querySelectorAll(
    'svg.chart[data-chart="throughput-timeline"] path.line[data-series]')) {
  for (const c of p.parentNode.querySelectorAll('circle[data-value]')) {
    marks.push({series: p.dataset.series, t: Number(c.dataset.t), value: Number(c.dataset.value)});
  }
}
const result = document.getElementById('result');
return {
  t: num(f.dataset.t), finished: f.dataset.finished === 'true', figures, marks,
  charts: [...document.querySelectorAll('svg.chart')].map((s) => s.dataset.chart),
  cpu: [...document.querySelectorAll('svg.chart[data-chart="cpu-timeline"] path.line[data-series]')]
    .map((p) => p.dataset.series),
  result: !result.hidden, result_run: result.dataset.run || null,
  result_text: document.getElementById('result-text').textContent,
  json: document.getElementById('download-json').getAttribute('href'),
  report: document.getElementById('download-report').getAttribute('href'),
};
"#;

/// The live page's URL as msgbench printed it on stderr (`seen`), and its `HOST:PORT`.
fn page_address(seen: &str) -> (String, String) {
    let url = seen
        .lines()
        .find_map(|l| l.strip_prefix("--web: the live page is on "))
        .expect("msgbench printed the page's address")
        .trim()
        .to_string();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    (url, addr)
}

/// One GET to msgbench's page server: the status line and the body.
fn get(addr: &str, path: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let end = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&all[..end]).into_owned();
    let status = head.lines().next().unwrap().to_string();
    (status, all[end + 4..].to_vec())
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The timeline's tick that ends at `t` (the same number, written and read back as JSON).
fn tick_at(ticks: &[Value], t: f64) -> (usize, &Value) {
    ticks
        .iter()
        .enumerate()
        .find(|(_, k)| f(&k["t_s"]) == t)
        .unwrap_or_else(|| panic!("no tick ends at {t} s in the timeline"))
}

/// A page figure's number and text, and the text is that number as msgbench writes it.
fn figure(page: &Value, id: &str) -> Option<f64> {
    let fig = &page["figures"][id];
    assert!(fig.is_object(), "no figure {id} on the page: {page}");
    let text = fig["text"].as_str().unwrap();
    match fig["value"].as_f64() {
        None => {
            assert_eq!(text, "—", "{id}: no value, so a dash");
            None
        }
        Some(v) => {
            let want = if id.starts_with("rate-") {
                format!("{}/s", grouped(v.round() as u64))
            } else {
                grouped(v as u64)
            };
            assert_eq!(text, want, "{id} shows {v} as");
            Some(v)
        }
    }
}

/// What the page shows at a tick is the timeline's tick: the rate, no latency (a publisher
/// alone measures none), the messages and errors of every tick up to it, and the chart's point.
fn check_against_timeline(page: &Value, doc: &Value) {
    let ticks = doc["timeline"]["ticks"].as_array().unwrap();
    let t = f(&page["t"]);
    let (i, tick) = tick_at(ticks, t);
    assert_eq!(
        figure(page, "rate-pub"),
        Some(f(&tick["sent_per_sec"])),
        "at {t} s"
    );
    for id in ["p50", "p99", "max"] {
        assert!(tick.get("latency").is_none());
        assert_eq!(figure(page, id), None, "{id} at {t} s");
    }
    let sent: f64 = ticks[..=i]
        .iter()
        .flat_map(|k| k["msgs"].as_array().unwrap())
        .map(f)
        .sum();
    assert_eq!(
        figure(page, "total-pub"),
        Some(sent),
        "messages so far at {t} s"
    );
    let errors: f64 = ticks[..=i].iter().map(|k| f(&k["errors"])).sum();
    assert_eq!(
        figure(page, "errors"),
        Some(errors),
        "errors so far at {t} s"
    );
    // The chart's last point is this tick, at its rate (one client: its own line).
    let last = page["marks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["series"] == "publishes 0")
        .max_by(|a, b| f(&a["t"]).total_cmp(&f(&b["t"])))
        .unwrap_or_else(|| panic!("no point on the throughput chart: {page}"));
    assert_eq!(f(&last["t"]), t);
    let rate = f(&tick["msgs"][0]) / f(&tick["span_s"]);
    assert!(
        (f(&last["value"]) - rate).abs() <= rate * 1e-9,
        "chart point {last} against {rate} msgs/s"
    );
}

#[test]
fn the_live_page_shows_the_runs_ticks_and_then_its_result() {
    let dir = scratch_dir("web");
    let Some(programs) = browser_available("live page browser test", "web-browser") else {
        return;
    };
    let server = TestServer::start();
    // The browser first: it takes a while to start, and the run must still be going when the
    // page opens.
    let browser = Browser::start(&dir, &programs);
    browser.resize(1280, 1000);
    let json_path = dir.join("pub.json");
    let monitor = server.monitor_url();
    let mut child = spawn_piped(&[
        "pub",
        "--server",
        &server.url,
        "--server-monitor",
        &monitor,
        "--rate",
        "500",
        "--duration",
        "8s",
        "--web",
        "127.0.0.1:0",
        "--web-linger",
        "10m",
        "--no-progress",
        "--json",
        json_path.to_str().unwrap(),
    ]);
    let (seen, rest) = stderr_until(&mut child, "--web: the live page is on http://");
    let (url, addr) = page_address(&seen);
    browser.cmd("POST", "/url", Some(json!({"url": url})));

    // Read the page until it shows the result (the deadline only guards against a hang).
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut during = Vec::new();
    let mut shot = false;
    let last = loop {
        let page = browser.execute(READ);
        if page["result"] == true {
            break page;
        }
        if page["t"].is_number() && !page["finished"].as_bool().unwrap() {
            if !shot && !page["charts"].as_array().unwrap().is_empty() && f(&page["t"]) >= 3.0 {
                let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/artifacts");
                std::fs::create_dir_all(&out).unwrap();
                browser.screenshot(&out.join("web-live.png"));
                shot = true;
            }
            during.push(page);
        }
        assert!(Instant::now() < deadline, "no result on the page in 300 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    // The result file is written when the page gets the result; the page outlives the run.
    let doc: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert!(
        !during.is_empty(),
        "the page showed no tick while the run went on"
    );
    let mut ts: Vec<f64> = during.iter().map(|p| f(&p["t"])).collect();
    ts.dedup();
    // The servers' side, live: the CPU of the server sampled and msgbench's own, once the
    // server has read its own CPU twice (2 s into its life).
    assert!(
        during.iter().any(|p| {
            let cpu: Vec<&str> = p["cpu"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            cpu.contains(&"msgbench") && cpu.iter().any(|s| s.starts_with("server "))
        }),
        "no CPU chart with the server's and msgbench's lines while the run went on"
    );
    for page in &during {
        check_against_timeline(page, &doc);
    }
    // After the run: the last tick, marked final, and the result.
    assert!(last["finished"].as_bool().unwrap(), "{last}");
    let ticks = doc["timeline"]["ticks"].as_array().unwrap();
    assert_eq!(f(&last["t"]), f(&ticks.last().unwrap()["t_s"]));
    check_against_timeline(&last, &doc);
    assert_eq!(last["result_run"], doc["run_id"]);
    assert!(
        last["result_text"]
            .as_str()
            .unwrap()
            .starts_with("msgbench pub against"),
        "{last}"
    );
    assert_eq!(last["json"], "/result.json");
    assert_eq!(last["report"], "/report.html");
    let (status, body) = get(&addr, "/result.json");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        body,
        std::fs::read(&json_path).unwrap(),
        "the download is the --json file"
    );
    let (status, body) = get(&addr, "/report.html");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let report = String::from_utf8(body).unwrap();
    assert!(report.starts_with("<!DOCTYPE html>"));
    assert!(report.contains("data-chart=\"throughput-timeline\""));
    let errors: Vec<Value> = browser
        .console()
        .into_iter()
        .filter(|e| e["level"] == "SEVERE")
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    println!("page read at ticks {ts:?}");

    // Ctrl-C ends --web-linger's wait; the run's result was written before it.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let err = support::rest_of_stderr(seen, rest);
    assert!(status.success(), "{status:?}: {err}");
    assert!(err.contains("--web-linger"), "{err}");
}

#[test]
fn an_address_in_use_refuses_the_run_in_one_line_and_a_wide_one_is_warned_of() {
    let server = TestServer::start();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = support::run(&[
        "pub",
        "--server",
        &server.url,
        "--msgs",
        "100",
        "--web",
        &addr,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", support::stderr(&o));
    let err = support::stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--web") && err.contains(&addr), "{err}");
    assert!(o.stdout.is_empty(), "the run did not start");

    let o = support::run(&[
        "pub",
        "--server",
        &server.url,
        "--msgs",
        "100",
        "--no-progress",
        "--web",
        "0.0.0.0:0",
    ]);
    assert!(o.status.success(), "{}", support::stderr(&o));
    let err = support::stderr(&o);
    let warned: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("warning: --web 0.0.0.0:0 is not a loopback address"))
        .collect();
    assert_eq!(warned.len(), 1, "{err}");
}

/// The agent rows as the page shows them, and the page's state.
const READ_AGENTS: &str = r#"
const rows = [...document.querySelectorAll('#agent-rows tr[data-agent]')].map((r) => ({
  agent: r.dataset.agent, missing: r.dataset.missing === 'true',
  offset: Number(r.dataset.clockOffsetNs),
  cells: [...r.querySelectorAll('td')].map((td) => td.textContent),
  red: getComputedStyle(r.querySelector('td')).color,
  plain: getComputedStyle(document.querySelector('#figures td') || document.body).color,
}));
return {rows, shown: !document.getElementById('agents').hidden,
  result: !document.getElementById('result').hidden};
"#;

#[test]
fn a_coordinators_page_has_a_row_per_agent_and_marks_a_missing_one_in_red() {
    let dir = scratch_dir("web-agents");
    let Some(programs) = browser_available("live page browser test", "web-browser") else {
        return;
    };
    let server = TestServer::start();
    let mut a = support::agent::Agent::start(&server.url, "w1", &[], &[]);
    let _b = support::agent::Agent::start(&server.url, "w2", &[], &[]);
    let browser = Browser::start(&dir, &programs);
    let json_path = dir.join("agents.json");
    let mut child = spawn_piped(&[
        "pubsub",
        "--pubs",
        "2",
        "--subs",
        "2",
        "--rate",
        "500",
        "--duration",
        "60s",
        "--timeout",
        "2s",
        "--server",
        &server.url,
        "--agents",
        "w1,w2",
        "--web",
        "127.0.0.1:0",
        "--web-linger",
        "10m",
        "--no-progress",
        "--json",
        json_path.to_str().unwrap(),
    ]);
    let (seen, rest) = stderr_until(&mut child, "--web: the live page is on http://");
    let (url, _) = page_address(&seen);
    browser.cmd("POST", "/url", Some(json!({"url": url})));

    // Both rows, each sending, then w1 is killed; its row turns red as it goes missing (the
    // deadline only guards against a hang).
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut both = None;
    let last = loop {
        let page = browser.execute(READ_AGENTS);
        let rows = page["rows"].as_array().unwrap();
        let sending = |name: &str| {
            rows.iter()
                .any(|r| r["agent"] == name && r["cells"][3].as_str().unwrap() != "—")
        };
        if both.is_none() && sending("w1") && sending("w2") {
            both = Some(page.clone());
            a.kill();
        }
        if page["result"] == true {
            break page;
        }
        assert!(Instant::now() < deadline, "no result on the page in 300 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    let both = both.expect("a page with both agents sending");
    assert_eq!(both["shown"], true);
    let doc: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let entries = doc["agents"]["agents"].as_array().unwrap();
    for page in [&both, &last] {
        let rows = page["rows"].as_array().unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r["agent"].as_str().unwrap()).collect();
        assert_eq!(names, ["w1", "w2"], "{page}");
        for (row, entry) in rows.iter().zip(entries) {
            // Its share and clock offset, as the result records them.
            let share = format!("pubs {} of 2, subs {} of 2", entry["pubs"], entry["subs"]);
            assert_eq!(row["cells"][1], share.as_str(), "{row}");
            assert_eq!(f(&row["offset"]), f(&entry["clock_offset_ns"]), "{row}");
        }
    }
    // While both ran, neither was red; at the end w1 is missing, in red, and w2 is not.
    for row in both["rows"].as_array().unwrap() {
        assert_eq!(row["missing"], false, "{row}");
        assert_eq!(row["red"], row["plain"], "{row}");
    }
    assert_eq!(doc["agents"]["missing"], json!(["w1"]));
    let end = last["rows"].as_array().unwrap();
    assert_eq!(end[0]["missing"], true, "{last}");
    assert!(
        end[0]["cells"][0].as_str().unwrap().starts_with("missing"),
        "{last}"
    );
    assert_ne!(
        end[0]["red"], end[0]["plain"],
        "a missing agent is drawn in red: {last}"
    );
    assert_eq!(end[1]["missing"], false, "{last}");
    assert_eq!(end[1]["red"], end[1]["plain"], "{last}");

    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let err = support::rest_of_stderr(seen, rest);
    // A lost agent: the partial result is written, and the status says an agent was lost.
    assert_eq!(status.code(), Some(9), "{err}");
}

/// The agents' latency chart as the page shows it: the agents it has a P99 line for, and its
/// SLO lines.
const READ_AGENT_LATENCY: &str = r#"
const chart = document.querySelector('#charts svg.chart[data-chart="latency-timeline"]');
if (!chart) { return {lines: [], refs: []}; }
return {
  lines: [...chart.querySelectorAll('path.line[data-series]')].map((p) => p.dataset.series),
  refs: [...chart.querySelectorAll('g.ref')]
    .map((g) => ({label: g.dataset.ref, value: Number(g.dataset.value)})),
};
"#;

/// A run on agents shows its `--threshold` on the live page as a run here does: the latency
/// chart (each agent's P99, since a merged one cannot be made while it goes) carries the SLO
/// line.
#[test]
fn a_run_on_agents_draws_its_slo_on_the_live_page() {
    let dir = scratch_dir("web-agents-slo");
    let Some(programs) = browser_available("live page browser test", "web-browser") else {
        return;
    };
    let server = TestServer::start();
    let _a = support::agent::Agent::start(&server.url, "s1", &[], &[]);
    let _b = support::agent::Agent::start(&server.url, "s2", &[], &[]);
    let browser = Browser::start(&dir, &programs);
    let mut child = spawn_piped(&[
        "latency",
        "--rate",
        "500",
        "--duration",
        "60s",
        "--warmup",
        "0s",
        "--server",
        &server.url,
        "--agents",
        "s1,s2",
        "--threshold",
        "p99<7s",
        "--web",
        "127.0.0.1:0",
        "--no-progress",
    ]);
    let (seen, rest) = stderr_until(&mut child, "--web: the live page is on http://");
    let (url, _) = page_address(&seen);
    browser.cmd("POST", "/url", Some(json!({"url": url})));
    // The deadline only guards against a hang: the chart comes with the first P99 an agent
    // reports.
    let deadline = Instant::now() + Duration::from_secs(120);
    let page = loop {
        let page = browser.execute(READ_AGENT_LATENCY);
        if !page["refs"].as_array().unwrap().is_empty() {
            break page;
        }
        assert!(Instant::now() < deadline, "no SLO line in 120 s: {page}");
        std::thread::sleep(Duration::from_millis(200));
    };
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let err = support::rest_of_stderr(seen, rest);
    let refs = page["refs"].as_array().unwrap();
    assert_eq!(refs.len(), 1, "{page}");
    assert_eq!(refs[0]["label"], "SLO p99<7s", "{page}");
    assert_eq!(f(&refs[0]["value"]), 7e9, "{page}");
    // The subscriber's agent (the last) times every message.
    let lines: Vec<&str> = page["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(lines.contains(&"s2"), "{page}");
    assert_eq!(status.code(), Some(130), "{err}");
}

/// The knee chart as the page shows it: how many probes it is of, and the target rate and
/// value of each P50 point; the title of the run shown live, and its latency chart's SLO lines.
const READ_KNEE: &str = r#"
const knee = document.getElementById('knee');
const p50 = [...knee.querySelectorAll('svg.chart path.line[data-series="P50"]')]
  .flatMap((p) => [...p.parentNode.querySelectorAll('circle[data-value]')])
  .map((c) => ({rate: Number(c.dataset.targetRate), value: Number(c.dataset.value)}));
const refs = [...document.querySelectorAll(
    '#charts svg.chart[data-chart="latency-timeline"] g.ref')]
  .map((g) => ({label: g.dataset.ref, value: Number(g.dataset.value)}));
return {probes: knee.dataset.probes === undefined ? null : Number(knee.dataset.probes), p50, refs,
  title: document.getElementById('scenario').textContent,
  result: !document.getElementById('result').hidden};
"#;

#[test]
fn a_capacity_searchs_knee_chart_builds_up_probe_by_probe() {
    let dir = scratch_dir("web-capacity");
    let Some(programs) = browser_available("live page browser test", "web-browser") else {
        return;
    };
    let server = TestServer::start();
    let browser = Browser::start(&dir, &programs);
    let json_path = dir.join("capacity.json");
    let mut child = spawn_piped(&[
        "capacity",
        "latency",
        "--server",
        &server.url,
        "--slo",
        "p99<10s",
        "--start-rate",
        "200",
        "--max-rate",
        "800",
        "--probe-duration",
        "2s",
        "--probe-warmup",
        "1s",
        "--probe-runs",
        "1",
        "--web",
        "127.0.0.1:0",
        "--web-linger",
        "10m",
        "--no-progress",
        "--json",
        json_path.to_str().unwrap(),
    ]);
    let (seen, rest) = stderr_until(&mut child, "--web: the live page is on http://");
    let (url, _) = page_address(&seen);
    browser.cmd("POST", "/url", Some(json!({"url": url})));
    // The deadline only guards against a hang.
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut during = Vec::new();
    let mut titles = std::collections::BTreeSet::new();
    let last = loop {
        let page = browser.execute(READ_KNEE);
        if page["result"] == true {
            break page;
        }
        titles.insert(page["title"].as_str().unwrap().to_string());
        if page["probes"].is_number() {
            during.push(page);
        }
        assert!(Instant::now() < deadline, "no result on the page in 300 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    let doc: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let probes = doc["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 3, "200, 400 and 800/s: {doc}");
    // Each view of the chart holds the probes finished so far, each at its rate and P50.
    let mut counts = std::collections::BTreeSet::new();
    for page in during.iter().chain([&last]) {
        let n = f(&page["probes"]) as usize;
        counts.insert(n);
        let points = page["p50"].as_array().unwrap();
        assert_eq!(points.len(), n, "a point per probe finished: {page}");
        for (point, probe) in points.iter().zip(probes) {
            assert_eq!(f(&point["rate"]), f(&probe["rate"]), "{page}");
            assert_eq!(f(&point["value"]), f(&probe["latency"]["p50_ns"]), "{page}");
        }
    }
    assert!(
        counts.len() >= 3,
        "the chart was seen with {counts:?} probes: it should build up one by one"
    );
    assert_eq!(f(&last["probes"]), 3.0);
    // The probe's live latency chart draws the search's SLO.
    let slo_drawn = |p: &Value| {
        let refs = p["refs"].as_array().unwrap();
        refs.len() == 1 && refs[0]["label"] == "SLO p99<10s" && f(&refs[0]["value"]) == 1e10
    };
    assert!(
        during.iter().any(slo_drawn),
        "no SLO line on a probe's latency chart: {:?}",
        during.last().map(|p| &p["refs"])
    );
    // The probe running was shown live, by its rate.
    assert!(
        titles
            .iter()
            .any(|t| t == "latency, probe at 400/s (run 1 of 1)"),
        "{titles:?}"
    );

    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let err = support::rest_of_stderr(seen, rest);
    assert!(err.contains("--web-linger"), "{err}");
    // The search found its rate; ending the page's wait does not make it interrupted.
    assert!(status.success(), "{status:?}: {err}");
}

#[test]
fn the_page_its_stream_and_its_downloads_carry_no_credentials() {
    let server = TestServer::start();
    let with_secret = server.url.replace("nats://", "nats://bob:hunter2@");
    let mut child = spawn_piped(&[
        "pub",
        "--server",
        &with_secret,
        "--msgs",
        "2000",
        "--no-progress",
        "--web",
        "127.0.0.1:0",
        "--web-linger",
        "10m",
    ]);
    let (seen, rest) = stderr_until(&mut child, "--web: the live page is on http://");
    let addr = seen
        .lines()
        .find_map(|l| l.strip_prefix("--web: the live page is on http://"))
        .unwrap()
        .trim()
        .trim_end_matches('/')
        .to_string();
    // The event stream, read until the result is in it (it is sent to a page that opens after
    // the run too; the read timeout only guards against a hang).
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(s, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut stream = Vec::new();
    let mut buf = [0u8; 65536];
    while !String::from_utf8_lossy(&stream).contains("\"kind\":\"result\"") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended without the result");
        stream.extend_from_slice(&buf[..n]);
    }
    let stream = String::from_utf8_lossy(&stream).into_owned();
    assert!(stream.contains("msgbench pub against"), "{stream}");
    let page = get(&addr, "/").1;
    let json = get(&addr, "/result.json").1;
    let report = get(&addr, "/report.html").1;
    for (what, text) in [
        ("stream", stream.as_bytes()),
        ("page", &page[..]),
        ("result.json", &json[..]),
        ("report.html", &report[..]),
    ] {
        assert!(!text.is_empty(), "{what} is empty");
        let text = String::from_utf8_lossy(text);
        assert!(
            !text.contains("hunter2") && !text.contains("bob:"),
            "{what} carries the credentials"
        );
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let err = support::rest_of_stderr(seen, rest);
    assert!(status.success(), "{status:?}: {err}");
    assert!(!err.contains("hunter2"), "{err}");
}

/// A workload's page: each class's section as it stands (its tick, figures, charts, latency
/// SLO lines), whether the sections of a single run are hidden, and the result.
const READ_CLASSES: &str = r#"
const num = (s) => (s === undefined || s === '') ? null : Number(s);
const classes = [...document.querySelectorAll('#class-list section[data-class]')].map((s) => {
  const b = s.querySelector('tbody');
  const latency = s.querySelector('svg.chart[data-chart="latency-timeline"]');
  return {
    class: s.dataset.class, title: s.querySelector('h3').textContent,
    t: num(b.dataset.t), finished: b.dataset.finished === 'true',
    figures: Object.fromEntries([...b.querySelectorAll('tr[data-figure]')]
      .map((r) => [r.dataset.figure, num(r.dataset.value)])),
    charts: [...s.querySelectorAll('svg.chart')].map((c) => c.dataset.chart),
    refs: latency ? [...latency.querySelectorAll('g.ref')].map((g) => g.dataset.ref) : [],
  };
});
const result = document.getElementById('result');
return {
  classes, single_hidden: document.getElementById('now').hidden,
  result: !result.hidden, result_text: document.getElementById('result-text').textContent,
};
"#;

/// A workload's classes on the live page: a section each, made as the class first ticks, with
/// its own figures and charts (its SLO on its latency chart), and at the end the workload's
/// report, its document and the HTML report of its classes.
#[test]
fn a_workloads_classes_each_get_a_section_of_their_own_and_the_mix_its_result() {
    let dir = scratch_dir("web-workload");
    let Some(programs) = browser_available("live page browser test", "web-browser") else {
        return;
    };
    let server = TestServer::start();
    let browser = Browser::start(&dir, &programs);
    let file = dir.join("duo.yaml");
    std::fs::write(
        &file,
        format!(
            "workload: duo\nduration: 6s\nconn: {{server: {}}}\nclasses:\n  probe:\n    \
             scenario: latency\n    rate: 200\n    subject: wl.web.probe\n    \
             slo: [p99<7s]\n  feed:\n    scenario: pubsub\n    rate: 300\n    \
             subject: wl.web.feed\n",
            server.url
        ),
    )
    .unwrap();
    let mut child = spawn_piped(&[
        "run",
        file.to_str().unwrap(),
        "--web",
        "127.0.0.1:0",
        "--web-linger",
        "10m",
        "--no-progress",
    ]);
    let (seen, rest) = stderr_until(&mut child, "--web: the live page is on http://");
    let (url, addr) = page_address(&seen);
    browser.cmd("POST", "/url", Some(json!({"url": url})));
    // The deadline only guards against a hang.
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut both_running = None;
    let last = loop {
        let page = browser.execute(READ_CLASSES);
        if page["result"] == true {
            break page;
        }
        let classes = page["classes"].as_array().unwrap();
        if classes.len() == 2 && classes.iter().all(|c| c["finished"] == false) {
            both_running.get_or_insert(page);
        }
        assert!(Instant::now() < deadline, "no result on the page in 300 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    let during = both_running.expect("both classes were shown while they ran");
    assert_eq!(during["single_hidden"], true, "{during}");
    let (_, body) = get(&addr, "/result.json");
    let doc: Value = serde_json::from_slice(&body).expect("the workload's document");
    assert_eq!(doc["workload"], "duo");
    for c in last["classes"].as_array().unwrap() {
        let name = c["class"].as_str().unwrap();
        let mine = doc["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["class"] == name)
            .unwrap_or_else(|| panic!("{name} is not in the document"));
        let r = &mine["result"];
        // Its section ends on its own last tick, with its own totals.
        assert_eq!(c["finished"], true, "{c}");
        let ticks = r["timeline"]["ticks"].as_array().unwrap();
        assert_eq!(f(&c["t"]), f(&ticks.last().unwrap()["t_s"]), "{c}");
        assert_eq!(
            f(&c["figures"]["total-pub"]),
            f(&r["by_role"]["pub"]["msgs"]),
            "{c}"
        );
        let charts: Vec<&str> = c["charts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(charts.contains(&"throughput-timeline"), "{c}");
    }
    let probe = &last["classes"].as_array().unwrap()[0];
    assert_eq!(
        probe["class"], "probe",
        "sections in the file's order: {last}"
    );
    assert_eq!(probe["title"], "class probe (latency)");
    assert_eq!(probe["refs"], json!(["SLO p99<7s"]), "{probe}");
    let text = last["result_text"].as_str().unwrap();
    assert!(text.starts_with("=== class probe"), "{text}");
    assert!(text.contains("Workload duo: 2 classes"), "{text}");
    let (status, report) = get(&addr, "/report.html");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let report = String::from_utf8(report).unwrap();
    assert!(
        report.contains("result.json: probe") && report.contains("result.json: feed"),
        "the report labels each class"
    );
    let errors: Vec<Value> = browser
        .console()
        .into_iter()
        .filter(|e| e["level"] == "SEVERE")
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let err = support::rest_of_stderr(seen, rest);
    assert!(status.success(), "{status:?}: {err}");
}
