//! One connection of a fleet: a state machine driven by readiness, from the non-blocking TCP
//! connect through TLS and the NATS handshake to a confirmed subscription, then the messages,
//! keepalives and, with `--reconnect`, the way back after a loss.
//!
//! Nothing here blocks: every step does what the socket allows and returns, and the worker
//! calls [`Member::drive`] again on the next readiness event. The phases are timed as they
//! pass, so a connection reports its TCP connect, TLS handshake and INFO/CONNECT/PONG exchange
//! separately. A member owns its socket, its small read buffer ([`Buf`]) and its counts; it
//! shares nothing with other members, so accounting per connection is exact without locks.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Interest as Ready, Registry, Token};
use rustls::pki_types::ServerName;
use rustls::ClientConnection;

use super::buf::Buf;
use super::{Board, ConnectTimes, Failure, FleetSpec, Interest, Recovery};
use crate::engine::conn::connect_command;
use crate::engine::load::{SubControl, UNKNOWN};
use crate::error::ErrorCounts;
use crate::stats::delivery::{DeliveryLog, PublisherKey};
use crate::stats::throughput::{ClientRun, Role};
use crate::stats::timeline::ClientMeter;
use crate::wire::proto::{self, Parsed, ServerInfo, ServerOp};
use crate::wire::stamp;

/// Unanswered keepalive PINGs after which a connection is dead (as the official clients).
const MAX_PINGS_OUT: u8 = 2;
/// Reads a connection gets per turn of its worker (up to 64 KiB each).
const READS_PER_TURN: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not dialled yet.
    Idle,
    /// Non-blocking connect under way.
    Tcp,
    /// Connected; waiting for the server's INFO.
    Info,
    /// TLS handshake under way.
    Tls,
    /// CONNECT and PING sent; waiting for the PONG.
    Connect,
    /// SUB and PING sent; waiting for the PONG that confirms the interest.
    Subscribe,
    Ready,
    /// Lost (or refused); dial again at the time the worker keeps for it.
    Backoff,
    Done,
}

/// Why a member stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The run stopped it (count reached, idle, end of hold).
    Stopped,
    /// It failed and was not replaced.
    Failed(Failure),
}

/// What a step asks of the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    Nothing,
    /// Dial again at this time.
    RetryAt(Instant),
    /// The member is done.
    Finished,
}

pub struct Member {
    pub id: u32,
    token: Token,
    sock: Option<TcpStream>,
    tls: Option<Box<ClientConnection>>,
    /// TLS before INFO (the server has handshake_first).
    tls_first: bool,
    phase: Phase,
    rbuf: Buf,
    need: Option<usize>,
    /// Plaintext not yet written (without TLS; with TLS the session buffers it).
    wbuf: Vec<u8>,
    /// When the current attempt, and the current phase, began.
    attempt_at: Instant,
    phase_at: Instant,
    /// The phases of the current attempt so far.
    times: ConnectTimes,
    /// The server's INFO, from its arrival until CONNECT answers its nonce.
    info: Option<Box<ServerInfo>>,
    heard: Instant,
    pings_out: u8,
    /// Connect attempts made, in all, and when the first began.
    pub attempts: u32,
    first_dial_at: Option<Instant>,
    /// Reads stopped at their limit with the socket perhaps not empty: drive again soon.
    more: bool,
    /// The first connection's phases, once it is ready.
    pub first: Option<ConnectTimes>,
    /// The current outage, while the connection is out.
    outage: Option<Recovery>,
    pub recoveries: Vec<Recovery>,
    backoff: Duration,
    rng: u64,
    pub ending: Option<Ending>,
    pub msgs: u64,
    pub bytes: u64,
    pub first_msg: Option<Instant>,
    pub last_msg: Option<Instant>,
    pub log: Option<DeliveryLog>,
    meter: Option<Arc<ClientMeter>>,
}

