//! `--server-config KEY=VALUE`: the settings reach the servers msgbench starts (read back from
//! the server's own monitoring endpoint, as the result records it), on one node and on every
//! node of a cluster, and are refused in one line where msgbench starts no server.

use crate::support::{run, run_json, schema_errors, stderr};

#[test]
fn sync_interval_always_is_what_the_started_server_reports() {
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--storage",
        "file",
        "--msgs",
        "200",
        "--server-config",
        "sync_interval=always",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let config = &v["server"]["config"];
    assert_eq!(config["settings"][0]["key"], "jetstream.sync_interval");
    assert_eq!(config["settings"][0]["value"], "always");
    // The server's /varz says it syncs before each acknowledgement: the setting took effect.
    assert_eq!(
        config["jetstream_reported"]["sync_always"], true,
        "{config}"
    );
    assert!(
        stderr(&out).contains("embedded, jetstream.sync_interval=always)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn without_the_flag_the_result_names_no_settings() {
    let (out, v) = run_json(&["js", "pub", "--storage", "file", "--msgs", "200"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(v["server"].get("config").is_none(), "{}", v["server"]);
}

#[test]
fn every_node_of_a_cluster_gets_the_settings() {
    // `latency` on a cluster puts its subscriber on the second node: both nodes announce the
    // payload limit the setting gives them (the default is 1 MiB).
    let (out, v) = run_json(&[
        "latency",
        "--cluster",
        "2",
        "--rate",
        "100",
        "--duration",
        "500ms",
        "--warmup",
        "100ms",
        "--server-config",
        "max_payload=2000000",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["server"]["name"], "msgbench-0");
    assert_eq!(v["server_b"]["name"], "msgbench-1");
    assert_eq!(v["server"]["max_payload"], 2_000_000);
    assert_eq!(v["server_b"]["max_payload"], 2_000_000);
    assert_eq!(v["server"]["config"]["settings"][0]["key"], "max_payload");
}

#[test]
fn settings_that_cannot_act_are_refused_in_one_line() {
    for (args, needle) in [
        (
            vec!["pub", "--server", "nats://127.0.0.1:4222"],
            "cannot be combined with --server",
        ),
        (vec!["pub"], "set by msgbench"),
    ] {
        let mut args = args;
        args.extend(["--server-config", "port=4222"]);
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--server-config") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // A key the server does not know: the server's own complaint, in one line.
    let out = run(&["pub", "--msgs", "1", "--server-config", "no_such_key=1"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("unknown field \"no_such_key\""), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
