//! The Reservation a ReservationFirst job creates from its pod (spec §10.4
//! step 6), and what the job reads back from it (step 7).
//!
//! The reservation is named after the **job** (Koordinator names it after
//! the job's UID): kolo's jobs have deterministic names known when the job
//! is created, while a UID exists only once the API server (or the
//! simulator) assigned one; names of live jobs are unique, so are the
//! reservations'.

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    ObjectReference, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kolo_api::crd::reservation::{
    RESERVATION_PHASE_AVAILABLE, RESERVATION_PHASE_FAILED, RESERVATION_PHASE_PENDING,
    RESERVATION_PHASE_SUCCEEDED, ReservationControllerReference, ReservationOwner,
    ReservationTemplateSpec,
};
use kolo_api::crd::{Reservation, ReservationSpec};
use kolo_api::names::annotation::RESERVATION_ALLOCATED;
use kolo_api::names::label::RESERVATION_ORDER;
use kolo_core::HasMeta;
use kolo_core::clock::Timestamp;
use kolo_scheduler::framework::PodInfo;
use kube::ResourceExt;

use crate::cluster::Cluster;

/// Label naming who created a reservation.
pub const LABEL_CREATED_BY: &str = "app.kubernetes.io/created-by";
/// Its value on the reservations the migration controller creates.
pub const CREATED_BY_DESCHEDULER: &str = "koord-descheduler";

/// The Reservation for job `job_name` migrating `pod` at `now`:
///
/// * name: `template.metadata.name`, else the job's name;
/// * labels: the template's, plus `app.kubernetes.io/created-by:
///   koord-descheduler` and `scheduling.koordinator.sh/reservation-order:
///   <now in unix ms>`;
/// * `spec.template`: the template's, else the pod's metadata (without
///   what the API server sets: uid, resourceVersion, generation, times,
///   managed fields) and spec, with `nodeName` cleared; when the pod runs
///   on a node, a required node-affinity requirement `metadata.name NotIn
///   [<node>]` is added to every term (a term of its own when there is
///   none);
/// * owners: the template's, else the pod itself when it is an
///   unscheduled Pending pod, else its controlling owner reference (with
///   the pod's namespace); `Err` when it has neither (the API would refuse
///   a reservation without owners);
/// * `allocateOnce: true` (a migration's reservation is used once);
/// * `ttl`: the job's, unless the template sets `ttl` or `expires`.
pub fn reservation_from_pod(
    job_name: &str,
    pod: &PodInfo,
    job_ttl: Option<&str>,
    template: Option<&ReservationTemplateSpec>,
    now: Timestamp,
) -> Result<Reservation, String> {
    let mut meta = template.and_then(|t| t.metadata.clone()).unwrap_or_default();
    let mut spec: ReservationSpec = template.and_then(|t| t.spec.clone()).unwrap_or_default();
    if meta.name.as_deref().is_none_or(str::is_empty) {
        meta.name = Some(job_name.to_string());
    }
    let labels = meta.labels.get_or_insert_with(Default::default);
    labels.insert(LABEL_CREATED_BY.into(), CREATED_BY_DESCHEDULER.into());
    labels.insert(RESERVATION_ORDER.into(), now.as_millisecond().to_string());
    let mut pod_template = spec.template.take().unwrap_or_else(|| PodTemplateSpec {
        metadata: Some(template_metadata(&pod.pod().metadata)),
        spec: pod.pod().spec.clone(),
    });
    let pod_spec = pod_template.spec.get_or_insert_with(Default::default);
    pod_spec.node_name = None;
    if let Some(node) = pod.view().node_name() {
        skip_node(pod_spec.affinity.get_or_insert_with(Affinity::default), node);
    }
    spec.template = Some(pod_template);
    if spec.owners.as_ref().is_none_or(Vec::is_empty) {
        spec.owners = Some(owners_of(pod)?);
    }
    spec.allocate_once = Some(true);
    if spec.ttl.is_none() && spec.expires.is_none() {
        spec.ttl = job_ttl.map(str::to_string);
    }
    Ok(Reservation { metadata: meta, spec, status: None })
}

