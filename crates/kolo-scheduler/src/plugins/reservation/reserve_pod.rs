//! The reserve pod: a Reservation as the pod the scheduler places and
//! counts (Koordinator's "reserve pod"), made by a pure function the
//! driver calls on every change of the reservation.
//!
//! * Key `Reservation/<name>`: the namespace `Reservation` is not a valid
//!   Kubernetes namespace (upper case), so no real pod can collide.
//! * UID: the reservation's; labels, annotations and spec: the template's,
//!   plus the annotation `scheduling.koordinator.sh/reserve-pod: "true"`
//!   (forbidden on user pods by kolo's webhook) and `preemptionPolicy:
//!   Never` (a reservation never preempts: Koordinator's
//!   `enablePreemption: false`).
//! * Scheduled (`status.nodeName` set): assigned to that node, so the
//!   scheduler counts it there. Pending: unassigned, so it is queued; a
//!   template `nodeName` pins it through a required node-affinity term on
//!   `metadata.name` (a set `nodeName` would make it look scheduled).
//! * Requests: the template's effective requests less `status.allocated`
//!   (capped): what the reservation still holds for owners not yet bound.
//!   Bound owners are counted on the node as pods themselves.
//! * Over (`status.phase` `Succeeded` or `Failed`) or expired at `now`: a
//!   finished pod, which the scheduler forgets — its hold is freed.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kolo_api::crd::Reservation;
use kolo_api::crd::reservation::{RESERVATION_PHASE_FAILED, RESERVATION_PHASE_SUCCEEDED};
use kolo_api::names::annotation;
use kolo_core::clock::Timestamp;
use kolo_core::pod::PodView;
use kolo_core::resources::ResourceVector;

use super::ReservationError;
use super::spec::ReservationSpec;
use crate::framework::PodInfo;

/// The namespace of every reserve pod's key (not a valid namespace).
pub const RESERVE_POD_NAMESPACE: &str = "Reservation";

/// The key of reservation `name`'s reserve pod.
pub fn reserve_pod_key(name: &str) -> String {
    format!("{RESERVE_POD_NAMESPACE}/{name}")
}

/// The reservation a reserve pod stands for; `None` for a real pod.
pub fn reservation_of(pod: &PodInfo) -> Option<&str> {
    pod.key().strip_prefix(RESERVE_POD_NAMESPACE)?.strip_prefix('/')
}

/// The template as a pod (metadata from the reservation), without the
/// scheduling state.
fn template_pod(r: &Reservation) -> Result<Pod, ReservationError> {
    let name = r.metadata.name.clone().unwrap_or_default();
    let invalid = |field: &str| ReservationError::Invalid {
        reservation: name.clone(),
        field: field.into(),
        message: "required".into(),
    };
    let template = r.spec.template.as_ref().ok_or_else(|| invalid("spec.template"))?;
    let spec = template.spec.clone().ok_or_else(|| invalid("spec.template.spec"))?;
    let meta = template.metadata.clone().unwrap_or_default();
    let mut annotations = meta.annotations.unwrap_or_default();
    annotations.insert(annotation::RESERVE_POD.into(), "true".into());
    let metadata = ObjectMeta {
        name: Some(name.clone()),
        namespace: Some(RESERVE_POD_NAMESPACE.into()),
        uid: r.metadata.uid.clone(),
        labels: meta.labels,
        annotations: Some(annotations),
        creation_timestamp: r.metadata.creation_timestamp.clone(),
        ..ObjectMeta::default()
    };
    Ok(Pod { metadata, spec: Some(spec), status: None })
}

/// What the reservation reserves: its template's effective requests (as
/// for a pod: containers summed, the larger of that and each init
/// container, plus overhead).
pub fn template_requests(r: &Reservation) -> Result<ResourceVector, ReservationError> {
    let pod = template_pod(r)?;
    let view = PodView::from_pod(&pod).map_err(|e| ReservationError::Invalid {
        reservation: r.metadata.name.clone().unwrap_or_default(),
        field: "spec.template.spec".into(),
        message: e.to_string(),
    })?;
    Ok(*view.requests())
}

