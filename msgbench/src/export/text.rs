//! The human report, laid out like `nats bench`: the aggregate line, then per role the role's
//! line, one line per client and the spread of client rates; then delivery, loudly when
//! anything was lost, and errors.

use std::fmt::Write;

use super::Exporter;
use crate::result::{RoleStats, RunResult};
use crate::stats::throughput::Throughput;

pub struct Text;

impl Exporter for Text {
    fn serialize(&self, r: &RunResult) -> Vec<u8> {
        let mut o = String::new();
        let embedded = if r.server.embedded { ", embedded" } else { "" };
        if r.scenario == "grpc" {
            let server = if r.server.embedded {
                " (msgbench grpc serve, in process)"
            } else {
                ""
            };
            let _ = writeln!(
                o,
                "msgbench grpc against {}{server}: {}",
                r.server.url,
                grpc_shape(&r.params)
            );
        } else {
            let _ = writeln!(
                o,
                "msgbench {} against {} (nats-server {}{embedded}): {}",
                r.scenario,
                r.server.url,
                r.server.version,
                shape(r.scenario, &r.params)
            );
        }
        let title = match r.scenario {
            "pub" => "NATS Core publisher stats",
            "sub" => "NATS Core subscriber stats",
            "latency" => "NATS latency run",
            "request" => "NATS request/reply stats",
            "reply" => "NATS reply service stats",
            "js.pub" => "NATS JetStream publish stats",
            "js.consume" => "NATS JetStream consume stats",
            "kv.put" => "NATS KV put stats",
            "kv.get" => "NATS KV get stats",
            "grpc" => "gRPC requests answered OK",
            _ => "NATS Pub/Sub stats",
        };
        if let Some(l) = &r.link {
            let _ = writeln!(
                o,
                "Link: {} (a {} in msgbench; {})",
                l.spec,
                l.via,
                proxy_cost(l.proxy_added_rtt_ns)
            );
        }
        if let Some(c) = &r.cluster {
            let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
            let sides = match &r.server_b {
                Some(b) => format!("publisher on {}, subscriber on {}", r.server.name, b.name),
                None => format!("clients on {}", r.server.name),
            };
            let _ = writeln!(
                o,
                "Cluster: {} local nodes routed together ({}); {sides}",
                c.nodes.len(),
                names.join(", ")
            );
        }
        let _ = writeln!(o, "{title}: {}", rate_line(&r.throughput));
        for (role, stats) in &r.by_role {
            if r.by_role.len() > 1 {
                let name = match (r.scenario, *role) {
                    ("request", "pub") => "Requests",
                    ("request", _) => "Replies",
                    ("js.pub" | "js.consume", "pub") => "Publishes",
                    ("kv.put", "pub") => "Puts",
                    ("js.pub" | "kv.put", _) => "Acks",
                    ("js.consume", _) => "Consumed",
                    ("kv.get", "pub") => "Gets",
                    ("kv.get", _) => "Values",
                    (_, "pub") => "Pub stats",
                    _ => "Sub stats",
                };
                let _ = writeln!(o, " {name}: {}", rate_line(&stats.throughput));
            }
            role_detail(&mut o, r, role, stats);
        }
        latency(&mut o, r);
        pacing(&mut o, r);
        runs(&mut o, r);
        if r.grpc.is_some() {
            grpc(&mut o, r);
        } else {
            delivery(&mut o, r);
        }
        jetstream(&mut o, r);
        consumer(&mut o, r);
        if !r.errors.is_empty() {
            let list: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
            let _ = writeln!(o, "Errors: {}", list.join(", "));
        }
        connections(&mut o, r);
        thresholds(&mut o, r);
        if r.interrupted {
            let _ = writeln!(o, "Interrupted: these are partial results.");
        }
        o.into_bytes()
    }
}

