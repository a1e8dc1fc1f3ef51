//! The text output's JetStream sections: the publishers' acknowledgements reconciled with each
//! stream, and how the consumers pulled and whether every message owed to them arrived exactly
//! once; loudly when either does not hold. The text exporter asks for them through the run's
//! parameters ([`crate::result::Describe::account`]).

use std::fmt::Write;

use crate::format::group;
use crate::result::{ConsumeReport, Durability, JsReport, RunResult};

/// The verdict on every publish, in place of the delivery line: what the stream holds of what
/// was acknowledged, and why the rest was not acknowledged; the delivery line when the run has
/// no verdict (on an agent, whose coordinator judges).
pub(super) fn durability(o: &mut String, r: &RunResult, delivery: &dyn Fn(&mut String)) {
    let Some(d) = r.own.get::<Durability>() else {
        delivery(o);
        return;
    };
    let known = |v: Option<u64>| v.map_or_else(|| "—".to_string(), group);
    let acked = r.delivery.expected;
    let not_acked = d.sent.saturating_sub(acked).saturating_sub(d.deduplicated);
    let mut why: Vec<String> = d
        .refused
        .iter()
        .map(|(k, n)| format!("refused {} ({k})", group(*n)))
        .collect();
    if d.unanswered > 0 {
        why.push(format!("unanswered {}", group(d.unanswered)));
    }
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(": {}", why.join(", "))
    };
    let removed = match d.removed {
        Some(n) if n > 0 => format!(", {} removed since by the stream's own limits", group(n)),
        _ => String::new(),
    };
    let duplicates = if d.deduplicated > 0 {
        format!(
            "{} acknowledged as duplicates (the stream already held their message ids); ",
            group(d.deduplicated)
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "Durability: {} sent; {} acknowledged: {} in the stream, {} lost{removed}; {duplicates}{} not \
         acknowledged{why}; {}",
        group(d.sent),
        group(acked),
        known(d.ok),
        known(d.lost),
        group(not_acked),
        indeterminate(d),
    );
    if d.lost.is_some_and(|n| n > 0) {
        let seqs: Vec<String> = d.lost_seqs.iter().map(u64::to_string).collect();
        let by = d.lost_by_position.map_or(String::new(), |p| {
            format!(
                "; by place: lost-prefix {}, lost-middle {}, lost-postfix {}",
                group(p.prefix),
                group(p.middle),
                group(p.postfix)
            )
        });
        let _ = writeln!(
            o,
            "!! LOST: {} acknowledged messages are not in the stream (first: {}){by} !!",
            known(d.lost),
            seqs.join(", ")
        );
    }
    if let Some(n) = d.recovered.filter(|&n| n > 0) {
        let seqs: Vec<String> = d.recovered_seqs.iter().map(u64::to_string).collect();
        let _ = writeln!(
            o,
            "Recovered: {} acknowledged messages were missing at the first read and there at the last (first: {})",
            group(n),
            seqs.join(", ")
        );
    }
    disk(o, r, d);
    replicas(o, r, d);
}

