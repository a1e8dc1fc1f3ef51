//! Significance of a change between two sets of repeated runs: the NEW/BASE ratio of one metric,
//! its 95% confidence interval, and whether the change is more than run-to-run noise. This module
//! owns the statistics behind `msgbench diff`; the distributions they rest on (Student's t, and
//! the incomplete gamma function behind the normal tail) come from `statrs`.
//!
//! The verdict comes from Welch's t-test on the logarithms of the per-run values:
//!
//! - Users read a change as a ratio ("12% faster"), and a difference of mean logs is exactly the
//!   log of a ratio (of geometric means), so the interval comes out as a ratio without a
//!   delta-method or Fieller approximation.
//! - Throughput and latency spread multiplicatively (a noisy neighbour costs a fraction of the
//!   rate, not a fixed number of messages), so their logs are closer to normal with a variance
//!   that does not grow with the level.
//! - Welch, not Student, because a change often alters the spread as well as the level.
//!
//! The Mann–Whitney U test is reported alongside for readers who distrust normality, but it does
//! not decide anything: with 3 runs a side its smallest two-sided p-value is 2/C(6,3) = 0.1, so it
//! could never flag a change at 0.05 however large, and `--runs 3` is the common case.
//!
//! Values that are zero or negative (a `lost` count of 0) have no logarithm; for those metrics the
//! test falls back to Welch on raw values and an approximate ratio interval.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::function::gamma::{gamma_lr, gamma_ur};

/// Two-sided confidence level of every interval reported here.
const CONFIDENCE: f64 = 0.95;

/// The comparison of one metric between two samples of per-run values.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// Point estimate of NEW / BASE: the ratio of geometric means with the log method, the ratio
    /// of arithmetic means otherwise. When the BASE mean is 0 it is 1.0 if the NEW mean is 0 too
    /// and `f64::INFINITY` otherwise (which `serde_json` writes as `null`).
    pub ratio: f64,
    /// Lower end of the 95% confidence interval of the ratio; `None` when either side has fewer
    /// than 2 runs, and with the raw method when the BASE mean is not positive (a ratio to zero
    /// or to a negative level has no useful interval) unless both sides are constant, where the
    /// interval is the point `[ratio, ratio]` whenever the ratio is finite.
    pub ci_low: Option<f64>,
    /// Upper end of the interval; `None` exactly when `ci_low` is.
    pub ci_high: Option<f64>,
    /// Two-sided p-value of Welch's t-test (on ln values when every value is > 0, else on raw
    /// values); `None` with fewer than 2 runs on either side.
    pub p_value: Option<f64>,
    /// Two-sided p-value of the Mann–Whitney U test: exact when n+m <= 20 and no value occurs
    /// twice in the pooled sample, otherwise the normal approximation with tie and continuity
    /// corrections. `None` when both sides have a single run (the test has nothing to rank).
    pub mann_whitney_p: Option<f64>,
    /// `"welch-log"`, `"welch"` (raw values, because some value is <= 0) or `"single-run"`.
    pub method: &'static str,
    /// The statistic `ratio` divides, one per side: `"geometric_mean"` with the log method,
    /// `"mean"` otherwise (a single run's mean is its value). Shown beside the ratio, it lets a
    /// reader check the ratio by dividing the two; the median would not, since a skewed side's
    /// median and geometric mean can lie on opposite sides of the other side's.
    pub centre: &'static str,
    /// BASE's centre (see `centre`).
    pub base_centre: f64,
    /// NEW's centre; `ratio` is `new_centre / base_centre` to within rounding.
    pub new_centre: f64,
    pub n_base: usize,
    pub n_new: usize,
}

impl Change {
    /// Whether the Welch test rejects "no change" at level `alpha` (e.g. 0.05). A comparison
    /// without a p-value (single runs) is never significant: one run cannot tell a change from
    /// noise.
    pub fn significant(&self, alpha: f64) -> bool {
        self.p_value.is_some_and(|p| p < alpha)
    }
}

