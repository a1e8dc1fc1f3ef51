//! Change points in a history of runs: where one metric's level moved, by how much, and how sure
//! we are. This module owns the statistics behind `msgbench history check`; it does no I/O and
//! knows nothing of stores, benchmarks or directions (which way is worse is the caller's call).
//!
//! Two tests, as Apache Otava (formerly Hunter) and MongoDB's signal processing use them:
//!
//! - **E-divisive means** (Matteson & James, 2014) over the whole series: the split that
//!   maximises the energy statistic Q, tested by permutation, then the same within each part,
//!   most divergent part first, until a test fails. The energy distance compares whole
//!   distributions, not only means, and assumes no shape for the noise, which for benchmark
//!   figures is skewed and occasionally bimodal. A permutation test gives an exact level
//!   without a null distribution to look up; its shuffles come from a seeded generator so a
//!   series always gets the same answer.
//! - **A window test** of the newest runs against the runs since the last change point, by
//!   Welch's t on logs ([`significance::compare`]): E-divisive cannot place a change in the
//!   last [`Settings::min_segment`] runs, and a CI gate is asked about exactly those.
//!
//! The size of a change is the ratio of the segments either side of it (geometric means), with
//! Welch's 95% interval. After the search, two clean-ups:
//!
//! - a change point whose neighbouring segments do not differ by Welch's test at the same α is
//!   merged away, weakest first;
//! - consecutive change points that move the same way are joined into one drift when a ramp
//!   explains them as well as steps do (a permutation test, see `group_drifts`): E-divisive
//!   cuts a slow drift into a staircase, and it should be reported once, not as a cascade.

use serde::Serialize;

use super::significance::{self, Change};

/// How the search runs. The defaults suit a CI history: α 1%, 199 shuffles (so the smallest
/// p-value is 0.005), parts of at least 3 runs, the newest 3 runs as the window.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The significance level of both tests.
    pub alpha: f64,
    /// Shuffles per permutation test.
    pub permutations: usize,
    /// The fewest runs a segment may hold (at least 2: the energy statistic needs pairs).
    pub min_segment: usize,
    /// The newest runs the window test judges.
    pub window: usize,
    /// Seeds the shuffles.
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            alpha: 0.01,
            permutations: 199,
            min_segment: 3,
            window: 3,
            seed: 0x6d73_6762_656e_6368,
        }
    }
}

/// One change point: the series' level is different from `index` on.
#[derive(Debug, Clone, Serialize)]
pub struct ChangePoint {
    /// The first run of the new level (an index into the series).
    pub index: usize,
    /// Where a drift ends: the first run of its last step, equal to `index` for a step. The
    /// level moved gradually over `index..=end` (see [`group_drifts`]).
    pub end: usize,
    /// The permutation test's p-value when the split was found.
    pub p_value: f64,
    /// The energy statistic Q of the split.
    pub q: f64,
    /// The segment after against the segment before (ratio, 95% interval, Welch's p).
    pub change: Change,
}

/// The newest runs against the runs since the last change point before them.
#[derive(Debug, Clone, Serialize)]
pub struct WindowTest {
    /// The first run of the window.
    pub start: usize,
    /// The first run of the baseline (the last change point before the window, or 0).
    pub base_start: usize,
    /// The window against its baseline.
    pub change: Change,
}

/// What the search found in one series.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    /// The change points, in series order.
    pub changes: Vec<ChangePoint>,
    /// The window test; `None` when the series is too short for two runs a side.
    pub window: Option<WindowTest>,
}

/// Analyses one series of per-run values, oldest first. Non-finite values are the caller's to
/// drop: they carry no level.
pub fn analyse(series: &[f64], s: &Settings) -> Analysis {
    let changes = change_points(series, s);
    let window = window_test(series, &changes, s);
    Analysis { changes, window }
}

/// The permutation test's state: its generator runs on through every test of one series, so
/// the answer depends only on the series and the seed.
struct Search {
    rng: SplitMix64,
    scratch: Vec<f64>,
    min: usize,
    permutations: usize,
    alpha: f64,
}

