//! Validated options of `msgbench conns`: its flags checked, and the process's open-file limit
//! raised to fit the connections before any server is started (a server msgbench starts
//! inherits the limit).

use std::time::Duration;

use super::args::ConnsArgs;
use crate::cli::Subscribe;
use crate::engine::BACKOFF_MAX;
use crate::error::{Error, Result};
use crate::options::conn::ConnOptions;
use crate::options::{check_subject, server_choice, ServerChoice};
use crate::stats::recovery::FaultKind;

/// File descriptors a run needs beyond one per connection: the checker's and the probe's
/// connections, one epoll instance a worker, the output files, the standard streams, and what
/// a server msgbench starts (which inherits the limit) keeps besides its clients' sockets.
const FD_HEADROOM: u64 = 256;

#[derive(Debug, Clone)]
pub struct ConnsOptions {
    pub clients: u32,
    /// `None`: as fast as `in_flight` allows.
    pub connect_rate: Option<f64>,
    pub in_flight: usize,
    pub subscribe: Subscribe,
    pub subject: Option<String>,
    pub hold: Duration,
    /// `None`: no checks.
    pub check_every: Option<Duration>,
    /// `--server-monitor`: where the servers' memory is read (else the embedded server's
    /// process).
    pub server_monitor: Option<crate::options::monitor::Monitors>,
    pub timeout: Duration,
    pub server: ServerChoice,
    pub conn: ConnOptions,
    /// What was done about the open-file limit, said once before the run.
    pub fd_note: Option<String>,
}

impl ConnsOptions {
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work, or the open-file limit that
    /// cannot fit the connections.
    pub fn new(a: &ConnsArgs) -> Result<Self> {
        // A link proxy would hold two more sockets and a share of the memory per connection,
        // and a cluster's connections would all land on its first node: both would falsify
        // what conns measures.
        if a.conn.link.is_some() {
            return Err(Error::Usage(
                "--link is not available for `conns` (its proxy would count in the memory and the open files per connection)".into(),
            ));
        }
        if a.conn.cluster.is_some() {
            return Err(Error::Usage(
                "--cluster is not available for `conns` (give a node's URL with --server)".into(),
            ));
        }
        if a.in_flight == 0 {
            return Err(Error::flag("--in-flight", "0", "must be at least 1"));
        }
        let conn = ConnOptions::new(&a.conn)?;
        if a.conn.allow_missed_faults {
            return Err(Error::Usage(
                "--allow-missed-faults is not for `conns`: its restart comes within --hold, \
                 which is checked before the start"
                    .into(),
            ));
        }
        if let Some(f) = &conn.fault {
            let text = a.conn.fault.as_deref().unwrap_or_default();
            if f.kind != FaultKind::Restart {
                return Err(Error::flag(
                    "--fault",
                    text,
                    "`conns` takes restart@T[:HOLD] (the reconnect herd)",
                ));
            }
            if !a.conn.reconnect {
                return Err(Error::Usage(
                    "--fault restart in `conns` measures the way back: give --reconnect too".into(),
                ));
            }
            if f.at + f.hold >= a.hold {
                return Err(Error::flag(
                    "--fault",
                    text,
                    "the server must be down and back within --hold (its time plus its hold)",
                ));
            }
            // The hold is not stretched to watch the herd: a connection still out when it
            // ends counts as never back. So it must leave every client time for one attempt
            // on the restarted server, the longest pause between attempts.
            let longest_pause = if conn.dial.jitter {
                BACKOFF_MAX.mul_f64(1.5)
            } else {
                BACKOFF_MAX
            };
            let left = a.hold - (f.at + f.hold);
            if left < longest_pause {
                return Err(Error::flag(
                    "--fault",
                    text,
                    format!(
                        "it leaves {} of --hold after the server is back, and a client may wait \
                         {} between reconnect attempts: a longer --hold or an earlier fault",
                        humantime::format_duration(left),
                        humantime::format_duration(longest_pause)
                    ),
                ));
            }
        }
        let check_every =
            match (a.check_every, a.subscribe) {
                (Some(_), Subscribe::None) => return Err(Error::Usage(
                    "--check-every checks what subscribed connections receive; give --subscribe \
                     own or shared"
                        .into(),
                )),
                (_, Subscribe::None) => None,
                (Some(d), _) => (!d.is_zero()).then_some(d),
                (None, _) => Some(Duration::from_secs(1)),
            };
        if let Some(subject) = &a.subject {
            if a.subscribe == Subscribe::None {
                return Err(Error::Usage(
                    "--subject names what the connections subscribe to; give --subscribe own or shared"
                        .into(),
                ));
            }
            check_subject(subject, false).map_err(|why| Error::flag("--subject", subject, why))?;
        }
        let monitors = crate::options::monitor::Monitors::from_conn(&a.conn)?;
        let fd_note = raise_fd_limit(u64::from(a.clients) + FD_HEADROOM)?;
        Ok(Self {
            clients: a.clients,
            connect_rate: (a.connect_rate > 0.0).then_some(a.connect_rate),
            in_flight: a.in_flight as usize,
            subscribe: a.subscribe,
            subject: a.subject.clone(),
            hold: a.hold,
            check_every,
            server_monitor: (!monitors.endpoints.is_empty()).then_some(monitors),
            timeout: a.timeout,
            server: server_choice(&a.conn)?,
            conn,
            fd_note,
        })
    }

    /// The parameters as a result records them.
    pub fn params(&self) -> super::Params {
        super::Params {
            connection: self.conn.params(),
            clients: self.clients,
            connect_rate: self.connect_rate,
            in_flight: self.in_flight,
            subscribe: self.subscribe,
            subject: self.subject.clone(),
            hold_secs: self.hold.as_secs_f64(),
            check_every_secs: self.check_every.map(|d| d.as_secs_f64()),
            timeout_secs: self.timeout.as_secs_f64(),
        }
    }
}

/// Raises the open-file limit to `want` when it is lower: the soft limit up to the hard one,
/// and the hard one too where the process may (it is privileged). Returns what it did, to be
/// said once; refuses the run when the limit cannot fit it.
fn raise_fd_limit(want: u64) -> Result<Option<String>> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(None);
    }
    if lim.rlim_cur >= want {
        return Ok(None);
    }
    let (old_soft, old_hard) = (lim.rlim_cur, lim.rlim_max);
    let set = |soft: u64, hard: u64| {
        let l = libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        };
        // SAFETY: setrlimit only reads the struct.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) == 0 }
    };
    if old_hard >= want {
        if set(want, old_hard) {
            return Ok(Some(format!(
                "raised the open-file limit from {old_soft} to {want} (the hard limit is {old_hard})"
            )));
        }
    } else if set(want, want) {
        return Ok(Some(format!(
            "raised the open-file limit from {old_soft} to {want}, and its hard limit from {old_hard}"
        )));
    }
    Err(Error::Usage(format!(
        "--clients needs about {want} open files, but the hard limit is {old_hard} and cannot \
         be raised by this process (raise it with `ulimit -Hn`, as root)"
    )))
}
