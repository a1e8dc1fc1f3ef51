//! The PromQL a dashboard holds, read only as far as the dashboard test needs it: which metrics
//! an expression names, and which labels it asks of each. It is a tokenizer, not a parser: it
//! finds the metric before a selector's braces (or standing bare), the labels of its matchers,
//! and the labels of `by`, `without`, `on`, `ignoring` and `group_left`/`group_right` lists,
//! which it charges to every metric of the expression (the dashboard aggregates one metric per
//! expression). Grafana's `label_values(SELECTOR, LABEL)` of template variables is read too.
//! What it cannot place it refuses, rather than letting a name go unchecked: an unknown
//! function, a selector with no metric name, unbalanced brackets, a malformed matcher.

use std::collections::BTreeSet;

/// What one expression names.
#[derive(Debug, Default, PartialEq)]
pub struct Refs {
    pub metrics: BTreeSet<String>,
    /// (metric, label): a label in the metric's braces, or in a `by (…)`, `without (…)`,
    /// `on (…)`, … of an expression the metric is in, or the label a `label_values` asks of it.
    pub labels: BTreeSet<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str,
    Open(char),
    Close(char),
    Comma,
    /// A matcher's operator: `=`, `!=`, `=~`, `!~`.
    Match,
    /// Anything else that cannot name a metric or label: numbers, durations, arithmetic and
    /// comparison operators, Grafana's `$variables`.
    Other,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_ident(c: char) -> bool {
    is_ident_start(c) || c.is_ascii_digit()
}

fn lex(expr: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            _ if c.is_whitespace() => i += 1,
            '"' | '\'' | '`' => {
                let quote = c;
                i += 1;
                while i < chars.len() && chars[i] != quote {
                    i += if chars[i] == '\\' && quote != '`' {
                        2
                    } else {
                        1
                    };
                }
                if i >= chars.len() {
                    return Err(format!("unterminated string in `{expr}`"));
                }
                i += 1;
                toks.push(Tok::Str);
            }
            // A range or subquery holds durations and Grafana's `$__rate_interval`, never a name.
            '[' => {
                let end = chars[i..]
                    .iter()
                    .position(|&c| c == ']')
                    .ok_or_else(|| format!("unclosed `[` in `{expr}`"))?;
                i += end + 1;
                toks.push(Tok::Other);
            }
            '(' | '{' => {
                toks.push(Tok::Open(c));
                i += 1;
            }
            ')' | '}' => {
                toks.push(Tok::Close(c));
                i += 1;
            }
            ',' => {
                toks.push(Tok::Comma);
                i += 1;
            }
            '=' | '!' if matches!(toks.last(), Some(Tok::Ident(_))) && in_braces(&toks) => {
                let two = chars.get(i + 1).is_some_and(|&n| n == '~' || n == '=');
                if c == '!' && !two {
                    return Err(format!("bad matcher in `{expr}`"));
                }
                i += if two { 2 } else { 1 };
                toks.push(Tok::Match);
            }
            '$' => {
                i += 1;
                while i < chars.len() && (is_ident(chars[i]) || chars[i] == '{' || chars[i] == '}')
                {
                    i += 1;
                }
                toks.push(Tok::Other);
            }
            _ if is_ident_start(c) => {
                let start = i;
                while i < chars.len() && is_ident(chars[i]) {
                    i += 1;
                }
                toks.push(Tok::Ident(chars[start..i].iter().collect()));
            }
            // Numbers and durations (`5m`, `1e3`, `0x1f`) are read whole, so their letters are
            // not taken for a name.
            _ if c.is_ascii_digit() || c == '.' => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                toks.push(Tok::Other);
            }
            '+' | '-' | '*' | '/' | '%' | '^' | '<' | '>' | '=' | '!' => {
                i += 1;
                toks.push(Tok::Other);
            }
            _ => return Err(format!("unexpected `{c}` in `{expr}`")),
        }
    }
    Ok(toks)
}

/// Whether the tokens so far leave a `{` open.
fn in_braces(toks: &[Tok]) -> bool {
    let mut depth = 0i32;
    for t in toks {
        match t {
            Tok::Open('{') => depth += 1,
            Tok::Close('}') => depth -= 1,
            _ => {}
        }
    }
    depth > 0
}

