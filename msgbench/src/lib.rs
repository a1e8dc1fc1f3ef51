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
mod capture;
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
mod interrupt;
mod link;
mod metric;
mod options;
mod output;
pub mod plan;
mod report;
pub mod result;
mod scenario;
pub mod server;
mod session;
pub mod stats;
#[cfg(test)]
mod testdir;
pub mod values;
pub mod wire;

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;

use cli::DemoArgs;
use command::ScenarioCommand;
pub use command::{Cli, Command};
use error::{exit, Result};
use plan::{Plan, Validated};
use session::refusals::{self, Mode};

/// Parses `args`, runs the command and returns the process's exit status. Every failure is
/// printed as one `error: …` line on stderr.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    // A second handler cannot be installed (only matters for in-process callers).
    let _ = ctrlc::set_handler(|| interrupt::STOP.store(true, Ordering::SeqCst));
    match run(cli, &interrupt::STOP) {
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
        Command::Run(a) => match plan::workload::Document::read(&a.plan)? {
            plan::workload::Document::Plan(_) if a.scale.is_some() => {
                return Err(error::Error::Usage(
                    "--scale scales a workload's classes; a plan of one scenario takes its \
                     own --rate"
                        .into(),
                ))
            }
            plan::workload::Document::Plan(_) if a.time_warp.is_some() => {
                return Err(error::Error::Usage(
                    "--time-warp replays a workload's captured curves; a plan of one scenario \
                     follows its own --rate-schedule"
                        .into(),
                ))
            }
            plan::workload::Document::Plan(mut plan) => {
                *plan.out_mut() = a.out;
                *plan
            }
            plan::workload::Document::Workload(mut w) => {
                if let Some(f) = a.scale {
                    w.scale(f)?;
                }
                if let Some(f) = a.time_warp {
                    w.warp(f)?;
                }
                return workload(w, &a.out, stop);
            }
        },
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
    let validated = check_plan(&plan)?;
    let sinks = session::Sinks::open(plan.out(), &plan.out().threshold)?;
    if plan.out().distributed() {
        let fleet = dist::fleet::Fleet::find(&plan)?;
        return session::run(&plan, &validated, sinks, &fleet, stop);
    }
    let here = session::Local::resolve(&plan, &validated)?;
    session::run(&plan, &validated, sinks, &here, stop)
}

/// `msgbench run WORKLOAD.yaml`: printed, or checked whole (every class, the output flags and
/// destinations) and then run as one session of classes.
fn workload(
    mut w: plan::workload::Workload,
    out: &cli::OutputArgs,
    stop: &AtomicBool,
) -> Result<u8> {
    if out.print_plan {
        refusals::check(out, Mode::PrintPlan)?;
        let mut text = serde_json::to_string_pretty(&w.to_json()?).expect("a workload serialises");
        text.push('\n');
        return Ok(print(text.as_bytes()));
    }
    let agents = out.distributed();
    refusals::check(
        out,
        if agents {
            Mode::WorkloadAgents
        } else {
            Mode::Workload
        },
    )?;
    let files = w.classes.iter().flat_map(|c| c.plan.files()).collect();
    output::dest::check_out(out, files)?;
    for c in &mut w.classes {
        let o = c.plan.out_mut();
        o.no_progress = out.no_progress;
        // Each class runs on the workload's agents, as the plan alone would with these flags.
        o.agents.clone_from(&out.agents);
        o.agent_labels.clone_from(&out.agent_labels);
        o.control.clone_from(&out.control);
        o.sign.clone_from(&out.sign);
        o.agent_silence = out.agent_silence;
        output::dest::one_run_here(&c.plan, None)
            .map_err(|e| error::Error::Usage(format!("class '{}': {e}", c.name)))?;
    }
    let validated = w.validate()?;
    if agents {
        return session::mix::run(&w, &validated, out, || dist::mix::OnAgents::find(&w), stop);
    }
    let here = || session::mix::Mix::resolve(&w, &validated);
    session::mix::run(&w, &validated, out, here, stop)
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
            refusals::check(plan.out(), Mode::PrintPlan)?;
            plan.to_json().map(|_| ())
        }
        Command::Scenario(ScenarioCommand::Plan(plan)) => check_plan(plan).map(|_| ()),
        Command::Capacity(command::CapacityCommand::Scenario { plan, search }) => {
            capacity::preflight(plan, search).map(|_| ())
        }
        Command::Compare(c) if c.plan.out().print_plan => {
            refusals::check(c.plan.out(), Mode::PrintPlan)?;
            c.plan.to_json().map(|_| ())
        }
        Command::Compare(c) => compare::preflight(&c.flags.clients, &c.plan),
        Command::Calibrate(a) if a.samples == 0 => {
            Err(error::Error::flag("--samples", "0", "must be at least 1"))
        }
        _ => Ok(()),
    }
}

