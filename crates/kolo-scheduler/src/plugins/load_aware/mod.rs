//! `LoadAwareScheduling` (spec §1): place pods by the nodes' measured load
//! rather than by their requests alone.
//!
//! The node agent reports each node's usage in its NodeMetric. Filter
//! rejects a node whose usage, plus what the pods assigned since the last
//! report and the incoming pod are estimated to add, would exceed a
//! percentage of its allocatable; Score prefers the least loaded nodes.
//!
//! This module is the pure decision core; the scheduler-framework adapter
//! feeds it:
//!
//! * [`LoadAwareConfig`]: the arguments ([`LoadAwareSchedulingArgs`]),
//!   defaulted, validated and laid out as vectors, once per plugin;
//! * [`NodeProfile`]: per node, rebuilt when the node changes
//!   (allocatable, thresholds incl. the node's annotation);
//! * [`NodeLoad`]: per node, the NodeMetric and assigned pods
//!   ([`AssignedPod`]), updated from informer events and Reserve / Unreserve;
//! * [`PodFacts`] and the pod's estimate ([`LoadAwareConfig::estimate_pod`]):
//!   per scheduling cycle;
//! * [`filter`] and [`score`]: per (pod, node), allocation-free;
//! * [`PodLoadFacts`] and [`NodeLoadFacts`]: what they rested on, as data,
//!   for explanations.
//!
//! Vectors are [`LoadVector`]s: the plugin's few resources in the fixed,
//! sorted order of [`ResourceLayout`].

pub mod args;
pub mod assign_cache;
pub mod config;
pub mod custom_thresholds;
pub mod decide;
pub mod estimator;
pub mod facts;
pub mod plugin;
pub mod vector;

pub use args::{LoadAwareArgsError, LoadAwareSchedulingAggregatedArgs, LoadAwareSchedulingArgs};
pub use assign_cache::{AssignedPod, NodeLoad, NodeMetricReadError, is_tracked};
pub use config::{AggregatedThresholds, LoadAwareConfig};
pub use decide::{
    FilterFailure, FilterThresholds, NodeAnnotationError, NodeProfile, PodFacts, ThresholdKind,
    filter, owned_by_daemonset, score, usage_percent,
};
pub use estimator::{
    EstimationAnnotationError, NodeEstimate, PodEstimate, estimate_node, estimate_pod,
};
pub use facts::{NodeLoadFacts, PodLoadFacts};
pub use vector::{LoadVector, MAX_RESOURCES, ResourceLayout};
