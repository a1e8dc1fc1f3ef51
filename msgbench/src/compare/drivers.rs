//! A client library's side of `msgbench compare`: where each driver is found and how it is
//! started, the scenario as the driver protocol spells it, the limits it runs under, and its
//! result mapped into msgbench's own (delivery counted from the plan, JetStream acks
//! reconciled with the stream as the native run's are).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use super::{Outcome, Setup};
use crate::engine::driver::{self, Launch, Limits};
use crate::error::{ErrorCounts, ErrorKind};
use crate::result::{throughput_sections, LatencyStats, RunResult, ServerMeta};
use crate::stats::delivery::Delivery;
use crate::stats::throughput::{ClientRun, Role};

/// Where the drivers live: `--drivers`, else `drivers/` in the current directory, else the one
/// beside the repository this binary was built in.
pub(super) fn drivers_dir(given: Option<&Path>) -> PathBuf {
    let dir = match given {
        Some(d) => d.to_path_buf(),
        None if Path::new("drivers").is_dir() => PathBuf::from("drivers"),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../drivers"),
    };
    // Absolute: each driver runs in its own folder, so relative paths would point elsewhere.
    dir.canonicalize().unwrap_or(dir)
}

/// A program on `PATH`, if there is one.
fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(program))
            .find(|p| p.is_file())
    })
}

/// How to start a driver, or why it cannot be started on this machine.
pub(super) fn launch_for(name: &str, drivers: &Path) -> std::result::Result<Launch, String> {
    let built = |dir: &str, artifact: &str| {
        let p = drivers.join(dir).join(artifact);
        if p.exists() {
            Ok(p)
        } else {
            Err(format!(
                "{name} driver not built ({} is missing; run `make drivers`)",
                p.display()
            ))
        }
    };
    let tool =
        |program: &str| on_path(program).ok_or_else(|| format!("{program} is not installed"));
    let (program, args, dir) = match name {
        "go" => (built("go", "msgbench-driver-go")?, vec![], "go"),
        "rust" => (
            built("rust", "target/release/msgbench-driver-rust")?,
            vec![],
            "rust",
        ),
        "node" | "node-old" => {
            built("node", "node_modules")?;
            let which = if name == "node" { "new" } else { "old" };
            (
                tool("node")?,
                vec!["driver.js".to_string(), "--client".into(), which.into()],
                "node",
            )
        }
        "python" => {
            built("python", ".venv")?;
            (built("python", "run.sh")?, vec![], "python")
        }
        "java" => {
            let jar = built("java", "target/msgbench-driver-java.jar")?;
            (
                tool("java")?,
                vec!["-jar".to_string(), jar.to_string_lossy().into_owned()],
                "java",
            )
        }
        other => return Err(format!("unknown client {other}")),
    };
    let dir = drivers.join(dir);
    Ok(Launch { program, args, dir })
}

/// The driver protocol's scenario for this plan.
fn driver_scenario(plan: &Setup<'_>, js: Option<Value>) -> Value {
    let p = &plan.params;
    let num = |k: &str| p.get(k).and_then(Value::as_f64);
    let ms = |k: &str| num(k).map(|s| (s * 1000.0).round() as u64);
    let kind = plan.kind;
    let pubs = num("pubs").unwrap_or(1.0).max(1.0) as u64;
    json!({
        "type": "scenario",
        "protocol": "msgbench.driver/v1",
        "kind": kind,
        "server": plan.target.urls[0].to_string(),
        "subject": p.get("subject").and_then(Value::as_str).unwrap_or("msgbench"),
        "size": num("size").unwrap_or(128.0) as u64,
        "msgs": num("msgs").map(|n| n as u64),
        "duration_ms": ms("duration_secs"),
        "rate": num("rate").unwrap_or(0.0),
        "pubs": pubs,
        "subs": if matches!(kind, "pubsub" | "latency") { num("subs").unwrap_or(1.0) as u64 } else { 0 },
        "in_flight": num("in_flight").or_else(|| num("max_in_flight")).unwrap_or(1.0).max(1.0) as u64,
        "warmup_ms": ms("warmup_secs").unwrap_or(0),
        "timeout_ms": ms("timeout_secs").unwrap_or(5000),
        "connect_timeout_ms": plan.connect_timeout.as_millis() as u64,
        "js": js,
    })
}

