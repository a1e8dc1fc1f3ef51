//! Where the report's browser test finds Chromium and chromedriver, and the one line it prints
//! when it cannot.
//!
//! Debian's `chromium` package ships the browser without its WebDriver, which is the separate
//! `chromium-driver` package; other systems install the browser as `chromium-browser` or
//! `google-chrome`, or the driver under `/usr/lib/chromium/`, or only on `PATH`. So each program
//! is looked for in this order:
//! - the environment variable (`CHROME`, `CHROMEDRIVER`) when it is set, and then only there: a
//!   person who names a program means that one, and a wrong name is reported, not replaced;
//! - the places distributions install it;
//! - its usual names on `PATH`.
//!
//! When one is missing, the line names that one alone (with where it was looked for) and the
//! command that installs it; the other, if found, is named with where it was found.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One program the test needs, and where it may be.
pub struct Program<'a> {
    /// What a person calls it.
    pub what: &'a str,
    /// The environment variable that names it, when set.
    pub env: &'a str,
    /// Absolute places distributions install it, in order.
    pub places: &'a [&'a str],
    /// Its names on PATH, in order.
    pub names: &'a [&'a str],
}

pub const BROWSER: Program<'static> = Program {
    what: "Chromium",
    env: "CHROME",
    places: &[
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
        "/usr/bin/google-chrome-stable",
    ],
    names: &[
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ],
};

pub const DRIVER: Program<'static> = Program {
    what: "chromedriver",
    env: "CHROMEDRIVER",
    places: &[
        "/usr/bin/chromedriver",
        "/usr/lib/chromium/chromedriver",
        "/usr/lib/chromium-browser/chromedriver",
    ],
    names: &["chromedriver"],
};

/// The command that installs both (Debian's `chromium` and `chromium-driver`); with one of them
/// already there, apt-get adds the other in the matching version.
pub const INSTALL: &str = "bash scripts/install-browser.sh";

/// Where to look. `root` prefixes the absolute places (`/` on a real system; a scratch folder
/// in the tests below); `env` is the value of the program's variable and `path` that of PATH.
pub struct Where<'a> {
    pub root: &'a Path,
    pub env: Option<&'a OsStr>,
    pub path: Option<&'a OsStr>,
}

