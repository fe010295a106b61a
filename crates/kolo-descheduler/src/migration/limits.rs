//! The retryable limits (spec §10.3): how many pods may be migrating at
//! once globally (`maxMigratingGlobally`, kolo), per node
//! (`maxMigratingPerNode`), per namespace (`maxMigratingPerNamespace`) and
//! per workload (`maxMigratingPerWorkload`, `maxUnavailablePerWorkload`),
//! and the non-retryable expected-replicas check.
//!
//! A [`Load`] counts the *pods* with a migrating job (a pod with two jobs
//! counts once); the pod being checked is never counted against itself,
//! as in Koordinator. A limit of 0 (or absent) is no limit, except the
//! workload limits, which always have Koordinator's default.

use std::collections::{HashMap, HashSet};

use kolo_core::pod::PodPhase;
use kolo_scheduler::framework::PodInfo;

use super::args::{MigrationControllerArgs, max_per_workload};
use crate::cluster::Cluster;

/// The UID of `pod`'s controlling owner.
pub fn controller_uid(pod: &PodInfo) -> Option<&str> {
    pod.view().owner().filter(|o| o.controller).map(|o| &*o.uid)
}

/// Whether `pod` is active and Ready (what a workload counts as available).
pub fn pod_available(pod: &PodInfo) -> bool {
    let view = pod.view();
    let active = !matches!(view.phase(), PodPhase::Succeeded | PodPhase::Failed)
        && view.deletion_timestamp().is_none();
    let ready = pod
        .pod()
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    active && ready
}

/// The pods with a migrating job, by node, namespace and workload.
#[derive(Debug, Default)]
pub struct Load<'c> {
    all: HashSet<String>,
    by_node: HashMap<String, HashSet<String>>,
    by_namespace: HashMap<String, HashSet<String>>,
    by_workload: HashMap<String, HashSet<String>>,
    workload_pods: HashMap<&'c str, Vec<&'c PodInfo>>,
}

