//! The embedded default: a local `nats-server` that msgbench starts when no server is given, on
//! a free loopback port, with JetStream in a temporary directory; and its clean-up on every way
//! out (normal end, error, Ctrl-C, SIGTERM, a panic that unwinds).
//!
//! The server runs in its own process group so that a Ctrl-C typed at msgbench reaches msgbench
//! only: msgbench then finishes its run, writes results, and stops the server itself. On Linux
//! the server also gets a parent-death signal, so even a `kill -9` of msgbench leaves no orphan.
//! Starting and stopping a server share its process handling; where the binary is found is
//! [`find`]. A local cluster's start-up is in
//! [`cluster`], the proxies that partition it in [`partition`], the lazy filesystem a power
//! loss or a damaged disk needs under each store in [`lazyfs`], and those two faults in
//! [`disk`].

pub mod cluster;
pub mod disk;
mod find;
#[cfg(target_os = "linux")]
pub mod lazyfs;
pub mod partition;
mod scratch;

pub use find::{find_binary, search_dirs};

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::options::ServerChoice;
use crate::result::{ClusterNode, ClusterReport, LinkSpec, ServerSetting};
use crate::wire::url::{self, ServerUrl};

/// The server version the project's install scripts pin; named in the install hint.
pub const PINNED_VERSION: &str = "v2.15.2";

/// The servers a run talks to, the embedded one when msgbench started it (with the other nodes
/// of a local cluster), and the link proxy in front of them when the run has `--link`.
pub struct Target {
    /// Where clients connect: the first node, or the proxy in front of it.
    pub urls: Vec<ServerUrl>,
    /// Where clients reach each node of a local cluster (proxied with a link); empty otherwise.
    pub node_urls: Vec<ServerUrl>,
    // The proxies go before the servers they forward to.
    pub link: Option<crate::link::Link>,
    /// The proxies every route and client connection of a local cluster crosses, when the
    /// run partitions nodes.
    pub mesh: Option<partition::Mesh>,
    pub embedded: Option<EmbeddedServer>,
    /// The other nodes of a local cluster.
    pub peers: Vec<EmbeddedServer>,
    /// msgbench started these servers (also true for a node of its cluster that this target
    /// does not own).
    pub local: bool,
    /// The `--server-config` settings the servers were started with.
    pub settings: Vec<ServerSetting>,
}

impl Target {
    /// Says in a result what a proxy would hide (the server behind it, and the link itself)
    /// and which nodes a local cluster has.
    pub fn annotate(&self, result: &mut crate::result::RunResult) {
        if let Some(s) = self.embedded.as_ref().filter(|_| !self.settings.is_empty()) {
            let varz = s.monitor_get("/varz").and_then(|mut v| {
                v.get_mut("jetstream")
                    .and_then(|j| j.get_mut("config"))
                    .map(serde_json::Value::take)
            });
            let shown = (self.settings.iter())
                .map(|s| ServerSetting {
                    key: s.key.clone(),
                    value: crate::options::server_config::shown(&s.key, &s.value),
                })
                .collect();
            result.server.config = Some(crate::result::ServerConfig {
                settings: shown,
                jetstream_reported: varz,
            });
        }
        if let Some(link) = &self.link {
            if let Some(first) = link.report.servers.first() {
                result.server.url.clone_from(first);
            }
            result.link = Some(link.report.clone());
        }
        if !self.peers.is_empty() {
            let nodes = std::iter::once(self.embedded.as_ref())
                .chain(self.peers.iter().map(Some))
                .flatten()
                .enumerate()
                .map(|(i, s)| ClusterNode {
                    name: node_name(i),
                    url: s.url.to_string(),
                })
                .collect();
            result.cluster = Some(ClusterReport { nodes });
        }
    }

    /// Every node's URL for clients that follow a cluster through faults: the first node
    /// first (where clients connect, as with [`Target::urls`]), then the others, which a
    /// reconnect tries in turn when the first is down.
    pub fn every_node(&self) -> &[ServerUrl] {
        if self.node_urls.is_empty() {
            &self.urls
        } else {
            &self.node_urls
        }
    }

    /// Node `i` of a local cluster, as a target of its own that owns nothing.
    pub fn node(&self, i: usize) -> Option<Target> {
        self.node_urls.get(i).map(|u| Target {
            urls: vec![u.clone()],
            node_urls: Vec::new(),
            link: None,
            mesh: None,
            embedded: None,
            peers: Vec::new(),
            local: self.local,
            settings: self.settings.clone(),
        })
    }
}

/// The name of node `i` of a local cluster.
pub fn node_name(i: usize) -> String {
    format!("msgbench-{i}")
}

