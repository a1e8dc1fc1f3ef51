//! `msgbench compare --clients native,go,…`: one scenario through several client libraries on
//! one server, side by side. The native engine runs in-process; every other client is a driver
//! process ([`crate::engine::driver`]) given the same scenario. Runs are interleaved (with
//! `--runs N`, each round starts with the next client) so a slow drift of the machine does not
//! land on one client. A client whose toolchain or build is missing is skipped with a note (a
//! failure under MSGBENCH_REQUIRE_DRIVERS=1, as in CI), and one whose driver fails is reported
//! in its row: neither loses the other clients' results.
//!
//! About 680 lines before its tests, past the 600 lines a file aims for: the rounds, the native client and the driver protocol's
//! mapping of a driver's result into msgbench's are one flow; its outputs live in
//! `export::compare`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::{json, Value};

use crate::engine::driver::{self, Launch, Limits};
use crate::error::{exit, Error, ErrorCounts, ErrorKind, Result};
use crate::options::Output;
use crate::result::{throughput_sections, LatencyStats, RunResult, ServerMeta};
use crate::server::Target;
use crate::stats::delivery::Delivery;
use crate::stats::throughput::{ClientRun, Role};
use crate::stats::timeline::Meter;

pub const SCHEMA: &str = "msgbench.compare/v1";

/// The clients msgbench knows how to run.
const CLIENTS: [&str; 7] = ["native", "go", "node", "node-old", "python", "rust", "java"];

/// The native engine's run of the scenario.
type NativeRun<'a> = dyn Fn(&Target, &Meter, &AtomicBool) -> Result<RunResult> + 'a;

/// One scenario as compare runs it, natively and through drivers.
struct Setup<'a> {
    /// The driver protocol's name for it.
    kind: &'static str,
    /// The result's scenario name.
    scenario: &'static str,
    params: Value,
    output: &'a Output,
    allow_loss: bool,
    target: Target,
    native: Box<NativeRun<'a>>,
    js: Option<crate::scenario::js::JsPubOptions>,
    responder: Option<crate::scenario::request::ReplyOptions>,
    /// `--connect-timeout`, which drivers get too.
    connect_timeout: Duration,
}

/// A client's row of the comparison.
#[derive(Debug, Serialize)]
pub struct ClientRow {
    pub name: String,
    /// `ok`, `skipped` or `failed`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// A failed driver's failure kind: driver_missing, driver_error, driver_timeout,
    /// driver_crashed or driver_protocol.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<&'static str>,
    /// What the driver said it is (language, library, version, notes).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub client: Value,
    /// CPU seconds and peak resident bytes of each run, in run order; a peak is null when it
    /// could not be read.
    pub cpu_seconds: Vec<f64>,
    pub peak_rss_bytes: Vec<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<RunResult>,
    #[serde(skip)]
    runs: Vec<RunResult>,
}

/// The `--json` document of a comparison.
#[derive(Debug, Serialize)]
pub struct Comparison {
    pub schema: &'static str,
    pub scenario: &'static str,
    pub runs: u32,
    pub interleaved: bool,
    pub params: Value,
    /// The plan every client ran.
    pub plan: Value,
    pub clients: Vec<ClientRow>,
}

