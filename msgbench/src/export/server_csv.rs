//! The servers' samples as CSV: what `--csv FILE` writes beside FILE (as `NAME.servers.csv`)
//! when the run sampled servers. `--csv` itself keeps `nats bench`'s columns, so the samples
//! cannot share its rows.
//!
//! The file is long ("tidy"): one row per reading, thing and figure, `t_s,kind,name,figure,
//! value`, so servers, streams, their replicas and consumers share one header however many
//! there are, and a spreadsheet's pivot or `pandas.pivot` makes any wide table of it. The
//! readings are those the timeline's ticks hold (the sampler's last before each second), each
//! once. A figure a reading did not have (a server that did not answer, a CPU it had not yet
//! measured) is an empty value, never 0. Events are not samples: they stay in the JSON and the
//! reports.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::format::csv_field as field;
use crate::stats::server::ServerTick;
use crate::stats::timeline::Tick;

pub const HEADER: &str = "t_s,kind,name,figure,value";

/// Where the samples go beside a `--csv` file: `out.csv` → `out.servers.csv`.
pub fn path_beside(csv: &Path) -> PathBuf {
    let stem = csv
        .file_stem()
        .map_or_else(|| "msgbench".into(), |s| s.to_string_lossy().into_owned());
    csv.with_file_name(format!("{stem}.servers.csv"))
}

/// Every reading the ticks carry, each once (a tick holds the newest reading, which the next
/// tick may hold again), in time order; `None` when no tick carries one.
pub fn serialize(ticks: &[Tick]) -> Option<String> {
    let mut out = String::from(HEADER);
    out.push('\n');
    let mut last: Option<f64> = None;
    for reading in ticks.iter().filter_map(|k| k.server.as_ref()) {
        if last.is_some_and(|t| t >= reading.t_s) {
            continue;
        }
        last = Some(reading.t_s);
        rows(&mut out, reading);
    }
    last.map(|_| out)
}

/// A value cell: a whole number as is, a fraction to three places, nothing when unmeasured.
fn num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.fract() == 0.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.3}"),
        None => String::new(),
    }
}

fn flag(b: bool) -> Option<f64> {
    Some(if b { 1.0 } else { 0.0 })
}

