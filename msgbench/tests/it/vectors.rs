//! The shared histogram vectors of the driver protocol (`spec/vectors/hdr/`), checked with the
//! same HdrHistogram encoding the native engine writes: each file's listed values must encode to
//! its uncompressed V2 bytes exactly, and its compressed form must decode to those values. Every
//! driver runs the same files in its own language. `MSGBENCH_WRITE_VECTORS=1` rewrites them.

use std::path::PathBuf;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use hdrhistogram::Histogram;
use serde_json::{json, Value};

const HIGHEST: u64 = 3_600_000_000_000;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../spec/vectors/hdr")
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn histogram(values: &[(u64, u64)]) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, HIGHEST, 3).unwrap();
    for &(v, n) in values {
        h.record_n(v, n).unwrap();
    }
    h
}

/// The cases: edge values, a latency-like spread, and nothing at all.
fn cases() -> Vec<(&'static str, Vec<(u64, u64)>)> {
    let mut spread = Vec::new();
    // 40 values from 20 µs to ~2 s, geometric, with counts falling off like a latency tail.
    let mut v = 20_000f64;
    for i in 0..40u64 {
        spread.push((v as u64, 1 + 1000 / (i + 1) / (i + 1)));
        v *= 1.33;
    }
    vec![
        (
            "edges",
            vec![(1, 1), (2, 1), (1000, 5), (123_456, 3), (HIGHEST, 1)],
        ),
        ("latency_tail", spread),
        ("empty", Vec::new()),
    ]
}

fn vector(name: &str, values: &[(u64, u64)]) -> Value {
    let h = histogram(values);
    let (mut plain, mut packed) = (Vec::new(), Vec::new());
    V2Serializer::new().serialize(&h, &mut plain).unwrap();
    V2DeflateSerializer::new()
        .serialize(&h, &mut packed)
        .unwrap();
    // Each bucket that holds a count, named by its highest equivalent value (as HdrHistogram's
    // iterators and max/percentile queries report values), so a reader compares by bucket.
    let buckets: Vec<Value> = h
        .iter_recorded()
        .map(|x| json!([x.value_iterated_to(), x.count_at_value()]))
        .collect();
    json!({
        "name": name,
        "lowest_discernible": 1,
        "highest_trackable": HIGHEST,
        "significant_digits": 3,
        "values": values.iter().map(|(v, n)| json!([v, n])).collect::<Vec<_>>(),
        "total_count": h.len(),
        "min": if h.is_empty() { 0 } else { h.min() },
        "max": h.max(),
        "p50": h.value_at_quantile(0.5),
        "p99": h.value_at_quantile(0.99),
        "recorded_buckets": buckets,
        "v2_base64": b64(&plain),
        "v2_compressed_base64": b64(&packed),
    })
}

#[test]
fn histogram_vectors_match_this_encoding() {
    let write = std::env::var("MSGBENCH_WRITE_VECTORS").is_ok_and(|v| v == "1");
    for (name, values) in cases() {
        let want = vector(name, &values);
        let path = dir().join(format!("{name}.json"));
        if write {
            std::fs::create_dir_all(dir()).unwrap();
            let mut text = serde_json::to_string_pretty(&want).unwrap();
            text.push('\n');
            std::fs::write(&path, text).unwrap();
        }
        let have: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        // The uncompressed bytes are exact; the compressed bytes may differ by zlib, so they
        // are checked by decoding.
        for field in [
            "values",
            "total_count",
            "min",
            "max",
            "p50",
            "p99",
            "v2_base64",
        ] {
            assert_eq!(have[field], want[field], "{name}: {field}");
        }
        let packed = base64::engine::general_purpose::STANDARD
            .decode(have["v2_compressed_base64"].as_str().unwrap())
            .unwrap();
        let decoded: Histogram<u64> = Deserializer::new()
            .deserialize(&mut packed.as_slice())
            .unwrap();
        assert_eq!(decoded, histogram(&values), "{name}: compressed form");
    }
}
