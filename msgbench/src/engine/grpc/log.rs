//! The reference service, `msgbench.log.v1.Log` (proto/msgbench/log/v1/log.proto): an
//! append-only log of named streams, for demos, tests and for measuring a network or proxy
//! without a service of one's own.
//!
//! Streams live in memory, spread over shards so that appends to different streams rarely
//! meet on a lock. Each keeps only its newest `retain` records: a benchmark can append for
//! hours and the server's memory stays flat, while positions keep counting.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

/// The code generated from the .proto.
pub mod pb {
    #![allow(clippy::all, clippy::pedantic)]
    tonic::include_proto!("msgbench.log.v1");
}

use pb::{AppendAck, AppendRequest, BatchAck, ReadRequest, Record};

const SHARDS: usize = 16;

struct StreamLog {
    /// The position the next record gets.
    next: u64,
    records: VecDeque<Record>,
}

/// The service's state.
pub struct LogService {
    shards: Vec<Mutex<HashMap<String, StreamLog>>>,
    hasher: RandomState,
    retain: usize,
    appended: AtomicU64,
    calls: AtomicU64,
}

impl LogService {
    /// A service keeping `retain` records per stream (at least 1).
    pub fn new(retain: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: RandomState::new(),
            retain: retain.max(1),
            appended: AtomicU64::new(0),
            calls: AtomicU64::new(0),
        }
    }

    /// Records appended and calls served so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.appended.load(Ordering::Relaxed),
            self.calls.load(Ordering::Relaxed),
        )
    }

    /// Streams that exist.
    pub fn streams(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().expect("log shard").len())
            .sum()
    }

    fn shard(&self, stream: &str) -> &Mutex<HashMap<String, StreamLog>> {
        &self.shards[(self.hasher.hash_one(stream) as usize) % SHARDS]
    }

    fn append_one(&self, req: AppendRequest) -> Result<AppendAck, Status> {
        if req.stream.is_empty() {
            return Err(Status::invalid_argument("stream must not be empty"));
        }
        let mut shard = self.shard(&req.stream).lock().expect("log shard");
        let log = match shard.get_mut(&req.stream) {
            Some(log) => log,
            None => shard.entry(req.stream.clone()).or_insert(StreamLog {
                next: 1,
                records: VecDeque::new(),
            }),
        };
        let position = log.next;
        log.next += 1;
        if log.records.len() == self.retain {
            log.records.pop_front();
        }
        log.records.push_back(Record {
            position,
            data: req.data,
            metadata: req.metadata,
        });
        drop(shard);
        self.appended.fetch_add(1, Ordering::Relaxed);
        Ok(AppendAck {
            stream: req.stream,
            position,
        })
    }
}

type Boxed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl pb::log_server::Log for std::sync::Arc<LogService> {
    async fn append(&self, req: Request<AppendRequest>) -> Result<Response<AppendAck>, Status> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.append_one(req.into_inner()).map(Response::new)
    }

    async fn append_batch(
        &self,
        req: Request<Streaming<AppendRequest>>,
    ) -> Result<Response<BatchAck>, Status> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut input = req.into_inner();
        let mut count = 0;
        let mut last: Vec<AppendAck> = Vec::new();
        while let Some(r) = input.message().await? {
            let ack = self.append_one(r)?;
            count += 1;
            match last.iter_mut().find(|a| a.stream == ack.stream) {
                Some(a) => a.position = ack.position,
                None => last.push(ack),
            }
        }
        Ok(Response::new(BatchAck { count, last }))
    }

    type AppendStreamStream = Boxed<AppendAck>;

    async fn append_stream(
        &self,
        req: Request<Streaming<AppendRequest>>,
    ) -> Result<Response<Self::AppendStreamStream>, Status> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let service = self.clone();
        let input = req.into_inner();
        // Each record is acknowledged as it arrives, in order; an error ends the call.
        let acks =
            tokio_stream::StreamExt::map(input, move |r| r.and_then(|r| service.append_one(r)));
        Ok(Response::new(Box::pin(acks)))
    }

    type ReadStream = Boxed<Record>;

    async fn read(&self, req: Request<ReadRequest>) -> Result<Response<Self::ReadStream>, Status> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let r = req.into_inner();
        let shard = self.shard(&r.stream).lock().expect("log shard");
        let Some(log) = shard.get(&r.stream) else {
            return Err(Status::not_found(format!("no stream {:?}", r.stream)));
        };
        let max = if r.max == 0 {
            usize::MAX
        } else {
            r.max as usize
        };
        let records: Vec<Result<Record, Status>> = log
            .records
            .iter()
            .filter(|rec| rec.position >= r.from)
            .take(max)
            .cloned()
            .map(Ok)
            .collect();
        drop(shard);
        Ok(Response::new(Box::pin(tokio_stream::iter(records))))
    }
}

/// The tonic service to mount, sharing `state`.
pub fn server(
    state: std::sync::Arc<LogService>,
) -> pb::log_server::LogServer<std::sync::Arc<LogService>> {
    pb::log_server::LogServer::new(state).max_decoding_message_size(64 << 20)
}

/// The reflection service describing the log service.
///
/// # Panics
/// Never: the descriptor set is generated at build time.
pub fn reflection() -> tonic_reflection::server::v1::ServerReflectionServer<
    impl tonic_reflection::server::v1::ServerReflection,
> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(super::schema::LOG_DESCRIPTOR)
        .build_v1()
        .expect("the built-in descriptor set is valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(stream: &str) -> AppendRequest {
        AppendRequest {
            stream: stream.into(),
            data: bytes::Bytes::from_static(b"x"),
            metadata: HashMap::new(),
        }
    }

    #[test]
    fn positions_count_per_stream_and_retention_bounds_memory() {
        let s = LogService::new(3);
        let positions: Vec<u64> = ["a", "a", "b", "a", "a", "a"]
            .iter()
            .map(|n| s.append_one(req(n)).unwrap().position)
            .collect();
        assert_eq!(positions, vec![1, 2, 1, 3, 4, 5]);
        let shard = s.shard("a").lock().unwrap();
        let kept: Vec<u64> = shard["a"].records.iter().map(|r| r.position).collect();
        assert_eq!(kept, vec![3, 4, 5]);
        drop(shard);
        assert_eq!(s.counts().0, 6);
        assert_eq!(s.streams(), 2);
        assert_eq!(
            s.append_one(req("")).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
    }
}
