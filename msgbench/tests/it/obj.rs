//! `obj put` and `obj get` against a real nats-server with JetStream: objects put by several
//! clients read back with every digest checked, a chunk replaced behind msgbench's back caught
//! as a digest mismatch (and the run failed), an object larger than its bucket refused before
//! the run, and the text output's figures.

use crate::support::{raw_request, run, run_json, schema_errors, stderr, u, TestServer};
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use base64::Engine;

/// An object's metadata, read from the stream with a JetStream API call of the test's own.
fn meta_of(url: &str, bucket: &str, name: &str) -> serde_json::Value {
    let subject = format!("$O.{bucket}.M.{}", URL_SAFE.encode(name));
    let reply = raw_request(
        url,
        &format!("$JS.API.STREAM.MSG.GET.OBJ_{bucket}"),
        &format!(r#"{{"last_by_subj":"{subject}"}}"#),
    );
    let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
    let data = STANDARD
        .decode(
            v["message"]["data"]
                .as_str()
                .unwrap_or_else(|| panic!("{v}")),
        )
        .unwrap();
    serde_json::from_slice(&data).unwrap()
}

fn stream_messages(url: &str, stream: &str) -> u64 {
    let info: serde_json::Value = serde_json::from_str(&raw_request(
        url,
        &format!("$JS.API.STREAM.INFO.{stream}"),
        "",
    ))
    .unwrap();
    u(&info["state"]["messages"])
}

#[test]
fn objects_put_by_two_clients_are_read_back_with_every_digest_matching() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "obj",
        "put",
        "--server",
        &s.url,
        "--objects",
        "20",
        "--size",
        "1MiB",
        "--clients",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let o = &v["object_store"];
    assert_eq!(u(&o["completed"]), 20, "{o}");
    assert_eq!(u(&o["failed"]), 0, "{o}");
    // 1 MiB in 128 KiB chunks (the default) is 8 chunks an object.
    assert_eq!(u(&o["chunks"]), 160, "{o}");
    assert_eq!(u(&o["bytes"]), 20 << 20, "{o}");
    assert_eq!(u(&v["latency"]["count"]), 20, "one latency per object");
    assert_eq!(
        u(&o["chunk_latency"]["count"]),
        160,
        "one latency per chunk"
    );
    assert!(
        o["digest_mismatches"].is_null(),
        "a put has nothing to compare"
    );
    assert!(o["objects_per_sec"].as_f64().unwrap() > 0.0);
    // Each object's metadata is the format the NATS clients read: 8 chunks, a SHA-256 digest.
    let m = meta_of(&s.url, "msgbench", "msgbench-7");
    assert_eq!(m["name"], "msgbench-7");
    assert_eq!(u(&m["size"]), 1 << 20);
    assert_eq!(u(&m["chunks"]), 8);
    assert!(m["digest"].as_str().unwrap().starts_with("SHA-256="), "{m}");
    // 160 chunks and 20 metadata messages, nothing else.
    assert_eq!(stream_messages(&s.url, "OBJ_msgbench"), 180);
    // A second put replaces every object: each new metadata rolls up the old, and the old
    // chunks are purged, so the bucket holds the same count again.
    let (again, _) = run_json(&[
        "obj",
        "put",
        "--server",
        &s.url,
        "--objects",
        "20",
        "--size",
        "1MiB",
        "--clients",
        "2",
    ]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stream_messages(&s.url, "OBJ_msgbench"), 180);
    let text = stderr(&out);
    for shown in [
        "objects/s",
        "MB/s",
        "Latency of each object put",
        "Latency of each chunk",
    ] {
        assert!(text.contains(shown), "{shown} in: {text}");
    }

    let (out, v) = run_json(&[
        "obj",
        "get",
        "--server",
        &s.url,
        "--objects",
        "20",
        "--clients",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let o = &v["object_store"];
    assert_eq!(u(&o["completed"]), 20, "{o}");
    assert_eq!(u(&o["digest_mismatches"]), 0, "{o}");
    assert_eq!(u(&o["missing"]), 0, "{o}");
    assert_eq!(u(&o["chunks"]), 160, "{o}");
    assert_eq!(u(&v["latency"]["count"]), 20);
    assert_eq!(u(&o["chunk_latency"]["count"]), 160);
    let text = stderr(&out);
    for shown in [
        "objects/s",
        "MB/s",
        "Latency of each object get",
        "Latency of each chunk",
        "Digests: all 20 objects read match",
    ] {
        assert!(text.contains(shown), "{shown} in: {text}");
    }
}

#[test]
fn a_chunk_replaced_in_the_stream_is_a_digest_mismatch_and_fails_the_run() {
    let s = TestServer::start();
    let put = [
        "obj",
        "put",
        "--server",
        &s.url,
        "--objects",
        "3",
        "--size",
        "4KiB",
        "--chunk-size",
        "1KiB",
    ];
    let (out, _) = run_json(&put);
    assert!(out.status.success(), "{}", stderr(&out));
    // Object 1's chunks replaced by as many of the same size with other bytes: its size and
    // chunk count still agree with its metadata, so only the digest can tell.
    let m = meta_of(&s.url, "msgbench", "msgbench-1");
    let chunks = format!("$O.msgbench.C.{}", m["nuid"].as_str().unwrap());
    raw_request(
        &s.url,
        "$JS.API.STREAM.PURGE.OBJ_msgbench",
        &format!(r#"{{"filter":"{chunks}"}}"#),
    );
    let wrong = "x".repeat(1024);
    for _ in 0..4 {
        let ack = raw_request(&s.url, &chunks, &wrong);
        assert!(ack.contains("\"seq\""), "{ack}");
    }

    let (out, v) = run_json(&["obj", "get", "--server", &s.url, "--objects", "3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let o = &v["object_store"];
    assert_eq!(u(&o["completed"]), 3, "{o}");
    assert_eq!(u(&o["digest_mismatches"]), 1, "{o}");
    assert_eq!(o["mismatched_names"], serde_json::json!(["msgbench-1"]));
    assert!(
        stderr(&out).contains("DIGEST MISMATCH: 1 of 3 objects"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_object_larger_than_its_bucket_is_refused_before_the_run_in_one_line() {
    let s = TestServer::start();
    // A bucket this run would make with a limit smaller than one object.
    let out = run(&[
        "obj",
        "put",
        "--server",
        &s.url,
        "--size",
        "2MiB",
        "--max-bytes",
        "1MiB",
        "--no-progress",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--size") && err.contains("--max-bytes"),
        "{err}"
    );

    // An existing bucket with a limit (made by a first put): a later put of larger objects
    // is refused by what the server says of the bucket, and nothing is stored.
    let first = [
        "obj",
        "put",
        "--server",
        &s.url,
        "--objects",
        "1",
        "--size",
        "1KiB",
        "--max-bytes",
        "1MiB",
        "--no-progress",
    ];
    let out = run(&first);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = stream_messages(&s.url, "OBJ_msgbench");
    let out = run(&[
        "obj",
        "put",
        "--server",
        &s.url,
        "--objects",
        "1",
        "--size",
        "2MiB",
        "--no-progress",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--size 2097152") && err.contains("limit of 1048576 B"),
        "{err}"
    );
    assert_eq!(
        stream_messages(&s.url, "OBJ_msgbench"),
        before,
        "nothing stored"
    );
}

#[test]
fn a_get_of_objects_never_put_counts_them_missing_and_fails() {
    // A server msgbench starts itself has no bucket yet: the refusal says to give --server.
    let out = run(&["obj", "get", "--no-progress"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("give --server"), "{}", stderr(&out));

    let s = TestServer::start();
    let out = run(&["obj", "get", "--server", &s.url, "--no-progress"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--bucket msgbench: no such bucket"),
        "{}",
        stderr(&out)
    );

    let (out, _) = run_json(&[
        "obj",
        "put",
        "--server",
        &s.url,
        "--objects",
        "2",
        "--size",
        "1KiB",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (out, v) = run_json(&["obj", "get", "--server", &s.url, "--objects", "3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let o = &v["object_store"];
    assert_eq!(u(&o["completed"]), 2, "{o}");
    assert_eq!(u(&o["missing"]), 1, "{o}");
    assert_eq!(o["missing_names"], serde_json::json!(["msgbench-2"]));
}
