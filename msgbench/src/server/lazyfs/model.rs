//! The lazy filesystem's state, apart from FUSE: what the processes above it see (the view) and
//! what a power loss would leave (the disk). Plain data and a backing folder, so the model is
//! tested without a mount.
//!
//! The rules, as a power loss would judge them:
//! - **File data** written stays in this model's memory (as extents over the file's disk copy)
//!   until the file is fsynced or fdatasynced; only then does it reach the backing folder.
//! - **Names** (create, mkdir, rename, unlink, rmdir) change the view at once and reach the
//!   disk when their directory is fsynced. An fsync of a file or directory also makes its own
//!   path durable (its entry in its parent, and the parent's up to the root): a new file that
//!   was fsynced is found after a crash, as ext4 and btrfs keep it in practice (their journal
//!   commits the new name with the inode), though POSIX alone does not promise it.
//! - **A power loss** ([`Model::crash`]) drops everything not yet durable: the view becomes the
//!   disk again, and files no durable name reaches are gone.
//!
//! Nothing is ever written back on its own, as lazyfs keeps it too: a real kernel writes dirty
//! pages back after about 30 s and commits ext4's journal every 5 s, so this shows the worst
//! case, a power loss before any writeback. The one exception is memory: past
//! [`DIRTY_LIMIT`] unsynced bytes, a file's data is written back as a kernel under memory
//! pressure would, and [`Stats::written_back`] counts it.
//!
//! The disk is a folder holding one file per inode (its data as of its last sync); the durable
//! names live in this model's memory, since the disk only needs to outlive the node, not
//! msgbench.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

mod damage;

/// The root directory's inode number (FUSE's).
pub const ROOT: u64 = 1;

/// Unsynced bytes kept at most, over every file of one filesystem, before a file's are written
/// back.
pub const DIRTY_LIMIT: u64 = 256 << 20;

/// A file or a directory (nothing else is made here: nats-server needs neither links nor
/// devices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
}

/// What the filesystem saw, for the result: counts since it was first mounted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// fsync and fdatasync calls on files.
    pub fsyncs: u64,
    /// fsync calls on directories.
    pub dir_fsyncs: u64,
    /// write calls, and the bytes they carried.
    pub writes: u64,
    pub bytes_written: u64,
    /// Bytes made durable by a sync.
    pub bytes_synced: u64,
    /// Unsynced bytes written back because [`DIRTY_LIMIT`] was reached.
    pub written_back: u64,
    /// Power losses, and the unsynced bytes and files they dropped.
    pub power_losses: u64,
    pub bytes_dropped: u64,
    pub files_dropped: u64,
    /// Synced bytes a test told the filesystem to lose ([`Model::lose_synced`]).
    pub bytes_planted: u64,
}

/// One file's data: the disk copy (its first `durable` bytes, of which those below `floor` are
/// still seen) under the extents written since its last sync.
#[derive(Debug, Default)]
struct Data {
    size: u64,
    durable: u64,
    floor: u64,
    extents: BTreeMap<u64, Vec<u8>>,
    dirty: u64,
}

#[derive(Debug)]
struct Node {
    kind: Kind,
    perm: u16,
    mtime: SystemTime,
    /// Where the view has it: its parent and name; `None` once unlinked.
    at: Option<(u64, OsString)>,
    data: Data,
    /// A directory's entries as seen, and as on the disk.
    entries: BTreeMap<OsString, u64>,
    durable: BTreeMap<OsString, u64>,
}

impl Node {
    fn new(kind: Kind, perm: u16, at: Option<(u64, OsString)>) -> Self {
        Self {
            kind,
            perm,
            mtime: SystemTime::now(),
            at,
            data: Data::default(),
            entries: BTreeMap::new(),
            durable: BTreeMap::new(),
        }
    }
}

/// What `stat` says of a node.
#[derive(Debug, Clone, Copy)]
pub struct Attr {
    pub ino: u64,
    pub kind: Kind,
    pub size: u64,
    pub perm: u16,
    pub mtime: SystemTime,
}

