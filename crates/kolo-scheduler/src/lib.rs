//! # kolo-scheduler
//!
//! kolo's scheduler, as pure decision code (no I/O, no clock reads):
//!
//! * a scheduling framework in the shape of kube-scheduler's: extension
//!   points as narrow traits, plugins registered by name and enabled per
//!   profile with weights;
//! * the co-location plugins: resource fit over standard and `batch-*` /
//!   `mid-*` resources, load-aware filtering and scoring, NUMA-aware cpuset
//!   allocation, and the standard node affinity / taint plugins.

pub mod binder;
pub mod cache;
pub mod config;
pub mod equivalence;
pub mod explain;
pub mod framework;
pub mod plugins;
pub mod profile;
pub mod queue;
pub mod registry;
pub mod report;
pub mod scheduler;
pub mod search;
pub mod wake;
pub mod whatif;

#[cfg(test)]
mod testing;
