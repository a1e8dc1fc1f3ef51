//! The hot paths allocate nothing per message: publishing (frame append into a reused buffer)
//! and receiving (parse from a buffer, read the stamp, record delivery). Measured with a global
//! allocator that counts, so a regression fails here rather than in a benchmark.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use msgbench::engine::load::{Frame, StampKind};
use msgbench::engine::proto::{self, Parsed, ServerOp};
use msgbench::engine::stamp;
use msgbench::stats::delivery::DeliveryLog;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const N: u64 = 100_000;

fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCS.load(Ordering::Relaxed);
    f();
    ALLOCS.load(Ordering::Relaxed) - before
}

#[test]
fn publishing_and_receiving_allocate_nothing_per_message() {
    let headers = proto::header_block(&[("K".into(), "V".into())]);
    for (subject, multi, headers) in [
        ("plain", None, &b""[..]),
        ("multi", Some(1000), &b""[..]),
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
