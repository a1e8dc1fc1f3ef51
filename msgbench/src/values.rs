//! Parsers for the values people type: sizes, counts, rates, durations and addresses to listen
//! on. Each returns a message that says what is wrong with the value; the caller adds the flag's
//! name.

use std::time::Duration;

/// Parses a size in bytes: `16`, `16B`, `1KiB`, `4kb`, `1MB`, `2MiB`.
///
/// Multiples are binary whether or not the unit has the `i` (1 KB = 1024 B), as in NATS's own
/// configuration (`max_payload: 1MB` is 1,048,576 bytes), so a size copied from a server config
/// means what it meant there.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err("expected a number of bytes such as 16, 128B, 1KiB or 4kb".into());
    }
    let n: usize = digits
        .parse()
        .map_err(|_| "number of bytes is too large".to_string())?;
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(format!(
                "unknown unit '{other}' (use B, KB/KiB, MB/MiB or GB/GiB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| "number of bytes is too large".to_string())
}

/// Parses a non-negative count: `1000`, `1_000_000`, `20M`, `5k`, `8.2M` (decimal multiples: a
/// message count is not a memory size). The value must be a whole number.
pub fn parse_count(s: &str) -> Result<u64, String> {
    const EXPECTED: &str = "expected a whole number such as 100000 or 20M";
    let (num, exp) = split_multiplier(s);
    let n = Decimal::parse(&num).ok_or(EXPECTED)?;
    match n.times(10u128.pow(exp)) {
        Ok(v) => u64::try_from(v).map_err(|_| format!("too large (at most {})", u64::MAX)),
        Err(Inexact::Fraction) => Err(EXPECTED.into()),
        Err(Inexact::TooLarge) => Err(format!("too large (at most {})", u64::MAX)),
    }
}

/// Parses a rate in messages per second: `0` (as fast as possible), `1000`, `2.5k`, `1M`.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    const EXPECTED: &str = "expected messages per second such as 1000, 50k or 0 for unlimited";
    let (num, exp) = split_multiplier(s);
    // Rust's float parser accepts "inf", "NaN" and exponents; none of them is a rate as documented.
    if Decimal::parse(&num).is_none() {
        return Err(EXPECTED.into());
    }
    // One correctly rounded conversion of the whole written value, suffix included, rather than
    // a rounded number times a rounded multiplier.
    let v: f64 = format!("{num}e{exp}")
        .parse()
        .map_err(|_| EXPECTED.to_string())?;
    if !v.is_finite() {
        return Err("too large (use 0 for unlimited)".into());
    }
    Ok(v)
}

/// Removes `_` separators and a k/M/G suffix: the number as written and the suffix's power of ten.
fn split_multiplier(s: &str) -> (String, u32) {
    let mut t: String = s.trim().chars().filter(|c| *c != '_').collect();
    let exp = match t.chars().last() {
        Some('k' | 'K') => 3,
        Some('m' | 'M') => 6,
        Some('g' | 'G') => 9,
        _ => return (t, 0),
    };
    t.pop();
    (t, exp)
}

/// A number as written, `int.frac`, kept as text so that a count or a duration is exactly what was
/// typed (`8.2M` is 8,200,000; through f64 it is not a whole number).
struct Decimal<'a> {
    int: &'a str,
    frac: &'a str,
}

enum Inexact {
    /// The value has a fractional part left over.
    Fraction,
    /// The value does not fit in u128.
    TooLarge,
}

impl<'a> Decimal<'a> {
    /// ASCII digits with at most one `.`, and at least one digit: `12`, `1.5`, `.5`, `5.`.
    fn parse(s: &'a str) -> Option<Self> {
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        let digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty() && frac.is_empty() || !digits(int) || !digits(frac) {
            return None;
        }
        Some(Self { int, frac })
    }

