//! Sends a finished result to every destination the user asked for: files first (so a broken
//! terminal pipe cannot lose them), then the text report on stdout, or on stderr when stdout
//! carries the JSON document.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::export::{csv::Csv, json::Json, markdown::Markdown, text::Text, Exporter};
use crate::options::Output;
use crate::result::RunResult;

/// Writes `result` to the files and streams `out` names.
///
/// # Errors
/// [`Error::Io`] naming the file that could not be written.
pub fn emit(result: &RunResult, out: &Output) -> Result<()> {
    if let Some(path) = out.json.as_deref().filter(|_| !out.json_to_stdout()) {
        write_file(path, &Json.serialize(result), "--json")?;
    }
    if let Some(path) = &out.csv {
        write_file(path, &Csv.serialize(result), "--csv")?;
    }
    if let Some(path) = &out.markdown {
        write_file(path, &Markdown.serialize(result), "--markdown")?;
    }
    let text = Text.serialize(result);
    // A closed pipe (`| head`) is not worth failing the run over; the files are already written.
    if out.json_to_stdout() {
        let _ = std::io::stderr().write_all(&text);
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(&Json.serialize(result));
        let _ = stdout.flush();
    } else {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(&text);
        let _ = stdout.flush();
    }
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8], flag: &str) -> Result<()> {
    std::fs::write(path, bytes)
        .map_err(|e| Error::io(format!("cannot write {flag} file '{}'", path.display()), e))
}

/// Writes a calibration: JSON to `json` ('-' for stdout, the text then goes to stderr), and the
/// text table.
///
/// # Errors
/// [`Error::Io`] naming the file that could not be written.
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
            write_file(p, &doc, "--json")?;
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
        None => {
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
    }
    Ok(())
}
