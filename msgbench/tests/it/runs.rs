//! Repeated runs, the live view and the timeline against a real server: `--runs N` summarises
//! every metric over N runs and keeps the median run's sections; `--live` prints a line per
//! second; `--stream-stats` writes the same seconds as JSON lines; the `timeline` section adds
//! up to the run's own counts; an interrupted series keeps the runs it finished; and `diff`
//! reads what `--runs` wrote.

use std::time::Instant;

use crate::support::{self, run, run_json, schema_errors, stderr, u, TestServer};
use serde_json::Value;

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("the result file")).expect("JSON")
}

#[test]
fn runs_report_each_metric_over_the_runs_and_show_the_median_run() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "pubsub", "--server", &s.url, "--msgs", "50000", "--runs", "3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let runs = &v["runs"];
    assert_eq!(runs["n"], 3);
    assert_eq!(runs["runs"].as_array().unwrap().len(), 3);
    let rate = &runs["metrics"]["msgs_per_sec"];
    let values: Vec<f64> = rate["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(values.len(), 3);
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(rate["median"].as_f64().unwrap(), sorted[1]);
    assert_eq!(rate["min"].as_f64().unwrap(), sorted[0]);
    // The top-level sections are the median run's.
    let chosen = runs["representative"].as_u64().unwrap() as usize;
    assert_eq!(runs["representative_by"], "msgs_per_sec");
    assert_eq!(v["throughput"]["msgs_per_sec"].as_f64().unwrap(), sorted[1]);
    assert_eq!(values[chosen], sorted[1]);
    assert_eq!(v["run_id"], runs["runs"][chosen]["run_id"]);
    // Every run delivered everything; its loss figures say so.
    assert_eq!(runs["metrics"]["lost"]["max"], 0.0);
    let err = stderr(&out);
    for k in 1..=3 {
        assert!(err.contains(&format!("run {k}/3: ")), "{err}");
    }
    assert!(err.contains("Runs: 3; the figures above are run"), "{err}");
    // Thresholds judge the median over the runs.
    let (out, v) = run_json(&[
        "pubsub",
        "--server",
        &s.url,
        "--msgs",
        "20000",
        "--runs",
        "2",
        "--threshold",
        "msgs_per_sec>1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let median = v["runs"]["metrics"]["msgs_per_sec"]["median"].as_f64();
    assert_eq!(v["thresholds"][0]["measured"].as_f64(), median);
}

#[test]
fn the_live_line_the_stream_and_the_timeline_tell_the_same_seconds() {
    let s = TestServer::start();
    let dir = support::scratch_dir("live");
    let (json, stream) = (dir.join("r.json"), dir.join("s.jsonl"));
    let out = run(&[
        "latency",
        "--server",
        &s.url,
        "--rate",
        "2000",
        "--duration",
        "3500ms",
        "--warmup",
        "0s",
        "--live",
        "--stream-stats",
        stream.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = read_json(&json);
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    // A line per whole second on stderr, with the rate, the P99 and the errors. (A busy
    // machine may take a tick late: 3.5 s leaves room for two even so.)
    let err = stderr(&out);
    let live: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("  publishes ") && l.contains("  errors "))
        .collect();
    assert!(live.len() >= 2, "{err}");
    assert!(live.iter().all(|l| l.contains(" p99 ")), "{err}");
    // Each side named by what it counts: a latency run's publishes and deliveries.
    assert!(live.iter().all(|l| l.contains("  deliveries ")), "{err}");

    let t = &v["timeline"];
    let ticks = t["ticks"].as_array().unwrap();
    let lines: Vec<Value> = std::fs::read_to_string(&stream)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), ticks.len());
    for (l, k) in lines.iter().zip(ticks) {
        assert_eq!(l["scenario"], "latency");
        assert_eq!(l["t_s"], k["t_s"]);
        assert_eq!(l["msgs"], k["msgs"]);
    }
    // The live lines are the same ticks, in order, each labelled with its second, the last
    // (partial) one too, which says how long it was. (A tick taken late is labelled by when
    // it was taken, so the first is not always "1s".)
    assert_eq!(live.len(), ticks.len(), "{err}");
    for (i, (line, k)) in live.iter().zip(ticks).enumerate() {
        let (t_s, span) = (k["t_s"].as_f64().unwrap(), k["span_s"].as_f64().unwrap());
        let label = if span < 0.95 {
            format!("{t_s:.1}s (last ")
        } else {
            format!("{t_s:.0}s")
        };
        assert!(line.trim_start().starts_with(&label), "{line} for {k}");
        if span < 0.95 {
            continue;
        }
        // Second i + 1 is taken once it is over, never before.
        assert!(t_s >= (i + 1) as f64, "tick {i} at {t_s} s");
    }
    // Per client, the seconds add up to the client's own count.
    let clients = t["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 2);
    for (i, c) in clients.iter().enumerate() {
        let summed: u64 = ticks.iter().map(|k| u(&k["msgs"][i])).sum();
        let role = c["role"].as_str().unwrap();
        let counted = v["clients"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["role"] == role)
            .map(|x| u(&x["msgs"]))
            .unwrap();
        assert_eq!(summed, counted, "{role}");
    }
    // The seconds' latency counts cover every timed message.
    let timed: u64 = ticks
        .iter()
        .filter_map(|k| k.get("latency"))
        .map(|l| u(&l["count"]))
        .sum();
    assert_eq!(timed, u(&v["latency"]["count"]));
    for k in ticks.iter().filter_map(|k| k.get("latency")) {
        assert!(u(&k["p50_ns"]) <= u(&k["p99_ns"]) && u(&k["p99_ns"]) <= u(&k["max_ns"]));
    }
}

#[test]
fn an_interrupted_series_keeps_the_runs_it_finished() {
    let s = TestServer::start();
    let dir = support::scratch_dir("runs-int");
    let (json, ticks) = (dir.join("r.json"), dir.join("s.jsonl"));
    let mut child = support::spawn_piped(&[
        "pubsub",
        "--server",
        &s.url,
        "--rate",
        "2000",
        "--duration",
        "2s",
        "--runs",
        "5",
        "--stream-stats",
        ticks.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    // Into the third run (its first second is over): two have finished. Waiting for the
    // third run's tick, not a fixed time, which a busy machine could spend before two were
    // done.
    let started = Instant::now();
    support::wait_for_tick(&ticks, &mut child, |t| t["run"] == 3);
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    // Five runs of 2 s: the bound only guards against a series that would not stop.
    assert!(started.elapsed() < support::HANG);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let v = read_json(&json);
    assert_eq!(v["interrupted"], true);
    let n = u(&v["runs"]["n"]);
    assert!((2..5).contains(&n), "{n} runs kept");
    assert_eq!(schema_errors(&v), Vec::<String>::new());
}

#[test]
fn a_series_interrupted_between_runs_says_so_and_keeps_the_runs_it_finished() {
    // The signal comes as the second run reports: before the third starts, or while it
    // connects to the server, frozen so that it cannot get further. Either way the series was
    // cut short by the signal: it is interrupted (130), not complete (0), and not a connection
    // failure (4).
    let s = TestServer::start();
    let dir = support::scratch_dir("runs-int-between");
    let json = dir.join("r.json");
    let mut child = support::spawn_piped(&[
        "pubsub",
        "--server",
        &s.url,
        "--rate",
        "2000",
        "--duration",
        "1s",
        "--runs",
        "5",
        "--json",
        json.to_str().unwrap(),
    ]);
    let (seen, rest) = support::stderr_until(&mut child, "run 2/5: ");
    s.freeze(true);
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    s.freeze(false);
    let err = support::rest_of_stderr(seen, rest);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(!err.contains("cannot connect"), "{err}");
    let v = read_json(&json);
    assert_eq!(v["interrupted"], true);
    // The two it finished; a third only if it was under way before the freeze.
    let n = u(&v["runs"]["n"]);
    assert!((2..=3).contains(&n), "{n} runs kept");
    assert_eq!(schema_errors(&v), Vec::<String>::new());
}

#[test]
fn diff_reads_what_runs_wrote() {
    let s = TestServer::start();
    let dir = support::scratch_dir("runs-diff");
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    for f in [&a, &b] {
        let out = run(&[
            "request",
            "--server",
            &s.url,
            "--msgs",
            "5000",
            "--runs",
            "3",
            "--no-progress",
            "--json",
            f.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let out = run(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(request, 3 runs) → NEW b.json (request, 3 runs)"),
        "{text}"
    );
    for m in ["msgs/s", "p50", "p90", "p99", "p99.9"] {
        assert!(text.contains(&format!("\n  {m:<8} ")), "{m}: {text}");
    }
}

#[test]
fn bad_runs_and_stream_flags_are_named() {
    let s = TestServer::start();
    let stream = ["--stream-stats", "/nonexistent/dir/s.jsonl"];
    for (args, code, needle) in [
        (vec!["pub", "--runs", "0"], 2, "--runs"),
        (vec!["pub", "--runs", "many"], 2, "--runs"),
        (vec!["pub", "--live", "--no-progress"], 2, "--live"),
        // A file that cannot be made is bad input, found before any load.
        (
            [&["pub", "--server", &s.url, "--msgs", "10"][..], &stream].concat(),
            2,
            "--stream-stats",
        ),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
