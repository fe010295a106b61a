//! Compiles the CRI protos (`proto/v1alpha2.proto`, `proto/v1.proto`) with
//! protox, a pure-Rust protobuf compiler, so building kolo needs no
//! `protoc`. Only clients are generated: the proxy serves raw HTTP/2.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["proto/v1alpha2.proto", "proto/v1.proto"];
    for p in protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure().build_server(false).compile_fds(fds)?;
    Ok(())
}
