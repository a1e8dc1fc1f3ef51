//! The whole command line: the scenarios, taken from the registry (so a new scenario is a
//! subcommand, a `compare` column and a `capacity` target without a line here), and the tools
//! that are not one plan (calibrate, run, demo, capacity, compare, report, diff, agent).
//!
//! clap builds the scenarios' part of the tree from each registry entry's own command; the
//! parse comes back as a [`Plan`], which is what every mode runs.

use std::fmt;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::cli::{
    AgentArgs, CalibrateArgs, CaptureArgs, CompletionsArgs, DemoArgs, DiffArgs, HistoryArgs,
    ManArgs, OutputArgs, ReportArgs, RunArgs, SearchArgs,
};
use crate::plan::Plan;
use crate::scenario::registry::{self, Entry, GROUPS};

#[derive(Debug, Parser)]
#[command(
    name = "msgbench",
    version,
    about = "Honest load generator and benchmark for NATS",
    long_about = "Honest load generator and benchmark for NATS.\n\n\
        With no --server (and no NATS_URL), msgbench starts a local nats-server itself.\n\
        With no subcommand, it runs the short default suite (same as `msgbench demo`)."
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// With no subcommand, the default suite's flags apply (`msgbench --server URL`).
    #[command(flatten)]
    pub demo: DemoArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Every scenario of the registry.
    #[command(flatten)]
    Scenario(ScenarioCommand),
    /// Measure this machine's latency floor: loopback TCP, one hop and two hops via the server.
    Calibrate(CalibrateArgs),
    /// Run a plan written by --print-plan (or by hand), with output flags of this run.
    Run(RunArgs),
    /// Run the short default suite (pub, pubsub, latency, request, js pub) and print the
    /// results; js pub is left out, with a line saying so, on a server without JetStream.
    Demo(DemoArgs),
    /// Find the highest rate a scenario sustains within its SLO (--slo 'p99<5ms'): an
    /// exponential search, then a bisection, each rate probed --probe-runs times.
    Capacity(CapacityCommand),
    /// Watch a live NATS system for a while and write the workload file that reproduces its
    /// traffic (subject patterns, rates, sizes, services, streams; never a payload);
    /// `capture diff A B` compares two captures.
    Capture(CaptureArgs),
    /// Run one scenario through several client libraries (the native engine and drivers in
    /// Go, Node.js, Python, Rust, Java) on one server and show them side by side.
    Compare(CompareCommand),
    /// Turn result files (--json output) into one self-contained HTML report with charts, or
    /// draw the runs a history keeps over time (--history).
    Report(ReportArgs),
    /// Compare two result files metric by metric, with confidence intervals from their
    /// repeated runs (--runs), and optionally fail on a regression.
    Diff(DiffArgs),
    /// The runs --record kept: list them, show one, follow a metric over time, and check the
    /// newest for a regression (change points and a window test; exit 8 beyond --tolerate).
    History(HistoryArgs),
    /// A load agent for distributed runs: it announces itself on a NATS control server, runs
    /// the signed plans a coordinator (any scenario with --agents) gives it, and reports back.
    /// `agent keygen` makes the coordinator's signing key.
    Agent(AgentArgs),
    /// Print the completion script for bash, zsh, fish, powershell or elvish (`make install`
    /// puts them where each shell looks).
    Completions(CompletionsArgs),
    /// Print the man page (roff; `msgbench man | man -l -` reads it), or write every page
    /// with --dir.
    Man(ManArgs),
}

/// A scenario's run, or one of its helper subcommands (`grpc serve`).
pub enum ScenarioCommand {
    Plan(Plan),
    Helper {
        entry: &'static dyn Entry,
        name: String,
        matches: ArgMatches,
    },
}

impl fmt::Debug for ScenarioCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioCommand::Plan(p) => f.debug_tuple("Plan").field(p).finish(),
            ScenarioCommand::Helper { entry, name, .. } => {
                write!(f, "Helper({} {name})", entry.name())
            }
        }
    }
}

/// The scenarios' commands in registry order, groups (`js`, `kv`) where their first member
/// falls.
fn scenario_commands() -> Vec<clap::Command> {
    let mut out: Vec<clap::Command> = Vec::new();
    for e in registry::ALL {
        match e.words() {
            [_] => out.push(e.command()),
            [group, ..] => {
                if out.iter().any(|c| c.get_name() == *group) {
                    continue;
                }
                let about = GROUPS
                    .iter()
                    .find(|(g, _)| g == group)
                    .map_or("", |(_, a)| a);
                let members = registry::ALL
                    .iter()
                    .filter(|m| m.words().len() > 1 && m.words()[0] == *group)
                    .map(|m| m.command());
                out.push(
                    clap::Command::new(*group)
                        .about(about)
                        .subcommand_required(true)
                        .subcommands(members),
                );
            }
            [] => {}
        }
    }
    out
}

fn missing(what: &str) -> clap::Error {
    clap::Error::raw(
        ErrorKind::MissingSubcommand,
        format!("{what} needs a subcommand"),
    )
}