fn rows(out: &mut String, r: &ServerTick) {
    let t = format!("{:.3}", r.t_s);
    let mut row = |kind: &str, name: &str, figure: &str, value: String| {
        let _ = writeln!(out, "{t},{kind},{},{figure},{}", field(name), field(&value));
    };
    let n = |v: Option<u64>| num(v.map(|v| v as f64));
    for s in &r.servers {
        row("server", &s.name, "up", num(flag(s.up)));
        row("server", &s.name, "cpu_pct", num(s.cpu_pct));
        row("server", &s.name, "cores", num(s.cores.map(f64::from)));
        row("server", &s.name, "mem_bytes", n(s.mem_bytes));
        row("server", &s.name, "connections", n(s.connections));
        row("server", &s.name, "in_msgs_per_sec", num(s.in_msgs_per_sec));
        row(
            "server",
            &s.name,
            "out_msgs_per_sec",
            num(s.out_msgs_per_sec),
        );
        row(
            "server",
            &s.name,
            "in_bytes_per_sec",
            num(s.in_bytes_per_sec),
        );
        row(
            "server",
            &s.name,
            "out_bytes_per_sec",
            num(s.out_bytes_per_sec),
        );
        row("server", &s.name, "slow_consumers", n(s.slow_consumers));
        if let Some(h) = s.healthy {
            row("server", &s.name, "healthy", num(flag(h)));
        }
    }
    if let Some(m) = &r.meta_leader {
        row("meta", "", "leader", m.clone());
    }
    for s in &r.streams {
        row("stream", &s.name, "msgs", n(Some(s.msgs)));
        row("stream", &s.name, "bytes", n(Some(s.bytes)));
        row(
            "stream",
            &s.name,
            "leader",
            s.leader.clone().unwrap_or_default(),
        );
        for p in &s.replicas {
            let name = format!("{}/{}", s.name, p.name);
            row("replica", &name, "current", num(flag(p.current)));
            row("replica", &name, "lag", n(Some(p.lag)));
            row("replica", &name, "offline", num(flag(p.offline)));
        }
    }
    for c in &r.consumers {
        let name = format!("{}/{}", c.stream, c.name);
        row("consumer", &name, "pending", n(Some(c.pending)));
        row("consumer", &name, "ack_pending", n(Some(c.ack_pending)));
        row("consumer", &name, "redelivered", n(Some(c.redelivered)));
        row("consumer", &name, "waiting", n(Some(c.waiting)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::server::{ConsumerPoint, ReplicaPoint, ServerPoint, StreamPoint};

    fn reading(t_s: f64, cpu: Option<f64>) -> ServerTick {
        ServerTick {
            t_s,
            servers: vec![
                ServerPoint {
                    name: "n,1".into(),
                    up: true,
                    cpu_pct: cpu,
                    cores: Some(2),
                    in_msgs_per_sec: Some(1500.5),
                    ..ServerPoint::default()
                },
                ServerPoint {
                    name: "n2".into(),
                    ..ServerPoint::default()
                },
            ],
            streams: vec![StreamPoint {
                name: "S".into(),
                msgs: 10,
                bytes: 160,
                leader: Some("n2".into()),
                replicas: vec![ReplicaPoint {
                    name: "n,1".into(),
                    current: true,
                    lag: 3,
                    offline: false,
                }],
            }],
            consumers: vec![ConsumerPoint {
                stream: "S".into(),
                name: "c".into(),
                pending: 7,
                ..ConsumerPoint::default()
            }],
            ..ServerTick::default()
        }
    }

    fn tick(t_s: f64, server: Option<ServerTick>) -> Tick {
        Tick {
            t_s,
            span_s: 1.0,
            server,
            ..Tick::default()
        }
    }

    #[test]
    fn each_reading_once_with_unmeasured_figures_empty_and_names_quoted() {
        let ticks = [
            tick(1.0, Some(reading(0.8, Some(12.5)))),
            // The same reading again: the sampler had not read since.
            tick(2.0, Some(reading(0.8, Some(12.5)))),
            tick(3.0, Some(reading(2.7, None))),
        ];
        let csv = serialize(&ticks).expect("readings");
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], HEADER);
        let at = |t: &str| lines.iter().filter(|l| l.starts_with(t)).count();
        // Two readings, each with its own rows: 10 per answering server (no health read), 10
        // for the silent one, 3 stream, 3 replica and 4 consumer rows.
        assert_eq!((at("0.800,"), at("2.700,")), (30, 30), "{csv}");
        assert_eq!(lines.len(), 61);
        assert!(
            lines.contains(&"0.800,server,\"n,1\",cpu_pct,12.500"),
            "{csv}"
        );
        assert!(lines.contains(&"2.700,server,\"n,1\",cpu_pct,"), "{csv}");
        assert!(lines.contains(&"0.800,server,\"n,1\",in_msgs_per_sec,1500.500"));
        assert!(lines.contains(&"0.800,server,n2,up,0"));
        assert!(lines.contains(&"0.800,server,n2,mem_bytes,"));
        assert!(lines.contains(&"0.800,stream,S,leader,n2"));
        assert!(lines.contains(&"0.800,replica,\"S/n,1\",lag,3"));
        assert!(lines.contains(&"0.800,consumer,S/c,pending,7"));
    }

    #[test]
    fn no_reading_no_file_and_the_name_beside_the_csv() {
        assert_eq!(serialize(&[tick(1.0, None)]), None);
        assert_eq!(
            path_beside(Path::new("d/out.csv")),
            Path::new("d/out.servers.csv")
        );
        assert_eq!(path_beside(Path::new("out")), Path::new("out.servers.csv"));
    }
}
