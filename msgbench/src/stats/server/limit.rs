//! Who was the limit: the one line every run ends with, naming what bounded it and the figures
//! that show it. The rule, in order (docs/server-side.md states it too):
//!
//! 0. **A paced run that met its rate** was bounded by nothing, however busy a resource was:
//!    the line is rule 4's, with what the busiest resource had left.
//! 1. **A resource at its limit.** Each resource's use is a share of what it may have:
//!    - a server's CPU, over the cores it may use (the fewer of its CPUs and GOMAXPROCS);
//!    - msgbench's CPU, over the cores it may use (its CPU affinity, or its cgroup quota);
//!    - msgbench's busiest thread, the share of the run it ran or waited to run: a thread
//!      can use one core, so a load loop that never blocks is the tool's ceiling however many
//!      cores are idle (not in a paced run, whose publisher spins out the last stretch before
//!      each send: a paced run is judged by its schedule);
//!    - the `--link`'s rate, over the bytes a second that crossed it.
//!
//!    Each is the median over the load's ticks, so a spike is not a limit. When one is at
//!    [`SATURATED`] or more, the most used is the limit; but a link used up comes first, as
//!    msgbench's own threads shape it (the tool's CPU then counts the shaping). When none is, but the machine's CPU
//!    is (servers msgbench started share it with msgbench), the machine is.
//! 2. **The SLO**, in a capacity search: the probe's SLO failed with nothing saturated.
//! 3. **The schedule**, in a paced run: sends late with the socket taking them (the tool fell
//!    behind); short of the rate with the publishers held back in writes (the server or the
//!    path would not take them).
//! 4. **Nothing**: a paced run met its rate; the headroom is what the busiest resource had
//!    left. A run as fast as it can go with nothing saturated is bound by its waits (round
//!    trips, acknowledgements, the in-flight window), which the line says.
//!
//! This is pure arithmetic on figures the run measured; a figure not measured (a server whose
//! monitor never answered) takes no part, and the line says what it could not see.

use serde::Serialize;

use crate::format::{duration_ns, group, ibytes, pct, sig};

/// The share of a resource at which it counts as the limit.
pub const SATURATED: f64 = 0.9;

/// msgbench's own use of the machine, medians over the load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolUse {
    pub cpu_cores: f64,
    pub cores: f64,
    /// Its busiest thread's share of the run running or runnable.
    pub busiest_thread: f64,
}

/// One server's CPU, median over the load.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerUse {
    pub name: String,
    pub cpu_cores: f64,
    pub cores: f64,
}

/// The `--link`: what crossed it and its rate, in bytes a second.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkUse {
    pub spec: String,
    pub bytes_per_sec: f64,
    pub rate_bytes_per_sec: f64,
}

/// How a paced run kept its schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaceUse {
    pub target: f64,
    pub achieved: Option<f64>,
    /// The tool kept its schedule (or was held back by the far side).
    pub kept_schedule: bool,
    /// At least half the publishers' time went into writes the socket would not take.
    pub held_back: bool,
    pub send_lag_p99_ns: u64,
    pub write_blocked_pct: Option<f64>,
}

/// The machine's CPU, median over the load, when servers msgbench started share it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostUse {
    pub busy_cores: f64,
    pub cores: f64,
}

/// Everything the rule looks at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub tool: Option<ToolUse>,
    pub servers: Vec<ServerUse>,
    /// Servers of the run whose CPU was never read.
    pub unread: Vec<String>,
    pub link: Option<LinkUse>,
    pub pace: Option<PaceUse>,
    pub host: Option<HostUse>,
    /// A capacity probe's failed SLO, in words.
    pub slo_failed: Option<String>,
}

/// What bounded a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    Tool,
    Server,
    Link,
    Host,
    Slo,
    None,
}

/// The verdict: a kind, the line, and the figures behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limit {
    pub kind: LimitKind,
    /// The line the text prints after `limit: `.
    pub text: String,
    /// What the named (or, for none, the busiest) resource is: `server msgbench-0 CPU`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// That resource's use, as a share of its limit (0.98).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used: Option<f64>,
    /// For a run that met its rate: the share the busiest resource had left, in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headroom_pct: Option<f64>,
}

/// One resource's use, for the comparison.
struct Candidate {
    kind: LimitKind,
    resource: String,
    used: f64,
    words: String,
}

fn cores(n: f64) -> String {
    if (n - 1.0).abs() < 1e-9 {
        "1 core".into()
    } else {
        format!("{} cores", sig(n, 3, true))
    }
}