impl FromArgMatches for ScenarioCommand {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let (first, sub) = m.subcommand().ok_or_else(|| missing("msgbench"))?;
        if let Some(entry) = registry::by_words(&[first]) {
            if let Some((helper, hm)) = sub.subcommand() {
                return Ok(ScenarioCommand::Helper {
                    entry,
                    name: helper.to_string(),
                    matches: hm.clone(),
                });
            }
            return Ok(ScenarioCommand::Plan(Plan::from_matches(entry, sub)?));
        }
        let (second, args) = sub.subcommand().ok_or_else(|| missing(first))?;
        let entry = registry::by_words(&[first, second]).ok_or_else(|| {
            clap::Error::raw(
                ErrorKind::InvalidSubcommand,
                format!("`{first} {second}` is not a command"),
            )
        })?;
        Ok(ScenarioCommand::Plan(Plan::from_matches(entry, args)?))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Subcommand for ScenarioCommand {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        cmd.subcommands(scenario_commands())
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        registry::ALL
            .iter()
            .any(|e| e.words().first() == Some(&name))
    }
}

/// The scenarios `compare` or `capacity` (`capacity` true) offers, each under its name and
/// line there, with `extra` flags and without helper subcommands.
fn offered(
    cmd: clap::Command,
    name_in: fn(&dyn Entry) -> Option<&'static str>,
    extra: fn(clap::Command) -> clap::Command,
    capacity: bool,
) -> clap::Command {
    let subs = registry::ALL.iter().filter_map(|e| {
        let n = name_in(*e)?;
        let cmd = e.load_command().name(n);
        let cmd = match e.about_in(capacity) {
            Some(about) => cmd.about(about),
            None => cmd,
        };
        Some(extra(cmd))
    });
    cmd.subcommand_required(true).subcommands(subs)
}

/// The plan a `compare` or `capacity` subcommand names, and the matches of its flags.
fn offered_plan(
    m: &ArgMatches,
    name_in: fn(&dyn Entry) -> Option<&'static str>,
) -> Result<(Plan, &ArgMatches), clap::Error> {
    let (name, sub) = m.subcommand().ok_or_else(|| missing("this command"))?;
    let entry = registry::ALL
        .iter()
        .find(|e| name_in(**e) == Some(name))
        .ok_or_else(|| {
            clap::Error::raw(
                ErrorKind::InvalidSubcommand,
                format!("`{name}` is not offered here"),
            )
        })?;
    Ok((Plan::from_matches(*entry, sub)?, sub))
}

/// `msgbench compare`: the clients, and the scenario with its own flags.
#[derive(Debug)]
pub struct CompareCommand {
    pub flags: CompareFlags,
    pub plan: Plan,
}

#[derive(Debug, Args)]
pub struct CompareFlags {
    /// The clients to run, comma separated: native, go, node, node-old, python, rust, java.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "native",
        value_name = "LIST"
    )]
    pub clients: Vec<String>,
    /// The folder holding the drivers (default: ./drivers, else the repository's).
    #[arg(long, value_name = "DIR")]
    pub drivers: Option<PathBuf>,
}

