//! Numbers as people read them, one way for every human-facing output (text, Markdown, diff,
//! compare, the live line, the HTML report's tables): thousands grouped, durations in the
//! largest unit that keeps them at 1 or more with a fixed number of decimals per unit, bytes in
//! binary units. Chart axes alone trim their tick labels to significant figures.

/// 850 ns, 45.7 µs, 1.26 ms, 1.50 s: no decimals for ns, one for µs, two for ms and s, so a
/// column of figures in one unit lines up. A value that rounds up to 1000 of a unit moves to
/// the next (999_960 ns is 1.00 ms, not 1000.0 µs).
pub fn duration_ns(ns: f64) -> String {
    duration_with(ns, " ", 0)
}

/// As [`duration_ns`] with `extra` more decimals than the unit's own (`251.04 µs` for one):
/// for figures whose ratio a reader is meant to work out from them, as `diff` prints.
pub fn duration_ns_finer(ns: f64, extra: usize) -> String {
    duration_with(ns, " ", extra)
}

fn duration_with(ns: f64, sep: &str, extra: usize) -> String {
    const STEPS: [(f64, &str, usize); 4] = [
        (1.0, "ns", 0),
        (1e3, "µs", 1),
        (1e6, "ms", 2),
        (1e9, "s", 2),
    ];
    let a = ns.abs();
    let mut k = STEPS.iter().rposition(|s| a >= s.0).unwrap_or(0);
    loop {
        let (per, unit, decimals) = STEPS[k];
        let decimals = decimals + extra;
        let text = format!("{:.decimals$}", ns / per);
        let carried = text
            .trim_start_matches('-')
            .parse::<f64>()
            .is_ok_and(|v| v >= 1000.0);
        if carried && k + 1 < STEPS.len() {
            k += 1;
            continue;
        }
        return format!("{text}{sep}{unit}");
    }
}

pub fn duration_ns_signed(ns: i64) -> String {
    let s = duration_ns(ns.unsigned_abs() as f64);
    if ns < 0 {
        format!("-{s}")
    } else {
        s
    }
}

/// 1234567 -> "1,234,567".
pub fn group(n: u64) -> String {
    group_digits(&n.to_string())
}

