//! Which key each KV operation uses: the bucket's `--order` (sequential, or a fixed shuffle),
//! or keys drawn per operation from `--key-dist` (uniform, Zipf(s) or a hot set over `--keys`),
//! seeded by `--seed` and recorded in the result's params.
//!
//! Apart from options.rs because a drawn key is its own small subject: its checks, and what a
//! result records of it.

use serde::Serialize;

use super::args::KvArgs;
use crate::cli::KeyOrder;
use crate::engine::load::Keys;
use crate::error::{Error, Result};

/// The seed of drawn keys when `--seed` is not given.
pub const DEFAULT_SEED: u64 = 1;

/// The keys a `kv put` or `kv get` visits.
///
/// # Errors
/// [`Error::Usage`] naming `--key-dist` when its distribution cannot be drawn over `--keys`
/// (a hot set of no key or of all of them), or `--seed` without `--key-dist`.
pub(super) fn keys_of(a: &KvArgs) -> Result<Keys> {
    let Some(dist) = &a.key_dist else {
        if let Some(seed) = a.seed {
            return Err(Error::flag(
                "--seed",
                &seed.to_string(),
                "draws keys, and no --key-dist was given",
            ));
        }
        return Ok(Keys {
            n: a.keys,
            random: a.order == KeyOrder::Random,
            drawn: None,
        });
    };
    let pick = dist
        .build(Some(a.keys))
        .map_err(|why| {
            Error::flag(
                "--key-dist",
                &dist.to_string(),
                format!("with --keys {}: {why}", a.keys),
            )
        })?
        .numbered()
        .ok_or_else(|| Error::flag("--key-dist", &dist.to_string(), "draws no numbered keys"))?;
    Ok(Keys::drawn(a.keys, pick, a.seed.unwrap_or(DEFAULT_SEED)))
}

/// Drawn keys as a result records them: the distribution as given and the seed.
#[derive(Debug, Clone, Serialize)]
pub struct KeyDistribution {
    /// `uniform`, `zipf:S` or `hot:KEYS%:SHARE%`, over the run's keys.
    pub spec: String,
    pub seed: u64,
}
