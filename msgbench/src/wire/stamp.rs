//! The delivery stamp: 16 bytes at the front of every payload that has room for them, saying
//! which run and which publisher sent the message and its sequence number.
//!
//! Layout (little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 0..2 | magic `mB` |
//! | 2..4 | run tag: random per run, so leftovers of another run on the same subject are told apart |
//! | 4..8 | publisher id |
//! | 8..16 | sequence, from 0 |
//!
//! Publishers write the first 8 bytes once into a template and patch only the sequence per
//! message, so stamping costs one 8-byte store.

pub const STAMP_LEN: usize = 16;
pub const SEQ_OFFSET: usize = 8;
/// Length of the sequence-only stamp of latency runs.
pub const SEQ_LEN: usize = 8;
const MAGIC: [u8; 2] = *b"mB";

/// What a stamp says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub run_tag: u16,
    pub publisher: u32,
    pub seq: u64,
}

/// Writes the fixed part of a stamp (everything but the sequence) into the front of `payload`.
///
/// # Panics
/// If `payload` is shorter than [`STAMP_LEN`]; callers only stamp payloads that have room.
pub fn write_template(payload: &mut [u8], run_tag: u16, publisher: u32) {
    payload[0..2].copy_from_slice(&MAGIC);
    payload[2..4].copy_from_slice(&run_tag.to_le_bytes());
    payload[4..8].copy_from_slice(&publisher.to_le_bytes());
    payload[8..16].fill(0);
}

/// Writes the sequence into a stamped payload.
#[inline(always)]
pub fn write_seq(payload: &mut [u8], seq: u64) {
    payload[SEQ_OFFSET..STAMP_LEN].copy_from_slice(&seq.to_le_bytes());
}

/// Reads a stamp, or `None` when the payload is too short or does not start with the magic.
#[inline]
pub fn read(payload: &[u8]) -> Option<Stamp> {
    let head: &[u8; STAMP_LEN] = payload.get(..STAMP_LEN)?.try_into().ok()?;
    if head[0..2] != MAGIC {
        return None;
    }
    Some(Stamp {
        run_tag: u16::from_le_bytes([head[2], head[3]]),
        publisher: u32::from_le_bytes([head[4], head[5], head[6], head[7]]),
        seq: u64::from_le_bytes(head[8..16].try_into().expect("8 bytes")),
    })
}

/// A run tag that differs between runs with overwhelming likelihood: the low bits of the clock
/// mixed with the process id. Not secret, only distinct.
pub fn new_run_tag() -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mixed =
        (nanos ^ u64::from(std::process::id()).rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> 48) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut p = vec![0xAAu8; 32];
        write_template(&mut p, 0xBEEF, 7);
        write_seq(&mut p, 123_456_789_012);
        assert_eq!(
            read(&p),
            Some(Stamp {
                run_tag: 0xBEEF,
                publisher: 7,
                seq: 123_456_789_012
            })
        );
        // The rest of the payload is left alone.
        assert!(p[STAMP_LEN..].iter().all(|b| *b == 0xAA));
        assert_eq!(&p[..4], b"mB\xEF\xBE");
    }

    #[test]
    fn rejects_short_or_foreign_payloads() {
        assert_eq!(read(b"mB"), None);
        assert_eq!(read(&[0u8; 16]), None);
        assert_eq!(read(&[0u8; 15]), None);
    }
}
