//! The scheduler cache: nodes with the pods counted on them, including pods
//! *assumed* on a node at Reserve before the API server confirms the bind.
//!
//! A pod is counted exactly once: when the API later reports the assumed
//! pod as bound to the same node, the assumption is confirmed, not added
//! again; when a bind fails, the scheduler forgets the assumption.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kolo_core::node::{NodeView, NodeViewError};
use kolo_core::usage_report::NodeUsageReport;

use crate::framework::{NodeId, NodeInfo, PodInfo};

/// How a pod is counted.
#[derive(Debug, Clone)]
pub struct CachedPod {
    /// The pod.
    pub info: Arc<PodInfo>,
    /// The node it is assigned to.
    pub node_name: Box<str>,
    /// The node it is counted on (`None` while that node is unknown).
    pub node: Option<NodeId>,
    /// Assumed by this scheduler and not yet confirmed by the API.
    pub assumed: bool,
}

/// What a cache update changed, for the scheduler to tell plugins.
#[derive(Debug, Clone)]
pub enum CacheChange {
    /// A node was added.
    NodeAdded(NodeId),
    /// A node's object changed.
    NodeUpdated(NodeId),
    /// A pod is now counted on a node.
    PodAdded {
        /// The pod key.
        pod: Box<str>,
        /// The node.
        node: NodeId,
    },
    /// A pod is no longer counted on a node (the pod is given, since the
    /// cache may no longer hold it).
    PodRemoved {
        /// The pod.
        pod: Arc<PodInfo>,
        /// The node.
        node: NodeId,
    },
    /// A node's metric changed.
    NodeMetricUpdated(NodeId),
    /// A node's metric was removed.
    NodeMetricRemoved(NodeId),
    /// A node was removed (after a `PodRemoved` for each pod on it).
    NodeRemoved {
        /// Its id.
        id: NodeId,
        /// Its name.
        name: Box<str>,
    },
}

/// Nodes, their pods and their NodeMetrics.
#[derive(Debug, Default)]
pub struct Cache {
    /// Live nodes, densely, in the order they were added (a removed node's
    /// place is taken by the last one).
    nodes: Vec<NodeInfo>,
    /// NodeId → position in `nodes` (`u32::MAX` once removed).
    position: Vec<u32>,
    by_name: HashMap<Box<str>, NodeId>,
    pods: HashMap<Box<str>, CachedPod>,
    /// Pods assigned to nodes the cache does not know yet, by node name.
    waiting_for_node: HashMap<Box<str>, Vec<Box<str>>>,
    metrics: HashMap<Box<str>, Arc<NodeUsageReport>>,
    /// Bumped whenever a node is added, removed or its object changes.
    epoch: u64,
    /// Bumped whenever a node is added or removed (positions change).
    node_set_epoch: u64,
    /// Each node's generation and name hash, in `nodes` order: the
    /// equivalence cache scans these for every pod, and a dense array of
    /// numbers scans many times faster than the node structs.
    generations: Vec<u64>,
    name_hashes: Vec<u64>,
}

impl Cache {
    /// An empty cache.
    pub fn new() -> Cache {
        Cache::default()
    }

    /// Every live node, in cache order.
    pub fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    /// A node by id.
    pub fn node(&self, id: NodeId) -> Option<&NodeInfo> {
        let pos = *self.position.get(id.index())?;
        self.nodes.get(pos as usize)
    }

    /// A node's position in [`nodes`](Self::nodes), by id.
    pub fn position(&self, id: NodeId) -> Option<usize> {
        let pos = *self.position.get(id.index())? as usize;
        (pos < self.nodes.len()).then_some(pos)
    }

    /// Changes a node, keeping the dense generation array in step.
    fn update<R>(&mut self, id: NodeId, f: impl FnOnce(&mut NodeInfo) -> R) -> Option<R> {
        let pos = *self.position.get(id.index())? as usize;
        let node = self.nodes.get_mut(pos)?;
        let result = f(node);
        self.generations[pos] = node.generation();
        Some(result)
    }

    /// Every live node's generation, in [`nodes`](Self::nodes) order.
    pub fn generations(&self) -> &[u64] {
        &self.generations
    }

    /// Every live node's name hash, in [`nodes`](Self::nodes) order.
    pub fn name_hashes(&self) -> &[u64] {
        &self.name_hashes
    }

    /// Changes whenever a node is added, removed or its object changes
    /// (pod and metric changes only change that node's generation).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Changes whenever a node is added or removed, not when a node's
    /// object changes (that changes its generation).
    pub fn node_set_epoch(&self) -> u64 {
        self.node_set_epoch
    }

    /// A node's id by name.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    /// A counted pod by `namespace/name`.
    pub fn pod(&self, key: &str) -> Option<&CachedPod> {
        self.pods.get(key)
    }

    /// Every counted pod (and pods waiting for their node).
    pub fn pods(&self) -> impl Iterator<Item = &CachedPod> {
        self.pods.values()
    }

    /// A node's NodeMetric (as read), by node name.
    pub fn node_metric(&self, name: &str) -> Option<&Arc<NodeUsageReport>> {
        self.metrics.get(name)
    }

