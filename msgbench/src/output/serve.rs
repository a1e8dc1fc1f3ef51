//! The small HTTP/1.1 server that `--metrics-listen` and `--web` share, on hyper (already in the
//! tree through tonic): one thread of its own with a single-threaded tokio runtime, so neither
//! a scraper nor a browser, nor a crowd of either, ever takes time from the load's threads.
//! A site ([`Site`]) says what each method and path gets; this module owns the connections.
//!
//! The ports may be reachable by anything (a pod's metrics port is), so a client that connects
//! and says nothing, or sends half a request and stops, must not cost a real scrape its answer:
//! - a request's head must arrive within [`Limits::header_timeout`] and fit in [`MAX_HEAD`]
//!   (hyper's own limits: 408-style close, 431); the same timeout closes a keep-alive
//!   connection that sits idle between requests;
//! - at most [`Limits::connections`] are open at once. Past that, the oldest connection with no
//!   request in progress (idle, or still sending its head) is closed to make room, so a fresh
//!   scrape always gets in; only when every connection is busy answering is the newcomer told
//!   503;
//! - an answer whose writes make no progress for [`Limits::write_timeout`] (a page that stopped
//!   reading its event stream) is cut off.
//!
//! Stopping closes every idle connection, lets those answering finish for [`Limits::drain`]
//! (the final event of a page, the last page of a scrape), and then drops the rest, so no client
//! holds up the end of the process.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::TcpListener as StdListener;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Frame, SizeHint};
use hyper::header::{HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use tokio::time::Sleep;

/// A request's head beyond this is refused (431): a scrape's is a few hundred bytes. It is
/// hyper's smallest read buffer, which bounds the head.
pub(crate) const MAX_HEAD: usize = 8 * 1024;
/// How long the accept loop waits after the system refused it a connection (out of files).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(20);

/// The body of an answer: whole, or streamed (a page's events).
pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What happens once an answer has gone to the socket in full.
pub(crate) type OnSent = Box<dyn FnOnce() + Send>;

/// How much the server lets its clients have.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Connections open at once.
    pub connections: usize,
    /// How long a request's head (or the next one, on a kept-alive connection) may take.
    pub header_timeout: Duration,
    /// How long an answer's writes may make no progress.
    pub write_timeout: Duration,
    /// How long, once stopped, answers under way get to finish.
    pub drain: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            connections: 64,
            header_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(5),
            drain: Duration::from_millis(250),
        }
    }
}

/// What a site serves: the answer to a method and a path (without its query string, which
/// scrapers sometimes add and nothing here reads).
pub(crate) trait Site: Send + Sync + 'static {
    fn answer(&self, method: &Method, path: &str) -> Answer;
}

/// A site's answer, and what to do once it has been sent in full.
pub(crate) struct Answer {
    response: Response<Body>,
    on_sent: Option<OnSent>,
}

impl Answer {
    /// 200 with `body` of type `ctype`.
    pub fn ok(ctype: &'static str, body: impl Into<Bytes>) -> Self {
        Self::with_status(StatusCode::OK, ctype, Full::new(body.into()).boxed_unsync())
    }

    /// 200 with a body that streams (`text/event-stream`), never cached.
    pub fn stream(ctype: &'static str, body: Body) -> Self {
        let mut a = Self::with_status(StatusCode::OK, ctype, body);
        let h = a.response.headers_mut();
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        a
    }

    /// `status` with its reason as the body; a 405 names the methods allowed (`allow`).
    pub fn refuse(status: StatusCode, allow: &'static str) -> Self {
        let text = format!("{status}\n");
        let mut a = Self::with_status(
            status,
            "text/plain; charset=utf-8",
            Full::new(Bytes::from(text)).boxed_unsync(),
        );
        if status == StatusCode::METHOD_NOT_ALLOWED {
            let h = a.response.headers_mut();
            h.insert(ALLOW, HeaderValue::from_static(allow));
        }
        a
    }

