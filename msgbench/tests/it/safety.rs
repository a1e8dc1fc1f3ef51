//! Nothing lost, nothing left, nothing leaked: output files that cannot be written are refused
//! before any connection (and a result whose file fails at the end is saved elsewhere), the
//! embedded servers' folders of a killed msgbench are removed by the next run, a JetStream
//! publish its stream would not capture is refused before the load, and credentials in a URL
//! never reach an error message.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{self, bin, run, scratch_dir, stderr, TestServer};

/// A loopback URL nothing listens on: a run that got as far as connecting fails on it.
fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("nats://127.0.0.1:{port}")
}

#[test]
fn every_output_flag_is_checked_before_connecting() {
    let dir = scratch_dir("outputs");
    let missing = dir.join("no-such-dir").join("out");
    let m = missing.to_str().unwrap();
    let plain = dir.join("plain-file");
    std::fs::write(&plain, "x").unwrap();
    let dead = dead_url();
    let d = dead.as_str();
    let under_file = plain.join("r.json");
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "--json",
            vec!["pub", "--server", d, "--duration", "4s", "--json", m],
        ),
        ("--csv", vec!["sub", "--server", d, "--csv", m]),
        ("--markdown", vec!["pubsub", "--server", d, "--markdown", m]),
        (
            "--stream-stats",
            vec!["pub", "--server", d, "--stream-stats", m],
        ),
        ("--hist", vec!["latency", "--server", d, "--hist", m]),
        ("--json", vec!["request", "--server", d, "--json", m]),
        ("--json", vec!["js", "pub", "--server", d, "--json", m]),
        ("--json", vec!["calibrate", "--server", d, "--json", m]),
        (
            "--json",
            vec!["grpc", "--server", "http://127.0.0.1:1", "--json", m],
        ),
        ("--output", vec!["report", "in.json", "-o", m]),
        ("--json", vec!["diff", "a.json", "b.json", "--json", m]),
        (
            "--json",
            vec!["pub", "--server", d, "--json", under_file.to_str().unwrap()],
        ),
        (
            "--json",
            vec!["pub", "--server", d, "--json", dir.to_str().unwrap()],
        ),
    ];
    for (flag, args) in cases {
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let line = err.trim();
        assert_eq!(line.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(
            line.starts_with(&format!("error: cannot write {flag} file '")),
            "{args:?}: {err}"
        );
        // Refused before connecting: the dead server was never tried, no input was read.
        assert!(!line.contains("connect"), "{args:?}: {err}");
    }
}

