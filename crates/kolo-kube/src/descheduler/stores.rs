//! What the descheduler driver knows of the cluster: the watched objects,
//! read once into the forms a round takes (node and pod views, usage
//! reports, workloads), and the [`Cluster`] of a round built from them.
//!
//! The stores are the driver's own (not reflector stores) so an object the
//! driver writes — a created PodMigrationJob or Reservation, a job's new
//! status — goes in at once: the next round, 500 ms later, must not create
//! the same job again because the watch has not shown it yet. The watch's
//! copy replaces it when it arrives.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_api::crd::{NodeMetric, PodMigrationJob, Reservation};
use kolo_core::node::NodeView;
use kolo_core::usage_report::NodeUsageReport;
use kolo_descheduler::{Cluster, Workload};
use kolo_scheduler::framework::PodInfo;
use kube::ResourceExt;

use crate::mirror::{Change, key};

/// One watched kind's change, for the driver.
#[derive(Debug)]
pub enum Update {
    /// A node.
    Node(Box<Change<Node>>),
    /// A pod.
    Pod(Box<Change<Pod>>),
    /// A NodeMetric.
    NodeMetric(Box<Change<NodeMetric>>),
    /// A PodMigrationJob.
    Job(Box<Change<PodMigrationJob>>),
    /// A Reservation.
    Reservation(Box<Change<Reservation>>),
    /// A ReplicaSet.
    ReplicaSet(Box<Change<ReplicaSet>>),
    /// A StatefulSet.
    StatefulSet(Box<Change<StatefulSet>>),
    /// A batch Job.
    BatchJob(Box<Change<Job>>),
    /// The Reservation CRD is not installed (its watch keeps retrying).
    ReservationCrdMissing,
}

/// The kinds whose first list the driver waits for before it decides
/// anything (a missing Reservation CRD counts as listed, empty).
pub const SYNCED_KINDS: [&str; 8] = [
    "nodes",
    "pods",
    "nodemetrics",
    "podmigrationjobs",
    "reservations",
    "replicasets",
    "statefulsets",
    "jobs",
];

/// What an update touched, for the driver's triggers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touched {
    /// A pod, job or reservation: the migration controller runs soon.
    Migration,
    /// Anything else: the next scheduled round sees it.
    Other,
}

/// The descheduler's view of the cluster.
#[derive(Debug, Default)]
pub struct Stores {
    nodes: BTreeMap<String, NodeView>,
    pods: BTreeMap<String, PodInfo>,
    usage: BTreeMap<String, Arc<NodeUsageReport>>,
    jobs: BTreeMap<String, Arc<PodMigrationJob>>,
    reservations: BTreeMap<String, Arc<Reservation>>,
    /// Mirror key (`Kind/namespace/name`) → workload.
    workloads: BTreeMap<String, Workload>,
    synced: [bool; SYNCED_KINDS.len()],
    /// Only jobs of pods in this namespace (the driver's `--namespace`).
    namespace: Option<String>,
    /// Whether the Reservation CRD answered (false once its watch said it
    /// is missing, true again on its first event).
    reservation_crd: bool,
}

impl Stores {
    /// Empty stores; `namespace` restricts the jobs kept to its pods'.
    pub fn new(namespace: Option<String>) -> Stores {
        Stores { namespace, reservation_crd: true, ..Stores::default() }
    }

    /// Whether every kind's first list is in.
    pub fn synced(&self) -> bool {
        self.synced.iter().all(|s| *s)
    }

    /// Whether the Reservation CRD is installed (as far as its watch says).
    pub fn reservation_crd(&self) -> bool {
        self.reservation_crd
    }

