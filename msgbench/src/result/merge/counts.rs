//! The figures that add up across agents: throughput overall and by role, the clients,
//! delivery per publisher and in total, and how paced publishers kept their schedule.

use std::collections::BTreeMap;

use super::read::{Doc, ACCOUNTING};
use super::MergeError;
use crate::result::{ClientSpread, Pacing, RoleStats, RunResult};
use crate::stats::delivery::{Delivery, PublisherDelivery, Unmeasured};
use crate::stats::throughput::{Role, Spread, Throughput};

/// Sums and the longest span of a set of throughput figures.
#[derive(Default)]
struct Span {
    msgs: u64,
    bytes: u64,
    seconds: f64,
}

impl Span {
    /// Adds one agent's figures at `d`.
    ///
    /// The agents started at one common time, so their spans overlap from the start: the
    /// merged span is the longest of them, not their sum, and rates are the summed counts over
    /// it. Each agent timed its span on its own clock from the common start, so the merged
    /// span is off by no more than the agents' clock uncertainty.
    fn add(&mut self, d: &Doc<'_>) -> Result<(), MergeError> {
        self.msgs += d.u64("/msgs")?;
        self.bytes += d.u64("/bytes")?;
        self.seconds = self.seconds.max(d.f64("/seconds")?);
        Ok(())
    }

    fn throughput(&self) -> Throughput {
        Throughput::new(self.msgs, self.bytes, self.seconds)
    }
}