    /// Runs `f` once the whole answer has been written to the socket (not when the client
    /// goes away before that).
    pub fn on_sent(mut self, f: impl FnOnce() + Send + 'static) -> Self {
        self.on_sent = Some(Box::new(f));
        self
    }

    fn with_status(status: StatusCode, ctype: &'static str, body: Body) -> Self {
        let mut response = Response::new(body);
        *response.status_mut() = status;
        let h = response.headers_mut();
        h.insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
        if let Some(n) = response.body().size_hint().exact() {
            response.headers_mut().insert(CONTENT_LENGTH, n.into());
        }
        Self {
            response,
            on_sent: None,
        }
    }
}

/// The running server; dropping it stops it.
pub(crate) struct Server {
    stop: Option<watch::Sender<bool>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `site` on `listener` from a thread named `name`.
    ///
    /// # Errors
    /// When the listener cannot be handed to the runtime, or the runtime cannot be built.
    pub fn start(
        listener: StdListener,
        name: &str,
        site: Arc<dyn Site>,
        limits: Limits,
    ) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let listener = {
            let _in = runtime.enter();
            TcpListener::from_std(listener)?
        };
        let (stop, stopped) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || runtime.block_on(accept(listener, site, limits, stopped)))?;
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stops taking connections, lets answers under way finish for the drain time, and returns
    /// when the server's thread has ended.
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One connection as the accept loop sees it.
#[derive(Default)]
struct Slot {
    /// Requests being answered on it (at most one: HTTP/1 answers in order).
    answering: AtomicUsize,
    /// Its task has ended.
    closed: AtomicBool,
    /// Tells its task to drop it at once (to make room for a newer one).
    evict: Notify,
    /// What to do once the bytes written so far have reached the socket.
    on_flushed: Mutex<Vec<OnSent>>,
}

impl Slot {
    fn idle(&self) -> bool {
        self.answering.load(Ordering::Relaxed) == 0
    }

    fn flushed(&self) {
        let due = std::mem::take(&mut *self.on_flushed.lock().unwrap_or_else(|p| p.into_inner()));
        for f in due {
            f();
        }
    }
}

