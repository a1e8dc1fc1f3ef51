//! An agent's settings, checked once at start (its name, labels, the keys it trusts, its
//! lease), what its heartbeat says of the host, and the priority its heartbeat thread asks for.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cli::AgentArgs;
use crate::control::msg::{self, Heartbeat};
use crate::control::signed::{self, Gate};
use crate::error::{Error, Result};

/// The agent's settings, checked.
pub(super) struct Config {
    pub(super) name: String,
    pub(super) instance: String,
    pub(super) labels: BTreeMap<String, String>,
    pub(super) gate: Gate,
    pub(super) signed_only: bool,
    pub(super) lease: Duration,
}

impl Config {
    pub(super) fn new(args: &AgentArgs) -> Result<Self> {
        let c = &args.conn;
        for (flag, given) in [
            ("--fault", c.fault.is_some()),
            ("--nemesis", c.nemesis.is_some()),
            ("--link", c.link.is_some()),
            ("--cluster", c.cluster.is_some()),
        ] {
            if given {
                return Err(Error::Usage(format!(
                    "{flag} belongs to a run: give it to the coordinator, not to the agent"
                )));
            }
        }
        let name = match &args.name {
            Some(n) => n.clone(),
            None => hostname(),
        };
        msg::check_name(&name).map_err(|why| Error::flag("--name", &name, why))?;
        let mut labels = BTreeMap::new();
        for l in &args.labels {
            let (k, v) = parse_label(l).map_err(|why| Error::flag("--label", l, why))?;
            labels.insert(k, v);
        }
        let mut trusted = args.trust.clone();
        if let Some(f) = &args.trust_file {
            trusted.extend(signed::read_trust_file(f)?);
        }
        if trusted.is_empty() && !args.insecure_control {
            return Err(Error::Usage(
                "agent: give --trust PUBLIC_KEY or --trust-file FILE (the coordinator's key from \
                 `msgbench agent keygen`), or --insecure-control on a closed test network"
                    .into(),
            ));
        }
        if trusted.is_empty() {
            eprintln!(
                "warning: --insecure-control: this agent runs any plan anyone who can publish on \
                 the control server sends it"
            );
        }
        if args.lease < Duration::from_millis(500) {
            return Err(Error::flag(
                "--lease",
                &humantime::format_duration(args.lease).to_string(),
                "must be at least 500ms (coordinators renew every 250ms)",
            ));
        }
        Ok(Self {
            name,
            instance: crate::control::bus::unique(),
            labels,
            signed_only: !trusted.is_empty(),
            gate: Gate::new(trusted, args.insecure_control)?,
            lease: args.lease,
        })
    }

    /// Its heartbeat, with the runs it holds and what it is doing in each.
    pub(super) fn heartbeat(&self, runs: &[(String, &str)]) -> Heartbeat {
        let busy = runs.first().map(|(r, _)| r.clone());
        let runs = (runs.iter())
            .map(|(r, d)| (r.clone(), d.to_string()))
            .collect();
        Heartbeat {
            name: self.name.clone(),
            instance: self.instance.clone(),
            labels: self.labels.clone(),
            version: env!("CARGO_PKG_VERSION").into(),
            plan_schema: crate::plan::SCHEMA.into(),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            free_memory_bytes: free_memory(),
            busy,
            runs,
            signed_only: self.signed_only,
        }
    }
}

/// Asks for a higher scheduling priority for the calling thread (nice -10). Allowed as root,
/// with CAP_SYS_NICE or where RLIMIT_NICE permits; elsewhere the thread keeps the priority it
/// has, which is no lower than the load's.
pub(super) fn raise_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no arguments; setpriority changes only this thread's nice value (on
    // Linux, PRIO_PROCESS with a thread id names that one thread).
    unsafe {
        let tid = libc::gettid();
        let _ = libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, -10);
    }
}

/// `k=v`, both non-empty.
pub fn parse_label(l: &str) -> std::result::Result<(String, String), String> {
    match l.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
            Ok((k.trim().to_string(), v.trim().to_string()))
        }
        _ => Err("expected K=V".into()),
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().replace('.', "-"))
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "agent".into())
}

fn free_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
