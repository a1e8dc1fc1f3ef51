//! Fuzzes whole command lines: the input chooses a command of the tree (every scenario, its
//! helpers, each scenario under `compare` and `capacity`, the tools), then flags of that
//! command and their values (its own choices, a pool of values of every kind, or bytes of the
//! input as text). The line is parsed and given to `msgbench::preflight`, the checks a run makes
//! before it starts anything. It must come back as a clap error or a refusal in one line, or
//! pass; a panic is the finding.
//!
//! Input layout: byte 0 picks the command; then pairs of bytes pick a flag and its value; a
//! value byte of 0xFF takes the rest of the input, lossily decoded, as the value.

#![no_main]

use std::sync::OnceLock;

use clap::{CommandFactory, Parser};
use libfuzzer_sys::fuzz_target;
use msgbench::{preflight, Cli};

const VALUES: &[&str] = &[
    "0", "1", "2", "-1", "1.5", "1e30", "NaN", "abc", "", "1s", "0s", "500ms", "1KiB", "10MB",
    "nats://127.0.0.1:1", "127.0.0.1:0", "p99<1ms", "lost==0", "100@1s", "step:100:100:1s:300",
    "ramp:10:100:2s", "kill@1s", "restart@1s:1s", "pause@1s:100ms", "delay=1ms", "on", "off",
    "/nonexistent/x", "a:b", "x,y", "2", "3", "100", "10000", "1M",
];

/// A command of the tree: the words that reach it, and its flags with their own choices.
struct Leaf {
    path: Vec<String>,
    flags: Vec<(String, bool, Vec<String>)>,
}

fn leaves() -> &'static [Leaf] {
    static ALL: OnceLock<Vec<Leaf>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut out = Vec::new();
        walk(&Cli::command(), &mut Vec::new(), &mut out);
        out
    })
}

fn walk(cmd: &clap::Command, path: &mut Vec<String>, out: &mut Vec<Leaf>) {
    if cmd.get_name() == "help" {
        return;
    }
    let flags = cmd
        .get_arguments()
        .filter_map(|a| {
            let long = a.get_long()?;
            let takes = a.get_num_args().is_some_and(|n| n.takes_values());
            let own = a
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect();
            Some((format!("--{long}"), takes, own))
        })
        .collect();
    out.push(Leaf {
        path: path.clone(),
        flags,
    });
    for sub in cmd.get_subcommands() {
        path.push(sub.get_name().to_string());
        walk(sub, path, out);
        path.pop();
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, mut rest)) = data.split_first() else {
        return;
    };
    let all = leaves();
    let leaf = &all[pick as usize % all.len()];
    let mut argv: Vec<String> = std::iter::once("msgbench".to_string())
        .chain(leaf.path.iter().cloned())
        .collect();
    while let [f, v, tail @ ..] = rest {
        rest = tail;
        if leaf.flags.is_empty() {
            break;
        }
        let (flag, takes, own) = &leaf.flags[*f as usize % leaf.flags.len()];
        argv.push(flag.clone());
        if !takes {
            continue;
        }
        let value = if *v == 0xFF {
            let text = String::from_utf8_lossy(rest).into_owned();
            rest = &[];
            text
        } else if !own.is_empty() && v % 2 == 0 {
            own[(*v as usize / 2) % own.len()].clone()
        } else {
            VALUES[*v as usize % VALUES.len()].to_string()
        };
        argv.push(value);
    }
    match Cli::try_parse_from(&argv) {
        Err(e) => {
            let one = msgbench::cli::one_line(&e);
            assert!(!one.contains('\n') && !one.is_empty(), "{argv:?}: {one:?}");
        }
        Ok(cli) => {
            if let Some(Err(e)) = cli.command.as_ref().map(preflight) {
                let text = e.to_string();
                assert!(!text.contains('\n') && !text.trim().is_empty(), "{argv:?}: {text:?}");
            }
        }
    }
});
