//! A lazy filesystem of msgbench's own under the JetStream store of a server msgbench starts,
//! for the faults a process kill cannot show: a power loss (unsynced writes dropped) and a
//! damaged disk (a bit flipped, a block cut short). Mounted only when the run's faults need it.
//!
//! The rules of what survives are the [`model`]'s; [`fs`] serves them over FUSE (the `fuser`
//! crate, which mounts with mount(2) itself, so msgbench must be root). A power loss unmounts
//! the filesystem (the node is dead: nothing holds it open), drops what was never synced and
//! mounts it again, which also clears everything the kernel cached of it.
//!
//! Clean-up on every way out: dropped, the mount is undone; killed with SIGKILL, msgbench
//! cannot undo it, so a watchdog does: a small `sh` started with the mount, reading a pipe only
//! msgbench holds the other end of. When msgbench dies the pipe closes, and the watchdog
//! detaches the mount (`umount -l`); the kernel has already aborted the FUSE connection, since
//! its device was closed with the process. The next run then removes the folder as it does
//! any orphaned server's.

mod fs;
pub mod model;

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use model::Model;
pub use model::{Damage, Stats};

/// A mounted lazy filesystem: the model, the FUSE session serving it, and the watchdog.
pub struct LazyMount {
    model: Arc<Mutex<Model>>,
    mountpoint: PathBuf,
    session: Mutex<Option<fuser::BackgroundSession>>,
    watchdog: Mutex<Option<Child>>,
}

impl LazyMount {
    /// Mounts a new lazy filesystem at `mountpoint` (created if missing) whose disk is the
    /// folder `disk`.
    ///
    /// # Errors
    /// The folders cannot be made, /dev/fuse cannot be opened, or mount(2) refuses.
    pub fn mount(mountpoint: &Path, disk: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(mountpoint)?;
        let model = Arc::new(Mutex::new(Model::new(disk)?));
        let me = Self {
            model,
            mountpoint: mountpoint.to_path_buf(),
            session: Mutex::new(None),
            watchdog: Mutex::new(None),
        };
        // The watchdog first: from the moment the mount exists, a SIGKILL finds it watching.
        *lock(&me.watchdog) = Some(watchdog(mountpoint)?);
        me.attach()?;
        Ok(me)
    }

    /// Starts a FUSE session serving the model at the mount point.
    fn attach(&self) -> io::Result<()> {
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName("msgbench-lazyfs".into()),
            fuser::MountOption::Subtype("msgbench".into()),
        ];
        let fs = fs::LazyFs::new(Arc::clone(&self.model));
        let session = fuser::spawn_mount(fs, &self.mountpoint, &config)?;
        *lock(&self.session) = Some(session);
        Ok(())
    }

    /// Undoes the mount and waits for its session to end.
    fn detach(&self) {
        if let Some(s) = lock(&self.session).take() {
            if s.umount_and_join().is_err() {
                // Something still holds a file there: detach it all the same.
                let _ = Command::new("umount")
                    .arg("-l")
                    .arg(&self.mountpoint)
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }

    /// A power loss under a node that is already down: everything not synced is dropped, and
    /// the filesystem is mounted again on what survived. Returns the unsynced bytes dropped.
    ///
    /// # Errors
    /// The filesystem cannot be mounted again.
    pub fn power_loss(&self) -> io::Result<u64> {
        self.detach();
        let dropped = lock(&self.model).crash();
        self.attach()?;
        Ok(dropped)
    }

    /// Mounts the filesystem again with nothing dropped, so that the kernel forgets what it
    /// cached of files changed underneath it ([`LazyMount::with_model`]).
    ///
    /// # Errors
    /// The filesystem cannot be mounted again.
    pub fn remount(&self) -> io::Result<()> {
        self.detach();
        self.attach()
    }

    /// What the filesystem saw so far.
    pub fn stats(&self) -> Stats {
        lock(&self.model).stats()
    }

    /// Acts on the model directly (a damage, a planted loss); the node should be down, and
    /// [`LazyMount::remount`] called after a change the kernel may have cached.
    pub fn with_model<T>(&self, f: impl FnOnce(&mut Model) -> T) -> T {
        f(&mut lock(&self.model))
    }
}

impl Drop for LazyMount {
    fn drop(&mut self) {
        self.detach();
        if let Some(mut w) = lock(&self.watchdog).take() {
            // Closing its pipe ends it; the mount is gone already, so its umount finds nothing.
            drop(w.stdin.take());
            let _ = w.wait();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The process that detaches `mountpoint` once msgbench is gone: it waits for the end of its
/// standard input, a pipe whose other end only msgbench holds (closed on exit however it
/// comes), then runs `umount -l`. In a process group of its own, so a Ctrl-C at msgbench's
/// terminal leaves it to do its work.
fn watchdog(mountpoint: &Path) -> io::Result<Child> {
    use std::os::unix::process::CommandExt;
    Command::new("sh")
        .arg("-c")
        .arg("while read -r _; do :; done; exec umount -l \"$0\" 2>/dev/null")
        .arg(mountpoint)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
}
