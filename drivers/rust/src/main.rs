//! msgbench driver for Rust's async-nats client (protocol `msgbench.driver/v1`, see
//! `spec/driver-protocol.md` in the msgbench repository).
//!
//! msgbench starts this binary, writes a scenario line on stdin, and reads protocol lines from
//! stdout: `ready` once connected, `progress` about once a second after `start`, then the
//! `result`; or an `error` line and exit status 2 when the scenario cannot run. Anything for
//! humans goes to stderr.

use std::sync::Arc;

use msgbench_driver_rust::control::{self, spawn_commands, Begin, DriverError, Stop};
use msgbench_driver_rust::errors::ErrorCounts;
use msgbench_driver_rust::kinds::{self, Ctx, Prepared};
use msgbench_driver_rust::meter;
use msgbench_driver_rust::protocol::{emit, ClientInfo, ErrorKind, Out, RunResult};

/// Exit status of a driver that cannot run its scenario.
const EXIT_CANNOT_RUN: i32 = 2;

#[tokio::main]
async fn main() {
    install_panic_report();
    let code = drive().await;
    // Exit explicitly: tokio reads stdin on a blocking thread that cannot be interrupted, and
    // waiting for the runtime to shut down would wait for msgbench to close our stdin.
    std::process::exit(code);
}

/// The whole conversation; returns the exit status.
async fn drive() -> i32 {
    let mut lines = control::stdin_lines();
    let scenario = match control::read_scenario(&mut lines).await {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    if let Err(e) = kinds::validate(&scenario) {
        return fail(&e);
    }
    let stop = Arc::new(Stop::default());
    // Read commands from now on, so a stop during setup is not missed.
    let begin = spawn_commands(lines, stop.clone());
    let ctx = Ctx {
        scn: Arc::new(scenario),
        errors: Arc::new(ErrorCounts::default()),
        stop,
    };
    let prepared = match Prepared::new(ctx).await {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let client = ClientInfo::new(Some(prepared.notes()));
    emit(&Out::Ready { client: &client });

    let result = match begin.await {
        Ok(Begin::Start(start)) => {
            let ticker = meter::spawn_ticker(prepared.meter(), start);
            let result = prepared.run(start).await;
            meter::stop_ticker(ticker).await;
            result
        }
        // Stopped (or stdin gone) before `start`: nothing ran.
        Ok(Begin::Stopped) | Err(_) => RunResult {
            interrupted: true,
            ..RunResult::default()
        },
    };
    emit(&Out::Result { result: &result });
    0
}

fn fail(e: &DriverError) -> i32 {
    emit(&Out::Error {
        kind: e.kind,
        message: &e.message,
    });
    EXIT_CANNOT_RUN
}

/// A panic is a bug in this driver: report it as an `internal` error (after the usual message
/// on stderr) and exit at once, rather than leave msgbench waiting on a half-dead process.
fn install_panic_report() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        fail(&DriverError::new(
            ErrorKind::Internal,
            format!("driver bug: {info}"),
        ));
        std::process::exit(EXIT_CANNOT_RUN);
    }));
}
