//! A gRPC run's result from what its clients measured: their histograms merged, requests
//! answered OK as the headline throughput and as delivery (a request is delivered when it is
//! acknowledged), pacing for an open loop, and the `grpc` section for what only gRPC has.

use std::sync::atomic::{AtomicBool, Ordering};

use hdrhistogram::Histogram;

use super::options::GrpcOptions;
use super::run::{Definition, Service};
use crate::engine::grpc::code_name;
use crate::engine::grpc::load::{add_status, ClientOutcome, Plan, StatusCounts};
use crate::engine::grpc::schema::CallKind;
use crate::engine::pace::Pace;
use crate::error::{ErrorCounts, ErrorKind};
use crate::result::{
    throughput_sections, GrpcReport, LatencyStats, Pacing, RunResult, ScheduleReport, ServerMeta,
};
use crate::stats::delivery::Delivery;
use crate::stats::latency::new_histogram;
use crate::stats::stages::StageTotals;
use crate::stats::throughput::{ClientRun, Role, Throughput};

/// Every client's figures added up.
struct Merged {
    status: StatusCounts,
    corrected: Histogram<u64>,
    uncorrected: Histogram<u64>,
    call: Histogram<u64>,
    first: Histogram<u64>,
    lag: Histogram<u64>,
}

fn merge(clients: &[ClientOutcome]) -> Merged {
    let mut m = Merged {
        status: [0; 17],
        corrected: new_histogram(),
        uncorrected: new_histogram(),
        call: new_histogram(),
        first: new_histogram(),
        lag: new_histogram(),
    };
    for c in clients {
        add_status(&mut m.status, &c.status);
        m.corrected.add(&c.corrected).expect("same bounds");
        m.uncorrected.add(&c.uncorrected).expect("same bounds");
        m.call.add(&c.call).expect("same bounds");
        m.first.add(&c.first).expect("same bounds");
        m.lag.add(&c.send_lag).expect("same bounds");
    }
    m
}

/// The run's result, its parameters completed with what only the run knew: the service's URL
/// and the method's kind.
pub(super) fn assemble(
    o: &GrpcOptions,
    def: &Definition,
    service: &Service,
    clients: &[ClientOutcome],
    errors: &ErrorCounts,
    started_at: String,
    stop: &AtomicBool,
) -> RunResult {
    let m = merge(clients);
    // Every call not OK is one `rpc_failed`; `grpc.status` has them by code.
    errors.add_n(ErrorKind::RpcFailed, m.status[1..].iter().sum());
    let requests: u64 = clients.iter().map(|c| c.requests).sum();
    let requests_ok: u64 = clients.iter().map(|c| c.requests_ok).sum();
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
    let pacing = match &o.pace {
        Pace::Open(sc) => {
            let seconds = throughput.seconds;
            let actual = (seconds > 0.0).then(|| requests as f64 / seconds);
            Some(Pacing::new(
                // On an agent the target is its clients' share of the aggregate rate.
                sc.mean_rate() * clients.len() as f64 / f64::from(o.clients.max(1)),
                actual,
                1_000_000,
                late(&m.lag, 1_000_000),
                &m.lag,
            ))
        }
        Pace::Unlimited => None,
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
        unmeasured: Default::default(),
    };
    let mut params = o.params();
    params.url = Some(service.url.clone());
    params.kind = Some(def.method.kind.as_str());
    let mut r = RunResult {
        plan: None,
        throughput,
        by_role,
        clients: client_stats,
        delivery,
        latency: Some(LatencyStats::of(&m.corrected)),
        latency_uncorrected: o.pace.is_open().then(|| LatencyStats::of(&m.uncorrected)),
        pacing,
        ..RunResult::new(
            "grpc",
            started_at,
            crate::result::Params::of(params),
            server(service),
            errors,
            stop.load(Ordering::Relaxed),
        )
    };
    r.own.put(report(o, def, clients, &m));
    r
}

/// The `grpc` section: calls by status, messages and bytes both ways, and the latencies only
/// streaming methods have.
fn report(o: &GrpcOptions, def: &Definition, clients: &[ClientOutcome], m: &Merged) -> GrpcReport {
    let sum = |f: fn(&ClientOutcome) -> u64| clients.iter().map(f).sum::<u64>();
    let kind = def.method.kind;
    GrpcReport {
        method: def.method.name.clone(),
        kind: kind.as_str(),
        schema: o.schema.name(),
        requests: sum(|c| c.requests),
        requests_ok: sum(|c| c.requests_ok),
        calls: m.status.iter().sum(),
        calls_ok: m.status[0],
        messages_sent: sum(|c| c.msgs_out),
        messages_received: sum(|c| c.msgs_in),
        bytes_sent: sum(|c| c.bytes_out),
        bytes_received: sum(|c| c.bytes_in),
        status: m
            .status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (code_name(tonic::Code::from_i32(code as i32)), *n))
            .collect(),
        call_latency: (kind != CallKind::Unary && !m.call.is_empty())
            .then(|| LatencyStats::of(&m.call)),
        first_response: (kind == CallKind::ServerStreaming && !m.first.is_empty())
            .then(|| LatencyStats::of(&m.first)),
        template_errors: sum(|c| c.template_errors),
        // The connections these clients used (client `id` on `id mod --connections`): on an
        // agent, those of its own host.
        connections: {
            let mut used: Vec<u32> = clients.iter().map(|c| c.id % o.connections).collect();
            used.sort_unstable();
            used.dedup();
            used.len() as u32
        },
        tls: o.tls.is_some(),
    }
}

