//! Test harness shared by the integration tests: a `nats-server -js` on a free loopback port,
//! the driver binary run over pipes as msgbench runs it, a validator for the subset of JSON
//! Schema that `spec/driver-protocol.schema.json` uses, and the `PATH OP VALUE` checks of the
//! scenario vectors.

#![allow(dead_code)] // each test file uses a different part of the harness

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn spec_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec")
}

/// A name no other test of this process (or a previous run) uses.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{prefix}{}x{}x{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        nanos
    )
}

/// A `nats-server -js` on 127.0.0.1 and a free port, with its own store directory; killed
/// and cleaned up on drop.
pub struct NatsServer {
    child: Child,
    pub url: String,
    pub port: u16,
    store: PathBuf,
}

impl NatsServer {
    pub fn start() -> NatsServer {
        let bin = std::env::var("MSGBENCH_NATS_SERVER")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "nats-server".to_string());
        let store = std::env::temp_dir().join(unique("msgbench-driver-rust-js-"));
        std::fs::create_dir_all(&store).unwrap();
        // Several tries: another process could take the port between probe and bind.
        for _ in 0..5 {
            let port = free_port();
            let mut child = Command::new(&bin)
                .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
                .arg(&store)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!("cannot start {bin} (set MSGBENCH_NATS_SERVER or put it on PATH): {e}")
                });
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                // A connection proves someone listens on the port; that it is this server is
                // proven by this server still running a moment later (one that lost the port
                // to a parallel test's server exits at once).
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    std::thread::sleep(Duration::from_millis(100));
                    if !matches!(child.try_wait(), Ok(None)) {
                        break;
                    }
                    return NatsServer {
                        child,
                        url: format!("nats://127.0.0.1:{port}"),
                        port,
                        store,
                    };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("nats-server did not start");
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The driver binary as a child process, talked to over pipes.
pub struct Driver {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
}

