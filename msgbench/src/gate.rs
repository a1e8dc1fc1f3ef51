//! Pass/fail gates (`--threshold p99<2ms`, `msgs_per_sec>1e6`, `lost==0`): parsed from the
//! command line before anything runs, judged against the finished result, printed at the end,
//! and turned into an exit status a CI job can act on.

use std::fmt;

use crate::metric::Metric;
use crate::result::RunResult;
use crate::result::Verdict;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// One `--threshold`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    expr: String,
    metric: Metric,
    op: Op,
    /// In the metric's unit: nanoseconds for latency.
    limit: f64,
}

impl Threshold {
    /// The figure the gate judges.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// The bound, in the metric's unit (nanoseconds for latency): where the report draws an
    /// SLO's line.
    pub fn limit(&self) -> f64 {
        self.limit
    }

    /// Whether the gate caps its figure (`<`, `<=`): a figure that could only have been lower
    /// than measured still fails it.
    pub fn is_cap(&self) -> bool {
        matches!(self.op, Op::Lt | Op::Le)
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

/// Parses `METRIC OP VALUE`, e.g. `p99<2ms`, `msgs_per_sec>=1.5M`, `lost==0`.
///
/// # Errors
/// Why the expression cannot be read, for clap to show next to the flag.
pub fn parse(s: &str) -> Result<Threshold, String> {
    let expr: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    let at = expr
        .find(['<', '>', '=', '!'])
        .ok_or("expected METRIC OP VALUE, such as p99<2ms or lost==0")?;
    let (name, rest) = expr.split_at(at);
    let (op, value) = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<", Op::Lt),
        (">", Op::Gt),
    ]
    .iter()
    .find_map(|(t, op)| rest.strip_prefix(t).map(|v| (*op, v)))
    .ok_or_else(|| format!("'{rest}' does not start with <, <=, >, >=, == or !="))?;
    if name.is_empty() {
        return Err("no metric before the comparison".into());
    }
    let metric = Metric::parse(name)?;
    if value.is_empty() {
        return Err("no value after the comparison".into());
    }
    let limit = if metric.is_duration() {
        latency_value(value)?
    } else {
        plain_value(value)?
    };
    Ok(Threshold {
        expr,
        metric,
        op,
        limit,
    })
}

/// A duration in nanoseconds: `2ms`, `150us`, `150µs`, `1.5s`, `800ns`.
fn latency_value(v: &str) -> Result<f64, String> {
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("'{v}': give a unit (ns, us, ms or s), e.g. 2ms"))?;
    let (num, unit) = v.split_at(split);
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        u => return Err(format!("'{v}': unknown unit '{u}' (use ns, us, ms or s)")),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{v}': '{num}' is not a number"))?;
    Ok(n * scale)
}

/// A count or rate: `1000`, `1e6`, `1.5M`, `500k`, `2G`.
fn plain_value(v: &str) -> Result<f64, String> {
    let (num, mult) = match v.char_indices().last() {
        Some((i, 'k' | 'K')) => (&v[..i], 1e3),
        Some((i, 'M')) => (&v[..i], 1e6),
        Some((i, 'G')) => (&v[..i], 1e9),
        _ => (v, 1.0),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{v}' is not a number (suffixes k, M, G allowed)"))?;
    if !n.is_finite() {
        return Err(format!("'{v}' is not a finite number"));
    }
    Ok(n * mult)
}

/// Judges every threshold against a finished result. A metric the run did not measure fails:
/// a gate that cannot be checked must not pass.
pub fn judge(thresholds: &[Threshold], r: &RunResult) -> Vec<Verdict> {
    if thresholds.is_empty() {
        return Vec::new();
    }
    // Metrics are read from the document form, the same way `diff` reads a saved file.
    judge_doc(
        thresholds,
        &serde_json::to_value(r).expect("a result serialises"),
    )
}

/// Judges every threshold against a result document (or a view of one).
pub fn judge_doc(thresholds: &[Threshold], doc: &serde_json::Value) -> Vec<Verdict> {
    thresholds
        .iter()
        .map(|t| match t.metric.read(doc) {
            Ok(v) => Verdict {
                expr: t.expr.clone(),
                measured: Some(v),
                pass: t.op.holds(v, t.limit),
                why: None,
                latency: t.metric.is_duration(),
            },
            Err(why) => Verdict {
                expr: t.expr.clone(),
                measured: None,
                pass: false,
                why: Some(why),
                latency: t.metric.is_duration(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_parse_with_units_and_suffixes() {
        let t = parse("p99<2ms").unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::parse("p99").unwrap(), Op::Lt, 2e6)
        );
        let t = parse("p99.9 <= 150us").unwrap();
        assert_eq!((t.op, t.limit), (Op::Le, 150e3));
        assert_eq!(t.to_string(), "p99.9<=150us");
        assert_eq!(parse("msgs_per_sec>1e6").unwrap().limit, 1e6);
        assert_eq!(parse("msgs_per_sec>=1.5M").unwrap().limit, 1.5e6);
        assert_eq!(parse("lost==0").unwrap().op, Op::Eq);
        assert_eq!(parse("errors!=3").unwrap().op, Op::Ne);
        assert_eq!(parse("max<1s").unwrap().limit, 1e9);
        assert_eq!(parse("mean<800ns").unwrap().limit, 800.0);
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        for (s, needle) in [
            ("p99", "expected METRIC OP VALUE"),
            ("<2ms", "no metric"),
            ("p99<", "no value"),
            ("p99<2", "give a unit"),
            ("p99<2hours", "unknown unit"),
            ("p95<2ms", "not a reported percentile"),
            ("speed>5", "unknown metric"),
            ("lost=0", "does not start with"),
            ("lost==none", "not a number"),
            ("msgs>inf", "not a finite number"),
        ] {
            let e = parse(s).unwrap_err();
            assert!(e.contains(needle), "{s}: {e}");
        }
    }

    #[test]
    fn comparisons_hold_exactly_at_the_edges() {
        assert!(Op::Le.holds(2.0, 2.0) && !Op::Lt.holds(2.0, 2.0));
        assert!(Op::Ge.holds(2.0, 2.0) && !Op::Gt.holds(2.0, 2.0));
        assert!(Op::Eq.holds(0.0, 0.0) && Op::Ne.holds(1.0, 0.0));
    }
}
