//! `--metrics-listen`: `/metrics` scraped while a run is under way parses as OpenMetrics, and
//! every scrape agrees exactly with the tick of the result's `timeline` it says it is from
//! (rates, latency, cumulative messages and errors), the final one with the result itself. A
//! port in use and a bad address are refused in one line before anything connects.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::openmetrics::{self, Exposition};
use crate::support::{self, bin, scratch_dir, stderr, TestServer};
use serde_json::Value;

/// Starts msgbench with `args` plus `--metrics-listen 127.0.0.1:0` and reads the address it
/// printed; stderr's other lines are kept for failure messages.
fn start(args: &[&str]) -> (Child, String, mpsc::Receiver<String>) {
    let mut child = bin()
        .args(args)
        .args(["--metrics-listen", "127.0.0.1:0", "--no-progress"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("msgbench starts");
    let (tx, rx) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("msgbench prints the address it listens on");
    let addr = line
        .strip_prefix("--metrics-listen: http://")
        .and_then(|a| a.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("not the address line: {line}"))
        .to_string();
    (child, addr, rx)
}

/// Runs msgbench with `args`, scraping `/metrics` every 200 ms until the final figures are up;
/// returns every scrape that held a tick, the result and how long the process took to exit
/// after the final scrape.
fn run_scraped(args: &[&str], json: &std::path::Path) -> (Vec<Exposition>, Value, Duration) {
    let (mut child, addr, errs) = start(args);
    // Scrapes go on until the final figures are up: the deadline only guards against a hang.
    let deadline = Instant::now() + support::HANG;
    let mut scrapes = Vec::new();
    loop {
        assert!(
            Instant::now() < deadline,
            "the run never showed final figures"
        );
        let body = openmetrics::scrape(&addr)
            .expect("the server answers until the final figures are taken");
        let e = openmetrics::parse(&body).unwrap_or_else(|p| panic!("{p}\n{body}"));
        let last = e.get("msgbench_run_finished", &[]) == Some(1.0);
        if !e.samples.is_empty() {
            scrapes.push(e);
        }
        if last {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let taken = Instant::now();
    let status = child.wait().unwrap();
    let exited_after = taken.elapsed();
    let lines: Vec<String> = errs.try_iter().collect();
    assert!(status.success(), "{status}: {lines:?}");
    let doc = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    (scrapes, doc, exited_after)
}

/// Messages per role up to and including tick `i`, from the timeline's per-client columns.
fn cumulative(doc: &Value, i: usize) -> BTreeMap<String, u64> {
    let tl = &doc["timeline"];
    let roles: Vec<&str> = tl["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    let mut sum = BTreeMap::new();
    for t in &tl["ticks"].as_array().unwrap()[..=i] {
        for (j, m) in t["msgs"].as_array().unwrap().iter().enumerate() {
            *sum.entry(roles[j].to_string()).or_insert(0) += m.as_u64().unwrap();
        }
    }
    sum
}

/// Checks every scrape against its tick; returns the indexes of the ticks seen.
fn check_against_timeline(scrapes: &[Exposition], doc: &Value, scenario: &str) -> Vec<usize> {
    let ticks = doc["timeline"]["ticks"].as_array().unwrap();
    let run_id = doc["run_id"].as_str().unwrap();
    let mut seen = Vec::new();
    for e in scrapes {
        for s in &e.samples {
            assert_eq!(s.labels["run"], run_id, "{s:?}");
            assert_eq!(s.labels["scenario"], scenario, "{s:?}");
        }
        let t_s = e
            .get("msgbench_tick_end_seconds", &[])
            .expect("a tick's end");
        let i = ticks
            .iter()
            .position(|t| t["t_s"].as_f64() == Some(t_s))
            .unwrap_or_else(|| panic!("no tick of the timeline ends at {t_s}"));
        let t = &ticks[i];
        let f = |v: &Value| v.as_f64().unwrap();
        assert_eq!(
            e.get("msgbench_tick_span_seconds", &[]),
            Some(f(&t["span_s"]))
        );
        // The last tick may be shown before the run knows it is the last, never the reverse.
        if e.get("msgbench_run_finished", &[]) == Some(1.0) {
            assert_eq!(i + 1, ticks.len(), "final figures from tick {i}");
        }
        for (role, field) in [("pub", "sent_per_sec"), ("sub", "received_per_sec")] {
            let got = e.get("msgbench_messages_per_second", &[("role", role)]);
            assert_eq!(got, Some(f(&t[field])), "{role} rate at {t_s}");
            let msgs = e.get("msgbench_messages_total", &[("role", role)]);
            let want = cumulative(doc, i)[role] as f64;
            assert_eq!(msgs, Some(want), "{role} messages up to {t_s}");
        }
        match t.get("latency") {
            Some(l) => {
                let s = |k: &str| Some(l[k].as_u64().unwrap() as f64 / 1e9);
                assert_eq!(e.get("msgbench_latency_p50_seconds", &[]), s("p50_ns"));
                assert_eq!(e.get("msgbench_latency_p99_seconds", &[]), s("p99_ns"));
                assert_eq!(e.get("msgbench_latency_max_seconds", &[]), s("max_ns"));
                let count = l["count"].as_u64().unwrap() as f64;
                assert_eq!(e.get("msgbench_latency_samples", &[]), Some(count));
            }
            None => assert_eq!(e.get("msgbench_latency_p99_seconds", &[]), None),
        }
        let errors: f64 = e.all("msgbench_errors_total").map(|s| s.value).sum();
        let want: u64 = ticks[..=i]
            .iter()
            .map(|t| t["errors"].as_u64().unwrap())
            .sum();
        assert_eq!(errors, want as f64, "errors up to {t_s}");
        // A fixed rate has no stages.
        assert_eq!(e.get("msgbench_stage_index", &[]), None);
        if seen.last() != Some(&i) {
            seen.push(i);
        }
    }
    seen
}

/// The final scrape's counters are the result's: messages per role and errors by kind.
fn check_final_against_result(last: &Exposition, doc: &Value) {
    for role in ["pub", "sub"] {
        let msgs = doc["by_role"][role]["msgs"].as_u64().unwrap() as f64;
        let got = last.get("msgbench_messages_total", &[("role", role)]);
        assert_eq!(got, Some(msgs), "{role}");
    }
    let by_kind: BTreeMap<String, f64> = last
        .all("msgbench_errors_total")
        .map(|s| (s.labels["kind"].clone(), s.value))
        .collect();
    let want: BTreeMap<String, f64> = doc["errors"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
        .collect();
    assert_eq!(by_kind, want);
}

#[test]
fn scrapes_during_a_latency_run_match_its_timeline_tick_for_tick() {
    let s = TestServer::start();
    let dir = scratch_dir("metrics");
    let json = dir.join("r.json");
    let (scrapes, doc, exited_after) = run_scraped(
        &[
            "latency",
            "--server",
            &s.url,
            "--rate",
            "2000",
            "--duration",
            "6s",
            "--json",
            json.to_str().unwrap(),
        ],
        &json,
    );
    let seen = check_against_timeline(&scrapes, &doc, "latency");
    let ticks = doc["timeline"]["ticks"].as_array().unwrap();
    // Seen during the run, not only at its end, and with latency in them: three of its six
    // seconds, scraped five times a second, leave room for a busy machine to miss some.
    assert!(
        seen.len() >= 3,
        "ticks scraped: {seen:?} of {}",
        ticks.len()
    );
    assert!(seen.iter().any(|&i| ticks[i].get("latency").is_some()));
    assert_eq!(seen.last(), Some(&(ticks.len() - 1)));
    check_final_against_result(scrapes.last().unwrap(), &doc);
    // Once its final figures were taken the process did not wait out --metrics-linger (60 s):
    // half of it tells the two apart, with all the room a busy machine needs to exit.
    assert!(exited_after < Duration::from_secs(30), "{exited_after:?}");
}

#[test]
fn errors_are_counted_by_kind_as_the_result_counts_them() {
    let s = TestServer::start();
    let dir = scratch_dir("metrics-errors");
    let json = dir.join("r.json");
    // No responders: every request fails as no_responders.
    let (scrapes, doc, _) = run_scraped(
        &[
            "request",
            "--server",
            &s.url,
            "--responders",
            "0",
            "--rate",
            "200",
            "--duration",
            "2s",
            "--allow-loss",
            "--json",
            json.to_str().unwrap(),
        ],
        &json,
    );
    check_against_timeline(&scrapes, &doc, "request");
    let last = scrapes.last().unwrap();
    assert!(
        doc["errors"]["no_responders"].as_u64().unwrap() > 0,
        "{doc}"
    );
    check_final_against_result(last, &doc);
}

#[test]
fn unusable_addresses_are_refused_in_one_line_before_anything_connects() {
    // Nothing listens at this server: had the run started, it would fail to connect (status
    // 4). A refusal of the address with status 2 shows it came first.
    let nowhere = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("nats://{}", l.local_addr().unwrap())
    };
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap().to_string();
    let dir = scratch_dir("metrics-refused");
    let json = dir.join("r.json");
    let pub_with = |extra: &[&str]| {
        let mut args = vec!["pub", "--server", &nowhere, "--msgs", "10"];
        args.extend_from_slice(extra);
        // --print-plan refuses --json first; everywhere else a result file would show a run.
        if !extra.contains(&"--print-plan") {
            args.extend(["--json", json.to_str().unwrap()]);
        }
        bin().args(&args).output().unwrap()
    };
    for (extra, says) in [
        (
            vec!["--metrics-listen", busy_addr.as_str()],
            format!(
                "cannot listen on {busy_addr} for --metrics-listen: the address is already in use"
            ),
        ),
        (
            // A documentation address (TEST-NET-1): binding it sends nothing anywhere.
            vec!["--metrics-listen", "192.0.2.1:9464"],
            "it is not an address of this machine".to_string(),
        ),
        (
            vec!["--metrics-listen", "127.0.0.1:99999"],
            "'--metrics-listen <ADDR>': '99999' is not a port".to_string(),
        ),
        (
            vec!["--metrics-listen", "9464"],
            "'--metrics-listen <ADDR>': expected HOST:PORT".to_string(),
        ),
        (
            vec!["--metrics-linger", "5s"],
            "--metrics-listen".to_string(),
        ),
        (
            // The coordinator of a run on agents binds before it connects to the control server.
            vec!["--metrics-listen", busy_addr.as_str(), "--agents", "1"],
            format!(
                "cannot listen on {busy_addr} for --metrics-listen: the address is already in use"
            ),
        ),
        (
            vec!["--metrics-listen", "127.0.0.1:0", "--print-plan"],
            "--metrics-listen does not apply to --print-plan".to_string(),
        ),
    ] {
        let out = pub_with(&extra);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{extra:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(&says),
            "{extra:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(!json.exists(), "{extra:?} wrote a result");
    }
    drop(busy);
    // compare runs drivers, which report only at the end of a run.
    let out = bin()
        .args(["compare", "pubsub", "--server", &nowhere])
        .args(["--metrics-listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: --metrics-listen does not apply to `msgbench compare`"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn the_reader_refuses_what_is_not_openmetrics() {
    // The checks above are only worth something if the reader can say no.
    let good = "# HELP a_seconds A.\n# TYPE a_seconds gauge\n# UNIT a_seconds seconds\n\
                a_seconds{x=\"1\"} 0.5\n# TYPE b counter\nb_total 3\n# EOF\n";
    let e = openmetrics::parse(good).unwrap();
    assert_eq!(e.get("a_seconds", &[("x", "1")]), Some(0.5));
    assert_eq!(e.get("b_total", &[]), Some(3.0));
    for (bad, why) in [
        (good.trim_end_matches("# EOF\n"), "EOF"),
        (&*good.replace("# EOF\n", "# EOF\nc 1\n"), "EOF"),
        (&*good.replace("b_total 3", "b 3"), "not in its family"),
        (&*good.replace("b_total 3", "b_total -3"), "below zero"),
        (
            &*good.replace("# UNIT a_seconds seconds", "# UNIT a_seconds bytes"),
            "unit",
        ),
        (&*good.replace("gauge", "meter"), "unknown type"),
        (&*good.replace("x=\"1\"", "x=\"1\",x=\"2\""), "twice"),
        (&*good.replace("x=\"1\"", "x=\"\\t\""), "escape"),
        (&*good.replace("0.5", "half"), "bad number"),
        (
            &*good.replace("# TYPE b counter\n", "# TYPE b counter\n# TYPE b counter\n"),
            "second TYPE",
        ),
        (
            &format!(
                "{}a_seconds{{x=\"2\"}} 1\n# EOF\n",
                good.trim_end_matches("# EOF\n")
            ),
            "family's block",
        ),
        (
            &*good.replace(
                "a_seconds{x=\"1\"} 0.5\n",
                "a_seconds{x=\"1\"} 0.5\na_seconds{x=\"1\"} 0.6\n",
            ),
            "twice",
        ),
    ] {
        let e = openmetrics::parse(bad).expect_err(bad);
        assert!(e.contains(why), "{why}: {e}");
    }
}

#[test]
fn a_workloads_classes_share_one_page_each_under_its_class_and_stream_lines_tagged_so() {
    let s = TestServer::start();
    let dir = scratch_dir("metrics-workload");
    let (json, ticks) = (dir.join("mix.json"), dir.join("ticks.jsonl"));
    let file = dir.join("duo.yaml");
    std::fs::write(
        &file,
        format!(
            "workload: duo\nduration: 4s\nconn: {{server: {}}}\nclasses:\n  probe:\n    \
             scenario: latency\n    rate: 200\n    subject: wl.m.probe\n  feed:\n    \
             scenario: pubsub\n    rate: 300\n    subject: wl.m.feed\n",
            s.url
        ),
    )
    .unwrap();
    let args = [
        "run",
        file.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--stream-stats",
        ticks.to_str().unwrap(),
    ];
    let (mut child, addr, errs) = start(&args);
    // Scraped until both classes' final figures are up (the deadline guards against a hang).
    let deadline = Instant::now() + support::HANG;
    let mut during = Vec::new();
    let last = loop {
        assert!(Instant::now() < deadline, "the classes never both ended");
        let body = openmetrics::scrape(&addr).expect("the page answers until it is taken");
        let e = openmetrics::parse(&body).unwrap_or_else(|p| panic!("{p}\n{body}"));
        let finished: Vec<f64> = e.all("msgbench_run_finished").map(|s| s.value).collect();
        if finished == [1.0, 1.0] {
            break e;
        }
        if !finished.is_empty() {
            during.push(e);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let status = child.wait().unwrap();
    let lines: Vec<String> = errs.try_iter().collect();
    assert!(status.success(), "{status}: {lines:?}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(
        during
            .iter()
            .any(|e| e.all("msgbench_tick_end_seconds").count() == 2),
        "both classes were on the page while they ran"
    );
    // Each class's final counters are its own result's, under its class, scenario and run;
    // the page's own label is the workload's.
    for c in doc["classes"].as_array().unwrap() {
        let (class, r) = (c["class"].as_str().unwrap(), &c["result"]);
        let on = [
            ("class", class),
            ("scenario", r["scenario"].as_str().unwrap()),
            ("run", r["run_id"].as_str().unwrap()),
            ("workload", "duo"),
        ];
        for role in ["pub", "sub"] {
            let mut labels = on.to_vec();
            labels.push(("role", role));
            let want = r["by_role"][role]["msgs"].as_f64();
            let got = last.get("msgbench_messages_total", &labels);
            assert_eq!(got, want, "{class} {role}");
        }
        assert!(
            last.get("msgbench_tick_end_seconds", &on).is_some(),
            "{class}"
        );
    }
    // Only the latency class timed anything.
    let timed: Vec<&str> = last
        .all("msgbench_latency_p99_seconds")
        .map(|s| s.labels["class"].as_str())
        .collect();
    assert_eq!(timed, ["probe"]);
    // The stream file: every class's ticks, each line tagged with its class, as many as its
    // timeline has.
    let text = std::fs::read_to_string(&ticks).unwrap();
    for c in doc["classes"].as_array().unwrap() {
        let class = c["class"].as_str().unwrap();
        let mine = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["class"] == class)
            .count();
        let kept = c["result"]["timeline"]["ticks"].as_array().unwrap().len();
        assert_eq!(mine, kept, "{class}");
    }
}
