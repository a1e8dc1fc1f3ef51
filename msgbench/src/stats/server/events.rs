//! What happened on the servers, found by comparing each tick of server figures with what came
//! before it: a stream or meta leader that changed, a replica that fell behind or caught up, a
//! slow consumer, a route that went down or came up, a server that restarted (its start time
//! moved) or stopped answering, a consumer whose pending count grew for [`PENDING_GROWTH_S`].
//!
//! An event is placed at the reading that first showed it, and says since when it may have
//! happened (`since_s`, the last reading that still showed the old state): samples are a
//! second apart, and the event happened somewhere between. The first reading of a server is
//! its baseline, never an event.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::ServerTick;

/// How long a consumer's pending count must keep growing, reading after reading, to be an
/// event: long enough that a burst the consumer then drains is not one.
pub const PENDING_GROWTH_S: f64 = 5.0;

/// What kind of thing happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    StreamLeaderChange,
    MetaLeaderChange,
    ReplicaBehind,
    ReplicaCaughtUp,
    SlowConsumer,
    RouteDown,
    RouteUp,
    ServerRestart,
    ServerUnreachable,
    ServerBack,
    ConsumerPendingGrowing,
}

impl EventKind {
    /// As the report's marks and the text name it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::StreamLeaderChange => "stream leader change",
            EventKind::MetaLeaderChange => "meta leader change",
            EventKind::ReplicaBehind => "replica behind",
            EventKind::ReplicaCaughtUp => "replica caught up",
            EventKind::SlowConsumer => "slow consumer",
            EventKind::RouteDown => "route down",
            EventKind::RouteUp => "route up",
            EventKind::ServerRestart => "server restart",
            EventKind::ServerUnreachable => "server unreachable",
            EventKind::ServerBack => "server answering again",
            EventKind::ConsumerPendingGrowing => "consumer pending growing",
        }
    }
}

/// The run's figures around an event: the timeline's tick that ended last before it, or the
/// first that began after it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Around {
    /// The tick's end, seconds on the run's clock.
    pub t_s: f64,
    /// Messages per second in it: received where the run receives, else sent.
    pub msgs_per_sec: f64,
    /// Its P99 (corrected), when it measured latency.
    pub p99_ns: Option<u64>,
}

/// One thing that happened on the servers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerEvent {
    /// The reading that first showed it, seconds on the run's clock (for a consumer's pending
    /// growth: when the growth began).
    pub t_s: f64,
    /// The last reading before it that still showed the old state: it happened in between.
    pub since_s: f64,
    pub kind: EventKind,
    /// The server it was seen on, or that it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer: Option<String>,
    /// What changed, in words: `leader msgbench-1 → msgbench-2`.
    pub detail: String,
    /// The run's throughput and P99 just before and just after; filled in when the run is
    /// over (null when no tick was there).
    pub before: Option<Around>,
    pub after: Option<Around>,
}

impl ServerEvent {
    pub fn new(t_s: f64, since_s: f64, kind: EventKind, detail: String) -> Self {
        Self {
            t_s,
            since_s,
            kind,
            server: None,
            stream: None,
            consumer: None,
            detail,
            before: None,
            after: None,
        }
    }

    fn on(mut self, server: &str) -> Self {
        self.server = Some(server.to_string());
        self
    }

    fn of_stream(mut self, stream: &str) -> Self {
        self.stream = Some(stream.to_string());
        self
    }
}

/// What the detector remembers of one server (by its place in the ticks).
#[derive(Debug, Clone, Default)]
struct Known {
    name: String,
    up: bool,
    seen_at: f64,
    started: Option<String>,
    slow: Option<u64>,
    routes: Option<Vec<String>>,
}

/// A consumer's pending count, growing since `from_t`.
#[derive(Debug, Clone)]
struct Growth {
    from_t: f64,
    from: u64,
    last: u64,
    told: bool,
}

