//! Faults during a run, against a real nats-server the test controls: the server killed,
//! restarted, frozen; connections reset by the network; the server's own PINGs timing out. Each
//! test checks the exit status, the partial JSON, the counted loss against what the test knows
//! was dropped, and that the run ended within its bound.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{
    self, assert_nothing_left_in, bin, fds_and_threads, schema_errors, scratch_dir, spawn_piped,
    stderr, tick_f, u, wait_for_tick, TestServer,
};
use serde_json::Value;

/// Starts msgbench with `args` plus JSON on stdout, with the embedded server's files in `tmp`.
fn spawn(args: &[&str], tmp: &std::path::Path) -> Child {
    let binary = msgbench::server::find_binary(None).unwrap();
    bin()
        .args(args)
        .args(["--json", "-", "--no-progress"])
        .env("TMPDIR", tmp)
        .env("MSGBENCH_NATS_SERVER", binary)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the run and parses its JSON, failing if it took longer than `bound`. Each bound
/// below is derived from the run's own schedule and timeouts, with seconds to spare for a
/// debug build on a busy machine.
fn finish(child: Child, started: Instant, bound: Duration) -> (Output, Value) {
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < bound,
        "took {:?}, bound {bound:?}",
        started.elapsed()
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}); status {:?}; stderr: {}",
            out.status,
            stderr(&out)
        )
    });
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    (out, v)
}

