//! The Kolmogorov–Smirnov distance between two size distributions: sup |F_a(x) − F_b(x)| over
//! the whole byte sizes x, from the distributions' exact CDFs, with no sampling. `capture diff`
//! compares a capture's sizes with those of the capture of its replay by it.
//!
//! Why it is exact with a handful of evaluations: a fixed size, a uniform range, a weighted
//! list (with ranges) and a histogram file are all unions of ranges drawn uniformly within, so
//! their CDF over the integers is piecewise linear, with corners only at each range's ends.
//! Between two neighbouring corners of either distribution both CDFs are linear, so their
//! difference is too, and its largest size is at a corner. A lognormal, rounded to whole bytes
//! and clamped as [`Sizes::draw`](super::Sizes::draw) does, is smooth between its clamps:
//! there the difference can peak inside a stretch, but only where the two densities are equal
//! (the difference's slope is 0), and a lognormal's density is unimodal, so it meets a constant
//! (the slope of a linear CDF) at most twice, and another lognormal's at most twice (their
//! logarithms are quadratics in ln x). Those crossings are found (bisection on each side of
//! the mode, or the quadratic's roots), and the whole sizes either side of each are evaluated
//! too: between crossings the difference is monotone, so no other size can be farther.
//!
//! A lognormal's clamp at the bottom is the 16-byte delivery stamp, as `pub` and `pubsub`
//! build it: a distribution is compared as those scenarios would send it.

use statrs::distribution::{Continuous, ContinuousCDF, LogNormal, Normal};

use super::size::SizeDist;
use crate::wire::stamp::STAMP_LEN;

/// The KS distance between `a` and `b`: the largest difference of their CDFs at any whole size,
/// in [0, 1].
///
/// # Errors
/// A histogram file that cannot be read, or a lognormal whose parameters cannot make one.
pub fn ks_distance(a: &SizeDist, b: &SizeDist) -> Result<f64, String> {
    let (a, b) = (Cdf::of(a)?, Cdf::of(b)?);
    let mut at: Vec<i64> = a.corners();
    at.extend(b.corners());
    at.sort_unstable();
    at.dedup();
    let gap = |x: i64| (a.at(x) - b.at(x)).abs();
    let mut d = at.iter().map(|&x| gap(x)).fold(0.0f64, f64::max);
    for w in at.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        if hi - lo < 2 {
            continue;
        }
        for x in crossings(&a, &b, lo, hi) {
            let f = x.floor() as i64;
            for y in (f - 1)..=(f + 2) {
                if lo < y && y < hi {
                    d = d.max(gap(y));
                }
            }
        }
    }
    Ok(d.min(1.0))
}

/// A size distribution's CDF over whole sizes.
enum Cdf {
    /// Ranges `lo..=hi`, each with its share of the draws (the shares add up to 1).
    Ranges(Vec<(i64, i64, f64)>),
    /// A lognormal rounded to whole bytes and clamped to `lo..=hi`.
    LogNormal { dist: LogNormal, lo: i64, hi: i64 },
}

impl Cdf {
    fn of(d: &SizeDist) -> Result<Self, String> {
        let ranges = match (d.ranges()?, d) {
            (Some(r), _) => r,
            (
                None,
                SizeDist::LogNormal {
                    median, p99, max, ..
                },
            ) => {
                // The parameters `Sizes::build` gives the sampler.
                let mu = (*median as f64).ln();
                let sigma = ((*p99 as f64).ln() - mu) / Normal::standard().inverse_cdf(0.99);
                let dist = LogNormal::new(mu, sigma).map_err(|e| format!("lognormal: {e}"))?;
                return Ok(Self::LogNormal {
                    dist,
                    lo: STAMP_LEN as i64,
                    hi: *max as i64,
                });
            }
            (None, other) => return Err(format!("{other} has no ranges and is not a lognormal")),
        };
        let total: f64 = ranges.iter().map(|(_, w)| w).sum();
        Ok(Self::Ranges(
            ranges
                .into_iter()
                .map(|((lo, hi), w)| (lo as i64, hi as i64, w / total))
                .collect(),
        ))
    }