/// Resolves the user's choice into servers to connect to, starting one (or a cluster) if
/// needed, behind an impaired link if one is asked for.
///
/// # Errors
/// [`Error::EmbeddedServer`] when no `nats-server` can be found or it does not start (or a
/// cluster does not form); [`Error::Io`] when the link proxy cannot start.
pub fn resolve(choice: &ServerChoice, link: Option<LinkSpec>) -> Result<Target> {
    let (urls, embedded, peers, mesh) = match choice {
        ServerChoice::Urls(urls) => (urls.clone(), None, Vec::new(), None),
        ServerChoice::Embedded {
            binary,
            nodes,
            settings,
            partitions,
            lazy,
            auth,
        } => {
            let binary = find_binary(binary.as_deref())?;
            let how = Start {
                settings,
                lazy: *lazy,
                auth,
            };
            let (mut servers, mesh) = if *nodes > 1 {
                cluster::start(&binary, *nodes, &how, *partitions)?
            } else {
                let one = EmbeddedServer::start_with(&binary, &[], &how)?;
                (vec![one], None)
            };
            let urls = match &mesh {
                // Clients reach each node through its proxy, so a partition cuts them off too.
                Some(m) => (m.client_ports.iter())
                    .map(|&port| ServerUrl {
                        port,
                        ..servers[0].url.clone()
                    })
                    .collect(),
                None => servers.iter().map(|s| s.url.clone()).collect(),
            };
            let first = servers.remove(0);
            (urls, Some(first), servers, mesh)
        }
    };
    let clustered = !peers.is_empty();
    let (urls, link) = match link {
        Some(spec) => {
            let (proxied, link) = crate::link::attach(&urls, spec)?;
            (proxied, Some(link))
        }
        None => (urls, None),
    };
    Ok(Target {
        node_urls: if clustered { urls.clone() } else { Vec::new() },
        urls: if clustered {
            vec![urls[0].clone()]
        } else {
            urls
        },
        link,
        mesh,
        local: embedded.is_some(),
        embedded,
        peers,
        settings: match choice {
            ServerChoice::Embedded { settings, .. } => settings.clone(),
            ServerChoice::Urls(_) => Vec::new(),
        },
    })
}

/// How servers are started: their `--server-config` settings, and whether their stores sit on
/// the lazy filesystem.
pub struct Start<'a> {
    pub settings: &'a [ServerSetting],
    pub lazy: bool,
    /// The credentials every connection to them presents, msgbench's own (a cluster forming,
    /// a fault finding the leader) as the clients'.
    pub auth: &'a url::Auth,
}

/// A running local `nats-server`. Dropping it stops the server and removes its directory.
///
/// The process sits behind a mutex so that a fault can be injected (kill, pause, restart)
/// while the run's clients hold the server's address.
pub struct EmbeddedServer {
    child: Mutex<Option<Child>>,
    /// The thread that starts the server again after a fault; see [`Keeper`].
    keeper: std::sync::OnceLock<Keeper>,
    binary: PathBuf,
    extra: Vec<String>,
    dir: PathBuf,
    pub url: ServerUrl,
    /// The monitoring port of the running process (0 before it listens and once it is
    /// killed); a restart gets a new one. Shared with the sampler of the run's servers.
    monitor_port: std::sync::Arc<std::sync::atomic::AtomicU16>,
    /// The lazy filesystem its store sits on, when the run's faults act on the disk.
    #[cfg(target_os = "linux")]
    lazy: Option<lazyfs::LazyMount>,
}

impl EmbeddedServer {
    /// Starts `binary` on 127.0.0.1 on a port the server picks, with JetStream stored in a new
    /// temporary directory, and waits until it accepts connections. `extra` arguments are
    /// appended (tests use them for a config file).
    ///
    /// # Errors
    /// [`Error::EmbeddedServer`] when it cannot be started or does not come up in 10 s.
    pub fn start(binary: &Path, extra: &[&str]) -> Result<Self> {
        Self::start_configured(binary, extra, &[])
    }

    /// As [`EmbeddedServer::start`], with `settings` written into a config file the server
    /// reads (`-c`); the flags msgbench passes still decide the address, ports and storage.
    ///
    /// # Errors
    /// As [`EmbeddedServer::start`]; a setting the server refuses is named by its log line.
    pub fn start_configured(
        binary: &Path,
        extra: &[&str],
        settings: &[ServerSetting],
    ) -> Result<Self> {
        let how = Start {
            settings,
            lazy: false,
            auth: &url::Auth::None,
        };
        Self::start_with(binary, extra, &how)
    }

