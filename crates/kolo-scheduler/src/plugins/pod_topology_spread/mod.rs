//! PodTopologySpread: `spec.topologySpreadConstraints` (and the cluster's
//! default constraints) as kube-scheduler's plugin applies them.
//! DoNotSchedule constraints filter nodes — a node whose domain would hold
//! more than `maxSkew` matching pods above the global minimum is rejected —
//! and ScheduleAnyway constraints score nodes, fewer matching pods in the
//! node's domains scoring higher.
//!
//! * [`args`]: `PodTopologySpreadArgs` (default constraints).
//! * [`constraints`]: a pod's constraints, compiled.
//! * [`decide`]: the pure skew and score arithmetic.
//! * [`plugin`]: the framework adapter and its per-node state.

pub mod args;
pub mod constraints;
pub mod decide;
pub mod plugin;

pub use args::{DefaultingType, PodTopologySpreadArgs};
pub use plugin::{NAME, PodTopologySpread, REASON, REASON_MISSING_LABEL};
