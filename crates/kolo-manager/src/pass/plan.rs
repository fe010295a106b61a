//! The writes of one pass, as data: one [`NodePlan`] per node, the
//! deletions of objects whose node is gone, and what could not be read.

use std::sync::Arc;

use kolo_api::crd::{NodeMetricSpec, NodeSLOSpec};

use super::node::{NodePlan, SpecWrite, StatusWrite};

/// One node's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeDecision {
    /// The node (and the name of its NodeMetric and NodeSLO).
    pub node: String,
    /// Its writes.
    pub plan: NodePlan,
}

/// An object of a node that is gone, to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deletion {
    /// The node's NodeMetric.
    NodeMetric(String),
    /// The node's NodeSLO.
    NodeSlo(String),
}

/// The writes of one pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// One decision per node that could be read, in store order (nodes that
    /// need no write included).
    pub nodes: Vec<NodeDecision>,
    /// Objects the manager created whose node is gone.
    pub deletions: Vec<Deletion>,
    /// Objects that could not be read, each named (they are skipped).
    pub warnings: Vec<String>,
}

/// A write the cluster needs: one step of a [`Plan`], in the order a driver
/// performs them.
#[derive(Debug, Clone, PartialEq)]
pub enum ManagerAction {
    /// Set the node's batch / mid capacity and allocatable.
    PatchNodeStatus {
        /// The node.
        node: String,
        /// The amounts and why.
        write: StatusWrite,
    },
    /// Create or update the node's NodeMetric spec.
    PutNodeMetric {
        /// The node (and the NodeMetric's name).
        node: String,
        /// The spec.
        write: SpecWrite<Arc<NodeMetricSpec>>,
    },
    /// Delete the NodeMetric of a node that is gone.
    DeleteNodeMetric {
        /// The node.
        node: String,
    },
    /// Create or update the node's NodeSLO spec.
    PutNodeSlo {
        /// The node (and the NodeSLO's name).
        node: String,
        /// The spec.
        write: SpecWrite<Arc<NodeSLOSpec>>,
    },
    /// Delete the NodeSLO of a node that is gone.
    DeleteNodeSlo {
        /// The node.
        node: String,
    },
}

impl Plan {
    /// Every warning: the objects that could not be read, then each node's.
    pub fn all_warnings(&self) -> impl Iterator<Item = &String> {
        self.warnings.iter().chain(self.nodes.iter().flat_map(|d| &d.plan.warnings))
    }

    /// The writes, node by node (status, NodeMetric, NodeSLO), then the
    /// deletions.
    pub fn into_actions(self) -> Vec<ManagerAction> {
        let mut actions = Vec::new();
        for NodeDecision { node, plan } in self.nodes {
            if let Some(write) = plan.status {
                actions.push(ManagerAction::PatchNodeStatus { node: node.clone(), write });
            }
            if let Some(write) = plan.metric {
                actions.push(ManagerAction::PutNodeMetric { node: node.clone(), write });
            }
            if let Some(write) = plan.slo {
                actions.push(ManagerAction::PutNodeSlo { node, write });
            }
        }
        actions.extend(self.deletions.into_iter().map(|d| match d {
            Deletion::NodeMetric(node) => ManagerAction::DeleteNodeMetric { node },
            Deletion::NodeSlo(node) => ManagerAction::DeleteNodeSlo { node },
        }));
        actions
    }
}
