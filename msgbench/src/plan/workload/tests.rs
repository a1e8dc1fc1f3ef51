use super::*;

fn read(text: &str) -> Result<Workload> {
    Workload::from_text(text, "w.yaml", "w")
}

fn refusal(text: &str) -> String {
    read(text).expect_err("refused").to_string()
}

const MIX: &str = "
# two classes on one shared server
workload: shop
duration: 3s
conn:
  server: nats://127.0.0.1:4222
classes:
  orders:
    scenario: js pub
    rate: 500
    slo: [p99<50ms, lost==0]
  feed:
    scenario: pubsub
    subs: 3
    rate: 1000
    subject: shop.feed
    slo: p99<20ms
";

#[test]
fn a_mix_keeps_its_order_shares_the_server_and_fills_the_duration() {
    let w = read(MIX).unwrap();
    assert_eq!(w.name, "shop");
    let names: Vec<&str> = w.classes.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["orders", "feed"]);
    assert_eq!(w.classes[0].slo.len(), 2);
    assert_eq!(w.classes[1].slo[0].to_string(), "p99<20ms");
    for c in &w.classes {
        let doc = c.plan.document();
        assert_eq!(doc["conn"]["server"], "nats://127.0.0.1:4222", "{doc}");
        let duration = doc.get("duration").or_else(|| doc["load"].get("duration"));
        assert_eq!(duration, Some(&Value::from("3s")), "{doc}");
    }
    assert_eq!(w.validate().unwrap().len(), 2);
}

#[test]
fn the_printed_form_reads_back_as_the_same_workload() {
    let w = read(MIX).unwrap();
    let printed = w.to_json().unwrap();
    assert_eq!(printed["schema"], SCHEMA);
    assert_eq!(printed["conn"]["server"], "nats://127.0.0.1:4222");
    assert!(printed["classes"][0].get("conn").is_none());
    let again = Workload::from_entries(
        printed.as_object().unwrap().clone().into_iter().collect(),
        "p",
        "p",
    )
    .unwrap();
    assert_eq!(again.to_json().unwrap(), printed);
}

#[test]
fn a_class_keeps_its_own_stop() {
    let w =
        read("duration: 3s\nclasses:\n  a:\n    scenario: request\n    rate: 10\n    msgs: 50\n")
            .unwrap();
    let doc = w.classes[0].plan.document();
    assert_eq!(doc["msgs"], 50);
    assert_eq!(doc["duration"], Value::Null);
}

#[test]
fn bad_workloads_are_refused_naming_the_class_and_the_key() {
    let cases: &[(&str, &[&str])] = &[
        ("classes: {}\n", &["no classes"]),
        ("workers: 3\nclasses: {}\n", &["unknown key 'workers'"]),
        (
            "classes:\n  a:\n    rate: 5\n",
            &["class 'a'", "no scenario"],
        ),
        (
            "classes:\n  a:\n    scenario: js pub\n  b:\n    scenario: reply\n",
            &["class 'a'", "no rate"],
        ),
        (
            "classes:\n  a:\n    scenario: pub\n    rate: 0\n  b:\n    scenario: reply\n",
            &["class 'a'", "no rate"],
        ),
        (
            "classes:\n  a:\n    scenario: pub\n    rate: 5\n    sizes: 9\n",
            &["class 'a'", "--sizes"],
        ),
        (
            "classes:\n  a:\n    scenario: pub\n    rate: 5\n    server: nats://127.0.0.1:1\n",
            &["class 'a'", "'server' is the workload's"],
        ),
        (
            "classes:\n  a:\n    scenario: latency\n    server_b: nats://127.0.0.1:1\n",
            &["class 'a'", "'server_b'"],
        ),
        (
            "classes:\n  a:\n    scenario: pub\n    rate: 5\n    slo: p99<<1\n",
            &["class 'a'", "slo 'p99<<1'"],
        ),
        (
            "classes:\n  a:\n    scenario: warp\n",
            &["class 'a'", "scenario 'warp'"],
        ),
        (
            "classes:\n  a:\n    scenario: pub\n    rate: 5\n  b:\n    scenario: pubsub\n    rate: 5\n",
            &["classes 'a' and 'b'", "subject 'msgbench'"],
        ),
        (
            "conn:\n  fault: kill@1s\nclasses:\n  a:\n    scenario: pub\n    rate: 5\n",
            &["conn.fault"],
        ),
        ("classes:\n  a: 3\n", &["class 'a'", "not a mapping"]),
        ("classes:\n  'a b':\n    scenario: pub\n", &["class 'a b'", "name"]),
    ];
    for (text, words) in cases {
        let e = refusal(text);
        assert!(e.starts_with("workload 'w.yaml'"), "{text}: {e}");
        for w in *words {
            assert!(e.contains(w), "{text}: '{w}' not in: {e}");
        }
    }
}

