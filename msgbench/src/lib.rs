//! msgbench: an honest load generator and benchmark for NATS.
//!
//! The crate follows the data: [`cli`] (what was typed) → [`options`] (validated values) →
//! [`server`] (which server, maybe started here) → [`scenario`] (who connects and does what) →
//! [`engine`] (connections, wire protocol, load loops) → [`stats`] (delivery and throughput
//! arithmetic) → [`result`] (the result schema) → [`export`] and [`output`] (formats and
//! destinations). [`error`] holds the error kinds and the exit-code table.

pub mod cli;
pub mod engine;
pub mod error;
pub mod export;
pub mod options;
pub mod output;
pub mod result;
pub mod scenario;
pub mod server;
pub mod stats;

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Parser;

use cli::{Cli, Command, DemoArgs, LoadArgs, OutputArgs};
use error::{exit, Result};
use options::{Options, ScenarioKind};

/// Raised by SIGINT/SIGTERM; every load loop polls it and ends, and results are still written.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// Parses `args`, runs the command and returns the process's exit status. Every failure is
/// printed as one `error: …` line on stderr.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    // A second handler cannot be installed (only matters for in-process callers).
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
    match run(cli, &STOP) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

/// Help and version go to stdout with status 0; any other parse error becomes a single line
/// naming the flag, with status 2 (clap's own usage block would bury the message).
fn clap_exit(e: &clap::Error) -> u8 {
    use clap::error::ErrorKind as K;
    match e.kind() {
        K::DisplayHelp | K::DisplayVersion | K::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            exit::OK
        }
        _ => {
            let rendered = e.render().to_string();
            let line = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("error: invalid arguments");
            eprintln!("{line}");
            exit::USAGE
        }
    }
}

/// Runs a parsed command line.
///
/// # Errors
/// Failures that prevent a result: bad input, no server, refused connections.
pub fn run(cli: Cli, stop: &AtomicBool) -> Result<u8> {
    let command = cli.command.unwrap_or(Command::Demo(cli.demo));
    match command {
        Command::Pub(a) => {
            let o = Options::new(
                ScenarioKind::Pub,
                a.clients,
                0,
                &a.load,
                &a.conn,
                &a.out,
                None,
                None,
            )?;
            run_one(&o, stop)
        }
        Command::Sub(a) => {
            let o = Options::new(
                ScenarioKind::Sub,
                0,
                a.clients,
                &a.load,
                &a.conn,
                &a.out,
                Some(&a.stall),
                Some(a.start_timeout),
            )?;
            run_one(&o, stop)
        }
        Command::Pubsub(a) => {
            let o = Options::new(
                ScenarioKind::Pubsub,
                a.pubs,
                a.subs,
                &a.load,
                &a.conn,
                &a.out,
                Some(&a.stall),
                None,
            )?;
            run_one(&o, stop)
        }
        Command::Latency(a) => {
            let o = options::latency::LatencyOptions::new(&a)?;
            let result = scenario::latency::run(&o, stop)?;
            output::write::emit(&result, &o.output)?;
            Ok(result.exit_code(o.allow_loss))
        }
        Command::Request(a) => {
            let o = options::request::RequestOptions::new(&a)?;
            let result = scenario::request::run_request(&o, stop)?;
            output::write::emit(&result, &o.output)?;
            Ok(result.exit_code(o.allow_loss))
        }
        Command::Reply(a) => {
            let o = options::request::ReplyOptions::new(&a)?;
            let result = scenario::request::run_reply(&o, stop)?;
            output::write::emit(&result, &o.output)?;
            Ok(result.exit_code(false))
        }
        Command::Demo(a) => demo(&a, stop),
    }
}

fn run_one(opts: &Options, stop: &AtomicBool) -> Result<u8> {
    let target = server::resolve(&opts.server)?;
    let result = scenario::run(opts, &target, stop)?;
    output::write::emit(&result, &opts.output)?;
    Ok(result.exit_code(opts.allow_loss))
}

/// The default suite: a short pub run and a short pubsub run on one server, so a first-time
/// user sees the tool work end to end in a few seconds.
fn demo(args: &DemoArgs, stop: &AtomicBool) -> Result<u8> {
    let suite: [(ScenarioKind, u32, u32, u64, usize); 2] = [
        (ScenarioKind::Pub, 1, 0, 2_000_000, 16),
        (ScenarioKind::Pubsub, 1, 1, 1_000_000, 16),
    ];
    let out = OutputArgs {
        json: None,
        csv: None,
        no_progress: args.no_progress,
    };
    let mut first = true;
    let mut target = None;
    let mut worst = exit::OK;
    for (kind, pubs, subs, msgs, size) in suite {
        let load = LoadArgs {
            msgs,
            duration: None,
            size,
            subject: format!("msgbench.demo.{}", kind.as_str()),
            multisubject: false,
            multisubject_max: 1,
            rate: 0.0,
            payload: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(5),
            allow_loss: false,
        };
        let opts = Options::new(kind, pubs, subs, &load, &args.conn, &out, None, None)?;
        // One server for the whole suite.
        let t = match target.take() {
            Some(t) => t,
            None => server::resolve(&opts.server)?,
        };
        if !first {
            println!();
        }
        first = false;
        println!("== {}", kind.as_str());
        let result = scenario::run(&opts, &t, stop)?;
        output::write::emit(&result, &opts.output)?;
        worst = worst.max(result.exit_code(false));
        target = Some(t);
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    Ok(worst)
}
