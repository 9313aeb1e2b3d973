//! Compiles `proto/drover.proto` with a pure-Rust protobuf compiler, so that a fresh
//! machine needs no system `protoc`.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(["proto/drover.proto"], ["proto"])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