/// Runs `msgbench compare`.
///
/// # Errors
/// Bad flags (an unknown client, a scenario option drivers cannot honour), the server, and
/// failures of the native engine before any load; a driver's failure is a row, not an error.
pub fn run(
    clients: Vec<String>,
    drivers: Option<&Path>,
    planned: crate::plan::Plan,
    stop: &AtomicBool,
) -> Result<Compared> {
    let drivers = drivers_dir(drivers);
    preflight(&clients, &planned)?;
    let plan = plan(&planned)?;
    let uses_drivers = clients.iter().any(|c| c != "native");
    if uses_drivers {
        drivers_can_reach(&plan)?;
    }
    let runs = plan.output.runs.max(1);
    let mut rows: Vec<ClientRow> = clients
        .iter()
        .map(|name| ClientRow {
            name: name.clone(),
            status: "ok",
            why: None,
            failure: None,
            client: Value::Null,
            cpu_seconds: Vec::new(),
            peak_rss_bytes: Vec::new(),
            result: None,
            runs: Vec::new(),
        })
        .collect();
    // CI sets MSGBENCH_REQUIRE_DRIVERS=1: there a driver that cannot start is a failure named
    // in its row, never a quiet "skipped" that leaves the run green.
    let required = std::env::var("MSGBENCH_REQUIRE_DRIVERS").as_deref() == Ok("1");
    for row in &mut rows {
        if row.name != "native" {
            if let Err(why) = launch_for(&row.name, &drivers) {
                if required {
                    eprintln!(
                        "compare: {} fails: {why} (MSGBENCH_REQUIRE_DRIVERS=1)",
                        row.name
                    );
                    row.status = "failed";
                    row.failure = Some("driver_missing");
                } else {
                    eprintln!("SKIPPED: {}: {why}", row.name);
                    row.status = "skipped";
                }
                row.why = Some(why);
            }
        }
    }
    'rounds: for round in 0..runs as usize {
        let n = rows.len();
        for k in 0..n {
            // Each round starts one client later: interleaved, and no client always first.
            let i = (k + round) % n;
            if rows[i].status != "ok" {
                continue;
            }
            if stop.load(Ordering::Relaxed) {
                break 'rounds;
            }
            eprintln!("compare: {} run {}/{runs}", rows[i].name, round + 1);
            let outcome = if rows[i].name == "native" {
                run_native(&plan, stop)
            } else {
                run_driver(&plan, &rows[i].name, &drivers, stop)
            };
            let row = &mut rows[i];
            match outcome {
                Ok((result, client, cpu, rss)) => {
                    row.client = client;
                    row.cpu_seconds.push(cpu);
                    row.peak_rss_bytes.push(rss);
                    row.runs.push(result);
                }
                Err((kind, why)) => {
                    row.status = "failed";
                    row.failure = kind;
                    row.why = Some(why);
                }
            }
        }
    }
    for row in &mut rows {
        let results = std::mem::take(&mut row.runs);
        if !results.is_empty() {
            let mut r = RunResult::combine(results, plan.allow_loss);
            plan.target.annotate(&mut r);
            r.plan = Some(planned.recorded());
            // Every client is judged by the same gates: a CI gate on compare fails when any
            // client misses one, and says which.
            r.thresholds = crate::gate::judge(&plan.output.thresholds, &r);
            for v in r.thresholds.iter().filter(|v| !v.pass) {
                let measured = v.measured.map_or_else(
                    || v.why.unwrap_or("not measured").to_string(),
                    |m| {
                        if v.latency {
                            format!("measured {}", crate::format::duration_ns(m))
                        } else {
                            format!("measured {}", crate::format::group(m.round() as u64))
                        }
                    },
                );
                eprintln!(
                    "compare: {}: threshold {} failed ({measured})",
                    row.name, v.expr
                );
            }
            row.result = Some(r);
        }
    }
    let cmp = Comparison {
        schema: SCHEMA,
        scenario: plan.scenario,
        runs,
        interleaved: rows.len() > 1 && runs > 1,
        params: plan.params.clone(),
        plan: planned.recorded(),
        clients: rows,
    };
    let worst = cmp
        .clients
        .iter()
        .filter_map(|r| r.result.as_ref().map(|x| x.exit_code(plan.allow_loss)))
        .max()
        .unwrap_or(exit::OK);
    let code = if stop.load(Ordering::Relaxed) {
        exit::INTERRUPTED
    } else if cmp.clients.iter().any(|r| r.status == "failed") {
        exit::FAILURE.max(worst)
    } else {
        worst
    };
    Ok(Compared {
        doc: cmp,
        output: plan.output.clone(),
        code,
    })
}

/// A finished comparison: the document, where it goes, and the exit status it earned.
pub struct Compared {
    pub doc: Comparison,
    pub output: Output,
    pub code: u8,
}

/// Where the drivers live: `--drivers`, else `drivers/` in the current directory, else the one
/// beside the repository this binary was built in.
fn drivers_dir(given: Option<&Path>) -> PathBuf {
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
fn launch_for(name: &str, drivers: &Path) -> std::result::Result<Launch, String> {
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

/// The scenario's options, validated as the scenario's own command would, and how to run it
/// natively.
/// What compare needs beyond the plan itself: the validated options (for the driver
/// protocol's parameters), the target, and the native client's run, which is the plan run down
/// the same path as `msgbench <scenario>`.
fn plan(p: &crate::plan::Plan) -> Result<Setup<'static>> {
    let validated = p.validate()?;
    let c = validated.compare()?;
    let (choice, link) = validated.server().expect("compare's scenarios use NATS");
    let target = crate::server::resolve(choice, link)?;
    let (output, allow_loss) = (leak(validated.output().clone()), validated.allow_loss());
    Ok(Setup {
        connect_timeout: c.connect_timeout,
        kind: c.kind,
        scenario: p.name(),
        params: c.params,
        output,
        allow_loss,
        target,
        native: Box::new(move |t, m, stop| {
            crate::plan::execute(&validated, Some(t), None, m, stop, None)
        }),
        js: c.js,
        responder: c.responder,
    })
}

/// Every check a comparison makes before anything starts: what drivers cannot report, the
/// clients' names, and the scenario's plan as compare runs it.
///
/// # Errors
/// The first flag that cannot work, named in one line.
pub fn preflight(clients: &[String], planned: &crate::plan::Plan) -> Result<()> {
    refuse_what_drivers_cannot_report(planned)?;
    for c in clients {
        if !CLIENTS.contains(&c.as_str()) {
            return Err(Error::flag(
                "--clients",
                c,
                format!("unknown client (use {})", CLIENTS.join(", ")),
            ));
        }
    }
    planned.validate()?.compare().map(|_| ())
}

/// Drivers report a run's totals and histograms at its end, not second by second, and keep
/// no recovery log: what needs those is refused for compare rather than shown for one column.
fn refuse_what_drivers_cannot_report(p: &crate::plan::Plan) -> Result<()> {
    let o = p.out();
    if o.distributed() || o.control.is_some() || o.sign.is_some() {
        return Err(Error::Usage(
            "compare: --agents, --agent-label, --control and --sign run one scenario on agents; \
             compare runs client libraries side by side in this process"
                .into(),
        ));
    }
    let refused = [
        ("--live", o.live),
        ("--stream-stats", o.stream_stats.is_some()),
        ("--metrics-listen", o.metrics_listen.is_some()),
        ("--web", o.web.is_some()),
        ("--fault", p.conn().is_some_and(|c| c.fault.is_some())),
    ];
    let recorded = [
        ("--record", o.record.is_some()),
        ("--history-file", o.history_file.is_some()),
        ("--name", o.name.is_some()),
        ("--label", !o.labels.is_empty()),
    ];
    if let Some((flag, _)) = recorded.iter().find(|(_, on)| *on) {
        return Err(Error::Usage(format!(
            "compare: {flag} records runs of one benchmark; a comparison is several clients \
             side by side (record each with `msgbench <scenario> --record`)"
        )));
    }
    match refused.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(Error::Usage(format!(
            "compare: {flag} needs second-by-second figures from every client, and drivers \
             report only at the end of a run; use it with `msgbench <scenario>` directly"
        ))),
        None => Ok(()),
    }
}

