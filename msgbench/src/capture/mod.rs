//! `msgbench capture`: watch a live NATS system for a while, keep only the shape of its traffic
//! (never a payload), and write the workload file that reproduces it; `msgbench capture diff`
//! compares two captures, the proof that a replay is the traffic.
//!
//! The pipeline: check every flag and the output file before connecting; read the streams and
//! consumers once from the JetStream API ([`jetstream`]); subscribe to the subjects and tally
//! every message on the reader's thread for `--duration` ([`watch`]); turn the tally into
//! classes ([`learn`]); write them as a workload that `msgbench run` reads, saying in its header
//! what was captured and what the capturer missed ([`write`]). Capture publishes nothing: its
//! only requests are the JetStream API reads, and `--no-jetstream` leaves those out too.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::{CaptureAction, CaptureArgs, WatchArgs};
use crate::engine::conn::{self, ConnectSpec, Event, Flow};
use crate::error::{exit, Error, ErrorCounts, ErrorKind, Result};
use crate::options::conn::ConnOptions;
use crate::options::{check_subject, server_choice, ServerChoice};
use crate::wire::proto;
use crate::wire::url::ServerUrl;

mod diff;
mod jetstream;
mod learn;
mod watch;
mod write;

/// The longest capture: a day (its per-second curves are kept per group).
const MAX_SECONDS: u64 = 24 * 3600;

/// `msgbench capture` and `capture diff`.
///
/// # Errors
/// Bad flags (before anything connects), a server that cannot be reached or refuses the
/// subscription, an output file that cannot be written.
pub fn run(args: &CaptureArgs, stop: &AtomicBool) -> Result<u8> {
    match &args.action {
        Some(CaptureAction::Diff(d)) => diff::run(d),
        None => capture(&args.watch, stop),
    }
}

/// What was checked before connecting.
struct Checked {
    urls: Vec<ServerUrl>,
    conn: ConnOptions,
    subjects: Vec<String>,
    seconds: u64,
}

fn check(a: &WatchArgs) -> Result<Checked> {
    let d = a.duration;
    let seconds = d.as_secs();
    if d.subsec_nanos() != 0 || seconds == 0 || seconds > MAX_SECONDS {
        return Err(Error::flag(
            "--duration",
            &format!("{}ms", d.as_millis()),
            "capture counts whole seconds: give 1s to 24h in whole seconds",
        ));
    }
    let subjects: Vec<String> = a
        .subjects
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    for s in &subjects {
        check_subject(s, true).map_err(|why| Error::flag("--subjects", &a.subjects, why))?;
    }
    for (flag, n) in [
        ("--max-words", a.max_words),
        ("--max-subjects", a.max_subjects),
    ] {
        if n == 0 {
            return Err(Error::flag(flag, "0", "must be at least 1"));
        }
    }
    let c = &a.conn;
    let refuse = |flag: &str, given: bool, why: &str| {
        if given {
            Err(Error::Usage(format!("{flag}: {why}")))
        } else {
            Ok(())
        }
    };
    refuse(
        "--link",
        c.link.is_some(),
        "capture watches the system as it is; it puts no link in its way",
    )?;
    refuse(
        "--allow-missed-faults",
        c.allow_missed_faults,
        "capture injects no fault",
    )?;
    let conn = ConnOptions::new(c)?;
    conn.no_fault("capture")?;
    let ServerChoice::Urls(urls) = server_choice(c)? else {
        return Err(Error::Usage(
            "capture watches a running system: give its --server (or NATS_URL, or --context)"
                .into(),
        ));
    };
    let out = a.out.as_ref().expect("clap requires --out");
    crate::output::dest::check_files(&[("--out", Some(out))])?;
    Ok(Checked {
        urls,
        conn,
        subjects,
        seconds,
    })
}

