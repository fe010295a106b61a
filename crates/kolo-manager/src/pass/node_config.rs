//! What the configuration says for one node: the inputs of its decision that
//! change only with the `slo-controller-config` ConfigMap or with the node's
//! labels and annotations.
//!
//! A driver may keep a node's [`NodeConfig`] from pass to pass while neither
//! changes (the simulator does: its nodes' labels never change), or build it
//! afresh every pass ([`Pass::plan`](super::Pass::plan) does); the decision
//! is the same.

use std::sync::Arc;

use kolo_api::crd::{NodeMetricSpec, NodeSLOSpec};
use kolo_core::node::NodeView;

use crate::config::{ColocationStrategy, SloConfig};
use crate::nodemetric::node_metric_spec;
use crate::noderesource::node_strategy;
use crate::nodeslo::render_node_slo;
use kolo_core::HasMeta;

/// A node's co-location settings.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeColocation {
    /// The node's effective strategy: the cluster's, the first matching
    /// `nodeConfigs` entry, the `colocation-strategy` annotation and the
    /// `*-reclaim-ratio` labels, layered over the defaults.
    pub strategy: ColocationStrategy,
    /// Whether the cluster-level `enable` is on (the master switch: a node
    /// can turn co-location off, not on).
    pub cluster_enabled: bool,
}

/// What the configuration says for one node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeConfig {
    /// Its co-location settings; `None` while `colocation-config` is
    /// unavailable (no good value read yet): the node's status is then left
    /// alone.
    pub colocation: Option<NodeColocation>,
    /// The NodeMetric spec it should have (the defaults unless co-location
    /// is enabled for it; shared with the writes that create or replace it).
    pub metric_spec: Arc<NodeMetricSpec>,
    /// The NodeSLO spec it should have (shared with the writes that create
    /// or replace it).
    pub slo: Arc<NodeSLOSpec>,
    /// Malformed labels and annotations that were skipped, each naming the
    /// node and the key.
    pub warnings: Vec<String>,
}

impl NodeConfig {
    /// What `config` says for `node`.
    pub fn new(config: &SloConfig, node: &NodeView) -> NodeConfig {
        let mut warnings = Vec::new();
        let colocation = config.colocation.as_ref().map(|resolved| {
            let (strategy, mut skipped) = node_strategy(resolved, node);
            warnings.append(&mut skipped);
            NodeColocation { strategy, cluster_enabled: resolved.cluster.is_enabled() }
        });
        let metric_spec = Arc::new(node_metric_spec(colocation.as_ref().map(|c| &c.strategy)));
        let mut rendered =
            render_node_slo(&config.slo, node.name(), node.labels(), node.annotations());
        warnings.append(&mut rendered.warnings);
        NodeConfig { colocation, metric_spec, slo: Arc::new(rendered.spec), warnings }
    }
}
