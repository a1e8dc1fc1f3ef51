//! From a tally to classes: each group of subjects becomes a pattern (`orders.{t1}.{t2}`), and
//! each pattern a class of the workload, with its rate, its per-second curve, its sizes and its
//! tokens' values.
//!
//! **The rule.** Subjects are grouped by their first token, their number of tokens and whether
//! they carry a reply subject. Within a group, a token position with one value stays as it is;
//! one with several becomes a token `{tN}` (N its position). A token with at most `--max-words`
//! values keeps them, each with its share of the messages; one with more keeps only the shape
//! of their counts by rank: a Zipf exponent fitted to the rank-frequency curve over that many
//! values (`zipf:S:N`), or `uniform:N` when the curve is flat. Positions are drawn
//! independently on replay: what is kept is each token's own distribution, not their joint one.
//!
//! **The kind.** A group whose subjects a stream takes becomes a `js pub` class into that
//! stream; one whose requests were answered on their inbox (most of them) a `request` class
//! with the service time seen; every other a `pub` class.

use super::jetstream::Stream;
use super::watch::{Group, Tally};

/// The smallest size a replayed message may have: the delivery stamp every one carries.
pub const FLOOR: u32 = 16;

/// A class as the file writes it: its name, comment lines, keys (values as JSON, which YAML
/// reads as flow style) and its curve.
#[derive(Debug, Clone)]
pub struct Learned {
    pub name: String,
    pub comment: Vec<String>,
    pub keys: Vec<(&'static str, serde_json::Value)>,
    /// The pattern (as written, redacted when asked) and what `capture diff` compares.
    pub pattern: String,
    pub msgs: u64,
}

/// How the tally is read.
pub struct Rules<'a> {
    pub seconds: f64,
    pub max_words: u64,
    pub redact: &'a dyn Fn(&str) -> String,
}

/// Every group as a class, busiest first.
pub fn classes(tally: &Tally, streams: &[Stream], rules: &Rules<'_>) -> Vec<Learned> {
    let mut order: Vec<&Group> = tally.groups.iter().collect();
    order.sort_by(|a, b| b.msgs.cmp(&a.msgs).then(a.first.cmp(&b.first)));
    let mut out: Vec<Learned> = Vec::new();
    for g in order {
        let c = class(g, tally, streams, rules);
        let stream = streams.iter().find(|s| s.takes(&busiest_raw(g)));
        let followers = stream.map_or_else(Vec::new, |s| consumers(g, &c, s, rules));
        for mut c in std::iter::once(c).chain(followers) {
            let base = c.name.clone();
            let mut n = 2;
            while out.iter().any(|o| o.name == c.name) {
                c.name = format!("{base}-{n}");
                n += 1;
            }
            out.push(c);
        }
    }
    out
}

/// A `js consume` class for each consumer of the stream a `js pub` class fills. A consumer in a
/// workload cannot share its stream with the class that fills it (each class reconciles its
/// stream with its own acknowledgements), so each is replayed on a stream of its own that it
/// fills itself, live, at the stream's rate: the consuming is as captured, and the server
/// carries that stream's publishes once more, which the comment says.
fn consumers(g: &Group, filler: &Learned, s: &Stream, rules: &Rules<'_>) -> Vec<Learned> {
    use serde_json::json;
    let rate = round2(g.msgs as f64 / rules.seconds);
    let msgs = (g.msgs).max(1);
    s.consumers
        .iter()
        .map(|c| {
            let name = (rules.redact)(&c.name);
            let own = format!("{}_{}", (rules.redact)(&s.name), name);
            let mut comment = vec![format!(
                "consumer {name} of stream {} ({}, ack {}), beside class {}: it fills a stream \
                 of its own, {own}, at that class's rate, so the server stores those messages \
                 twice",
                (rules.redact)(&s.name),
                if c.push { "push" } else { "pull" },
                c.ack,
                filler.name
            )];
            if c.push {
                comment
                    .push("a push consumer, replayed as a pull consumer (msgbench's pull)".into());
            }
            let ack = match c.ack.as_str() {
                "all" | "none" => c.ack.as_str(),
                _ => "explicit",
            };
            Learned {
                name: class_name(&format!("{}.{name}", filler.name)),
                comment,
                keys: vec![
                    ("scenario", json!("js consume")),
                    ("publish", json!("live")),
                    ("rate", json!(rate)),
                    ("msgs", json!(msgs)),
                    ("size", json!(median_size(g))),
                    ("mode", json!("consume")),
                    ("ack", json!(ack)),
                    (
                        "target",
                        json!({"stream": own, "subject": format!("{own}.replay"),
                               "storage": s.storage, "replicas": s.replicas, "create": true}),
                    ),
                ],
                pattern: format!("{} (consumer {name})", filler.pattern),
                msgs,
            }
        })
        .collect()
}

