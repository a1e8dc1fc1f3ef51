//! The draws are what was asked: over 1,000,000 draws, each size's share is
//! within 1% (absolute) of its weight, and a lognormal's draws are within a Kolmogorov-Smirnov
//! distance of 0.01 of the target (statrs's CDF, not the sampler's own arithmetic).

use std::collections::HashMap;

use super::size::{HistBucket, HistFile, HIST_SCHEMA};
use super::subject::{self, NamedToken, Template};
use super::token;
use super::*;

const DRAWS: u64 = 1_000_000;

fn sizes(spec: &str, floor: usize) -> Sizes {
    Sizes::build(&SizeDist::parse(spec).unwrap(), floor).unwrap()
}

/// Draws from `f` for messages 0 … DRAWS-1 of one sender and counts each value.
fn counts<T: std::hash::Hash + Eq>(mut f: impl FnMut(&mut Gen) -> T) -> HashMap<T, u64> {
    let s = Stream::new(42, Purpose::Size, 3);
    let mut c = HashMap::new();
    for seq in 0..DRAWS {
        *c.entry(f(&mut s.at(seq))).or_insert(0) += 1;
    }
    c
}

fn within(got: u64, want: f64, what: &str) {
    let got = got as f64 / DRAWS as f64;
    assert!(
        (got - want).abs() < 0.01,
        "{what}: drew {got:.4} of the time, asked {want:.4}"
    );
}

#[test]
fn a_weighted_list_of_sizes_draws_each_by_its_weight() {
    let s = sizes("64B:70%,1KiB:25%,64KiB:5%", 16);
    let c = counts(|g| s.draw(g));
    assert_eq!(c.len(), 3);
    within(c[&64], 0.70, "64 B");
    within(c[&1024], 0.25, "1 KiB");
    within(c[&65536], 0.05, "64 KiB");
    assert_eq!((s.min(), s.max()), (64, 65536));
    assert!((s.mean() - (0.7 * 64.0 + 0.25 * 1024.0 + 0.05 * 65536.0)).abs() < 1e-6);
}

#[test]
fn a_weighted_list_of_ranges_draws_each_by_its_weight_and_evenly_within() {
    let s = sizes("16..63:60.5%,64:30%,1000..2000:9.5%", 16);
    let c = counts(|g| s.draw(g));
    let share = |r: std::ops::RangeInclusive<usize>| {
        r.clone()
            .map(|n| c.get(&n).copied().unwrap_or(0))
            .sum::<u64>()
    };
    within(share(16..=63), 0.605, "16..63");
    within(c[&64], 0.30, "64");
    within(share(1000..=2000), 0.095, "1000..2000");
    assert_eq!(share(16..=63) + c[&64] + share(1000..=2000), DRAWS);
    // Evenly within a range: each half of 16..63 takes half its weight.
    within(share(16..=39), 0.605 / 2.0, "16..39");
    within(share(1000..=1499), 0.095 * 500.0 / 1001.0, "1000..1499");
    assert_eq!((s.min(), s.max()), (16, 2000));
    let mean = 0.605 * 39.5 + 0.30 * 64.0 + 0.095 * 1500.0;
    assert!((s.mean() - mean).abs() < 1e-6, "{}", s.mean());
    // A range's ends are sizes as --size reads them.
    let kib = sizes("1KiB..2KiB:50%,64B:50%", 16);
    assert_eq!((kib.min(), kib.max()), (64, 2048));
}

#[test]
fn uniform_sizes_cover_the_range_evenly() {
    let s = sizes("uniform:16..25", 16);
    let c = counts(|g| s.draw(g));
    assert_eq!(c.len(), 10);
    for n in 16..=25 {
        within(c[&n], 0.1, &format!("{n} B"));
    }
    assert_eq!(s.mean(), 20.5);
}

