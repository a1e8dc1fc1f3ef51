//! `--persist default|async` on `js pub` and `kv put` against a real nats-server: the stream is
//! created with the persist mode asked for, the result records the mode the server reports
//! for it (read back, and checked here against the server's own stream info), the text says
//! what an acknowledgement promises under async persist, and the combinations the server would
//! refuse are refused before connecting.

use crate::support::{raw_request, run, run_json, schema_errors, stderr, u, TestServer};
use serde_json::Value;

/// The persist mode the server itself reports for `stream` (absent: its default).
fn server_persist(url: &str, stream: &str) -> String {
    let info: Value = serde_json::from_str(&raw_request(
        url,
        &format!("$JS.API.STREAM.INFO.{stream}"),
        "",
    ))
    .unwrap();
    info["config"]["persist_mode"]
        .as_str()
        .unwrap_or("default")
        .to_string()
}

#[test]
fn js_pub_records_the_persist_mode_the_server_gave_its_stream() {
    let s = TestServer::start();
    for (persist, mode) in [("default", "async"), ("async", "async"), ("async", "fast")] {
        let stream = format!("p_{persist}_{mode}");
        let (out, v) = run_json(&[
            "js",
            "pub",
            "--server",
            &s.url,
            "--storage",
            "file",
            "--persist",
            persist,
            "--mode",
            mode,
            "--msgs",
            "5000",
            "--stream",
            &stream,
            "--subject",
            &stream,
        ]);
        assert!(out.status.success(), "{persist} {mode}: {}", stderr(&out));
        assert_eq!(schema_errors(&v), Vec::<String>::new());
        assert_eq!(server_persist(&s.url, &stream), persist);
        let js = &v["jetstream"];
        assert_eq!(js["persist"], persist, "{js}");
        assert_eq!(js["reconciled"], true, "{js}");
        assert_eq!(u(&js["acked"]), 5000);
        let said = stderr(&out).contains("Persist async: an acknowledgement says");
        assert_eq!(said, persist == "async", "{}", stderr(&out));
    }
}

#[test]
fn kv_put_creates_its_bucket_with_async_persist() {
    let s = TestServer::start();
    let (out, v) = run_json(&[
        "kv",
        "put",
        "--server",
        &s.url,
        "--storage",
        "file",
        "--persist",
        "async",
        "--msgs",
        "2000",
        "--max-in-flight",
        "64",
        "--bucket",
        "pa",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(server_persist(&s.url, "KV_pa"), "async");
    assert_eq!(v["jetstream"]["persist"], "async");
}

#[test]
fn persist_async_where_the_server_cannot_is_refused_naming_the_flag() {
    for args in [
        &["js", "pub", "--persist", "async"][..],
        &[
            "js",
            "pub",
            "--persist",
            "async",
            "--storage",
            "file",
            "--replicas",
            "3",
        ][..],
        &[
            "js",
            "pub",
            "--persist",
            "async",
            "--storage",
            "file",
            "--mode",
            "batch",
        ][..],
        &["kv", "put", "--persist", "async"][..],
        &["js", "pub", "--persist", "later"][..],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("--persist"), "{args:?}: {err}");
    }
}