    /// Adds or replaces a node. Pods already assigned to it are counted now.
    pub fn apply_node(&mut self, node: Node) -> Result<Vec<CacheChange>, NodeViewError> {
        let view = NodeView::from_node(&node)?;
        Ok(self.apply_node_view(Arc::new(node), view))
    }

    /// [`apply_node`](Self::apply_node) for a node the caller has read
    /// already: `view` must be `NodeView::from_node(&node)`.
    pub fn apply_node_view(&mut self, node: Arc<Node>, view: NodeView) -> Vec<CacheChange> {
        let mut changes = Vec::new();
        self.epoch += 1;
        if let Some(id) = self.by_name.get(view.name()).copied() {
            self.update(id, |info| info.set_node(node, view));
            changes.push(CacheChange::NodeUpdated(id));
            return changes;
        }
        self.node_set_epoch += 1;
        let id = NodeId(u32::try_from(self.position.len()).unwrap_or(u32::MAX));
        let name: Box<str> = view.name().into();
        self.position.push(self.nodes.len() as u32);
        let info = NodeInfo::new(id, node, view);
        self.generations.push(info.generation());
        self.name_hashes.push(info.name_hash());
        self.nodes.push(info);
        self.by_name.insert(name.clone(), id);
        changes.push(CacheChange::NodeAdded(id));
        if self.metrics.contains_key(&name) {
            changes.push(CacheChange::NodeMetricUpdated(id));
        }
        for key in self.waiting_for_node.remove(&name).unwrap_or_default() {
            if let Some(cached) = self.pods.get_mut(&key) {
                cached.node = Some(id);
                let info = cached.info.clone();
                self.update(id, |n| n.add_pod(&info));
                changes.push(CacheChange::PodAdded { pod: key, node: id });
            }
        }
        changes
    }

    /// Removes a node; its pods stay known (waiting for a node of that name).
    pub fn remove_node(&mut self, name: &str) -> Vec<CacheChange> {
        let Some(id) = self.by_name.remove(name) else {
            return Vec::new();
        };
        self.epoch += 1;
        self.node_set_epoch += 1;
        let mut changes = Vec::new();
        let mut orphans = Vec::new();
        for (key, cached) in self.pods.iter_mut() {
            if cached.node == Some(id) {
                cached.node = None;
                orphans.push(key.clone());
                changes.push(CacheChange::PodRemoved { pod: cached.info.clone(), node: id });
            }
        }
        if !orphans.is_empty() {
            self.waiting_for_node.insert(name.into(), orphans);
        }
        let pos = self.position[id.index()] as usize;
        self.nodes.swap_remove(pos);
        self.generations.swap_remove(pos);
        self.name_hashes.swap_remove(pos);
        if let Some(moved) = self.nodes.get(pos) {
            self.position[moved.id().index()] = pos as u32;
        }
        self.position[id.index()] = u32::MAX;
        changes.push(CacheChange::NodeRemoved { id, name: name.into() });
        changes
    }

    /// Records that a pod is assigned to `node_name` (seen bound through the
    /// API), confirming an assumption, moving it, or refreshing its object.
    pub fn apply_assigned_pod(&mut self, info: Arc<PodInfo>, node_name: &str) -> Vec<CacheChange> {
        let key: Box<str> = info.key().into();
        let mut changes = self.uncount(&key);
        let node = self.node_id(node_name);
        match node {
            Some(id) => {
                self.update(id, |n| n.add_pod(&info));
                changes.push(CacheChange::PodAdded { pod: key.clone(), node: id });
            }
            None => self.waiting_for_node.entry(node_name.into()).or_default().push(key.clone()),
        }
        self.pods
            .insert(key, CachedPod { info, node_name: node_name.into(), node, assumed: false });
        changes
    }

    /// Counts `pod` on `node` before the bind is confirmed.
    pub fn assume(&mut self, info: Arc<PodInfo>, node: NodeId) -> Vec<CacheChange> {
        let key: Box<str> = info.key().into();
        let mut changes = self.uncount(&key);
        let Some(node_name) = self.update(node, |n| {
            n.add_pod(&info);
            Box::<str>::from(n.name())
        }) else {
            return changes;
        };
        changes.push(CacheChange::PodAdded { pod: key.clone(), node });
        self.pods.insert(key, CachedPod { info, node_name, node: Some(node), assumed: true });
        changes
    }

    /// Drops an assumption (the bind failed). Confirmed pods are kept.
    pub fn forget(&mut self, key: &str) -> Vec<CacheChange> {
        match self.pods.get(key) {
            Some(cached) if cached.assumed => self.remove_pod(key),
            _ => Vec::new(),
        }
    }

    /// Removes a pod (deleted, or finished).
    pub fn remove_pod(&mut self, key: &str) -> Vec<CacheChange> {
        let changes = self.uncount(key);
        if let Some(cached) = self.pods.remove(key)
            && cached.node.is_none()
            && let Some(waiting) = self.waiting_for_node.get_mut(&cached.node_name)
        {
            waiting.retain(|k| &**k != key);
        }
        changes
    }