#[test]
fn a_killed_server_ends_the_run_with_partial_results_and_exit_5() {
    let tmp = scratch_dir("kill");
    let started = Instant::now();
    let child = spawn(
        &[
            "latency",
            "--rate",
            "1000",
            "--duration",
            "30s",
            "--warmup",
            "0s",
            "--fault",
            "kill@1s",
            "--timeout",
            "1s",
        ],
        &tmp,
    );
    // 30 s of schedule, cut at 1 s; the publisher's wait for the lost connection is bounded by
    // --timeout and the connect timeout. A run that went on with its schedule would take the
    // whole 30 s.
    let (out, v) = finish(child, started, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(v["failure"], "disconnected");
    // Never early; late only by as much as a busy machine wakes the injector late.
    let at = u(&v["fault"]["injected_at_ns"]);
    assert!((1_000_000_000..30_000_000_000).contains(&at), "{at}");
    assert!(v["fault"]["first_delivery_ns"].is_null(), "{}", v["fault"]);
    // What was sent before the kill arrived; anything sent after it is counted lost, exactly.
    // The kill's time is taken after the kill, so a message due after it cannot have reached
    // the server: at most the messages due by then arrived. At least most of them did: a fifth
    // is left for messages a busy machine sent late or that were in flight when it died.
    let d = &v["delivery"];
    let (sent, received, lost) = (u(&d["sent"]), u(&d["received"]), u(&d["lost"]));
    assert_eq!(sent, received + lost, "{d}");
    let due = at / 1_000_000 + 1;
    assert!(
        received <= due,
        "{received} received, {due} due before the kill: {d}"
    );
    assert!(
        received >= due * 4 / 5,
        "{received} received, {due} due before the kill: {d}"
    );
    assert!(sent < 15_000, "the publisher stopped with the server: {d}");
    assert!(stderr(&out).contains("FAILED"), "{}", stderr(&out));
    assert_nothing_left_in(&tmp);
}

#[test]
fn a_restarted_server_is_reconnected_and_the_outage_is_measured() {
    let tmp = scratch_dir("restart");
    let tick_dir = scratch_dir("restart-ticks");
    let ticks = tick_dir.join("ticks.jsonl");
    let started = Instant::now();
    let mut child = spawn(
        &[
            "pubsub",
            "--rate",
            "2000",
            "--duration",
            "8s",
            "--size",
            "32",
            "--fault",
            "restart@3s",
            "--reconnect",
            "--allow-loss",
            "--stream-stats",
            ticks.to_str().unwrap(),
        ],
        &tmp,
    );
    // Counted once the run is under way (its first second, two before the fault), and again
    // once messages arrive two seconds after the fault: both connections are back by then.
    // Events of the run, not fixed sleeps that a busy machine could spend connecting.
    wait_for_tick(&ticks, &mut child, |_| true);
    let before = fds_and_threads(child.id());
    wait_for_tick(&ticks, &mut child, |t| {
        tick_f(t, "t_s") >= 5.0 && tick_f(t, "received_per_sec") > 0.0
    });
    let after = fds_and_threads(child.id());
    // 8 s of schedule and an outage of a restart: the bound only guards against a hang.
    let (out, v) = finish(child, started, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(v.get("failure").is_none(), "{v}");
    // Reconnecting replaces sockets and threads, it does not add to them.
    assert!(
        after.0 <= before.0 && after.1 <= before.1,
        "fds/threads before {before:?}, after {after:?}"
    );
    let c = &v["connections"];
    assert_eq!(u(&c["reconnects"]), 2, "publisher and subscriber: {c}");
    assert_eq!(u(&c["gave_up"]), 0, "{c}");
    let slowest = c["reconnect_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .max()
        .unwrap();
    // Every scheduled message was sent (the publisher waited out the outage), and what the
    // subscriber missed is at most what could be in flight while the server was down: the
    // slowest reconnect, and half a second for a busy machine to notice the loss and for the
    // subscription to take effect. A subscriber that never subscribed again would miss the
    // 10,000 of the last 5 s.
    let d = &v["delivery"];
    assert_eq!(u(&d["sent"]), 16_000, "{d}");
    assert_eq!(u(&d["received"]) + u(&d["lost"]), 16_000, "{d}");
    let outage_msgs = 2000 * (slowest + 500_000_000) / 1_000_000_000;
    assert!(
        u(&d["lost"]) <= outage_msgs,
        "lost {} > {outage_msgs}",
        d["lost"]
    );
    assert_eq!(u(&d["duplicated"]), 0, "{d}");
    // Delivery and the rate came back within the 5 s of schedule left after the fault.
    let f = &v["fault"];
    assert_eq!(f["kind"], "restart");
    let first = u(&f["first_delivery_ns"]);
    assert!(first < 5_000_000_000, "{f}");
    let rate = u(&f["rate_recovered_ns"]);
    assert!(rate >= first && rate < 5_000_000_000, "{f}");
    assert!(stderr(&out).contains("Fault: restart"), "{}", stderr(&out));
    assert_nothing_left_in(&tmp);
}

#[test]
fn a_paused_server_loses_nothing_and_recovery_covers_the_pause() {
    let tmp = scratch_dir("pause");
    let started = Instant::now();
    let child = spawn(
        &[
            "latency",
            "--rate",
            "1000",
            "--duration",
            "3s",
            "--warmup",
            "0s",
            "--fault",
            "pause@1s:300ms",
        ],
        &tmp,
    );
    // 3 s of schedule and a 300 ms pause: the bound only guards against a hang.
    let (out, v) = finish(child, started, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(u(&v["delivery"]["lost"]), 0);
    assert_eq!(u(&v["connections"]["lost"]), 0);
    // Nothing sent after the pause began could arrive before the server woke up (the pause is
    // timed from after the freeze, so it lasts at least its 300 ms), and it did arrive within
    // the 2 s of schedule left after it.
    let first = u(&v["fault"]["first_delivery_ns"]);
    assert!(
        (300_000_000..2_000_000_000).contains(&first),
        "{}",
        v["fault"]
    );
    // The stall shows in the corrected tail.
    assert!(
        u(&v["latency"]["max_ns"]) >= 250_000_000,
        "{}",
        v["latency"]
    );
    assert_nothing_left_in(&tmp);
}

#[test]
fn a_server_that_stops_responding_is_caught_by_keepalive_pings() {
    let s = TestServer::start();
    let started = Instant::now();
    // A subscriber waiting for messages hears nothing either way: only its PINGs can tell a
    // quiet server from a dead one.
    let mut child = spawn_piped(&[
        "sub",
        "--server",
        &s.url,
        "--msgs",
        "10",
        "--start-timeout",
        "30s",
        "--ping-interval",
        "200ms",
        "--json",
        "-",
        "--no-progress",
    ]);
    // Frozen once the subscription is confirmed (a freeze during the handshake would be a
    // connect timeout instead), however long a busy machine took to get there.
    let (seen, rest) = support::stderr_until(&mut child, "waiting for messages");
    s.freeze(true);
    // Missed PINGs end the run within a second or so; waiting for messages instead would take
    // the 30 s of --start-timeout. Half of that tells the two apart on any machine.
    let (out, v) = finish(child, started, Duration::from_secs(15));
    s.freeze(false);
    let err = support::rest_of_stderr(seen, rest);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert_eq!(v["failure"], "ping_timeout");
    assert_eq!(u(&v["errors"]["ping_timeout"]), 1, "{}", v["errors"]);
}

#[test]
fn the_servers_own_ping_timing_out_is_reported_by_kind() {
    // The server PINGs every 100 ms and gives up after two unanswered; a subscriber that stops
    // reading for 2 s cannot answer.
    let s = TestServer::with_config("ping_interval: \"100ms\"\nping_max: 2\n");
    let started = Instant::now();
    let child = spawn_piped(&[
        "pubsub",
        "--server",
        &s.url,
        "--rate",
        "500",
        "--duration",
        "3s",
        "--sub-stall",
        "100:2s",
        "--timeout",
        "2s",
        "--json",
        "-",
        "--no-progress",
    ]);
    // 3 s of schedule: the bound only guards against a hang.
    let (out, v) = finish(child, started, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(u(&v["errors"]["stale_connection"]) >= 1, "{}", v["errors"]);
    assert_eq!(v["failure"], "disconnected");
    let d = &v["delivery"];
    assert!(u(&d["lost"]) > 0, "{d}");
    assert_eq!(u(&d["received"]) + u(&d["lost"]), u(&d["expected"]), "{d}");
}

/// A TCP relay between msgbench and the server that can reset every connection it carries, as
/// a failing network path would.
struct Relay {
    port: u16,
    generation: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
}

impl Relay {
    fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let generation = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let (g, st, acc) = (generation.clone(), stop.clone(), accepted.clone());
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(60);
            while !st.load(Ordering::Relaxed) && Instant::now() < until {
                match listener.accept() {
                    Ok((client, _)) => {
                        acc.fetch_add(1, Ordering::Relaxed);
                        let server = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
                        // Closing with a zero linger sends RST instead of FIN.
                        set_linger_zero(&client);
                        let mine = g.load(Ordering::Acquire);
                        for (from, to) in [
                            (client.try_clone().unwrap(), server.try_clone().unwrap()),
                            (server, client),
                        ] {
                            let (g, st) = (g.clone(), st.clone());
                            std::thread::spawn(move || pump(from, to, mine, &g, &st));
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Relay {
            port,
            generation,
            stop,
            accepted,
        }
    }

    /// Resets every connection open now; new ones are relayed as before.
    fn reset_all(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Copies bytes one way until the relay's generation moves on (then both sockets are dropped:
/// the client's with a zero linger, which resets it) or the relay stops.
fn pump(mut from: TcpStream, mut to: TcpStream, mine: u64, g: &AtomicU64, stop: &AtomicBool) {
    from.set_read_timeout(Some(Duration::from_millis(10)))
        .unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    while g.load(Ordering::Acquire) == mine && !stop.load(Ordering::Relaxed) {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = from.shutdown(std::net::Shutdown::Read);
}

fn set_linger_zero(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: sets a socket option from a valid struct of the right size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&l as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

#[test]
fn reset_connections_are_reconnected_with_exact_accounting() {
    let s = TestServer::start();
    let upstream: u16 = s.url.rsplit(':').next().unwrap().parse().unwrap();
    let relay = Relay::start(upstream);
    let url = format!("nats://127.0.0.1:{}", relay.port);
    let dir = scratch_dir("reset");
    let run = |extra: &[&str]| {
        let ticks = dir.join(format!("ticks-{}.jsonl", extra.len()));
        let started = Instant::now();
        let mut child = bin()
            .args([
                "pubsub",
                "--server",
                &url,
                "--rate",
                "1000",
                "--duration",
                "3s",
                "--timeout",
                "2s",
                "--stream-stats",
                ticks.to_str().unwrap(),
                "--json",
                "-",
                "--no-progress",
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Reset once messages flow (the first second is over), not after a fixed time that a
        // busy machine could spend connecting: connections not yet made would not be reset.
        let first = wait_for_tick(&ticks, &mut child, |_| true);
        relay.reset_all();
        let received_before =
            (tick_f(&first, "received_per_sec") * tick_f(&first, "span_s")).round() as u64;
        // 3 s of schedule and a reconnect: the bound only guards against a hang.
        let (out, v) = finish(child, started, Duration::from_secs(60));
        (out, v, received_before)
    };

    let (out, v, _) = run(&["--reconnect", "--allow-loss"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c = &v["connections"];
    assert_eq!(u(&c["lost"]), 2, "{c}");
    assert_eq!(u(&c["reconnects"]), 2, "{c}");
    assert_eq!(relay.accepted.load(Ordering::Relaxed), 4);
    let d = &v["delivery"];
    assert_eq!(u(&d["sent"]), 3000, "{d}");
    assert_eq!(u(&d["received"]) + u(&d["lost"]), 3000, "{d}");
    // A reset loses at most what was in flight in the relay and the sockets, and what was
    // published while the subscriber was away: the slowest reconnect, and half a second for a
    // busy machine to notice the reset and for the subscription to take effect. A subscriber
    // that never came back would miss the last two seconds, 2,000 messages.
    let slowest = c["reconnect_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .max()
        .unwrap();
    let away = 1000 * (slowest + 500_000_000) / 1_000_000_000;
    assert!(u(&d["lost"]) <= away, "lost {} > {away}: {d}", d["lost"]);

    // Without --reconnect the same reset ends the run: exit 5, with what was measured; at
    // least what had arrived by the first second, when the reset came.
    let (out, v, received_before) = run(&[]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(v["failure"], "disconnected");
    assert!(
        u(&v["delivery"]["received"]) >= received_before,
        "{received_before} received by the reset: {}",
        v["delivery"]
    );
}

#[test]
fn a_fault_due_after_the_run_has_ended_is_refused_before_the_start() {
    // It would never be injected, and the run would pass without testing what it was asked.
    for args in [
        &[
            "pubsub",
            "--rate",
            "1000",
            "--duration",
            "2s",
            "--fault",
            "restart@3s",
        ][..],
        &["latency", "--duration", "2s", "--fault", "pause@2s:100ms"][..],
        &[
            "request",
            "--rate",
            "100",
            "--duration",
            "2s",
            "--fault",
            "kill@5s",
        ][..],
    ] {
        let out = support::run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--fault") && err.contains("comes after the run's 2.00 s are over"),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn a_fault_the_run_never_reached_fails_it_with_a_status_of_its_own_unless_allowed() {
    // 2,000 publishes take well under a second: the restart due at 60 s never comes, and a
    // run asked to test a restart has not tested one.
    let args = [
        "js",
        "pub",
        "--msgs",
        "2000",
        "--reconnect",
        "--fault",
        "restart@60s",
    ];
    let (out, v) = support::run_json(&args);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{text}");
    assert_eq!(support::schema_errors(&v), Vec::<String>::new());
    assert!(v["fault"]["injected_at_ns"].is_null(), "{}", v["fault"]);
    assert_eq!(v["fault"]["missed_allowed"], false);
    assert!(text.contains("!! NOT INJECTED: 1 of 1 faults"), "{text}");
    // Allowed, it passes, and says so without a banner.
    let mut allowed = args.to_vec();
    allowed.push("--allow-missed-faults");
    let (out, v) = support::run_json(&allowed);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(v["fault"]["missed_allowed"], true);
    assert!(
        text.contains("Not injected: 1 of 1 faults; allowed") && !text.contains("!!"),
        "{text}"
    );
    // The flag with no fault to allow is refused, naming it.
    let out = support::run(&["js", "pub", "--msgs", "10", "--allow-missed-faults"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--allow-missed-faults") && err.trim().lines().count() == 1,
        "{err}"
    );
}
