//! The faults of a server's disk, on a server whose store sits on the lazy filesystem
//! ([`super::lazyfs`]): a power loss (SIGKILL, and every write not yet synced dropped) and a
//! damaged message block (SIGKILL, then one bit flipped or the last block cut short, at a place
//! a seed draws). The caller starts the server again, after the fault's hold.

use super::EmbeddedServer;
use crate::error::{Error, Result};
use crate::stats::faults::{Corruption, SplitMix};
use crate::stats::recovery::{Corrupt, CorruptKind};

/// What the lazy filesystem under a store saw: syncs, writes, power losses.
#[cfg(target_os = "linux")]
pub use super::lazyfs::Stats as DiskStats;

#[cfg(not(target_os = "linux"))]
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct DiskStats;

fn no_lazy_fs() -> Error {
    Error::EmbeddedServer("the server's store is not on msgbench's lazy filesystem".into())
}

impl EmbeddedServer {
    /// Mounts a lazy filesystem where the server keeps its store (before it starts).
    ///
    /// # Errors
    /// [`Error::EmbeddedServer`] naming why it could not be mounted.
    pub(super) fn mount_lazy(&mut self) -> Result<()> {
        #[cfg(target_os = "linux")]
        {
            // The log marks the folder as a server's before anything is mounted in it, so the
            // next run removes it even when msgbench is killed before the server starts.
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir().join("server.log"))
                .map_err(|e| Error::EmbeddedServer(format!("cannot create the server log: {e}")))?;
            let fs = super::lazyfs::LazyMount::mount(
                &self.dir().join("jetstream"),
                &self.dir().join("disk"),
            )
            .map_err(|e| {
                Error::EmbeddedServer(format!(
                    "cannot mount msgbench's lazy filesystem under the store: {e}"
                ))
            })?;
            self.lazy = Some(fs);
            Ok(())
        }
        #[cfg(not(target_os = "linux"))]
        Err(Error::EmbeddedServer(
            "a power loss or a damaged disk needs Linux (a FUSE filesystem)".into(),
        ))
    }

    /// What the filesystem under its store saw; `None` when the store is on no lazy
    /// filesystem.
    pub fn disk_stats(&self) -> Option<DiskStats> {
        #[cfg(target_os = "linux")]
        return self.lazy.as_ref().map(super::lazyfs::LazyMount::stats);
        #[cfg(not(target_os = "linux"))]
        None
    }

    /// A power loss: SIGKILL, then everything its filesystem had not synced is dropped.
    /// Returns the unsynced bytes dropped.
    ///
    /// # Errors
    /// [`Error::EmbeddedServer`] when the store is on no lazy filesystem, or it cannot be
    /// mounted again.
    pub fn power_loss(&self) -> Result<u64> {
        self.kill();
        #[cfg(target_os = "linux")]
        if let Some(fs) = &self.lazy {
            return fs.power_loss().map_err(|e| {
                Error::EmbeddedServer(format!("the lazy filesystem did not come back: {e}"))
            });
        }
        Err(no_lazy_fs())
    }

    /// Damages one message block of `stream` (any stream's when `None`) while the server is
    /// down (it is killed first), at the place `c.seed` draws; returns what was done.
    ///
    /// # Errors
    /// [`Error::EmbeddedServer`] when the store is on no lazy filesystem, holds no block with
    /// a byte in it, or the damage cannot be written.
    pub fn corrupt(&self, c: Corrupt, stream: Option<&str>) -> Result<Corruption> {
        self.kill();
        #[cfg(target_os = "linux")]
        if let Some(fs) = &self.lazy {
            let done = fs.with_model(|m| {
                let files: Vec<(String, u64, u64)> = (m.find("msgs", ".blk").into_iter())
                    .filter(|(p, _, _)| match stream {
                        Some(s) => p.contains(&format!("/streams/{s}/msgs/")),
                        None => p.contains("/streams/"),
                    })
                    .collect();
                let (k, damage, record) = place(&files, c).ok_or_else(|| {
                    Error::EmbeddedServer(format!(
                        "no message block with data in it to {} (stream {})",
                        c.kind.as_str(),
                        stream.unwrap_or("any")
                    ))
                })?;
                m.damage(files[k].1, damage).map_err(|e| {
                    Error::EmbeddedServer(format!(
                        "cannot damage {}: {}",
                        record.file,
                        std::io::Error::from_raw_os_error(e)
                    ))
                })?;
                Ok(record)
            })?;
            // The kernel may hold the file's old pages: a new mount forgets them.
            fs.remount().map_err(|e| {
                Error::EmbeddedServer(format!("the lazy filesystem did not come back: {e}"))
            })?;
            return Ok(done);
        }
        let _ = (c, stream);
        Err(no_lazy_fs())
    }

    /// A planted fault, for tests of the verdict: from now on the data synced to files whose
    /// name ends with `suffix` is acknowledged but never reaches the disk, so the next power
    /// loss loses it.
    ///
    /// # Errors
    /// [`Error::EmbeddedServer`] when the store is on no lazy filesystem.
    pub fn lose_synced(&self, suffix: &str) -> Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(fs) = &self.lazy {
            fs.with_model(|m| m.lose_synced(suffix));
            return Ok(());
        }
        let _ = suffix;
        Err(no_lazy_fs())
    }
}

