//! Numbers as people read them, one way for every human-facing output (text, Markdown, diff,
//! compare, the live line): thousands grouped, durations in the unit that keeps three figures,
//! bytes in binary units.

/// 45_663 ns -> "45.7 µs"; 1_262_591 -> "1.26 ms".
pub fn duration_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
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
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(5_676_218), "5,676,218");
    }

    #[test]
    fn binary_byte_units() {
        assert_eq!(ibytes(512.0), "512 B");
        assert_eq!(ibytes(1536.0), "1.5 KiB");
        assert_eq!(ibytes(87.0 * 1024.0 * 1024.0), "87 MiB");
    }
}