/// The writes stored without an acknowledgement, and what explains them: "4 stored without an
/// acknowledgement, all among the 16 publishes lost in flight when their connection was
/// replaced at 3.02 s".
fn indeterminate(d: &crate::result::Durability) -> String {
    let Some(n) = d.indeterminate else {
        return "— stored without an acknowledgement".into();
    };
    let head = format!("{} stored without an acknowledgement", group(n));
    let Some(e) = d.explained.as_ref().filter(|_| n > 0) else {
        return head;
    };
    let given_up: u64 = e.causes.iter().map(|c| c.publishes).sum();
    let seqs: Vec<String> = e.unexplained_seqs.iter().map(|s| group(*s)).collect();
    let none = |u: u64| {
        let first = if seqs.is_empty() {
            String::new()
        } else {
            format!(" (first: {})", seqs.join(", "))
        };
        format!("{} that no publish of this run explains{first}", group(u))
    };
    if e.by == "count" {
        let list: Vec<String> = e.causes.iter().map(cause).collect();
        let told = format!(
            "told by count: {}",
            e.not_read.as_deref().unwrap_or("not read")
        );
        return match (e.unexplained, list.is_empty()) {
            (0, _) => format!(
                "{head}, no more than the {} publishes given up on ({}; {told})",
                group(given_up),
                list.join(", ")
            ),
            (u, true) => format!("{head}: {}, and nothing given up on ({told})", none(u)),
            (u, false) => format!(
                "{head}: {} more than the {} publishes given up on ({}; {told})",
                group(u),
                group(given_up),
                list.join(", ")
            ),
        };
    }
    let among = match e.causes.as_slice() {
        [] => String::new(),
        [one] => format!("the {}", cause(one)),
        many => {
            let each: Vec<String> = many
                .iter()
                .map(|c| format!("{} of the {}", known_or_dash(c.stored), cause(c)))
                .collect();
            format!("the publishes given up on: {}", each.join(", "))
        }
    };
    match e.unexplained {
        0 => format!("{head}, all among {among}"),
        u if u == n => format!("{head}: {}", none(u)),
        u => format!("{head}: {} among {among}; {}", group(n - u), none(u)),
    }
}

fn known_or_dash(v: Option<u64>) -> String {
    v.map_or_else(|| "—".to_string(), group)
}

/// "16 publishes lost in flight when their connection was replaced at 3.02 s".
fn cause(c: &crate::result::Cause) -> String {
    let n = group(c.publishes);
    match c.kind {
        "lost_in_flight" => {
            let at: Vec<String> = (c.at_ns.iter())
                .map(|t| crate::format::duration_ns(*t as f64))
                .collect();
            let when = if at.is_empty() {
                String::new()
            } else {
                format!(" when their connection was replaced at {}", at.join(", "))
            };
            format!("{n} publishes lost in flight{when}")
        }
        "request_timeout" => format!("{n} publishes that timed out"),
        kind => format!("{n} publishes answered with a server error ({kind})"),
    }
}

/// The lazy filesystem under each node's store, when the run had one: the syncs it saw, what
/// a power loss dropped, and which node came back with less than it had.
fn disk(o: &mut String, r: &RunResult, d: &crate::result::Durability) {
    let Some(nodes) = &d.disk else {
        return;
    };
    let each: Vec<String> = (nodes.iter())
        .map(|n| {
            let c = &n.counts;
            format!(
                "{} {} fsyncs ({} of directories), {} written, {} dropped",
                n.node,
                group(c.fsyncs + c.dir_fsyncs),
                group(c.dir_fsyncs),
                crate::format::ibytes(c.bytes_written as f64),
                crate::format::ibytes(c.bytes_dropped as f64)
            )
        })
        .collect();
    let _ = writeln!(
        o,
        "Disk (msgbench's lazy filesystem, for durability, not speed): {}",
        each.join("; ")
    );
    let short: Vec<String> = (r.fault.iter().flat_map(|f| &f.faults))
        .flat_map(|e| &e.restarts)
        .filter(|n| n.came_back_short)
        .map(|n| {
            let now = match (n.absent, n.last_seq) {
                (true, _) => "without the stream".to_string(),
                (false, Some(l)) => format!("at sequence {}", group(l)),
                (false, None) => "—".to_string(),
            };
            let had = n.last_seq_before.map_or_else(|| "—".to_string(), group);
            format!("{} came back {now}, had {had}", n.node)
        })
        .collect();
    if !short.is_empty() {
        // Not a failure in itself (a node may come back short and catch up from its peers):
        // what was lost is the verdict's.
        let _ = writeln!(o, "Came back short: {}", short.join("; "));
    }
}

/// How many divergences the text names.
const DIVERGENT_LISTED: usize = 10;