/// The reconciliation of acknowledgements with the streams.
fn jetstream(o: &mut String, r: &RunResult) {
    let Some(js) = &r.jetstream else { return };
    let line = |st: &crate::scenario::js::StreamReport| {
        let stored = if st.stored == 0 {
            "nothing new stored".to_string()
        } else {
            format!(
                "stream sequences {}–{} stored",
                group(st.before.last_seq + 1),
                group(st.after.last_seq)
            )
        };
        format!(
            "{} acknowledged, {stored}, now {} messages",
            group(st.acked),
            group(st.after.messages)
        )
    };
    match js.streams.as_slice() {
        [one] => {
            let _ = writeln!(
                o,
                "JetStream: stream {} ({}, {} publish): {}",
                one.name,
                js.storage,
                js.mode,
                line(one)
            );
        }
        many => {
            let _ = writeln!(
                o,
                "JetStream: {} streams ({}, {} publish): {} acknowledged, {} stored",
                many.len(),
                js.storage,
                js.mode,
                group(js.acked),
                group(js.stored)
            );
            for st in many {
                let _ = writeln!(o, "  {}: {}", st.name, line(st));
            }
        }
    }
    if js.deduplicated > 0 {
        let _ = writeln!(
            o,
            "Deduplicated: {} publishes carried a message id the stream already had, and were \
             not stored again",
            group(js.deduplicated)
        );
    }
    if js.reconciled {
        let _ = writeln!(
            o,
            "Reconciled: every stored message was acknowledged exactly once"
        );
        return;
    }
    for st in js.streams.iter().filter(|s| !s.reconciled) {
        let first = if st.unacked_seqs.is_empty() {
            String::new()
        } else {
            let seqs: Vec<String> = st.unacked_seqs.iter().map(u64::to_string).collect();
            format!(" (first: {})", seqs.join(", "))
        };
        let _ = writeln!(
            o,
            "!! NOT RECONCILED: stream {}: {} stored, {} acknowledged, {} duplicate \
             acknowledgements, {} stored without an acknowledgement{first} !!",
            st.name,
            group(st.stored),
            group(st.acked),
            group(st.duplicate_acks),
            group(st.unacked_stored),
        );
    }
}

/// Each `--threshold` with what was measured, and the count that passed.
fn thresholds(o: &mut String, r: &RunResult) {
    if r.thresholds.is_empty() {
        return;
    }
    let passed = r.thresholds.iter().filter(|t| t.pass).count();
    let _ = writeln!(o, "Thresholds: {passed} of {} passed", r.thresholds.len());
    for t in &r.thresholds {
        let measured = match (t.measured, t.latency) {
            (Some(v), true) => format!("measured {}", duration_ns(v)),
            (Some(v), false) if v.fract() == 0.0 && v.abs() < 1e15 => {
                format!("measured {}", group(v as u64))
            }
            (Some(v), false) => format!("measured {v:.1}"),
            (None, _) => format!("not measured: {}", t.why.unwrap_or("no value")),
        };
        let verdict = if t.pass { "PASS" } else { "FAIL" };
        let _ = writeln!(o, "  {verdict} {} ({measured})", t.expr);
    }
}

/// How the consumers pulled, and whether every message owed to them arrived exactly once.
fn consumer(o: &mut String, r: &RunResult) {
    let Some(c) = &r.consumer else { return };
    let _ = writeln!(
        o,
        "Consumer {} on stream {}: {} pull requests, {} acks sent, {} redelivered, ended {}",
        c.consumer,
        c.stream,
        group(c.pull_requests),
        group(c.acks_sent),
        group(c.redelivered),
        c.ended
    );
    let list = |seqs: &Option<Vec<u64>>| {
        seqs.as_ref()
            .filter(|s| !s.is_empty())
            .map(|s| {
                let s: Vec<String> = s.iter().map(u64::to_string).collect();
                format!(" (first: {})", s.join(", "))
            })
            .unwrap_or_default()
    };
    if c.reconciled {
        let _ = writeln!(
            o,
            "Reconciled: all {} expected stream messages were consumed exactly once",
            group(c.expected)
        );
        return;
    }
    let d = &r.delivery;
    let _ = writeln!(
        o,
        "!! NOT RECONCILED: {} of {} expected messages never consumed{}, {} consumed twice{}, \
         {} breaks in the ordered sequence !!",
        group(d.lost),
        group(c.expected),
        list(&d.missing_seqs),
        group(d.duplicated.unwrap_or(0)),
        list(&d.duplicate_seqs),
        group(c.sequence_breaks)
    );
}

