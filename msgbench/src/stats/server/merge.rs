//! Every server's reading at one moment made into one tick: each server's figures with its
//! rates since its previous reading, each stream as its leader sees it (only the leader knows
//! how far behind each replica is; a follower's view of the others is stale), each consumer
//! from the server that leads it, and the meta leader most servers name.

use std::collections::BTreeMap;

use super::{ConsumerPoint, Reading, ServerPoint, ServerTick, StreamPoint, MAX_ASSETS};

/// One server's side of a tick: its reading now and its previous one (for rates), either
/// missing when it did not answer. `label` names it until it has answered once.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub label: &'a str,
    pub now: Option<&'a Reading>,
    pub before: Option<&'a Reading>,
}

/// The tick of `sources` read at `t_s`, with no events (they are found by comparing ticks).
pub fn merge(t_s: f64, sources: &[Source<'_>]) -> ServerTick {
    let servers = sources.iter().map(point).collect();
    let readings: Vec<&Reading> = sources.iter().filter_map(|s| s.now).collect();
    let mut streams: BTreeMap<&str, StreamPoint> = BTreeMap::new();
    for r in &readings {
        for v in &r.streams {
            let leaders_view = v.leader.as_deref() == Some(r.name.as_str());
            let point = || StreamPoint {
                name: v.name.clone(),
                msgs: v.msgs,
                bytes: v.bytes,
                leader: v.leader.clone(),
                replicas: if leaders_view {
                    v.replicas.clone()
                } else {
                    Vec::new()
                },
            };
            match streams.get_mut(v.name.as_str()) {
                None => {
                    streams.insert(&v.name, point());
                }
                // The leader's view replaces a follower's.
                Some(s) if leaders_view => *s = point(),
                Some(_) => {}
            }
        }
    }
    let mut consumers: BTreeMap<(&str, &str), ConsumerPoint> = BTreeMap::new();
    for r in &readings {
        for c in &r.consumers {
            consumers
                .entry((&c.stream, &c.name))
                .or_insert_with(|| c.clone());
        }
    }
    let truncated = streams.len() > MAX_ASSETS || consumers.len() > MAX_ASSETS;
    ServerTick {
        t_s,
        servers,
        streams: streams.into_values().take(MAX_ASSETS).collect(),
        consumers: consumers.into_values().take(MAX_ASSETS).collect(),
        meta_leader: most_named(readings.iter().filter_map(|r| r.meta_leader.as_deref())),
        truncated,
        events: Vec::new(),
    }
}

/// How long the server process had been up at the reading, by its own clock.
fn up_ns(r: &Reading) -> Option<i128> {
    let start = humantime::parse_rfc3339(&r.start).ok()?;
    let start = start.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos() as i128;
    r.server_now_ns.map(|now| now - start)
}

/// The name given most often (the first such in name order on a tie).
fn most_named<'a>(names: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for n in names.filter(|n| !n.is_empty()) {
        *count.entry(n).or_insert(0) += 1;
    }
    let best = count.values().copied().max()?;
    count
        .into_iter()
        .find(|(_, c)| *c == best)
        .map(|(n, _)| n.to_string())
}

