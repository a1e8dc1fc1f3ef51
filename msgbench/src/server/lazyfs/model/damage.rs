//! A faulty disk on the model: a flipped bit or a cut-off file, seen alike by what is read
//! and by what a power loss keeps.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

use super::{io_err, Damage, Model, R};

impl Model {
    /// Damages a file's bytes as a faulty disk would: the change is in what is read and in what
    /// a power loss keeps alike, and nothing else of the file is synced by it.
    ///
    /// # Errors
    /// The disk copy cannot be changed, or the offset lies past the file's end.
    pub fn damage(&mut self, ino: u64, damage: Damage) -> R<()> {
        let path = self.disk_path(ino);
        let d = &mut self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?.data;
        match damage {
            Damage::Flip { offset, bit } => {
                if offset >= d.size {
                    return Err(libc::EINVAL);
                }
                let mask = 1u8 << (bit % 8);
                let mut in_extent = false;
                if let Some((&s, v)) = d.extents.range_mut(..=offset).next_back() {
                    if let Some(b) = v.get_mut((offset - s) as usize) {
                        *b ^= mask;
                        in_extent = true;
                    }
                }
                if offset < d.durable {
                    let f = OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open(&path)
                        .map_err(|e| io_err(&e))?;
                    let mut b = [0u8];
                    f.read_exact_at(&mut b, offset).map_err(|e| io_err(&e))?;
                    b[0] ^= mask;
                    f.write_all_at(&b, offset).map_err(|e| io_err(&e))?;
                } else if !in_extent {
                    // A hole past the disk copy reads as zeros: the flipped bit is a write.
                    d.extents.insert(offset, vec![mask]);
                    d.dirty += 1;
                    self.dirty += 1;
                }
            }
            Damage::Cut { len } => {
                if len > d.size {
                    return Err(libc::EINVAL);
                }
                if len < d.durable {
                    let f = OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .map_err(|e| io_err(&e))?;
                    f.set_len(len).map_err(|e| io_err(&e))?;
                    d.durable = len;
                }
                self.truncate(ino, len)?;
            }
        }
        Ok(())
    }
}
