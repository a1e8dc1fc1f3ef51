//! The little HTTP that `--metrics-listen` needs: one thread answers `GET /metrics` (and `HEAD`)
//! with the page last published, one request per connection, and nothing else (404 for other
//! paths, 405 for other methods, 400 for what is not HTTP).
//!
//! A scraper asks once every few seconds, so a whole HTTP stack would buy nothing here: the
//! thread takes connections one at a time, with read and write timeouts so that a client that
//! connects and says nothing holds it for two seconds at most. It never touches the load; the
//! page it sends was made by the live view's thread once per tick.

use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The OpenMetrics text format's media type (OpenMetrics 1.0, section "Overall structure").
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How long a connection may take to send its request or take the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);
/// A request's head beyond this is not a scrape.
const MAX_HEAD: usize = 8 * 1024;
/// How often the idle thread looks for a connection or the order to stop.
const POLL: Duration = Duration::from_millis(20);

/// The page on offer and which version of it a scraper last took.
#[derive(Debug, Default)]
pub struct Board {
    page: Mutex<Page>,
    /// The highest page number sent in full to a scraper.
    served: AtomicU64,
}

#[derive(Debug, Clone)]
struct Page {
    /// Counts the pages published, from 1; 0 is the page before the first tick.
    number: u64,
    text: Arc<str>,
}

impl Default for Page {
    fn default() -> Self {
        // Before the first tick there are no figures: a valid, empty exposition.
        Self {
            number: 0,
            text: Arc::from("# EOF\n"),
        }
    }
}

impl Board {
    /// Puts up a new page; returns its number.
    pub fn publish(&self, text: String) -> u64 {
        let mut page = self.page.lock().unwrap_or_else(|p| p.into_inner());
        page.number += 1;
        page.text = Arc::from(text);
        page.number
    }

    /// The number of the page on offer (0 before the first).
    pub fn published(&self) -> u64 {
        self.current().number
    }

    /// Whether page `number` (or a later one) has been sent to a scraper.
    pub fn taken(&self, number: u64) -> bool {
        self.served.load(Ordering::Relaxed) >= number
    }

    fn current(&self) -> Page {
        self.page.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Serves `board` on `listener` until `done` is raised.
pub fn serve(listener: TcpListener, board: Arc<Board>, done: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("msgbench-metrics".into())
        .spawn(move || {
            // Non-blocking accept, so the order to stop is seen within `POLL`.
            if listener.set_nonblocking(true).is_err() {
                return;
            }
            while !done.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => answer(stream, &board),
                    Err(e) if e.kind() == IoKind::WouldBlock => std::thread::sleep(POLL),
                    // A connection that failed before it was accepted (reset) concerns only it.
                    Err(_) => std::thread::sleep(POLL),
                }
            }
        })
        .expect("spawn the metrics thread")
}

