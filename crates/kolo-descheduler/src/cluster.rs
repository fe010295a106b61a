//! [`Cluster`]: everything one descheduler round reads, indexed once.
//!
//! Drivers build it from their stores (kolo-kube from watches, kolo-sim
//! from its engine, `kolo deschedule` from a snapshot). Usage comes as
//! [`NodeUsageReport`]s, read once at the edge, so the simulator hands its
//! numbers over without formatting NodeMetric quantities.

use std::collections::HashMap;
use std::sync::Arc;

use kolo_api::crd::{PodMigrationJob, Reservation};
use kolo_core::node::NodeView;
use kolo_core::snapshot::Snapshot;
use kolo_core::usage_report::NodeUsageReport;
use kolo_scheduler::framework::PodInfo;
use kube::ResourceExt;

/// A workload that owns pods (a ReplicaSet, StatefulSet, Job, ...), as far
/// as the migration limits need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// `kind`, e.g. `ReplicaSet`.
    pub kind: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid` (what pods' owner references name).
    pub uid: String,
    /// `spec.replicas` (`spec.parallelism` for a Job); `None` when unknown.
    pub replicas: Option<i32>,
}

/// The state a descheduler round reads.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    nodes: Vec<NodeView>,
    node_index: HashMap<Box<str>, usize>,
    pods: Vec<PodInfo>,
    pod_index: HashMap<Box<str>, usize>,
    pods_by_node: HashMap<Box<str>, Vec<usize>>,
    usage: HashMap<Box<str>, Arc<NodeUsageReport>>,
    jobs: Vec<Arc<PodMigrationJob>>,
    reservations: Vec<Arc<Reservation>>,
    workloads: HashMap<Box<str>, Workload>,
}

impl Cluster {
    /// A cluster of `nodes` and `pods` (assigned or not), with each node's
    /// usage report (keyed by the report's `node`).
    pub fn new(
        nodes: Vec<NodeView>,
        pods: Vec<PodInfo>,
        usage: impl IntoIterator<Item = Arc<NodeUsageReport>>,
    ) -> Cluster {
        let node_index = nodes.iter().enumerate().map(|(i, n)| (n.name().into(), i)).collect();
        let mut pod_index = HashMap::with_capacity(pods.len());
        let mut pods_by_node: HashMap<Box<str>, Vec<usize>> = HashMap::new();
        for (i, pod) in pods.iter().enumerate() {
            pod_index.insert(pod.key().into(), i);
            if let Some(node) = pod.view().node_name() {
                pods_by_node.entry(node.into()).or_default().push(i);
            }
        }
        let usage = usage.into_iter().map(|r| (r.node.as_str().into(), r)).collect();
        Cluster { nodes, node_index, pods, pod_index, pods_by_node, usage, ..Cluster::default() }
    }

    /// Adds the PodMigrationJobs.
    pub fn with_jobs(mut self, jobs: impl IntoIterator<Item = Arc<PodMigrationJob>>) -> Cluster {
        self.jobs = jobs.into_iter().collect();
        self
    }

    /// Adds the Reservations.
    pub fn with_reservations(
        mut self,
        reservations: impl IntoIterator<Item = Arc<Reservation>>,
    ) -> Cluster {
        self.reservations = reservations.into_iter().collect();
        self
    }

    /// Adds the workloads pods may be owned by.
    pub fn with_workloads(mut self, workloads: impl IntoIterator<Item = Workload>) -> Cluster {
        self.workloads = workloads.into_iter().map(|w| (w.uid.as_str().into(), w)).collect();
        self
    }

    /// The cluster a snapshot holds (pods or nodes that do not read were
    /// already rejected by the snapshot loader; snapshots carry no
    /// workloads).
    pub fn from_snapshot(snapshot: &Snapshot) -> Cluster {
        let nodes = snapshot.nodes.iter().map(|n| n.view.clone()).collect();
        let pods = snapshot
            .pods
            .iter()
            .map(|p| PodInfo::from_parts(Arc::new(p.object.clone()), p.view.clone()))
            .collect();
        let usage = snapshot.node_metrics.iter().map(|m| Arc::new(NodeUsageReport::read(m)));
        Cluster::new(nodes, pods, usage)
            .with_jobs(snapshot.pod_migration_jobs.iter().cloned().map(Arc::new))
            .with_reservations(snapshot.reservations.iter().cloned().map(Arc::new))
    }

    /// Every node, in the order given.
    pub fn nodes(&self) -> &[NodeView] {
        &self.nodes
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<&NodeView> {
        self.node_index.get(name).map(|&i| &self.nodes[i])
    }

    /// Every pod, in the order given.
    pub fn pods(&self) -> &[PodInfo] {
        &self.pods
    }

    /// The pod with key `namespace/name`.
    pub fn pod(&self, key: &str) -> Option<&PodInfo> {
        self.pod_index.get(key).map(|&i| &self.pods[i])
    }

    /// The pods assigned to `node`, in the order given.
    pub fn pods_on<'a>(&'a self, node: &str) -> impl Iterator<Item = &'a PodInfo> + 'a {
        self.pods_by_node.get(node).into_iter().flatten().map(|&i| &self.pods[i])
    }

    /// The usage report of `node`, if its NodeMetric exists.
    pub fn usage(&self, node: &str) -> Option<&NodeUsageReport> {
        self.usage.get(node).map(|r| &**r)
    }

    /// Every PodMigrationJob.
    pub fn jobs(&self) -> &[Arc<PodMigrationJob>] {
        &self.jobs
    }

    /// Every Reservation.
    pub fn reservations(&self) -> &[Arc<Reservation>] {
        &self.reservations
    }

    /// The Reservation named `name`.
    pub fn reservation(&self, name: &str) -> Option<&Reservation> {
        self.reservations.iter().find(|r| r.name_any() == name).map(|r| &**r)
    }

    /// The workload with UID `uid`.
    pub fn workload(&self, uid: &str) -> Option<&Workload> {
        self.workloads.get(uid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kolo_core::pod::PodView;

    fn pod(name: &str, node: Option<&str>) -> PodInfo {
        let mut view = PodView::new("ns", name);
        view.set_node_name(node);
        PodInfo::from_parts(Arc::new(Default::default()), view)
    }

    #[test]
    fn pods_are_indexed_by_key_and_node() {
        let cluster = Cluster::new(
            vec![NodeView::new("a"), NodeView::new("b")],
            vec![pod("p1", Some("a")), pod("p2", None), pod("p3", Some("a"))],
            [Arc::new(NodeUsageReport { node: "b".into(), ..Default::default() })],
        );
        let on_a: Vec<&str> = cluster.pods_on("a").map(|p| p.key()).collect();
        assert_eq!(on_a, ["ns/p1", "ns/p3"]);
        assert_eq!(cluster.pods_on("b").count(), 0);
        assert!(cluster.pod("ns/p2").is_some_and(|p| p.view().node_name().is_none()));
        assert!(cluster.usage("b").is_some() && cluster.usage("a").is_none());
        assert_eq!(cluster.node("b").map(|n| n.name()), Some("b"));
    }
}