/// Lost and replaced connections, the injected fault with its recovery, and the failure that
/// ended the run; nothing when every connection simply lasted.
fn connections(o: &mut String, r: &RunResult) {
    let c = &r.connections;
    if c.lost > 0 || c.reconnects > 0 || c.gave_up > 0 {
        let times: Vec<String> = c
            .reconnect_ns
            .iter()
            .take(5)
            .map(|ns| duration_ns(*ns as f64))
            .collect();
        let more = if c.reconnect_ns.len() > 5 {
            ", …"
        } else {
            ""
        };
        let times = if times.is_empty() {
            String::new()
        } else {
            format!(" (in {}{more})", times.join(", "))
        };
        let _ = writeln!(
            o,
            "Connections: {} lost, {} reconnected{times}, {} gave up",
            c.lost, c.reconnects, c.gave_up
        );
    }
    if let Some(f) = &r.fault {
        let hold = if f.spec.hold.is_zero() {
            String::new()
        } else {
            format!(" for {}", duration_ns(f.spec.hold.as_nanos() as f64))
        };
        let what = format!("{:?}", f.spec.kind).to_lowercase();
        match f.injected_at_ns {
            None => {
                let _ = writeln!(o, "Fault: {what} was not injected (the run ended first)");
            }
            Some(at) => {
                let since = |ns: Option<u64>| {
                    ns.map_or("never".to_string(), |n| {
                        format!("after {}", duration_ns(n as f64))
                    })
                };
                let _ = writeln!(
                    o,
                    "Fault: {what}{hold} at {}; first message sent after it delivered {}; \
                     rate back within 10% of {} msgs/s (for 1 s) {}",
                    duration_ns(at as f64),
                    since(f.first_delivery_ns),
                    group(f.target_rate as u64),
                    since(f.rate_recovered_ns),
                );
            }
        }
        if let Some(e) = &f.error {
            let _ = writeln!(o, "Fault error: {e}");
        }
    }
    if let Some(kind) = r.failure {
        let _ = writeln!(
            o,
            "!! FAILED: a connection was lost for good ({kind}); the figures above cover the run until then !!"
        );
    }
}

