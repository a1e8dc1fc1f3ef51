//! The facts the "what limited the run" rule (`stats::server::limit`) judges, gathered from a
//! finished run: medians over the load's ticks of msgbench's own CPU and of each server's,
//! the `--link`'s rate against the bytes that crossed it, and how a paced run kept its
//! schedule. The verdict goes in the result under `limit`, and the text report prints it.

use crate::result::{RunResult, Section};
use crate::stats::server::limit::{
    self, Facts, HostUse, Limit, LinkUse, PaceUse, ServerUse, ToolUse,
};
use crate::stats::server::ServerPoint;
use crate::stats::timeline::Tick;

/// Publishers held back in writes this share of their time were held back by the far side.
const HELD_BACK_PCT: f64 = 50.0;

/// The verdict is the result's `limit` section.
impl Section for Limit {
    fn key(&self) -> &'static str {
        "limit"
    }
}

/// Judges `r` and puts the verdict in it; a run without a timeline has nothing to judge.
pub fn judge(r: &mut RunResult) {
    let Some(facts) = facts(r) else {
        return;
    };
    r.own.put(limit::judge(&facts));
}

/// What bounded one run of a capacity probe, judged with the SLOs it failed (`failed`, in
/// words: `p99<5ms failed at 40,000/s`): a resource at its limit still comes first, and the
/// SLO is named only when none was (rule 2). The run's own verdict when it failed none; `None`
/// for a run that was not judged (one on agents).
pub fn of_probe(r: &RunResult, failed: Option<String>) -> Option<Limit> {
    let judged = r.own.get::<Limit>()?;
    let Some(slo) = failed else {
        return Some(judged.clone());
    };
    let mut f = facts(r)?;
    f.slo_failed = Some(slo);
    Some(limit::judge(&f))
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[v.len() / 2])
}

/// The ticks of the load: whole ticks in which messages moved.
fn load_ticks(r: &RunResult) -> Vec<&Tick> {
    r.timeline.as_ref().map_or_else(Vec::new, |t| {
        t.ticks
            .iter()
            .filter(|k| k.span_s >= 0.5 && k.msgs.iter().any(|m| *m > 0))
            .collect()
    })
}

fn facts(r: &RunResult) -> Option<Facts> {
    let ticks = load_ticks(r);
    if ticks.is_empty() {
        return None;
    }
    let tools: Vec<_> = ticks.iter().filter_map(|k| k.tool).collect();
    let tool = median(tools.iter().map(|t| t.cpu_cores).collect()).map(|cpu_cores| ToolUse {
        cpu_cores,
        cores: median(tools.iter().map(|t| t.cores).collect()).unwrap_or(0.0),
        busiest_thread: median(
            tools
                .iter()
                .map(|t| t.busiest_runnable.unwrap_or(t.busiest_thread))
                .collect(),
        )
        .unwrap_or(0.0),
    });
    // The machine is a resource of its own only when it also runs the servers.
    let host = r
        .server
        .embedded
        .then(|| {
            let busy = median(tools.iter().filter_map(|t| t.host_cores_busy).collect())?;
            let cores = median(tools.iter().filter_map(|t| t.host_cores).collect())?;
            Some(HostUse {
                busy_cores: busy,
                cores,
            })
        })
        .flatten();
    let (servers, unread) = servers(&ticks);
    Some(Facts {
        tool,
        servers,
        unread,
        link: link(r, &ticks),
        pace: pace(r),
        host,
        slo_failed: None,
    })
}

/// Each server sampled: its CPU in cores and the cores it may use, medians over the load; and
/// those whose CPU was never read.
fn servers(ticks: &[&Tick]) -> (Vec<ServerUse>, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    for k in ticks {
        for p in k.server.iter().flat_map(|s| s.servers.iter()) {
            if !names.contains(&p.name) {
                names.push(p.name.clone());
            }
        }
    }
    let (mut used, mut unread) = (Vec::new(), Vec::new());
    for name in names {
        let points: Vec<_> = ticks
            .iter()
            .filter_map(|k| k.server.as_ref())
            .flat_map(|s| s.servers.iter())
            .filter(|p| p.name == name)
            .collect();
        let cpu = median(points.iter().filter_map(|p| p.cpu_pct).collect());
        let cores = median(
            points
                .iter()
                .filter_map(|p| p.cores.map(f64::from))
                .collect(),
        );
        match (cpu, cores) {
            (Some(c), Some(n)) => used.push(ServerUse {
                name,
                cpu_cores: c / 100.0,
                cores: n,
            }),
            _ => unread.push(name),
        }
    }
    (used, unread)
}

/// The `--link`'s bandwidth (the tighter direction's cap) against the payload bytes a second
/// that crossed it: as the servers behind it counted them coming in or going out (medians
/// over the load), else as msgbench's clients did. Protocol overhead is not counted, so small
/// messages understate the link's use.
fn link(r: &RunResult, ticks: &[&Tick]) -> Option<LinkUse> {
    let l = r.link.as_ref()?;
    let bps = [l.up.rate_bps, l.down.rate_bps]
        .into_iter()
        .flatten()
        .min()?;
    let side = |f: fn(&ServerPoint) -> Option<f64>| {
        median(
            ticks
                .iter()
                .filter_map(|k| k.server.as_ref())
                .map(|s| s.servers.iter().filter_map(f).sum::<f64>())
                .collect(),
        )
    };
    let servers = [side(|p| p.in_bytes_per_sec), side(|p| p.out_bytes_per_sec)]
        .into_iter()
        .flatten()
        .reduce(f64::max);
    let crossed = servers.unwrap_or_else(|| {
        r.by_role
            .values()
            .map(|s| s.throughput.bytes_per_sec)
            .fold(0.0, f64::max)
    });
    Some(LinkUse {
        spec: l.spec.clone(),
        bytes_per_sec: crossed,
        rate_bytes_per_sec: bps as f64 / 8.0,
    })
}

/// How a paced run kept its schedule.
fn pace(r: &RunResult) -> Option<PaceUse> {
    let p = r.pacing.as_ref()?;
    let held_back = p.write_blocked_pct.is_some_and(|w| w >= HELD_BACK_PCT);
    Some(PaceUse {
        target: p.target_rate,
        achieved: p.actual_rate,
        // Short of the rate with the socket taking the sends: the tool fell behind.
        kept_schedule: !p.below_target || held_back,
        held_back: p.below_target && held_back,
        send_lag_p99_ns: p.send_lag_p99_ns,
        write_blocked_pct: p.write_blocked_pct,
    })
}
