//! `--link`: the proxy inside msgbench that delays, jitters and caps the link to a real
//! nats-server. The delay measured end to end matches the configured one, a bandwidth cap
//! holds, jitter never reorders messages, and the result names the server behind the proxy.

use crate::support::{run, run_json, schema_errors, schema_errors_in, stderr, u, TestServer};

/// The most a median may be, for a configured delay: the delay, plus the path's own latency
/// and the proxy's sleeps waking late on a busy 2-core machine, allowed as much again. A delay
/// applied twice would put every message, the fastest too, at twice the delay or more; below
/// the delay itself nothing may fall. The delays below are tens of milliseconds, so that the
/// few a busy machine adds (6 ms to the median with one core shared by two spinning loops) are
/// far from the bound.
fn median_bound_ns(delay_ns: u64) -> u64 {
    2 * delay_ns
}

#[test]
fn the_measured_delay_is_the_configured_one() {
    let s = TestServer::start();
    // One hop is publisher → server (up) and server → subscriber (down): 20 ms each way.
    let (out, v) = run_json(&[
        "latency",
        "--server",
        &s.url,
        "--rate",
        "400",
        "--duration",
        "2s",
        "--warmup",
        "200ms",
        "--link",
        "delay=20ms",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let lat = &v["latency_uncorrected"];
    let (min, p50) = (u(&lat["min_ns"]), u(&lat["percentiles_ns"]["50"]));
    assert!(
        min >= 40_000_000,
        "no message can beat 2 × 20 ms: min {min} ns"
    );
    assert!(p50 < median_bound_ns(40_000_000), "median {p50} ns");
    let link = &v["link"];
    assert_eq!(link["via"], "proxy");
    assert_eq!(u(&link["up"]["delay_ns"]), 20_000_000);
    assert_eq!(u(&link["down"]["delay_ns"]), 20_000_000);
    // The result names the server, not the proxy in front of it.
    assert_eq!(v["server"]["url"], s.url.as_str());
    assert_eq!(link["servers"][0], s.url.as_str());
    assert!(link["proxy_added_rtt_ns"].is_i64());
    assert!(
        stderr(&out).contains("Link: delay 20ms each way"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn one_direction_only_delays_that_direction() {
    let s = TestServer::start();
    // Only client → server is delayed: the one hop crosses it once.
    let (out, v) = run_json(&[
        "latency",
        "--server",
        &s.url,
        "--rate",
        "400",
        "--duration",
        "2s",
        "--warmup",
        "200ms",
        "--link",
        "up:delay=25ms",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lat = &v["latency_uncorrected"];
    let (min, p50) = (u(&lat["min_ns"]), u(&lat["percentiles_ns"]["50"]));
    assert!(min >= 25_000_000, "min {min} ns");
    assert!(p50 < median_bound_ns(25_000_000), "median {p50} ns");
    assert_eq!(u(&v["link"]["down"]["delay_ns"]), 0);
}

#[test]
fn a_bandwidth_cap_holds() {
    let s = TestServer::start();
    // 8 Mbit/s is 1 MB/s: 2.5 MB of payload cannot arrive faster than in 2.5 s.
    let (out, v) = run_json(&[
        "pub",
        "--server",
        &s.url,
        "--size",
        "1000",
        "--msgs",
        "2500",
        "--link",
        "up:rate=8mbit",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let bps = v["throughput"]["bytes_per_sec"].as_f64().unwrap();
    assert!(bps <= 1_000_000.0 * 1.02, "{bps} B/s through a 1 MB/s link");
    // And the link is not much slower than its cap either: a quarter of it is 10 s for what
    // takes 2.5 s, room for any busy machine, while a cap read as bits per byte or applied per
    // message would be eight times or more too slow.
    assert!(bps >= 250_000.0, "{bps} B/s");
}

#[test]
fn jitter_never_reorders_messages() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "pubsub",
        "--server",
        &s.url,
        "--msgs",
        "20000",
        "--size",
        "16",
        "--rate",
        "10000",
        "--link",
        "delay=2ms,jitter=2ms",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = &v["delivery"];
    assert_eq!(d["accounting"], "exact");
    assert_eq!(u(&d["received"]), 20_000, "{d}");
    assert_eq!(u(&d["reordered"]), 0, "{d}");
    assert_eq!(u(&d["duplicated"]), 0, "{d}");
    assert_eq!(u(&v["link"]["up"]["jitter_ns"]), 2_000_000);
}

#[test]
fn calibrate_reports_what_the_proxy_adds() {
    let s = TestServer::start();
    let out = run(&[
        "calibrate",
        "--server",
        &s.url,
        "--samples",
        "300",
        "--link",
        "delay=2ms",
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        schema_errors_in("calibration-v1.schema.json", &v),
        Vec::<String>::new()
    );
    assert!(v["link"]["proxy_added_rtt_ns"].is_i64(), "{}", v["link"]);
    assert_eq!(v["server"]["url"], s.url.as_str());
    // The server round trips went over the link: one hop crosses 2 ms twice.
    assert!(u(&v["environment"]["floor_ns"]["one_hop"]["min"]) >= 4_000_000);
    // The loopback echo does not involve the server, nor the link: through the link no echo
    // could take under 4 ms, and of 300 at least the fastest does on any machine.
    assert!(u(&v["environment"]["floor_ns"]["tcp"]["min"]) < 4_000_000);
    // A measured cost is told as what it is: a cost, or below zero within the noise.
    let wording = if v["link"]["proxy_added_rtt_ns"].as_i64().unwrap() >= 0 {
        "to a round trip by itself"
    } else {
        "below zero"
    };
    assert!(stderr(&out).contains(wording), "{}", stderr(&out));
}

#[test]
fn bad_link_specs_name_the_flag() {
    for (spec, needle) in [
        ("delay", "not key=value"),
        ("lag=1ms", "unknown item"),
        ("rate=5", "give a unit"),
        ("left:delay=1ms", "not a direction"),
    ] {
        let out = run(&["pub", "--link", spec]);
        assert_eq!(out.status.code(), Some(2), "{spec}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("--link") && err.contains(needle),
            "{spec}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}