#[test]
fn the_check_leaves_no_file_when_the_run_fails_for_another_reason() {
    let dir = scratch_dir("no-empty-files");
    let (json, stats) = (dir.join("r.json"), dir.join("stats.jsonl"));
    let out = run(&[
        "pub",
        "--server",
        &dead_url(),
        "--msgs",
        "10",
        "--json",
        json.to_str().unwrap(),
        "--stream-stats",
        stats.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot connect"), "{}", stderr(&out));
    assert!(!json.exists(), "an empty --json file was left");
    assert!(!stats.exists(), "an empty --stream-stats file was left");
}

#[test]
fn a_result_whose_file_fails_after_the_run_is_saved_to_a_fallback_file() {
    let s = TestServer::start();
    let cwd = scratch_dir("fallback-cwd");
    let doomed = scratch_dir("fallback-doomed");
    let target = doomed.join("sub");
    std::fs::create_dir(&target).unwrap();
    let json = target.join("r.json");
    let mut child = bin()
        .args([
            "pub",
            "--server",
            &s.url,
            "--duration",
            "3s",
            "--rate",
            "1000",
            "--live",
            "--json",
            json.to_str().unwrap(),
        ])
        .current_dir(&cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first live line means the run is under way, past the up-front check.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(
        !first.is_empty(),
        "msgbench ended before its first live line"
    );
    std::fs::remove_dir_all(&target).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{first}{rest}");
    let saved: Vec<_> = std::fs::read_dir(&cwd)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}; stderr: {rest}");
    let name = saved[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with(&format!("msgbench-result-{}-", child.id())) && name.ends_with(".json"),
        "{name}"
    );
    assert!(
        rest.contains("--json") && rest.contains(&name),
        "stderr names the failed flag and the fallback: {rest}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&saved[0]).unwrap()).unwrap();
    assert_eq!(v["scenario"], "pub");
    assert!(support::u(&v["throughput"]["msgs"]) > 0, "{v}");
}

/// Runs msgbench in the background with its embedded server's files in `tmp`, kills it with
/// SIGKILL once the servers are up, and returns the folders it left.
fn kill_mid_run(tmp: &std::path::Path, extra: &[&str], folders: usize) -> Vec<std::path::PathBuf> {
    let binary = msgbench::server::find_binary(None).unwrap();
    let mut args = vec![
        "pub",
        "--duration",
        "20s",
        "--rate",
        "1000",
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    let mut child = bin()
        .args(&args)
        .env("TMPDIR", tmp)
        .env("MSGBENCH_NATS_SERVER", &binary)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let prefix = format!("msgbench-{}-", child.id());
    let ours = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(tmp)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .collect()
    };
    // Each server writes its ports file once it listens.
    let deadline = Instant::now() + Duration::from_secs(20);
    let up = |d: &std::path::PathBuf| {
        std::fs::read_dir(d)
            .map(|mut r| {
                r.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "ports")))
            })
            .unwrap_or(false)
    };
    while !(ours().len() == folders && ours().iter().all(up)) {
        assert!(
            Instant::now() < deadline,
            "the servers did not start: {:?}",
            ours()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = ours();
    child.kill().unwrap();
    child.wait().unwrap();
    left
}

#[test]
fn the_next_run_removes_the_folders_of_a_killed_msgbench_and_its_cluster() {
    let tmp = scratch_dir("orphans");
    let binary = msgbench::server::find_binary(None).unwrap();
    for (extra, folders) in [(&[][..], 1), (&["--cluster", "3"][..], 3)] {
        let left = kill_mid_run(&tmp, extra, folders);
        for d in &left {
            assert!(d.exists(), "{} went before the next run", d.display());
        }
        let out = bin()
            .args(["pub", "--msgs", "10", "--no-progress"])
            .env("TMPDIR", &tmp)
            .env("MSGBENCH_NATS_SERVER", &binary)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        for d in &left {
            assert!(!d.exists(), "{extra:?}: {} is left", d.display());
        }
        support::assert_nothing_left_in(&tmp);
    }
}

#[test]
fn a_publish_subject_the_stream_does_not_capture_is_refused_before_the_load() {
    let s = TestServer::start();
    for (subjects, subject) in [("a.b", None), ("bench.*", Some("bench.x.y"))] {
        let mut args = vec![
            "js",
            "pub",
            "--server",
            &s.url,
            "--stream",
            "S",
            "--subjects",
            subjects,
            "--msgs",
            "100",
        ];
        args.extend(subject.iter().flat_map(|s| ["--subject", *s]));
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        let shown = subject.unwrap_or("msgbench.js");
        assert!(
            err.contains(&format!("'{shown}'")) && err.contains(subjects),
            "names the subject and the stream's subjects: {err}"
        );
        assert!(!err.contains("no_responders:"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // Nothing was created for a refused run.
    let info = support::raw_request(&s.url, "$JS.API.STREAM.INFO.S", "");
    assert!(info.contains("10059"), "stream S exists: {info}");
    // A subject the wildcard captures runs.
    let out = run(&[
        "js",
        "pub",
        "--server",
        &s.url,
        "--stream",
        "S",
        "--subjects",
        "bench.>",
        "--subject",
        "bench.x.y",
        "--msgs",
        "100",
        "--no-progress",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn credentials_in_a_url_never_reach_an_error() {
    let dead = dead_url();
    let port = dead.rsplit(':').next().unwrap();
    let cases = [
        // Refused as bad input: no port, and URL credentials gRPC does not send.
        vec!["grpc", "--server", "http://ann:pa55word@127.0.0.1"],
        vec!["grpc", "--server", "ann:pa55word@127.0.0.1:50051"],
        vec!["grpc", "--server", "https://ann:pa55word@127.0.0.1:1/x"],
        vec![
            "grpc",
            "--server",
            "http://127.0.0.1:1",
            "--header",
            "authorization Bearer pa55word",
        ],
        vec!["pub", "--server", "nats://ann:pa55word@127.0.0.1:1/x"],
    ];
    for args in &cases {
        let out = run(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(!err.contains("pa55word"), "{args:?}: {err}");
    }
    // A connection failure names the server without its credentials.
    let url = format!("nats://ann:pa55word@127.0.0.1:{port}");
    let out = run(&["pub", "--server", &url, "--msgs", "1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains(port) && !err.contains("pa55word"), "{err}");
}