#[test]
fn a_lognormal_is_within_a_ks_distance_of_the_target() {
    use statrs::distribution::{Continuous, ContinuousCDF, LogNormal, Normal};
    let s = sizes("lognormal:1KiB:16KiB", 16);
    let g = Stream::new(9, Purpose::Size, 0);
    let mut x: Vec<usize> = (0..DRAWS).map(|seq| s.draw(&mut g.at(seq))).collect();
    x.sort_unstable();
    // The target: median 1024, P99 16384.
    let sigma = (16.0f64).ln() / Normal::standard().inverse_cdf(0.99);
    let target = LogNormal::new(1024f64.ln(), sigma).unwrap();
    assert!((target.inverse_cdf(0.5) - 1024.0).abs() < 1e-6);
    // Draws are whole bytes: compare each against the CDF at the top of its byte.
    let n = x.len() as f64;
    let d = x
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let f = target.cdf(v as f64 + 0.5);
            let lo = target.cdf(v as f64 - 0.5);
            (f - (i + 1) as f64 / n)
                .abs()
                .max((lo - i as f64 / n).abs())
        })
        .fold(0.0f64, f64::max);
    assert!(d < 0.01, "KS distance {d}");
    // The mean the result records is the lognormal's, e^(μ+σ²/2), barely moved by the clamp.
    let want = (1024f64.ln() + sigma * sigma / 2.0).exp();
    assert!(
        (s.mean() - want).abs() / want < 0.01,
        "{} against {want}",
        s.mean()
    );
    let _ = target.pdf(1.0);
}

