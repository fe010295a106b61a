//! # kolo-api
//!
//! kolo's contract with Kubernetes. Everything a kolo component reads from or
//! writes to the API server is named or typed here:
//!
//! * [`names`]: well-known labels, annotations and extended resources of both
//!   Koordinator and Katalyst;
//! * [`qos`], [`priority`], [`katalyst`], [`kube_qos`]: the QoS and priority
//!   classes of a pod, resolved from either vocabulary;
//! * [`quantity`]: exact parsing and formatting of Kubernetes quantities;
//! * [`crd`]: the custom resources, wire-compatible with Koordinator's;
//! * [`runtime_hook`]: the hook protocol between `kolo runtime-proxy` and
//!   the node agent.
//!
//! This crate does no I/O.

pub mod crd;
pub mod katalyst;
pub mod kube_qos;
pub mod names;
pub mod priority;
pub mod qos;
pub mod quantity;
pub mod runtime_hook;

pub use priority::PriorityClass;
pub use qos::QoSClass;
pub use quantity::{Quantity, QuantityError};

#[cfg(test)]
mod test_pods;