/// Finds events in successive ticks. One per run, fed in time order.
#[derive(Debug)]
pub struct Detector {
    pending_growth_s: f64,
    servers: Vec<Option<Known>>,
    /// Each stream's last leader, and when it was last seen leading.
    leaders: BTreeMap<String, (String, f64)>,
    meta: Option<(String, f64)>,
    /// (stream, replica) now behind.
    behind: BTreeSet<(String, String)>,
    /// Streams whose replicas have been seen: the first sight is their baseline.
    seen: BTreeSet<String>,
    growth: BTreeMap<(String, String), Growth>,
    last_t: Option<f64>,
}

impl Default for Detector {
    fn default() -> Self {
        Self::new(PENDING_GROWTH_S)
    }
}

impl Detector {
    /// A detector that calls a consumer's pending count growing after `pending_growth_s`.
    pub fn new(pending_growth_s: f64) -> Self {
        Self {
            pending_growth_s,
            servers: Vec::new(),
            leaders: BTreeMap::new(),
            meta: None,
            behind: BTreeSet::new(),
            seen: BTreeSet::new(),
            growth: BTreeMap::new(),
            last_t: None,
        }
    }

    /// The events `tick` shows against what came before, in the order found.
    pub fn feed(&mut self, tick: &ServerTick) -> Vec<ServerEvent> {
        let mut out = Vec::new();
        let since = self.last_t.unwrap_or(tick.t_s);
        self.servers
            .resize(tick.servers.len().max(self.servers.len()), None);
        for (i, p) in tick.servers.iter().enumerate() {
            self.server(i, p, tick.t_s, since, &mut out);
        }
        self.leaders(tick, &mut out);
        self.replicas(tick, since, &mut out);
        self.consumers(tick, &mut out);
        self.last_t = Some(tick.t_s);
        out
    }

    fn server(
        &mut self,
        i: usize,
        p: &super::ServerPoint,
        t: f64,
        since: f64,
        out: &mut Vec<ServerEvent>,
    ) {
        let Some(k) = self.servers[i].as_mut() else {
            // The baseline: no event, even for a counter already above zero.
            if p.up {
                self.servers[i] = Some(Known {
                    name: p.name.clone(),
                    up: true,
                    seen_at: t,
                    started: p.started.clone(),
                    slow: p.slow_consumers,
                    routes: p.routes_to.clone(),
                });
            }
            return;
        };
        if !p.up {
            if k.up {
                out.push(
                    ServerEvent::new(
                        t,
                        k.seen_at,
                        EventKind::ServerUnreachable,
                        format!("{} stopped answering its monitoring endpoint", k.name),
                    )
                    .on(&k.name),
                );
                k.up = false;
            }
            return;
        }
        let name = p.name.clone();
        if !k.up {
            out.push(
                ServerEvent::new(
                    t,
                    k.seen_at,
                    EventKind::ServerBack,
                    format!("{name} answers again"),
                )
                .on(&name),
            );
        }
        let same_process = k.started == p.started;
        if !same_process {
            out.push(
                ServerEvent::new(
                    t,
                    k.seen_at,
                    EventKind::ServerRestart,
                    format!(
                        "{name} restarted (started {}; was {})",
                        p.started.as_deref().unwrap_or("?"),
                        k.started.as_deref().unwrap_or("?")
                    ),
                )
                .on(&name),
            );
        }
        if let (true, Some(was), Some(now)) = (same_process, k.slow, p.slow_consumers) {
            if now > was {
                out.push(
                    ServerEvent::new(
                        t,
                        since,
                        EventKind::SlowConsumer,
                        format!(
                            "{name} cut off {} slow consumer{} (slow_consumers {was} → {now})",
                            now - was,
                            if now - was == 1 { "" } else { "s" }
                        ),
                    )
                    .on(&name),
                );
            }
        }
        if let (Some(was), Some(now)) = (&k.routes, &p.routes_to) {
            for gone in was.iter().filter(|r| !now.contains(r)) {
                out.push(
                    ServerEvent::new(
                        t,
                        since,
                        EventKind::RouteDown,
                        format!("route {name} → {gone} down"),
                    )
                    .on(&name),
                );
            }
            for new in now.iter().filter(|r| !was.contains(r)) {
                out.push(
                    ServerEvent::new(
                        t,
                        since,
                        EventKind::RouteUp,
                        format!("route {name} → {new} up"),
                    )
                    .on(&name),
                );
            }
        }
        *k = Known {
            name,
            up: true,
            seen_at: t,
            started: p.started.clone(),
            slow: p.slow_consumers,
            routes: p.routes_to.clone().or(k.routes.take()),
        };
    }