/// The pod's metadata as a template carries it.
fn template_metadata(pod: &ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        uid: None,
        resource_version: None,
        generation: None,
        creation_timestamp: None,
        deletion_timestamp: None,
        deletion_grace_period_seconds: None,
        managed_fields: None,
        self_link: None,
        ..pod.clone()
    }
}

/// Adds `metadata.name NotIn [node]` to every required term.
fn skip_node(affinity: &mut Affinity, node: &str) {
    let requirement = NodeSelectorRequirement {
        key: "metadata.name".into(),
        operator: "NotIn".into(),
        values: Some(vec![node.to_string()]),
    };
    let node_affinity = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    let required = node_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(NodeSelector::default);
    if required.node_selector_terms.is_empty() {
        required.node_selector_terms.push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        term.match_fields.get_or_insert_with(Vec::new).push(requirement.clone());
    }
}

/// Who may use the reservation (see [`reservation_from_pod`]).
fn owners_of(pod: &PodInfo) -> Result<Vec<ReservationOwner>, String> {
    let object = pod.pod();
    let namespace = pod.view().namespace().to_string();
    if unscheduled_pending(pod) {
        let reference = ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some(namespace),
            name: Some(pod.view().name().to_string()),
            uid: Some(pod.view().uid().to_string()),
            ..Default::default()
        };
        return Ok(vec![ReservationOwner { object: Some(reference), ..Default::default() }]);
    }
    let owner = object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .ok_or_else(|| format!("pod {} has no controlling owner to reserve for", pod.key()))?;
    let controller = ReservationControllerReference {
        api_version: owner.api_version.clone(),
        kind: owner.kind.clone(),
        name: owner.name.clone(),
        uid: owner.uid.clone(),
        controller: owner.controller,
        block_owner_deletion: owner.block_owner_deletion,
        namespace: Some(namespace),
    };
    Ok(vec![ReservationOwner { controller: Some(controller), ..Default::default() }])
}

/// Pending with condition `PodScheduled` false.
pub fn unscheduled_pending(pod: &PodInfo) -> bool {
    pod.view().phase() == kolo_core::pod::PodPhase::Pending
        && pod
            .pod()
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "PodScheduled" && c.status == "False"))
}

/// What a job reads from its reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReservationState {
    /// Not scheduled yet; the scheduler's "no node" message, if any.
    Pending {
        /// `Scheduled` false / `Unschedulable` message.
        unschedulable: Option<String>,
    },
    /// `Failed` with `Ready` reason `Expired`.
    Expired,
    /// Over without a node (any other `Failed`, or an unknown phase).
    Unschedulable {
        /// The unschedulable message, if any.
        message: String,
    },
    /// Available or Succeeded on a node.
    Scheduled {
        /// `status.nodeName`.
        node: String,
        /// Succeeded (allocated once, no longer usable by another pod).
        succeeded: bool,
    },
}

/// The state of `r`, read the way kolo's scheduler writes it
/// (`plugins/reservation/status.rs`).
pub fn state(r: &Reservation) -> ReservationState {
    let status = r.status.clone().unwrap_or_default();
    let cond = |kind: &str| {
        status.conditions.iter().flatten().find(|c| c.condition_type.as_deref() == Some(kind))
    };
    let unschedulable = cond("Scheduled")
        .filter(|c| c.reason.as_deref() == Some("Unschedulable"))
        .map(|c| c.message.clone().unwrap_or_default());
    let node = status.node_name.clone().filter(|n| !n.is_empty());
    match (status.phase.as_deref(), node) {
        (None | Some("") | Some(RESERVATION_PHASE_PENDING), _) => {
            ReservationState::Pending { unschedulable }
        }
        (Some(RESERVATION_PHASE_FAILED), _)
            if cond("Ready").is_some_and(|c| c.reason.as_deref() == Some("Expired")) =>
        {
            ReservationState::Expired
        }
        (Some(p @ (RESERVATION_PHASE_AVAILABLE | RESERVATION_PHASE_SUCCEEDED)), Some(node)) => {
            ReservationState::Scheduled { node, succeeded: p == RESERVATION_PHASE_SUCCEEDED }
        }
        _ => ReservationState::Unschedulable { message: unschedulable.unwrap_or_default() },
    }
}

