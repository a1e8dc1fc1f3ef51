//! Bidi streaming methods: each request is a message on a long-lived stream, paced, timed and
//! recorded through the same steps as whole calls.

use super::*;

impl Client<'_> {
    /// Bidi methods: each message is a request, answered by the reply in the same place in the
    /// response stream; calls of `per_call` messages follow one another.
    pub(super) async fn run_bidi(self) -> ClientOutcome {
        let mut out = ClientOutcome::new(self.id);
        let mut src = self.template.source(self.id);
        let mut i = 0u64;
        while self.wanted(i, self.due(i)) {
            let before = i;
            self.bidi_call(&mut out, &mut src, &mut i).await;
            if i == before {
                // Nothing could be sent (template errors only): do not spin.
                break;
            }
        }
        out
    }

    async fn bidi_call(
        &self,
        out: &mut ClientOutcome,
        src: &mut crate::engine::grpc::template::Source<'_>,
        i: &mut u64,
    ) {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(self.plan.in_flight.min(1024));
        let mut grpc = Grpc::new(self.conn.channel());
        let path = self.plan.path.clone();
        let request = self.request(tokio_stream::wrappers::ReceiverStream::new(rx));
        let opening = async move {
            grpc.ready()
                .await
                .map_err(|e| Status::unavailable(e.to_string()))?;
            grpc.streaming(request, path, RawCodec)
                .await
                .map(tonic::Response::into_inner)
        };
        tokio::pin!(opening);
        let mut responses: Option<tonic::Streaming<usize>> = None;
        let mut tx = Some(tx);
        // (due, sent, bytes) of each message awaiting its reply, oldest first.
        let mut waiting: VecDeque<(Instant, Instant, u64)> = VecDeque::new();
        let mut sent_here = 0u64;
        let call_start = self.due(*i).unwrap_or_else(Instant::now);
        let code = loop {
            // Whether another message may go now, and if paced, when.
            let may_send = tx.is_some()
                && waiting.len() < self.plan.in_flight
                && sent_here < self.plan.per_call
                && self.wanted(*i, self.due(*i));
            if tx.is_some()
                && !may_send
                && (sent_here >= self.plan.per_call || !self.wanted(*i, self.due(*i)))
            {
                // Done sending on this call: half-close, then wait for the replies.
                tx = None;
            }
            if tx.is_none() && waiting.is_empty() && responses.is_none() {
                // Nothing was ever sent on this call.
                break Code::Ok;
            }
            let due = if may_send { self.due(*i) } else { None };
            let next = *i;
            let oldest_limit = waiting
                .front()
                .map(|(_, sent, _)| TokioInstant::from_std(*sent + self.plan.limit));
            tokio::select! {
                biased;
                opened = &mut opening, if responses.is_none() => {
                    match opened {
                        Ok(s) => responses = Some(s),
                        Err(s) => break s.code(),
                    }
                }
                msg = async { responses.as_mut().expect("guarded").message().await }, if responses.is_some() => {
                    match msg {
                        Ok(Some(n)) => {
                            let done = Instant::now();
                            out.msgs_in += 1;
                            out.bytes_in += n as u64;
                            out.last_done = Some(done);
                            if let Some((due, sent, bytes)) = waiting.pop_front() {
                                out.requests_ok += 1;
                                out.bytes_ok += bytes;
                                let c = ns(due, done);
                                out.corrected.saturating_record(c);
                                out.uncorrected.saturating_record(ns(sent, done));
                                self.staged(due, done, (c, ns(sent, done)), 1);
                                if let Some(h) = &self.meter.latency {
                                    h.record(c);
                                }
                                self.meter.msgs.store(out.requests_ok, Ordering::Relaxed);
                            }
                        }
                        Ok(None) => break Code::Ok,
                        Err(s) => break s.code(),
                    }
                }
                () = async { tokio::time::sleep_until(oldest_limit.expect("guarded")).await }, if oldest_limit.is_some() => {
                    break Code::DeadlineExceeded;
                }
                () = async {
                    if let (Some(_), Some(p)) = (due, self.pacer) { p.until(next).await }
                }, if may_send => {
                    if !self.wanted(*i, due) {
                        continue;
                    }
                    let seq = *i;
                    *i += 1;
                    let msg = match src.next(seq) {
                        Ok(m) => m,
                        Err(_) => { out.template_errors += 1; continue; }
                    };
                    let (due, sent) = self.leaving(out, due);
                    out.msgs_out += 1;
                    let msg_len = msg.len() as u64;
                    out.bytes_out += msg_len;
                    sent_here += 1;
                    if tx.as_ref().expect("guarded").send(msg).await.is_err() {
                        // The call ended under us; its status comes from the response side.
                        tx = None;
                    }
                    waiting.push_back((due, sent, msg_len));
                }
            }
        };
        let done = Instant::now();
        out.status[code as usize] += 1;
        out.call.saturating_record(ns(call_start, done));
        // Messages still waiting are not answered: they count in requests but not in
        // requests_ok.
        out.last_done = Some(done);
    }
}
