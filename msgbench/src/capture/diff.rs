//! `msgbench capture diff A B`: how close two captures are, pattern by pattern. Capture a
//! system, replay the file, capture the replay, and this says whether the replay was the
//! traffic: each pattern's rate ratio (B over A), the Kolmogorov-Smirnov distance between its
//! sizes (exact, from the two distributions the files write), and its tokens' skew by rank
//! (the Zipf exponents, or the largest difference in a word's share). A pattern is matched by
//! its scenario and its subject template; one found in only one file fails.

use serde_json::Value;

use crate::cli::CaptureDiffArgs;
use crate::error::{exit, Error, Result};
use crate::plan::workload::{Document, Workload};
use crate::stats::draw::SizeDist;

/// One class of a capture, as compared.
struct Shape {
    key: String,
    rate: f64,
    size: SizeDist,
    tokens: Vec<(String, String)>,
}

fn shapes(path: &std::path::Path) -> Result<Vec<Shape>> {
    let w: Workload = match Document::read(path)? {
        Document::Workload(w) => w,
        Document::Plan(_) => {
            return Err(Error::Usage(format!(
                "'{}' is a plan of one scenario, not a captured workload",
                path.display()
            )))
        }
    };
    w.classes
        .iter()
        .map(|c| {
            let doc = c.plan.document();
            let find = |k: &str| find(&doc, k);
            let subject = find("subject").and_then(Value::as_str).unwrap_or("");
            let scenario = doc["scenario"].as_str().unwrap_or("");
            let size = match find("size") {
                Some(Value::Number(n)) => SizeDist::Fixed(n.as_u64().unwrap_or(0) as usize),
                Some(Value::String(s)) => SizeDist::parse(s)
                    .map_err(|why| Error::Usage(format!("class '{}': size: {why}", c.name)))?,
                _ => SizeDist::Fixed(0),
            };
            let tokens = find("token")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .filter_map(|t| t.split_once('='))
                        .map(|(n, v)| (n.to_string(), v.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            Ok(Shape {
                key: format!("{} {subject}", scenario.replace('.', " ")),
                rate: find("rate").and_then(Value::as_f64).unwrap_or(0.0),
                size,
                tokens,
            })
        })
        .collect()
}

/// A key at the top of a plan document or in one of its groups.
fn find<'a>(doc: &'a Value, key: &str) -> Option<&'a Value> {
    doc.get(key).filter(|v| !v.is_null()).or_else(|| {
        doc.as_object()?
            .values()
            .filter_map(Value::as_object)
            .find_map(|g| g.get(key).filter(|v| !v.is_null()))
    })
}

/// `msgbench capture diff`.
///
/// # Errors
/// A file that is not a workload, or a size that does not read.
pub fn run(a: &CaptureDiffArgs) -> Result<u8> {
    for (flag, v) in [
        ("--max-rate-error", a.max_rate_error),
        ("--max-ks", a.max_ks),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(Error::flag(flag, &v.to_string(), "must be more than 0"));
        }
    }
    let (x, y) = (shapes(&a.a)?, shapes(&a.b)?);
    let mut rows = vec![[
        "pattern".to_string(),
        "rate A".into(),
        "rate B".into(),
        "ratio".into(),
        "sizes KS".into(),
        "skew (A vs B)".into(),
        "".into(),
    ]];
    let mut failed = 0;
    for s in &x {
        let Some(t) = y.iter().find(|t| t.key == s.key) else {
            failed += 1;
            rows.push([
                s.key.clone(),
                crate::format::grouped(s.rate, 1),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "FAIL: not in B".into(),
            ]);
            continue;
        };
        let ratio = t.rate / s.rate;
        let ks = crate::stats::draw::ks_distance(&s.size, &t.size)
            .map_err(|why| Error::Usage(format!("{}: sizes: {why}", s.key)))?;
        let ok = (ratio - 1.0).abs() <= a.max_rate_error && ks < a.max_ks;
        failed += usize::from(!ok);
        rows.push([
            s.key.clone(),
            crate::format::grouped(s.rate, 1),
            crate::format::grouped(t.rate, 1),
            format!("{ratio:.3}"),
            format!("{ks:.4}"),
            skew(&s.tokens, &t.tokens),
            if ok { "ok" } else { "FAIL" }.into(),
        ]);
    }
    for t in y.iter().filter(|t| !x.iter().any(|s| s.key == t.key)) {
        failed += 1;
        rows.push([
            t.key.clone(),
            "—".into(),
            crate::format::grouped(t.rate, 1),
            "—".into(),
            "—".into(),
            "—".into(),
            "FAIL: not in A".into(),
        ]);
    }
    println!(
        "capture diff {} {}: rate ratio within {} of 1, sizes' KS distance below {}",
        a.a.display(),
        a.b.display(),
        a.max_rate_error,
        a.max_ks
    );
    print!("{}", table(&rows));
    if failed == 0 {
        println!("Result: every pattern matched");
        Ok(exit::OK)
    } else {
        println!("Result: {failed} pattern(s) did not match");
        Ok(exit::THRESHOLD)
    }
}

/// Each token's skew in A against B: Zipf exponents side by side, or the largest difference
/// in one word's share.
fn skew(a: &[(String, String)], b: &[(String, String)]) -> String {
    let mut out = Vec::new();
    for (name, va) in a {
        let Some((_, vb)) = b.iter().find(|(n, _)| n == name) else {
            out.push(format!("{name}: not in B"));
            continue;
        };
        let zipf = |v: &str| {
            v.strip_prefix("zipf:")
                .and_then(|r| r.split(':').next()?.parse::<f64>().ok())
        };
        match (zipf(va), zipf(vb)) {
            (Some(x), Some(y)) => out.push(format!("{name}: zipf {x:.2} vs {y:.2}")),
            _ => match (shares(va), shares(vb)) {
                (Some(x), Some(y)) => {
                    let d = x
                        .iter()
                        .map(|(w, p)| {
                            let q = y.iter().find(|(v, _)| v == w).map_or(0.0, |(_, q)| *q);
                            (p - q).abs()
                        })
                        .fold(0.0, f64::max);
                    out.push(format!("{name}: shares within {d:.2} points"));
                }
                _ => out.push(format!("{name}: {va} vs {vb}")),
            },
        }
    }
    if out.is_empty() {
        "—".into()
    } else {
        out.join("; ")
    }
}

/// A weighted word list's shares, in percent.
fn shares(v: &str) -> Option<Vec<(String, f64)>> {
    v.split(',')
        .map(|i| {
            let (w, p) = i.rsplit_once(':')?;
            Some((w.to_string(), p.strip_suffix('%')?.parse().ok()?))
        })
        .collect()
}

fn table(rows: &[[String; 7]]) -> String {
    let widths: Vec<usize> = (0..7)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str("  ");
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}