impl Search {
    /// The p-value of a split with statistic `q` in `seg`: the share of shuffles of `seg` whose
    /// best split is at least as divergent, counting the observed order as one of them.
    fn p(&mut self, seg: &[f64], q: f64) -> f64 {
        self.scratch.clear();
        self.scratch.extend_from_slice(seg);
        let mut at_least = 0usize;
        for _ in 0..self.permutations {
            self.rng.shuffle(&mut self.scratch);
            if best_split(&self.scratch, self.min).is_some_and(|(_, qp)| qp >= q) {
                at_least += 1;
            }
        }
        (at_least + 1) as f64 / (self.permutations + 1) as f64
    }
}

/// A part of the series not yet cut, with its best split.
struct Segment {
    start: usize,
    end: usize,
    /// The split's index within the segment.
    tau: usize,
    q: f64,
}

/// E-divisive means with a permutation test, then the merge of weak change points and the
/// joining of drifts.
pub fn change_points(series: &[f64], s: &Settings) -> Vec<ChangePoint> {
    let min = s.min_segment.max(2);
    let mut search = Search {
        rng: SplitMix64::new(s.seed),
        scratch: Vec::new(),
        min,
        permutations: s.permutations,
        alpha: s.alpha,
    };
    // Segments as [start, end), each with its best split as (index within, Q), searched once;
    // a segment too short to split is dropped.
    let mut segments: Vec<Segment> = Vec::new();
    let push = |segments: &mut Vec<Segment>, start: usize, end: usize| {
        if let Some((tau, q)) = best_split(&series[start..end], min) {
            segments.push(Segment { start, end, tau, q });
        }
    };
    push(&mut segments, 0, series.len());
    let mut found: Vec<(usize, f64, f64)> = Vec::new();
    // The most divergent split of any segment is tested next (Matteson & James's order).
    while let Some(at) =
        (0..segments.len()).max_by(|&a, &b| segments[a].q.total_cmp(&segments[b].q))
    {
        let seg = segments.swap_remove(at);
        let p = search.p(&series[seg.start..seg.end], seg.q);
        if p > s.alpha {
            break;
        }
        let split = seg.start + seg.tau;
        found.push((split, p, seg.q));
        push(&mut segments, seg.start, split);
        push(&mut segments, split, seg.end);
    }
    found.sort_by_key(|f| f.0);
    let merged = merge_weak(series, found, s.alpha);
    group_drifts(series, merged, &mut search)
}

/// Removes, weakest first, change points whose neighbouring segments Welch's test does not
/// tell apart at `alpha`, and sizes the rest against their final neighbours.
fn merge_weak(series: &[f64], mut found: Vec<(usize, f64, f64)>, alpha: f64) -> Vec<ChangePoint> {
    loop {
        let bounds = |i: usize, f: &[(usize, f64, f64)]| {
            let start = if i == 0 { 0 } else { f[i - 1].0 };
            let end = f.get(i + 1).map_or(series.len(), |n| n.0);
            (start, f[i].0, end)
        };
        let sized: Vec<Change> = (0..found.len())
            .map(|i| {
                let (a, b, c) = bounds(i, &found);
                significance::compare(&series[a..b], &series[b..c])
                    .expect("segments are non-empty and finite")
            })
            .collect();
        let weakest = sized
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.p_value.unwrap_or(1.0)))
            .filter(|(_, p)| *p >= alpha)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match weakest {
            Some((i, _)) => {
                found.remove(i);
            }
            None => {
                return found
                    .into_iter()
                    .zip(sized)
                    .map(|((index, p_value, q), change)| ChangePoint {
                        index,
                        end: index,
                        p_value,
                        q,
                        change,
                    })
                    .collect();
            }
        }
    }
}