/// PromQL's functions and aggregation operators that a dashboard may use: a name before `(` that
/// is not here is refused, so a misspelt function is not taken for a metric.
const FUNCTIONS: &[&str] = &[
    "abs",
    "absent",
    "absent_over_time",
    "avg",
    "avg_over_time",
    "bottomk",
    "ceil",
    "changes",
    "clamp",
    "clamp_max",
    "clamp_min",
    "count",
    "count_over_time",
    "count_values",
    "delta",
    "deriv",
    "floor",
    "group",
    "histogram_quantile",
    "idelta",
    "increase",
    "irate",
    "label_replace",
    "last_over_time",
    "max",
    "max_over_time",
    "min",
    "min_over_time",
    "quantile",
    "quantile_over_time",
    "rate",
    "resets",
    "round",
    "scalar",
    "sort",
    "sort_desc",
    "stddev",
    "sum",
    "sum_over_time",
    "time",
    "timestamp",
    "topk",
    "vector",
];

/// Keywords followed by a list of labels in parentheses.
const GROUPING: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// Keywords that stand alone.
const KEYWORDS: &[&str] = &["and", "or", "unless", "bool", "offset", "atan2"];

/// The metrics and labels `expr` names: PromQL, or Grafana's `label_values(SELECTOR, LABEL)`.
pub fn references(expr: &str) -> Result<Refs, String> {
    let toks = lex(expr)?;
    let depth = toks.iter().try_fold(0i32, |d, t| {
        let d = match t {
            Tok::Open(_) => d + 1,
            Tok::Close(_) => d - 1,
            _ => d,
        };
        (d >= 0).then_some(d)
    });
    if depth != Some(0) {
        return Err(format!("unbalanced brackets in `{expr}`"));
    }
    let mut refs = Refs::default();
    // Labels of grouping clauses and `label_values`: they apply to every metric of the
    // expression (the dashboard's expressions aggregate one metric each).
    let mut grouped = BTreeSet::new();
    walk(&toks, expr, &mut refs, &mut grouped)?;
    if !grouped.is_empty() && refs.metrics.is_empty() {
        return Err(format!("labels {grouped:?} but no metric in `{expr}`"));
    }
    for m in &refs.metrics {
        for l in &grouped {
            refs.labels.insert((m.clone(), l.clone()));
        }
    }
    Ok(refs)
}