/// The program's path, or what was looked for, as part of a sentence.
pub fn find(program: &Program, at: &Where) -> Result<PathBuf, String> {
    if let Some(named) = at.env.filter(|v| !v.is_empty()) {
        let named = Path::new(named);
        return if is_executable(named) {
            Ok(named.to_path_buf())
        } else {
            Err(format!(
                "no {}: {}={} is not an executable file",
                program.what,
                program.env,
                named.display()
            ))
        };
    }
    let places = program
        .places
        .iter()
        .map(|p| at.root.join(p.trim_start_matches('/')));
    let on_path = at
        .path
        .map(|p| std::env::split_paths(p).collect::<Vec<_>>())
        .unwrap_or_default();
    let named = on_path
        .iter()
        .flat_map(|dir| program.names.iter().map(move |n| dir.join(n)));
    if let Some(found) = places.chain(named).find(|p| is_executable(p)) {
        return Ok(found);
    }
    Err(format!(
        "no {}: {} is not set, none of {} exists, and PATH has no {}",
        program.what,
        program.env,
        program.places.join(", "),
        program.names.join(" or ")
    ))
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Chromium and chromedriver, when both are found.
pub struct Found {
    pub browser: PathBuf,
    pub driver: PathBuf,
}

/// Both programs, or the one line that says what is missing and how to install it.
pub fn both(
    browser: Result<PathBuf, String>,
    driver: Result<PathBuf, String>,
) -> Result<Found, String> {
    let (browser, driver) = match (browser, driver) {
        (Ok(browser), Ok(driver)) => return Ok(Found { browser, driver }),
        (browser, driver) => (browser, driver),
    };
    let mut missing = Vec::new();
    let mut present = Vec::new();
    for (program, found) in [(&BROWSER, &browser), (&DRIVER, &driver)] {
        match found {
            Ok(path) => present.push(format!("{} is {}", program.what, path.display())),
            Err(why) => missing.push(why.clone()),
        }
    }
    let mut line = missing.join("; ");
    if !present.is_empty() {
        line.push_str(&format!(" ({})", present.join(", ")));
    }
    let unset: Vec<&str> = [(&BROWSER, &browser), (&DRIVER, &driver)]
        .into_iter()
        .filter(|(_, found)| found.is_err())
        .map(|(p, _)| p.env)
        .collect();
    let set = match unset.as_slice() {
        [one] => format!("{one} to its path"),
        many => format!("{} to their paths", many.join(" and ")),
    };
    line.push_str(&format!(
        "; `{INSTALL}` installs Debian's chromium and chromium-driver, or set {set}"
    ));
    Err(line)
}

/// Both programs on this machine, or what is missing.
pub fn on_this_machine() -> Result<Found, String> {
    let path = std::env::var_os("PATH");
    let look = |program: &Program| {
        let env = std::env::var_os(program.env);
        find(
            program,
            &Where {
                root: Path::new("/"),
                env: env.as_deref(),
                path: path.as_deref(),
            },
        )
    };
    both(look(&BROWSER), look(&DRIVER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::scratch_dir;

    /// An executable file at `root` + `place`.
    fn install(root: &Path, place: &str) -> PathBuf {
        let p = root.join(place.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn at<'a>(root: &'a Path, env: Option<&'a OsStr>, path: Option<&'a OsStr>) -> Where<'a> {
        Where { root, env, path }
    }

    #[test]
    fn debians_chromium_without_its_driver_names_the_driver_alone() {
        let root = scratch_dir("browser-debian");
        let chromium = install(&root, "/usr/bin/chromium");
        let none = at(&root, None, None);
        let line = both(find(&BROWSER, &none), find(&DRIVER, &none))
            .err()
            .expect("no driver is installed");
        assert!(
            line.starts_with(
                "no chromedriver: CHROMEDRIVER is not set, none of /usr/bin/chromedriver, "
            ),
            "{line}"
        );
        assert!(
            line.contains(&format!("(Chromium is {})", chromium.display())),
            "{line}"
        );
        assert!(!line.contains("no Chromium"), "{line}");
        assert!(
            line.ends_with(
                "; `bash scripts/install-browser.sh` installs Debian's chromium and \
                 chromium-driver, or set CHROMEDRIVER to its path"
            ),
            "{line}"
        );
    }

    #[test]
    fn the_driver_under_usr_lib_chromium_is_found() {
        let root = scratch_dir("browser-usr-lib");
        let driver = install(&root, "/usr/lib/chromium/chromedriver");
        assert_eq!(find(&DRIVER, &at(&root, None, None)), Ok(driver));
    }

    #[test]
    fn programs_only_on_path_are_found_by_their_usual_names() {
        let root = scratch_dir("browser-path");
        let chrome = install(&root, "/opt/google/bin/google-chrome");
        let driver = install(&root, "/home/me/bin/chromedriver");
        let path =
            std::env::join_paths([root.join("opt/google/bin"), root.join("home/me/bin")]).unwrap();
        let look = at(&root, None, Some(&path));
        assert_eq!(find(&BROWSER, &look), Ok(chrome));
        assert_eq!(find(&DRIVER, &look), Ok(driver));
    }

    #[test]
    fn chromium_browser_is_found_where_ubuntu_puts_it() {
        let root = scratch_dir("browser-ubuntu");
        let browser = install(&root, "/usr/bin/chromium-browser");
        assert_eq!(find(&BROWSER, &at(&root, None, None)), Ok(browser));
    }

    #[test]
    fn the_variable_wins_and_a_wrong_one_is_named_not_replaced() {
        let root = scratch_dir("browser-env");
        install(&root, "/usr/bin/chromedriver");
        let mine = install(&root, "/srv/drivers/chromedriver-131");
        assert_eq!(
            find(&DRIVER, &at(&root, Some(mine.as_os_str()), None)),
            Ok(mine)
        );
        let wrong = root.join("srv/drivers/nothing-here");
        assert_eq!(
            find(&DRIVER, &at(&root, Some(wrong.as_os_str()), None)),
            Err(format!(
                "no chromedriver: CHROMEDRIVER={} is not an executable file",
                wrong.display()
            ))
        );
    }

    #[test]
    fn a_file_that_cannot_be_run_is_not_taken() {
        let root = scratch_dir("browser-noexec");
        let p = install(&root, "/usr/bin/chromedriver");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(find(&DRIVER, &at(&root, None, None)).is_err());
    }

    #[test]
    fn with_nothing_installed_both_are_named_with_both_variables() {
        let root = scratch_dir("browser-none");
        let none = at(&root, None, None);
        let line = both(find(&BROWSER, &none), find(&DRIVER, &none))
            .err()
            .expect("nothing is installed");
        assert!(line.starts_with("no Chromium: CHROME is not set"), "{line}");
        assert!(
            line.contains("; no chromedriver: CHROMEDRIVER is not set"),
            "{line}"
        );
        assert!(
            line.ends_with("or set CHROME and CHROMEDRIVER to their paths"),
            "{line}"
        );
    }
}
