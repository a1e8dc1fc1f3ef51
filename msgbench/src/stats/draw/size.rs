//! Payload sizes: one fixed size (`--size 128`, what it always was), or a distribution drawn
//! per message: uniform over a range, a weighted list (whose items may be ranges, drawn
//! uniformly within: a histogram written inline, as `capture` writes it so a workload file
//! stands alone), a lognormal given by its median and P99, or a histogram file ([`HistFile`]).
//!
//! Parsing ([`SizeDist`]) only reads the text, so clap can refuse a bad value with the flag's
//! name; building the sampler ([`Sizes::build`]) reads a histogram file and checks the sizes
//! against what the scenario needs at least (its stamp), before any connection.

use std::fmt;
use std::path::PathBuf;

use rand_distr::weighted::WeightedAliasIndex;
use rand_distr::Distribution;
use serde::{Deserialize, Serialize, Serializer};

use super::{Gen, Purpose, Stream};
use crate::values::parse_size;

/// The largest payload a size may name: NATS's own ceiling for `max_payload` (64 MiB).
pub const MAX_SIZE: usize = 64 * 1024 * 1024;

/// A lognormal's draws above this are clamped to it unless its spec names a MAX: NATS's
/// default `max_payload` (1 MiB).
pub const LOGNORMAL_MAX: usize = 1024 * 1024;

/// The share of a lognormal's draws that may be clamped up to the stamp before the
/// distribution counts as not the one asked for.
pub const MAX_CLAMPED: f64 = 0.01;

/// Items in a weighted list, and buckets in a histogram file, at most.
pub const MAX_ITEMS: usize = 4096;

/// The schema a histogram file names.
pub const HIST_SCHEMA: &str = "msgbench.sizes/v1";

/// Sizes `lo..=hi` and their weight.
pub type WeightedRange = ((usize, usize), f64);

/// `--size` as typed: a fixed size or a distribution.
#[derive(Debug, Clone, PartialEq)]
pub enum SizeDist {
    Fixed(usize),
    /// `uniform:LO..HI`, both ends included.
    Uniform {
        lo: usize,
        hi: usize,
    },
    /// `64B:70%,1KiB:25%,64KiB:5%`: the weights are percentages adding up to 100. An item
    /// is a size or a range `LO..HI` (both included, drawn uniformly within), kept as
    /// `(LO, HI)` (a size is `(N, N)`).
    Weighted {
        text: String,
        items: Vec<((usize, usize), f64)>,
    },
    /// `lognormal:MEDIAN:P99[:MAX]`.
    LogNormal {
        text: String,
        median: usize,
        p99: usize,
        max: usize,
    },
    /// `hist:FILE`: a histogram file (read when the sampler is built).
    Hist(PathBuf),
}

impl SizeDist {
    /// Parses `--size`.
    ///
    /// # Errors
    /// What is wrong with the value, for clap to name the flag.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if let Some(rest) = t.strip_prefix("uniform:") {
            let (lo, hi) = rest
                .split_once("..")
                .ok_or("a uniform size is uniform:LO..HI, such as uniform:64B..4KiB")?;
            let (lo, hi) = (bounded(lo)?, bounded(hi)?);
            if hi < lo {
                return Err(format!("uniform:{rest}: HI is below LO"));
            }
            return Ok(Self::Uniform { lo, hi });
        }
        if let Some(rest) = t.strip_prefix("lognormal:") {
            return lognormal(t, rest);
        }
        if let Some(path) = t.strip_prefix("hist:") {
            if path.is_empty() {
                return Err("hist:FILE needs a file".into());
            }
            return Ok(Self::Hist(PathBuf::from(path)));
        }
        if t.contains('%') {
            return weighted(t);
        }
        parse_size(t).map(Self::Fixed)
    }

    /// The one size, when it is fixed.
    pub fn fixed(&self) -> Option<usize> {
        match self {
            Self::Fixed(n) => Some(*n),
            _ => None,
        }
    }

    /// The distribution as weighted ranges of sizes, both ends included (a size is a range one
    /// wide), a histogram file read for it; `None` for a lognormal, which has no such form.
    ///
    /// # Errors
    /// A histogram file that cannot be read.
    pub fn ranges(&self) -> Result<Option<Vec<WeightedRange>>, String> {
        Ok(Some(match self {
            Self::Fixed(n) => vec![((*n, *n), 1.0)],
            Self::Uniform { lo, hi } => vec![((*lo, *hi), 1.0)],
            Self::Weighted { items, .. } => items.clone(),
            Self::Hist(path) => HistFile::read(path)?
                .buckets
                .iter()
                .filter(|b| b.count > 0)
                .map(|b| ((b.from, b.to), b.count as f64))
                .collect(),
            Self::LogNormal { .. } => return Ok(None),
        }))
    }

    /// The value as typed, for a result's params; `None` for a fixed size (params record it
    /// as `size`).
    pub fn described(&self) -> Option<String> {
        self.fixed().is_none().then(|| self.to_string())
    }
}

