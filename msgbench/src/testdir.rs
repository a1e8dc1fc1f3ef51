//! Unit tests' scratch folders: each is removed with its contents when the test ends, passed
//! or failed, so a test run leaves nothing in the temporary folder.

use std::path::{Path, PathBuf};

/// A fresh, empty folder named after the process and `tag`.
pub struct TestDir(PathBuf);

impl TestDir {
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("msgbench-unit-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the temporary folder is writable");
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
