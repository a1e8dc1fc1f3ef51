//! The merge's other sums, worked out by hand: errors, connections, the run's failure and
//! interruption, pacing, and the timeline tick by tick.

use std::time::Duration;

use super::tests::{agent, clients, doc, run};
use crate::error::{exit, ErrorCounts, ErrorKind};
use crate::result::{AgentEntry, Pacing};
use crate::stats::throughput::Role;
use crate::stats::timeline::{Tick, TickLatency, Timeline, TimelineClient};

#[test]
fn errors_connections_failure_and_pacing_add_up() {
    let a_errors = ErrorCounts::default();
    a_errors.add_n(ErrorKind::Disconnected, 2);
    a_errors.opened();
    a_errors.reconnected(Duration::from_nanos(700));
    a_errors.failed(ErrorKind::PingTimeout, true);
    let b_errors = ErrorCounts::default();
    b_errors.add(ErrorKind::SlowConsumer);
    b_errors.add(ErrorKind::Disconnected);
    b_errors.opened();
    b_errors.opened();
    b_errors.reconnected(Duration::from_nanos(900));
    b_errors.failed(ErrorKind::Io, false);
    let mut a = agent("pubsub", &a_errors);
    clients(&mut a, &[(Role::Pub, 0, 1000, 1000)]);
    a.pacing = Some(Pacing::from_figures(
        600.0,
        Some(1000.0),
        1_000_000,
        3,
        [10, 500, 9000],
    ));
    let mut b = agent("pubsub", &b_errors);
    clients(&mut b, &[(Role::Pub, 1, 1500, 2000)]);
    b.pacing = Some(Pacing::from_figures(
        900.0,
        Some(750.0),
        1_000_000,
        7,
        [20, 400, 8000],
    ));
    let r = run(
        "pubsub",
        vec![
            AgentEntry::complete("b", doc(&b)),
            AgentEntry::complete("a", doc(&a)),
        ],
    );
    assert_eq!(r.errors.get("disconnected"), Some(&3));
    assert_eq!(r.errors.get("slow_consumer"), Some(&1));
    let c = &r.connections;
    assert_eq!((c.opened, c.lost, c.reconnects, c.gave_up), (3, 3, 2, 1));
    assert_eq!(c.reconnect_ns, vec![900, 700]);
    // Both failed: the first agent's failure is the run's.
    assert_eq!(r.failure, Some("io"));
    assert_eq!(r.exit_code(true), exit::FAILURE);
    let p = r.pacing.expect("pacing");
    // 2,500 messages over the longer publisher's 2 s: 1,250/s of a summed 1,500/s target.
    assert_eq!(
        (p.target_rate, p.actual_rate, p.late_sends),
        (1500.0, Some(1250.0), 10)
    );
    assert!(p.below_target);
    let lag = (p.send_lag_p50_ns, p.send_lag_p99_ns, p.send_lag_max_ns);
    assert_eq!(lag, (20, 500, 9000));
    assert!(!r.interrupted);

    let mut c = agent("pubsub", &ErrorCounts::default());
    c.interrupted = true;
    let r = run(
        "pubsub",
        vec![
            AgentEntry::complete("c", doc(&c)),
            AgentEntry::complete("a", doc(&a)),
        ],
    );
    assert!(r.interrupted);
    assert_eq!(r.exit_code(true), exit::INTERRUPTED);
}

fn tick(t_s: f64, msgs: Vec<u64>, rates: (f64, f64), lat: Option<(u64, u64, u64)>) -> Tick {
    Tick {
        t_s,
        span_s: 1.0,
        msgs,
        sent_per_sec: rates.0,
        received_per_sec: rates.1,
        latency: lat.map(|(count, p99_ns, max_ns)| TickLatency {
            count,
            p50_ns: p99_ns / 2,
            p99_ns,
            max_ns,
        }),
        errors: 1,
        stage: None,
        conns: None,
        server: None,
        tool: None,
    }
}

#[test]
fn timelines_add_up_tick_by_tick() {
    let timeline = |clients: Vec<(Role, u32)>, ticks| Timeline {
        interval_s: 1.0,
        clients: clients
            .into_iter()
            .map(|(role, id)| TimelineClient { role, id })
            .collect(),
        ticks,
        truncated: false,
        load_start_s: None,
    };
    let mut a = agent("pubsub", &ErrorCounts::default());
    a.timeline = Some(timeline(
        vec![(Role::Pub, 0), (Role::Pub, 1)],
        vec![
            // The first tick came before publisher 1 had registered.
            tick(1.0, vec![100], (100.0, 0.0), None),
            tick(2.0, vec![100, 50], (150.0, 0.0), Some((50, 5000, 6000))),
            tick(2.5, vec![40, 0], (80.0, 0.0), None),
        ],
    ));
    let mut b = agent("pubsub", &ErrorCounts::default());
    b.timeline = Some(timeline(
        vec![(Role::Sub, 0)],
        vec![
            tick(1.001, vec![90], (0.0, 90.0), Some((90, 4000, 7000))),
            tick(2.001, vec![160], (0.0, 160.0), Some((160, 3000, 9000))),
        ],
    ));
    let r = run(
        "pubsub",
        vec![
            AgentEntry::complete("a", doc(&a)),
            AgentEntry::complete("b", doc(&b)),
        ],
    );
    let t = r.timeline.expect("timeline");
    let ids: Vec<(Role, u32)> = t.clients.iter().map(|c| (c.role, c.id)).collect();
    assert_eq!(ids, vec![(Role::Pub, 0), (Role::Pub, 1), (Role::Sub, 0)]);
    assert_eq!(t.ticks.len(), 3);
    let msgs: Vec<Vec<u64>> = t.ticks.iter().map(|k| k.msgs.clone()).collect();
    assert_eq!(
        msgs,
        vec![vec![100, 0, 90], vec![100, 50, 160], vec![40, 0, 0]]
    );
    let (t0, t1, t2) = (&t.ticks[0], &t.ticks[1], &t.ticks[2]);
    assert_eq!(
        (t0.t_s, t0.sent_per_sec, t0.received_per_sec),
        (1.001, 100.0, 90.0)
    );
    assert_eq!((t1.errors, t2.errors), (2, 1));
    let l = t1.latency.as_ref().expect("latency in tick 1");
    // Counts add up; P50 and P99 are the larger of the two agents' (an upper bound).
    assert_eq!(
        (l.count, l.p50_ns, l.p99_ns, l.max_ns),
        (210, 2500, 5000, 9000)
    );
    assert!(t2.latency.is_none());
}