/// How long a driver may take: its run's expected length plus the protocol's grace.
fn limits(scenario: &Value) -> Limits {
    let timeout = Duration::from_millis(scenario["timeout_ms"].as_u64().unwrap_or(5000));
    let expected = match (scenario["duration_ms"].as_u64(), scenario["rate"].as_f64()) {
        (Some(ms), _) => Duration::from_millis(ms),
        (None, Some(r)) if r > 0.0 => {
            Duration::from_secs_f64(scenario["msgs"].as_f64().unwrap_or(0.0) / r)
        }
        // As fast as it can: a counted run has no expected length; silence is the limit.
        _ => Duration::from_secs(600),
    };
    let connect = Duration::from_millis(scenario["connect_timeout_ms"].as_u64().unwrap_or(2000));
    Limits {
        ready: connect + Duration::from_secs(10),
        silence: timeout + Duration::from_secs(5),
        total: expected + timeout + Duration::from_secs(5),
    }
}

pub(super) fn run_driver(
    plan: &Setup<'_>,
    name: &str,
    drivers: &Path,
    stop: &AtomicBool,
) -> Outcome {
    let launch = launch_for(name, drivers).map_err(|why| (Some("driver_missing"), why))?;
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let mut go = |js: Option<Value>| {
        let scenario = driver_scenario(plan, js);
        driver::run(&launch, &scenario, limits(&scenario), stop)
    };
    let (finished, own) = match &plan.around {
        Some(around) => (around.run(&plan.target, &mut go)).map_err(|e| (None, e.to_string()))?,
        None => (go(None), None),
    };
    let f = finished.map_err(|f| {
        let why = if f.stderr_tail.is_empty() {
            f.failure.to_string()
        } else {
            let last = f.stderr_tail.lines().last().unwrap_or_default();
            format!("{} (stderr: {last})", f.failure)
        };
        (Some(f.failure.kind()), why)
    })?;
    let mut params = plan.params.clone();
    params["client"] = name.into();
    let server = ServerMeta {
        url: plan.target.urls[0].to_string(),
        name: String::new(),
        version: String::new(),
        embedded: plan.target.local,
        max_payload: 0,
        auth: "none",
        config: None,
    };
    let mut r = from_driver(plan.scenario, started_at, params, server, &f.result);
    if let Some(section) = own {
        r.own.put_boxed(section);
    }
    Ok((r, f.client, f.cpu_seconds, f.peak_rss_bytes))
}

/// What a driver should have sent and delivered, from msgbench's own plan rather than from the
/// driver's report: a counted run sends `msgs` per publisher whatever the driver says it did,
/// and every subscriber of a fan-out expects every message. Only a run by duration (or one cut
/// short) has to take the driver's count of what it sent.
fn expected_of_driver(
    scenario: &str,
    params: &Value,
    reported_sent: u64,
    interrupted: bool,
) -> (u64, u64) {
    let num = |k: &str| params.get(k).and_then(Value::as_u64);
    let planned = num("msgs")
        .filter(|_| !interrupted)
        .map(|m| m * num("pubs").unwrap_or(1).max(1));
    let sent = planned.unwrap_or(reported_sent);
    let fanout = match scenario {
        "pubsub" | "latency" => num("subs").unwrap_or(1).max(1),
        _ => 1,
    };
    (sent, sent * fanout)
}

