//! Criterion benchmarks of msgbench's own per-message work: encoding a publish into the write
//! buffer, parsing a delivered message out of the read buffer, and recording its stamp; and for
//! gRPC, getting the next request's bytes from a `--data` template. These
//! are the costs the tool adds on top of the server; whole-run comparisons live in `bench/`.
//! Beside them, the one per-run cost that grows with a distributed run: merging its agents'
//! results; and the cost of `history check`'s statistics as the series analysed grows.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

use msgbench::engine::load::{Frame, StampKind};
use msgbench::stats::delivery::DeliveryLog;
use msgbench::wire::proto::{self, Parsed, ServerOp};
use msgbench::wire::stamp;

const SIZES: [usize; 3] = [32, 1024, 8192];
const BATCH: u64 = 1024;

fn encode_publish(c: &mut Criterion) {
    let mut g = c.benchmark_group("encode_publish");
    for size in SIZES {
        let frame = Frame::new(
            "bench.subject",
            None,
            b"",
            &vec![0u8; size],
            StampKind::Delivery {
                run_tag: 1,
                publisher: 0,
            },
        );
        let mut buf = Vec::with_capacity(BATCH as usize * (size + 64));
        g.throughput(Throughput::Elements(BATCH));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, _| {
            b.iter(|| {
                buf.clear();
                for seq in 0..BATCH {
                    frame.append(&mut buf, black_box(seq));
                }
                black_box(buf.len())
            })
        });
    }
    g.finish();
}

fn parse_and_record(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse_and_record");
    for size in SIZES {
        let frame = Frame::new(
            "bench.subject",
            None,
            b"",
            &vec![0u8; size],
            StampKind::Delivery {
                run_tag: 1,
                publisher: 0,
            },
        );
        let mut published = Vec::new();
        for seq in 0..BATCH {
            frame.append(&mut published, seq);
        }
        let delivered = proto::deliver_as_server(&published, 1);
        g.throughput(Throughput::Elements(BATCH));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, _| {
            let mut log = DeliveryLog::new(Some(1));
            b.iter(|| {
                let mut at = 0;
                while at < delivered.len() {
                    match proto::parse(black_box(&delivered[at..])) {
                        Ok(Parsed::Op(ServerOp::Msg(m), used)) => {
                            log.record(stamp::read(m.payload));
                            at += used;
                        }
                        other => panic!("unexpected {other:?}"),
                    }
                }
            })
        });
    }
    g.finish();
}

/// The next gRPC request's bytes: reused when the template allows it (`{{stream}}` only), built
/// from JSON per message when it does not (`{{seq}}`).
fn grpc_template(c: &mut Criterion) {
    use msgbench::engine::grpc::{schema, template::Template};
    let desc = schema::builtin()
        .get_message_by_name("msgbench.log.v1.AppendRequest")
        .expect("the log service's request type");
    let mut g = c.benchmark_group("grpc_template");
    g.throughput(Throughput::Elements(BATCH));
    for (name, data) in [
        (
            "per_stream",
            r#"{"stream":"s-{{stream}}","data":"{{bytes 128}}"}"#,
        ),
        (
            "per_message",
            r#"{"stream":"s-{{seq}}","data":"{{bytes 128}}"}"#,
        ),
    ] {
        let t = Template::new(&[data.to_string()], "--data", desc.clone(), 5).expect("valid");
        let mut src = t.source(0);
        let mut seq = 0u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut n = 0;
                for _ in 0..BATCH {
                    n += src.next(black_box(seq)).expect("builds").len();
                    seq += 1;
                }
                black_box(n)
            })
        });
    }
    g.finish();
}

