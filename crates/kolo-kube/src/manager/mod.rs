//! The manager's SLO controllers against a real cluster.
//!
//! Watchers and reflectors keep nodes, pods, NodeMetrics, NodeSLOs and the
//! `slo-controller-config` ConfigMap in memory. Any change (debounced) and a
//! periodic resync trigger one pass: [`kolo_manager::pass::Pass`] decides,
//! from those stores, the configuration and the time, every write the
//! cluster needs (batch / mid allocatable on node status, NodeMetric spec,
//! NodeSLO), and [`Controller`] performs them and tells the pass which
//! succeeded. Each pass reads whole stores, so it is level-triggered: a
//! missed or duplicated watch event, a restart of the API server or of the
//! manager changes nothing but when the next pass runs.

mod jobs;
pub mod metrics;
pub mod podgroup_status;
pub mod quota_status;
mod run;

pub use run::{Controller, ManagerOptions};
