//! Generates the code of the reference gRPC service (`msgbench grpc serve`) from the repository's
//! `proto/` folder. protox compiles the definition in process, so building needs no protoc; the
//! descriptor set is also written out, for server reflection and for `msgbench grpc` to use the
//! service without a --proto flag.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto");
    let file = "msgbench/log/v1/log.proto";
    println!("cargo:rerun-if-changed={}", root.join(file).display());
    let fds = protox::compile([file], [&root])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("log_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    tonic_prost_build::configure()
        .build_client(false)
        // Record data stays in the buffer it arrived in, not a copy.
        .bytes(".")
        .compile_fds(fds)?;
    Ok(())
}