    /// The value times `mult`, when that is a whole number. `mult` is below 10^14 (a day in
    /// nanoseconds), so the products below cannot overflow.
    fn times(&self, mult: u128) -> Result<u128, Inexact> {
        // The multipliers here have at most 2^16 and 5^11 as factors, and a fraction without
        // trailing zeros lacks either a factor of 2 or one of 5, so with more than 16 digits it
        // cannot come out whole. The limit also keeps `frac * mult` within u128.
        const MAX_FRAC_DIGITS: usize = 20;
        let frac = self.frac.trim_end_matches('0');
        if frac.len() > MAX_FRAC_DIGITS {
            return Err(Inexact::Fraction);
        }
        let scale = 10u128.pow(frac.len() as u32);
        let frac_times = digits_value(frac).ok_or(Inexact::TooLarge)? * mult;
        if !frac_times.is_multiple_of(scale) {
            return Err(Inexact::Fraction);
        }
        digits_value(self.int)
            .and_then(|int| int.checked_mul(mult))
            .and_then(|v| v.checked_add(frac_times / scale))
            .ok_or(Inexact::TooLarge)
    }
}

/// ASCII digits (any number of leading zeros, or none at all) as u128; None beyond u128.
fn digits_value(digits: &str) -> Option<u128> {
    digits.bytes().try_fold(0u128, |v, b| {
        v.checked_mul(10)?.checked_add(u128::from(b - b'0'))
    })
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Parses a positive duration: `500ms`, `5s`, `1.5s`, `1m30s`, `2h 15m`. A bare number is seconds.
///
/// Units: `ns`, `us`/`µs`, `ms`, `s`, `m` (minutes), `h`, `d`, and their common long forms
/// (`sec`, `min`, `hours`, ...). Spaces may separate terms, and a number from its unit. The value
/// is exact to the nanosecond; a finer one is an error rather than rounded.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    const EXPECTED: &str = "expected a duration such as 500ms, 5s or 1m";
    let t = s.trim();
    let mut nanos: u128 = 0;
    let mut rest = t;
    loop {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n = Decimal::parse(&rest[..num_len]).ok_or(EXPECTED)?;
        rest = rest[num_len..].trim_start();
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let unit_nanos = if unit.is_empty() && num_len == t.len() {
            NANOS_PER_SEC
        } else {
            duration_unit(unit)?
        };
        let term = n.times(unit_nanos).map_err(|e| match e {
            Inexact::Fraction => "more precise than a nanosecond".to_string(),
            Inexact::TooLarge => "too long".to_string(),
        })?;
        nanos = nanos.checked_add(term).ok_or("too long")?;
        rest = rest[unit_len..].trim_start();
        if rest.is_empty() {
            break;
        }
    }
    let secs = u64::try_from(nanos / NANOS_PER_SEC).map_err(|_| "too long")?;
    if nanos == 0 {
        return Err("must be longer than zero".into());
    }
    // Below 10^9, so the cast is exact and `Duration::new` has no second to carry.
    Ok(Duration::new(secs, (nanos % NANOS_PER_SEC) as u32))
}

/// Nanoseconds in one `unit`.
fn duration_unit(unit: &str) -> Result<u128, String> {
    Ok(match unit {
        "ns" | "nsec" | "nanos" => 1,
        "us" | "µs" | "μs" | "usec" => 1_000,
        "ms" | "msec" | "millis" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => NANOS_PER_SEC,
        "m" | "min" | "mins" | "minute" | "minutes" => 60 * NANOS_PER_SEC,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600 * NANOS_PER_SEC,
        "d" | "day" | "days" => 86_400 * NANOS_PER_SEC,
        "" => return Err("expected a duration such as 500ms, 5s or 1m".into()),
        other => {
            return Err(format!(
                "unknown unit '{other}' (use ns, us, ms, s, m, h or d)"
            ))
        }
    })
}

