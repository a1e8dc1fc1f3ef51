//! Which output flags each mode refuses, in one table: a flag a mode cannot act on is refused
//! in one line that says why, never accepted and ignored. A row is a flag; a column is a mode
//! that takes a plan's output flags: printing the plan, a run in this process, a comparison of
//! client libraries, a capacity search, a workload (here, or on agents: which refuses what a
//! workload refuses and more), a search of a workload (which refuses what a search and a
//! workload each refuse, and what only their pairing cannot do). (A run of one plan on agents
//! takes every output flag.)

use crate::cli::OutputArgs;
use crate::error::{Error, Result};

/// A mode that meets a plan's output flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `--print-plan`: the plan is printed, and nothing runs.
    PrintPlan,
    /// A run in this process (no `--agents`).
    Here,
    /// A run on agents: every output flag acts.
    Agents,
    /// `msgbench compare`.
    Compare,
    /// `msgbench capacity`.
    Capacity,
    /// `msgbench run WORKLOAD.yaml`: a mix of classes in this process.
    Workload,
    /// `msgbench run WORKLOAD.yaml --agents N`: a mix of classes on agents.
    WorkloadAgents,
    /// `msgbench capacity WORKLOAD.yaml`: what a search and a workload refuse, and more.
    WorkloadSearch,
}

/// One output flag: whether it was given, and why each mode refuses it (`None`: it acts).
struct Row {
    flag: &'static str,
    given: fn(&OutputArgs) -> bool,
    print_plan: Option<&'static str>,
    here: Option<&'static str>,
    compare: Option<&'static str>,
    capacity: Option<&'static str>,
    workload: Option<&'static str>,
    /// Beyond what `capacity` and `workload` refuse, for a search of a workload.
    workload_search: Option<&'static str>,
    /// Beyond what `workload` refuses, for a workload on agents.
    workload_agents: Option<&'static str>,
}

/// Nothing runs, so an output flag has nothing to act on.
const NOTHING_RUNS: Option<&str> =
    Some("--print-plan prints the plan and runs nothing; give the flag to `msgbench run`");
/// Drivers report once, at the end of a run.
const DRIVERS_AT_THE_END: Option<&str> = Some(
    "it needs second-by-second figures from every client, and drivers report only at the end \
     of a run; use it with `msgbench <scenario>` directly",
);
const DRIVERS_HERE: Option<&str> = Some(
    "it runs one scenario on agents; compare runs client libraries side by side in this process",
);
const NOT_ONE_BENCHMARK: Option<&str> = Some(
    "it records runs of one benchmark; record each client's with `msgbench <scenario> --record`",
);
const SEARCH_NOT_RECORDED: Option<&str> =
    Some("a search is many probes, not runs of one benchmark; record the scenario's own runs");
const SEARCH_DOCUMENT: Option<&str> = Some("a search writes its document with --json");
const PROBES_PRINTED: Option<&str> = Some("probes are printed as they end");
const FOR_AGENTS: Option<&str> =
    Some("it is for runs on agents: give --agents N (or --agent-label)");

const ONE_DOCUMENT: Option<&str> =
    Some("a workload's result is one document of every class's; write it with --json");
const CLASS_LINES: Option<&str> =
    Some("each class prints a line as it ends; live lines of several classes would interleave");
const SEARCH_NOT_DRAWN: Option<&str> = Some(
    "a search of a workload is not drawn live: it prints each probe as it ends, and --json \
     writes its document",
);
const SEARCH_HERE: Option<&str> = Some(
    "a search of a workload runs its probes in this process; run the workload itself on \
     agents with `msgbench run WORKLOAD --agents N`",
);
const LIVE_ON_AGENTS: Option<&str> = Some(
    "a workload on agents is followed by each class's line as it ends and by --stream-stats \
     (a row per class, agent and second); its classes are not drawn live",
);