    /// P(size ≤ x).
    fn at(&self, x: i64) -> f64 {
        match self {
            Self::Ranges(r) => r
                .iter()
                .map(|&(lo, hi, w)| {
                    if x < lo {
                        0.0
                    } else if x >= hi {
                        w
                    } else {
                        w * (x - lo + 1) as f64 / (hi - lo + 1) as f64
                    }
                })
                .sum(),
            Self::LogNormal { dist, lo, hi } => {
                if x < *lo {
                    0.0
                } else if x >= *hi {
                    1.0
                } else {
                    // A draw rounds to x or below when it is below x + ½.
                    dist.cdf(x as f64 + 0.5)
                }
            }
        }
    }

    /// The sizes where the CDF stops being one linear (or one smooth) piece.
    fn corners(&self) -> Vec<i64> {
        match self {
            Self::Ranges(r) => r.iter().flat_map(|&(lo, hi, _)| [lo - 1, hi]).collect(),
            Self::LogNormal { lo, hi, .. } => vec![lo - 1, *lo, hi - 1, *hi],
        }
    }

    /// What the CDF is between the corners `lo` and `hi` (neither a corner in between): the
    /// slope of a linear piece, or the lognormal.
    fn piece(&self, lo: i64, hi: i64) -> Piece<'_> {
        match self {
            Self::Ranges(r) => Piece::Linear(
                r.iter()
                    .filter(|&&(a, b, _)| a <= hi && b > lo)
                    .map(|&(a, b, w)| w / (b - a + 1) as f64)
                    .sum(),
            ),
            Self::LogNormal { dist, lo: l, hi: h } if *l <= lo && hi < *h => Piece::Smooth(dist),
            Self::LogNormal { .. } => Piece::Linear(0.0),
        }
    }
}

enum Piece<'a> {
    Linear(f64),
    Smooth(&'a LogNormal),
}

/// Where, strictly between the corners `lo` and `hi`, the two CDFs' slopes are equal (as
/// functions of a continuous x: a lognormal's CDF there is its CDF at x + ½).
fn crossings(a: &Cdf, b: &Cdf, lo: i64, hi: i64) -> Vec<f64> {
    let (y0, y1) = (lo as f64 + 0.5, hi as f64 + 0.5);
    let ys = match (a.piece(lo, hi), b.piece(lo, hi)) {
        (Piece::Linear(_), Piece::Linear(_)) => Vec::new(),
        (Piece::Smooth(d), Piece::Linear(s)) | (Piece::Linear(s), Piece::Smooth(d)) => {
            density_meets(d, s, y0, y1)
        }
        (Piece::Smooth(d), Piece::Smooth(e)) => densities_meet(d, e),
    };
    ys.into_iter()
        .filter(|y| (y0..=y1).contains(y))
        .map(|y| y - 0.5)
        .collect()
}

/// Where a lognormal's density equals `s` within [y0, y1]: at most once on each side of its
/// mode, where it is monotone, found by bisection.
fn density_meets(d: &LogNormal, s: f64, y0: f64, y1: f64) -> Vec<f64> {
    let (mu, sigma) = (d.location(), d.scale());
    let mode = (mu - sigma * sigma).exp();
    let mut sides = vec![(y0, y1.min(mode)), (y0.max(mode), y1)];
    sides.retain(|(a, b)| a < b);
    let f = |y: f64| d.pdf(y) - s;
    sides
        .into_iter()
        .filter(|&(a, b)| (f(a) > 0.0) != (f(b) > 0.0))
        .map(|(mut a, mut b)| {
            let up = f(a) <= 0.0;
            for _ in 0..200 {
                let m = 0.5 * (a + b);
                if (f(m) <= 0.0) == up {
                    a = m;
                } else {
                    b = m;
                }
            }
            0.5 * (a + b)
        })
        .collect()
}

