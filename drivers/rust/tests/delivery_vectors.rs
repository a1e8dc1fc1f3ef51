//! The cross-language delivery vectors (`spec/vectors/delivery/*.json`): each file's arrivals,
//! stamped as this driver's publishers stamp them, go into one subscriber's `DeliveryLog`; the
//! result's delivery section, serialized, and every publisher's tracker must come to exactly
//! the expected counts.

use std::path::PathBuf;

use serde_json::{json, Value};

use msgbench_driver_rust::delivery::{summarize, DeliveryLog};
use msgbench_driver_rust::stamp::Payloads;

fn vector_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors/delivery")
}

fn vectors() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(vector_dir())
        .expect("spec/vectors/delivery exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, serde_json::from_str(&text).unwrap())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn there_are_delivery_vectors() {
    assert!(vectors().len() >= 8);
}

#[test]
fn every_vector_counts_as_expected() {
    let mut failures = Vec::new();
    for (name, v) in vectors() {
        assert_eq!(
            v["name"],
            name.as_str(),
            "{name}: name does not match the file"
        );
        let sent = u64s(&v["sent"]);
        let mut payloads: Vec<Payloads> = (0..sent.len() as u64)
            .map(|p| Payloads::new(16, p))
            .collect();
        let mut log = DeliveryLog::new(sent.len(), true);
        for a in v["arrivals"].as_array().unwrap() {
            let pair = u64s(a);
            let (publisher, seq) = (pair[0] as usize, pair[1]);
            log.record(&payloads[publisher].get(seq));
        }
        assert_eq!(
            log.foreign, 0,
            "{name}: an arrival outside the vector's publishers"
        );

        let mut want_section = v["expect"].clone();
        let section = want_section.as_object_mut().unwrap();
        let want_publishers = section.remove("publishers").unwrap();
        let want_unique = section.remove("unique").unwrap();

        let got_section = serde_json::to_value(summarize(&sent, &[&log], true)).unwrap();
        let trackers: Vec<_> = (0..sent.len())
            .map(|p| log.tracker(p).expect("a tracker per publisher"))
            .collect();
        let got_unique = json!(trackers.iter().map(|t| t.unique).sum::<u64>());
        // Per publisher, as msgbench counts it: received = unique + duplicated,
        // lost = sent - unique.
        let got_publishers = Value::Array(
            trackers
                .iter()
                .enumerate()
                .map(|(p, t)| {
                    json!({
                        "id": p,
                        "sent": sent[p],
                        "received": t.unique + t.duplicated,
                        "unique": t.unique,
                        "lost": sent[p].saturating_sub(t.unique),
                        "duplicated": t.duplicated,
                        "reordered": t.reordered,
                    })
                })
                .collect(),
        );
        if got_section != want_section {
            failures.push(format!(
                "{name}: section {got_section}, want {want_section}"
            ));
        }
        if got_unique != want_unique {
            failures.push(format!("{name}: unique {got_unique}, want {want_unique}"));
        }
        if got_publishers != want_publishers {
            failures.push(format!(
                "{name}: publishers {got_publishers}, want {want_publishers}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