impl Member {
    pub fn new(id: u32, index: usize, spec: &FleetSpec, meter: Option<Arc<ClientMeter>>) -> Self {
        let now = Instant::now();
        Self {
            id,
            token: Token(index),
            sock: None,
            tls: None,
            tls_first: spec.dialing.tls.is_some_and(|t| t.options.first),
            phase: Phase::Idle,
            rbuf: Buf::default(),
            need: None,
            wbuf: Vec::new(),
            attempt_at: now,
            phase_at: now,
            times: ConnectTimes::default(),
            info: None,
            heard: now,
            pings_out: 0,
            attempts: 0,
            first_dial_at: None,
            more: false,
            first: None,
            outage: None,
            recoveries: Vec::new(),
            backoff: super::BACKOFF_FIRST,
            rng: (u64::from(id) << 32 | u64::from(stamp::new_run_tag())) | 1,
            ending: None,
            msgs: 0,
            bytes: 0,
            first_msg: None,
            last_msg: None,
            log: spec.run_tag.map(|t| DeliveryLog::new(Some(t))),
            meter,
        }
    }

    /// When the current outage began, if the connection is lost and not back.
    pub fn out_since(&self) -> Option<Instant> {
        self.outage.map(|o| o.lost_at)
    }

    /// The current outage, if the connection is lost and not back.
    pub fn outage(&self) -> Option<&Recovery> {
        self.outage.as_ref()
    }

    /// One past the highest sequence of the run's first publisher received so far.
    fn seq_mark(&self) -> u64 {
        self.log
            .as_ref()
            .and_then(|l| {
                l.tracker(PublisherKey {
                    run_tag: l.run_tag?,
                    publisher: 0,
                })
            })
            .map_or(0, |t| t.high_mark())
    }

    pub fn is_ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Heap bytes of the buffers (the read buffer and the pending writes).
    pub fn buffer_bytes(&self) -> usize {
        self.rbuf.capacity() + self.wbuf.capacity()
    }

    /// Starts a connect attempt to `addr` (non-blocking).
    pub fn dial(
        &mut self,
        addr: SocketAddr,
        spec: &FleetSpec,
        registry: &Registry,
        board: &Board,
    ) -> After {
        let now = Instant::now();
        self.attempts += 1;
        self.first_dial_at.get_or_insert(now);
        if let Some(o) = &mut self.outage {
            o.attempts += 1;
        }
        self.attempt_at = now;
        self.phase_at = now;
        self.times = ConnectTimes::default();
        match TcpStream::connect(addr) {
            Ok(mut s) => {
                if let Err(e) =
                    registry.register(&mut s, self.token, Ready::READABLE | Ready::WRITABLE)
                {
                    return self.fail(Failure::of_io(&e), spec, registry, board);
                }
                self.sock = Some(s);
                self.phase = Phase::Tcp;
                board.in_flight(1);
                After::Nothing
            }
            Err(e) => self.fail(Failure::of_io(&e), spec, registry, board),
        }
    }

    /// Does everything the socket allows now: completes the connect, moves the handshake on,
    /// reads and dispatches what arrived, and writes what is pending.
    pub fn drive(
        &mut self,
        spec: &FleetSpec,
        ctl: &SubControl,
        registry: &Registry,
        board: &Board,
    ) -> After {
        match self.step(spec, ctl, board) {
            Ok(false) => After::Nothing,
            Ok(true) => self.finish(Ending::Stopped, registry, board),
            Err(f) => self.fail(f, spec, registry, board),
        }
    }

    /// `Ok(true)`: the member has all it waits for.
    fn step(&mut self, spec: &FleetSpec, ctl: &SubControl, board: &Board) -> Result<bool, Failure> {
        let now = Instant::now();
        self.more = false;
        if self.phase == Phase::Tcp {
            let sock = self.sock.as_ref().expect("a dialling member has a socket");
            if let Some(e) = sock.take_error().map_err(|e| Failure::of_io(&e))? {
                return Err(Failure::of_io(&e));
            }
            match sock.peer_addr() {
                Ok(_) => {}
                // Not connected yet: a spurious wake-up.
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return Ok(false),
                Err(e) => return Err(Failure::of_io(&e)),
            }
            // Small writes go out at once (Nagle would hold PONGs behind delayed ACKs).
            let _ = sock.set_nodelay(true);
            self.times.tcp = now - self.attempt_at;
            self.enter(
                if self.tls_first {
                    Phase::Tls
                } else {
                    Phase::Info
                },
                now,
            );
            if self.tls_first {
                self.start_tls(spec)?;
            }
        }
        loop {
            if self.phase == Phase::Tls {
                self.tls_handshake(spec, Instant::now())?;
                if self.phase == Phase::Tls {
                    self.flush()?;
                    return Ok(false);
                }
            }
            let done = self.read_all(spec, ctl, board)?;
            // INFO asked for TLS: the handshake's records are read by the loop above.
            if self.phase == Phase::Tls {
                continue;
            }
            self.flush()?;
            return Ok(done);
        }
    }

