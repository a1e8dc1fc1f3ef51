//! How much of the machine's CPU is free, measured over a short window rather than assumed from
//! the core count: the idle time of the CPUs this process may run on (`/proc/stat`), plus what this process itself used
//! meanwhile (its own work is not a neighbour's), and the time runnable tasks spent waiting for
//! a CPU in that window (`/proc/pressure/cpu`). A latency run asks this before its subscriber
//! spins on a core (`--busy-poll auto`): a poller only pays where a core is really free for it,
//! and on a shared machine it takes the core the server and the publisher need.
//!
//! Linux only; elsewhere, or where `/proc` cannot be read, the figures are `None` and the caller
//! decides without them.

use std::time::{Duration, Instant};

use serde::Serialize;

/// What a window saw.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Free {
    /// CPUs this process may run on (its affinity), as `/proc/stat` accounts for them.
    pub cores: u32,
    /// CPUs' worth of time nobody else used over the window (idle, waiting for I/O, or this
    /// process's own); `None` where `/proc/stat` could not be read.
    pub idle_cores: Option<f64>,
    /// Of the window, the share during which some runnable task waited for a CPU, in percent
    /// (the kernel's CPU pressure, "some"); `None` without `/proc/pressure/cpu`.
    pub pressure_pct: Option<f64>,
    /// Tasks running or ready to run at the end of the window, this one included.
    pub runnable: Option<u32>,
    /// How long the window was.
    pub window_secs: f64,
}

/// A window being measured: the counters at its start.
pub struct Window {
    at: Instant,
    ticks: Option<Ticks>,
    own: Option<Duration>,
    stall_us: Option<u64>,
}

impl Window {
    /// Starts a window now.
    pub fn open() -> Self {
        Self {
            at: Instant::now(),
            ticks: Ticks::read(),
            own: own_cpu(),
            stall_us: stall_us(),
        }
    }

    /// Ends the window once it has lasted `at_least` (sleeping the rest), and says what it saw.
    pub fn close(self, at_least: Duration) -> Free {
        std::thread::sleep(at_least.saturating_sub(self.at.elapsed()));
        let wall = self.at.elapsed();
        let ticks = Ticks::read();
        let own = own_cpu();
        let stall = stall_us();
        let cores = ticks
            .as_ref()
            .or(self.ticks.as_ref())
            .map_or(0, |t| t.cores);
        let idle_cores = match (self.ticks, ticks) {
            (Some(a), Some(b)) if b.total > a.total => {
                let idle_share = (b.idle - a.idle) as f64 / (b.total - a.total) as f64;
                // This process's own CPU over the window, in cores: its connecting and waiting
                // is no neighbour's load.
                let ours = match (self.own, own) {
                    (Some(x), Some(y)) if !wall.is_zero() => {
                        y.saturating_sub(x).as_secs_f64() / wall.as_secs_f64()
                    }
                    _ => 0.0,
                };
                Some((idle_share * f64::from(b.cores) + ours).min(f64::from(b.cores)))
            }
            _ => None,
        };
        let pressure_pct = match (self.stall_us, stall) {
            (Some(a), Some(b)) if !wall.is_zero() => {
                Some((b.saturating_sub(a) as f64 / wall.as_micros() as f64 * 100.0).min(100.0))
            }
            _ => None,
        };
        Free {
            cores,
            idle_cores,
            pressure_pct,
            runnable: ticks.and_then(|t| t.runnable),
            window_secs: wall.as_secs_f64(),
        }
    }
}

/// The counters of `/proc/stat` summed over the CPUs this process may run on, in clock ticks.
#[derive(Debug, Clone, Copy)]
struct Ticks {
    idle: u64,
    total: u64,
    cores: u32,
    runnable: Option<u32>,
}

impl Ticks {
    fn read() -> Option<Self> {
        let allowed = allowed_cpus();
        parse_stat(&std::fs::read_to_string("/proc/stat").ok()?, |cpu| {
            allowed.as_ref().is_none_or(|a| a.contains(&cpu))
        })
    }
}

