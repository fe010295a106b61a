//! Batch and mid allocatable of a node (Koordinator spec §2): the decision
//! half of the SLO controller's `noderesource` reconciler.
//!
//! [`calculate`] takes one node, its pods, its NodeMetric, its co-location
//! strategy and the time, and returns a [`NodeResource`]: the four amounts
//! to publish (or withdraw), every term of the formulas that produced them
//! ([`BatchTerms`], [`MidTerms`]), and the warnings met on the way.
//! [`calculate_all`] does it for a whole cluster. [`update_needed`] decides
//! whether a computed value is worth writing, and
//! [`ExtendedResources::status_patch`] is what to write. Nothing here does
//! I/O or reads a clock.
//!
//! The flow per node, in order:
//!
//! 1. co-location disabled in the cluster or for the node → withdraw;
//! 2. NodeMetric missing, without `updateTime`, or older than
//!    `degradeTimeMinutes` → withdraw ([`degrade_reason`]);
//! 3. NodeMetric with a malformed quantity, or a node without cpu or memory
//!    capacity → withdraw (kolo only; the reference computes from garbage);
//! 4. otherwise batch ([`batch`]) and mid ([`mid`]) are computed.
//!
//! Not implemented (yet): NUMA-level batch on NodeResourceTopology zones,
//! third-party allocations (`node.koordinator.sh/thirdPartyAllocations`,
//! `originExtendedAllocatable`), the resource-amplification and device
//! plugins. `cpu-normalization-ratio` is *read* from the node annotation
//! (the reference's `cpunormalization` plugin writes it).

pub mod amount;
pub mod batch;
mod by_node;
pub mod degrade;
pub mod explain;
mod inputs;
pub mod mid;
pub mod patch;
pub mod update;

#[cfg(test)]
mod tests;

use kolo_api::crd::NodeMetric;
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::pod::PodView;
use kolo_core::usage_report::NodeUsageReport;
use serde::Serialize;

pub use self::amount::{CpuMem, Percents};
pub use self::batch::{BatchTerms, OptionalAmounts, PodTerms};
pub use self::by_node::ByNode;
pub use self::degrade::{ResetReason, degrade_reason};
pub use self::inputs::MetricError;
pub use self::mid::{MidDefaultTerms, MidMode, MidStaticTerms, MidTerms};
pub use self::patch::{ColocationResource, ExtendedResources};
pub use self::update::{UpdateReason, significant_change, update_needed};
use crate::config::ColocationStrategy;
use crate::config::colocation::{ResolvedColocation, node_colocation_strategy};
use kolo_core::HasMeta;

/// A percentage per resource where one is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct OptionalPercents {
    /// The CPU percentage.
    pub cpu: Option<i64>,
    /// The memory percentage.
    pub memory: Option<i64>,
}

/// What [`calculate`] needs about one node.
#[derive(Debug, Clone, Copy)]
pub struct NodeInputs<'a> {
    /// The node.
    pub node: &'a NodeView,
    /// The pods bound to it (`spec.nodeName`), in any phase.
    pub pods: &'a [&'a PodView],
    /// Its NodeMetric (named after the node), if any, read
    /// ([`NodeUsageReport::read`]).
    pub metric: Option<&'a NodeUsageReport>,
    /// Its effective strategy ([`node_strategy`]).
    pub strategy: &'a ColocationStrategy,
    /// Whether the cluster-level `enable` is on: the reference's master
    /// switch (a node's strategy can turn co-location off, not on).
    pub cluster_enabled: bool,
    /// The time of the decision.
    pub now: Timestamp,
}

/// The inputs batch and mid share.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeBasics {
    /// `status.capacity`, cpu and memory.
    pub capacity: CpuMem,
    /// `Max(capacity − allocatable, 0)`.
    pub kubelet_reserved: CpuMem,
    /// The reservation annotation.
    pub annotation: Option<inputs::AnnotationReserved>,
    /// `Max(kubeletReserved, annotationReserved)`.
    pub node_reserved: CpuMem,
}

/// The decision for one node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeResource {
    /// The node's name.
    pub node: String,
    /// Why batch and mid are withdrawn; `None` when they were computed.
    pub reset: Option<ResetReason>,
    /// The batch terms, when computed.
    pub batch: Option<BatchTerms>,
    /// The mid terms, when computed.
    pub mid: Option<MidTerms>,
    /// The amounts to publish (all `None` on a reset).
    pub resources: ExtendedResources,
    /// Problems with the node's labels and annotations that were skipped.
    pub warnings: Vec<String>,
    /// The strategy the node was evaluated with (its update interval and
    /// diff threshold drive [`update_needed`]). Not serialized.
    #[serde(skip)]
    pub strategy: ColocationStrategy,
}

