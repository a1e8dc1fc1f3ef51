//! `msgbench history import FILE…`: results written with `--json` kept in the history as if
//! they had been recorded, for the runs a team made before it began to record (Bencher and
//! Otava take existing data too). Each keeps its own run id and start time, so it falls into
//! its series where it ran, and is read into rows exactly as `--record` reads a run
//! ([`super::record::new_run`]).
//!
//! Every file is read and checked first: one that is not a whole result of a run (another
//! document, a run cut short, unreadable) refuses the import in one line before anything is
//! kept, so a wrong file list changes nothing. A run already in the history (imported or
//! recorded before) is skipped with a line of its own and is not an error: importing a folder
//! again after adding files to it keeps only the new ones.

use std::path::{Path, PathBuf};

use super::record::{new_run, path_of, Tags};
use super::store::{NewRun, Store, StoreError};
use crate::cli::ImportArgs;
use crate::error::{exit, Error, Result};
use crate::options::{Recording, HISTORY_ENV};

/// The schema a result document names (what `--json` writes).
const RESULT_SCHEMA: &str = "msgbench.result/v1";

/// Imports `a.files`; prints a line per file and a summary; returns the exit status.
///
/// # Errors
/// A file that is not a result (status 2), a history that cannot be opened or written.
pub fn run(a: &ImportArgs) -> Result<u8> {
    let tags = Tags {
        name: a.name.clone(),
        labels: a.labels.iter().cloned().collect(),
    };
    let runs = a
        .files
        .iter()
        .map(|f| read(f, &tags).map(|run| (f, run)))
        .collect::<Result<Vec<_>>>()?;
    let mut store = open(a.history.as_ref())?;
    let (mut imported, mut skipped) = (0, 0);
    for (file, run) in &runs {
        match store.insert(run) {
            Ok(()) => {
                imported += 1;
                println!(
                    "history: imported {} as {} (benchmark {})",
                    file.display(),
                    run.run_id,
                    run.benchmark
                );
            }
            Err(StoreError::Duplicate(id)) => {
                skipped += 1;
                println!(
                    "history: {}: run {id} is already in the history; skipped",
                    file.display()
                );
            }
            Err(e) => {
                return Err(Error::Io {
                    context: format!(
                        "importing {} ({imported} imported before it)",
                        file.display()
                    ),
                    source: std::io::Error::other(e),
                })
            }
        }
    }
    println!(
        "{imported} imported, {skipped} already there, in '{}'",
        store.path().display()
    );
    Ok(exit::OK)
}

/// A file's run, as `--record` would have kept it.
fn read(file: &Path, tags: &Tags) -> Result<NewRun> {
    let shown = file.display().to_string();
    let bad = |why: String| Error::flag("FILE", &shown, why);
    let text = std::fs::read_to_string(file).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    if doc.get("schema").and_then(|s| s.as_str()) != Some(RESULT_SCHEMA) {
        return Err(bad(format!(
            "not a run's result (its \"schema\" is not {RESULT_SCHEMA}; --json writes one)"
        )));
    }
    // As --record: a run cut short measured less than its plan says.
    if doc.get("interrupted").and_then(|i| i.as_bool()) == Some(true) {
        return Err(bad(
            "the run was interrupted, and an interrupted run is not kept in the history".into(),
        ));
    }
    new_run(&text, tags).map_err(bad)
}

/// The history to write: `--history`, MSGBENCH_HISTORY, else the default (made when missing,
/// as recording makes it).
fn open(history: Option<&PathBuf>) -> Result<Store> {
    if let Some(url) = history.and_then(|h| h.to_str()) {
        super::store::refuse_password("--history", url).map_err(Error::Usage)?;
    }
    let given = history.cloned().or_else(|| {
        std::env::var_os(HISTORY_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let path = path_of(&Recording {
        path: given,
        ..Recording::default()
    })
    .map_err(|why| Error::Usage(format!("--history: {why}")))?;
    Store::open(&path).map_err(|e| Error::Io {
        context: "importing into the history".into(),
        source: std::io::Error::other(e),
    })
}
