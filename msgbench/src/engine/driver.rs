//! A driver: a child process that runs one scenario with another language's NATS client and
//! speaks the driver protocol (`spec/driver-protocol.md`) on its stdin and stdout. This module
//! owns the process: starting it, the line exchange, the time limits that tell a hung driver
//! from a slow one, and its CPU time and peak memory, read from the kernel when it exits.
//! What the scenario means, and what becomes of the result, is `scenario::compare`'s.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::memory;
use serde_json::Value;

/// How to start one driver.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The driver's folder: its working directory.
    pub dir: PathBuf,
}

/// The time limits of one exchange.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From start to `ready`.
    pub ready: Duration,
    /// The longest silence after `start` (progress lines reset it).
    pub silence: Duration,
    /// From `start` to the result, in all.
    pub total: Duration,
}

/// Why a driver gave no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// It could not be started at all (its program is missing).
    Spawn(String),
    /// It said why, in an `error` line.
    Reported { kind: String, message: String },
    /// It went silent past a limit and was killed.
    Timeout(&'static str),
    /// It exited, or closed its stdout, without a result.
    Crashed { status: Option<i32> },
    /// It wrote something that is not the protocol.
    Protocol(String),
}

impl Failure {
    /// The kind as results and tables name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Spawn(_) => "driver_missing",
            Failure::Reported { .. } => "driver_error",
            Failure::Timeout(_) => "driver_timeout",
            Failure::Crashed { .. } => "driver_crashed",
            Failure::Protocol(_) => "driver_protocol",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Spawn(why) => write!(f, "cannot start: {why}"),
            Failure::Reported { kind, message } => write!(f, "{kind}: {message}"),
            Failure::Timeout(when) => write!(f, "no answer {when}; killed"),
            Failure::Crashed { status: Some(s) } => {
                write!(f, "exited with status {s} without a result")
            }
            Failure::Crashed { status: None } => write!(f, "killed by a signal without a result"),
            Failure::Protocol(line) => write!(f, "not the driver protocol: {line}"),
        }
    }
}

/// What a driver that finished gave back.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The `client` object of its `ready` line.
    pub client: Value,
    /// The `result` object of its `result` line.
    pub result: Value,
    /// Its user plus system CPU time.
    pub cpu_seconds: f64,
    /// Its own peak resident memory, read from the kernel's high-water mark of its address
    /// space each time it wrote a line; `None` when that could not be read (not Linux, or it
    /// exited before its first line was seen). Not `ru_maxrss`: a child's starts at the size of
    /// the msgbench that forked it, so a small driver run after the native engine read as big.
    pub peak_rss_bytes: Option<u64>,
}

/// A failure, with what the driver wrote on stderr last.
#[derive(Debug, Clone)]
pub struct Failed {
    pub failure: Failure,
    pub stderr_tail: String,
}

/// The last this many bytes of a driver's stderr are kept for the report.
const STDERR_KEPT: usize = 4096;