/// "2 pubs, 1 sub; 16 B messages; 1,000,000 per publisher at 10,000 msgs/s" from the
/// run's parameters.
fn shape(scenario: &str, p: &serde_json::Value) -> String {
    let n = |k: &str| p[k].as_u64().unwrap_or(0);
    let plural = |n: u64, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    let s = |k: &str| p[k].as_str().unwrap_or("").to_string();
    match scenario {
        "js.consume" => {
            let source = match s("publish").as_str() {
                "before" => format!("{} B messages published first", group(n("size"))),
                "live" => {
                    let rate = p["rate"].as_f64().unwrap_or(0.0);
                    let pace = if rate > 0.0 {
                        format!(" at {} msgs/s", group(rate.round() as u64))
                    } else {
                        String::new()
                    };
                    format!("{} B messages published live{pace}", group(n("size")))
                }
                _ => "the stream's messages".into(),
            };
            let acks = match s("ack").as_str() {
                "none" => "no acks".to_string(),
                a => format!("{a} acks"),
            };
            return format!(
                "{} mode, {acks}, batch {}; {}; {source}; {} messages",
                s("mode"),
                group(n("batch")),
                plural(n("subs"), "consumer"),
                group(n("msgs"))
            );
        }
        "kv.put" | "kv.get" => {
            let amount = match p["duration_secs"].as_f64() {
                Some(d) => format!("for {d} s"),
                None => format!("{} per client", group(n("msgs"))),
            };
            let size = if scenario == "kv.put" {
                format!("{} B values; ", group(n("size")))
            } else {
                String::new()
            };
            return format!(
                "bucket {}, {} {} keys, history {}; {}, {} in flight; {size}{amount}",
                s("bucket"),
                group(n("keys")),
                s("key_order"),
                n("history"),
                plural(n("pubs"), "client"),
                group(n("in_flight")),
            );
        }
        _ => {}
    }
    let (pubs, subs) = match scenario {
        "request" | "reply" => ("client", "responder"),
        _ => ("pub", "sub"),
    };
    let mut who = Vec::new();
    if n("pubs") > 0 {
        who.push(plural(n("pubs"), pubs));
    }
    if n("subs") > 0 {
        who.push(plural(n("subs"), subs));
    }
    let each = match scenario {
        "request" => "client",
        "reply" => "service",
        _ if n("pubs") > 0 => "publisher",
        _ => "subscriber",
    };
    let mut amount = match p["duration_secs"].as_f64() {
        Some(d) => format!("for {d} s"),
        None => format!("{} per {each}", group(n("msgs"))),
    };
    let rate = p["rate"].as_f64().unwrap_or(0.0);
    if rate > 0.0 {
        let _ = write!(amount, " at {} msgs/s", group(rate.round() as u64));
    }
    if n("pubs") == 0 {
        // A subscriber takes whatever size arrives; --size does not apply.
        return format!("{}; {amount}", who.join(", "));
    }
    format!(
        "{}; {} B messages; {amount}",
        who.join(", "),
        group(n("size"))
    )
}

fn rate_line(t: &Throughput) -> String {
    format!(
        "{} msgs/sec ~ {}/sec ~ {} msgs in {:.3} s",
        group(t.msgs_per_sec.round() as u64),
        ibytes(t.bytes_per_sec),
        group(t.msgs),
        t.seconds
    )
}

fn role_detail(o: &mut String, r: &RunResult, role: &str, stats: &RoleStats) {
    if stats.clients < 2 {
        return;
    }
    for c in r.clients.iter().filter(|c| c.role.as_str() == role) {
        let _ = writeln!(
            o,
            "  [{}] {} msgs/sec ~ {}/sec ({} msgs)",
            c.id + 1,
            group(c.msgs_per_sec.round() as u64),
            ibytes(c.bytes_per_sec),
            group(c.msgs)
        );
    }
    let s = &stats.client_rates;
    let _ = writeln!(
        o,
        "  min {} | avg {} | max {} | stddev {} msgs",
        group(s.min.round() as u64),
        group(s.avg.round() as u64),
        group(s.max.round() as u64),
        group(s.stddev.round() as u64)
    );
}

