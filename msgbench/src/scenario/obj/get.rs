//! A get, step by step, on the client's state machine (`client`): after the lookup of its
//! metadata, a consumer filtered to the object's chunk subject (no acks, in memory, made for
//! this object and deleted after it, untimed), and pull requests keeping up to [`PULL_BATCH`]
//! chunks asked for, until a chunk comes with none pending after it. Each chunk is timed as
//! the wait for it (from the previous chunk, or from the first pull request), and hashed; the
//! object is intact when its SHA-256, size and chunk count are its metadata's.

use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::client::{kind_of, send_kind, Current, Machine, Next, Outcome, Step};
use super::meta::{self, Meta};
use crate::engine::jsapi::{self, ConsumerConfig};
use crate::wire::proto;

/// Chunks a get keeps asked for at most; it asks again when half have come.
const PULL_BATCH: u64 = 32;

impl Machine<'_> {
    /// A get, after its lookup: a consumer for its chunks, and the first pull.
    pub(super) fn begin_get(&mut self, found: Option<Meta>) -> Next {
        let Some(info) = found else {
            return Next::Finish(Outcome::Missing);
        };
        let Some(cur) = self.cur.as_mut() else {
            return Next::Wait;
        };
        if info.size == 0 {
            let intact =
                info.chunks == 0 && meta::digest_matches(&info.digest, &Sha256::digest(b""));
            return Next::Finish(Outcome::Done {
                start: cur.start,
                end: Instant::now(),
                chunks: 0,
                bytes: 0,
                intact,
            });
        }
        let consumer = format!("{}_{}", self.consumer_prefix, cur.index);
        let subject = meta::chunk_subject(&self.o.bucket, &info.nuid);
        let cfg = ConsumerConfig {
            name: consumer.clone(),
            deliver_policy: "all",
            opt_start_seq: None,
            ack_policy: "none",
            max_ack_pending: None,
            max_waiting: 4,
            // A run that dies leaves no consumer behind for long.
            inactive_threshold: Duration::from_secs(30).as_nanos() as u64,
            mem_storage: true,
            num_replicas: Some(1),
            filter_subject: Some(subject.clone()),
        };
        if let Err(e) = self.api.create_consumer(&self.stream, &cfg) {
            return self.fail(kind_of(&e));
        }
        let now = Instant::now();
        cur.heard = now;
        cur.step = Step::Pull {
            info,
            subject,
            consumer,
            base: self.next_id + 1,
            outstanding: 0,
            chunks: 0,
            bytes: 0,
            hash: Sha256::new(),
            last: now,
        };
        self.ask()
    }

    /// Asks for more chunks when half of what was asked for has come.
    fn ask(&mut self) -> Next {
        let expires = self.o.timeout.as_nanos();
        let id = self.next_id + 1;
        let Some(Current {
            step:
                Step::Pull {
                    consumer,
                    outstanding,
                    ..
                },
            ..
        }) = self.cur.as_mut()
        else {
            return Next::Wait;
        };
        if *outstanding > PULL_BATCH / 2 {
            return Next::Wait;
        }
        let want = PULL_BATCH - *outstanding;
        let subject = format!("$JS.API.CONSUMER.MSG.NEXT.{}.{consumer}", self.stream);
        let reply = format!("{}{id}", self.prefix);
        let body = format!(r#"{{"batch":{want},"expires":{expires}}}"#);
        self.body.clear();
        proto::encode_pub(
            &mut self.body,
            subject.as_bytes(),
            Some(reply.as_bytes()),
            b"",
            body.as_bytes(),
        );
        *outstanding += want;
        self.next_id = id;
        match self.shared.write_all(&self.body) {
            Ok(()) => Next::Wait,
            Err(e) => Next::Finish(Outcome::Failed(send_kind(e))),
        }
    }

    /// Deletes the consumer of the get in hand, if it made one (untimed).
    pub(super) fn drop_consumer(&mut self) {
        if let Some(Current {
            step: Step::Pull { consumer, .. },
            ..
        }) = &self.cur
        {
            let _ = self.api.delete_consumer(&self.stream, consumer);
        }
    }

    /// A pulled chunk of the object in hand (on its chunk subject), or a status of one of its
    /// pull requests (on reply id `n`); done when the server says none is pending.
    pub(super) fn on_pulled(&mut self, m: &proto::Msg<'_>, n: u64, now: Instant) -> Next {
        let Some(Current {
            start,
            heard,
            step:
                Step::Pull {
                    info,
                    subject,
                    base,
                    outstanding,
                    chunks,
                    bytes,
                    hash,
                    last,
                    ..
                },
            ..
        }) = self.cur.as_mut()
        else {
            return Next::Wait;
        };
        let delivered = m
            .reply
            .and_then(jsapi::read_delivered)
            .filter(|_| m.subject == subject.as_bytes());
        if let Some(d) = delivered {
            *heard = now;
            let _ = self
                .out
                .chunk_ns
                .record(now.saturating_duration_since(*last).as_nanos().max(1) as u64);
            *last = now;
            hash.update(m.payload);
            *chunks += 1;
            *bytes += m.payload.len() as u64;
            *outstanding = outstanding.saturating_sub(1);
            if d.pending == 0 {
                let intact = *chunks == info.chunks
                    && *bytes == info.size
                    && meta::digest_matches(&info.digest, &hash.clone().finalize());
                let done = Outcome::Done {
                    start: *start,
                    end: now,
                    chunks: *chunks,
                    bytes: *bytes,
                    intact,
                };
                self.drop_consumer();
                return Next::Finish(done);
            }
        } else if n < *base {
            return Next::Wait;
        } else if m
            .headers
            .and_then(jsapi::status)
            .is_some_and(|c| c == 408 || c == 409)
        {
            // An expired or refused request will bring no more: ask again.
            *outstanding = 0;
        }
        self.ask()
    }
}