impl fmt::Display for SizeDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed(n) => write!(f, "{n}"),
            Self::Uniform { lo, hi } => write!(f, "uniform:{lo}..{hi}"),
            Self::Weighted { text, .. } | Self::LogNormal { text, .. } => f.write_str(text),
            Self::Hist(p) => write!(f, "hist:{}", p.display()),
        }
    }
}

/// A plan writes a fixed size as the number it always was, and a distribution as its text.
impl Serialize for SizeDist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Fixed(n) => s.serialize_u64(*n as u64),
            other => s.serialize_str(&other.to_string()),
        }
    }
}

fn bounded(s: &str) -> Result<usize, String> {
    let n = parse_size(s)?;
    if n > MAX_SIZE {
        return Err(format!(
            "'{s}' is over 64 MiB, the most a NATS message can carry"
        ));
    }
    Ok(n)
}

/// An item of a weighted list: a size, or `LO..HI` with both ends sizes and LO at most HI.
fn size_or_range(s: &str) -> Result<(usize, usize), String> {
    let Some((lo, hi)) = s.split_once("..") else {
        return bounded(s).map(|n| (n, n));
    };
    let (lo, hi) = (bounded(lo.trim())?, bounded(hi.trim())?);
    if hi < lo {
        return Err(format!("range '{s}': HI is below LO"));
    }
    Ok((lo, hi))
}

fn lognormal(t: &str, rest: &str) -> Result<SizeDist, String> {
    let parts: Vec<&str> = rest.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(
            "a lognormal size is lognormal:MEDIAN:P99[:MAX], such as lognormal:1KiB:16KiB".into(),
        );
    }
    let (median, p99) = (bounded(parts[0])?, bounded(parts[1])?);
    let max = parts.get(2).map_or(Ok(LOGNORMAL_MAX), |m| bounded(m))?;
    if median == 0 {
        return Err("the lognormal's MEDIAN must be more than 0".into());
    }
    if p99 <= median {
        return Err(format!(
            "the lognormal's P99 ({p99} B) must be above its MEDIAN ({median} B)"
        ));
    }
    if max < p99 {
        return Err(format!(
            "the lognormal's MAX ({max} B) is below its P99 ({p99} B)"
        ));
    }
    Ok(SizeDist::LogNormal {
        text: t.to_string(),
        median,
        p99,
        max,
    })
}

fn weighted(t: &str) -> Result<SizeDist, String> {
    let items = weights(t, size_or_range)?;
    Ok(SizeDist::Weighted {
        text: t.to_string(),
        items,
    })
}

/// `VALUE:PCT%,…`: each value parsed by `value`, the percentages adding up to 100 (within a
/// hundredth of a percent, for lists like 33.33% × 3).
///
/// # Errors
/// The item at fault, or the sum.
pub fn weights<T>(
    t: &str,
    mut value: impl FnMut(&str) -> Result<T, String>,
) -> Result<Vec<(T, f64)>, String> {
    let mut items = Vec::new();
    for item in t.split(',') {
        let (v, w) = item
            .trim()
            .rsplit_once(':')
            .ok_or_else(|| format!("'{item}' is not VALUE:WEIGHT%, such as 64B:70%"))?;
        let pct = w
            .trim()
            .strip_suffix('%')
            .ok_or_else(|| format!("weight '{w}' needs a %, such as 70%"))?;
        let pct: f64 = pct
            .trim()
            .parse()
            .map_err(|_| format!("weight '{w}' is not a percentage"))?;
        if !(pct.is_finite() && pct > 0.0) {
            return Err(format!("weight '{w}' must be more than 0%"));
        }
        items.push((value(v.trim())?, pct));
        if items.len() > MAX_ITEMS {
            return Err(format!("at most {MAX_ITEMS} items"));
        }
    }
    let sum: f64 = items.iter().map(|(_, w)| w).sum();
    if (sum - 100.0).abs() > 0.01 {
        return Err(format!("the weights add up to {sum}%, not 100%"));
    }
    Ok(items)
}

