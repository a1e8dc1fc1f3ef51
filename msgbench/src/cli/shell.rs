//! The flags of `msgbench completions SHELL` and `msgbench man`. The scripts and pages
//! themselves are generated in `command`, from the same clap command tree the parser uses.

use clap::Args;

/// `msgbench completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write the script for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `msgbench man`: the page on stdout, or every page into a folder.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write msgbench.1 and a page per subcommand (msgbench-pub.1, msgbench-js-pub.1, …),
    /// which msgbench.1 refers to, into this folder instead of printing msgbench.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}