#[test]
fn consumers_of_streams_as_they_are_send_on_no_subject_and_may_share_the_default() {
    // Each class's subject is the default; neither publishes, so they do not meet.
    let two = "classes:\n  a:\n    scenario: js consume\n    publish: none\n    stream: s1\n  \
               b:\n    scenario: js consume\n    publish: none\n    stream: s2\n";
    assert_eq!(read(two).expect("accepted").classes.len(), 2);
    // One stream consumed by both is still refused.
    let e = refusal(&two.replace("s2", "s1"));
    assert!(e.contains("stream 's1'"), "{e}");
}

#[test]
fn an_slo_on_a_figure_the_class_does_not_produce_is_refused_naming_the_class() {
    let w =
        read("classes:\n  a:\n    scenario: pub\n    rate: 5\n    slo: connect_p99<1s\n").unwrap();
    let e = w
        .validate()
        .expect_err("pub has no connections to time")
        .to_string();
    assert!(
        e.contains("class 'a'") && e.contains("slo 'connect_p99<1s'"),
        "{e}"
    );
}

#[test]
fn a_class_alone_may_send_as_fast_as_it_can() {
    let w = read("classes:\n  a:\n    scenario: pub\n").unwrap();
    assert_eq!(w.classes[0].plan.document()["load"]["rate"], 0.0);
}

const CURVED: &str = "
duration: 3s
classes:
  feed:
    scenario: pub
    rate: 600
    msgs: 5000
    subject: wl.feed
    curve: [200, 1000, 0, 600.5]
  calls:
    scenario: request
    rate: 50
    subject: wl.calls
";

fn schedule_of(c: &Class) -> Option<String> {
    let doc = c.plan.document();
    let s = doc
        .get("rate_schedule")
        .or_else(|| doc["load"].get("rate_schedule"));
    s.and_then(Value::as_str).map(String::from)
}

#[test]
fn a_curve_is_read_kept_on_its_class_and_printed_back() {
    let w = read(CURVED).unwrap();
    assert_eq!(w.classes[0].curve, Some(vec![200.0, 1000.0, 0.0, 600.5]));
    assert_eq!(w.classes[1].curve, None);
    // A plain run sends at the class's rate: the curve is not in its plan.
    assert_eq!(w.classes[0].plan.document()["load"]["rate"], 600.0);
    assert_eq!(schedule_of(&w.classes[0]), None);
    let printed = w.to_json().unwrap();
    assert_eq!(
        printed["classes"][0]["curve"],
        serde_json::json!([200.0, 1000.0, 0.0, 600.5])
    );
    assert!(printed["classes"][1].get("curve").is_none());
    assert_eq!(w.recorded()["classes"][0]["curve"][1], 1000.0);
    let again = Workload::from_value(&printed, "p").unwrap();
    assert_eq!(again.classes[0].curve, w.classes[0].curve);
    assert_eq!(again.to_json().unwrap(), printed);
}