    /// Applies one update.
    pub fn apply(&mut self, update: Update) -> Touched {
        match update {
            Update::Node(c) => self.node(*c),
            Update::Pod(c) => self.pod_change(*c),
            Update::NodeMetric(c) => self.metric(*c),
            Update::Job(c) => self.job(*c),
            Update::Reservation(c) => {
                self.reservation_crd = true;
                match *c {
                    Change::Apply(r) => self.put_reservation(r),
                    Change::Delete(k) => drop(self.reservations.remove(&k)),
                    Change::Synced => self.synced[4] = true,
                }
                Touched::Migration
            }
            Update::ReservationCrdMissing => {
                self.reservation_crd = false;
                self.reservations.clear();
                self.synced[4] = true;
                Touched::Migration
            }
            Update::ReplicaSet(c) => {
                self.workload(*c, 5, |rs: &ReplicaSet| rs.spec.as_ref().and_then(|s| s.replicas))
            }
            Update::StatefulSet(c) => {
                self.workload(*c, 6, |s: &StatefulSet| s.spec.as_ref().and_then(|s| s.replicas))
            }
            Update::BatchJob(c) => {
                self.workload(*c, 7, |j: &Job| j.spec.as_ref().and_then(|s| s.parallelism))
            }
        }
    }

    fn node(&mut self, change: Change<Node>) -> Touched {
        match change {
            Change::Apply(node) => match NodeView::from_node(&node) {
                Ok(view) => drop(self.nodes.insert(node.name_any(), view)),
                Err(e) => tracing::warn!(error = %e, "node refused; keeping its last good state"),
            },
            Change::Delete(name) => drop(self.nodes.remove(&name)),
            Change::Synced => self.synced[0] = true,
        }
        Touched::Other
    }

    fn pod_change(&mut self, change: Change<Pod>) -> Touched {
        match change {
            Change::Apply(pod) => {
                let k = key(&pod);
                match PodInfo::new(pod) {
                    Ok(info) => drop(self.pods.insert(k, info)),
                    Err(e) => {
                        tracing::warn!(pod = %k, error = %e, "pod refused; keeping its last good state")
                    }
                }
            }
            Change::Delete(k) => drop(self.pods.remove(&k)),
            Change::Synced => self.synced[1] = true,
        }
        Touched::Migration
    }

    fn metric(&mut self, change: Change<NodeMetric>) -> Touched {
        match change {
            Change::Apply(metric) => {
                let report = NodeUsageReport::read(&metric);
                for e in &report.errors {
                    tracing::debug!(nodemetric = %metric.name_any(), error = %e, "quantity read as absent");
                }
                self.usage.insert(metric.name_any(), Arc::new(report));
            }
            Change::Delete(name) => drop(self.usage.remove(&name)),
            Change::Synced => self.synced[2] = true,
        }
        Touched::Other
    }

    fn job(&mut self, change: Change<PodMigrationJob>) -> Touched {
        match change {
            Change::Apply(job) => self.put_job(job),
            Change::Delete(name) => drop(self.jobs.remove(&name)),
            Change::Synced => self.synced[3] = true,
        }
        Touched::Migration
    }

    fn workload<K: ResourceExt>(
        &mut self,
        change: Change<K>,
        index: usize,
        replicas: fn(&K) -> Option<i32>,
    ) -> Touched {
        let kind = SYNCED_KINDS[index];
        match change {
            Change::Apply(object) => {
                let workload = Workload {
                    kind: workload_kind(index).into(),
                    namespace: object.namespace().unwrap_or_default(),
                    name: object.name_any(),
                    uid: object.uid().unwrap_or_default(),
                    replicas: replicas(&object),
                };
                self.workloads.insert(format!("{kind}/{}", key(&object)), workload);
            }
            Change::Delete(k) => drop(self.workloads.remove(&format!("{kind}/{k}"))),
            Change::Synced => self.synced[index] = true,
        }
        Touched::Other
    }

    /// Puts a job in (from the watch, or as the API server answered a
    /// write), unless `--namespace` excludes its pod.
    pub fn put_job(&mut self, job: PodMigrationJob) {
        if let Some(ns) = &self.namespace {
            let pod_ns = job.spec.pod_ref.as_ref().and_then(|r| r.namespace.as_deref());
            if pod_ns != Some(ns.as_str()) {
                return;
            }
        }
        let name = job.name_any();
        if self.jobs.get(&name).is_some_and(|old| is_older(&job, &**old)) {
            return;
        }
        self.jobs.insert(name, Arc::new(job));
    }