    /// As [`EmbeddedServer::start_configured`]; with `how.lazy`, its store sits on a lazy
    /// filesystem of its own ([`lazyfs`]), mounted before the server starts.
    ///
    /// # Errors
    /// As [`EmbeddedServer::start`], and a filesystem that cannot be mounted.
    pub fn start_with(binary: &Path, extra: &[&str], how: &Start<'_>) -> Result<Self> {
        let settings = how.settings;
        let dir = scratch::make_temp_dir()?;
        let mut extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        if !settings.is_empty() {
            let conf = dir.join("server.conf");
            fs::write(&conf, crate::options::server_config::render(settings)).map_err(|e| {
                Error::EmbeddedServer(format!("cannot write the server's config file: {e}"))
            })?;
            extra.extend(["-c".to_string(), conf.display().to_string()]);
        }
        let mut server = EmbeddedServer {
            child: Mutex::new(None),
            keeper: std::sync::OnceLock::new(),
            binary: binary.to_path_buf(),
            extra,
            dir,
            url: ServerUrl {
                host: "127.0.0.1".into(),
                port: 0,
                auth: how.auth.clone(),
                tls: false,
                tls_name: None,
            },
            monitor_port: std::sync::Arc::new(std::sync::atomic::AtomicU16::new(0)),
            #[cfg(target_os = "linux")]
            lazy: None,
        };
        if how.lazy {
            server.mount_lazy()?;
        }
        server.url.port = server.spawn(None)?;
        Ok(server)
    }

