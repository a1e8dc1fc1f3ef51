//! The draws are what was asked: over 1,000,000 draws, each size's and each key's share is
//! within 1% (absolute) of its weight, and a lognormal's draws are within a Kolmogorov-Smirnov
//! distance of 0.01 of the target (statrs's CDF, not the sampler's own arithmetic).

use std::collections::HashMap;

use super::size::{HistBucket, HistFile, HIST_SCHEMA};
use super::subject::NamedToken;
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

fn token(spec: &str, n: Option<u64>) -> token::Token {
    TokenDist::parse(spec).unwrap().build(n).unwrap()
}

#[test]
fn zipf_keys_follow_their_law() {
    let t = token("zipf:1.1:100", None);
    let c = counts(|g| t.number(g));
    let norm: f64 = (1..=100).map(|k| (k as f64).powf(-1.1)).sum();
    for k in 1..=100u64 {
        let want = (k as f64).powf(-1.1) / norm;
        within(
            c.get(&(k - 1)).copied().unwrap_or(0),
            want,
            &format!("rank {k}"),
        );
    }
    // A KV key takes its count from --keys.
    let kv = token("zipf:0.8", Some(1000));
    let c = counts(|g| kv.number(g));
    assert!(c.keys().all(|k| *k < 1000));
    let norm: f64 = (1..=1000).map(|k| (k as f64).powf(-0.8)).sum();
    within(c[&0], 1.0 / norm, "rank 1 of 1000");
}

#[test]
fn a_hot_set_takes_its_share() {
    let t = token("hot:1%:50%:10000", None);
    let c = counts(|g| t.number(g));
    let hot: u64 = c.iter().filter(|(k, _)| **k < 100).map(|(_, n)| n).sum();
    within(hot, 0.5, "the 100 hot keys");
    // Each hot key takes 0.5%, each cold one 0.00505%.
    within(c[&7], 0.005, "hot key 7");
    assert!(c.keys().all(|k| *k < 10_000));
}

#[test]
fn words_and_ranges() {
    let t = token("us:50%,eu:30%,ap:20%", None);
    let c = counts(|g| match t.draw(g) {
        token::Value::Word(w) => w.to_vec(),
        token::Value::Number(_) => unreachable!(),
    });
    within(c[&b"us".to_vec()], 0.5, "us");
    within(c[&b"eu".to_vec()], 0.3, "eu");
    within(c[&b"ap".to_vec()], 0.2, "ap");
    let r = token("10..14", None);
    let c = counts(|g| r.number(g));
    assert_eq!(c.len(), 5);
    within(c[&12], 0.2, "12");
    let even = token("a,b,c,d", None);
    let c = counts(|g| even.number(g));
    within(c[&3], 0.25, "d");
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
fn templates_render_and_listen_on_a_wildcard() {
    let tokens = vec![
        NamedToken::parse("region=us,eu").unwrap(),
        NamedToken::parse("id=zipf:1.2:50").unwrap(),
    ];
    let t = Template::build("orders.{region}.n{id}.{region}", &tokens).unwrap();
    assert_eq!(t.wildcard(), "orders.*.*.*");
    assert_eq!(t.example(), "orders.x.nx.x");
    let st = Stream::new(1, Purpose::Subject, 0);
    let mut seen = HashMap::new();
    for seq in 0..10_000 {
        let subject = t.with_subject(&mut st.at(seq), |parts| parts.concat());
        let s = String::from_utf8(subject).unwrap();
        let p: Vec<&str> = s.split('.').collect();
        assert_eq!(p.len(), 4, "{s}");
        assert_eq!(p[1], p[3], "a token used twice shows one value: {s}");
        assert!(p[2].strip_prefix('n').unwrap().parse::<u64>().unwrap() < 50);
        *seen.entry(p[1].to_string()).or_insert(0u32) += 1;
    }
    assert_eq!(seen.len(), 2);
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
    let built = |s: &str, floor| Sizes::build(&SizeDist::parse(s).unwrap(), floor).unwrap_err();
    assert!(built("hist:/nonexistent/sizes.json", 16).contains("cannot read"));
    assert!(built("8B:50%,1KiB:50%", 16).contains("below the 16-byte stamp"));
    assert!(built("lognormal:20B:1KiB", 16).contains("below the 16-byte stamp"));
    assert!(built("lognormal:100KiB:900KiB", 16).contains("above MAX"));
    let tok = |s: &str| TokenDist::parse(s).unwrap_err();
    assert!(tok("zipf:0:100").contains("above 0"));
    assert!(tok("zipf:-1").contains("above 0"));
    assert!(tok("").contains("no values"));
    assert!(tok("a:50%,b:40%").contains("add up to 90%"));
    assert!(tok("a.b,c").contains("cannot be a subject token"));
    assert!(tok("hot:1%:150%:10").contains("between 0% and 100%"));
    assert!(NamedToken::parse("region=")
        .unwrap_err()
        .contains("no values"));
    let no_values = Template::build("a.{x}", &[]).unwrap_err();
    assert!(no_values.contains("{x} has no values"), "{no_values}");
    let unused = Template::build("a.b", &[NamedToken::parse("x=1..2").unwrap()]).unwrap_err();
    assert!(unused.contains("has no {x}"), "{unused}");
    let count = Template::build("a.{x}", &[NamedToken::parse("x=zipf:1.1").unwrap()]);
    assert!(count.unwrap_err().contains("add :N"));
    let hot = TokenDist::parse("hot:0.001%:50%:100").unwrap().build(None);
    assert!(hot.unwrap_err().contains("at least 1"));
}
