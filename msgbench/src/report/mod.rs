//! Reading finished results back for what comes after a run: the HTML report ([`html`]) and the
//! statistical comparison of two results ([`diff`]). A result file is the `--json` document
//! (`msgbench.result/v1`); a calibration (`msgbench.calibration/v1`) may sit beside them so the
//! report can show the machine's floor, and the report also reads a capacity search
//! (`msgbench.capacity/v1`) for its sustainable rate, probes and latency-against-throughput
//! curve.

pub mod diff;
pub mod html;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};

/// The schema of a capacity-search document. The search that writes it is not in this crate
/// yet; the report reads the documented shape (`schema/capacity-v1.schema.json`), and this
/// name moves to the writer when it lands.
pub const CAPACITY_SCHEMA: &str = "msgbench.capacity/v1";

/// What a file given to `report` or `diff` turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    Result,
    Calibration,
    Capacity,
}

/// One parsed input file.
#[derive(Debug, Clone)]
pub struct Doc {
    pub path: PathBuf,
    /// The file name without its directory, for labels.
    pub name: String,
    pub kind: DocKind,
    pub value: Value,
}

/// Reads one input of `report`: a result or calibration is one document; a `msgbench compare`
/// file is one result per client that produced one, labelled with the client, and a
/// workload's result one per class, labelled with the class, so the report shows them side by
/// side.
///
/// # Errors
/// As [`load`].
pub fn load_for_report(path: &Path) -> Result<Vec<Doc>> {
    let text = std::fs::read(path)
        .map_err(|e| Error::io(format!("cannot read '{}'", path.display()), e))?;
    let value: Option<Value> = serde_json::from_slice(&text).ok();
    let schema = value
        .as_ref()
        .and_then(|v| v.get("schema"))
        .and_then(Value::as_str);
    // A document of several results: the list that holds them, the key naming each, and
    // what the document is called when none of them has one.
    let (list, named, what) = match schema {
        Some(crate::result::compare::SCHEMA) => (
            "clients",
            "name",
            "a comparison in which no client produced a result",
        ),
        Some(crate::result::mix::SCHEMA) => (
            "classes",
            "class",
            "a workload in which no class produced a result",
        ),
        _ => return load(path).map(|d| vec![d]),
    };
    let value = value.unwrap_or_default();
    let file = file_name(path);
    let docs: Vec<Doc> = value[list]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|c| c["result"].is_object())
        .map(|c| Doc {
            path: path.to_path_buf(),
            name: format!("{file}: {}", c[named].as_str().unwrap_or("?")),
            kind: DocKind::Result,
            value: c["result"].clone(),
        })
        .collect();
    if docs.is_empty() {
        return Err(Error::Usage(format!("'{}' is {what}", path.display())));
    }
    Ok(docs)
}

/// `--class NAME`: that class's result in a workload's result file.
///
/// # Errors
/// An unreadable file, one that is not a workload's result, a class it does not have or one
/// that has no result, each named in one line.
pub fn load_class(path: &Path, class: &str) -> Result<Doc> {
    let v = read_json(path)?;
    if v.get("schema").and_then(Value::as_str) != Some(crate::result::mix::SCHEMA) {
        return Err(Error::Usage(format!(
            "--class picks a class of a workload's result, and '{}' is not one",
            path.display()
        )));
    }
    let classes = v["classes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let Some(found) = classes.iter().find(|c| c["class"] == class) else {
        let names: Vec<&str> = classes.iter().filter_map(|c| c["class"].as_str()).collect();
        return Err(Error::Usage(format!(
            "'{}' has no class '{class}' (its classes: {})",
            path.display(),
            names.join(", ")
        )));
    };
    if !found["result"].is_object() {
        return Err(Error::Usage(format!(
            "class '{class}' of '{}' has no result: it failed before it measured anything",
            path.display()
        )));
    }
    let file = file_name(path);
    Ok(Doc {
        path: path.to_path_buf(),
        name: format!("{file}: {class}"),
        kind: DocKind::Result,
        value: found["result"].clone(),
    })
}

/// A file's name without its folder, for labels.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A result file read as JSON.
///
/// # Errors
/// [`Error::Io`] when it cannot be read; [`Error::Usage`] naming the file when it is not JSON.
fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read(path)
        .map_err(|e| Error::io(format!("cannot read '{}'", path.display()), e))?;
    serde_json::from_slice(&text).map_err(|e| {
        Error::Usage(format!(
            "'{}' is not JSON ({e}); give a file written by --json",
            path.display()
        ))
    })
}

/// Reads and identifies one file by its `schema` field.
///
/// # Errors
/// [`Error::Io`] when it cannot be read; [`Error::Usage`] naming the file when it is not JSON
/// or not a msgbench result, calibration or capacity search.
pub fn load(path: &Path) -> Result<Doc> {
    let value = read_json(path)?;
    let kind = match value.get("schema").and_then(Value::as_str) {
        Some(crate::result::SCHEMA) => DocKind::Result,
        Some(crate::result::compare::SCHEMA) => {
            return Err(Error::Usage(format!(
                "'{}' is a comparison of clients; report reads it, diff compares single results",
                path.display()
            )))
        }
        Some(crate::result::mix::SCHEMA) => {
            return Err(Error::Usage(format!(
                "'{}' is a workload's result: report reads it whole; diff compares one class \
                 of two (--class NAME)",
                path.display()
            )))
        }
        Some(crate::scenario::calibrate::SCHEMA) => DocKind::Calibration,
        Some(CAPACITY_SCHEMA) => DocKind::Capacity,
        Some(other) => {
            return Err(Error::Usage(format!(
                "'{}' has schema '{other}', which this msgbench does not read (it reads {}, {} \
                 and {CAPACITY_SCHEMA})",
                path.display(),
                crate::result::SCHEMA,
                crate::scenario::calibrate::SCHEMA
            )))
        }
        None => {
            return Err(Error::Usage(format!(
            "'{}' is not a msgbench result (no \"schema\" field); give a file written by --json",
            path.display()
        )))
        }
    };
    let name = file_name(path);
    Ok(Doc {
        path: path.to_path_buf(),
        name,
        kind,
        value,
    })
}
