//! The human report, laid out like `nats bench`: the aggregate line, then per role the role's
//! line, its clients (one line each, or their spread when there are many) and the spread of
//! client rates; then delivery, loudly when anything was lost, and errors. This file holds the
//! exporter and the header and throughput lines; each later section has a file of its own, and
//! numbers are formatted by [`super::numbers`], shared with every other human-facing output.

use std::fmt::Write;

use super::Exporter;
use crate::format::duration_ns_signed;
use crate::format::{duration_ns, group, ibytes};
use crate::result::RunResult;
use crate::stats::throughput::Throughput;

mod agents;
mod clients;
mod delivery;
mod grpc;
mod latency;
mod runs;
mod stages;

use agents::agents;
use clients::role_detail;
use delivery::{connections, delivery};
use grpc::grpc;
#[allow(unused_imports)]
use grpc::grpc_shape;
pub use latency::calibration;
use latency::{latency, pacing, proxy_cost};
pub use runs::run_line;
use runs::runs;
use stages::stages;
mod conns;

pub struct Text;

impl Exporter for Text {
    fn serialize(&self, r: &RunResult) -> Vec<u8> {
        let mut o = String::new();
        let words = r.params.describe();
        let _ = writeln!(o, "{}", words.first_line(r.scenario, &r.server));
        if let Some(c) = &r.conns {
            conns::conns(&mut o, c);
            if !r.errors.is_empty() {
                let list: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
                let _ = writeln!(o, "Errors: {}", list.join(", "));
            }
            if r.interrupted {
                let _ = writeln!(o, "Interrupted: these are partial results.");
            }
            return o.into_bytes();
        }
        let title = words.title();
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
        agents(&mut o, r);
        let _ = writeln!(o, "{title}: {}", rate_line(&r.throughput));
        for (role, stats) in &r.by_role {
            if r.by_role.len() > 1 {
                let name = words.role_name(role);
                let _ = writeln!(o, " {name}: {}", rate_line(&stats.throughput));
            }
            role_detail(&mut o, r, role, stats);
        }
        latency(&mut o, r);
        stages(&mut o, r);
        pacing(&mut o, r);
        runs(&mut o, r);
        if r.grpc.is_some() {
            grpc(&mut o, r);
        } else {
            delivery(&mut o, r);
        }
        words.sections(&mut o, r);
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

/// Each `--threshold` with what was measured, and the count that passed.
pub(super) fn thresholds(o: &mut String, r: &RunResult) {
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

/// "2 pubs, 1 sub; 16 B messages; 1,000,000 per publisher at 10,000 msgs/s" from the
/// run's parameters.
#[allow(dead_code)] // goes as each scenario says its own words (typed params)
pub(super) fn shape(scenario: &str, p: &serde_json::Value) -> String {
    let n = |k: &str| p[k].as_u64().unwrap_or(0);
    let plural = crate::format::counted;
    let s = |k: &str| p[k].as_str().unwrap_or("").to_string();
    #[allow(clippy::single_match)] // one arm left of several; it goes the same way
    match scenario {
        "conns" => {
            let rate = p["connect_rate"]
                .as_f64()
                .map_or("as fast as possible".into(), |r| {
                    format!("at {}/s", group(r as u64))
                });
            return format!(
                "{} connections {rate}, subscribing: {}, held {} s",
                group(n("clients")),
                s("subscribe"),
                p["hold_secs"].as_f64().unwrap_or(0.0)
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
    if let Some(schedule) = p["rate_schedule"].as_str() {
        let _ = write!(amount, " on schedule {schedule}");
    } else if rate > 0.0 {
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

pub(super) fn rate_line(t: &Throughput) -> String {
    format!(
        "{} msgs/sec ~ {}/sec ~ {} msgs in {:.3} s",
        group(t.msgs_per_sec.round() as u64),
        ibytes(t.bytes_per_sec),
        group(t.msgs),
        t.seconds
    )
}