/// A string of decimal digits with a comma before each group of three from the right.
fn group_digits(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A count with its noun: "1 send", "1,234 sends" (the noun's plural takes an "s").
pub fn counted(n: u64, noun: &str) -> String {
    format!("{} {noun}{}", group(n), if n == 1 { "" } else { "s" })
}

/// A count with a noun whose plural is not the noun and an "s": "1 publish", "2 publishes".
pub fn counted_as(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", group(n), if n == 1 { one } else { many })
}

/// `v` with thousands grouped and `decimals` decimals: `6,268`, `6,268.43`, `-0.5`.
pub fn grouped(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let text = format!("{:.decimals$}", v.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let sign = if v < 0.0 && text.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        "-"
    } else {
        ""
    };
    let int = group_digits(int);
    if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

/// Bytes in binary units, as `nats bench` prints them: "87 MiB", "1.5 KiB".
pub fn ibytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 || v >= 10.0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

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

/// The units a duration in nanoseconds is shown in.
const TIME: [(f64, &str); 4] = [(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")];

/// A duration given in nanoseconds for the report: as [`duration_ns`] with a non-breaking
/// space in tables; `trim` (tick labels) keeps three significant figures and drops trailing
/// zeros.
pub fn ns(v: f64, trim: bool) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if trim {
        scaled(v, &TIME, true, "\u{a0}")
    } else {
        duration_with(v, "\u{a0}", 0)
    }
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

/// A count with thousands separated: `1,200,000`; fractions to 3 significant digits, except
/// that from 1,000 up the whole part is kept and grouped (`9,307`, not `9307`).
pub fn count(v: f64) -> String {
    if v.is_finite() && v.fract() != 0.0 && v.abs() >= 1000.0 && v.abs() < 1e15 {
        return grouped(v.round(), 0);
    }
    if !v.is_finite() || v.fract() != 0.0 || v.abs() >= 1e15 {
        return sig(v, 3, true);
    }
    let o = group(v.abs() as u64);
    if v < 0.0 {
        format!("-{o}")
    } else {
        o
    }
}

/// A percentage, one way everywhere it is a measured share (a shortfall, time spent blocked):
/// two decimals, `2.47 %`, `34.00 %`. A share too small for two decimals reads `0.00 %`, never
/// `-0.00 %` or `0.00000247 %`: a figure shown with eight decimals claims a precision no rate
/// measurement has.
pub fn pct(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let text = format!("{v:.2}");
    let text = if text.trim_start_matches('-') == "0.00" {
        "0.00".to_string()
    } else {
        text
    };
    format!("{text} %")
}

/// A ratio as the signed change it is, to one decimal: 0.876 is `-12.4 %`, 1.02 is `+2.0 %`
/// (the history's changes, where the sign is the news).
pub fn change_pct(ratio: f64) -> String {
    if !ratio.is_finite() {
        return "–".into();
    }
    let text = format!("{:+.1}", (ratio - 1.0) * 100.0);
    let text = if text == "-0.0" { "+0.0".into() } else { text };
    format!("{text} %")
}

/// A duration given in seconds, for parameters: `3 s`, `0.5 s`.
pub fn secs(v: f64) -> String {
    format!("{}\u{a0}s", sig(v, 3, true))
}

/// One CSV field, quoted when it holds a comma, a quote or a line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_signed_with_one_decimal() {
        assert_eq!(change_pct(0.876), "-12.4 %");
        assert_eq!(change_pct(1.02), "+2.0 %");
        assert_eq!(change_pct(0.99999), "+0.0 %");
        assert_eq!(change_pct(f64::NAN), "–");
    }

    #[test]
    fn a_count_agrees_with_its_noun() {
        assert_eq!(counted(1, "send"), "1 send");
        assert_eq!(counted(0, "send"), "0 sends");
        assert_eq!(counted(1234, "publisher"), "1,234 publishers");
        assert_eq!(counted_as(1, "publish", "publishes"), "1 publish");
        assert_eq!(counted_as(2, "delivery", "deliveries"), "2 deliveries");
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(5_676_218), "5,676,218");
    }

    #[test]
    fn durations_read_alike_in_every_output() {
        assert_eq!(duration_ns(850.0), "850 ns");
        assert_eq!(duration_ns(45_663.0), "45.7 µs");
        assert_eq!(duration_ns(102_600.0), "102.6 µs");
        assert_eq!(duration_ns(999_960.0), "1.00 ms");
        assert_eq!(duration_ns(999.6), "1.0 µs");
        assert_eq!(duration_ns(12_570_000.0), "12.57 ms");
        assert_eq!(duration_ns(1.5e9), "1.50 s");
        assert_eq!(duration_ns(0.0), "0 ns");
        // Text and the report's tables differ only in the space.
        assert_eq!(
            ns(102_600.0, false).replace('\u{a0}', " "),
            duration_ns(102_600.0)
        );
    }

    #[test]
    fn percentages_have_two_decimals_and_no_negative_zero() {
        assert_eq!(pct(0.000_002_47), "0.00 %");
        assert_eq!(pct(-0.000_002_47), "0.00 %");
        assert_eq!(pct(0.0), "0.00 %");
        assert_eq!(pct(2.468), "2.47 %");
        assert_eq!(pct(34.0), "34.00 %");
        assert_eq!(pct(-1.5), "-1.50 %");
        assert_eq!(pct(100.0), "100.00 %");
    }

    #[test]
    fn counts_group_thousands_whole_or_not() {
        assert_eq!(count(9307.4), "9,307");
        assert_eq!(count(10_109.6), "10,110");
        assert_eq!(count(-1234.5), "-1,235");
        assert_eq!(count(1_200_000.0), "1,200,000");
        assert_eq!(count(12.345), "12.3");
        assert_eq!(count(0.5), "0.5");
        assert_eq!(grouped(1234.5678, 2), "1,234.57");
        assert_eq!(grouped(-0.001, 2), "0.00");
    }

    #[test]
    fn binary_byte_units() {
        assert_eq!(ibytes(512.0), "512 B");
        assert_eq!(ibytes(1536.0), "1.5 KiB");
        assert_eq!(ibytes(87.0 * 1024.0 * 1024.0), "87 MiB");
    }
}
