//! Network partitions of a local cluster (`--fault partition-TARGET@AT:HOLD`): every byte
//! between two nodes, and between a node and its clients, crosses a loopback proxy inside
//! msgbench that knows which nodes it joins. Cutting a node stops every proxy that touches it,
//! in both directions, until the heal.
//!
//! A cut stalls, it does not reset, as a firewall that drops packets would: connections stay
//! open, no byte crosses (nor a close: an end that hangs up during the cut is passed on at the
//! heal), and a new connection to a cut node is accepted by the proxy but not carried on
//! until the heal. TCP on either side sees silence; the server's own pings and raft timers
//! decide what is dead. A chunk a proxy was already writing when the cut came still lands.
//!
//! The proxies live in msgbench's process: no privilege is needed, and nothing is left behind
//! when msgbench is killed (its servers die with it, see [`crate::server`]).

use std::collections::HashSet;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

const CHUNK: usize = 64 * 1024;
const DIAL_TIMEOUT: Duration = Duration::from_secs(2);
/// How often a stalled direction looks again whether msgbench is stopping.
const STALL_POLL: Duration = Duration::from_millis(100);

/// What every proxy of one cluster shares: which nodes are cut, and what to close at the end.
#[derive(Default)]
struct Shared {
    cut: Mutex<Vec<bool>>,
    healed: Condvar,
    stop: AtomicBool,
    /// Every port the proxies hold: where they listen, and the local end of every connection
    /// they dialed. A route whose far end is one of these crosses a proxy.
    ports: Mutex<HashSet<u16>>,
    sockets: Mutex<Vec<TcpStream>>,
}

impl Shared {
    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits while any of `ends` is cut; false when msgbench is stopping.
    fn wait_open(&self, ends: &[usize]) -> bool {
        let mut cut = Self::lock(&self.cut);
        while ends.iter().any(|&e| cut[e]) {
            if self.stop.load(Ordering::Acquire) {
                return false;
            }
            cut = self
                .healed
                .wait_timeout(cut, STALL_POLL)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        !self.stop.load(Ordering::Acquire)
    }

    fn keep(&self, s: &TcpStream) {
        let mut live = Self::lock(&self.sockets);
        live.retain(|s| s.peer_addr().is_ok());
        if let Ok(c) = s.try_clone() {
            live.push(c);
        }
    }
}

/// The proxies of one local cluster: one for each ordered pair of nodes (node i dials node j
/// through its own), and one in front of each node for its clients.
pub struct Mesh {
    shared: Arc<Shared>,
    listeners: Vec<Listener>,
    /// Where clients reach node i, through its proxy.
    pub client_ports: Vec<u16>,
}

impl Mesh {
    /// Proxies for the routes of `n` nodes whose cluster ports are `cluster_ports`; returns the
    /// mesh and, for each node i, the ports it should dial to reach every other node, in node
    /// order.
    ///
    /// # Errors
    /// When a proxy cannot listen on loopback.
    pub fn routes(cluster_ports: &[u16]) -> io::Result<(Self, Vec<Vec<u16>>)> {
        let n = cluster_ports.len();
        let mut mesh = Self::empty(n);
        let mut dials = vec![Vec::new(); n];
        for (i, dial) in dials.iter_mut().enumerate() {
            for (j, &port) in cluster_ports.iter().enumerate().filter(|(j, _)| *j != i) {
                let l = mesh.listen(vec![i, j], port)?;
                dial.push(l.port);
                mesh.listeners.push(l);
            }
        }
        Ok((mesh, dials))
    }

    /// No proxy yet, for `n` nodes none of which is cut.
    fn empty(n: usize) -> Self {
        Self {
            shared: Arc::new(Shared {
                cut: Mutex::new(vec![false; n]),
                ..Shared::default()
            }),
            listeners: Vec::new(),
            client_ports: Vec::new(),
        }
    }

    /// Puts a proxy in front of each node's client port (`client_ports`, in node order).
    ///
    /// # Errors
    /// When a proxy cannot listen on loopback.
    pub fn clients(&mut self, client_ports: &[u16]) -> io::Result<()> {
        for (i, &port) in client_ports.iter().enumerate() {
            let l = self.listen(vec![i], port)?;
            self.client_ports.push(l.port);
            self.listeners.push(l);
        }
        Ok(())
    }

    fn listen(&self, ends: Vec<usize>, upstream: u16) -> io::Result<Listener> {
        Listener::start(self.shared.clone(), ends, upstream)
    }

    /// Cuts `nodes` off (or heals them, with `cut` false).
    pub fn cut(&self, nodes: &[usize], cut: bool) {
        let mut flags = Shared::lock(&self.shared.cut);
        for &n in nodes {
            if let Some(f) = flags.get_mut(n) {
                *f = cut;
            }
        }
        drop(flags);
        if !cut {
            self.shared.healed.notify_all();
        }
    }

    /// Whether node `i` is cut off now.
    pub fn is_cut(&self, i: usize) -> bool {
        Shared::lock(&self.shared.cut)
            .get(i)
            .copied()
            .unwrap_or(false)
    }

