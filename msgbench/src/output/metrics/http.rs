//! What `--metrics-listen` serves: `GET /metrics` (and `HEAD`) answered with the page last
//! published, and nothing else (404 for other paths, 405 for other methods; what is not HTTP
//! gets hyper's 400). The connections, their timeouts and their bound are the shared server's
//! ([`crate::output::serve`]); the page it sends was made by the live view's thread once per
//! tick, so a scrape costs the run nothing but a copy of a reference.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use hyper::{Method, StatusCode};

use crate::output::serve::{Answer, Site};

/// The OpenMetrics text format's media type (OpenMetrics 1.0, section "Overall structure").
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

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
    text: Bytes,
}

impl Default for Page {
    fn default() -> Self {
        // Before the first tick there are no figures: a valid, empty exposition.
        Self {
            number: 0,
            text: Bytes::from_static(b"# EOF\n"),
        }
    }
}

impl Board {
    /// Puts up a new page; returns its number.
    pub fn publish(&self, text: String) -> u64 {
        let mut page = self.page.lock().unwrap_or_else(|p| p.into_inner());
        page.number += 1;
        page.text = Bytes::from(text);
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

/// The `/metrics` site over `board`.
pub struct Scrapes(pub Arc<Board>);

impl Site for Scrapes {
    fn answer(&self, method: &Method, path: &str) -> Answer {
        if path != "/metrics" {
            return Answer::refuse(StatusCode::NOT_FOUND, "");
        }
        let page = self.0.current();
        match *method {
            Method::GET => {
                let board = Arc::clone(&self.0);
                // Marked once the whole page has reached the socket: a scraper that has read it
                // finds it marked as taken.
                Answer::ok(CONTENT_TYPE, page.text).on_sent(move || {
                    board.served.fetch_max(page.number, Ordering::Relaxed);
                })
            }
            // The same head, with no body (hyper leaves it out), and nothing marked as taken.
            Method::HEAD => Answer::ok(CONTENT_TYPE, page.text),
            _ => Answer::refuse(StatusCode::METHOD_NOT_ALLOWED, "GET, HEAD"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::serve::{Limits, Server};
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// One request on a connection of its own; the answer, read until the server closes.
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
        let site = Arc::new(Scrapes(Arc::clone(&board)));
        let mut server = Server::start(listener, "test", site, Limits::default()).unwrap();
        let close = "Connection: close\r\n\r\n";

        let before = ask(
            addr,
            &format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{close}"),
        );
        assert!(before.starts_with("HTTP/1.1 200 OK\r\n"), "{before}");
        assert!(before.ends_with("\r\n\r\n# EOF\n"), "{before}");
        assert!(before.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")));

        let n = board.publish("a 1\n# EOF\n".into());
        assert!(!board.taken(n));
        // HTTP/1.0 closes after one answer; a query string is ignored.
        let got = ask(addr, "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
        assert!(got.ends_with("\r\n\r\na 1\n# EOF\n"), "{got}");
        assert!(got.contains("Content-Length: 10\r\n"), "{got}");
        assert!(board.taken(n));

        let n = board.publish("b 1\n# EOF\n".into());
        let head = ask(addr, &format!("HEAD /metrics HTTP/1.1\r\n{close}"));
        assert!(
            head.starts_with("HTTP/1.1 200 OK") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        assert!(head.contains("Content-Length: 10\r\n"), "{head}");
        assert!(!board.taken(n), "a HEAD takes no page");
        let missing = ask(addr, &format!("GET / HTTP/1.1\r\n{close}"));
        assert!(
            missing.starts_with("HTTP/1.1 404 Not Found\r\n"),
            "{missing}"
        );
        let post = ask(
            addr,
            &format!("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n{close}"),
        );
        assert!(
            post.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
            "{post}"
        );
        assert!(post.contains("Allow: GET, HEAD\r\n"), "{post}");
        let junk = ask(addr, "hello\r\n\r\n");
        assert!(junk.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{junk}");
        server.stop();
    }

    /// A scraper that keeps its connection (as Prometheus does) gets a page per request on it,
    /// each marked as taken once sent.
    #[test]
    fn a_kept_alive_connection_takes_page_after_page() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let board = Arc::new(Board::default());
        let site = Arc::new(Scrapes(Arc::clone(&board)));
        let _server = Server::start(listener, "test", site, Limits::default()).unwrap();
        let mut s = TcpStream::connect(addr).unwrap();
        for k in 1..=3 {
            let text = format!("a {k}\n# EOF\n");
            let n = board.publish(text.clone());
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let want = format!("Content-Length: {}\r\n", text.len());
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !String::from_utf8_lossy(&got).ends_with(&text) {
                let r = s.read(&mut buf).unwrap();
                assert!(r > 0, "closed after {k} answers");
                got.extend_from_slice(&buf[..r]);
            }
            let got = String::from_utf8(got).unwrap();
            assert!(
                got.starts_with("HTTP/1.1 200 OK\r\n") && got.contains(&want),
                "{got}"
            );
            // Marked by the server's thread just after the write the client read: waited for
            // (the deadline only turns a regression into a failure rather than a hang).
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while !board.taken(n) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "page {n} never marked"
                );
                std::thread::yield_now();
            }
        }
    }
}
