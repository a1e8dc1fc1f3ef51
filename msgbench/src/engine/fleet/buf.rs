//! A connection's read buffer in the fleet: small while the connection is quiet, grown while it
//! is busy, and shrunk back once it is quiet again.
//!
//! A fleet holds tens of thousands of connections, nearly all idle, so a fixed buffer sized for
//! a busy one (the dedicated reader's 128 KiB) would be most of the process's memory. Here a
//! buffer starts at [`BASE`] bytes. A read that fills all the room there was means more is
//! probably waiting, so the next read gets twice the room, up to [`HOT_MAX`]; an operation
//! larger than that (a big payload) gets the room it needs, rounded up to a multiple of
//! [`BASE`]. The fleet's sweep calls
//! [`Buf::settle`] a few times a second: a buffer that is empty, and was never more than a
//! quarter full since the last sweep, goes back to the size its traffic needed.

/// Room a quiet connection keeps: enough for INFO, PING/PONG and a few small messages.
pub const BASE: usize = 1024;
/// Room a busy connection grows to for batching reads (one read carries many messages).
pub const HOT_MAX: usize = 64 * 1024;
/// Less free room than this before a read: make more first.
const MIN_ROOM: usize = 256;

#[derive(Debug)]
pub struct Buf {
    data: Vec<u8>,
    start: usize,
    end: usize,
    /// The last read filled all the room it was given.
    filled: bool,
    /// The most bytes held at once since the last [`Buf::settle`].
    peak: usize,
}

impl Default for Buf {
    fn default() -> Self {
        Self {
            data: vec![0; BASE],
            start: 0,
            end: 0,
            filled: false,
            peak: 0,
        }
    }
}

impl Buf {
    /// Bytes held but not yet consumed.
    pub fn pending(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    /// Marks `n` pending bytes consumed.
    pub fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Free room for the next read, of at least `need` bytes in all (pending included) when the
    /// parser said how long the operation at the front is.
    pub fn room(&mut self, need: Option<usize>) -> &mut [u8] {
        let pending = self.end - self.start;
        let mut want = need.unwrap_or(0).max(pending + MIN_ROOM);
        if self.filled {
            want = want.max((self.data.len() * 2).min(HOT_MAX));
        }
        if self.data.len() - self.end < want - pending {
            // Move the pending bytes to the front; grow only when that is not enough.
            self.data.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = pending;
            if self.data.len() < want {
                self.data.resize(want.div_ceil(BASE) * BASE, 0);
            }
        }
        &mut self.data[self.end..]
    }

    /// Records that a read put `n` bytes into the room from [`Buf::room`].
    pub fn filled(&mut self, n: usize) {
        self.filled = self.end + n == self.data.len();
        self.end += n;
        self.peak = self.peak.max(self.end - self.start);
    }

    /// Shrinks a quiet buffer back to what its recent traffic needed (at least [`BASE`]).
    pub fn settle(&mut self) {
        let target = self.peak.max(BASE).next_power_of_two();
        if self.start == self.end
            && self.data.len() > 2 * target
            && self.peak * 4 <= self.data.len()
        {
            self.data = vec![0; target];
            self.start = 0;
            self.end = 0;
            self.filled = false;
        }
        self.peak = self.end - self.start;
    }

    /// Bytes this buffer holds on the heap.
    pub fn capacity(&self) -> usize {
        self.data.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(b: &mut Buf, n: usize, need: Option<usize>) -> usize {
        let room = b.room(need);
        let got = room.len().min(n);
        room[..got].fill(b'x');
        b.filled(got);
        got
    }

    #[test]
    fn grows_while_busy_and_shrinks_back_once_quiet() {
        let mut b = Buf::default();
        assert_eq!(b.capacity(), BASE);
        // A burst: every read fills its room, so each next read gets twice the room.
        let mut total = 0;
        for _ in 0..12 {
            total += read(&mut b, usize::MAX, None);
            let n = b.pending().len();
            b.consume(n);
        }
        assert_eq!(b.capacity(), HOT_MAX, "read {total} bytes");
        // Still busy at the sweep (the last read held 64 KiB): kept.
        b.settle();
        assert_eq!(b.capacity(), HOT_MAX);
        // Quiet since: shrinks back to the base size.
        read(&mut b, 10, None);
        b.consume(10);
        b.settle();
        assert_eq!(b.capacity(), BASE);
    }

    #[test]
    fn a_large_operation_gets_the_room_it_needs_and_is_kept_whole() {
        let mut b = Buf::default();
        read(&mut b, 100, None);
        let room = b.room(Some(300_000)).len();
        assert!(room + 100 >= 300_000, "room {room}");
        assert!(
            b.capacity() < 300_000 + BASE,
            "no more than it needs: {}",
            b.capacity()
        );
        assert_eq!(b.pending().len(), 100, "pending bytes survive growing");
        // Not shrunk while the operation is still pending.
        b.settle();
        assert!(b.capacity() >= 300_000);
        b.consume(100);
        b.settle();
        b.settle();
        assert_eq!(b.capacity(), BASE);
    }

    #[test]
    fn compacts_before_growing() {
        let mut b = Buf::default();
        read(&mut b, BASE, None);
        b.consume(BASE - 10);
        b.filled = false;
        // 10 bytes pending at the end: moving them to the front makes room without growing.
        let room = b.room(None).len();
        assert_eq!(b.capacity(), BASE);
        assert_eq!(room, BASE - 10);
        assert_eq!(b.pending().len(), 10);
    }
}