    fn leaders(&mut self, tick: &ServerTick, out: &mut Vec<ServerEvent>) {
        let t = tick.t_s;
        for s in &tick.streams {
            let Some(now) = s.leader.as_deref().filter(|l| !l.is_empty()) else {
                continue;
            };
            match self.leaders.get_mut(&s.name) {
                Some((was, seen)) if was != now => {
                    out.push(
                        ServerEvent::new(
                            t,
                            *seen,
                            EventKind::StreamLeaderChange,
                            format!("stream {} leader {was} → {now}", s.name),
                        )
                        .of_stream(&s.name)
                        .on(now),
                    );
                    *was = now.to_string();
                    *seen = t;
                }
                Some((_, seen)) => *seen = t,
                None => {
                    self.leaders.insert(s.name.clone(), (now.to_string(), t));
                }
            }
        }
        if let Some(now) = tick.meta_leader.as_deref().filter(|l| !l.is_empty()) {
            match &mut self.meta {
                Some((was, seen)) if was != now => {
                    out.push(
                        ServerEvent::new(
                            t,
                            *seen,
                            EventKind::MetaLeaderChange,
                            format!("meta leader {was} → {now}"),
                        )
                        .on(now),
                    );
                    *was = now.to_string();
                    *seen = t;
                }
                Some((_, seen)) => *seen = t,
                None => self.meta = Some((now.to_string(), t)),
            }
        }
    }

    fn replicas(&mut self, tick: &ServerTick, since: f64, out: &mut Vec<ServerEvent>) {
        for s in tick.streams.iter().filter(|s| !s.replicas.is_empty()) {
            let baseline = self.seen.insert(s.name.clone());
            for r in &s.replicas {
                let key = (s.name.clone(), r.name.clone());
                let behind = r.offline || !r.current;
                let was = self.behind.contains(&key);
                if baseline {
                    if behind {
                        self.behind.insert(key);
                    }
                } else if behind && !was {
                    let how = if r.offline {
                        "offline".to_string()
                    } else {
                        format!("not current, {} behind", r.lag)
                    };
                    out.push(
                        ServerEvent::new(
                            tick.t_s,
                            since,
                            EventKind::ReplicaBehind,
                            format!("stream {} replica {} fell behind ({how})", s.name, r.name),
                        )
                        .of_stream(&s.name)
                        .on(&r.name),
                    );
                    self.behind.insert(key);
                } else if !behind && was {
                    out.push(
                        ServerEvent::new(
                            tick.t_s,
                            since,
                            EventKind::ReplicaCaughtUp,
                            format!("stream {} replica {} caught up", s.name, r.name),
                        )
                        .of_stream(&s.name)
                        .on(&r.name),
                    );
                    self.behind.remove(&key);
                }
            }
        }
    }