/// A driver's result in the native result's shape: msgbench computes the rates, spreads and
/// percentiles itself, the same way for every client.
fn from_driver(
    scenario: &'static str,
    started_at: String,
    params: Value,
    server: ServerMeta,
    d: &Value,
) -> RunResult {
    let errors = ErrorCounts::default();
    let interrupted = d["interrupted"].as_bool().unwrap_or(false);
    let mut r = RunResult::new(scenario, started_at, params, server, &errors, interrupted);
    // A driver reports each client's span, not its clock: spans are laid from one origin.
    let origin = Instant::now();
    let runs: Vec<ClientRun> = d["clients"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let secs = c["seconds"].as_f64().unwrap_or(0.0).max(0.0);
            ClientRun {
                role: if c["role"] == "sub" {
                    Role::Sub
                } else {
                    Role::Pub
                },
                id: c["id"].as_u64().unwrap_or(0) as u32,
                msgs: c["msgs"].as_u64().unwrap_or(0),
                bytes: c["bytes"].as_u64().unwrap_or(0),
                start: Some(origin),
                end: Some(origin + Duration::from_secs_f64(secs)),
            }
        })
        .collect();
    let (throughput, by_role, clients) = throughput_sections(&runs);
    // As the native request and js pub runs do: the headline rate is completed requests
    // (replies, acknowledgements), not requests and replies added together.
    let replies: Vec<&ClientRun> = runs.iter().filter(|c| c.role == Role::Sub).collect();
    r.throughput = if matches!(scenario, "request" | "js.pub") && !replies.is_empty() {
        crate::stats::throughput::Throughput::aggregate(replies)
    } else {
        throughput
    };
    r.by_role = by_role;
    r.clients = clients;
    let dl = &d["delivery"];
    let n = |k: &str| dl[k].as_u64().unwrap_or(0);
    let (sent, expected) =
        expected_of_driver(scenario, &r.params.to_value(), n("sent"), interrupted);
    r.delivery = Delivery {
        sent,
        expected,
        received: n("received"),
        // The driver's own stamp accounting may find more missing (duplicates hide losses
        // in a count); never less than what the counts alone show.
        lost: n("lost").max(expected.saturating_sub(n("received"))),
        duplicated: dl["duplicated"].as_u64(),
        reordered: dl["reordered"].as_u64(),
        unstamped: 0,
        accounting: match dl["accounting"].as_str() {
            Some("exact") => "exact",
            Some("count") => "count",
            _ => "none",
        },
        publishers: Vec::new(),
        missing_seqs: None,
        duplicate_seqs: None,
        unmeasured: Default::default(),
    };
    // A driver that accounted for no arrivals (a publisher alone) counted no loss either.
    if r.delivery.accounting == "none" {
        r.delivery.unmeasured = crate::stats::delivery::Unmeasured::ARRIVALS;
    }
    if let Some(map) = d["errors"].as_object() {
        for (k, v) in map {
            let count = v.as_u64().unwrap_or(0);
            if count == 0 {
                continue;
            }
            let kind = ErrorKind::ALL
                .iter()
                .find(|e| e.as_str() == k)
                .map_or("driver_other", |e| e.as_str());
            *r.errors.entry(kind).or_default() += count;
        }
    }
    let hist = |v: &Value| {
        let b64 = v.get("hdr")?.as_str()?;
        crate::stats::hdr::decode_base64(b64).ok()
    };
    r.latency = hist(&d["latency"]).map(|h| LatencyStats::of(&h));
    r.latency_uncorrected = hist(&d["latency_uncorrected"]).map(|h| LatencyStats::of(&h));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drivers_expected_count_comes_from_the_plan() {
        let counted = json!({"msgs": 1000, "pubs": 2, "subs": 3});
        // A driver that says it sent 10 of a planned 2,000 does not shrink what was expected.
        assert_eq!(
            expected_of_driver("pubsub", &counted, 10, false),
            (2000, 6000)
        );
        assert_eq!(
            expected_of_driver("request", &counted, 10, false),
            (2000, 2000)
        );
        // By duration, or cut short, only the driver knows what it sent.
        let timed = json!({"msgs": null, "pubs": 1, "subs": 2});
        assert_eq!(
            expected_of_driver("pubsub", &timed, 500, false),
            (500, 1000)
        );
        assert_eq!(
            expected_of_driver("pubsub", &counted, 700, true),
            (700, 2100)
        );
    }
}