/// Checks an address to listen on, `HOST:PORT`: `127.0.0.1:9464`, `[::1]:9464`,
/// `localhost:9464`, or `0.0.0.0:9464` for every interface; port 0 lets the system choose. A
/// host name is resolved when the address is bound, so it is only checked for shape here.
pub fn parse_listen(s: &str) -> Result<String, String> {
    const EXPECTED: &str = "expected HOST:PORT such as 127.0.0.1:9464";
    let t = s.trim();
    if t.parse::<std::net::SocketAddr>().is_ok() {
        return Ok(t.to_string());
    }
    if t.contains("://") || t.contains('/') {
        return Err(format!(
            "give the address alone, without a scheme or path; {EXPECTED}"
        ));
    }
    let Some((host, port)) = t.rsplit_once(':') else {
        return Err(EXPECTED.into());
    };
    if port.parse::<u16>().is_err() {
        return Err(format!("'{port}' is not a port (0 to 65535); {EXPECTED}"));
    }
    if host.contains(':') {
        return Err("an IPv6 address goes in brackets, as in [::1]:9464".into());
    }
    // A DNS name: dot-separated labels of letters, digits and inner hyphens.
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(format!(
            "'{host}' is not a host name or IP address; {EXPECTED}"
        ));
    }
    Ok(t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_need_a_host_and_a_port() {
        for ok in [
            "127.0.0.1:9464",
            "[::1]:9464",
            "0.0.0.0:0",
            "localhost:9464",
            "metrics-1.example:80",
        ] {
            assert_eq!(parse_listen(ok).as_deref(), Ok(ok));
        }
        for (bad, says) in [
            ("9464", "expected HOST:PORT"),
            ("127.0.0.1", "expected HOST:PORT"),
            (":9464", "is not a host name"),
            ("127.0.0.1:99999", "'99999' is not a port"),
            ("127.0.0.1:http", "'http' is not a port"),
            ("::1:9464", "in brackets"),
            ("http://127.0.0.1:9464", "without a scheme"),
            ("bad_name:9464", "is not a host name"),
        ] {
            let e = parse_listen(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn sizes() {
        for (s, n) in [
            ("16", 16),
            ("16B", 16),
            ("16b", 16),
            ("1KiB", 1024),
            ("4kb", 4096),
            ("4 KB", 4096),
            ("1MB", 1 << 20),
            ("2mib", 2 << 20),
            ("0", 0),
        ] {
            assert_eq!(parse_size(s), Ok(n), "{s}");
        }
        for bad in [
            "10XB",
            "",
            "KB",
            "-1",
            "1.5KB",
            "99999999999999999999999",
            "16 B B",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_size("10XB").unwrap_err().contains("'xb'"));
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("100000"), Ok(100_000));
        assert_eq!(parse_count("1_000_000"), Ok(1_000_000));
        assert_eq!(parse_count("20M"), Ok(20_000_000));
        assert_eq!(parse_count("2.5k"), Ok(2_500));
        for bad in ["-1", "abc", "", "1.5", "inf", "NaN", "1e3"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("0"), Ok(0.0));
        assert_eq!(parse_rate("1.5k"), Ok(1500.0));
        for bad in ["abc", "-5", "inf", ""] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        for bad in ["0s", "abc", "", "-1s", "0"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn counts_are_exact() {
        // Through f64, 8.2 * 1e6 is 8199999.999999999 and 1.005 * 1e3 is 1004.9999999999999.
        assert_eq!(parse_count("8.2M"), Ok(8_200_000));
        assert_eq!(parse_count("1.005k"), Ok(1_005));
        assert_eq!(parse_count("0.5k"), Ok(500));
        assert_eq!(parse_count(".5k"), Ok(500));
        assert_eq!(parse_count("1.50k"), Ok(1_500));
        assert_eq!(parse_count("1_000.000_000"), Ok(1_000));
        assert_eq!(parse_count("000123"), Ok(123));
        assert_eq!(parse_count("1.000000000000000000000000000000k"), Ok(1_000));
        assert_eq!(parse_count("1.5G"), Ok(1_500_000_000));
        assert_eq!(parse_count("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_count("9007199254740993"), Ok(9_007_199_254_740_993));
        // f64 takes these for 1 and for u64::MAX.
        let err = parse_count("1.0000000000000001").unwrap_err();
        assert!(err.contains("whole number"), "{err}");
        let err = parse_count("18446744073709551616").unwrap_err();
        assert!(err.contains("too large"), "{err}");
        for bad in [
            "1.0001k",
            "18446744073709552k",
            "999999999999999999999999999999999999999999",
            ".",
            "k",
            "1.2.3",
            "+1",
        ] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates_are_finite() {
        // 10^400, and 10^300 times a G: both beyond f64, which parses them as infinity.
        let huge = format!("1{}", "0".repeat(400));
        let huge_suffix = format!("1{}G", "0".repeat(300));
        for bad in [&huge, &huge_suffix] {
            let err = parse_rate(bad).unwrap_err();
            assert!(err.contains("too large"), "{err}");
        }
        assert_eq!(parse_rate(&format!("1{}k", "0".repeat(305))), Ok(1e308));
        assert_eq!(parse_rate("0.1k"), Ok(100.0));
        assert_eq!(parse_rate(".5"), Ok(0.5));
        assert_eq!(parse_rate("2_500"), Ok(2500.0));
        for bad in ["NaN", "1e3", ".", "1.2.3", "k"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_units_and_fractions() {
        let ms = Duration::from_millis;
        for (s, d) in [
            ("1.5s", ms(1_500)),
            ("0.25ms", Duration::from_micros(250)),
            ("1.5", ms(1_500)),
            (".5s", ms(500)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("7ns", Duration::from_nanos(7)),
            ("2 min", Duration::from_secs(120)),
            ("1h 2m 3s 4ms", ms(3_723_004)),
            ("1h2m3s", Duration::from_secs(3_723)),
            ("1 hour 30 minutes", Duration::from_secs(5_400)),
            ("1d", Duration::from_secs(86_400)),
            ("1.5h", Duration::from_secs(5_400)),
            ("3 secs", Duration::from_secs(3)),
            ("10msec", ms(10)),
            ("0s 1ms", ms(1)),
            ("000001s", Duration::from_secs(1)),
            ("1.0000000000000000000000000s", Duration::from_secs(1)),
        ] {
            assert_eq!(parse_duration(s), Ok(d), "{s}");
        }
        for bad in [
            "1m30",
            "1..5s",
            "1 2s",
            "5 s s",
            "s",
            "1.5ns",
            "0.1234567891",
            "1x",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_duration("1x").unwrap_err().contains("'x'"));
        assert_eq!(
            parse_duration("0ms 0s").unwrap_err(),
            "must be longer than zero"
        );
    }

    #[test]
    fn durations_too_long_are_errors_not_panics() {
        // `Duration::from_secs_f64` panics at 2^64 seconds.
        assert_eq!(
            parse_duration("18446744073709551616").unwrap_err(),
            "too long"
        );
        assert_eq!(parse_duration(&"9".repeat(400)).unwrap_err(), "too long");
        // humantime 2.4 panics when the nanoseconds carry into u64::MAX seconds.
        assert_eq!(
            parse_duration("18446744073709551615s 1000000000ns").unwrap_err(),
            "too long"
        );
        assert_eq!(
            parse_duration("18446744073709551615s 500ms 500ms").unwrap_err(),
            "too long"
        );
        assert_eq!(
            parse_duration("18446744073709551615s 999999999ns"),
            Ok(Duration::new(u64::MAX, 999_999_999))
        );
        assert_eq!(
            parse_duration("18446744073709551615.999999999"),
            Ok(Duration::new(u64::MAX, 999_999_999))
        );
        assert_eq!(
            parse_duration("307445734561825861m").unwrap_err(),
            "too long"
        );
    }
}

/// Writes values the way the parsers above read them back, so a plan (`--print-plan`) holds
/// `"5s"` rather than a struct of seconds and nanoseconds, and its re-reading goes through
/// the same parsers as a typed flag.
pub mod ser {
    use std::time::Duration;

    use serde::Serializer;

    /// The shortest exact spelling: `5s`, `250ms`, `40us`, `7ns`, `0s`.
    pub fn text(d: Duration) -> String {
        let ns = d.as_nanos();
        for (unit, per) in [("s", 1_000_000_000u128), ("ms", 1_000_000), ("us", 1_000)] {
            if ns.is_multiple_of(per) {
                return format!("{}{unit}", ns / per);
            }
        }
        format!("{ns}ns")
    }

    pub fn duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&text(*d))
    }

    #[allow(clippy::ref_option)] // serde hands the field over by reference
    pub fn opt_duration<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&text(*d)),
            None => s.serialize_none(),
        }
    }

    /// `--sub-stall N:DURATION`.
    #[allow(clippy::ref_option)]
    pub fn stall<S: Serializer>(v: &Option<(u64, Duration)>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some((n, d)) => s.serialize_str(&format!("{n}:{}", text(*d))),
            None => s.serialize_none(),
        }
    }
}
