//! Numbers as people read them: latency in ns/µs/ms/s, rates and counts with k/M/G, to a
//! few significant digits. Tables keep trailing zeros (they carry the precision); tick
//! labels drop them.

/// `v` to `digits` significant digits; `trim` drops trailing zeros after the point.
pub fn sig(v: f64, digits: i32, trim: bool) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor() as i32;
    let mut decimals = (digits - 1 - mag).max(0) as usize;
    let mut s = format!("{v:.decimals$}");
    // Rounding can carry into a new digit (0.99996 → 1.000): one decimal fewer then.
    if decimals > 0
        && s.parse::<f64>()
            .is_ok_and(|r| r.abs() >= 10f64.powi(mag + 1))
    {
        decimals -= 1;
        s = format!("{v:.decimals$}");
    }
    if trim && s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    s
}

/// `v` in the largest of `scales` that keeps it at 1 or more, to 3 significant digits. A
/// value that rounds up to 1000 of a unit moves to the next one (999.96 µs is 1.00 ms).
fn scaled(v: f64, scales: &[(f64, &str)], trim: bool, sep: &str) -> String {
    let a = v.abs();
    let mut pick = scales[0];
    for s in scales {
        if a >= s.0 {
            pick = *s;
        }
    }
    let mut text = sig(v / pick.0, 3, trim);
    if text
        .trim_start_matches('-')
        .parse::<f64>()
        .is_ok_and(|x| x >= 1000.0)
    {
        if let Some(next) = scales.iter().find(|s| s.0 > pick.0) {
            pick = *next;
            text = sig(v / pick.0, 3, trim);
        }
    }
    if pick.1.is_empty() {
        text
    } else {
        format!("{text}{sep}{}", pick.1)
    }
}

/// A duration given in nanoseconds: `850 ns`, `54.3 µs`, `2.29 ms`, `1.20 s`.
pub fn ns(v: f64, trim: bool) -> String {
    if v == 0.0 {
        return "0".into();
    }
    scaled(
        v,
        &[(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")],
        trim,
        "\u{a0}",
    )
}

/// A rate or large count: `850`, `359k`, `2.10M`.
pub fn si(v: f64, trim: bool) -> String {
    scaled(
        v,
        &[(1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G")],
        trim,
        "",
    )
}

/// A count with thousands separated: `1,200,000`; fractions to 3 significant digits.
pub fn count(v: f64) -> String {
    if !v.is_finite() || v.fract() != 0.0 || v.abs() >= 1e15 {
        return sig(v, 3, true);
    }
    let digits = format!("{}", v.abs() as u64);
    let mut o = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            o.push(',');
        }
        o.push(c);
    }
    if v < 0.0 {
        format!("-{o}")
    } else {
        o
    }
}

/// A duration given in seconds, for parameters: `3 s`, `0.5 s`.
pub fn secs(v: f64) -> String {
    format!("{}\u{a0}s", sig(v, 3, true))
}