#[test]
fn a_curve_where_it_cannot_act_or_with_bad_points_is_refused_naming_the_class_and_the_key() {
    let class = |keys: &str| format!("classes:\n  a:\n{keys}\n  b:\n    scenario: reply\n");
    let cases: &[(&str, &[&str])] = &[
        (
            "    scenario: reply\n    subject: x\n    curve: [1, 2]",
            &["class 'a'", "curve", "`reply`", "no paced rate"],
        ),
        (
            "    scenario: conns\n    curve: [1, 2]",
            &["class 'a'", "curve", "`conns`"],
        ),
        (
            "    scenario: obj put\n    curve: [1, 2]",
            &["class 'a'", "curve", "`obj put`"],
        ),
        (
            "    scenario: pub\n    rate_schedule: 10@1s\n    curve: [1, 2]",
            &["class 'a'", "curve beside rate_schedule"],
        ),
        (
            "    scenario: pub\n    curve: [1, 2]",
            &["class 'a'", "curve without a rate"],
        ),
        (
            "    scenario: pub\n    rate: 5\n    curve: [1, -2]",
            &["class 'a'", "curve[1] is -2"],
        ),
        (
            "    scenario: pub\n    rate: 5\n    curve: [1, x]",
            &["class 'a'", "curve[1] is \"x\""],
        ),
        (
            "    scenario: pub\n    rate: 5\n    curve: [0, 0]",
            &["class 'a'", "every second's rate is 0"],
        ),
        (
            "    scenario: pub\n    rate: 5\n    curve: []",
            &["class 'a'", "curve has 0 points"],
        ),
        (
            "    scenario: pub\n    rate: 5\n    curve: 7",
            &["class 'a'", "curve 7 is not a list"],
        ),
    ];
    for (keys, words) in cases {
        let e = refusal(&class(keys));
        assert_eq!(e.lines().count(), 1, "{e}");
        for w in *words {
            assert!(e.contains(w), "{keys}: '{w}' not in: {e}");
        }
    }
    let long = format!(
        "    scenario: pub\n    rate: 5\n    curve: [{}]",
        vec!["1"; curve::MAX_POINTS + 1].join(",")
    );
    assert!(refusal(&class(&long)).contains("86400"));
}

#[test]
fn scale_multiplies_the_curve_with_the_rate() {
    let mut w = read(CURVED).unwrap();
    w.scale(2.0).unwrap();
    assert_eq!(w.classes[0].curve, Some(vec![400.0, 2000.0, 0.0, 1201.0]));
    assert_eq!(w.classes[0].plan.document()["load"]["rate"], 1200.0);
    // Then warped: the scaled curve, each second in half a second.
    w.warp(2.0).unwrap();
    assert_eq!(
        schedule_of(&w.classes[0]).as_deref(),
        Some("800@500ms,4000@500ms,0@500ms,2402@500ms")
    );
    assert_eq!((w.scale, w.time_warp), (Some(2.0), Some(2.0)));
}

#[test]
fn a_warp_makes_each_curve_its_class_schedule_and_leaves_the_others_as_written() {
    let mut w = read(CURVED).unwrap();
    let calls = w.classes[1].plan.document();
    w.warp(1.0).unwrap();
    let feed = &w.classes[0];
    assert_eq!(
        schedule_of(feed).as_deref(),
        Some("200@1s,1000@1s,0@1s,600.5@1s")
    );
    // The schedule sets the class's length: its own count and the shared duration are gone.
    let doc = feed.plan.document();
    assert_eq!(doc["load"]["duration"], Value::Null, "{doc}");
    assert_ne!(doc["msgs"], 5000, "{doc}");
    assert_eq!(feed.curve, None);
    assert_eq!(w.classes[1].plan.document(), calls);
    assert_eq!(w.time_warp, Some(1.0));
    // It checks, prints and reads back as it will run.
    assert_eq!(w.validate().unwrap().len(), 2);
    let printed = w.to_json().unwrap();
    let again = Workload::from_value(&printed, "p").unwrap();
    assert_eq!(again.to_json().unwrap(), printed);

    // A tenth of the speed: each second lasts ten.
    let mut slow = read(CURVED).unwrap();
    slow.warp(0.1).unwrap();
    let s = schedule_of(&slow.classes[0]).unwrap();
    assert!(s.starts_with("20@10s,100@10s,"), "{s}");
    let mut third = read(CURVED).unwrap();
    third.warp(3.0).unwrap();
    let s = schedule_of(&third.classes[0]).unwrap();
    assert!(s.starts_with("600@333333333ns,3000@333333333ns,"), "{s}");
}