/// A histogram file: the sizes seen, in buckets of bytes with a count each. `capture` writes
/// it; `--size hist:FILE` draws from it (a bucket by its count, then a size uniformly within).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistFile {
    /// [`HIST_SCHEMA`].
    pub schema: String,
    pub buckets: Vec<HistBucket>,
}

/// Sizes `from..=to` bytes, seen `count` times.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistBucket {
    pub from: usize,
    pub to: usize,
    pub count: u64,
}

impl HistFile {
    /// Reads and checks a histogram file.
    ///
    /// # Errors
    /// An unreadable file, JSON that is not a histogram, or buckets that cannot be drawn from.
    pub fn read(path: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
        let h: HistFile =
            serde_json::from_str(&text).map_err(|e| format!("not a histogram file: {e}"))?;
        if h.schema != HIST_SCHEMA {
            return Err(format!(
                "schema '{}' is not one this msgbench reads ({HIST_SCHEMA})",
                h.schema
            ));
        }
        if h.buckets.is_empty() || h.buckets.len() > MAX_ITEMS {
            return Err(format!("needs 1 to {MAX_ITEMS} buckets"));
        }
        for b in &h.buckets {
            if b.to < b.from || b.to > MAX_SIZE {
                return Err(format!(
                    "bucket {}..{} is not a range of sizes up to 64 MiB",
                    b.from, b.to
                ));
            }
        }
        if h.buckets.iter().all(|b| b.count == 0) {
            return Err("every bucket's count is 0".into());
        }
        Ok(h)
    }
}

/// A size sampler, built before the clock starts.
#[derive(Debug, Clone)]
pub enum Sizes {
    Fixed(usize),
    Uniform {
        lo: usize,
        span: u64,
    },
    /// A weighted list, or a histogram's buckets: one is drawn by its weight (Vose's alias
    /// table), then a size uniformly within it (a list's plain sizes are one size wide).
    Ranges {
        ranges: Vec<(usize, u64)>,
        weights: Vec<f64>,
        alias: WeightedAliasIndex<f64>,
    },
    LogNormal {
        dist: rand_distr::LogNormal<f64>,
        mu: f64,
        sigma: f64,
        lo: usize,
        hi: usize,
    },
}

impl Sizes {
    /// The sampler of `d`, whose draws must all be at least `floor` bytes (the scenario's
    /// stamp).
    ///
    /// # Errors
    /// An unreadable histogram file, sizes below `floor`, or a lognormal that would be clamped
    /// more than [`MAX_CLAMPED`] of the time.
    pub fn build(d: &SizeDist, floor: usize) -> Result<Self, String> {
        let s = match d {
            SizeDist::Fixed(n) => return Ok(Self::Fixed(*n)),
            SizeDist::Uniform { lo, hi } => Self::Uniform {
                lo: *lo,
                span: (*hi - *lo) as u64 + 1,
            },
            SizeDist::Weighted { .. } | SizeDist::Hist(_) => {
                Self::ranges(d.ranges()?.unwrap_or_default())?
            }
            SizeDist::LogNormal {
                median, p99, max, ..
            } => return lognormal_sizes(*median, *p99, *max, floor),
        };
        if s.min() < floor {
            return Err(format!(
                "draws sizes down to {} B, below the {floor}-byte stamp every message carries",
                s.min()
            ));
        }
        Ok(s)
    }

    fn ranges(items: Vec<((usize, usize), f64)>) -> Result<Self, String> {
        let weights: Vec<f64> = items.iter().map(|(_, w)| *w).collect();
        let alias =
            WeightedAliasIndex::new(weights.clone()).map_err(|e| format!("weights: {e}"))?;
        Ok(Self::Ranges {
            weights,
            ranges: items
                .iter()
                .map(|((lo, hi), _)| (*lo, (*hi - *lo) as u64 + 1))
                .collect(),
            alias,
        })
    }

    /// Message `g`'s size.
    #[inline]
    pub fn draw(&self, g: &mut Gen) -> usize {
        match self {
            Self::Fixed(n) => *n,
            Self::Uniform { lo, span } => lo + g.below(*span) as usize,
            Self::Ranges { ranges, alias, .. } => {
                let (lo, span) = ranges[alias.sample(g)];
                if span == 1 {
                    lo
                } else {
                    lo + g.below(span) as usize
                }
            }
            Self::LogNormal { dist, lo, hi, .. } => {
                let x = dist.sample(g).round();
                // A cast saturates: a huge draw is `usize::MAX`, then clamped.
                (x as usize).clamp(*lo, *hi)
            }
        }
    }