/// The replicas read back: one line saying how many agree with their leader, or why none was
/// read, then one line per divergence (the first ten). A stream with one copy has no replicas
/// to speak of, and no line (the result says why none was read).
fn replicas(o: &mut String, r: &RunResult, d: &crate::result::Durability) {
    let Some(replicas) = &d.replicas else {
        let replicated = (r
            .own
            .get::<JsReport>()
            .into_iter()
            .flat_map(|js| &js.streams))
        .any(|s| s.config.as_ref().is_some_and(|c| c.num_replicas > 1));
        if let Some(why) = d.replicas_not_read.as_ref().filter(|_| replicated) {
            let _ = writeln!(o, "Replicas: not read back ({why})");
        }
        return;
    };
    let read = replicas.iter().filter(|r| r.last_seq.is_some()).count();
    let unread = replicas.len() - read;
    let unread = if unread > 0 {
        format!(", {unread} could not be read")
    } else {
        String::new()
    };
    let Some(divergent) = &d.divergent else {
        let why = d.replicas_not_read.as_deref().unwrap_or("no leader");
        let _ = writeln!(
            o,
            "Replicas: {read} read back{unread}; not compared ({why})"
        );
        return;
    };
    let last = (replicas.iter().find(|r| r.leader))
        .and_then(|r| r.last_seq)
        .map_or_else(|| "—".to_string(), group);
    let by_message = messages_compared(replicas, d.messages_read_ns);
    if divergent.is_empty() {
        let _ = writeln!(
            o,
            "Replicas: {read} read back{unread}, each as its leader has it (last sequence {last}){by_message}"
        );
        return;
    }
    // After a power loss, copies that disagree once the cluster healed are a split brain.
    let power_lost = (r.fault.iter().flat_map(|f| &f.faults))
        .any(|e| e.spec.kind == crate::stats::recovery::FaultKind::PowerLoss);
    let split = if power_lost {
        " (a split brain after a power loss)"
    } else {
        ""
    };
    let _ = writeln!(
        o,
        "!! DIVERGENT{split}: {} differences between replicas and their leader ({read} read back{unread}){by_message} !!",
        group(d.divergent_count.unwrap_or(divergent.len() as u64))
    );
    for v in divergent.iter().take(DIVERGENT_LISTED) {
        let line = match (v.seq, v.node_value, v.leader_value) {
            (Some(seq), ..) => format!("{} at sequence {}", v.what, group(seq)),
            (None, node, leader) => {
                let known = |v: Option<u64>| v.map_or_else(|| "—".to_string(), group);
                format!("{} {} (leader: {})", v.what, known(node), known(leader))
            }
        };
        let _ = writeln!(
            o,
            "  stream {} on {} (leader {}): {line}",
            v.stream, v.node, v.leader
        );
    }
}

/// How the copies were read message by message: how many and how many messages each held, and
/// each copy not read with why; empty when none was.
fn messages_compared(replicas: &[crate::result::ReplicaState], took_ns: Option<u64>) -> String {
    let held: Vec<u64> = replicas
        .iter()
        .filter_map(|r| r.messages_compared)
        .collect();
    let mut s = String::new();
    if let (Some(most), Some(least)) = (held.iter().max(), held.iter().min()) {
        let each = if most == least { "each" } else { "at most" };
        let took =
            took_ns.map_or_else(|| "—".to_string(), |t| crate::format::duration_ns(t as f64));
        let _ = write!(
            s,
            "; {} read message by message ({} messages {each}, in {took})",
            held.len(),
            group(*most)
        );
    }
    for r in replicas.iter().filter(|r| r.last_seq.is_some()) {
        if let Some(why) = &r.not_read {
            let _ = write!(s, "; {} not read message by message: {why}", r.node);
        }
    }
    s
}