/// A plan's checks before its run: its output flags against the mode it runs in (agents, or
/// this process), and its scenario's flags against each other.
fn check_plan(plan: &Plan) -> Result<Validated> {
    let o = plan.out();
    let mode = if o.distributed() {
        Mode::Agents
    } else {
        Mode::Here
    };
    refusals::check(o, mode)?;
    // Credentials by reference: the password of a history server comes from PGPASSWORD or
    // MSGBENCH_HISTORY, never from the command line.
    if let Some(url) = o.history_file.as_deref().and_then(std::path::Path::to_str) {
        history::store::refuse_password("--history-file", url).map_err(error::Error::Usage)?;
    }
    let many = (o.runs > 1).then(|| {
        format!(
            "--runs {} would leave only the last run's, beside figures of all {}",
            o.runs, o.runs
        )
    });
    output::dest::one_run_here(plan, many)?;
    if o.distributed() {
        return dist::fleet::preflight(plan).map(|p| p.validated);
    }
    plan.validate()
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
            options::monitor::refuse_typed(
                &a.conn,
                "calibrate",
                "it times round trips, with no timeline to sample the server on",
            )?;
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
        Command::Capacity(command::CapacityCommand::Scenario { plan, search }) => {
            capacity::run(plan, search, stop)
        }
        Command::Capacity(command::CapacityCommand::Workload { file, search, out }) => {
            match plan::workload::Document::read(&file)? {
                plan::workload::Document::Workload(w) => {
                    capacity::mix::run(&w, &search, &out, stop)
                }
                plan::workload::Document::Plan(_) => Err(error::Error::Usage(format!(
                    "'{}' is a plan of one scenario: search it with `msgbench capacity \
                     <scenario> …`",
                    file.display()
                ))),
            }
        }
        Command::Report(a) => {
            check_files(&[("--output", Some(&a.output))])?;
            match &a.history {
                Some(db) => history::chart::run(db.as_ref(), &a),
                None => report::html::run(&a),
            }
        }
        Command::Agent(a) => dist::agent::run(&a, stop),
        Command::Capture(a) => capture::run(&a, stop),
        Command::Diff(a) => {
            check_files(&[("--json", a.json.as_ref())])?;
            report::diff::run(&a)
        }
        Command::History(a) => history::actions::run(&a),
        Command::Completions(a) => Ok(print(&command::completions(a.shell))),
        Command::Man(a) => {
            if let Some(dir) = &a.dir {
                // An output folder that cannot be written is a refusal (2), as any destination.
                command::man_pages(dir).map_err(|e| error::Error::Destination {
                    flag: "--dir",
                    path: dir.display().to_string(),
                    reason: e.to_string(),
                })?;
                return Ok(exit::OK);
            }
            let page = command::man_page().map_err(|source| error::Error::Io {
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
    refusals::check(plan.out(), Mode::PrintPlan)?;
    let doc = plan.to_json()?;
    let mut text = serde_json::to_string_pretty(&doc).expect("a plan serialises");
    text.push('\n');
    Ok(print(text.as_bytes()))
}

/// The default suite: short pub, pubsub, latency, request and JetStream publish runs on one
/// server, so a first-time user sees the tool work end to end in a few seconds. Each is a plan
/// (the same a user could keep in a file) and runs down the same path as a typed command.
fn demo(args: &DemoArgs, stop: &AtomicBool) -> Result<u8> {
    let conn = options::conn::ConnOptions::new(&args.conn)?;
    conn.no_fault("demo")?;
    let servers = session::servers::Servers::check_conn(&args.conn)?;
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
    let here = session::Local::on(
        plan::Targets {
            main: Some(target),
            second: None,
        },
        servers,
    );
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
        if k > 0 {
            println!();
        }
        println!("== {name}");
        let sinks = session::Sinks::open(plan.out(), &[])?;
        worst = worst.max(session::run(&plan, &validated, sinks, &here, stop)?);
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
