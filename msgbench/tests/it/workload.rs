//! Workloads end to end: a mix of classes from one YAML file runs together against one real
//! server, each class with its own exact accounting and SLO verdict, the exit status the worst
//! class's; the printed form reads back; bad files and flags that cannot act are refused in one
//! line before anything runs.

use crate::support::{self, run, schema_errors, schema_errors_in, stderr, u, TestServer};

/// Four classes on one server, for `secs` seconds; `pricing_slo` is the request class's SLO.
fn mix(url: &str, secs: u32, pricing_slo: &str) -> String {
    format!(
        "# a test's mix
workload: shop
duration: {secs}s
conn:
  server: {url}
classes:
  orders:
    scenario: js pub
    rate: 300
    size: 256
    target: {{stream: wl_orders, subject: wl.orders, storage: memory, create: true, delete_after: true}}
    slo: [lost==0]
  catalogue:
    scenario: kv get
    bucket: wl_catalogue
    keys: 50
    rate: 300
    delete_after: true
  pricing:
    scenario: request
    rate: 200
    subject: wl.pricing
    slo: '{pricing_slo}'
  prices:
    scenario: pubsub
    subs: 3
    rate: 200
    size: 64
    subject: wl.prices
    slo: lost==0
"
    )
}

/// Class `name`'s entry in a workload's result.
pub(crate) fn class<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == name)
        .unwrap_or_else(|| panic!("no class {name} in {doc}"))
}

