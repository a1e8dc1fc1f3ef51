//! Payload stamps and the payload factory.
//!
//! When a payload has room (16 bytes or more), bytes 0–7 carry the message's sequence number
//! and bytes 8–15 the publisher's index, both little-endian u64, so a receiver can account for
//! every message without headers. Smaller payloads carry nothing.

use bytes::{Bytes, BytesMut};

/// Bytes a stamp takes.
pub const STAMP_LEN: usize = 16;

/// A stamp read from a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub seq: u64,
    pub publisher: u64,
}

/// Reads the stamp of a payload of a stamped run.
#[inline]
pub fn read(payload: &[u8]) -> Option<Stamp> {
    let seq = payload.get(0..8)?.try_into().ok()?;
    let publisher = payload.get(8..16)?.try_into().ok()?;
    Some(Stamp {
        seq: u64::from_le_bytes(seq),
        publisher: u64::from_le_bytes(publisher),
    })
}

/// Whether payloads of `size` bytes are stamped.
pub fn stamped(size: usize) -> bool {
    size >= STAMP_LEN
}

/// Makes each message's payload for one publisher.
///
/// async-nats takes a payload as an owned `Bytes` and queues it, so each stamped message
/// needs bytes of its own. They are cut from one large buffer (about 64 KiB at a time) rather
/// than allocated one by one: one allocation per chunk instead of per message. Unstamped
/// payloads are all the same bytes, shared by reference count.
pub struct Payloads {
    template: Bytes,
    stamped: bool,
    chunk: BytesMut,
    chunk_len: usize,
}

impl Payloads {
    pub fn new(size: usize, publisher: u64) -> Self {
        let mut template = vec![b'm'; size];
        let stamped = stamped(size);
        if stamped {
            template[8..16].copy_from_slice(&publisher.to_le_bytes());
        }
        let chunk_len = size.max(1) * (65_536 / size.max(1)).max(1);
        Self {
            template: Bytes::from(template),
            stamped,
            chunk: BytesMut::new(),
            chunk_len,
        }
    }

    /// The payload of message `seq`.
    #[inline]
    pub fn get(&mut self, seq: u64) -> Bytes {
        if !self.stamped {
            return self.template.clone();
        }
        if self.chunk.capacity() - self.chunk.len() < self.template.len() {
            // Reuses the old chunk's memory when every message cut from it is gone.
            self.chunk.reserve(self.chunk_len);
        }
        self.chunk.extend_from_slice(&self.template);
        self.chunk[0..8].copy_from_slice(&seq.to_le_bytes());
        self.chunk.split().freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamped_payloads_carry_seq_and_publisher() {
        let mut p = Payloads::new(64, 3);
        for seq in 0..5_000 {
            let b = p.get(seq);
            assert_eq!(b.len(), 64);
            assert_eq!(read(&b), Some(Stamp { seq, publisher: 3 }));
        }
    }

    #[test]
    fn small_payloads_are_plain() {
        let mut p = Payloads::new(8, 1);
        let b = p.get(7);
        assert_eq!(&b[..], b"mmmmmmmm");
        assert!(!stamped(15));
        assert!(stamped(16));
        assert_eq!(Payloads::new(0, 0).get(0).len(), 0);
    }
}
