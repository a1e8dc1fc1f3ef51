//! The spread of one role's clients: min, median and max of their messages and rates, and the
//! slowest of them by id. A fan-out of thousands of subscribers is read from this summary, not
//! from a line per client; the exact per-client figures stay in the result's `clients`.
//!
//! Each subscriber's missed messages are joined in here too, by id, from the delivery
//! accounting the scenario did: throughput is known before delivery is, so the spread is made
//! first and its slowest entries are given their losses afterwards.

use serde::Serialize;

use super::{ClientStats, RunResult};
use crate::stats::throughput::Role;

/// How many of the slowest clients a spread names.
pub const SLOWEST: usize = 5;

/// Min, median and max of one per-client figure. The median of an even count is the mean of
/// the middle two, so it may fall between two clients' values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct MinMedianMax<T> {
    pub min: T,
    pub median: f64,
    pub max: T,
}

/// One of a role's slowest clients.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slowest {
    pub id: u32,
    pub msgs: u64,
    pub msgs_per_sec: f64,
    /// Messages this subscriber missed; absent where delivery was not accounted per client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missed: Option<u64>,
}

/// The spread of one role's clients.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClientSpread {
    pub msgs: MinMedianMax<u64>,
    pub msgs_per_sec: MinMedianMax<f64>,
    /// Up to [`SLOWEST`] clients: fewest messages first, then lowest rate, then lowest id.
    pub slowest: Vec<Slowest>,
}

impl ClientSpread {
    /// The spread of `clients` (one role's); all zero and no slowest for none.
    pub fn of<'a>(clients: impl IntoIterator<Item = &'a ClientStats>) -> Self {
        let mut all: Vec<&ClientStats> = clients.into_iter().collect();
        if all.is_empty() {
            return Self::default();
        }
        // Sorted slowest first; ties (a fan-out where every subscriber got every message) go
        // to the lower id, so the same run always names the same clients.
        all.sort_by(|a, b| {
            a.msgs
                .cmp(&b.msgs)
                .then(a.msgs_per_sec.total_cmp(&b.msgs_per_sec))
                .then(a.id.cmp(&b.id))
        });
        let msgs: Vec<u64> = all.iter().map(|c| c.msgs).collect();
        let mut rates: Vec<f64> = all.iter().map(|c| c.msgs_per_sec).collect();
        rates.sort_by(f64::total_cmp);
        Self {
            msgs: MinMedianMax {
                min: msgs[0],
                median: median(&msgs.iter().map(|&m| m as f64).collect::<Vec<_>>()),
                max: msgs[msgs.len() - 1],
            },
            msgs_per_sec: MinMedianMax {
                min: rates[0],
                median: median(&rates),
                max: rates[rates.len() - 1],
            },
            slowest: all
                .iter()
                .take(SLOWEST)
                .map(|c| Slowest {
                    id: c.id,
                    msgs: c.msgs,
                    msgs_per_sec: c.msgs_per_sec,
                    missed: c.missed,
                })
                .collect(),
        }
    }
}

