//! Power losses and damaged disks (`--fault power-loss…`, `corrupt…`) against a real
//! nats-server whose store sits on msgbench's lazy filesystem (a real FUSE mount): what a
//! power loss drops with the default `sync_interval` and keeps with `always`, the syncs the
//! filesystem counted, a corruption recorded, the refusals before the run, and a mount undone
//! when msgbench is killed with SIGKILL. Nothing is timed: a wait ends at its event, bounded
//! only against a hang.
//!
//! What each costs on the 2-core machine: the two power-loss runs about 5 s each (a 3 s load,
//! the server's start and the stream read twice), the corruption about 5 s, the SIGKILL test
//! about 3 s (it waits for the mount, then for the watchdog), the refusals well under 1 s.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{self, run, run_json, schema_errors, scratch_dir, stderr, u, HANG};
use serde_json::Value;

/// Whether this machine can mount msgbench's lazy filesystem (root and /dev/fuse); without
/// it the test is skipped, saying so, unless `MSGBENCH_REQUIRE_FUSE=1` (CI) says it must run.
fn fuse(test: &str) -> bool {
    let device = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse");
    // SAFETY: geteuid has no preconditions and cannot fail.
    let why = match (device, unsafe { libc::geteuid() }) {
        (Err(e), _) => format!("/dev/fuse cannot be opened: {e}"),
        (Ok(_), 0) => return true,
        (Ok(_), _) => "not root: msgbench mounts with mount(2)".into(),
    };
    assert!(
        std::env::var("MSGBENCH_REQUIRE_FUSE").as_deref() != Ok("1"),
        "MSGBENCH_REQUIRE_FUSE=1, but {test} cannot run: {why}"
    );
    let note = format!("SKIPPED: {test}: {why}");
    println!("{note}");
    let skips = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-skips");
    std::fs::create_dir_all(&skips).unwrap();
    std::fs::write(skips.join(test.replace(' ', "-")), format!("{note}\n")).unwrap();
    false
}

/// `js pub` into a file stream on the one embedded server, 200 msgs/s for 3 s, a power loss
/// at 1.5 s held 300 ms, with `extra` flags.
fn power_loss_run(extra: &[&str]) -> (std::process::Output, Value) {
    let mut args = vec![
        "js",
        "pub",
        "--storage",
        "file",
        "--reconnect",
        "--rate",
        "200",
        "--duration",
        "3s",
        "--fault",
        "power-loss@1500ms:300ms",
    ];
    args.extend_from_slice(extra);
    run_json(&args)
}

#[test]
fn a_power_loss_drops_what_the_default_sync_interval_never_synced_and_counts_the_syncs() {
    if !fuse("power loss with the default sync_interval") {
        return;
    }
    let (out, v) = power_loss_run(&[]);
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let d = &v["durability"];
    // Nothing was synced in 1.5 s (the server syncs every two minutes): the stream is gone.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let lost = u(&d["lost"]);
    assert!(lost > 0 && lost == u(&v["jetstream"]["acked"]), "{d}");
    let by = &d["lost_by_position"];
    assert_eq!(
        u(&by["prefix"]) + u(&by["middle"]) + u(&by["postfix"]),
        lost,
        "{d}"
    );
    let disk = &d["disk"][0];
    assert_eq!(disk["node"], "server");
    assert_eq!(u(&disk["power_losses"]), 1, "{disk}");
    assert!(u(&disk["bytes_dropped"]) > 0, "{disk}");
    let e = &v["fault"]["faults"][0];
    assert_eq!(e["kind"], "power-loss");
    let r = &e["restarts"][0];
    assert_eq!(r["came_back_short"], true, "{e}");
    assert!(u(&r["last_seq_before"]) > 0, "{e}");
    let text = stderr(&out);
    assert!(
        text.contains("lost-postfix") && text.contains("Came back short: server came back"),
        "{text}"
    );
}