/// The `cpuN` lines' counters (user nice system idle iowait irq softirq steal; guest time is
/// already inside user and nice) summed over the CPUs `mine` accepts, how many those are, and
/// `procs_running`. The machine's other CPUs are no use to this process, however idle.
fn parse_stat(text: &str, mine: impl Fn(usize) -> bool) -> Option<Ticks> {
    let (mut idle, mut total, mut cores, mut runnable) = (0u64, 0u64, 0u32, None);
    for l in text.lines() {
        if let Some(n) = l.strip_prefix("procs_running ") {
            runnable = n.trim().parse().ok();
            continue;
        }
        let Some((id, rest)) = l.strip_prefix("cpu").and_then(|r| r.split_once(' ')) else {
            continue;
        };
        let Ok(cpu) = id.parse::<usize>() else {
            continue; // the all-CPU line
        };
        if !mine(cpu) {
            continue;
        }
        let f: Vec<u64> = (rest.split_whitespace().take(8))
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        if f.len() < 5 {
            return None;
        }
        // Waiting for I/O is idle time a poller could have.
        idle += f[3] + f[4];
        total += f.iter().sum::<u64>();
        cores += 1;
    }
    (cores > 0).then_some(Ticks {
        idle,
        total,
        cores,
        runnable,
    })
}

/// The CPUs this process may run on (its affinity mask); `None` where it cannot be read.
fn allowed_cpus() -> Option<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it for this process, and
    // CPU_ISSET only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        let n = 8 * std::mem::size_of::<libc::cpu_set_t>();
        Some((0..n).filter(|&c| libc::CPU_ISSET(c, &set)).collect())
    }
}

/// The microseconds some task has waited for a CPU since boot (`some ... total=`).
fn stall_us() -> Option<u64> {
    parse_pressure(&std::fs::read_to_string("/proc/pressure/cpu").ok()?)
}

fn parse_pressure(text: &str) -> Option<u64> {
    let some = text.lines().find(|l| l.starts_with("some "))?;
    some.split_whitespace()
        .find_map(|kv| kv.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The CPU time this process has used.
fn own_cpu() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to our local.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } == 0;
    ok.then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stat_lines_give_idle_with_iowait_the_total_the_cores_and_the_run_queue() {
        let text = "cpu  100 5 50 800 20 1 2 3 0 0\ncpu0 50 2 25 400 10 0 1 1 0 0\n\
                    cpu1 50 3 25 400 10 1 1 2 0 0\nintr 1 2 3\nprocs_running 3\nprocs_blocked 0\n";
        let t = parse_stat(text, |_| true).unwrap();
        assert_eq!(
            (t.idle, t.total, t.cores, t.runnable),
            (820, 981, 2, Some(3))
        );
        // Only the CPUs this process may use count.
        let t = parse_stat(text, |c| c == 1).unwrap();
        assert_eq!((t.idle, t.total, t.cores), (410, 492, 1));
        assert!(parse_stat("intr 1\n", |_| true).is_none());
        assert!(parse_stat("cpu0 x y z\n", |_| true).is_none());
    }

    #[test]
    fn the_pressure_file_gives_the_some_total() {
        let text = "some avg10=1.50 avg60=0.20 avg300=0.00 total=123456\n\
                    full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n";
        assert_eq!(parse_pressure(text), Some(123_456));
        assert_eq!(parse_pressure("full total=3\n"), None);
    }

    #[test]
    fn a_window_on_this_machine_lasts_as_asked_and_stays_within_its_cores() {
        let free = Window::open().close(Duration::from_millis(30));
        assert!(free.window_secs >= 0.03, "{free:?}");
        if std::path::Path::new("/proc/stat").exists() {
            assert!(free.cores >= 1, "{free:?}");
            let idle = free.idle_cores.expect("readable on Linux");
            assert!((0.0..=f64::from(free.cores)).contains(&idle), "{free:?}");
        }
        if let Some(p) = free.pressure_pct {
            assert!((0.0..=100.0).contains(&p), "{free:?}");
        }
    }
}
