//! Tests of the store: a run round-trips with its histogram bit for bit, an older database is
//! upgraded in place, a newer or corrupt one is refused with its kind, and writers on separate
//! connections at once lose no row.

use super::*;
use crate::history::record::{new_run, Tags};
use crate::testdir::TestDir;

/// A result document as `--json` writes one, with a real HDR histogram in it.
pub(crate) fn result_text(run_id: &str, started_at: &str, msgs_per_sec: f64) -> String {
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
    for v in [1_000u64, 2_000, 3_500, 90_000] {
        h.record(v).unwrap();
    }
    let hdr = crate::stats::hdr::encode_base64(&h);
    serde_json::to_string_pretty(&serde_json::json!({
        "schema": "msgbench.result/v1",
        "tool": {"name": "msgbench", "version": "0.1.0"},
        "scenario": "latency",
        "run_id": run_id,
        "started_at": started_at,
        "plan": {"schema": "msgbench.plan/v1", "scenario": "latency", "rate": 1000,
                 "hist": "x.hgrm", "conn": {"server": null}},
        "host": {"cpu": "Test CPU", "cores": 2, "os": "linux", "arch": "x86_64"},
        "server": {"version": "2.10.22"},
        "throughput": {"msgs_per_sec": msgs_per_sec, "bytes_per_sec": msgs_per_sec * 8.0,
                       "msgs": 1000},
        "delivery": {"sent": 1000, "received": 1000, "lost": 0, "duplicated": 0,
                     "reordered": 0},
        "errors": {},
        "latency": {"min_ns": 1000, "max_ns": 90000, "mean_ns": 24125.0,
                    "percentiles_ns": {"50": 2000, "99": 90000}, "hdr": hdr}
    }))
    .unwrap()
}

fn tags() -> Tags {
    Tags {
        name: None,
        labels: BTreeMap::from([("commit".into(), "abc123".into())]),
    }
}

#[test]
fn a_run_round_trips_with_its_histogram_bit_for_bit() {
    let dir = TestDir::new("history-roundtrip");
    let path = dir.path().join("h.db");
    let text = result_text("r1", "2026-11-27T00:00:00Z", 1000.0);
    let run = new_run(&text, &tags()).unwrap();
    Store::open(&path).unwrap().insert(&run).unwrap();
    let store = Store::open(&path).unwrap();
    let back = store.get("r1").unwrap();
    assert_eq!(back.result_json, text);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let original = doc["latency"]["hdr"].as_str().unwrap();
    assert_eq!(back.histograms.len(), 1);
    assert_eq!(back.histograms[0].0, "/latency/hdr");
    use base64::Engine as _;
    assert_eq!(
        base64::engine::general_purpose::STANDARD.encode(&back.histograms[0].1),
        original
    );
    assert!(back
        .metrics
        .iter()
        .any(|(m, v)| m == "msgs_per_sec" && *v == 1000.0));
    assert!(back
        .metrics
        .iter()
        .any(|(m, v)| m == "p99" && *v == 90000.0));
    assert_eq!(back.run.labels["commit"], "abc123");
    assert_eq!(store.count().unwrap(), 1);
}

#[test]
fn the_same_run_twice_is_refused() {
    let dir = TestDir::new("history-dup");
    let path = dir.path().join("h.db");
    let run = new_run(&result_text("r1", "2026-11-27T00:00:00Z", 1.0), &tags()).unwrap();
    let mut store = Store::open(&path).unwrap();
    store.insert(&run).unwrap();
    assert!(matches!(store.insert(&run), Err(StoreError::Duplicate(_))));
    assert_eq!(store.count().unwrap(), 1);
}