fn latency(o: &mut String, r: &RunResult) {
    let Some(c) = &r.latency else {
        if r.scenario == "js.consume" && r.params["publish"] != "live" {
            let _ = writeln!(
                o,
                "Latency: not measured: the messages were published before consuming began, \
                 so their send times give their age in the stream, not a latency \
                 (--publish live measures it)"
            );
        }
        return;
    };
    if let Some(rtt) = &r.rtt_ns {
        let _ = writeln!(
            o,
            "RTT: server A {}, server B {} (median of 5 PING/PONG before the run)",
            duration_ns(rtt.a as f64),
            duration_ns(rtt.b as f64)
        );
    }
    // Closed-loop request/reply has no schedule, so only one latency: the round trip.
    let u = r.latency_uncorrected.as_ref();
    match u {
        Some(_) => {
            let _ = writeln!(
                o,
                "Latency of {} messages, from intended send (corrected) and from actual send (uncorrected):",
                group(c.count)
            );
            let _ = writeln!(
                o,
                "  {:>10} {:>12} {:>12}",
                "percentile", "corrected", "uncorrected"
            );
        }
        None if r.scenario == "js.pub" || r.scenario == "kv.put" => {
            let what = match r.params["mode"].as_str() {
                Some("batch") => "batches (first message to the commit's PubAck)",
                _ if r.scenario == "kv.put" => "puts",
                _ => "publishes",
            };
            let _ = writeln!(
                o,
                "Latency from publish to PubAck, {} {what}:",
                group(c.count)
            );
            let _ = writeln!(o, "  {:>10} {:>12}", "percentile", "ack");
        }
        None if r.scenario == "js.consume" => {
            let _ = writeln!(
                o,
                "Latency from publish to consume (send time carried in the payload), {} \
                 messages:",
                group(c.count)
            );
            let _ = writeln!(o, "  {:>10} {:>12}", "percentile", "end to end");
        }
        None if r.scenario == "grpc" => {
            let what = match r.params["kind"].as_str() {
                Some("bidi") => "message to its reply",
                Some("client_streaming") => "message to its call's answer",
                Some("server_streaming") => "call to its last response",
                _ => "call",
            };
            let _ = writeln!(
                o,
                "Latency of each request ({what}), {} requests:",
                group(c.count)
            );
            let _ = writeln!(o, "  {:>10} {:>12}", "percentile", "latency");
        }
        None if r.scenario == "kv.get" => {
            let _ = writeln!(o, "Latency of each get, {} gets:", group(c.count));
            let _ = writeln!(o, "  {:>10} {:>12}", "percentile", "get");
        }
        None => {
            let _ = writeln!(o, "Round-trip latency of {} requests:", group(c.count));
            let _ = writeln!(o, "  {:>10} {:>12}", "percentile", "round trip");
        }
    }
    let row = |o: &mut String, name: String, ours: u64, theirs: Option<u64>| {
        let _ = match theirs {
            Some(t) => writeln!(
                o,
                "  {name:>10} {:>12} {:>12}",
                duration_ns(ours as f64),
                duration_ns(t as f64)
            ),
            None => writeln!(o, "  {name:>10} {:>12}", duration_ns(ours as f64)),
        };
    };
    for (key, value) in &c.percentiles_ns.0 {
        row(o, format!("P{key}"), *value, u.map(|u| u.at(key)));
    }
    row(o, "min".into(), c.min_ns, u.map(|u| u.min_ns));
    row(o, "median".into(), c.at("50"), u.map(|u| u.at("50")));
    row(o, "max".into(), c.max_ns, u.map(|u| u.max_ns));
}

/// How well a paced run kept its schedule, and a warning as loud as the loss warning when it
/// fell well short: then the tool or the machine, not the server, may have been the limit.
fn pacing(o: &mut String, r: &RunResult) {
    let Some(p) = &r.pacing else { return };
    let achieved = match (p.actual_rate, p.rate_error) {
        (Some(a), Some(e)) => format!(
            "{} msgs/s achieved of {} ({:+.3}%)",
            group(a.round() as u64),
            group(p.target_rate.round() as u64),
            e * 100.0
        ),
        _ => format!(
            "achieved rate not measured (too few sends) of {}",
            group(p.target_rate.round() as u64)
        ),
    };
    let _ = writeln!(
        o,
        "Pacing: {achieved}; send lag P50 {}, P99 {}, max {}; {} sends later than {}",
        duration_ns(p.send_lag_p50_ns as f64),
        duration_ns(p.send_lag_p99_ns as f64),
        duration_ns(p.send_lag_max_ns as f64),
        group(p.late_sends),
        duration_ns(p.late_bound_ns as f64)
    );
    if let (true, Some(short)) = (p.below_target, p.shortfall_pct) {
        let _ = writeln!(
            o,
            "!! RATE SHORTFALL: {short:.1}% below the target of {} msgs/s; msgbench or this \
             machine, not the server, may be the limit (see the send lag above) !!",
            group(p.target_rate.round() as u64)
        );
    }
}

