//! One node's decision: from what the cluster holds about the node, what it
//! should hold, and the pass's bookkeeping, the writes the node needs.
//!
//! [`Pass::plan`](super::Pass::plan) makes this decision for every node of
//! its stores; the simulator makes it for each of its nodes in parallel.

use std::sync::Arc;

use kolo_api::crd::{NodeMetricSpec, NodeSLOSpec};
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::pod::PodView;
use kolo_core::usage_report::NodeUsageReport;

use super::node_config::NodeConfig;
use super::record::NodeRecord;
use crate::nodemetric::{NodeMetricAction, reconcile_node_metric};
use crate::noderesource::{
    ExtendedResources, NodeInputs, NodeResource, UpdateReason, calculate, update_needed,
};
use crate::nodeslo::{NodeSloAction, reconcile_node_slo};

/// What the cluster holds about one node.
#[derive(Debug, Clone, Copy)]
pub struct NodeObjects<'a> {
    /// The node (its status holds the batch / mid amounts last written).
    pub node: &'a NodeView,
    /// The pods bound to it (`spec.nodeName`), in any phase.
    pub pods: &'a [&'a PodView],
    /// Its NodeMetric, read ([`NodeUsageReport::read`]); `None` when there
    /// is none.
    pub metric: Option<&'a NodeUsageReport>,
    /// Its NodeMetric's spec; `None` when there is no NodeMetric.
    pub metric_spec: Option<&'a NodeMetricSpec>,
    /// Its NodeSLO's spec; `None` when there is no NodeSLO.
    pub slo: Option<&'a NodeSLOSpec>,
}

/// A write of the node's batch / mid amounts to its status.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusWrite {
    /// The amounts (`None`: remove the resource).
    pub resources: ExtendedResources,
    /// Why now.
    pub reason: UpdateReason,
}

/// A write of an object's spec.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecWrite<S> {
    /// The spec.
    pub spec: S,
    /// Whether the object does not exist yet (else its spec is replaced).
    pub create: bool,
}

/// The writes one node needs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodePlan {
    /// Its status, when the throttle lets a change through.
    pub status: Option<StatusWrite>,
    /// Its NodeMetric, when missing or different (the spec is shared with
    /// the node's [`NodeConfig`]).
    pub metric: Option<SpecWrite<Arc<NodeMetricSpec>>>,
    /// Its NodeSLO, when missing or different (the spec is shared with the
    /// node's [`NodeConfig`]).
    pub slo: Option<SpecWrite<Arc<NodeSLOSpec>>>,
    /// Problems met on the way (malformed labels, annotations), each naming
    /// the node and the key.
    pub warnings: Vec<String>,
    /// What the formula gave, term by term, written or not (`None` when
    /// co-location is not configured).
    pub computed: Option<Box<NodeResource>>,
    /// The computed amounts differ from the node's status, but the update
    /// throttle (interval, diff threshold) held the write back.
    pub throttled: bool,
}

impl NodePlan {
    /// Whether the node needs no write.
    pub fn is_empty(&self) -> bool {
        self.status.is_none() && self.metric.is_none() && self.slo.is_none()
    }
}

/// Decides the writes one node needs. `config_in_error` keeps an existing
/// NodeMetric spec while the ConfigMap has errors.
pub(super) fn decide(
    config: &NodeConfig,
    objects: &NodeObjects<'_>,
    record: &NodeRecord,
    config_in_error: bool,
    now: Timestamp,
) -> NodePlan {
    let mut warnings = config.warnings.clone();
    let mut throttled = false;
    let computed = config.colocation.as_ref().map(|colocation| {
        calculate(&NodeInputs {
            node: objects.node,
            pods: objects.pods,
            metric: objects.metric,
            strategy: &colocation.strategy,
            cluster_enabled: colocation.cluster_enabled,
            now,
        })
    });
    let status =
        computed.as_ref().zip(config.colocation.as_ref()).and_then(|(result, colocation)| {
            warnings.extend(result.warnings.iter().cloned());
            let current = ExtendedResources::from_status(objects.node);
            let (last, strategy) = (record.last_status_update, &colocation.strategy);
            let write = update_needed(&current, &result.resources, last, now, strategy)
                .map(|reason| StatusWrite { resources: result.resources, reason });
            throttled = write.is_none() && current != result.resources;
            write
        });
    let metric = match reconcile_node_metric(
        true,
        objects.metric_spec,
        &config.metric_spec,
        config_in_error,
    ) {
        NodeMetricAction::Create(spec) => Some(SpecWrite { spec, create: true }),
        NodeMetricAction::Update(spec) => Some(SpecWrite { spec, create: false }),
        NodeMetricAction::Delete | NodeMetricAction::Keep => None,
    };
    let slo = match reconcile_node_slo(true, objects.slo, &config.slo) {
        NodeSloAction::Create(spec) => Some(SpecWrite { spec, create: true }),
        NodeSloAction::Update(spec) => Some(SpecWrite { spec, create: false }),
        NodeSloAction::Delete | NodeSloAction::Keep => None,
    };
    NodePlan { status, metric, slo, warnings, computed: computed.map(Box::new), throttled }
}
