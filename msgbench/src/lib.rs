//! msgbench: an honest load generator and benchmark for NATS and gRPC.
//!
//! Every run of a scenario takes one path: the command line (or a plan file) becomes a
//! [`plan::Plan`]; `Plan::validate` checks it in one place; `plan::Targets` finds or starts
//! the servers; `plan::execute` runs it once; this file repeats that for `--runs`, judges
//! `--threshold`s and writes the result ([`result`]). The scenarios are one module each, listed
//! in one registry (`scenario::registry`); nothing above them names one. The layers, bottom
//! up: `error`, `format`, `values`; [`wire`]; [`stats`], `metric`; [`engine`]; [`result`];
//! `gate`; [`cli`], `options`; [`server`], `link`, `control`; `scenario`; [`plan`]; `export`,
//! `report`, `output`, `dist`, `capacity`, `compare`; [`command`] and this file
//! (msgbench/tests/layers.rs keeps them so).

mod capacity;
pub mod cli;
pub mod command;
mod compare;
mod control;
mod dist;
pub mod engine;
mod error;
mod export;
mod format;
mod gate;
mod history;
mod link;
mod metric;
mod options;
mod output;
pub mod plan;
mod report;
pub mod result;
mod scenario;
pub mod server;
pub mod stats;
#[cfg(test)]
mod testdir;
pub mod values;
pub mod wire;

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use clap::Parser;

use cli::DemoArgs;
use command::ScenarioCommand;
pub use command::{Cli, Command};
use error::{exit, Result};
use options::Output;
use plan::Plan;
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
            eprintln!("error: {}", cli::one_line(e));
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
    // Every run of one scenario is a plan, typed or read from a file.
    let plan = match command {
        Command::Run(a) => {
            let mut plan = Plan::from_file(&a.plan)?;
            *plan.out_mut() = a.out;
            plan
        }
        Command::Scenario(ScenarioCommand::Plan(plan)) => plan,
        Command::Scenario(ScenarioCommand::Helper {
            entry,
            name,
            matches,
        }) => return entry.helper(&name, &matches, stop),
        other => return run_tool(other, stop),
    };
    if plan.out().print_plan {
        return print_plan(&plan);
    }
    // Before any server is started or connected to: a result that cannot be written is
    // refused now, not found out after the run.
    output::dest::check_plan(&plan)?;
    check_plan(&plan)?;
    if plan.out().distributed() {
        return dist::fleet::run(&plan, stop);
    }
    run_plan(&plan, stop)
}

/// Every check a command makes before it starts, connects to or writes anything: what a run
/// of it does first, so bad input answers in one line whether the command is run or only
/// checked (the command-line fuzz target checks exactly this). A plan file is read only when
/// it runs.
///
/// # Errors
/// The first flag or value that cannot work, named in one line.
pub fn preflight(command: &Command) -> Result<()> {
    match command {
        Command::Scenario(ScenarioCommand::Plan(plan)) if plan.out().print_plan => {
            print_plan_refusals(plan)?;
            plan.to_json().map(|_| ())
        }
        Command::Scenario(ScenarioCommand::Plan(plan)) => check_plan(plan),
        Command::Capacity(c) => capacity::preflight(&c.plan, &c.search).map(|_| ()),
        Command::Compare(c) if c.plan.out().print_plan => {
            print_plan_refusals(&c.plan)?;
            c.plan.to_json().map(|_| ())
        }
        Command::Compare(c) => compare::preflight(&c.flags.clients, &c.plan),
        Command::Calibrate(a) if a.samples == 0 => {
            Err(error::Error::flag("--samples", "0", "must be at least 1"))
        }
        _ => Ok(()),
    }
}

