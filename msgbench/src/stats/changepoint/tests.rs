//! Tests of the change-point search on planted data: a step found where it was planted, false
//! alarms on pure noise near α, a slow drift reported once; and the energy statistic's running
//! sums checked against its definition. Every series comes from a fixed seed.

use super::*;

/// `n` values of `level(i)` times (1 + cv·N(0,1)), by Box–Muller from a seeded generator.
fn series(seed: u64, n: usize, cv: f64, level: impl Fn(usize) -> f64) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|i| {
            let u1 = 1.0 - rng.next_f64();
            let u2 = rng.next_f64();
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            level(i) * (1.0 + cv * z)
        })
        .collect()
}

/// Q(τ) straight from its definition, with binomial pair counts.
fn q_by_definition(z: &[f64], tau: usize) -> f64 {
    let (x, y) = z.split_at(tau);
    let (m, k) = (x.len() as f64, y.len() as f64);
    let cross: f64 = x
        .iter()
        .flat_map(|a| y.iter().map(move |b| (a - b).abs()))
        .sum();
    let pairs = |v: &[f64]| -> f64 {
        let mut s = 0.0;
        for i in 0..v.len() {
            for j in i + 1..v.len() {
                s += (v[i] - v[j]).abs();
            }
        }
        s
    };
    let e =
        2.0 * cross / (m * k) - pairs(x) / (m * (m - 1.0) / 2.0) - pairs(y) / (k * (k - 1.0) / 2.0);
    m * k / (m + k) * e
}

