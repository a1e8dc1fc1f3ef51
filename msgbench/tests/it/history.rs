//! `--record` and `msgbench history`, end to end against a real nats-server: runs recorded by
//! two processes at once all land; a corrupt store costs the run nothing but one line (and,
//! with `--record=required`, the exit status); flags that name a recorded run are refused
//! without one; `history check` finds a regression planted among real runs; `report
//! --history` draws such a history, read back in a real headless Chromium (found, or its
//! absence handled, as in `report.rs`).

use std::path::Path;

use crate::support::{self, bin, run, stderr, TestServer};
use crate::webdriver::{browser_available, Browser};
use serde_json::{json, Value};

/// A short pub run against `url`, recorded into `db`, with `extra` flags.
fn pub_args<'a>(url: &'a str, db: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "pub",
        "--server",
        url,
        "--msgs",
        "2000",
        "--no-progress",
        "--history-file",
        db,
    ];
    a.extend_from_slice(extra);
    a
}

fn count_runs(db: &Path) -> usize {
    let out = run(&[
        "history",
        "list",
        "--history",
        db.to_str().unwrap(),
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["runs"].as_array().unwrap().len()
}

#[test]
fn two_processes_recording_into_one_file_at_once_lose_no_row() {
    let s = TestServer::start();
    let dir = support::scratch_dir("history-two");
    let db = dir.join("h.db");
    let db_s = db.to_str().unwrap().to_string();
    let per_process = 4;
    std::thread::scope(|scope| {
        for p in 0..2 {
            let (url, db_s) = (&s.url, &db_s);
            scope.spawn(move || {
                for i in 0..per_process {
                    let label = format!("proc={p}-{i}");
                    let out = run(&pub_args(
                        url,
                        db_s,
                        &["--record=required", "--label", &label],
                    ));
                    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
                    assert!(
                        stderr(&out).contains("history: recorded"),
                        "{}",
                        stderr(&out)
                    );
                }
            });
        }
    });
    assert_eq!(count_runs(&db), 2 * per_process);
}

#[test]
fn a_corrupt_store_leaves_the_json_written_with_one_line() {
    let s = TestServer::start();
    let dir = support::scratch_dir("history-corrupt");
    let db = dir.join("junk.db");
    std::fs::write(&db, vec![0x5a_u8; 8192]).unwrap();
    let json = dir.join("result.json");
    let (db_s, json_s) = (db.to_str().unwrap(), json.to_str().unwrap());
    let out = run(&pub_args(&s.url, db_s, &["--record", "--json", json_s]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["scenario"], "pub");
    let lines: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.contains("history"))
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("not recorded") && lines[0].contains("not a readable database"));

    // Required: the same, and the run fails.
    std::fs::remove_file(&json).unwrap();
    let out = run(&pub_args(
        &s.url,
        db_s,
        &["--record=required", "--json", json_s],
    ));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(json.exists());
    let e = stderr(&out);
    let err: Vec<&str> = e.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(err.len(), 1, "{}", stderr(&out));
    assert!(err[0].contains("--record=required"), "{}", err[0]);
}

#[test]
fn the_history_variable_records_and_names_the_file() {
    let s = TestServer::start();
    let dir = support::scratch_dir("history-env");
    let db = dir.join("env.db");
    let out = bin()
        .args(["pub", "--server", &s.url, "--msgs", "1000", "--no-progress"])
        .env("MSGBENCH_HISTORY", &db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(count_runs(&db), 1);
}

#[test]
fn flags_that_name_a_recorded_run_are_refused_without_one() {
    for flag in [["--label", "commit=abc"], ["--name", "nightly"]] {
        let out = run(&["pub", "--msgs", "10", flag[0], flag[1]]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let e = stderr(&out);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains(flag[0]) && e.contains("--record"), "{e}");
    }
    let out = run(&["pub", "--record", "--label", "nokey"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--label"), "{}", stderr(&out));
    let out = run(&["pub", "--record", "--print-plan"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--record"), "{}", stderr(&out));
}

/// The fields of a stored run that planted rows copy, so they join its series.
struct Template {
    benchmark: String,
    testbed: String,
    testbed_json: String,
    plan_json: String,
    result_json: String,
}

impl Template {
    /// The first stored run's.
    fn of(c: &rusqlite::Connection) -> Template {
        c.query_row(
            "SELECT benchmark, testbed, testbed_json, plan_json, result_json FROM runs
             ORDER BY id LIMIT 1",
            [],
            |r| {
                Ok(Template {
                    benchmark: r.get(0)?,
                    testbed: r.get(1)?,
                    testbed_json: r.get(2)?,
                    plan_json: r.get(3)?,
                    result_json: r.get(4)?,
                })
            },
        )
        .unwrap()
    }
}

/// Plants one run with `msgs_per_sec` = `value`, started at `started_at`, labelled
/// commit=`commit`: rows as `--record` writes them, with the real runs' benchmark and testbed.
fn plant(
    c: &rusqlite::Connection,
    t: &Template,
    id: &str,
    started_at: &str,
    value: f64,
    commit: &str,
) {
    c.execute(
        "INSERT INTO runs (run_id, benchmark, name, scenario, testbed, testbed_json, started_at,
                           recorded_at, plan_json, result_json)
         VALUES (?1, ?2, NULL, 'pub', ?3, ?4, ?5, ?5, ?6, ?7)",
        rusqlite::params![
            id,
            t.benchmark,
            t.testbed,
            t.testbed_json,
            started_at,
            t.plan_json,
            t.result_json
        ],
    )
    .unwrap();
    let run = c.last_insert_rowid();
    c.execute(
        "INSERT INTO metrics (run, metric, value) VALUES (?1, 'msgs_per_sec', ?2)",
        rusqlite::params![run, value],
    )
    .unwrap();
    c.execute(
        "INSERT INTO labels (run, key, value) VALUES (?1, 'commit', ?2)",
        rusqlite::params![run, commit],
    )
    .unwrap();
}

/// Three real pub runs (recorded by `--record`, so the planted rows copy a real benchmark,
/// testbed and result), then 20 planted runs at the real runs' median rate (2% noise): `check`
/// passes. Then 8 planted runs 30% slower: `check` exits 8 and names the first of them.
#[test]
fn check_finds_a_regression_planted_after_real_runs() {
    let s = TestServer::start();
    let dir = support::scratch_dir("history-check");
    let db = dir.join("h.db");
    let db_s = db.to_str().unwrap();
    for i in 0..3 {
        let label = format!("commit=real{i}");
        let out = run(&pub_args(
            &s.url,
            db_s,
            &["--record=required", "--label", &label],
        ));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let c = rusqlite::Connection::open(&db).unwrap();
    let t = Template::of(&c);
    let mut real: Vec<f64> = c
        .prepare("SELECT value FROM metrics WHERE metric = 'msgs_per_sec'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(real.len(), 3);
    real.sort_by(f64::total_cmp);
    let level = real[1];
    // A fixed pattern of ±2% noise, so the planted series is the same every time.
    let noise = [
        0.01, -0.02, 0.015, -0.005, 0.0, 0.02, -0.01, 0.005, -0.015, 0.01,
    ];
    for i in 0..20 {
        let v = level * (1.0 + noise[i % noise.len()]);
        plant(
            &c,
            &t,
            &format!("old{i}"),
            &format!("2098-01-01T00:00:{i:02}Z"),
            v,
            &format!("old{i}"),
        );
    }
    // The planted runs alone are analysed (--last): the real runs' rates on a busy machine
    // spread by a factor of ten and more, and the test must not hang on them.
    let check = |json: &Path, last: &str| {
        run(&[
            "history",
            "check",
            "--history",
            db_s,
            "--metric",
            "msgs_per_sec",
            "--last",
            last,
            "--json",
            json.to_str().unwrap(),
        ])
    };
    let before = dir.join("before.json");
    let out = check(&before, "20");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("No regression"));

    for i in 0..8 {
        let v = 0.7 * level * (1.0 + noise[(i + 3) % noise.len()]);
        plant(
            &c,
            &t,
            &format!("new{i}"),
            &format!("2099-01-01T00:00:{i:02}Z"),
            v,
            &format!("new{i}"),
        );
    }
    let after = dir.join("after.json");
    let out = check(&after, "28");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(8), "{text}\n{}", stderr(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&after).unwrap()).unwrap();
    assert_eq!(
        support::schema_errors_in("history-check-v1.schema.json", &doc),
        Vec::<String>::new()
    );
    let m = &doc["series"][0]["metrics"][0];
    assert_eq!(m["verdict"], "regression", "{text}");
    assert_eq!(m["change"]["at"]["run_id"], "new0", "{text}");
    assert_eq!(m["change"]["at"]["labels"]["commit"], "new0");
    let ratio = m["change"]["change"]["ratio"].as_f64().unwrap();
    assert!((ratio - 0.7).abs() < 0.03, "{ratio}");
    assert!(m["change"]["change"]["ci_high"].as_f64().unwrap() < 1.0);
    assert!(
        text.contains("msgs_per_sec   regression") && text.contains("commit=new0"),
        "{text}"
    );
    println!("{text}");

    // A looser tolerance than the drop is no regression, only reported.
    let out = run(&[
        "history",
        "check",
        "--history",
        db_s,
        "--metric",
        "msgs_per_sec",
        "--tolerate",
        "40%",
        "--last",
        "28",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // The plain views.
    let trend_json = dir.join("trend.json");
    let out = run(&[
        "history",
        "trend",
        "--history",
        db_s,
        "--last",
        "28",
        "--json",
        trend_json.to_str().unwrap(),
    ]);
    let trend = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trend_json).unwrap()).unwrap();
    assert_eq!(
        support::schema_errors_in("history-trend-v1.schema.json", &doc),
        Vec::<String>::new()
    );
    assert_eq!(doc["series"][0]["points"].as_array().unwrap().len(), 28);
    assert!(
        trend
            .lines()
            .any(|l| l.contains("new0") && l.contains("← change -29.9 %")),
        "{trend}"
    );
    let out = run(&["history", "show", "--history", db_s, "old3"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("msgs_per_sec"));
    // A real run in full: its result is the document --json wrote, valid as one.
    let real_id = {
        let out = run(&["history", "list", "--history", db_s, "--json", "-"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            support::schema_errors_in("history-list-v1.schema.json", &v),
            Vec::<String>::new()
        );
        v["runs"][0]["run_id"].as_str().unwrap().to_string()
    };
    let out = run(&[
        "history",
        "show",
        "--history",
        db_s,
        &real_id,
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        support::schema_errors_in("history-run-v1.schema.json", &shown),
        Vec::<String>::new()
    );
    assert_eq!(
        support::schema_errors(&shown["result"]),
        Vec::<String>::new()
    );
    assert_eq!(shown["run"]["labels"]["commit"], "real0");
    assert_eq!(count_runs(&db), 31);
}

/// The newcomer's history: 7 runs at one level, then slow runs 62% slower labelled
/// `commit=slowN` from slow8 on. However many slow runs have been recorded, `check` (its text
/// and its JSON) and `trend` name the same first run of the new level: slow8, where the commit
/// to look at is. With four slow runs, `check` once named slow9: its window test's baseline left
/// slow8 out of both sides.
#[test]
fn check_and_trend_name_the_same_first_slow_run() {
    let s = TestServer::start();
    let dir = support::scratch_dir("history-first-slow");
    let db = dir.join("h.db");
    let db_s = db.to_str().unwrap();
    let out = run(&pub_args(&s.url, db_s, &["--record=required"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // One run is "1 run", where it was "1 runs".
    let listed = run(&["history", "list", "--history", db_s]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains(&format!("\n1 run in '{db_s}'")), "{listed}");
    let c = rusqlite::Connection::open(&db).unwrap();
    let t = Template::of(&c);
    let noise = [0.01, -0.01, 0.005, -0.005, 0.0, 0.0075, -0.0075];
    for i in 1..=7 {
        let (id, at) = (format!("fast{i}"), format!("2098-01-01T00:00:{i:02}Z"));
        plant(&c, &t, &id, &at, 100_000.0 * (1.0 + noise[i % 7]), &id);
    }
    for i in 8..=12 {
        let (id, at) = (format!("slow{i}"), format!("2098-01-01T00:00:{i:02}Z"));
        plant(&c, &t, &id, &at, 38_000.0 * (1.0 + noise[i % 7]), &id);
        let last = i.to_string();
        let check_json = dir.join(format!("check{i}.json"));
        let check = run(&[
            "history",
            "check",
            "--history",
            db_s,
            "--metric",
            "msgs_per_sec",
            "--last",
            &last,
            "--json",
            check_json.to_str().unwrap(),
        ]);
        let text = String::from_utf8_lossy(&check.stdout).into_owned();
        let trend = run(&["history", "trend", "--history", db_s, "--last", &last]);
        let trend = String::from_utf8_lossy(&trend.stdout).into_owned();
        if i < 10 {
            // Two slow runs are too few for the default window of three to judge.
            continue;
        }
        assert_eq!(check.status.code(), Some(8), "{text}\n{}", stderr(&check));
        let line = text
            .lines()
            .find(|l| l.contains("msgs_per_sec"))
            .unwrap_or_default();
        assert!(
            line.contains("regression") && line.contains("commit=slow8)"),
            "{text}"
        );
        let doc: Value = serde_json::from_slice(&std::fs::read(&check_json).unwrap()).unwrap();
        let m = &doc["series"][0]["metrics"][0];
        assert_eq!(m["change"]["at"]["labels"]["commit"], "slow8", "{m}");
        let marked: Vec<&str> = trend.lines().filter(|l| l.contains(" ← ")).collect();
        assert!(
            marked.len() == 1 && marked[0].contains("commit=slow8  ← "),
            "{i}: {trend}"
        );
    }
}

#[test]
fn history_refuses_what_is_not_there() {
    let dir = support::scratch_dir("history-missing");
    let db = dir.join("none.db");
    let out = run(&["history", "list", "--history", db.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--history") && !db.exists(),
        "{}",
        stderr(&out)
    );
    let out = run(&["history", "check", "--metric", "p42x"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--metric"), "{}", stderr(&out));
}

/// Bencher Metric Format as its published JSON Schema (bencher.dev/bmf.json) states it: an
/// object of benchmarks, each an object of measures, each with a numeric `value` and optional
/// numeric `lower_value` and `upper_value`. Written out here (the test runs offline), with
/// `additionalProperties` closed so a misspelt key fails.
const BMF_SCHEMA: &str = r#"{
  "type": "object", "minProperties": 1,
  "additionalProperties": {
    "type": "object", "minProperties": 1,
    "additionalProperties": {
      "type": "object", "required": ["value"], "additionalProperties": false,
      "properties": {"value": {"type": "number"}, "lower_value": {"type": "number"},
                     "upper_value": {"type": "number"}}
    }
  }
}"#;

/// github-action-benchmark's custom tools as its README describes them: an array of entries
/// with `name`, `unit` and a numeric `value`, and optional `range` and `extra` strings.
const GAB_SCHEMA: &str = r#"{
  "type": "array",
  "items": {
    "type": "object", "required": ["name", "unit", "value"], "additionalProperties": false,
    "properties": {"name": {"type": "string"}, "unit": {"type": "string"},
                   "value": {"type": "number"}, "range": {"type": "string"},
                   "extra": {"type": "string"}}
  }
}"#;

fn errors_against(schema: &str, doc: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value = serde_json::from_str(schema).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    v.iter_errors(doc).map(|e| e.to_string()).collect()
}

fn export(db: &str, format: &str, extra: &[&str]) -> std::process::Output {
    let mut a = vec!["history", "export", "--history", db, "--format", format];
    a.extend_from_slice(extra);
    run(&a)
}

#[test]
fn export_writes_each_tools_format() {
    let s = TestServer::start();
    let dir = support::scratch_dir("history-export");
    let db = dir.join("h.db");
    let db_s = db.to_str().unwrap();
    for i in 0..2 {
        let label = format!("commit=c{i}");
        let out = run(&pub_args(
            &s.url,
            db_s,
            &["--record=required", "--runs", "2", "--label", &label],
        ));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }

    let out = export(db_s, "bencher", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bmf: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        errors_against(BMF_SCHEMA, &bmf),
        Vec::<String>::new(),
        "{bmf}"
    );
    let (_, measures) = bmf.as_object().unwrap().iter().next().unwrap();
    let rate = &measures["msgs_per_sec"];
    // Two runs (--runs 2): the value is their median, between the least and the greatest.
    let (lo, v, hi) = (
        rate["lower_value"].as_f64().unwrap(),
        rate["value"].as_f64().unwrap(),
        rate["upper_value"].as_f64().unwrap(),
    );
    assert!(lo <= v && v <= hi && lo < hi, "{rate}");

    // A publisher alone measures no loss: its null `lost` is left out of the smaller-is-better
    // export rather than written as a 0 a chart would show as "nothing lost".
    for (format, wanted, absent) in [
        ("github-bigger", "msgs_per_sec", "lost"),
        ("github-smaller", "errors", "lost"),
    ] {
        let out = export(db_s, format, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            errors_against(GAB_SCHEMA, &doc),
            Vec::<String>::new(),
            "{doc}"
        );
        let names: Vec<&str> = doc
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert!(
            names.iter().any(|n| n.ends_with(&format!(" - {wanted}"))),
            "{names:?}"
        );
        assert!(
            !names.iter().any(|n| n.ends_with(&format!(" - {absent}"))),
            "{names:?}"
        );
        assert!(
            doc[0]["extra"].as_str().unwrap().contains("commit=c1"),
            "{doc}"
        );
    }

    // Otava: the layout of its sample CSV (a `time` column, then attributes and metrics).
    let csv = dir.join("otava.csv");
    let out = export(db_s, "otava", &["-o", csv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&header[..3], &["time", "run_id", "commit"]);
    let rate_col = header.iter().position(|h| *h == "msgs_per_sec").unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.len(), header.len());
        assert!(humantime::parse_rfc3339(row[0]).is_ok(), "{}", row[0]);
        assert_eq!(row[2], format!("c{i}"));
        assert!(row[rate_col].parse::<f64>().unwrap() > 0.0);
    }

    // A second benchmark: Otava's CSV is one benchmark, so it must be named.
    let out = run(&pub_args(
        &s.url,
        db_s,
        &["--record=required", "--size", "64"],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = export(db_s, "otava", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--benchmark"), "{}", stderr(&out));
}

/// A run cut short by SIGINT measured less than its plan: its files are written (status 130),
/// and it stays out of the history, with one line saying so.
#[test]
fn an_interrupted_run_is_not_recorded() {
    let s = TestServer::start();
    let dir = support::scratch_dir("history-interrupted");
    let db = dir.join("h.db");
    let ticks = dir.join("ticks.jsonl");
    let mut child = bin()
        .args([
            "pub",
            "--server",
            &s.url,
            "--rate",
            "2000",
            "--duration",
            "60s",
        ])
        .args(["--no-progress", "--record", "--history-file"])
        .arg(&db)
        .arg("--stream-stats")
        .arg(&ticks)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Signalled once it has sent something, however long a busy machine took to connect.
    support::wait_for_tick(&ticks, &mut child, |t| {
        support::tick_f(t, "sent_per_sec") > 0.0
    });
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let lines: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.contains("history"))
        .map(String::from)
        .collect();
    assert_eq!(
        lines,
        vec!["history: the run was interrupted, so it was not recorded"]
    );
    assert!(!db.exists() || count_runs(&db) == 0);
}

/// The history charts of the page as the browser has them: per chart, each run's marker (its
/// data attributes and hover text), the change points, the levels and the whiskers.
const COLLECT_HISTORY: &str = r#"
const num = (s) => (s === null || s === undefined || s === '') ? null : Number(s);
return [...document.querySelectorAll('svg.chart[data-chart="history"]')].map((svg) => ({
  input: svg.dataset.input,
  benchmark: svg.closest('div.benchmark').dataset.benchmark,
  points: [...svg.querySelectorAll('g.series circle.pt')].map((c) => ({
    run: c.dataset.run, index: Number(c.dataset.index), value: Number(c.dataset.value),
    hover: c.querySelector('title').textContent,
  })),
  changes: [...svg.querySelectorAll('g.xref')].map((g) => ({
    label: g.dataset.ref, at: Number(g.dataset.value), lo: num(g.dataset.lo),
  })),
  levels: [...svg.querySelectorAll('g.level')].map((g) => ({
    value: Number(g.dataset.value), from: Number(g.dataset.from), to: Number(g.dataset.to),
    lo: num(g.dataset.lo), hi: num(g.dataset.hi),
  })),
  whiskers: [...svg.querySelectorAll('path.whisker')].map((p) => ({
    x: Number(p.dataset.x), min: Number(p.dataset.min), max: Number(p.dataset.max),
  })),
}));
"#;

/// Three real paced pub runs (the third repeated, `--runs 3`), then 20 planted runs at their
/// level and 8 planted 30% slower, drawn by `report --history` and read back in Chromium: a
/// marker per run, each hover naming its run and commit, the change point at the first slow
/// run with its p-value, each segment's median as its level, and the repeated run's range.
#[test]
fn report_draws_a_history_with_its_change_point_in_a_real_browser() {
    let s = TestServer::start();
    let dir = support::scratch_dir("history-report");
    let db = dir.join("h.db");
    let db_s = db.to_str().unwrap();
    // Paced at 1000/s, so the real runs' rates sit at one level on a busy machine too.
    for (i, extra) in [&[][..], &[][..], &["--runs", "3"][..]].iter().enumerate() {
        let label = format!("commit=real{i}");
        let mut args = pub_args(
            &s.url,
            db_s,
            &["--rate", "1000", "--record=required", "--label", &label],
        );
        args.extend_from_slice(extra);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    drop(s);
    let c = rusqlite::Connection::open(&db).unwrap();
    // The template is a single run's document, so planted rows claim no repeats.
    let t = Template::of(&c);
    let real: Vec<(String, f64, String)> = c
        .prepare(
            "SELECT r.run_id, m.value, r.result_json FROM runs r JOIN metrics m ON m.run = r.id
             WHERE m.metric = 'msgs_per_sec' ORDER BY r.id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(real.len(), 3);
    let level = real[0].1;
    let noise = [
        0.01, -0.02, 0.015, -0.005, 0.0, 0.02, -0.01, 0.005, -0.015, 0.01,
    ];
    let mut slow = Vec::new();
    for i in 0..28 {
        let (id, v) = if i < 20 {
            (format!("old{i}"), level * (1.0 + noise[i % noise.len()]))
        } else {
            let v = 0.7 * level * (1.0 + noise[(i + 3) % noise.len()]);
            slow.push(v);
            (format!("new{}", i - 20), v)
        };
        let at = format!("2099-01-01T00:{:02}:00Z", i);
        plant(&c, &t, &id, &at, v, &id);
    }
    drop(c);

    let html = dir.join("history.html");
    let out = run(&["report", "--history", db_s, "-o", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "report: wrote {} (1 benchmark, 31 runs from '{db_s}')\n",
            html.display()
        )
    );
    let text = std::fs::read_to_string(&html).unwrap();
    for needle in ["src=\"http", "href=\"http", "src=\"//", "@import", "url("] {
        assert!(!text.contains(needle), "the page refers out: {needle}");
    }
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join("report-history.html"), &text).unwrap();

    let Some(programs) = browser_available("report --history browser test", "history-browser")
    else {
        return;
    };
    let browser = Browser::showing(&dir, &programs, &html);
    let charts = browser.execute(COLLECT_HISTORY);
    let console = browser.console();
    let severe: Vec<&Value> = console.iter().filter(|l| l["level"] == "SEVERE").collect();
    assert!(severe.is_empty(), "console errors: {severe:?}");
    browser.screenshot(&artifacts.join("report-history.png"));
    drop(browser);

    // One chart of msgs_per_sec (a pub run stores no latency), of the one benchmark.
    let charts = charts.as_array().unwrap();
    let chart = charts
        .iter()
        .find(|c| c["input"] == format!("{}/msgs_per_sec", t.benchmark))
        .unwrap_or_else(|| panic!("no msgs_per_sec chart: {charts:?}"));
    assert_eq!(chart["benchmark"], t.benchmark.as_str());

    // A marker per run, in time order, at its stored figure, its hover naming run and commit.
    let points = chart["points"].as_array().unwrap();
    assert_eq!(points.len(), 31);
    let mut want: Vec<(String, f64, String)> = real
        .iter()
        .enumerate()
        .map(|(i, (id, v, _))| (id.clone(), *v, format!("commit=real{i}")))
        .collect();
    for i in 0..28 {
        let id = if i < 20 {
            format!("old{i}")
        } else {
            format!("new{}", i - 20)
        };
        let v = if i < 20 {
            level * (1.0 + noise[i % noise.len()])
        } else {
            slow[i - 20]
        };
        want.push((id.clone(), v, format!("commit={id}")));
    }
    for (i, (p, (id, v, commit))) in points.iter().zip(&want).enumerate() {
        assert_eq!(p["index"], i, "{p}");
        assert_eq!(p["run"], id.as_str(), "{p}");
        assert_eq!(p["value"].as_f64().unwrap(), *v, "{p}");
        let hover = p["hover"].as_str().unwrap();
        assert!(
            hover.contains(id.as_str()) && hover.lines().any(|l| l == commit),
            "{hover}"
        );
    }

    // The change point at the first slow run, with its size and p-value.
    let changes = chart["changes"].as_array().unwrap();
    let at_new0: Vec<&Value> = changes
        .iter()
        .filter(|c| points[c["at"].as_f64().unwrap() as usize]["run"] == "new0")
        .collect();
    assert_eq!(at_new0.len(), 1, "{changes:?}");
    let label = at_new0[0]["label"].as_str().unwrap();
    assert!(label.contains(", p ") && label.contains("new0"), "{label}");
    let pct: f64 = label.split('%').next().unwrap().trim().parse().unwrap();
    assert!((pct + 30.0).abs() < 3.0, "{label}");

    // The last segment's level is the median of the slow runs, shaded across their middle half.
    let levels = chart["levels"].as_array().unwrap();
    let last = levels.last().unwrap();
    assert_eq!(last["from"].as_f64().unwrap(), 23.0 - 0.4);
    assert_eq!(last["to"].as_f64().unwrap(), 30.0 + 0.4);
    slow.sort_by(f64::total_cmp);
    let median = (slow[3] + slow[4]) / 2.0;
    let got = last["value"].as_f64().unwrap();
    assert!((got - median).abs() <= 1e-9 * median, "{got} vs {median}");
    let (lo, hi) = (last["lo"].as_f64().unwrap(), last["hi"].as_f64().unwrap());
    assert!(
        slow[1] <= lo && lo <= median && median <= hi && hi <= slow[6],
        "{last}"
    );

    // The repeated run's whisker spans its repeats' range, as its result records them.
    let doc: Value = serde_json::from_str(&real[2].2).unwrap();
    let reps: Vec<f64> = doc["runs"]["metrics"]["msgs_per_sec"]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(reps.len(), 3);
    let whiskers = chart["whiskers"].as_array().unwrap();
    assert_eq!(whiskers.len(), 1, "{whiskers:?}");
    assert_eq!(whiskers[0]["x"], 2.0);
    assert_eq!(
        whiskers[0]["min"].as_f64().unwrap(),
        reps.iter().copied().fold(f64::INFINITY, f64::min)
    );
    assert_eq!(
        whiskers[0]["max"].as_f64().unwrap(),
        reps.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    );
}

/// `report --history` with what cannot be drawn: one line naming the file or flag, non-zero.
#[test]
fn report_history_refuses_bad_input_in_one_line() {
    let dir = support::scratch_dir("history-report-bad");
    let junk = dir.join("junk.db");
    std::fs::write(&junk, vec![0x5a_u8; 8192]).unwrap();
    let missing = dir.join("none.db");
    let out_html = dir.join("out.html");
    let (junk_s, missing_s, out_s) = (
        junk.to_str().unwrap(),
        missing.to_str().unwrap(),
        out_html.to_str().unwrap(),
    );
    let cases: [(&[&str], i32, &[&str]); 5] = [
        (&["--history", missing_s], 2, &["--history", "none.db"]),
        (&["--history", junk_s], 1, &["not a readable database"]),
        (
            &["--history", junk_s, "r.json"],
            2,
            &["--history", "RESULT.json"],
        ),
        (
            &["--benchmark", "abc", "r.json"],
            2,
            &["--benchmark", "--history"],
        ),
        (&["--all", "r.json"], 2, &["--all", "--history"]),
    ];
    for (args, code, needles) in cases {
        let mut all = vec!["report"];
        all.extend_from_slice(args);
        all.extend(["-o", out_s]);
        let out = run(&all);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(e.starts_with("error: "), "{args:?}: {e}");
        for n in needles {
            assert!(e.contains(n), "{args:?}: {e}");
        }
        assert!(!out_html.exists(), "{args:?} wrote a page");
        assert!(!missing.exists(), "{args:?} made a history");
    }
}

/// The runs of a history as `history list --json` gives them.
fn listed(db: &Path) -> Vec<Value> {
    let out = run(&[
        "history",
        "list",
        "--history",
        db.to_str().unwrap(),
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["runs"].as_array().unwrap().clone()
}

#[test]
fn import_keeps_json_results_as_if_recorded_skips_a_run_already_there_and_refuses_a_non_result() {
    let s = TestServer::start();
    let dir = support::scratch_dir("history-import");
    let db = dir.join("h.db");
    let db_s = db.to_str().unwrap();
    // Results written before anyone recorded, and one run recorded as usual.
    let files: Vec<_> = (0..3).map(|i| dir.join(format!("r{i}.json"))).collect();
    for f in &files {
        let out = run(&[
            "pub",
            "--server",
            &s.url,
            "--msgs",
            "2000",
            "--no-progress",
            "--json",
            f.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let doc = |f: &Path| -> Value { serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap() };
    let import = |args: &[&Path]| {
        let mut a = vec!["history".to_string(), "import".into(), "--history".into()];
        a.push(db_s.into());
        a.extend(args.iter().map(|p| p.to_str().unwrap().to_string()));
        bin().args(&a).output().unwrap()
    };

    let out = import(&[&files[0], &files[1]]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("2 imported, 0 already there"), "{text}");
    let runs = listed(&db);
    assert_eq!(runs.len(), 2);
    for (f, r) in files[..2].iter().zip(&runs) {
        let d = doc(f);
        assert_eq!(r["run_id"], d["run_id"], "its own id");
        assert_eq!(r["started_at"], d["started_at"], "its own time");
    }
    // The stored figures are the file's, as --record would have kept them.
    let id = runs[0]["run_id"].as_str().unwrap();
    let shown = run(&["history", "show", id, "--history", db_s, "--json", "-"]);
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["result"], doc(&files[0]));
    assert_eq!(
        shown["metrics"]["msgs_per_sec"],
        doc(&files[0])["throughput"]["msgs_per_sec"]
    );
    // A run recorded now joins the same series: same benchmark, same testbed.
    let out = run(&pub_args(&s.url, db_s, &["--record=required"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs = listed(&db);
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[2]["benchmark"], runs[0]["benchmark"]);
    assert_eq!(runs[2]["testbed"], runs[0]["testbed"]);

    // Again, with one already there: it is skipped with its line, the new one kept, status 0.
    let out = import(&[&files[0], &files[2]]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let skipped = format!(
        "history: {}: run {} is already in the history; skipped",
        files[0].display(),
        doc(&files[0])["run_id"].as_str().unwrap()
    );
    assert!(text.lines().any(|l| l == skipped), "{text}");
    assert!(text.contains("1 imported, 1 already there"), "{text}");
    assert_eq!(listed(&db).len(), 4);

    // A file that is not a run's result refuses the whole import in one line naming it, before
    // anything is kept: the good file beside it is not imported either.
    let fresh = dir.join("fresh.json");
    let out = run(&[
        "pub",
        "--server",
        &s.url,
        "--msgs",
        "100",
        "--no-progress",
        "--json",
        fresh.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let list_doc = dir.join("list.json");
    std::fs::write(
        &list_doc,
        serde_json::to_vec(&json!({"schema": "msgbench.history-list/v1", "runs": []})).unwrap(),
    )
    .unwrap();
    let text_file = dir.join("notes.txt");
    std::fs::write(&text_file, "not json").unwrap();
    let mut cut = doc(&fresh);
    cut["interrupted"] = json!(true);
    let cut_file = dir.join("cut.json");
    std::fs::write(&cut_file, serde_json::to_vec(&cut).unwrap()).unwrap();
    for (bad, says) in [
        (&list_doc, "not a run's result"),
        (&text_file, "not JSON"),
        (&cut_file, "interrupted"),
        (&dir.join("missing.json"), "cannot read it"),
    ] {
        let out = import(&[&fresh, bad]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("error: ") && err.contains(&bad.display().to_string()),
            "{err}"
        );
        assert!(err.contains(says), "{says}: {err}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    assert_eq!(listed(&db).len(), 4, "nothing was kept");
}

/// A server that spends more CPU per message while the throughput holds is a regression that
/// `history check` finds by default. A real run sampling its server through `--server-monitor`
/// is recorded with its `server_cpu_per_msg` and `server_events`; planted runs copy it: seven
/// at 100k msgs/s and 800 ns of server CPU a message, then four at the same rate and 1.2 µs.
#[test]
fn check_finds_a_server_that_spends_more_cpu_per_message_at_the_same_rate() {
    let s = TestServer::start();
    let monitor = s.monitor_url();
    let dir = support::scratch_dir("history-server-cpu");
    let db = dir.join("h.db");
    let db_s = db.to_str().unwrap();
    let out = run(&[
        "pub",
        "--server",
        &s.url,
        "--server-monitor",
        &monitor,
        "--rate",
        "20000",
        "--duration",
        "4s",
        "--no-progress",
        "--history-file",
        db_s,
        "--record=required",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c = rusqlite::Connection::open(&db).unwrap();
    let stored = |metric: &str| -> Option<f64> {
        c.query_row(
            "SELECT value FROM metrics WHERE metric = ?1",
            [metric],
            |r| r.get(0),
        )
        .ok()
    };
    assert!(
        stored("server_cpu_per_msg").is_some_and(|ns| ns >= 0.0),
        "the real run's server CPU per message is kept: {}",
        stderr(&out)
    );
    assert_eq!(stored("server_events"), Some(0.0));
    let t = Template::of(&c);
    let noise = [0.01, -0.01, 0.005, -0.005, 0.0, 0.0075, -0.0075];
    for i in 1..=11 {
        let id = if i <= 7 {
            format!("old{i}")
        } else {
            format!("new{i}")
        };
        let at = format!("2098-01-01T00:00:{i:02}Z");
        plant(&c, &t, &id, &at, 100_000.0 * (1.0 + noise[i % 7]), &id);
        let cpu = if i <= 7 { 800.0 } else { 1200.0 } * (1.0 + noise[(i + 3) % 7]);
        let run: i64 = c
            .query_row("SELECT rowid FROM runs WHERE run_id = ?1", [&id], |r| {
                r.get(0)
            })
            .unwrap();
        c.execute(
            "INSERT INTO metrics (run, metric, value) VALUES (?1, 'server_cpu_per_msg', ?2)",
            rusqlite::params![run, cpu],
        )
        .unwrap();
    }
    let check = run(&["history", "check", "--history", db_s, "--last", "11"]);
    let text = String::from_utf8_lossy(&check.stdout).into_owned();
    assert_eq!(check.status.code(), Some(8), "{text}\n{}", stderr(&check));
    let line = |m: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(m))
            .unwrap_or_else(|| panic!("no {m} line: {text}"))
            .to_string()
    };
    let cpu = line("server_cpu_per_msg");
    assert!(
        cpu.contains("regression") && cpu.contains("commit=new8)"),
        "{text}"
    );
    assert!(!line("msgs_per_sec").contains("regression"), "{text}");
}