    /// The largest size a draw can give: what a publisher's payload buffer holds.
    pub fn max(&self) -> usize {
        match self {
            Self::Fixed(n) => *n,
            Self::Uniform { lo, span } => lo + (*span as usize - 1),
            Self::Ranges { ranges, .. } => ranges
                .iter()
                .map(|(lo, span)| lo + (*span as usize - 1))
                .max()
                .unwrap_or(0),
            Self::LogNormal { hi, .. } => *hi,
        }
    }

    /// The smallest size a draw can give.
    pub fn min(&self) -> usize {
        match self {
            Self::Fixed(n) => *n,
            Self::Uniform { lo, .. } | Self::LogNormal { lo, .. } => *lo,
            Self::Ranges { ranges, .. } => ranges.iter().map(|(lo, _)| *lo).min().unwrap_or(0),
        }
    }

    /// The mean size the draws tend to (a result's `size` with a distribution).
    pub fn mean(&self) -> f64 {
        match self {
            Self::Fixed(n) => *n as f64,
            Self::Uniform { lo, span } => *lo as f64 + (*span as f64 - 1.0) / 2.0,
            Self::Ranges {
                ranges, weights, ..
            } => {
                let total: f64 = weights.iter().sum();
                ranges
                    .iter()
                    .zip(weights)
                    .map(|((lo, span), w)| (*lo as f64 + (*span as f64 - 1.0) / 2.0) * w)
                    .sum::<f64>()
                    / total
            }
            Self::LogNormal {
                mu, sigma, lo, hi, ..
            } => clamped_mean(*mu, *sigma, *lo, *hi),
        }
    }

    pub fn is_fixed(&self) -> bool {
        matches!(self, Self::Fixed(_))
    }
}

/// One sender's drawn sizes: message `m`'s size is a function of `m` alone, so a receiver, an
/// acknowledgement's accounting or a read-back of the stream can tell it without having seen
/// the message.
#[derive(Debug, Clone)]
pub struct SenderSizes {
    pub sizes: Sizes,
    pub stream: Stream,
}

impl SenderSizes {
    /// The sizes of sender `sender` (a publisher's global id) under `seed`.
    pub fn new(sizes: Sizes, seed: u64, sender: u64) -> Self {
        Self {
            sizes,
            stream: Stream::new(seed, Purpose::Size, sender),
        }
    }

    /// Message `m`'s size.
    #[inline]
    pub fn of(&self, m: u64) -> usize {
        self.sizes.draw(&mut self.stream.at(m))
    }
}

/// The lognormal whose median and 99th percentile are those given: μ = ln(median) and
/// σ = (ln P99 − μ) / z₀.₉₉, drawn and clamped to `[floor, max]`, refused when the clamp at the
/// floor would change more than [`MAX_CLAMPED`] of the draws (the one at MAX changes at most 1%:
/// the parser holds MAX at or above P99).
fn lognormal_sizes(median: usize, p99: usize, max: usize, floor: usize) -> Result<Sizes, String> {
    use statrs::distribution::{ContinuousCDF, Normal};
    let std = Normal::standard();
    let mu = (median as f64).ln();
    let sigma = ((p99 as f64).ln() - mu) / std.inverse_cdf(0.99);
    let below = std.cdf(((floor as f64 - 0.5).max(f64::MIN_POSITIVE).ln() - mu) / sigma);
    if below > MAX_CLAMPED {
        return Err(format!(
            "{:.1}% of its draws would fall below the {floor}-byte stamp; raise the median",
            below * 100.0
        ));
    }
    let dist = rand_distr::LogNormal::new(mu, sigma).map_err(|e| format!("lognormal: {e}"))?;
    Ok(Sizes::LogNormal {
        dist,
        mu,
        sigma,
        lo: floor,
        hi: max,
    })
}

/// E[clamp(X, lo, hi)] of a lognormal X = e^(μ+σZ): each clamped tail at its bound, and the
/// partial expectation between them, e^(μ+σ²/2)·(Φ(b − σ) − Φ(a − σ)), a and b the bounds'
/// standard scores.
fn clamped_mean(mu: f64, sigma: f64, lo: usize, hi: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    let std = Normal::standard();
    let score = |x: f64| (x.max(f64::MIN_POSITIVE).ln() - mu) / sigma;
    let (a, b) = (score(lo as f64), score(hi as f64));
    lo as f64 * std.cdf(a)
        + hi as f64 * (1.0 - std.cdf(b))
        + (mu + sigma * sigma / 2.0).exp() * (std.cdf(b - sigma) - std.cdf(a - sigma))
}
