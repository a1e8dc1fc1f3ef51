//! The text output's JetStream sections: the publishers' acknowledgements reconciled with each
//! stream, and how the consumers pulled and whether every message owed to them arrived exactly
//! once; loudly when either does not hold. The text exporter asks for them through the run's
//! parameters ([`crate::result::Describe::account`]).

use std::fmt::Write;

use crate::format::group;
use crate::result::RunResult;

/// The verdict on every publish, in place of the delivery line: what the stream holds of what
/// was acknowledged, and why the rest was not acknowledged; the delivery line when the run has
/// no verdict (on an agent, whose coordinator judges).
pub(super) fn durability(o: &mut String, r: &RunResult, delivery: &dyn Fn(&mut String)) {
    let Some(d) = &r.durability else {
        delivery(o);
        return;
    };
    let known = |v: Option<u64>| v.map_or_else(|| "—".to_string(), group);
    let acked = r.delivery.expected;
    let not_acked = d.sent.saturating_sub(acked);
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
    let _ = writeln!(
        o,
        "Durability: {} sent; {} acknowledged: {} in the stream, {} lost{removed}; {} not acknowledged{why}; \
         {} stored without an acknowledgement",
        group(d.sent),
        group(acked),
        known(d.ok),
        known(d.lost),
        group(not_acked),
        known(d.indeterminate),
    );
    if d.lost.is_some_and(|n| n > 0) {
        let seqs: Vec<String> = d.lost_seqs.iter().map(u64::to_string).collect();
        let _ = writeln!(
            o,
            "!! LOST: {} acknowledged messages are not in the stream (first: {}) !!",
            known(d.lost),
            seqs.join(", ")
        );
    }
    replicas(o, r, d);
}

/// How many divergences the text names.
const DIVERGENT_LISTED: usize = 10;

/// The replicas read back: one line saying how many agree with their leader, or why none was
/// read, then one line per divergence (the first ten). A stream with one copy has no replicas
/// to speak of, and no line (the result says why none was read).
fn replicas(o: &mut String, r: &RunResult, d: &crate::result::Durability) {
    let Some(replicas) = &d.replicas else {
        let replicated = (r.jetstream.iter().flat_map(|js| &js.streams))
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
    let _ = writeln!(
        o,
        "!! DIVERGENT: {} differences between replicas and their leader ({read} read back{unread}){by_message} !!",
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

/// The reconciliation of acknowledgements with the streams.
pub(super) fn jetstream(o: &mut String, r: &RunResult) {
    let Some(js) = &r.jetstream else { return };
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
    if js.reconciled {
        let _ = match r.agents.as_ref() {
            Some(a) => writeln!(
                o,
                "Reconciled across {}: every stored message was acknowledged exactly once \
                 (their acknowledged sequences, added up by count and fingerprint, are the stored \
                 ones)",
                crate::format::counted(a.agents.len() as u64, "agent")
            ),
            None => writeln!(
                o,
                "Reconciled: every stored message was acknowledged exactly once"
            ),
        };
        return;
    }
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
        let _ = writeln!(
            o,
            "!! NOT RECONCILED: stream {}: {} stored, {} acknowledged, {} duplicate \
             acknowledgements, {} stored without an acknowledgement{first} !!",
            st.name,
            group(stored),
            group(st.acked),
            group(st.duplicate_acks),
            group(unacked),
        );
    }
}

/// How the consumers pulled, and whether every message owed to them arrived exactly once.
pub(super) fn consumer(o: &mut String, r: &RunResult) {
    let Some(c) = &r.consumer else { return };
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
            "Reconciled{across}: all {} expected stream messages were consumed exactly once",
            group(c.expected)
        );
        return;
    }
    if c.consumed_fingerprint.is_some() && c.consumed == c.expected && r.delivery.lost == 0 {
        let _ = writeln!(
            o,
            "!! NOT RECONCILED: the agents consumed {} messages, as many as expected, but not \
             the expected ones: their fingerprints differ from the owed range's !!",
            group(c.consumed)
        );
        return;
    }
    let d = &r.delivery;
    let _ = writeln!(
        o,
        "!! NOT RECONCILED: {} of {} expected messages never consumed{}, {} consumed twice{}, \
         {} breaks in the ordered sequence !!",
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
