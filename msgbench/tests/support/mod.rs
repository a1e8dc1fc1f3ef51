//! Test support: a real nats-server on a free loopback port per test (stopped on drop), and a
//! way to run the msgbench binary and read what it wrote.

#![allow(dead_code)]

pub mod grpc_service;
pub mod openmetrics;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use msgbench::server::{find_binary, EmbeddedServer};

/// A nats-server for one test.
pub struct TestServer {
    server: EmbeddedServer,
    /// The folder of the configuration file, removed with the server.
    config: Option<Scratch>,
    pub url: String,
}

impl TestServer {
    /// A server with default settings.
    pub fn start() -> Self {
        Self::with_config("")
    }

    /// A server with extra configuration-file lines (e.g. `max_payload: 1KB`).
    pub fn with_config(config: &str) -> Self {
        let binary = find_binary(None)
            .expect("these tests need nats-server on PATH (the README's test command installs it)");
        let config_dir = (!config.is_empty()).then(|| {
            let dir = scratch_dir("conf");
            std::fs::write(dir.join("server.conf"), config).unwrap();
            dir
        });
        let config_path = config_dir.as_ref().map(|d| d.join("server.conf"));
        let extra: Vec<&str> = match &config_path {
            Some(p) => vec!["-c", p.to_str().unwrap()],
            None => vec![],
        };
        let server = EmbeddedServer::start(&binary, &extra).expect("nats-server starts");
        let url = server.url.to_string();
        TestServer {
            server,
            config: config_dir,
            url,
        }
    }
}

impl TestServer {
    /// Kills the server (SIGKILL, a crash) and starts it again on the same port with the same
    /// JetStream storage, as an operator restarting it outside msgbench would.
    pub fn restart(&self) {
        self.server.restart().expect("nats-server comes back");
    }

    /// Freezes (SIGSTOP) or thaws (SIGCONT) the server process: a server that stops
    /// responding without closing anything.
    pub fn freeze(&self, frozen: bool) {
        let sig = if frozen { libc::SIGSTOP } else { libc::SIGCONT };
        unsafe {
            libc::kill(self.server.pid().unwrap() as libc::pid_t, sig);
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.freeze(false);
        self.server.stop();
        // The configuration's folder goes when `config` is dropped, after the server.
    }
}

/// A fresh directory for one test's files, removed with everything in it when the value is
/// dropped (also when the test fails), so a test run leaves nothing in the temporary folder.
pub fn scratch_dir(tag: &str) -> Scratch {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "msgbench-test-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// See [`scratch_dir`]; it reads as the directory's path.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_msgbench"));
    // Tests choose the server and credentials explicitly; a developer's must not leak in.
    for k in [
        "NATS_URL",
        "NATS_USER",
        "NATS_PASSWORD",
        "NATS_TOKEN",
        "NATS_NKEY",
        "NATS_CREDS",
        "NATS_CONTEXT",
    ] {
        c.env_remove(k);
    }
    c
}

/// Starts msgbench with `args`, its stdout and stderr captured.
pub fn spawn_piped(args: &[&str]) -> std::process::Child {
    bin()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("msgbench starts")
}

/// Open file descriptors and threads of a running process.
pub fn fds_and_threads(pid: u32) -> (usize, usize) {
    let count = |dir: &str| {
        std::fs::read_dir(format!("/proc/{pid}/{dir}"))
            .unwrap()
            .count()
    };
    (count("fd"), count("task"))
}

/// Runs msgbench with `args` and returns its output.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("msgbench runs")
}

/// Runs msgbench with `--json -` added and parses stdout.
pub fn run_json(args: &[&str]) -> (Output, serde_json::Value) {
    let mut all = args.to_vec();
    all.extend(["--json", "-", "--no-progress"]);
    let out = run(&all);
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); status {:?}; stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, v)
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Validates a result against the checked-in JSON Schema, returning the error messages.
pub fn schema_errors(doc: &serde_json::Value) -> Vec<String> {
    schema_errors_in("result-v1.schema.json", doc)
}

/// Validates a document against one of the checked-in schemas.
pub fn schema_errors_in(file: &str, doc: &serde_json::Value) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../schema")
        .join(file);
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// A JSON value that must be an unsigned integer.
pub fn u(v: &serde_json::Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// Processes whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                found.push(cmd);
            }
        }
    }
    found
}

/// The embedded server kept its files in `tmp` (msgbench's TMPDIR): nothing may remain there,
/// and no process may still refer to it.
pub fn assert_nothing_left_in(tmp: &std::path::Path) {
    let left: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_eq!(
        processes_mentioning(tmp.to_str().unwrap()),
        Vec::<String>::new()
    );
}

/// One request over a raw NATS connection (the tests' own, not msgbench's): for a JetStream API
/// call a test needs to make itself. Returns the reply's payload.
pub fn raw_request(url: &str, subject: &str, body: &str) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let addr = url.trim_start_matches("nats://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    write!(
        s,
        "CONNECT {{\"verbose\":false}}\r\nSUB _INBOX.test.r 1\r\nPUB {subject} _INBOX.test.r {}\r\n{body}\r\n",
        body.len()
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if let Some(rest) = line.strip_prefix("MSG ") {
            let len: usize = rest.trim_end().rsplit(' ').next().unwrap().parse().unwrap();
            let mut payload = vec![0; len + 2];
            r.read_exact(&mut payload).unwrap();
            return String::from_utf8_lossy(&payload[..len]).into_owned();
        }
        assert!(!line.is_empty(), "the server closed the connection");
    }
}
