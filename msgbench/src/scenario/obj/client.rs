//! One object store client: a connection of its own that puts or gets its objects one at a
//! time, as the NATS clients do, timing each object and each chunk.
//!
//! A connection has one read loop for its life, so a client is a small state machine driven by
//! that loop's events ([`Machine`]): each object goes through its steps ([`Step`]), and the
//! next starts when one ends. Every object starts with a direct get of its metadata (a put:
//! of the one it replaces); the put's steps are in `put`, the get's in `get`. Every reply
//! comes to one wildcard inbox, `<inbox>.<n>`, with `n` new for each request, so a late
//! message of an earlier object is told apart and ignored. Consumers are made and deleted,
//! and replaced chunks purged, on the client's API connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use sha2::Sha256;

use super::meta::{self, Meta};
use super::options::ObjOptions;
use crate::engine::conn::{self, Conn, ConnectSpec, End, Event, Flow, SendError, Shared};
use crate::engine::jsapi::{self, Api};
use crate::error::{Error, ErrorCounts, ErrorKind, Result};
use crate::server::Target;
use crate::stats::latency::new_histogram;
use crate::stats::throughput::{ClientRun, Role};
use crate::stats::timeline::ClientMeter;
use crate::wire::proto;

/// How often the read loop hands back control while waiting, to check the timeout.
const TICK: Duration = Duration::from_millis(50);
/// The subscription id of the connection's inbox.
const SID: u64 = 1;

/// How one object went.
#[derive(Debug)]
pub(super) enum Outcome {
    /// Put or read whole; for a get, whether its digest, size and chunk count matched its
    /// metadata.
    Done {
        start: Instant,
        end: Instant,
        chunks: u64,
        bytes: u64,
        intact: bool,
    },
    /// A get found no such object (or one marked deleted).
    Missing,
    /// A chunk or the metadata was refused, or did not come in time.
    Failed(ErrorKind),
}

/// What one client did.
pub(super) struct ClientOut {
    pub run: ClientRun,
    /// Each of its objects by index, with how it went.
    pub objects: Vec<(u64, Outcome)>,
    pub object_ns: Histogram<u64>,
    pub chunk_ns: Histogram<u64>,
}

/// A client's connections: its own for the data, and one for API calls.
pub(super) struct Client {
    id: u32,
    conn: Conn,
    api: Api,
    inbox: String,
}

impl Client {
    /// Connects both and subscribes to the client's inbox.
    ///
    /// # Errors
    /// As [`conn::connect`].
    pub fn connect(
        target: &Target,
        o: &ObjOptions,
        id: u32,
        errors: &Arc<ErrorCounts>,
    ) -> Result<Self> {
        let name = format!("msgbench-obj-{id}");
        let mut conn = conn::connect(
            &ConnectSpec {
                servers: &target.urls,
                name: &name,
                opts: &o.conn.dial,
                stall_limit: o.timeout,
            },
            Arc::clone(errors),
        )?;
        let inbox = format!(
            "_INBOX.msgbench.obj.{:04x}.{id}",
            crate::wire::stamp::new_run_tag()
        );
        let mut sub = Vec::new();
        proto::encode_sub(&mut sub, &format!("{inbox}.*"), None, SID);
        conn.subscribe_and_confirm(&sub, o.timeout)?;
        let api = Api::connect(
            &target.urls,
            &format!("{name}-api"),
            &o.conn.dial,
            o.timeout,
        )?;
        Ok(Self {
            id,
            conn,
            api,
            inbox,
        })
    }

    pub fn conn(&self) -> &Conn {
        &self.conn
    }

