//! Validated connection options shared by every scenario: how long to wait for a server,
//! whether to reconnect, how often to check that the server is alive, and the faults to inject
//! into the embedded server (listed, or drawn by a nemesis).

use std::time::Duration;

use crate::cli::{ConnArgs, Switch};
use crate::engine::conn::Dialing;
use crate::engine::pace::Stop;
use crate::engine::tls::{Tls, TlsOptions};
use crate::error::{Error, Result};
use crate::options::nemesis::{as_fault_list, Nemesis};
use crate::options::{server_choice, ServerChoice};
use crate::result::LinkSpec;
use crate::stats::faults::{FaultTarget, Faults};
use crate::stats::recovery::{Corrupt, CorruptKind, FaultKind, FaultSpec};
use crate::values::parse_duration;

/// The connection settings of a run: how the engine dials and keeps connections, plus the
/// fault to inject and the link to run over, which act on the target rather than on a
/// connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnOptions {
    pub dial: Dialing,
    /// The first fault of `faults`: what a scenario with one fault injects.
    pub fault: Option<FaultSpec>,
    /// Every fault of `--fault`; more than one, or one aimed at a role, only where
    /// [`ConnOptions::with_roles`] allowed it.
    pub faults: Faults,
    /// The impaired link to run over, if any.
    pub link: Option<LinkSpec>,
    /// `--nemesis`, which drew `faults`; and whether it drew as many as a run holds while the
    /// load had room for more.
    pub nemesis: Option<Nemesis>,
    pub nemesis_bounded: bool,
    /// `--allow-missed-faults`: a fault never injected does not fail the run.
    pub allow_missed_faults: bool,
}

impl ConnOptions {
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn new(conn: &ConnArgs) -> Result<Self> {
        let opts = Self::build(conn)?;
        if let Some(n) = &conn.nemesis {
            return Err(Error::flag(
                "--nemesis",
                n,
                "is for `js pub` and `kv put` on --cluster 3 or 5",
            ));
        }
        if let Some(f) = opts.faults.iter().find(|f| f.kind.on_disk()) {
            return Err(Error::flag(
                "--fault",
                conn.fault.as_deref().unwrap_or_default(),
                format!(
                    "{} acts on a JetStream store: it is for `js pub` and `kv put`",
                    f.kind.as_str()
                ),
            ));
        }
        let partition = opts.faults.iter().any(|f| f.kind == FaultKind::Partition);
        if opts.faults.len() > 1 || opts.faults.targeted() || partition {
            return Err(Error::flag(
                "--fault",
                conn.fault.as_deref().unwrap_or_default(),
                "a list of faults, one aimed at a role, or a partition, is for `js pub` and \
                 `kv put` on --cluster 3 or 5",
            ));
        }
        Ok(opts)
    }

