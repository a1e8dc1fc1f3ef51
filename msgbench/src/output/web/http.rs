//! The page's HTTP: one thread takes connections (each then on a thread of its own, since an
//! event stream lasts as long as its page; at most [`MAX_CONNECTIONS`] at once) and answers
//! `GET /` (the page), `/events` (its Server-Sent Events), `/result.json` and `/report.html`
//! (once the run has ended), and nothing else. The reading of a request and the writing of an
//! answer are `--metrics-listen`'s.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{page, Hub, State, POLL};
use crate::output::metrics::http::{read_head, request_line, respond};

/// Connections served at once; more are answered 503, so a crowd cannot cost the run threads.
const MAX_CONNECTIONS: usize = 16;
/// How long a connection may take to send its request or take an event.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the pages get, once the server stops, to send what they have queued (a browser
/// that reads takes the final result in well under this); a page that stopped reading is then
/// cut off, so it never holds up the end of the process.
const DRAIN: Duration = Duration::from_millis(250);

/// Takes connections until `done`, each on a thread of its own (an event stream lasts as long
/// as its page).
pub(super) fn accept(listener: &TcpListener, hub: &Arc<Hub>, done: &Arc<AtomicBool>) {
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    while !done.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                threads.retain(|t| !t.is_finished());
                if hub.open.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                    busy(stream);
                    continue;
                }
                hub.open.fetch_add(1, Ordering::Relaxed);
                let (page_hub, page_done) = (Arc::clone(hub), Arc::clone(done));
                let t = std::thread::Builder::new()
                    .name("msgbench-web-page".into())
                    .spawn(move || {
                        answer(stream, &page_hub, &page_done);
                        page_hub.open.fetch_sub(1, Ordering::Relaxed);
                    });
                match t {
                    Ok(t) => threads.push(t),
                    Err(_) => {
                        hub.open.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            }
            // Nothing waiting, or a connection that failed before it was accepted.
            Err(_) => std::thread::sleep(POLL),
        }
    }
    hub.close();
    let deadline = Instant::now() + DRAIN;
    while threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    hub.cut();
    for t in threads {
        let _ = t.join();
    }
}

fn busy(mut stream: TcpStream) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(CLIENT_TIMEOUT));
    let text = "503 Service Unavailable: too many pages open\n";
    respond(
        &mut stream,
        "503 Service Unavailable",
        "text/plain; charset=utf-8",
        text.len(),
        text.as_bytes(),
    );
}

/// What a request asks for.
#[derive(Debug, PartialEq)]
enum Route {
    Page,
    Events,
    Json,
    Report,
    Refuse(&'static str),
}

fn route(head: &[u8]) -> Route {
    let Some((method, path)) = request_line(head) else {
        return Route::Refuse("400 Bad Request");
    };
    let path = path.as_str();
    let known = matches!(path, "/" | "/events" | "/result.json" | "/report.html");
    match (method.as_str(), path) {
        ("GET", "/") => Route::Page,
        ("GET", "/events") => Route::Events,
        ("GET", "/result.json") => Route::Json,
        ("GET", "/report.html") => Route::Report,
        _ if known => Route::Refuse("405 Method Not Allowed"),
        _ => Route::Refuse("404 Not Found"),
    }
}

/// Answers one connection. A client that goes away midway is its own problem.
fn answer(mut stream: TcpStream, hub: &Hub, done: &AtomicBool) {
    let ready = stream.set_nonblocking(false).is_ok()
        && stream.set_read_timeout(Some(CLIENT_TIMEOUT)).is_ok()
        && stream.set_write_timeout(Some(CLIENT_TIMEOUT)).is_ok();
    let Some(head) = ready.then(|| read_head(&mut stream)).flatten() else {
        return;
    };
    let file = |pick: fn(&State) -> Option<Arc<[u8]>>| pick(&hub.lock());
    match route(&head) {
        Route::Page => send(
            &mut stream,
            "text/html; charset=utf-8",
            page::page().as_bytes(),
        ),
        Route::Events => events(stream, hub, done),
        Route::Json => match file(|s| s.json.clone()) {
            Some(b) => send(&mut stream, "application/json", &b),
            None => refuse(&mut stream, "404 Not Found"),
        },
        Route::Report => match file(|s| s.report.clone()) {
            Some(b) => send(&mut stream, "text/html; charset=utf-8", &b),
            None => refuse(&mut stream, "404 Not Found"),
        },
        Route::Refuse(status) => refuse(&mut stream, status),
    }
}

fn send(stream: &mut TcpStream, ctype: &str, body: &[u8]) {
    respond(stream, "200 OK", ctype, body.len(), body);
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

fn refuse(stream: &mut TcpStream, status: &str) {
    let text = format!("{status}\n");
    respond(
        stream,
        status,
        "text/plain; charset=utf-8",
        text.len(),
        text.as_bytes(),
    );
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// The event stream of one page, until it goes away or the server stops. A comment line every
/// second without an event finds a page that is gone.
fn events(mut stream: TcpStream, hub: &Hub, done: &AtomicBool) {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\
                Connection: close\r\n\r\nretry: 1000\n\n";
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    let Some(id) = hub.track(&stream) else {
        return;
    };
    stream_events(&mut stream, &hub.subscribe(), done);
    hub.forget(id);
}

/// Writes a page's events until the hub closes its channel (once the server stops, after what
/// was queued), the page goes, or, for a page that opened just as the server stopped, the
/// next idle second.
fn stream_events(stream: &mut TcpStream, rx: &Receiver<Arc<str>>, done: &AtomicBool) {
    loop {
        let sent = match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(e) => write!(stream, "data: {e}\n\n"),
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) if done.load(Ordering::Relaxed) => return,
            Err(RecvTimeoutError::Timeout) => stream.write_all(b": idle\n\n"),
        };
        if sent.and_then(|()| stream.flush()).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_the_page_its_stream_and_the_downloads() {
        assert_eq!(route(b"GET / HTTP/1.1"), Route::Page);
        assert_eq!(route(b"GET /events?x HTTP/1.1"), Route::Events);
        assert_eq!(route(b"GET /result.json HTTP/1.0"), Route::Json);
        assert_eq!(route(b"GET /report.html HTTP/1.1"), Route::Report);
        assert_eq!(
            route(b"POST / HTTP/1.1"),
            Route::Refuse("405 Method Not Allowed")
        );
        assert_eq!(route(b"GET /x HTTP/1.1"), Route::Refuse("404 Not Found"));
        assert_eq!(route(b"hello"), Route::Refuse("400 Bad Request"));
    }
}