impl<'c> Load<'c> {
    /// An empty load over `cluster` (indexes its pods by workload).
    pub fn new(cluster: &'c Cluster) -> Load<'c> {
        let mut workload_pods: HashMap<&str, Vec<&PodInfo>> = HashMap::new();
        for pod in cluster.pods() {
            if let Some(uid) = controller_uid(pod) {
                workload_pods.entry(uid).or_default().push(pod);
            }
        }
        Load { workload_pods, ..Load::default() }
    }

    /// Counts pod `namespace/name` as migrating (its node and workload
    /// from `cluster`, when it is there).
    pub fn add(&mut self, cluster: &Cluster, namespace: &str, name: &str) {
        let key = format!("{namespace}/{name}");
        if !self.all.insert(key.clone()) {
            return;
        }
        self.by_namespace.entry(namespace.to_string()).or_default().insert(key.clone());
        if let Some(pod) = cluster.pod(&key) {
            if let Some(node) = pod.view().node_name() {
                self.by_node.entry(node.to_string()).or_default().insert(key.clone());
            }
            if let Some(uid) = controller_uid(pod) {
                self.by_workload.entry(uid.to_string()).or_default().insert(key);
            }
        }
    }

    /// Whether pod `key` is counted.
    pub fn contains(&self, key: &str) -> bool {
        self.all.contains(key)
    }

    /// The number of pods counted on `node`.
    pub fn on_node(&self, node: &str) -> usize {
        self.by_node.get(node).map_or(0, HashSet::len)
    }

    /// The number of pods counted in `namespace`.
    pub fn in_namespace(&self, namespace: &str) -> usize {
        self.by_namespace.get(namespace).map_or(0, HashSet::len)
    }

    /// The number of pods counted in workload `uid`.
    pub fn in_workload(&self, uid: &str) -> usize {
        self.by_workload.get(uid).map_or(0, HashSet::len)
    }

    /// The number of pods counted.
    pub fn total(&self) -> usize {
        self.all.len()
    }

    /// Whether one more migrating pod, `pod`, stays within every
    /// retryable limit; `Err` names the limit.
    pub fn check(
        &self,
        cluster: &Cluster,
        args: &MigrationControllerArgs,
        pod: &PodInfo,
    ) -> Result<(), String> {
        let key = pod.key();
        let me = |set: Option<&HashSet<String>>| set.is_some_and(|s| s.contains(key)) as usize;
        let cap = |v: Option<i32>| v.filter(|&n| n > 0).map(|n| n as usize);
        if let Some(max) = cap(args.max_migrating_globally)
            && self.all.len() - self.all.contains(key) as usize >= max
        {
            return Err(format!("maxMigratingGlobally {max} reached"));
        }
        if let (Some(max), Some(node)) = (cap(args.max_migrating_per_node), pod.view().node_name())
        {
            let set = self.by_node.get(node);
            if set.map_or(0, HashSet::len) - me(set) >= max {
                return Err(format!("maxMigratingPerNode {max} reached on node {node}"));
            }
        }
        if let Some(max) = cap(args.max_migrating_per_namespace) {
            let ns = pod.view().namespace();
            let set = self.by_namespace.get(ns);
            if set.map_or(0, HashSet::len) - me(set) >= max {
                return Err(format!("maxMigratingPerNamespace {max} reached in namespace {ns}"));
            }
        }
        self.check_workload(cluster, args, pod)
    }

    fn check_workload(
        &self,
        cluster: &Cluster,
        args: &MigrationControllerArgs,
        pod: &PodInfo,
    ) -> Result<(), String> {
        let Some(uid) = controller_uid(pod) else { return Ok(()) };
        // A workload the cluster does not describe has no known replicas:
        // its limits cannot be computed, so they do not apply (Koordinator
        // would hold the job forever).
        let Some(replicas) = cluster.workload(uid).and_then(|w| w.replicas) else {
            return Ok(());
        };
        let key = pod.key();
        let migrating: HashSet<&str> = self
            .by_workload
            .get(uid)
            .into_iter()
            .flatten()
            .map(String::as_str)
            .filter(|k| *k != key)
            .collect();
        let max_migrating = max_per_workload(replicas, args.max_migrating_per_workload.as_ref());
        if !migrating.is_empty() && migrating.len() >= max_migrating as usize {
            return Err(format!(
                "maxMigratingPerWorkload {max_migrating} reached in workload {uid} ({} migrating)",
                migrating.len()
            ));
        }
        let mut unavailable = migrating;
        for p in self.workload_pods.get(uid).into_iter().flatten() {
            if !pod_available(p) {
                unavailable.insert(p.key());
            }
        }
        let max_unavailable =
            max_per_workload(replicas, args.max_unavailable_per_workload.as_ref());
        if unavailable.len() >= max_unavailable as usize {
            return Err(format!(
                "maxUnavailablePerWorkload {max_unavailable} reached in workload {uid} ({} unavailable)",
                unavailable.len()
            ));
        }
        Ok(())
    }
}

/// The non-retryable expected-replicas check: unless
/// `skipCheckExpectedReplicas`, a workload of one replica, or whose
/// replicas equal its maxMigrating or maxUnavailable, is never migrated
/// (it would lose all its pods at once).
pub fn check_expected_replicas(
    cluster: &Cluster,
    args: &MigrationControllerArgs,
    pod: &PodInfo,
) -> Result<(), String> {
    if args.skip_check_expected_replicas == Some(true) {
        return Ok(());
    }
    let Some(uid) = controller_uid(pod) else { return Ok(()) };
    let Some(replicas) = cluster.workload(uid).and_then(|w| w.replicas) else { return Ok(()) };
    let max_migrating = max_per_workload(replicas, args.max_migrating_per_workload.as_ref());
    let max_unavailable = max_per_workload(replicas, args.max_unavailable_per_workload.as_ref());
    if replicas == 1 || replicas == max_migrating || replicas == max_unavailable {
        return Err(format!(
            "workload {uid} has {replicas} replicas, maxMigrating {max_migrating}, maxUnavailable {max_unavailable}: migrating would leave none"
        ));
    }
    Ok(())
}