    /// As [`ConnOptions::new`], for the commands that take a list of faults aimed at a
    /// cluster's roles (`js pub`, `kv put`): a role needs `--cluster 3` or `5` (a quorum that
    /// outlives one node), and on a cluster every fault must name its role. A `--nemesis`
    /// draws its faults here, for a load that `stop` bounds.
    ///
    /// # Errors
    /// As [`ConnOptions::new`].
    pub fn with_roles(conn: &ConnArgs, stop: Stop) -> Result<Self> {
        let mut opts = Self::build(conn)?;
        if let (Some(n), Some(given)) = (opts.nemesis, conn.nemesis.as_deref()) {
            if !matches!(conn.cluster, Some(3 | 5)) {
                return Err(Error::flag("--nemesis", given, "needs --cluster 3 or 5"));
            }
            let Stop::For(load) = stop else {
                return Err(Error::flag(
                    "--nemesis",
                    given,
                    "draws faults until the load ends: give --duration",
                ));
            };
            let drawn = n.draw(load);
            opts.faults =
                Faults::of(&drawn.faults).map_err(|why| Error::flag("--nemesis", given, why))?;
            opts.fault = drawn.faults.first().copied();
            opts.nemesis_bounded = drawn.bounded;
        }
        let (faults, given) = (opts.faults, conn.fault.as_deref().unwrap_or_default());
        if faults.targeted() && !matches!(conn.cluster, Some(3 | 5)) {
            return Err(Error::flag(
                "--fault",
                given,
                "a fault aimed at a role needs --cluster 3 or 5",
            ));
        }
        // One server has no peer to be cut off from, and cutting it off from its clients only
        // is what a pause shows already: a partition is a cluster's.
        if faults.iter().any(|f| f.kind == FaultKind::Partition) && conn.cluster.is_none() {
            return Err(Error::flag(
                "--fault",
                given,
                "a partition cuts nodes off from each other: it needs --cluster 3 or 5",
            ));
        }
        if on_disk(conn) {
            if let Some(why) = fuse_unavailable() {
                let (flag, given) = match &conn.nemesis {
                    Some(n) => ("--nemesis", n.as_str()),
                    None => ("--fault", given),
                };
                return Err(Error::flag(
                    flag,
                    given,
                    format!(
                        "a power loss or a damaged disk needs msgbench's lazy filesystem: {why}"
                    ),
                ));
            }
        }
        if conn.cluster.is_some() && faults.iter().any(|f| f.target.is_none()) {
            return Err(Error::flag(
                "--fault",
                given,
                "on --cluster, name the role each fault is aimed at: kill-leader, \
                 restart-follower, pause-meta-leader, kill-majority, restart-all, …",
            ));
        }
        Ok(opts)
    }

    /// A fault due when a run of `length` has already ended would never be injected, and the
    /// run would pass without having tested what it was asked to: refused before the start.
    ///
    /// # Errors
    /// [`Error::Usage`] naming `--fault` and the first fault that comes too late.
    pub fn faults_within(&self, conn: &ConnArgs, length: Duration) -> Result<()> {
        match self.faults.iter().find(|f| f.at >= length) {
            Some(f) => Err(Error::flag(
                "--fault",
                conn.fault.as_deref().unwrap_or_default(),
                format!(
                    "a fault at {} comes after the run's {} are over",
                    crate::format::duration_ns(f.at.as_nanos() as f64),
                    crate::format::duration_ns(length.as_nanos() as f64)
                ),
            )),
            None => Ok(()),
        }
    }

