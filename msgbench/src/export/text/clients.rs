//! A role's clients under its throughput line: one line each, as `nats bench` prints them, for
//! a few; for a fan-out of many, their spread (min, median, max) and the slowest of them by
//! id, since thousands of lines would bury the figures. Either way the `min | avg | max |
//! stddev` of the client rates follows; the result's `clients` keeps every client's figures.

use std::fmt::Write;

use crate::format::{count, group, ibytes};
use crate::result::{RoleStats, RunResult};

/// Up to this many clients in a role get a line each; more are summarised.
pub(super) const EACH_UP_TO: usize = 10;

pub(super) fn role_detail(o: &mut String, r: &RunResult, role: &str, stats: &RoleStats) {
    if stats.clients < 2 {
        return;
    }
    if stats.clients > EACH_UP_TO {
        summary(o, r, role, stats);
    } else {
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

/// "subscribers: 5,000 · msgs min … / median … / max … · msgs/s min … / median … / max …" and
/// "slowest: sub 4711 (97 msgs, 1,204 msgs/s, 3 missed), …". Slowest clients are named by the
/// `id` of their entry in the result's `clients`.
fn summary(o: &mut String, r: &RunResult, role: &str, stats: &RoleStats) {
    let (many, one) = r.params.describe().client_names(role);
    let s = &stats.spread;
    let rate = |v: f64| group(v.round() as u64);
    let _ = writeln!(
        o,
        "  {many}: {} · msgs min {} / median {} / max {} · msgs/s min {} / median {} / max {}",
        group(stats.clients as u64),
        group(s.msgs.min),
        count(s.msgs.median),
        group(s.msgs.max),
        rate(s.msgs_per_sec.min),
        rate(s.msgs_per_sec.median),
        rate(s.msgs_per_sec.max),
    );
    if s.slowest.is_empty() {
        return;
    }
    let slowest: Vec<String> = s
        .slowest
        .iter()
        .map(|c| {
            let missed = c
                .missed
                .map_or(String::new(), |n| format!(", {} missed", group(n)));
            format!(
                "{one} {} ({} msgs, {} msgs/s{missed})",
                c.id,
                group(c.msgs),
                rate(c.msgs_per_sec)
            )
        })
        .collect();
    let _ = writeln!(o, "  slowest: {}", slowest.join(", "));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::throughput_sections;
    use crate::stats::throughput::{ClientRun, Role};

    fn report(subs: u32) -> String {
        let t0 = std::time::Instant::now();
        let runs: Vec<ClientRun> = (0..subs)
            .map(|id| ClientRun {
                role: Role::Sub,
                id,
                msgs: 100 - u64::from(id % 4),
                bytes: 1600,
                start: Some(t0),
                end: Some(t0 + std::time::Duration::from_millis(100 + u64::from(id))),
            })
            .collect();
        let (_, by_role, clients) = throughput_sections(&runs);
        let mut r = RunResult::new(
            "pubsub",
            "2026-11-21T19:15:17Z".into(),
            serde_json::Value::Null,
            crate::result::ServerMeta::for_tests(),
            &crate::error::ErrorCounts::default(),
            false,
        );
        r.by_role = by_role;
        r.clients = clients;
        let missed: Vec<(u32, u64)> = (0..subs).map(|id| (id, u64::from(id % 4))).collect();
        let r = r.with_missed(&missed);
        let mut o = String::new();
        role_detail(&mut o, &r, "sub", &r.by_role["sub"]);
        o
    }

    #[test]
    fn a_few_clients_get_a_line_each() {
        let o = report(10);
        assert_eq!(
            o.lines().filter(|l| l.starts_with("  [")).count(),
            10,
            "{o}"
        );
        assert!(!o.contains("slowest"), "{o}");
        assert!(o.contains("| stddev"), "{o}");
    }

    #[test]
    fn many_clients_are_summarised_with_the_slowest_by_id() {
        let o = report(11);
        let lines: Vec<&str> = o.lines().collect();
        assert_eq!(lines.len(), 3, "{o}");
        assert!(
            lines[0]
                .starts_with("  subscribers: 11 · msgs min 97 / median 99 / max 100 · msgs/s min "),
            "{o}"
        );
        // 97 msgs: ids 3 and 7, the slower first; then 98 msgs: 10, 6 and 2, slowest first.
        assert!(
            lines[1].starts_with(
                "  slowest: sub 7 (97 msgs, 907 msgs/s, 3 missed), sub 3 (97 msgs, 942 msgs/s, \
                 3 missed), sub 10 (98 msgs, 891 msgs/s, 2 missed), sub 6 "
            ),
            "{o}"
        );
        assert_eq!(lines[1].matches(" missed)").count(), 5, "{o}");
        assert!(lines[2].contains("| stddev"), "{o}");
    }
}