/// Compares per-run values of one metric, NEW against BASE. `None` when either sample is empty
/// or holds a non-finite value: a NaN or infinite run is a broken measurement, and any figure
/// computed through it would look like a result.
///
/// The log method is used only when every value of both samples is > 0, so one metric is always
/// compared the same way on both sides.
pub fn compare(base: &[f64], new: &[f64]) -> Option<Change> {
    if base.is_empty() || new.is_empty() || !base.iter().chain(new).all(|v| v.is_finite()) {
        return None;
    }
    let mann_whitney_p = mann_whitney(base, new);
    let (n_base, n_new) = (base.len(), new.len());
    let change = |ratio, ci: Option<(f64, f64)>, p_value, method, centres: (f64, f64)| Change {
        ratio,
        ci_low: ci.map(|c| c.0),
        ci_high: ci.map(|c| c.1),
        p_value,
        mann_whitney_p,
        method,
        centre: if method == "welch-log" {
            "geometric_mean"
        } else {
            "mean"
        },
        base_centre: centres.0,
        new_centre: centres.1,
        n_base,
        n_new,
    };

    if n_base < 2 || n_new < 2 {
        let (b, n) = (mean(base), mean(new));
        return Some(change(
            ratio_of_means(b, n),
            None,
            None,
            "single-run",
            (b, n),
        ));
    }

    if base.iter().chain(new).all(|&v| v > 0.0) {
        let ln_base: Vec<f64> = base.iter().map(|v| v.ln()).collect();
        let ln_new: Vec<f64> = new.iter().map(|v| v.ln()).collect();
        let w = welch(&ln_base, &ln_new);
        // Logs are bounded by about ±745, so rescaling to original units cannot overflow.
        let d = w.diff * w.scale;
        let hw = w.half_width * w.scale;
        let ratio = d.exp();
        let ci = ((d - hw).exp(), (d + hw).exp());
        // A geometric mean lies between its sample's extremes, so neither can overflow.
        let centres = (mean(&ln_base).exp(), mean(&ln_new).exp());
        return Some(change(ratio, Some(ci), Some(w.p), "welch-log", centres));
    }

    let w = welch(base, new);
    // Both means are in the same scaled units, so their ratio needs no rescaling.
    let ratio = ratio_of_means(w.mean_x, w.mean_y);
    let centres = (w.mean_x * w.scale, w.mean_y * w.scale);
    let ci = if w.half_width == 0.0 && ratio.is_finite() {
        // Both sides constant: the difference is known exactly, including a BASE of 0 vs 0.
        Some((ratio, ratio))
    } else if w.mean_x > 0.0 {
        // Dividing the interval of the difference by the BASE mean ignores BASE's own
        // uncertainty in the denominator (what Fieller's theorem would add); it is close when
        // the BASE mean is far from 0 relative to its standard error, and counts like `lost` are
        // read for direction, not for the third digit of a ratio.
        Some((
            (w.diff - w.half_width) / w.mean_x + 1.0,
            (w.diff + w.half_width) / w.mean_x + 1.0,
        ))
    } else {
        None
    };
    Some(change(ratio, ci, Some(w.p), "welch", centres))
}

/// Median of a sample (mean of the middle two for an even count); NaN for an empty sample.
/// Callers pass finite values; a NaN would sort last and be taken as the largest value.
/// The `p` quantile of Student's t with `df` degrees of freedom.
pub fn t_quantile(df: f64, p: f64) -> f64 {
    students_t(df).inverse_cdf(p)
}

pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        // Halving each term first cannot overflow for values near f64::MAX.
        v[mid - 1] / 2.0 + v[mid] / 2.0
    }
}