/// A plan's checks before its run: its flags against each other, and the mode it runs in
/// (agents, or this process).
fn check_plan(plan: &Plan) -> Result<()> {
    let o = plan.out();
    // They name a recorded run; with nothing recorded they would act on nothing.
    let recording = o.record.is_some()
        || o.history_file.is_some()
        || std::env::var_os(options::HISTORY_ENV).is_some_and(|v| !v.is_empty());
    if let Some(flag) = [
        ("--name", o.name.is_some()),
        ("--label", !o.labels.is_empty()),
    ]
    .iter()
    .find_map(|(f, on)| (*on && !recording).then_some(*f))
    {
        return Err(error::Error::Usage(format!(
            "{flag} names a recorded run: give --record (or --history-file) too"
        )));
    }
    // Credentials by reference: the password of a history server comes from PGPASSWORD or
    // MSGBENCH_HISTORY, never from the command line.
    if let Some(url) = o.history_file.as_deref().and_then(std::path::Path::to_str) {
        history::store::refuse_password("--history-file", url).map_err(error::Error::Usage)?;
    }
    if o.distributed() {
        return dist::fleet::preflight(plan).map(|_| ());
    }
    // Without agents they would act on nothing.
    if let Some(flag) = [
        ("--control", o.control.is_some()),
        ("--sign", o.sign.is_some()),
    ]
    .iter()
    .find_map(|(f, on)| on.then_some(*f))
    {
        return Err(error::Error::Usage(format!(
            "{flag} is for runs on agents: give --agents N (or --agent-label) too"
        )));
    }
    plan.validate().map(|_| ())
}

/// The commands that are not one plan: the suite, compare, calibration and the file tools.
fn run_tool(command: Command, stop: &AtomicBool) -> Result<u8> {
    use output::dest::{check_files, check_out};
    match command {
        Command::Calibrate(a) => {
            check_files(&[("--json", a.json.as_ref())])?;
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
        Command::Compare(a) => {
            if a.plan.out().print_plan {
                return print_plan(&a.plan);
            }
            check_out(a.plan.out(), a.plan.files())?;
            let c = compare::run(a.flags.clients, a.flags.drivers.as_deref(), a.plan, stop)?;
            export::compare::emit(&c.doc, &c.output)?;
            Ok(c.code)
        }
        Command::Capacity(a) => capacity::run(a.plan, a.search, stop),
        Command::Report(a) => {
            check_files(&[("--output", Some(&a.output))])?;
            match &a.history {
                Some(db) => history::chart::run(db.as_ref(), &a),
                None => report::html::run(&a),
            }
        }
        Command::Agent(a) => dist::agent::run(&a, stop),
        Command::Diff(a) => {
            check_files(&[("--json", a.json.as_ref())])?;
            report::diff::run(&a)
        }
        Command::History(a) => history::actions::run(&a),
        Command::Completions(a) => Ok(print(&cli::completions(a.shell))),
        Command::Man(a) => {
            if let Some(dir) = &a.dir {
                // An output folder that cannot be written is a refusal (2), as any destination.
                cli::man_pages(dir).map_err(|e| error::Error::Destination {
                    flag: "--dir",
                    path: dir.display().to_string(),
                    reason: e.to_string(),
                })?;
                return Ok(exit::OK);
            }
            let page = cli::man_page().map_err(|source| error::Error::Io {
                context: "rendering the man page".into(),
                source,
            })?;
            Ok(print(&page))
        }
        Command::Run(_) | Command::Scenario(_) => unreachable!("every scenario run is a plan"),
    }
}

/// Generated text on stdout. A reader that closed the pipe early (`| head`) took what it
/// wanted: not an error.
fn print(text: &[u8]) -> u8 {
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text);
    exit::OK
}

/// `--print-plan`: the plan on stdout, and nothing run. Output flags would have nothing to
/// act on, so they are refused rather than ignored.
fn print_plan(plan: &Plan) -> Result<u8> {
    print_plan_refusals(plan)?;
    let doc = plan.to_json()?;
    let mut text = serde_json::to_string_pretty(&doc).expect("a plan serialises");
    text.push('\n');
    // A reader that closed the pipe early (`| head`) took what it wanted: not an error.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
    Ok(exit::OK)
}