    /// Puts or gets this client's objects (object `i` of the run goes to client
    /// `i mod clients`), one after another, until done or stopped.
    pub fn work(
        self,
        o: &ObjOptions,
        errors: &ErrorCounts,
        live: &ClientMeter,
        stop: &AtomicBool,
    ) -> ClientOut {
        let Client {
            id,
            mut conn,
            mut api,
            inbox,
        } = self;
        let role = if o.put.is_some() {
            Role::Pub
        } else {
            Role::Sub
        };
        let mut m = Machine {
            o,
            stream: o.stream(),
            api: &mut api,
            shared: &conn.shared,
            errors,
            live,
            stop,
            prefix: format!("{inbox}.",),
            consumer_prefix: inbox.replace('.', "_"),
            next_id: 0,
            todo: (u64::from(id)..o.objects).step_by(o.clients as usize),
            data: o
                .put
                .as_ref()
                .map(|p| content(p.size, id))
                .unwrap_or_default(),
            cur: None,
            out: ClientOut {
                run: ClientRun {
                    role,
                    id,
                    msgs: 0,
                    bytes: 0,
                    start: None,
                    end: None,
                },
                objects: Vec::new(),
                object_ns: new_histogram(),
                chunk_ns: new_histogram(),
            },
            body: Vec::new(),
        };
        if m.start_next() {
            let end = conn.reader.run(&conn.shared, TICK, |event| m.on(event));
            // The loop ended under an object: the connection is gone with it.
            let lost = match end {
                End::Failed(kind) => Some(kind),
                End::Closed => Some(ErrorKind::Disconnected),
                End::Stopped => None,
            };
            if let (Some(cur), Some(kind)) = (m.cur.take(), lost) {
                m.out.objects.push((cur.index, Outcome::Failed(kind)));
                // The rest cannot be tried on a connection that is gone.
                for i in m.todo.by_ref() {
                    m.out.objects.push((i, Outcome::Failed(kind)));
                }
            }
        }
        let out = m.out;
        conn.shared.close();
        api.close();
        out
    }
}

/// The object in hand.
pub(super) struct Current {
    pub(super) index: u64,
    pub(super) name: String,
    pub(super) start: Instant,
    /// When the server last answered for it: the timeout runs from here.
    pub(super) heard: Instant,
    pub(super) step: Step,
}

/// Where an object is.
pub(super) enum Step {
    /// Waiting for the direct get of its metadata (a put: of the one it replaces).
    Lookup { id: u64 },
    /// A put's chunks: `base + i` is chunk `i`'s reply id.
    Chunks {
        nuid: String,
        subject: String,
        base: u64,
        count: usize,
        next: usize,
        acked: usize,
        sent_at: Vec<Option<Instant>>,
        hash: Sha256,
        old: Option<Meta>,
    },
    /// A put's metadata, published with reply id `id`.
    Meta {
        id: u64,
        old: Option<Meta>,
        chunks: u64,
    },
    /// A get's chunks (on `subject`), pulled through `consumer` by requests from reply id
    /// `base` on.
    Pull {
        info: Meta,
        subject: String,
        consumer: String,
        base: u64,
        outstanding: u64,
        chunks: u64,
        bytes: u64,
        hash: Sha256,
        last: Instant,
    },
}

/// One client's objects, driven by its connection's read loop.
pub(super) struct Machine<'a> {
    pub(super) o: &'a ObjOptions,
    pub(super) stream: String,
    pub(super) api: &'a mut Api,
    pub(super) shared: &'a Shared,
    pub(super) errors: &'a ErrorCounts,
    pub(super) live: &'a ClientMeter,
    pub(super) stop: &'a AtomicBool,
    /// `<inbox>.`: every reply comes to `<prefix><n>`.
    pub(super) prefix: String,
    pub(super) consumer_prefix: String,
    pub(super) next_id: u64,
    pub(super) todo: std::iter::StepBy<std::ops::Range<u64>>,
    /// A put's content, reused for every object (its first 8 bytes made the object's own).
    pub(super) data: Vec<u8>,
    pub(super) cur: Option<Current>,
    pub(super) out: ClientOut,
    pub(super) body: Vec<u8>,
}

/// What a step asks after an event.
pub(super) enum Next {
    Wait,
    Finish(Outcome),
}