/// `throughput`, `by_role` and `clients`. Client ids are global across agents, so the clients
/// are the agents' lists together, ordered by role and id.
pub(super) fn throughput(docs: &[Doc<'_>], r: &mut RunResult) -> Result<(), MergeError> {
    let mut clients = Vec::new();
    let mut overall = Span::default();
    for d in docs {
        for c in d.list("/clients")? {
            clients.push(c.client()?);
        }
        overall.add(&d.need("/throughput")?)?;
    }
    clients.sort_by_key(|c| (c.role, c.id));
    r.throughput = overall.throughput();
    for role in [Role::Pub, Role::Sub] {
        let ptr = format!("/by_role/{}", role.as_str());
        let (mut span, mut n, mut any) = (Span::default(), 0u64, false);
        for part in docs.iter().filter_map(|d| d.part(&ptr)) {
            span.add(&part)?;
            n += part.u64("/clients")?;
            any = true;
        }
        if !any {
            continue;
        }
        let mine = || clients.iter().filter(|c| c.role == role);
        let rates: Vec<f64> = mine().map(|c| c.msgs_per_sec).collect();
        r.by_role.insert(
            role.as_str(),
            RoleStats {
                throughput: span.throughput(),
                clients: usize::try_from(n).unwrap_or(usize::MAX),
                client_rates: Spread::of(&rates),
                // Over every agent's clients: the slowest of the whole run, with the losses
                // each agent counted for its own subscribers.
                spread: ClientSpread::of(mine()),
                counts: crate::result::params::default_counts(role.as_str()),
            },
        );
    }
    r.clients = clients;
    Ok(())
}

/// One agent's delivery figures as the merge weighs them.
struct Accounted {
    subscribers: bool,
    accounting: &'static str,
    duplicated: Option<u64>,
    reordered: Option<u64>,
}

/// The `delivery` section. A publisher may be listed by several agents (its own, and every
/// agent whose subscribers were told its count): its `sent` is the same wherever it appears
/// and is taken once; what subscribers saw of it is summed over agents.
pub(super) fn delivery(docs: &[Doc<'_>]) -> Result<Delivery, MergeError> {
    let mut d = Delivery::default();
    let mut publishers: BTreeMap<u32, PublisherDelivery> = BTreeMap::new();
    let (mut listed, mut agents_sent) = (false, 0u64);
    let mut each = Vec::with_capacity(docs.len());
    // A count no agent took stays null (an agent writes null for what it could not count: a
    // publisher alone, arrivals and loss).
    let mut counted = Unmeasured::ALL;
    let add = |total: &mut u64, n: Option<u64>, not_counted: &mut bool| {
        if let Some(n) = n {
            *total += n;
            *not_counted = false;
        }
    };
    for doc in docs {
        let dl = doc.need("/delivery")?;
        add(
            &mut agents_sent,
            dl.nullable_u64("/sent")?,
            &mut counted.sent,
        );
        add(
            &mut d.expected,
            dl.nullable_u64("/expected")?,
            &mut counted.expected,
        );
        add(
            &mut d.received,
            dl.nullable_u64("/received")?,
            &mut counted.received,
        );
        add(&mut d.lost, dl.nullable_u64("/lost")?, &mut counted.lost);
        d.unstamped += dl.u64("/unstamped")?;
        each.push(Accounted {
            subscribers: doc.get("/by_role/sub").is_some(),
            accounting: dl.known("/accounting", ACCOUNTING)?,
            duplicated: dl.opt_u64("/duplicated")?,
            reordered: dl.opt_u64("/reordered")?,
        });
        for p in dl.list("/publishers")? {
            listed = true;
            let id = p.u32("/id")?;
            let e = publishers.entry(id).or_insert(PublisherDelivery {
                id,
                sent: 0,
                received: 0,
                lost: 0,
                duplicated: 0,
                reordered: 0,
            });
            e.sent = e.sent.max(p.u64("/sent")?);
            e.received += p.u64("/received")?;
            e.lost += p.u64("/lost")?;
            e.duplicated += p.u64("/duplicated")?;
            e.reordered += p.u64("/reordered")?;
        }
    }
    // Agents that list publishers may list the same one (each subscriber-side agent lists them
    // all), so their totals would count its messages more than once.
    d.sent = if listed {
        publishers.values().map(|p| p.sent).sum()
    } else {
        agents_sent
    };
    counted.sent &= !listed;
    d.unmeasured = counted;
    d.publishers = publishers.into_values().collect();
    // Only agents with subscribers account for delivery; a publisher-only agent's "exact"
    // says nothing about arrivals.
    let judged: Vec<&Accounted> = each.iter().filter(|a| a.subscribers).collect();
    d.accounting = match judged.first() {
        None => "none",
        Some(first) if judged.iter().all(|a| a.accounting == first.accounting) => first.accounting,
        // Agents that accounted differently can only be compared by their totals.
        Some(_) => "count",
    };
    // Without subscribers nothing arrived to be duplicated or reordered: null, as in a `pub`
    // run; with them, null when any agent could not tell.
    if !judged.is_empty() {
        d.duplicated = judged.iter().map(|a| a.duplicated).sum();
        d.reordered = judged.iter().map(|a| a.reordered).sum();
    }
    // The first missing or duplicated stream sequences are not merged: one agent's consumer
    // may have had a sequence another's missed. Each agent's lists stay in its own document.
    Ok(d)
}

/// The `pacing` section of the agents that paced their publishers: targets and late sends
/// summed, the achieved rate that of all publishers together (`pub_stats`).
///
/// The send lag's P50 and P99 are the largest of the agents' and so upper bounds: agents do
/// not send their lag histograms, and no percentile of the whole can exceed the largest of the
/// parts'. The max is exact.
pub(super) fn pacing(
    docs: &[Doc<'_>],
    pub_stats: Option<&RoleStats>,
) -> Result<Option<Pacing>, MergeError> {
    let (mut target, mut bound, mut late, mut lag, mut any) = (0.0, 0u64, 0u64, [0u64; 3], false);
    // Null when any agent did not count its sends.
    let mut sends = Some(0u64);
    for p in docs.iter().filter_map(|d| d.part("/pacing")) {
        any = true;
        sends = sends.zip(p.opt_u64("/sends")?).map(|(a, b)| a + b);
        target += p.f64("/target_rate")?;
        bound = bound.max(p.u64("/late_bound_ns")?);
        late += p.u64("/late_sends")?;
        for (l, key) in lag.iter_mut().zip(["p50", "p99", "max"]) {
            *l = (*l).max(p.u64(&format!("/send_lag_{key}_ns"))?);
        }
    }
    Ok(any.then(|| {
        let actual = pub_stats.map(|s| s.throughput.msgs_per_sec);
        Pacing {
            sends,
            ..Pacing::from_figures(target, actual, bound, late, lag)
        }
    }))
}