    fn build(conn: &ConnArgs) -> Result<Self> {
        let given = conn.fault.as_deref().unwrap_or_default();
        let list = conn
            .fault
            .as_deref()
            .map(|f| parse_faults(f).map_err(|why| Error::flag("--fault", f, why)))
            .transpose()?
            .unwrap_or_default();
        let faults = Faults::of(&list).map_err(|why| Error::flag("--fault", given, why))?;
        let fault = list.first().copied();
        let nemesis = conn
            .nemesis
            .as_deref()
            .map(|n| Nemesis::parse(n).map_err(|why| Error::flag("--nemesis", n, why)))
            .transpose()?;
        if let (Some(_), Some(f)) = (nemesis, &conn.fault) {
            return Err(Error::flag(
                "--fault",
                f,
                "cannot be combined with --nemesis, which draws the faults itself",
            ));
        }
        if fault.is_some() && !matches!(server_choice(conn)?, ServerChoice::Embedded { .. }) {
            return Err(Error::Usage(
                "--fault acts on the server msgbench starts itself; it cannot be combined with \
                 --server or NATS_URL"
                    .into(),
            ));
        }
        if conn.allow_missed_faults && conn.fault.is_none() && conn.nemesis.is_none() {
            return Err(Error::Usage(
                "--allow-missed-faults allows faults that were not injected; give --fault or \
                 --nemesis too"
                    .into(),
            ));
        }
        if conn.reconnect_jitter.is_some() && !conn.reconnect {
            return Err(Error::Usage(
                "--reconnect-jitter shapes the pauses of --reconnect; give --reconnect too".into(),
            ));
        }
        if conn.ping_interval.is_zero() {
            return Err(Error::flag("--ping-interval", "0", "must be more than 0"));
        }
        let link = conn
            .link
            .as_deref()
            .map(|l| LinkSpec::parse(l).map_err(|why| Error::flag("--link", l, why)))
            .transpose()?;
        if let (Some(l), true) = (&conn.link, partitions(conn)) {
            return Err(Error::flag(
                "--link",
                l,
                "cannot be combined with a partition fault or --nemesis: clients reach the \
                 nodes through the partition's proxies",
            ));
        }
        // A context's TLS files count when no flag names them.
        let [ctx_ca, ctx_cert, ctx_key] = crate::options::auth::sources(conn)?.tls_files;
        let wanted = TlsOptions {
            ca: conn.tls_ca.clone().or(ctx_ca),
            cert: conn.tls_cert.clone().or(ctx_cert),
            key: conn.tls_key.clone().or(ctx_key),
            insecure: conn.tls_insecure,
            first: conn.tls_first,
        };
        let tls = if wanted.wanted() {
            if wanted.insecure {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    eprintln!("warning: --tls-insecure: the server's certificate is not verified");
                });
            }
            // Shared by every connection for the rest of the process.
            Some(
                Tls::shared(wanted)
                    .map_err(|(flag, value, why)| Error::flag(&flag, &value, why))?,
            )
        } else {
            None
        };
        Ok(Self {
            dial: Dialing {
                connect_timeout: conn.connect_timeout,
                reconnect: conn.reconnect,
                jitter: conn.reconnect_jitter != Some(Switch::Off),
                ping_interval: conn.ping_interval,
                tls,
            },
            fault,
            faults,
            link,
            nemesis,
            nemesis_bounded: false,
            allow_missed_faults: conn.allow_missed_faults,
        })
    }

    /// Rejects `--fault` for commands that cannot measure one.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the command.
    pub fn no_fault(&self, command: &str) -> Result<()> {
        match self.faults.iter().next() {
            Some(_) => Err(Error::Usage(format!(
                "--fault is not available for `{command}`"
            ))),
            None => Ok(()),
        }
    }

    /// The parameters as they go into a result.
    pub fn params(&self) -> ConnParams {
        ConnParams {
            reconnect: self.dial.reconnect,
            ping_interval_secs: self.dial.ping_interval.as_secs_f64(),
            fault: self.fault,
            nemesis: self.nemesis.map(|n| {
                let list: Vec<FaultSpec> = self.faults.iter().copied().collect();
                NemesisParams {
                    seed: n.seed,
                    every_secs: n.every.as_secs_f64(),
                    faults: as_fault_list(&list),
                    bounded: self.nemesis_bounded,
                }
            }),
            link: self.link,
            tls: self.dial.tls.map(|t| TlsParams {
                ca: t.options.ca.is_some(),
                client_cert: t.options.cert.is_some(),
                insecure: t.options.insecure,
                first: t.options.first,
            }),
        }
    }
}

/// How the clients connected, as a result records it (no secrets).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ConnParams {
    pub reconnect: bool,
    pub ping_interval_secs: f64,
    pub fault: Option<FaultSpec>,
    /// `--nemesis` and the faults it drew; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nemesis: Option<NemesisParams>,
    pub link: Option<crate::result::LinkSpec>,
    pub tls: Option<TlsParams>,
}

/// A nemesis as a result records it: its seed and period, and what it drew, written as
/// `--fault` takes it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NemesisParams {
    pub seed: u64,
    pub every_secs: f64,
    pub faults: String,
    /// It drew as many faults as a run holds, and the load had room for more.
    pub bounded: bool,
}

/// Which TLS settings were given (never their files' contents).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct TlsParams {
    pub ca: bool,
    pub client_cert: bool,
    pub insecure: bool,
    pub first: bool,
}

