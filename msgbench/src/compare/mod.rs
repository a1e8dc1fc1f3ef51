//! `msgbench compare --clients native,go,…`: one scenario through several client libraries on
//! one server, side by side. The native engine runs in-process; every other client is a driver
//! process ([`crate::engine::driver`]) given the same scenario. Runs are interleaved (with
//! `--runs N`, each round starts with the next client) so a slow drift of the machine does not
//! land on one client. A client whose toolchain or build is missing is skipped with a note (a
//! failure under MSGBENCH_REQUIRE_DRIVERS=1, as in CI), and one whose driver fails is reported
//! in its row: neither loses the other clients' results.
//!
//! The rounds, the native client and the driver protocol's mapping of a driver's result into
//! msgbench's are one flow; the document is `result::compare`, its outputs `export::compare`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

use crate::error::{exit, Error, Result};
use crate::options::Output;
use crate::result::RunResult;
use crate::server::Target;
use crate::stats::timeline::Meter;

pub use crate::result::compare::{ClientRow, Comparison, SCHEMA};

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
    /// What the scenario runs around each driver (a stream, an echo service).
    around: Option<std::sync::Arc<dyn crate::scenario::Around>>,
    /// `--connect-timeout`, which drivers get too.
    connect_timeout: Duration,
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

/// The scenario's options, validated as the scenario's own command would, and how to run it
/// natively.
/// What compare needs beyond the plan itself: the validated options (for the driver
/// protocol's parameters), the target, and the native client's run, which is the plan run down
/// the same path as `msgbench <scenario>`.
fn plan(p: &crate::plan::Plan) -> Result<Setup<'static>> {
    let validated = p.validate()?;
    let c = validated.compare()?;
    let crate::scenario::Load::Nats {
        server: choice,
        link,
        ..
    } = &validated.common().load
    else {
        return Err(Error::Usage(format!(
            "compare runs scenarios that load NATS, not `{}`",
            p.name()
        )));
    };
    let target = crate::server::resolve(choice, *link)?;
    let (output, allow_loss) = (leak(Output::from(p.out())), validated.common().allow_loss);
    Ok(Setup {
        connect_timeout: c.connect_timeout,
        kind: c.kind,
        scenario: p.name(),
        params: c.params,
        output,
        allow_loss,
        target,
        native: Box::new(move |t, m, stop| {
            crate::plan::execute(
                &validated,
                &crate::scenario::Ctx {
                    main: Some(t),
                    second: None,
                    meter: m,
                    stop,
                    share: None,
                    progress: false,
                },
            )
        }),
        around: c.around,
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
/// no recovery log: what needs those is refused for compare rather than shown for one column
/// (the output flags by the one table of refusals, a fault here).
fn refuse_what_drivers_cannot_report(p: &crate::plan::Plan) -> Result<()> {
    crate::session::refusals::check(p.out(), crate::session::refusals::Mode::Compare)?;
    if let Some(c) = p.conn() {
        crate::options::monitor::refuse_typed(
            c,
            "compare",
            "drivers report only at the end of a run, so no client's timeline holds the \
             server's samples; use it with `msgbench <scenario>` directly",
        )?;
    }
    if p.conn().is_some_and(|c| c.fault.is_some()) {
        return Err(Error::Usage(
            "--fault does not apply to `msgbench compare`: its recovery figures need \
             second-by-second figures from every client, and drivers report only at the end of \
             a run; use it with `msgbench <scenario>` directly"
                .into(),
        ));
    }
    Ok(())
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

mod drivers;

use drivers::{drivers_dir, launch_for, run_driver};
