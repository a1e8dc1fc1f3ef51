//! A strict reader of the OpenMetrics 1.0 text format, for tests: it refuses what a scraper
//! would trip on and returns the samples, so a test can compare them with a result.
//!
//! It checks the grammar's essentials: the `# EOF` terminator with nothing after it; `# TYPE`,
//! `# HELP` and `# UNIT` at most once per family and before its samples, with a known type and
//! a unit the family's name ends in; each family in one contiguous block; sample names that fit
//! their family's type (`_total` for a counter); metric and label names of the allowed
//! characters, label values with only the three escapes, no label twice; numbers as the format
//! writes them; no sample (name and labels) twice; no negative or NaN counter. No crate does
//! this for us: the Prometheus client only writes the format, and the parsers on crates.io read
//! the older Prometheus format leniently or come under a licence this project does not take.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The media type `/metrics` answers with.
pub const MEDIA_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `GET /metrics` at `addr`: the body of a 200 answer with the OpenMetrics media type; `None`
/// when nothing answers (the run is over).
pub fn scrape(addr: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains(&format!("Content-Type: {MEDIA_TYPE}\r\n")),
        "{head}"
    );
    Some(body.to_string())
}

/// One metric family's metadata.
#[derive(Debug, Default, Clone)]
pub struct Family {
    pub kind: String,
    pub help: Option<String>,
    pub unit: Option<String>,
}

/// One sample line.
#[derive(Debug, Clone)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A whole exposition, checked.
#[derive(Debug, Default)]
pub struct Exposition {
    pub families: BTreeMap<String, Family>,
    pub samples: Vec<Sample>,
}

impl Exposition {
    /// The value of the one sample named `name` whose labels include `labels`; `None` when
    /// there is none. Panics when several match: the caller's question was ambiguous.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let found: Vec<&Sample> = self
            .samples
            .iter()
            .filter(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .collect();
        assert!(found.len() <= 1, "{name} {labels:?} matches {found:?}");
        found.first().map(|s| s.value)
    }

    /// Every sample named `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.name == name)
    }
}

const TYPES: &[&str] = &[
    "counter",
    "gauge",
    "histogram",
    "gaugehistogram",
    "stateset",
    "info",
    "summary",
    "unknown",
];

/// Checks `text` and returns what it holds, or the first problem with its line number.
pub fn parse(text: &str) -> Result<Exposition, String> {
    let body = text
        .strip_suffix("# EOF\n")
        .or_else(|| text.strip_suffix("# EOF"))
        .ok_or("the exposition does not end with `# EOF`")?;
    if !(body.is_empty() || body.ends_with('\n')) {
        return Err("`# EOF` is not on a line of its own".into());
    }
    let mut out = Exposition::default();
    let mut current: Option<String> = None;
    let mut sampled: BTreeSet<String> = BTreeSet::new();
    let mut seen_samples: BTreeSet<(String, Vec<(String, String)>)> = BTreeSet::new();
    for (i, line) in body.lines().enumerate() {
        let at = |what: String| format!("line {}: {what}: {line:?}", i + 1);
        if line.is_empty() || line.contains('\r') {
            return Err(at("empty line or carriage return".into()));
        }
        if let Some(meta) = line.strip_prefix("# ") {
            let (word, rest) = meta
                .split_once(' ')
                .ok_or_else(|| at("bad comment".into()))?;
            let (name, arg) = rest.split_once(' ').unwrap_or((rest, ""));
            check_metric_name(name).map_err(at)?;
            if current.as_deref() != Some(name) {
                if out.families.contains_key(name) {
                    return Err(at(format!("family {name} is not contiguous")));
                }
                out.families.insert(name.to_string(), Family::default());
                current = Some(name.to_string());
            }
            if sampled.contains(name) {
                return Err(at(format!("# {word} after the samples of {name}")));
            }
            let f = out.families.get_mut(name).unwrap();
            match word {
                "TYPE" => {
                    if !f.kind.is_empty() {
                        return Err(at("second TYPE".into()));
                    }
                    if !TYPES.contains(&arg) {
                        return Err(at(format!("unknown type {arg:?}")));
                    }
                    f.kind = arg.to_string();
                }
                "HELP" => {
                    if f.help.replace(unescape(arg, false).map_err(at)?).is_some() {
                        return Err(at("second HELP".into()));
                    }
                }
                "UNIT" => {
                    if !arg.is_empty() && !name.ends_with(&format!("_{arg}")) {
                        return Err(at(format!("{name} does not end in its unit {arg}")));
                    }
                    if f.unit.replace(arg.to_string()).is_some() {
                        return Err(at("second UNIT".into()));
                    }
                }
                _ => return Err(at(format!("unknown descriptor {word:?}"))),
            }
            continue;
        }
        if line.starts_with('#') {
            return Err(at("a comment OpenMetrics does not allow".into()));
        }
        let sample = parse_sample(line).map_err(at)?;
        let family = match &current {
            Some(f) if fits(f, out.families[f].kind.as_str(), &sample.name) => f.clone(),
            _ => {
                // A sample without metadata starts a family of its own, of unknown type.
                if out.families.contains_key(&sample.name) {
                    return Err(at(format!("{} is not in its family's block", sample.name)));
                }
                let f = Family {
                    kind: "unknown".into(),
                    ..Family::default()
                };
                out.families.insert(sample.name.clone(), f);
                current = Some(sample.name.clone());
                sample.name.clone()
            }
        };
        if out.families[&family].kind.is_empty() {
            out.families.get_mut(&family).unwrap().kind = "unknown".into();
        }
        if out.families[&family].kind == "counter"
            && sample.name.ends_with("_total")
            && (sample.value < 0.0 || sample.value.is_nan())
        {
            return Err(at("a counter below zero or NaN".into()));
        }
        sampled.insert(family);
        let key = (
            sample.name.clone(),
            sample.labels.clone().into_iter().collect(),
        );
        if !seen_samples.insert(key) {
            return Err(at("the same sample twice".into()));
        }
        out.samples.push(sample);
    }
    Ok(out)
}

