//! Where a value sits on an axis: linear and logarithmic scales, and ticks on 1-2-5 steps (or
//! powers of ten over many decades). Pure arithmetic with no drawing in it, so the tick rules
//! are tested on numbers alone.

/// Maps data values onto 0..1 of an axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear {
        lo: f64,
        hi: f64,
    },
    /// Both ends above zero; values at or below `lo` sit on the axis.
    Log {
        lo: f64,
        hi: f64,
    },
}

impl Scale {
    pub fn frac(self, v: f64) -> f64 {
        match self {
            Scale::Linear { lo, hi } => {
                if hi > lo {
                    (v - lo) / (hi - lo)
                } else {
                    0.5
                }
            }
            Scale::Log { lo, hi } => {
                let (l, h) = (lo.log10(), hi.log10());
                if h > l {
                    (v.max(lo).log10() - l) / (h - l)
                } else {
                    0.5
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub at: f64,
    pub label: String,
}

#[derive(Debug, Clone)]
pub struct Axis {
    pub scale: Scale,
    pub ticks: Vec<Tick>,
    pub label: String,
}

impl Axis {
    /// A linear axis covering `lo..=hi`, widened to whole 1-2-5 steps.
    pub fn linear(lo: f64, hi: f64, label: &str, fmt: impl Fn(f64) -> String) -> Self {
        let (lo, hi, at) = linear_ticks(lo, hi, 5);
        Self {
            scale: Scale::Linear { lo, hi },
            ticks: at
                .into_iter()
                .map(|a| Tick {
                    at: a,
                    label: fmt(a),
                })
                .collect(),
            label: label.into(),
        }
    }

    /// A linear axis over exactly `lo..=hi`, ticked on the 1-2-5 steps inside it.
    pub fn linear_exact(lo: f64, hi: f64, label: &str, fmt: impl Fn(f64) -> String) -> Self {
        let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
        let (_, _, at) = linear_ticks(lo, hi, 5);
        let inside = at
            .into_iter()
            .filter(|a| *a >= lo - 1e-9 && *a <= hi + 1e-9);
        Self {
            scale: Scale::Linear { lo, hi },
            ticks: inside
                .map(|a| Tick {
                    at: a,
                    label: fmt(a),
                })
                .collect(),
            label: label.into(),
        }
    }

    /// A logarithmic axis covering `lo..=hi`, widened to the 1-2-5 values around them.
    pub fn log(lo: f64, hi: f64, label: &str, fmt: impl Fn(f64) -> String) -> Self {
        let (lo, hi, at) = log_ticks(lo, hi);
        Self {
            scale: Scale::Log { lo, hi },
            ticks: at
                .into_iter()
                .map(|a| Tick {
                    at: a,
                    label: fmt(a),
                })
                .collect(),
            label: label.into(),
        }
    }
}

/// The 1-2-5 step that cuts `span` into about `target` parts.
pub fn nice_step(span: f64, target: usize) -> f64 {
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Ticks for a linear axis: the domain widened to whole steps, and a tick on each step.
/// A zero-width range (one value, or all zeros) gets a unit of room so it still draws.
pub fn linear_ticks(lo: f64, hi: f64, target: usize) -> (f64, f64, Vec<f64>) {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else if lo == 0.0 {
        (0.0, 1.0)
    } else {
        (lo.min(0.0), lo.abs().max(hi.abs()))
    };
    let step = nice_step(hi - lo, target);
    // Rounding guards: 0.30000000000000004 / 0.1 must not become a fourth step.
    let first = (lo / step + 1e-9).floor();
    let last = (hi / step - 1e-9).ceil();
    let at: Vec<f64> = (0..=(last - first) as usize)
        .map(|i| clean((first + i as f64) * step))
        .collect();
    (clean(first * step), clean(last * step), at)
}

/// Drops float noise from a tick value (0.30000000000000004 → 0.3).
fn clean(v: f64) -> f64 {
    if v == 0.0 {
        return 0.0;
    }
    let mag = 10f64.powi(v.abs().log10().floor() as i32 - 9);
    (v / mag).round() * mag
}

/// Ticks for a logarithmic axis: the domain runs from the 1-2-5 value at or below `lo` to
/// the one at or above `hi`, with a tick on each 1-2-5 value in it, or on each power of
/// ten when that would be more than ten ticks (a range over several decades).
pub fn log_ticks(lo: f64, hi: f64) -> (f64, f64, Vec<f64>) {
    let hi = if hi > 0.0 { hi } else { 1.0 };
    let lo = if lo > 0.0 && lo <= hi { lo } else { hi / 10.0 };
    let seq = |k: i32| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(k));
    let (k_lo, k_hi) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let all: Vec<f64> = (k_lo..=k_hi).flat_map(seq).collect();
    let eps = 1e-9;
    let mut d_lo = *all
        .iter()
        .rev()
        .find(|v| **v <= lo * (1.0 + eps))
        .unwrap_or(&all[0]);
    let mut d_hi = *all
        .iter()
        .find(|v| **v >= hi * (1.0 - eps))
        .unwrap_or(&all[all.len() - 1]);
    if d_hi <= d_lo {
        // One value: a step of room either side.
        d_lo = all
            .iter()
            .rev()
            .find(|v| **v < d_lo)
            .copied()
            .unwrap_or(d_lo / 2.0);
        d_hi = all
            .iter()
            .find(|v| **v > d_hi)
            .copied()
            .unwrap_or(d_hi * 2.0);
    }
    let inside: Vec<f64> = all
        .iter()
        .copied()
        .filter(|v| *v >= d_lo * (1.0 - eps) && *v <= d_hi * (1.0 + eps))
        .collect();
    let ticks = if inside.len() > 10 {
        let decades: Vec<f64> = inside
            .iter()
            .copied()
            .filter(|v| {
                let m = v / 10f64.powf(v.log10().floor());
                (m - 1.0).abs() < 1e-6
            })
            .collect();
        // Very wide ranges: every other power of ten.
        if decades.len() > 10 {
            decades.into_iter().step_by(2).collect()
        } else {
            decades
        }
    } else {
        inside
    };
    (d_lo, d_hi, ticks)
}
