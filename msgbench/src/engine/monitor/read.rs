//! One server's monitoring endpoints read into a [`Reading`]: `/varz` (CPU, memory,
//! connections, traffic, slow consumers, when it started), `/jsz` with streams and consumers
//! (each stream's leader and replicas, each consumer's pending counts, the meta leader),
//! `/routez` (which servers its routes reach) and `/healthz`. Only `/varz` must answer; the
//! others add what they can.
//!
//! The JSON is read into the few fields used, each defaulting when absent (older or newer
//! servers have more or fewer), and a `null` list reads as empty.

use std::time::{Duration, Instant};

use serde::{Deserialize, Deserializer};

use super::client::{Client, Conn, MonitorError};
use super::Endpoint;
use crate::stats::server::{ConsumerPoint, Reading, ReplicaPoint, StreamView};

/// The streams-and-consumers view of `/jsz`.
pub const JSZ: &str = "/jsz?accounts=true&streams=true&consumers=true";

fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Varz {
    server_id: String,
    server_name: String,
    version: String,
    start: String,
    now: String,
    cores: u32,
    gomaxprocs: u32,
    cpu: f64,
    mem: u64,
    connections: u64,
    in_msgs: u64,
    out_msgs: u64,
    in_bytes: u64,
    out_bytes: u64,
    slow_consumers: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Jsz {
    #[serde(deserialize_with = "nullable")]
    meta_cluster: Meta,
    #[serde(deserialize_with = "nullable")]
    account_details: Vec<Account>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Meta {
    leader: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Account {
    #[serde(deserialize_with = "nullable")]
    stream_detail: Vec<Stream>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Stream {
    name: String,
    #[serde(deserialize_with = "nullable")]
    cluster: Cluster,
    state: State,
    #[serde(deserialize_with = "nullable")]
    consumer_detail: Vec<Consumer>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Cluster {
    leader: String,
    #[serde(deserialize_with = "nullable")]
    replicas: Vec<Replica>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Replica {
    name: String,
    current: bool,
    lag: u64,
    offline: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct State {
    messages: u64,
    bytes: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Consumer {
    stream_name: String,
    name: String,
    num_pending: u64,
    num_ack_pending: u64,
    num_redelivered: u64,
    num_waiting: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Routez {
    #[serde(deserialize_with = "nullable")]
    routes: Vec<Route>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Route {
    remote_name: String,
    remote_id: String,
}

/// Why a `/varz` answer is not a NATS server's: the one-line reason a `--server-monitor` URL
/// is refused with.
///
/// # Errors
/// The answer's status, or what its body is instead.
pub fn check_varz(status: u16, json: Result<serde_json::Value, String>) -> Result<(), String> {
    if status != 200 {
        return Err(format!("GET /varz answered HTTP {status}"));
    }
    let v = json.map_err(|why| format!("GET /varz answered {why}"))?;
    let has = |k: &str| v.get(k).and_then(serde_json::Value::as_str).is_some();
    if !(has("server_id") && has("version") && v.get("mem").is_some()) {
        return Err(
            "GET /varz answered JSON without a server_id, version and mem: not a NATS \
             server's monitoring endpoint"
                .into(),
        );
    }
    Ok(())
}

/// Reads every endpoint of one server within `limit`, at `t_s` on the run's clock (the middle
/// of the requests is when the reading is said to be made: `clock` gives the run's seconds).
///
/// # Errors
/// Why `/varz` gave no usable answer (the others add what they can).
pub async fn read(
    client: &Client,
    conn: &mut Conn,
    endpoint: &Endpoint,
    limit: Duration,
    clock: &(dyn Fn() -> f64 + Sync),
) -> Result<Reading, String> {
    let deadline = Instant::now() + limit;
    let left = || deadline.saturating_duration_since(Instant::now());
    let from = clock();
    let varz = client
        .get(conn, endpoint, "/varz", left())
        .await
        .map_err(|e| e.to_string())?;
    check_varz(varz.status, varz.json())?;
    let v: Varz = serde_json::from_slice(&varz.body).map_err(|e| format!("/varz: {e}"))?;
    let t_s = (from + clock()) / 2.0;
    let mut r = Reading {
        t_s,
        server_now_ns: humantime::parse_rfc3339(&v.now).ok().map(|t| {
            t.duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as i128)
        }),
        // A server not given a name is named by its id, a long random string: left empty, so
        // the sampler names it by where it is read instead.
        name: if v.server_name == v.server_id {
            String::new()
        } else {
            v.server_name
        },
        version: v.version,
        start: v.start,
        cores: v.cores,
        gomaxprocs: v.gomaxprocs,
        cpu_pct: v.cpu,
        mem_bytes: v.mem,
        connections: v.connections,
        in_msgs: v.in_msgs,
        out_msgs: v.out_msgs,
        in_bytes: v.in_bytes,
        out_bytes: v.out_bytes,
        slow_consumers: v.slow_consumers,
        ..Reading::default()
    };
    let json = |a: Result<super::client::Answer, MonitorError>| {
        a.ok()
            .filter(|a| a.status == 200 || a.status == 503)
            .map(|a| (a.status, a.body))
    };
    if let Some((_, body)) = json(client.get(conn, endpoint, JSZ, left()).await) {
        if let Ok(j) = serde_json::from_slice::<Jsz>(&body) {
            jetstream(&mut r, j);
        }
    }
    if let Some((_, body)) = json(client.get(conn, endpoint, "/routez", left()).await) {
        if let Ok(z) = serde_json::from_slice::<Routez>(&body) {
            let mut peers: Vec<String> = z
                .routes
                .into_iter()
                .map(|r| {
                    if r.remote_name.is_empty() {
                        r.remote_id
                    } else {
                        r.remote_name
                    }
                })
                .collect();
            peers.sort();
            peers.dedup();
            r.route_peers = Some(peers);
        }
    }
    r.healthy = json(client.get(conn, endpoint, "/healthz", left()).await).map(|(s, _)| s == 200);
    Ok(r)
}

fn jetstream(r: &mut Reading, j: Jsz) {
    r.meta_leader = Some(j.meta_cluster.leader).filter(|l| !l.is_empty());
    for s in j.account_details.into_iter().flat_map(|a| a.stream_detail) {
        r.consumers
            .extend(s.consumer_detail.into_iter().map(|c| ConsumerPoint {
                stream: if c.stream_name.is_empty() {
                    s.name.clone()
                } else {
                    c.stream_name
                },
                name: c.name,
                pending: c.num_pending,
                ack_pending: c.num_ack_pending,
                redelivered: c.num_redelivered,
                waiting: c.num_waiting,
            }));
        r.streams.push(StreamView {
            name: s.name,
            msgs: s.state.messages,
            bytes: s.state.bytes,
            leader: Some(s.cluster.leader).filter(|l| !l.is_empty()),
            replicas: s
                .cluster
                .replicas
                .into_iter()
                .map(|x| ReplicaPoint {
                    name: x.name,
                    current: x.current,
                    lag: x.lag,
                    offline: x.offline,
                })
                .collect(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_varz_that_is_not_a_nats_servers_is_named_for_what_it_is() {
        let html = Err("an HTML page, not JSON".to_string());
        assert_eq!(
            check_varz(200, html).unwrap_err(),
            "GET /varz answered an HTML page, not JSON"
        );
        assert_eq!(
            check_varz(404, Ok(serde_json::json!({}))).unwrap_err(),
            "GET /varz answered HTTP 404"
        );
        let other = serde_json::json!({"status": "ok"});
        assert!(check_varz(200, Ok(other))
            .unwrap_err()
            .contains("not a NATS server's"));
        let nats = serde_json::json!({"server_id": "N", "version": "2.15.2", "mem": 1});
        assert!(check_varz(200, Ok(nats)).is_ok());
    }

    #[test]
    fn a_jsz_with_null_lists_reads_as_empty_and_keeps_leaders_and_pending() {
        let j: Jsz = serde_json::from_str(
            r#"{"meta_cluster": {"leader": "n0"}, "account_details": [
                {"stream_detail": [
                    {"name": "S", "cluster": {"leader": "n1", "replicas": [
                        {"name": "n2", "current": false, "lag": 7, "offline": true}]},
                     "state": {"messages": 10, "bytes": 100},
                     "consumer_detail": [{"stream_name": "S", "name": "C", "num_pending": 4,
                        "num_ack_pending": 3, "num_redelivered": 2, "num_waiting": 1}]},
                    {"name": "T", "cluster": null, "state": {}, "consumer_detail": null}]},
                {"stream_detail": null}]}"#,
        )
        .unwrap();
        let mut r = Reading::default();
        jetstream(&mut r, j);
        assert_eq!(r.meta_leader.as_deref(), Some("n0"));
        assert_eq!(r.streams.len(), 2);
        assert_eq!(r.streams[0].leader.as_deref(), Some("n1"));
        assert_eq!(r.streams[0].replicas[0].lag, 7);
        assert!(r.streams[0].replicas[0].offline);
        assert_eq!(r.streams[1].leader, None);
        assert_eq!((r.consumers[0].pending, r.consumers[0].ack_pending), (4, 3));
    }
}