    /// Starts the process on `port` (a free one when `None`) and waits for it to listen.
    fn spawn(&self, port: Option<u16>) -> Result<u16> {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .map_err(|e| Error::EmbeddedServer(format!("cannot create the server log: {e}")))?;
        let mut cmd = Command::new(&self.binary);
        // The monitoring port (any free one) is how msgbench reads a node's roles and settings.
        cmd.args(["-a", "127.0.0.1", "-m", "-1", "-p"])
            .arg(port.map_or("-1".to_string(), |p| p.to_string()))
            .args(["-js", "-sd"])
            .arg(self.dir.join("jetstream"))
            .arg("--ports_file_dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        isolate(&mut cmd);
        let spawned = match port {
            // A restart comes from a short-lived thread; see `Keeper` for why it does not spawn.
            Some(_) => self.keeper.get_or_init(Keeper::start).spawn(cmd),
            None => cmd.spawn(),
        };
        let child = spawned.map_err(|e| {
            Error::EmbeddedServer(format!("cannot start '{}': {e}", self.binary.display()))
        })?;
        let pid = child.id();
        *self.lock() = Some(child);
        self.wait_for_port(pid, Duration::from_secs(10))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Kills the server at once (SIGKILL): a crash, with no goodbye to its clients.
    pub fn kill(&self) {
        self.monitor_port
            .store(0, std::sync::atomic::Ordering::Release);
        if let Some(mut child) = self.lock().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a killed server again on the same port, with the same storage.
    ///
    /// # Errors
    /// [`Error::EmbeddedServer`] when it does not come back.
    pub fn restart(&self) -> Result<()> {
        self.kill();
        self.spawn(Some(self.url.port)).map(|_| ())
    }

    /// Freezes (SIGSTOP) or thaws (SIGCONT) the server: it stops responding but closes nothing.
    pub fn freeze(&self, frozen: bool) {
        #[cfg(unix)]
        if let Some(pid) = self.pid() {
            let sig = if frozen { libc::SIGSTOP } else { libc::SIGCONT };
            // SAFETY: signals a child process we own.
            unsafe {
                libc::kill(pid as libc::pid_t, sig);
            }
            // A signal is delivered when the target next runs in the kernel: wait (briefly) until
            // the process really is stopped, so "paused" means paused from here on.
            if frozen {
                let stopped = || {
                    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
                        st.rsplit_once(')')
                            .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
                    })
                };
                let deadline = Instant::now() + Duration::from_millis(200);
                while !stopped() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
    }

    /// A monitoring endpoint's JSON (`/varz`, `/jsz`), read from the running process; `None`
    /// when it is down, paused past the wait, or answers something else.
    pub fn monitor_get(&self, path: &str) -> Option<serde_json::Value> {
        let port = self.monitor_port.load(std::sync::atomic::Ordering::Acquire);
        (port != 0).then_some(())?;
        crate::engine::monitor::get_json(port, path, Duration::from_secs(1))
    }

    /// Its monitoring port now, while it runs.
    pub fn monitor_port(&self) -> Option<u16> {
        let p = self.monitor_port.load(std::sync::atomic::Ordering::Acquire);
        (p != 0).then_some(p)
    }

    /// Its monitoring port while it runs, read afresh at each call (for a sampler that outlives
    /// a restart, which moves it).
    pub fn monitor_port_fn(&self) -> crate::engine::monitor::watch::PortFn {
        let port = std::sync::Arc::clone(&self.monitor_port);
        std::sync::Arc::new(move || {
            let p = port.load(std::sync::atomic::Ordering::Acquire);
            (p != 0).then_some(p)
        })
    }

    /// The directory holding the server's data, log and ports file.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's process id.
    pub fn pid(&self) -> Option<u32> {
        self.lock().as_ref().map(Child::id)
    }

    fn wait_for_port(&self, pid: u32, limit: Duration) -> Result<u16> {
        // The server writes its listen URLs to this file once it is ready for clients.
        let ports_file = self.dir.join(format!("nats-server_{pid}.ports"));
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(text) = fs::read_to_string(&ports_file) {
                if let Some(port) = parse_ports_file(&text) {
                    let monitor = parse_monitor_port(&text).unwrap_or(0);
                    self.monitor_port
                        .store(monitor, std::sync::atomic::Ordering::Release);
                    return Ok(port);
                }
            }
            let exited = self
                .lock()
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                return Err(Error::EmbeddedServer(format!(
                    "nats-server exited ({status}) before accepting connections: {}",
                    self.log_tail()
                )));
            }
            if Instant::now() >= deadline {
                return Err(Error::EmbeddedServer(format!(
                    "nats-server did not accept connections within {limit:?}: {}",
                    self.log_tail()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn log_tail(&self) -> String {
        let text = fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let last: Vec<&str> = text.lines().rev().take(3).collect();
        last.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }

    /// Stops the server (SIGTERM, then SIGKILL after 3 s), undoes its lazy filesystem and
    /// removes its directory.
    pub fn stop(&mut self) {
        self.freeze(false);
        if let Some(mut child) = self.lock().take() {
            terminate(&mut child);
        }
        #[cfg(target_os = "linux")]
        drop(self.lazy.take());
        let _ = fs::remove_dir_all(&self.dir);
    }
}

impl Drop for EmbeddedServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A thread that lives as long as the [`EmbeddedServer`] and starts its process again when asked.
///
/// The parent-death signal that keeps a server from outliving msgbench is tied to the thread
/// that forked it, not the process: a server restarted by the fault injector's thread would be
/// killed the moment that thread ends. Forking from this thread instead ties the restarted
/// server to the `EmbeddedServer`'s lifetime (the thread ends when it is dropped, after the
/// server is stopped).
struct Keeper {
    requests: Mutex<std::sync::mpsc::Sender<KeeperRequest>>,
}

type KeeperRequest = (Command, std::sync::mpsc::Sender<std::io::Result<Child>>);

impl Keeper {
    fn start() -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<KeeperRequest>();
        std::thread::spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
        });
        Self {
            requests: Mutex::new(tx),
        }
    }

    fn spawn(&self, cmd: Command) -> std::io::Result<Child> {
        let (tx, rx) = std::sync::mpsc::channel();
        let sent = self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send((cmd, tx));
        if sent.is_err() {
            return Err(std::io::Error::other("the server's keeper thread is gone"));
        }
        rx.recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the server's keeper thread is gone")))
    }
}

/// The monitoring port in a ports file.
fn parse_monitor_port(text: &str) -> Option<u16> {
    #[derive(serde::Deserialize)]
    struct Ports {
        monitoring: Vec<String>,
    }
    let ports: Ports = serde_json::from_str(text).ok()?;
    ports.monitoring.first()?.rsplit(':').next()?.parse().ok()
}

fn parse_ports_file(text: &str) -> Option<u16> {
    #[derive(serde::Deserialize)]
    struct Ports {
        nats: Vec<String>,
    }
    let ports: Ports = serde_json::from_str(text).ok()?;
    let first = ports.nats.first()?;
    first.rsplit(':').next()?.parse().ok()
}

#[cfg(unix)]
fn isolate(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (setpgid, prctl) run between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpgid(0, 0);
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn isolate(_cmd: &mut Command) {}

#[cfg(unix)]
fn terminate(child: &mut Child) {
    // SIGTERM lets the server flush JetStream and remove its own files; SIGKILL if it lingers.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(not(unix))]
fn terminate(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_port_from_ports_file() {
        let text = r#"{"nats":["nats://127.0.0.1:39461"],"monitoring":[]}"#;
        assert_eq!(parse_ports_file(text), Some(39461));
        assert_eq!(parse_ports_file("{}"), None);
        assert_eq!(parse_ports_file(r#"{"nats":[]}"#), None);
    }
}