/// Joins consecutive change points that move the same way into one drift when the runs
/// between them still slope that way: E-divisive cuts a slow drift into a staircase, and a
/// reader (or a CI gate) should hear of it once. A true staircase keeps its steps, because its
/// segments are flat ([`ramp_fits`] has the test).
///
/// Two other tests were tried first and split drifts all the same. Comparing squared errors of
/// steps and of a ramp by the F test: a cut placed where it fits best is worth far more than
/// the degree of freedom the test charges for it. Running the permutation test on what a ramp
/// leaves: the residuals of a line through a staircase are a sawtooth, alike on both sides of
/// any split, so the energy statistic misses it.
///
/// A joined change is sized by the segment after its last step against the segment before
/// its first, and its p-value is the largest of its steps', so it is no surer than its
/// weakest part.
fn group_drifts(
    series: &[f64],
    changes: Vec<ChangePoint>,
    search: &mut Search,
) -> Vec<ChangePoint> {
    let up = |c: &ChangePoint| c.change.ratio > 1.0;
    let start_of = |i: usize| if i == 0 { 0 } else { changes[i - 1].index };
    let end_of = |i: usize| changes.get(i + 1).map_or(series.len(), |n| n.index);
    let mut groups: Vec<Vec<ChangePoint>> = Vec::new();
    let mut i = 0;
    while i < changes.len() {
        // A run of change points that all move one way, [i, j).
        let mut j = i + 1;
        while j < changes.len() && up(&changes[j]) == up(&changes[i]) {
            j += 1;
        }
        let cuts: Vec<usize> = changes[i..j].iter().map(|c| c.index).collect();
        let (a, b) = (start_of(i), end_of(j - 1));
        // The whole run is tried first, as one test: trying it pair by pair would test a long
        // drift several times and split it whenever one test happened to reject.
        if j - i >= 2 && ramp_fits(&series[a..b], a, &cuts, search) {
            groups.push(changes[i..j].to_vec());
        } else {
            for k in i..j {
                let joins = k > i && {
                    let g = groups.last().expect("a group precedes k > i");
                    // The group's first change point is changes[k - g.len()].
                    let a = start_of(k - g.len());
                    let mut cuts: Vec<usize> = g.iter().map(|c| c.index).collect();
                    cuts.push(changes[k].index);
                    ramp_fits(&series[a..end_of(k)], a, &cuts, search)
                };
                match groups.last_mut() {
                    Some(g) if joins => g.push(changes[k].clone()),
                    _ => groups.push(vec![changes[k].clone()]),
                }
            }
        }
        i = j;
    }
    let mut out = Vec::with_capacity(groups.len());
    for (j, g) in groups.iter().enumerate() {
        let mut joined = g[0].clone();
        let last = &g[g.len() - 1];
        if g.len() > 1 {
            let before = if j == 0 {
                0
            } else {
                groups[j - 1][groups[j - 1].len() - 1].index
            };
            let after = groups.get(j + 1).map_or(series.len(), |n| n[0].index);
            if let Some(change) =
                significance::compare(&series[before..joined.index], &series[last.index..after])
            {
                joined.change = change;
            }
            joined.p_value = g.iter().map(|c| c.p_value).fold(0.0, f64::max);
            joined.q = g.iter().map(|c| c.q).fold(0.0, f64::max);
        }
        joined.end = last.index;
        out.push(joined);
    }
    out
}

