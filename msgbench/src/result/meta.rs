//! What a result says about where and with what it was measured: the server (as it announced
//! itself), the machine, the tool, the round trips before the run, and what happened to the
//! connections.

use serde::Serialize;

use crate::result::ServerConfig;

/// Connection events of a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Connections {
    /// Handshakes completed, first connections and reconnections together.
    pub opened: u64,
    /// Connections lost without msgbench closing them.
    pub lost: u64,
    /// Lost connections replaced by a new one (`--reconnect`).
    pub reconnects: u64,
    /// Reconnects that gave up after `--timeout`.
    pub gave_up: u64,
    /// Time from losing a connection to its replacement being ready, for each reconnect.
    pub reconnect_ns: Vec<u64>,
    /// Write syscalls on the connections' sockets after their handshakes: far fewer than
    /// messages when writes are batched.
    pub writes: u64,
}

impl Connections {
    /// Adds another set of connections' counts (a second group of clients in the same run).
    pub fn absorb(&mut self, other: &Connections) {
        self.opened += other.opened;
        self.lost += other.lost;
        self.reconnects += other.reconnects;
        self.gave_up += other.gave_up;
        self.reconnect_ns.extend_from_slice(&other.reconnect_ns);
        self.writes += other.writes;
    }
}

/// What the figures were measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Host {
    /// The CPU model, as the OS names it; empty when it does not say.
    pub cpu: String,
    /// Logical CPUs this process may use.
    pub cores: usize,
    pub os: &'static str,
    pub arch: &'static str,
}

impl Host {
    pub fn this() -> Self {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_default();
        Self {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            os: std::env::consts::OS,
            arch: std::env::consts::ARCH,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    pub name: &'static str,
    pub version: &'static str,
}

impl Default for ToolInfo {
    fn default() -> Self {
        Self {
            name: "msgbench",
            version: env!("CARGO_PKG_VERSION"),
        }
    }
}

impl ServerMeta {
    /// A local server that said nothing about itself, for results built in unit tests.
    #[cfg(test)]
    pub(crate) fn for_tests() -> Self {
        Self {
            url: "nats://127.0.0.1:4222".into(),
            name: String::new(),
            version: String::new(),
            embedded: false,
            max_payload: 0,
            auth: "none",
            config: None,
        }
    }

    /// What the server said about itself, and how it was reached.
    pub fn new(
        info: &crate::wire::proto::ServerInfo,
        url: &crate::wire::url::ServerUrl,
        embedded: bool,
    ) -> Self {
        Self {
            url: url.to_string(),
            name: info.server_name.clone(),
            version: info.version.clone(),
            embedded,
            max_payload: info.max_payload,
            auth: url.auth.method(),
            config: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerMeta {
    /// The URL used, with credentials removed.
    pub url: String,
    /// The server's name from INFO (a node's name in a cluster).
    pub name: String,
    /// The version the server announced in INFO.
    pub version: String,
    /// Whether msgbench started this server itself.
    pub embedded: bool,
    pub max_payload: usize,
    pub auth: &'static str,
    /// The `--server-config` settings msgbench started its servers with; absent without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<ServerConfig>,
}

/// Round trips to the publishing (a) and subscribing (b) servers: the median of several.
#[derive(Debug, Clone, Serialize)]
pub struct Rtt {
    pub a: u64,
    pub b: u64,
}