#[test]
fn a_warp_is_refused_where_it_cannot_act() {
    let mut plain = read(MIX).unwrap();
    let e = plain.warp(2.0).unwrap_err().to_string();
    assert!(e.contains("--time-warp") && e.contains("no class"), "{e}");
    for f in [0.0, -1.0, f64::INFINITY] {
        let e = read(CURVED).unwrap().warp(f).unwrap_err().to_string();
        assert!(
            e.contains("--time-warp") && e.contains("more than 0"),
            "{e}"
        );
    }
}

#[test]
fn a_long_curve_is_merged_into_equal_stages_that_send_what_it_holds() {
    // 250 seconds of an uneven curve: 100 stages of 2.5 s each.
    let points: Vec<f64> = (0..250u32)
        .map(|i| f64::from((i * 37) % 101) * 10.0 + 0.25)
        .collect();
    let held: f64 = points.iter().sum();
    let stages = curve::stages(&points, 1.0);
    assert_eq!(stages.len(), crate::stats::schedule::MAX_STAGES);
    assert!(
        stages.iter().all(|&(_, ns)| ns == 2_500_000_000),
        "{stages:?}"
    );
    let sent: f64 = stages.iter().map(|&(r, ns)| r * ns as f64 / 1e9).sum();
    assert!((sent - held).abs() < 1.0, "{sent} against {held}");
    // Stage 0 covers seconds 0, 1 and half of 2.
    let first = (points[0] + points[1] + points[2] / 2.0) / 2.5;
    assert!((stages[0].0 - first).abs() < 1e-9, "{}", stages[0].0);
    // The schedule the class runs on counts the same, warped or not.
    for warp in [1.0, 3.0, 0.5] {
        let spec = curve::schedule(&curve::stages(&points, warp));
        let s = crate::stats::schedule::RateSchedule::parse(&spec, None).unwrap();
        assert!(
            (s.total() - held).abs() < 1.0,
            "×{warp}: {} against {held}",
            s.total()
        );
        let want = 250.0 / warp;
        let len = s.length().unwrap().as_secs_f64();
        assert!((len - want).abs() < 1e-6, "×{warp}: {len} s");
    }
}

/// A live consumer, whose rate is its own, beside a paced publisher.
const LIVE: &str = "
classes:
  drain:
    scenario: js consume
    publish: live
    rate: 400
    msgs: 2000
  feed:
    scenario: pub
    rate: 100
    subject: w.feed
";

#[test]
fn scale_multiplies_a_live_consumers_own_rate_and_count() {
    let mut w = read(LIVE).unwrap();
    w.scale(2.5).unwrap();
    let doc = w.classes[0].plan.document();
    assert_eq!(
        (doc["rate"].as_f64(), doc["msgs"].as_u64()),
        (Some(1000.0), Some(5000)),
        "{doc}"
    );
    assert_eq!(w.classes[1].plan.document()["load"]["rate"], 250.0);
}

#[test]
fn a_live_consumers_own_rate_is_found_and_takes_a_probes_schedule() {
    let w = read(LIVE).unwrap();
    assert_eq!(own_rate(&w.classes[0].plan), Some(400.0));
    assert_eq!(own_rate(&w.classes[1].plan), None);
    let probe = scheduled(&w.classes[0].plan, "800@1s,800@2s".into()).unwrap();
    let doc = probe.document();
    assert_eq!(doc["rate_schedule"], "800@1s,800@2s", "{doc}");
    assert!(probe.validate().is_ok());
}