const TABLE: &[Row] = &[
    Row {
        flag: "--json",
        given: |o| o.json.is_some(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: None,
        capacity: None,
        workload: None,
        workload_search: None,
        workload_agents: None,
    },
    Row {
        flag: "--csv",
        given: |o| o.csv.is_some(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: None,
        capacity: SEARCH_DOCUMENT,
        // The classes' combined timeline, a row per class and second.
        workload: None,
        workload_search: None,
        workload_agents: None,
    },
    Row {
        flag: "--markdown",
        given: |o| o.markdown.is_some(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: None,
        capacity: SEARCH_DOCUMENT,
        workload: ONE_DOCUMENT,
        workload_search: None,
        workload_agents: None,
    },
    Row {
        flag: "--live",
        given: |o| o.live,
        print_plan: NOTHING_RUNS,
        here: None,
        compare: DRIVERS_AT_THE_END,
        capacity: Some("probes are printed as they end (--no-progress leaves them out)"),
        workload: CLASS_LINES,
        workload_search: None,
        workload_agents: None,
    },
    Row {
        flag: "--stream-stats",
        given: |o| o.stream_stats.is_some(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: DRIVERS_AT_THE_END,
        capacity: PROBES_PRINTED,
        // Every class's ticks, each line tagged with its class.
        workload: None,
        workload_search: None,
        workload_agents: None,
    },
    Row {
        flag: "--metrics-listen",
        given: |o| o.metrics_listen.is_some(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: DRIVERS_AT_THE_END,
        capacity: PROBES_PRINTED,
        // One page, each class's samples under its `class` label.
        workload: None,
        workload_search: None,
        workload_agents: LIVE_ON_AGENTS,
    },
    Row {
        flag: "--web",
        given: |o| o.web.is_some(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: DRIVERS_AT_THE_END,
        capacity: None,
        // A section per class, each drawn from its own ticks.
        workload: None,
        workload_search: SEARCH_NOT_DRAWN,
        workload_agents: LIVE_ON_AGENTS,
    },
    Row {
        flag: "--runs",
        given: |o| o.runs > 1,
        print_plan: NOTHING_RUNS,
        here: None,
        compare: None,
        capacity: Some("use --probe-runs"),
        workload: Some("a workload runs once"),
        workload_search: None,
        workload_agents: None,
    },
    Row {
        flag: "--threshold",
        given: |o| !o.threshold.is_empty(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: None,
        capacity: Some("use --slo"),
        workload: Some("a workload's SLOs are its classes' own: give each class its `slo`"),
        workload_search: None,
        workload_agents: None,
    },
    Row {
        flag: "--print-plan",
        given: |o| o.print_plan,
        print_plan: None,
        here: None,
        compare: None,
        capacity: Some("a search is many plans; print one without capacity"),
        workload: None,
        workload_search: None,
        workload_agents: None,
    },
    Row {
        flag: "--agents",
        given: |o| o.agents.is_some(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: DRIVERS_HERE,
        capacity: None,
        workload: None,
        workload_search: SEARCH_HERE,
        workload_agents: None,
    },
    Row {
        flag: "--agent-label",
        given: |o| !o.agent_labels.is_empty(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: DRIVERS_HERE,
        capacity: None,
        workload: None,
        workload_search: SEARCH_HERE,
        workload_agents: None,
    },
    Row {
        flag: "--control",
        given: |o| o.control.is_some(),
        print_plan: NOTHING_RUNS,
        here: FOR_AGENTS,
        compare: DRIVERS_HERE,
        capacity: None,
        workload: None,
        workload_search: SEARCH_HERE,
        workload_agents: None,
    },
    Row {
        flag: "--sign",
        given: |o| o.sign.is_some(),
        print_plan: NOTHING_RUNS,
        here: FOR_AGENTS,
        compare: DRIVERS_HERE,
        capacity: None,
        workload: None,
        workload_search: SEARCH_HERE,
        workload_agents: None,
    },
    Row {
        flag: "--agent-silence",
        given: |o| o.agent_silence.is_some(),
        print_plan: NOTHING_RUNS,
        here: FOR_AGENTS,
        compare: DRIVERS_HERE,
        capacity: None,
        workload: None,
        workload_search: SEARCH_HERE,
        workload_agents: None,
    },
    Row {
        flag: "--record",
        given: |o| o.record.is_some(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: NOT_ONE_BENCHMARK,
        capacity: SEARCH_NOT_RECORDED,
        workload: None,
        workload_search: None,
        workload_agents: None,
    },
    Row {
        flag: "--history-file",
        given: |o| o.history_file.is_some(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: NOT_ONE_BENCHMARK,
        capacity: SEARCH_NOT_RECORDED,
        workload: None,
        workload_search: None,
        workload_agents: None,
    },
    Row {
        flag: "--name",
        given: |o| o.name.is_some(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: NOT_ONE_BENCHMARK,
        capacity: SEARCH_NOT_RECORDED,
        workload: None,
        workload_search: None,
        workload_agents: None,
    },
    Row {
        flag: "--label",
        given: |o| !o.labels.is_empty(),
        print_plan: NOTHING_RUNS,
        here: None,
        compare: NOT_ONE_BENCHMARK,
        capacity: SEARCH_NOT_RECORDED,
        workload: None,
        workload_search: None,
        workload_agents: None,
    },
];

impl Mode {
    fn column(self, row: &Row) -> Option<&'static str> {
        match self {
            Mode::PrintPlan => row.print_plan,
            Mode::Here => row.here,
            Mode::Agents => None,
            Mode::Compare => row.compare,
            Mode::Capacity => row.capacity,
            // A workload here refuses what a run here does (the agents' own flags) too.
            Mode::Workload => row.workload.or(row.here),
            Mode::WorkloadAgents => row.workload.or(row.workload_agents),
            Mode::WorkloadSearch => (row.capacity.or(row.workload))
                .or(row.workload_search)
                .or(row.here),
        }
    }

    fn words(self) -> &'static str {
        match self {
            Mode::PrintPlan => "--print-plan",
            Mode::Here => "a run without agents",
            Mode::Agents => "a run on agents",
            Mode::Compare => "`msgbench compare`",
            Mode::Capacity => "`msgbench capacity`",
            Mode::Workload => "a workload",
            Mode::WorkloadAgents => "a workload on agents",
            Mode::WorkloadSearch => "`msgbench capacity WORKLOAD`",
        }
    }
}

/// Refuses the first output flag given in `out` that `mode` cannot act on, and a recording's
/// name or label without a recording.
///
/// # Errors
/// [`Error::Usage`] naming the flag, the mode and why, in one line.
pub fn check(out: &OutputArgs, mode: Mode) -> Result<()> {
    if let Some((row, why)) = TABLE
        .iter()
        .filter(|r| (r.given)(out))
        .find_map(|r| Some((r, mode.column(r)?)))
    {
        return Err(Error::Usage(format!(
            "{} does not apply to {}: {why}",
            row.flag,
            mode.words()
        )));
    }
    if matches!(
        mode,
        Mode::Here | Mode::Agents | Mode::Workload | Mode::WorkloadAgents
    ) {
        let env = std::env::var_os(crate::options::HISTORY_ENV).is_some_and(|v| !v.is_empty());
        return names_a_recording(out, env);
    }
    Ok(())
}

/// `--name` and `--label` name a recorded run; with nothing recorded (no `--record`, no
/// `--history-file`, no MSGBENCH_HISTORY: `env`) they would act on nothing.
fn names_a_recording(out: &OutputArgs, env: bool) -> Result<()> {
    let recording = out.record.is_some() || out.history_file.is_some() || env;
    for (flag, on) in [
        ("--name", out.name.is_some()),
        ("--label", !out.labels.is_empty()),
    ] {
        if on && !recording {
            return Err(Error::Usage(format!(
                "{flag} names a recorded run: give --record (or --history-file) too"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(args: &[&str]) -> OutputArgs {
        use clap::{Args as _, FromArgMatches as _};
        let cmd = OutputArgs::augment_args(clap::Command::new("x").no_binary_name(true));
        OutputArgs::from_arg_matches(&cmd.get_matches_from(args)).unwrap()
    }

    #[test]
    fn every_mode_refuses_by_the_table_and_names_flag_and_mode() {
        let e = check(&out(&["--csv", "x.csv"]), Mode::Capacity).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--csv does not apply to `msgbench capacity`: a search writes its document with --json"
        );
        assert!(check(&out(&["--csv", "x.csv"]), Mode::Here).is_ok());
        let e = check(&out(&["--json", "r.json"]), Mode::PrintPlan).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--json does not apply to --print-plan"));
        let e = check(&out(&["--web", "127.0.0.1:0"]), Mode::Compare).unwrap_err();
        assert!(e.to_string().contains("drivers report only at the end"));
        let e = check(&out(&["--sign", "k.nk"]), Mode::Here).unwrap_err();
        assert!(e.to_string().contains("--agents"));
    }

    #[test]
    fn a_name_without_a_recording_is_refused() {
        let e = names_a_recording(&out(&["--label", "a=b"]), false).unwrap_err();
        assert!(
            e.to_string().starts_with("--label names a recorded run"),
            "{e}"
        );
        assert!(names_a_recording(&out(&["--name", "a", "--record"]), false).is_ok());
        assert!(names_a_recording(&out(&["--name", "a"]), true).is_ok());
    }

    #[test]
    fn a_search_of_a_workload_refuses_the_live_page_that_each_alone_takes() {
        let web = out(&["--web", "127.0.0.1:0"]);
        assert!(check(&web, Mode::Capacity).is_ok());
        assert!(check(&web, Mode::Workload).is_ok());
        let e = check(&web, Mode::WorkloadSearch).unwrap_err().to_string();
        assert!(
            e.starts_with("--web does not apply to `msgbench capacity WORKLOAD`: a search of"),
            "{e}"
        );
        // And what either refuses.
        let csv = out(&["--markdown", "m.md"]);
        assert!(check(&csv, Mode::WorkloadSearch).is_err());
    }

    /// The table has a row for every output flag but the three that act in every mode, and
    /// no row for a flag the group does not have.
    #[test]
    fn the_table_covers_every_output_flag() {
        use clap::Args as _;
        let cmd = OutputArgs::augment_args(clap::Command::new("x"));
        let mut longs: Vec<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .filter(|l| {
                !["--no-progress", "--metrics-linger", "--web-linger"].contains(&l.as_str())
            })
            .collect();
        let mut rows: Vec<String> = TABLE.iter().map(|r| r.flag.to_string()).collect();
        longs.sort();
        rows.sort();
        assert_eq!(longs, rows);
    }
}
