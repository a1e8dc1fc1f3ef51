//! The server's side of a run against real nats-servers: a server msgbench starts is sampled
//! on the timeline without being asked; a user's server through `--server-monitor`, on any
//! NATS scenario; an endpoint that is not a NATS monitor is refused in one line before the
//! load; one that does not answer is one warning and null figures, never a failed run; the
//! credentials in a monitor URL reach no output.

use crate::support::{bin, run, run_json, schema_errors, scratch_dir, stderr, u, TestServer};

/// Every server point of a result's ticks.
fn points(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    v["timeline"]["ticks"]
        .as_array()
        .expect("a timeline")
        .iter()
        .filter_map(|t| t["server"]["servers"].as_array())
        .flatten()
        .collect()
}

/// A loopback port nothing listens on.
fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn a_server_msgbench_starts_is_sampled_on_the_timeline() {
    let dir = scratch_dir("server-csv");
    let csv = dir.join("run.csv");
    let (out, v) = run_json(&[
        "pub",
        "--duration",
        "3s",
        "--size",
        "64",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let side = &v["server_side"]["servers"][0];
    assert_eq!(side["name"], "msgbench-0", "{side}");
    assert_eq!(side["monitor"], "started");
    assert!(
        u(&side["answered"]) >= 3,
        "one reading a second at least: {side}"
    );
    assert!(
        u(&side["readings"]) <= 6,
        "about one reading a second over 3 s: {side}"
    );
    let pts = points(&v);
    assert!(pts.len() >= 3, "a server point in each tick: {}", pts.len());
    assert!(pts
        .iter()
        .all(|p| p["up"] == true && p["mem_bytes"].as_u64() > Some(0)));
    // The server counted the publisher's messages coming in.
    let most_in = pts
        .iter()
        .filter_map(|p| p["in_msgs_per_sec"].as_f64())
        .fold(0.0, f64::max);
    assert!(most_in > 0.0, "the server saw messages come in");
    let text = stderr(&out);
    assert!(
        text.contains("Server msgbench-0 (nats-server "),
        "the text report names the server: {text}"
    );
    assert!(text.contains("Server events: none seen"), "{text}");

    // The same samples beside the --csv file, one row per reading and figure: each reading of
    // the JSON's ticks once, its CPU and incoming rate as the JSON has them.
    let rows = std::fs::read_to_string(dir.join("run.servers.csv")).expect("the servers' CSV");
    let mut lines = rows.lines();
    assert_eq!(lines.next(), Some("t_s,kind,name,figure,value"));
    let cells: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let mut readings: Vec<&serde_json::Value> = v["timeline"]["ticks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["server"])
        .filter(|s| !s.is_null())
        .collect();
    readings.dedup_by(|a, b| a["t_s"] == b["t_s"]);
    let cpu_rows: Vec<&Vec<&str>> = cells
        .iter()
        .filter(|c| c[1] == "server" && c[2] == "msgbench-0" && c[3] == "cpu_pct")
        .collect();
    assert_eq!(cpu_rows.len(), readings.len(), "{rows}");
    for (row, r) in cpu_rows.iter().zip(&readings) {
        let at: f64 = row[0].parse().unwrap();
        assert!((at - r["t_s"].as_f64().unwrap()).abs() < 0.001, "{row:?}");
        let cpu = r["servers"][0]["cpu_pct"].as_f64();
        assert_eq!(
            row[4].parse::<f64>().ok().map(|c| c.round()),
            cpu.map(f64::round)
        );
    }
    let incoming: f64 = cells
        .iter()
        .filter(|c| c[1] == "server" && c[3] == "in_msgs_per_sec")
        .filter_map(|c| c[4].parse::<f64>().ok())
        .fold(0.0, f64::max);
    assert!(
        (incoming - most_in).abs() < 0.01,
        "{incoming} against {most_in}"
    );
}

#[test]
fn a_users_server_is_sampled_on_every_nats_scenario() {
    let s = TestServer::start();
    let mon = s.monitor_url();
    for scenario in [&["pub"][..], &["pubsub"][..], &["js", "pub"][..]] {
        let mut args = scenario.to_vec();
        args.extend([
            "--server",
            &s.url,
            "--server-monitor",
            &mon,
            "--duration",
            "2s",
            "--size",
            "64",
        ]);
        let (out, v) = run_json(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(schema_errors(&v), Vec::<String>::new(), "{args:?}");
        let side = &v["server_side"]["servers"];
        assert_eq!(side.as_array().unwrap().len(), 1, "{args:?}: {side}");
        assert_eq!(side[0]["monitor"], mon.as_str());
        assert!(u(&side[0]["answered"]) >= 2, "{args:?}: {side}");
        let pts = points(&v);
        assert!(
            pts.iter()
                .filter_map(|p| p["in_msgs_per_sec"].as_f64())
                .any(|r| r > 0.0),
            "{args:?}: the server's traffic in the ticks"
        );
        if scenario[0] == "js" {
            let streams: Vec<&serde_json::Value> = v["timeline"]["ticks"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|t| t["server"]["streams"].as_array())
                .flatten()
                .collect();
            assert!(
                streams.iter().any(|st| u(&st["msgs"]) > 0),
                "the stream's messages in the ticks"
            );
        }
    }
}

#[test]
fn an_endpoint_that_is_not_a_nats_monitor_is_refused_before_the_load() {
    let s = TestServer::start();
    let not_found = format!("{}/nothing-here", s.monitor_url());
    for (url, why) in [
        (not_found.as_str(), "404"),
        ("ftp://127.0.0.1:21", "http"),
        ("127.0.0.1:8222", "http"),
    ] {
        let out = run(&[
            "pub",
            "--server",
            &s.url,
            "--server-monitor",
            url,
            "--duration",
            "1s",
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{url}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{url}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains("--server-monitor") && err.contains(why),
            "{url}: {err}"
        );
    }
}

#[test]
fn a_monitor_that_does_not_answer_is_one_warning_and_null_figures_and_no_event_count() {
    let s = TestServer::start();
    let url = format!("http://127.0.0.1:{}", dead_port());
    let (out, v) = run_json(&[
        "pub",
        "--server",
        &s.url,
        "--server-monitor",
        &url,
        "--duration",
        "2s",
        "--threshold",
        "server_events==0",
    ]);
    let err = stderr(&out);
    // Events on a server never read are not "none": the gate fails as not measured.
    assert_eq!(out.status.code(), Some(8), "{err}");
    assert!(
        err.contains("FAIL server_events==0 (not measured: a server's monitor never answered"),
        "{err}"
    );
    assert!(
        err.contains("Server events: not known (never read: "),
        "{err}"
    );
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains(&url), "{err}");
    let pts = points(&v);
    assert!(!pts.is_empty());
    assert!(
        pts.iter()
            .all(|p| p["up"] == false && p["cpu_pct"].is_null() && p["mem_bytes"].is_null()),
        "null, never 0: {pts:?}"
    );
    assert_eq!(u(&v["server_side"]["servers"][0]["answered"]), 0);
    assert!(u(&v["throughput"]["msgs"]) > 0, "the load went on");
    assert_eq!(v["thresholds"][0]["measured"], serde_json::Value::Null);
}

#[test]
fn credentials_in_a_monitor_url_reach_no_output() {
    let s = TestServer::start();
    let port = s.monitor_url().rsplit(':').next().unwrap().to_string();
    let dir = crate::support::scratch_dir("srv-secret");
    let csv = dir.join("t.csv");
    for url in [
        format!("http://alice:s3cr3t-pw@127.0.0.1:{port}"),
        format!("http://s3cr3t-pw@127.0.0.1:{port}"),
        format!("http://alice:s3cr3t-pw@127.0.0.1:{}", dead_port()),
        format!("http://alice:s3cr3t-pw@127.0.0.1:{port}/nothing-here"),
    ] {
        let out = bin()
            .args([
                "pub",
                "--server",
                &s.url,
                "--server-monitor",
                &url,
                "--duration",
                "1s",
                "--json",
                "-",
                "--csv",
                csv.to_str().unwrap(),
                "--no-progress",
            ])
            .output()
            .unwrap();
        let all = format!(
            "{}{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&csv).unwrap_or_default()
        );
        assert!(!all.contains("s3cr3t"), "{url}: {all}");
        assert!(
            all.contains("127.0.0.1"),
            "the endpoint is still named: {all}"
        );
    }
}

#[test]
fn grpc_refuses_a_server_monitor_in_one_line() {
    let out = run(&[
        "grpc",
        "--server-monitor",
        "http://127.0.0.1:8222",
        "--duration",
        "1s",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--server-monitor"), "{err}");
}

#[test]
fn a_paced_run_well_below_capacity_names_nothing_with_its_headroom() {
    let (out, v) = run_json(&["pub", "--rate", "2000", "--duration", "3s"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let l = &v["limit"];
    assert_eq!(l["kind"], "none", "{l}");
    let headroom = l["headroom_pct"].as_f64().expect("a headroom");
    assert!(headroom > 0.0 && headroom <= 100.0, "{l}");
    let text = stderr(&out);
    assert!(
        text.lines()
            .any(|x| x.starts_with("Limit: nothing: 2,000/s asked and met")),
        "{text}"
    );
}

#[test]
fn a_run_behind_a_narrow_link_names_the_link() {
    let (out, v) = run_json(&[
        "pub",
        "--link",
        "rate=80mbit",
        "--size",
        "16384",
        "--duration",
        "4s",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let l = &v["limit"];
    assert_eq!(l["kind"], "link", "{l}");
    assert!(l["text"].as_str().unwrap().contains("80 Mbit/s"), "{l}");
}

#[test]
fn a_restart_of_the_server_is_an_event_with_the_figures_around_it() {
    let (out, v) = run_json(&[
        "pubsub",
        "--fault",
        "restart@2s",
        "--reconnect",
        "--rate",
        "2000",
        "--duration",
        "5s",
    ]);
    let err = stderr(&out);
    assert!(out.status.code().is_some(), "{err}");
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let events = v["server_side"]["events"].as_array().unwrap();
    let restarts: Vec<_> = events
        .iter()
        .filter(|e| e["kind"] == "server_restart")
        .collect();
    assert_eq!(restarts.len(), 1, "{events:?}");
    let e = restarts[0];
    // Injected at 2 s of the load: seen at the first reading after it, placed after the last
    // reading before it.
    let injected = v["fault"]["injected_at_ns"].as_f64().unwrap() / 1e9
        + v["timeline"]["load_start_s"].as_f64().unwrap_or(0.0);
    assert!(
        e["since_s"].as_f64().unwrap() <= injected + 1.5
            && e["t_s"].as_f64().unwrap() >= injected - 0.5,
        "{e} against {injected}"
    );
    assert!(e["before"]["msgs_per_sec"].as_f64().unwrap() > 0.0, "{e}");
    assert!(
        err.contains("Server events (") && err.contains("server restart: msgbench-0"),
        "{err}"
    );
}

#[test]
fn a_users_server_over_https_is_sampled_and_the_password_is_in_no_output() {
    use crate::tls::{tls_block, Pki};
    let pki = Pki::new("srv-https");
    let ca = pki.ca("ca");
    pki.leaf("server", &["127.0.0.1", "localhost"], &ca);
    // The test server's plain monitoring port cannot sit beside an HTTPS one: this server is
    // started here, on ports of its own, and killed when the test ends.
    let (nats, https) = (dead_port(), dead_port());
    let conf = pki.path("server.conf");
    std::fs::write(
        &conf,
        format!(
            "listen: 127.0.0.1:{nats}\nhttps: 127.0.0.1:{https}\n{}\n",
            tls_block(&pki, "server", "")
        ),
    )
    .unwrap();
    let binary = msgbench::server::find_binary(None).expect("nats-server");
    let child = std::process::Command::new(binary)
        .args(["-c", &conf])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _server = Killed(child);
    // It listens on both ports once it has started: wait for them, within a bound.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    for port in [nats, https] {
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "port {port} never listened"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let mon = format!("https://alice:s3cr3t-pw@127.0.0.1:{https}");
    let out = bin()
        .args([
            "pub",
            "--server",
            &format!("tls://127.0.0.1:{nats}"),
            "--tls-ca",
            &pki.path("ca.pem"),
            "--server-monitor",
            &mon,
            "--duration",
            "2s",
            "--json",
            "-",
            "--no-progress",
        ])
        .output()
        .unwrap();
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{se}");
    assert!(!so.contains("s3cr3t") && !se.contains("s3cr3t"), "{so}{se}");
    let v: serde_json::Value = serde_json::from_str(&so).unwrap();
    let side = &v["server_side"]["servers"][0];
    assert_eq!(side["monitor"], format!("https://127.0.0.1:{https}"));
    assert!(u(&side["answered"]) >= 2, "read over verified TLS: {side}");
    // Figures read over it (not CPU: a server this young still reports 0, which is no figure).
    assert!(points(&v)
        .iter()
        .any(|p| p["connections"].is_number() && p["mem_bytes"].is_number()));
}

#[test]
fn a_subscriber_that_cannot_keep_up_is_a_slow_consumer_event_where_its_loss_starts() {
    // A small pending limit and write deadline: the server cuts off the subscriber within a
    // second of its stall (as in agents.rs), counting it as a slow consumer.
    let s = TestServer::with_config(
        "max_pending: 256KB\nmax_payload: 64KB\nwrite_deadline: \"500ms\"\n",
    );
    let mon = s.monitor_url();
    let (out, v) = run_json(&[
        "pubsub",
        "--server",
        &s.url,
        "--server-monitor",
        &mon,
        "--rate",
        "20000",
        "--duration",
        "6s",
        "--size",
        "512",
        "--sub-stall",
        "20000:3s",
        "--allow-loss",
        "--reconnect",
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert!(u(&v["delivery"]["lost"]) > 0, "{}", v["delivery"]);
    let events = v["server_side"]["events"].as_array().unwrap();
    let slow: Vec<_> = events
        .iter()
        .filter(|e| e["kind"] == "slow_consumer")
        .collect();
    assert!(!slow.is_empty(), "{events:?}");
    // msgbench's own loss starts where its subscriber stopped receiving: the first interval
    // of the timeline in which it received under half of what was sent. (The disconnection
    // itself is counted only when the stalled subscriber reads again, seconds later.) The
    // server's event lies between the reading before it and the one that showed it; the two
    // spans meet, to a reading's own length and the time a reading may take.
    let cut = v["timeline"]["ticks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["received_per_sec"].as_f64().unwrap() < 0.5 * t["sent_per_sec"].as_f64().unwrap()
        })
        .expect("an interval in which the subscriber fell behind");
    let (end, start) = (
        cut["t_s"].as_f64().unwrap(),
        cut["t_s"].as_f64().unwrap() - cut["span_s"].as_f64().unwrap(),
    );
    let e = slow[0];
    let (since, at) = (e["since_s"].as_f64().unwrap(), e["t_s"].as_f64().unwrap());
    assert!(
        since <= end + 1.5 && at >= start - 1.5,
        "the event {e} against the interval {start}–{end} s where the loss began"
    );
    assert!(err.contains("slow consumer: "), "{err}");
}