/// What the link proxy adds to a round trip by itself, as measured before the run.
fn proxy_cost(added_ns: Option<i64>) -> String {
    match added_ns {
        None => "its own cost could not be measured".into(),
        Some(ns) if ns < 0 => format!(
            "its own cost measured {}, below zero: smaller than a round trip's noise",
            duration_ns_signed(ns)
        ),
        Some(ns) => format!(
            "it adds {} to a round trip by itself",
            duration_ns(ns as f64)
        ),
    }
}

fn duration_ns_signed(ns: i64) -> String {
    let s = duration_ns(ns.unsigned_abs() as f64);
    if ns < 0 {
        format!("-{s}")
    } else {
        s
    }
}

/// The floor as a table.
pub fn calibration(c: &crate::scenario::calibrate::Calibration) -> String {
    let mut o = String::new();
    let embedded = if c.server.embedded { ", embedded" } else { "" };
    let _ = writeln!(
        o,
        "msgbench calibrate against {} (nats-server {}{embedded}): {} round trips of {} B each, {} CPUs",
        c.server.url,
        c.server.version,
        group(c.environment.samples),
        c.environment.size,
        c.environment.cpus
    );
    if let Some(l) = &c.link {
        let _ = writeln!(
            o,
            "Link: {}; the server hops below go through it, and as for its proxy alone, {} \
             (median PING/PONG through it at zero delay, minus direct).",
            l.spec,
            proxy_cost(l.proxy_added_rtt_ns)
        );
    }
    let _ = writeln!(
        o,
        "  {:<38} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "round trip", "min", "P50", "P99", "P99.9", "max"
    );
    let f = &c.environment.floor_ns;
    for (name, r) in [
        ("loopback TCP, no server", &f.tcp),
        ("one hop: publish to own subscription", &f.one_hop),
        ("two hops: request and reply", &f.two_hop),
    ] {
        let _ = writeln!(
            o,
            "  {:<38} {:>10} {:>10} {:>10} {:>10} {:>10}",
            name,
            duration_ns(r.min as f64),
            duration_ns(r.p50 as f64),
            duration_ns(r.p99 as f64),
            duration_ns(r.p999 as f64),
            duration_ns(r.max as f64)
        );
    }
    o
}

/// The figures `--runs` prints as each run ends, and summarises per metric at the end.
const RUN_METRICS: [&str; 7] = [
    "msgs_per_sec",
    "p50",
    "p99",
    "p99.9",
    "max",
    "lost",
    "errors",
];

/// A metric's value as the text report writes it.
fn figure(name: &str, v: f64) -> String {
    match crate::metric::Metric::parse(name) {
        Ok(m) if m.is_latency() => duration_ns(v),
        _ => group(v.round() as u64),
    }
}

/// `run 2/5: 1,234,567 msgs/s, p99 1.23 ms, lost 0, errors 0`, as each of `--runs` ends.
pub fn run_line(k: u32, n: u32, r: &RunResult) -> String {
    let doc = serde_json::to_value(r).expect("a result serialises");
    let parts: Vec<String> = RUN_METRICS
        .iter()
        .filter(|m| !matches!(**m, "p50" | "p99.9" | "max"))
        .filter_map(|name| {
            let m = crate::metric::Metric::parse(name).ok()?;
            let v = m.read_one(&doc).ok()?;
            Some(match *name {
                "msgs_per_sec" => format!("{} msgs/s", figure(name, v)),
                _ => format!("{name} {}", figure(name, v)),
            })
        })
        .collect();
    format!("run {k}/{n}: {}", parts.join(", "))
}