/// The reconciliation of acknowledgements with the streams; loudly only when it fails the run.
/// In a `js consume` report (`consuming`) its line names the publishes, so that it never reads
/// as the consumer's verdict.
pub(super) fn jetstream(o: &mut String, r: &RunResult, consuming: bool) {
    let Some(js) = r.own.get::<JsReport>() else {
        return;
    };
    let line = |st: &crate::result::StreamReport| {
        let (Some(after), Some(stored)) = (st.after, st.stored) else {
            return format!(
                "{} acknowledged; the stream could not be read after the run",
                group(st.acked)
            );
        };
        let stored = if stored == 0 {
            "nothing new stored".to_string()
        } else {
            format!(
                "stream sequences {}–{} stored",
                group(st.before.last_seq + 1),
                group(after.last_seq)
            )
        };
        format!(
            "{} acknowledged, {stored}, now {} messages",
            group(st.acked),
            group(after.messages)
        )
    };
    match js.streams.as_slice() {
        [one] => {
            // A stream the run found is named with what it is, since nothing asked made it so.
            let found = match (&one.config, one.found) {
                (Some(c), Some(true)) if c.num_replicas > 1 => {
                    format!(", R{}, used as found", c.num_replicas)
                }
                (_, Some(true)) => ", used as found".to_string(),
                _ => String::new(),
            };
            let _ = writeln!(
                o,
                "JetStream: stream {} ({}{found}, {} publish): {}",
                one.name,
                js.storage,
                js.mode,
                line(one)
            );
        }
        many => {
            let _ = writeln!(
                o,
                "JetStream: {} streams ({}, {} publish): {} acknowledged, {} stored",
                many.len(),
                js.storage,
                js.mode,
                group(js.acked),
                js.stored.map_or_else(|| "—".to_string(), group)
            );
            for st in many {
                let _ = writeln!(o, "  {}: {}", st.name, line(st));
            }
        }
    }
    if js.persist.as_deref() == Some("async") {
        let _ = writeln!(
            o,
            "Persist async: an acknowledgement says the server holds the message in memory, not that it \
             reached the stream's file; a server that crashes before writing it loses it"
        );
    }
    if js.deduplicated > 0 {
        let _ = writeln!(
            o,
            "Deduplicated: {} carried a message id the stream already had, and {} not stored \
             again",
            crate::format::counted_as(js.deduplicated, "publish", "publishes"),
            if js.deduplicated == 1 { "was" } else { "were" }
        );
    }
    if js.repeated_acks > 0 {
        let _ = writeln!(
            o,
            "Repeated: {} came again to a publish already answered, for the \
             sequence it was given (seen around a change of stream leader); counted, not a \
             failure",
            crate::format::counted(js.repeated_acks, "acknowledgement")
        );
    }
    reconciliation(o, r, js, consuming);
}

/// The publishes' reconciliation as one verdict: reconciled, allowed (writes stored without an
/// acknowledgement that the run explains), or, when it fails the run, a banner per stream
/// naming the check that failed.
fn reconciliation(o: &mut String, r: &RunResult, js: &crate::result::JsReport, consuming: bool) {
    let name = if consuming { "Published" } else { "Reconciled" };
    if js.reconciled {
        let _ = match r.agents.as_ref() {
            Some(a) => writeln!(
                o,
                "{name} across {}: every stored message was acknowledged exactly once \
                 (their acknowledged sequences, added up by count and fingerprint, are the stored \
                 ones)",
                crate::format::counted(a.agents.len() as u64, "agent")
            ),
            None => writeln!(
                o,
                "{name}: every stored message was acknowledged exactly once"
            ),
        };
        return;
    }
    if !js.unreconciled(r) {
        // What kept the streams from reconciling exactly is allowed: writes stored without an
        // acknowledgement, each explained on the Durability line.
        let _ = writeln!(
            o,
            "{name}: every acknowledged message is stored once; {} more stored without an \
             acknowledgement, allowed (see Durability)",
            js.unacked_stored.map_or_else(|| "—".to_string(), group)
        );
        return;
    }
    not_reconciled(o, r, js);
}