/// Where `c` strikes among `files` (path, inode, size): a bit flip lands on a byte drawn over
/// all their bytes, a cut on the last block (the highest number) at a length drawn below its
/// size. `None` when there is no byte to damage.
#[cfg(target_os = "linux")]
fn place(
    files: &[(String, u64, u64)],
    c: Corrupt,
) -> Option<(usize, super::lazyfs::Damage, Corruption)> {
    use super::lazyfs::Damage;
    let mut rng = SplitMix(c.seed);
    let name = |k: usize| files[k].0.trim_start_matches('/').to_string();
    match c.kind {
        CorruptKind::Bitflip => {
            let total: u64 = files.iter().map(|f| f.2).sum();
            if total == 0 {
                return None;
            }
            let mut at = rng.below(total);
            let bit = rng.below(8) as u8;
            let k = files.iter().position(|f| {
                let here = at < f.2;
                if !here {
                    at -= f.2;
                }
                here
            })?;
            let record = Corruption {
                file: name(k),
                offset: at,
                bit: Some(bit),
            };
            Some((k, Damage::Flip { offset: at, bit }, record))
        }
        CorruptKind::Truncate => {
            let number = |p: &str| {
                (p.rsplit('/').next())
                    .and_then(|n| n.strip_suffix(".blk"))
                    .and_then(|n| n.parse::<u64>().ok())
            };
            let k = (0..files.len()).max_by_key(|&k| number(&files[k].0))?;
            if files[k].2 == 0 {
                return None;
            }
            let len = rng.below(files[k].2);
            let record = Corruption {
                file: name(k),
                offset: len,
                bit: None,
            };
            Some((k, Damage::Cut { len }, record))
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_seed_draws_the_place_and_a_cut_takes_the_last_block() {
        let files = vec![
            ("/s/msgs/1.blk".to_string(), 5, 100),
            ("/s/msgs/2.blk".to_string(), 6, 50),
            ("/s/msgs/10.blk".to_string(), 7, 10),
        ];
        let flip = |seed| {
            place(
                &files,
                Corrupt {
                    kind: CorruptKind::Bitflip,
                    seed,
                },
            )
            .unwrap()
            .2
        };
        assert_eq!(flip(3), flip(3));
        let seen: std::collections::BTreeSet<String> = (0..40).map(|s| flip(s).file).collect();
        assert_eq!(seen.len(), 3, "{seen:?}");
        for s in 0..40 {
            let r = flip(s);
            let size = files.iter().find(|f| f.0.ends_with(&r.file)).unwrap().2;
            assert!(r.offset < size && r.bit.unwrap() < 8, "{r:?}");
        }
        let cut = place(
            &files,
            Corrupt {
                kind: CorruptKind::Truncate,
                seed: 9,
            },
        )
        .unwrap();
        assert_eq!(cut.0, 2);
        assert!(cut.2.offset < 10 && cut.2.bit.is_none());
        assert!(place(
            &[],
            Corrupt {
                kind: CorruptKind::Bitflip,
                seed: 1
            }
        )
        .is_none());
    }
}
