//! `msgbench grpc`: who connects and does what. Resolves the target (or serves the log service
//! in process), the method's definition and the data template; spreads clients over
//! connections and connections over threads; runs the load loop; and turns the clients' raw
//! facts into the common result, with a `grpc` section for what only gRPC has.
//!
//! Also the two helpers: `grpc serve` (the log service as a process of its own, [`serve`])
//! and `grpc encode` (the cost of building and encoding messages apart from any I/O,
//! [`encode`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::engine::grpc::load::{add_status, Client, ClientOutcome, Pacer, Plan, StatusCounts};
use crate::engine::grpc::schema::{self, CallKind, Method};
use crate::engine::grpc::template::Template;
use crate::engine::grpc::{self as g, code_name};
use crate::engine::pace::Pace;
use crate::error::{Error, ErrorCounts, ErrorKind, Result};
use crate::options::grpc::{GrpcOptions, GrpcTarget, SchemaSource};
use crate::result::GrpcReport;
use crate::result::{
    throughput_sections, LatencyStats, Pacing, RunResult, ScheduleReport, ServerMeta,
};
use crate::stats::delivery::Delivery;
use crate::stats::latency::new_histogram;
use crate::stats::stages::StageTotals;
use crate::stats::throughput::{ClientRun, Role, Throughput};
use crate::stats::timeline::Meter;

mod encode;
mod serve;

pub use encode::encode;
pub use serve::serve;

/// `msgbench grpc`, with its two helpers `grpc serve` and `grpc encode`.
pub struct Grpc;

super::registry::flags!(crate::cli::GrpcArgs, out);

impl super::Scenario for Grpc {
    type Args = crate::cli::GrpcArgs;
    const NAME: &'static str = "grpc";
    const WORDS: &'static [&'static str] = &["grpc"];
    const ABOUT: &'static str = "gRPC load against any service (unary, client/server \
                                 streaming, bidi), open or closed loop, with per-message \
                                 latency; `grpc serve` runs the reference log service and \
                                 `grpc encode` times message building and encoding apart from \
                                 I/O.";
    const CAPACITY: Option<&'static str> = Some("grpc");
    fn command(cmd: clap::Command) -> clap::Command {
        use clap::Args as _;
        cmd.args_conflicts_with_subcommands(true)
            .subcommand(
                crate::cli::GrpcServeArgs::augment_args(clap::Command::new("serve")).about(
                    "Serve the reference service, msgbench.log.v1.Log (an append-only log of \
                     named streams; proto/msgbench/log/v1/log.proto), with server reflection.",
                ),
            )
            .subcommand(
                crate::cli::GrpcEncodeArgs::augment_args(clap::Command::new("encode")).about(
                    "Time building messages from JSON, protobuf encoding and base64 apart from \
                     any I/O: ns and bytes per message for each step.",
                ),
            )
    }
    fn validate(a: &Self::Args) -> Result<Box<dyn super::Runnable>> {
        Ok(Box::new(GrpcOptions::new(a)?))
    }
    fn helper(name: &str, m: &clap::ArgMatches, stop: &AtomicBool) -> Result<u8> {
        use clap::FromArgMatches as _;
        let bad = |e: clap::Error| Error::Usage(crate::cli::one_line(&e));
        match name {
            "serve" => serve(
                &crate::cli::GrpcServeArgs::from_arg_matches(m).map_err(bad)?,
                stop,
            ),
            "encode" => {
                let a = crate::cli::GrpcEncodeArgs::from_arg_matches(m).map_err(bad)?;
                if let Some(p) = a
                    .json
                    .as_deref()
                    .filter(|p| *p != std::path::Path::new("-"))
                {
                    crate::options::dest::check("--json", p)?;
                }
                let report = encode(&a)?;
                encode::print(&report, a.json.as_deref())?;
                Ok(crate::error::exit::OK)
            }
            other => Err(Error::Usage(format!("`grpc {other}` is not a command"))),
        }
    }
}