/// Whether a ramp explains `span` (whose first run is `offset` in the series) as well as
/// steps at `cuts` (series indices, ascending, at least two) do. The ramp is the better (by
/// squared error) of a straight line through the span and a hinge (the level before the first
/// cut, a line across the cuts to the level after the last, then that level). The statistic is
/// how much the best `cuts.len()` steps (placed by least squares, anew) lower the squared
/// error below the ramp's; its null distribution comes from series made of the ramp plus its
/// own residuals shuffled, each given the same search. A drift's steps gain no more than
/// they gain on such series; a staircase's gain far more.
fn ramp_fits(span: &[f64], offset: usize, cuts: &[usize], search: &mut Search) -> bool {
    let (first, last) = (cuts[0] - offset, cuts[cuts.len() - 1] - offset);
    let (before, after) = (mean(&span[..first]), mean(&span[last..]));
    let hinge: Vec<f64> = (0..span.len())
        .map(|i| {
            if i < first {
                before
            } else if i >= last {
                after
            } else {
                before + (after - before) * (i + 1 - first) as f64 / (last + 1 - first) as f64
            }
        })
        .collect();
    let (a, b) = line(span);
    let straight: Vec<f64> = (0..span.len()).map(|i| a + b * i as f64).collect();
    let rss =
        |fit: &[f64], y: &[f64]| -> f64 { y.iter().zip(fit).map(|(y, f)| (y - f).powi(2)).sum() };
    let ramp = if rss(&hinge, span) <= rss(&straight, span) {
        hinge
    } else {
        straight
    };
    let k = cuts.len();
    let gain = |y: &[f64], fit: &[f64], min: usize| rss(fit, y) - steps_rss(y, k, min);
    let observed = gain(span, &ramp, search.min);
    let mut residuals: Vec<f64> = span.iter().zip(&ramp).map(|(y, f)| y - f).collect();
    let mut synthetic = vec![0.0; span.len()];
    let mut at_least = 0usize;
    for _ in 0..search.permutations {
        search.rng.shuffle(&mut residuals);
        for ((s, f), r) in synthetic.iter_mut().zip(&ramp).zip(&residuals) {
            *s = f + r;
        }
        // The synthetic series' own ramp, refitted as the observed one was.
        let (a, b) = line(&synthetic);
        let refit: Vec<f64> = (0..span.len()).map(|i| a + b * i as f64).collect();
        let fit = if rss(&refit, &synthetic) < rss(&ramp, &synthetic) {
            &refit
        } else {
            &ramp
        };
        if gain(&synthetic, fit, search.min) >= observed {
            at_least += 1;
        }
    }
    let p = (at_least + 1) as f64 / (search.permutations + 1) as f64;
    p > search.alpha
}

/// The least squared error of `y` cut into `k + 1` segments of at least `min` runs, each at its
/// own mean: dynamic programming over prefix sums, O(k·n²).
fn steps_rss(y: &[f64], k: usize, min: usize) -> f64 {
    let n = y.len();
    let (mut s1, mut s2) = (vec![0.0; n + 1], vec![0.0; n + 1]);
    for (i, v) in y.iter().enumerate() {
        s1[i + 1] = s1[i] + v;
        s2[i + 1] = s2[i] + v * v;
    }
    let cost = |a: usize, b: usize| {
        let (sum, m) = (s1[b] - s1[a], (b - a) as f64);
        (s2[b] - s2[a] - sum * sum / m).max(0.0)
    };
    // best[j]: the least error of y[..j] in the segments placed so far.
    let mut best: Vec<f64> = (0..=n)
        .map(|j| if j >= min { cost(0, j) } else { f64::INFINITY })
        .collect();
    for _ in 0..k {
        let next: Vec<f64> = (0..=n)
            .map(|j| {
                (min..=j.saturating_sub(min))
                    .map(|i| best[i] + cost(i, j))
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        best = next;
    }
    best[n]
}

/// The least-squares line through `y` against its index, as (intercept, slope).
fn line(y: &[f64]) -> (f64, f64) {
    let n = y.len() as f64;
    let mx = (n - 1.0) / 2.0;
    let my = mean(y);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, v) in y.iter().enumerate() {
        let dx = i as f64 - mx;
        sxy += dx * (v - my);
        sxx += dx * dx;
    }
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - b * mx, b)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The newest `window` runs against the runs since the last change point before them. A change
/// point at the window's start or one run before it makes the segment before it the baseline
/// and opens the window at it, so a step two runs ago is judged against the level it left, not
/// against itself, and no run falls between the two sides.
fn window_test(series: &[f64], changes: &[ChangePoint], s: &Settings) -> Option<WindowTest> {
    let n = series.len();
    let w = s.window.max(1);
    if n < w + 2 {
        return None;
    }
    let start = n - w;
    let before: Vec<usize> = changes
        .iter()
        .map(|c| c.end)
        .filter(|&i| i <= start)
        .collect();
    let last = before.last().copied().unwrap_or(0);
    // A change point at the window's start, or one run before it, leaves no baseline after
    // it: the baseline is the segment before it, and the window opens at it, so that no run
    // is left out of both sides (the first run at the new level would be the one missed).
    let (start, base_start, base_end) = if start - last < 2 {
        (last, before.iter().rev().nth(1).copied().unwrap_or(0), last)
    } else {
        (start, last, start)
    };
    if base_end - base_start < 2 {
        return None;
    }
    let change = significance::compare(&series[base_start..base_end], &series[start..])?;
    Some(WindowTest {
        start,
        base_start,
        change,
    })
}

/// Where the newest runs' level begins, for a window (from `start`) that moved away from its
/// baseline (from `base_start`): the first run of the window's side of the two-level fit of
/// `series[base_start..]` with the least squared error, split at or after `start`. A window
/// wider than the run of changed values starts among the old level, and the run to look at is
/// the first at the new one; ties go to the earliest.
pub fn level_start(series: &[f64], base_start: usize, start: usize) -> usize {
    let sse = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>()
    };
    let n = series.len();
    (start..n)
        .map(|k| (k, sse(&series[base_start..k]) + sse(&series[k..n])))
        .fold(None, |best: Option<(usize, f64)>, (k, e)| match best {
            Some((_, b)) if b <= e => best,
            _ => Some((k, e)),
        })
        .map_or(start, |(k, _)| k)
}

