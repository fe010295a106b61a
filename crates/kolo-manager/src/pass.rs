//! The manager's pass: one decision round of the SLO controllers, as a
//! synchronous object like `kolo_scheduler::Scheduler` (state and time in,
//! a plan out).
//!
//! [`Pass`] holds what the manager remembers between passes (per node, when
//! it last wrote the node's status, which throttles the next writes; whether
//! the ConfigMap is in error, which keeps NodeMetric specs as they are).
//! Each pass reads whole stores, so it is level-triggered:
//!
//! * [`Pass::plan`] decides, from the cluster's objects ([`StoreState`]),
//!   the configuration and the time, every write the cluster needs: each
//!   node's batch / mid amounts, NodeMetric spec and NodeSLO spec
//!   ([`NodePlan`]), and the deletion of the objects of nodes that are gone;
//! * [`Pass::decide_node`] is the decision for one node that `plan` is built
//!   from; a driver that holds its nodes apart (the simulator, which
//!   advances them in parallel) calls it per node, with the node's
//!   [`NodeRecord`];
//! * [`Pass::applied`] (or [`NodeRecord::status_written`]) records a write
//!   that succeeded: a failed status write does not count as written.
//!
//! Nothing here does I/O or reads a clock: kolo-kube's controller and
//! kolo-sim's engine are the two drivers.

mod node;
mod node_config;
mod plan;
mod record;
mod stores;

#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use kolo_api::crd::{NodeMetric, NodeMetricSpec, NodeSLO, NodeSLOSpec};
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::pod::PodView;
use kube::ResourceExt;

pub use self::node::{NodeObjects, NodePlan, SpecWrite, StatusWrite};
pub use self::node_config::{NodeColocation, NodeConfig};
pub use self::plan::{Deletion, ManagerAction, NodeDecision, Plan};
pub use self::record::NodeRecord;
use self::stores::gone;
pub use self::stores::{MANAGED_BY, StoreState};
use crate::config::{ConfigStatus, SloConfig};
use crate::nodemetric::{NodeMetricAction, reconcile_node_metric};
use crate::noderesource::ByNode;
use crate::nodeslo::{NodeSloAction, reconcile_node_slo};

/// The manager's SLO controllers, one pass at a time.
#[derive(Debug, Clone, Default)]
pub struct Pass {
    /// Whether the ConfigMap is in error (a key rejected, or the ConfigMap
    /// missing).
    config_in_error: bool,
    /// Per node, what the manager wrote.
    records: HashMap<String, NodeRecord>,
}

impl Pass {
    /// A manager that has written nothing yet.
    pub fn new() -> Pass {
        Pass::default()
    }

    /// Follows the ConfigMap's state: while it is in error, existing
    /// NodeMetric specs are kept as they are.
    pub fn config_status(&mut self, status: &ConfigStatus) {
        self.config_in_error = !status.errors.is_empty();
    }

    /// The bookkeeping of `node` (empty for a node never written).
    pub fn record(&self, node: &str) -> NodeRecord {
        self.records.get(node).copied().unwrap_or_default()
    }

    /// The writes one node needs, given what the configuration says for it,
    /// what the cluster holds about it and its bookkeeping.
    pub fn decide_node(
        &self,
        config: &NodeConfig,
        objects: &NodeObjects<'_>,
        record: &NodeRecord,
        now: Timestamp,
    ) -> NodePlan {
        node::decide(config, objects, record, self.config_in_error, now)
    }

    /// Decides the writes of one pass over `stores` with `config` at `now`.
    /// Pods not bound to a node are ignored; a node or pod that cannot be
    /// read is skipped with a warning naming it (a node skipped is not gone:
    /// its objects stay).
    pub fn plan(&self, stores: &StoreState, config: &SloConfig, now: Timestamp) -> Plan {
        let mut out = Plan::default();
        let nodes: Vec<NodeView> = stores
            .nodes
            .iter()
            .filter_map(|n| {
                NodeView::from_node(n).map_err(|e| out.warnings.push(e.to_string())).ok()
            })
            .collect();
        let pods: Vec<PodView> = stores
            .pods
            .iter()
            .filter(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_some()))
            .filter_map(|p| PodView::from_pod(p).map_err(|e| out.warnings.push(e.to_string())).ok())
            .collect();
        let by_node = ByNode::new(&pods, stores.metrics.iter().map(|m| &**m));
        let metrics: HashMap<String, &NodeMetric> =
            stores.metrics.iter().map(|m| (m.name_any(), &**m)).collect();
        let slos: HashMap<String, &NodeSLO> =
            stores.slos.iter().map(|s| (s.name_any(), &**s)).collect();
        for view in &nodes {
            let name = view.name();
            let objects = NodeObjects {
                node: view,
                pods: by_node.pods(name),
                metric: by_node.report(name),
                metric_spec: metrics.get(name).map(|m| &m.spec),
                slo: slos.get(name).map(|s| &s.spec),
            };
            let plan =
                self.decide_node(&NodeConfig::new(config, view), &objects, &self.record(name), now);
            out.nodes.push(NodeDecision { node: name.to_string(), plan });
        }
        let present: BTreeSet<String> = stores.nodes.iter().map(|n| n.name_any()).collect();
        out.deletions = deletions(&metrics, &slos, &present);
        out
    }

    /// Records a write that succeeded at `now` (only status writes are
    /// bookkept: they drive the update throttle).
    pub fn applied(&mut self, action: &ManagerAction, now: Timestamp) {
        if let ManagerAction::PatchNodeStatus { node, .. } = action {
            self.records.entry(node.clone()).or_default().status_written(now);
        }
    }
}

/// The objects the manager created whose node is not `present`: NodeMetrics
/// first, then NodeSLOs, each by name.
fn deletions(
    metrics: &HashMap<String, &NodeMetric>,
    slos: &HashMap<String, &NodeSLO>,
    present: &BTreeSet<String>,
) -> Vec<Deletion> {
    let mut out = Vec::new();
    let unused = Arc::new(NodeMetricSpec::default());
    for node in gone(metrics, present) {
        let action = reconcile_node_metric(false, Some(&metrics[node].spec), &unused, false);
        if action == NodeMetricAction::Delete {
            out.push(Deletion::NodeMetric(node.clone()));
        }
    }
    let unused = Arc::new(NodeSLOSpec::default());
    for node in gone(slos, present) {
        let action = reconcile_node_slo(false, Some(&slos[node].spec), &unused);
        if action == NodeSloAction::Delete {
            out.push(Deletion::NodeSlo(node.clone()));
        }
    }
    out
}
