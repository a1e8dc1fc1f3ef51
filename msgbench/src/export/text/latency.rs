//! Latency tables (corrected beside uncorrected), how a paced run kept its schedule (with the
//! shortfall warning), the link proxy's own cost, and `msgbench calibrate`'s floor table.

use std::fmt::Write;

use super::*;

pub(super) fn latency(o: &mut String, r: &RunResult) {
    let words = r.params.describe();
    let Some(c) = &r.latency else {
        if let Some(why) = words.no_latency() {
            let _ = writeln!(o, "Latency: not measured: {why}");
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
                "Latency of {}{}, from intended send (corrected) and from actual send (uncorrected):",
                crate::format::counted(c.count, "message"),
                untimed(r, c.count)
            );
            let _ = writeln!(
                o,
                "  {:>10} {:>12} {:>12}",
                "percentile", "corrected", "uncorrected"
            );
        }
        None => {
            let untimed = untimed(r, c.count);
            let (heading, column) = words.latency_heading(c.count, &untimed).unwrap_or_else(|| {
                (
                    format!(
                        "Round-trip latency of {}:",
                        crate::format::counted(c.count, "request")
                    ),
                    "round trip",
                )
            });
            let _ = writeln!(o, "{heading}");
            let _ = writeln!(o, "  {:>10} {:>12}", "percentile", column);
        }
    }
    // Between agents, a figure below the clock offsets' uncertainty is not a latency the
    // clocks can resolve: it is said so, not printed as the 1 ns it was clamped to.
    let cell = |l: &crate::result::LatencyStats, figure: &str, v: u64| match l.unresolved(figure) {
        Some(u) => format!("below ±{}", duration_ns(u as f64)),
        None => duration_ns(v as f64),
    };
    let row = |o: &mut String, name: String, figure: &str, ours: u64, theirs: Option<u64>| {
        // A row whose every column is below it says so once.
        let whole = c
            .unresolved(figure)
            .filter(|_| u.is_none_or(|u| u.unresolved(figure).is_some()));
        let _ = match (whole, theirs.zip(u)) {
            (Some(n), _) => writeln!(
                o,
                "  {name:>10} below the clock offset's uncertainty (±{})",
                duration_ns(n as f64)
            ),
            (None, Some((t, u))) => writeln!(
                o,
                "  {name:>10} {:>12} {:>12}",
                cell(c, figure, ours),
                cell(u, figure, t)
            ),
            (None, None) => writeln!(o, "  {name:>10} {:>12}", cell(c, figure, ours)),
        };
    };
    for (key, value) in &c.percentiles_ns.0 {
        row(o, format!("P{key}"), key, *value, u.map(|u| u.at(key)));
    }
    row(o, "min".into(), "min_ns", c.min_ns, u.map(|u| u.min_ns));
    row(o, "median".into(), "50", c.at("50"), u.map(|u| u.at("50")));
    row(o, "max".into(), "max_ns", c.max_ns, u.map(|u| u.max_ns));
}

