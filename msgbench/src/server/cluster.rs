//! A local cluster (`--cluster N`): `n` embedded servers routed into one, started and waited
//! for until the meta leader sees every node. When the run will partition nodes, every route
//! and every client connection crosses a proxy of [`super::partition::Mesh`], and no node can
//! reach another around them.

use std::path::Path;
use std::time::{Duration, Instant};

use super::partition::Mesh;
use super::{node_name, EmbeddedServer, Start};
use crate::error::{Error, Result};
use crate::wire::url::ServerUrl;

/// What nodes advertise as their cluster address when routes go through proxies. nats-server
/// tells its peers the address each node advertises, and a node that learns of a peer it has
/// no route to dials it there (an implicit route), which would go around the proxies. Port 1
/// on loopback is one that nothing listens on: such a dial is refused at once.
const NOWHERE: &str = "127.0.0.1:1";

/// Starts `n` servers routed into one cluster, and waits until JetStream answers on every one
/// of them (which needs the routes up and a meta leader elected). With `partitions`, the
/// routes and the clients go through the proxies returned, which can cut nodes off.
///
/// # Errors
/// [`Error::EmbeddedServer`] when a node does not start, the cluster does not form, or a
/// proxy cannot listen.
pub fn start(
    binary: &Path,
    n: u32,
    how: &Start<'_>,
    partitions: bool,
) -> Result<(Vec<EmbeddedServer>, Option<Mesh>)> {
    // A route port is found free, then given to the server: another process can take it in
    // between (parallel runs on one machine). The server then says so in its own log words,
    // and the nodes started so far are stopped as they are dropped; new ports are drawn.
    let mut tries = 0;
    loop {
        match start_once(binary, n, how, partitions) {
            Err(Error::EmbeddedServer(why))
                if why.contains("address already in use") && tries < 2 =>
            {
                tries += 1;
            }
            other => return other,
        }
    }
}

fn start_once(
    binary: &Path,
    n: u32,
    how: &Start<'_>,
    partitions: bool,
) -> Result<(Vec<EmbeddedServer>, Option<Mesh>)> {
    let ports: Vec<u16> = (0..n)
        .map(|_| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .map_err(|e| {
                    Error::EmbeddedServer(format!("no free port for a cluster route: {e}"))
                })
        })
        .collect::<Result<_>>()?;
    let proxy_err = |e| Error::EmbeddedServer(format!("cannot start the partition proxies: {e}"));
    let (mut mesh, dials) = if partitions {
        let (mesh, dials) = Mesh::routes(&ports).map_err(proxy_err)?;
        (Some(mesh), dials)
    } else {
        let direct = (0..ports.len())
            .map(|i| {
                let others = ports.iter().enumerate().filter(|(j, _)| *j != i);
                others.map(|(_, &p)| p).collect()
            })
            .collect();
        (None, direct)
    };
    let route = |p: u16| format!("nats://127.0.0.1:{p}");
    let mut servers = Vec::new();
    for (i, &port) in ports.iter().enumerate() {
        let routes: Vec<String> = dials[i].iter().map(|&p| route(p)).collect();
        let (name, cluster, routes) = (node_name(i), route(port), routes.join(","));
        let mut args = vec![
            "-n",
            &name,
            "--cluster_name",
            "msgbench",
            "--cluster",
            &cluster,
            "--routes",
            &routes,
        ];
        if mesh.is_some() {
            args.extend(["--cluster_advertise", NOWHERE]);
        }
        servers.push(EmbeddedServer::start_with(binary, &args, how)?);
    }
    if let Some(mesh) = &mut mesh {
        let client_ports: Vec<u16> = servers.iter().map(|s| s.url.port).collect();
        mesh.clients(&client_ports).map_err(proxy_err)?;
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    for s in &servers {
        wait_for_jetstream(&s.url, deadline)?;
    }
    wait_for_meta_peers(&servers, deadline)?;
    Ok((servers, mesh))
}

/// Waits until the meta leader sees every other node as a current peer (its `/jsz`): until
/// then a stream with a replica on each node finds "no suitable peers for placement".
fn wait_for_meta_peers(servers: &[EmbeddedServer], deadline: Instant) -> Result<()> {
    let want = servers.len() - 1;
    let formed = |s: &EmbeddedServer| {
        s.monitor_get("/jsz").is_some_and(|jsz| {
            let replicas = jsz["meta_cluster"]["replicas"].as_array().cloned();
            replicas.is_some_and(|r| {
                r.len() == want && r.iter().all(|p| p["current"].as_bool() == Some(true))
            })
        })
    };
    while !servers.iter().any(formed) {
        if Instant::now() > deadline {
            return Err(Error::EmbeddedServer(
                "the local cluster did not form: the meta leader did not see every node \
                 within 20 s"
                    .into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Asks `$JS.API.INFO` until it answers without an error.
fn wait_for_jetstream(url: &ServerUrl, deadline: Instant) -> Result<()> {
    let mut c = crate::engine::conn::connect_for_check(
        url,
        "msgbench-cluster-check",
        Duration::from_secs(2),
    )?;
    loop {
        let answered = c
            .request("$JS.API.INFO", b"", Duration::from_millis(500))
            .ok()
            .filter(|(h, body)| {
                h.as_ref().is_none_or(|h| !h.starts_with(b"NATS/1.0 5"))
                    && !body.is_empty()
                    && !String::from_utf8_lossy(body).contains("\"error\"")
            });
        if answered.is_some() {
            c.shared.close();
            return Ok(());
        }
        if Instant::now() > deadline {
            c.shared.close();
            return Err(Error::EmbeddedServer(format!(
                "the local cluster did not form: JetStream on {url} did not answer within 20 s"
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