/// The pattern of a group and each token's values, as `--token` takes them.
pub struct Pattern {
    pub template: String,
    pub tokens: Vec<String>,
    /// The busiest subject, as seen (for a class that takes no template).
    pub busiest: String,
}

/// The pattern of `g` (see the module's rule).
pub fn pattern(g: &Group, rules: &Rules<'_>) -> Pattern {
    let mut subjects: Vec<(Vec<&str>, u64)> = (g.subjects.iter())
        .filter_map(|(s, n)| Some((std::str::from_utf8(s).ok()?.split('.').collect(), *n)))
        .collect();
    subjects.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let busiest = subjects
        .first()
        .map_or_else(|| g.first.clone(), |(t, _)| t.join("."));
    let mut template = Vec::with_capacity(g.tokens);
    let mut tokens = Vec::new();
    for pos in 0..g.tokens {
        let mut values: Vec<(&str, u64)> = Vec::new();
        for (t, n) in &subjects {
            let Some(v) = t.get(pos) else { continue };
            match values.iter_mut().find(|(w, _)| w == v) {
                Some((_, c)) => *c += n,
                None => values.push((v, *n)),
            }
        }
        match values.as_slice() {
            [] => template.push((rules.redact)(&g.first)),
            [(only, _)] => template.push((rules.redact)(only)),
            _ => {
                let name = format!("t{pos}");
                values.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
                tokens.push(format!("{name}={}", token_values(&values, rules)));
                template.push(format!("{{{name}}}"));
            }
        }
    }
    Pattern {
        template: template.join("."),
        tokens,
        busiest: (rules.redact)(&busiest),
    }
}

/// A token's values: its words with their shares, or the shape of their counts by rank.
fn token_values(values: &[(&str, u64)], rules: &Rules<'_>) -> String {
    let total: u64 = values.iter().map(|(_, n)| n).sum();
    let words_ok = values.iter().all(|(w, _)| {
        !w.is_empty()
            && !w
                .bytes()
                .any(|b| matches!(b, b',' | b':' | b'%' | b'=' | b'{' | b'}') || b <= b' ')
    });
    if values.len() as u64 <= rules.max_words && (words_ok || rules.redact_words()) {
        let shares: Vec<(String, u64)> = values
            .iter()
            .map(|(w, n)| ((rules.redact)(w), *n))
            .collect();
        return percentages(&shares, total);
    }
    let counts: Vec<u64> = values.iter().map(|(_, n)| *n).collect();
    if looks_uniform(&counts) {
        return format!("uniform:{}", counts.len());
    }
    match zipf_exponent(&counts) {
        Some(s) if s > 0.0 => format!("zipf:{s:.3}:{}", counts.len()),
        _ => format!("uniform:{}", counts.len()),
    }
}

/// Whether counts could have come from equal chances: Pearson's chi-squared test of them
/// against their mean, not rejected at the 0.1% level. A uniform draw's counts are never quite
/// equal, and a line fitted through them finds a small slope that is only that noise.
pub fn looks_uniform(counts: &[u64]) -> bool {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    if counts.len() < 2 {
        return true;
    }
    let mean = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
    let chi2: f64 = counts
        .iter()
        .map(|&c| (c as f64 - mean).powi(2) / mean)
        .sum();
    ChiSquared::new((counts.len() - 1) as f64).is_ok_and(|d| 1.0 - d.cdf(chi2) > 0.001)
}

impl Rules<'_> {
    /// Whether words are replaced by hashes (which are always valid words).
    fn redact_words(&self) -> bool {
        (self.redact)(",") != ","
    }
}

