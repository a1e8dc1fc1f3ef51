//! The OpenMetrics text of one tick, for `--metrics-listen`: the tick's rates, latency and stage
//! and the [`Totals`] read with it, under labels naming the run and its scenario. The Prometheus
//! project's own client (`prometheus-client`) writes the format (names, suffixes, `# UNIT`,
//! escaping, `# EOF`); this file only decides what is shown, in which order and under which
//! names.
//!
//! The figures are values already measured, not instruments updated in place, so they go out
//! through the client's collector interface as constant counters and gauges, in a fixed order
//! (roles as the timeline orders them, error kinds by name) that makes two scrapes of the same
//! tick byte for byte the same. Units are the format's base units: seconds, not nanoseconds.

use std::borrow::Cow;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

use crate::stats::server::{ConsumerPoint, ServerPoint, ServerTick};
use crate::stats::throughput::Role;
use crate::stats::timeline::{Tick, Totals};

/// What names a run on every sample: `run` (the id its result will carry) and `scenario`.
#[derive(Debug, Clone)]
pub struct RunLabels {
    pub run: String,
    pub scenario: &'static str,
}

/// One run's figures at its latest tick, as one part of a page: a page shows one run, or a
/// workload's classes running together, each an item under labels of its own.
#[derive(Debug, Clone)]
pub struct Item {
    /// The labels of this item's samples besides the page's own (a class's `class`,
    /// `scenario` and `run`); none on a page of one run.
    pub labels: Vec<(&'static str, String)>,
    pub tick: Tick,
    pub totals: Totals,
    /// Whether it is the run's last tick.
    pub finished: bool,
}

/// The whole exposition of one run's `tick` (ending in `# EOF`). `finished` says it is the
/// run's last. (A run's feed renders through [`render_items`]; this is its page alone.)
#[cfg(test)]
pub fn render(labels: &RunLabels, tick: &Tick, totals: &Totals, finished: bool) -> String {
    let page = [
        ("run", labels.run.clone()),
        ("scenario", labels.scenario.to_string()),
    ];
    let item = Item {
        labels: Vec::new(),
        tick: tick.clone(),
        totals: totals.clone(),
        finished,
    };
    render_items(&page, &[item])
}

/// The whole exposition of several runs at once (a workload's classes), `page` naming them
/// all: each family once, with a sample per item under its labels. What the runs share (the
/// servers sampled, msgbench's own CPU) is shown once, from the first item that has it.
pub fn render_items(page: &[(&'static str, String)], items: &[Item]) -> String {
    let mut registry = Registry::with_prefix_and_labels(
        "msgbench",
        page.iter()
            .map(|(k, v)| (Cow::Borrowed(*k), Cow::Owned(v.clone()))),
    );
    registry.register_collector(Box::new(Page(items.to_vec())));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .expect("encoding into a String cannot fail");
    text
}

/// The items of one page, owned, as the client's collector interface wants them.
#[derive(Debug)]
struct Page(Vec<Item>);

/// A role's rate in a tick, as the tick itself has it.
fn rate_of(tick: &Tick, role: Role) -> f64 {
    match role {
        Role::Pub => tick.sent_per_sec,
        Role::Sub => tick.received_per_sec,
    }
}

fn ns_to_s(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// An item's labels with `extra` after them, as a sample carries them.
fn with<'a>(item: &'a Item, extra: &[(&'static str, &'a str)]) -> Vec<(&'static str, &'a str)> {
    (item.labels.iter())
        .map(|(k, v)| (*k, v.as_str()))
        .chain(extra.iter().copied())
        .collect()
}

impl Collector for Page {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let items = &self.0;
        gauges(
            &mut e,
            "tick_end",
            "End of the interval these figures are from, in seconds since the run started \
             (the t_s of its tick in the result's timeline)",
            Some(&Unit::Seconds),
            items,
            |i| Some(i.tick.t_s),
        )?;
        gauges(
            &mut e,
            "tick_span",
            "Length of that interval",
            Some(&Unit::Seconds),
            items,
            |i| Some(i.tick.span_s),
        )?;
        gauges(
            &mut e,
            "run_finished",
            "1 when these are the run's final figures",
            None,
            items,
            |i| Some(i64::from(i.finished)),
        )?;
        {
            let c = ConstCounter::new(0u64);
            let mut m = e.encode_descriptor(
                "messages",
                "Messages since the run started, sent (role pub) or received (role sub).",
                None,
                c.metric_type(),
            )?;
            for i in items {
                for (role, n) in &i.totals.msgs {
                    ConstCounter::new(*n)
                        .encode(m.encode_family(&with(i, &[("role", role.as_str())]))?)?;
                }
            }
        }
        {
            let g = ConstGauge::new(0.0f64);
            let mut m = e.encode_descriptor(
                "messages_per_second",
                "Messages per second in the interval, sent (role pub) or received (role sub).",
                None,
                g.metric_type(),
            )?;
            for i in items {
                for role in i.totals.msgs.keys() {
                    ConstGauge::new(rate_of(&i.tick, *role))
                        .encode(m.encode_family(&with(i, &[("role", role.as_str())]))?)?;
                }
            }
        }
        let in_interval = "of the latencies measured in the interval";
        let latency = |f: fn(&crate::stats::timeline::TickLatency) -> u64| {
            move |i: &Item| i.tick.latency.as_ref().map(|l| ns_to_s(f(l)))
        };
        for (name, help, f) in [
            (
                "latency_p50",
                format!("Median {in_interval}"),
                (|l: &crate::stats::timeline::TickLatency| l.p50_ns)
                    as fn(&crate::stats::timeline::TickLatency) -> u64,
            ),
            (
                "latency_p99",
                format!("99th percentile {in_interval}"),
                |l| l.p99_ns,
            ),
            ("latency_max", format!("Largest {in_interval}"), |l| {
                l.max_ns
            }),
        ] {
            gauges(&mut e, name, &help, Some(&Unit::Seconds), items, latency(f))?;
        }
        gauges(
            &mut e,
            "latency_samples",
            "Latencies measured in the interval",
            None,
            items,
            |i| i.tick.latency.as_ref().map(|l| l.count as i64),
        )?;
        {
            let c = ConstCounter::new(0u64);
            let mut m = e.encode_descriptor(
                "errors",
                "Errors since the run started, by kind (the kinds of the result's errors section).",
                None,
                c.metric_type(),
            )?;
            for i in items {
                for (kind, n) in &i.totals.errors {
                    ConstCounter::new(*n).encode(m.encode_family(&with(i, &[("kind", *kind)]))?)?;
                }
            }
        }
        sections(&mut e, items)
    }
}

/// A gauge family with a sample per item that has a value (`f`); none at all when no item has
/// one. `help` gets its full stop here, as the client's registry would add it.
fn gauges<N>(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    items: &[Item],
    f: impl Fn(&Item) -> Option<N>,
) -> Result<(), std::fmt::Error>
where
    ConstGauge<N>: EncodeMetric,
{
    let values: Vec<(&Item, N)> = items.iter().filter_map(|i| Some((i, f(i)?))).collect();
    if values.is_empty() {
        return Ok(());
    }
    let kind = prometheus_client::metrics::MetricType::Gauge;
    let mut m = e.encode_descriptor(name, &format!("{help}."), unit, kind)?;
    for (i, v) in values {
        ConstGauge::new(v).encode(m.encode_family(&with(i, &[]))?)?;
    }
    Ok(())
}

/// A gauge family with a sample per labelled value; a value not measured (`None`) has no
/// sample, never a 0.
fn labelled<'a>(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    samples: impl Iterator<Item = (Vec<(&'static str, &'a str)>, Option<f64>)>,
) -> Result<(), std::fmt::Error> {
    let g = ConstGauge::new(0.0f64);
    let mut m = e.encode_descriptor(name, &format!("{help}."), unit, g.metric_type())?;
    for (labels, v) in samples {
        if let Some(v) = v {
            ConstGauge::new(v).encode(m.encode_family(&labels)?)?;
        }
    }
    Ok(())
}

/// The tick's sections a run has or not: a conns run's connections, the servers sampled and
/// msgbench's own CPU, the schedule's stage.
fn sections(e: &mut DescriptorEncoder, items: &[Item]) -> Result<(), std::fmt::Error> {
    let conns = |f: fn(&crate::stats::timeline::TickConns) -> f64| {
        move |i: &Item| i.tick.conns.as_ref().map(f)
    };
    gauges(
        e,
        "connections_up",
        "A conns run's connections up at the end of the interval",
        None,
        items,
        |i| i.tick.conns.map(|c| c.up as i64),
    )?;
    gauges(
        e,
        "connections_opened_per_second",
        "A conns run's connections that came up the first time, per second of the interval",
        None,
        items,
        conns(|c| c.opened_per_sec),
    )?;
    gauges(
        e,
        "connections_lost",
        "A conns run's connections that were up and were lost in the interval",
        None,
        items,
        |i| i.tick.conns.map(|c| c.lost as i64),
    )?;
    // The servers and msgbench's own CPU are the same for every run of one process: once,
    // under the page's labels alone, from a run still going (one that has ended holds its
    // last reading, which grows old).
    let shared = items
        .iter()
        .filter(|i| !i.finished)
        .chain(items.iter().filter(|i| i.finished));
    if let Some(s) = shared.clone().find_map(|i| i.tick.server.as_ref()) {
        servers(e, s)?;
    }
    if let Some(tool) = shared.clone().find_map(|i| i.tick.tool) {
        gauge(
            e,
            "tool_cpu_cores",
            "msgbench's own CPU in the interval, in cores (1: one core busy throughout)",
            None,
            tool.cpu_cores,
        )?;
    }
    gauges(
        e,
        "stage_index",
        "The --rate-schedule stage the run was in in the middle of the interval, from 0",
        None,
        items,
        |i| i.tick.stage.map(|s| s.index as i64),
    )?;
    gauges(
        e,
        "stages",
        "Stages in the --rate-schedule",
        None,
        items,
        |i| i.tick.stage.map(|s| s.of as i64),
    )?;
    gauges(
        e,
        "stage_target_messages_per_second",
        "The target rate of that stage (a ramp's mean)",
        None,
        items,
        |i| i.tick.stage.map(|s| s.target_rate),
    )
}

/// A family of gauges: its name, help, unit, and how each labelled thing gives its value.
type Family<T> = (
    &'static str,
    &'static str,
    Option<&'static Unit>,
    fn(&T) -> Option<f64>,
);

/// The servers sampled in the tick, each under `server` (its name): up or not, CPU, memory,
/// connections, traffic and slow consumers; each stream's messages, and each consumer's
/// pending and unacknowledged messages. Only what the servers said: a figure a reading lacked
/// has no sample.
fn servers(e: &mut DescriptorEncoder, s: &ServerTick) -> Result<(), std::fmt::Error> {
    let by_server = |f: fn(&ServerPoint) -> Option<f64>| {
        s.servers
            .iter()
            .map(move |p| (vec![("server", p.name.as_str())], f(p)))
    };
    let families: [Family<ServerPoint>; 8] = [
        (
            "server_up",
            "1 when the server's monitoring endpoint answered in the tick",
            None,
            |p| Some(f64::from(u8::from(p.up))),
        ),
        (
            "server_cpu_cores",
            "The server's CPU, as it measures it over about its last second, in cores",
            None,
            |p| p.cpu_pct.map(|c| c / 100.0),
        ),
        (
            "server_cores",
            "The cores the server may use (the fewer of its CPUs and GOMAXPROCS)",
            None,
            |p| p.cores.map(f64::from),
        ),
        (
            "server_memory",
            "The server's resident memory",
            Some(&Unit::Bytes),
            |p| p.mem_bytes.map(|m| m as f64),
        ),
        (
            "server_connections",
            "Client connections the server holds",
            None,
            |p| p.connections.map(|c| c as f64),
        ),
        (
            "server_in_messages_per_second",
            "Messages the server took in per second since its previous reading",
            None,
            |p| p.in_msgs_per_sec,
        ),
        (
            "server_out_messages_per_second",
            "Messages the server sent out per second since its previous reading",
            None,
            |p| p.out_msgs_per_sec,
        ),
        (
            "server_slow_consumers",
            "The server's slow_consumers counter (since it started)",
            None,
            |p| p.slow_consumers.map(|c| c as f64),
        ),
    ];
    for (name, help, unit, f) in families {
        labelled(e, name, help, unit, by_server(f))?;
    }
    labelled(
        e,
        "stream_messages",
        "Messages in the stream, as its leader sees it",
        None,
        s.streams
            .iter()
            .map(|st| (vec![("stream", st.name.as_str())], Some(st.msgs as f64))),
    )?;
    for (name, help, f) in [
        (
            "consumer_pending",
            "Messages of the stream not yet delivered to the consumer",
            (|c: &ConsumerPoint| c.pending) as fn(&ConsumerPoint) -> u64,
        ),
        (
            "consumer_ack_pending",
            "Messages delivered to the consumer and not yet acknowledged",
            |c| c.ack_pending,
        ),
    ] {
        labelled(
            e,
            name,
            help,
            None,
            s.consumers.iter().map(|c| {
                (
                    vec![("stream", c.stream.as_str()), ("consumer", c.name.as_str())],
                    Some(f(c) as f64),
                )
            }),
        )?;
    }
    Ok(())
}

/// One gauge family with one sample (the run's labels only). `help` gets its full stop here, as
/// the client's registry would add it.
fn gauge<N>(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    value: N,
) -> Result<(), std::fmt::Error>
where
    ConstGauge<N>: EncodeMetric,
{
    let g = ConstGauge::new(value);
    let m = e.encode_descriptor(name, &format!("{help}."), unit, g.metric_type())?;
    g.encode(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::timeline::{TickLatency, TickStage};

    fn tick() -> Tick {
        Tick {
            t_s: 2.004_5,
            span_s: 1.000_25,
            msgs: vec![1000, 998],
            sent_per_sec: 999.750_062_484_378_9,
            received_per_sec: 997.750_562_359_410_1,
            latency: Some(TickLatency {
                count: 998,
                p50_ns: 45_568,
                p99_ns: 1_892_352,
                max_ns: 4_882_432,
            }),
            errors: 1,
            stage: Some(TickStage {
                index: 1,
                of: 3,
                target_rate: 2000.0,
            }),
            conns: None,
            server: None,
            tool: None,
        }
    }

    fn totals() -> Totals {
        Totals {
            msgs: [(Role::Pub, 2000), (Role::Sub, 1996)].into_iter().collect(),
            errors: [("request_timeout", 1)].into_iter().collect(),
        }
    }

    fn labels() -> RunLabels {
        RunLabels {
            run: "20261125T143000Z-latency-0a1b".into(),
            scenario: "latency",
        }
    }

    /// The samples of `text`, as `name{labels} value` lines.
    fn samples(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn a_conns_tick_shows_its_connections_and_a_tick_of_messages_none() {
        let on = r#"run="20261125T143000Z-latency-0a1b",scenario="latency""#;
        let conns = Tick {
            conns: Some(crate::stats::timeline::TickConns {
                up: 1500,
                opened_per_sec: 250.5,
                lost: 3,
            }),
            ..tick()
        };
        let text = render(&labels(), &conns, &totals(), false);
        for want in [
            format!("msgbench_connections_up{{{on}}} 1500"),
            format!("msgbench_connections_opened_per_second{{{on}}} 250.5"),
            format!("msgbench_connections_lost{{{on}}} 3"),
        ] {
            assert!(
                samples(&text).contains(&want.as_str()),
                "{want} not in\n{text}"
            );
        }
        let plain = render(&labels(), &tick(), &totals(), false);
        assert!(!plain.contains("connections_"), "{plain}");
    }

    #[test]
    fn a_tick_is_exposed_whole_in_base_units_ending_in_eof() {
        let text = render(&labels(), &tick(), &totals(), false);
        assert!(text.ends_with("# EOF\n"), "{text}");
        let on = r#"run="20261125T143000Z-latency-0a1b",scenario="latency""#;
        for want in [
            format!("msgbench_tick_end_seconds{{{on}}} 2.0045"),
            format!("msgbench_run_finished{{{on}}} 0"),
            format!(r#"msgbench_messages_total{{{on},role="pub"}} 2000"#),
            format!(r#"msgbench_messages_total{{{on},role="sub"}} 1996"#),
            format!(r#"msgbench_messages_per_second{{{on},role="pub"}} 999.7500624843789"#),
            format!("msgbench_latency_p99_seconds{{{on}}} 0.001892352"),
            format!("msgbench_latency_samples{{{on}}} 998"),
            format!(r#"msgbench_errors_total{{{on},kind="request_timeout"}} 1"#),
            format!("msgbench_stage_index{{{on}}} 1"),
            format!("msgbench_stage_target_messages_per_second{{{on}}} 2000.0"),
        ] {
            assert!(
                samples(&text).contains(&want.as_str()),
                "{want} not in\n{text}"
            );
        }
        assert!(
            text.contains("# TYPE msgbench_messages counter\n"),
            "{text}"
        );
        assert!(
            text.contains("# UNIT msgbench_latency_p99_seconds seconds\n"),
            "{text}"
        );
        // The same tick twice is the same text: nothing in it depends on hash order.
        assert_eq!(text, render(&labels(), &tick(), &totals(), false));
    }

    #[test]
    fn the_servers_sampled_are_exposed_each_under_its_name_and_a_figure_not_read_has_no_sample() {
        use crate::stats::server::{ConsumerPoint, ServerPoint, ServerTick, StreamPoint, ToolTick};
        let on = r#"run="20261125T143000Z-latency-0a1b",scenario="latency""#;
        let t = Tick {
            server: Some(ServerTick {
                servers: vec![
                    ServerPoint {
                        name: "n1".into(),
                        up: true,
                        cpu_pct: Some(150.0),
                        cores: Some(2),
                        mem_bytes: Some(20 << 20),
                        slow_consumers: Some(3),
                        ..ServerPoint::default()
                    },
                    // Not answering: up 0, and no other figure at all.
                    ServerPoint {
                        name: "n2".into(),
                        ..ServerPoint::default()
                    },
                ],
                streams: vec![StreamPoint {
                    name: "orders".into(),
                    msgs: 42,
                    ..StreamPoint::default()
                }],
                consumers: vec![ConsumerPoint {
                    stream: "orders".into(),
                    name: "c1".into(),
                    pending: 7,
                    ack_pending: 2,
                    ..ConsumerPoint::default()
                }],
                ..ServerTick::default()
            }),
            tool: Some(ToolTick {
                cpu_cores: 0.75,
                ..ToolTick::default()
            }),
            ..tick()
        };
        let text = render(&labels(), &t, &totals(), false);
        let lines = samples(&text);
        for want in [
            format!(r#"msgbench_server_up{{{on},server="n1"}} 1.0"#),
            format!(r#"msgbench_server_up{{{on},server="n2"}} 0.0"#),
            format!(r#"msgbench_server_cpu_cores{{{on},server="n1"}} 1.5"#),
            format!(r#"msgbench_server_cores{{{on},server="n1"}} 2.0"#),
            format!(r#"msgbench_server_memory_bytes{{{on},server="n1"}} 20971520.0"#),
            format!(r#"msgbench_server_slow_consumers{{{on},server="n1"}} 3.0"#),
            format!(r#"msgbench_stream_messages{{{on},stream="orders"}} 42.0"#),
            format!(r#"msgbench_consumer_pending{{{on},stream="orders",consumer="c1"}} 7.0"#),
            format!(r#"msgbench_consumer_ack_pending{{{on},stream="orders",consumer="c1"}} 2.0"#),
            format!("msgbench_tool_cpu_cores{{{on}}} 0.75"),
        ] {
            assert!(lines.contains(&want.as_str()), "{want} not in\n{text}");
        }
        assert!(
            !lines
                .iter()
                .any(|l| l.contains("server=\"n2\"") && !l.starts_with("msgbench_server_up")),
            "n2 was not read: only its up sample\n{text}"
        );
        assert!(
            !render(&labels(), &tick(), &totals(), false).contains("msgbench_server"),
            "a tick without servers exposes none"
        );
    }

    #[test]
    fn a_page_of_classes_labels_each_and_takes_the_shared_figures_from_one_still_going() {
        use crate::stats::server::{ServerPoint, ServerTick, ToolTick};
        let with = |cpu: f64, tool: f64| Tick {
            server: Some(ServerTick {
                servers: vec![ServerPoint {
                    name: "n1".into(),
                    up: true,
                    cpu_pct: Some(cpu),
                    ..ServerPoint::default()
                }],
                ..ServerTick::default()
            }),
            tool: Some(ToolTick {
                cpu_cores: tool,
                ..ToolTick::default()
            }),
            ..tick()
        };
        let item = |class: &str, tick: Tick, finished: bool| Item {
            labels: vec![("class", class.to_string())],
            tick,
            totals: totals(),
            finished,
        };
        // The first class has ended on an old reading; the second goes on.
        let items = [
            item("a", with(10.0, 0.1), true),
            item("b", with(80.0, 0.5), false),
        ];
        let text = render_items(&[("workload", "w".to_string())], &items);
        let lines = samples(&text);
        for want in [
            r#"msgbench_server_cpu_cores{workload="w",server="n1"} 0.8"#,
            r#"msgbench_tool_cpu_cores{workload="w"} 0.5"#,
            r#"msgbench_run_finished{workload="w",class="a"} 1"#,
            r#"msgbench_run_finished{workload="w",class="b"} 0"#,
            r#"msgbench_messages_total{workload="w",class="b",role="pub"} 2000"#,
        ] {
            assert!(lines.contains(&want), "{want} not in\n{text}");
        }
        // Each family once, with a sample per class.
        assert_eq!(text.matches("# TYPE msgbench_messages counter").count(), 1);
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with("msgbench_tick_end_seconds{"))
                .count(),
            2
        );
    }

    #[test]
    fn latency_and_stage_appear_only_when_the_tick_has_them() {
        let mut t = tick();
        t.latency = None;
        t.stage = None;
        let text = render(&labels(), &t, &Totals::default(), true);
        assert!(!text.contains("msgbench_latency"), "{text}");
        assert!(!text.contains("msgbench_stage"), "{text}");
        assert!(samples(&text)
            .iter()
            .any(|l| l.starts_with("msgbench_run_finished{") && l.ends_with(" 1")));
        // No roles yet (no client registered): the families are declared, with no samples.
        assert!(
            !samples(&text).iter().any(|l| l.contains("role=")),
            "{text}"
        );
    }
}