/// The service as the result describes it: for the one served in process, msgbench's own.
fn server(service: &Service) -> ServerMeta {
    let embedded = service.local.is_some();
    let (name, version) = if embedded {
        (
            "msgbench grpc serve".into(),
            env!("CARGO_PKG_VERSION").into(),
        )
    } else {
        (String::new(), String::new())
    };
    ServerMeta {
        url: service.url.clone(),
        name,
        version,
        embedded,
        max_payload: 0,
        auth: "none",
        config: None,
    }
}

/// Each stage's figures of a run on a rate schedule: its requests due, from every client's
/// count, and what the clients timed in it.
pub(super) fn schedule(
    totals: Option<&StageTotals>,
    plan: &Plan,
    clients: &[ClientOutcome],
) -> Option<ScheduleReport> {
    totals.map(|totals| {
        let sc = totals.schedule();
        let mut sent = vec![0u64; sc.stages().len()];
        if let Some(part) = &plan.schedule {
            for c in clients {
                for (t, n) in sent.iter_mut().zip(part.sent_by_stage(c.requests)) {
                    *t += n;
                }
            }
        }
        ScheduleReport::new(sc, &sent, 1, Some(totals.take()))
    })
}

/// Sends more than `bound` ns behind their schedule.
fn late(lag: &Histogram<u64>, bound: u64) -> u64 {
    lag.iter_recorded()
        .filter(|v| v.value_iterated_to() > bound)
        .map(|v| v.count_at_value())
        .sum()
}

/// One agent's `grpc` section, as its result document has it.
#[derive(Debug, serde::Deserialize)]
struct GrpcShare {
    method: String,
    kind: String,
    schema: String,
    requests: u64,
    requests_ok: u64,
    calls: u64,
    calls_ok: u64,
    messages_sent: u64,
    messages_received: u64,
    bytes_sent: u64,
    bytes_received: u64,
    status: std::collections::BTreeMap<String, u64>,
    call_latency: Option<Hdr>,
    first_response: Option<Hdr>,
    template_errors: u64,
    connections: u32,
    tls: bool,
}

#[derive(Debug, serde::Deserialize)]
struct Hdr {
    hdr: String,
}

/// The coordinator's part of a gRPC run on agents: the agents' `grpc` sections added up
/// (counts and status codes summed, connections counted on every host, the call and
/// first-response latencies from their histograms added bucket by bucket). With an agent
/// missing there is no section: what it did is unknown.
///
/// # Errors
/// A histogram an agent sent that cannot be read.
pub(super) fn conclude(o: &GrpcOptions, merged: &mut RunResult) -> crate::error::Result<()> {
    let agents = merged.agent_entries();
    let shares: Option<Vec<GrpcShare>> = agents.iter().map(|a| a.part("/grpc")).collect();
    let Some(shares) = shares.filter(|s| !s.is_empty()) else {
        return Ok(());
    };
    let sum = |f: fn(&GrpcShare) -> u64| shares.iter().map(f).sum::<u64>();
    let added = |f: fn(&GrpcShare) -> Option<&Hdr>| -> crate::error::Result<Option<LatencyStats>> {
        let mut total = new_histogram();
        for h in shares.iter().filter_map(f) {
            let part = crate::stats::hdr::decode_base64(&h.hdr).map_err(|e| {
                crate::error::Error::Agent(format!("a gRPC latency histogram: {e}"))
            })?;
            let _ = total.add(&part);
        }
        Ok((!total.is_empty()).then(|| LatencyStats::of(&total)))
    };
    let mut status = std::collections::BTreeMap::new();
    for s in &shares {
        for (name, n) in &s.status {
            // Status names are gRPC's own: the 17 codes.
            if let Some(code) = (0..17)
                .map(|i| code_name(tonic::Code::from_i32(i)))
                .find(|c| c == name)
            {
                *status.entry(code).or_insert(0) += n;
            }
        }
    }
    let first = &shares[0];
    // The method's kind, which the agents read from its definition.
    let kind = [
        CallKind::Unary,
        CallKind::ClientStreaming,
        CallKind::ServerStreaming,
        CallKind::Bidi,
    ]
    .into_iter()
    .map(CallKind::as_str)
    .find(|k| *k == first.kind);
    let mut params = o.params();
    params.kind = kind;
    merged.params = crate::result::Params::of(params);
    merged.own.put(GrpcReport {
        method: first.method.clone(),
        kind: kind.unwrap_or("unary"),
        schema: first.schema.clone(),
        requests: sum(|s| s.requests),
        requests_ok: sum(|s| s.requests_ok),
        calls: sum(|s| s.calls),
        calls_ok: sum(|s| s.calls_ok),
        messages_sent: sum(|s| s.messages_sent),
        messages_received: sum(|s| s.messages_received),
        bytes_sent: sum(|s| s.bytes_sent),
        bytes_received: sum(|s| s.bytes_received),
        status,
        call_latency: added(|s| s.call_latency.as_ref())?,
        first_response: added(|s| s.first_response.as_ref())?,
        template_errors: sum(|s| s.template_errors),
        connections: shares.iter().map(|s| s.connections).sum(),
        tls: first.tls,
    });
    Ok(())
}
