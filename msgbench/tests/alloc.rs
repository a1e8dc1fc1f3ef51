//! The hot paths allocate nothing per message: publishing (frame append into a reused buffer,
//! including JetStream messages with ids and atomic batches) and receiving (parse from a buffer,
//! read the stamp, record delivery). Measured with a global allocator that counts per thread, so
//! a regression fails here rather than in a benchmark.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use msgbench::engine::jsframe::{JsFrame, JsFraming};
use msgbench::engine::load::{Frame, Keys, StampKind};
use msgbench::stats::delivery::DeliveryLog;
use msgbench::wire::proto::{self, Parsed, ServerOp};
use msgbench::wire::stamp;

struct Counting;

thread_local! {
    /// Each thread counts its own allocations: the tests run side by side, and the harness's
    /// threads allocate whenever they like.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    ALLOCS.with(|n| n.set(n.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const N: u64 = 100_000;

fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCS.with(Cell::get);
    f();
    ALLOCS.with(Cell::get) - before
}

/// KV keys drawn per message (`kv --key-dist`) over 1,000 keys, for sender 3.
fn drawn_keys(spec: &str) -> Keys {
    let pick = msgbench::stats::draw::TokenDist::parse_keys(spec)
        .unwrap()
        .build(Some(1000))
        .unwrap()
        .numbered()
        .unwrap();
    Keys::drawn(1000, pick, 7).sender(3)
}

