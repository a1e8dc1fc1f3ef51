//! A put, step by step, on the client's state machine (`client`): after the lookup of the
//! metadata it replaces, the chunks go out with a window of [`CHUNK_WINDOW`] unacknowledged
//! (the NATS clients publish chunks asynchronously too), hashed as they go; each chunk is
//! timed from its publish to its PubAck; once all are acknowledged, the metadata with the
//! digest, published with `Nats-Rollup: sub` so it replaces the one before.

use std::fmt::Write as _;
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::client::{kind_of, send_kind, Current, Machine, Next, Outcome, Step};
use super::meta::{self, Meta};
use crate::engine::jsapi::{self, Ack};
use crate::wire::proto;

/// Chunks a put keeps unacknowledged at most.
pub(super) const CHUNK_WINDOW: usize = 32;

impl Machine<'_> {
    /// A put, after its lookup: its chunks go out, the clock running from the first.
    pub(super) fn begin_put(&mut self, old: Option<Meta>) -> Next {
        let p = self.o.put.as_ref().expect("a put");
        let Some(cur) = self.cur.as_mut() else {
            return Next::Wait;
        };
        // Each object's own content, so no two have the same digest.
        self.data[..8].copy_from_slice(&cur.index.to_le_bytes());
        let count = self.data.len().div_ceil(p.chunk_size);
        let nuid = meta::new_nuid();
        let base = self.next_id + 1;
        self.next_id += count as u64;
        cur.start = Instant::now();
        cur.step = Step::Chunks {
            subject: meta::chunk_subject(&self.o.bucket, &nuid),
            nuid,
            base,
            count,
            next: 0,
            acked: 0,
            sent_at: vec![None; count],
            hash: Sha256::new(),
            old,
        };
        self.send_chunks()
    }

    /// Sends chunks while the window has room; once all are acknowledged, the metadata.
    fn send_chunks(&mut self) -> Next {
        let chunk_size = self.o.put.as_ref().map_or(1, |p| p.chunk_size);
        let Some(cur) = self.cur.as_mut() else {
            return Next::Wait;
        };
        let Step::Chunks {
            nuid,
            subject,
            base,
            count,
            next,
            acked,
            sent_at,
            hash,
            old,
        } = &mut cur.step
        else {
            return Next::Wait;
        };
        let mut reply = String::new();
        while *next < *count && *next - *acked < CHUNK_WINDOW {
            let lo = *next * chunk_size;
            let chunk = &self.data[lo..(lo + chunk_size).min(self.data.len())];
            hash.update(chunk);
            reply.clear();
            let _ = write!(reply, "{}{}", self.prefix, *base + *next as u64);
            self.body.clear();
            proto::encode_pub(
                &mut self.body,
                subject.as_bytes(),
                Some(reply.as_bytes()),
                b"",
                chunk,
            );
            sent_at[*next] = Some(Instant::now());
            if let Err(e) = self.shared.write_all(&self.body) {
                return Next::Finish(Outcome::Failed(send_kind(e)));
            }
            *next += 1;
        }
        if *acked < *count {
            return Next::Wait;
        }
        let info = Meta {
            name: cur.name.clone(),
            options: Some(meta::MetaOptions {
                max_chunk_size: chunk_size as u64,
            }),
            bucket: self.o.bucket.clone(),
            nuid: nuid.clone(),
            size: self.data.len() as u64,
            mtime: humantime::format_rfc3339_nanos(std::time::SystemTime::now()).to_string(),
            chunks: *count as u64,
            digest: meta::digest_text(std::mem::take(hash)),
            deleted: false,
        };
        let (old, chunks) = (old.take(), *count as u64);
        let body = serde_json::to_vec(&info).expect("metadata serialises");
        self.next_id += 1;
        let id = self.next_id;
        reply.clear();
        let _ = write!(reply, "{}{id}", self.prefix);
        self.body.clear();
        proto::encode_pub(
            &mut self.body,
            meta::meta_subject(&self.o.bucket, &cur.name).as_bytes(),
            Some(reply.as_bytes()),
            meta::ROLLUP_HEADERS,
            &body,
        );
        cur.step = Step::Meta { id, old, chunks };
        match self.shared.write_all(&self.body) {
            Ok(()) => Next::Wait,
            Err(e) => Next::Finish(Outcome::Failed(send_kind(e))),
        }
    }

    /// A chunk's PubAck (reply id `n`): timed, and the window refilled.
    pub(super) fn on_chunk_ack(&mut self, n: u64, payload: &[u8], now: Instant) -> Next {
        let Some(Current {
            heard,
            step:
                Step::Chunks {
                    base,
                    count,
                    acked,
                    sent_at,
                    ..
                },
            ..
        }) = self.cur.as_mut()
        else {
            return Next::Wait;
        };
        let Some(at) = n
            .checked_sub(*base)
            .filter(|i| *i < *count as u64)
            .and_then(|i| sent_at[i as usize].take())
        else {
            return Next::Wait;
        };
        *heard = now;
        match jsapi::read_ack(payload) {
            Ack::Stored { .. } => {
                let _ = self
                    .out
                    .chunk_ns
                    .record(now.saturating_duration_since(at).as_nanos().max(1) as u64);
                *acked += 1;
            }
            Ack::Failed(kind) => return self.fail(kind),
        }
        self.send_chunks()
    }

    /// The metadata's PubAck: the object is put. The chunks it replaced go afterwards,
    /// untimed, as the NATS clients purge them after a put.
    pub(super) fn on_meta_ack(&mut self, payload: &[u8], now: Instant) -> Next {
        if let Ack::Failed(kind) = jsapi::read_ack(payload) {
            return self.fail(kind);
        }
        let Some(Current {
            start,
            step: Step::Meta { old, chunks, .. },
            ..
        }) = self.cur.as_mut()
        else {
            return Next::Wait;
        };
        let (start, old, chunks) = (*start, old.take(), *chunks);
        if let Some(old) = old {
            let filter =
                serde_json::json!({ "filter": meta::chunk_subject(&self.o.bucket, &old.nuid) });
            let purge = format!("STREAM.PURGE.{}", self.stream);
            if let Err(e) = self.api.call_json(&purge, filter.to_string().as_bytes()) {
                self.errors.add(kind_of(&e));
            }
        }
        Next::Finish(Outcome::Done {
            start,
            end: now,
            chunks,
            bytes: self.data.len() as u64,
            intact: true,
        })
    }
}