#[test]
fn a_power_loss_loses_nothing_acknowledged_when_every_write_is_synced_first() {
    if !fuse("power loss with sync_interval=always") {
        return;
    }
    let (out, v) = power_loss_run(&["--server-config", "sync_interval=always"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let d = &v["durability"];
    assert_eq!(u(&d["lost"]), 0, "{d}");
    assert!(u(&v["jetstream"]["acked"]) > 0, "{v}");
    // Every write was synced before its acknowledgement: the filesystem saw the syncs.
    let disk = &d["disk"][0];
    assert!(
        u(&disk["fsyncs"]) > 0 && u(&disk["bytes_synced"]) > 0,
        "{disk}"
    );
    assert_eq!(u(&disk["power_losses"]), 1, "{disk}");
    assert_eq!(
        v["fault"]["faults"][0]["restarts"][0]["came_back_short"],
        false
    );
}

#[test]
fn a_corruption_is_recorded_with_its_file_offset_and_bit() {
    if !fuse("corrupt fault recorded") {
        return;
    }
    let (out, v) = run_json(&[
        "js",
        "pub",
        "--storage",
        "file",
        "--server-config",
        "sync_interval=always",
        "--reconnect",
        "--rate",
        "200",
        "--duration",
        "3s",
        "--fault",
        "corrupt@1500ms:bitflip:7",
    ]);
    // A flipped bit may cost messages (exit 3) or nothing (exit 0); never a crash.
    assert!(matches!(out.status.code(), Some(0 | 3)), "{}", stderr(&out));
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let e = &v["fault"]["faults"][0];
    assert_eq!(e["kind"], "corrupt");
    assert_eq!(
        e["corrupt"],
        serde_json::json!({"kind": "bitflip", "seed": 7})
    );
    let c = &e["corruption"];
    let file = c["file"].as_str().unwrap_or_else(|| panic!("{e}"));
    assert!(
        file.contains("/streams/msgbench/msgs/") && file.ends_with(".blk"),
        "{c}"
    );
    assert!(u(&c["bit"]) < 8, "{c}");
    assert!(e["undone_at_ns"].is_u64(), "{e}");
    assert!(stderr(&out).contains(&format!("damaged {file}: bit ")));
    assert!(u(&v["durability"]["disk"][0]["fsyncs"]) > 0);
}

#[test]
fn without_a_fault_of_the_disk_nothing_is_mounted() {
    let (out, v) = run_json(&["js", "pub", "--storage", "file", "--msgs", "200"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(v["durability"]["disk"].is_null(), "{}", v["durability"]);
    assert!(!stderr(&out).contains("lazy filesystem"));
}

#[test]
fn power_losses_and_corruptions_are_refused_where_they_cannot_act() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["js", "pub", "--fault", "power-loss@1s", "--duration", "2s"],
            "--storage file",
        ),
        (
            &[
                "js",
                "pub",
                "--storage",
                "file",
                "--server",
                "nats://127.0.0.1:1",
                "--fault",
                "power-loss@1s",
            ],
            "--server",
        ),
        (
            &["pub", "--fault", "corrupt@1s:bitflip", "--duration", "2s"],
            "JetStream store",
        ),
        (
            &[
                "js",
                "pub",
                "--cluster",
                "3",
                "--duration",
                "5s",
                "--nemesis",
                "random:1:2s:disk",
            ],
            "--storage file",
        ),
    ];
    for (args, names) in cases {
        let out = run(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(names),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

/// The lazy filesystems mounted under `dir`, from this process's mount table.
fn mounts_under(dir: &Path) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let d = dir.to_str().unwrap();
    table
        .lines()
        .filter(|l| l.contains(d) && l.contains("fuse"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_msgbench_killed_with_sigkill_leaves_no_mount_and_the_next_run_removes_its_folder() {
    if !fuse("lazy filesystem undone after SIGKILL") {
        return;
    }
    let tmp = scratch_dir("killed-mounted");
    let mut child = support::bin()
        .env("TMPDIR", &tmp)
        .args([
            "js",
            "pub",
            "--storage",
            "file",
            "--rate",
            "100",
            "--duration",
            "60s",
            "--fault",
            "power-loss@50s:1s",
            "--no-progress",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("msgbench starts");
    let deadline = Instant::now() + HANG;
    while mounts_under(&tmp).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the lazy filesystem was never mounted"
        );
        assert!(child.try_wait().unwrap().is_none(), "msgbench ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The watchdog sees msgbench's pipe close and detaches the mount.
    while !mounts_under(&tmp).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(mounts_under(&tmp), Vec::<String>::new());
    // Its server dies of the parent-death signal; the next run removes a folder only once no
    // process uses it.
    let needle = tmp.to_str().unwrap().to_string();
    while !support::processes_mentioning(&needle).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = support::bin()
        .args(["pub", "--msgs", "10", "--no-progress"])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    support::assert_nothing_left_in(&tmp);
}