/// The reserve pod of `r` at `now` (see the module documentation).
pub fn reserve_pod(r: &Reservation, now: Timestamp) -> Result<PodInfo, ReservationError> {
    let read = ReservationSpec::read(r)?;
    let mut pod = template_pod(r)?;
    let status = r.status.as_ref();
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.preemption_policy = Some("Never".into());
    let pinned = spec.node_name.take().filter(|n| !n.is_empty());
    match status.and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty()) {
        Some(node) => spec.node_name = Some(node),
        None => {
            if let Some(node) = pinned {
                pin(spec.affinity.get_or_insert_with(Default::default), &node);
            }
        }
    }
    if read.terminal || read.expired(now) {
        let phase = match status.and_then(|s| s.phase.as_deref()) {
            Some(RESERVATION_PHASE_SUCCEEDED) => "Succeeded",
            _ => RESERVATION_PHASE_FAILED,
        };
        pod.status = Some(PodStatus { phase: Some(phase.into()), ..PodStatus::default() });
    }
    let allocated = match status.and_then(|s| s.allocated.as_ref()) {
        None => ResourceVector::EMPTY,
        Some(list) => {
            ResourceVector::from_resource_list(list).map_err(|e| ReservationError::Invalid {
                reservation: read.name.to_string(),
                field: "status.allocated".into(),
                message: e.to_string(),
            })?
        }
    };
    let info = PodInfo::new(pod).map_err(|e| ReservationError::Invalid {
        reservation: read.name.to_string(),
        field: "spec.template.spec".into(),
        message: e.to_string(),
    })?;
    let held = info.view().requests().sub_non_negative(&allocated);
    let view = info.view().clone().with_requests(held);
    Ok(PodInfo::from_parts(Arc::new(info.pod().clone()), view))
}

/// Adds "on node `node` only" to a pod's required node affinity: to every
/// existing term (terms are ORed, requirements within one ANDed), or as
/// the only term.
fn pin(affinity: &mut Affinity, node: &str) {
    let requirement = NodeSelectorRequirement {
        key: "metadata.name".into(),
        operator: "In".into(),
        values: Some(vec![node.into()]),
    };
    let node_affinity = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    let required = node_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(|| NodeSelector { node_selector_terms: Vec::new() });
    if required.node_selector_terms.is_empty() {
        required.node_selector_terms.push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        term.match_fields.get_or_insert_with(Vec::new).push(requirement.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::reservation;
    use super::*;
    use kolo_core::HasMeta;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    #[test]
    fn a_pending_reservation_is_a_pending_pod_pinned_by_affinity() {
        let r = reservation("r1", "cpu: 2, memory: 1Gi", "");
        let pod = reserve_pod(&r, t(0)).unwrap();
        assert_eq!(pod.key(), "Reservation/r1");
        assert_eq!(reservation_of(&pod), Some("r1"));
        assert_eq!(pod.view().uid(), "uid-r1");
        assert_eq!(pod.view().node_name(), None);
        assert!(!pod.view().is_terminated());
        assert_eq!((pod.view().requests().cpu(), pod.view().requests().memory()), (2000, 1 << 30));
        assert_eq!(pod.view().annotation(annotation::RESERVE_POD), Some("true"));
        assert_eq!(pod.view().label("app"), Some("web"));

        let mut pinned = r.clone();
        let spec = pinned.spec.template.as_mut().unwrap().spec.as_mut().unwrap();
        spec.node_name = Some("n2".into());
        let pod = reserve_pod(&pinned, t(0)).unwrap();
        assert_eq!(pod.view().node_name(), None);
        let terms = &pod.pod().spec.as_ref().unwrap().affinity.as_ref().unwrap().node_affinity;
        let terms = &terms.as_ref().unwrap().required_during_scheduling_ignored_during_execution;
        let fields = terms.as_ref().unwrap().node_selector_terms[0].match_fields.as_ref().unwrap();
        assert_eq!(fields[0].values.as_deref(), Some(&["n2".to_string()][..]));
    }

    #[test]
    fn a_scheduled_reservation_holds_what_its_owners_have_not_taken() {
        let mut r = reservation("r1", "cpu: 4, memory: 4Gi", "allocateOnce: false");
        let status = r.status.get_or_insert_with(Default::default);
        status.node_name = Some("n1".into());
        status.phase = Some("Available".into());
        status.allocated = Some(ResourceVector::cpu_memory(1500, 8 << 30).to_resource_list());
        let pod = reserve_pod(&r, t(0)).unwrap();
        assert_eq!(pod.view().node_name(), Some("n1"));
        // 4 − 1.5 CPU; memory over-allocated: nothing left, not negative.
        assert_eq!((pod.view().requests().cpu(), pod.view().requests().memory()), (2500, 0));
    }

    #[test]
    fn over_or_expired_reservations_are_finished_pods() {
        let r = reservation("r1", "cpu: 1", "ttl: 1h");
        assert!(!reserve_pod(&r, t(3_599)).unwrap().view().is_terminated());
        assert!(reserve_pod(&r, t(3_600)).unwrap().view().is_terminated());
        let mut done = reservation("r1", "cpu: 1", "");
        done.status.get_or_insert_with(Default::default).phase = Some("Succeeded".into());
        assert!(reserve_pod(&done, t(0)).unwrap().view().is_terminated());
    }
}
