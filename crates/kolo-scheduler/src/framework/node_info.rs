//! A node as the scheduler holds it: the object, kolo's view, and the sums
//! of the pods on it (including pods assumed but not yet bound).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kolo_core::node::NodeView;
use kolo_core::resources::ResourceVector;

use super::PodInfo;
use super::pod_info::fnv1a;

/// A node's stable index in the scheduler cache.
///
/// Plugins keep per-node state in vectors indexed by it, which makes a
/// filter or score lookup an array access instead of a hash of the node
/// name. An id is never reused for another node within one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The id as a vector index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A node and the pods the scheduler counts on it.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    id: NodeId,
    node: Arc<Node>,
    view: NodeView,
    requested: ResourceVector,
    non_zero_requested: (i64, i64),
    pod_count: u32,
    generation: u64,
    name_hash: u64,
}

impl NodeInfo {
    /// A node with no pods.
    pub fn new(id: NodeId, node: Arc<Node>, view: NodeView) -> NodeInfo {
        let name_hash = fnv1a(view.name().as_bytes());
        NodeInfo {
            id,
            node,
            view,
            requested: ResourceVector::EMPTY,
            non_zero_requested: (0, 0),
            pod_count: 0,
            generation: 0,
            name_hash,
        }
    }

    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        self.view.name()
    }

    /// The node object.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// kolo's view of the node (allocatable, labels, taints...).
    pub fn view(&self) -> &NodeView {
        &self.view
    }

    /// The summed requests of every pod counted on the node, assumed ones
    /// included.
    pub fn requested(&self) -> &ResourceVector {
        &self.requested
    }

    /// CPU (milli) and memory (bytes) requested, with kube-scheduler's
    /// stand-ins for request-less containers (for spreading scores).
    pub fn non_zero_requested(&self) -> (i64, i64) {
        self.non_zero_requested
    }

    /// How many pods are counted on the node.
    pub fn pod_count(&self) -> u32 {
        self.pod_count
    }

    /// Changes whenever the node or its pods change.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// A stable hash of the node name, for deterministic tie-breaking.
    pub fn name_hash(&self) -> u64 {
        self.name_hash
    }

    /// Replaces the node object, keeping the pods counted on it.
    pub(crate) fn set_node(&mut self, node: Arc<Node>, view: NodeView) {
        self.node = node;
        self.view = view;
        self.generation += 1;
    }

    /// Counts a pod on the node.
    pub(crate) fn add_pod(&mut self, pod: &PodInfo) {
        self.requested = self.requested.saturating_add(pod.view().requests());
        let (cpu, memory) = pod.non_zero_requests();
        self.non_zero_requested.0 = self.non_zero_requested.0.saturating_add(cpu);
        self.non_zero_requested.1 = self.non_zero_requested.1.saturating_add(memory);
        self.pod_count += 1;
        self.generation += 1;
    }

    /// Stops counting a pod that [`add_pod`](Self::add_pod) counted.
    pub(crate) fn remove_pod(&mut self, pod: &PodInfo) {
        // Exact inverse of add_pod: the cache only removes what it added.
        self.requested = self.requested.saturating_sub(pod.view().requests());
        let (cpu, memory) = pod.non_zero_requests();
        self.non_zero_requested.0 = self.non_zero_requested.0.saturating_sub(cpu);
        self.non_zero_requested.1 = self.non_zero_requested.1.saturating_sub(memory);
        self.pod_count = self.pod_count.saturating_sub(1);
        self.generation += 1;
    }
}
