//! What a sender draws per message: its payload size ([`size`]), the key it uses or its
//! subject's tokens ([`token`], [`subject`]), from one seeded source; and how far apart two
//! size distributions are ([`ks`]).
//!
//! Every draw is a function of (seed, purpose, sender, message number) and nothing else: the
//! generator for message `seq` is seeded by hashing those four, so the same seed gives the same
//! sizes whatever the split across threads or agents, and a receiver (or the
//! accounting of a JetStream acknowledgement) can tell the size of message `seq` without
//! having seen it. The samplers are prebuilt before the clock starts (alias tables); a draw
//! reads them and allocates nothing.
//!
//! The samplers are rand_distr's; statrs (the reference CDFs) checks them in the tests.

use std::convert::Infallible;

use crate::stats::faults::SplitMix;

pub mod ks;
pub mod size;
pub mod subject;
pub mod token;

pub use ks::ks_distance;
pub use size::{SenderSizes, SizeDist, Sizes};
pub use subject::{NamedToken, Template};
pub use token::{Numbered, TokenDist};

/// What a stream of draws is for: mixed into the seed so that what one sender draws for
/// different purposes comes from unrelated streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum Purpose {
    Size = 0x5153_495a_4553,
    /// A KV operation's key.
    Key = 0x4b45_5953,
    /// The values of a subject template's tokens.
    Subject = 0x5355_424a_4543,
    /// Poisson arrivals (`stats::arrivals`).
    Arrivals = 0x4152_5249_5645,
}

/// One sender's seeded source: message `seq`'s generator is [`Stream::at`]`(seq)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    key: u64,
}

impl Stream {
    /// The stream of sender `sender` (a publisher's global id) for `purpose`, under `seed`.
    pub fn new(seed: u64, purpose: Purpose, sender: u64) -> Self {
        let mut k = SplitMix(seed ^ purpose as u64);
        let a = k.next_u64();
        let mut k = SplitMix(a ^ sender.wrapping_mul(0xd6e8_feb8_6659_fd93));
        Self { key: k.next_u64() }
    }

    /// The generator for message `seq`: its own, unrelated to its neighbours' (the state is a
    /// hash of the key and `seq`, not the key plus `seq` steps).
    #[inline]
    pub fn at(&self, seq: u64) -> Gen {
        Gen(SplitMix(mix(
            self.key ^ seq.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        )))
    }
}

/// SplitMix64's finaliser: every input bit reaches every output bit.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A message's generator: SplitMix64 from a hashed state, behind rand's trait so rand_distr's
/// samplers can draw from it.
pub struct Gen(SplitMix);

impl rand::TryRng for Gen {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok((self.0.next_u64() >> 32) as u32)
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.0.next_u64())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let b = self.0.next_u64().to_le_bytes();
            chunk.copy_from_slice(&b[..chunk.len()]);
        }
        Ok(())
    }
}

impl Gen {
    /// A number in `0..n` (`n` > 0), by Lemire's multiply-shift: no division, and a bias below
    /// n/2^64.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.0.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in [0, 1) with 53 random bits.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests;