/// The summary of `--runs`: median, range and spread of the headline figures.
fn runs(o: &mut String, r: &RunResult) {
    let Some(runs) = &r.runs else { return };
    let chosen = runs.representative_by.replace("msgs_per_sec", "msgs/s");
    let _ = writeln!(
        o,
        "Runs: {}; the figures above are run {}'s, the median by {chosen}",
        runs.n,
        runs.representative + 1
    );
    for name in RUN_METRICS {
        let Some(m) = runs.metrics.get(name) else {
            continue;
        };
        let spread = if m.median.abs() > 0.0 {
            format!(" ({:.1}%)", 100.0 * m.mad / m.median.abs())
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "  {:<13} median {:>12}   range {} – {}   MAD {}{spread}",
            name.replace("msgs_per_sec", "msgs/s"),
            figure(name, m.median),
            figure(name, m.min),
            figure(name, m.max),
            figure(name, m.mad),
        );
    }
}

/// 45_663 ns -> "45.7 µs"; 1_262_591 -> "1.26 ms".
pub fn duration_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

fn delivery(o: &mut String, r: &RunResult) {
    let d = &r.delivery;
    if d.accounting == "none" {
        // Nothing in this process subscribed, so delivery was not checked here; whoever
        // received (a `sub` or requesters elsewhere) counts it on their side.
        let line = if r.scenario == "reply" {
            format!(
                "Delivery: answered {} requests; the requesters count the round trips",
                group(d.received)
            )
        } else {
            format!(
                "Delivery: {} sent; not checked here (this run has no subscriber of its own)",
                group(d.sent)
            )
        };
        let _ = writeln!(o, "{line}");
        return;
    }
    let opt = |v: Option<u64>| v.map_or("unknown".to_string(), group);
    let _ = writeln!(
        o,
        "Delivery ({}): received {} of {} expected, lost {}, duplicated {}, reordered {}",
        d.accounting,
        group(d.received),
        group(d.expected),
        group(d.lost),
        opt(d.duplicated),
        opt(d.reordered)
    );
    if d.accounting == "count" {
        let _ = writeln!(
            o,
            "  messages carry no stamp (size < 16 B or --payload): loss is counted from totals"
        );
    }
    if d.lost > 0 {
        let pct = if d.expected > 0 {
            100.0 * d.lost as f64 / d.expected as f64
        } else {
            100.0
        };
        let _ = writeln!(
            o,
            "!! LOSS: {} of {} expected messages were not delivered ({pct:.2}%) !!",
            group(d.lost),
            group(d.expected)
        );
    }
}

/// "unary msgbench.log.v1.Log/Append; 1 client, 1 connection, 100 in flight; 20,000 per
/// client at 5,000 req/s".
fn grpc_shape(p: &serde_json::Value) -> String {
    let n = |k: &str| p[k].as_u64().unwrap_or(0);
    let plural = |n: u64, one: &str| format!("{} {one}{}", group(n), if n == 1 { "" } else { "s" });
    let mut amount = match p["duration_secs"].as_f64() {
        Some(d) => format!("for {d} s"),
        None => format!("{} per client", group(n("requests"))),
    };
    let rate = p["rate"].as_f64().unwrap_or(0.0);
    if rate > 0.0 {
        let _ = write!(amount, " at {} req/s", group(rate.round() as u64));
    }
    let streams = if n("streams") > 1 {
        format!("; {} streams", group(n("streams")))
    } else {
        String::new()
    };
    format!(
        "{} {}; {}, {}, {} in flight{streams}; {amount}",
        p["kind"].as_str().unwrap_or(""),
        p["call"].as_str().unwrap_or(""),
        plural(n("clients"), "client"),
        plural(n("connections"), "connection"),
        group(n("in_flight")),
    )
}