    fn enter(&mut self, phase: Phase, now: Instant) {
        self.phase = phase;
        self.phase_at = now;
    }

    fn start_tls(&mut self, spec: &FleetSpec) -> Result<(), Failure> {
        let tls = match spec.dialing.tls {
            Some(t) => t,
            None => crate::engine::tls::default_config().map_err(|_| Failure::Tls)?,
        };
        let host = spec.target(self.id).url.tls_name().to_string();
        let name = ServerName::try_from(host).map_err(|_| Failure::Tls)?;
        let conn = ClientConnection::new(tls.config.clone(), name).map_err(|_| Failure::Tls)?;
        self.tls = Some(Box::new(conn));
        self.enter(Phase::Tls, Instant::now());
        Ok(())
    }

    fn tls_handshake(&mut self, spec: &FleetSpec, now: Instant) -> Result<(), Failure> {
        let (Some(tls), Some(sock)) = (self.tls.as_mut(), self.sock.as_mut()) else {
            return Err(Failure::Tls);
        };
        loop {
            while tls.wants_write() {
                match tls.write_tls(sock) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(Failure::of_io(&e)),
                }
            }
            if !tls.is_handshaking() {
                break;
            }
            match tls.read_tls(sock) {
                Ok(0) => return Err(Failure::Closed),
                Ok(_) => {
                    tls.process_new_packets().map_err(|_| Failure::Tls)?;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(Failure::of_io(&e)),
            }
        }
        self.times.tls = Some(now - self.phase_at);
        if self.tls_first {
            self.enter(Phase::Info, now);
        } else {
            self.send_connect(spec, now)?;
        }
        Ok(())
    }

    fn send_connect(&mut self, spec: &FleetSpec, now: Instant) -> Result<(), Failure> {
        let info = self.info.take().ok_or(Failure::Protocol)?;
        let cmd = connect_command(&spec.target(self.id).url, &info, &spec.name)
            .map_err(|_| Failure::Rejected)?;
        self.queue(&cmd)?;
        self.enter(Phase::Connect, now);
        Ok(())
    }