/// Whether the run's faults partition nodes, so that the cluster must be started behind
/// proxies. A list that does not parse is refused elsewhere, with its reason.
pub fn partitions(conn: &ConnArgs) -> bool {
    // A nemesis may draw one.
    conn.nemesis.is_some()
        || conn
            .fault
            .as_deref()
            .and_then(|f| parse_faults(f).ok())
            .is_some_and(|l| l.iter().any(|f| f.kind == FaultKind::Partition))
}

/// Whether the run's faults act on the servers' disks (a power loss, a corruption), so that
/// each store must sit on the lazy filesystem. A list that does not parse is refused elsewhere.
pub fn on_disk(conn: &ConnArgs) -> bool {
    let nemesis = (conn.nemesis.as_deref())
        .and_then(|n| Nemesis::parse(n).ok())
        .is_some_and(|n| n.disk);
    nemesis
        || (conn.fault.as_deref())
            .and_then(|f| parse_faults(f).ok())
            .is_some_and(|l| l.iter().any(|f| f.kind.on_disk()))
}

/// Why a lazy filesystem cannot be mounted here, before anything starts: no FUSE device, or
/// no right to mount one (msgbench mounts with mount(2) itself, which needs CAP_SYS_ADMIN).
pub fn fuse_unavailable() -> Option<String> {
    fuse_unavailable_at(
        std::path::Path::new("/dev/fuse"),
        std::path::Path::new("/proc/self/status"),
    )
}

fn fuse_unavailable_at(device: &std::path::Path, status: &std::path::Path) -> Option<String> {
    if !device.exists() {
        return Some(format!(
            "{} is missing (load the fuse module: modprobe fuse)",
            device.display()
        ));
    }
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
    {
        return Some(format!("{} cannot be opened: {e}", device.display()));
    }
    // CAP_SYS_ADMIN is bit 21 of the effective capabilities.
    let caps = std::fs::read_to_string(status).ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
    });
    match caps {
        Some(c) if c & (1 << 21) != 0 => None,
        _ => {
            Some("no permission to mount a filesystem (mount(2) needs root: CAP_SYS_ADMIN)".into())
        }
    }
}

/// `--fault` as a comma-separated list, in time order. `restart-TARGET` after `kill-TARGET`
/// starts the nodes that kill took down, so it takes no HOLD.
///
/// # Errors
/// Why the text is not a list of faults.
pub fn parse_faults(s: &str) -> std::result::Result<Vec<FaultSpec>, String> {
    let list = s
        .split(',')
        .map(parse_fault)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    for (k, f) in list.iter().enumerate().skip(1) {
        if f.at < list[k - 1].at {
            return Err("list the faults in time order".into());
        }
        let after_kill = list[..k]
            .iter()
            .any(|e| e.kind == FaultKind::Kill && e.target.is_some() && e.target == f.target);
        if f.kind == FaultKind::Restart && after_kill && !f.hold.is_zero() {
            return Err(format!(
                "restart-{} after kill-{0} starts the node killed then; it takes no HOLD",
                f.target.map_or("", FaultTarget::as_str)
            ));
        }
    }
    Ok(list)
}

