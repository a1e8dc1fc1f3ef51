//! The receiving side of a [`Raw`] connection: each frame read, by type (settings, pings,
//! window updates, resets, GOAWAY, data, and header blocks with their continuations), and a
//! whole header block decoded into a call's status or its trailers.

use std::time::Instant;

use tonic::Code;

use super::*;

impl Raw {
    pub(super) fn on_frame(
        &mut self,
        ty: u8,
        flags: u8,
        id: u32,
        p: &[u8],
        now: Instant,
        done: &mut Vec<Answered>,
    ) -> Result<(), ConnError> {
        let protocol = ConnError(Code::Internal);
        if let Some(b) = &mut self.gathering {
            // A header block admits nothing between its frames but its CONTINUATIONs.
            if ty != CONTINUATION || id != b.id {
                return Err(protocol);
            }
            b.bytes.extend_from_slice(p);
            if flags & END_HEADERS != 0 {
                let b = self.gathering.take().expect("checked");
                self.on_block(b.id, &b.bytes, b.end_stream, now, done)?;
            }
            return Ok(());
        }
        match ty {
            DATA => {
                let len = p.len() as u32;
                self.conn_unacked += len;
                if self.conn_unacked >= CONN_WINDOW / 2 {
                    let n = std::mem::take(&mut self.conn_unacked);
                    put_frame(&mut self.out, WINDOW_UPDATE, 0, 0, &n.to_be_bytes());
                }
                let body = unpad(p, flags).ok_or(ConnError(Code::Internal))?;
                let mut update = None;
                if let Some(c) = self.slot(id) {
                    c.frames.feed(body);
                    c.unacked += len;
                    if c.unacked >= STREAM_WINDOW / 2 && flags & END_STREAM == 0 {
                        update = Some(std::mem::take(&mut c.unacked));
                    }
                }
                if let Some(n) = update {
                    put_frame(&mut self.out, WINDOW_UPDATE, 0, id, &n.to_be_bytes());
                }
                if flags & END_STREAM != 0 {
                    // The body ended with no trailers: the HTTP status speaks.
                    if let Some(c) = self.slot(id) {
                        let code = code_from_http(c.status.unwrap_or(0));
                        self.finish(id, code, now, done);
                    }
                }
            }
            HEADERS => {
                let mut block = unpad(p, flags).ok_or(ConnError(Code::Internal))?;
                if flags & PRIORITY != 0 {
                    if block.len() < 5 {
                        return Err(protocol);
                    }
                    block = &block[5..];
                }
                let end_stream = flags & END_STREAM != 0;
                if flags & END_HEADERS != 0 {
                    self.on_block(id, block, end_stream, now, done)?;
                } else {
                    self.gathering = Some(Block {
                        id,
                        end_stream,
                        bytes: block.to_vec(),
                    });
                }
            }
            RST_STREAM => {
                if p.len() != 4 {
                    return Err(protocol);
                }
                let reason = h2::Reason::from(u32_at(p));
                if self.slot(id).is_some() {
                    self.finish(id, code_from_reason(reason), now, done);
                }
            }
            SETTINGS if flags & ACK == 0 => {
                if !p.len().is_multiple_of(6) {
                    return Err(protocol);
                }
                for s in p.chunks(6) {
                    let v = u32_at(&s[2..]);
                    match u16::from_be_bytes([s[0], s[1]]) {
                        3 => self.peer_max_streams = v as usize,
                        4 => {
                            let delta = i64::from(v) - self.peer_initial_window;
                            self.peer_initial_window = i64::from(v);
                            for c in self.slots.iter_mut().flatten() {
                                c.send_window += delta;
                            }
                        }
                        5 => {
                            self.peer_max_frame = (v as usize).clamp(16_384, (1 << 24) - 1);
                            self.build_headers_frame();
                        }
                        _ => {}
                    }
                }
                put_frame(&mut self.out, SETTINGS, ACK, 0, &[]);
                self.unblock();
            }
            PING if flags & ACK == 0 => {
                put_frame(&mut self.out, PING, ACK, 0, p);
            }
            GOAWAY => {
                if p.len() < 8 {
                    return Err(protocol);
                }
                let last = u32_at(p) & LAST_ID;
                // Calls above its last id were never taken up: UNAVAILABLE, as h2 says.
                let mut sid = self.base;
                for k in 0..self.slots.len() {
                    if sid > last && self.slots[k].is_some() {
                        self.finish(sid, Code::Unavailable, now, done);
                    }
                    sid += 2;
                }
                if self.closed.is_none() {
                    self.closed = Some(Closed::Draining);
                }
            }
            WINDOW_UPDATE => {
                if p.len() != 4 {
                    return Err(protocol);
                }
                let inc = i64::from(u32_at(p) & LAST_ID);
                if id == 0 {
                    self.conn_send_window += inc;
                } else if let Some(c) = self.slot(id) {
                    c.send_window += inc;
                }
                self.unblock();
            }
            // We said no push.
            PUSH_PROMISE => return Err(protocol),
            CONTINUATION => return Err(protocol),
            // PRIORITY, acknowledgements, and frame types we do not know: nothing to do.
            _ => {}
        }
        Ok(())
    }

    /// A whole header block of stream `id`: decoded (always, to keep the HPACK table), then
    /// the call's status, or its trailers.
    fn on_block(
        &mut self,
        id: u32,
        block: &[u8],
        end_stream: bool,
        now: Instant,
        done: &mut Vec<Answered>,
    ) -> Result<(), ConnError> {
        let mut status = None;
        let mut grpc = None;
        self.hpack
            .decode_with_cb(block, |n, v| match &*n {
                b":status" => {
                    status = std::str::from_utf8(&v)
                        .ok()
                        .and_then(|s| s.parse::<u16>().ok());
                }
                b"grpc-status" => grpc = Some(Code::from_bytes(&v)),
                _ => {}
            })
            .map_err(|_| ConnError(Code::Internal))?;
        let Some(c) = self.slot(id) else {
            return Ok(());
        };
        if c.status.is_none() {
            match status {
                // An interim answer (1xx): the real one follows.
                Some(s) if (100..200).contains(&s) => return Ok(()),
                Some(s) => c.status = Some(s),
                None => {
                    self.finish(id, Code::Internal, now, done);
                    return Ok(());
                }
            }
        } else if !end_stream {
            // Trailers must end the stream.
            self.finish(id, Code::Internal, now, done);
            return Ok(());
        }
        let code = match grpc {
            Some(code) => code,
            None if end_stream => code_from_http(c.status.unwrap_or(0)),
            None => return Ok(()),
        };
        if !end_stream {
            // Trailers-only headers that leave the stream open: we need nothing more.
            put_frame(&mut self.out, RST_STREAM, 0, id, &8u32.to_be_bytes());
        }
        self.finish(id, code, now, done);
        Ok(())
    }
}
