//! The servers' side of a run in the text report: one line per server sampled (its CPU and
//! memory over the run, from the timeline's samples, and how many readings answered), then
//! the events the samples showed, each with the run's rate and P99 just before and after.

use std::fmt::Write;

use crate::format::{duration_ns, grouped, ibytes, pct};
use crate::result::RunResult;
use crate::stats::server::limit::Limit;
use crate::stats::server::{Around, ServerSide};

/// What limited the run, in one line, when it was judged.
pub(super) fn limit(o: &mut String, r: &RunResult) {
    if let Some(l) = r.own.get::<Limit>() {
        let _ = writeln!(o, "Limit: {}", l.text);
    }
}

/// The servers' lines, when the run sampled any.
pub(super) fn servers(o: &mut String, r: &RunResult) {
    let Some(side) = r.own.get::<ServerSide>() else {
        return;
    };
    let ticks = r.timeline.as_ref().map_or(&[][..], |t| &t.ticks[..]);
    for s in &side.servers {
        let points = ticks
            .iter()
            .filter_map(|t| t.server.as_ref())
            .flat_map(|t| t.servers.iter())
            .filter(|p| p.name == s.name && p.up);
        let mut cpu: Vec<f64> = points.clone().filter_map(|p| p.cpu_pct).collect();
        cpu.sort_by(f64::total_cmp);
        let mem = points.filter_map(|p| p.mem_bytes).max();
        let what = match (&s.version, s.cores.zip(s.gomaxprocs)) {
            (Some(v), Some((c, g))) => format!(" (nats-server {v}, {} cores)", c.min(g)),
            (Some(v), None) => format!(" (nats-server {v})"),
            _ => String::new(),
        };
        let figures = if s.answered == 0 {
            "no figures (its monitor never answered)".to_string()
        } else if cpu.is_empty() {
            format!(
                "CPU not measured (the server reads 0 until it has run 2 s, and no later \
                 reading came in the run); memory up to {}",
                mem.map_or_else(|| "unknown".into(), |m| ibytes(m as f64))
            )
        } else {
            format!(
                "CPU {} median, {} at most (of one core); memory up to {}",
                pct(cpu[cpu.len() / 2]),
                pct(cpu[cpu.len() - 1]),
                mem.map_or_else(|| "unknown".into(), |m| ibytes(m as f64))
            )
        };
        let _ = writeln!(
            o,
            "Server {}{what}: {figures}; {} of {} readings answered",
            s.name, s.answered, s.readings
        );
    }
    if let Some(ns) = side.cpu_ns_per_msg {
        let _ = writeln!(
            o,
            "Servers' CPU per message: {} (their CPU-seconds over the messages of the run, in \
             the seconds every server's CPU was read)",
            duration_ns(ns)
        );
    }
    let unread: Vec<&str> = (side.servers.iter())
        .filter(|s| s.answered == 0)
        .map(|s| s.name.as_str())
        .collect();
    if side.events.is_empty() {
        if unread.is_empty() {
            let _ = writeln!(o, "Server events: none seen");
        } else {
            // Not "none": a server never read had events nobody saw.
            let _ = writeln!(
                o,
                "Server events: not known (never read: {})",
                unread.join(", ")
            );
        }
        return;
    }
    // What was seen is listed; its count is not the servers' while one was never read.
    let of_whom = if unread.is_empty() {
        String::new()
    } else {
        format!("; not counting {}, never read", unread.join(", "))
    };
    let _ = writeln!(o, "Server events ({}{of_whom}):", side.events.len());
    for e in &side.events {
        let of = [e.stream.as_deref(), e.consumer.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("/");
        let of = if of.is_empty() {
            String::new()
        } else {
            format!(" ({of})")
        };
        let _ = writeln!(
            o,
            "  {:>6.1} s  {}{of}: {}; before {}, after {}",
            e.t_s,
            e.kind.as_str(),
            e.detail,
            shown(e.before.as_ref()),
            shown(e.after.as_ref())
        );
    }
}

fn shown(a: Option<&Around>) -> String {
    match a {
        None => "no tick".into(),
        Some(a) => match a.p99_ns {
            Some(p) => format!(
                "{} msgs/s P99 {}",
                grouped(a.msgs_per_sec, 0),
                duration_ns(p as f64)
            ),
            None => format!("{} msgs/s", grouped(a.msgs_per_sec, 0)),
        },
    }
}
