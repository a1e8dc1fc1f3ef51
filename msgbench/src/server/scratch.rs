//! The embedded server's own temporary directory: made unique per run, and the directories of
//! runs killed before they could clean up removed on the next start.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub(super) fn make_temp_dir() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    remove_orphaned_dirs(&base);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for attempt in 0..100u32 {
        let dir = base.join(format!(
            "msgbench-{}-{:x}",
            std::process::id(),
            nanos.wrapping_add(attempt)
        ));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Error::EmbeddedServer(format!(
                    "cannot create a temporary directory in {}: {e}",
                    base.display()
                )))
            }
        }
    }
    Err(Error::EmbeddedServer(
        "cannot create a unique temporary directory".into(),
    ))
}

/// Removes the directories of embedded servers whose msgbench is gone. A msgbench killed with
/// SIGKILL cannot clean up: its server dies with it (the parent-death signal) but the directory
/// stays, so the next run removes it. Only names of our own form (`msgbench-<pid>-<hex>`) whose
/// process no longer exists and that hold a server's files are touched.
fn remove_orphaned_dirs(base: &Path) {
    // Whether a process is gone is read from /proc.
    if !cfg!(target_os = "linux") {
        return;
    }
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("msgbench-")) else {
            continue;
        };
        let Some(pid) = rest
            .split_once('-')
            .and_then(|(pid, tag)| {
                (!tag.is_empty() && tag.bytes().all(|b| b.is_ascii_hexdigit())).then_some(pid)
            })
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let ours = path.join("server.log").is_file();
        if ours && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(&path);
        }
    }
}