fn point(s: &Source<'_>) -> ServerPoint {
    let Some(r) = s.now else {
        return ServerPoint {
            name: s.label.to_string(),
            up: false,
            cpu_pct: None,
            cores: None,
            mem_bytes: None,
            connections: None,
            in_msgs_per_sec: None,
            out_msgs_per_sec: None,
            in_bytes_per_sec: None,
            out_bytes_per_sec: None,
            slow_consumers: None,
            routes_to: None,
            healthy: None,
            started: None,
        };
    };
    // Over the server's own interval, and only between readings of one process: a restart
    // starts its counters again.
    let span_s = s
        .before
        .filter(|b| b.start == r.start)
        .map(|b| match (r.server_now_ns, b.server_now_ns) {
            (Some(n), Some(p)) => (n - p) as f64 / 1e9,
            // A clock it gives in a form not read: msgbench's own times of the readings.
            _ => r.t_s - b.t_s,
        })
        .filter(|d| *d > 0.0);
    let rate = |now: u64, before: fn(&Reading) -> u64| {
        let span = span_s?;
        let b = before(s.before?);
        (now >= b).then(|| (now - b) as f64 / span)
    };
    ServerPoint {
        name: r.name.clone(),
        up: true,
        // The server's own CPU figure covers its last sampling interval (a second), and reads 0
        // until its first ones are over: on a process's first reading, or within its first
        // 2 s, it is not a figure of the run.
        cpu_pct: span_s
            .and(up_ns(r).filter(|u| *u >= 2_000_000_000))
            .map(|_| r.cpu_pct),
        cores: Some(match (r.cores, r.gomaxprocs) {
            (0, g) => g,
            (c, 0) => c,
            (c, g) => c.min(g),
        })
        .filter(|c| *c > 0),
        mem_bytes: Some(r.mem_bytes),
        connections: Some(r.connections),
        in_msgs_per_sec: rate(r.in_msgs, |b| b.in_msgs),
        out_msgs_per_sec: rate(r.out_msgs, |b| b.out_msgs),
        in_bytes_per_sec: rate(r.in_bytes, |b| b.in_bytes),
        out_bytes_per_sec: rate(r.out_bytes, |b| b.out_bytes),
        slow_consumers: Some(r.slow_consumers),
        routes_to: r.route_peers.clone(),
        healthy: r.healthy,
        started: Some(r.start.clone()).filter(|s| !s.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ReplicaPoint, StreamView};
    use super::*;

    fn reading(name: &str, now_s: i128, in_msgs: u64) -> Reading {
        Reading {
            name: name.into(),
            start: "2026-11-29T00:00:00Z".into(),
            server_now_ns: Some(now_s * 1_000_000_000),
            cores: 2,
            gomaxprocs: 1,
            cpu_pct: 50.0,
            in_msgs,
            ..Reading::default()
        }
    }

    #[test]
    fn rates_are_over_the_servers_own_interval_and_never_across_a_restart() {
        let (a, b) = (reading("n0", 10, 1000), reading("n0", 12, 5000));
        let t = merge(
            3.0,
            &[Source {
                label: "x",
                now: Some(&b),
                before: Some(&a),
            }],
        );
        let p = &t.servers[0];
        assert_eq!(
            p.in_msgs_per_sec,
            Some(2000.0),
            "4,000 over the server's 2 s"
        );
        assert_eq!(p.cores, Some(1), "GOMAXPROCS 1 of 2 CPUs");
        let mut restarted = b.clone();
        restarted.start = "2026-11-29T00:00:11Z".into();
        let t = merge(
            3.0,
            &[Source {
                label: "x",
                now: Some(&restarted),
                before: Some(&a),
            }],
        );
        assert_eq!(t.servers[0].in_msgs_per_sec, None);
        let down = merge(
            3.0,
            &[Source {
                label: "http://h:8222",
                now: None,
                before: Some(&a),
            }],
        );
        assert_eq!(down.servers[0].name, "http://h:8222");
        assert!(!down.servers[0].up && down.servers[0].cpu_pct.is_none());
    }

    #[test]
    fn a_stream_is_its_leaders_view_and_the_meta_leader_the_most_named() {
        let view = |from: &str, msgs: u64, current: bool| StreamView {
            name: "S".into(),
            msgs,
            bytes: msgs * 10,
            leader: Some("n1".into()),
            replicas: vec![ReplicaPoint {
                name: if from == "n1" { "n2" } else { "n1" }.into(),
                current,
                lag: 0,
                offline: false,
            }],
        };
        let mut r0 = reading("n0", 1, 0);
        r0.streams = vec![view("n0", 90, false)];
        r0.meta_leader = Some("n0".into());
        let mut r1 = reading("n1", 1, 0);
        r1.streams = vec![view("n1", 100, true)];
        r1.meta_leader = Some("n2".into());
        let mut r2 = reading("n2", 1, 0);
        r2.meta_leader = Some("n2".into());
        let src = |r| Source {
            label: "",
            now: Some(r),
            before: None,
        };
        let t = merge(1.0, &[src(&r0), src(&r1), src(&r2)]);
        assert_eq!(t.streams.len(), 1);
        assert_eq!(t.streams[0].msgs, 100, "the leader's count");
        assert!(t.streams[0].replicas[0].current);
        assert_eq!(t.meta_leader.as_deref(), Some("n2"));
        // Without the leader's reading, the replicas are not known.
        let t = merge(1.0, &[src(&r0)]);
        assert!(t.streams[0].replicas.is_empty());
    }
}
