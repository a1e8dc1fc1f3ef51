//! The values one token of a subject (or a KV key) draws from: a list of words, equal or
//! weighted; a range of numbers; or N numbered values, uniform, Zipf(s) or a hot set ("1% of
//! keys take 50% of the draws").
//!
//! A KV key is one such numbered value over the bucket's `--keys`, so there the count N comes
//! from that flag and the spec leaves it out (`zipf:1.1`, [`TokenDist::parse_keys`]); a
//! subject's token names its own (`zipf:1.1:10000`).
//!
//! Numbered samplers ([`Numbered`]) are `Copy` (a few numbers each, Zipf's constants
//! included), so a publisher's frame carries one by value; only a word list holds its words.

use std::fmt;

use rand_distr::weighted::WeightedAliasIndex;
use rand_distr::{Distribution, Zipf};
use serde::{Serialize, Serializer};

use super::size::{weights, MAX_ITEMS};
use super::Gen;
use crate::values::parse_count;

/// A token's values as typed.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenDist {
    text: String,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// `us,eu,ap` or `us:50%,eu:30%,ap:20%`.
    Words(Vec<(String, f64)>),
    /// `LO..HI`, both ends included, uniform.
    Range { lo: u64, hi: u64 },
    /// `uniform[:N]`: 0 … N-1.
    Uniform { n: Option<u64> },
    /// `zipf:S[:N]`: value k-1 with weight 1/k^s.
    Zipf { s: f64, n: Option<u64> },
    /// `hot:KEYS%:SHARE%[:N]`: the first KEYS% of the N values take SHARE% of the draws.
    Hot {
        keys: f64,
        share: f64,
        n: Option<u64>,
    },
}

impl fmt::Display for TokenDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A plan writes a distribution as its text.
impl Serialize for TokenDist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// Values of a numbered kind, at most (2^40): beyond any real count of keys, and small enough
/// that a Zipf's constants stay exact in an f64.
pub const MAX_N: u64 = 1 << 40;