/// Options outlive the plan's closures by living for the process (one compare per process).
fn leak<T>(v: T) -> &'static T {
    Box::leak(Box::new(v))
}

/// Drivers connect with a plain URL in protocol v1: no credentials, no TLS.
fn drivers_can_reach(plan: &Setup<'_>) -> Result<()> {
    let url = &plan.target.urls[0];
    if url.tls || !matches!(url.auth, crate::wire::url::Auth::None) {
        return Err(Error::Usage(
            "--clients: drivers connect without credentials or TLS (driver protocol v1); \
             compare such a server with --clients native"
                .into(),
        ));
    }
    Ok(())
}

/// A client's run, or why it has none: the driver's failure kind when a driver failed, and
/// the message.
type Outcome =
    std::result::Result<(RunResult, Value, f64, Option<u64>), (Option<&'static str>, String)>;

fn self_usage() -> (f64, u64) {
    // SAFETY: rusage is plain data the kernel fills in.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (
        secs(u.ru_utime) + secs(u.ru_stime),
        u64::try_from(u.ru_maxrss).unwrap_or(0) * 1024,
    )
}

fn run_native(plan: &Setup<'_>, stop: &AtomicBool) -> Outcome {
    let (cpu0, _) = self_usage();
    let r =
        (plan.native)(&plan.target, &Meter::default(), stop).map_err(|e| (None, e.to_string()))?;
    // msgbench's own process: its peak is the process's peak so far, not this run's alone.
    let (cpu1, rss) = self_usage();
    let client = json!({"language": "rust", "library": "msgbench (native engine)",
                        "version": env!("CARGO_PKG_VERSION")});
    Ok((r, client, cpu1 - cpu0, Some(rss)))
}

/// The driver protocol's scenario for this plan.
fn driver_scenario(plan: &Setup<'_>, stream: Option<&str>) -> Value {
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
        "js": stream.map(|s| json!({"stream": s, "mode": plan.js.as_ref().map_or("async", |j| j.mode.as_str())})),
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

fn run_driver(plan: &Setup<'_>, name: &str, drivers: &Path, stop: &AtomicBool) -> Outcome {
    let launch = launch_for(name, drivers).map_err(|why| (Some("driver_missing"), why))?;
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let go = |stream: Option<&str>| {
        let scenario = driver_scenario(plan, stream);
        driver::run(&launch, &scenario, limits(&scenario), stop)
    };
    let (finished, js) = if let Some(js) = &plan.js {
        let (out, report) = crate::scenario::js::around_driver(js, &plan.target, |cfg| {
            let out = go(Some(&cfg.name));
            let acks = out.as_ref().ok().and_then(|f| driver_acks(&f.result));
            (out, acks)
        })
        .map_err(|e| (None, e.to_string()))?;
        (out, report)
    } else if let Some(reply) = &plan.responder {
        // The echo service runs beside the driver and stops when it is done.
        let done = AtomicBool::new(false);
        let (target, done_ref) = (&plan.target, &done);
        let out = std::thread::scope(|s| {
            let service = s.spawn(move || {
                crate::scenario::request::run_reply(
                    reply,
                    target,
                    &Meter::default(),
                    done_ref,
                    None,
                )
            });
            std::thread::sleep(Duration::from_millis(200));
            let out = go(None);
            done.store(true, Ordering::Relaxed);
            let _ = service.join();
            out
        });
        (out, None)
    } else {
        (go(None), None)
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
    r.jetstream = js;
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

fn driver_acks(result: &Value) -> Option<crate::scenario::js::DriverAcks> {
    let js = result.get("js")?;
    let n = |k: &str| js.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(crate::scenario::js::DriverAcks {
        acked: n("acked"),
        first_seq: n("first_seq"),
        last_seq: n("last_seq"),
        duplicate_acks: n("duplicate_acks"),
    })
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