/// Median absolute deviation around the median, unscaled (no 1.4826 factor: it is shown as a
/// spread next to the median, not used as an estimate of a normal sigma). NaN for an empty
/// sample.
pub fn mad(xs: &[f64]) -> f64 {
    let m = median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// Divides before summing so that values near f64::MAX cannot overflow the sum.
fn mean(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    xs.iter().map(|v| v / n).sum()
}

/// NEW/BASE with the zero-BASE convention documented on [`Change::ratio`]. A negative BASE mean
/// (only possible for a metric that can go negative) is divided through as is.
fn ratio_of_means(base: f64, new: f64) -> f64 {
    if base == 0.0 {
        if new == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        new / base
    }
}

/// Welch's test of `y` against `x`, with means, difference and interval half-width in units of
/// `scale`. Scaling by the largest magnitude keeps sums from overflowing near f64::MAX and squared
/// deviations from underflowing for tiny values; t, df and p do not depend on the scale.
struct Welch {
    scale: f64,
    mean_x: f64,
    mean_y: f64,
    /// mean(y) - mean(x), scaled.
    diff: f64,
    /// Half-width of the 95% interval of `diff`, scaled; 0 when both sides are constant.
    half_width: f64,
    p: f64,
}

/// Needs at least 2 finite values on each side.
fn welch(x: &[f64], y: &[f64]) -> Welch {
    let max = x.iter().chain(y).fold(0.0_f64, |m, v| m.max(v.abs()));
    let scale = if max > 0.0 { max } else { 1.0 };
    let (mx, vx) = mean_var(x, scale);
    let (my, vy) = mean_var(y, scale);
    let diff = my - mx;
    let (nx, ny) = (x.len() as f64, y.len() as f64);
    let (ex, ey) = (vx / nx, vy / ny);
    let se2 = ex + ey;
    let result = |half_width, p| Welch {
        scale,
        mean_x: mx,
        mean_y: my,
        diff,
        half_width,
        p,
    };
    if se2 == 0.0 {
        // Two constant samples: the difference is known without error, so it is either
        // certainly zero or certainly not.
        return result(0.0, if diff == 0.0 { 1.0 } else { 0.0 });
    }
    // Welch–Satterthwaite written with each side's share of the variance, so neither se⁴ nor
    // its denominator can underflow; a constant side has share 0 and df falls to the other
    // side's n-1, as it should.
    let (sx, sy) = (ex / se2, ey / se2);
    let df = 1.0 / (sx * sx / (nx - 1.0) + sy * sy / (ny - 1.0));
    let df = if df.is_finite() {
        df.clamp(1.0, nx + ny - 2.0)
    } else {
        (nx.min(ny) - 1.0).max(1.0)
    };
    let se = se2.sqrt();
    let t = diff / se;
    let t_dist = students_t(df);
    let p = (2.0 * t_dist.sf(t.abs())).min(1.0);
    let q = t_dist.inverse_cdf(0.5 + CONFIDENCE / 2.0);
    result(q * se, p)
}

/// Mean and sample variance (n-1) of `xs / scale`. A constant sample gets exactly its value and
/// exactly 0: a summed mean of e.g. three 0.1s is off by an ulp, which would make two constant
/// samples look noisy and turn "certainly different" into "very probably different".
fn mean_var(xs: &[f64], scale: f64) -> (f64, f64) {
    if xs.iter().all(|&v| v == xs[0]) {
        return (xs[0] / scale, 0.0);
    }
    let n = xs.len() as f64;
    let m = xs.iter().map(|v| v / scale).sum::<f64>() / n;
    let ss = xs.iter().map(|v| (v / scale - m).powi(2)).sum::<f64>();
    (m, ss / (n - 1.0))
}

// ---------------------------------------------------------------------------------------------
// Mann–Whitney U
//
// Computed here rather than with `statrs::stats_tests::mannwhitneyu` (statrs 0.19.1): its exact
// two-sided p is wrong whenever the first sample is not the larger one (3 vs 3 fully separated
// gives 1.0, not 0.1), and its normal approximation takes 1 - Φ(z), which loses the small tail.
// ---------------------------------------------------------------------------------------------

/// Pooled size up to which the exact null distribution is enumerated; beyond it the normal
/// approximation is within a few percent of the exact p in the tail that matters.
const MW_EXACT_MAX: usize = 20;

/// Two-sided Mann–Whitney p-value of `new` against `base`; `None` when a side is empty or both
/// sides have one value.
fn mann_whitney(base: &[f64], new: &[f64]) -> Option<f64> {
    let (m, n) = (base.len(), new.len());
    if m == 0 || n == 0 || (m == 1 && n == 1) {
        return None;
    }
    // U of NEW: pairs where NEW wins, ties counting a half. Doubled to stay in integers.
    let mut u2: u64 = 0;
    for &y in new {
        for &x in base {
            u2 += match y.partial_cmp(&x) {
                Some(std::cmp::Ordering::Greater) => 2,
                Some(std::cmp::Ordering::Equal) => 1,
                _ => 0,
            };
        }
    }
    let mut pooled: Vec<f64> = base.iter().chain(new).copied().collect();
    pooled.sort_by(f64::total_cmp);
    let tie_sizes: Vec<u64> = pooled
        .chunk_by(|a, b| a == b)
        .map(|g| g.len() as u64)
        .filter(|&t| t > 1)
        .collect();

    if m + n <= MW_EXACT_MAX && tie_sizes.is_empty() {
        return Some(mann_whitney_exact(m, n, u2 / 2));
    }

    let (mf, nf) = (m as f64, n as f64);
    let total = mf + nf;
    let mu = mf * nf / 2.0;
    let tie_term: f64 = tie_sizes
        .iter()
        .map(|&t| {
            let t = t as f64;
            t * t * t - t
        })
        .sum();
    let var = mf * nf / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    if var <= 0.0 {
        // Every value equal: no ordering evidence at all.
        return Some(1.0);
    }
    let u = u2 as f64 / 2.0;
    let z = ((u - mu).abs() - 0.5).max(0.0) / var.sqrt();
    // Φ(-z) rather than 1 - Φ(z): the small tail is what matters and subtraction would lose it.
    Some((2.0 * normal_cdf(-z)).min(1.0))
}

/// Exact two-sided p of U = `u` for samples of sizes `m` and `n` without ties.
fn mann_whitney_exact(m: usize, n: usize, u: u64) -> f64 {
    let counts = u_distribution(m, n);
    let total: u64 = counts.iter().sum();
    let u = u as usize;
    let le: u64 = counts[..=u].iter().sum();
    let ge: u64 = counts[u..].iter().sum();
    let tail = le.min(ge) as f64 / total as f64;
    (2.0 * tail).min(1.0)
}

/// Number of orderings of `m` BASE and `n` NEW values giving each U in 0..=m·n. The largest
/// value of the pool is either NEW (beating all of BASE, adding m to U) or BASE (adding nothing),
/// hence count(i, j, u) = count(i, j-1, u-i) + count(i-1, j, u) for i BASE and j NEW values. The
/// counts sum to C(m+n, n), at most C(20, 10) here, far inside u64.
fn u_distribution(m: usize, n: usize) -> Vec<u64> {
    // table[i][j] is the distribution for i BASE and j NEW values.
    let mut table: Vec<Vec<Vec<u64>>> = vec![vec![Vec::new(); n + 1]; m + 1];
    for i in 0..=m {
        for j in 0..=n {
            if i == 0 || j == 0 {
                table[i][j] = vec![1];
                continue;
            }
            let mut dist = vec![0u64; i * j + 1];
            for (u, &c) in table[i][j - 1].iter().enumerate() {
                dist[u + i] += c;
            }
            for (u, &c) in table[i - 1][j].iter().enumerate() {
                dist[u] += c;
            }
            table[i][j] = dist;
        }
    }
    std::mem::take(&mut table[m][n])
}

// ---------------------------------------------------------------------------------------------
// Distributions
// ---------------------------------------------------------------------------------------------

/// Student's t with `df` degrees of freedom, standard location and scale. Callers pass a finite
/// df >= 1 (Welch's df is clamped to that), which `StudentsT::new` always accepts. Its
/// `inverse_cdf` is within about 1e-12 of the exact quantile up to a few thousand df but drifts
/// beyond (3e-7 relative at 3e4 df, 6e-5 at 1e6); Welch's df is at most n+m-2, and `--runs`
/// stops at 1000 a side.
fn students_t(df: f64) -> StudentsT {
    StudentsT::new(0.0, 1.0, df).expect("Student's t needs a finite df > 0")
}

/// Complementary error function, as Q(1/2, x²) for x >= 0 and 1 + P(1/2, x²) below. Not
/// `statrs::function::erf::erfc`: up to statrs 0.19.1 its interval constants carry only 10
/// digits, so it (and `Normal::cdf`, built on it) is off by about 1e-10 relative, while the
/// regularized incomplete gamma functions are good to about 1e-14 far into the tail.
fn erfc(x: f64) -> f64 {
    let x2 = x * x;
    // statrs panics on 0 and infinity; both ends are known exactly.
    if x2 == 0.0 {
        return 1.0;
    }
    if x2.is_infinite() {
        return if x > 0.0 { 0.0 } else { 2.0 };
    }
    if x > 0.0 {
        gamma_ur(0.5, x2)
    } else {
        1.0 + gamma_lr(0.5, x2)
    }
}

/// Standard normal CDF Φ(z).
fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests;