/// A banner per stream that did not reconcile: the check that failed first, then its figures.
fn not_reconciled(o: &mut String, r: &RunResult, js: &crate::result::JsReport) {
    let unexplained = (r.own.get::<Durability>())
        .and_then(|d| d.explained.as_ref())
        .filter(|e| e.unexplained > 0)
        .map(|e| e.unexplained);
    for st in js.streams.iter().filter(|s| !s.reconciled) {
        let (Some(stored), Some(unacked)) = (st.stored, st.unacked_stored) else {
            let why = st.unread.as_deref().unwrap_or("its state was not read");
            let _ = writeln!(
                o,
                "!! NOT RECONCILED: stream {}: {} acknowledged, but the stream could not be \
                 read after the run: {why} !!",
                st.name,
                group(st.acked),
            );
            continue;
        };
        let first = if st.acked_fingerprint.is_some() && unacked == 0 && st.acked == stored {
            // On agents: the counts agree, the sequences do not.
            " (but the agents' acknowledged sequences are not the stored ones: their \
             fingerprints differ, so one sequence was acknowledged twice and another never)"
                .to_string()
        } else if st.unacked_seqs.is_empty() {
            String::new()
        } else {
            let seqs: Vec<String> = st.unacked_seqs.iter().map(u64::to_string).collect();
            format!(" (first: {})", seqs.join(", "))
        };
        // The check that failed first, then the figures.
        let failed = if st.duplicate_acks > 0 {
            format!(
                "{} acknowledgements gave a publish a sequence already given to another",
                group(st.duplicate_acks)
            )
        } else if let Some(u) = unexplained.filter(|_| unacked > 0) {
            format!(
                "{} stored without an acknowledgement that no publish of this run explains",
                group(u)
            )
        } else if unacked > 0 {
            format!("{} stored without an acknowledgement", group(unacked))
        } else {
            "the stream did not grow by exactly the messages acknowledged".into()
        };
        let _ = writeln!(
            o,
            "!! NOT RECONCILED: stream {}: {failed}; {} stored, {} acknowledged, {} duplicate \
             acknowledgements, {} stored without an acknowledgement{first} !!",
            st.name,
            group(stored),
            group(st.acked),
            group(st.duplicate_acks),
            group(unacked),
        );
    }
}

