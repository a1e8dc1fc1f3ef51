//! End-to-end tests of `msgbench latency` against a real nats-server: the recorded counts, the
//! exports read back with HdrHistogram's own decoders, a frozen server, and bad input.

use std::time::{Duration, Instant};

use crate::support::{self, run, run_json, schema_errors, scratch_dir, stderr, u, TestServer};
use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use serde_json::Value;

fn decode(b64: &str) -> Histogram<u64> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    Deserializer::new().deserialize(&mut &bytes[..]).unwrap()
}

#[test]
fn a_latency_run_records_every_message_after_warmup_and_exports_agree() {
    let s = TestServer::start();
    let dir = scratch_dir("latency");
    let prefix = dir.join("run");
    let (out, v) = run_json(&[
        "latency",
        "--server",
        &s.url,
        "--rate",
        "2000",
        "--duration",
        "1500ms",
        "--warmup",
        "500ms",
        "--size",
        "32",
        "--hist",
        prefix.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["scenario"], "latency");
    // 1.5 s at 2,000/s is exactly 3,000 messages; the first 0.5 s of them (1,000) are warm-up.
    assert_eq!(u(&v["delivery"]["sent"]), 3000);
    assert_eq!(u(&v["delivery"]["lost"]), 0);
    let lat = &v["latency"];
    assert_eq!(u(&lat["count"]), 2000);
    assert_eq!(u(&v["latency_uncorrected"]["count"]), 2000);
    // The JSON's histogram decodes with the standard decoder to the printed percentiles.
    let h = decode(lat["hdr"].as_str().unwrap());
    assert_eq!(h.len(), 2000);
    for (key, p) in [("50", 50.0), ("99", 99.0), ("99.9", 99.9), ("100", 100.0)] {
        assert_eq!(
            h.value_at_percentile(p),
            u(&lat["percentiles_ns"][key]),
            "P{key}"
        );
    }
    assert_eq!(h.max(), u(&lat["max_ns"]));
    // Corrected latency is never below uncorrected: the intended time is never after the send.
    assert!(
        u(&lat["percentiles_ns"]["50"]) >= u(&v["latency_uncorrected"]["percentiles_ns"]["50"])
    );
    // The achieved rate is timed to the last send: message 2,999 is due at 1.4995 s and went
    // out no later than the largest lag after it, and no message goes early. So the rate lies
    // between what that lag allows and the target, however late a busy machine made the sends.
    let pacing = &v["pacing"];
    let actual = pacing["actual_rate"].as_f64().unwrap();
    let last_due_s = 2999.0 / 2000.0;
    let lag_s = u(&pacing["send_lag_max_ns"]) as f64 / 1e9;
    let slowest = 2999.0 / (last_due_s + lag_s);
    assert!(
        actual <= 2000.0 * (1.0 + 1e-9) && actual >= slowest * (1.0 - 1e-9),
        "{actual}/s outside {slowest}..2000: {pacing}"
    );
    assert!(u(&v["rtt_ns"]["a"]) > 0 && u(&v["rtt_ns"]["b"]) > 0);
    // The text shows the same median.
    let text = stderr(&out);
    assert!(text.contains("P50") && text.contains("corrected"), "{text}");
    // The send lag covers the messages latency times, the 2,000 due after the warm-up (it once
    // counted the warm-up's sends too, and showed a send lag above every corrected latency).
    assert_eq!(u(&pacing["sends"]), 2000, "{pacing}");
    assert!(
        text.contains("of the 2,000 sends due after the 0.5 s warm-up, send lag P50"),
        "{text}"
    );
    // A message's corrected latency is at least its send lag, and nothing was lost: no send
    // lag can exceed the largest corrected latency.
    assert!(
        u(&pacing["send_lag_max_ns"]) <= u(&lat["max_ns"]),
        "{pacing} {lat}"
    );

    // .hgrm: the last row is the 100th percentile with the total count.
    let hgrm = std::fs::read_to_string(dir.join("run.hgrm")).unwrap();
    let last_row = hgrm
        .lines()
        .rev()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .unwrap();
    let cols: Vec<&str> = last_row.split_whitespace().collect();
    assert_eq!((cols[1], cols[2]), ("1.000000000000", "2000"), "{last_row}");
    let max_ms: f64 = cols[0].parse().unwrap();
    assert!(
        (max_ms - h.max() as f64 / 1e6).abs() < 0.001 + h.max() as f64 / 1e9,
        "{max_ms} vs {}",
        h.max()
    );
    assert!(dir.join("run.uncorrected.hgrm").exists());

    // The interval log holds one histogram per second of the measured part, which add up.
    let log = std::fs::read(dir.join("run.hlog")).unwrap();
    let mut total = 0;
    let mut intervals = 0;
    for entry in IntervalLogIterator::new(&log) {
        if let LogEntry::Interval(i) = entry.unwrap() {
            total += decode(i.encoded_histogram()).len();
            intervals += 1;
        }
    }
    assert_eq!(total, 2000);
    assert!((1..=3).contains(&intervals), "{intervals} intervals");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_frozen_server_shows_in_the_corrected_tail() {
    // The server is stopped for 400 ms mid-run. Messages due meanwhile are delivered late, so
    // corrected latency must show the pause, whatever the send side did.
    let s = TestServer::start();
    let dir = scratch_dir("latency-frozen");
    let ticks = dir.join("ticks.jsonl");
    let mut child = support::spawn_piped(&[
        "latency",
        "--server",
        &s.url,
        "--rate",
        "1000",
        "--duration",
        "6s",
        "--warmup",
        "0s",
        "--stream-stats",
        ticks.to_str().unwrap(),
        "--json",
        "-",
        "--no-progress",
    ]);
    // Frozen once the run's first second is over: mid-run on any machine, where a fixed sleep
    // from the start could land in the handshake.
    support::wait_for_tick(&ticks, &mut child, |_| true);
    s.freeze(true);
    let frozen_at = Instant::now();
    std::thread::sleep(Duration::from_millis(400));
    // At least this long, and at most `stopped_for`: the test may be slow between the calls.
    let frozen_for = frozen_at.elapsed();
    s.freeze(false);
    let stopped_for = frozen_at.elapsed();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let h = decode(v["latency"]["hdr"].as_str().unwrap());
    // Every message due in the first `frozen_for` less 100 ms of the pause waited past its
    // end: over 100 ms. Those due while the server was stopped, and some after it (the backlog
    // it then had to clear, for as long as a busy machine takes), can have waited that long;
    // not the run's other messages, as a correction that charged the pause to all that
    // followed would: the freeze comes after the first of the run's six seconds, so that would
    // be most of them. Half the run's messages tells the two apart on any machine.
    let over_100ms = h.count_between(100_000_000, 3_600_000_000_000);
    // Less 10 ms more: SIGSTOP takes effect when the server's threads are next scheduled, a
    // few milliseconds after `freeze` returns on a busy machine (3 messages short in CI).
    let at_least = (frozen_for.as_millis() as u64).saturating_sub(110);
    let at_most = u(&v["delivery"]["sent"]) / 2;
    assert!(
        (at_least..=at_most).contains(&over_100ms),
        "{over_100ms} samples over 100 ms for a pause of {frozen_for:?} to {stopped_for:?}, \
         {at_most} at most"
    );
    assert!(
        h.max() as f64 >= frozen_for.as_nanos() as f64 * 0.8,
        "max {} for a {frozen_for:?} pause",
        h.max()
    );
    assert_eq!(u(&v["delivery"]["lost"]), 0);
}

#[test]
fn latency_bad_input_and_unreachable_servers_get_one_line_and_their_exit_code() {
    let s = TestServer::start();
    let cases: [(&[&str], &str); 6] = [
        (&["--rate", "0"], "--rate"),
        (&["--rate", "-5"], "--rate"),
        (&["--size", "7"], "--size"),
        (&["--rate", "10", "--duration", "50ms"], "--duration"),
        (&["--duration", "1s", "--warmup", "2s"], "--warmup"),
        (
            &[
                "--server-b",
                "nats://127.0.0.1:1",
                "--connect-timeout",
                "1s",
            ],
            "cannot connect",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["latency", "--server", s.url.as_str()];
        args.extend_from_slice(extra);
        let out = run(&args);
        let err = stderr(&out);
        // Bad input is 2; a server that cannot be reached is 4.
        let code = if needle == "cannot connect" { 4 } else { 2 };
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn latency_across_two_servers_waits_for_interest_before_measuring() {
    // Two servers joined by a route: publish on A, subscribe on B.
    let (port_a, port_b) = (free_port(), free_port());
    let node = |name: &str, own: u16, other: u16| {
        TestServer::with_config(&format!(
            "server_name: {name}\ncluster {{ name: c, listen: 127.0.0.1:{own}, \
             routes: [nats-route://127.0.0.1:{other}] }}\n"
        ))
    };
    let a = node("a", port_a, port_b);
    let b = node("b", port_b, port_a);
    let (out, v) = run_json(&[
        "latency",
        "--server-a",
        &a.url,
        "--server-b",
        &b.url,
        "--rate",
        "500",
        "--msgs",
        "500",
        "--warmup",
        "0s",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Not one message may be lost to interest that had not reached A yet.
    assert_eq!(
        (u(&v["delivery"]["sent"]), u(&v["delivery"]["lost"])),
        (500, 0)
    );
    assert_eq!(u(&v["latency"]["count"]), 500);
    assert_eq!(v["params"]["separate_servers"], true);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn busy_poll_auto_keeps_off_when_every_core_is_busy_and_says_why() {
    let s = TestServer::start();
    // One spinning thread per core this process may use, for the run's start only: the
    // window `auto` watches sees no idle CPU.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let spinners: Vec<_> = (0..cores)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let (out, v) = run_json(&[
        "latency", "--server", &s.url, "--rate", "1000", "--msgs", "300", "--warmup", "0s",
    ]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinners.into_iter().for_each(|t| t.join().unwrap());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let p = &v["params"];
    let idle = p["cpu_free"]["idle_cores"].as_f64().unwrap();
    assert!(idle < 1.0, "{p}");
    assert_eq!(p["busy_poll"], false, "{p}");
    let why = p["busy_poll_why"].as_str().unwrap();
    assert!(
        why.starts_with("auto: off, ") && why.contains("CPUs idle"),
        "{why}"
    );
    assert!(stderr(&out).contains(&format!("Subscriber: slept between messages ({why})")));

    // A flag decides without looking, and says so.
    let (out, v) = run_json(&[
        "latency",
        "--server",
        &s.url,
        "--rate",
        "1000",
        "--msgs",
        "100",
        "--warmup",
        "0s",
        "--busy-poll",
        "on",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let p = &v["params"];
    assert_eq!(
        (&p["busy_poll"], &p["busy_poll_why"], &p["cpu_free"]),
        (&true.into(), &"--busy-poll on".into(), &Value::Null)
    );
}
