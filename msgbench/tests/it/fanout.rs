//! Fan-out against a real nats-server: with more subscribers than the report lists one by one,
//! the text summarises them (min, median, max and the slowest by id) while the JSON keeps every
//! subscriber's exact figures and carries the same spread, and both fit the schema.

use crate::support::{run_json, schema_errors, stderr, u, TestServer};
use serde_json::Value;

#[test]
fn twelve_subscribers_are_summarised_and_each_keeps_exact_accounting() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "pubsub", "--server", &s.url, "--subs", "12", "--pubs", "1", "--msgs", "50",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());

    // JSON: every subscriber is still there, each with what it missed.
    let subs: Vec<&Value> = v["clients"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["role"] == "sub")
        .collect();
    assert_eq!(subs.len(), 12);
    for c in &subs {
        assert_eq!((u(&c["msgs"]), u(&c["missed"])), (50, 0), "{c}");
    }
    assert!(
        v["clients"][0].get("missed").is_none(),
        "a publisher misses nothing: {v}"
    );
    let spread = &v["by_role"]["sub"]["spread"];
    assert_eq!(u(&spread["msgs"]["min"]), 50, "{spread}");
    assert_eq!(spread["msgs"]["median"].as_f64(), Some(50.0), "{spread}");
    assert_eq!(u(&spread["msgs"]["max"]), 50, "{spread}");
    let rates = &spread["msgs_per_sec"];
    let rate = |k: &str| rates[k].as_f64().unwrap();
    assert!(0.0 < rate("min") && rate("min") <= rate("median") && rate("median") <= rate("max"));
    let slowest = spread["slowest"].as_array().unwrap();
    assert_eq!(slowest.len(), 5);
    for c in slowest {
        assert_eq!((u(&c["msgs"]), u(&c["missed"])), (50, 0), "{c}");
    }
    let first = u(&slowest[0]["id"]);
    // The schema describes the new fields, so it notices when they are wrong.
    let mut broken = v.clone();
    broken["by_role"]["sub"]["spread"]["msgs"]["median"] = Value::from("50");
    broken["clients"][1]["missed"] = Value::from(-1);
    assert_eq!(
        schema_errors(&broken).len(),
        2,
        "{:?}",
        schema_errors(&broken)
    );

    // Text: the summary and the slowest line, not twelve lines of one subscriber each.
    let text = stderr(&out);
    let per_client = text
        .lines()
        .filter(|l| l.trim_start().starts_with('['))
        .count();
    assert_eq!(per_client, 0, "{text}");
    assert!(
        text.contains("  subscribers: 12 · msgs min 50 / median 50 / max 50 · msgs/s min "),
        "{text}"
    );
    let slowest_line = text
        .lines()
        .find(|l| l.starts_with("  slowest: "))
        .unwrap_or_else(|| panic!("no slowest line: {text}"));
    assert!(
        slowest_line.starts_with(&format!("  slowest: sub {first} (50 msgs, ")),
        "{slowest_line}"
    );
    assert_eq!(
        slowest_line.matches(", 0 missed)").count(),
        5,
        "{slowest_line}"
    );
}