/// One fault, `KIND[-TARGET]@AT[:HOLD]`: `kill@5s`, `restart@5s:1s`, `pause@3s:200ms`,
/// `kill-leader@3s`, `pause-follower@2s:500ms`, `partition-leader@2s:5s`,
/// `power-loss-all@5s:2s`; or `corrupt[-TARGET]@AT:KIND[:SEED]` (`corrupt-follower@3s:bitflip`),
/// whose place a seed draws (from the clock when none is given, and recorded).
///
/// # Errors
/// Why the text is not a fault.
pub fn parse_fault(s: &str) -> std::result::Result<FaultSpec, String> {
    let (kind, rest) = s.split_once('@').ok_or(
        "expected KIND@TIME, such as kill@5s, restart@5s, pause@3s:200ms, \
             partition-leader@2s:5s, power-loss-all@5s:2s or corrupt-follower@3s:bitflip",
    )?;
    // `power-loss` is the one kind whose own name holds a dash.
    let (kind, target) = match kind.trim() {
        "power-loss" => ("power-loss", None),
        k => match k.strip_prefix("power-loss-") {
            Some(t) => ("power-loss", Some(t)),
            None => match k.split_once('-') {
                Some((k, t)) => (k, Some(t)),
                None => (k, None),
            },
        },
    };
    let target = target
        .map(|t| {
            FaultTarget::parse(t).ok_or_else(|| {
                format!("unknown target '{t}' (leader, follower, meta-leader, majority or all)")
            })
        })
        .transpose()?;
    let kind = match kind {
        "kill" => FaultKind::Kill,
        "restart" => FaultKind::Restart,
        "pause" => FaultKind::Pause,
        "partition" => FaultKind::Partition,
        "power-loss" => FaultKind::PowerLoss,
        "corrupt" => FaultKind::Corrupt,
        other => {
            return Err(format!(
                "unknown fault '{other}' (kill, restart, pause, partition, power-loss or corrupt)"
            ))
        }
    };
    if kind == FaultKind::Corrupt {
        return parse_corrupt(target, rest);
    }
    let (at, hold) = match rest.split_once(':') {
        Some((at, hold)) => (at, Some(hold)),
        None => (rest, None),
    };
    let at = parse_at(at)?;
    let hold = hold.map(parse_duration).transpose()?;
    let hold = match (kind, hold) {
        (FaultKind::Kill, Some(_)) => {
            return Err("kill takes no duration: the server stays down".into())
        }
        (FaultKind::Pause, None) => {
            return Err("pause needs a duration, such as pause@3s:200ms".into())
        }
        (FaultKind::Partition, None) => {
            return Err("partition needs a duration, such as partition-leader@2s:5s".into())
        }
        (_, h) => h.unwrap_or(Duration::ZERO),
    };
    Ok(FaultSpec {
        kind,
        target,
        at,
        hold,
        corrupt: None,
    })
}

fn parse_at(at: &str) -> std::result::Result<Duration, String> {
    if matches!(at.trim(), "0" | "0s") {
        Ok(Duration::ZERO)
    } else {
        parse_duration(at)
    }
}

