//! No input panics: every command of the tree (every scenario, its helpers, and each scenario
//! under `compare` and `capacity`), with each of its flags and with the modes (agents, runs,
//! schedules, metrics, gates, outputs, faults, plans), is parsed and given to
//! [`msgbench::preflight`], the checks a run makes before it starts anything. Each must come
//! back as a clap error or one line of `error: …`, or pass; never a panic.
//!
//! The fuzz target `command_line` (fuzz/) draws such lines at random; this test walks them
//! exhaustively over a fixed pool of values, so it runs in the suite in a few seconds.

use std::panic::{catch_unwind, AssertUnwindSafe};

use clap::{CommandFactory, Parser};
use msgbench::{preflight, Cli};

/// Values every flag is tried with besides its own choices: numbers of every kind, durations,
/// sizes, rates and schedules, URLs, gates, faults, and plain nonsense.
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "1.5",
    "1e30",
    "NaN",
    "abc",
    "",
    "1s",
    "0s",
    "500ms",
    "1KiB",
    "10MB",
    "uniform:16..64",
    "64B:70%,1KiB:30%",
    "lognormal:1KiB:16KiB",
    "zipf:1.1",
    "hot:1%:50%",
    "uniform",
    "a=x,y",
    "id=zipf:1.1:100",
    "o.{a}",
    "nats://127.0.0.1:1",
    "127.0.0.1:0",
    "p99<1ms",
    "lost==0",
    "100@1s",
    "step:100:100:1s:300",
    "ramp:10:100:2s",
    "kill@1s",
    "restart@1s:1s",
    "pause@1s:100ms",
    "delay=1ms",
    "on",
    "off",
    "/nonexistent/x",
    "a:b",
    "x,y",
    "\u{1F980}",
];

/// Modes and outputs added to a scenario's line: each alone, on top of one flag.
const MODES: &[&[&str]] = &[
    &["--agents", "2"],
    &["--agents", "2", "--sign", "/nonexistent.nk"],
    &["--agent-label", "zone=a"],
    &["--runs", "2"],
    &["--rate-schedule", "100@1s"],
    &["--rate-schedule", "100@1s", "--agents", "2"],
    &["--metrics-listen", "127.0.0.1:0"],
    &["--metrics-listen", "127.0.0.1:0", "--agents", "2"],
    &["--web", "127.0.0.1:0"],
    &["--web", "127.0.0.1:0", "--agents", "2"],
    &["--threshold", "p99<1ms"],
    &["--threshold", "connect_p99<50ms"],
    &["--json", "-"],
    &["--csv", "/nonexistent/x.csv"],
    &["--live"],
    &["--stream-stats", "/nonexistent/s.jsonl"],
    &["--print-plan"],
    &["--print-plan", "--json", "x.json"],
    &["--fault", "restart@1s:1s", "--reconnect"],
    &["--cluster", "3"],
    &["--link", "delay=1ms"],
    &["--control", "nats://127.0.0.1:1"],
    &[
        "--record=required",
        "--history-file",
        "/nonexistent/h.db",
        "--label",
        "k=v",
    ],
    &["--name", "nightly"],
];

/// Every runnable path of the tree, as the words that reach it.
fn paths(cmd: &clap::Command, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if cmd.get_name() == "help" {
        return;
    }
    out.push(prefix.clone());
    for sub in cmd.get_subcommands() {
        prefix.push(sub.get_name().to_string());
        paths(sub, prefix, out);
        prefix.pop();
    }
}

fn command_at<'a>(root: &'a clap::Command, path: &[String]) -> &'a clap::Command {
    path.iter().fold(root, |c, w| {
        c.find_subcommand(w).expect("a path of the tree")
    })
}

/// Parses and checks one line; returns what went wrong other than a refusal in one line.
fn check(line: &[String]) -> Option<String> {
    let argv: Vec<&str> = std::iter::once("msgbench")
        .chain(line.iter().map(String::as_str))
        .collect();
    let outcome = catch_unwind(AssertUnwindSafe(|| match Cli::try_parse_from(&argv) {
        Err(e) => {
            let one = msgbench::cli::one_line(&e);
            (one.contains('\n') || one.is_empty()).then(|| format!("clap said: {one:?}"))
        }
        Ok(cli) => match cli.command.as_ref().map(preflight) {
            Some(Err(e)) => {
                let text = e.to_string();
                (text.contains('\n') || text.trim().is_empty())
                    .then(|| format!("not one line: {text:?}"))
            }
            _ => None,
        },
    }));
    match outcome {
        Ok(problem) => problem.map(|p| format!("{}: {p}", argv.join(" "))),
        Err(_) => Some(format!("{}: PANICKED", argv.join(" "))),
    }
}

#[test]
fn every_command_with_every_flag_and_mode_answers_without_a_panic() {
    // Panics are the finding: keep their messages off the test's output.
    std::panic::set_hook(Box::new(|_| {}));
    let root = Cli::command();
    let mut all = Vec::new();
    paths(&root, &mut Vec::new(), &mut all);
    let mut problems = Vec::new();
    let mut lines = 0usize;
    for path in &all {
        let cmd = command_at(&root, path);
        let args: Vec<&clap::Arg> = cmd
            .get_arguments()
            .filter(|a| a.get_long().is_some())
            .collect();
        let mut tried = |line: Vec<String>| {
            lines += 1;
            problems.extend(check(&line));
        };
        tried(path.clone());
        for arg in &args {
            let flag = format!("--{}", arg.get_long().unwrap());
            let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
            if !takes_value {
                tried([path.clone(), vec![flag.clone()]].concat());
                continue;
            }
            let own: Vec<String> = arg
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect();
            for v in own.iter().map(String::as_str).chain(VALUES.iter().copied()) {
                tried([path.clone(), vec![flag.clone(), v.to_string()]].concat());
            }
        }
        // The modes: only where the command has the flag they name.
        for mode in MODES {
            let has = |f: &str| args.iter().any(|a| a.get_long() == f.strip_prefix("--"));
            if mode.iter().filter(|w| w.starts_with("--")).all(|f| has(f)) {
                tried([path.clone(), mode.iter().map(|s| s.to_string()).collect()].concat());
            }
        }
    }
    let _ = std::panic::take_hook();
    assert!(lines > 1000, "only {lines} lines were tried");
    assert!(
        problems.is_empty(),
        "{} of {lines} lines:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
