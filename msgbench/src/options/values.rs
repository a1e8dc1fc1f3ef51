//! Parsers for the values people type: sizes, counts, rates and durations. Each returns a message
//! that says what is wrong with the value; the caller adds the flag's name.

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

/// Parses a non-negative count: `1000`, `1_000_000`, `20M`, `5k` (decimal multiples: a message
/// count is not a memory size).
pub fn parse_count(s: &str) -> Result<u64, String> {
    let v = parse_decimal(s, "a whole number such as 100000 or 20M")?;
    if v.fract() != 0.0 || v > u64::MAX as f64 {
        return Err("expected a whole number such as 100000 or 20M".into());
    }
    Ok(v as u64)
}

/// Parses a rate in messages per second: `0` (as fast as possible), `1000`, `2.5k`, `1M`.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    parse_decimal(
        s,
        "messages per second such as 1000, 50k or 0 for unlimited",
    )
}

fn parse_decimal(s: &str, expected: &str) -> Result<f64, String> {
    let t: String = s.trim().chars().filter(|c| *c != '_').collect();
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        Some('g' | 'G') => (&t[..t.len() - 1], 1e9),
        _ => (&t[..], 1.0),
    };
    // Rust's float parser accepts "inf" and "NaN"; neither is a count or a rate.
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!("expected {expected}"));
    }
    let v: f64 = num.parse().map_err(|_| format!("expected {expected}"))?;
    Ok(v * mult)
}

/// Parses a positive duration: `500ms`, `5s`, `1m30s`, `2h`. A bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let d = if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        t.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(Duration::from_secs_f64)
            .ok_or_else(|| "expected a duration such as 500ms, 5s or 1m".to_string())?
    } else {
        humantime::parse_duration(t)
            .map_err(|_| "expected a duration such as 500ms, 5s or 1m".to_string())?
    };
    if d.is_zero() {
        return Err("must be longer than zero".into());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