/// The flags `--print-plan` refuses: output flags, with nothing run, would act on nothing.
fn print_plan_refusals(plan: &Plan) -> Result<()> {
    let o = plan.out();
    let given = [
        ("--json", o.json.is_some()),
        ("--csv", o.csv.is_some()),
        ("--markdown", o.markdown.is_some()),
        ("--stream-stats", o.stream_stats.is_some()),
        ("--metrics-listen", o.metrics_listen.is_some()),
        ("--web", o.web.is_some()),
        ("--live", o.live),
        ("--runs", o.runs > 1),
        ("--threshold", !o.threshold.is_empty()),
        ("--agents", o.agents.is_some()),
        ("--agent-label", !o.agent_labels.is_empty()),
        ("--control", o.control.is_some()),
        ("--sign", o.sign.is_some()),
        ("--record", o.record.is_some()),
        ("--history-file", o.history_file.is_some()),
        ("--name", o.name.is_some()),
        ("--label", !o.labels.is_empty()),
    ];
    match given.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(error::Error::Usage(format!(
            "{flag}: --print-plan prints the plan and runs nothing; give {flag} to `msgbench run`"
        ))),
        None => Ok(()),
    }
}

/// Runs a plan once, or `--runs` times, each with its live view and timeline, then judges the
/// thresholds, writes the result and returns the exit status. A run that fails after others
/// succeeded ends the series: what was measured is still written, then the failure is
/// reported.
fn run_plan(plan: &Plan, stop: &AtomicBool) -> Result<u8> {
    use output::live::{Live, StreamStats, View};
    use output::metrics::{Metrics, RunLabels};
    use output::web::Web;
    let validated = plan.validate()?;
    let out = validated.output();
    // Bound before any server is started or connected to: a port in use refuses the run.
    let metrics = out
        .metrics_listen
        .as_deref()
        .map(Metrics::bind)
        .transpose()?;
    if let Some(m) = metrics
        .as_ref()
        .filter(|_| out.metrics_listen_port_chosen())
    {
        eprintln!("--metrics-listen: http://{}/metrics", m.local_addr());
    }
    let slos: Vec<String> = out.thresholds.iter().map(ToString::to_string).collect();
    let web = out
        .web
        .as_deref()
        .map(|a| Web::bind(a).map(|w| w.with_slos(slos)))
        .transpose()?;
    if let Some(w) = &web {
        eprintln!("--web: the live page is on http://{}/", w.local_addr());
    }
    let targets = plan::Targets::resolve(&validated)?;
    let allow_loss = validated.allow_loss();
    let stream = out
        .stream_stats
        .as_deref()
        .map(StreamStats::create)
        .transpose()?
        .map(|s| Arc::new(Mutex::new(s)));
    let n = out.runs.max(1);
    let mut results = Vec::new();
    let mut failure = None;
    let mut cut_short = false;
    for k in 1..=n {
        // The id is made before the run, so that the live figures carry the one the result will.
        let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
        let run_id = result::new_run_id(plan.name(), &started_at.to_string());
        let meter = Arc::new(stats::timeline::Meter::default());
        let view = View {
            line: View::line_wanted(out.live, out.progress),
            stream: stream.clone(),
            scenario: plan.name(),
            run: (n > 1).then_some((k, n)),
            metrics: metrics.as_ref().map(|m| {
                m.feed(RunLabels {
                    run: run_id.clone(),
                    scenario: plan.name(),
                })
            }),
            web: web
                .as_ref()
                .map(|w| w.feed(plan.name(), &run_id, (n > 1).then_some((k, n)))),
        };
        let live = Live::start(Arc::clone(&meter), view);
        let r = plan::execute(
            &validated,
            targets.main.as_ref(),
            targets.second.as_ref(),
            &meter,
            stop,
            None,
        );
        let timeline = live.finish();
        match r {
            Ok(mut r) => {
                r.timeline = timeline;
                r.run_id = run_id;
                if let Some(t) = &targets.main {
                    t.annotate(&mut r);
                }
                if n > 1 {
                    eprintln!("{}", export::text::run_line(k, n, &r));
                }
                results.push(r);
            }
            // Interrupted while a later run was still connecting: that run failed because it was
            // stopped, not because the server would not have it. The series ends interrupted
            // with the runs it finished, as it does when the signal comes during a run.
            Err(_) if !results.is_empty() && stop.load(Ordering::Relaxed) => {
                cut_short = true;
                break;
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
        // Stopped between runs: the series is cut short even though its last run was not.
        if stop.load(Ordering::Relaxed) {
            cut_short = k < n;
            break;
        }
    }
    let mut result = result::RunResult::combine(results, allow_loss);
    result.interrupted |= cut_short;
    result.plan = Some(plan.recorded());
    result.thresholds = gate::judge(&out.thresholds, &result);
    if let Some(w) = &web {
        w.finish(&result);
    }
    output::write::emit(&result, out)?;
    if let Some(rec) = &out.record {
        history::record::after_run(&result, rec)?;
    }
    if let Some(m) = metrics {
        m.linger(out.metrics_linger, stop);
    }
    if let Some(w) = web {
        w.linger(out.web_linger, stop);
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(result.exit_code(allow_loss)),
    }
}

/// The default suite: short pub, pubsub, latency, request and JetStream publish runs on one
/// server, so a first-time user sees the tool work end to end in a few seconds. Each is a plan
/// (the same a user could keep in a file) and runs down the same path as a typed command.
fn demo(args: &DemoArgs, stop: &AtomicBool) -> Result<u8> {
    let conn = options::conn::ConnOptions::new(&args.conn)?;
    conn.no_fault("demo")?;
    // One server for the whole suite.
    let target = server::resolve(&options::server_choice(&args.conn)?, conn.link)?;
    let no_js = no_jetstream(&target, &conn)?;
    if let Some(why) = &no_js {
        eprintln!("note: the suite skips js pub: {why}");
    }
    let suite = [
        (
            "pub",
            serde_json::json!({"scenario": "pub",
            "load": {"msgs": 2_000_000, "size": 16, "subject": "msgbench.demo.pub"}}),
        ),
        (
            "pubsub",
            serde_json::json!({"scenario": "pubsub",
            "load": {"msgs": 1_000_000, "size": 16, "subject": "msgbench.demo.pubsub"}}),
        ),
        (
            "latency",
            serde_json::json!({"scenario": "latency", "rate": 1000, "duration": "3s",
            "size": 8, "warmup": "500ms", "subject": "msgbench.demo.latency"}),
        ),
        (
            "request",
            serde_json::json!({"scenario": "request", "msgs": 20_000, "size": 16,
            "subject": "msgbench.demo.service", "timeout": "2s"}),
        ),
        // A JetStream stream of the suite's own, in memory, removed afterwards.
        (
            "js pub",
            serde_json::json!({"scenario": "js.pub", "mode": "async", "msgs": 20_000,
            "size": 128, "target": {"stream": "msgbench_demo", "subject": "msgbench.demo.js",
            "storage": "memory", "purge": true, "delete_after": true}}),
        ),
    ];
    let mut worst = exit::OK;
    let runs = suite
        .into_iter()
        .filter(|(name, _)| !(*name == "js pub" && no_js.is_some()));
    for (k, (name, mut doc)) in runs.enumerate() {
        doc["schema"] = plan::SCHEMA.into();
        let mut plan = Plan::from_json(&doc)?;
        if let Some(c) = plan.conn_mut() {
            c.clone_from(&args.conn);
        }
        plan.out_mut().no_progress = args.no_progress;
        let validated = plan.validate()?;
        let mut result = plan::execute(
            &validated,
            Some(&target),
            None,
            &Meter::default(),
            stop,
            None,
        )?;
        result.plan = Some(plan.recorded());
        target.annotate(&mut result);
        if k > 0 {
            println!();
        }
        println!("== {name}");
        output::write::emit(&result, &Output::default())?;
        worst = worst.max(result.exit_code(false));
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    Ok(worst)
}

/// Why the suite's server cannot take `js pub`, when it cannot: JetStream's API is asked once,
/// before the suite starts, so that a server without JetStream gets the four other runs and one
/// line saying why the fifth is left out, not four runs and then an error.
fn no_jetstream(
    target: &server::Target,
    conn: &options::conn::ConnOptions,
) -> Result<Option<String>> {
    let mut api = engine::jsapi::Api::connect(
        &target.urls,
        "msgbench-demo-check",
        &conn.dial,
        std::time::Duration::from_secs(5),
    )?;
    let answer = api.api_level();
    api.close();
    match answer {
        Ok(_) => Ok(None),
        Err(e @ error::Error::JetStream { .. }) => Ok(Some(e.to_string())),
        Err(e) => Err(e),
    }
}