    /// Stops counting a pod on its node (if it was), keeping its entry.
    fn uncount(&mut self, key: &str) -> Vec<CacheChange> {
        let Some(cached) = self.pods.get_mut(key) else {
            return Vec::new();
        };
        let Some(node) = cached.node.take() else {
            return Vec::new();
        };
        let info = cached.info.clone();
        self.update(node, |n| n.remove_pod(&info));
        vec![CacheChange::PodRemoved { pod: info, node }]
    }

    /// Takes pods out of their nodes' sums for one scheduling cycle (the
    /// pods a PreFilter plugin's
    /// [`NodeOverlay`](crate::framework::NodeOverlay) names); they stay
    /// known, and [`unlift`](Self::unlift) must put them back before
    /// anything else reads or changes the cache. The nodes' generations
    /// move (results cached for them are recomputed once).
    pub(crate) fn lift(&mut self, pods: &[(NodeId, Arc<PodInfo>)]) {
        for (node, pod) in pods {
            self.update(*node, |n| n.remove_pod(pod));
        }
    }

    /// Puts back what [`lift`](Self::lift) took out (the exact inverse).
    pub(crate) fn unlift(&mut self, pods: &[(NodeId, Arc<PodInfo>)]) {
        for (node, pod) in pods {
            self.update(*node, |n| n.add_pod(pod));
        }
    }

    /// Stores a node's NodeMetric, read (named after the node).
    pub fn apply_node_metric(&mut self, metric: Arc<NodeUsageReport>) -> Vec<CacheChange> {
        let name: Box<str> = metric.node.as_str().into();
        self.metrics.insert(name.clone(), metric);
        let id = self.node_id(&name);
        if let Some(id) = id {
            self.update(id, NodeInfo::touch);
        }
        id.map(CacheChange::NodeMetricUpdated).into_iter().collect()
    }

    /// Drops a node's NodeMetric.
    pub fn remove_node_metric(&mut self, name: &str) -> Vec<CacheChange> {
        if self.metrics.remove(name).is_none() {
            return Vec::new();
        }
        let id = self.node_id(name);
        if let Some(id) = id {
            self.update(id, NodeInfo::touch);
        }
        id.map(CacheChange::NodeMetricRemoved).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{node, pod_info};
    use kolo_core::resources::ResourceName;

    fn requested_cpu(cache: &Cache, name: &str) -> i64 {
        cache.node(cache.node_id(name).unwrap()).unwrap().requested(ResourceName::Cpu)
    }

    #[test]
    fn assumed_pods_are_counted_once_then_confirmed_or_forgotten() {
        let mut cache = Cache::new();
        cache.apply_node(node("n1", &[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")])).unwrap();
        cache.apply_node(node("n2", &[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")])).unwrap();
        let n1 = cache.node_id("n1").unwrap();
        let p = Arc::new(pod_info("p", &[("cpu", "1")]));
        cache.assume(p.clone(), n1);
        assert_eq!(requested_cpu(&cache, "n1"), 1000);
        // The API confirms the bind: still counted once.
        cache.apply_assigned_pod(p.clone(), "n1");
        assert_eq!(requested_cpu(&cache, "n1"), 1000);
        assert!(!cache.pod("default/p").unwrap().assumed);
        // A confirmed pod is not forgotten by a stale bind failure.
        cache.forget("default/p");
        assert_eq!(requested_cpu(&cache, "n1"), 1000);
        // Moved by the API to another node.
        cache.apply_assigned_pod(p.clone(), "n2");
        assert_eq!((requested_cpu(&cache, "n1"), requested_cpu(&cache, "n2")), (0, 1000));
        cache.remove_pod("default/p");
        assert_eq!(requested_cpu(&cache, "n2"), 0);

        let q = Arc::new(pod_info("q", &[("cpu", "2")]));
        cache.assume(q, n1);
        assert_eq!(cache.node(n1).unwrap().pod_count(), 1);
        cache.forget("default/q");
        assert_eq!((requested_cpu(&cache, "n1"), cache.node(n1).unwrap().pod_count()), (0, 0));
    }

    #[test]
    fn pods_wait_for_their_node_and_survive_its_removal() {
        let mut cache = Cache::new();
        let p = Arc::new(pod_info("p", &[("cpu", "1")]));
        cache.apply_assigned_pod(p, "late");
        cache.apply_node(node("other", &[("cpu", "4")])).unwrap();
        let changes = cache.apply_node(node("late", &[("cpu", "4")])).unwrap();
        assert!(changes.iter().any(|c| matches!(c, CacheChange::PodAdded { .. })));
        assert_eq!(requested_cpu(&cache, "late"), 1000);
        let changes = cache.remove_node("late");
        assert!(matches!(changes.last(), Some(CacheChange::NodeRemoved { .. })));
        assert_eq!(cache.nodes().len(), 1);
        assert_eq!(cache.nodes()[0].name(), "other");
        assert_eq!(cache.node_id("other").map(|id| cache.node(id).unwrap().name()), Some("other"));
        // Re-added: the pod is counted again.
        cache.apply_node(node("late", &[("cpu", "4")])).unwrap();
        assert_eq!(requested_cpu(&cache, "late"), 1000);
    }
}