#[test]
fn four_classes_run_together_each_accounted_and_judged_and_the_worst_sets_the_status() {
    let s = TestServer::start();
    let dir = support::scratch_dir("workload");
    let file = dir.join("shop.yaml");
    // The request class's SLO cannot hold: its failure alone must set the exit status.
    std::fs::write(&file, mix(&s.url, 2, "p99<1ns")).unwrap();
    let (out, doc) = support::run_json(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(8), "{}", stderr(&out));
    let errors = schema_errors_in("workload-result-v1.schema.json", &doc);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(doc["workload"], "shop");
    assert_eq!(doc["exit_status"], 8);
    let names: Vec<&str> = (doc["classes"].as_array().unwrap().iter())
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["orders", "catalogue", "pricing", "prices"]);
    for c in doc["classes"].as_array().unwrap() {
        let r = &c["result"];
        let errors = schema_errors(r);
        assert!(errors.is_empty(), "{}: {errors:?}", c["class"]);
        // Every class ran for the workload's duration, on one clock.
        assert!(
            r["timeline"]["ticks"]
                .as_array()
                .is_some_and(|t| !t.is_empty()),
            "{r}"
        );
        assert_eq!(r["plan"]["conn"]["server"], s.url.as_str());
    }

    let orders = &class(&doc, "orders")["result"];
    let d = &orders["durability"];
    assert!(u(&d["sent"]) > 0);
    assert_eq!(u(&d["sent"]), u(&d["ok"]), "{d}");
    assert_eq!(u(&d["lost"]), 0, "{d}");
    assert_eq!(class(&doc, "orders")["slo_pass"], true);

    let catalogue = &class(&doc, "catalogue");
    assert!(catalogue["result"]["latency"]["percentiles_ns"]["99"].is_u64());
    assert_eq!(catalogue["slo_pass"], serde_json::Value::Null);
    assert_eq!(catalogue["exit_status"], 0);

    let prices = &class(&doc, "prices");
    let d = &prices["result"]["delivery"];
    assert!(u(&d["sent"]) > 0);
    assert_eq!(u(&d["received"]), 3 * u(&d["sent"]), "{d}");
    assert_eq!(prices["slo_pass"], true);

    let pricing = &class(&doc, "pricing");
    assert_eq!(pricing["slo_pass"], false);
    assert_eq!(pricing["exit_status"], 8);
    let d = &pricing["result"]["delivery"];
    assert_eq!(u(&d["received"]), u(&d["sent"]), "{d}");

    // The HTML report draws every class, side by side, as it draws several results.
    let saved = dir.join("shop.json");
    std::fs::write(&saved, serde_json::to_vec(&doc).unwrap()).unwrap();
    let html = dir.join("shop.html");
    let report = run(&[
        "report",
        saved.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(report.status.success(), "{}", stderr(&report));
    assert!(String::from_utf8_lossy(&report.stdout).contains("4 results"));
    let page = std::fs::read_to_string(&html).unwrap();
    for name in ["orders", "catalogue", "pricing", "prices"] {
        assert!(
            page.contains(&format!("shop.json: {name}")),
            "{name} not in the report"
        );
    }

    // diff compares one class of two workload results; without --class it says how.
    let diffed = run(&[
        "diff",
        saved.to_str().unwrap(),
        saved.to_str().unwrap(),
        "--class",
        "pricing",
        "--json",
        "-",
    ]);
    assert!(diffed.status.success(), "{}", stderr(&diffed));
    let d: serde_json::Value = serde_json::from_slice(&diffed.stdout).unwrap();
    assert_eq!(d["base"]["scenario"], "request", "{d}");
    assert_eq!(d["base"]["file"], "shop.json: pricing");
    for (args, words) in [
        (vec![], "--class NAME"),
        (vec!["--class", "nosuch"], "no class 'nosuch'"),
    ] {
        let mut all = vec!["diff", saved.to_str().unwrap(), saved.to_str().unwrap()];
        all.extend(args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(words), "{}", stderr(&out));
    }

    // The report names every class and the one that did not pass.
    let text = stderr(&out);
    for name in [
        "=== class orders (js pub)",
        "Workload shop: 4 classes",
        "pricing",
    ] {
        assert!(text.contains(name), "{name} not in {text}");
    }
    assert!(text.contains("Result: pricing did not pass"), "{text}");
}

#[test]
fn the_printed_workload_reads_back_as_itself() {
    let dir = support::scratch_dir("workload-print");
    let file = dir.join("shop.yaml");
    std::fs::write(&file, mix("nats://127.0.0.1:4222", 5, "p99<10ms")).unwrap();
    let first = run(&["run", file.to_str().unwrap(), "--print-plan"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let printed: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(printed["schema"], "msgbench.workload/v1");
    assert_eq!(printed["classes"][2]["class"], "pricing");
    assert_eq!(printed["classes"][2]["slo"][0], "p99<10ms");
    let again_file = dir.join("printed.json");
    std::fs::write(&again_file, &first.stdout).unwrap();
    let again = run(&["run", again_file.to_str().unwrap(), "--print-plan"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&again.stdout).unwrap(),
        printed
    );
}

#[test]
fn bad_workloads_and_flags_that_cannot_act_are_one_line_before_anything_runs() {
    let dir = support::scratch_dir("workload-bad");
    let good = mix("nats://127.0.0.1:1", 5, "p99<10ms");
    let cases: Vec<(String, Vec<&str>, Vec<&str>)> = vec![
        (
            good.replace("workload: shop", "workers: 3"),
            vec![],
            vec!["unknown key 'workers'"],
        ),
        (
            good.replace(
                "    rate: 200\n    subject: wl.pricing",
                "    subject: wl.pricing",
            ),
            vec![],
            vec!["class 'pricing'", "no rate"],
        ),
        (
            good.replace("    subs: 3", "    subs: 3\n    server: nats://127.0.0.1:2"),
            vec![],
            vec!["class 'prices'", "'server' is the workload's"],
        ),
        (
            good.replace("size: 64", "size: lots"),
            vec![],
            vec!["class 'prices'", "--size"],
        ),
        (
            good.clone(),
            vec!["--markdown", "x.md"],
            vec!["--markdown", "a workload"],
        ),
        (
            good.clone(),
            vec!["--control", "nats://127.0.0.1:1"],
            vec!["--control", "a workload", "--agents"],
        ),
        (
            good.clone(),
            vec!["--threshold", "p99<1ms"],
            vec!["--threshold", "slo"],
        ),
        (
            good.clone(),
            vec!["--json", "/nonexistent-dir/r.json"],
            vec!["--json"],
        ),
        // A class's --hist is written where its subscriber runs: on agents, not here.
        (
            "duration: 2s\nclasses:\n  l:\n    scenario: latency\n    rate: 100\n    hist: h\n"
                .to_string(),
            vec!["--agents", "2"],
            vec!["class 'l'", "--hist", "--agents"],
        ),
    ];
    for (i, (text, flags, words)) in cases.iter().enumerate() {
        let file = dir.join(format!("w{i}.yaml"));
        std::fs::write(&file, text).unwrap();
        let mut args = vec!["run", file.to_str().unwrap()];
        args.extend(flags.iter().copied());
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        for w in words {
            assert!(err.contains(w), "'{w}' not in {err}");
        }
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_workload_at_a_scale_runs_every_paced_class_at_its_rate_times_the_factor() {
    let s = TestServer::start();
    let dir = support::scratch_dir("workload-scale");
    let file = dir.join("w.yaml");
    std::fs::write(
        &file,
        format!(
            "duration: 2s\nconn: {{server: {}}}\nclasses:\n  feed:\n    scenario: pubsub\n    \
             rate: 150\n    subject: wl.scale\n  reads:\n    scenario: kv get\n    \
             bucket: wl_scale\n    keys: 10\n    rate: 50\n    delete_after: true\n  \
             service:\n    scenario: reply\n    subject: wl.scale.svc\n",
            s.url
        ),
    )
    .unwrap();
    let (out, doc) = support::run_json(&["run", file.to_str().unwrap(), "--scale", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(doc["scale"], 2.0);
    let feed = &class(&doc, "feed")["result"];
    assert_eq!(feed["plan"]["load"]["rate"], 300.0, "{}", feed["plan"]);
    let achieved = feed["pacing"]["target_rate"].as_f64().unwrap();
    assert_eq!(achieved, 300.0, "{}", feed["pacing"]);
    // kv operations are paced too; a class without a rate (a service) runs as written.
    let reads = &class(&doc, "reads")["result"];
    assert_eq!(reads["pacing"]["target_rate"], 100.0, "{}", reads["pacing"]);
    assert!(class(&doc, "service")["result"]["pacing"].is_null());
    assert!(stderr(&out).contains("every rate ×2"), "{}", stderr(&out));

    // A plan of one scenario has a rate of its own.
    let plan = dir.join("p.json");
    let printed = run(&["pub", "--print-plan"]);
    std::fs::write(&plan, &printed.stdout).unwrap();
    let refused = run(&["run", plan.to_str().unwrap(), "--scale", "2"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("--scale"), "{}", stderr(&refused));
}

/// Two paced classes for a search; `calls_slo` is the request class's second SLO. Both have a
/// loose latency SLO, so a send a busy machine delays by a few milliseconds is well inside
/// what they judge, and the run measured the system, not the tool.
fn duo(url: &str, calls_slo: &str) -> String {
    format!(
        "conn: {{server: {url}}}\nclasses:\n  probe:\n    scenario: latency\n    \
         rate: 100\n    subject: wl.cap.probe\n    slo: [p99<10s, lost==0]\n  calls:\n    \
         scenario: request\n    rate: 50\n    subject: wl.cap.calls\n    \
         slo: [p99<10s, '{calls_slo}']\n"
    )
}

#[test]
fn capacity_of_a_mix_scales_every_class_and_names_the_class_that_failed_first() {
    let s = TestServer::start();
    let dir = support::scratch_dir("workload-capacity");
    let search = [
        "--probe-duration",
        "1s",
        "--probe-warmup",
        "0s",
        "--probe-runs",
        "1",
        "--max-scale",
        "2",
    ];
    // Rates a loopback server holds with room to spare: both factors hold.
    let file = dir.join("duo.yaml");
    std::fs::write(&file, duo(&s.url, "errors==0")).unwrap();
    let mut args = vec!["capacity", file.to_str().unwrap()];
    args.extend(search);
    let (out, doc) = support::run_json(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let errors = schema_errors_in("workload-capacity-v1.schema.json", &doc);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(doc["sustainable_scale"], 2.0, "{}", stderr(&out));
    let probes = doc["probes"].as_array().unwrap();
    // A run the busy machine made msgbench miss its schedule in is run again, at the same
    // factor: the factors tried, in order, are 1 and 2.
    let mut scales: Vec<f64> = probes
        .iter()
        .map(|p| p["scale"].as_f64().unwrap())
        .collect();
    scales.dedup();
    assert_eq!(scales, [1.0, 2.0]);
    // Each probe has every class's own figures, at its rate times the factor.
    let top = &probes.last().unwrap()["classes"];
    assert_eq!(top[0]["class"], "probe");
    assert_eq!(top[0]["rate"], 200.0);
    assert_eq!(top[1]["class"], "calls");
    assert_eq!(top[1]["rate"], 100.0);
    assert!(top[1]["latency"]["p99_ns"].is_u64(), "{top}");
    assert_eq!(top[0]["lost"], 0);

    // An SLO no run can hold, however late msgbench sent (lateness only lowers `sent`): the
    // first factor fails, on that class.
    std::fs::write(&file, duo(&s.url, "sent<=10")).unwrap();
    let (out, doc) = support::run_json(&args);
    assert_eq!(out.status.code(), Some(8), "{}", stderr(&out));
    assert_eq!(doc["sustainable_scale"], serde_json::Value::Null);
    assert_eq!(doc["first_failing"]["class"], "calls");
    assert_eq!(doc["first_failing"]["slo"][0], "calls: sent<=10");
    assert_eq!(doc["limiter"]["kind"], "slo");
    // What bounded that class's run there, by the rule every run is judged by: requests at
    // 50/s saturate nothing, so the SLO.
    let calls = &doc["probes"][0]["classes"][1];
    assert_eq!(calls["class"], "calls");
    assert_eq!(calls["limit"]["kind"], "slo", "{calls}");
    let said = "what bounded its run there: the SLO: sent<=10 failed at 50/s";
    assert!(stderr(&out).contains(said), "{}", stderr(&out));

    // The live page, which a search and a workload each take, is refused for their pairing
    // in one line rather than accepted and not drawn.
    let refused = run(&["capacity", file.to_str().unwrap(), "--web", "127.0.0.1:0"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let err = stderr(&refused);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--web does not apply to `msgbench capacity WORKLOAD`"),
        "{err}"
    );

    // A class whose rate cannot be scaled is refused before anything runs.
    std::fs::write(
        &file,
        "classes:\n  service:\n    scenario: reply\n    subject: wl.cap.svc\n",
    )
    .unwrap();
    let refused = run(&["capacity", file.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2));
    let err = stderr(&refused);
    assert!(
        err.contains("class 'service'") && err.contains("no rate"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_recorded_workload_keeps_each_class_as_a_benchmark_of_its_own() {
    let s = TestServer::start();
    let dir = support::scratch_dir("workload-record");
    let file = dir.join("tiny.yaml");
    std::fs::write(
        &file,
        format!(
            "duration: 1s\nconn: {{server: {}}}\nclasses:\n  a:\n    scenario: request\n    \
             rate: 50\n    subject: wl.rec.a\n  b:\n    scenario: pubsub\n    rate: 50\n    \
             subject: wl.rec.b\n",
            s.url
        ),
    )
    .unwrap();
    let db = dir.join("h.db");
    let db_s = db.to_str().unwrap();
    let out = run(&[
        "run",
        file.to_str().unwrap(),
        "--history-file",
        db_s,
        "--no-progress",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["history", "list", "--history", db_s, "--json", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    let mut names: Vec<&str> = runs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["tiny.a", "tiny.b"]);
    for r in runs {
        assert_eq!(r["labels"]["workload"], "tiny");
        assert_eq!(
            Some(r["labels"]["class"].as_str().unwrap()),
            r["name"].as_str().unwrap().strip_prefix("tiny.")
        );
    }
    assert_ne!(runs[0]["benchmark"], runs[1]["benchmark"]);
}

/// A captured curve replayed: `--time-warp 0.5` plays each captured second over two, so each
/// of the curve's two rates holds for two of the timeline's one-second ticks, and one tick lies
/// wholly inside each whatever the moment the class started sending (its connect) within the
/// workload's first second.
#[test]
fn a_captured_curve_is_replayed_second_by_second_at_the_warp() {
    let s = TestServer::start();
    let dir = support::scratch_dir("workload-warp");
    let file = dir.join("w.yaml");
    std::fs::write(
        &file,
        format!(
            "duration: 10s\nconn: {{server: {}}}\nclasses:\n  feed:\n    scenario: pub\n    \
             rate: 600\n    subject: wl.warp\n    curve: [200, 1000]\n  calls:\n    \
             scenario: request\n    rate: 50\n    msgs: 60\n    subject: wl.warp.calls\n",
            s.url
        ),
    )
    .unwrap();
    let saved = dir.join("r.json");
    let csv = dir.join("r.csv");
    let out = run(&[
        "run",
        file.to_str().unwrap(),
        "--time-warp",
        "0.5",
        "--json",
        saved.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The text report's header says it, beside the scale.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("captured curves at 0.5× speed"), "{text}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
    let errors = schema_errors_in("workload-result-v1.schema.json", &doc);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(doc["time_warp"], 0.5);
    assert_eq!(doc["scale"], serde_json::Value::Null);
    let feed = &class(&doc, "feed")["result"];
    assert_eq!(feed["plan"]["load"]["rate_schedule"], "100@2s,500@2s");
    // The curve's 200 + 1000 messages, not the file's 10 s at 600/s.
    assert_eq!(
        u(&feed["throughput"]["msgs"]),
        1200,
        "{}",
        feed["throughput"]
    );
    let ticks = feed["timeline"]["ticks"].as_array().unwrap();
    let at = |t: &serde_json::Value, k: &str| t[k].as_f64().unwrap();
    // The class's schedule started `o` into the workload, and ended 4 s later.
    let o = at(ticks.last().unwrap(), "t_s") - 4.0;
    assert!((0.0..1.0).contains(&o), "started {o} s in: {ticks:?}");
    let mut seen = [false; 2];
    for t in ticks {
        let (end, span) = (at(t, "t_s"), at(t, "span_s"));
        let start = end - span;
        for (k, (from, to, rate)) in [(o, o + 2.0, 100.0), (o + 2.0, o + 4.0, 500.0)]
            .into_iter()
            .enumerate()
        {
            if span > 0.9 && start >= from && end <= to {
                let got = at(t, "sent_per_sec");
                assert!(
                    (got - rate).abs() <= 0.1 * rate,
                    "second {start:.2}–{end:.2}: {got}/s against the curve's {rate}/s"
                );
                seen[k] = true;
            }
        }
    }
    assert_eq!(seen, [true, true], "no whole tick in a stage: {ticks:?}");
    // --csv: the classes' combined timeline, a row per class and tick, the same figures.
    let csv = std::fs::read_to_string(&csv).unwrap();
    let mut rows = csv.lines();
    assert!(
        rows.next()
            .unwrap()
            .starts_with("class,t_s,span_s,sent_per_sec"),
        "{csv}"
    );
    let feed_rows: Vec<Vec<&str>> = (rows.clone())
        .filter(|r| r.starts_with("feed,"))
        .map(|r| r.split(',').collect())
        .collect();
    assert_eq!(feed_rows.len(), ticks.len(), "{csv}");
    for (row, t) in feed_rows.iter().zip(ticks) {
        // Times to the millisecond and rates to a tenth: within half of each.
        assert!(
            (row[1].parse::<f64>().unwrap() - at(t, "t_s")).abs() <= 0.0005,
            "{csv}"
        );
        let rate = row[3].parse::<f64>().unwrap();
        assert!((rate - at(t, "sent_per_sec")).abs() <= 0.05, "{csv}");
    }
    // The calls are timed, so some of their seconds carry a P99; a pub's never do.
    assert!(
        rows.clone()
            .any(|r| r.starts_with("calls,") && !r.split(',').nth(7).unwrap().is_empty()),
        "{csv}"
    );
    assert!(feed_rows.iter().all(|r| r[7].is_empty()), "{csv}");
    // A class without a curve runs as written.
    let calls = &class(&doc, "calls")["result"];
    assert_eq!(calls["plan"]["rate"], 50.0, "{}", calls["plan"]);
    assert_eq!(calls["plan"]["rate_schedule"], serde_json::Value::Null);
    assert_eq!(u(&calls["delivery"]["sent"]), 60);
}

#[test]
fn a_time_warp_with_nothing_to_replay_is_one_line_before_anything_runs() {
    let dir = support::scratch_dir("workload-warp-bad");
    let plain = dir.join("plain.yaml");
    std::fs::write(&plain, duo("nats://127.0.0.1:1", "errors==0")).unwrap();
    let curved = dir.join("curved.yaml");
    std::fs::write(
        &curved,
        "conn: {server: nats://127.0.0.1:1}\nclasses:\n  a:\n    scenario: pub\n    rate: 5\n    \
         curve: [1, 9]\n",
    )
    .unwrap();
    let plan = dir.join("p.json");
    std::fs::write(&plan, run(&["pub", "--print-plan"]).stdout).unwrap();
    let (p, c, f) = (
        plain.to_str().unwrap(),
        curved.to_str().unwrap(),
        plan.to_str().unwrap(),
    );
    let cases: [(&[&str], &[&str]); 5] = [
        (
            &["run", p, "--time-warp", "2"],
            &["--time-warp", "no class"],
        ),
        (
            &["run", f, "--time-warp", "2"],
            &["--time-warp", "one scenario"],
        ),
        (
            &["run", c, "--time-warp", "0"],
            &["--time-warp", "more than 0"],
        ),
        (
            &["capacity", c, "--time-warp", "2"],
            &["--time-warp", "mean rate"],
        ),
        (
            &["capacity", c, "--time-warp=2"],
            &["--time-warp", "does not apply to a search"],
        ),
    ];
    for (args, words) in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        for w in words {
            assert!(err.contains(w), "{args:?}: '{w}' not in {err}");
        }
    }
}
