//! # kolo-core
//!
//! The domain model every kolo algorithm works on:
//!
//! * [`resources`]: a compact, copyable resource vector with saturating
//!   arithmetic and Koordinator's "quota" comparison semantics;
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
pub mod cpuset;
pub mod node;
pub mod pod;
pub mod resources;
pub mod selector;
pub mod snapshot;
pub mod usage_report;
