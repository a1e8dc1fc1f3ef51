//! The cross-language histogram vectors (`spec/vectors/hdr/*.json`): this driver must decode
//! the compressed V2 form to exactly the listed buckets, and a histogram it builds from the
//! listed values must survive its own compressed encoding and produce, uncompressed, the very
//! bytes of `v2_base64`.

use std::path::PathBuf;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde_json::Value;

use msgbench_driver_rust::hist::{encode, new_histogram, HIGHEST, LOWEST, SIGFIG};

fn vector_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors/hdr")
}

fn vectors() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(vector_dir())
        .expect("spec/vectors/hdr exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, serde_json::from_str(&text).unwrap())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!out.is_empty(), "no hdr vectors found");
    out
}

fn pairs(v: &Value, key: &str) -> Vec<(u64, u64)> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is an array"))
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect()
}

/// [highest equivalent value, count] of every non-empty bucket.
fn buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

fn decode(b64: &str) -> Histogram<u64> {
    let bytes = STANDARD.decode(b64).expect("valid base64");
    Deserializer::new()
        .deserialize(&mut &bytes[..])
        .expect("a valid histogram encoding")
}

fn build(v: &Value) -> Histogram<u64> {
    let mut h = new_histogram();
    for (value, count) in pairs(v, "values") {
        h.record_n(value, count).expect("value in range");
    }
    h
}

#[test]
fn bounds_match_the_vectors() {
    for (name, v) in vectors() {
        assert_eq!(v["lowest_discernible"].as_u64(), Some(LOWEST), "{name}");
        assert_eq!(v["highest_trackable"].as_u64(), Some(HIGHEST), "{name}");
        assert_eq!(
            v["significant_digits"].as_u64(),
            Some(u64::from(SIGFIG)),
            "{name}"
        );
    }
}

#[test]
fn compressed_vectors_decode_to_listed_buckets() {
    for (name, v) in vectors() {
        let h = decode(v["v2_compressed_base64"].as_str().unwrap());
        assert_eq!(buckets(&h), pairs(&v, "recorded_buckets"), "{name}");
        assert_eq!(Some(h.len()), v["total_count"].as_u64(), "{name}");
        if !h.is_empty() {
            assert_eq!(Some(h.max()), v["max"].as_u64(), "{name}: max");
            assert_eq!(Some(h.min()), v["min"].as_u64(), "{name}: min");
            assert_eq!(
                Some(h.value_at_quantile(0.5)),
                v["p50"].as_u64(),
                "{name}: p50"
            );
            assert_eq!(
                Some(h.value_at_quantile(0.99)),
                v["p99"].as_u64(),
                "{name}: p99"
            );
        }
        // The uncompressed form decodes to the same buckets.
        let plain = decode(v["v2_base64"].as_str().unwrap());
        assert_eq!(buckets(&plain), buckets(&h), "{name}: v2_base64");
    }
}

#[test]
fn built_histograms_round_trip_through_the_driver_encoding() {
    for (name, v) in vectors() {
        let h = build(&v);
        assert_eq!(buckets(&h), pairs(&v, "recorded_buckets"), "{name}: built");
        let encoded = encode(&h);
        let bytes = STANDARD.decode(&encoded).unwrap();
        assert_eq!(
            &bytes[..4],
            &[0x1c, 0x84, 0x93, 0x14],
            "{name}: V2 compressed cookie"
        );
        let back = decode(&encoded);
        assert_eq!(
            buckets(&back),
            pairs(&v, "recorded_buckets"),
            "{name}: decoded"
        );
        assert_eq!(Some(back.len()), v["total_count"].as_u64(), "{name}");
    }
}

#[test]
fn uncompressed_v2_bytes_match_exactly() {
    for (name, v) in vectors() {
        let mut bytes = Vec::new();
        V2Serializer::new()
            .serialize(&build(&v), &mut bytes)
            .unwrap();
        assert_eq!(
            STANDARD.encode(&bytes),
            v["v2_base64"].as_str().unwrap(),
            "{name}: uncompressed V2 bytes"
        );
    }
}