impl super::Runnable for GrpcOptions {
    fn output(&self) -> &crate::options::Output {
        &self.output
    }
    fn allow_loss(&self) -> bool {
        self.allow_loss
    }
    fn schedule(&self) -> Option<&crate::stats::schedule::RateSchedule> {
        self.pace.schedule().filter(|s| !s.is_fixed())
    }
    fn split(&self) -> Result<super::Split> {
        Err(super::not_on_agents("grpc"))
    }
    fn timeout(&self) -> std::time::Duration {
        self.timeout
    }
    fn params(&self) -> crate::result::Params {
        GrpcOptions::params(self, "", "").into()
    }
    fn run(&self, ctx: &super::Ctx<'_>) -> Result<RunResult> {
        run(self, ctx.meter, ctx.stop)
    }
}

/// The log service running in this process, for a run given no --server; stopped on drop.
struct Embedded {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Embedded {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves the log service on a free loopback port, on threads of its own.
fn embedded(retain: usize, threads: usize) -> Result<Embedded> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::io("cannot listen on a loopback port for the log service", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("log service address", e))?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("grpc-serve".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads.max(1))
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let _ = serve_on(listener, retain, None, async {
                    let _ = rx.await;
                })
                .await;
            });
        })
        .map_err(|e| Error::io("cannot start the log service thread", e))?;
    Ok(Embedded {
        addr,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}

/// Serves the log service and reflection on `listener` until `shutdown` resolves.
async fn serve_on(
    listener: std::net::TcpListener,
    retain: usize,
    tls: Option<tonic::transport::ServerTlsConfig>,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::result::Result<Arc<g::log::LogService>, String> {
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let state = Arc::new(g::log::LogService::new(retain));
    let mut builder = tonic::transport::Server::builder()
        // A write flood keeps thousands of calls open on one connection; the HTTP/2 default of
        // a couple of hundred would make the client queue, not the service.
        .max_concurrent_streams(Some(16_384))
        .initial_stream_window_size(Some(1 << 20))
        .initial_connection_window_size(Some(16 << 20));
    if let Some(tls) = tls {
        builder = builder.tls_config(tls).map_err(|e| e.to_string())?;
    }
    builder
        .add_service(g::log::server(Arc::clone(&state)))
        .add_service(g::log::reflection())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(|e| e.to_string())?;
    Ok(state)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Runs `msgbench grpc` once.
///
/// # Errors
/// Bad input found only now (an unknown method, data that does not fit), or no connection.
pub fn run(o: &GrpcOptions, meter: &Meter, stop: &AtomicBool) -> Result<RunResult> {
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    // Half the machine for the service when it runs in this process: the other half loads it.
    let local = match o.target {
        GrpcTarget::Embedded => Some(embedded(10_000, (cores() / 2).max(1))?),
        GrpcTarget::Url { .. } => None,
    };
    let (uri, tls) = match (&o.target, &local) {
        (GrpcTarget::Url { uri, .. }, _) => (uri.clone(), o.tls),
        (GrpcTarget::Embedded, Some(l)) => (
            format!("http://{}", l.addr)
                .parse()
                .expect("a socket address is a URI"),
            None,
        ),
        (GrpcTarget::Embedded, None) => unreachable!("the embedded service was started"),
    };
    let url = uri.to_string().trim_end_matches('/').to_string();
    let target = g::Target {
        server_name: o.tls_server_name.clone().unwrap_or_else(|| {
            uri.host()
                .unwrap_or_default()
                .trim_matches(['[', ']'])
                .to_string()
        }),
        uri,
        tls: tls.map(|t| Arc::clone(&t.config)),
        connect_timeout: o.connect_timeout,
    };
    let connect_error = |reason: String| Error::Connect {
        url: url.clone(),
        reason,
    };
    let pool = match &o.schema {
        SchemaSource::Builtin => schema::builtin(),
        SchemaSource::Proto { file, includes } => schema::compile(file, includes)
            .map_err(|why| Error::flag("--proto", &file.display().to_string(), why))?,
        SchemaSource::Reflection => {
            let service = schema::split_call(&o.call)
                .map(|(s, _)| s.to_string())
                .map_err(|why| Error::flag("--call", &o.call, why))?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Error::io("tokio runtime", e))?;
            rt.block_on(async {
                let ch = g::connect(&target).await.map_err(&connect_error)?;
                tokio::time::timeout(o.timeout, g::reflect(ch, &service))
                    .await
                    .map_err(|_| {
                        Error::Usage(format!(
                            "server reflection did not answer within {:?}; give the \
                             service's definition with --proto",
                            o.timeout
                        ))
                    })?
                    .map_err(|why| Error::Usage(format!("{url}: {why}")))
            })?
        }
    };
    let method =
        schema::method(&pool, &o.call).map_err(|why| Error::flag("--call", &o.call, why))?;
    let template = Template::new(
        &o.data.lines,
        &o.data.origin,
        method.input.clone(),
        o.streams,
    )
    .map_err(data_error)?;
    let plan = plan(o, &method)?;
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let stage_totals = o.pace.schedule().and_then(StageTotals::new);
    let outcomes = drive(
        o,
        &plan,
        &template,
        &target,
        meter,
        stage_totals.as_ref(),
        stop,
    )
    .map_err(connect_error)?;
    let schema_name = match &o.schema {
        SchemaSource::Proto { file, .. } => file.display().to_string(),
        SchemaSource::Reflection => "reflection".into(),
        SchemaSource::Builtin => "builtin".into(),
    };
    meter.counted_until(outcomes.iter().map(|c| c.last_done));
    let mut result = assemble(
        o,
        &method,
        schema_name,
        &url,
        local.is_some(),
        &outcomes,
        &errors,
        started_at,
        stop,
    );
    result.schedule = stage_totals.as_ref().map(|totals| {
        let sc = totals.schedule();
        let mut sent = vec![0u64; sc.stages().len()];
        if let Some(part) = &plan.schedule {
            for c in &outcomes {
                for (t, n) in sent.iter_mut().zip(part.sent_by_stage(c.requests)) {
                    *t += n;
                }
            }
        }
        ScheduleReport::new(sc, &sent, 1, Some(totals.take()))
    });
    drop(local);
    Ok(result)
}

fn plan(o: &GrpcOptions, m: &Method) -> Result<Plan> {
    let per_call = match (m.kind, o.messages_per_call) {
        (CallKind::ClientStreaming, n) => n.unwrap_or(100),
        (CallKind::Bidi, n) => n.unwrap_or(u64::MAX),
        (_, Some(_)) => {
            return Err(Error::Usage(format!(
                "--messages-per-call applies to client-streaming and bidi methods; {} is {}",
                m.name,
                m.kind.as_str()
            )))
        }
        (_, None) => 1,
    };
    let mut headers = tonic::metadata::MetadataMap::new();
    for (k, v) in &o.headers {
        if k.ends_with("-bin") {
            use base64::Engine as _;
            let raw = base64::engine::general_purpose::STANDARD
                .decode(v)
                .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(v))
                .expect("checked when parsed");
            headers.append_bin(
                tonic::metadata::BinaryMetadataKey::from_bytes(k.as_bytes()).expect("checked"),
                tonic::metadata::BinaryMetadataValue::from_bytes(&raw),
            );
        } else {
            headers.append(
                tonic::metadata::AsciiMetadataKey::from_bytes(k.as_bytes()).expect("checked"),
                v.parse().expect("checked when parsed"),
            );
        }
    }
    Ok(Plan {
        path: m.path.parse().expect("a method path is a valid path"),
        kind: m.kind,
        in_flight: o.in_flight,
        per_call,
        // Every client's request k is due together (one pacer releases them): each client
        // keeps the run's every n-th due time.
        schedule: o.pace.schedule().map(|sc| sc.share(0, o.clients)),
        stop: o.stop,
        deadline: o.deadline,
        limit: o.deadline.unwrap_or(o.timeout),
        headers,
    })
}

/// Opens the connections (each on one thread, with the clients using it), starts every
/// client at once, and gathers what they measured.
fn drive(
    o: &GrpcOptions,
    plan: &Plan,
    template: &Template,
    target: &g::Target,
    meter: &Meter,
    stages: Option<&StageTotals>,
    stop: &AtomicBool,
) -> std::result::Result<Vec<ClientOutcome>, String> {
    let threads = (o.connections as usize).min(cores()).max(1);
    let client_meters: Vec<_> = (0..o.clients)
        .map(|id| meter.client(Role::Pub, id, true))
        .collect();
    let (ready_tx, ready_rx) = mpsc::channel::<std::result::Result<(), String>>();
    let mut starts = Vec::new();
    let outcomes = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for t in 0..threads {
            let (start_tx, start_rx) = mpsc::channel::<Option<Instant>>();
            starts.push(start_tx);
            let ready_tx = ready_tx.clone();
            let client_meters = &client_meters;
            handles.push(scope.spawn(move || -> Vec<ClientOutcome> {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return Vec::new();
                    }
                };
                // This thread's connections, and which clients use each.
                let mine: Vec<u32> = (0..o.connections)
                    .filter(|c| *c as usize % threads == t)
                    .collect();
                let connected = rt.block_on(async {
                    let mut channels = Vec::new();
                    for _ in &mine {
                        channels.push(g::connect(target).await?);
                    }
                    Ok::<_, String>(channels)
                });
                let channels = match connected {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return Vec::new();
                    }
                };
                let _ = ready_tx.send(Ok(()));
                let Ok(Some(start)) = start_rx.recv() else {
                    return Vec::new();
                };
                let pacer = plan.schedule.as_ref().map(|_| Pacer::default());
                let clients = (0..o.clients).filter_map(|id| {
                    let conn = id % o.connections;
                    let k = mine.iter().position(|c| *c == conn)?;
                    Some(
                        Client {
                            id,
                            channel: channels[k].clone(),
                            plan,
                            template,
                            start,
                            meter: &client_meters[id as usize],
                            stop,
                            pacer: pacer.as_ref(),
                            stages,
                        }
                        .run(),
                    )
                });
                let all = futures_util::future::join_all(clients);
                std::thread::scope(|s| {
                    if let (Some(pacer), Some(schedule)) = (&pacer, plan.schedule.as_ref()) {
                        s.spawn(move || pacer.run(schedule, start, plan.stop, stop));
                    }
                    let out = rt.block_on(all);
                    if let Some(p) = &pacer {
                        p.finish();
                    }
                    out
                })
            }));
        }
        drop(ready_tx);
        let mut failure = None;
        for _ in 0..threads {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    failure.get_or_insert(e);
                }
                Err(_) => {
                    failure.get_or_insert_with(|| "a connection thread ended early".to_string());
                }
            }
        }
        let start = failure.is_none().then(Instant::now);
        if let (Some(at), Some(sc)) = (start, o.pace.schedule()) {
            meter.follow_schedule(at, sc);
        }
        for s in &starts {
            let _ = s.send(start);
        }
        let mut all: Vec<ClientOutcome> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect();
        all.sort_by_key(|c| c.id);
        match failure {
            Some(e) => Err(e),
            None => Ok(all),
        }
    })?;
    Ok(outcomes)
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    o: &GrpcOptions,
    method: &Method,
    schema_name: String,
    url: &str,
    embedded: bool,
    clients: &[ClientOutcome],
    errors: &ErrorCounts,
    started_at: String,
    stop: &AtomicBool,
) -> RunResult {
    let mut status: StatusCounts = [0; 17];
    let mut corrected = new_histogram();
    let mut uncorrected = new_histogram();
    let mut call = new_histogram();
    let mut first = new_histogram();
    let mut lag = new_histogram();
    for c in clients {
        add_status(&mut status, &c.status);
        corrected.add(&c.corrected).expect("same bounds");
        uncorrected.add(&c.uncorrected).expect("same bounds");
        call.add(&c.call).expect("same bounds");
        first.add(&c.first).expect("same bounds");
        lag.add(&c.send_lag).expect("same bounds");
    }
    // Every call not OK is one `rpc_failed`; `grpc.status` has them by code.
    errors.add_n(ErrorKind::RpcFailed, status[1..].iter().sum());
    let sum = |f: fn(&ClientOutcome) -> u64| clients.iter().map(f).sum::<u64>();
    let requests = sum(|c| c.requests);
    let requests_ok = sum(|c| c.requests_ok);
    let runs: Vec<ClientRun> = clients
        .iter()
        .map(|c| ClientRun {
            role: Role::Pub,
            id: c.id,
            msgs: c.requests_ok,
            // Rates and volumes of one population: the requests answered OK.
            bytes: c.bytes_ok,
            start: c.first_sent,
            end: c.last_done,
        })
        .collect();
    let (_, by_role, client_stats) = throughput_sections(&runs);
    // The headline: requests answered OK per second, over the span of the run.
    let throughput = Throughput::aggregate(&runs);
    let open_loop = o.pace.is_open();
    let pacing = match &o.pace {
        Pace::Open(sc) => {
            let per_sec = sc.mean_rate();
            let seconds = throughput.seconds;
            let actual = (seconds > 0.0).then(|| requests as f64 / seconds);
            Some(Pacing::new(
                per_sec,
                actual,
                1_000_000,
                late(&lag, 1_000_000),
                &lag,
            ))
        }
        Pace::Unlimited => None,
    };
    let streaming = method.kind != CallKind::Unary;
    let report = GrpcReport {
        method: method.name.clone(),
        kind: method.kind.as_str(),
        schema: schema_name,
        requests,
        requests_ok,
        calls: status.iter().sum(),
        calls_ok: status[0],
        messages_sent: sum(|c| c.msgs_out),
        messages_received: sum(|c| c.msgs_in),
        bytes_sent: sum(|c| c.bytes_out),
        bytes_received: sum(|c| c.bytes_in),
        status: status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (code_name(tonic::Code::from_i32(code as i32)), *n))
            .collect(),
        call_latency: (streaming && !call.is_empty()).then(|| LatencyStats::of(&call)),
        first_response: (method.kind == CallKind::ServerStreaming && !first.is_empty())
            .then(|| LatencyStats::of(&first)),
        template_errors: sum(|c| c.template_errors),
        connections: o.connections,
        tls: o.tls.is_some(),
    };
    let delivery = Delivery {
        sent: requests,
        expected: requests,
        received: requests_ok,
        lost: requests.saturating_sub(requests_ok),
        duplicated: None,
        reordered: None,
        unstamped: 0,
        accounting: "acknowledged",
        publishers: Vec::new(),
        missing_seqs: None,
        duplicate_seqs: None,
    };
    let server = ServerMeta {
        url: url.to_string(),
        name: if embedded {
            "msgbench grpc serve".into()
        } else {
            String::new()
        },
        version: if embedded {
            env!("CARGO_PKG_VERSION").into()
        } else {
            String::new()
        },
        embedded,
        max_payload: 0,
        auth: "none",
    };
    RunResult {
        plan: None,
        throughput,
        by_role,
        clients: client_stats,
        delivery,
        latency: Some(LatencyStats::of(&corrected)),
        latency_uncorrected: open_loop.then(|| LatencyStats::of(&uncorrected)),
        pacing,
        grpc: Some(report),
        ..RunResult::new(
            "grpc",
            started_at,
            o.params(method.kind.as_str(), url),
            server,
            errors,
            stop.load(Ordering::Relaxed),
        )
    }
}

/// A template error as one line that names --data (and the file and line, for @FILE).
fn data_error(e: g::template::TemplateError) -> Error {
    if e.0.starts_with("--data") {
        Error::Usage(e.0)
    } else {
        Error::Usage(format!("--data {}", e.0))
    }
}

/// Sends more than `bound` ns behind their schedule.
fn late(lag: &Histogram<u64>, bound: u64) -> u64 {
    lag.iter_recorded()
        .filter(|v| v.value_iterated_to() > bound)
        .map(|v| v.count_at_value())
        .sum()
}
