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