/// A damage done to a file's bytes, seen and on the disk alike ([`Model::damage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// One bit flipped at this offset.
    Flip { offset: u64, bit: u8 },
    /// The file cut at this length.
    Cut { len: u64 },
}

/// The view and the disk of one lazy filesystem.
pub struct Model {
    disk: PathBuf,
    nodes: HashMap<u64, Node>,
    next: u64,
    dirty: u64,
    stats: Stats,
    /// Files whose synced data is lost from now on (a planted fault), by the end of their name.
    lose: Option<OsString>,
}

type R<T> = Result<T, i32>;

fn io_err(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

impl Model {
    /// An empty filesystem whose disk is the folder `disk` (created if missing).
    ///
    /// # Errors
    /// The folder cannot be created.
    pub fn new(disk: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(disk)?;
        let mut nodes = HashMap::new();
        nodes.insert(ROOT, Node::new(Kind::Dir, 0o755, None));
        Ok(Self {
            disk: disk.to_path_buf(),
            nodes,
            next: ROOT + 1,
            dirty: 0,
            stats: Stats::default(),
            lose: None,
        })
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    fn node(&self, ino: u64) -> R<&Node> {
        self.nodes.get(&ino).ok_or(libc::ENOENT)
    }

    fn node_mut(&mut self, ino: u64) -> R<&mut Node> {
        self.nodes.get_mut(&ino).ok_or(libc::ENOENT)
    }

    fn dir(&self, ino: u64) -> R<&Node> {
        let n = self.node(ino)?;
        (n.kind == Kind::Dir).then_some(n).ok_or(libc::ENOTDIR)
    }

    fn disk_path(&self, ino: u64) -> PathBuf {
        self.disk.join(ino.to_string())
    }

    pub fn attr(&self, ino: u64) -> R<Attr> {
        let n = self.node(ino)?;
        Ok(Attr {
            ino,
            kind: n.kind,
            size: if n.kind == Kind::Dir {
                4096
            } else {
                n.data.size
            },
            perm: n.perm,
            mtime: n.mtime,
        })
    }

    pub fn lookup(&self, parent: u64, name: &OsStr) -> R<Attr> {
        let ino = *self.dir(parent)?.entries.get(name).ok_or(libc::ENOENT)?;
        self.attr(ino)
    }

    /// A directory's entries as seen, in name order.
    pub fn entries(&self, dir: u64) -> R<Vec<(OsString, u64, Kind)>> {
        let d = self.dir(dir)?;
        Ok((d.entries.iter())
            .filter_map(|(name, &ino)| Some((name.clone(), ino, self.nodes.get(&ino)?.kind)))
            .collect())
    }

    /// Its parent as seen (the root's is itself).
    pub fn parent(&self, ino: u64) -> u64 {
        (self.nodes.get(&ino).and_then(|n| n.at.as_ref())).map_or(ROOT, |(p, _)| *p)
    }

    /// Makes a new file or directory `name` in `parent`.
    pub fn make(&mut self, parent: u64, name: &OsStr, kind: Kind, perm: u16) -> R<Attr> {
        if self.dir(parent)?.entries.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let ino = self.next;
        self.next += 1;
        let at = Some((parent, name.to_os_string()));
        self.nodes.insert(ino, Node::new(kind, perm, at));
        let p = self.node_mut(parent)?;
        p.entries.insert(name.to_os_string(), ino);
        p.mtime = SystemTime::now();
        self.attr(ino)
    }

    /// Removes `name` from `parent` (a directory only when `dir`, and only when empty).
    pub fn remove(&mut self, parent: u64, name: &OsStr, dir: bool) -> R<()> {
        let ino = *self.dir(parent)?.entries.get(name).ok_or(libc::ENOENT)?;
        let n = self.node(ino)?;
        match (n.kind, dir) {
            (Kind::Dir, false) => return Err(libc::EISDIR),
            (Kind::File, true) => return Err(libc::ENOTDIR),
            (Kind::Dir, true) if !n.entries.is_empty() => return Err(libc::ENOTEMPTY),
            _ => {}
        }
        self.node_mut(parent)?.entries.remove(name);
        self.unlinked(ino);
        Ok(())
    }

    /// A node no name in the view reaches any more: its unsynced data goes (an open handle
    /// reads what it had until the next crash, which nats-server never relies on).
    fn unlinked(&mut self, ino: u64) {
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.at = None;
        }
    }

    /// Renames `name` in `parent` to `new` in `new_parent`, replacing a file there.
    pub fn rename(&mut self, parent: u64, name: &OsStr, new_parent: u64, new: &OsStr) -> R<()> {
        let ino = *self.dir(parent)?.entries.get(name).ok_or(libc::ENOENT)?;
        self.dir(new_parent)?;
        if let Some(&old) = self.node(new_parent)?.entries.get(new) {
            if old == ino {
                return Ok(());
            }
            let o = self.node(old)?;
            if o.kind == Kind::Dir && !o.entries.is_empty() {
                return Err(libc::ENOTEMPTY);
            }
            self.unlinked(old);
        }
        self.node_mut(parent)?.entries.remove(name);
        self.node_mut(new_parent)?
            .entries
            .insert(new.to_os_string(), ino);
        self.node_mut(ino)?.at = Some((new_parent, new.to_os_string()));
        Ok(())
    }

    /// Reads up to `len` bytes at `off`, as seen.
    pub fn read(&self, ino: u64, off: u64, len: u32) -> R<Vec<u8>> {
        let d = &self.node(ino)?.data;
        if off >= d.size {
            return Ok(Vec::new());
        }
        let end = (off + u64::from(len)).min(d.size);
        let mut buf = vec![0u8; (end - off) as usize];
        let seen = d.floor.min(d.durable);
        if off < seen {
            let upto = (end.min(seen) - off) as usize;
            let f = std::fs::File::open(self.disk_path(ino)).map_err(|e| io_err(&e))?;
            f.read_exact_at(&mut buf[..upto], off)
                .map_err(|e| io_err(&e))?;
        }
        for (&s, v) in d.extents.range(..end).rev() {
            let e = s + v.len() as u64;
            if e <= off {
                break;
            }
            let (from, to) = (s.max(off), e.min(end));
            buf[(from - off) as usize..(to - off) as usize]
                .copy_from_slice(&v[(from - s) as usize..(to - s) as usize]);
        }
        Ok(buf)
    }

    /// Writes `data` at `off` into memory. Appending to the extent that ends where the write
    /// starts is one copy; a write over older extents splits them.
    pub fn write(&mut self, ino: u64, off: u64, data: &[u8]) -> R<()> {
        let n = self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?;
        if n.kind != Kind::File {
            return Err(libc::EISDIR);
        }
        n.mtime = SystemTime::now();
        let d = &mut n.data;
        let end = off + data.len() as u64;
        let before = d.dirty;
        let next_starts_inside = d.extents.range(off..end).next().is_some();
        let appended = match d.extents.range_mut(..off).next_back() {
            Some((&s, v)) if s + v.len() as u64 == off && !next_starts_inside => {
                v.extend_from_slice(data);
                true
            }
            _ => false,
        };
        if appended {
            d.dirty += data.len() as u64;
        } else {
            let hit: Vec<u64> = (d.extents.range(..end).rev())
                .take_while(|(&s, v)| s + v.len() as u64 > off)
                .map(|(&s, _)| s)
                .collect();
            for s in hit {
                let v = d.extents.remove(&s).unwrap_or_default();
                let e = s + v.len() as u64;
                if s < off {
                    d.extents.insert(s, v[..(off - s) as usize].to_vec());
                }
                if e > end {
                    d.extents.insert(end, v[(end - s) as usize..].to_vec());
                }
            }
            d.extents.insert(off, data.to_vec());
            d.dirty = d.extents.values().map(|v| v.len() as u64).sum::<u64>();
        }
        d.size = d.size.max(end);
        self.dirty = self.dirty - before.min(self.dirty) + d.dirty;
        self.stats.writes += 1;
        self.stats.bytes_written += data.len() as u64;
        if self.dirty > DIRTY_LIMIT {
            let held = self.node(ino)?.data.dirty;
            self.sync_data(ino).map_err(|e| io_err(&e))?;
            self.stats.written_back += held;
        }
        Ok(())
    }

    /// Sets a file's length, as seen.
    pub fn truncate(&mut self, ino: u64, len: u64) -> R<()> {
        let n = self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?;
        if n.kind != Kind::File {
            return Err(libc::EISDIR);
        }
        n.mtime = SystemTime::now();
        let d = &mut n.data;
        if len < d.size {
            let over: Vec<u64> = (d.extents.iter())
                .filter(|(&s, v)| s + v.len() as u64 > len)
                .map(|(&s, _)| s)
                .collect();
            for s in over {
                if s >= len {
                    d.extents.remove(&s);
                } else if let Some(v) = d.extents.get_mut(&s) {
                    v.truncate((len - s) as usize);
                }
            }
            d.floor = d.floor.min(len);
        }
        d.size = len;
        let was = d.dirty;
        d.dirty = d.extents.values().map(|v| v.len() as u64).sum::<u64>();
        self.dirty -= (was - d.dirty).min(self.dirty);
        Ok(())
    }

    /// Sets a node's permission bits.
    pub fn chmod(&mut self, ino: u64, perm: u16) -> R<()> {
        self.node_mut(ino)?.perm = perm;
        Ok(())
    }

    /// fsync or fdatasync: a file's data (or a directory's entries) to the disk, and its own
    /// path with it.
    pub fn fsync(&mut self, ino: u64) -> R<()> {
        let kind = self.node(ino)?.kind;
        match kind {
            Kind::File => {
                self.stats.fsyncs += 1;
                self.sync_data(ino).map_err(|e| io_err(&e))?;
            }
            Kind::Dir => {
                self.stats.dir_fsyncs += 1;
                let n = self.node_mut(ino)?;
                n.durable = n.entries.clone();
            }
        }
        self.make_path_durable(ino);
        Ok(())
    }

    /// Makes `ino`'s own entry durable in its parent, and the parent's in its own, to the root.
    fn make_path_durable(&mut self, mut ino: u64) {
        while let Some((parent, name)) = self.nodes.get(&ino).and_then(|n| n.at.clone()) {
            if let Some(p) = self.nodes.get_mut(&parent) {
                p.durable.insert(name, ino);
            }
            ino = parent;
        }
    }

    /// Writes a file's unsynced data to the disk (or, under [`Model::lose_synced`], drops it).
    fn sync_data(&mut self, ino: u64) -> io::Result<()> {
        let path = self.disk_path(ino);
        let lost = self.planted(ino);
        let Some(n) = self.nodes.get_mut(&ino) else {
            return Ok(());
        };
        let d = &mut n.data;
        let unchanged = d.extents.is_empty() && d.floor == d.durable && d.size == d.durable;
        if unchanged {
            return Ok(());
        }
        self.dirty -= d.dirty.min(self.dirty);
        if lost {
            // The sync is acknowledged, and the data never reaches the disk.
            self.stats.bytes_planted += d.dirty;
            d.extents.clear();
            d.dirty = 0;
            return Ok(());
        }
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        if d.floor < d.durable {
            f.set_len(d.floor)?;
        }
        for (&s, v) in &d.extents {
            f.write_all_at(v, s)?;
        }
        f.set_len(d.size)?;
        self.stats.bytes_synced += d.dirty;
        d.extents.clear();
        d.dirty = 0;
        (d.durable, d.floor) = (d.size, d.size);
        Ok(())
    }

    /// Whether `ino`'s synced data is to be lost (its name ends as [`Model::lose_synced`] says).
    fn planted(&self, ino: u64) -> bool {
        let Some(suffix) = &self.lose else {
            return false;
        };
        (self.nodes.get(&ino).and_then(|n| n.at.as_ref()))
            .is_some_and(|(_, name)| name.as_encoded_bytes().ends_with(suffix.as_encoded_bytes()))
    }

    /// A planted fault, for tests of the verdict: from now on, the data synced to files whose
    /// name ends with `suffix` is acknowledged and never reaches the disk, as a disk that lies
    /// about its flushes would do.
    pub fn lose_synced(&mut self, suffix: &str) {
        self.lose = Some(suffix.into());
    }

    /// A power loss: everything unsynced is dropped and the view becomes the disk again.
    /// Returns the unsynced bytes dropped.
    pub fn crash(&mut self) -> u64 {
        let dropped: u64 = self.nodes.values().map(|n| n.data.dirty).sum();
        for n in self.nodes.values_mut() {
            let d = &mut n.data;
            d.extents.clear();
            d.dirty = 0;
            (d.size, d.floor) = (d.durable, d.durable);
            n.entries = n.durable.clone();
            n.at = None;
        }
        // What the durable names reach, from the root; the rest is gone.
        let mut reached = vec![ROOT];
        let mut i = 0;
        while i < reached.len() {
            let dir = reached[i];
            let children: Vec<(OsString, u64)> = (self.nodes.get(&dir))
                .map(|n| n.entries.iter().map(|(k, &v)| (k.clone(), v)).collect())
                .unwrap_or_default();
            for (name, ino) in children {
                if let Some(c) = self.nodes.get_mut(&ino) {
                    if c.at.is_none() {
                        c.at = Some((dir, name));
                        reached.push(ino);
                    }
                }
            }
            i += 1;
        }
        let gone: Vec<u64> = (self.nodes.keys())
            .filter(|&&ino| ino != ROOT && !reached.contains(&ino))
            .copied()
            .collect();
        for ino in &gone {
            self.nodes.remove(ino);
            let _ = std::fs::remove_file(self.disk_path(*ino));
        }
        self.dirty = 0;
        self.stats.power_losses += 1;
        self.stats.bytes_dropped += dropped;
        self.stats.files_dropped += gone.len() as u64;
        dropped
    }

    /// The files whose path (from the root, `/`-separated) ends with `suffix` and lies under a
    /// folder named `under`, as seen, with their sizes, in path order.
    pub fn find(&self, under: &str, suffix: &str) -> Vec<(String, u64, u64)> {
        let mut out = Vec::new();
        let mut stack = vec![(ROOT, String::new())];
        while let Some((dir, path)) = stack.pop() {
            for (name, ino, kind) in self.entries(dir).unwrap_or_default() {
                let p = format!("{path}/{}", name.to_string_lossy());
                match kind {
                    Kind::Dir => stack.push((ino, p)),
                    Kind::File if p.ends_with(suffix) && p.contains(&format!("/{under}/")) => {
                        let size = self.nodes.get(&ino).map_or(0, |n| n.data.size);
                        out.push((p, ino, size));
                    }
                    Kind::File => {}
                }
            }
        }
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(tag: &str) -> (Model, PathBuf) {
        let dir = std::env::temp_dir().join(format!("msgbench-lazy-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        (Model::new(&dir).unwrap(), dir)
    }

    fn file(m: &mut Model, parent: u64, name: &str) -> u64 {
        m.make(parent, OsStr::new(name), Kind::File, 0o644)
            .unwrap()
            .ino
    }

    #[test]
    fn writes_read_back_over_the_disk_copy_and_survive_a_crash_only_once_synced() {
        let (mut m, dir) = model("data");
        let f = file(&mut m, ROOT, "a.blk");
        m.write(f, 0, b"hello ").unwrap();
        m.write(f, 6, b"world").unwrap();
        m.fsync(f).unwrap();
        m.write(f, 11, b", unsynced").unwrap();
        m.write(f, 0, b"J").unwrap();
        assert_eq!(m.read(f, 0, 100).unwrap(), b"Jello world, unsynced");
        assert_eq!(m.read(f, 3, 4).unwrap(), b"lo w");
        let dropped = m.crash();
        assert_eq!(dropped, 11);
        assert_eq!(m.read(f, 0, 100).unwrap(), b"hello world");
        let s = m.stats();
        assert_eq!((s.fsyncs, s.writes, s.power_losses), (1, 4, 1));
        assert_eq!((s.bytes_synced, s.bytes_dropped), (11, 11));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_truncation_hides_the_disk_copy_past_it_until_synced() {
        let (mut m, dir) = model("trunc");
        let f = file(&mut m, ROOT, "f");
        m.write(f, 0, b"abcdef").unwrap();
        m.fsync(f).unwrap();
        m.truncate(f, 2).unwrap();
        m.truncate(f, 4).unwrap();
        assert_eq!(m.read(f, 0, 10).unwrap(), b"ab\0\0");
        m.crash();
        assert_eq!(m.read(f, 0, 10).unwrap(), b"abcdef");
        m.truncate(f, 3).unwrap();
        m.fsync(f).unwrap();
        m.crash();
        assert_eq!(m.read(f, 0, 10).unwrap(), b"abc");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn names_survive_a_crash_when_their_directory_or_the_file_itself_was_synced() {
        let (mut m, dir) = model("names");
        let d = m.make(ROOT, OsStr::new("d"), Kind::Dir, 0o755).unwrap().ino;
        let kept = file(&mut m, d, "kept");
        let _lost = file(&mut m, d, "lost");
        m.fsync(kept).unwrap();
        let renamed = file(&mut m, ROOT, "tmp");
        m.fsync(ROOT).unwrap();
        m.rename(ROOT, OsStr::new("tmp"), ROOT, OsStr::new("final"))
            .unwrap();
        m.crash();
        let names = |m: &Model, ino| -> Vec<String> {
            (m.entries(ino).unwrap().iter())
                .map(|(n, _, _)| n.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names(&m, ROOT), ["d", "tmp"]);
        assert_eq!(names(&m, d), ["kept"]);
        m.rename(ROOT, OsStr::new("tmp"), ROOT, OsStr::new("final"))
            .unwrap();
        m.fsync(ROOT).unwrap();
        m.crash();
        assert_eq!(names(&m, ROOT), ["d", "final"]);
        assert_eq!(m.lookup(ROOT, OsStr::new("final")).unwrap().ino, renamed);
        assert_eq!(m.stats().files_dropped, 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_planted_loss_drops_synced_data_of_the_files_it_names_only() {
        let (mut m, dir) = model("plant");
        let (blk, idx) = (file(&mut m, ROOT, "1.blk"), file(&mut m, ROOT, "index.db"));
        m.write(blk, 0, b"one").unwrap();
        m.fsync(blk).unwrap();
        m.lose_synced(".blk");
        m.write(blk, 3, b"two").unwrap();
        m.write(idx, 0, b"3").unwrap();
        m.fsync(blk).unwrap();
        m.fsync(idx).unwrap();
        m.crash();
        assert_eq!(m.read(blk, 0, 10).unwrap(), b"one");
        assert_eq!(m.read(idx, 0, 10).unwrap(), b"3");
        assert_eq!(m.stats().bytes_planted, 3);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn damage_reaches_what_is_read_and_what_a_crash_keeps() {
        let (mut m, dir) = model("damage");
        let f = file(&mut m, ROOT, "1.blk");
        m.write(f, 0, &[0u8; 8]).unwrap();
        m.fsync(f).unwrap();
        m.write(f, 8, &[0u8; 8]).unwrap();
        m.damage(f, Damage::Flip { offset: 2, bit: 3 }).unwrap();
        m.damage(f, Damage::Flip { offset: 9, bit: 0 }).unwrap();
        let seen = m.read(f, 0, 16).unwrap();
        assert_eq!((seen[2], seen[9]), (8, 1));
        m.crash();
        assert_eq!(m.read(f, 0, 16).unwrap(), [0, 0, 8, 0, 0, 0, 0, 0]);
        m.damage(f, Damage::Cut { len: 5 }).unwrap();
        m.crash();
        assert_eq!(m.read(f, 0, 16).unwrap().len(), 5);
        assert_eq!(
            m.find("", "1.blk").len(),
            0,
            "find wants the folder in the path"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
