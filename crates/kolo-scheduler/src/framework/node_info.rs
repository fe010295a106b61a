//! A node as the scheduler holds it: the object, kolo's view, and the sums
//! of the pods on it (including pods assumed but not yet bound).
//!
//! Every cycle reads every node, so the fields Filter and Score read for
//! most pods (the well-known resource amounts, pod count, cordon and taint
//! flags) sit inline in a ~200-byte struct, and the rest (the objects,
//! labels, extended resources) behind one pointer: a 5,000-node cluster's
//! hot data then fits in the CPU's caches.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kolo_core::node::NodeView;
use kolo_core::resources::{ResourceName, ResourceVector, WELL_KNOWN};

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
    pod_count: u32,
    unschedulable: bool,
    has_taints: bool,
    /// Which of the well-known resources the node reports.
    allocatable_present: u8,
    /// Allocatable of the well-known resources (0 when missing).
    allocatable: [i64; WELL_KNOWN],
    /// Requested of the well-known resources.
    requested: [i64; WELL_KNOWN],
    non_zero_requested: (i64, i64),
    generation: u64,
    name_hash: u64,
    cold: Box<Cold>,
}

#[derive(Debug, Clone)]
struct Cold {
    node: Arc<Node>,
    view: NodeView,
    requested: ResourceVector,
}

impl NodeInfo {
    /// A node with no pods.
    pub fn new(id: NodeId, node: Arc<Node>, view: NodeView) -> NodeInfo {
        let mut info = NodeInfo {
            id,
            pod_count: 0,
            unschedulable: false,
            has_taints: false,
            allocatable_present: 0,
            allocatable: [0; WELL_KNOWN],
            requested: [0; WELL_KNOWN],
            non_zero_requested: (0, 0),
            generation: 0,
            name_hash: fnv1a(view.name().as_bytes()),
            cold: Box::new(Cold { node, view, requested: ResourceVector::EMPTY }),
        };
        info.refresh_from_view();
        info
    }

    fn refresh_from_view(&mut self) {
        let view = &self.cold.view;
        self.unschedulable = view.is_unschedulable();
        self.has_taints = !view.taints().is_empty();
        self.allocatable_present = 0;
        self.allocatable = [0; WELL_KNOWN];
        for (name, amount) in view.allocatable().iter() {
            if let Some(i) = name.well_known_index() {
                self.allocatable[i] = amount;
                self.allocatable_present |= 1 << i;
            }
        }
    }

    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        self.cold.view.name()
    }

    /// The node object.
    pub fn node(&self) -> &Node {
        &self.cold.node
    }

    /// kolo's view of the node (allocatable, labels, taints...).
    pub fn view(&self) -> &NodeView {
        &self.cold.view
    }

    /// Whether the node is cordoned (`spec.unschedulable`).
    pub fn is_unschedulable(&self) -> bool {
        self.unschedulable
    }

    /// Whether the node has any taint.
    pub fn has_taints(&self) -> bool {
        self.has_taints
    }

    /// The node's allocatable amount of `name` (0 when it reports none).
    #[inline]
    pub fn allocatable(&self, name: ResourceName) -> i64 {
        match name.well_known_index() {
            Some(i) => self.allocatable[i],
            None => self.cold.view.allocatable().value(name),
        }
    }

    /// Whether the node reports an allocatable amount of `name`.
    pub fn has_allocatable(&self, name: ResourceName) -> bool {
        match name.well_known_index() {
            Some(i) => self.allocatable_present & (1 << i) != 0,
            None => self.cold.view.allocatable().contains(name),
        }
    }

    /// What the pods counted on the node request of `name`.
    #[inline]
    pub fn requested(&self, name: ResourceName) -> i64 {
        match name.well_known_index() {
            Some(i) => self.requested[i],
            None => self.cold.requested.value(name),
        }
    }

    /// The summed requests of every pod counted on the node (assumed ones
    /// included), every resource.
    pub fn requested_vector(&self) -> &ResourceVector {
        &self.cold.requested
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
        self.cold.node = node;
        self.cold.view = view;
        self.refresh_from_view();
        self.generation += 1;
    }

    /// Marks the node changed (its NodeMetric changed).
    pub(crate) fn touch(&mut self) {
        self.generation += 1;
    }

    /// Counts a pod on the node.
    pub(crate) fn add_pod(&mut self, pod: &PodInfo) {
        self.cold.requested = self.cold.requested.saturating_add(pod.view().requests());
        self.sync_requested();
        let (cpu, memory) = pod.non_zero_requests();
        self.non_zero_requested.0 = self.non_zero_requested.0.saturating_add(cpu);
        self.non_zero_requested.1 = self.non_zero_requested.1.saturating_add(memory);
        self.pod_count += 1;
        self.generation += 1;
    }

    /// Stops counting a pod that [`add_pod`](Self::add_pod) counted.
    pub(crate) fn remove_pod(&mut self, pod: &PodInfo) {
        // Exact inverse of add_pod: the cache only removes what it added.
        self.cold.requested = self.cold.requested.saturating_sub(pod.view().requests());
        self.sync_requested();
        let (cpu, memory) = pod.non_zero_requests();
        self.non_zero_requested.0 = self.non_zero_requested.0.saturating_sub(cpu);
        self.non_zero_requested.1 = self.non_zero_requested.1.saturating_sub(memory);
        self.pod_count = self.pod_count.saturating_sub(1);
        self.generation += 1;
    }

    fn sync_requested(&mut self) {
        for (i, name) in kolo_core::resources::WELL_KNOWN_NAMES.iter().enumerate() {
            self.requested[i] = self.cold.requested.value(*name);
        }
    }
}