    fn consumers(&mut self, tick: &ServerTick, out: &mut Vec<ServerEvent>) {
        let t = tick.t_s;
        let prev_t = self.last_t;
        for c in &tick.consumers {
            let key = (c.stream.clone(), c.name.clone());
            let Some(g) = self.growth.get_mut(&key) else {
                self.growth.insert(
                    key,
                    Growth {
                        from_t: t,
                        from: c.pending,
                        last: c.pending,
                        told: false,
                    },
                );
                continue;
            };
            if c.pending <= g.last {
                *g = Growth {
                    from_t: t,
                    from: c.pending,
                    last: c.pending,
                    told: false,
                };
                continue;
            }
            // Growing: a streak that begins now began at the reading before, where it was
            // lower.
            if g.last == g.from {
                g.from_t = prev_t.unwrap_or(t);
            }
            g.last = c.pending;
            if !g.told && t - g.from_t >= self.pending_growth_s {
                g.told = true;
                let mut e = ServerEvent::new(
                    g.from_t,
                    g.from_t,
                    EventKind::ConsumerPendingGrowing,
                    format!(
                        "consumer {} of stream {}: pending grew from {} to {} over {:.1} s \
                         (by {:.1} s)",
                        c.name,
                        c.stream,
                        g.from,
                        c.pending,
                        t - g.from_t,
                        t
                    ),
                )
                .of_stream(&c.stream);
                e.consumer = Some(c.name.clone());
                out.push(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ConsumerPoint, ReplicaPoint, ServerPoint, StreamPoint};
    use super::*;

    fn up(name: &str) -> ServerPoint {
        ServerPoint {
            name: name.into(),
            up: true,
            cpu_pct: Some(10.0),
            cores: Some(2),
            mem_bytes: Some(1),
            connections: Some(1),
            in_msgs_per_sec: None,
            out_msgs_per_sec: None,
            in_bytes_per_sec: None,
            out_bytes_per_sec: None,
            slow_consumers: Some(0),
            routes_to: Some(vec![]),
            healthy: Some(true),
            started: Some("t0".into()),
        }
    }

    fn down(name: &str) -> ServerPoint {
        ServerPoint {
            up: false,
            cpu_pct: None,
            slow_consumers: None,
            routes_to: None,
            started: None,
            ..up(name)
        }
    }

    fn stream(leader: &str, replicas: &[(&str, bool, bool)]) -> StreamPoint {
        StreamPoint {
            name: "S".into(),
            msgs: 1,
            bytes: 1,
            leader: Some(leader.into()),
            replicas: replicas
                .iter()
                .map(|(n, current, offline)| ReplicaPoint {
                    name: (*n).into(),
                    current: *current,
                    lag: 0,
                    offline: *offline,
                })
                .collect(),
        }
    }

    fn tick(t: f64, servers: Vec<ServerPoint>, streams: Vec<StreamPoint>) -> ServerTick {
        ServerTick {
            t_s: t,
            servers,
            streams,
            ..ServerTick::default()
        }
    }

    fn kinds(e: &[ServerEvent]) -> Vec<EventKind> {
        e.iter().map(|e| e.kind).collect()
    }

    #[test]
    fn a_killed_leader_shows_as_unreachable_route_down_leader_change_and_replica_behind() {
        let mut d = Detector::default();
        let mut n0 = up("n0");
        n0.routes_to = Some(vec!["n1".into(), "n2".into()]);
        let healthy = vec![stream("n1", &[("n0", true, false), ("n2", true, false)])];
        let first = d.feed(&tick(
            1.0,
            vec![n0.clone(), up("n1"), up("n2")],
            healthy.clone(),
        ));
        assert!(first.is_empty(), "a baseline: {first:?}");
        assert!(d
            .feed(&tick(2.0, vec![n0.clone(), up("n1"), up("n2")], healthy))
            .is_empty());
        // n1 (the leader) killed: n0 loses its route, n2 leads, and sees n1 offline.
        let mut n0_after = n0.clone();
        n0_after.routes_to = Some(vec!["n2".into()]);
        let e = d.feed(&tick(
            3.0,
            vec![n0_after, down("n1"), up("n2")],
            vec![stream("n2", &[("n0", true, false), ("n1", false, true)])],
        ));
        assert_eq!(
            kinds(&e),
            [
                EventKind::RouteDown,
                EventKind::ServerUnreachable,
                EventKind::StreamLeaderChange,
                EventKind::ReplicaBehind
            ]
        );
        let change = &e[2];
        assert_eq!(change.detail, "stream S leader n1 → n2");
        assert_eq!((change.t_s, change.since_s), (3.0, 2.0));
        assert_eq!(change.stream.as_deref(), Some("S"));
        assert_eq!(e[1].server.as_deref(), Some("n1"));
        assert!(e[3].detail.contains("n1") && e[3].detail.contains("offline"));
    }

    #[test]
    fn a_restart_slow_consumers_and_a_replica_catching_up_are_each_one_event() {
        let mut d = Detector::default();
        d.feed(&tick(
            1.0,
            vec![up("n0")],
            vec![stream("n0", &[("n1", false, true)])],
        ));
        let mut slow = up("n0");
        slow.slow_consumers = Some(2);
        let e = d.feed(&tick(
            2.0,
            vec![slow.clone()],
            vec![stream("n0", &[("n1", true, false)])],
        ));
        // The replica was behind at the baseline, so only its catching up is an event (not its
        // falling behind).
        assert_eq!(
            kinds(&e),
            [EventKind::SlowConsumer, EventKind::ReplicaCaughtUp]
        );
        assert!(d.feed(&tick(3.0, vec![slow.clone()], vec![])).is_empty());
        assert_eq!(
            kinds(&d.feed(&tick(4.0, vec![down("n0")], vec![]))),
            [EventKind::ServerUnreachable]
        );
        let mut again = up("n0");
        again.started = Some("t1".into());
        let e = d.feed(&tick(5.0, vec![again], vec![]));
        assert_eq!(kinds(&e), [EventKind::ServerBack, EventKind::ServerRestart]);
        assert_eq!(e[1].since_s, 3.0, "last seen up at 3 s");

        let mut d = Detector::default();
        d.feed(&tick(
            1.0,
            vec![],
            vec![stream("n0", &[("n1", true, false)])],
        ));
        let e = d.feed(&tick(
            2.0,
            vec![],
            vec![stream("n0", &[("n1", false, false)])],
        ));
        assert_eq!(kinds(&e), [EventKind::ReplicaBehind]);
        let e = d.feed(&tick(
            3.0,
            vec![],
            vec![stream("n0", &[("n1", true, false)])],
        ));
        assert_eq!(kinds(&e), [EventKind::ReplicaCaughtUp]);
    }

    #[test]
    fn pending_growing_is_an_event_once_it_has_grown_for_long_enough() {
        let mut d = Detector::new(3.0);
        let t = |s: f64, pending: u64| ServerTick {
            t_s: s,
            consumers: vec![ConsumerPoint {
                stream: "S".into(),
                name: "C".into(),
                pending,
                ..ConsumerPoint::default()
            }],
            ..ServerTick::default()
        };
        let mut found = Vec::new();
        for (s, p) in [
            (1.0, 5),
            (2.0, 5),
            (3.0, 50),
            (4.0, 80),
            (5.0, 120),
            (6.0, 200),
        ] {
            found.extend(d.feed(&t(s, p)));
        }
        assert_eq!(kinds(&found), [EventKind::ConsumerPendingGrowing]);
        // It began after the reading at 2 s, where pending was still 5; 3 s later it was told.
        assert_eq!(found[0].t_s, 2.0);
        assert!(
            found[0].detail.contains("from 5 to 120"),
            "{}",
            found[0].detail
        );
        // A dip ends the streak; a burst shorter than the limit is not an event.
        assert!(d.feed(&t(7.0, 10)).is_empty());
        assert!(d.feed(&t(8.0, 20)).is_empty());
        assert!(d.feed(&t(9.0, 5)).is_empty());
    }
}