#[test]
fn the_running_sums_give_the_statistic_of_its_definition() {
    let z = series(7, 23, 0.1, |i| if i < 9 { 100.0 } else { 120.0 });
    let (tau, q) = best_split(&z, 2).unwrap();
    let brute = (2..=21)
        .map(|t| (t, q_by_definition(&z, t)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    assert_eq!(tau, brute.0);
    assert!(
        (q - brute.1).abs() <= 1e-9 * brute.1.abs(),
        "{q} vs {}",
        brute.1
    );
    assert_eq!(tau, 9);
}

#[test]
fn a_series_too_short_to_split_has_no_split() {
    assert!(best_split(&[1.0, 2.0, 3.0, 4.0, 5.0], 3).is_none());
    assert!(best_split(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3).is_some());
}

#[test]
fn a_constant_series_has_no_change_point() {
    let a = analyse(&[5.0; 40], &Settings::default());
    assert!(a.changes.is_empty());
    let w = a.window.unwrap();
    assert_eq!(w.change.ratio, 1.0);
}

#[test]
fn the_same_seed_gives_the_same_answer() {
    let z = series(11, 50, 0.05, |i| if i < 25 { 100.0 } else { 106.0 });
    let s = Settings::default();
    let (a, b) = (change_points(&z, &s), change_points(&z, &s));
    let key = |v: &[ChangePoint]| v.iter().map(|c| (c.index, c.p_value)).collect::<Vec<_>>();
    assert_eq!(key(&a), key(&b));
}

/// The first figure: a 10% step in noise of 5% CV, found within ±1 run of where it was
/// planted, over 100 series of 60 runs with the step at a different place in each.
///
/// A step of two standard deviations cannot be placed within ±1 run every time by any method:
/// a simulation of the least-squares split (the maximum-likelihood place for a step in normal
/// noise) on the same design placed it within ±1 run in about 82% of series. The band asserted
/// is 80%; the figure is printed.
#[test]
fn a_ten_percent_step_in_five_percent_noise_is_found_within_one_run() {
    let s = Settings {
        alpha: 0.05,
        ..Settings::default()
    };
    let trials = 100;
    let (mut near, mut alone, mut missed) = (0, 0, 0);
    let mut misses = Vec::new();
    for t in 0..trials {
        let at = 15 + (t * 7) % 30;
        let z = series(1000 + t as u64, 60, 0.05, |i| {
            if i < at {
                100.0
            } else {
                110.0
            }
        });
        let found = change_points(&z, &s);
        let hit = found.iter().any(|c| c.index.abs_diff(at) <= 1);
        near += usize::from(hit);
        alone += usize::from(hit && found.len() == 1);
        missed += usize::from(found.is_empty());
        if !hit {
            misses.push((at, found.iter().map(|c| c.index).collect::<Vec<_>>()));
        }
    }
    println!(
        "10% step, 5% CV, 60 runs, {trials} series: within ±1 run in {near}, \
         of which alone {alone}; no change found in {missed}; misses (planted, found): {misses:?}"
    );
    assert!(near >= trials * 8 / 10, "{near} of {trials}: {misses:?}");
    assert_eq!(missed, 0, "a 10% step went unseen");
}

/// Two real steps (+10% at run 25, +10% more at run 55) in 2% noise stay two changes: the
/// joining of drifts does not swallow a staircase.
#[test]
fn a_staircase_keeps_its_steps() {
    let s = Settings::default();
    for t in 0..10 {
        let z = series(7000 + t, 80, 0.02, |i| match i {
            0..25 => 100.0,
            25..55 => 110.0,
            _ => 121.0,
        });
        let found: Vec<usize> = change_points(&z, &s).iter().map(|c| c.index).collect();
        assert_eq!(found.len(), 2, "series {t}: {found:?}");
        assert!(
            found[0].abs_diff(25) <= 1 && found[1].abs_diff(55) <= 1,
            "{found:?}"
        );
    }
}

/// The second figure: 100 series of pure noise; the share with any change point (or a
/// significant window) should be about α, and is asserted to be at most 3α.
#[test]
fn pure_noise_gives_false_alarms_at_about_alpha() {
    let alpha = 0.05;
    let s = Settings {
        alpha,
        ..Settings::default()
    };
    let trials = 100;
    let (mut cp_alarms, mut window_alarms) = (0, 0);
    for t in 0..trials {
        let z = series(5000 + t, 60, 0.05, |_| 100.0);
        let a = analyse(&z, &s);
        cp_alarms += usize::from(!a.changes.is_empty());
        window_alarms += usize::from(a.window.is_some_and(|w| w.change.significant(alpha)));
    }
    let (cp_rate, w_rate) = (
        cp_alarms as f64 / trials as f64,
        window_alarms as f64 / trials as f64,
    );
    println!("pure noise, α = {alpha}, {trials} series of 60: change-point false alarms {cp_rate:.2}, window false alarms {w_rate:.2}");
    assert!(cp_rate <= 3.0 * alpha, "change points: {cp_rate}");
    assert!(w_rate <= 3.0 * alpha, "window: {w_rate}");
}

/// The third figure: a slow drift of 15% over 80 runs in 2% noise is one change, not a
/// cascade of steps. The test that joins a staircase into a drift rejects a true ramp at α by
/// design, so now and then a drift is told as two changes; the band asserted is at least 18
/// of 20 series told as one and none as more than two, and the counts are printed.
#[test]
fn a_slow_drift_is_reported_once() {
    let s = Settings::default();
    let trials = 20;
    let mut counts = Vec::new();
    for t in 0..trials {
        let z = series(9000 + t, 80, 0.02, |i| {
            100.0 * (1.0 + 0.15 * i as f64 / 79.0)
        });
        counts.push(change_points(&z, &s).len());
    }
    let once = counts.iter().filter(|&&c| c == 1).count();
    println!("15% drift over 80 runs, 2% CV, α = {}: told as one change in {once} of {trials}; changes per series {counts:?}", s.alpha);
    assert!(
        once >= 18 && counts.iter().all(|&c| (1..=2).contains(&c)),
        "{counts:?}"
    );
}

#[test]
fn the_window_is_judged_against_the_runs_since_the_last_change_point() {
    // Level 100, a step to 120 at 20, then the newest 3 runs back down to 100.
    let mut z = series(3, 40, 0.01, |i| if i < 20 { 100.0 } else { 120.0 });
    z.extend(series(4, 3, 0.01, |_| 100.0));
    let a = analyse(&z, &Settings::default());
    assert!(
        a.changes.iter().any(|c| c.index.abs_diff(20) <= 1),
        "{:?}",
        a.changes
    );
    let w = a.window.unwrap();
    assert_eq!(w.start, 40);
    assert!(w.base_start.abs_diff(20) <= 1);
    assert!(
        (w.change.ratio - 100.0 / 120.0).abs() < 0.02,
        "{}",
        w.change.ratio
    );
    assert!(w.change.significant(0.01));
}

#[test]
fn the_shuffle_is_a_permutation() {
    let mut rng = SplitMix64::new(1);
    let mut v: Vec<f64> = (0..100).map(f64::from).collect();
    rng.shuffle(&mut v);
    assert_ne!(v, (0..100).map(f64::from).collect::<Vec<_>>());
    v.sort_by(f64::total_cmp);
    assert_eq!(v, (0..100).map(f64::from).collect::<Vec<_>>());
}

#[test]
fn the_new_level_starts_where_the_window_splits_best_from_its_baseline() {
    let v = [
        100.0, 101.0, 99.0, 100.0, 100.5, 99.5, 100.0, 38.0, 38.5, 37.5,
    ];
    // A window from run 6 holds one run of the old level: the new one starts at run 7.
    assert_eq!(level_start(&v, 0, 6), 7);
    assert_eq!(level_start(&v, 0, 7), 7);
    // A window wholly at the new level starts it.
    assert_eq!(level_start(&v, 0, 8), 8);
}