impl FromArgMatches for CompareCommand {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let (plan, _) = offered_plan(m, |e| e.compare())?;
        Ok(Self {
            flags: CompareFlags::from_arg_matches(m)?,
            plan,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for CompareCommand {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        // The scenario, with its own flags (--runs N repeats it, interleaving the clients).
        offered(
            CompareFlags::augment_args(cmd),
            |e| e.compare(),
            |c| c,
            false,
        )
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// `msgbench capacity`: the scenario to search with, its flags (without --rate, --duration or
/// --msgs: the search sets them), and the search's own; or a workload file, whose classes'
/// rates the search scales by one factor.
#[derive(Debug)]
pub enum CapacityCommand {
    Scenario {
        plan: Plan,
        search: SearchArgs,
    },
    Workload {
        file: PathBuf,
        search: crate::cli::MixSearchArgs,
        out: Box<OutputArgs>,
    },
}

impl FromArgMatches for CapacityCommand {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        if let Some((name, sub)) = m.subcommand() {
            if !registry::ALL.iter().any(|e| e.capacity() == Some(name)) {
                return workload_search(name, sub);
            }
        }
        let (plan, sub) = offered_plan(m, |e| e.capacity())?;
        // Flags the search sets itself: typing one would be silently replaced.
        if let Some(id) = crate::capacity::SET_BY_SEARCH.iter().find(|id| {
            sub.try_contains_id(id).unwrap_or(false)
                && sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
        }) {
            return Err(clap::Error::raw(
                ErrorKind::ArgumentConflict,
                format!(
                    "--{} is set by the search (use --start-rate, --max-rate, --probe-duration \
                     and --probe-warmup)",
                    id.replace('_', "-")
                ),
            ));
        }
        Ok(Self::Scenario {
            search: SearchArgs::from_arg_matches(sub)?,
            plan,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// `msgbench capacity WORKLOAD.yaml …`: a name that is no scenario's is a workload file when
/// it reads as a path (a `.yaml`, `.yml` or `.json` file, or one with a `/`); its flags are the
/// mix search's and the output flags.
fn workload_search(name: &str, sub: &ArgMatches) -> Result<CapacityCommand, clap::Error> {
    let is_file = name.contains('/')
        || [".yaml", ".yml", ".json"]
            .iter()
            .any(|ext| name.ends_with(ext));
    if !is_file {
        return Err(clap::Error::raw(
            ErrorKind::InvalidSubcommand,
            format!(
                "`{name}` is neither a scenario a search can probe nor a workload file \
                 (WORKLOAD.yaml)"
            ),
        ));
    }
    let args: Vec<std::ffi::OsString> = sub
        .get_many::<std::ffi::OsString>("")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    // A search scales the classes' mean rates; a curve replayed would be another load.
    if args
        .iter()
        .any(|a| a.to_string_lossy().starts_with("--time-warp"))
    {
        return Err(clap::Error::raw(
            ErrorKind::ArgumentConflict,
            "--time-warp does not apply to a search: capacity scales every class's mean rate \
             (its `rate`) by one factor, not its captured curve; run the curve with `msgbench \
             run WORKLOAD.yaml --time-warp F`",
        ));
    }
    let m = workload_search_command().try_get_matches_from(args)?;
    Ok(CapacityCommand::Workload {
        file: PathBuf::from(name),
        search: crate::cli::MixSearchArgs::from_arg_matches(&m)?,
        out: Box::new(OutputArgs::from_arg_matches(&m)?),
    })
}

/// The flags of `msgbench capacity WORKLOAD.yaml`: the mix search's and the output flags.
pub fn workload_search_command() -> clap::Command {
    OutputArgs::augment_args(crate::cli::MixSearchArgs::augment_args(
        clap::Command::new("capacity").no_binary_name(true),
    ))
}

impl Args for CapacityCommand {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        offered(cmd, |e| e.capacity(), searched, true)
            .allow_external_subcommands(true)
            .external_subcommand_value_parser(clap::value_parser!(std::ffi::OsString))
            .subcommand_value_name("SCENARIO|WORKLOAD.yaml")
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// A scenario's command under `capacity`: the search's flags added, and the flags the search
/// sets kept out of `--help` (typing one is refused, in `from_arg_matches`).
fn searched(cmd: clap::Command) -> clap::Command {
    let set: Vec<&str> = crate::capacity::SET_BY_SEARCH
        .iter()
        .copied()
        .filter(|id| cmd.get_arguments().any(|a| a.get_id() == *id))
        .collect();
    set.into_iter()
        .fold(SearchArgs::augment_args(cmd), |c, id| {
            c.mut_arg(id, |a| a.hide(true))
        })
}

/// The plan a command line (`msgbench` first) runs, or what is wrong with it in one line.
///
/// # Errors
/// The line does not parse, or it runs something other than one scenario.
pub fn plan_of<I, T>(argv: I) -> Result<Plan, String>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = Cli::try_parse_from(argv).map_err(|e| crate::cli::one_line(&e))?;
    match cli.command {
        Some(Command::Scenario(ScenarioCommand::Plan(p))) => Ok(p),
        Some(Command::Compare(c)) => Ok(c.plan),
        Some(Command::Capacity(CapacityCommand::Scenario { plan, .. })) => Ok(plan),
        _ => Err("the line runs no scenario".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_tree_is_sound() {
        <Cli as clap::CommandFactory>::command().debug_assert();
    }
}

// ---------------------------------------------------------------------------------------------
// `msgbench completions SHELL` and `msgbench man`: the shell completion scripts and the man
// pages, generated from the command tree the parser uses (which takes the scenarios from the
// registry), so neither can drift from the flags that exist. `make install` and `make dist`
// write them with these commands.

/// The completion script for `shell`, as bytes ready to print.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "msgbench", &mut out);
    out
}

/// The man page (roff), section 1.
///
/// # Errors
/// Writing into memory cannot fail; the error is roff's, passed on rather than unwrapped.
pub fn man_page() -> std::io::Result<Vec<u8>> {
    // Without the `help` subcommand, as `man_pages` writes it (it has no page of its own), so
    // the printed page and msgbench.1 are one page.
    let cmd = Cli::command().disable_help_subcommand(true);
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out)?;
    Ok(out)
}

/// Every page, the command's and each subcommand's, into `dir`, made first when it is not
/// there (as `mkdir -p` would: a new folder is the usual place to put them).
///
/// # Errors
/// A folder that cannot be made, or a page that cannot be written.
pub fn man_pages(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    clap_mangen::generate_to(Cli::command(), dir)
}

#[cfg(test)]
mod shell_tests {
    use super::*;

    #[test]
    fn the_man_page_lists_the_scenarios_and_the_tools() {
        let page = String::from_utf8(man_page().unwrap()).unwrap();
        assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{}", &page[..80]);
        assert!(page.contains(".TH msgbench 1"), "no title line");
        // A scenario (from the registry) and a tool (declared in command.rs).
        for sub in [
            "msgbench\\-pub(1)",
            "msgbench\\-diff(1)",
            "msgbench\\-completions(1)",
        ] {
            assert!(page.contains(sub), "the page lacks {sub}");
        }
    }
}
