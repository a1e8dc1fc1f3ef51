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

/// Which of `n` agents a workload's class `index` runs on: as many as its `pubs` and `subs`
/// can each give a share (all `n` when there are enough), starting at the class's own place in
/// the fleet, so that classes of one publisher each do not all load the first agent.
pub fn chosen(n: usize, index: usize, pubs: u32, subs: u32) -> Vec<usize> {
    let clients = (pubs as usize).saturating_add(subs as usize);
    let m = n.min(clients).max(1);
    (0..m).map(|j| (index + j) % n.max(1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_runs_on_as_many_agents_as_it_has_clients_from_its_own_place() {
        // One publisher: one agent, the class's own.
        assert_eq!(chosen(3, 0, 1, 0), vec![0]);
        assert_eq!(chosen(3, 1, 1, 0), vec![1]);
        assert_eq!(chosen(3, 4, 1, 0), vec![1]);
        // A publisher and a subscriber: two agents, wrapping round.
        assert_eq!(chosen(3, 2, 1, 1), vec![2, 0]);
        // Enough clients: every agent, and none is left idle by the split.
        assert_eq!(chosen(2, 1, 4, 4), vec![1, 0]);
        for (pubs, subs, n) in [(1, 0, 3), (1, 1, 3), (2, 1, 4), (0, 3, 2), (5, 5, 3)] {
            let m = chosen(n, 0, pubs, subs).len() as u32;
            assert!(segments(pubs, subs, m, 0)
                .iter()
                .all(|s| s.pubs + s.subs > 0));
        }
    }

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