fn capture(a: &WatchArgs, stop: &AtomicBool) -> Result<u8> {
    let c = check(a)?;
    let monitors = crate::options::monitor::Monitors::from_conn(&a.conn)?;
    let timeout = a.conn.connect_timeout.max(Duration::from_secs(2));
    let streams = if a.no_jetstream {
        Vec::new()
    } else {
        jetstream::read(&c.urls, &c.conn.dial, timeout)?
    };
    let errors = Arc::new(ErrorCounts::default());
    let mut nc = conn::connect(
        &ConnectSpec {
            servers: &c.urls,
            name: "msgbench-capture",
            opts: &c.conn.dial,
            stall_limit: timeout,
        },
        Arc::clone(&errors),
    )?;
    let mut subs = Vec::new();
    for (i, s) in c.subjects.iter().enumerate() {
        proto::encode_sub(&mut subs, s, None, i as u64 + 1);
    }
    if let Some(why) = nc.subscribe_checked(&subs, timeout)? {
        return Err(Error::Connect {
            url: nc.url.to_string(),
            reason: format!(
                "the server refused the subscription to '{}': {why} (the user needs permission \
                 to subscribe to it)",
                a.subjects
            ),
        });
    }
    let shown = if a.redact {
        "(redacted)".to_string()
    } else {
        nc.url.to_string()
    };
    eprintln!(
        "capturing '{}' on {shown} for {} s (payloads are never kept)",
        a.subjects, c.seconds
    );
    let mut tally = watch::Tally::new(c.seconds as usize, a.max_subjects);
    let cpu_before = crate::engine::tool_cpu::process_cpu_ns();
    let start = Instant::now();
    let limit_ns = c.seconds * 1_000_000_000;
    let mut ended_at = limit_ns;
    let end = nc.reader.run(&nc.shared, Duration::from_millis(100), |ev| {
        let at = start.elapsed().as_nanos() as u64;
        if at >= limit_ns || stop.load(Ordering::Relaxed) {
            ended_at = at.min(limit_ns);
            return Flow::Stop;
        }
        if let Event::Msg(m) = ev {
            tally.add(m.subject, m.reply, m.headers, m.payload.len(), at);
        }
        Flow::Continue
    });
    let cpu_ns = crate::engine::tool_cpu::process_cpu_ns()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    nc.shared.close();
    let interrupted = stop.load(Ordering::Relaxed);
    let mut missed = write::Missed::of(&errors, end);
    let conns = monitors
        .endpoints
        .first()
        .and_then(|e| write::Connections::read(e, monitors.tls.clone()));
    if tally.groups.is_empty() {
        eprintln!(
            "capture saw no traffic on '{}' in {} s{}: no file written",
            a.subjects,
            ended_at / 1_000_000_000,
            if tally.msgs > 0 {
                format!(
                    " ({} messages, all on inboxes or $-subjects, which are not replayed)",
                    crate::format::group(tally.msgs)
                )
            } else {
                String::new()
            }
        );
        return Ok(exit::FAILURE);
    }
    let seconds = if interrupted {
        (ended_at as f64 / 1e9).max(1.0)
    } else {
        c.seconds as f64
    };
    let salt = a.redact;
    let redact = move |s: &str| {
        if salt {
            write::hashed(s)
        } else {
            s.to_string()
        }
    };
    let rules = learn::Rules {
        seconds,
        max_words: a.max_words,
        redact: &redact,
    };
    let mut classes = learn::classes(&tally, &streams, &rules);
    let limit = crate::plan::workload::MAX_CLASSES.min(classes.len());
    missed.dropped = (classes.split_off(limit).into_iter())
        .map(|c| (c.pattern, c.msgs))
        .collect();
    // A redacted file names the filters' literal tokens by their hashes too.
    let filters = (c.subjects.iter())
        .map(|f| learn::redact_subject(f, &rules))
        .collect::<Vec<_>>()
        .join(",");
    let doc = write::Capture {
        from: &shown,
        subjects: &filters,
        seconds,
        tally: &tally,
        streams: &streams,
        classes,
        missed: &missed,
        conns,
        cpu_ns,
        redact: &redact,
    };
    let text = doc.text();
    let out = a.out.as_deref().expect("clap requires --out");
    write_out(out, &text)?;
    // What is written must be what `msgbench run` takes: a file that does not read back is a
    // fault of this code, said as one.
    crate::plan::workload::Workload::from_text(&text, "the captured workload", "capture")
        .map_err(|e| Error::Usage(format!("{e} (written to {}, unchanged)", out.display())))?;
    eprintln!("{}", doc.summary(out));
    Ok(if interrupted {
        exit::INTERRUPTED
    } else if missed.any() && !a.allow_loss {
        exit::LOSS
    } else {
        exit::OK
    })
}

fn write_out(out: &Path, text: &str) -> Result<()> {
    if out == Path::new("-") {
        use std::io::Write;
        let _ = std::io::stdout().write_all(text.as_bytes());
        return Ok(());
    }
    std::fs::write(out, text).map_err(|e| Error::Destination {
        flag: "--out",
        path: out.display().to_string(),
        reason: e.to_string(),
    })
}

/// Whether a kind of error means the capturer missed messages.
fn lossy(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::SlowConsumer
            | ErrorKind::FellBehind
            | ErrorKind::Disconnected
            | ErrorKind::PingTimeout
            | ErrorKind::Io
    )
}