/// Answers one request on `stream`. A client that goes away midway is its own problem.
fn answer(mut stream: TcpStream, board: &Board) {
    let ready = stream.set_nonblocking(false).is_ok()
        && stream.set_read_timeout(Some(CLIENT_TIMEOUT)).is_ok()
        && stream.set_write_timeout(Some(CLIENT_TIMEOUT)).is_ok();
    if !ready {
        return;
    }
    let Some(head) = read_head(&mut stream) else {
        return;
    };
    let page = board.current();
    match route(&head) {
        Route::Metrics { with_body } => {
            let body = if with_body { page.text.as_bytes() } else { b"" };
            let sent = respond(&mut stream, "200 OK", CONTENT_TYPE, page.text.len(), body);
            // Marked before the connection is closed: a scraper that has read the whole page
            // (it sees the close) finds it marked as taken.
            if sent && with_body {
                board.served.fetch_max(page.number, Ordering::Relaxed);
            }
        }
        Route::Refuse(status) => {
            let text = format!("{status}\n");
            let ctype = "text/plain; charset=utf-8";
            respond(&mut stream, status, ctype, text.len(), text.as_bytes());
        }
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// Reads up to the blank line that ends a request's head (anything after it, a body, is
/// ignored: a scrape has none); `None` if the client stops first or takes too long. A head
/// longer than [`MAX_HEAD`] is returned as it is, to be refused.
pub(crate) fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    loop {
        if let Some(end) = end_of_head(&head) {
            head.truncate(end);
            return Some(head);
        }
        if head.len() > MAX_HEAD {
            return Some(head);
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
}

/// Where the head ends: after a blank line (CRLF as HTTP says, or a bare LF as some tools send).
fn end_of_head(bytes: &[u8]) -> Option<usize> {
    (0..bytes.len()).find_map(|i| {
        let rest = &bytes[i..];
        if rest.starts_with(b"\n\r\n") {
            Some(i + 3)
        } else if rest.starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        }
    })
}

#[derive(Debug, PartialEq)]
enum Route {
    Metrics { with_body: bool },
    Refuse(&'static str),
}

/// The method and path (without its query string) of an HTTP/1 request's head; none for one
/// that is not a request line of three parts.
pub(crate) fn request_line(head: &[u8]) -> Option<(String, String)> {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.trim_end_matches('\r').split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let path = target.split('?').next().unwrap_or_default();
    version
        .starts_with("HTTP/1.")
        .then(|| (method.to_string(), path.to_string()))
}

/// What a request's head asks for. The query string is ignored (some scrapers add one).
fn route(head: &[u8]) -> Route {
    let Some((method, path)) = request_line(head).filter(|_| head.len() <= MAX_HEAD) else {
        return Route::Refuse("400 Bad Request");
    };
    match (method.as_str(), path.as_str()) {
        ("GET", "/metrics") => Route::Metrics { with_body: true },
        ("HEAD", "/metrics") => Route::Metrics { with_body: false },
        (_, "/metrics") => Route::Refuse("405 Method Not Allowed"),
        _ => Route::Refuse("404 Not Found"),
    }
}

/// Writes a whole response; true when all of it went out. The caller closes the connection.
pub(crate) fn respond(
    stream: &mut TcpStream,
    status: &str,
    ctype: &str,
    length: usize,
    body: &[u8],
) -> bool {
    let allow = if status.starts_with("405") {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {length}\r\n{allow}\
         Connection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).is_ok()
        && stream.write_all(body).is_ok()
        && stream.flush().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(addr: std::net::SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_the_last_page_and_refuses_the_rest() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let board = Arc::new(Board::default());
        let done = Arc::new(AtomicBool::new(false));
        let thread = serve(listener, Arc::clone(&board), Arc::clone(&done));

        let before = ask(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(before.starts_with("HTTP/1.1 200 OK\r\n"), "{before}");
        assert!(before.ends_with("\r\n\r\n# EOF\n"), "{before}");
        assert!(before.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")));

        let n = board.publish("a 1\n# EOF\n".into());
        assert!(!board.taken(n));
        let got = ask(addr, "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
        assert!(got.ends_with("\r\n\r\na 1\n# EOF\n"), "{got}");
        assert!(got.contains("Content-Length: 10\r\n"), "{got}");
        assert!(board.taken(n));

        let head = ask(addr, "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 200 OK") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        let missing = ask(addr, "GET / HTTP/1.1\r\n\r\n");
        assert!(
            missing.starts_with("HTTP/1.1 404 Not Found\r\n"),
            "{missing}"
        );
        let post = ask(addr, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
        assert!(
            post.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
            "{post}"
        );
        assert!(post.contains("Allow: GET, HEAD\r\n"), "{post}");
        let junk = ask(addr, "hello\r\n\r\n");
        assert!(junk.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{junk}");

        done.store(true, Ordering::Relaxed);
        thread.join().unwrap();
    }

    #[test]
    fn a_silent_client_does_not_hold_the_server_for_long() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let board = Arc::new(Board::default());
        let done = Arc::new(AtomicBool::new(false));
        let thread = serve(listener, board, Arc::clone(&done));
        let _silent = TcpStream::connect(addr).unwrap();
        let t = std::time::Instant::now();
        let got = ask(addr, "GET /metrics HTTP/1.1\r\n\r\n");
        assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
        // The silent client held the server for CLIENT_TIMEOUT at most; one it held until it
        // left would hold it for good. The slack is a busy machine's, several times over.
        assert!(t.elapsed() < CLIENT_TIMEOUT * 5);
        done.store(true, Ordering::Relaxed);
        thread.join().unwrap();
    }
}