async fn accept(
    listener: TcpListener,
    site: Arc<dyn Site>,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let mut slots: VecDeque<Arc<Slot>> = VecDeque::new();
    let mut tasks = JoinSet::new();
    loop {
        let stream = tokio::select! {
            _ = stop.changed() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            got = listener.accept() => match got {
                Ok((stream, _)) => stream,
                // Out of files, or a connection reset before it was taken: it concerns only
                // that connection; a pause keeps an exhausted table from spinning the thread.
                Err(_) => {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        slots.retain(|s| !s.closed.load(Ordering::Relaxed));
        if slots.len() >= limits.connections {
            match slots.iter().position(|s| s.idle()) {
                Some(i) => {
                    if let Some(old) = slots.remove(i) {
                        old.evict.notify_one();
                    }
                }
                None => {
                    tasks.spawn(busy(stream, limits.write_timeout));
                    continue;
                }
            }
        }
        let slot = Arc::new(Slot::default());
        slots.push_back(Arc::clone(&slot));
        tasks.spawn(connection(
            stream,
            slot,
            Arc::clone(&site),
            limits,
            stop.clone(),
        ));
    }
    drop(listener);
    let all_done = async { while tasks.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(limits.drain, all_done).await;
    // Dropping the set aborts the connections still open, which closes their sockets.
}

/// Serves one connection until it closes, is evicted, or the server stops (after what it is
/// answering, for the drain time).
async fn connection(
    stream: TcpStream,
    slot: Arc<Slot>,
    site: Arc<dyn Site>,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    struct Closed(Arc<Slot>);
    impl Drop for Closed {
        fn drop(&mut self) {
            self.0.closed.store(true, Ordering::Relaxed);
        }
    }
    let _closed = Closed(Arc::clone(&slot));
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(Guarded {
        io: stream,
        slot: Arc::clone(&slot),
        write_timeout: limits.write_timeout,
        stalled: None,
    });
    let service = {
        let slot = Arc::clone(&slot);
        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            slot.answering.fetch_add(1, Ordering::Relaxed);
            let a = site.answer(req.method(), req.uri().path());
            let (parts, body) = a.response.into_parts();
            let body = Tracked::new(body, Arc::clone(&slot), a.on_sent);
            std::future::ready(Ok::<_, Infallible>(Response::from_parts(
                parts,
                body.boxed_unsync(),
            )))
        })
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(MAX_HEAD)
        // As the hand-written server wrote them, for clients that match names exactly.
        .title_case_headers(true)
        .keep_alive(true);
    let conn = http.serve_connection(io, service);
    tokio::pin!(conn);
    let mut stopping = *stop.borrow();
    if stopping {
        conn.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            _ = conn.as_mut() => return,
            () = slot.evict.notified() => return,
            _ = stop.changed(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Tells a connection past the bound, when every open one is answering, to come back later.
async fn busy(mut stream: TcpStream, write_timeout: Duration) {
    let text = "503 Service Unavailable: too many connections\n";
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = tokio::time::timeout(write_timeout, async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        // What the client sends is read and dropped until it closes (within the timeout):
        // closing with its request unread would reset the connection, and the client could
        // lose the answer with it.
        let mut sink = [0u8; 1024];
        while tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await? > 0 {}
        io::Result::Ok(())
    })
    .await;
}

/// A response body that tells its connection when it is being answered and, once hyper has
/// taken its last bytes, queues the answer's `on_sent` for the flush that sends them.
struct Tracked {
    inner: Body,
    slot: Arc<Slot>,
    on_sent: Option<OnSent>,
    /// The whole body has been handed to hyper.
    ended: bool,
}

impl Tracked {
    fn new(inner: Body, slot: Arc<Slot>, on_sent: Option<OnSent>) -> Self {
        let ended = hyper::body::Body::is_end_stream(&inner);
        Self {
            inner,
            slot,
            on_sent,
            ended,
        }
    }
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => self.ended = true,
            Poll::Ready(Some(_)) if self.inner.is_end_stream() => self.ended = true,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        // Hyper drops the body once it has taken its last frame, before it flushes them.
        if let (true, Some(f)) = (self.ended, self.on_sent.take()) {
            self.slot
                .on_flushed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(f);
        }
        self.slot.answering.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The socket under hyper: a write that makes no progress for the write timeout fails (hyper
/// then drops the connection), and a completed flush runs what waited for it.
struct Guarded {
    io: TcpStream,
    slot: Arc<Slot>,
    write_timeout: Duration,
    /// Since when writes have made no progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl Guarded {
    /// Turns a write's `Pending` into a timeout once writes have waited too long.
    fn waited<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let timeout = self.write_timeout;
        let stall = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stall.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::ErrorKind::TimedOut.into())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.waited(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.waited(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        if let Poll::Ready(Ok(())) = polled {
            // Hyper flushes its socket only once everything it buffered has been written.
            self.slot.flushed();
        }
        self.waited(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream as StdStream;
    use std::time::Instant;

    /// A generous guard: the tests wait for events, and this only turns a hang into a failure.
    const GUARD: Duration = Duration::from_secs(30);

    /// `/` answers "hello"; `/stream` answers a body that never ends, 64 KiB at a time.
    struct Hello;

    impl Site for Hello {
        fn answer(&self, _method: &Method, path: &str) -> Answer {
            match path {
                "/" => Answer::ok("text/plain", "hello"),
                "/stream" => {
                    let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
                    let s = futures_util::stream::repeat_with(move || {
                        Ok::<_, Infallible>(Frame::data(chunk.clone()))
                    });
                    Answer::stream(
                        "text/plain",
                        http_body_util::StreamBody::new(s).boxed_unsync(),
                    )
                }
                _ => Answer::refuse(StatusCode::NOT_FOUND, ""),
            }
        }
    }

    fn start(limits: Limits) -> (Server, std::net::SocketAddr) {
        let l = StdListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        (
            Server::start(l, "test", Arc::new(Hello), limits).unwrap(),
            addr,
        )
    }

    /// One request, `Connection: close`; the whole answer.
    fn get(addr: std::net::SocketAddr, path: &str) -> String {
        let mut s = StdStream::connect(addr).unwrap();
        s.set_read_timeout(Some(GUARD)).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    /// Reads until the server closes the connection; whether it did (rather than the guard
    /// running out).
    fn closed_by_server(s: &mut StdStream) -> bool {
        s.set_read_timeout(Some(GUARD)).unwrap();
        let mut buf = [0u8; 65536];
        loop {
            match s.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) => return e.kind() == io::ErrorKind::ConnectionReset,
            }
        }
    }

    #[test]
    fn idle_and_half_sent_connections_past_the_bound_give_way_to_a_request() {
        let limits = Limits {
            connections: 4,
            ..Limits::default()
        };
        let (_server, addr) = start(limits);
        let mut crowd: Vec<StdStream> = (0..20)
            .map(|i| {
                let mut s = StdStream::connect(addr).unwrap();
                if i % 2 == 1 {
                    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
                }
                s
            })
            .collect();
        let t = Instant::now();
        let got = get(addr, "/");
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
        assert!(got.ends_with("hello"), "{got}");
        println!("answered past 20 idle connections in {:?}", t.elapsed());
        // The oldest was closed to make room, without an answer.
        assert!(closed_by_server(&mut crowd[0]));
    }

    #[test]
    fn a_head_too_large_or_not_http_is_refused() {
        let (_server, addr) = start(Limits::default());
        let big = format!(
            "GET / HTTP/1.1\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
            "a".repeat(MAX_HEAD * 2)
        );
        let mut s = StdStream::connect(addr).unwrap();
        s.set_read_timeout(Some(GUARD)).unwrap();
        // The server may close before reading all of it.
        let _ = s.write_all(big.as_bytes());
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
        let mut s = StdStream::connect(addr).unwrap();
        s.write_all(b"hello\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{out}");
    }

    #[test]
    fn a_silent_connection_is_closed_after_the_header_timeout() {
        let limits = Limits {
            header_timeout: Duration::from_millis(200),
            ..Limits::default()
        };
        let (_server, addr) = start(limits);
        let mut silent = StdStream::connect(addr).unwrap();
        let mut half = StdStream::connect(addr).unwrap();
        half.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        assert!(closed_by_server(&mut silent));
        assert!(closed_by_server(&mut half));
    }

    #[test]
    fn when_every_connection_is_answering_a_newcomer_is_told_503_until_one_stalls_out() {
        let limits = Limits {
            connections: 1,
            write_timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        let (_server, addr) = start(limits);
        // A stream nobody reads: its writes stall once the socket's buffers are full.
        let mut stuck = StdStream::connect(addr).unwrap();
        stuck
            .write_all(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut first = [0u8; 16];
        stuck.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"HTTP/1.1 200 OK\r");
        let busy = get(addr, "/");
        assert!(busy.starts_with("HTTP/1.1 503 "), "{busy}");
        // Once the stalled stream's writes time out its place is free again.
        let deadline = Instant::now() + GUARD;
        loop {
            let got = get(addr, "/");
            if got.starts_with("HTTP/1.1 200 OK") {
                break;
            }
            assert!(got.starts_with("HTTP/1.1 503 "), "{got}");
            assert!(
                Instant::now() < deadline,
                "the stalled stream was never cut"
            );
        }
        assert!(closed_by_server(&mut stuck));
    }

    #[test]
    fn stopping_ends_a_stream_that_never_ends_after_the_drain() {
        let (mut server, addr) = start(Limits::default());
        let mut s = StdStream::connect(addr).unwrap();
        s.write_all(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut first = [0u8; 16];
        s.read_exact(&mut first).unwrap();
        let idle = StdStream::connect(addr).unwrap();
        server.stop();
        assert!(closed_by_server(&mut s));
        drop(idle);
        assert!(StdStream::connect(addr).is_err(), "still listening");
    }
}
