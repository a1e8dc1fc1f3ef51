//! What the page's server answers: `GET /` (the page), `/events` (its Server-Sent Events),
//! `/result.json` and `/report.html` (once the run has ended), and nothing else. The connections
//! themselves (timeouts, the bound on how many, stopping) are the HTTP server `--metrics-listen`
//! shares ([`crate::output::serve`]).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Frame;
use hyper::{Method, StatusCode};
use tokio::sync::mpsc::Receiver;
use tokio::time::Sleep;

use super::{page, Hub, State};
use crate::output::serve::{Answer, Site};

/// How long a page's stream may go without an event before it is sent a comment line: what
/// finds a page that is gone, and keeps the stream open through proxies.
const IDLE: Duration = Duration::from_secs(1);

/// The page's site over the hub.
pub(super) struct Pages {
    hub: Arc<Hub>,
    /// The page itself, the same for the whole run: made once, not per request.
    page: Bytes,
}

impl Pages {
    pub(super) fn new(hub: Arc<Hub>) -> Self {
        Self {
            hub,
            page: Bytes::from(page::page()),
        }
    }
}

/// What a request asks for.
#[derive(Debug, PartialEq)]
enum Route {
    Page,
    Events,
    Json,
    Report,
    Refuse(StatusCode),
}

fn route(method: &Method, path: &str) -> Route {
    let known = matches!(path, "/" | "/events" | "/result.json" | "/report.html");
    match (*method == Method::GET, path) {
        (true, "/") => Route::Page,
        (true, "/events") => Route::Events,
        (true, "/result.json") => Route::Json,
        (true, "/report.html") => Route::Report,
        _ if known => Route::Refuse(StatusCode::METHOD_NOT_ALLOWED),
        _ => Route::Refuse(StatusCode::NOT_FOUND),
    }
}

impl Site for Pages {
    fn answer(&self, method: &Method, path: &str) -> Answer {
        let file = |pick: fn(&State) -> Option<Bytes>, ctype| match pick(&self.hub.lock()) {
            Some(b) => Answer::ok(ctype, b),
            None => Answer::refuse(StatusCode::NOT_FOUND, ""),
        };
        match route(method, path) {
            Route::Page => Answer::ok("text/html; charset=utf-8", self.page.clone()),
            Route::Events => Answer::stream(
                "text/event-stream",
                Events::new(self.hub.subscribe()).boxed_unsync(),
            ),
            Route::Json => file(|s| s.json.clone(), "application/json"),
            Route::Report => file(|s| s.report.clone(), "text/html; charset=utf-8"),
            Route::Refuse(status) => Answer::refuse(status, "GET"),
        }
    }
}

/// One page's event stream: the events of its channel as they come, a comment line after
/// every idle second, and its end once the hub closes the channel (when the server stops,
/// after what was queued).
struct Events {
    rx: Receiver<Arc<str>>,
    /// The reconnection delay still to be sent first.
    opening: bool,
    idle: Pin<Box<Sleep>>,
}

impl Events {
    fn new(rx: Receiver<Arc<str>>) -> Self {
        Self {
            rx,
            opening: true,
            idle: Box::pin(tokio::time::sleep(IDLE)),
        }
    }
}

impl hyper::body::Body for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let data = |b: Bytes| Poll::Ready(Some(Ok(Frame::data(b))));
        if std::mem::take(&mut self.opening) {
            return data(Bytes::from_static(b"retry: 1000\n\n"));
        }
        let next = tokio::time::Instant::now() + IDLE;
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(e)) => {
                self.idle.as_mut().reset(next);
                return data(Bytes::from(format!("data: {e}\n\n")));
            }
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        match self.idle.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.idle.as_mut().reset(next);
                data(Bytes::from_static(b": idle\n\n"))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_the_page_its_stream_and_the_downloads() {
        assert_eq!(route(&Method::GET, "/"), Route::Page);
        assert_eq!(route(&Method::GET, "/events"), Route::Events);
        assert_eq!(route(&Method::GET, "/result.json"), Route::Json);
        assert_eq!(route(&Method::GET, "/report.html"), Route::Report);
        assert_eq!(
            route(&Method::POST, "/"),
            Route::Refuse(StatusCode::METHOD_NOT_ALLOWED)
        );
        assert_eq!(
            route(&Method::GET, "/x"),
            Route::Refuse(StatusCode::NOT_FOUND)
        );
    }
}