/// Whether a sample called `sample` belongs to family `family` of type `kind`.
fn fits(family: &str, kind: &str, sample: &str) -> bool {
    let Some(suffix) = sample.strip_prefix(family) else {
        return false;
    };
    let allowed: &[&str] = match kind {
        "counter" => &["_total", "_created"],
        "histogram" | "gaugehistogram" => {
            &["_bucket", "_count", "_sum", "_created", "_gcount", "_gsum"]
        }
        "summary" => &["", "_count", "_sum", "_created"],
        "info" => &["_info"],
        _ => &[""],
    };
    allowed.contains(&suffix)
}

fn check_metric_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
        Ok(())
    } else {
        Err(format!("bad metric name {name:?}"))
    }
}

fn check_label_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(())
    } else {
        Err(format!("bad label name {name:?}"))
    }
}

/// `name{a="x",b="y"} value [timestamp]`.
fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line.find(['{', ' ']).ok_or("a sample without a value")?;
    let name = &line[..name_end];
    check_metric_name(name)?;
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(inner)?;
        labels = parsed;
        rest = after;
    }
    let rest = rest.strip_prefix(' ').ok_or("no space before the value")?;
    let mut parts = rest.split(' ');
    let value = parse_number(parts.next().unwrap_or_default())?;
    if let Some(ts) = parts.next() {
        parse_number(ts)?;
    }
    if parts.next().is_some() {
        return Err("more after the value and timestamp".into());
    }
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Reads labels up to the closing brace; returns them and the text after the brace.
fn parse_labels(mut s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    if let Some(after) = s.strip_prefix('}') {
        return Ok((labels, after));
    }
    loop {
        let (name, rest) = s.split_once("=\"").ok_or("a label without =\"")?;
        check_label_name(name)?;
        // The value ends at the first quote not escaped.
        let mut end = None;
        let mut escaped = false;
        for (i, c) in rest.char_indices() {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let end = end.ok_or("an unterminated label value")?;
        let value = unescape(&rest[..end], true)?;
        if labels.insert(name.to_string(), value).is_some() {
            return Err(format!("label {name} twice"));
        }
        s = &rest[end + 1..];
        if let Some(after) = s.strip_prefix('}') {
            return Ok((labels, after));
        }
        s = s
            .strip_prefix(',')
            .ok_or("labels not separated by a comma")?;
    }
}

/// Undoes `\\`, `\n` and (in label values) `\"`; any other escape is an error.
fn unescape(s: &str, quotes: bool) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('"') if quotes => out.push('"'),
            other => return Err(format!("bad escape \\{other:?}")),
        }
    }
    Ok(out)
}

/// A number as OpenMetrics writes one: decimal or exponent notation, `+Inf`, `-Inf`, `NaN`.
fn parse_number(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => return Ok(f64::INFINITY),
        "-Inf" => return Ok(f64::NEG_INFINITY),
        "NaN" => return Ok(f64::NAN),
        _ => {}
    }
    let plain = s
        .trim_start_matches(['-', '+'])
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'));
    match s.parse::<f64>() {
        Ok(v) if plain && !s.is_empty() => Ok(v),
        _ => Err(format!("bad number {s:?}")),
    }
}