impl TokenDist {
    /// Parses a token's values.
    ///
    /// # Errors
    /// What is wrong with the text.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t.is_empty() {
            return Err(
                "no values: give a list (a,b), a range (1..100), uniform:N, zipf:S:N \
                        or hot:KEYS%:SHARE%:N"
                    .into(),
            );
        }
        let kind = if t == "uniform" {
            Kind::Uniform { n: None }
        } else if let Some(n) = t.strip_prefix("uniform:") {
            Kind::Uniform { n: Some(count(n)?) }
        } else if let Some(rest) = t.strip_prefix("zipf:") {
            zipf(rest)?
        } else if let Some(rest) = t.strip_prefix("hot:") {
            hot(rest)?
        } else if let Some((lo, hi)) = t.split_once("..") {
            let (lo, hi) = (number(lo)?, number(hi)?);
            if hi < lo {
                return Err(format!("range {t}: the end is below the start"));
            }
            if hi - lo >= MAX_N {
                return Err(format!("range {t}: at most 2^40 values"));
            }
            Kind::Range { lo, hi }
        } else if t.contains('%') {
            Kind::Words(weights(t, word)?)
        } else {
            let words: Vec<String> = t.split(',').map(word).collect::<Result<_, _>>()?;
            if words.len() > MAX_ITEMS {
                return Err(format!("at most {MAX_ITEMS} words"));
            }
            let w = 100.0 / words.len() as f64;
            Kind::Words(words.into_iter().map(|v| (v, w)).collect())
        };
        Ok(Self {
            text: t.to_string(),
            kind,
        })
    }

    /// Parses a KV key distribution (`--key-dist`): numbered values whose count is the
    /// bucket's `--keys`, so `uniform`, `zipf:S` or `hot:KEYS%:SHARE%`, with no count of their
    /// own.
    ///
    /// # Errors
    /// A list, a range, a count given, or what [`TokenDist::parse`] refuses.
    pub fn parse_keys(s: &str) -> Result<Self, String> {
        let d = Self::parse(s)?;
        match d.kind {
            Kind::Words(_) | Kind::Range { .. } => Err(format!(
                "'{}' is not a key distribution: give uniform, zipf:S or hot:KEYS%:SHARE%",
                d.text
            )),
            Kind::Uniform { n: Some(_) }
            | Kind::Zipf { n: Some(_), .. }
            | Kind::Hot { n: Some(_), .. } => Err(format!(
                "'{}' names a count of keys; the keys are --keys, so leave it out",
                d.text
            )),
            _ => Ok(d),
        }
    }

    /// Whether the spec names its count N (a subject's token must; a KV key must not).
    pub fn names_count(&self) -> bool {
        match self.kind {
            Kind::Words(_) | Kind::Range { .. } => true,
            Kind::Uniform { n } | Kind::Zipf { n, .. } | Kind::Hot { n, .. } => n.is_some(),
        }
    }

    /// The sampler, with `n` values when the spec does not name its count.
    ///
    /// # Errors
    /// A count missing, or a hot set that is none or all of the values.
    pub fn build(&self, n: Option<u64>) -> Result<Token, String> {
        let need = |own: Option<u64>| {
            own.or(n)
                .ok_or_else(|| format!("'{}' needs its count of values: add :N", self.text))
        };
        Ok(match &self.kind {
            Kind::Words(items) => {
                let weights = items.iter().map(|(_, w)| *w).collect();
                Token::Words {
                    words: items.iter().map(|(v, _)| v.clone().into_bytes()).collect(),
                    alias: WeightedAliasIndex::new(weights).map_err(|e| format!("weights: {e}"))?,
                }
            }
            Kind::Range { lo, hi } => Token::Numbered(Numbered::Uniform {
                lo: *lo,
                span: hi - lo + 1,
            }),
            Kind::Uniform { n } => Token::Numbered(Numbered::Uniform {
                lo: 0,
                span: need(*n)?,
            }),
            Kind::Zipf { s, n } => {
                let n = need(*n)?;
                let z = Zipf::new(n as f64, *s).map_err(|e| format!("zipf: {e}"))?;
                Token::Numbered(Numbered::Zipf { z, s: *s, n })
            }
            Kind::Hot { keys, share, n } => {
                let n = need(*n)?;
                let hot = (n as f64 * keys).round() as u64;
                if hot == 0 || hot >= n {
                    return Err(format!(
                        "'{}': {}% of {n} values is {hot} hot ones; it must be at least 1 and \
                         fewer than {n}",
                        self.text,
                        keys * 100.0
                    ));
                }
                Token::Numbered(Numbered::Hot {
                    hot,
                    n,
                    share: *share,
                })
            }
        })
    }
}

fn count(s: &str) -> Result<u64, String> {
    let n = parse_count(s.trim()).map_err(|why| format!("count '{s}': {why}"))?;
    if n == 0 || n > MAX_N {
        return Err(format!("the count of values must be 1 to 2^40, not {s}"));
    }
    Ok(n)
}

fn number(s: &str) -> Result<u64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number"))
}

fn zipf(rest: &str) -> Result<Kind, String> {
    let (s, n) = match rest.split_once(':') {
        Some((s, n)) => (s, Some(count(n)?)),
        None => (rest, None),
    };
    let s: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("the Zipf exponent '{s}' is not a number"))?;
    if !(s.is_finite() && s > 0.0) {
        return Err(format!("the Zipf exponent must be above 0, not {s}"));
    }
    Ok(Kind::Zipf { s, n })
}

fn percent(s: &str, what: &str) -> Result<f64, String> {
    let p: f64 = s
        .trim()
        .strip_suffix('%')
        .ok_or_else(|| format!("{what} '{s}' needs a %, such as 1%"))?
        .trim()
        .parse()
        .map_err(|_| format!("{what} '{s}' is not a percentage"))?;
    if !(p > 0.0 && p < 100.0) {
        return Err(format!("{what} '{s}' must be between 0% and 100%"));
    }
    Ok(p / 100.0)
}

