//! The checks of a `conns` hold: a light publisher sends each subscribed connection one
//! stamped message every `--check-every` ([`start_checker`]), and afterwards every
//! connection's receipt is counted exactly ([`checks_of`]). With `--fault restart`, the checks
//! a cut connection missed between its loss and its return are the fault's ([`excused`]); any
//! other miss fails the run.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::options::ConnsOptions;
use super::run::{Block, Setup};
use crate::cli::Subscribe;
use crate::engine::conn::{self, ConnectSpec};
use crate::engine::fleet::{Member, Recovery};
use crate::engine::load::{self, Frame, Keys, PubSpec, StampKind};
use crate::engine::pace::Stop;
use crate::error::Result;
use crate::result::Checks;
use crate::stats::delivery::PublisherKey;
use crate::stats::schedule::{PubSchedule, RateSchedule};

/// Connections named as missing checks, at most.
pub(super) const MISSING_SHOWN: usize = 10;

/// The checker's schedule: when each check was due. A check goes out at its due time or
/// later (never earlier), so every check due after an instant was sent after it.
pub(super) struct CheckClock {
    start: Instant,
    pace: PubSchedule,
}

impl CheckClock {
    /// The first of the `sent` checks due at or after `at` (`sent` when none was).
    fn first_due_from(&self, at: Instant, sent: u64) -> u64 {
        let due = |seq: u64| {
            self.pace
                .due_ns(seq)
                .is_none_or(|ns| self.start + Duration::from_nanos(ns) >= at)
        };
        // Due times grow with the sequence: the first at or after `at` by bisection.
        let (mut lo, mut hi) = (0u64, sent);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if due(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

/// The light publisher: over the hold, one message per subscribed connection every `every`
/// (to each own subject in turn, or once to the shared one), stamped so receipt is exact.
pub(super) fn start_checker<'s, 'e: 's>(
    s: &'s std::thread::Scope<'s, 'e>,
    su: &Setup<'_>,
    every: Duration,
    stop: &'e AtomicBool,
) -> Result<(std::thread::ScopedJoinHandle<'s, u64>, CheckClock)> {
    let opts = su.opts;
    let conn = conn::connect(
        &ConnectSpec {
            servers: &su.target.urls,
            name: "msgbench-conns-checker",
            opts: &opts.conn.dial,
            stall_limit: opts.timeout,
        },
        Arc::clone(&su.errors),
    )?;
    let block = su.block;
    let per_round = match opts.subscribe {
        Subscribe::Own => u64::from(block.count),
        _ => 1,
    };
    let rate = per_round as f64 / every.as_secs_f64();
    let frame = Frame::new(
        &su.prefix,
        (opts.subscribe == Subscribe::Own).then(|| Keys::cycle(per_round)),
        &[],
        &[b'c'; 32],
        StampKind::Delivery {
            run_tag: su.run_tag,
            publisher: 0,
        },
    )
    // On an agent, its own connections' subjects only: each agent checks its own block.
    .keys_from(u64::from(block.base));
    let clock = CheckClock {
        start: Instant::now(),
        pace: RateSchedule::fixed(rate).share(0, 1),
    };
    let spec = PubSpec {
        id: 0,
        stop: Stop::For(opts.hold),
        pace: Some(clock.pace.clone()),
        // The loop's time zero is the clock's, so the clock knows each check's due time.
        start_at: Some(clock.start),
        late_bound: crate::scenario::pacing::PACING_LATE_BOUND,
        lag_from: Duration::ZERO,
        flush_timeout: opts.timeout,
    };
    let conn::Conn {
        mut reader, shared, ..
    } = conn;
    let reader_shared = Arc::clone(&shared);
    s.spawn(move || reader.run(&reader_shared, load::TICK, |_| conn::Flow::Continue));
    let handle = s.spawn(move || {
        let progress = AtomicU64::new(0);
        let out = load::publish(&shared, &frame, &spec, stop, &progress, None, None);
        shared.close();
        out.run.msgs
    });
    Ok((handle, clock))
}

/// Messages due to connection `i` of `n` (counted within the checker's block) when `sent`
/// went out: all of them on a shared subject; on own subjects, message k went to connection
/// k mod n.
pub(super) fn due_to(i: u32, n: u32, sent: u64, own: bool) -> u64 {
    if !own {
        return sent;
    }
    let n = u64::from(n);
    sent / n + u64::from(u64::from(i) < sent % n)
}

/// The checks connection `m` received, each once.
pub(super) fn received(m: &Member, run_tag: u16) -> u64 {
    let key = PublisherKey {
        run_tag,
        publisher: 0,
    };
    m.log
        .as_ref()
        .and_then(|l| l.tracker(key))
        .map_or(0, |t| t.unique)
}

/// The outage the restart caused connection `m`: its first loss from the fault's time (`from`,
/// `restart@T` into the hold) until the end of the hold. A connection lost before the fault's
/// time was lost for another reason, and one lost after the hold is not reported.
pub(super) fn cut_by_restart(m: &Member, from: Instant, hold_end: Instant) -> Option<Recovery> {
    m.recoveries
        .iter()
        .chain(m.outage())
        .find(|o| o.lost_at >= from && o.lost_at <= hold_end)
        .copied()
}

/// The checks due to connection `id` that the restart's outage `o` cost it: those after the
/// last one it received before the loss, and before it was back. "Before it was back" is the
/// earlier of the first check due once it was subscribed again (due then, so sent then or
/// later) and the first it received after the loss (NATS delivers one publisher's messages in
/// order: everything before that one which it did not get was sent before its subscription
/// was in place). A connection that never came back is excused every check after its loss.
/// Each check counted here was missed: none after its mark arrived before the loss, and none
/// before the first after it.
fn excused(id: u32, o: &Recovery, clock: &CheckClock, n: u32, sent: u64, own: bool) -> u64 {
    let back = o.back_at.map_or(sent, |at| clock.first_due_from(at, sent));
    let end = o.first_seq.map_or(back, |f| f.min(back)).min(sent);
    let from = o.seq_mark.min(end);
    due_to(id, n, end, own) - due_to(id, n, from, own)
}

/// The checks: due, received, missed, and (with `cut`, the connections the restart cut) which
/// of the missed the restart excuses. `block` is the connections the checker sent to.
pub(super) fn checks_of(
    opts: &ConnsOptions,
    block: Block,
    members: &[Member],
    tag: u16,
    sent: u64,
    cut: Option<(&[(&Member, Recovery)], &CheckClock)>,
) -> Checks {
    let own = opts.subscribe == Subscribe::Own;
    let (mut expected, mut got, mut missing) = (0u64, 0u64, Vec::new());
    let (n, at) = (block.count, |id: u32| id - block.base);
    for m in members {
        let due = due_to(at(m.id), n, sent, own);
        let r = received(m, tag).min(due);
        expected += due;
        got += r;
        if r < due {
            missing.push(m.id);
        }
    }
    let excused_by_fault = cut.map_or(0, |(cut, clock)| {
        cut.iter()
            .map(|(m, o)| {
                let missed = due_to(at(m.id), n, sent, own).saturating_sub(received(m, tag));
                excused(at(m.id), o, clock, n, sent, own).min(missed)
            })
            .sum()
    });
    Checks {
        every_ms: opts.check_every.map_or(0.0, |d| d.as_secs_f64() * 1e3),
        published: sent,
        expected,
        received: got,
        missed: expected - got,
        excused_by_fault,
        connections_missing: missing.len() as u64,
        missing_ids: missing.into_iter().take(MISSING_SHOWN).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check every 250 ms: check `seq` is due `seq` × 250 ms after `start`.
    fn clock(start: Instant) -> CheckClock {
        CheckClock {
            start,
            pace: RateSchedule::fixed(4.0).share(0, 1),
        }
    }

    fn outage(
        start: Instant,
        seq_mark: u64,
        back_ms: Option<u64>,
        first_seq: Option<u64>,
    ) -> Recovery {
        Recovery {
            lost_at: start + Duration::from_millis(1000),
            back_at: back_ms.map(|ms| start + Duration::from_millis(ms)),
            attempts: 3,
            seq_mark,
            first_seq,
        }
    }

    #[test]
    fn the_first_check_due_after_an_instant_is_found_by_its_due_time() {
        let t0 = Instant::now();
        let c = clock(t0);
        let at = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(c.first_due_from(at(0), 16), 0);
        assert_eq!(c.first_due_from(at(1600), 16), 7, "6 was due at 1.5 s");
        assert_eq!(c.first_due_from(at(1750), 16), 7, "due at 1.75 s exactly");
        assert_eq!(c.first_due_from(at(9000), 16), 16, "none of the 16 sent");
    }

    #[test]
    fn a_cut_connection_is_excused_the_checks_of_its_outage_and_nothing_else() {
        let t0 = Instant::now();
        let c = clock(t0);
        // Got 0..=3 before the kill, back at 1.6 s (7 was the first due after), 7 the first
        // it got: 4, 5 and 6 are the outage's.
        assert_eq!(
            excused(0, &outage(t0, 4, Some(1600), Some(7)), &c, 1, 16, false),
            3
        );
        // The same, but the first it got after the loss was 9: 7 and 8 were sent once it was
        // back, so they are not the outage's.
        assert_eq!(
            excused(0, &outage(t0, 4, Some(1600), Some(9)), &c, 1, 16, false),
            3
        );
        // A check that reached it after re-subscribing but before the PONG (5) ends the
        // outage there: 4 alone.
        assert_eq!(
            excused(0, &outage(t0, 4, Some(1600), Some(5)), &c, 1, 16, false),
            1
        );
        // Never back, nothing after the loss: every check from its mark on.
        assert_eq!(excused(0, &outage(t0, 4, None, None), &c, 1, 16, false), 12);
        // Back only after the checks ended (a return after the hold): the same.
        assert_eq!(
            excused(0, &outage(t0, 4, Some(9000), None), &c, 1, 16, false),
            12
        );
        // Own subjects, 3 connections: connection 1 is due 1, 4, 7, 10, 13; it got 1 and 4
        // (mark 5), was back at 2.6 s (11 was the first due after) and got 13: 7 and 10.
        assert_eq!(
            excused(1, &outage(t0, 5, Some(2600), Some(13)), &c, 3, 16, true),
            2
        );
    }
}
