//! The CRI messages and clients, generated from Kubernetes' `api.proto`
//! (`proto/`, Apache-2.0, as published on crates.io by `k8s-cri` 0.11).

/// CRI `runtime.v1` (kubelet 1.23 and later).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v1 {
    tonic::include_proto!("runtime.v1");
}

/// CRI `runtime.v1alpha2` (kubelet up to 1.25; this repository's test
/// cluster runs 1.20).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v1alpha2 {
    tonic::include_proto!("runtime.v1alpha2");
}

use std::path::PathBuf;

use hyper_util::rt::TokioIo;

/// A gRPC channel to the CRI endpoint at unix socket `path` (a runtime, or
/// the proxy), for the generated clients: `v1::runtime_service_client::
/// RuntimeServiceClient::new(channel)`.
pub async fn connect(
    path: impl Into<PathBuf>,
) -> Result<tonic::transport::Channel, tonic::transport::Error> {
    let path = path.into();
    // The URI is required by the builder and ignored by the connector.
    tonic::transport::Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_| {
            let path = path.clone();
            async move { tokio::net::UnixStream::connect(path).await.map(TokioIo::new) }
        }))
        .await
}

/// A CRI call's outcome, for callers of the clients.
pub use tonic::{Code, Status};
