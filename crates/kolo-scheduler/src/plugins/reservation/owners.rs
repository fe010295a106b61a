//! Who may use a reservation (`spec.owners`): a pure matcher compiled once
//! per reservation.
//!
//! Owners are ORed; within one owner the fields set (`object`,
//! `controller`, `labelSelector`) are ANDed, as the CRD documents. An owner
//! with no field set would match nobody in Koordinator by accident of
//! implementation; kolo refuses it, naming the field.
//!
//! * `object`: the pod's UID when the reference has one, else its
//!   namespace (when set) and name.
//! * `controller`: the pod's controlling owner reference (`controller:
//!   true`): by UID when the reference has one, else by kind and name; a
//!   set `namespace` must be the pod's.
//! * `labelSelector`: the pod's labels.

use k8s_openapi::api::core::v1::ObjectReference;
use kolo_api::crd::{ReservationControllerReference, ReservationOwner};
use kolo_core::HasMeta;
use kolo_core::selector::LabelSelector;

use super::ReservationError;
use crate::framework::PodInfo;

/// The compiled `spec.owners` of one reservation.
#[derive(Debug, Clone)]
pub struct Owners {
    terms: Vec<OwnerTerm>,
}

#[derive(Debug, Clone)]
struct OwnerTerm {
    object: Option<ObjectReference>,
    controller: Option<ReservationControllerReference>,
    selector: Option<LabelSelector>,
}

impl Owners {
    /// Compiles `spec.owners` of reservation `reservation`; refuses an
    /// empty list, an empty owner, or a malformed selector, naming the
    /// field.
    pub fn compile(
        reservation: &str,
        owners: Option<&[ReservationOwner]>,
    ) -> Result<Owners, ReservationError> {
        let invalid = |field: String, message: String| ReservationError::Invalid {
            reservation: reservation.to_string(),
            field,
            message,
        };
        let owners = owners.unwrap_or_default();
        if owners.is_empty() {
            return Err(invalid("spec.owners".into(), "at least one owner is required".into()));
        }
        let mut terms = Vec::with_capacity(owners.len());
        for (i, owner) in owners.iter().enumerate() {
            if owner.object.is_none()
                && owner.controller.is_none()
                && owner.label_selector.is_none()
            {
                return Err(invalid(
                    format!("spec.owners[{i}]"),
                    "one of object, controller or labelSelector must be set".into(),
                ));
            }
            if let Some(object) = &owner.object {
                let named = object.name.as_deref().is_some_and(|n| !n.is_empty());
                let has_uid = object.uid.as_deref().is_some_and(|u| !u.is_empty());
                if !named && !has_uid {
                    return Err(invalid(
                        format!("spec.owners[{i}].object"),
                        "needs a uid or a name".into(),
                    ));
                }
            }
            let selector = match &owner.label_selector {
                None => None,
                Some(s) => Some(LabelSelector::compile(s).map_err(|e| {
                    invalid(format!("spec.owners[{i}].labelSelector"), e.to_string())
                })?),
            };
            terms.push(OwnerTerm {
                object: owner.object.clone(),
                controller: owner.controller.clone(),
                selector,
            });
        }
        Ok(Owners { terms })
    }

    /// Whether `pod` is an owner: some owner term matches it.
    pub fn matches(&self, pod: &PodInfo) -> bool {
        self.terms.iter().any(|t| t.matches(pod))
    }
}

impl OwnerTerm {
    fn matches(&self, pod: &PodInfo) -> bool {
        self.object.as_ref().is_none_or(|o| object_matches(o, pod))
            && self.controller.as_ref().is_none_or(|c| controller_matches(c, pod))
            && self.selector.as_ref().is_none_or(|s| s.matches(pod.view().labels()))
    }
}

fn non_empty(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.is_empty())
}

fn object_matches(object: &ObjectReference, pod: &PodInfo) -> bool {
    let view = pod.view();
    if let Some(uid) = non_empty(object.uid.as_deref()) {
        return view.uid() == uid;
    }
    let namespace_ok =
        non_empty(object.namespace.as_deref()).is_none_or(|ns| view.namespace() == ns);
    namespace_ok && non_empty(object.name.as_deref()) == Some(view.name())
}

fn controller_matches(controller: &ReservationControllerReference, pod: &PodInfo) -> bool {
    let view = pod.view();
    if non_empty(controller.namespace.as_deref()).is_some_and(|ns| view.namespace() != ns) {
        return false;
    }
    let refs = pod.pod().metadata.owner_references.as_deref().unwrap_or_default();
    let Some(owner) = refs.iter().find(|r| r.controller == Some(true)) else {
        return false;
    };
    if !controller.uid.is_empty() {
        return owner.uid == controller.uid;
    }
    owner.kind == controller.kind && owner.name == controller.name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod_from_yaml;
    use serde_json::json;

    fn owners(value: serde_json::Value) -> Result<Owners, ReservationError> {
        let list: Vec<ReservationOwner> = serde_json::from_value(value).unwrap();
        Owners::compile("r", Some(&list))
    }

    fn pod() -> PodInfo {
        PodInfo::new(pod_from_yaml(
            "metadata:\n  name: web-1\n  namespace: shop\n  uid: u-1\n  labels: {app: web}\n  ownerReferences:\n  - {apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: rs-1, controller: true}\nspec:\n  containers: []\n",
        ))
        .unwrap()
    }

    #[test]
    fn each_kind_of_owner_matches_as_documented() {
        let cases = [
            (json!([{"object": {"uid": "u-1"}}]), true),
            (json!([{"object": {"uid": "u-2", "name": "web-1"}}]), false),
            (json!([{"object": {"name": "web-1", "namespace": "shop"}}]), true),
            (json!([{"object": {"name": "web-1", "namespace": "other"}}]), false),
            (json!([{"object": {"name": "web-1"}}]), true),
            (
                json!([{"controller": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": "rs-1"}}]),
                true,
            ),
            (
                json!([{"controller": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "", "namespace": "shop"}}]),
                true,
            ),
            (
                json!([{"controller": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-1", "namespace": "other"}}]),
                false,
            ),
            (
                json!([{"controller": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": ""}}]),
                false,
            ),
            (json!([{"labelSelector": {"matchLabels": {"app": "web"}}}]), true),
            (json!([{"labelSelector": {"matchLabels": {"app": "db"}}}]), false),
            // ORed across owners, ANDed within one.
            (
                json!([{"labelSelector": {"matchLabels": {"app": "db"}}}, {"object": {"uid": "u-1"}}]),
                true,
            ),
            (
                json!([{"labelSelector": {"matchLabels": {"app": "web"}}, "object": {"uid": "u-9"}}]),
                false,
            ),
        ];
        let pod = pod();
        for (value, want) in cases {
            assert_eq!(owners(value.clone()).unwrap().matches(&pod), want, "{value}");
        }
    }

    #[test]
    fn malformed_owners_are_refused_naming_the_field() {
        let field = |value: serde_json::Value| match owners(value) {
            Err(ReservationError::Invalid { field, .. }) => field,
            Err(other) => other.to_string(),
            Ok(_) => "accepted".into(),
        };
        assert_eq!(field(json!([])), "spec.owners");
        assert_eq!(field(json!([{"object": {"uid": "u"}}, {}])), "spec.owners[1]");
        assert_eq!(field(json!([{"object": {"namespace": "a"}}])), "spec.owners[0].object");
        assert_eq!(
            field(
                json!([{"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}])
            ),
            "spec.owners[0].labelSelector"
        );
    }
}
