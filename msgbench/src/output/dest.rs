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
use std::io::ErrorKind as IoKind;
use std::path::{Path, PathBuf};

use crate::cli::{Command, CompareScenario, GrpcAction, OutputArgs};
use crate::error::{Error, Result};
use crate::plan::Plan;

/// Checks every file a plan's run would write.
///
/// # Errors
/// [`Error::Destination`] for the first one that cannot be written.
pub fn check_plan(plan: &Plan) -> Result<()> {
    check_all(destinations(plan.out(), hist_of(plan)))
}

/// Checks every file a command that is not one plan would write.
///
/// # Errors
/// [`Error::Destination`] for the first one that cannot be written.
pub fn check_command(cmd: &Command) -> Result<()> {
    let found = match cmd {
        Command::Compare(c) => {
            let hist = match &c.scenario {
                CompareScenario::Latency(a) => a.hist.clone(),
                _ => None,
            };
            destinations(c.scenario.out(), hist)
        }
        Command::Grpc(g) => match &g.action {
            Some(GrpcAction::Encode(a)) => file("--json", a.json.as_ref()),
            _ => Vec::new(),
        },
        Command::Calibrate(a) => file("--json", a.json.as_ref()),
        Command::Report(a) => file("--output", Some(&a.output)),
        Command::Diff(a) => file("--json", a.json.as_ref()),
        _ => Vec::new(),
    };
    check_all(found)
}

fn check_all(found: Vec<(&'static str, PathBuf)>) -> Result<()> {
    for (flag, path) in found {
        check(flag, &path)?;
    }
    Ok(())
}

fn hist_of(plan: &Plan) -> Option<PathBuf> {
    match plan {
        Plan::Latency(a) => a.hist.clone(),
        _ => None,
    }
}

fn file(flag: &'static str, path: Option<&PathBuf>) -> Vec<(&'static str, PathBuf)> {
    path.into_iter()
        .filter(|p| p.as_path() != Path::new("-"))
        .map(|p| (flag, p.clone()))
        .collect()
}

/// The files a run writes, with the flag that names each. `-` (stdout) is left out.
fn destinations(o: &OutputArgs, hist: Option<PathBuf>) -> Vec<(&'static str, PathBuf)> {
    let mut found = Vec::new();
    found.extend(o.json.clone().map(|p| ("--json", p)));
    found.extend(o.csv.clone().map(|p| ("--csv", p)));
    found.extend(o.markdown.clone().map(|p| ("--markdown", p)));
    found.extend(o.stream_stats.clone().map(|p| ("--stream-stats", p)));
    // `--hist PREFIX` writes three files next to each other.
    if let Some(prefix) = hist {
        for suffix in ["hgrm", "uncorrected.hgrm", "hlog"] {
            let mut p = prefix.clone().into_os_string();
            p.push(".");
            p.push(suffix);
            found.push(("--hist", PathBuf::from(p)));
        }
    }
    found.retain(|(_, p)| p != Path::new("-"));
    found
}

/// Checks that `path` can be written: an existing file must open for writing (it is not
/// truncated here), and a new one must be creatable in an existing folder (it is created and
/// removed at once, which proves the folder's permissions and file system as a write would).
///
/// # Errors
/// [`Error::Destination`] naming `flag`, the path and why.
pub fn check(flag: &'static str, path: &Path) -> Result<()> {
    let refuse = |reason: String| Error::Destination {
        flag,
        path: path.display().to_string(),
        reason,
    };
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(refuse("it is a directory".into())),
        Ok(_) => OpenOptions::new()
            .write(true)
            .open(path)
            .map(drop)
            .map_err(|e| refuse(format!("it cannot be opened for writing: {e}"))),
        // A file under a plain file (`notes.txt/r.json`) is "not a directory", not "not found".
        Err(e) if matches!(e.kind(), IoKind::NotFound | IoKind::NotADirectory) => {
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            match fs::metadata(parent) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(refuse(format!("'{}' is not a directory", parent.display()))),
                Err(e) if e.kind() == IoKind::NotFound => {
                    return Err(refuse(format!(
                        "the directory '{}' does not exist",
                        parent.display()
                    )))
                }
                Err(e) => return Err(refuse(e.to_string())),
            }
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|e| {
                    refuse(format!(
                        "a file cannot be created in '{}': {e}",
                        parent.display()
                    ))
                })?;
            // Only the file this check created is removed (`create_new` failed otherwise).
            let _ = fs::remove_file(path);
            Ok(())
        }
        Err(e) => Err(refuse(e.to_string())),
    }
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
    fn hist_prefixes_expand_to_their_three_files() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from([
            "msgbench", "latency", "--hist", "h", "--json", "-", "--csv", "c.csv",
        ])
        .unwrap();
        let plan = Plan::from_command(cli.command.unwrap()).unwrap();
        let found = destinations(plan.out(), hist_of(&plan));
        let names: Vec<String> = found
            .iter()
            .map(|(f, p)| format!("{f} {}", p.display()))
            .collect();
        assert_eq!(
            names,
            [
                "--csv c.csv",
                "--hist h.hgrm",
                "--hist h.uncorrected.hgrm",
                "--hist h.hlog"
            ]
        );
    }
}