/// Runs one scenario through a driver: sends `scenario`, waits for `ready`, says `start`, reads
/// progress until the result. `stop` (Ctrl-C) is passed on as `stop`; the driver then reports
/// what it did.
///
/// # Errors
/// [`Failed`] with the reason and the driver's last words.
pub fn run(
    launch: &Launch,
    scenario: &Value,
    limits: Limits,
    stop: &AtomicBool,
) -> Result<Finished, Failed> {
    let mut child = Command::new(&launch.program)
        .args(&launch.args)
        .current_dir(&launch.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failed {
            failure: Failure::Spawn(format!("{}: {e}", launch.program.display())),
            stderr_tail: String::new(),
        })?;
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let peak = Arc::new(AtomicU64::new(0));
    let (lines, stderr_done) = read_lines(&mut child, &stderr, &peak);
    let mut stdin = child.stdin.take().expect("piped stdin");
    let outcome = exchange(&mut stdin, &lines, scenario, limits, stop);
    // Closing stdin is the protocol's second way to say stop; a driver that is done exits.
    drop(stdin);
    let exited = reap(&mut child, outcome.is_ok());
    // The driver has exited, but its last words may still be in the pipe: wait for the stderr
    // reader to reach the end (bounded, in case a child of the driver holds the pipe open).
    let _ = stderr_done.recv_timeout(Duration::from_secs(2));
    let tail = {
        let bytes = stderr.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).trim().to_string()
    };
    let fail = |failure| Failed {
        failure,
        stderr_tail: tail.clone(),
    };
    match (outcome, exited) {
        (Ok((client, result)), Ok((_, cpu_seconds))) => Ok(Finished {
            client,
            result,
            cpu_seconds,
            peak_rss_bytes: Some(peak.load(Ordering::Relaxed)).filter(|&b| b > 0),
        }),
        // A result followed by a crash or a hang on exit is still a result, but not a clean
        // one: report the failure rather than figures from a process that misbehaved.
        (Ok(_), Err(status)) => Err(fail(Failure::Crashed { status })),
        (Err(Failure::Crashed { .. }), Err(status) | Ok((status, _))) => {
            Err(fail(Failure::Crashed { status }))
        }
        (Err(f), _) => Err(fail(f)),
    }
}

/// Starts the threads that read stdout (as lines, into a channel) and stderr (its tail; the
/// second channel closes when stderr ends). At each line, while the driver is surely alive,
/// its memory high-water mark is read into `peak`.
fn read_lines(
    child: &mut Child,
    stderr: &Arc<Mutex<Vec<u8>>>,
    peak: &Arc<AtomicU64>,
) -> (Receiver<String>, Receiver<()>) {
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().expect("piped stdout");
    let (pid, peak) = (child.id(), Arc::clone(peak));
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            if let Some(b) = memory::bytes(Some(pid), memory::Figure::Peak) {
                peak.fetch_max(b, Ordering::Relaxed);
            }
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut err = child.stderr.take().expect("piped stderr");
    let keep = Arc::clone(stderr);
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        // Dropped when the thread ends, which is what the reader of `done_rx` waits for.
        let _done = done_tx;
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            if let Ok(mut k) = keep.lock() {
                k.extend_from_slice(&buf[..n]);
                let excess = k.len().saturating_sub(STDERR_KEPT);
                k.drain(..excess);
            }
        }
    });
    (rx, done_rx)
}

fn send(stdin: &mut ChildStdin, msg: &Value) -> Result<(), Failure> {
    let mut line = serde_json::to_vec(msg).expect("a command serialises");
    line.push(b'\n');
    stdin
        .write_all(&line)
        .and_then(|()| stdin.flush())
        .map_err(|_| Failure::Crashed { status: None })
}

/// The protocol from msgbench's side; returns the `ready` client and the `result`.
fn exchange(
    stdin: &mut ChildStdin,
    lines: &Receiver<String>,
    scenario: &Value,
    limits: Limits,
    stop: &AtomicBool,
) -> Result<(Value, Value), Failure> {
    send(stdin, scenario)?;
    let ready_by = Instant::now() + limits.ready;
    let msg = next(lines, ready_by, stop, "before ready")?;
    let client = match msg.get("type").and_then(Value::as_str) {
        Some("ready") => msg.get("client").cloned().unwrap_or(Value::Null),
        Some("error") => return Err(reported(&msg)),
        _ => return Err(Failure::Protocol(format!("expected ready, got {msg}"))),
    };
    send(stdin, &serde_json::json!({"type": "start"}))?;
    let end_by = Instant::now() + limits.total;
    let mut stop_sent = false;
    loop {
        let silent_by = (Instant::now() + limits.silence).min(end_by);
        let msg = match next(lines, silent_by, stop, "during the run") {
            Err(Failure::Timeout(_)) if stop.load(Ordering::Relaxed) && !stop_sent => {
                // Interrupted: ask for what it has, once, and give it the usual time.
                send(stdin, &serde_json::json!({"type": "stop"}))?;
                stop_sent = true;
                continue;
            }
            other => other?,
        };
        match msg.get("type").and_then(Value::as_str) {
            Some("progress") => {}
            Some("result") => {
                let result = msg.get("result").cloned().unwrap_or(Value::Null);
                if !result.is_object() {
                    return Err(Failure::Protocol(
                        "a result line without a result object".into(),
                    ));
                }
                return Ok((client, result));
            }
            Some("error") => return Err(reported(&msg)),
            _ => return Err(Failure::Protocol(msg.to_string())),
        }
    }
}