/// What the latency scenario received but did not time, in words: every received message is
/// timed except those due in `--warmup` and any without a sequence number, so the two counts
/// follow from the delivery figures. Empty when nothing was left out.
fn untimed(r: &RunResult, timed: u64) -> String {
    let Some(warmup_s) = r.params.describe().warmup_secs() else {
        return String::new();
    };
    let d = &r.delivery;
    let Some(warm) = d
        .received
        .checked_sub(d.unstamped)
        .and_then(|n| n.checked_sub(timed))
    else {
        return String::new();
    };
    let mut parts = Vec::new();
    if warm > 0 && warmup_s > 0.0 {
        // Without loss, the messages due in the warm-up all arrived; with it, only those that
        // arrived are known to have been left out.
        let which = if d.lost == 0 {
            ""
        } else {
            " received that were"
        };
        parts.push(format!(
            "the {}{which} due in the {} s warm-up",
            group(warm),
            crate::format::sig(warmup_s, 3, true)
        ));
    }
    if d.unstamped > 0 {
        parts.push(format!(
            "the {} without a sequence number",
            group(d.unstamped)
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(" ({} are not timed)", parts.join(" and "))
}

/// How well a paced run kept its schedule, and a warning as loud as the loss warning when it
/// fell well short: then the tool or the machine, not the server, may have been the limit.
pub(super) fn pacing(o: &mut String, r: &RunResult) {
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
    // After a warm-up, the send lag covers the messages latency times: those due after it.
    let warmup = r.params.describe().warmup_secs().filter(|w| *w > 0.0);
    let (which, late) = match (warmup, p.sends) {
        (Some(w), Some(n)) => (
            format!(
                "of the {} due after the {} s warm-up, ",
                crate::format::counted(n, "send"),
                crate::format::sig(w, 3, true)
            ),
            group(p.late_sends),
        ),
        _ => (String::new(), crate::format::counted(p.late_sends, "send")),
    };
    let _ = writeln!(
        o,
        "Pacing: {achieved}; {which}send lag P50 {}, P99 {}, max {}; {late} later than {}",
        duration_ns(p.send_lag_p50_ns as f64),
        duration_ns(p.send_lag_p99_ns as f64),
        duration_ns(p.send_lag_max_ns as f64),
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
pub(super) fn proxy_cost(added_ns: Option<i64>) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The one thing these tests need from a scenario's params: its latency warm-up.
    #[derive(Debug, Clone, serde::Serialize)]
    struct Warm {
        warmup_secs: f64,
    }

    impl crate::result::Describe for Warm {
        fn shape(&self) -> String {
            String::new()
        }
        fn warmup_secs(&self) -> Option<f64> {
            Some(self.warmup_secs)
        }
    }

    /// A latency run's result with `timed` latencies out of what its delivery says.
    fn run(timed: u64, received: u64, lost: u64, unstamped: u64, warmup_s: f64) -> RunResult {
        let mut r = RunResult::new(
            "latency",
            "2026-11-21T19:15:17Z".into(),
            crate::result::Params::of(Warm {
                warmup_secs: warmup_s,
            }),
            crate::result::ServerMeta::for_tests(),
            &crate::error::ErrorCounts::default(),
            false,
        );
        let mut h = crate::stats::latency::new_histogram();
        for i in 0..timed {
            h.record(50_000 + i).unwrap();
        }
        r.latency = Some(crate::result::LatencyStats::of(&h));
        r.latency_uncorrected = Some(crate::result::LatencyStats::of(&h));
        r.delivery.received = received;
        r.delivery.lost = lost;
        r.delivery.unstamped = unstamped;
        r
    }

    fn heading(r: &RunResult) -> String {
        let mut o = String::new();
        latency(&mut o, r);
        o.lines().next().unwrap().to_string()
    }

    #[test]
    fn latency_the_clocks_cannot_resolve_is_said_to_be_below_their_uncertainty() {
        // Between agents, half the samples were clamped to 1 ns: the clocks' limit, not a
        // latency. With a clock uncertainty of ±250 µs, the low rows say so; P99 is measured.
        let mut r = run(0, 0, 0, 0, 0.0);
        let mut h = crate::stats::latency::new_histogram();
        h.record_n(1, 600).unwrap();
        h.record_n(400_000, 400).unwrap();
        r.latency = Some(crate::result::LatencyStats::of(&h).with_clock_limit(250_000));
        r.latency_uncorrected = None;
        let mut o = String::new();
        latency(&mut o, &r);
        assert!(
            o.contains("         P50 below the clock offset's uncertainty (±250.0 µs)\n"),
            "{o}"
        );
        assert!(
            o.contains("         min below the clock offset's uncertainty"),
            "{o}"
        );
        assert!(o.contains("         P99     400.1 µs\n"), "{o}");
        assert!(!o.contains(" 1 ns"), "{o}");
    }

    #[test]
    fn the_latency_count_names_what_was_not_timed() {
        assert_eq!(
            heading(&run(2500, 3000, 0, 0, 1.0)),
            "Latency of 2,500 messages (the 500 due in the 1 s warm-up are not timed), from \
             intended send (corrected) and from actual send (uncorrected):"
        );
        // With loss, only the warm-up's messages that arrived are known to be left out.
        assert!(heading(&run(2500, 2990, 10, 0, 0.5))
            .contains("(the 490 received that were due in the 0.5 s warm-up are not timed)"));
        assert!(heading(&run(2500, 3003, 0, 3, 1.0)).contains(
            "(the 500 due in the 1 s warm-up and the 3 without a sequence number are not timed)"
        ));
        // Nothing left out, nothing said.
        assert!(heading(&run(3000, 3000, 0, 0, 0.0)).starts_with("Latency of 3,000 messages, "));
        // One is one message, not "1 messages".
        assert!(heading(&run(1, 1, 0, 0, 0.0)).starts_with("Latency of 1 message, "));
    }
}