/// One agent's result as it would send it: 2 publishers and 2 subscribers, 4 publishers in its
/// delivery section, 10 one-second ticks, and a latency histogram of 100,000 samples spread
/// evenly over the decades from 1 µs to 100 ms.
fn agent_result(k: u32) -> serde_json::Value {
    use msgbench::result::{throughput_sections, LatencyStats, RunResult, ServerMeta};
    use msgbench::stats::delivery::PublisherDelivery;
    use msgbench::stats::throughput::{ClientRun, Role};
    use msgbench::stats::timeline::{Tick, TickLatency, Timeline, TimelineClient};
    use std::time::{Duration, Instant};

    let server = ServerMeta {
        url: "nats://10.0.0.1:4222".into(),
        name: "n1".into(),
        version: "2.15.2".into(),
        embedded: false,
        max_payload: 1 << 20,
        auth: "none",
        config: None,
    };
    let started = "2026-01-01T00:00:00Z".to_string();
    let mut r = RunResult::new(
        "pubsub",
        started,
        serde_json::json!({}),
        server,
        &Default::default(),
        false,
    );
    let t0 = Instant::now();
    let roles = [
        (Role::Pub, 0),
        (Role::Pub, 1),
        (Role::Sub, 0),
        (Role::Sub, 1),
    ];
    let runs: Vec<ClientRun> = roles
        .iter()
        .map(|&(role, j)| ClientRun {
            role,
            id: 2 * k + j,
            msgs: 50_000,
            bytes: 50_000 * 128,
            start: Some(t0),
            end: Some(t0 + Duration::from_millis(10_000 + u64::from(j))),
        })
        .collect();
    (r.throughput, r.by_role, r.clients) = throughput_sections(&runs);
    r.delivery.sent = 100_000;
    r.delivery.expected = 200_000;
    r.delivery.received = 100_000;
    r.delivery.accounting = "exact";
    (r.delivery.duplicated, r.delivery.reordered) = (Some(0), Some(0));
    r.delivery.publishers = (0..4)
        .map(|j| PublisherDelivery {
            id: (2 * k + j) % 128,
            sent: 50_000,
            received: 50_000,
            lost: 0,
            duplicated: 0,
            reordered: 0,
        })
        .collect();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(k);
    let mut h = msgbench::stats::latency::new_histogram();
    for _ in 0..100_000 {
        // xorshift64*
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        let x = rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let decades = (x % 5_000) as f64 / 1_000.0;
        h.record((1_000.0 * 10f64.powf(decades)) as u64)
            .expect("in range");
    }
    r.latency = Some(LatencyStats::of(&h));
    r.timeline = Some(Timeline {
        interval_s: 1.0,
        clients: roles
            .iter()
            .map(|&(role, j)| TimelineClient {
                role,
                id: 2 * k + j,
            })
            .collect(),
        ticks: (1..=10)
            .map(|s| Tick {
                t_s: f64::from(s),
                span_s: 1.0,
                msgs: vec![5_000; 4],
                sent_per_sec: 10_000.0,
                received_per_sec: 10_000.0,
                latency: Some(TickLatency {
                    count: 10_000,
                    p50_ns: 300_000,
                    p99_ns: 60_000_000,
                    max_ns: 99_000_000,
                }),
                errors: 0,
                stage: None,
                server: None,
                tool: None,
                conns: None,
            })
            .collect(),
        truncated: false,
        load_start_s: None,
    });
    serde_json::to_value(&r).expect("a result serialises")
}

/// Merging 64 agents' results into one: decoding and adding their histograms dominates.
fn merge_agents(c: &mut Criterion) {
    use msgbench::result::{merge::merge, AgentEntry, ServerMeta};
    let agents: Vec<AgentEntry> = (0..64)
        .map(|k| AgentEntry::complete(format!("agent-{k}"), agent_result(k)))
        .collect();
    let server = ServerMeta {
        url: "nats://10.0.0.1:4222".into(),
        name: String::new(),
        version: String::new(),
        embedded: false,
        max_payload: 0,
        auth: "none",
        config: None,
    };
    let mut g = c.benchmark_group("merge");
    g.sample_size(20);
    g.bench_function("64_agents", |b| {
        b.iter_batched(
            || agents.clone(),
            |agents| {
                let started = "2026-01-01T00:00:00Z".to_string();
                let params = serde_json::json!({});
                merge(
                    "pubsub",
                    started,
                    params.into(),
                    server.clone(),
                    agents,
                    None,
                )
                .expect("merges")
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// `history check`'s analysis of one metric's series (E-divisive with 199 shuffles, the
/// window test): 200 runs is the default `--last`; the cost grows with the square of the
/// length, which is why the whole history (`--all`) is opt-in.
fn history_check(c: &mut Criterion) {
    use msgbench::stats::changepoint::{analyse, Settings, SplitMix64};
    let mut g = c.benchmark_group("history_check");
    g.sample_size(10);
    for n in [50usize, 200, 1000] {
        let mut rng = SplitMix64::new(n as u64);
        // A 10% step half way, in 2% noise (uniform, enough for a cost).
        let series: Vec<f64> = (0..n)
            .map(|i| {
                let level = if i < n / 2 { 100.0 } else { 110.0 };
                level * (1.0 + 0.04 * (rng.next_f64() - 0.5))
            })
            .collect();
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &series, |b, s| {
            b.iter(|| analyse(black_box(s), &Settings::default()))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    encode_publish,
    parse_and_record,
    grpc_template,
    merge_agents,
    history_check
);
criterion_main!(benches);