fn reported(msg: &Value) -> Failure {
    let text = |k: &str| msg.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Failure::Reported {
        kind: text("kind"),
        message: text("message"),
    }
}

/// The next protocol line before `deadline`. A raised `stop` ends the wait early (as a
/// timeout) so the caller can pass it on.
fn next(
    lines: &Receiver<String>,
    deadline: Instant,
    stop: &AtomicBool,
    when: &'static str,
) -> Result<Value, Failure> {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(Failure::Timeout(when));
        }
        let wait = (deadline - now).min(Duration::from_millis(50));
        match lines.recv_timeout(wait) {
            Ok(line) if line.trim().is_empty() => {}
            Ok(line) => {
                return serde_json::from_str::<Value>(&line)
                    .ok()
                    .filter(Value::is_object)
                    .ok_or_else(|| Failure::Protocol(truncate(&line)));
            }
            Err(RecvTimeoutError::Timeout) => {
                if stop.load(Ordering::Relaxed) {
                    return Err(Failure::Timeout(when));
                }
            }
            Err(RecvTimeoutError::Disconnected) => return Err(Failure::Crashed { status: None }),
        }
    }
}

fn truncate(line: &str) -> String {
    let mut s: String = line.chars().take(200).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    s
}

/// Waits for the driver to exit (5 s after a result, at once after a failure, when it is
/// killed) and reads its exit status and CPU time. `Err` carries the status when it did not
/// exit cleanly.
fn reap(child: &mut Child, had_result: bool) -> Result<(Option<i32>, f64), Option<i32>> {
    let grace = if had_result {
        Duration::from_secs(5)
    } else {
        Duration::ZERO
    };
    let deadline = Instant::now() + grace;
    let pid = child.id() as libc::pid_t;
    let mut killed = false;
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain data the kernel fills in; pid is our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if got == pid {
            let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            let cpu = secs(usage.ru_utime) + secs(usage.ru_stime);
            return if code == Some(0) && !killed {
                Ok((code, cpu))
            } else {
                Err(code)
            };
        }
        if got < 0 {
            return Err(None);
        }
        if Instant::now() >= deadline && !killed {
            let _ = child.kill();
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A driver written in shell, so the protocol side is tested without any client library.
    fn sh(script: &str) -> Launch {
        Launch {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            dir: std::env::temp_dir(),
        }
    }

    /// Limits for a driver that answers: far beyond what a shell needs on a busy machine, so
    /// they never decide a test; the wait ends when the driver answers.
    fn limits() -> Limits {
        Limits {
            ready: Duration::from_secs(60),
            silence: Duration::from_secs(60),
            total: Duration::from_secs(120),
        }
    }

    /// Limits for a driver that never answers, so that waiting it out is short.
    fn short_limits() -> Limits {
        Limits {
            ready: Duration::from_secs(2),
            silence: Duration::from_millis(500),
            total: Duration::from_secs(3),
        }
    }

    const READY: &str =
        r#"{"type":"ready","client":{"language":"sh","library":"none","version":"1"}}"#;
    const RESULT: &str = r#"{"type":"result","result":{"interrupted":false,"clients":[]}}"#;

    /// Runs a shell driver that must finish with a result.
    fn finished(script: &str) -> Finished {
        let stop = AtomicBool::new(false);
        run(
            &sh(script),
            &serde_json::json!({"type": "scenario"}),
            limits(),
            &stop,
        )
        .expect("a result")
    }

    #[test]
    fn a_well_behaved_driver_gives_its_result_and_resource_use() {
        let done = finished(&format!(
            "read s; echo '{READY}'; read go; echo '{{\"type\":\"progress\",\"t_s\":1,\"sent\":1,\"received\":1}}'; \
             echo '{RESULT}'"
        ));
        assert_eq!(done.client["language"], "sh");
        assert_eq!(done.result["interrupted"], false);
        assert!(done.peak_rss_bytes.is_some_and(|b| b > 0));
    }

    #[test]
    fn a_drivers_memory_is_its_own_not_the_forking_processs() {
        // This process grows by 256 MiB first; a forked child's ru_maxrss would start there.
        let ballast: Vec<u8> = vec![1; 256 << 20];
        std::hint::black_box(&ballast);
        let done = finished(&format!("read s; echo '{READY}'; read go; echo '{RESULT}'"));
        let peak = done.peak_rss_bytes.expect("measured");
        assert!(peak > 0 && peak < 64 << 20, "a shell's peak: {peak} bytes");
        drop(ballast);
    }

    #[test]
    fn failures_are_told_apart() {
        let stop = AtomicBool::new(false);
        let scenario = serde_json::json!({"type": "scenario"});
        let kind_within = |script: &str, limits: Limits| {
            run(&sh(script), &scenario, limits, &stop)
                .map(|_| ())
                .unwrap_err()
        };
        let kind = |script: &str| kind_within(script, limits());
        // Silent forever: killed at the ready limit.
        assert_eq!(
            kind_within("sleep 30", short_limits()).failure,
            Failure::Timeout("before ready")
        );
        // Hangs after start.
        let f = kind_within(
            &format!("read s; echo '{READY}'; read go; sleep 30"),
            short_limits(),
        );
        assert_eq!(f.failure, Failure::Timeout("during the run"));
        // Dies mid-run, saying why on stderr.
        let f = kind(&format!(
            "read s; echo '{READY}'; read go; echo boom >&2; exit 3"
        ));
        assert_eq!(f.failure.kind(), "driver_crashed");
        assert_eq!(f.stderr_tail, "boom");
        // Garbage on stdout.
        let f = kind("read s; echo hello");
        assert_eq!(f.failure, Failure::Protocol("hello".into()));
        // Says it cannot.
        let f = kind(
            r#"read s; echo '{"type":"error","kind":"unsupported","message":"no js"}'; exit 2"#,
        );
        assert_eq!(
            f.failure,
            Failure::Reported {
                kind: "unsupported".into(),
                message: "no js".into()
            }
        );
        // Not there at all.
        let missing = Launch {
            program: "/nonexistent/driver".into(),
            args: Vec::new(),
            dir: std::env::temp_dir(),
        };
        let f = run(&missing, &scenario, limits(), &stop)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(f.failure.kind(), "driver_missing");
    }

    #[test]
    fn a_stop_is_passed_on_and_the_partial_result_kept() {
        // Answers `stop` with an interrupted result. It says when it has started (a file), and
        // the stop is raised then: raised earlier, before a busy machine had the shell ready, it
        // would be a stop before the run, another case.
        let dir = crate::testdir::TestDir::new("driver-stop");
        let started = dir.path().join("started");
        let script = format!(
            "read s; echo '{READY}'; read go; touch '{}'; read halt; \
             echo '{{\"type\":\"result\",\"result\":{{\"interrupted\":true,\"clients\":[]}}}}'",
            started.display()
        );
        let stop = AtomicBool::new(false);
        let done = std::thread::scope(|s| {
            s.spawn(|| {
                let deadline = Instant::now() + limits().total;
                while !started.exists() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                stop.store(true, Ordering::Relaxed);
            });
            run(
                &sh(&script),
                &serde_json::json!({"type": "scenario"}),
                limits(),
                &stop,
            )
        })
        .expect("the partial result");
        assert_eq!(done.result["interrupted"], true);
    }
}