fn candidates(f: &Facts) -> Vec<Candidate> {
    let mut out = Vec::new();
    for s in f.servers.iter().filter(|s| s.cores > 0.0) {
        let used = s.cpu_cores / s.cores;
        out.push(Candidate {
            kind: LimitKind::Server,
            resource: format!("server {} CPU", s.name),
            used,
            words: format!(
                "the server {}: its CPU at {} of the {} it may use",
                s.name,
                pct(used * 100.0),
                cores(s.cores)
            ),
        });
    }
    if let Some(t) = f.tool.filter(|t| t.cores > 0.0) {
        let used = t.cpu_cores / t.cores;
        out.push(Candidate {
            kind: LimitKind::Tool,
            resource: "msgbench CPU".into(),
            used,
            words: format!(
                "msgbench: its CPU at {} of the {} it may use",
                pct(used * 100.0),
                cores(t.cores)
            ),
        });
        // A paced publisher spins out the last stretch before each send, so at high rates its
        // thread is busy waiting, not working: a paced run is judged by its schedule (rule 3).
        if f.pace.is_some() {
            return add_link(f, out);
        }
        out.push(Candidate {
            kind: LimitKind::Tool,
            resource: "msgbench's busiest thread".into(),
            used: t.busiest_thread,
            words: format!(
                "msgbench: its busiest thread ran or waited to run {} of the time (a thread \
                 can use one core)",
                pct(t.busiest_thread * 100.0)
            ),
        });
    }
    add_link(f, out)
}

fn add_link(f: &Facts, mut out: Vec<Candidate>) -> Vec<Candidate> {
    if let Some(l) = f.link.as_ref().filter(|l| l.rate_bytes_per_sec > 0.0) {
        let used = l.bytes_per_sec / l.rate_bytes_per_sec;
        out.push(Candidate {
            kind: LimitKind::Link,
            resource: format!("the link ({})", l.spec),
            used,
            words: format!(
                "the link ({}): {}/s crossed it, {} of its {}/s",
                l.spec,
                ibytes(l.bytes_per_sec),
                pct(used * 100.0),
                ibytes(l.rate_bytes_per_sec)
            ),
        });
    }
    out
}

