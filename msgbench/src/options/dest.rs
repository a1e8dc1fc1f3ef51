//! Whether a file a run will write can be written, checked before the run connects to
//! anything: a benchmark that runs for minutes and then cannot write its result has wasted the
//! minutes. The check never creates the destination (a run that fails for another reason must
//! not leave an empty file); it only proves that the file could be created or opened for
//! writing.

use std::fs::{self, OpenOptions};
use std::io::ErrorKind as IoKind;
use std::path::Path;

use crate::error::{Error, Result};

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
