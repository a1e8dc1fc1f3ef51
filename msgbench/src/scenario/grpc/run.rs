//! The run of `msgbench grpc`, step by step: find the service ([`service`]: the URL given, or
//! the log service started in this process), read the method's definition and build the data
//! template ([`define`]), plan the calls ([`plan`]), drive the clients (`drive`), and turn what
//! they measured into the result (`assemble`).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::assemble::{assemble, schedule};
use super::drive::drive;
use super::options::{url_of, GrpcOptions, GrpcTarget, SchemaSource};
use super::service::{cores, embedded, Embedded};
use crate::engine::grpc::load::Plan;
use crate::engine::grpc::schema::{self, CallKind, Method};
use crate::engine::grpc::template::Template;
use crate::engine::grpc::{self as g};
use crate::error::{Error, ErrorCounts, Result};
use crate::result::RunResult;
use crate::stats::stages::StageTotals;
use crate::stats::timeline::Meter;

/// Runs `msgbench grpc` once.
///
/// # Errors
/// Bad input found only now (an unknown method, data that does not fit), or no connection.
pub fn run(
    o: &GrpcOptions,
    meter: &Meter,
    stop: &AtomicBool,
    share: Option<crate::scenario::Share<'_>>,
) -> Result<RunResult> {
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let service = service(o)?;
    let def = define(o, &service)?;
    let plan = plan(o, &def.method)?;
    let errors = Arc::new(ErrorCounts::default());
    meter.watch_errors(&errors);
    let stage_totals = o.pace.schedule().and_then(StageTotals::new);
    let outcomes = drive(
        o,
        &plan,
        &def.template,
        &service.target,
        meter,
        stage_totals.as_ref(),
        stop,
        share,
    )
    .map_err(|reason| service.connect_error(reason))?;
    meter.counted_until(outcomes.iter().map(|c| c.last_done));
    let mut result = assemble(o, &def, &service, &outcomes, &errors, started_at, stop);
    result.schedule = schedule(stage_totals.as_ref(), &plan, &outcomes);
    // Stops the log service served in process, once nothing more is asked of it.
    drop(service);
    Ok(result)
}

/// The service a run loads: how to reach it, the URL its result names, and the log service
/// when this process serves it (stopped when this is dropped).
pub(super) struct Service {
    pub target: g::Target,
    pub url: String,
    pub local: Option<Embedded>,
}

impl Service {
    fn connect_error(&self, reason: String) -> Error {
        Error::Connect {
            url: self.url.clone(),
            reason,
        }
    }
}

/// The service: the URL given, or the log service started here on a free loopback port.
fn service(o: &GrpcOptions) -> Result<Service> {
    let (uri, tls, local) = match &o.target {
        GrpcTarget::Url { uri, .. } => (uri.clone(), o.tls, None),
        GrpcTarget::Embedded => {
            // Half the machine for the service in this process: the other half loads it.
            let local = embedded(10_000, (cores() / 2).max(1))?;
            let uri = format!("http://{}", local.addr)
                .parse()
                .expect("a socket address is a URI");
            (uri, None, Some(local))
        }
    };
    let target = g::Target {
        server_name: o.tls_server_name.clone().unwrap_or_else(|| {
            uri.host()
                .unwrap_or_default()
                .trim_matches(['[', ']'])
                .to_string()
        }),
        tls: tls.map(|t| Arc::clone(&t.config)),
        connect_timeout: o.connect_timeout,
        uri,
    };
    Ok(Service {
        url: url_of(&target.uri),
        target,
        local,
    })
}

/// The method to call, as its definition describes it, and how its messages are built.
pub(super) struct Definition {
    pub method: Method,
    pub template: Template,
}

/// Reads the method's definition (built in, compiled from --proto, or asked of the server) and
/// builds the data template against its input type.
fn define(o: &GrpcOptions, service: &Service) -> Result<Definition> {
    let pool = match &o.schema {
        SchemaSource::Builtin => schema::builtin(),
        SchemaSource::Proto { file, includes } => schema::compile(file, includes)
            .map_err(|why| Error::flag("--proto", &file.display().to_string(), why))?,
        SchemaSource::Reflection => reflect(o, service)?,
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
    Ok(Definition { method, template })
}

/// The definition of --call's service, asked of the server (server reflection).
fn reflect(o: &GrpcOptions, service: &Service) -> Result<prost_reflect::DescriptorPool> {
    let name = schema::split_call(&o.call)
        .map(|(s, _)| s.to_string())
        .map_err(|why| Error::flag("--call", &o.call, why))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", e))?;
    rt.block_on(async {
        let ch = g::connect(&service.target)
            .await
            .map_err(|reason| service.connect_error(reason))?;
        tokio::time::timeout(o.timeout, g::reflect(ch, &name))
            .await
            .map_err(|_| {
                Error::Usage(format!(
                    "server reflection did not answer within {:?}; give the service's \
                     definition with --proto",
                    o.timeout
                ))
            })?
            .map_err(|why| Error::Usage(format!("{}: {why}", service.url)))
    })
}

/// How each client calls: messages per call for the method's kind, the metadata, its share of
/// the schedule, the deadline and the local limit of a call.
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

/// A template error as one line that names --data (and the file and line, for @FILE), or the
/// flag it names itself.
pub(super) fn data_error(e: g::template::TemplateError) -> Error {
    if e.0.starts_with("--") {
        Error::Usage(e.0)
    } else {
        Error::Usage(format!("--data {}", e.0))
    }
}
