//! The scenario vectors (`spec/vectors/scenarios/*.json`), end to end as msgbench runs a
//! driver: a fresh `nats-server -js`, the vector's setup, then scenario → ready → start →
//! result over the driver's pipes, every line validated against the protocol schema, and the
//! vector's checks applied to the result.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream;
use futures::StreamExt;
use serde_json::{json, Value};

use common::{check, spec_dir, unique, Driver, NatsServer, Schema};

fn vector_dir() -> PathBuf {
    spec_dir().join("vectors/scenarios")
}

fn load(name: &str) -> Value {
    let path = vector_dir().join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// What the test does before starting the driver, as msgbench would.
enum Setup {
    None,
    /// An echo responder on the subject, queue group `msgbench`.
    Echo,
    /// The named stream, memory storage, subjects = the scenario's subject.
    Stream(String),
}

fn setup_of(v: &Value) -> Setup {
    let scn = &v["scenario"];
    match scn["kind"].as_str().unwrap() {
        "request" => Setup::Echo,
        "js_pub" => Setup::Stream(scn["js"]["stream"].as_str().unwrap().to_string()),
        _ => Setup::None,
    }
}

/// Runs one vector and returns its result object (after applying its checks).
fn run_vector(name: &str) -> Value {
    let v = load(name);
    let server = NatsServer::start();
    let subject = unique("msgbench.vec.");
    let mut scn = v["scenario"].clone();
    scn["server"] = json!(server.url);
    scn["subject"] = json!(subject);
    assert!(
        Schema::protocol().validate_def("scenario", &scn).is_empty(),
        "{name}: the filled-in scenario is valid"
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    let setup = setup_of(&v);
    let helper = rt
        .block_on(async_nats::connect(server.url.as_str()))
        .unwrap();
    match &setup {
        Setup::None => {}
        Setup::Echo => rt.block_on(start_echo(&helper, &subject)),
        Setup::Stream(stream) => rt.block_on(async {
            jetstream::new(helper.clone())
                .create_stream(jetstream::stream::Config {
                    name: stream.clone(),
                    subjects: vec![subject.clone()],
                    storage: jetstream::stream::StorageType::Memory,
                    ..Default::default()
                })
                .await
                .expect("stream created");
        }),
    }

    let mut d = Driver::spawn();
    d.send(&scn);
    let ready = d.expect("ready", Duration::from_secs(15));
    assert_eq!(ready["client"]["language"], "rust");
    assert_eq!(ready["client"]["library"], "async-nats");
    d.send(&json!({"type": "start"}));
    let timeout_ms = scn["timeout_ms"].as_u64().unwrap();
    let result = d.expect("result", Duration::from_millis(60_000 + timeout_ms));
    let status = d.wait(Duration::from_secs(10));
    assert!(status.success(), "{name}: exit status {status}");
    let result = result["result"].clone();
    eprintln!("{name}: {result}");

    assert_eq!(result["interrupted"], false, "{name}");
    let failed: Vec<String> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| check(&result, c.as_str().unwrap()).err())
        .collect();
    assert!(
        failed.is_empty(),
        "{name}: failed checks {failed:?}\n{result}"
    );

    if let Setup::Stream(stream) = &setup {
        // Reconcile the acknowledged range with what the stream holds, then clean up.
        rt.block_on(async {
            let js = jetstream::new(helper.clone());
            let mut s = js.get_stream(stream).await.unwrap();
            let info = s.info().await.unwrap();
            assert_eq!(info.state.messages, result["js"]["acked"].as_u64().unwrap());
            assert_eq!(
                info.state.first_sequence,
                result["js"]["first_seq"].as_u64().unwrap()
            );
            assert_eq!(
                info.state.last_sequence,
                result["js"]["last_seq"].as_u64().unwrap()
            );
            js.delete_stream(stream).await.unwrap();
        });
    }
    rt.block_on(helper.drain()).ok();
    result
}

/// An echo service in queue group `msgbench`, proven reachable before it is returned.
async fn start_echo(helper: &async_nats::Client, subject: &str) {
    let mut sub = helper
        .queue_subscribe(subject.to_string(), "msgbench".to_string())
        .await
        .unwrap();
    let responder = helper.clone();
    tokio::spawn(async move {
        while let Some(msg) = sub.next().await {
            if let Some(reply) = msg.reply {
                let _ = responder.publish(reply, msg.payload).await;
            }
        }
    });
    // One request through the server proves the queue subscription is in place.
    let echoed = helper
        .request(subject.to_string(), "probe".into())
        .await
        .expect("the echo responder answers");
    assert_eq!(&echoed.payload[..], b"probe");
}

/// Every vector file has a test here, so a new vector cannot go untested.
#[test]
fn every_vector_is_covered() {
    let mut names: Vec<String> = std::fs::read_dir(vector_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "js_pub_async",
            "js_pub_sync",
            "latency_paced",
            "pubsub_small",
            "pubsub_unstamped",
            "request_closed",
            "request_open",
        ]
    );
}

#[test]
fn js_pub_async() {
    run_vector("js_pub_async");
}

#[test]
fn js_pub_sync() {
    run_vector("js_pub_sync");
}

#[test]
fn latency_paced() {
    let r = run_vector("latency_paced");
    // 1000 msgs at 1000/s: the publisher's span is about a second.
    let secs = r["clients"][0]["seconds"].as_f64().unwrap();
    assert!((0.9..2.0).contains(&secs), "publisher span {secs}");
}

#[test]
fn pubsub_small() {
    run_vector("pubsub_small");
}

#[test]
fn pubsub_unstamped() {
    let r = run_vector("pubsub_unstamped");
    assert_eq!(r["delivery"]["duplicated"], Value::Null);
}

#[test]
fn request_closed() {
    let r = run_vector("request_closed");
    assert_eq!(r["errors"]["request_timeout"], 0);
}

#[test]
fn request_open() {
    run_vector("request_open");
}