/// A database as the first schema left it, written here by hand (not from `MIGRATIONS`, so a
/// later edit of the first migration cannot make this test agree with itself).
#[test]
fn a_version_one_database_is_upgraded_in_place() {
    let dir = TestDir::new("history-v1");
    let path = dir.path().join("old.db");
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE,
                benchmark TEXT NOT NULL, name TEXT, scenario TEXT NOT NULL,
                testbed TEXT NOT NULL, testbed_json TEXT NOT NULL, started_at TEXT NOT NULL,
                recorded_at TEXT NOT NULL, plan_json TEXT NOT NULL, result_json TEXT NOT NULL);
             CREATE INDEX runs_series ON runs (benchmark, testbed, started_at);
             CREATE TABLE metrics (run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                metric TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (run, metric));
             INSERT INTO runs VALUES (1, 'old', 'b', NULL, 'pub', 't', '{}',
                '2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z', '{}', '{}');
             INSERT INTO metrics VALUES (1, 'msgs_per_sec', 5.0);
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.version().unwrap(), migrate::CURRENT);
    const { assert!(migrate::CURRENT >= 2) };
    let old = store.get("old").unwrap();
    assert_eq!(old.metrics, vec![("msgs_per_sec".to_string(), 5.0)]);
    assert!(old.run.labels.is_empty() && old.histograms.is_empty());
    // The tables the upgrade added take a new run in full.
    let run = new_run(&result_text("new", "2026-11-27T00:00:00Z", 7.0), &tags()).unwrap();
    store.insert(&run).unwrap();
    assert_eq!(store.get("new").unwrap().histograms.len(), 1);
}

#[test]
fn a_database_from_a_later_msgbench_is_refused() {
    let dir = TestDir::new("history-newer");
    let path = dir.path().join("new.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99;")
        .unwrap();
    match Store::open(&path) {
        Err(StoreError::Newer { found: 99, .. }) => {}
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn a_file_that_is_not_a_database_is_corrupt() {
    let dir = TestDir::new("history-corrupt");
    let path = dir.path().join("junk.db");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    match Store::open(&path) {
        Err(StoreError::Corrupt(_)) => {}
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn a_folder_that_does_not_exist_is_unreachable() {
    let dir = TestDir::new("history-missing");
    match Store::open(&dir.path().join("no/such/folder/h.db")) {
        Err(StoreError::Unreachable { path, .. }) => assert!(path.ends_with("h.db")),
        other => panic!("{:?}", other.err()),
    }
}

/// Four writers, each with its own connection, insert at once; every run lands (the busy
/// timeout makes each wait its turn). Processes rather than threads are in
/// tests/history.rs.
#[test]
fn writers_at_once_lose_no_row() {
    let dir = TestDir::new("history-writers");
    let path = dir.path().join("h.db");
    Store::open(&path).unwrap();
    std::thread::scope(|s| {
        for w in 0..4 {
            let path = &path;
            s.spawn(move || {
                let mut store = Store::open(path).unwrap();
                for i in 0..25 {
                    let id = format!("w{w}-{i}");
                    let run =
                        new_run(&result_text(&id, "2026-11-27T00:00:00Z", 1.0), &tags()).unwrap();
                    store.insert(&run).unwrap();
                }
            });
        }
    });
    assert_eq!(Store::open(&path).unwrap().count().unwrap(), 100);
}

#[test]
fn a_series_is_one_benchmark_on_one_testbed_oldest_first() {
    let dir = TestDir::new("history-series");
    let path = dir.path().join("h.db");
    let mut store = Store::open(&path).unwrap();
    for (i, v) in [3.0, 1.0, 2.0].iter().enumerate() {
        let t = format!("2026-11-27T00:00:0{i}Z");
        store
            .insert(&new_run(&result_text(&format!("r{i}"), &t, *v), &tags()).unwrap())
            .unwrap();
    }
    let other = Tags {
        name: Some("elsewhere".into()),
        ..tags()
    };
    store
        .insert(&new_run(&result_text("x", "2026-11-27T00:00:09Z", 9.0), &other).unwrap())
        .unwrap();
    let first = store.get("r0").unwrap().run;
    let all = store
        .series(&first.benchmark, &first.testbed, "msgs_per_sec", None)
        .unwrap();
    let values: Vec<f64> = all.iter().map(|p| p.value).collect();
    assert_eq!(values, vec![3.0, 1.0, 2.0]);
    let newest = store
        .series(&first.benchmark, &first.testbed, "msgs_per_sec", Some(2))
        .unwrap();
    assert_eq!(
        newest.iter().map(|p| p.value).collect::<Vec<_>>(),
        vec![1.0, 2.0]
    );
}