#[test]
fn a_histogram_file_draws_buckets_by_their_counts() {
    let dir = std::env::temp_dir().join(format!("msgbench-hist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sizes.json");
    let h = HistFile {
        schema: HIST_SCHEMA.into(),
        buckets: vec![
            HistBucket {
                from: 16,
                to: 63,
                count: 600,
            },
            HistBucket {
                from: 64,
                to: 64,
                count: 300,
            },
            HistBucket {
                from: 1000,
                to: 2000,
                count: 100,
            },
            HistBucket {
                from: 5000,
                to: 6000,
                count: 0,
            },
        ],
    };
    std::fs::write(&path, serde_json::to_string(&h).unwrap()).unwrap();
    let s = sizes(&format!("hist:{}", path.display()), 16);
    let c = counts(|g| match s.draw(g) {
        16..=63 => 0,
        64 => 1,
        1000..=2000 => 2,
        other => panic!("{other} is in no bucket with a count"),
    });
    within(c[&0], 0.6, "16..63");
    within(c[&1], 0.3, "64");
    within(c[&2], 0.1, "1000..2000");
    assert_eq!(s.max(), 2000);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_same_seed_draws_the_same_sequence() {
    let s = sizes("uniform:16..100000", 16);
    let seq = |seed, sender| {
        let st = Stream::new(seed, Purpose::Size, sender);
        (0..1000).map(|i| s.draw(&mut st.at(i))).collect::<Vec<_>>()
    };
    assert_eq!(seq(1, 0), seq(1, 0));
    assert_ne!(seq(1, 0), seq(2, 0));
    assert_ne!(seq(1, 0), seq(1, 1));
    // Neighbouring messages are not shifted copies of each other.
    let a = seq(1, 0);
    assert_ne!(a[1..11], seq(1, 0)[0..10]);
}

#[test]
fn bad_values_say_what_is_wrong() {
    let size = |s: &str| SizeDist::parse(s).unwrap_err();
    assert!(
        size("64B:70%,1KiB:20%").contains("add up to 90%"),
        "{}",
        size("64B:70%,1KiB:20%")
    );
    assert!(size("lognormal:4KiB:1KiB").contains("must be above its MEDIAN"));
    assert!(size("lognormal:1KiB").contains("lognormal:MEDIAN:P99"));
    assert!(size("uniform:4KiB..1KiB").contains("below LO"));
    assert!(size("64B:70,1KiB:30%").contains("needs a %"));
    assert!(size("hist:").contains("needs a file"));
    assert!(size("63..16:50%,64:50%").contains("range '63..16': HI is below LO"));
    assert!(size("16..65MiB:50%,64:50%").contains("over 64 MiB"));
    assert!(size("16..x:50%,64:50%").contains("x"));
    assert!(size("16..63:60%,64:30%").contains("add up to 90%"));
    let built = |s: &str, floor| Sizes::build(&SizeDist::parse(s).unwrap(), floor).unwrap_err();
    assert!(built("hist:/nonexistent/sizes.json", 16).contains("cannot read"));
    assert!(built("8B:50%,1KiB:50%", 16).contains("below the 16-byte stamp"));
    assert!(built("lognormal:20B:1KiB", 16).contains("below the 16-byte stamp"));
}

/// Draws keys over `n` from `spec` (a `--key-dist`) for messages 0 … DRAWS-1 of one sender, and
/// holds each key's share to the exact probability: within 1% absolute each, and within 1% in
/// total variation over all the keys.
fn keys_follow(spec: &str, n: u64) -> token::Numbered {
    let pick = TokenDist::parse_keys(spec)
        .unwrap()
        .build(Some(n))
        .unwrap()
        .numbered()
        .unwrap();
    let s = Stream::new(42, Purpose::Key, 3);
    let mut c = vec![0u64; n as usize];
    for seq in 0..DRAWS {
        let k = pick.draw(&mut s.at(seq));
        assert!(k < n, "{spec}: key {k} of {n}");
        c[k as usize] += 1;
    }
    let mut tv = 0.0;
    for (k, &got) in c.iter().enumerate() {
        let want = pick.probability(k as u64);
        within(got, want, &format!("{spec}: key {k}"));
        tv += (got as f64 / DRAWS as f64 - want).abs() / 2.0;
    }
    assert!(tv < 0.01, "{spec}: total variation {tv}");
    let total: f64 = (0..n).map(|k| pick.probability(k)).sum();
    assert!(
        (total - 1.0).abs() < 1e-9,
        "{spec}: probabilities add up to {total}"
    );
    pick
}

#[test]
fn zipf_keys_draw_each_by_its_exact_probability() {
    keys_follow("zipf:1.1", 100);
    keys_follow("zipf:0.5", 50);
    let p = keys_follow("zipf:2", 1000);
    // Key 0 takes 1/ζ(2)-ish of the draws: 1 / Σ 1/k² over 1000 keys.
    assert!(
        (p.probability(0) - 0.6083).abs() < 1e-3,
        "{}",
        p.probability(0)
    );
}

#[test]
fn a_hot_set_takes_its_share() {
    let p = keys_follow("hot:1%:50%", 1000);
    // 10 hot keys share half the draws: 5% each; the other 990 share the rest.
    assert!((p.probability(0) - 0.05).abs() < 1e-12);
    assert!((p.probability(999) - 0.5 / 990.0).abs() < 1e-12);
    keys_follow("hot:20%:80%", 50);
}

#[test]
fn uniform_keys_are_even() {
    keys_follow("uniform", 40);
}

#[test]
fn bad_key_distributions_say_what_is_wrong() {
    let keys = |s: &str| TokenDist::parse_keys(s).unwrap_err();
    assert!(
        keys("zipf:0").contains("must be above 0"),
        "{}",
        keys("zipf:0")
    );
    assert!(keys("zipf:-1").contains("must be above 0"));
    assert!(keys("zipf:x").contains("not a number"));
    assert!(keys("hot:1%").contains("hot:KEYS%:SHARE%"));
    assert!(keys("hot:0%:50%").contains("between 0% and 100%"));
    assert!(keys("hot:1%:100%").contains("between 0% and 100%"));
    assert!(keys("hot:1:50%").contains("needs a %"));
    assert!(
        keys("zipf:1.1:100").contains("--keys"),
        "{}",
        keys("zipf:1.1:100")
    );
    assert!(keys("a,b").contains("not a key distribution"));
    assert!(keys("1..9").contains("not a key distribution"));
    assert!(keys("").contains("no values"));
    let built = |s: &str, n| {
        TokenDist::parse_keys(s)
            .unwrap()
            .build(Some(n))
            .unwrap_err()
    };
    assert!(
        built("hot:1%:50%", 10).contains("0 hot ones"),
        "{}",
        built("hot:1%:50%", 10)
    );
    assert!(built("hot:99.9%:50%", 10).contains("10 hot ones"));
}

#[test]
fn the_same_seed_draws_the_same_keys() {
    let pick = TokenDist::parse_keys("zipf:1.1")
        .unwrap()
        .build(Some(1000))
        .unwrap()
        .numbered()
        .unwrap();
    let seq = |seed, sender| {
        let st = Stream::new(seed, Purpose::Key, sender);
        (0..1000)
            .map(|i| pick.draw(&mut st.at(i)))
            .collect::<Vec<_>>()
    };
    assert_eq!(seq(1, 0), seq(1, 0));
    assert_ne!(seq(1, 0), seq(2, 0));
    assert_ne!(seq(1, 0), seq(1, 1));
}

fn template(subject: &str, tokens: &[&str]) -> Result<Template, subject::Fault> {
    let tokens: Vec<NamedToken> = tokens
        .iter()
        .map(|t| NamedToken::parse(t).unwrap())
        .collect();
    Template::build(subject, &tokens)
}

/// Message `seq`'s subject from `t` for sender 3.
fn subject_of(t: &Template, seq: u64) -> String {
    let s = Stream::new(42, Purpose::Subject, 3);
    t.with_subject(&mut s.at(seq), |parts| {
        String::from_utf8(parts.concat()).unwrap()
    })
}

#[test]
fn a_template_draws_each_token_by_its_weights() {
    let t = template(
        "orders.{region}.{id}.x{region}",
        &["region=us:50%,eu:30%,ap:20%", "id=zipf:1.1:100"],
    )
    .unwrap();
    assert_eq!(t.wildcard(), "orders.*.*.*");
    assert_eq!(t.example(), "orders.x.x.x");
    let zipf = TokenDist::parse("zipf:1.1:100")
        .unwrap()
        .build(None)
        .unwrap()
        .numbered()
        .unwrap();
    let (mut regions, mut ids) = (HashMap::new(), vec![0u64; 100]);
    for seq in 0..DRAWS {
        let s = subject_of(&t, seq);
        let parts: Vec<&str> = s.split('.').collect();
        assert_eq!(parts.len(), 4, "{s}");
        assert_eq!(parts[0], "orders");
        // A token used twice shows one value twice.
        assert_eq!(format!("x{}", parts[1]), parts[3], "{s}");
        *regions.entry(parts[1].to_string()).or_insert(0u64) += 1;
        ids[parts[2].parse::<usize>().unwrap()] += 1;
    }
    within(regions["us"], 0.5, "us");
    within(regions["eu"], 0.3, "eu");
    within(regions["ap"], 0.2, "ap");
    assert_eq!(regions.len(), 3);
    for (k, &n) in ids.iter().enumerate() {
        within(n, zipf.probability(k as u64), &format!("id {k}"));
    }
}

#[test]
fn ranges_and_plain_lists_are_even() {
    let t = template("m.{n}.{w}", &["n=10..19", "w=a,b,c,d"]).unwrap();
    let (mut n, mut w) = (HashMap::new(), HashMap::new());
    for seq in 0..DRAWS {
        let s = subject_of(&t, seq);
        let parts: Vec<&str> = s.split('.').collect();
        *n.entry(parts[1].to_string()).or_insert(0u64) += 1;
        *w.entry(parts[2].to_string()).or_insert(0u64) += 1;
    }
    assert_eq!((n.len(), w.len()), (10, 4));
    (10..20).for_each(|k| within(n[&k.to_string()], 0.1, &format!("n {k}")));
    ["a", "b", "c", "d"]
        .iter()
        .for_each(|k| within(w[*k], 0.25, k));
}

#[test]
fn bad_templates_say_whose_fault_it_is() {
    let fault = |s: &str, t: &[&str]| template(s, t).unwrap_err();
    let f = fault("orders.{region}", &[]);
    assert_eq!(f.token, None);
    assert!(f.why.contains("--token region="), "{}", f.why);
    let f = fault("orders.{region}", &["region=us", "id=1..9"]);
    assert_eq!(f.token, Some(1));
    assert!(f.why.contains("has no {id}"), "{}", f.why);
    let f = fault("o.{a}", &["a=x", "a=y"]);
    assert_eq!((f.token, f.why.contains("twice")), (Some(1), true));
    assert!(fault("o.{a", &["a=x"]).why.contains("without its '}'"));
    assert!(fault("o.a}", &["a=x"]).why.contains("without its '{'"));
    let f = fault("o.{a}", &["a=zipf:1.1"]);
    assert_eq!(f.token, Some(0));
    assert!(f.why.contains("add :N"), "{}", f.why);
    let f = fault("o.{a}", &["a=hot:0.001%:50%:100"]);
    assert!(f.why.contains("0 hot ones"), "{}", f.why);
    let token = |s: &str| NamedToken::parse(s).unwrap_err();
    assert!(token("region").contains("NAME=VALUES"));
    assert!(token("re.gion=a").contains("letters, digits or _"));
    assert!(token("region=").contains("no values"));
    assert!(token("region=a.b").contains("cannot be a subject token"));
    assert!(token("region=us:50%,eu:40%").contains("add up to 90%"));
    assert!(token("id=zipf:0:10").contains("above 0"));
}

/// A subject too long for the stack buffer is handed over in pieces, drawn alike: the same
/// values as the short template's for the same message.
#[test]
fn a_long_template_draws_what_a_short_one_does() {
    let long_lit = "x".repeat(subject::SHORT);
    let short = template("s.{w}.{n}", &["w=ab:50%,cd:50%", "n=zipf:1.1:1000"]).unwrap();
    let long = template(
        &format!("{long_lit}.{{w}}.{{n}}"),
        &["w=ab:50%,cd:50%", "n=zipf:1.1:1000"],
    )
    .unwrap();
    for seq in 0..1000 {
        let (a, b) = (subject_of(&short, seq), subject_of(&long, seq));
        assert_eq!(b, format!("{long_lit}.{}", a.strip_prefix("s.").unwrap()));
    }
}