    /// Removes a job the driver deleted.
    pub fn remove_job(&mut self, name: &str) {
        self.jobs.remove(name);
    }

    /// The job named `name`.
    pub fn job_named(&self, name: &str) -> Option<&Arc<PodMigrationJob>> {
        self.jobs.get(name)
    }

    /// Puts a reservation in.
    pub fn put_reservation(&mut self, reservation: Reservation) {
        let name = reservation.name_any();
        if self.reservations.get(&name).is_some_and(|old| is_older(&reservation, &**old)) {
            return;
        }
        self.reservations.insert(name, Arc::new(reservation));
    }

    /// Removes a reservation the driver deleted.
    pub fn remove_reservation(&mut self, name: &str) {
        self.reservations.remove(name);
    }

    /// The pod with key `namespace/name`.
    pub fn pod(&self, key: &str) -> Option<&PodInfo> {
        self.pods.get(key)
    }

    /// The round's input: every node, pod, usage report, job, reservation
    /// and workload, in name order.
    pub fn cluster(&self) -> Cluster {
        Cluster::new(
            self.nodes.values().cloned().collect(),
            self.pods.values().cloned().collect(),
            self.usage.values().cloned(),
        )
        .with_jobs(self.jobs.values().cloned())
        .with_reservations(self.reservations.values().cloned())
        .with_workloads(self.workloads.values().cloned())
    }

    /// The jobs by (phase, reason); a job without a status counts as
    /// phase `Pending`, and a missing reason as empty.
    pub fn jobs_by_phase(&self) -> HashMap<(String, String), i64> {
        let mut counts = HashMap::new();
        for job in self.jobs.values() {
            let status = job.status.as_ref();
            let phase = status.and_then(|s| s.phase.clone()).unwrap_or_else(|| "Pending".into());
            let reason = status.and_then(|s| s.reason.clone()).unwrap_or_default();
            *counts.entry((phase, reason)).or_insert(0) += 1;
        }
        counts
    }
}

/// Whether `new` is an older version of the object than `old`: a watch
/// event that arrives after the driver stored its own write's answer. The
/// resourceVersion is opaque in principle; the API server's (etcd
/// revisions) are integers, and when either is not, nothing is older.
fn is_older<K: ResourceExt>(new: &K, old: &K) -> bool {
    let version = |o: &K| o.resource_version().and_then(|v| v.parse::<u64>().ok());
    matches!((version(new), version(old)), (Some(n), Some(o)) if n < o)
}