impl Driver {
    pub fn spawn() -> Driver {
        let mut child = Command::new(env!("CARGO_BIN_EXE_msgbench-driver-rust"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the driver binary starts");
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (etx, erx) = mpsc::channel();
        std::thread::spawn(move || {
            let text = std::io::read_to_string(stderr).unwrap_or_default();
            let _ = etx.send(text);
        });
        Driver {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: erx,
        }
    }

    pub fn send(&mut self, v: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next stdout line, parsed and validated against the protocol schema.
    pub fn next(&mut self, timeout: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(timeout).ok()?;
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        let errs = Schema::protocol().validate(&v);
        assert!(errs.is_empty(), "line breaks the schema: {errs:?}\n{line}");
        let t = v["type"].as_str().unwrap();
        assert!(
            matches!(t, "ready" | "progress" | "result" | "error"),
            "a driver never writes {t}"
        );
        Some(v)
    }

    /// Reads lines until one of type `ty`, skipping `progress`; panics on anything else.
    pub fn expect(&mut self, ty: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(v) = self.next(left) else {
                panic!(
                    "no {ty} line within {timeout:?}; stderr:\n{}",
                    self.stderr_text()
                );
            };
            match v["type"].as_str() {
                Some(t) if t == ty => return v,
                Some("progress") => continue,
                _ => panic!("expected {ty}, got {v}; stderr:\n{}", self.stderr_text()),
            }
        }
    }

    /// Waits for the exit status; then there must be nothing more on stdout.
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                if let Ok(extra) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    panic!("line after the last one: {extra}");
                }
                return st;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the driver did not exit within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn stderr_text(&mut self) -> String {
        let _ = self.child.kill();
        self.stderr
            .recv_timeout(Duration::from_secs(2))
            .unwrap_or_default()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The subset of JSON Schema (2020-12) the protocol schema uses: `$ref` into `$defs`, `oneOf`,
/// `type`, `const`, `enum`, `required`, `properties`, `additionalProperties`, `items`,
/// `minimum`. Annotations (`title`, `description`, ...) are ignored; any other keyword fails
/// loudly so the validator cannot silently skip a rule.
pub struct Schema {
    root: Value,
}

impl Schema {
    pub fn protocol() -> Schema {
        let text = std::fs::read_to_string(spec_dir().join("driver-protocol.schema.json"))
            .expect("the protocol schema exists");
        Schema {
            root: serde_json::from_str(&text).unwrap(),
        }
    }

    /// Every violation, with its path; empty when `v` is valid.
    pub fn validate(&self, v: &Value) -> Vec<String> {
        let mut errs = Vec::new();
        self.check(&self.root, v, "$", &mut errs);
        errs
    }

    /// A sub-schema by name under `$defs`.
    pub fn validate_def(&self, def: &str, v: &Value) -> Vec<String> {
        let mut errs = Vec::new();
        self.check(&self.root["$defs"][def], v, "$", &mut errs);
        errs
    }

    fn check(&self, s: &Value, v: &Value, at: &str, errs: &mut Vec<String>) {
        let Some(obj) = s.as_object() else {
            errs.push(format!("{at}: schema is not an object"));
            return;
        };
        for (k, rule) in obj {
            match k.as_str() {
                "$schema" | "$id" | "$defs" | "title" | "description" => {}
                "$ref" => {
                    let name = rule
                        .as_str()
                        .and_then(|r| r.strip_prefix("#/$defs/"))
                        .expect("refs point into $defs");
                    self.check(&self.root["$defs"][name], v, at, errs);
                }
                "oneOf" => {
                    let matching = rule
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|alt| {
                            let mut e = Vec::new();
                            self.check(alt, v, at, &mut e);
                            e.is_empty()
                        })
                        .count();
                    if matching != 1 {
                        errs.push(format!("{at}: matches {matching} of oneOf, not 1"));
                    }
                }
                "type" => {
                    let types: Vec<&str> = match rule {
                        Value::String(t) => vec![t.as_str()],
                        Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap()).collect(),
                        _ => panic!("bad type rule"),
                    };
                    if !types.iter().any(|t| is_type(v, t)) {
                        errs.push(format!("{at}: {v} is not of type {types:?}"));
                    }
                }
                "const" => {
                    if v != rule {
                        errs.push(format!("{at}: {v} is not {rule}"));
                    }
                }
                "enum" => {
                    if !rule.as_array().unwrap().contains(v) {
                        errs.push(format!("{at}: {v} is not one of {rule}"));
                    }
                }
                "minimum" => {
                    if let (Some(x), Some(min)) = (v.as_f64(), rule.as_f64()) {
                        if x < min {
                            errs.push(format!("{at}: {x} < minimum {min}"));
                        }
                    }
                }
                "required" => {
                    if let Some(o) = v.as_object() {
                        for key in rule.as_array().unwrap() {
                            let key = key.as_str().unwrap();
                            if !o.contains_key(key) {
                                errs.push(format!("{at}: missing {key}"));
                            }
                        }
                    }
                }
                "properties" => {
                    if let Some(o) = v.as_object() {
                        for (key, sub) in rule.as_object().unwrap() {
                            if let Some(x) = o.get(key) {
                                self.check(sub, x, &format!("{at}.{key}"), errs);
                            }
                        }
                    }
                }
                "additionalProperties" => {
                    if let Some(o) = v.as_object() {
                        let props = obj.get("properties").and_then(Value::as_object);
                        for (key, x) in o {
                            if props.is_some_and(|p| p.contains_key(key)) {
                                continue;
                            }
                            match rule {
                                Value::Bool(false) => {
                                    errs.push(format!("{at}: unexpected property {key}"))
                                }
                                Value::Bool(true) => {}
                                sub => self.check(sub, x, &format!("{at}.{key}"), errs),
                            }
                        }
                    }
                }
                "items" => {
                    if let Some(a) = v.as_array() {
                        for (i, x) in a.iter().enumerate() {
                            self.check(rule, x, &format!("{at}[{i}]"), errs);
                        }
                    }
                }
                other => panic!("schema keyword {other} is not supported by the test validator"),
            }
        }
    }
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => panic!("unknown type {t}"),
    }
}

/// Applies one check, `PATH OP VALUE`, to a result object. A missing path fails.
pub fn check(result: &Value, check: &str) -> Result<(), String> {
    let mut parts = check.splitn(3, ' ');
    let (Some(path), Some(op), Some(want)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("malformed check {check:?}"));
    };
    let want: Value =
        serde_json::from_str(want.trim()).map_err(|e| format!("bad value in {check:?}: {e}"))?;
    let got = lookup(result, path).ok_or_else(|| format!("{path} does not exist"))?;
    let ok = match op {
        "==" => same(&got, &want),
        "!=" => !same(&got, &want),
        ">=" | "<=" | ">" | "<" => {
            let (Some(a), Some(b)) = (got.as_f64(), want.as_f64()) else {
                return Err(format!("{check:?}: {op} needs numbers, got {got}"));
            };
            match op {
                ">=" => a >= b,
                "<=" => a <= b,
                ">" => a > b,
                _ => a < b,
            }
        }
        _ => return Err(format!("unknown operator in {check:?}")),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{check}: got {got}"))
    }
}

/// Numbers compare by value (so 2000 == 2000.0); everything else as JSON.
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn lookup(v: &Value, path: &str) -> Option<Value> {
    let mut cur = v.clone();
    for key in path.split('.') {
        cur = match (&cur, key) {
            (Value::Array(a), "length") => Value::from(a.len()),
            (Value::Array(a), k) => a.get(k.parse::<usize>().ok()?)?.clone(),
            (Value::Object(o), k) => o.get(k)?.clone(),
            _ => return None,
        };
    }
    Some(cur)
}