fn walk(
    toks: &[Tok],
    expr: &str,
    refs: &mut Refs,
    grouped: &mut BTreeSet<String>,
) -> Result<(), String> {
    let mut i = 0;
    while i < toks.len() {
        let next = toks.get(i + 1);
        match &toks[i] {
            Tok::Ident(w) if GROUPING.contains(&w.as_str()) => {
                if next != Some(&Tok::Open('(')) {
                    // `group_left` may stand without a list.
                    if w.starts_with("group_") {
                        i += 1;
                        continue;
                    }
                    return Err(format!("`{w}` without a label list in `{expr}`"));
                }
                let end = closing(toks, i + 1, expr)?;
                for t in &toks[i + 2..end] {
                    match t {
                        Tok::Ident(l) => {
                            grouped.insert(l.clone());
                        }
                        Tok::Comma => {}
                        t => return Err(format!("{t:?} in the labels of `{w}` in `{expr}`")),
                    }
                }
                i = end + 1;
            }
            Tok::Ident(w) if w == "label_values" => {
                if next != Some(&Tok::Open('(')) {
                    return Err(format!("label_values without arguments in `{expr}`"));
                }
                let end = closing(toks, i + 1, expr)?;
                let args = &toks[i + 2..end];
                let comma = args
                    .iter()
                    .rposition(|t| *t == Tok::Comma)
                    .ok_or_else(|| format!("label_values names no metric in `{expr}`"))?;
                match &args[comma + 1..] {
                    [Tok::Ident(l)] => grouped.insert(l.clone()),
                    _ => return Err(format!("label_values ends in no label in `{expr}`")),
                };
                walk(&args[..comma], expr, refs, grouped)?;
                i = end + 1;
            }
            Tok::Ident(w) if FUNCTIONS.contains(&w.as_str()) => {
                // An aggregation may put its grouping before its argument: `sum by (x) (…)`.
                let grouping_next =
                    matches!(next, Some(Tok::Ident(n)) if GROUPING.contains(&n.as_str()));
                if next != Some(&Tok::Open('(')) && !grouping_next {
                    return Err(format!("`{w}` not called in `{expr}`"));
                }
                i += 1;
            }
            Tok::Ident(w) if KEYWORDS.contains(&w.as_str()) => i += 1,
            Tok::Ident(w) if next == Some(&Tok::Open('(')) => {
                return Err(format!("unknown function `{w}` in `{expr}`"));
            }
            Tok::Ident(metric) => {
                refs.metrics.insert(metric.clone());
                i += 1;
                if next == Some(&Tok::Open('{')) {
                    let end = closing(toks, i, expr)?;
                    for m in toks[i + 1..end].split(|t| *t == Tok::Comma) {
                        match m {
                            [] => {} // a trailing comma
                            [Tok::Ident(l), Tok::Match, Tok::Str] => {
                                refs.labels.insert((metric.clone(), l.clone()));
                            }
                            m => return Err(format!("bad matcher {m:?} in `{expr}`")),
                        }
                    }
                    i = end + 1;
                }
            }
            Tok::Open('{') => {
                return Err(format!("a selector without a metric name in `{expr}`"));
            }
            Tok::Match | Tok::Str => return Err(format!("a stray matcher or string in `{expr}`")),
            _ => i += 1,
        }
    }
    Ok(())
}

/// The index of the token closing the bracket opened at `open`.
fn closing(toks: &[Tok], open: usize, expr: &str) -> Result<usize, String> {
    let mut depth = 0;
    for (j, t) in toks.iter().enumerate().skip(open) {
        match t {
            Tok::Open(_) => depth += 1,
            Tok::Close(_) => {
                depth -= 1;
                if depth == 0 {
                    return Ok(j);
                }
            }
            _ => {}
        }
    }
    Err(format!("unbalanced brackets in `{expr}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_names_what_an_expression_queries_and_refuses_what_it_cannot_read() {
        // The checks above are only worth something if the reader finds every name and can say no.
        let pairs = |r: &Refs| -> Vec<(String, String)> { r.labels.iter().cloned().collect() };
        let r = references(
        r#"sum by (role) (rate(a_total{job=~"$job", x!="}{,by (z)"}[$__rate_interval] offset 5m)) / on(role) group_left b"#,
    )
    .unwrap();
        assert_eq!(
            r.metrics,
            ["a_total", "b"].map(String::from).into_iter().collect()
        );
        assert_eq!(
            pairs(&r),
            [
                ("a_total", "job"),
                ("a_total", "role"),
                ("a_total", "x"),
                ("b", "role")
            ]
            .map(|(m, l)| (m.to_string(), l.to_string()))
        );
        let r = references("max(c) without (run) > 1e3 and histogram_quantile(0.99, d_bucket)")
            .unwrap();
        assert_eq!(
            r.metrics,
            ["c", "d_bucket"].map(String::from).into_iter().collect()
        );
        assert_eq!(pairs(&r).len(), 2, "{r:?}");
        let r = references(r#"label_values(e{job=~"$job"}, instance)"#).unwrap();
        assert_eq!(
            pairs(&r),
            [("e", "instance"), ("e", "job")].map(|(m, l)| (m.to_string(), l.to_string()))
        );
        for (bad, why) in [
            ("summ(a)", "unknown function `summ`"),
            (r#"{__name__="a"}"#, "without a metric name"),
            (r#"a{b="c"#, "unterminated string"),
            ("rate(a[5m)", "unclosed `[`"),
            ("sum(a", "unbalanced"),
            ("label_values(instance)", "names no metric"),
            (r#"a{b}"#, "bad matcher"),
            ("sum by role (a)", "without a label list"),
            ("a # b", "unexpected `#`"),
        ] {
            let e = references(bad).expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