    /// Every port the proxies hold now: where they listen, and the local end of each
    /// connection they dialed to a node.
    pub fn ports(&self) -> HashSet<u16> {
        Shared::lock(&self.shared.ports).clone()
    }
}

impl Drop for Mesh {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.healed.notify_all();
        // Wake every accept loop, then close every connection so every splice ends.
        for l in &self.listeners {
            let addr = SocketAddr::from(([127, 0, 0, 1], l.port));
            let _ = TcpStream::connect_timeout(&addr, Duration::from_millis(200));
        }
        for s in Shared::lock(&self.shared.sockets).drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
        for l in &mut self.listeners {
            if let Some(h) = l.accept.take() {
                let _ = h.join();
            }
        }
    }
}

/// One proxy: a loopback listener whose connections go to `upstream`, stalled while any of
/// its ends is cut.
struct Listener {
    port: u16,
    accept: Option<JoinHandle<()>>,
}

impl Listener {
    fn start(shared: Arc<Shared>, ends: Vec<usize>, upstream: u16) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        Shared::lock(&shared.ports).insert(port);
        let accept = std::thread::Builder::new()
            .name("msgbench-cut".into())
            .spawn(move || {
                for client in listener.incoming() {
                    if shared.stop.load(Ordering::Acquire) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let (shared, ends) = (shared.clone(), ends.clone());
                    // A connection to a cut node waits on a thread of its own, so the others
                    // (to a node that is not cut) are carried at once.
                    let _ = std::thread::Builder::new()
                        .name("msgbench-cut".into())
                        .spawn(move || connect(&shared, &ends, client, upstream));
                }
            })?;
        Ok(Self {
            port,
            accept: Some(accept),
        })
    }
}

/// Carries `client` to `upstream` once no end is cut.
fn connect(shared: &Arc<Shared>, ends: &[usize], client: TcpStream, upstream: u16) {
    shared.keep(&client);
    if !shared.wait_open(ends) {
        let _ = client.shutdown(Shutdown::Both);
        return;
    }
    let addr = SocketAddr::from(([127, 0, 0, 1], upstream));
    let Ok(server) = TcpStream::connect_timeout(&addr, DIAL_TIMEOUT) else {
        // The node is down: its client sees the refusal as a close.
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    if let Ok(local) = server.local_addr() {
        Shared::lock(&shared.ports).insert(local.port());
    }
    shared.keep(&server);
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    for (from, to) in [(&client, &server), (&server, &client)] {
        let (Ok(from), Ok(to)) = (from.try_clone(), to.try_clone()) else {
            let _ = client.shutdown(Shutdown::Both);
            return;
        };
        let (shared, ends) = (shared.clone(), ends.to_vec());
        let _ = std::thread::Builder::new()
            .name("msgbench-cut".into())
            .spawn(move || splice(&shared, &ends, from, to));
    }
}

/// One direction, `from` → `to`: each chunk read waits for the heal before it is written, and
/// so does the close.
fn splice(shared: &Shared, ends: &[usize], mut from: TcpStream, mut to: TcpStream) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        if !shared.wait_open(ends) {
            return;
        }
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => {
                if shared.wait_open(ends) {
                    let _ = to.shutdown(Shutdown::Write);
                }
                return;
            }
            Ok(n) => n,
        };
        if !shared.wait_open(ends) {
            return;
        }
        if to.write_all(&buf[..n]).is_err() {
            let _ = to.shutdown(Shutdown::Both);
            let _ = from.shutdown(Shutdown::Both);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on loopback; returns its port.
    fn echo() -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut r = s.try_clone().unwrap();
                    let mut w = s;
                    let _ = io::copy(&mut r, &mut w);
                });
            }
        });
        port
    }

    fn roundtrip(c: &mut TcpStream, byte: u8) -> io::Result<u8> {
        c.write_all(&[byte])?;
        let mut b = [0u8; 1];
        c.read_exact(&mut b)?;
        Ok(b[0])
    }

    #[test]
    fn a_cut_node_stalls_its_connections_and_the_heal_lets_them_flow_again() {
        // Stand-ins for two nodes' client ports: a cut is about ends, not what they carry.
        let mut mesh = Mesh::empty(2);
        mesh.clients(&[echo(), echo()]).unwrap();
        let dial = |i: usize| TcpStream::connect(("127.0.0.1", mesh.client_ports[i])).unwrap();
        // Silence is looked for over a while: a broken cut could only pass unseen, never fail
        // a working one.
        let quiet = |c: &TcpStream, on: bool| {
            let t = on.then_some(Duration::from_millis(300));
            c.set_read_timeout(t).unwrap();
        };
        let (mut a, mut b) = (dial(0), dial(1));
        assert_eq!(roundtrip(&mut a, 1).unwrap(), 1);
        mesh.cut(&[0], true);
        assert!(mesh.is_cut(0) && !mesh.is_cut(1));
        // Node 0's connection stays open and silent; node 1's still flows.
        quiet(&a, true);
        let e = roundtrip(&mut a, 2).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "{e}"
        );
        assert_eq!(roundtrip(&mut b, 3).unwrap(), 3);
        // A new connection to the cut node is accepted but carries nothing.
        let mut late = dial(0);
        quiet(&late, true);
        assert!(roundtrip(&mut late, 4).is_err());
        mesh.cut(&[0], false);
        // What was sent during the cut arrives after the heal, in order.
        quiet(&a, false);
        quiet(&late, false);
        let mut got = [0u8; 1];
        a.read_exact(&mut got).unwrap();
        assert_eq!(got, [2]);
        late.read_exact(&mut got).unwrap();
        assert_eq!(got, [4]);
        assert_eq!(roundtrip(&mut a, 5).unwrap(), 5);
    }
}