/// Names what bounded a run with these facts.
pub fn judge(f: &Facts) -> Limit {
    let all = candidates(f);
    let busiest = all.iter().max_by(|a, b| a.used.total_cmp(&b.used));
    let unread = if f.unread.is_empty() {
        String::new()
    } else {
        format!(" (not read: {})", f.unread.join(", "))
    };
    // A paced run that met its rate was bounded by nothing, however busy something was: that
    // is its headroom (rule 4 comes first).
    let met = f.slo_failed.is_none() && f.pace.is_some_and(|p| p.kept_schedule && !p.held_back);
    // A link used up is named before any other resource at its limit: the link is shaped by
    // msgbench's own proxy threads, so the tool's CPU then counts the shaping too.
    let link_full = all
        .iter()
        .find(|c| c.kind == LimitKind::Link && c.used >= SATURATED);
    if let Some(c) = link_full
        .or(busiest)
        .filter(|c| c.used >= SATURATED && !met)
    {
        return Limit {
            kind: c.kind,
            text: c.words.clone(),
            resource: Some(c.resource.clone()),
            used: Some(c.used),
            headroom_pct: None,
        };
    }
    if let Some(h) = f
        .host
        .filter(|h| h.cores > 0.0 && h.busy_cores / h.cores >= SATURATED && !met)
    {
        let used = h.busy_cores / h.cores;
        return Limit {
            kind: LimitKind::Host,
            text: format!(
                "this machine's CPU, which msgbench and the servers share: {} of its {} busy \
                 ({}), though neither alone was at its limit",
                sig(h.busy_cores, 3, true),
                cores(h.cores),
                pct(used * 100.0)
            ),
            resource: Some("this machine's CPU".into()),
            used: Some(used),
            headroom_pct: None,
        };
    }
    let busiest_words = busiest.map_or_else(
        || format!("no resource's use was measured{unread}"),
        |c| {
            format!(
                "the busiest, {}, at {} of its limit{unread}",
                c.resource,
                pct(c.used * 100.0)
            )
        },
    );
    if let Some(slo) = &f.slo_failed {
        return Limit {
            kind: LimitKind::Slo,
            text: format!("the SLO: {slo}, with no resource at its limit ({busiest_words})"),
            resource: None,
            used: None,
            headroom_pct: None,
        };
    }
    let Some(p) = f.pace else {
        return Limit {
            kind: LimitKind::None,
            text: format!(
                "nothing at its limit: {busiest_words}; a run as fast as it can go with nothing \
                 saturated is bound by its waits (round trips, acknowledgements, the in-flight \
                 window)"
            ),
            resource: busiest.map(|c| c.resource.clone()),
            used: busiest.map(|c| c.used),
            headroom_pct: None,
        };
    };
    let achieved = p
        .achieved
        .map_or_else(|| "—".into(), |a| group(a.round() as u64));
    let target = group(p.target.round() as u64);
    if p.held_back {
        return Limit {
            kind: LimitKind::Server,
            text: format!(
                "the server or the path: {target}/s asked, {achieved}/s achieved, the \
                 publishers spent {} of their time in writes the socket would not take \
                 ({busiest_words})",
                p.write_blocked_pct.map_or_else(|| "—".into(), pct)
            ),
            resource: None,
            used: None,
            headroom_pct: None,
        };
    }
    if !p.kept_schedule {
        return Limit {
            kind: LimitKind::Tool,
            text: format!(
                "msgbench fell behind its schedule: {target}/s asked, {achieved}/s achieved, \
                 sends late by {} at P99 while the socket took them ({busiest_words})",
                duration_ns(p.send_lag_p99_ns as f64)
            ),
            resource: None,
            used: None,
            headroom_pct: None,
        };
    }
    let headroom = busiest.map(|c| ((1.0 - c.used) * 100.0).max(0.0));
    Limit {
        kind: LimitKind::None,
        text: match (busiest, headroom) {
            (Some(c), Some(h)) => format!(
                "nothing: {target}/s asked and met; the busiest, {}, at {} of its limit: {} \
                 headroom{unread}",
                c.resource,
                pct(c.used * 100.0),
                pct(h)
            ),
            _ => format!("nothing: {target}/s asked and met; {busiest_words}"),
        },
        resource: busiest.map(|c| c.resource.clone()),
        used: busiest.map(|c| c.used),
        headroom_pct: headroom,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(cpu: f64, cores: f64, thread: f64) -> Option<ToolUse> {
        Some(ToolUse {
            cpu_cores: cpu,
            cores,
            busiest_thread: thread,
        })
    }

    fn server(cpu: f64, cores: f64) -> ServerUse {
        ServerUse {
            name: "msgbench-0".into(),
            cpu_cores: cpu,
            cores,
        }
    }

    fn paced(kept: bool, held: bool) -> Option<PaceUse> {
        Some(PaceUse {
            target: 1000.0,
            achieved: Some(if kept { 1000.0 } else { 700.0 }),
            kept_schedule: kept,
            held_back: held,
            send_lag_p99_ns: 5_000_000,
            write_blocked_pct: Some(if held { 80.0 } else { 1.0 }),
        })
    }

    #[test]
    fn a_server_at_its_one_core_is_the_limit_and_the_line_shows_it() {
        let l = judge(&Facts {
            tool: tool(0.7, 2.0, 0.6),
            servers: vec![server(0.98, 1.0)],
            ..Facts::default()
        });
        assert_eq!(l.kind, LimitKind::Server);
        assert_eq!(
            l.text,
            "the server msgbench-0: its CPU at 98.00 % of the 1 core it may use"
        );
        assert_eq!(l.used, Some(0.98));
    }

    #[test]
    fn the_tool_is_the_limit_by_its_quota_or_by_one_thread() {
        // Half a core of quota, all used.
        let l = judge(&Facts {
            tool: tool(0.49, 0.5, 0.5),
            servers: vec![server(0.3, 2.0)],
            ..Facts::default()
        });
        assert_eq!(l.kind, LimitKind::Tool);
        assert!(l.text.contains("0.5 cores it may use"), "{}", l.text);
        // A loop that never blocks on a machine of many idle cores.
        let l = judge(&Facts {
            tool: tool(1.0, 8.0, 0.99),
            servers: vec![server(0.5, 8.0)],
            ..Facts::default()
        });
        assert_eq!(l.kind, LimitKind::Tool);
        assert!(l.text.contains("busiest thread"), "{}", l.text);
        // Both at their limit: the more used one is named.
        let l = judge(&Facts {
            tool: tool(0.5, 0.5, 0.5),
            servers: vec![server(0.95, 1.0)],
            ..Facts::default()
        });
        assert_eq!(l.kind, LimitKind::Tool);
    }

    #[test]
    fn the_link_is_the_limit_when_its_rate_is_used_up() {
        let l = judge(&Facts {
            tool: tool(0.2, 2.0, 0.3),
            servers: vec![server(0.1, 2.0)],
            link: Some(LinkUse {
                spec: "rate=10mbit".into(),
                bytes_per_sec: 1_230_000.0,
                rate_bytes_per_sec: 1_250_000.0,
            }),
            ..Facts::default()
        });
        assert_eq!(l.kind, LimitKind::Link);
        assert!(l.text.starts_with("the link (rate=10mbit)"), "{}", l.text);
        // The proxy shaping it is msgbench's own thread, busy too: the link still comes first.
        let l = judge(&Facts {
            tool: tool(1.0, 2.0, 1.0),
            servers: vec![server(0.1, 2.0)],
            link: Some(LinkUse {
                spec: "rate=10mbit".into(),
                bytes_per_sec: 1_200_000.0,
                rate_bytes_per_sec: 1_250_000.0,
            }),
            ..Facts::default()
        });
        assert_eq!(l.kind, LimitKind::Link);
    }

    #[test]
    fn a_shared_machine_at_its_limit_is_named_only_when_nothing_alone_is() {
        let f = Facts {
            tool: tool(1.0, 2.0, 0.8),
            servers: vec![server(0.9, 2.0)],
            host: Some(HostUse {
                busy_cores: 1.95,
                cores: 2.0,
            }),
            ..Facts::default()
        };
        assert_eq!(judge(&f).kind, LimitKind::Host);
        let alone = Facts {
            servers: vec![server(1.9, 2.0)],
            ..f
        };
        assert_eq!(judge(&alone).kind, LimitKind::Server);
    }

    #[test]
    fn a_paced_run_that_met_its_rate_names_nothing_with_its_headroom() {
        let l = judge(&Facts {
            tool: tool(0.06, 2.0, 0.05),
            servers: vec![server(0.08, 2.0)],
            pace: paced(true, false),
            ..Facts::default()
        });
        assert_eq!(l.kind, LimitKind::None);
        assert_eq!(l.resource.as_deref(), Some("server msgbench-0 CPU"));
        assert_eq!(l.headroom_pct, Some(96.0));
        assert!(
            l.text.starts_with("nothing: 1,000/s asked and met"),
            "{}",
            l.text
        );
        assert!(l.text.ends_with("96.00 % headroom"), "{}", l.text);
    }

    #[test]
    fn a_paced_publishers_spinning_thread_is_not_its_headroom() {
        let l = judge(&Facts {
            tool: tool(0.7, 2.0, 1.0),
            servers: vec![server(0.3, 2.0)],
            pace: paced(true, false),
            ..Facts::default()
        });
        assert_eq!(l.kind, LimitKind::None);
        assert_eq!(l.resource.as_deref(), Some("msgbench CPU"));
        assert_eq!(l.headroom_pct.map(f64::round), Some(65.0));
    }

    #[test]
    fn a_paced_run_that_met_its_rate_names_nothing_even_on_a_busy_machine() {
        let l = judge(&Facts {
            tool: tool(0.2, 2.0, 0.3),
            servers: vec![server(0.95, 1.0)],
            host: Some(HostUse {
                busy_cores: 2.0,
                cores: 2.0,
            }),
            pace: paced(true, false),
            ..Facts::default()
        });
        assert_eq!(l.kind, LimitKind::None);
        assert_eq!(l.headroom_pct.map(|h| h.round()), Some(5.0));
    }

    #[test]
    fn a_schedule_not_kept_names_the_tool_or_the_far_side_and_an_slo_comes_before_both() {
        let base = Facts {
            tool: tool(0.3, 2.0, 0.4),
            servers: vec![server(0.2, 2.0)],
            ..Facts::default()
        };
        let late = judge(&Facts {
            pace: paced(false, false),
            ..base.clone()
        });
        assert_eq!(late.kind, LimitKind::Tool);
        assert!(
            late.text.contains("fell behind its schedule"),
            "{}",
            late.text
        );
        let held = judge(&Facts {
            pace: paced(false, true),
            ..base.clone()
        });
        assert_eq!(held.kind, LimitKind::Server);
        assert!(held.text.contains("80.00 %"), "{}", held.text);
        let slo = judge(&Facts {
            pace: paced(false, true),
            slo_failed: Some("p99<1ms failed at 2,000/s".into()),
            ..base.clone()
        });
        assert_eq!(slo.kind, LimitKind::Slo);
        let flat_out = judge(&base);
        assert_eq!(flat_out.kind, LimitKind::None);
        assert!(
            flat_out.text.contains("bound by its waits"),
            "{}",
            flat_out.text
        );
        assert_eq!(flat_out.headroom_pct, None);
    }

    #[test]
    fn a_server_never_read_takes_no_part_and_is_named() {
        let l = judge(&Facts {
            tool: tool(0.1, 2.0, 0.1),
            unread: vec!["http://h:8222".into()],
            pace: paced(true, false),
            ..Facts::default()
        });
        assert_eq!(l.kind, LimitKind::None);
        assert!(l.text.contains("(not read: http://h:8222)"), "{}", l.text);
    }
}
