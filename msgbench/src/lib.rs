//! msgbench: an honest load generator and benchmark for NATS.
//!
//! The crate follows the data: [`cli`] (what was typed) → [`options`] (validated values) →
//! [`server`] (which server, maybe started here, or a local cluster) and [`link`] (an impaired
//! link in front of it) → [`scenario`] (who connects and does what) → [`engine`] (connections,
//! TLS, wire protocol, load loops) → [`stats`] (delivery and throughput arithmetic) →
//! [`result`] (the result schema) → [`gate`] (thresholds judged on it) → [`export`] and
//! [`output`] (formats and destinations). [`error`] holds the error kinds and the exit-code
//! table.

pub mod cli;
pub mod engine;
pub mod error;
pub mod export;
pub mod format;
pub mod gate;
pub mod link;
pub mod metric;
pub mod options;
pub mod output;
pub mod report;
pub mod result;
pub mod scenario;
pub mod server;
pub mod stats;
#[cfg(test)]
mod testdir;
pub mod values;
pub mod wire;

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;

use cli::{Cli, Command, DemoArgs, LoadArgs, OutputArgs};
use error::{exit, Result};
use options::{Options, Output, ScenarioKind};
use stats::timeline::Meter;

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
    let _ = ctrlc::set_handler(|| {
        STOP.store(true, Ordering::SeqCst);
        engine::conn::INTERRUPTED.store(true, Ordering::SeqCst);
    });
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
            let mut lines = rendered.lines().skip_while(|l| l.trim().is_empty());
            let mut line = lines
                .next()
                .unwrap_or("error: invalid arguments")
                .to_string();
            // "…were not provided:" lists the missing flags on the indented lines below.
            if line.ends_with(':') {
                let listed: Vec<&str> = lines
                    .take_while(|l| l.starts_with(char::is_whitespace) && !l.trim().is_empty())
                    .map(str::trim)
                    .collect();
                line = format!("{line} {}", listed.join(", "));
            }
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
    // Before any server is started or connected to: a result that cannot be written is
    // refused now, not found out after the run.
    output::dest::check_command(&command)?;
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
            let a = server::resolve(&o.server_a, o.conn.link)?;
            let b = o
                .server_b
                .as_ref()
                .map(|b| server::resolve(b, o.conn.link))
                .transpose()?;
            // In a local cluster the subscriber sits on the second node: latency across a route.
            let peer = if b.is_none() { a.node(1) } else { None };
            let sub_side = b.as_ref().or(peer.as_ref());
            execute("latency", Some(&a), &o.output, o.allow_loss, stop, |m| {
                scenario::latency::run(&o, &a, sub_side, m, stop)
            })
        }
        Command::Request(a) => {
            let o = options::request::RequestOptions::new(&a)?;
            let t = server::resolve(&o.server, o.conn.link)?;
            execute("request", Some(&t), &o.output, o.allow_loss, stop, |m| {
                scenario::request::run_request(&o, &t, m, stop)
            })
        }
        Command::Reply(a) => {
            let o = options::request::ReplyOptions::new(&a)?;
            let t = server::resolve(&o.server, o.conn.link)?;
            execute("reply", Some(&t), &o.output, false, stop, |m| {
                scenario::request::run_reply(&o, &t, m, stop)
            })
        }
        Command::Js(cli::JsCommand::Pub(a)) => {
            let o = options::js::JsPubOptions::new(&a)?;
            let p = &o.publish;
            let t = server::resolve(&p.server, p.conn.link)?;
            execute("js.pub", Some(&t), &p.output, p.allow_loss, stop, |m| {
                scenario::js::run_pub(&o, &t, m, stop)
            })
        }
        Command::Js(cli::JsCommand::Consume(a)) => {
            let o = options::js::JsConsumeOptions::new(&a)?;
            let t = server::resolve(&o.server, o.conn.link)?;
            execute("js.consume", Some(&t), &o.output, o.allow_loss, stop, |m| {
                scenario::js::run_consume(&o, &t, m, stop)
            })
        }
        Command::Kv(kv) => {
            let (a, get) = match &kv {
                cli::KvCommand::Put(a) => (a, false),
                cli::KvCommand::Get(a) => (a, true),
            };
            let o = options::js::KvOptions::new(a, get)?;
            let t = server::resolve(&o.put.publish.server, o.put.publish.conn.link)?;
            let out = o.gets.as_ref().map_or(&o.put.publish.output, |g| &g.output);
            let name = if get { "kv.get" } else { "kv.put" };
            execute(name, Some(&t), out, a.allow_loss, stop, |m| {
                scenario::js::run_kv(&o, &t, m, stop)
            })
        }
        Command::Calibrate(a) => {
            if a.samples == 0 {
                return Err(error::Error::flag("--samples", "0", "must be at least 1"));
            }
            let conn = options::conn::ConnOptions::new(&a.conn)?;
            conn.no_fault("calibrate")?;
            let target = server::resolve(&options::server_choice(&a.conn)?, conn.link)?;
            let opts = scenario::calibrate::CalibrateOptions {
                conn,
                samples: a.samples,
                size: a.size,
            };
            let cal = scenario::calibrate::run(&opts, &target, stop)?;
            output::write::emit_calibration(&cal, a.json.as_deref())?;
            Ok(if stop.load(Ordering::Relaxed) {
                exit::INTERRUPTED
            } else {
                exit::OK
            })
        }
        Command::Demo(a) => demo(&a, stop),
        Command::Compare(a) => scenario::compare::run(&a, stop),
        Command::Report(a) => report::html::run(&a),
        Command::Diff(a) => report::diff::run(&a),
        Command::Grpc(g) => match g.action {
            Some(cli::GrpcAction::Serve(a)) => scenario::grpc::serve(&a, stop),
            Some(cli::GrpcAction::Encode(a)) => {
                let report = scenario::grpc::encode(&a)?;
                export::text::print_encode(&report, a.json.as_deref())?;
                Ok(exit::OK)
            }
            None => {
                let o = options::grpc::GrpcOptions::new(&g.run)?;
                execute("grpc", None, &o.output, o.allow_loss, stop, |m| {
                    scenario::grpc::run(&o, m, stop)
                })
            }
        },
    }
}

