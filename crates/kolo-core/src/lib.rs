//! # kolo-core
//!
//! The domain model every kolo algorithm works on:
//!
//! * [`resources`]: a compact, copyable resource vector with saturating
//!   arithmetic and Koordinator's "quota" comparison semantics;
//! * [`cpu_mem`]: [`CpuMem`], a CPU (milli-cores) and memory (bytes) amount
//!   with saturating arithmetic;
//! * [`pod_ref`]: [`PodRef`], a pod's identity (namespace, name, UID);
//! * [`meta`]: the metadata (UID, labels, annotations) pod and node views
//!   share, and their accessors;
//! * [`pod`] and [`node`]: views of k8s-openapi `Pod` and `Node` with the
//!   numbers algorithms need (effective requests as kubelet computes them, QoS,
//!   priority, allocatable, taints);
//! * [`snapshot`]: a cluster snapshot loaded from `kubectl get -o yaml` dumps;
//! * [`usage_report`]: a node's reported usage (its NodeMetric) as numbers,
//!   read once for every decision that needs it;
//! * [`clock`]: time, passed into decision code instead of read from the system.
//!
//! This crate does no I/O except reading a snapshot file the caller names.

pub mod clock;
pub mod compact_vector;
pub mod cpu_mem;
pub mod cpuset;
pub mod meta;
pub mod node;
pub mod pod;
pub mod pod_ref;
pub mod resources;
pub mod selector;
pub mod snapshot;
pub mod usage_report;
pub mod yaml_error;

pub use cpu_mem::CpuMem;
pub use meta::HasMeta;
pub use pod_ref::PodRef;
