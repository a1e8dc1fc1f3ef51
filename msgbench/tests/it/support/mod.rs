//! Test support: a real nats-server on a free loopback port per test (stopped on drop), and a
//! way to run the msgbench binary and read what it wrote.

#![allow(dead_code)]

pub mod agent;
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
    /// Its monitoring endpoint (`http://127.0.0.1:PORT`).
    pub fn monitor_url(&self) -> String {
        let port = self
            .server
            .monitor_port()
            .expect("the test server has a monitoring port");
        format!("http://127.0.0.1:{port}")
    }

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

/// A nats-server without JetStream (no `-js`), on a free loopback port, killed on drop: the
/// core-only server a user may point msgbench at.
pub struct CoreServer {
    child: std::process::Child,
    pub url: String,
}

impl CoreServer {
    pub fn start() -> Self {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let binary = find_binary(None).expect("these tests need nats-server");
        let child = Command::new(binary)
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // A wait for the server to listen: its bound only guards against a hang.
        let deadline = std::time::Instant::now() + HANG;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "nats-server did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        CoreServer {
            child,
            url: format!("nats://127.0.0.1:{port}"),
        }
    }
}

impl Drop for CoreServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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

/// The environment a developer may have set that must not reach a test's msgbench: tests choose
/// the server and credentials explicitly.
pub const CLEARED_ENV: &[&str] = &[
    "NATS_URL",
    "NATS_USER",
    "NATS_PASSWORD",
    "NATS_TOKEN",
    "NATS_NKEY",
    "NATS_CREDS",
    "NATS_CONTEXT",
    // Set, it records every run: a test's runs must not land in a developer's history.
    "MSGBENCH_HISTORY",
    // A history server's password: a test gives its own.
    "PGPASSWORD",
    // A developer's monitoring endpoints would be sampled by every test's run.
    "MSGBENCH_SERVER_MONITOR",
];

pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_msgbench"));
    for k in CLEARED_ENV {
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

/// The HTML report `msgbench report` draws from the result file `json`, written beside it
/// (`json` with the extension `html`).
pub fn report_page(json: &Path) -> String {
    let html = json.with_extension("html");
    let out = run(&[
        "report",
        json.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::read_to_string(&html).unwrap()
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

/// How long a test waits for an event of a run it started (a tick, a line, a file) before it
/// calls the run stuck. It guards against a hang only: every wait ends at its event, and a
/// debug build on a busy machine reaches each of them in seconds.
pub const HANG: std::time::Duration = std::time::Duration::from_secs(120);

/// Waits for the first `--stream-stats` tick in `path` that `ready` accepts and returns it. A
/// test that must act while a run is under way (signal it, freeze its server, count its
/// threads) waits for this instead of sleeping a fixed time, which a slow machine can spend
/// before the run has even connected. Fails if `child` ends first or after [`HANG`].
pub fn wait_for_tick(
    path: &Path,
    child: &mut std::process::Child,
    ready: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + HANG;
    loop {
        // A line is written and flushed whole, but a read may still meet the last one half
        // done: only lines that end in a newline are read.
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        for line in complete.lines() {
            let tick: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a --stream-stats line ({e}): {line}"));
            if ready(&tick) {
                return tick;
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("msgbench ended ({status}) before the tick awaited; ticks: {text}");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no such tick after {HANG:?}; ticks: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A tick's field as a number.
pub fn tick_f(tick: &serde_json::Value, field: &str) -> f64 {
    tick[field]
        .as_f64()
        .unwrap_or_else(|| panic!("no {field} in {tick}"))
}

/// Reads `child`'s stderr line by line until one contains `needle`, and returns what it read;
/// the rest of stderr is left for [`rest_of_stderr`]. Fails if stderr ends first.
pub fn stderr_until(
    child: &mut std::process::Child,
    needle: &str,
) -> (String, std::io::BufReader<std::process::ChildStderr>) {
    stderr_until_line(child, |l| l.contains(needle))
}

/// As [`stderr_until`], until a line that `ready` accepts.
pub fn stderr_until_line(
    child: &mut std::process::Child,
    ready: impl Fn(&str) -> bool,
) -> (String, std::io::BufReader<std::process::ChildStderr>) {
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr is piped"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if lines.read_line(&mut line).unwrap() == 0 {
            panic!("stderr ended before the line awaited: {seen}");
        }
        seen.push_str(&line);
        if ready(line.trim_end()) {
            return (seen, lines);
        }
    }
}

/// What is left of a stderr that [`stderr_until`] read from, appended to `seen`.
pub fn rest_of_stderr(
    mut seen: String,
    mut lines: std::io::BufReader<std::process::ChildStderr>,
) -> String {
    std::io::Read::read_to_string(&mut lines, &mut seen).unwrap();
    seen
}

/// Messages the stream holds now, or `None` while it cannot say (no stream yet, no server).
/// A bare client on the wire: connect, ask `$JS.API.STREAM.INFO`, read the reply.
pub fn stream_messages(url: &str, stream: &str) -> Option<u64> {
    use msgbench::wire::proto::{self, Parsed, ServerOp};
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("nats://");
    let mut sock = std::net::TcpStream::connect(addr).ok()?;
    sock.set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .ok()?;
    let ask = format!(
        "CONNECT {{\"verbose\":false,\"headers\":true,\"no_responders\":true}}\r\n\
         SUB _INBOX.support 1\r\nPUB $JS.API.STREAM.INFO.{stream} _INBOX.support 0\r\n\r\n"
    );
    sock.write_all(ask.as_bytes()).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = sock.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
        let mut at = 0;
        while let Ok(Parsed::Op(op, used)) = proto::parse(&buf[at..]) {
            at += used;
            if let ServerOp::Msg(m) = op {
                let v: serde_json::Value = serde_json::from_slice(m.payload).ok()?;
                return v
                    .pointer("/state/messages")
                    .and_then(serde_json::Value::as_u64);
            }
        }
        buf.drain(..at);
    }
}

/// Publishes `payload` on `subject` as a bare client (no reply subject): a stream capturing the
/// subject stores it, and nobody is told its sequence. Returns once the server has read it (the
/// PONG after it).
pub fn publish_raw(url: &str, subject: &str, payload: &[u8]) {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("nats://");
    let mut sock = std::net::TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(HANG)).unwrap();
    let mut out = format!(
        "CONNECT {{\"verbose\":false}}\r\nPUB {subject} {}\r\n",
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\nPING\r\n");
    sock.write_all(&out).unwrap();
    let mut seen = Vec::new();
    let mut chunk = [0u8; 1024];
    while !String::from_utf8_lossy(&seen).contains("PONG") {
        let n = sock.read(&mut chunk).unwrap();
        assert!(
            n > 0,
            "the server closed the connection: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&chunk[..n]);
    }
}

/// `1234567` as `1,234,567`: a count as msgbench's text prints it.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