fn run_one(opts: &Options, stop: &AtomicBool) -> Result<u8> {
    let target = server::resolve(&opts.server, opts.conn.link)?;
    execute(
        opts.scenario.as_str(),
        Some(&target),
        &opts.output,
        opts.allow_loss,
        stop,
        |m| scenario::run(opts, &target, m, stop),
    )
}

/// Runs a scenario once, or `--runs` times, each with its live view and timeline, then judges
/// the thresholds, writes the result and returns the exit status. A run that fails after
/// others succeeded ends the series: what was measured is still written, then the failure is
/// reported.
fn execute(
    scenario: &'static str,
    target: Option<&server::Target>,
    out: &Output,
    allow_loss: bool,
    stop: &AtomicBool,
    mut once: impl FnMut(&stats::timeline::Meter) -> Result<result::RunResult>,
) -> Result<u8> {
    use output::live::{Live, StreamStats, View};
    let stream = out
        .stream_stats
        .as_deref()
        .map(StreamStats::create)
        .transpose()?
        .map(|s| Arc::new(Mutex::new(s)));
    let n = out.runs.max(1);
    let mut results = Vec::new();
    let mut failure = None;
    for k in 1..=n {
        let meter = Arc::new(stats::timeline::Meter::default());
        let view = View {
            line: View::line_wanted(out.live, out.progress),
            stream: stream.clone(),
            scenario,
            run: (n > 1).then_some((k, n)),
        };
        let live = Live::start(Arc::clone(&meter), view);
        let r = once(&meter);
        let timeline = live.finish();
        match r {
            Ok(mut r) => {
                r.timeline = timeline;
                if let Some(t) = target {
                    t.annotate(&mut r);
                }
                if n > 1 {
                    eprintln!("{}", export::text::run_line(k, n, &r));
                }
                results.push(r);
            }
            Err(e) if results.is_empty() => {
                if let Some(s) = &stream {
                    s.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove_if_empty();
                }
                return Err(e);
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    let mut result = result::RunResult::combine(results, allow_loss);
    result.thresholds = gate::judge(&out.thresholds, &result);
    output::write::emit(&result, out)?;
    match failure {
        Some(e) => Err(e),
        None => Ok(result.exit_code(allow_loss)),
    }
}

/// The default suite: short pub, pubsub, latency, request and JetStream publish runs on one
/// server, so a first-time user sees the tool work end to end in a few seconds.
fn demo(args: &DemoArgs, stop: &AtomicBool) -> Result<u8> {
    let out = OutputArgs {
        json: None,
        csv: None,
        markdown: None,
        no_progress: args.no_progress,
        live: false,
        stream_stats: None,
        runs: 1,
        threshold: Vec::new(),
    };
    let conn = options::conn::ConnOptions::new(&args.conn)?;
    conn.no_fault("demo")?;
    // One server for the whole suite.
    let target = server::resolve(&options::server_choice(&args.conn)?, conn.link)?;
    let mut worst = exit::OK;
    let mut report = |name: &str, result: Result<result::RunResult>, first: bool| -> Result<()> {
        let mut result = result?;
        target.annotate(&mut result);
        if !first {
            println!();
        }
        println!("== {name}");
        output::write::emit(&result, &Output::default())?;
        worst = worst.max(result.exit_code(false));
        Ok(())
    };
    for (kind, pubs, subs, msgs) in [
        (ScenarioKind::Pub, 1, 0, 2_000_000),
        (ScenarioKind::Pubsub, 1, 1, 1_000_000),
    ] {
        let load = LoadArgs {
            msgs,
            duration: None,
            size: 16,
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
        report(
            kind.as_str(),
            scenario::run(&opts, &target, &Meter::default(), stop),
            kind == ScenarioKind::Pub,
        )?;
        if stop.load(Ordering::Relaxed) {
            return Ok(worst);
        }
    }
    let latency = cli::LatencyArgs {
        rate: 1000.0,
        msgs: None,
        duration: Some(Duration::from_secs(3)),
        size: 8,
        warmup: Duration::from_millis(500),
        subject: "msgbench.demo.latency".into(),
        server_a: None,
        server_b: None,
        late_bound: Duration::from_millis(1),
        busy_poll: cli::BusyPoll::Auto,
        hist: None,
        timeout: Duration::from_secs(5),
        allow_loss: false,
        conn: cli::ConnArgs {
            ..args.conn.clone()
        },
        out: out.clone(),
    };
    let opts = options::latency::LatencyOptions::new(&latency)?;
    report(
        "latency",
        scenario::latency::run(&opts, &target, None, &Meter::default(), stop),
        false,
    )?;
    if stop.load(Ordering::Relaxed) {
        return Ok(worst);
    }
    let request = cli::RequestArgs {
        clients: 1,
        in_flight: 1,
        rate: 0.0,
        msgs: 20_000,
        duration: None,
        size: 16,
        subject: "msgbench.demo.service".into(),
        responders: 1,
        delay: Duration::ZERO,
        timeout: Duration::from_secs(2),
        allow_loss: false,
        conn: args.conn.clone(),
        out,
    };
    let opts = options::request::RequestOptions::new(&request)?;
    report(
        "request",
        scenario::request::run_request(&opts, &target, &Meter::default(), stop),
        false,
    )?;
    if stop.load(Ordering::Relaxed) {
        return Ok(worst);
    }
    // A JetStream stream of the suite's own, in memory, removed afterwards.
    let js = cli::JsPubArgs {
        mode: cli::JsPubMode::Async,
        max_in_flight: None,
        batch: None,
        dedup: false,
        msg_id_prefix: None,
        clients: 1,
        msgs: 20_000,
        duration: None,
        size: 128,
        streams: 1,
        target: cli::StreamArgs {
            stream: "msgbench_demo".into(),
            subject: "msgbench.demo.js".into(),
            subjects: Vec::new(),
            storage: cli::Storage::Memory,
            replicas: 1,
            max_bytes: None,
            discard: cli::Discard::Old,
            purge: true,
            delete_after: true,
        },
        timeout: Duration::from_secs(5),
        allow_loss: false,
        conn: args.conn.clone(),
        out: OutputArgs {
            json: None,
            csv: None,
            markdown: None,
            no_progress: args.no_progress,
            live: false,
            stream_stats: None,
            runs: 1,
            threshold: Vec::new(),
        },
    };
    let opts = options::js::JsPubOptions::new(&js)?;
    let result = scenario::js::run_pub(&opts, &target, &Meter::default(), stop);
    report("js pub", result, false)?;
    Ok(worst)
}
