//! `Reservation` (`scheduling.koordinator.sh/v1alpha1`, cluster-scoped):
//! resources held on a node for future owner pods. The scheduler places the
//! reservation like a pod built from `spec.template`; matching owner pods then
//! consume the reserved resources.
//!
//! Reference: Koordinator `apis/scheduling/v1alpha1/reservation_types.go` and
//! `config/crd/bases/scheduling.koordinator.sh_reservations.yaml`.

use k8s_openapi::api::core::v1::{ObjectReference, PodTemplateSpec, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{ResourceList, preserved_object_schema, resource_list_schema, time_schema};

/// Allocate policy `Aligned`: allocate from the reservation first, then from the node.
pub const ALLOCATE_POLICY_ALIGNED: &str = "Aligned";
/// Allocate policy `Restricted`: resources the reservation reserves may only
/// come from the reservation.
pub const ALLOCATE_POLICY_RESTRICTED: &str = "Restricted";

/// Phase `Pending`: not scheduled yet (or unschedulable).
pub const RESERVATION_PHASE_PENDING: &str = "Pending";
/// Phase `Available`: scheduled and allocatable.
pub const RESERVATION_PHASE_AVAILABLE: &str = "Available";
/// Phase `Succeeded`: allocated to its owner and no longer allocatable.
pub const RESERVATION_PHASE_SUCCEEDED: &str = "Succeeded";
/// Phase `Waiting`: scheduled, waiting for resources (pre-allocation).
pub const RESERVATION_PHASE_WAITING: &str = "Waiting";
/// Phase `Failed`: expired or unavailable; will be cleaned up.
pub const RESERVATION_PHASE_FAILED: &str = "Failed";

/// A resource reservation.
// The printer columns repeat `type_ = "string"`, which clippy mistakes for
// duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "scheduling.koordinator.sh",
    version = "v1alpha1",
    kind = "Reservation",
    plural = "reservations",
    status = "ReservationStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "Resources reserved on a node for future owner pods.",
    printcolumn(
        name = "Phase",
        type_ = "string",
        json_path = ".status.phase",
        description = "The phase of reservation"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Node", type_ = "string", json_path = ".status.nodeName"),
    printcolumn(name = "TTL", type_ = "string", json_path = ".spec.ttl"),
    printcolumn(name = "Expires", type_ = "string", json_path = ".spec.expires")
)]
#[serde(rename_all = "camelCase")]
pub struct ReservationSpec {
    /// The pod the reservation is scheduled as (resources, affinities, ...).
    /// A set `spec.nodeName` pins the node. Required by the API schema
    /// (stored schemaless); optional here because a `PodMigrationJob`
    /// template may leave it to the controller.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required, schema_with = "preserved_object_schema")]
    pub template: Option<PodTemplateSpec>,
    /// Who may allocate the reserved resources; any matching owner will do.
    /// Required by the API schema (at least one); optional here for the same
    /// reason as `template`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required, length(min = 1))]
    pub owners: Option<Vec<ReservationOwner>>,
    /// Time to live as a Go duration (default `24h`; `0` disables expiry).
    /// Exclusive with `expires`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "24h"))]
    pub ttl: Option<String>,
    /// Expiry time; checked before `ttl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "time_schema")]
    pub expires: Option<Time>,
    /// Skip the node free-resources check; the reservation waits until the
    /// resources become free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_allocation: Option<bool>,
    /// Only the first owner may allocate (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub allocate_once: Option<bool>,
    /// `Aligned` or `Restricted` (empty is treated as `Aligned`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "allocate_policy_schema")]
    pub allocate_policy: Option<String>,
    /// Whether new pods may not be scheduled onto the reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unschedulable: Option<bool>,
    /// Taints of the reservation, tolerated through the reservation affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<Taint>>,
    /// How pre-allocation picks the pods to pre-allocate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_allocation_policy: Option<PreAllocationPolicy>,
}

fn allocate_policy_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": [ALLOCATE_POLICY_ALIGNED, ALLOCATE_POLICY_RESTRICTED],
    })
}

/// One owner selector. At least one of the fields must be set; within an
/// owner, the set fields are ANDed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ReservationOwner {
    /// A specific object (usually a pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectReference>,
    /// Pods controlled by this controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<ReservationControllerReference>,
    /// Pods matching this label selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// An owner reference with a namespace (Go: `metav1.OwnerReference` inlined
/// plus `namespace`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReservationControllerReference {
    /// API version of the controller.
    pub api_version: String,
    /// Kind of the controller.
    pub kind: String,
    /// Name of the controller.
    pub name: String,
    /// UID of the controller.
    pub uid: String,
    /// Whether the reference points to the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Whether the owner's deletion waits for this reference to go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
    /// Namespace of the controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Pre-allocation options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreAllocationPolicy {
    /// `Default` or `Cluster`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Whether several pods may be pre-allocated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_multiple: Option<bool>,
}

/// The observed state of a reservation.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReservationStatus {
    /// `Pending`, `Available`, `Succeeded`, `Waiting` or `Failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Conditions (`Scheduled`, `Ready`), e.g. why it is still pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<ReservationCondition>>,
    /// The owners currently holding reserved resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_owners: Option<Vec<ObjectReference>>,
    /// The node the reservation is scheduled on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// Resources reserved and allocatable to owners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_list_schema")]
    pub allocatable: Option<ResourceList>,
    /// Resources allocated by the current owners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_list_schema")]
    pub allocated: Option<ResourceList>,
}

/// A condition of a reservation.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReservationCondition {
    /// `Scheduled` or `Ready`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub condition_type: Option<String>,
    /// `True`, `False` or `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the condition was last probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "time_schema")]
    pub last_probe_time: Option<Time>,
    /// When the condition last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "time_schema")]
    pub last_transition_time: Option<Time>,
}

/// The template a Reservation is created from (used by `PodMigrationJob`).
/// Stored schemaless in the API, so it has no schema of its own.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ReservationTemplateSpec {
    /// Metadata of the reservation to create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ObjectMeta>,
    /// Spec of the reservation to create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ReservationSpec>,
}
