//! Embeds the async-nats version this driver is built with, as Cargo.lock records it, so that
//! `ready.client.version` is the library's own version (what its package manager reports)
//! without a constant to keep in sync by hand.

use std::path::Path;

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let lock = Path::new(&dir).join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let version = locked_version(&text, "async-nats").unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=MSGBENCH_ASYNC_NATS_VERSION={version}");
}

/// The `version` of the `[[package]]` named `name` in a Cargo.lock.
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let wanted = format!("name = \"{name}\"");
    let mut in_package = false;
    for line in lock.lines().map(str::trim) {
        if line == "[[package]]" {
            in_package = false;
        } else if line == wanted {
            in_package = true;
        } else if in_package {
            if let Some(v) = line.strip_prefix("version = \"") {
                return v.strip_suffix('"').map(str::to_string);
            }
        }
    }
    None
}