/// `item:PCT%,…` with the percentages adding up to 100 within a hundredth of a percent: each
/// rounded to four decimals, the rounding's remainder given to the largest, items that round
/// to nothing folded into it.
pub fn percentages(items: &[(String, u64)], total: u64) -> String {
    let total = total.max(1) as f64;
    let mut pct: Vec<(String, f64)> = items
        .iter()
        .map(|(v, n)| (v.clone(), (*n as f64 / total * 100.0 * 1e4).round() / 1e4))
        .filter(|(_, p)| *p > 0.0)
        .collect();
    if pct.is_empty() {
        return items
            .first()
            .map_or_else(String::new, |(v, _)| format!("{v}:100%"));
    }
    let rest = 100.0 - pct.iter().map(|(_, p)| p).sum::<f64>();
    let big = (0..pct.len())
        .max_by(|&a, &b| pct[a].1.total_cmp(&pct[b].1))
        .unwrap_or(0);
    pct[big].1 = ((pct[big].1 + rest) * 1e4).round() / 1e4;
    pct.iter()
        .map(|(v, p)| format!("{v}:{}%", trim(*p)))
        .collect::<Vec<_>>()
        .join(",")
}

/// A number with at most four decimals and no trailing zeros.
fn trim(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The exponent s of counts by rank c(r) ∝ r^−s: a least-squares line through (ln r, ln c)
/// over the ranks seen at least 5 times (below that a count is mostly the sample's noise),
/// or over all when fewer than three are. `None` for fewer than three values.
pub fn zipf_exponent(counts: &[u64]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = counts
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(i, &c)| (((i + 1) as f64).ln(), (c as f64).ln()))
        .collect();
    let solid: Vec<(f64, f64)> = counts
        .iter()
        .enumerate()
        .filter(|(_, &c)| c >= 5)
        .map(|(i, &c)| (((i + 1) as f64).ln(), (c as f64).ln()))
        .collect();
    let pts = if solid.len() >= 3 { solid } else { pts };
    if pts.len() < 3 {
        return None;
    }
    let n = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| -sxy / sxx)
}

/// A group's sizes as `--size` takes them: one size, or a weighted list of sizes and ranges,
/// each held at [`FLOOR`] or more; and how many messages were below it.
pub fn sizes(g: &Group) -> (String, u64) {
    let mut merged: Vec<((u32, u32), u64)> = Vec::new();
    let mut below = 0;
    for (&(lo, hi), &n) in &g.sizes {
        if hi < FLOOR {
            below += n;
        } else if lo < FLOOR {
            below += n * u64::from(FLOOR - lo) / u64::from(hi - lo + 1);
        }
        let key = (lo.max(FLOOR), hi.max(FLOOR));
        match merged.iter_mut().find(|(k, _)| *k == key) {
            Some((_, c)) => *c += n,
            None => merged.push((key, n)),
        }
    }
    if let [((lo, hi), _)] = merged.as_slice() {
        if lo == hi {
            return (lo.to_string(), below);
        }
    }
    let items: Vec<(String, u64)> = merged
        .iter()
        .map(|&((lo, hi), n)| {
            let v = if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}..{hi}")
            };
            (v, n)
        })
        .collect();
    (percentages(&items, g.msgs), below)
}

/// The median size of a group, held at [`FLOOR`] or more: for classes that send one size.
fn median_size(g: &Group) -> u64 {
    let mut seen = 0;
    for (&(lo, hi), &n) in &g.sizes {
        seen += n;
        if seen * 2 >= g.msgs {
            return u64::from(((lo + hi) / 2).max(FLOOR));
        }
    }
    u64::from(FLOOR)
}

