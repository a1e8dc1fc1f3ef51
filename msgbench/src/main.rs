//! The `msgbench` binary: parse, run, exit. Everything else is in the library.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(msgbench::main_with_args(std::env::args_os()))
}
