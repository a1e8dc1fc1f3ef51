//! Unary calls over msgbench's own HTTP/2 framing ([`super::super::h2raw`]), driven by the
//! client's load loop: each turn writes every call that is due in one write, then reads and
//! finishes the answered ones, through the same steps as the other loops.

use super::*;
use crate::engine::grpc::h2raw::Answered;

impl Client<'_> {
    /// Unary calls on a connection of this client's own: each turn sends every call that is
    /// due in one write, then reads and finishes what is answered. No task, no future per call.
    pub(super) async fn run_raw(self, mut raw: Raw) -> ClientOutcome {
        let mut out = ClientOutcome::new(self.id);
        let mut src = self.template.source(self.id);
        let mut i = 0u64;
        let mut framed: Option<(Bytes, Bytes)> = None;
        let mut done: Vec<Answered> = Vec::new();
        let limit = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(limit);
        let mut armed = false;
        loop {
            // Everything due now, as far as the window and the connection allow.
            while raw.in_flight() < self.plan.in_flight && raw.can_open() {
                let due = self.due(i);
                if !self.wanted(i, due)
                    || (due.is_some() && !self.pacer.is_some_and(|p| p.released(i)))
                {
                    break;
                }
                let msg = src.next(i);
                let (due, sent) = self.leaving(&mut out, due);
                i += 1;
                let Ok(msg) = msg else {
                    out.template_errors += 1;
                    continue;
                };
                let frame = match &framed {
                    Some((m, f)) if m.as_ptr() == msg.as_ptr() && m.len() == msg.len() => f.clone(),
                    _ => {
                        let f = wire::frame(&msg);
                        framed = Some((msg.clone(), f.clone()));
                        f
                    }
                };
                raw.start(frame, msg.len() as u64, due, sent);
            }
            raw.flush(&mut done).await;
            self.record_answers(&mut out, &mut done);
            let more = self.wanted(i, self.due(i));
            if !more && raw.in_flight() == 0 {
                break;
            }
            if more && raw.spent() && raw.in_flight() == 0 {
                // After a GOAWAY, a broken connection or the last stream id: a new connection.
                // If it cannot be made, the call that was due fails UNAVAILABLE, as the h2
                // path's would.
                if raw.reconnect().await.is_err() {
                    let due = self.due(i);
                    if due.is_some() {
                        if let Some(p) = self.pacer {
                            p.until(i).await;
                        }
                    }
                    let (due, sent) = self.leaving(&mut out, due);
                    i += 1;
                    let now = Instant::now();
                    self.record_call(
                        &mut out,
                        CallFacts {
                            due,
                            sent,
                            first: None,
                            done: now,
                            code: Code::Unavailable,
                            msgs_out: 1,
                            msgs_in: 0,
                            bytes_out: 0,
                            bytes_in: 0,
                        },
                    );
                }
                continue;
            }
            let paced = more
                && raw.in_flight() < self.plan.in_flight
                && raw.can_open()
                && self.due(i).is_some();
            // One timer for the calls' limits, armed for the oldest call and re-armed only when
            // it fires: calls leave in order with the same limit, so none is due before it, and
            // a timer per turn would cost more than the rest of the turn at 1 in flight.
            if !armed {
                if let Some(at) = raw.next_limit(self.plan.limit) {
                    limit.as_mut().reset(TokioInstant::from_std(at));
                    armed = true;
                }
            }
            tokio::select! {
                biased;
                () = raw.read(&mut done) => {}
                () = async { self.pacer.expect("paced").until(i).await }, if paced && self.pacer.is_some() => {}
                () = &mut limit, if armed => {
                    armed = false;
                    raw.expire(Instant::now(), self.plan.limit, &mut done);
                }
            }
            self.record_answers(&mut out, &mut done);
        }
        out
    }

    fn record_answers(&self, out: &mut ClientOutcome, done: &mut Vec<Answered>) {
        for a in done.drain(..) {
            let code = past_deadline(self.plan.deadline, a.sent, a.done, a.code);
            self.record_call(
                out,
                CallFacts {
                    due: a.due,
                    sent: a.sent,
                    first: None,
                    done: a.done,
                    code,
                    msgs_out: 1,
                    msgs_in: a.msgs_in,
                    bytes_out: a.bytes_out,
                    bytes_in: a.bytes_in,
                },
            );
        }
    }
}
