use serde_json::json;

use super::*;

fn plan_of(line: &str) -> Plan {
    let argv = std::iter::once("msgbench").chain(line.split_whitespace());
    crate::command::plan_of(argv).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn usage(r: Result<Plan>) -> String {
    match r {
        Err(Error::Usage(m)) => m,
        other => panic!("expected a usage error, got {other:?}"),
    }
}

/// Every scenario, with flags of every kind (durations, sizes, enums, lists, groups, a flag
/// that may only be typed beside another): written as a plan and read back, it is the same
/// plan.
#[test]
fn every_scenario_survives_a_round_trip() {
    for line in [
        "pub --msgs 1M --size 16 --rate 50k -H a:b -H c:d --timeout 250ms",
        "sub --clients 3 --sub-stall 1000:3s --start-timeout 1m --multisubject",
        "pubsub --pubs 2 --subs 3 --duration 10s --multisubject --multisubject-max 7",
        "latency --rate 2000 --duration 5s --warmup 1s --busy-poll off --late-bound 2ms",
        "request --clients 4 --in-flight 8 --rate 1000 --delay 100us --responders 2",
        "reply --subject svc --clients 2",
        "js pub --mode batch --batch 100 --storage file --discard new --streams 2 --purge",
        "js consume --mode fetch --ack all --publish live --rate 5000 --batch 50",
        "kv put --keys 10 --order random --storage file",
        "kv get --keys 10 --max-in-flight 4",
        "grpc --requests 500 --in-flight 10 --deadline 1s -H k:v --streams 3",
        "pub --reconnect --ping-interval 500ms --cluster 3 --link delay=1ms",
        // A schedule beside every other flag's default (--rate's written back as 1000.0).
        "latency --rate-schedule step:100:100:1s:300",
        "pubsub --rate-schedule 100@1s,200@1s --pubs 2",
        "request --rate-schedule ramp:10:100:2s",
        "js pub --rate-schedule 100@1s",
        "grpc --rate-schedule 50@1s,0@1s,50@1s",
    ] {
        let plan = plan_of(line);
        let doc = plan.to_json().unwrap();
        assert_eq!(doc["schema"], SCHEMA, "{line}");
        assert_eq!(doc["scenario"], plan.name(), "{line}");
        let back = Plan::from_json(&doc).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(back.to_json().unwrap(), doc, "{line}");
    }
}

#[test]
fn typed_values_read_as_people_write_them() {
    let doc = plan_of("latency --duration 90s --warmup 250ms --busy-poll on")
        .to_json()
        .unwrap();
    assert_eq!(doc["duration"], "90s");
    assert_eq!(doc["warmup"], "250ms");
    assert_eq!(doc["busy_poll"], "on");
    let doc = plan_of("js consume --mode ordered").to_json().unwrap();
    assert_eq!(doc["mode"], "ordered");
    assert_eq!(doc["ack"], serde_json::Value::Null);
}

#[test]
fn output_flags_are_not_part_of_a_plan() {
    let doc = plan_of("pub --json r.json --csv r.csv --runs 3 --threshold p99<1ms")
        .to_json()
        .unwrap();
    let text = doc.to_string();
    for key in ["\"json\"", "\"csv\"", "\"runs\"", "\"threshold\"", "r.json"] {
        assert!(!text.contains(key), "{key} in {text}");
    }
}

#[test]
fn a_bad_value_in_a_plan_is_named_by_its_flag() {
    let mut doc = plan_of("pub").to_json().unwrap();
    doc["load"]["size"] = json!("huge");
    let m = usage(Plan::from_json(&doc));
    assert!(m.contains("--size") && m.contains("huge"), "{m}");
    let mut doc = plan_of("pub").to_json().unwrap();
    doc["clients"] = json!(0);
    let m = usage(Plan::from_json(&doc));
    assert!(m.contains("--clients"), "{m}");
    let mut doc = plan_of("pub").to_json().unwrap();
    doc["colour"] = json!("blue");
    let m = usage(Plan::from_json(&doc));
    assert!(m.contains("--colour"), "{m}");
    let mut doc = plan_of("js consume").to_json().unwrap();
    doc["mode"] = json!("sometimes");
    let m = usage(Plan::from_json(&doc));
    assert!(m.contains("--mode") && m.contains("sometimes"), "{m}");
}

#[test]
fn conflicting_keys_are_refused_as_the_flags_would_be() {
    let mut doc = plan_of("pub --duration 5s").to_json().unwrap();
    doc["load"]["msgs"] = json!(10);
    let m = usage(Plan::from_json(&doc));
    assert!(m.contains("--msgs") && m.contains("--duration"), "{m}");
}

#[test]
fn a_plan_without_schema_or_with_another_is_refused() {
    let mut doc = plan_of("pub").to_json().unwrap();
    doc["schema"] = json!("msgbench.plan/v9");
    assert!(usage(Plan::from_json(&doc)).contains("msgbench.plan/v9"));
    doc.as_object_mut().unwrap().remove("schema");
    assert!(usage(Plan::from_json(&doc)).contains("schema"));
    let m = usage(Plan::from_json(
        &json!({"schema": SCHEMA, "scenario": "dance"}),
    ));
    assert!(m.contains("dance"), "{m}");
    assert!(usage(Plan::from_json(&json!([1, 2]))).contains("object"));
}

#[test]
fn credentials_stay_out_of_plans() {
    let plan = plan_of("pub --server nats://alice:secret@127.0.0.1:4222");
    let m = usage(plan.to_json().map(|_| plan_of("pub")));
    assert!(m.contains("reference") && !m.contains("secret"), "{m}");
    let recorded = plan.recorded().to_string();
    assert!(!recorded.contains("secret"), "{recorded}");
    assert!(recorded.contains("nats://127.0.0.1:4222"), "{recorded}");
    let token = plan_of("pub --server nats://s3cr3t@127.0.0.1:4222,nats://127.0.0.1:4223");
    assert!(token.to_json().is_err());
    let recorded = token.recorded().to_string();
    assert!(!recorded.contains("s3cr3t"), "{recorded}");
    // References are kept: they are not the secret.
    let doc = plan_of("pub --user alice --creds /etc/app.creds")
        .to_json()
        .unwrap();
    assert_eq!(doc["conn"]["user"], "alice");
    assert_eq!(doc["conn"]["creds"], "/etc/app.creds");
    // A secret in a server setting is refused for a plan file, and left out of a result's.
    let setting = plan_of(
        "pub --server-config sync_interval=always --server-config authorization.password=hunter2",
    );
    let m = usage(setting.to_json().map(|_| plan_of("pub")));
    assert!(
        m.contains("authorization.password") && !m.contains("hunter2"),
        "{m}"
    );
    let recorded = setting.recorded().to_string();
    assert!(!recorded.contains("hunter2"), "{recorded}");
    assert!(
        recorded.contains("sync_interval=always") && recorded.contains("password=(redacted)"),
        "{recorded}"
    );
}
