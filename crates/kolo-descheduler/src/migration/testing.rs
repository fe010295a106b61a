//! Builders for the migration controller's tests.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kolo_api::crd::{PodMigrationJob, Reservation};
use kolo_core::clock::Timestamp;
use kolo_scheduler::framework::PodInfo;
use serde_json::{Value, json};

use super::{MigrationController, MigrationControllerArgs};
use crate::cluster::{Cluster, Workload};
use crate::plan::Action;

/// Second `s` of the test clock.
pub fn t(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap()
}

/// RFC 3339 of [`t`].
pub fn ts(s: i64) -> String {
    t(s).to_string()
}

/// A running, Ready pod `ns/name` with UID `name-uid` on `node`, owned by
/// ReplicaSet `rs` (UID `rs-uid`); then `edit`.
pub fn pod_with(
    ns: &str,
    name: &str,
    node: Option<&str>,
    edit: impl FnOnce(&mut Value),
) -> PodInfo {
    let mut v = json!({
        "metadata": {"namespace": ns, "name": name, "uid": format!("{name}-uid"),
            "creationTimestamp": ts(0),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                "uid": "rs-uid", "controller": true}]},
        "spec": {"containers": [{"name": "c"}], "schedulerName": "koord-scheduler"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    });
    if let Some(node) = node {
        v["spec"]["nodeName"] = json!(node);
    }
    edit(&mut v);
    let pod: Pod = serde_json::from_value(v).unwrap();
    PodInfo::new(pod).unwrap()
}

/// [`pod_with`] without edits.
pub fn pod(ns: &str, name: &str, node: &str) -> PodInfo {
    pod_with(ns, name, Some(node), |_| {})
}

/// A job `name` for pod `ns/pod` (UID `pod-uid`), created at `t(created)`,
/// in `phase`; then `edit`.
pub fn job_with(
    name: &str,
    ns: &str,
    pod: &str,
    phase: &str,
    created: i64,
    edit: impl FnOnce(&mut Value),
) -> Arc<PodMigrationJob> {
    let mut v = json!({
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
        "metadata": {"name": name, "uid": format!("{name}-uid"), "creationTimestamp": ts(created)},
        "spec": {"podRef": {"namespace": ns, "name": pod, "uid": format!("{pod}-uid")},
            "mode": "ReservationFirst", "ttl": "5m0s"},
        "status": {"phase": phase}
    });
    edit(&mut v);
    Arc::new(serde_json::from_value(v).unwrap())
}

/// A reservation `name` from its status JSON.
pub fn reservation(name: &str, status: Value, owners: Value) -> Arc<Reservation> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
            "metadata": {"name": name},
            "spec": {"template": {}, "owners": owners},
            "status": status
        }))
        .unwrap(),
    )
}

/// ReplicaSet `rs-uid` with `replicas`.
pub fn workload(replicas: i32) -> Workload {
    Workload {
        kind: "ReplicaSet".into(),
        namespace: "app".into(),
        name: "rs".into(),
        uid: "rs-uid".into(),
        replicas: Some(replicas),
    }
}

/// A cluster of `pods`, `jobs` and `reservations`.
pub fn cluster(
    pods: Vec<PodInfo>,
    jobs: Vec<Arc<PodMigrationJob>>,
    reservations: Vec<Arc<Reservation>>,
) -> Cluster {
    Cluster::new(Vec::new(), pods, []).with_jobs(jobs).with_reservations(reservations)
}

/// A controller with default args edited by `edit`.
pub fn controller(edit: impl FnOnce(&mut MigrationControllerArgs)) -> MigrationController {
    let mut args = MigrationControllerArgs::default();
    edit(&mut args);
    MigrationController::new(args).unwrap()
}

/// The status written for `job`, if any.
pub fn status_of<'a>(
    actions: &'a [Action],
    job: &str,
) -> Option<&'a kolo_api::crd::PodMigrationJobStatus> {
    actions.iter().rev().find_map(|a| match a {
        Action::SetJobStatus { job: j, status } if j == job => Some(&**status),
        _ => None,
    })
}

/// (phase, reason) written for `job`.
pub fn phase_reason(actions: &[Action], job: &str) -> (Option<String>, Option<String>) {
    status_of(actions, job).map_or((None, None), |s| (s.phase.clone(), s.reason.clone()))
}