impl Machine<'_> {
    fn on(&mut self, event: Event<'_>) -> Flow {
        let next = match event {
            Event::Msg(m) => self.on_msg(m),
            Event::Tick => self.on_tick(),
        };
        if let Next::Finish(outcome) = next {
            self.finish(outcome);
            if !self.start_next() {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    fn on_tick(&mut self) -> Next {
        if self.stop.load(Ordering::Relaxed) {
            // Interrupted: the object in hand is left out, not failed.
            self.cur = None;
            return Next::Wait;
        }
        let Some(cur) = &self.cur else {
            return Next::Wait;
        };
        if cur.heard.elapsed() > self.o.timeout {
            self.errors.add(ErrorKind::RequestTimeout);
            self.drop_consumer();
            return Next::Finish(Outcome::Failed(ErrorKind::RequestTimeout));
        }
        Next::Wait
    }

    /// A message: a reply to the object in hand (on `<inbox>.<n>`), or one of its chunks
    /// pulled (on their own subject); anything else is late and ignored.
    fn on_msg(&mut self, m: proto::Msg<'_>) -> Next {
        let Some(cur) = self.cur.as_mut() else {
            return Next::Wait;
        };
        let (headers, payload) = (m.headers, m.payload);
        let n = reply_id(m.subject, &self.prefix).unwrap_or(0);
        let now = Instant::now();
        match &cur.step {
            Step::Lookup { id } if *id == n => {
                cur.heard = now;
                let found = match headers.and_then(jsapi::status_kind) {
                    Some(ErrorKind::JsNotFound) => None,
                    Some(kind) => return self.fail(kind),
                    None => match serde_json::from_slice::<Meta>(payload) {
                        Ok(m) => Some(m).filter(|m| !m.deleted),
                        Err(_) => return self.fail(ErrorKind::JsOther),
                    },
                };
                if self.o.put.is_some() {
                    self.begin_put(found)
                } else {
                    self.begin_get(found)
                }
            }
            Step::Chunks { .. } => self.on_chunk_ack(n, payload, now),
            Step::Meta { id, .. } if *id == n => self.on_meta_ack(payload, now),
            Step::Pull { .. } => self.on_pulled(&m, n, now),
            _ => Next::Wait,
        }
    }

    /// Records how the object in hand went.
    fn finish(&mut self, outcome: Outcome) {
        let Some(cur) = self.cur.take() else {
            return;
        };
        if let Outcome::Done {
            start,
            end,
            chunks,
            bytes,
            ..
        } = outcome
        {
            let run = &mut self.out.run;
            let _ = self
                .out
                .object_ns
                .record(end.saturating_duration_since(start).as_nanos().max(1) as u64);
            run.start = Some(run.start.map_or(start, |s| s.min(start)));
            run.end = Some(run.end.map_or(end, |e| e.max(end)));
            run.msgs += chunks;
            run.bytes += bytes;
            self.live.msgs.store(run.msgs, Ordering::Relaxed);
        }
        self.out.objects.push((cur.index, outcome));
    }

    /// Fails the object in hand with `kind`, counted.
    pub(super) fn fail(&mut self, kind: ErrorKind) -> Next {
        self.errors.add(kind);
        self.drop_consumer();
        Next::Finish(Outcome::Failed(kind))
    }

    /// Starts the next object with the lookup of its metadata; false when none is left (or
    /// the run was stopped).
    fn start_next(&mut self) -> bool {
        while !self.stop.load(Ordering::Relaxed) {
            let Some(index) = self.todo.next() else {
                return false;
            };
            let name = ObjOptions::name(index);
            let id = self.new_id();
            let now = Instant::now();
            self.cur = Some(Current {
                index,
                name: name.clone(),
                start: now,
                heard: now,
                step: Step::Lookup { id },
            });
            let subject = format!(
                "$JS.API.DIRECT.GET.{}.{}",
                self.stream,
                meta::meta_subject(&self.o.bucket, &name)
            );
            let reply = format!("{}{id}", self.prefix);
            self.body.clear();
            proto::encode_pub(
                &mut self.body,
                subject.as_bytes(),
                Some(reply.as_bytes()),
                b"",
                b"",
            );
            match self.shared.write_all(&self.body) {
                Ok(()) => return true,
                Err(e) => {
                    let kind = send_kind(e);
                    self.finish(Outcome::Failed(kind));
                }
            }
        }
        self.cur = None;
        false
    }

    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

/// `n` of a reply on `<prefix><n>`, when it is one.
fn reply_id(subject: &[u8], prefix: &str) -> Option<u64> {
    std::str::from_utf8(subject.strip_prefix(prefix.as_bytes())?)
        .ok()?
        .parse()
        .ok()
}

/// The kind to count for a failed API call.
pub(super) fn kind_of(e: &Error) -> ErrorKind {
    match e {
        Error::JetStream { kind, .. } => *kind,
        _ => ErrorKind::Io,
    }
}

pub(super) fn send_kind(e: SendError) -> ErrorKind {
    match e {
        // The bytes may not have reached the server: the object is not known to be whole.
        SendError::Reconnected => ErrorKind::LostInFlight,
        SendError::Failed(kind) => kind,
    }
}

/// `size` bytes that do not compress to nothing (a store with compression would flatter a
/// run of zeros): a xorshift sequence seeded by the client.
fn content(size: usize, id: u32) -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(id + 1);
    let mut v = Vec::with_capacity(size.next_multiple_of(8));
    while v.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(size);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_by_their_number_and_others_ignored() {
        let p = "_INBOX.x.1.";
        assert_eq!(reply_id(b"_INBOX.x.1.7", p), Some(7));
        assert_eq!(reply_id(b"_INBOX.x.2.6", p), None);
        assert_eq!(reply_id(b"_INBOX.x.1.z", p), None);
        assert_eq!(reply_id(b"$O.b.C.x", p), None);
    }
}
