//! `msgbench completions SHELL` and `msgbench man`: the shell completion scripts and the man
//! page, generated from the same clap command tree the parser uses (`Cli::command()`, which
//! takes the scenarios from the registry), so neither can drift from the flags that exist.
//! `make install` and `make dist` write them with these commands.

use clap::{Args, CommandFactory};

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

/// The completion script for `shell`, as bytes ready to print.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = crate::Cli::command();
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
    let cmd = crate::Cli::command().disable_help_subcommand(true);
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
    clap_mangen::generate_to(crate::Cli::command(), dir)
}

#[cfg(test)]
mod tests {
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