/// How the consumers pulled, and whether every message owed to them arrived exactly once: a
/// check of its own, named apart from the publishes' reconciliation.
pub(super) fn consumer(o: &mut String, r: &RunResult) {
    let Some(c) = r.own.get::<ConsumeReport>() else {
        return;
    };
    let _ = writeln!(
        o,
        "Consumer {} on stream {}: {} pull requests, {} acks sent, {} redelivered, ended {}",
        c.consumer,
        c.stream,
        group(c.pull_requests),
        group(c.acks_sent),
        group(c.redelivered),
        c.ended
    );
    let list = |seqs: &Option<Vec<u64>>| {
        seqs.as_ref()
            .filter(|s| !s.is_empty())
            .map(|s| {
                let s: Vec<String> = s.iter().map(u64::to_string).collect();
                format!(" (first: {})", s.join(", "))
            })
            .unwrap_or_default()
    };
    if c.reconciled {
        let across = r.agents.as_ref().map_or_else(String::new, |a| {
            format!(
                " across {}",
                crate::format::counted(a.agents.len() as u64, "agent")
            )
        });
        let _ = writeln!(
            o,
            "Consumed{across}: all {} expected stream messages were consumed exactly once",
            group(c.expected)
        );
        return;
    }
    if c.consumed_fingerprint.is_some() && c.consumed == c.expected && r.delivery.lost == 0 {
        let _ = writeln!(
            o,
            "!! NOT CONSUMED EXACTLY ONCE: the agents consumed {} messages, as many as expected, \
             but not the expected ones: their fingerprints differ from the owed range's !!",
            group(c.consumed)
        );
        return;
    }
    let d = &r.delivery;
    let _ = writeln!(
        o,
        "!! NOT CONSUMED EXACTLY ONCE: {} of {} expected messages never consumed{}, {} consumed \
         twice{}, {} breaks in the ordered sequence !!",
        group(d.lost),
        group(c.expected),
        list(&d.missing_seqs),
        group(d.duplicated.unwrap_or(0)),
        list(&d.duplicate_seqs),
        group(c.sequence_breaks)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCounts;
    use crate::result::{Divergence, Durability, ReplicaState, ServerMeta};

    fn copy(
        node: usize,
        leader: bool,
        compared: Option<u64>,
        not_read: Option<&str>,
    ) -> ReplicaState {
        ReplicaState {
            stream: "s".into(),
            node: crate::server::node_name(node),
            leader,
            last_seq: Some(100),
            first_seq: Some(1),
            messages: Some(100),
            num_deleted: Some(0),
            messages_compared: compared,
            not_read: not_read.map(str::to_string),
        }
    }

    fn differs(what: &'static str, seq: Option<u64>, values: Option<(u64, u64)>) -> Divergence {
        Divergence {
            stream: "s".into(),
            node: "msgbench-1".into(),
            leader: "msgbench-0".into(),
            what,
            seq,
            leader_value: values.map(|v| v.0),
            node_value: values.map(|v| v.1),
        }
    }

    #[test]
    fn divergences_are_counted_in_all_the_first_ten_named_and_a_copy_not_read_says_why() {
        let r = RunResult::new(
            "js.pub",
            "2026-11-27T12:00:00Z".into(),
            serde_json::Value::Null,
            ServerMeta::for_tests(),
            &ErrorCounts::default(),
            false,
        );
        let mut divergent = vec![differs("num_deleted", None, Some((0, 2)))];
        divergent.push(differs("missing", Some(7), None));
        divergent.extend((20..30).map(|s| differs("payload", Some(s), None)));
        let d = Durability {
            sent: 100,
            ok: Some(100),
            lost: Some(0),
            lost_seqs: Vec::new(),
            removed: Some(0),
            duplicated: None,
            indeterminate: Some(0),
            explained: None,
            deduplicated: 0,
            refused: Default::default(),
            unanswered: 0,
            replicas: Some(vec![
                copy(0, true, Some(100), None),
                copy(1, false, Some(98), None),
                copy(
                    2,
                    false,
                    None,
                    Some("the leadership moved to msgbench-0 during the read"),
                ),
            ]),
            divergent: Some(divergent),
            divergent_count: Some(40),
            messages_read_ns: Some(1_500_000_000),
            replicas_not_read: None,
            lost_by_position: None,
            recovered: None,
            recovered_seqs: Vec::new(),
            disk: None,
        };
        let mut o = String::new();
        replicas(&mut o, &r, &d);
        let lines: Vec<&str> = o.lines().collect();
        assert_eq!(
            lines[0],
            "!! DIVERGENT: 40 differences between replicas and their leader (3 read back); 2 read \
             message by message (100 messages at most, in 1.50 s); msgbench-2 not read message by \
             message: the leadership moved to msgbench-0 during the read !!"
        );
        assert_eq!(lines.len(), 1 + 10, "{o}");
        assert_eq!(
            lines[1],
            "  stream s on msgbench-1 (leader msgbench-0): num_deleted 2 (leader: 0)"
        );
        assert_eq!(
            lines[2],
            "  stream s on msgbench-1 (leader msgbench-0): missing at sequence 7"
        );
        assert_eq!(
            lines[10],
            "  stream s on msgbench-1 (leader msgbench-0): payload at sequence 27"
        );
    }
}
