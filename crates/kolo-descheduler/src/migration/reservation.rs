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
