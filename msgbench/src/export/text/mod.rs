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
mod faults;
mod latency;
mod mix;
mod runs;
mod server;
mod stages;

use agents::agents;
use clients::role_detail;
pub(super) use delivery::{clause as delivery_clause, unchecked as delivery_unchecked};
use delivery::{connections, delivery};
pub use latency::calibration;
use latency::{latency, pacing, proxy_cost};
pub use mix::{class_line, mix};
pub(super) use runs::failed_runs;
pub use runs::run_line;
use runs::runs;
use stages::stages;

pub struct Text;

impl Exporter for Text {
    fn serialize(&self, r: &RunResult) -> Vec<u8> {
        let mut o = String::new();
        let words = r.params.describe();
        let _ = writeln!(o, "{}", words.first_line(r.scenario, &r.server));
        // A scenario whose load is not messages (conns) reports in its own words only.
        if words.section_only() {
            agents(&mut o, r);
            words.account(&mut o, r, &|_| {});
            runs(&mut o, r);
            server::servers(&mut o, r);
            server::limit(&mut o, r);
            if !r.errors.is_empty() {
                let list: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
                let _ = writeln!(o, "Errors: {}", list.join(", "));
            }
            thresholds(&mut o, r);
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
        words.account(&mut o, r, &|o| delivery(o, r));
        if !r.errors.is_empty() {
            let list: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
            let _ = writeln!(o, "Errors: {}", list.join(", "));
        }
        connections(&mut o, r);
        server::servers(&mut o, r);
        server::limit(&mut o, r);
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

pub(super) fn rate_line(t: &Throughput) -> String {
    format!(
        "{} msgs/sec ~ {}/sec ~ {} msgs in {:.3} s",
        group(t.msgs_per_sec.round() as u64),
        ibytes(t.bytes_per_sec),
        group(t.msgs),
        t.seconds
    )
}