/// Whether the reservation's owners name a pod object (the job migrates a
/// pending pod: it waits for that pod to be scheduled, evicts nothing).
pub fn migrates_pending_pod(r: &Reservation) -> bool {
    r.spec
        .owners
        .iter()
        .flatten()
        .any(|o| o.object.is_some() && o.controller.is_none() && o.label_selector.is_none())
}

/// The pod that consumed `r`: `status.currentOwners[0]`, else a pod whose
/// `reservation-allocated` annotation names it (the status may lag).
pub fn bound_pod(r: &Reservation, cluster: &Cluster) -> Option<ObjectReference> {
    if let Some(owner) =
        r.status.as_ref().and_then(|s| s.current_owners.as_ref()).and_then(|o| o.first())
    {
        return Some(owner.clone());
    }
    let name = r.name_any();
    cluster.pods().iter().find_map(|p| {
        let text = p.view().annotations().get(RESERVATION_ALLOCATED)?;
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        (value.get("name")?.as_str()? == name).then(|| ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some(p.view().namespace().to_string()),
            name: Some(p.view().name().to_string()),
            uid: Some(p.view().uid().to_string()),
            ..Default::default()
        })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::*;
    use super::*;

    #[test]
    fn reservation_from_a_running_pod_sets_every_field() {
        let p = pod_with("app", "p", Some("n1"), |v| {
            v["metadata"]["labels"] = json!({"app": "web"});
            v["metadata"]["resourceVersion"] = json!("42");
            v["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
            ]}}});
        });
        let at = t(7);
        let r = reservation_from_pod("pmj-1", &p, Some("5m0s"), None, at).unwrap();
        assert_eq!(r.name_any(), "pmj-1");
        let labels = r.metadata.labels.clone().unwrap();
        assert_eq!(labels.get(LABEL_CREATED_BY).map(String::as_str), Some("koord-descheduler"));
        assert_eq!(labels.get(RESERVATION_ORDER), Some(&at.as_millisecond().to_string()));
        let template = r.spec.template.clone().unwrap();
        let meta = template.metadata.unwrap();
        assert_eq!((meta.name.as_deref(), meta.namespace.as_deref()), (Some("p"), Some("app")));
        assert_eq!(meta.labels.unwrap().get("app").map(String::as_str), Some("web"));
        assert_eq!((meta.uid, meta.resource_version, meta.creation_timestamp), (None, None, None));
        let spec = template.spec.unwrap();
        assert_eq!(spec.node_name, None, "nodeName cleared");
        assert_eq!(spec.scheduler_name.as_deref(), Some("koord-scheduler"));
        let terms = spec
            .affinity
            .unwrap()
            .node_affinity
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .unwrap()
            .node_selector_terms;
        assert_eq!(terms.len(), 2);
        for term in &terms {
            let fields = term.match_fields.clone().unwrap();
            assert_eq!(
                (fields[0].key.as_str(), fields[0].operator.as_str()),
                ("metadata.name", "NotIn")
            );
            assert_eq!(fields[0].values.as_deref(), Some(&["n1".to_string()][..]));
            assert_eq!(
                term.match_expressions.as_ref().unwrap().len(),
                1,
                "the pod's own requirement kept"
            );
        }
        let owners = r.spec.owners.clone().unwrap();
        let controller = owners[0].controller.clone().unwrap();
        assert_eq!(
            (owners.len(), controller.kind.as_str(), controller.uid.as_str()),
            (1, "ReplicaSet", "rs-uid")
        );
        assert_eq!(controller.namespace.as_deref(), Some("app"));
        assert!(owners[0].object.is_none());
        assert_eq!(r.spec.allocate_once, Some(true));
        assert_eq!(r.spec.ttl.as_deref(), Some("5m0s"));
        assert!(r.status.is_none());
    }

    #[test]
    fn a_pending_pod_owns_its_reservation_and_templates_win() {
        let p = pod_with("app", "p", None, |v| {
            v["status"] = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]});
        });
        let r = reservation_from_pod("j", &p, Some("5m0s"), None, t(0)).unwrap();
        let object = r.spec.owners.clone().unwrap()[0].object.clone().unwrap();
        assert_eq!(
            (object.kind.as_deref(), object.name.as_deref(), object.uid.as_deref()),
            (Some("Pod"), Some("p"), Some("p-uid"))
        );
        let affinity = r.spec.template.unwrap().spec.unwrap().affinity;
        assert!(affinity.is_none(), "no node to skip");
        assert!(migrates_pending_pod(&reservation_from_pod("j", &p, None, None, t(0)).unwrap()));
        // A template's name, expiry and owners are kept.
        let template = ReservationTemplateSpec {
            metadata: Some(ObjectMeta { name: Some("mine".into()), ..Default::default() }),
            spec: Some(ReservationSpec {
                expires: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(99))),
                owners: Some(vec![ReservationOwner {
                    label_selector: Some(Default::default()),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        };
        let r =
            reservation_from_pod("j", &pod("app", "p", "n1"), Some("5m0s"), Some(&template), t(0))
                .unwrap();
        assert_eq!(r.name_any(), "mine");
        assert_eq!(r.spec.ttl, None, "expires set: no ttl added");
        assert!(r.spec.owners.unwrap()[0].label_selector.is_some());
        // No controller and not pending: no owner to reserve for.
        let orphan =
            pod_with("app", "p", Some("n1"), |v| v["metadata"]["ownerReferences"] = json!([]));
        assert!(
            reservation_from_pod("j", &orphan, None, None, t(0))
                .unwrap_err()
                .contains("no controlling owner")
        );
    }

    #[test]
    fn states_read_as_kolos_scheduler_writes_them() {
        let r = |status| reservation("r", status, json!([]));
        assert_eq!(state(&r(json!({}))), ReservationState::Pending { unschedulable: None });
        assert_eq!(
            state(&r(
                json!({"phase": "Pending", "conditions": [{"type": "Scheduled", "status": "False", "reason": "Unschedulable", "message": "m"}]})
            )),
            ReservationState::Pending { unschedulable: Some("m".into()) }
        );
        assert_eq!(
            state(&r(json!({"phase": "Available", "nodeName": "n"}))),
            ReservationState::Scheduled { node: "n".into(), succeeded: false }
        );
        assert_eq!(
            state(&r(json!({"phase": "Succeeded", "nodeName": "n"}))),
            ReservationState::Scheduled { node: "n".into(), succeeded: true }
        );
        assert_eq!(
            state(&r(
                json!({"phase": "Failed", "conditions": [{"type": "Ready", "status": "False", "reason": "Expired"}]})
            )),
            ReservationState::Expired
        );
        assert_eq!(
            state(&r(json!({"phase": "Available"}))),
            ReservationState::Unschedulable { message: String::new() }
        );
        // The bound pod: currentOwners, else the pod's reservation-allocated annotation.
        let bound = pod_with("app", "p2", Some("n"), |v| {
            v["metadata"]["annotations"] =
                json!({RESERVATION_ALLOCATED: "{\"name\":\"r\",\"uid\":\"x\"}"})
        });
        let c = cluster(vec![bound], vec![], vec![]);
        assert_eq!(
            bound_pod(&r(json!({"phase": "Succeeded"})), &c).and_then(|o| o.name).as_deref(),
            Some("p2")
        );
        assert_eq!(
            bound_pod(&r(json!({"phase": "Available"})), &cluster(vec![], vec![], vec![])),
            None
        );
    }
}
