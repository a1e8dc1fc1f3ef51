//! Many requests to one subject in flight at once, before a connection's read loop has started:
//! the way to read a stream back message by message without paying one round trip per message.
//!
//! Each request carries its key in its reply subject (`<inbox>.<key>`), so replies may come in
//! any order and each is handed back with the key it answers. At most `window` requests are
//! outstanding; new ones go out as replies come in. A request may be answered more than once
//! (in a cluster, a node that does not know the leader may answer as well as the leader): the
//! caller says which reply answers it, and later ones for the same key are not handed back.
//! A request may also go unanswered (in a cluster, sent while the leadership is changing hands
//! and no node takes it as its own): when no reply at all has come for a while, every request
//! still unanswered is sent again, so the caller's requests must be safe to repeat.

use std::collections::HashSet;
use std::ops::Range;
use std::time::{Duration, Instant};

use super::dial::handshake_error;
use super::reader::ReadError;
use super::Conn;
use crate::error::{Error, Result};
use crate::wire::proto::{self, ServerOp};

/// What a reply did to its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// It answered the request.
    Answered,
    /// Not an answer to count: keep waiting for another reply to the same request.
    Passed,
    /// Stop asking.
    Stop,
}

/// The subscription id of the windowed requests' inbox: apart from the load's small ids and
/// from the one-off request's (`1 << 40`).
const WINDOW_SID: u64 = (1 << 40) + 1;

/// How long without any reply before the unanswered requests are sent again.
const ASK_AGAIN: Duration = Duration::from_secs(1);

impl Conn {
    /// Sends one request to `subject` for each key in `keys`, its body written by `body`, with
    /// at most `window` unanswered at a time, and hands each reply (key, headers, payload) to
    /// `reply` as it arrives, until one is [`Answer::Answered`] for every key. Stops early,
    /// with `Ok`, at [`Answer::Stop`].
    ///
    /// # Errors
    /// [`Error::Connect`] when the connection fails, or `deadline` passes before every reply
    /// came.
    pub fn requests_windowed(
        &mut self,
        subject: &str,
        keys: Range<u64>,
        window: usize,
        deadline: Instant,
        mut body: impl FnMut(u64, &mut Vec<u8>),
        mut reply: impl FnMut(u64, Option<&[u8]>, &[u8]) -> Answer,
    ) -> Result<()> {
        let inbox = format!(
            "_INBOX.msgbench.window.{:04x}",
            crate::wire::stamp::new_run_tag()
        );
        let mut out = Vec::with_capacity(4096);
        proto::encode_sub(&mut out, &format!("{inbox}.*"), None, WINDOW_SID);
        let lost = |url: &str| Error::Connect {
            url: url.to_string(),
            reason: format!("connection lost while requesting {subject}"),
        };
        let (mut next, end) = (keys.start, keys.end);
        let mut outstanding: HashSet<u64> = HashSet::with_capacity(window.max(1));
        let mut payload = Vec::new();
        let mut num = itoa::Buffer::new();
        let mut stopped = false;
        let mut again: Vec<u64> = Vec::new();
        let result = loop {
            // The requests no reply came for, sent again.
            for key in again.drain(..) {
                payload.clear();
                body(key, &mut payload);
                let key = num.format(key);
                proto::encode_pub_line_parts(
                    &mut out,
                    &[subject.as_bytes()],
                    &[inbox.as_bytes(), b".", key.as_bytes()],
                    0,
                    payload.len(),
                );
                out.extend_from_slice(&payload);
                out.extend_from_slice(b"\r\n");
            }
            // Top the window up; one write for all the requests it takes.
            while next < end && outstanding.len() < window.max(1) {
                payload.clear();
                body(next, &mut payload);
                let key = num.format(next);
                proto::encode_pub_line_parts(
                    &mut out,
                    &[subject.as_bytes()],
                    &[inbox.as_bytes(), b".", key.as_bytes()],
                    0,
                    payload.len(),
                );
                out.extend_from_slice(&payload);
                out.extend_from_slice(b"\r\n");
                outstanding.insert(next);
                next += 1;
            }
            if !out.is_empty() {
                if self.shared.write_all(&out).is_err() {
                    break Err(lost(&self.url.to_string()));
                }
                out.clear();
            }
            if outstanding.is_empty() || stopped {
                break Ok(());
            }
            // Wait until half the window is free (all of it at the end), so requests go out in
            // batches rather than one write per reply.
            let refill = if next < end { window.max(1) / 2 } else { 0 };
            let shared = &self.shared;
            let mut replied = false;
            let wait_until = deadline.min(Instant::now() + ASK_AGAIN);
            let waited = self.reader.until(wait_until, |op| match op {
                ServerOp::Msg(m) if m.sid == WINDOW_SID => {
                    replied = true;
                    let key = (m.subject.rsplit(|&b| b == b'.').next())
                        .and_then(|k| std::str::from_utf8(k).ok()?.parse::<u64>().ok());
                    if let Some(key) = key.filter(|k| outstanding.contains(k)) {
                        match reply(key, m.headers, m.payload) {
                            Answer::Answered => {
                                outstanding.remove(&key);
                            }
                            Answer::Passed => {}
                            Answer::Stop => stopped = true,
                        }
                    }
                    stopped || outstanding.len() <= refill
                }
                ServerOp::Ping => {
                    let _ = shared.write_all(b"PONG\r\n");
                    false
                }
                _ => false,
            });
            match waited {
                Err(ReadError::TimedOut) if wait_until < deadline => {
                    if !replied {
                        again.extend(outstanding.iter().copied());
                        again.sort_unstable();
                    }
                    continue;
                }
                _ => {}
            }
            if let Err(e) = waited {
                break Err(handshake_error(
                    e,
                    &self.url,
                    &format!("waiting for replies from {subject}"),
                ));
            }
        };
        // A later call subscribes this sid again with a new inbox, and a server keeps the
        // first subscription of a sid.
        let mut unsub = Vec::new();
        proto::encode_unsub(&mut unsub, WINDOW_SID, None);
        let _ = self.shared.write_all(&unsub);
        result
    }
}
