//! Criterion benchmarks of msgbench's own per-message work: encoding a publish into the write
//! buffer, parsing a delivered message out of the read buffer, and recording its stamp; and for
//! gRPC, getting the next request's bytes from a `--data` template. These
//! are the costs the tool adds on top of the server; whole-run comparisons live in `bench/`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
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

criterion_group!(benches, encode_publish, parse_and_record, grpc_template);
criterion_main!(benches);
