use super::*;

fn read(text: &str) -> Result<Workload> {
    Workload::from_text(text, "w.yaml", "w")
}

fn refusal(text: &str) -> String {
    read(text).expect_err("refused").to_string()
}

const MIX: &str = "
# two classes on one shared server
workload: shop
duration: 3s
conn:
  server: nats://127.0.0.1:4222
classes:
  orders:
    scenario: js pub
    rate: 500
    slo: [p99<50ms, lost==0]
  feed:
    scenario: pubsub
    subs: 3
    rate: 1000
    subject: shop.feed
    slo: p99<20ms
";

#[test]
fn a_mix_keeps_its_order_shares_the_server_and_fills_the_duration() {
    let w = read(MIX).unwrap();
    assert_eq!(w.name, "shop");
    let names: Vec<&str> = w.classes.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["orders", "feed"]);
    assert_eq!(w.classes[0].slo.len(), 2);
    assert_eq!(w.classes[1].slo[0].to_string(), "p99<20ms");
    for c in &w.classes {
        let doc = c.plan.document();
        assert_eq!(doc["conn"]["server"], "nats://127.0.0.1:4222", "{doc}");
        let duration = doc.get("duration").or_else(|| doc["load"].get("duration"));
        assert_eq!(duration, Some(&Value::from("3s")), "{doc}");
    }
    assert_eq!(w.validate().unwrap().len(), 2);
}

#[test]
fn the_printed_form_reads_back_as_the_same_workload() {
    let w = read(MIX).unwrap();
    let printed = w.to_json().unwrap();
    assert_eq!(printed["schema"], SCHEMA);
    assert_eq!(printed["conn"]["server"], "nats://127.0.0.1:4222");
    assert!(printed["classes"][0].get("conn").is_none());
    let again = Workload::from_entries(
        printed.as_object().unwrap().clone().into_iter().collect(),
        "p",
        "p",
    )
    .unwrap();
    assert_eq!(again.to_json().unwrap(), printed);
}

#[test]
fn a_class_keeps_its_own_stop() {
    let w =
        read("duration: 3s\nclasses:\n  a:\n    scenario: request\n    rate: 10\n    msgs: 50\n")
            .unwrap();
    let doc = w.classes[0].plan.document();
    assert_eq!(doc["msgs"], 50);
    assert_eq!(doc["duration"], Value::Null);
}

#[test]
fn bad_workloads_are_refused_naming_the_class_and_the_key() {
    let cases: &[(&str, &[&str])] = &[
        ("classes: {}\n", &["no classes"]),
        ("workers: 3\nclasses: {}\n", &["unknown key 'workers'"]),
        (
            "classes:\n  a:\n    rate: 5\n",
            &["class 'a'", "no scenario"],
        ),
        (
            "classes:\n  a:\n    scenario: js pub\n  b:\n    scenario: reply\n",
            &["class 'a'", "no rate"],
        ),
        (
            "classes:\n  a:\n    scenario: pub\n    rate: 0\n  b:\n    scenario: reply\n",
            &["class 'a'", "no rate"],
        ),
        (
            "classes:\n  a:\n    scenario: pub\n    rate: 5\n    sizes: 9\n",
            &["class 'a'", "--sizes"],
        ),
        (
            "classes:\n  a:\n    scenario: pub\n    rate: 5\n    server: nats://127.0.0.1:1\n",
            &["class 'a'", "'server' is the workload's"],
        ),
        (
            "classes:\n  a:\n    scenario: latency\n    server_b: nats://127.0.0.1:1\n",
            &["class 'a'", "'server_b'"],
        ),
        (
            "classes:\n  a:\n    scenario: pub\n    rate: 5\n    slo: p99<<1\n",
            &["class 'a'", "slo 'p99<<1'"],
        ),
        (
            "classes:\n  a:\n    scenario: warp\n",
            &["class 'a'", "scenario 'warp'"],
        ),
        (
            "classes:\n  a:\n    scenario: pub\n    rate: 5\n  b:\n    scenario: pubsub\n    rate: 5\n",
            &["classes 'a' and 'b'", "subject 'msgbench'"],
        ),
        (
            "conn:\n  fault: kill@1s\nclasses:\n  a:\n    scenario: pub\n    rate: 5\n",
            &["conn.fault"],
        ),
        ("classes:\n  a: 3\n", &["class 'a'", "not a mapping"]),
        ("classes:\n  'a b':\n    scenario: pub\n", &["class 'a b'", "name"]),
    ];
    for (text, words) in cases {
        let e = refusal(text);
        assert!(e.starts_with("workload 'w.yaml'"), "{text}: {e}");
        for w in *words {
            assert!(e.contains(w), "{text}: '{w}' not in: {e}");
        }
    }
}

#[test]
fn an_slo_on_a_figure_the_class_does_not_produce_is_refused_naming_the_class() {
    let w =
        read("classes:\n  a:\n    scenario: pub\n    rate: 5\n    slo: connect_p99<1s\n").unwrap();
    let e = w
        .validate()
        .expect_err("pub has no connections to time")
        .to_string();
    assert!(
        e.contains("class 'a'") && e.contains("slo 'connect_p99<1s'"),
        "{e}"
    );
}

#[test]
fn a_class_alone_may_send_as_fast_as_it_can() {
    let w = read("classes:\n  a:\n    scenario: pub\n").unwrap();
    assert_eq!(w.classes[0].plan.document()["load"]["rate"], 0.0);
}
