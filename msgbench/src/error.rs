//! Error kinds and exit codes: what can go wrong, as values code can branch on, and the one
//! table that maps each outcome to the process's exit status.
//!
//! Two families live here. [`Error`] ends a run (bad input, no server, a refused connection).
//! [`ErrorKind`] is counted during a run (a slow-consumer notice, a dropped connection) and lands
//! in the result's `errors` map; a run with counted errors still produces a result.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Exit statuses. The README's table is written from these; keep them in step.
pub mod exit {
    /// The run completed and nothing was lost.
    pub const OK: u8 = 0;
    /// An unexpected failure during the run (I/O error, protocol violation by the server).
    pub const FAILURE: u8 = 1;
    /// Bad input or an unusable setup: a malformed flag or combination, a size above the
    /// server's limit, no `nats-server` to start, an output file that cannot be written or a
    /// `--metrics-listen` address that cannot be listened on.
    pub const USAGE: u8 = 2;
    /// The run completed but messages were lost, and `--allow-loss` was not given.
    pub const LOSS: u8 = 3;
    /// No connection could be made: nothing listening, no answer within the connect timeout, or
    /// the server refused the handshake (authorization, TLS required, too many connections) or a
    /// subscription the run needs.
    pub const CONNECT: u8 = 4;
    /// A connection was lost during the run and not recovered (no `--reconnect`, or it gave up).
    pub const DISCONNECTED: u8 = 5;
    /// The server stopped responding during the run: a write made no progress, a flush or a
    /// keepalive PING went unanswered.
    pub const STALLED: u8 = 6;
    /// The peer broke the NATS protocol: it is not a NATS server, or it sent garbage.
    pub const PROTOCOL: u8 = 7;
    /// The run completed, but a `--threshold` failed.
    pub const THRESHOLD: u8 = 8;
    /// A run on agents (`--agents`) could not have or keep its agents: too few answered, one
    /// refused the plan, or one went silent mid-run (the partial result is written, naming it).
    pub const AGENT: u8 = 9;
    /// The run completed, but a fault it was asked to inject (`--fault`, `--nemesis`) never
    /// was: the run ended first, or its target was not found within the wait; unless
    /// `--allow-missed-faults`. A run asked to test a fault has not tested it.
    pub const FAULT_MISSED: u8 = 10;
    /// Interrupted by SIGINT or SIGTERM; partial results were written.
    pub const INTERRUPTED: u8 = 130;
}

/// A failure that ends a run before or instead of producing a result.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag or value is wrong; the message names it.
    #[error("{0}")]
    Usage(String),
    /// No TCP connection could be made to any of the given servers.
    #[error("cannot connect to {url}: {reason}")]
    Connect { url: String, reason: String },
    /// After the handshake, the server answered something the run needs (a subscription, an
    /// API request) with `-ERR`: not retried, as no retry would be answered otherwise.
    #[error("{url}: {reason}")]
    Refused { url: String, reason: String },
    /// The server answered the handshake with `-ERR`.
    #[error("{url} refused the connection: {kind} ({text})")]
    Rejected {
        url: String,
        kind: ServerErrorKind,
        text: String,
    },
    /// `--size` is larger than the server accepts.
    #[error("--size {size} is larger than the server's max_payload of {max_payload} bytes")]
    PayloadTooLarge { size: usize, max_payload: usize },
    /// The embedded server could not be found or started.
    #[error("{0}")]
    EmbeddedServer(String),
    /// The server broke the protocol.
    #[error("protocol error from {url}: {source}")]
    Protocol { url: String, source: ProtocolError },
    /// A JetStream API call failed before or after the load (stream setup, state).
    #[error("JetStream: {text}")]
    JetStream { kind: ErrorKind, text: String },
    /// An I/O failure outside the load loops, with what was being done.
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// An output file given by `flag` cannot be written: found before anything runs, so the
    /// run is refused rather than measured and then lost.
    #[error("cannot write {flag} file '{path}': {reason}")]
    Destination {
        flag: &'static str,
        path: String,
        reason: String,
    },
    /// The address `flag` names cannot be listened on (in use, not this machine's, not
    /// allowed): found before anything runs, like a [`Error::Destination`].
    #[error("cannot listen on {addr} for {flag}: {reason}")]
    Listen {
        flag: &'static str,
        addr: String,
        reason: String,
    },
    /// A run on agents could not start or lost an agent; the message names the agent.
    #[error("{0}")]
    Agent(String),
    /// A result file could not be written after the run; the result went to `saved` instead,
    /// so the measurement is not lost.
    #[error("{context}: {source}; the result was written to '{saved}' instead")]
    Rescued {
        context: String,
        source: std::io::Error,
        saved: String,
    },
}