/// The `kind` of the workload watched at `index` of [`SYNCED_KINDS`].
fn workload_kind(index: usize) -> &'static str {
    match index {
        5 => "ReplicaSet",
        6 => "StatefulSet",
        _ => "Job",
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::ReplicaSetSpec;
    use k8s_openapi::api::core::v1::ObjectReference;
    use kolo_api::crd::{PodMigrationJobSpec, PodMigrationJobStatus};
    use kube::api::ObjectMeta;

    use super::*;

    fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: namespace.map(Into::into),
            uid: Some(format!("uid-{name}")),
            ..ObjectMeta::default()
        }
    }

    fn job(name: &str, pod_ns: &str, phase: Option<&str>, reason: Option<&str>) -> PodMigrationJob {
        let mut job = PodMigrationJob::new(
            name,
            PodMigrationJobSpec {
                pod_ref: Some(ObjectReference {
                    namespace: Some(pod_ns.into()),
                    name: Some("p".into()),
                    ..ObjectReference::default()
                }),
                ..PodMigrationJobSpec::default()
            },
        );
        job.status = Some(PodMigrationJobStatus {
            phase: phase.map(Into::into),
            reason: reason.map(Into::into),
            ..PodMigrationJobStatus::default()
        });
        job
    }

    fn pod(name: &str, node: &str) -> Pod {
        let mut pod = Pod { metadata: meta(name, Some("ns")), ..Pod::default() };
        pod.spec = Some(k8s_openapi::api::core::v1::PodSpec {
            node_name: Some(node.into()),
            ..Default::default()
        });
        pod
    }

    #[test]
    fn the_cluster_holds_what_was_applied_and_sync_waits_for_every_kind() {
        let mut stores = Stores::new(None);
        let node = Node { metadata: meta("n1", None), ..Node::default() };
        assert_eq!(stores.apply(Update::Node(Box::new(Change::Apply(node)))), Touched::Other);
        let touched = stores.apply(Update::Pod(Box::new(Change::Apply(pod("p1", "n1")))));
        assert_eq!(touched, Touched::Migration);
        let rs = ReplicaSet {
            metadata: meta("web", Some("ns")),
            spec: Some(ReplicaSetSpec { replicas: Some(3), ..ReplicaSetSpec::default() }),
            ..ReplicaSet::default()
        };
        stores.apply(Update::ReplicaSet(Box::new(Change::Apply(rs))));
        stores.apply(Update::Job(Box::new(Change::Apply(job("j1", "ns", None, None)))));
        let cluster = stores.cluster();
        assert_eq!(cluster.pods_on("n1").map(|p| p.key()).collect::<Vec<_>>(), ["ns/p1"]);
        assert_eq!(cluster.workload("uid-web").and_then(|w| w.replicas), Some(3));
        assert_eq!(cluster.workload("uid-web").map(|w| w.kind.as_str()), Some("ReplicaSet"));
        assert_eq!(cluster.jobs().len(), 1);

        assert!(!stores.synced());
        for update in [
            Update::Node(Box::new(Change::Synced)),
            Update::Pod(Box::new(Change::Synced)),
            Update::NodeMetric(Box::new(Change::Synced)),
            Update::Job(Box::new(Change::Synced)),
            Update::ReplicaSet(Box::new(Change::Synced)),
            Update::StatefulSet(Box::new(Change::Synced)),
            Update::BatchJob(Box::new(Change::Synced)),
        ] {
            stores.apply(update);
        }
        assert!(!stores.synced(), "reservations not listed yet");
        stores.apply(Update::ReservationCrdMissing);
        assert!(stores.synced() && !stores.reservation_crd());
        stores.apply(Update::Reservation(Box::new(Change::Synced)));
        assert!(stores.reservation_crd(), "an event from the watch means it is installed");

        stores.apply(Update::Pod(Box::new(Change::Delete("ns/p1".into()))));
        assert_eq!(stores.cluster().pods().len(), 0);
    }

    #[test]
    fn jobs_of_other_namespaces_are_left_out_and_counted_by_phase() {
        let mut stores = Stores::new(Some("ns".into()));
        stores.put_job(job("mine", "ns", Some("Failed"), Some("FailedEvict")));
        stores.put_job(job("theirs", "other", Some("Failed"), Some("FailedEvict")));
        stores.put_job(job("new", "ns", None, None));
        stores.put_job(job("done", "ns", Some("Succeeded"), None));
        let counts = stores.jobs_by_phase();
        let get = |p: &str, r: &str| counts.get(&(p.to_string(), r.to_string())).copied();
        assert_eq!(get("Failed", "FailedEvict"), Some(1));
        assert_eq!(get("Pending", ""), Some(1));
        assert_eq!(get("Succeeded", ""), Some(1));
        assert_eq!(counts.values().sum::<i64>(), 3);
        assert!(stores.job_named("theirs").is_none());
        let mut stale = job("done", "ns", Some("Running"), None);
        stale.metadata.resource_version = Some("5".into());
        let mut fresh = job("done", "ns", Some("Succeeded"), None);
        fresh.metadata.resource_version = Some("7".into());
        stores.put_job(fresh);
        stores.put_job(stale);
        let phase = stores.job_named("done").and_then(|j| j.status.clone()).and_then(|s| s.phase);
        assert_eq!(phase.as_deref(), Some("Succeeded"), "a late watch event does not go back");
        stores.remove_job("mine");
        assert!(stores.job_named("mine").is_none());
    }
}
