//! The `msgbench` binary: parse, run, exit. Everything else is in the library.

/// mimalloc: the gRPC client allocates per call inside hyper and h2, and glibc's allocator cost
/// a fifth of its CPU (bench/RESULTS-grpc.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(msgbench::main_with_args(std::env::args_os()))
}
