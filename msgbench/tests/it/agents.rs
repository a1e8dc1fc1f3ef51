//! Distributed runs end to end: `msgbench agent` processes on a real nats-server (the control
//! plane and the server under test at once), a coordinator run as any scenario with
//! `--agents`, and what must hold: exact reconciliation across agents, signed plans only, no
//! orphaned load when either side dies, and one-way latency corrected for the agents' clocks.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::agent::Agent;
use crate::support::{self, bin, scratch_dir, stderr, u, Scratch, TestServer};

/// A signing seed and its public key, made by `msgbench agent keygen`.
fn keys(dir: &Scratch, name: &str) -> (String, String) {
    let seed = dir.join(name);
    let out = bin()
        .args(["agent", "keygen", "--out", seed.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let public = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(public.starts_with('U'), "a user public key: {public}");
    (seed.to_str().unwrap().to_string(), public)
}

fn coordinate(args: &[&str]) -> (std::process::Output, serde_json::Value, Scratch) {
    let dir = scratch_dir("coord");
    let json = dir.join("r.json");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--no-progress", "--json", json.to_str().unwrap()]);
    let out = bin().args(&all).output().unwrap();
    let doc = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    (out, doc, dir)
}

#[test]
fn pubsub_on_two_agents_reconciles_exactly_publishers_on_one_subscribers_on_the_other() {
    let server = TestServer::start();
    let keydir = scratch_dir("keys");
    let (seed, public) = keys(&keydir, "coord.nk");
    let _a = Agent::start(&server.url, "a1", &[&public], &[]);
    let _b = Agent::start(&server.url, "a2", &[&public], &[]);
    let (out, doc, _d) = coordinate(&[
        "pubsub",
        "--pubs",
        "1",
        "--subs",
        "1",
        "--msgs",
        "20000",
        "--size",
        "64",
        "--server",
        &server.url,
        "--agents",
        "2",
        "--sign",
        &seed,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = &doc["delivery"];
    assert_eq!(u(&d["sent"]), 20_000);
    assert_eq!(u(&d["expected"]), 20_000);
    assert_eq!(u(&d["received"]), 20_000);
    assert_eq!(u(&d["lost"]), 0);
    assert_eq!(d["accounting"], "exact");
    let agents = doc["agents"]["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    // The publisher ran on one agent and the subscriber on the other.
    assert_eq!((u(&agents[0]["pubs"]), u(&agents[0]["subs"])), (1, 0));
    assert_eq!((u(&agents[1]["pubs"]), u(&agents[1]["subs"])), (0, 1));
    assert!(agents.iter().all(|a| a["status"] == "complete"));
    assert_eq!(u(&doc["by_role"]["pub"]["msgs"]), 20_000);
    assert_eq!(u(&doc["by_role"]["sub"]["msgs"]), 20_000);
    let errs = support::schema_errors(&doc);
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn a_stalled_subscriber_on_another_agent_shows_the_loss_per_publisher() {
    // A small pending limit and write deadline: the server cuts off a subscriber that stops
    // reading within a second, however slowly a busy machine lets the publishers fill it
    // (with the defaults, 64 MB, the 3 s stall was not always enough: issue 42).
    let server = TestServer::with_config(
        "max_pending: 256KB\nmax_payload: 64KB\nwrite_deadline: \"500ms\"\n",
    );
    let _a = Agent::start(&server.url, "p1", &[], &[]);
    let _b = Agent::start(&server.url, "s1", &[], &[]);
    // One publisher on each agent, the subscriber on the second: it stops reading long enough
    // for the server to cut it off as a slow consumer, and reconnects.
    let (out, doc, _d) = coordinate(&[
        "pubsub",
        "--pubs",
        "2",
        "--subs",
        "1",
        "--msgs",
        "200000",
        "--size",
        "512",
        "--sub-stall",
        "1000:3s",
        "--allow-loss",
        "--reconnect",
        "--server",
        &server.url,
        "--agents",
        "p1,s1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = &doc["delivery"];
    assert_eq!(u(&d["sent"]), 400_000);
    let pubs = d["publishers"].as_array().unwrap();
    assert_eq!(pubs.len(), 2, "{d}");
    for p in pubs {
        assert_eq!(u(&p["sent"]), 200_000);
        assert_eq!(
            u(&p["lost"]) + u(&p["received"]) - u(&p["duplicated"]),
            200_000,
            "{p}"
        );
    }
    let lost: u64 = pubs.iter().map(|p| u(&p["lost"])).sum();
    assert!(lost > 0, "a stalled subscriber loses messages: {d}");
    assert_eq!(u(&d["lost"]), lost);
}

#[test]
fn a_killed_agent_is_named_the_partial_result_written_and_the_survivor_stops() {
    let server = TestServer::start();
    let mut a = Agent::start(&server.url, "k1", &[], &[]);
    let b = Agent::start(&server.url, "k2", &[], &[]);
    let dir = scratch_dir("kill");
    let json = dir.join("r.json");
    let mut coord = bin()
        .args([
            "pubsub",
            "--pubs",
            "1",
            "--subs",
            "1",
            "--rate",
            "2000",
            "--duration",
            "60s",
            "--agent-silence",
            "4s",
            "--server",
            &server.url,
            "--agents",
            "k1,k2",
            "--live",
            "--json",
            json.to_str().unwrap(),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(a.wait_for("accepted plan", support::HANG), "{}", a.log());
    // Killed once the coordinator has shown k1 sending (its live row for a second: every
    // agent has reported that second), not after a fixed time that a busy machine could
    // spend before k1 reported anything.
    let (seen, rest) =
        support::stderr_until_line(&mut coord, |l| l.contains("] k1 ") && sent_per_sec(l) > 0);
    a.kill();
    let killed = Instant::now();
    let out = coord.wait_with_output().unwrap();
    let took = killed.elapsed();
    let err = support::rest_of_stderr(seen, rest);
    assert_eq!(out.status.code(), Some(9), "{err}");
    // Named, with what it was last seen doing: its heartbeat's words and its last progress.
    assert!(
        err.contains("agent k1 has been silent for ")
            && err.contains(", last seen running the load (")
            && err.contains(" sent, "),
        "{err}"
    );
    // Silence is noticed after --agent-silence (4 s), the survivor gets as long again to
    // report: seconds, where waiting for the run's schedule would take most of its 60 s.
    // Within 30 s of the kill, and the survivor within 30 s more, tells the two apart.
    let bound = Duration::from_secs(30);
    assert!(took < bound, "ended {took:?} after the kill");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["agents"]["missing"], serde_json::json!(["k1"]));
    let k1 = &doc["agents"]["agents"][0];
    assert_eq!(k1["status"], "missing");
    assert!(u(&k1["last_progress"]["pub_msgs"]) > 0, "{k1}");
    assert!(
        doc["interrupted"].as_bool().unwrap(),
        "the survivor was stopped early"
    );
    assert!(b.wait_for("ended", bound), "{}", b.log());
}

/// The sending rate of a coordinator's live row (`[  1.0s] k1  sent  2,000/s  …`).
fn sent_per_sec(row: &str) -> u64 {
    let after = row.split(" sent ").nth(1).unwrap_or("");
    let n = after
        .split("/s")
        .next()
        .unwrap_or("")
        .trim()
        .replace(',', "");
    n.parse().unwrap_or(0)
}

#[test]
fn agents_stop_their_load_when_the_coordinator_dies() {
    let server = TestServer::start();
    let a = Agent::start(&server.url, "c1", &[], &[]);
    let mut coord = bin()
        .args([
            "pubsub",
            "--pubs",
            "1",
            "--subs",
            "1",
            "--rate",
            "1000",
            "--duration",
            "60s",
            "--server",
            &server.url,
            "--agents",
            "1",
            "--live",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(a.wait_for("accepted plan", support::HANG), "{}", a.log());
    // Killed once the run is under way (the coordinator shows its first second), not after a
    // fixed time a busy machine could spend before the start.
    let (_seen, _rest) = support::stderr_until(&mut coord, "] c1 ");
    coord.kill().unwrap();
    coord.wait().unwrap();
    // The lease is 3 s; the run ends and the agent says why: seconds, where a run that went
    // on would end with its 60 s schedule. Half of that tells the two apart on any machine.
    let half = Duration::from_secs(30);
    assert!(a.wait_for("lease lapsed", half), "{}", a.log());
    assert!(a.wait_for("ended", half), "{}", a.log());
}

#[test]
fn unsigned_untrusted_replayed_and_expired_plans_are_refused_and_logged() {
    let server = TestServer::start();
    let keydir = scratch_dir("keys");
    let (seed, public) = keys(&keydir, "coord.nk");
    let (other_seed, _) = keys(&keydir, "other.nk");
    let a = Agent::start(&server.url, "t1", &[&public], &[]);
    let args = |sign: Option<&str>| {
        let mut v = vec![
            "pub".to_string(),
            "--msgs".into(),
            "100".into(),
            "--server".into(),
            server.url.clone(),
            "--agents".into(),
            "t1".into(),
        ];
        if let Some(s) = sign {
            v.extend(["--sign".into(), s.into()]);
        }
        v
    };
    let run = |a: Vec<String>| bin().args(a).arg("--no-progress").output().unwrap();

    // The agent's log is read on a thread of the test's own: each line is waited for, as a
    // busy machine may run that thread only after the coordinator has its answer.
    // The agent's heartbeat says it runs only signed plans: an unsigned run is refused by
    // the coordinator itself, before a plan goes out.
    let out = run(args(None));
    assert_eq!(out.status.code(), Some(9), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("agent t1 runs only signed plans")
            && stderr(&out).contains("not signed: give --sign"),
        "{}",
        stderr(&out)
    );
    assert!(!a.log().contains("refused plan"), "{}", a.log());

    let out = run(args(Some(&other_seed)));
    assert_eq!(out.status.code(), Some(9), "{}", stderr(&out));
    assert!(a.wait_for("does not trust", support::HANG), "{}", a.log());

    // A plan captured off the wire and sent again is a replay.
    let capture = Capture::start(&server.url, "msgbench.ctl.agent.t1.cmd");
    let out = run(args(Some(&seed)));
    assert!(out.status.success(), "{}", stderr(&out));
    let plan = capture.first_with("\"kind\":\"plan\"");
    let answer = support::raw_request(&server.url, "msgbench.ctl.agent.t1.cmd", &plan);
    assert!(
        answer.contains("\"accepted\":false") && answer.contains("replay"),
        "{answer}"
    );
    assert!(a.wait_for("a replay", support::HANG), "{}", a.log());
    // The same plan with its signature taken off, as a coordinator that skipped the check
    // would send it: the agent refuses it itself.
    let mut bare: serde_json::Value = serde_json::from_str(&plan).unwrap();
    let fields = bare.as_object_mut().unwrap();
    fields.remove("signer");
    fields.remove("sig");
    let answer = support::raw_request(&server.url, "msgbench.ctl.agent.t1.cmd", &bare.to_string());
    assert!(
        answer.contains("\"accepted\":false") && answer.contains("not signed"),
        "{answer}"
    );
    assert!(a.wait_for("not signed", support::HANG), "{}", a.log());
    assert!(a.log().contains("refused plan"), "{}", a.log());

    // An agent whose clock is a minute ahead sees every plan as expired.
    let late = Agent::start(&server.url, "t2", &[&public], &[(CLOCK_ENV, "60000000000")]);
    let mut v = args(Some(&seed));
    v[6] = "t2".into();
    let out = run(v);
    assert_eq!(out.status.code(), Some(9), "{}", stderr(&out));
    assert!(late.wait_for("expired", support::HANG), "{}", late.log());
}

const CLOCK_ENV: &str = "MSGBENCH_TEST_CLOCK_OFFSET_NS";

/// The tests' own subscriber (a raw connection), collecting message payloads.
struct Capture {
    got: Arc<Mutex<Vec<String>>>,
}

impl Capture {
    fn start(url: &str, subject: &str) -> Capture {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(url.trim_start_matches("nats://")).unwrap();
        write!(
            s,
            "CONNECT {{\"verbose\":false}}\r\nSUB {subject} 1\r\nPING\r\n"
        )
        .unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&got);
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut line = String::new();
        // Wait for the PONG: the subscription is in place.
        loop {
            line.clear();
            r.read_line(&mut line).unwrap();
            if line.starts_with("PONG") {
                break;
            }
        }
        std::thread::spawn(move || loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            if line.starts_with("PING") {
                let _ = s.write_all(b"PONG\r\n");
            }
            if let Some(rest) = line.strip_prefix("MSG ") {
                let len: usize = rest.trim_end().rsplit(' ').next().unwrap().parse().unwrap();
                let mut payload = vec![0; len + 2];
                r.read_exact(&mut payload).unwrap();
                sink.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&payload[..len]).into_owned());
            }
        });
        Capture { got }
    }

    fn first_with(&self, needle: &str) -> String {
        self.got
            .lock()
            .unwrap()
            .iter()
            .find(|p| p.contains(needle))
            .cloned()
            .expect("the sealed plan was seen on the wire")
    }
}

#[test]
fn an_agents_clock_offset_is_found_and_cross_agent_latency_is_corrected_by_it() {
    let server = TestServer::start();
    let truth: i64 = 50_000_000;
    let _a = Agent::start(&server.url, "l1", &[], &[]);
    let _b = Agent::start(&server.url, "l2", &[], &[(CLOCK_ENV, &truth.to_string())]);
    let latency = |agents: &str| {
        let (out, doc, _d) = coordinate(&[
            "latency",
            "--rate",
            "1000",
            "--duration",
            "2s",
            "--warmup",
            "200ms",
            "--server",
            &server.url,
            "--agents",
            agents,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        doc
    };
    let cross = latency("l1,l2");
    let same = latency("l1");
    let l2 = &cross["agents"]["agents"][1];
    assert_eq!(l2["name"], "l2");
    let estimate = l2["clock_offset_ns"].as_i64().unwrap();
    let rtt = 2 * u(&l2["clock_uncertainty_ns"]);
    assert!(
        estimate.abs_diff(truth) <= 2 * rtt,
        "offset {estimate} ns, truth {truth} ns, least round trip {rtt} ns"
    );
    // The bound is the two agents' clock uncertainties together (each is half its least
    // round trip, whatever the machine made of them).
    let bound = u(&cross["agents"]["cross_agent_latency_uncertainty_ns"]);
    let each: u64 = cross["agents"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| u(&a["clock_uncertainty_ns"]))
        .sum();
    assert!(bound > 0 && bound == each, "{bound} vs {each}");
    // The subscriber's clock is 50 ms ahead; uncorrected, every latency would be 50 ms longer.
    let p50 = |d: &serde_json::Value| u(&d["latency"]["percentiles_ns"]["50"]);
    let (c, s) = (p50(&cross), p50(&same));
    // Two runs' medians also differ by scheduling noise on a busy machine: allow half the
    // offset of it, which still tells a corrected median from one 50 ms off.
    assert!(
        c.abs_diff(s) <= 2 * bound + 25_000_000,
        "cross-agent p50 {c} ns, same-agent p50 {s} ns, bound {bound} ns"
    );
    assert!(
        cross["latency_uncorrected"].is_null(),
        "no send times across hosts"
    );
}

#[test]
fn too_few_agents_and_unsupported_scenarios_are_refused_in_one_line() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "f1", &[], &[]);
    let out = bin()
        .args([
            "pub",
            "--msgs",
            "10",
            "--server",
            &server.url,
            "--agents",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(9));
    let e = stderr(&out);
    assert_eq!(
        e.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{e}"
    );
    assert!(e.contains("--agents 2") && e.contains("f1"), "{e}");
    // What stays refused is what cannot mean anything on other hosts: a fault on a server
    // msgbench starts itself.
    let out = bin()
        .args([
            "pub",
            "--msgs",
            "10",
            "--server",
            &server.url,
            "--agents",
            "1",
            "--fault",
            "kill@1s",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("--fault cannot be combined with --agents") && e.lines().count() == 1,
        "{e}"
    );
    let out = bin().args(["pub", "--agents", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--server"), "{}", stderr(&out));
    // The liveness window: at least two heartbeats, and only for a run on agents.
    for (extra, says) in [
        (
            &["--agents", "1", "--agent-silence", "500ms"][..],
            "'500ms' for --agent-silence: must be at least 1s",
        ),
        (
            &["--agent-silence", "5s"][..],
            "--agent-silence does not apply to a run without agents: it is for runs on agents",
        ),
    ] {
        let mut args = vec!["pub", "--msgs", "10", "--server", &server.url];
        args.extend_from_slice(extra);
        let out = bin().args(&args).output().unwrap();
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(says) && e.lines().count() == 1, "{args:?}: {e}");
    }
}

#[test]
fn live_rows_stream_stats_runs_thresholds_and_report_work_on_a_run_on_agents() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "m1", &[], &[]);
    let _b = Agent::start(&server.url, "m2", &[], &[]);
    let dir = scratch_dir("live");
    let (stream, json, html) = (dir.join("s.jsonl"), dir.join("r.json"), dir.join("r.html"));
    let out = bin()
        .args([
            "pubsub",
            "--pubs",
            "2",
            "--subs",
            "2",
            "--rate",
            "4000",
            "--duration",
            "3s",
            "--server",
            &server.url,
            "--agents",
            "2",
            "--runs",
            "2",
            "--live",
            "--threshold",
            "lost==0",
            "--stream-stats",
            stream.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let e = stderr(&out);
    for who in ["all", "m1", "m2"] {
        assert!(
            e.lines().any(|l| l.contains(&format!("] {who} "))),
            "no live row for {who}: {e}"
        );
    }
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&stream)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for who in ["all", "m1", "m2"] {
        assert!(
            lines.iter().any(|l| l["agent"] == who),
            "no stream line for {who}"
        );
    }
    // The aggregate row is the sum of the agents' rows written with it.
    let at = lines
        .iter()
        .position(|l| l["agent"] == "all" && l["sent_per_sec"].as_f64().unwrap() > 0.0)
        .unwrap();
    let rate = |l: &serde_json::Value| l["sent_per_sec"].as_f64().unwrap();
    let parts: f64 = lines[at + 1..]
        .iter()
        .take_while(|l| l["agent"] != "all")
        .map(rate)
        .sum();
    assert!(
        (parts - rate(&lines[at])).abs() < 1e-6,
        "{} vs {parts}",
        rate(&lines[at])
    );
    assert!(lines[at]["run"].as_u64().is_some(), "--runs tags each line");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["runs"]["runs"].as_array().unwrap().len(), 2);
    assert_eq!(doc["thresholds"][0]["pass"], true);
    assert_eq!(doc["delivery"]["lost"], 0);
    assert!(doc["timeline"]["ticks"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    let out = bin()
        .args([
            "report",
            json.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = bin()
        .args(["diff", json.to_str().unwrap(), json.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn an_agent_ends_promptly_on_sigterm() {
    let server = TestServer::start();
    let a = Agent::start(&server.url, "q1", &[], &[]);
    let pid = a.child.id() as libc::pid_t;
    let sent = Instant::now();
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let mut a = a;
    loop {
        if let Some(status) = a.child.try_wait().unwrap() {
            assert_eq!(status.code(), Some(130), "{}", a.log());
            break;
        }
        // Its loops look at the stop flag every 200–500 ms; a busy machine only adds scheduling
        // delay. The bound guards against an agent that would not end at all.
        assert!(
            sent.elapsed() < Duration::from_secs(30),
            "still running: {}",
            a.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn requests_cross_from_one_agent_to_responders_on_another_closed_and_open_loop() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "r1", &[], &[]);
    let _b = Agent::start(&server.url, "r2", &[], &[]);
    for paced in [false, true] {
        let mut args = vec![
            "request",
            "--clients",
            "2",
            "--responders",
            "1",
            "--msgs",
            "3000",
            "--server",
            &server.url,
            "--agents",
            "2",
        ];
        if paced {
            args.extend(["--rate", "2000"]);
        }
        let (out, doc, _d) = coordinate(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let agents = doc["agents"]["agents"].as_array().unwrap();
        // One requester on each agent; the responder on the second, so the first agent's
        // requests are all answered from the other host.
        assert_eq!((u(&agents[0]["pubs"]), u(&agents[0]["subs"])), (1, 0));
        assert_eq!((u(&agents[1]["pubs"]), u(&agents[1]["subs"])), (1, 1));
        let d = &doc["delivery"];
        assert_eq!(u(&d["sent"]), 6000, "{d}");
        assert_eq!(u(&d["received"]), 6000, "{d}");
        assert_eq!(u(&d["lost"]), 0);
        assert_eq!(u(&doc["latency"]["count"]), 6000);
        let ids: Vec<u64> = doc["clients"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| u(&c["id"]))
            .collect();
        assert_eq!(
            ids,
            [0, 1, 0, 1],
            "requests and replies, each with global ids"
        );
    }
}

#[test]
fn js_pub_and_kv_put_on_two_agents_reconcile_one_stream_across_both_and_js_consume_takes_it_once() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "j1", &[], &[]);
    let _b = Agent::start(&server.url, "j2", &[], &[]);
    for (scenario, stream) in [
        (
            &["js", "pub", "--mode", "async", "--stream", "across"][..],
            "across",
        ),
        (&["kv", "put", "--bucket", "acrosskv"][..], "KV_acrosskv"),
    ] {
        let mut args = scenario.to_vec();
        args.extend([
            "--clients",
            "4",
            "--msgs",
            "2500",
            "--server",
            &server.url,
            "--agents",
            "2",
        ]);
        let (out, doc, _d) = coordinate(&args);
        assert!(out.status.success(), "{scenario:?}: {}", stderr(&out));
        let agents = doc["agents"]["agents"].as_array().unwrap();
        assert_eq!(agents.len(), 2);
        assert!(
            agents.iter().all(|a| u(&a["pubs"]) == 2),
            "two publishers each"
        );
        // Each agent's own section is its share: a count and a fingerprint, no verdict.
        for a in agents {
            let own = &a["result"]["jetstream"]["streams"][0];
            assert_eq!(u(&own["acked"]), 5000, "{own}");
            assert!(own["after"].is_null() && !own["reconciled"].as_bool().unwrap());
            assert!(own["acked_fingerprint"].is_string(), "{own}");
        }
        // The coordinator's: the stream read once both were done, every sequence accounted for.
        let js = &doc["jetstream"];
        let st = &js["streams"][0];
        assert_eq!(st["name"], stream);
        assert_eq!(u(&st["acked"]), 10_000, "{st}");
        assert_eq!(u(&st["stored"]), 10_000, "{st}");
        assert_eq!(u(&st["unacked_stored"]), 0);
        assert_eq!(
            u(&st["after"]["last_seq"]) - u(&st["before"]["last_seq"]),
            10_000
        );
        assert_eq!(js["reconciled"], true, "{js}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Reconciled across 2 agents"),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let errs = support::schema_errors(&doc);
        assert!(errs.is_empty(), "{errs:?}");
    }
    // Then the stream consumed on both agents through one shared consumer: every message once.
    let (out, doc, _d) = coordinate(&[
        "js",
        "consume",
        "--publish",
        "none",
        "--stream",
        "across",
        "--clients",
        "2",
        "--msgs",
        "10000",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let c = &doc["consumer"];
    assert_eq!(u(&c["consumed"]), 10_000, "{c}");
    assert_eq!(u(&c["expected"]), 10_000);
    assert_eq!(c["reconciled"], true, "{c}");
    let agents = doc["agents"]["agents"].as_array().unwrap();
    let shares: Vec<u64> = agents
        .iter()
        .map(|a| u(&a["result"]["consumer"]["consumed"]))
        .collect();
    assert_eq!(shares.iter().sum::<u64>(), 10_000, "{shares:?}");
    let d = &doc["delivery"];
    assert_eq!(
        (u(&d["expected"]), u(&d["received"]), u(&d["lost"])),
        (10_000, 10_000, 0)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Consumed across 2 agents: all 10,000"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let errs = support::schema_errors(&doc);
    assert!(errs.is_empty(), "{errs:?}");
    // Fewer than the stream holds cannot be split: no agent knows when the others stop.
    let (out, _doc, _d) = coordinate(&[
        "js",
        "consume",
        "--publish",
        "none",
        "--stream",
        "across",
        "--clients",
        "2",
        "--msgs",
        "5000",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(9), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("'5000' for --msgs"),
        "{}",
        stderr(&out)
    );
}

/// A stream's message count and last sequence, or None once it is gone.
fn stream_state(url: &str, stream: &str) -> Option<(u64, u64)> {
    let info: serde_json::Value = serde_json::from_str(&support::raw_request(
        url,
        &format!("$JS.API.STREAM.INFO.{stream}"),
        "",
    ))
    .unwrap();
    let state = &info["state"];
    Some((state["messages"].as_u64()?, state["last_seq"].as_u64()?))
}

#[test]
fn js_consume_fills_or_publishes_live_on_two_agents_and_every_acknowledged_message_is_consumed_once(
) {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "c1", &[], &[]);
    let _b = Agent::start(&server.url, "c2", &[], &[]);
    // One publisher and one consumer put them on different agents; three consumers spread
    // over both, beside the publisher. The last publishes on a schedule of 12,000 messages.
    for (publish, clients, pace) in [
        ("before", "1", ["--msgs", "12000"]),
        ("live", "3", ["--msgs", "12000"]),
        ("before", "3", ["--msgs", "12000"]),
        ("live", "2", ["--rate-schedule", "4000@1s,8000@1s"]),
    ] {
        let stream = format!("cons{publish}{clients}");
        let subject = format!("{stream}.x");
        let mut args = vec![
            "js",
            "consume",
            "--publish",
            publish,
            "--stream",
            &stream,
            "--subject",
            &subject,
            "--clients",
            clients,
            "--server",
            &server.url,
            "--agents",
            "2",
        ];
        args.extend(pace);
        let (out, doc, _d) = coordinate(&args);
        let what = format!("--publish {publish} --clients {clients}");
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        let agents = doc["agents"]["agents"].as_array().unwrap();
        assert_eq!(
            agents.iter().map(|a| u(&a["pubs"])).collect::<Vec<_>>(),
            [1, 0],
            "{what}"
        );
        // The publishers' acknowledgements reconciled with the stream across agents: all
        // 12,000 of a count; of a schedule, what it sent by its end (12,000 due).
        let st = &doc["jetstream"]["streams"][0];
        let n = u(&st["acked"]);
        assert!(
            n == 12_000 || (pace[0] == "--rate-schedule" && n > 11_000),
            "{what}: {st}"
        );
        assert_eq!(u(&st["stored"]), n, "{what}: {st}");
        assert_eq!(doc["jetstream"]["reconciled"], true, "{what}");
        // And every acknowledged message consumed once, across the agents' consumers.
        let c = &doc["consumer"];
        assert_eq!(
            (u(&c["expected"]), u(&c["consumed"])),
            (n, n),
            "{what}: {c}"
        );
        assert_eq!(c["reconciled"], true, "{what}: {c}");
        let consumed: u64 = agents
            .iter()
            .filter(|a| u(&a["subs"]) > 0)
            .map(|a| u(&a["result"]["consumer"]["consumed"]))
            .sum();
        assert_eq!(consumed, n, "{what}");
        let d = &doc["delivery"];
        assert_eq!(
            (u(&d["sent"]), u(&d["expected"]), u(&d["lost"])),
            (n, n, 0),
            "{what}: {d}"
        );
        // Only messages published while consuming have a latency.
        assert_eq!(doc["latency"].is_object(), publish == "live", "{what}");
        // A schedule's stages, added up across the agents as they followed it together.
        if pace[0] == "--rate-schedule" {
            let stages = doc["schedule"]["stages"].as_array().expect("stages");
            let sent: Vec<u64> = stages.iter().map(|st| u(&st["sent"])).collect();
            assert_eq!(sent.len(), 2, "{what}: {}", doc["schedule"]);
            assert_eq!(sent.iter().sum::<u64>(), n, "{what}: {}", doc["schedule"]);
        }
        let errs = support::schema_errors(&doc);
        assert!(errs.is_empty(), "{what}: {errs:?}");
        assert_eq!(stream_state(&server.url, &stream), Some((n, n)));
    }
}

#[test]
fn kv_get_on_two_agents_fills_the_bucket_once_and_the_coordinator_deletes_it() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "g1", &[], &[]);
    let _b = Agent::start(&server.url, "g2", &[], &[]);
    let (out, doc, _d) = coordinate(&[
        "kv",
        "get",
        "--bucket",
        "gets2",
        "--keys",
        "300",
        "--clients",
        "4",
        "--msgs",
        "2000",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let agents = doc["agents"]["agents"].as_array().unwrap();
    assert!(
        agents.iter().all(|a| u(&a["pubs"]) == 2),
        "two getters each"
    );
    let d = &doc["delivery"];
    assert_eq!(
        (u(&d["expected"]), u(&d["received"]), u(&d["lost"])),
        (8000, 8000, 0),
        "{d}"
    );
    // Filled once, by one agent: one put per key, not one per agent (the bucket keeps one
    // value per key either way; its last sequence counts the puts).
    assert_eq!(stream_state(&server.url, "KV_gets2"), Some((300, 300)));
    let errs = support::schema_errors(&doc);
    assert!(errs.is_empty(), "{errs:?}");
    // With --delete-after, the bucket goes once both agents are done.
    let (out, _doc, _d) = coordinate(&[
        "kv",
        "get",
        "--bucket",
        "gets3",
        "--keys",
        "50",
        "--msgs",
        "500",
        "--clients",
        "2",
        "--delete-after",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stream_state(&server.url, "KV_gets3"), None);
}

#[test]
fn obj_put_then_obj_get_on_two_agents_add_up_every_object_and_digest() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "o1", &[], &[]);
    let _b = Agent::start(&server.url, "o2", &[], &[]);
    for op in ["put", "get"] {
        let mut args = vec![
            "obj",
            op,
            "--bucket",
            "spread",
            "--objects",
            "21",
            "--clients",
            "4",
        ];
        if op == "put" {
            args.extend(["--size", "40KiB", "--chunk-size", "16KiB"]);
        }
        args.extend(["--server", &server.url, "--agents", "2"]);
        let (out, doc, _d) = coordinate(&args);
        assert!(out.status.success(), "obj {op}: {}", stderr(&out));
        let os = &doc["object_store"];
        assert_eq!(
            (u(&os["objects"]), u(&os["completed"]), u(&os["failed"])),
            (21, 21, 0),
            "{os}"
        );
        // 40 KiB in 16 KiB chunks: 3 chunks an object, each timed once.
        assert_eq!(u(&os["chunks"]), 63, "{os}");
        assert_eq!(u(&os["chunk_latency"]["count"]), 63, "{os}");
        let agents = doc["agents"]["agents"].as_array().unwrap();
        // Clients 0-1 on one agent, 2-3 on the other: objects 0,1,4,5,… and 2,3,6,7,…
        let shares: Vec<u64> = agents
            .iter()
            .map(|a| u(&a["result"]["object_store"]["objects"]))
            .collect();
        assert_eq!(shares, [11, 10]);
        if op == "get" {
            assert_eq!(u(&os["digest_mismatches"]), 0, "{os}");
            assert!(String::from_utf8_lossy(&out.stdout).contains("Digests: all 21 objects"));
        }
        let errs = support::schema_errors(&doc);
        assert!(errs.is_empty(), "{errs:?}");
    }
}

#[test]
fn grpc_on_two_agents_loads_one_service_from_both_and_adds_up_its_calls() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "g1", &[], &[]);
    let _b = Agent::start(&server.url, "g2", &[], &[]);
    // The service under test: `msgbench grpc serve`, as a user runs one.
    let mut service = bin()
        .args([
            "grpc",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--duration",
            "120s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(service.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_string();
    let (out, doc, _d) = coordinate(&[
        "grpc",
        "--server",
        &url,
        "--data",
        r#"{"stream":"s{{client}}"}"#,
        "--clients",
        "4",
        "--requests",
        "300",
        "--connections",
        "1",
        "--control",
        &server.url,
        "--agents",
        "2",
    ]);
    let _ = service.kill();
    let _ = service.wait();
    assert!(out.status.success(), "{}", stderr(&out));
    let g = &doc["grpc"];
    assert_eq!(
        (u(&g["requests"]), u(&g["requests_ok"])),
        (1200, 1200),
        "{g}"
    );
    assert_eq!(u(&g["status"]["OK"]), 1200, "{g}");
    assert_eq!(u(&g["connections"]), 2, "one connection on each host: {g}");
    assert_eq!(u(&doc["latency"]["count"]), 1200);
    let agents = doc["agents"]["agents"].as_array().unwrap();
    assert!(agents
        .iter()
        .all(|a| u(&a["pubs"]) == 2 && a["status"] == "complete"));
    let ids: Vec<u64> = doc["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| u(&c["id"]))
        .collect();
    assert_eq!(ids, [0, 1, 2, 3], "clients with global ids");
    let errs = support::schema_errors(&doc);
    assert!(errs.is_empty(), "{errs:?}");
    // Without --control there is nowhere to meet; a service msgbench would start is not shared.
    for (args, says) in [
        (
            &["grpc", "--server", url.as_str(), "--agents", "2"][..],
            "--control",
        ),
        (
            &["grpc", "--control", server.url.as_str(), "--agents", "2"][..],
            "--server URL",
        ),
    ] {
        let out = bin().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
}

#[test]
fn a_rate_schedule_steps_on_every_agent_and_its_stages_add_up() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "st1", &[], &[]);
    let _b = Agent::start(&server.url, "st2", &[], &[]);
    let monitor = server.monitor_url();
    let (out, doc, _d) = coordinate(&[
        "pubsub",
        "--pubs",
        "2",
        "--subs",
        "2",
        "--rate-schedule",
        "2000@1s,4000@1s",
        "--server",
        &server.url,
        "--server-monitor",
        &monitor,
        "--agents",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The coordinator sampled the server from the agents' common start: its readings are on
    // the merged timeline, and the messages it counted coming in are the schedule's (the
    // control plane's own traffic shares this server, a few messages a second).
    let side = &doc["server_side"]["servers"][0];
    assert!(u(&side["answered"]) >= 2, "{side}");
    let ticks = doc["timeline"]["ticks"].as_array().unwrap();
    let incoming: Vec<f64> = ticks
        .iter()
        .filter_map(|t| t["server"]["servers"][0]["in_msgs_per_sec"].as_f64())
        .collect();
    let most = incoming.iter().copied().fold(0.0, f64::max);
    assert!(
        (1500.0..6000.0).contains(&most),
        "the server counted the schedule's messages coming in: {incoming:?}"
    );
    // Each tick holds a reading made by its end.
    for t in ticks.iter().filter(|t| !t["server"].is_null()) {
        assert!(t["server"]["t_s"].as_f64() <= t["t_s"].as_f64(), "{t}");
    }
    let stages = doc["schedule"]["stages"].as_array().unwrap();
    let col = |k: &str| -> Vec<u64> { stages.iter().map(|s| u(&s[k])).collect() };
    // Sends by due time are exact; each of the two subscribers expected every message.
    assert_eq!(col("sent"), [2000, 4000], "{stages:?}");
    assert_eq!(col("received"), [4000, 8000], "{stages:?}");
    assert_eq!(col("lost"), [0, 0], "{stages:?}");
    // Each agent stepped with its own publisher: half of each stage.
    for a in doc["agents"]["agents"].as_array().unwrap() {
        let own: Vec<u64> = a["result"]["schedule"]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| u(&s["sent"]))
            .collect();
        assert_eq!(own, [1000, 2000], "{}", a["name"]);
    }
    let p = &doc["pacing"];
    assert!(
        (p["target_rate"].as_f64().unwrap() - 3000.0).abs() < 1e-6,
        "{p}"
    );
    let seen: Vec<u64> = doc["timeline"]["ticks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["stage"]["index"].as_u64())
        .collect();
    assert!(
        seen.contains(&0) && seen.contains(&1),
        "stages in the timeline: {seen:?}"
    );
    let errs = support::schema_errors(&doc);
    assert!(errs.is_empty(), "{errs:?}");
    // Requests paced by a schedule: each agent's target is its requesters' share.
    let (out, doc, _d) = coordinate(&[
        "request",
        "--clients",
        "2",
        "--responders",
        "1",
        "--rate-schedule",
        "500@1s,1000@1s",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let p = &doc["pacing"];
    assert!(
        (p["target_rate"].as_f64().unwrap() - 750.0).abs() < 1e-6,
        "{p}"
    );
    let sent: Vec<u64> = doc["schedule"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| u(&s["sent"]))
        .collect();
    assert_eq!(sent, [500, 1000]);
    // JetStream publishes on a schedule: a stage's `received` counts acknowledgements, and
    // what was not acknowledged is no stage's loss, in each agent's own result as in the
    // merged one (only the coordinator reads the stream).
    let (out, doc, _d) = coordinate(&[
        "js",
        "pub",
        "--mode",
        "async",
        "--stream",
        "staged",
        "--clients",
        "2",
        "--rate-schedule",
        "500@1s,1000@1s",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut acked = 0;
    for a in doc["agents"]["agents"].as_array().unwrap() {
        for st in a["result"]["schedule"]["stages"].as_array().unwrap() {
            assert!(st["lost"].is_null(), "{}: lost {}", a["name"], st["lost"]);
            acked += u(&st["received"]);
        }
    }
    let stages = doc["schedule"]["stages"].as_array().unwrap();
    assert!(stages.iter().all(|st| st["lost"].is_null()), "{stages:?}");
    let merged: u64 = stages.iter().map(|st| u(&st["received"])).sum();
    assert_eq!((acked, merged), (u(&doc["jetstream"]["acked"]), acked));
}

#[test]
fn a_capacity_search_on_two_agents_probes_each_rate_as_a_run_on_both() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "c1", &[], &[]);
    let _b = Agent::start(&server.url, "c2", &[], &[]);
    // A loose SLO, so the search doubles to its top without depending on this machine's speed.
    let (out, doc, _d) = coordinate(&[
        "capacity",
        "latency",
        "--slo",
        "lost==0",
        "--start-rate",
        "200",
        "--max-rate",
        "400",
        "--probe-duration",
        "1s",
        "--probe-warmup",
        "0s",
        "--probe-runs",
        "1",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(doc["sustainable_rate"].as_f64(), Some(400.0), "{doc}");
    let probes = doc["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 2, "200/s then 400/s");
    for p in probes {
        let agents = p["agents"].as_array().unwrap();
        let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["c1", "c2"]);
        // latency on two agents: the publisher on one, the subscriber on the other, and every
        // message of the probe's second sent by one and received by the other.
        let rate = p["rate"].as_f64().unwrap() as u64;
        assert_eq!(u(&agents[0]["sent"]), rate, "{p}");
        assert_eq!(u(&agents[1]["received"]), rate, "{p}");
        assert!(
            agents[0]["received"].is_null() && agents[1]["sent"].is_null(),
            "{p}"
        );
    }
    let errs = support::schema_errors_in("capacity-v1.schema.json", &doc);
    assert!(errs.is_empty(), "{errs:?}");
}

/// Two agents that run only signed plans, and a search without --sign: refused before its
/// first probe, in one line and with the status of a plain run's refusal (9), not a verdict
/// that the server limited the rate.
#[test]
fn a_capacity_search_without_sign_on_trusting_agents_is_refused_before_it_starts() {
    let server = TestServer::start();
    let keydir = scratch_dir("keys");
    let (_seed, public) = keys(&keydir, "coord.nk");
    let a = Agent::start(&server.url, "k1", &[&public], &[]);
    let _b = Agent::start(&server.url, "k2", &[&public], &[]);
    let (out, doc, _d) = coordinate(&[
        "capacity",
        "latency",
        "--slo",
        "p99<100ms",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(
        err.contains("runs only signed plans") && err.contains("give --sign"),
        "{err}"
    );
    assert!(
        !err.contains("Limited by") && !err.contains("probe"),
        "{err}"
    );
    assert!(doc.is_null(), "no capacity document: {doc}");
    assert!(!a.log().contains("refused plan"), "{}", a.log());
    // A plain run says the same, with the same status.
    let (out, _, _d) = coordinate(&[
        "latency",
        "--rate",
        "100",
        "--duration",
        "3s",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(9), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("runs only signed plans"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_reply_service_on_two_agents_answers_a_requester_from_both() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "s1", &[], &[]);
    let _b = Agent::start(&server.url, "s2", &[], &[]);
    let dir = scratch_dir("reply-agents");
    let json = dir.join("r.json");
    let coordinator = bin()
        .args([
            "reply",
            "--clients",
            "2",
            "--subject",
            "svc.echo",
            "--duration",
            "6s",
            "--server",
            &server.url,
            "--agents",
            "2",
            "--no-progress",
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // One request at a time until the service answers (the agents subscribe, then start
    // together), then the real load.
    let request = |msgs: &str| {
        bin()
            .args([
                "request",
                "--responders",
                "0",
                "--subject",
                "svc.echo",
                "--msgs",
                msgs,
                "--server",
                &server.url,
                "--no-progress",
            ])
            .output()
            .unwrap()
    };
    let deadline = Instant::now() + support::HANG;
    let mut probes = 0u64;
    loop {
        probes += 1;
        if request("1").status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the service on agents never answered"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = request("2000");
    assert!(out.status.success(), "{}", stderr(&out));
    let done = coordinator.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", stderr(&done));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let agents = doc["agents"]["agents"].as_array().unwrap();
    assert!(agents
        .iter()
        .all(|a| u(&a["subs"]) == 1 && a["status"] == "complete"));
    // Every request answered once, by one responder or the other: the probes that found the
    // service, and the 2,000.
    let answered = u(&doc["delivery"]["received"]);
    assert!(
        answered > 2000 && answered <= 2000 + probes,
        "{answered} for {probes} probes"
    );
    let ids: Vec<u64> = doc["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| u(&c["id"]))
        .collect();
    assert_eq!(ids, [0, 1], "responders with global ids");
    let errs = support::schema_errors(&doc);
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn a_connection_storm_on_two_agents_merges_into_one_conns_section_with_every_check_received() {
    let server = TestServer::start();
    // Shared-subject checks cannot be counted across agents: refused before any agent is
    // sought, in one line.
    let out = bin()
        .args([
            "conns",
            "--subscribe",
            "shared",
            "--server",
            &server.url,
            "--agents",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("--subscribe shared"), "{e}");

    let _a = Agent::start(&server.url, "c1", &[], &[]);
    let _b = Agent::start(&server.url, "c2", &[], &[]);
    let (out, doc, _d) = coordinate(&[
        "conns",
        "--clients",
        "400",
        "--subscribe",
        "own",
        "--hold",
        "2s",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let c = &doc["conns"];
    assert_eq!(u(&c["clients"]), 400, "{c}");
    assert_eq!(u(&c["connected"]), 400, "{c}");
    assert_eq!(u(&c["never_connected"]), 0, "{c}");
    assert_eq!(u(&c["up_at_end"]), 400, "{c}");
    assert_eq!(c["failures"], serde_json::json!({}), "{c}");
    assert!(c["connects_per_sec"].as_f64().unwrap() > 0.0, "{c}");
    // Memory is per host: null merged, each agent's in its own document.
    assert!(c["memory"]["rss_connected_bytes"].is_null(), "{c}");
    assert!(c["memory"]["buffers_end_bytes"].is_null(), "{c}");
    assert!(
        c["share"].is_null(),
        "the merged section is no agent's share"
    );

    let agents = doc["agents"]["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    let parts: Vec<&serde_json::Value> = agents.iter().map(|a| &a["result"]["conns"]).collect();
    for p in &parts {
        assert_eq!((u(&p["clients"]), u(&p["connected"])), (200, 200), "{p}");
        assert!(p["memory"]["buffers_end_bytes"].is_u64(), "{p}");
        assert!(p["share"]["hdr"]["total"].is_string(), "{p}");
    }
    // Every connection got every check sent to its subject: each agent's checker sent to its
    // own block, by global id.
    let k = &c["checks"];
    assert!(
        u(&k["published"]) >= 400,
        "a round to every connection at least: {k}"
    );
    assert_eq!(u(&k["expected"]), u(&k["published"]), "{k}");
    assert_eq!(u(&k["received"]), u(&k["expected"]), "{k}");
    assert_eq!(
        (u(&k["missed"]), u(&k["connections_missing"])),
        (0, 0),
        "{k}"
    );
    let sum = |f: &str| parts.iter().map(|p| u(&p["checks"][f])).sum::<u64>();
    assert_eq!(u(&k["published"]), sum("published"));
    assert_eq!(u(&k["received"]), sum("received"));

    // The whole first connect: the count adds up, the maximum is the larger of the agents',
    // and each percentile lies between the agents' (within the histogram's 3 digits).
    for phase in ["tcp", "handshake", "subscribe", "total"] {
        let m = &c["connect_latency"][phase];
        let of = |f: &str| -> Vec<f64> {
            parts
                .iter()
                .map(|p| p["connect_latency"][phase][f].as_f64().unwrap())
                .collect()
        };
        assert_eq!(u(&m["count"]), 400, "{phase}: {m}");
        assert_eq!(of("count").iter().sum::<f64>(), 400.0, "{phase}");
        let max = of("max_us").into_iter().fold(0.0, f64::max);
        assert_eq!(m["max_us"].as_f64().unwrap(), max, "{phase}: {m}");
        for q in ["p50_us", "p90_us", "p99_us"] {
            let (v, each) = (m[q].as_f64().unwrap(), of(q));
            let lo = each.iter().copied().fold(f64::MAX, f64::min);
            let hi = each.iter().copied().fold(0.0, f64::max);
            assert!(
                v >= lo * 0.99 && v <= hi * 1.01 + 1.0 && v <= max,
                "{phase} {q}: {v} not within the agents' {each:?}"
            );
        }
    }
    assert!(c["connect_latency"]["tls"].is_null());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Connections: 400 of 400 up"), "{text}");
    assert!(text.contains("Agents: c1 (0 pub, 200 sub"), "{text}");
    let errs = support::schema_errors(&doc);
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn a_slow_storm_on_agents_is_not_taken_for_a_hung_agent() {
    // 40 connections at 4/s open over about 10 s (paced: never sooner), before the 1 s hold:
    // past the hold plus the coordinator's slack for a silent agent (twice --agent-silence,
    // 6 s), which a run's length of the hold alone would leave it.
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "w1", &[], &[]);
    let _b = Agent::start(&server.url, "w2", &[], &[]);
    let (out, doc, _d) = coordinate(&[
        "conns",
        "--clients",
        "40",
        "--connect-rate",
        "4",
        "--timeout",
        "3s",
        "--agent-silence",
        "3s",
        "--hold",
        "1s",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let c = &doc["conns"];
    assert_eq!(
        (u(&c["connected"]), u(&c["never_connected"])),
        (40, 0),
        "{c}"
    );
    assert_eq!(
        c["connect_rate_target"].as_f64(),
        Some(4.0),
        "the whole run's rate"
    );
    for a in doc["agents"]["agents"].as_array().unwrap() {
        let r = &a["result"]["conns"]["connect_rate_target"];
        assert_eq!(r.as_f64(), Some(2.0), "each agent its share: {r}");
    }
}

#[test]
fn an_agent_that_fails_stops_the_others_and_the_run_exits_9() {
    let server = TestServer::start();
    let _a = Agent::start(&server.url, "e1", &[], &[]);
    let _b = Agent::start(&server.url, "e2", &[], &[]);
    // Only the publisher's agent checks the size against the server's limit and fails; the
    // subscriber's agent would wait for a start that never comes unless it is stopped.
    let started = Instant::now();
    let (out, doc, _d) = coordinate(&[
        "pubsub",
        "--pubs",
        "1",
        "--subs",
        "1",
        "--size",
        "2MiB",
        "--msgs",
        "10",
        "--timeout",
        "2s",
        "--server",
        &server.url,
        "--agents",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(9), "{}", stderr(&out));
    // A subscriber's agent left waiting for a start would hold the run for good: the bound
    // only guards against that hang.
    assert!(started.elapsed() < Duration::from_secs(60));
    let e = stderr(&out);
    assert!(e.contains("max_payload") && e.contains("e1"), "{e}");
    let agents = doc["agents"]["agents"].as_array().unwrap();
    assert_eq!(agents[0]["status"], "failed");
    assert!(agents[0]["reason"]
        .as_str()
        .unwrap()
        .contains("max_payload"));
    assert_eq!(doc["agents"]["missing"][0], "e1");
}

#[test]
fn an_agent_needs_a_trusted_key_or_says_it_runs_anything() {
    let server = TestServer::start();
    let out = bin()
        .args(["agent", "--control", &server.url, "--name", "n1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("--trust") && e.contains("--insecure-control"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
    let a = Agent::start(&server.url, "n2", &[], &[]);
    assert!(
        a.log().contains("warning: --insecure-control"),
        "{}",
        a.log()
    );
}

#[test]
fn an_agent_of_another_version_is_refused_before_anything_runs() {
    let server = TestServer::start();
    // A heartbeat as an agent of another version would send it, from the test's own connection.
    let hb = serde_json::json!({
        "name": "old1", "labels": {}, "version": "0.0.1", "plan_schema": "msgbench.plan/v1",
        "cores": 2, "free_memory_bytes": null, "busy": null, "signed_only": false
    })
    .to_string();
    let addr = server.url.trim_start_matches("nats://").to_string();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let beat = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            use std::io::Write;
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            write!(s, "CONNECT {{\"verbose\":false}}\r\n").unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                write!(s, "PUB msgbench.ctl.hb.old1 {}\r\n{hb}\r\n", hb.len()).unwrap();
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let out = bin()
        .args([
            "pub",
            "--msgs",
            "10",
            "--server",
            &server.url,
            "--agents",
            "old1",
        ])
        .output()
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    beat.join().unwrap();
    assert_eq!(out.status.code(), Some(9), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("old1 runs msgbench 0.0.1"), "{e}");
}

#[test]
fn two_agents_of_one_name_are_refused() {
    let server = TestServer::start();
    let a = Agent::start(&server.url, "twin", &[], &[]);
    assert!(a.log().contains("listening"));
    // A second process announcing the same name (forged from the test's own connection).
    let hb = serde_json::json!({
        "name": "twin", "instance": "someone-else", "labels": {}, "version": env!("CARGO_PKG_VERSION"),
        "plan_schema": "msgbench.plan/v1", "cores": 2, "free_memory_bytes": null, "busy": null,
        "signed_only": false
    })
    .to_string();
    let addr = server.url.trim_start_matches("nats://").to_string();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let beat = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            use std::io::Write;
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            write!(s, "CONNECT {{\"verbose\":false}}\r\n").unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                write!(s, "PUB msgbench.ctl.hb.twin {}\r\n{hb}\r\n", hb.len()).unwrap();
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let out = bin()
        .args([
            "pub",
            "--msgs",
            "10",
            "--server",
            &server.url,
            "--agents",
            "twin",
        ])
        .output()
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    beat.join().unwrap();
    assert_eq!(out.status.code(), Some(9), "{}", stderr(&out));
    assert!(stderr(&out).contains("are named twin"), "{}", stderr(&out));
}

#[test]
fn a_result_too_large_for_the_control_server_loses_its_timeline_first_then_fails_by_name() {
    // An agent's result here is over 6.5 KB with its timeline and about 6.2 KB without; the plan
    // and the progress reports are far smaller.
    let run = |max: &str| {
        let server = TestServer::with_config(&format!("max_payload: {max}"));
        let a = Agent::start(&server.url, "big1", &[], &[]);
        let started = Instant::now();
        let (out, doc, _d) = coordinate(&[
            "pubsub",
            "--pubs",
            "8",
            "--subs",
            "8",
            "--msgs",
            "100",
            "--size",
            "16",
            "--server",
            &server.url,
            "--agents",
            "1",
        ]);
        // A coordinator waiting for a result that cannot come would wait for good: the bound
        // only guards against that hang.
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the coordinator waited on"
        );
        // The agent's last line of the run: every line before it has been read too.
        assert!(a.wait_for(" ended", support::HANG), "{}", a.log());
        (out, doc, a.log())
    };
    let (out, doc, log) = run("6656");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(log.contains("without its timeline"), "{log}");
    assert!(doc["agents"]["agents"][0]["result"]["timeline"].is_null());
    assert_eq!(u(&doc["delivery"]["received"]), 6400);

    let (out, doc, _) = run("3072");
    assert_eq!(out.status.code(), Some(9), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot send the result"),
        "{}",
        stderr(&out)
    );
    assert_eq!(doc["agents"]["agents"][0]["status"], "failed");
}

#[test]
fn a_hung_agent_is_named_and_the_run_ends_within_its_timeout() {
    let server = TestServer::start();
    let a = Agent::start(&server.url, "h1", &[], &[]);
    let _b = Agent::start(&server.url, "h2", &[], &[]);
    let mut coord = bin()
        .args([
            "pubsub",
            "--pubs",
            "1",
            "--subs",
            "1",
            "--rate",
            "1000",
            "--duration",
            "60s",
            "--agent-silence",
            "4s",
            "--server",
            &server.url,
            "--agents",
            "h1,h2",
            "--live",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(a.wait_for("accepted plan", support::HANG), "{}", a.log());
    // Frozen once the run is under way (the coordinator shows h1's first second), not after a
    // fixed time a busy machine could spend before the start.
    let (seen, rest) = support::stderr_until(&mut coord, "] h1 ");
    // Frozen, not dead: its connections stay open, nothing it sends arrives.
    let pid = a.child.id() as libc::pid_t;
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
    }
    let frozen = Instant::now();
    let out = coord.wait_with_output().unwrap();
    unsafe {
        libc::kill(pid, libc::SIGCONT);
    }
    let err = support::rest_of_stderr(seen, rest);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(err.contains("agent h1 has been silent"), "{err}");
    // Silence is noticed after --agent-silence (4 s), and h1 is given up after as long again:
    // seconds, where a coordinator that missed it would wait for the rest of the 60 s
    // schedule. Half of it tells the two apart.
    assert!(
        frozen.elapsed() < Duration::from_secs(30),
        "{:?}",
        frozen.elapsed()
    );
}