/// The class of one group.
fn class(g: &Group, tally: &Tally, streams: &[Stream], rules: &Rules<'_>) -> Learned {
    use serde_json::json;
    let p = pattern(g, rules);
    let rate = round2(g.msgs as f64 / rules.seconds);
    let (size, below) = sizes(g);
    let mut comment = vec![format!(
        "{}: {} msgs, {} msgs/s, {} B on average{}",
        p.template,
        crate::format::group(g.msgs),
        crate::format::grouped(rate, 2),
        crate::format::group(g.bytes / g.msgs.max(1)),
        if below > 0 {
            format!(
                "; {} smaller than {FLOOR} B, sent as {FLOOR} B",
                crate::format::group(below)
            )
        } else {
            String::new()
        }
    )];
    if g.with_headers > 0 {
        let names: Vec<String> = (tally.header_names.iter().enumerate())
            .filter(|(i, _)| g.header_names & (1 << i) != 0)
            .map(|(_, n)| (rules.redact)(n))
            .collect();
        comment.push(format!(
            "{} with headers: {}",
            crate::format::group(g.with_headers),
            names.join(", ")
        ));
    }
    if g.overflow > 0 {
        comment.push(format!(
            "{} msgs on subjects past --max-subjects: in the rate and sizes, not in the tokens' counts",
            crate::format::group(g.overflow)
        ));
    }
    let curve = json!(g.per_sec);
    let stream = streams.iter().find(|s| s.takes(&busiest_raw(g)));
    let name = class_name(&p.template);
    let mut keys: Vec<(&'static str, serde_json::Value)> = Vec::new();
    if let Some(s) = stream {
        comment.push(format!(
            "into stream {} ({} storage, {} replica{})",
            (rules.redact)(&s.name),
            s.storage,
            s.replicas,
            if s.replicas == 1 { "" } else { "s" }
        ));
        keys.push(("scenario", json!("js pub")));
        keys.push(("rate", json!(rate)));
        keys.push(("size", size_value(&size)));
        keys.push((
            "target",
            json!({"stream": (rules.redact)(&s.name), "subject": p.template,
                   "subjects": s.subjects.iter().map(|x| redact_subject(x, rules)).collect::<Vec<_>>(),
                   "storage": s.storage, "replicas": s.replicas, "create": true}),
        ));
    } else if g.reply && g.answered * 2 >= g.msgs {
        let service = g
            .service_ns
            .as_ref()
            .map_or(0, |h| h.value_at_quantile(0.5));
        let p99 = g
            .service_ns
            .as_ref()
            .map_or(0, |h| h.value_at_quantile(0.99));
        comment.push(format!(
            "a service: {} of its requests answered, in {} at the median and {} at P99 as seen \
             here (the delay below is that median)",
            crate::format::group(g.answered),
            crate::format::duration_ns(service as f64),
            crate::format::duration_ns(p99 as f64)
        ));
        if !p.tokens.is_empty() {
            comment.push(format!(
                "a request class takes one subject: the busiest of {} is used",
                g.subjects.len()
            ));
        }
        // Enough responders that each, answering after the delay, keeps up with the rate; and
        // enough requests in flight that the pace is never waiting for an answer.
        let delay_s = service as f64 / 1e9;
        let responders = ((rate * delay_s * 1.5).ceil() as u64).clamp(1, 64);
        let in_flight = ((rate * (p99 as f64 / 1e9) * 2.0).ceil() as u64).clamp(1, 1000);
        keys.push(("scenario", json!("request")));
        keys.push(("subject", json!(p.busiest)));
        keys.push(("rate", json!(rate)));
        keys.push(("size", json!(median_size(g))));
        keys.push(("delay", json!(format!("{}us", service / 1000))));
        keys.push(("responders", json!(responders)));
        keys.push(("in_flight", json!(in_flight)));
    } else {
        if g.reply {
            comment.push(format!(
                "carries reply subjects, {} of them answered: published as plain messages",
                crate::format::group(g.answered)
            ));
        }
        keys.push(("scenario", json!("pub")));
        keys.push(("subject", json!(p.template)));
        keys.push(("rate", json!(rate)));
        keys.push(("size", size_value(&size)));
    }
    if !p.tokens.is_empty() && !keys.iter().any(|(k, _)| *k == "delay") {
        keys.push(("token", json!(p.tokens)));
    }
    keys.push(("curve", curve));
    Learned {
        name,
        comment,
        keys,
        pattern: p.template,
        msgs: g.msgs,
    }
}

/// The busiest subject of a group as seen (unredacted), for matching a stream's subjects.
fn busiest_raw(g: &Group) -> String {
    g.subjects
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map_or_else(
            || g.first.clone(),
            |(s, _)| String::from_utf8_lossy(s).into(),
        )
}

/// A stream's subject filter with each literal token redacted, its wildcards kept.
pub fn redact_subject(s: &str, rules: &Rules<'_>) -> String {
    s.split('.')
        .map(|t| {
            if t == "*" || t == ">" {
                t.to_string()
            } else {
                (rules.redact)(t)
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn size_value(size: &str) -> serde_json::Value {
    size.parse::<u64>()
        .map_or_else(|_| size.into(), serde_json::Value::from)
}

/// A class's name from its pattern: the literal tokens, joined by '.', at most 48 bytes.
fn class_name(template: &str) -> String {
    let mut name: String = template
        .split('.')
        .filter(|t| !t.starts_with('{'))
        .collect::<Vec<_>>()
        .join(".")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(48)
        .collect();
    if name.is_empty() {
        name = "traffic".into();
    }
    name
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redacted_pattern_keeps_its_shape_and_none_of_its_names() {
        let mut t = Tally::new(1, 100);
        for (s, n) in [("orders.eu.1", 3), ("orders.us.2", 1)] {
            for _ in 0..n {
                t.add(s.as_bytes(), None, None, 20, 0);
            }
        }
        let redact = |s: &str| super::super::write::hashed(s);
        let rules = Rules {
            seconds: 1.0,
            max_words: 16,
            redact: &redact,
        };
        let p = pattern(&t.groups[0], &rules);
        let h = super::super::write::hashed("orders");
        assert_eq!(p.template, format!("{h}.{{t1}}.{{t2}}"));
        assert!(p.template.len() == h.len() + 10 && h.len() == 9);
        let words = format!("t1={}:75%,{}:25%", redact("eu"), redact("us"));
        assert_eq!(p.tokens[0], words);
        let all = format!("{} {:?} {}", p.template, p.tokens, p.busiest);
        for name in ["orders", "eu", "us"] {
            assert!(!all.contains(name), "{all}");
        }
        assert_eq!(redact_subject("orders.*.>", &rules), format!("{h}.*.>"));
    }

    #[test]
    fn percentages_add_up_to_100_within_a_hundredth() {
        let items: Vec<(String, u64)> = (1..=7).map(|i| (format!("w{i}"), i * 13)).collect();
        let text = percentages(&items, items.iter().map(|(_, n)| n).sum());
        let sum: f64 = text
            .split(',')
            .map(|i| i.rsplit_once(':').unwrap().1.trim_end_matches('%'))
            .map(|p| p.parse::<f64>().unwrap())
            .sum();
        assert!((sum - 100.0).abs() <= 0.01, "{text}: {sum}");
        assert!(
            crate::stats::draw::TokenDist::parse(&text).is_ok(),
            "{text}"
        );
    }

    #[test]
    fn zipf_exponent_is_found_from_exact_counts_and_a_flat_curve_is_zero() {
        let counts: Vec<u64> = (1..=1000u64)
            .map(|r| (1e6 / (r as f64).powf(1.2)).round() as u64)
            .collect();
        let s = zipf_exponent(&counts).unwrap();
        assert!((s - 1.2).abs() < 0.01, "{s}");
        assert!(zipf_exponent(&[50; 100]).unwrap().abs() < 1e-9);
        assert_eq!(zipf_exponent(&[5, 4]), None);
    }

    #[test]
    fn a_uniform_draws_counts_look_uniform_and_a_zipfs_do_not() {
        use crate::stats::draw::{Purpose, Stream, TokenDist};
        let count = |spec: &str| {
            let t = TokenDist::parse(spec).unwrap().build(None).unwrap();
            let n = t.numbered().unwrap();
            let stream = Stream::new(7, Purpose::Subject, 0);
            let mut counts = vec![0u64; 100];
            for m in 0..60_000 {
                counts[n.draw(&mut stream.at(m)) as usize] += 1;
            }
            counts.sort_unstable_by(|a, b| b.cmp(a));
            counts
        };
        assert!(looks_uniform(&count("uniform:100")));
        let zipf = count("zipf:1.1:100");
        assert!(!looks_uniform(&zipf));
        let s = zipf_exponent(&zipf).unwrap();
        assert!((s - 1.1).abs() < 0.1, "{s}");
    }
}
