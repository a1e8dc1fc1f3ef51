//! Sends a finished result to every destination the user asked for: files first (so a broken
//! terminal pipe cannot lose them), then the text report on stdout, or on stderr when stdout
//! carries the JSON document. A file that cannot be written does not lose the result: it is
//! saved to a fallback file instead.

use std::io::Write;
use std::path::Path;

use super::dest;
use crate::error::{Error, Result};
use crate::export::{csv::Csv, json::Json, markdown::Markdown, text::Text, Exporter};
use crate::options::Output;
use crate::result::RunResult;

/// Writes `result` to the files and streams `out` names.
///
/// Every file is attempted and the text report is printed even when one fails (its folder
/// vanished during the run, the disk filled): the measurement is then also saved to a
/// fallback file (see [`dest::rescue`]) and the error says where.
///
/// # Errors
/// [`Error::Rescued`] (or [`Error::Io`] when no fallback could be written either) naming the
/// first file that could not be written.
pub fn emit(result: &RunResult, out: &Output) -> Result<()> {
    let mut failed = None;
    let mut write = |path: &Path, bytes: Vec<u8>, flag: &str| {
        if let Err(e) = write_file(path, &bytes, flag) {
            failed.get_or_insert(e);
        }
    };
    if let Some(path) = out.json.as_deref().filter(|_| !out.json_to_stdout()) {
        write(path, Json.serialize(result), "--json");
    }
    if let Some(path) = &out.csv {
        write(path, Csv.serialize(result), "--csv");
        if let Some((beside, rows)) = servers_beside(path, result) {
            write(&beside, rows.into_bytes(), "--csv");
        }
    }
    if let Some(path) = &out.markdown {
        write(path, Markdown.serialize(result), "--markdown");
    }
    show(
        &Text.serialize(result),
        out.json_to_stdout().then(|| Json.serialize(result)),
    );
    match failed {
        Some(e) => Err(dest::rescued(e, &Json.serialize(result))),
        None => Ok(()),
    }
}

/// Writes a workload's result: the JSON document to `--json` (a file, or stdout with the
/// report on stderr), and the report on stdout. A file that cannot be written is saved
/// elsewhere, as a run's is.
///
/// # Errors
/// As [`emit`].
pub fn emit_mix(mix: &crate::result::mix::MixResult, out: &crate::cli::OutputArgs) -> Result<()> {
    let mut doc = serde_json::to_vec_pretty(mix).expect("a workload's result serialises");
    doc.push(b'\n');
    let text = crate::export::text::mix(mix);
    let to_stdout = out.json.as_deref() == Some(Path::new("-"));
    let mut failed = match out.json.as_deref().filter(|_| !to_stdout) {
        Some(path) => write_file(path, &doc, "--json").err(),
        None => None,
    };
    if let Some(path) = &out.csv {
        let csv = crate::export::csv::mix_timeline(mix);
        let wrote = if path.as_path() == Path::new("-") {
            std::io::stdout()
                .write_all(csv.as_bytes())
                .map_err(|e| Error::io("--csv", e))
        } else {
            write_file(path, csv.as_bytes(), "--csv")
        };
        failed = failed.or(wrote.err());
        // The classes share their servers, each sampling them for as long as it ran: the
        // longest-running class's samples are the mix's.
        let longest = (mix.classes.iter())
            .filter_map(|c| c.result.as_ref())
            .filter(|r| {
                r.timeline
                    .as_ref()
                    .is_some_and(|t| t.ticks.iter().any(|k| k.server.is_some()))
            })
            .max_by_key(|r| r.timeline.as_ref().map_or(0, |t| t.ticks.len()));
        if let Some((beside, rows)) = longest.and_then(|r| servers_beside(path, r)) {
            failed = failed.or(write_file(&beside, rows.as_bytes(), "--csv").err());
        }
    }
    show(&text, to_stdout.then(|| doc.clone()));
    match failed {
        Some(e) => Err(dest::rescued(e, &doc)),
        None => Ok(()),
    }
}

/// The servers' samples of `r` and where they go beside the `--csv` file `path`; `None` when
/// the run sampled no server. With the CSV on stdout (`-`), they have nowhere to go but the
/// JSON, and a line says so.
fn servers_beside(path: &Path, r: &RunResult) -> Option<(std::path::PathBuf, String)> {
    let rows = crate::export::server_csv::serialize(&r.timeline.as_ref()?.ticks)?;
    if path == Path::new("-") {
        eprintln!(
            "--csv -: the servers' samples are not written (they go beside a --csv file, as \
             NAME.servers.csv, and are in --json)"
        );
        return None;
    }
    Some((crate::export::server_csv::path_beside(path), rows))
}

/// The report on stdout; or, with the JSON document there (`json`, for `--json -`), the report
/// on stderr. A closed pipe (`| head`) is not worth failing the run over: the files are
/// already written.
fn show(text: &[u8], json: Option<Vec<u8>>) {
    match json {
        Some(doc) => {
            let _ = std::io::stderr().write_all(text);
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(&doc);
            let _ = stdout.flush();
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(text);
            let _ = stdout.flush();
        }
    }
}

fn write_file(path: &Path, bytes: &[u8], flag: &str) -> Result<()> {
    std::fs::write(path, bytes)
        .map_err(|e| Error::io(format!("cannot write {flag} file '{}'", path.display()), e))
}

/// Writes a document to `path` (`-` is standard output); a file that cannot be written at the
/// end is saved elsewhere, and the error says where.
///
/// # Errors
/// The write failed (with the rescue's path when it was saved).
pub fn save(path: &Path, bytes: &[u8], flag: &str) -> Result<()> {
    if path == Path::new("-") {
        let _ = std::io::stdout().write_all(bytes);
        return Ok(());
    }
    write_file(path, bytes, flag).map_err(|e| dest::rescued(e, bytes))
}

/// Writes a calibration: JSON to `json` ('-' for stdout, the text then goes to stderr), and the
/// text table.
///
/// # Errors
/// As [`emit`].
pub fn emit_calibration(
    cal: &crate::scenario::calibrate::Calibration,
    json: Option<&Path>,
) -> Result<()> {
    let mut doc = serde_json::to_vec_pretty(cal).expect("the calibration serialises");
    doc.push(b'\n');
    let text = crate::export::text::calibration(cal);
    match json {
        Some(p) if p == Path::new("-") => {
            let _ = std::io::stderr().write_all(text.as_bytes());
            let _ = std::io::stdout().write_all(&doc);
        }
        Some(p) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            write_file(p, &doc, "--json").map_err(|e| dest::rescued(e, &doc))?;
        }
        None => {
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
    }
    Ok(())
}