/// Calls by status, messages both ways, per-call latency of streaming methods, and a loud
/// line when requests failed.
fn grpc(o: &mut String, r: &RunResult) {
    let Some(g) = &r.grpc else { return };
    let status: Vec<String> = g
        .status
        .iter()
        .map(|(k, n)| format!("{k} {}", group(*n)))
        .collect();
    let _ = writeln!(
        o,
        "Calls: {} finished, {} OK; by status: {}",
        group(g.calls),
        group(g.calls_ok),
        if status.is_empty() {
            "none".into()
        } else {
            status.join(", ")
        }
    );
    let _ = writeln!(
        o,
        "Messages: sent {} ({}), received {} ({})",
        group(g.messages_sent),
        ibytes(g.bytes_sent as f64),
        group(g.messages_received),
        ibytes(g.bytes_received as f64)
    );
    for (name, l) in [
        ("Call latency", &g.call_latency),
        ("First response", &g.first_response),
    ] {
        if let Some(l) = l {
            let _ = writeln!(
                o,
                "{name}: P50 {}, P99 {}, max {} ({} calls)",
                duration_ns(l.at("50") as f64),
                duration_ns(l.at("99") as f64),
                duration_ns(l.max_ns as f64),
                group(l.count)
            );
        }
    }
    if g.template_errors > 0 {
        let _ = writeln!(
            o,
            "Template errors: {} messages could not be built and were skipped",
            group(g.template_errors)
        );
    }
    let failed = g.requests.saturating_sub(g.requests_ok);
    if failed > 0 {
        let pct = 100.0 * failed as f64 / g.requests.max(1) as f64;
        let _ = writeln!(
            o,
            "!! FAILED: {} of {} requests were not answered OK ({pct:.2}%) !!",
            group(failed),
            group(g.requests)
        );
    }
}

/// Prints `grpc encode`'s figures, and writes them as JSON when asked.
///
/// # Errors
/// The JSON file cannot be written.
pub fn print_encode(
    r: &crate::scenario::grpc::EncodeReport,
    json: Option<&std::path::Path>,
) -> crate::error::Result<()> {
    use std::io::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "msgbench grpc encode: {}, {} messages{}",
        r.message,
        group(r.count),
        if r.templated {
            " (templated: built per message)"
        } else {
            " (no placeholders: a client can build it once and reuse it)"
        }
    );
    let _ = writeln!(o, "  {:<18} {:>10} {:>12}", "step", "ns/msg", "bytes/msg");
    for s in &r.steps {
        let bytes = s
            .bytes_per_msg
            .map_or_else(String::new, |b| format!("{b:.0}"));
        let _ = writeln!(o, "  {:<18} {:>10.1} {:>12}", s.name, s.ns_per_msg, bytes);
    }
    let _ = writeln!(
        o,
        "  {:<18} {:>10.1}   at most {} msgs/s on one core",
        "total",
        r.total_ns_per_msg,
        group(r.max_msgs_per_sec_per_core.round() as u64)
    );
    let doc = serde_json::to_vec_pretty(r).expect("the report serialises");
    let to_stdout = json == Some(std::path::Path::new("-"));
    if let Some(path) = json.filter(|_| !to_stdout) {
        std::fs::write(path, &doc).map_err(|e| {
            crate::error::Error::io(format!("cannot write --json file '{}'", path.display()), e)
        })?;
    }
    if to_stdout {
        let _ = std::io::stderr().write_all(o.as_bytes());
        let _ = std::io::stdout().write_all(&doc);
        let _ = std::io::stdout().write_all(b"\n");
    } else {
        let _ = std::io::stdout().write_all(o.as_bytes());
    }
    Ok(())
}

/// 1234567 -> "1,234,567".
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Bytes in binary units, as `nats bench` prints them: "87 MiB", "1.5 KiB".
pub fn ibytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 || v >= 10.0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(5_676_218), "5,676,218");
    }

    #[test]
    fn binary_byte_units() {
        assert_eq!(ibytes(512.0), "512 B");
        assert_eq!(ibytes(1536.0), "1.5 KiB");
        assert_eq!(ibytes(87.0 * 1024.0 * 1024.0), "87 MiB");
    }
}
