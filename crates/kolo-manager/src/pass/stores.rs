//! What a pass reads: the objects of the cluster, as a driver's stores hold
//! them, and which of them the manager created.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_api::crd::{NodeMetric, NodeSLO};
use kube::ResourceExt;

/// The label on the NodeMetrics and NodeSLOs the manager created; only
/// those are deleted when their node is gone (objects someone else made,
/// e.g. a dump restored for a what-if, are left alone).
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kolo-manager");

/// The objects a pass reads (a driver's reflector stores, shared).
#[derive(Debug, Default, Clone)]
pub struct StoreState {
    /// Nodes.
    pub nodes: Vec<Arc<Node>>,
    /// Pods (all namespaces).
    pub pods: Vec<Arc<Pod>>,
    /// NodeMetrics.
    pub metrics: Vec<Arc<NodeMetric>>,
    /// NodeSLOs.
    pub slos: Vec<Arc<NodeSLO>>,
}

/// Whether the manager created this object.
pub(super) fn managed<K: ResourceExt>(object: &K) -> bool {
    object.labels().get(MANAGED_BY.0).is_some_and(|v| v == MANAGED_BY.1)
}

/// The names, in order, of the objects the manager created whose node is
/// not `present`.
pub(super) fn gone<'a, K: ResourceExt>(
    objects: &'a HashMap<String, &K>,
    present: &BTreeSet<String>,
) -> Vec<&'a String> {
    let mut names: Vec<&String> = objects
        .iter()
        .filter(|(n, o)| !present.contains(*n) && managed(**o))
        .map(|(n, _)| n)
        .collect();
    names.sort();
    names
}
