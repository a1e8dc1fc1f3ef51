//! `--link`: the impaired link between msgbench's clients and the server, as the user writes it
//! (`delay=1ms,jitter=200us,rate=100mbit`, with `up:` or `down:` for one direction only), and
//! its validated form.

use std::time::Duration;

use crate::result::LinkSpec;
use crate::values::parse_duration;

/// Rates from 1 kbit/s to 100 Gbit/s: below, a 64 KiB chunk takes minutes; above, the proxy
/// itself is the limit.
const MIN_RATE: u64 = 1_000;
const MAX_RATE: u64 = 100_000_000_000;
/// Delays up to a minute: longer would outlast any timeout.
const MAX_DELAY: Duration = Duration::from_secs(60);

impl LinkSpec {
    /// Parses `key=value` items separated by commas; keys are `delay`, `jitter` and `rate`,
    /// optionally prefixed with `up:` or `down:`.
    ///
    /// # Errors
    /// A message naming the item that cannot be read.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut spec = LinkSpec::default();
        if s.trim().is_empty() {
            return Err("expected items such as delay=1ms,jitter=200us,rate=100mbit".into());
        }
        for item in s.split(',') {
            let item = item.trim();
            let (dirs, kv): (&[bool], &str) = match item.split_once(':') {
                Some(("up", kv)) => (&[true], kv),
                Some(("down", kv)) => (&[false], kv),
                Some((d, _)) => {
                    return Err(format!(
                        "'{d}' is not a direction (use up: or down:, or neither for both)"
                    ))
                }
                None => (&[true, false], item),
            };
            let (key, value) = kv
                .split_once('=')
                .ok_or_else(|| format!("'{item}' is not key=value"))?;
            let value = value.trim();
            for &up in dirs {
                let shape = if up { &mut spec.up } else { &mut spec.down };
                match key.trim() {
                    "delay" => shape.delay = duration(key, value)?,
                    "jitter" => shape.jitter = duration(key, value)?,
                    "rate" => shape.rate_bps = Some(parse_rate_bits(value)?),
                    other => {
                        return Err(format!(
                            "unknown item '{other}' (use delay, jitter or rate)"
                        ))
                    }
                }
            }
        }
        for (name, shape) in [("up", spec.up), ("down", spec.down)] {
            if !shape.jitter.is_zero() && shape.delay.is_zero() {
                // Jitter around nothing would only ever be clamped to zero on one side.
                return Err(format!(
                    "{name}: jitter needs a delay to vary around (set delay= too)"
                ));
            }
        }
        Ok(spec)
    }

    pub fn is_clear(&self) -> bool {
        self.up.is_clear() && self.down.is_clear()
    }
}

fn duration(key: &str, value: &str) -> Result<Duration, String> {
    let d = match value {
        "0" => Duration::ZERO,
        v => parse_duration(v).map_err(|e| format!("{key}={v}: {e}"))?,
    };
    if d > MAX_DELAY {
        return Err(format!("{key}={value}: at most 1m"));
    }
    Ok(d)
}

/// `100mbit`, `1.5gbit`, `512kbit`, `2000bit` (also `kbps`, `mbps`, `gbps` for bits per second).
fn parse_rate_bits(v: &str) -> Result<u64, String> {
    let lower = v.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("rate={v}: give a unit: bit, kbit, mbit or gbit"))?;
    let (num, unit) = lower.split_at(split);
    let mult: u64 = match unit {
        "bit" | "bps" => 1,
        "kbit" | "kbps" => 1_000,
        "mbit" | "mbps" => 1_000_000,
        "gbit" | "gbps" => 1_000_000_000,
        u => {
            return Err(format!(
                "rate={v}: unknown unit '{u}' (use bit, kbit, mbit or gbit)"
            ))
        }
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("rate={v}: '{num}' is not a number"))?;
    let bps = n * mult as f64;
    if !bps.is_finite() || bps < MIN_RATE as f64 || bps > MAX_RATE as f64 {
        return Err(format!("rate={v}: must be 1kbit to 100gbit"));
    }
    Ok(bps.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions_and_one_direction() {
        let s = LinkSpec::parse("delay=1ms,jitter=200us,rate=100mbit").unwrap();
        assert_eq!(s.up, s.down);
        assert_eq!(s.up.delay, Duration::from_millis(1));
        assert_eq!(s.up.jitter, Duration::from_micros(200));
        assert_eq!(s.up.rate_bps, Some(100_000_000));
        let s = LinkSpec::parse("delay=10ms, up:rate=1.5mbit, down:delay=0").unwrap();
        assert_eq!(s.up.delay, Duration::from_millis(10));
        assert_eq!(s.up.rate_bps, Some(1_500_000));
        assert_eq!(s.down.delay, Duration::ZERO);
        assert_eq!(s.down.rate_bps, None);
        assert_eq!(
            s.to_string(),
            "up delay 10ms, rate 1.5 Mbit/s; down delay 0s"
        );
        assert_eq!(
            LinkSpec::parse("delay=5ms").unwrap().to_string(),
            "delay 5ms each way"
        );
    }

    #[test]
    fn bad_items_are_named() {
        for (s, needle) in [
            ("", "expected items"),
            ("delay", "not key=value"),
            ("lag=1ms", "unknown item 'lag'"),
            ("sideways:delay=1ms", "'sideways' is not a direction"),
            ("delay=fast", "delay=fast"),
            ("rate=100", "give a unit"),
            ("rate=100mb", "unknown unit 'mb'"),
            ("rate=0.1bit", "1kbit to 100gbit"),
            ("delay=2m", "at most 1m"),
            ("jitter=1ms", "needs a delay"),
        ] {
            let e = LinkSpec::parse(s).unwrap_err();
            assert!(e.contains(needle), "{s}: {e}");
        }
    }
}
