//! Fuzzes `--rate-schedule`: the parser, and the due times of what it parses.
//!
//! The first input byte is the run's `--duration` in seconds (0 = none given); the rest,
//! decoded lossily as UTF-8, is the schedule typed. Nothing may panic, and a schedule that
//! parses must keep the promises the load loops rely on:
//! - at most `MAX_STAGES` stages, a finite length, and stages that tile it from 0;
//! - the run's first messages are due in order, each within the schedule's length;
//! - two publishers sharing it are due exactly when the run's messages they send are;
//! - what each stage sent, from a publisher's count, adds up to that count.

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use msgbench::stats::schedule::{RateSchedule, MAX_STAGES};

/// Messages checked per input: enough to cross stages, few enough to stay fast.
const CHECKED: u64 = 600;

fuzz_target!(|data: &[u8]| {
    let Some((&secs, rest)) = data.split_first() else {
        return;
    };
    let spec = String::from_utf8_lossy(rest);
    let run_for = (secs > 0).then(|| Duration::from_secs(u64::from(secs)));
    let Ok(s) = RateSchedule::parse(&spec, run_for) else {
        return;
    };
    let stages = s.stages();
    assert!(!stages.is_empty() && stages.len() <= MAX_STAGES, "{spec}");
    let len = s.length().expect("a parsed schedule ends").as_nanos() as f64;
    assert_eq!(stages[0].start_ns, 0.0, "{spec}");
    for w in stages.windows(2) {
        assert!((w[0].end_ns() - w[1].start_ns).abs() <= 1e-6 * w[1].start_ns.max(1.0), "{spec}");
    }
    assert!((stages[stages.len() - 1].end_ns() - len).abs() <= 1e-6 * len.max(1.0) + 1.0);

    let one = s.share(0, 1);
    let mut last = 0u64;
    let mut sent = 0u64;
    for k in 0..CHECKED {
        let Some(due) = one.due_ns(k) else { break };
        assert!(due >= last, "{spec}: message {k} due at {due}, before {last}");
        assert!(due as f64 <= len + 1.0, "{spec}: message {k} due after the end");
        last = due;
        sent += 1;
    }
    let by_stage = one.sent_by_stage(sent);
    assert_eq!(by_stage.len(), stages.len());
    assert_eq!(by_stage.iter().sum::<u64>(), sent, "{spec}");

    let (a, b) = (s.share(0, 2), s.share(1, 2));
    for q in 0..CHECKED / 2 {
        assert_eq!(a.due_ns(q), s.due_ns((2 * q) as f64), "{spec}");
        assert_eq!(b.due_ns(q), s.due_ns((2 * q + 1) as f64), "{spec}");
    }
});
