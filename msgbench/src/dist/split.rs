//! How a plan is divided between agents: deterministically, each agent a contiguous block of
//! the publishers and of the subscribers, with global ids, and the aggregate rate following the
//! publishers (each paces its own share, as in one process).
//!
//! Publishers fill agents from the first, subscribers from the last. With fewer clients than
//! agents, that puts publishers and subscribers on different hosts (a latency run on two agents
//! has its publisher on one and its subscriber on the other), which is the point of spreading
//! a run; with many clients both spread evenly.

use crate::control::msg::Segment;

/// One segment per agent for `pubs` publishers and `subs` subscribers on `n` agents.
pub fn segments(pubs: u32, subs: u32, n: u32, run_tag: u16) -> Vec<Segment> {
    let share = |total: u32, k: u32| total / n + u32::from(k < total % n);
    let mut out = Vec::with_capacity(n as usize);
    let (mut pub_base, mut sub_base) = (0, 0);
    // Subscribers count from the last agent, so their bases are found from the back.
    let sub_counts: Vec<u32> = (0..n).map(|k| share(subs, n - 1 - k)).collect();
    for k in 0..n {
        let p = share(pubs, k);
        let s = sub_counts[k as usize];
        out.push(Segment {
            index: k,
            count: n,
            pub_base,
            pubs: p,
            pubs_total: pubs,
            sub_base,
            subs: s,
            subs_total: subs,
            run_tag,
        });
        pub_base += p;
        sub_base += s;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_lands_once_with_a_global_id() {
        for (pubs, subs, n) in [
            (1, 1, 2),
            (4, 4, 2),
            (5, 3, 3),
            (7, 0, 4),
            (0, 9, 2),
            (1, 1, 1),
        ] {
            let segs = segments(pubs, subs, n, 7);
            assert_eq!(segs.len(), n as usize);
            assert_eq!(segs.iter().map(|s| s.pubs).sum::<u32>(), pubs);
            assert_eq!(segs.iter().map(|s| s.subs).sum::<u32>(), subs);
            let mut next = (0, 0);
            for s in &segs {
                assert_eq!((s.pub_base, s.sub_base), next, "contiguous ids");
                next = (s.pub_base + s.pubs, s.sub_base + s.subs);
                assert!(s.pubs.abs_diff(pubs / n) <= 1 && s.subs.abs_diff(subs / n) <= 1);
            }
        }
    }

    #[test]
    fn one_publisher_and_one_subscriber_go_to_different_agents() {
        let segs = segments(1, 1, 2, 0);
        assert_eq!((segs[0].pubs, segs[0].subs), (1, 0));
        assert_eq!((segs[1].pubs, segs[1].subs), (0, 1));
    }
}