/// A node's effective co-location strategy (cluster, first matching
/// `nodeConfigs` entry, `colocation-strategy` annotation, reclaim-ratio
/// labels) and the warnings about malformed annotations / labels.
pub fn node_strategy(
    colocation: &ResolvedColocation,
    node: &NodeView,
) -> (ColocationStrategy, Vec<String>) {
    node_colocation_strategy(
        colocation,
        node.name(),
        node.labels(),
        node.annotation(crate::config::colocation::COLOCATION_STRATEGY_ANNOTATION),
    )
}

/// Batch and mid allocatable of one node, with every term.
pub fn calculate(inputs: &NodeInputs<'_>) -> NodeResource {
    let node = inputs.node;
    let mut warnings = Vec::new();
    // Annotations are read even when the result is a reset, so a malformed
    // one is reported whatever the node's state.
    let annotation = inputs::annotation_reserved(node, &mut warnings);
    let ratio = inputs::cpu_normalization_ratio(node, &mut warnings);
    let mut out = NodeResource {
        node: node.name().to_owned(),
        reset: None,
        batch: None,
        mid: None,
        resources: ExtendedResources::NONE,
        warnings,
        strategy: inputs.strategy.clone(),
    };
    let reset = if !inputs.cluster_enabled {
        Some(ResetReason::ClusterDisabled)
    } else if !inputs.strategy.is_enabled() {
        Some(ResetReason::NodeDisabled)
    } else {
        degrade_reason(inputs.metric, inputs.strategy, inputs.now)
    };
    if let Some(reason) = reset {
        out.reset = Some(reason);
        return out;
    }
    let metric = match inputs.metric.map(inputs::MetricInputs::read).transpose() {
        Ok(m) => m.unwrap_or_default(),
        Err(e) => {
            out.reset =
                Some(ResetReason::MalformedNodeMetric { field: e.field, message: e.message });
            return out;
        }
    };
    let capacity = inputs::capacity(node);
    let Some(capacity) = capacity.complete() else {
        let missing = match (capacity.cpu, capacity.memory) {
            (None, None) => "cpu and memory",
            (None, _) => "cpu",
            _ => "memory",
        };
        out.reset = Some(ResetReason::NoCapacity { missing });
        return out;
    };
    let kubelet_reserved = inputs::kubelet_reserved(node);
    let node_reserved = annotation.map_or(kubelet_reserved, |a| kubelet_reserved.max(a.amount));
    let basics = NodeBasics { capacity, kubelet_reserved, annotation, node_reserved };
    let batch = batch::calculate(&basics, inputs.pods, &metric, inputs.strategy, ratio);
    let mid = mid::calculate(&basics, inputs.pods, &metric, inputs.strategy);
    out.resources = ExtendedResources {
        batch_cpu: Some(batch.result.cpu),
        batch_memory: Some(batch.result.memory),
        mid_cpu: Some(mid.result.cpu),
        mid_memory: Some(mid.result.memory),
    };
    out.batch = Some(batch);
    out.mid = Some(mid);
    out
}

/// [`calculate`] for every node: pods are matched to nodes by
/// `spec.nodeName`, NodeMetrics by name (a later duplicate wins; see
/// [`ByNode`]), and each node gets its strategy from `colocation`
/// ([`node_strategy`], whose warnings come first in the node's warnings).
/// Results are in node order.
pub fn calculate_all<'a>(
    nodes: impl IntoIterator<Item = &'a NodeView>,
    pods: impl IntoIterator<Item = &'a PodView>,
    metrics: impl IntoIterator<Item = &'a NodeMetric>,
    colocation: &ResolvedColocation,
    now: Timestamp,
) -> Vec<NodeResource> {
    let by_node = ByNode::new(pods, metrics);
    let cluster_enabled = colocation.cluster.is_enabled();
    nodes
        .into_iter()
        .map(|node| {
            let (strategy, mut warnings) = node_strategy(colocation, node);
            let mut result = calculate(&NodeInputs {
                node,
                pods: by_node.pods(node.name()),
                metric: by_node.report(node.name()),
                strategy: &strategy,
                cluster_enabled,
                now,
            });
            warnings.append(&mut result.warnings);
            result.warnings = warnings;
            result
        })
        .collect()
}