impl Error {
    /// The exit status this failure maps to.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_)
            | Error::PayloadTooLarge { .. }
            | Error::EmbeddedServer(_)
            | Error::JetStream { .. }
            | Error::Destination { .. }
            | Error::Listen { .. } => exit::USAGE,
            Error::Connect { .. } | Error::Rejected { .. } | Error::Refused { .. } => exit::CONNECT,
            Error::Protocol { .. } => exit::PROTOCOL,
            Error::Io { .. } | Error::Rescued { .. } => exit::FAILURE,
            Error::Agent(_) => exit::AGENT,
        }
    }

    /// A usage error naming a flag and what is wrong with its value.
    pub fn flag(flag: &str, value: &str, why: impl fmt::Display) -> Self {
        Error::Usage(format!("invalid value '{value}' for {flag}: {why}"))
    }

    /// The server answered something the run needs (a subscription, an API request) with
    /// `-ERR`: a permissions violation leaves the connection up, so the run would go on
    /// unanswered. `why` is the server's text, which names the subject.
    pub fn refused(url: impl fmt::Display, why: &str) -> Self {
        let reason = if ServerErrorKind::from_text(why.as_bytes())
            == ServerErrorKind::PermissionsViolation
        {
            format!("the server refused a permission the run needs: {why}")
        } else {
            format!("the server answered with an error: {why}")
        };
        Error::Refused {
            url: url.to_string(),
            reason,
        }
    }

    /// Wraps an I/O error with what was being attempted.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The kinds of `-ERR` a NATS server sends, recognised from their text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerErrorKind {
    SlowConsumer,
    AuthorizationViolation,
    AuthenticationTimeout,
    AuthenticationExpired,
    MaxPayload,
    MaxConnections,
    MaxSubscriptions,
    ParserError,
    UnknownOperation,
    StaleConnection,
    PermissionsViolation,
    InvalidSubject,
    TlsRequired,
    Other,
}

impl ServerErrorKind {
    /// The text of a `-ERR` as the server meant it: without its quotes and surrounding space.
    pub fn shown(text: &[u8]) -> String {
        String::from_utf8_lossy(text)
            .trim()
            .trim_matches('\'')
            .to_string()
    }

    /// Classifies the text of a `-ERR` (without quotes). Matching is on stable phrases the server
    /// has used for years, case-insensitively; anything unrecognised is `Other` and still counted.
    pub fn from_text(text: &[u8]) -> Self {
        let t = String::from_utf8_lossy(text).to_ascii_lowercase();
        let has = |p: &str| t.contains(p);
        if has("slow consumer") {
            Self::SlowConsumer
        } else if has("authorization violation") {
            Self::AuthorizationViolation
        } else if has("authentication timeout") {
            Self::AuthenticationTimeout
        } else if has("expired") {
            Self::AuthenticationExpired
        } else if has("maximum payload") {
            Self::MaxPayload
        } else if has("maximum connections") {
            Self::MaxConnections
        } else if has("maximum subscriptions") {
            Self::MaxSubscriptions
        } else if has("parser error") {
            Self::ParserError
        } else if has("unknown protocol operation") {
            Self::UnknownOperation
        } else if has("stale connection") {
            Self::StaleConnection
        } else if has("permissions violation") {
            Self::PermissionsViolation
        } else if has("invalid subject") {
            Self::InvalidSubject
        } else if has("tls required") || has("secure connection") {
            Self::TlsRequired
        } else {
            Self::Other
        }
    }

    /// Whether the server closes the connection after sending this error. Permission and subject
    /// errors are reported but the connection stays up.
    pub fn closes_connection(self) -> bool {
        !matches!(
            self,
            Self::PermissionsViolation | Self::InvalidSubject | Self::Other
        )
    }