#[test]
fn publishing_and_receiving_allocate_nothing_per_message() {
    let headers = proto::header_block(&[("K".into(), "V".into())]);
    for (subject, multi, headers) in [
        ("plain", None, &b""[..]),
        ("multi", Some(Keys::cycle(1000)), &b""[..]),
        (
            "random",
            Some(Keys {
                n: 1000,
                random: true,
                drawn: None,
            }),
            &b""[..],
        ),
        ("zipf", Some(drawn_keys("zipf:1.1")), &b""[..]),
        ("hot", Some(drawn_keys("hot:1%:50%")), &b""[..]),
        ("uniform", Some(drawn_keys("uniform")), &b""[..]),
        ("hdrs", None, &headers[..]),
    ] {
        let frame = Frame::new(
            subject,
            multi,
            headers,
            &[0u8; 32],
            StampKind::Delivery {
                run_tag: 7,
                publisher: 0,
            },
        );
        // The buffer is sized once up front, as the publish loop does.
        let mut buf = Vec::with_capacity(8 << 20);
        let n = allocations_during(|| {
            for seq in 0..N {
                frame.append(&mut buf, seq);
            }
        });
        assert_eq!(n, 0, "publishing on '{subject}' allocated {n} times");

        let delivered = proto::deliver_as_server(&buf, 1);
        let mut log = DeliveryLog::new(Some(7));
        let mut received = 0u64;
        let n = allocations_during(|| {
            let mut at = 0;
            while at < delivered.len() {
                match proto::parse(&delivered[at..]).unwrap() {
                    Parsed::Op(ServerOp::Msg(m), used) => {
                        log.record(stamp::read(m.payload));
                        received += 1;
                        at += used;
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        });
        assert_eq!(received, N);
        // A publisher's tracker is created on its first message (a vector slot and its
        // bitmap): two allocations per publisher, none per message.
        assert!(n <= 2, "receiving on '{subject}' allocated {n} times");
        let key = msgbench::stats::delivery::PublisherKey {
            run_tag: 7,
            publisher: 0,
        };
        assert_eq!(log.tracker(key).unwrap().unique, N);
    }
}

/// A subject template: each message's tokens drawn (words by an alias table, numbers by
/// Zipf) and written into its control line, with nothing allocated.
#[test]
fn subject_templates_allocate_nothing_per_message() {
    use msgbench::stats::draw::{NamedToken, Purpose, Stream, Template};
    let tokens = [
        "region=us:50%,eu:30%,ap:20%",
        "id=zipf:1.1:10000",
        "n=1..99",
    ]
    .map(|t| NamedToken::parse(t).unwrap());
    let t = Template::build("orders.{region}.{id}.{n}", &tokens).unwrap();
    let frame = Frame::new(
        t.text(),
        None,
        b"",
        &[0u8; 32],
        StampKind::Delivery {
            run_tag: 7,
            publisher: 0,
        },
    )
    .templated(t, Stream::new(1, Purpose::Subject, 0));
    let mut buf = Vec::with_capacity(1 << 30);
    let n = allocations_during(|| {
        for seq in 0..N {
            frame.append(&mut buf, seq);
        }
    });
    assert_eq!(n, 0, "{n} allocations");
    assert!(buf.starts_with(b"PUB orders."));
}

/// Drawn sizes (an alias table, a lognormal) write each message's control line and a prefix of
/// the prebuilt payload: nothing allocated per message either.
#[test]
fn drawn_sizes_allocate_nothing_per_message() {
    use msgbench::stats::draw::{Purpose, SizeDist, Sizes, Stream};
    for spec in [
        "64B:70%,1KiB:25%,64KiB:5%",
        "uniform:16..4096",
        "lognormal:1KiB:16KiB",
    ] {
        let sizes = Sizes::build(&SizeDist::parse(spec).unwrap(), stamp::STAMP_LEN).unwrap();
        let frame = Frame::new(
            "sized",
            None,
            b"",
            &vec![0u8; sizes.max()],
            StampKind::Delivery {
                run_tag: 7,
                publisher: 0,
            },
        )
        .sized("sized", sizes, Stream::new(1, Purpose::Size, 0));
        let mut buf = Vec::with_capacity(1 << 30);
        let mut bytes = 0;
        let n = allocations_during(|| {
            for seq in 0..N / 10 {
                bytes += frame.append(&mut buf, seq);
            }
        });
        assert_eq!(n, 0, "{spec}: {n} allocations");
        assert!(bytes > 0 && buf.len() > bytes, "{spec}");
    }
}

#[test]
fn jetstream_publishes_with_ids_and_batches_allocate_nothing_per_message() {
    for (batch, dedup) in [
        (1, Some("p".to_string())),
        (100, None),
        (100, Some("p".into())),
    ] {
        let framing = JsFraming {
            batch,
            dedup,
            total: None,
            fast: None,
        };
        for drawn in [None, Some(js_sizes())] {
            let size = drawn.as_ref().map_or(128, |s| s.sizes.max());
            // Drawn sizes come with a drawn subject.
            let frame = JsFrame::new("js.s", "_INBOX.x.0.", size, &framing, 0, 7)
                .sized(drawn.clone())
                .templated(drawn.as_ref().map(|_| js_template()));
            let mut buf = Vec::with_capacity(256 << 20);
            let (mut msgs, mut bytes) = (0, 0);
            let n = allocations_during(|| {
                for k in 0..N / batch {
                    let (m, b) = frame.append(&mut buf, k);
                    (msgs, bytes) = (msgs + m, bytes + b);
                }
            });
            assert_eq!(msgs, N);
            assert!(bytes > 0);
            assert_eq!(
                n,
                0,
                "batch {batch}, drawn {}: {n} allocations for {N} messages",
                drawn.is_some()
            );
        }
    }
}

/// Drawn sizes for a JetStream publisher: a weighted list down to the 8-byte number.
fn js_sizes() -> msgbench::stats::draw::SenderSizes {
    use msgbench::stats::draw::{SenderSizes, SizeDist, Sizes};
    let d = SizeDist::parse("8B:50%,100B:40%,1KiB:10%").unwrap();
    SenderSizes::new(Sizes::build(&d, 8).unwrap(), 1, 0)
}

/// A subject template for a JetStream publisher.
fn js_template() -> (
    msgbench::stats::draw::Template,
    msgbench::stats::draw::Stream,
) {
    use msgbench::stats::draw::{NamedToken, Purpose, Stream, Template};
    let tokens = ["r=us:50%,eu:50%", "id=zipf:1.1:1000"].map(|t| NamedToken::parse(t).unwrap());
    (
        Template::build("js.{r}.{id}", &tokens).unwrap(),
        Stream::new(1, Purpose::Subject, 0),
    )
}

/// Fast batches with drawn sizes and subjects: each message's line and payload prefix,
/// nothing allocated.
#[test]
fn fast_batches_with_drawn_sizes_and_subjects_allocate_nothing_per_message() {
    use msgbench::engine::jsfast::{FastFlow, FastFrame};
    let s = js_sizes();
    let flow = FastFlow {
        flow: 100,
        outstanding: 2,
    };
    let frame = FastFrame::new("js.s", "_INBOX.x.0.", s.sizes.max(), flow, 0, 7)
        .sized(Some(s))
        .templated(Some(js_template()));
    let mut buf = Vec::with_capacity(256 << 20);
    let mut bytes = 0;
    let n = allocations_during(|| {
        for m in 0..N {
            bytes += frame.append(&mut buf, m / 1000, m % 1000 + 1, m);
        }
    });
    assert!(bytes > 0);
    assert_eq!(n, 0, "{n} allocations for {N} messages");
}

/// Poisson arrivals: a publisher's due times (and a receiver's, which asks the same) read a
/// table built before the clock starts and a per-thread cache of two blocks; nothing allocated
/// per message, across many blocks and with lookups that straddle a block's end.
#[test]
fn poisson_due_times_allocate_nothing_per_message() {
    use msgbench::stats::schedule::RateSchedule;
    let s = RateSchedule::fixed(10_000.0)
        .poisson(3, Some(N * 2), None)
        .unwrap();
    let (a, b) = (s.share(0, 2), s.share(1, 2));
    let mut last = 0;
    let n = allocations_during(|| {
        for seq in 0..N {
            let (x, y) = (a.due_ns(seq).unwrap(), b.due_ns(seq).unwrap());
            assert!(x >= last && y > x);
            last = y;
        }
    });
    assert_eq!(n, 0, "{n} allocations");
}
