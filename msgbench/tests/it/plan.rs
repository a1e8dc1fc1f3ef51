//! Plans end to end: `--print-plan` writes one, `msgbench run` runs it against a real server
//! and gives the same kind of result as the typed command, with the plan inside; flags that
//! have nothing to act on beside `--print-plan` are refused, and a bad plan is named by its
//! flag.

use crate::support::{self, run, stderr, TestServer};

#[test]
fn a_printed_plan_runs_and_the_result_records_it() {
    let s = TestServer::start();
    let dir = support::scratch_dir("plan");
    let out = run(&[
        "pub",
        "--msgs",
        "20k",
        "--size",
        "16",
        "--server",
        &s.url,
        "--print-plan",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["schema"], "msgbench.plan/v1");
    assert_eq!(plan["scenario"], "pub");
    assert_eq!(plan["load"]["msgs"], 20_000);
    let file = dir.join("p.json");
    std::fs::write(&file, &out.stdout).unwrap();

    let (_, direct) =
        support::run_json(&["pub", "--msgs", "20k", "--size", "16", "--server", &s.url]);
    let (ran, planned) = support::run_json(&["run", file.to_str().unwrap()]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    for r in [&direct, &planned] {
        assert_eq!(r["schema"], "msgbench.result/v1");
        assert_eq!(r["scenario"], "pub");
        assert_eq!(r["throughput"]["msgs"], 20_000);
    }
    assert_eq!(planned["params"], direct["params"]);
    let errors = support::schema_errors(&planned);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(planned["plan"], plan);
    assert_eq!(direct["plan"], plan);
}

#[test]
fn output_flags_beside_print_plan_are_refused() {
    for flag in [
        &["--json", "x.json"][..],
        &["--runs", "3"],
        &["--threshold", "p99<1ms"],
    ] {
        let mut args = vec!["pub", "--print-plan"];
        args.extend_from_slice(flag);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        let err = stderr(&out);
        assert!(
            err.contains(flag[0]) && err.contains("--print-plan"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_bad_plan_file_is_one_line_naming_what_is_wrong() {
    let dir = support::scratch_dir("bad-plan");
    let cases = [
        (
            r#"{"schema":"msgbench.plan/v1","scenario":"pub","load":{"size":"huge"}}"#,
            "--size",
        ),
        (
            r#"{"schema":"msgbench.plan/v1","scenario":"latency","rate":-5}"#,
            "--rate",
        ),
        (r#"{"schema":"msgbench.plan/v1","scenario":"fly"}"#, "fly"),
        ("not json", "not JSON"),
    ];
    for (text, named) in cases {
        let file = dir.join("p.json");
        std::fs::write(&file, text).unwrap();
        let out = run(&["run", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(named), "{text}: {err}");
    }
    let out = run(&["run", dir.join("missing.json").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("missing.json"));
}