    /// The counted kind for this server error.
    pub fn counted(self) -> ErrorKind {
        match self {
            Self::SlowConsumer => ErrorKind::SlowConsumer,
            Self::AuthorizationViolation
            | Self::AuthenticationTimeout
            | Self::AuthenticationExpired => ErrorKind::Authorization,
            Self::MaxPayload => ErrorKind::MaxPayload,
            Self::MaxConnections | Self::MaxSubscriptions => ErrorKind::ServerLimit,
            Self::ParserError | Self::UnknownOperation => ErrorKind::ParserError,
            Self::StaleConnection => ErrorKind::StaleConnection,
            Self::PermissionsViolation => ErrorKind::PermissionsViolation,
            Self::InvalidSubject => ErrorKind::InvalidSubject,
            Self::TlsRequired => ErrorKind::TlsRequired,
            Self::Other => ErrorKind::ServerOther,
        }
    }
}

impl fmt::Display for ServerErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.counted().as_str())
    }
}

/// What is counted in a result's `errors` map. The names are part of the result schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(usize)]
pub enum ErrorKind {
    SlowConsumer,
    Authorization,
    MaxPayload,
    ServerLimit,
    ParserError,
    StaleConnection,
    PermissionsViolation,
    InvalidSubject,
    TlsRequired,
    ServerOther,
    /// The connection ended without the client asking (EOF or reset).
    Disconnected,
    /// The server sent bytes that are not the NATS protocol.
    ProtocolError,
    /// A write or read failed for another reason.
    Io,
    /// A flush (PING/PONG) was not answered within `--timeout`.
    FlushTimeout,
    /// A write made no progress for `--timeout`: the server stopped reading.
    WriteStalled,
    /// A request got no reply within `--timeout`.
    RequestTimeout,
    /// A request was in flight when its connection was lost: the reply it waited for can no
    /// longer come (a reconnect makes a new connection; the server forgot the old one).
    LostInFlight,
    /// The server said no one is listening on a request's subject.
    NoResponders,
    /// Keepalive PINGs went unanswered: the server (or the path to it) stopped responding.
    PingTimeout,
    /// The subscriber fell behind: its socket's receive queue passed the pending limit. The
    /// server may cut such a client off as a slow consumer next.
    FellBehind,
    /// JetStream: no stream holds the subject or name.
    JsStreamNotFound,
    /// JetStream: an expected-last-sequence check failed.
    JsWrongLastSequence,
    /// JetStream: the stream refused a message at its byte or message limit (discard new).
    JsStreamFull,
    /// JetStream: a direct get found no message (a KV key with no value).
    JsNotFound,
    /// JetStream: the server ended a pull request with a 409 status (consumer deleted, too
    /// many waiting pulls, …).
    JsPullRejected,
    /// JetStream: any other API error.
    JsOther,
    /// gRPC: a call ended with a status other than OK (the result's `grpc.status` counts them
    /// by code).
    RpcFailed,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 27] = [
        ErrorKind::SlowConsumer,
        ErrorKind::Authorization,
        ErrorKind::MaxPayload,
        ErrorKind::ServerLimit,
        ErrorKind::ParserError,
        ErrorKind::StaleConnection,
        ErrorKind::PermissionsViolation,
        ErrorKind::InvalidSubject,
        ErrorKind::TlsRequired,
        ErrorKind::ServerOther,
        ErrorKind::Disconnected,
        ErrorKind::ProtocolError,
        ErrorKind::Io,
        ErrorKind::FlushTimeout,
        ErrorKind::WriteStalled,
        ErrorKind::RequestTimeout,
        ErrorKind::LostInFlight,
        ErrorKind::NoResponders,
        ErrorKind::PingTimeout,
        ErrorKind::FellBehind,
        ErrorKind::JsStreamNotFound,
        ErrorKind::JsWrongLastSequence,
        ErrorKind::JsStreamFull,
        ErrorKind::JsNotFound,
        ErrorKind::JsPullRejected,
        ErrorKind::JsOther,
        ErrorKind::RpcFailed,
    ];

    /// The kind whose result key is `name` (what [`ErrorKind::as_str`] gives), if any.
    pub fn named(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The key used in results.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::SlowConsumer => "slow_consumer",
            ErrorKind::Authorization => "authorization",
            ErrorKind::MaxPayload => "max_payload",
            ErrorKind::ServerLimit => "server_limit",
            ErrorKind::ParserError => "parser_error",
            ErrorKind::StaleConnection => "stale_connection",
            ErrorKind::PermissionsViolation => "permissions_violation",
            ErrorKind::InvalidSubject => "invalid_subject",
            ErrorKind::TlsRequired => "tls_required",
            ErrorKind::ServerOther => "server_other",
            ErrorKind::Disconnected => "disconnected",
            ErrorKind::ProtocolError => "protocol_error",
            ErrorKind::Io => "io",
            ErrorKind::FlushTimeout => "flush_timeout",
            ErrorKind::WriteStalled => "write_stalled",
            ErrorKind::RequestTimeout => "request_timeout",
            ErrorKind::LostInFlight => "lost_in_flight",
            ErrorKind::NoResponders => "no_responders",
            ErrorKind::PingTimeout => "ping_timeout",
            ErrorKind::FellBehind => "fell_behind",
            ErrorKind::JsStreamNotFound => "js_stream_not_found",
            ErrorKind::JsWrongLastSequence => "js_wrong_last_sequence",
            ErrorKind::JsStreamFull => "js_stream_full",
            ErrorKind::JsNotFound => "js_not_found",
            ErrorKind::JsPullRejected => "js_pull_rejected",
            ErrorKind::JsOther => "js_other",
            ErrorKind::RpcFailed => "rpc_failed",
        }
    }

    /// The exit status of a run that a connection failure of this kind ended.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::ProtocolError => exit::PROTOCOL,
            ErrorKind::WriteStalled
            | ErrorKind::FlushTimeout
            | ErrorKind::PingTimeout
            | ErrorKind::StaleConnection => exit::STALLED,
            ErrorKind::Io => exit::FAILURE,
            // Whatever the server said last (slow consumer, authorization expired, ...), the
            // connection is what the run lost.
            _ => exit::DISCONNECTED,
        }
    }
}

