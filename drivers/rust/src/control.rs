//! msgbench's side of the conversation: the scenario line, then `start` and `stop` commands
//! on stdin, and the stop signal every loop of a run watches.
//!
//! stdin is read by one task for the whole run. `stop` and end of input mean the same thing:
//! stop sending within 100 ms, drain for at most the scenario's timeout, report.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::{oneshot, watch};

use crate::protocol::{Command, ErrorKind, Scenario};

/// Why the driver cannot go on; becomes an `error` line and exit status 2.
#[derive(Debug, Clone)]
pub struct DriverError {
    pub kind: ErrorKind,
    pub message: String,
}

impl DriverError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// The stop signal: a flag for hot loops to poll, a watch for tasks to await.
#[derive(Debug)]
pub struct Stop {
    flag: AtomicBool,
    tx: watch::Sender<bool>,
}

impl Default for Stop {
    fn default() -> Self {
        Self {
            flag: AtomicBool::new(false),
            tx: watch::Sender::new(false),
        }
    }
}

impl Stop {
    pub fn raise(&self) {
        self.flag.store(true, Ordering::Relaxed);
        self.tx.send_replace(true);
    }

    /// Cheap enough to check once per message.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// Resolves once the stop was raised (at once if it already was).
    pub async fn raised(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives as long as `self`, so this cannot fail while we are borrowed.
        let _ = rx.wait_for(|v| *v).await;
    }
}

pub type StdinLines = Lines<BufReader<Stdin>>;

pub fn stdin_lines() -> StdinLines {
    BufReader::new(tokio::io::stdin()).lines()
}

/// Reads the first line, which must be the scenario.
pub async fn read_scenario(lines: &mut StdinLines) -> Result<Scenario, DriverError> {
    let line = match lines.next_line().await {
        Ok(Some(line)) => line,
        Ok(None) => {
            return Err(DriverError::new(
                ErrorKind::Usage,
                "stdin closed before the scenario",
            ))
        }
        Err(e) => {
            return Err(DriverError::new(
                ErrorKind::Usage,
                format!("cannot read stdin: {e}"),
            ))
        }
    };
    serde_json::from_str::<Scenario>(&line)
        .map_err(|e| DriverError::new(ErrorKind::Usage, format!("bad scenario line: {e}")))
}

/// How the wait for `start` ended.
#[derive(Debug, Clone, Copy)]
pub enum Begin {
    /// `start` was read at this instant: the run's clock starts here.
    Start(Instant),
    /// `stop` or end of input came first.
    Stopped,
}

/// Spawns the task that reads commands for the rest of the run. The receiver resolves on
/// `start`, or on `stop`/end of input if either comes first; `stop` at any time raises `stop`.
pub fn spawn_commands(mut lines: StdinLines, stop: Arc<Stop>) -> oneshot::Receiver<Begin> {
    let (begin_tx, begin_rx) = oneshot::channel();
    tokio::spawn(async move {
        let mut begin_tx = Some(begin_tx);
        loop {
            let line = match lines.next_line().await {
                Ok(Some(line)) => line,
                // End of input (or an unreadable stdin): msgbench is gone or wants us done.
                Ok(None) | Err(_) => break,
            };
            match Command::parse(&line) {
                Some(Command::Start) => {
                    let now = Instant::now();
                    if let Some(tx) = begin_tx.take() {
                        let _ = tx.send(Begin::Start(now));
                    }
                }
                Some(Command::Stop) => break,
                None if line.trim().is_empty() => {}
                None => eprintln!("msgbench-driver-rust: ignoring stdin line: {line}"),
            }
        }
        stop.raise();
        if let Some(tx) = begin_tx.take() {
            let _ = tx.send(Begin::Stopped);
        }
    });
    begin_rx
}