/// `AT:KIND[:SEED]` of a corrupt fault.
fn parse_corrupt(
    target: Option<FaultTarget>,
    rest: &str,
) -> std::result::Result<FaultSpec, String> {
    let mut parts = rest.splitn(3, ':');
    let at = parse_at(parts.next().unwrap_or_default())?;
    let how = parts
        .next()
        .ok_or("corrupt needs a kind, bitflip or truncate, such as corrupt-follower@3s:bitflip")?;
    let how = CorruptKind::parse(how.trim())
        .ok_or_else(|| format!("unknown corruption '{how}' (bitflip or truncate)"))?;
    let seed = match parts.next() {
        Some(seed) => seed
            .trim()
            .parse()
            .map_err(|_| format!("the seed '{seed}' is not a whole number"))?,
        // Drawn once, and recorded with the fault, so the run can be asked for again.
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64 % 1_000_000),
    };
    Ok(FaultSpec {
        kind: FaultKind::Corrupt,
        target,
        at,
        hold: Duration::ZERO,
        corrupt: Some(Corrupt { kind: how, seed }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_fuse_device_and_a_missing_right_to_mount_are_named() {
        use std::path::Path;
        let why = fuse_unavailable_at(
            Path::new("/nonexistent/fuse"),
            Path::new("/proc/self/status"),
        );
        assert!(why.unwrap().contains("/nonexistent/fuse is missing"));
        let dir = std::env::temp_dir().join(format!("msgbench-caps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (dev, status) = (dir.join("dev"), dir.join("status"));
        std::fs::write(&dev, "").unwrap();
        std::fs::write(&status, "Name:\tx\nCapEff:\t0000000000000000\n").unwrap();
        let why = fuse_unavailable_at(&dev, &status).unwrap();
        assert!(why.contains("no permission to mount"), "{why}");
        std::fs::write(&status, "CapEff:\t000001ffffffffff\n").unwrap();
        assert_eq!(fuse_unavailable_at(&dev, &status), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn parses_power_losses_and_corruptions() {
        let p = parse_fault("power-loss-all@5s:2s").unwrap();
        assert_eq!(
            (p.kind, p.target, p.hold),
            (
                FaultKind::PowerLoss,
                Some(FaultTarget::All),
                Duration::from_secs(2)
            )
        );
        let one = parse_fault("power-loss@1s").unwrap();
        assert_eq!(
            (one.kind, one.target, one.hold),
            (FaultKind::PowerLoss, None, Duration::ZERO)
        );
        let c = parse_fault("corrupt-follower@3s:bitflip:42").unwrap();
        assert_eq!(
            (c.kind, c.target),
            (FaultKind::Corrupt, Some(FaultTarget::Follower))
        );
        assert_eq!(
            c.corrupt,
            Some(Corrupt {
                kind: CorruptKind::Bitflip,
                seed: 42
            })
        );
        assert_eq!(
            parse_fault("corrupt@1s:truncate")
                .unwrap()
                .corrupt
                .unwrap()
                .kind,
            CorruptKind::Truncate
        );
        for bad in [
            "power-loss-@1s",
            "power-lossy@1s",
            "corrupt@1s",
            "corrupt@1s:melt",
            "corrupt@1s:bitflip:x",
            "power-loss-boss@1s",
        ] {
            assert!(parse_fault(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_lists_of_faults_aimed_at_roles() {
        let list =
            parse_faults("kill-leader@3s,restart-leader@6s,pause-meta-leader@7s:200ms").unwrap();
        let kinds: Vec<(FaultKind, Option<FaultTarget>)> =
            list.iter().map(|f| (f.kind, f.target)).collect();
        assert_eq!(
            kinds,
            [
                (FaultKind::Kill, Some(FaultTarget::Leader)),
                (FaultKind::Restart, Some(FaultTarget::Leader)),
                (FaultKind::Pause, Some(FaultTarget::MetaLeader)),
            ]
        );
        assert_eq!(list[2].hold, Duration::from_millis(200));
        // A restart of another role than the one killed is a kill and a start after HOLD.
        assert!(parse_faults("kill-leader@1s,restart-follower@2s:1s").is_ok());
        for bad in [
            "kill-leader@2s,kill-follower@1s",
            "kill-leader@1s,restart-leader@2s:1s",
            "kill-boss@1s",
            "kill-@1s",
            "kill@1s,",
            "kill-all@1s:1s",
        ] {
            assert!(parse_faults(bad).is_err(), "{bad}");
        }
        let nine = ["kill-all@1s"; 9].join(",");
        assert!(Faults::of(&parse_faults(&nine).unwrap()).is_err());
    }

    #[test]
    fn parses_faults() {
        let ms = Duration::from_millis;
        assert_eq!(
            parse_fault("kill@5s").unwrap(),
            FaultSpec {
                target: None,
                kind: FaultKind::Kill,
                at: ms(5000),
                hold: ms(0),
                corrupt: None,
            }
        );
        assert_eq!(
            parse_fault("restart@1500ms:250ms").unwrap(),
            FaultSpec {
                target: None,
                kind: FaultKind::Restart,
                at: ms(1500),
                hold: ms(250),
                corrupt: None,
            }
        );
        assert_eq!(
            parse_fault("pause@3s:200ms").unwrap(),
            FaultSpec {
                target: None,
                kind: FaultKind::Pause,
                at: ms(3000),
                hold: ms(200),
                corrupt: None,
            }
        );
        for bad in [
            "kill",
            "boom@1s",
            "kill@1s:1s",
            "pause@1s",
            "pause@x:1s",
            "partition-leader@1s",
            "partition@1s",
            "restart@-1s",
            "",
        ] {
            assert!(parse_fault(bad).is_err(), "{bad}");
        }
    }
}
