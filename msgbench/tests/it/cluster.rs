//! `--cluster N`: msgbench starts N local nats-servers routed into one cluster. `latency` then
//! measures across a route (publisher on the first node, subscriber on the second) and says
//! which node each side used; JetStream works in the cluster; and every node is gone afterwards.

use crate::support::{
    assert_nothing_left_in, bin, run, run_json, schema_errors, scratch_dir, stderr, u,
};

#[test]
fn latency_goes_across_a_route_and_names_both_nodes() {
    let (out, v) = run_json(&[
        "latency",
        "--cluster",
        "2",
        "--rate",
        "500",
        "--duration",
        "1s",
        "--warmup",
        "200ms",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["server"]["name"], "msgbench-0");
    assert_eq!(v["server_b"]["name"], "msgbench-1");
    assert_ne!(v["server"]["url"], v["server_b"]["url"]);
    assert_eq!(v["server_b"]["embedded"], true);
    let nodes = v["cluster"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[1]["url"], v["server_b"]["url"]);
    // Every message crossed the route and arrived.
    assert_eq!(u(&v["delivery"]["lost"]), 0, "{}", v["delivery"]);
    assert!(u(&v["delivery"]["received"]) > 0);
    assert!(
        stderr(&out).contains("publisher on msgbench-0, subscriber on msgbench-1"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn jetstream_runs_in_a_three_node_cluster_and_nothing_is_left() {
    // The nodes keep their files in this test's own folder: what is left there, or a process
    // naming it, is this run's and no one else's on a shared machine.
    let tmp = scratch_dir("cluster-js");
    let out = bin()
        .args([
            "js",
            "pub",
            "--cluster",
            "3",
            "--msgs",
            "2000",
            "--replicas",
            "3",
            "--stream",
            "rep",
            "--subject",
            "rep.x",
            "--json",
            "-",
            "--no-progress",
        ])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let js = &v["jetstream"];
    assert_eq!(js["reconciled"], true, "{js}");
    assert_eq!(u(&js["acked"]), 2000);
    assert_eq!(v["cluster"]["nodes"].as_array().unwrap().len(), 3);
    // No node outlives the run: msgbench stops each one and waits for it before it exits, so
    // nothing needs a moment to go.
    assert_nothing_left_in(&tmp);
}

#[test]
fn cluster_flags_that_cannot_work_are_named() {
    for (args, needle) in [
        (vec!["pub", "--cluster", "9"], "2 to 5"),
        (vec!["pub", "--cluster", "1"], "2 to 5"),
        (
            vec!["pub", "--cluster", "2", "--server", "nats://127.0.0.1:4222"],
            "cannot be combined with a server list",
        ),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("--cluster") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// `--nats-server` names the server msgbench starts itself; with a server list none is started,
/// so the flag could not act and is refused. The same path from MSGBENCH_NATS_SERVER, which an
/// environment may set for every run, is not.
#[test]
fn nats_server_with_a_server_list_is_refused() {
    let out = run(&[
        "pub",
        "--server",
        "nats://127.0.0.1:1",
        "--nats-server",
        "/nonexistent/nats-server",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--nats-server") && err.contains("--server"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    let out = bin()
        .args([
            "pub",
            "--server",
            "nats://127.0.0.1:1",
            "--msgs",
            "1",
            "--no-progress",
        ])
        .env("MSGBENCH_NATS_SERVER", "/nonexistent/nats-server")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "not refused, no server: {err}");
    assert!(!err.contains("--nats-server"), "{err}");
}