/// The median of values sorted in ascending order (not empty).
fn median(sorted: &[f64]) -> f64 {
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

impl RunResult {
    /// With each subscriber's missed messages (`(id, missed)`, from the delivery accounting)
    /// set on its client and in the subscribers' spread. Ids not among the clients are
    /// ignored.
    #[must_use]
    pub fn with_missed(mut self, missed: &[(u32, u64)]) -> Self {
        if missed.is_empty() {
            return self;
        }
        let by_id: std::collections::HashMap<u32, u64> = missed.iter().copied().collect();
        for c in self.clients.iter_mut().filter(|c| c.role == Role::Sub) {
            if let Some(n) = by_id.get(&c.id) {
                c.missed = Some(*n);
            }
        }
        if let Some(stats) = self.by_role.get_mut(Role::Sub.as_str()) {
            stats.spread = ClientSpread::of(self.clients.iter().filter(|c| c.role == Role::Sub));
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(id: u32, msgs: u64, msgs_per_sec: f64) -> ClientStats {
        ClientStats {
            role: Role::Sub,
            id,
            msgs,
            bytes: msgs * 16,
            seconds: 1.0,
            msgs_per_sec,
            bytes_per_sec: msgs_per_sec * 16.0,
            missed: None,
        }
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        let odd = [client(0, 30, 3.0), client(1, 10, 1.0), client(2, 20, 2.0)];
        let s = ClientSpread::of(&odd);
        assert_eq!(
            s.msgs,
            MinMedianMax {
                min: 10,
                median: 20.0,
                max: 30
            }
        );
        assert_eq!(
            s.msgs_per_sec,
            MinMedianMax {
                min: 1.0,
                median: 2.0,
                max: 3.0
            }
        );
        // Even: the mean of the middle two, which no client has.
        let even = [
            client(0, 40, 400.0),
            client(1, 10, 100.0),
            client(2, 25, 250.0),
            client(3, 20, 200.0),
        ];
        let s = ClientSpread::of(&even);
        assert_eq!((s.msgs.min, s.msgs.median, s.msgs.max), (10, 22.5, 40));
        assert_eq!(s.msgs_per_sec.median, 225.0);
        assert_eq!(ClientSpread::of(&even[..1]).msgs.median, 40.0);
    }

    #[test]
    fn slowest_are_fewest_messages_then_lowest_rate_then_lowest_id() {
        let clients: Vec<ClientStats> = vec![
            client(0, 100, 900.0),
            client(1, 97, 990.0),
            client(2, 100, 800.0),
            client(3, 99, 500.0),
            client(4, 100, 800.0),
            client(5, 97, 950.0),
            client(6, 100, 700.0),
            client(7, 100, 100.0),
        ];
        let s = ClientSpread::of(&clients);
        let order: Vec<u32> = s.slowest.iter().map(|c| c.id).collect();
        // 97 msgs (5 slower than 1), 99, then 100 msgs by rate: 7 at 100/s, 6 at 700/s.
        assert_eq!(order, vec![5, 1, 3, 7, 6]);
        // Equal messages and rates: the lower id first.
        let tied: Vec<ClientStats> = (0..8).rev().map(|id| client(id, 50, 10.0)).collect();
        let order: Vec<u32> = ClientSpread::of(&tied)
            .slowest
            .iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4]);
        assert_eq!(ClientSpread::of(&tied[..2]).slowest.len(), 2);
        assert_eq!(
            ClientSpread::of(&[] as &[ClientStats]),
            ClientSpread::default()
        );
    }

    #[test]
    fn missed_messages_reach_the_clients_and_the_slowest() {
        let runs: Vec<crate::stats::throughput::ClientRun> = (0..3)
            .map(|id| crate::stats::throughput::ClientRun {
                role: Role::Sub,
                id,
                msgs: 10 - u64::from(id),
                bytes: 0,
                start: None,
                end: None,
            })
            .collect();
        let (throughput, by_role, clients) = super::super::throughput_sections(&runs);
        let r = RunResult {
            throughput,
            by_role,
            clients,
            ..RunResult::new(
                "sub",
                "2026-11-21T19:15:17Z".into(),
                serde_json::Value::Null,
                crate::result::ServerMeta::for_tests(),
                &crate::error::ErrorCounts::default(),
                false,
            )
        };
        assert_eq!(r.by_role["sub"].spread.slowest[0].missed, None);
        let r = r.with_missed(&[(2, 2), (0, 0), (1, 1), (9, 9)]);
        let missed: Vec<Option<u64>> = r.clients.iter().map(|c| c.missed).collect();
        assert_eq!(missed, vec![Some(0), Some(1), Some(2)]);
        let slowest: Vec<(u32, Option<u64>)> = r.by_role["sub"]
            .spread
            .slowest
            .iter()
            .map(|c| (c.id, c.missed))
            .collect();
        assert_eq!(slowest, vec![(2, Some(2)), (1, Some(1)), (0, Some(0))]);
    }
}