/// What happened to a run's connections, shared by all of them: a lock-free counter per
/// [`ErrorKind`], the connections opened, each reconnect's duration, and the failure (if any)
/// that a connection did not recover from.
#[derive(Debug, Default)]
pub struct ErrorCounts {
    counts: [AtomicU64; ErrorKind::ALL.len()],
    opened: AtomicU64,
    gave_up: AtomicU64,
    /// Write syscalls on the connections' sockets after the handshake.
    writes: AtomicU64,
    /// Time from losing a connection to the new one being ready, in ns, in order.
    reconnects: Mutex<Vec<u64>>,
    /// `ErrorKind as usize + 1` of the first unrecovered failure; 0 while there is none.
    fatal: AtomicUsize,
    /// The text of the first permissions violation: it names what the server refused, which a
    /// count cannot.
    first_refusal: Mutex<Option<String>>,
}

/// Reconnect durations kept per run: enough for any fault-injection run, bounded for a flapping
/// server over a long soak.
const MAX_RECONNECTS_KEPT: usize = 10_000;

impl ErrorCounts {
    pub fn add(&self, kind: ErrorKind) {
        self.counts[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `n` errors of one kind at once.
    pub fn add_n(&self, kind: ErrorKind, n: u64) {
        self.counts[kind as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// A connection completed its handshake.
    pub fn opened(&self) {
        self.opened.fetch_add(1, Ordering::Relaxed);
    }

    /// A connection's write half made one write syscall.
    pub fn wrote(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    /// Write syscalls made so far, over all connections.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// A lost connection was replaced after `took`.
    pub fn reconnected(&self, took: std::time::Duration) {
        let mut r = self.reconnects.lock().unwrap_or_else(|p| p.into_inner());
        if r.len() < MAX_RECONNECTS_KEPT {
            r.push(took.as_nanos() as u64);
        }
    }

    /// A connection ended with `kind` and was not (or could not be) replaced: the run failed.
    /// The first such failure is the one the exit status reports.
    pub fn failed(&self, kind: ErrorKind, reconnect_tried: bool) {
        if reconnect_tried {
            self.gave_up.fetch_add(1, Ordering::Relaxed);
        }
        let _ =
            self.fatal
                .compare_exchange(0, kind as usize + 1, Ordering::AcqRel, Ordering::Acquire);
    }

    /// A `-ERR` the server sent: counted by kind, and the first permissions violation's text kept.
    pub fn server_error(&self, text: &[u8]) {
        let kind = ServerErrorKind::from_text(text);
        self.add(kind.counted());
        if kind == ServerErrorKind::PermissionsViolation {
            let mut r = self.first_refusal.lock().unwrap_or_else(|p| p.into_inner());
            r.get_or_insert_with(|| ServerErrorKind::shown(text));
        }
    }

    /// The first permissions violation the server sent, as it wrote it.
    pub fn first_refusal(&self) -> Option<String> {
        (self.first_refusal.lock().unwrap_or_else(|p| p.into_inner())).clone()
    }

    /// The failure that ended a connection for good, if any.
    pub fn fatal(&self) -> Option<ErrorKind> {
        match self.fatal.load(Ordering::Acquire) {
            0 => None,
            n => Some(ErrorKind::ALL[n - 1]),
        }
    }

    /// Connections opened, reconnect attempts that gave up, and each reconnect's duration.
    pub fn connection_events(&self) -> (u64, u64, Vec<u64>) {
        (
            self.opened.load(Ordering::Relaxed),
            self.gave_up.load(Ordering::Relaxed),
            self.reconnects
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }

    /// The non-zero counts, in a stable order.
    pub fn snapshot(&self) -> Vec<(ErrorKind, u64)> {
        ErrorKind::ALL
            .iter()
            .map(|k| (*k, self.counts[*k as usize].load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_server_error_is_counted_and_the_first_refusal_kept_as_written() {
        let e = ErrorCounts::default();
        e.server_error(b"'Slow Consumer'");
        assert_eq!(e.first_refusal(), None);
        e.server_error(b"'Permissions Violation for Subscription to \"a\"' ");
        e.server_error(b"'Permissions Violation for Publish to \"b\"'");
        assert_eq!(
            e.first_refusal().as_deref(),
            Some("Permissions Violation for Subscription to \"a\"")
        );
        assert_eq!(
            e.snapshot(),
            [
                (ErrorKind::SlowConsumer, 1),
                (ErrorKind::PermissionsViolation, 2)
            ]
        );
    }

    #[test]
    fn classifies_server_error_texts() {
        let cases: [(&[u8], ServerErrorKind); 8] = [
            (b"Slow Consumer", ServerErrorKind::SlowConsumer),
            (
                b"Authorization Violation",
                ServerErrorKind::AuthorizationViolation,
            ),
            (b"Maximum Payload Violation", ServerErrorKind::MaxPayload),
            (
                b"Unknown Protocol Operation",
                ServerErrorKind::UnknownOperation,
            ),
            (b"Stale Connection", ServerErrorKind::StaleConnection),
            (
                b"Permissions Violation for Publish to \"x\"",
                ServerErrorKind::PermissionsViolation,
            ),
            (
                b"maximum connections exceeded",
                ServerErrorKind::MaxConnections,
            ),
            (b"something new", ServerErrorKind::Other),
        ];
        for (text, kind) in cases {
            assert_eq!(ServerErrorKind::from_text(text), kind, "{text:?}");
        }
        assert!(!ServerErrorKind::PermissionsViolation.closes_connection());
        assert!(ServerErrorKind::SlowConsumer.closes_connection());
    }

    #[test]
    fn error_counts_snapshot_only_non_zero_in_order() {
        let c = ErrorCounts::default();
        c.add(ErrorKind::Disconnected);
        c.add(ErrorKind::SlowConsumer);
        c.add(ErrorKind::Disconnected);
        assert_eq!(
            c.snapshot(),
            vec![(ErrorKind::SlowConsumer, 1), (ErrorKind::Disconnected, 2)]
        );
    }

    #[test]
    fn every_kind_is_found_by_its_name() {
        for k in ErrorKind::ALL {
            assert_eq!(ErrorKind::named(k.as_str()), Some(k));
        }
        assert_eq!(ErrorKind::named("driver_other"), None);
    }

    #[test]
    fn exit_codes_follow_the_table() {
        assert_eq!(Error::Usage("x".into()).exit_code(), exit::USAGE);
        assert_eq!(
            Error::io("x", std::io::Error::other("y")).exit_code(),
            exit::FAILURE
        );
    }
}

/// Why bytes from the server could not be parsed. Each is fatal for the connection: after a
/// framing error there is no reliable way to find the next operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("unknown operation {0:?} from server")]
    UnknownOp(String),
    #[error("malformed {0} arguments from server")]
    MalformedArgs(&'static str),
    #[error("control line longer than {limit} bytes from server")]
    ControlLineTooLong { limit: usize },
    #[error("message of {size} bytes announced by server exceeds {limit}")]
    MessageTooLarge { size: usize, limit: usize },
    #[error("message payload not terminated by CRLF")]
    MissingPayloadEnd,
    #[error("control line ended by LF without CR")]
    MissingCr,
}