    /// Reads until the socket has nothing more, dispatching each complete operation.
    fn read_all(
        &mut self,
        spec: &FleetSpec,
        ctl: &SubControl,
        board: &Board,
    ) -> Result<bool, Failure> {
        // A bounded number of reads a turn: a connection the server keeps busy must not keep
        // its worker from the others (their keepalives, their messages).
        for _ in 0..READS_PER_TURN {
            let room = self.rbuf.room(self.need);
            let room_len = room.len();
            let got = match (self.tls.as_mut(), self.sock.as_mut()) {
                (_, None) => return Ok(false),
                (None, Some(sock)) => sock.read(room),
                (Some(tls), Some(sock)) => read_tls(tls, sock, room),
            };
            match got {
                Ok(0) => return Err(Failure::Closed),
                Ok(n) => {
                    let short = n < room_len;
                    self.rbuf.filled(n);
                    self.heard = Instant::now();
                    if self.dispatch(spec, ctl, board)? {
                        return Ok(true);
                    }
                    if self.phase == Phase::Tls {
                        return Ok(false);
                    }
                    // A short read emptied the socket: anything arriving later raises a new
                    // edge, so the read that would only say "nothing more" is saved (half the
                    // read calls of a fan-out subscriber). TLS may hold decrypted bytes back,
                    // so it reads on until told there is nothing.
                    if short && self.tls.is_none() {
                        return Ok(false);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::InvalidData => return Err(Failure::Tls),
                Err(e) => return Err(Failure::of_io(&e)),
            }
        }
        // Edge-triggered: bytes already waiting raise no new event, so the worker comes back.
        self.more = true;
        Ok(false)
    }

    /// Whether the last turn stopped at its read limit (see [`After::Again`]).
    pub fn wants_more(&self) -> bool {
        self.more
    }

    fn dispatch(
        &mut self,
        spec: &FleetSpec,
        ctl: &SubControl,
        board: &Board,
    ) -> Result<bool, Failure> {
        let now = self.heard;
        self.need = None;
        loop {
            let pending = self.rbuf.pending();
            if pending.is_empty() {
                return Ok(false);
            }
            let (op, used) = match proto::parse(pending).map_err(|_| Failure::Protocol)? {
                Parsed::Op(op, used) => (op, used),
                Parsed::Incomplete { need } => {
                    self.need = need;
                    return Ok(false);
                }
            };
            // The op borrows the buffer; what it asks for is done after the borrow ends.
            let mut reply: Option<&'static [u8]> = None;
            let mut info = None;
            let mut stop = false;
            match op {
                // The server handles SUB before the PING: a message before the PONG is real.
                ServerOp::Msg(m) if matches!(self.phase, Phase::Ready | Phase::Subscribe) => {
                    self.msgs += 1;
                    self.bytes += m.payload.len() as u64;
                    self.first_msg.get_or_insert(now);
                    self.last_msg = Some(now);
                    if let Some(log) = &mut self.log {
                        let st = stamp::read(m.payload);
                        log.record(st);
                        // The first of the run's first publisher after a loss: where what
                        // the outage cost this connection ends (see `Recovery`).
                        if let Some(s) =
                            st.filter(|s| s.publisher == 0 && log.run_tag == Some(s.run_tag))
                        {
                            if let Some(o) = self.outage.as_mut().or(self.recoveries.last_mut()) {
                                o.first_seq.get_or_insert(s.seq);
                            }
                        }
                    }
                    stop = self.msgs >= ctl.expected();
                }
                ServerOp::Msg(_) => {}
                ServerOp::Info(json) if self.phase == Phase::Info => {
                    info = Some(ServerInfo::parse(json).map_err(|_| Failure::Protocol)?);
                }
                ServerOp::Info(_) | ServerOp::Ok => {}
                ServerOp::Ping => reply = Some(b"PONG\r\n"),
                ServerOp::Pong => match self.phase {
                    Phase::Connect => {
                        self.times.connect = now - self.phase_at;
                        match &spec.interest {
                            Interest::None => self.ready(&spec.errors, board, now),
                            interest => {
                                let mut sub = Vec::with_capacity(64);
                                proto::encode_sub(&mut sub, &interest.subject(self.id), None, 1);
                                proto::encode_ping(&mut sub);
                                self.rbuf.consume(used);
                                self.queue(&sub)?;
                                self.enter(Phase::Subscribe, now);
                                continue;
                            }
                        }
                    }
                    Phase::Subscribe => {
                        self.times.subscribe = Some(now - self.phase_at);
                        self.ready(&spec.errors, board, now);
                    }
                    _ => {
                        if self.pings_out > 0 {
                            board.pong();
                        }
                        self.pings_out = 0;
                    }
                },
                ServerOp::Err(text) => {
                    spec.errors.server_error(text);
                    if matches!(self.phase, Phase::Connect | Phase::Info | Phase::Tls) {
                        self.rbuf.consume(used);
                        return Err(Failure::Rejected);
                    }
                }
            }
            self.rbuf.consume(used);
            if let Some(r) = reply {
                self.queue(r)?;
            }
            if let Some(info) = info {
                self.on_info(info, spec, now)?;
            }
            if stop {
                return Ok(true);
            }
        }
    }

    fn on_info(&mut self, info: ServerInfo, spec: &FleetSpec, now: Instant) -> Result<(), Failure> {
        let wants_tls =
            spec.target(self.id).url.tls || info.tls_required || spec.dialing.tls.is_some();
        if wants_tls && !(info.tls_required || info.tls_available) && self.tls.is_none() {
            return Err(Failure::Tls);
        }
        self.info = Some(Box::new(info));
        if wants_tls && self.tls.is_none() {
            self.times.info = now - self.phase_at;
            self.start_tls(spec)?;
            return self.tls_handshake(spec, now);
        }
        self.times.info = now - self.phase_at;
        self.send_connect(spec, now)
    }

    fn ready(&mut self, errors: &ErrorCounts, board: &Board, now: Instant) {
        self.phase = Phase::Ready;
        self.pings_out = 0;
        self.backoff = super::BACKOFF_FIRST;
        self.times.total = now - self.attempt_at;
        board.in_flight(-1);
        board.ready(1);
        match self.outage.take() {
            Some(mut o) => {
                board.recovered();
                errors.opened();
                errors.reconnected(now - o.lost_at);
                o.back_at = Some(now);
                self.recoveries.push(o);
            }
            None => {
                errors.opened();
                board.opened();
                if self.first.is_none() {
                    self.times.at = Some(self.attempt_at);
                    self.first = Some(self.times);
                }
            }
        }
    }

    /// Queues bytes to write; they go out at the end of this step.
    fn queue(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        match &mut self.tls {
            Some(tls) => tls.writer().write_all(bytes).map_err(|_| Failure::Tls),
            None => {
                self.wbuf.extend_from_slice(bytes);
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> Result<(), Failure> {
        let Some(sock) = self.sock.as_mut() else {
            return Ok(());
        };
        if let Some(tls) = &mut self.tls {
            while tls.wants_write() {
                match tls.write_tls(sock) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(Failure::of_io(&e)),
                }
            }
            return Ok(());
        }
        let mut at = 0;
        while at < self.wbuf.len() {
            match sock.write(&self.wbuf[at..]) {
                Ok(0) => return Err(Failure::Closed),
                Ok(n) => at += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Failure::of_io(&e)),
            }
        }
        self.wbuf.drain(..at);
        Ok(())
    }

    /// The periodic duties: the connect timeout, keepalive PINGs, the stop conditions of a
    /// subscriber waiting for a count, progress for the live view, and buffers shrunk back.
    pub fn sweep(
        &mut self,
        spec: &FleetSpec,
        ctl: &SubControl,
        registry: &Registry,
        board: &Board,
    ) -> After {
        let now = Instant::now();
        if let Some(m) = &self.meter {
            m.msgs
                .store(self.msgs, std::sync::atomic::Ordering::Relaxed);
        }
        self.rbuf.settle();
        if self.wbuf.is_empty() && self.wbuf.capacity() > super::buf::BASE {
            self.wbuf = Vec::new();
        }
        match self.phase {
            Phase::Tcp | Phase::Info | Phase::Tls | Phase::Connect | Phase::Subscribe => {
                if now - self.attempt_at > spec.dialing.connect_timeout {
                    return self.fail(Failure::TimedOut, spec, registry, board);
                }
            }
            Phase::Ready => {
                if now - self.heard > spec.dialing.ping_interval {
                    if self.pings_out >= MAX_PINGS_OUT {
                        return self.fail(Failure::PingTimeout, spec, registry, board);
                    }
                    self.pings_out += 1;
                    self.heard = now;
                    board.ping();
                    let sent = self.queue(b"PING\r\n").and_then(|()| self.flush());
                    if let Err(f) = sent {
                        return self.fail(f, spec, registry, board);
                    }
                }
                if self.idle_over(spec, ctl, now) {
                    return self.finish(Ending::Stopped, registry, board);
                }
            }
            Phase::Idle | Phase::Backoff | Phase::Done => {}
        }
        After::Nothing
    }

    /// A subscriber waiting for a count stops once it has it, or once nothing has come for its
    /// idle limit since the count was known.
    fn idle_over(&self, spec: &FleetSpec, ctl: &SubControl, now: Instant) -> bool {
        let expected = ctl.expected();
        if expected == UNKNOWN {
            return false;
        }
        if self.msgs >= expected {
            return true;
        }
        let armed = ctl.armed_at();
        let (since, limit) = match self.last_msg {
            Some(l) => (l.max(armed), spec.idle_timeout),
            None => (armed, spec.start_timeout),
        };
        now.saturating_duration_since(since) > limit
    }

    fn close(&mut self, registry: &Registry, board: &Board) {
        if let Some(mut s) = self.sock.take() {
            let _ = registry.deregister(&mut s);
        }
        self.tls = None;
        self.wbuf = Vec::new();
        self.need = None;
        self.rbuf = Buf::default();
        match self.phase {
            Phase::Ready => board.ready(-1),
            Phase::Tcp | Phase::Info | Phase::Tls | Phase::Connect | Phase::Subscribe => {
                board.in_flight(-1);
            }
            _ => {}
        }
        // Closed: no longer counted as up or under way, so a second close counts nothing.
        self.phase = Phase::Backoff;
    }

    /// Ends the member for good.
    pub fn finish(&mut self, ending: Ending, registry: &Registry, board: &Board) -> After {
        self.close(registry, board);
        if let Some(m) = &self.meter {
            m.msgs
                .store(self.msgs, std::sync::atomic::Ordering::Relaxed);
        }
        if self.first.is_none() {
            board.settled_without_connecting();
        }
        self.phase = Phase::Done;
        self.ending = Some(ending);
        board.finished();
        After::Finished
    }

    /// The link failed (or never came up): dial again after a pause, or end.
    fn fail(
        &mut self,
        why: Failure,
        spec: &FleetSpec,
        registry: &Registry,
        board: &Board,
    ) -> After {
        let now = Instant::now();
        // Only a connection that was up can be lost; one still subscribing had a failed attempt.
        let was_up = self.phase == Phase::Ready;
        board.failure(why);
        self.close(registry, board);
        if was_up {
            spec.errors.add(why.counted());
            let seq_mark = self.seq_mark();
            self.outage.get_or_insert(Recovery {
                lost_at: now,
                back_at: None,
                attempts: 0,
                seq_mark,
                first_seq: None,
            });
            board.lost();
        }
        // Dialling again ends --timeout after the loss, or after the first attempt of a
        // connection that never came up.
        let since = self
            .outage
            .map_or(self.first_dial_at.unwrap_or(now), |o| o.lost_at);
        if !spec.dialing.reconnect || now - since > spec.give_up_after {
            // A connection that was up and did not come back is what the run lost; one that
            // never came up is a failed connect, counted by kind.
            if self.outage.is_some() {
                spec.errors.failed(why.counted(), spec.dialing.reconnect);
            }
            return self.finish(Ending::Failed(why), registry, board);
        }
        self.phase = Phase::Backoff;
        if was_up {
            // The first attempt after a loss is immediate, as in the dedicated engine: the
            // pauses are for a server that is not back yet.
            return After::RetryAt(now);
        }
        let pause = if spec.dialing.jitter {
            // Uniform in [0.5, 1.5) of the backoff (xorshift per member): spreads a herd's
            // attempts over the pause instead of sending them all at once.
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            self.backoff
                .mul_f64(0.5 + (self.rng >> 11) as f64 / (1u64 << 53) as f64)
        } else {
            self.backoff
        };
        self.backoff = (self.backoff * 2).min(super::BACKOFF_MAX);
        After::RetryAt(now + pause)
    }

    /// What this member received, as a subscriber's run.
    pub fn outcome(&self) -> ClientRun {
        ClientRun {
            role: Role::Sub,
            id: self.id,
            msgs: self.msgs,
            bytes: self.bytes,
            start: self.first_msg,
            end: self.last_msg,
        }
    }
}

/// Plaintext from a TLS session on a non-blocking socket: what the session holds, else what the
/// socket has. `WouldBlock` when neither has anything.
fn read_tls(tls: &mut ClientConnection, sock: &mut TcpStream, out: &mut [u8]) -> io::Result<usize> {
    loop {
        match tls.reader().read(out) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        if tls.read_tls(sock)? == 0 {
            return Ok(0);
        }
        tls.process_new_packets()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    }
}
