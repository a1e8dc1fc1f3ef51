//! The checker can fail: a loss planted in the lazy filesystem itself, under a real server.
//! The server syncs every write before it acknowledges (`sync_interval=always`); after the
//! first writes, the filesystem is told to acknowledge the syncs of message blocks and keep
//! nothing of them (a disk that lies about its flushes); a power loss then takes the rest.
//! The verdict, reading the stream back as a run does, must name exactly the writes
//! acknowledged after the plant, as lost at the end of the acknowledged sequence.

use std::time::Duration;

use super::durability;
use super::stream::open_streams;
use crate::engine::conn::{connect_for_check, Dialing};
use crate::engine::jsapi::{Api, Setup, StreamConfig};
use crate::engine::request::JsAcks;
use crate::result::{LostByPosition, RunResult, ServerMeta};
use crate::server::{find_binary, EmbeddedServer, Start};
use crate::stats::acks::AckSet;

const T: Duration = Duration::from_secs(10);

/// Whether this machine can mount the lazy filesystem; without it the test says it was
/// skipped, and fails where `MSGBENCH_REQUIRE_FUSE=1` (CI) says it must run.
fn fuse_or_skip() -> bool {
    let Some(why) = crate::options::conn::fuse_unavailable() else {
        return true;
    };
    assert!(
        std::env::var("MSGBENCH_REQUIRE_FUSE").as_deref() != Ok("1"),
        "MSGBENCH_REQUIRE_FUSE=1, and {why}"
    );
    println!("SKIPPED: the planted loss needs a FUSE mount: {why}");
    false
}

/// Publishes `n` messages, each waiting for its acknowledgement, and records their sequences.
fn publish(conn: &mut crate::engine::conn::Conn, n: usize, acked: &mut AckSet) {
    for _ in 0..n {
        let (_, body) = conn.request("planted.x", b"a planted message", T).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        acked.insert(v["seq"].as_u64().unwrap_or_else(|| panic!("{v}")));
    }
}

#[test]
fn synced_writes_the_filesystem_lost_are_reported_lost_exactly_and_as_postfix() {
    if !fuse_or_skip() {
        return;
    }
    let settings =
        crate::options::server_config::parse_all(&["sync_interval=always".into()]).unwrap();
    let how = Start {
        settings: &settings,
        lazy: true,
        auth: &crate::wire::url::Auth::None,
    };
    let binary = find_binary(None).expect("these tests need nats-server");
    let server = EmbeddedServer::start_with(&binary, &[], &how).unwrap();
    let dial = Dialing {
        connect_timeout: T,
        reconnect: false,
        jitter: false,
        ping_interval: Duration::from_secs(60),
        tls: None,
    };
    let urls = std::slice::from_ref(&server.url);
    let mut api = Api::connect(urls, "planted", &dial, T).unwrap();
    let cfg = StreamConfig {
        name: "planted".into(),
        subjects: vec!["planted.>".into()],
        storage: "file".into(),
        num_replicas: 1,
        max_bytes: -1,
        discard: "old".into(),
        retention: "limits".into(),
        max_msgs: -1,
        max_age: 0,
        ..StreamConfig::default()
    };
    let opened = open_streams(&mut api, &[cfg], Setup::AsFound, None, false).unwrap();
    api.close();
    let mut conn = connect_for_check(&server.url, "planted-publisher", T).unwrap();
    let mut acked = AckSet::new(opened.before[0].last_seq + 1);
    publish(&mut conn, 20, &mut acked);
    server.lose_synced(".blk").unwrap();
    publish(&mut conn, 10, &mut acked);
    conn.shared.close();
    server.power_loss().unwrap();
    server.restart().unwrap();

    let acks = [JsAcks {
        acked,
        duplicate_acks: 0,
        repeated_acks: 0,
        deduplicated: 0,
        given_up: Vec::new(),
    }];
    let mut result = RunResult::new(
        "js.pub",
        "2026-11-28T12:00:00Z".into(),
        serde_json::Value::Null,
        ServerMeta::for_tests(),
        &crate::error::ErrorCounts::default(),
        false,
    );
    result.delivery.sent = 30;
    let mut api = Api::connect(urls, "planted-reader", &dial, T).unwrap();
    let shape = super::explain::Shape {
        size: 16,
        drawn: None,
        batch: 1,
        by_message: true,
    };
    let (mut d, first) = durability::verdict(&opened, &acks, &mut api, &result, shape);
    let why = durability::Why {
        shape,
        errors: &result.errors,
    };
    durability::settle(&opened, &acks, &mut api, &first, &mut d, &why);
    assert_eq!(d.lost, Some(10), "{d:?}");
    assert_eq!(d.lost_seqs, (21..=30).collect::<Vec<u64>>());
    assert_eq!(
        d.lost_by_position,
        Some(LostByPosition {
            prefix: 0,
            middle: 0,
            postfix: 10
        })
    );
    assert_eq!((d.ok, d.recovered), (Some(20), Some(0)));
    let disk = server.disk_stats().unwrap();
    assert!(disk.bytes_planted > 0 && disk.power_losses == 1, "{disk:?}");
}