/// The split of `z` with the largest energy statistic, as (index, Q), over splits leaving at
/// least `min` values a side; `None` when `z` is too short to split.
///
/// With X = z[..τ] (m values) and Y = z[τ..] (k values), Q(τ) = mk/(m+k) · ê, where
/// ê = 2/(mk) Σ|x−y| − Σ_{i<j}|xᵢ−xⱼ| / C(m,2) − Σ_{i<j}|yᵢ−yⱼ| / C(k,2). The within-X and
/// within-Y sums are kept as running totals (adding a value adds its distances to the values
/// before it), and the cross sum is the total less both, so every split costs O(n²) in all and
/// O(n) memory: no distance matrix.
pub fn best_split(z: &[f64], min: usize) -> Option<(usize, f64)> {
    let n = z.len();
    let min = min.max(2);
    if n < 2 * min {
        return None;
    }
    // within_left[τ]: Σ over pairs of z[..τ]; within_right[τ]: Σ over pairs of z[τ..].
    let mut within_left = vec![0.0; n + 1];
    for t in 1..n {
        let add: f64 = z[..t].iter().map(|x| (x - z[t]).abs()).sum();
        within_left[t + 1] = within_left[t] + add;
    }
    let mut within_right = vec![0.0; n + 1];
    for t in (0..n.saturating_sub(1)).rev() {
        let add: f64 = z[t + 1..].iter().map(|y| (y - z[t]).abs()).sum();
        within_right[t] = within_right[t + 1] + add;
    }
    let total = within_left[n];
    let mut best: Option<(usize, f64)> = None;
    for tau in min..=n - min {
        let (m, k) = (tau as f64, (n - tau) as f64);
        let (a, b) = (within_left[tau], within_right[tau]);
        let cross = total - a - b;
        let e = 2.0 * cross / (m * k) - 2.0 * a / (m * (m - 1.0)) - 2.0 * b / (k * (k - 1.0));
        let q = m * k / (m + k) * e;
        if best.is_none_or(|(_, bq)| q > bq) {
            best = Some((tau, q));
        }
    }
    best
}

/// A small, seeded generator (Steele, Lea and Flood's SplitMix64): the shuffles must repeat
/// exactly from a seed, and need no cryptographic quality.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform value in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform index below `n` (n > 0), by Lemire's multiply-shift; its bias, below n/2⁶⁴,
    /// is far under anything a permutation test of a few hundred runs could show.
    fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Fisher–Yates.
    pub fn shuffle(&mut self, xs: &mut [f64]) {
        for i in (1..xs.len()).rev() {
            xs.swap(i, self.below(i + 1));
        }
    }
}

#[cfg(test)]
mod tests;