/// Where two lognormals' densities are equal: with t = ln y, the log-densities differ by a
/// quadratic in t, A·t² + B·t + C.
fn densities_meet(d: &LogNormal, e: &LogNormal) -> Vec<f64> {
    let (m1, s1, m2, s2) = (d.location(), d.scale(), e.location(), e.scale());
    let (v1, v2) = (s1 * s1, s2 * s2);
    let a = 1.0 / (2.0 * v2) - 1.0 / (2.0 * v1);
    let b = m1 / v1 - m2 / v2;
    let c = m2 * m2 / (2.0 * v2) - m1 * m1 / (2.0 * v1) + (s2 / s1).ln();
    let ts: Vec<f64> = if a.abs() < 1e-12 {
        if b.abs() < 1e-300 {
            Vec::new()
        } else {
            vec![-c / b]
        }
    } else {
        let disc = b * b - 4.0 * a * c;
        if disc < 0.0 {
            Vec::new()
        } else {
            let r = disc.sqrt();
            vec![(-b - r) / (2.0 * a), (-b + r) / (2.0 * a)]
        }
    };
    ts.into_iter()
        .map(f64::exp)
        .filter(|y| y.is_finite())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ks(a: &str, b: &str) -> f64 {
        ks_distance(&SizeDist::parse(a).unwrap(), &SizeDist::parse(b).unwrap()).unwrap()
    }

    fn close(got: f64, want: f64) {
        assert!((got - want).abs() < 1e-9, "{got} against {want}");
    }

    #[test]
    fn hand_worked_distances_between_lists_ranges_and_fixed_sizes() {
        // Half the draws at 64 against all of them: F differs by ½ from 64 to 127.
        close(ks("64:50%,128:50%", "64"), 0.5);
        // F_a(99) = 1 against F_b(99) = 50/100.
        close(ks("uniform:0..99", "uniform:50..149"), 0.5);
        close(ks("uniform:16..63", "uniform:16..63"), 0.0);
        close(ks("100", "200"), 1.0);
        // A list's range is a uniform: the same distribution, written twice.
        close(ks("16..63:100%", "uniform:16..63"), 0.0);
        // 16..63:60%,64:40% against uniform 16..64: at 63 the list has 0.6, the uniform
        // 48/49.
        close(ks("16..63:60%,64:40%", "uniform:16..64"), 48.0 / 49.0 - 0.6);
        // Symmetric.
        close(ks("uniform:16..64", "16..63:60%,64:40%"), 48.0 / 49.0 - 0.6);
        // Two lists: at 100 the first has 0.3, the second 0.7.
        close(ks("100:30%,200:70%", "100:70%,200:30%"), 0.4);
    }

    /// The largest gap, found by evaluating every size: what the corners and crossings must
    /// match.
    fn brute(a: &str, b: &str, upto: i64) -> f64 {
        let (a, b) = (
            Cdf::of(&SizeDist::parse(a).unwrap()).unwrap(),
            Cdf::of(&SizeDist::parse(b).unwrap()).unwrap(),
        );
        (0..=upto)
            .map(|x| (a.at(x) - b.at(x)).abs())
            .fold(0.0, f64::max)
    }

    #[test]
    fn a_lognormal_is_compared_at_every_size_in_effect() {
        for (a, b) in [
            ("lognormal:1KiB:16KiB:64KiB", "uniform:16..4KiB"),
            ("lognormal:1KiB:16KiB:64KiB", "1KiB"),
            ("lognormal:1KiB:16KiB:64KiB", "lognormal:2KiB:8KiB:64KiB"),
            ("lognormal:1KiB:16KiB:64KiB", "lognormal:1KiB:32KiB:64KiB"),
            ("lognormal:100:2000:8000", "16..200:50%,1000..3000:50%"),
            ("lognormal:100:2000:8000", "lognormal:100:2000:8000"),
        ] {
            let want = brute(a, b, 70_000);
            let got = ks(a, b);
            assert!(
                (got - want).abs() < 1e-9,
                "{a} vs {b}: {got} against {want}"
            );
        }
        close(ks("lognormal:1KiB:16KiB", "lognormal:1KiB:16KiB"), 0.0);
        // Half a lognormal's draws are below its median.
        let d = ks("lognormal:1KiB:16KiB", "1024");
        assert!((d - 0.5).abs() < 1e-3, "{d}");
    }

    #[test]
    fn a_histogram_file_is_read() {
        let dir = std::env::temp_dir().join(format!("msgbench-ks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sizes.json");
        std::fs::write(
            &path,
            r#"{"schema":"msgbench.sizes/v1","buckets":[{"from":16,"to":63,"count":600},
            {"from":64,"to":64,"count":300},{"from":1000,"to":2000,"count":100}]}"#,
        )
        .unwrap();
        let hist = format!("hist:{}", path.display());
        close(ks(&hist, "16..63:60%,64:30%,1000..2000:10%"), 0.0);
        close(ks(&hist, "16..63:50%,64:40%,1000..2000:10%"), 0.1);
        let missing = SizeDist::parse("hist:/nonexistent/sizes.json").unwrap();
        assert!(ks_distance(&missing, &SizeDist::Fixed(64))
            .unwrap_err()
            .contains("cannot read"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
