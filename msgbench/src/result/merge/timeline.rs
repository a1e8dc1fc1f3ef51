//! The run second by second over all agents. The agents started together, so their n-th ticks
//! cover the same second (to within their clock uncertainty) and are merged by index; each
//! agent's own timeline stays in its document.

use super::read::Doc;
use super::MergeError;
use crate::stats::timeline::{
    Tick, TickLatency, TickStage, Timeline, TimelineClient, PER_CLIENT_LIMIT,
};

/// One agent's timeline as read back.
struct Part {
    clients: usize,
    ticks: Vec<Tick>,
}

/// The merged `timeline`: the agents' clients one after another, in agent order, and for each
/// tick index the sum of what the agents counted in it. `None` when no agent has a timeline.
pub(super) fn merged(docs: &[Doc<'_>]) -> Result<Option<Timeline>, MergeError> {
    let mut interval_s = None;
    let (mut clients, mut parts, mut truncated) = (Vec::new(), Vec::new(), false);
    for t in docs.iter().filter_map(|d| d.part("/timeline")) {
        interval_s.get_or_insert(t.f64("/interval_s")?);
        let mine = t.list("/clients")?;
        for c in &mine {
            clients.push(TimelineClient {
                role: c.role("/role")?,
                id: c.u32("/id")?,
            });
        }
        let ticks = t
            .list("/ticks")?
            .iter()
            .map(tick)
            .collect::<Result<_, _>>()?;
        parts.push(Part {
            clients: mine.len(),
            ticks,
        });
        truncated |= t.get("/truncated").and_then(|v| v.as_bool()) == Some(true);
    }
    let Some(interval_s) = interval_s else {
        return Ok(None);
    };
    let per_client = clients.len() <= PER_CLIENT_LIMIT;
    let n = parts.iter().map(|p| p.ticks.len()).max().unwrap_or(0);
    let ticks = (0..n).map(|i| at(&parts, i, per_client)).collect();
    Ok(Some(Timeline {
        interval_s,
        clients,
        ticks,
        truncated,
        // Each agent's load starts at its own instant on its own clock.
        load_start_s: None,
    }))
}

/// Tick `i` of all agents. Rates add up (the agents' ticks span the same second); an agent
/// whose run ended sooner adds nothing, and its clients' columns read zero.
///
/// Percentiles cannot be added: a tick's P50 and P99 are the largest of the agents', an upper
/// bound (no percentile of the whole exceeds the largest of the parts'). Count and max are
/// exact.
fn at(parts: &[Part], i: usize, per_client: bool) -> Tick {
    let mut merged = Tick {
        t_s: 0.0,
        span_s: 0.0,
        msgs: Vec::new(),
        sent_per_sec: 0.0,
        received_per_sec: 0.0,
        latency: None,
        errors: 0,
        // Every agent follows the one schedule from the common start: the first one's stage.
        stage: None,
        conns: None,
        // The servers are sampled by the coordinator, not by each agent.
        server: None,
        tool: None,
    };
    for p in parts {
        let tick = p.ticks.get(i);
        if per_client {
            // An early tick lists only the clients registered by then: the rest read zero.
            let mut cols = tick.map_or_else(Vec::new, |t| t.msgs.clone());
            cols.resize(p.clients, 0);
            merged.msgs.extend(cols);
        }
        let Some(t) = tick else { continue };
        merged.stage = merged.stage.or(t.stage);
        merged.t_s = merged.t_s.max(t.t_s);
        merged.span_s = merged.span_s.max(t.span_s);
        merged.sent_per_sec += t.sent_per_sec;
        merged.received_per_sec += t.received_per_sec;
        merged.errors += t.errors;
        if let Some(l) = &t.latency {
            let m = merged.latency.get_or_insert(TickLatency {
                count: 0,
                p50_ns: 0,
                p99_ns: 0,
                max_ns: 0,
            });
            m.count += l.count;
            m.p50_ns = m.p50_ns.max(l.p50_ns);
            m.p99_ns = m.p99_ns.max(l.p99_ns);
            m.max_ns = m.max_ns.max(l.max_ns);
        }
    }
    merged
}

fn tick(d: &Doc<'_>) -> Result<Tick, MergeError> {
    let latency = match d.part("/latency") {
        None => None,
        Some(l) => Some(TickLatency {
            count: l.u64("/count")?,
            p50_ns: l.u64("/p50_ns")?,
            p99_ns: l.u64("/p99_ns")?,
            max_ns: l.u64("/max_ns")?,
        }),
    };
    Ok(Tick {
        t_s: d.f64("/t_s")?,
        span_s: d.f64("/span_s")?,
        msgs: d
            .list("/msgs")?
            .iter()
            .map(|m| m.u64(""))
            .collect::<Result<_, _>>()?,
        sent_per_sec: d.f64("/sent_per_sec")?,
        received_per_sec: d.f64("/received_per_sec")?,
        latency,
        stage: match d.part("/stage") {
            None => None,
            Some(s) => Some(TickStage {
                index: s.u64("/index")? as usize,
                of: s.u64("/of")? as usize,
                target_rate: s.f64("/target_rate")?,
            }),
        },
        conns: None,
        server: None,
        tool: None,
        errors: d.u64("/errors")?,
    })
}