fn hot(rest: &str) -> Result<Kind, String> {
    let parts: Vec<&str> = rest.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err("a hot set is hot:KEYS%:SHARE%[:N], such as hot:1%:50%".into());
    }
    Ok(Kind::Hot {
        keys: percent(parts[0], "KEYS")?,
        share: percent(parts[1], "SHARE")?,
        n: parts.get(2).map(|n| count(n)).transpose()?,
    })
}

/// A word of a list: one subject token (no dots, wildcards, braces or spaces).
fn word(s: &str) -> Result<String, String> {
    let w = s.trim();
    if w.is_empty() {
        return Err("an empty value in the list".into());
    }
    let bad =
        |b: u8| matches!(b, b'.' | b'*' | b'>' | b'{' | b'}' | b'=') || b <= b' ' || b == 0x7f;
    if w.bytes().any(bad) {
        return Err(format!(
            "'{w}' cannot be a subject token (no dots, wildcards, braces, '=' or spaces)"
        ));
    }
    Ok(w.to_string())
}

/// A token's sampler, built before the clock starts.
#[derive(Debug, Clone)]
pub enum Token {
    Words {
        words: Vec<Vec<u8>>,
        alias: WeightedAliasIndex<f64>,
    },
    Numbered(Numbered),
}

/// A sampler of numbered values: a few numbers, so it is `Copy`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Numbered {
    /// `lo + 0 … span-1`, evenly.
    Uniform { lo: u64, span: u64 },
    /// Values 0 … n-1, value k-1 with weight 1/k^s (rand_distr's rejection sampler).
    Zipf { z: Zipf<f64>, s: f64, n: u64 },
    /// Values 0 … hot-1 take `share` of the draws, evenly among them; the rest the others.
    Hot { hot: u64, n: u64, share: f64 },
}

/// One drawn value: a word of the list, or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    Word(&'a [u8]),
    Number(u64),
}

impl Token {
    #[inline]
    pub fn draw(&self, g: &mut Gen) -> Value<'_> {
        match self {
            Self::Words { words, alias } => Value::Word(&words[alias.sample(g)]),
            Self::Numbered(n) => Value::Number(n.draw(g)),
        }
    }

    /// The longest value it draws, in bytes (a word, or a number's decimal digits).
    pub fn longest(&self) -> usize {
        let digits = |n: u64| n.checked_ilog10().map_or(1, |d| d as usize + 1);
        match self {
            Self::Words { words, .. } => words.iter().map(Vec::len).max().unwrap_or(0),
            Self::Numbered(Numbered::Uniform { lo, span }) => digits(lo + (span - 1)),
            Self::Numbered(Numbered::Zipf { n, .. } | Numbered::Hot { n, .. }) => digits(n - 1),
        }
    }

    /// The numbered sampler, when the values are numbers.
    pub fn numbered(&self) -> Option<Numbered> {
        match self {
            Self::Numbered(n) => Some(*n),
            Self::Words { .. } => None,
        }
    }
}

impl Numbered {
    #[inline]
    pub fn draw(&self, g: &mut Gen) -> u64 {
        match *self {
            Self::Uniform { lo, span } => lo + g.below(span),
            // Ranks 1 … n; the value is the rank less one, so the commonest is 0.
            Self::Zipf { z, n, .. } => (z.sample(g) as u64).clamp(1, n) - 1,
            Self::Hot { hot, n, share } => {
                if g.unit() < share {
                    g.below(hot)
                } else {
                    hot + g.below(n - hot)
                }
            }
        }
    }

    /// The exact probability of value `v`: what the tests hold the draws to.
    pub fn probability(&self, v: u64) -> f64 {
        match *self {
            Self::Uniform { lo, span } => {
                if (lo..lo.saturating_add(span)).contains(&v) {
                    1.0 / span as f64
                } else {
                    0.0
                }
            }
            Self::Zipf { s, n, .. } => {
                if v >= n {
                    return 0.0;
                }
                let h: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
                ((v + 1) as f64).powf(-s) / h
            }
            Self::Hot { hot, n, share } => match v {
                v if v < hot => share / hot as f64,
                v if v < n => (1.0 - share) / (n - hot) as f64,
                _ => 0.0,
            },
        }
    }
}
