//! msgbench's own CPU, read once a tick by the timeline's reader: how much of the cores it may
//! use the process used, how close its busiest thread came to a whole core, and how busy the
//! machine was. These say whether the tool itself was a run's limit (`stats::server::limit`).
//!
//! Everything comes from the kernel's own accounts: `getrusage` for the process (threads that
//! ended included), `/proc/self/task/*/schedstat` for each thread (nanoseconds run, and waited
//! on a run queue: a thread that was always running or runnable wanted a whole core),
//! `/proc/stat` for the machine, and the process's CPU affinity and cgroup quota for the cores
//! it may use. On a system without them a figure is left out, never guessed.

use std::collections::HashMap;
use std::time::Instant;

use crate::stats::server::ToolTick;

/// Threads past this many are not read one by one: the busiest thread is then not known.
const MAX_THREADS: usize = 512;

/// One reading of the process and the machine.
struct Snapshot {
    at: Instant,
    process_ns: u64,
    /// Each thread's (ran, waited) nanoseconds.
    threads: HashMap<u32, (u64, u64)>,
    /// The machine's (busy, all) jiffies.
    host: Option<(u64, u64)>,
}

/// Turns successive readings into one [`ToolTick`] per interval.
pub struct ToolCpu {
    last: Snapshot,
}

impl Default for ToolCpu {
    fn default() -> Self {
        Self { last: snapshot() }
    }
}

impl ToolCpu {
    /// The interval since the last call (or since this was made).
    pub fn tick(&mut self) -> Option<ToolTick> {
        let now = snapshot();
        let wall = now.at.saturating_duration_since(self.last.at).as_nanos() as f64;
        if wall <= 0.0 {
            return None;
        }
        let cpu_cores = now.process_ns.saturating_sub(self.last.process_ns) as f64 / wall;
        let (mut busiest, mut runnable) = (0.0f64, None::<f64>);
        for (tid, (ran, waited)) in &now.threads {
            let (r0, w0) = self.last.threads.get(tid).copied().unwrap_or((0, 0));
            let ran = ran.saturating_sub(r0) as f64 / wall;
            busiest = busiest.max(ran);
            let both = ran + waited.saturating_sub(w0) as f64 / wall;
            runnable = Some(runnable.map_or(both, |r| r.max(both)));
        }
        let (host_busy, host_cores) = match (now.host, self.last.host) {
            (Some((b1, a1)), Some((b0, a0))) if a1 > a0 => {
                let cores = online_cpus();
                (
                    Some(b1.saturating_sub(b0) as f64 / (a1 - a0) as f64 * cores),
                    Some(cores),
                )
            }
            _ => (None, None),
        };
        self.last = now;
        Some(ToolTick {
            cpu_cores,
            cores: allowed_cores(),
            busiest_thread: busiest.min(1.0),
            busiest_runnable: runnable.map(|r| r.min(1.0)),
            host_cores_busy: host_busy,
            host_cores,
        })
    }
}

fn snapshot() -> Snapshot {
    Snapshot {
        at: Instant::now(),
        process_ns: process_ns(),
        threads: threads(),
        host: host(),
    }
}

/// CPU time of the whole process so far (user and system), in nanoseconds; `None` where the
/// kernel does not say.
pub fn process_cpu_ns() -> Option<u64> {
    Some(process_ns()).filter(|&n| n > 0)
}

/// CPU time of the whole process (user and system), in nanoseconds.
fn process_ns() -> u64 {
    // SAFETY: rusage is plain data the kernel fills in.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0;
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    ns(u.ru_utime) + ns(u.ru_stime)
}

/// Each thread's nanoseconds run and waited on a run queue.
fn threads() -> HashMap<u32, (u64, u64)> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for entry in dir.flatten().take(MAX_THREADS) {
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            continue;
        };
        let mut f = text.split_whitespace().map(|v| v.parse::<u64>().ok());
        if let (Some(Some(ran)), Some(Some(waited))) = (f.next(), f.next()) {
            out.insert(tid, (ran, waited));
        }
    }
    out
}

/// The machine's busy and total jiffies from the first line of `/proc/stat`.
fn host() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let all: u64 = v.iter().sum();
    // idle and iowait are the 4th and 5th.
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    Some((all.saturating_sub(idle), all))
}

fn online_cpus() -> f64 {
    // SAFETY: sysconf only reads.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as f64
}

/// The cores this process may use: its CPU affinity, or its cgroup's CPU quota when that is
/// less (`cpu.max` of cgroup v2, `cpu.cfs_quota_us` of v1, on its own group or any above).
pub fn allowed_cores() -> f64 {
    let affinity = affinity().unwrap_or_else(online_cpus);
    match quota() {
        Some(q) => affinity.min(q),
        None => affinity,
    }
}

fn affinity() -> Option<f64> {
    // SAFETY: the set is plain data the kernel fills in; CPU_COUNT only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        Some(f64::from(libc::CPU_COUNT(&set)))
    }
}

/// The tightest CPU quota of the process's cgroup and its ancestors, in cores.
fn quota() -> Option<f64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut best: Option<f64> = None;
    let mut keep = |q: Option<f64>| {
        if let Some(q) = q.filter(|q| *q > 0.0) {
            best = Some(best.map_or(q, |b: f64| b.min(q)));
        }
    };
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        for dir in ancestors(path) {
            if controllers.is_empty() {
                keep(v2_quota(&format!("/sys/fs/cgroup{dir}/cpu.max")));
                keep(v2_quota(&format!("/sys/fs/cgroup/unified{dir}/cpu.max")));
            } else if controllers.split(',').any(|c| c == "cpu") {
                let base = format!("/sys/fs/cgroup/{controllers}{dir}");
                keep(v1_quota(&base));
                keep(v1_quota(&format!("/sys/fs/cgroup/cpu{dir}")));
            }
        }
    }
    best
}

/// `/a/b` and every group above it: `/a/b`, `/a`, ``.
fn ancestors(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut p = path.trim_end_matches('/').to_string();
    loop {
        out.push(p.clone());
        match p.rfind('/') {
            Some(i) if !p.is_empty() => p.truncate(i),
            _ => break,
        }
    }
    out
}

fn v2_quota(file: &str) -> Option<f64> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut f = text.split_whitespace();
    let quota: f64 = f.next()?.parse().ok()?;
    let period: f64 = f.next()?.parse().ok()?;
    (period > 0.0).then(|| quota / period)
}

fn v1_quota(dir: &str) -> Option<f64> {
    let read = |name: &str| -> Option<f64> {
        std::fs::read_to_string(format!("{dir}/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let quota = read("cpu.cfs_quota_us")?;
    let period = read("cpu.cfs_period_us")?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_shows_as_a_core_of_cpu() {
        let mut cpu = ToolCpu::default();
        let until = Instant::now() + std::time::Duration::from_millis(300);
        let mut x = 0u64;
        while Instant::now() < until {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let t = cpu.tick().expect("an interval");
        // The spinning thread ran or was runnable the whole time; on a busy machine it may
        // have run less, but never more than the interval.
        assert!(t.busiest_thread <= 1.0, "{t:?}");
        if let Some(r) = t.busiest_runnable {
            assert!(r > 0.8, "it never blocked: {t:?}");
        }
        assert!(t.cpu_cores > 0.0 && t.cores >= 1.0, "{t:?}");
    }

    #[test]
    fn a_groups_ancestors_go_up_to_the_root() {
        assert_eq!(ancestors("/a/b"), ["/a/b", "/a", ""]);
        assert_eq!(ancestors("/"), [""]);
    }
}
