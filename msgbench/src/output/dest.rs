//! Output destinations: every file a command will write is checked before it connects to
//! anything, and a result whose file cannot be written at the end is saved somewhere else.
//!
//! A benchmark that runs for minutes and then cannot write its result has wasted the minutes
//! and lost the measurement, so a missing folder or a read-only file is refused up front,
//! naming the flag. The check leaves nothing behind: it never creates the destination (a run
//! that later fails for another reason must not leave an empty file), it only proves that the
//! file could be created or opened for writing. A folder can still vanish during a run; then
//! [`rescue`] writes the result to a fallback file and says where.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use crate::cli::OutputArgs;
use crate::error::{Error, Result};
pub use crate::options::dest::check;
use crate::plan::Plan;

/// Checks every file a plan's run would write.
///
/// # Errors
/// [`Error::Destination`] for the first one that cannot be written.
pub fn check_plan(plan: &Plan) -> Result<()> {
    check_all(destinations(plan.out(), plan.files()))
}

/// A scenario's own files (`latency --hist`) hold one run, written where its clients run:
/// refused when the plan runs more than once (`many` says how) or on agents.
///
/// # Errors
/// [`Error::Usage`] naming the flag.
pub fn one_run_here(plan: &Plan, many: Option<String>) -> Result<()> {
    let Some((flag, _)) = plan.files().into_iter().next() else {
        return Ok(());
    };
    let agents = plan
        .out()
        .distributed()
        .then(|| "with --agents the clients run, and would write them, on the agents".to_string());
    match many.or(agents) {
        Some(why) => Err(Error::Usage(format!(
            "{flag} writes one run's files on this host, and {why}"
        ))),
        None => Ok(()),
    }
}

/// Checks the files a command that is not one plan would write, each named by its flag (`-`,
/// standard output, is left out).
///
/// # Errors
/// [`Error::Destination`] for the first one that cannot be written.
pub fn check_files(files: &[(&'static str, Option<&PathBuf>)]) -> Result<()> {
    let found = files
        .iter()
        .filter_map(|(flag, p)| Some((*flag, (*p)?.clone())))
        .filter(|(_, p)| p.as_path() != Path::new("-"))
        .collect();
    check_all(found)
}

/// Checks every file a plan's output flags, and its scenario's own files, name.
///
/// # Errors
/// [`Error::Destination`] for the first one that cannot be written.
pub fn check_out(o: &OutputArgs, files: Vec<(&'static str, PathBuf)>) -> Result<()> {
    check_all(destinations(o, files))
}

fn check_all(found: Vec<(&'static str, PathBuf)>) -> Result<()> {
    for (flag, path) in found {
        check(flag, &path)?;
    }
    Ok(())
}

/// The files a run writes, with the flag that names each. `-` (stdout) is left out.
fn destinations(
    o: &OutputArgs,
    files: Vec<(&'static str, PathBuf)>,
) -> Vec<(&'static str, PathBuf)> {
    let mut found = Vec::new();
    found.extend(o.json.clone().map(|p| ("--json", p)));
    found.extend(o.csv.clone().map(|p| ("--csv", p)));
    // The servers' samples go beside it, when the run samples any.
    found.extend(
        (o.csv.iter())
            .filter(|p| p.as_path() != Path::new("-"))
            .map(|p| ("--csv", crate::export::server_csv::path_beside(p))),
    );
    found.extend(o.markdown.clone().map(|p| ("--markdown", p)));
    found.extend(o.stream_stats.clone().map(|p| ("--stream-stats", p)));
    found.extend(files);
    found.retain(|(_, p)| p != Path::new("-"));
    found
}

/// Writes `doc` (a result as JSON) to a new fallback file, in the current directory or else
/// the temporary directory, and returns its path; `None` when neither takes it.
pub fn rescue(doc: &[u8]) -> Option<PathBuf> {
    let unix_secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = format!("msgbench-result-{}-{unix_secs}.json", std::process::id());
    let dirs = [std::env::current_dir().ok(), Some(std::env::temp_dir())];
    dirs.into_iter().flatten().find_map(|dir| {
        let path = dir.join(&name);
        // `create_new`: a fallback never overwrites anything.
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, doc));
        match written {
            Ok(()) => Some(path),
            Err(_) => {
                let _ = fs::remove_file(&path);
                None
            }
        }
    })
}

/// Turns a failed write of a result file into an error that says where the result went.
pub fn rescued(failure: Error, doc: &[u8]) -> Error {
    match (failure, rescue(doc)) {
        (Error::Io { context, source }, Some(saved)) => Error::Rescued {
            context,
            source,
            saved: saved.display().to_string(),
        },
        (failure, _) => failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdir::TestDir;

    fn reason(flag: &'static str, p: &Path) -> String {
        check(flag, p).unwrap_err().to_string()
    }

    #[test]
    fn refuses_missing_folders_and_directories_naming_flag_and_path() {
        let s = TestDir::new("dest-refuse");
        let missing = s.path().join("gone").join("r.json");
        let e = reason("--json", &missing);
        assert!(
            e.contains("--json") && e.contains(&missing.display().to_string()),
            "{e}"
        );
        assert!(e.contains("does not exist"), "{e}");
        assert!(reason("--csv", s.path()).contains("is a directory"));
        let file = s.path().join("plain");
        fs::write(&file, "x").unwrap();
        let e = reason("--markdown", &file.join("r.md"));
        assert!(e.contains("is not a directory"), "{e}");
        assert_eq!(
            Error::Destination {
                flag: "--json",
                path: String::new(),
                reason: String::new()
            }
            .exit_code(),
            crate::error::exit::USAGE
        );
    }

    #[test]
    fn accepts_writable_paths_and_leaves_nothing_behind() {
        let s = TestDir::new("dest-accept");
        let new = s.path().join("new.json");
        check("--json", &new).unwrap();
        assert!(!new.exists(), "the check created {}", new.display());
        let existing = s.path().join("old.json");
        fs::write(&existing, "keep").unwrap();
        check("--json", &existing).unwrap();
        assert_eq!(fs::read_to_string(&existing).unwrap(), "keep");
    }

    #[test]
    fn hist_prefixes_expand_to_their_three_files_and_csv_to_its_servers_file() {
        let plan = crate::command::plan_of([
            "msgbench", "latency", "--hist", "h", "--json", "-", "--csv", "c.csv",
        ])
        .unwrap();
        let found = destinations(plan.out(), plan.files());
        let names: Vec<String> = found
            .iter()
            .map(|(f, p)| format!("{f} {}", p.display()))
            .collect();
        assert_eq!(
            names,
            [
                "--csv c.csv",
                "--csv c.servers.csv",
                "--hist h.hgrm",
                "--hist h.uncorrected.hgrm",
                "--hist h.hlog"
            ]
        );
    }
}
