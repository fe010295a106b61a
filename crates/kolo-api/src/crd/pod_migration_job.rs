//! `PodMigrationJob` (`scheduling.koordinator.sh/v1alpha1`, cluster-scoped):
//! a request to move one pod, by reserving room elsewhere first
//! (`ReservationFirst`) or by evicting it directly (`EvictDirectly`).
//!
//! Reference: Koordinator `apis/scheduling/v1alpha1/pod_migration_job_types.go`
//! and `config/crd/bases/scheduling.koordinator.sh_podmigrationjobs.yaml`.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{preserved_object_schema, time_schema};
use super::reservation::ReservationTemplateSpec;

/// Mode `ReservationFirst` (the default): reserve on another node, then evict.
pub const PMJ_MODE_RESERVATION_FIRST: &str = "ReservationFirst";
/// Mode `EvictDirectly`: evict without reserving.
pub const PMJ_MODE_EVICT_DIRECTLY: &str = "EvictDirectly";

/// Phase `Pending`.
pub const PMJ_PHASE_PENDING: &str = "Pending";
/// Phase `Running`.
pub const PMJ_PHASE_RUNNING: &str = "Running";
/// Phase `Succeeded`.
pub const PMJ_PHASE_SUCCEEDED: &str = "Succeeded";
/// Phase `Failed`.
pub const PMJ_PHASE_FAILED: &str = "Failed";
/// Phase `Aborted`.
pub const PMJ_PHASE_ABORTED: &str = "Aborted";

/// A pod migration request.
// The printer columns repeat `type_ = "string"`, which clippy mistakes for
// duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "scheduling.koordinator.sh",
    version = "v1alpha1",
    kind = "PodMigrationJob",
    plural = "podmigrationjobs",
    status = "PodMigrationJobStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A request to migrate one pod to another node.",
    printcolumn(
        name = "Phase",
        type_ = "string",
        json_path = ".status.phase",
        description = "The phase of PodMigrationJob"
    ),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.status",
        description = "The status of PodMigrationJob"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Node", type_ = "string", json_path = ".status.nodeName"),
    printcolumn(
        name = "Reservation",
        type_ = "string",
        json_path = ".spec.reservationOptions.reservationRef.name"
    ),
    printcolumn(name = "PodNamespace", type_ = "string", json_path = ".spec.podRef.namespace"),
    printcolumn(name = "Pod", type_ = "string", json_path = ".spec.podRef.name"),
    printcolumn(name = "NewPod", type_ = "string", json_path = ".status.podRef.name"),
    printcolumn(name = "TTL", type_ = "string", json_path = ".spec.ttl")
)]
#[serde(rename_all = "camelCase")]
pub struct PodMigrationJobSpec {
    /// Whether the job is paused (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Timeout of the job, as a Go duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
    /// `ReservationFirst` (default) or `EvictDirectly`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The pod to migrate. Required by the API schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub pod_ref: Option<ObjectReference>,
    /// How the target reservation is obtained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation_options: Option<PodMigrateReservationOptions>,
    /// Options for deleting the migrated pod (and preempted pods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_options: Option<DeleteOptions>,
}

/// How the job gets its reservation.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodMigrateReservationOptions {
    /// An existing reservation to use; when absent the controller creates
    /// one from `template` and records it here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation_ref: Option<ObjectReference>,
    /// Template of the reservation to create (stored schemaless).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object_schema")]
    pub template: Option<ReservationTemplateSpec>,
    /// Preemption options (no fields yet in the reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption_options: Option<PodMigrationJobPreemptionOptions>,
}

/// Preemption options of a migration (empty in the reference).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct PodMigrationJobPreemptionOptions {}

/// The observed state of a migration.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodMigrationJobStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Current step, e.g. `ReservationCreated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Machine-readable reason of the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message of the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Conditions of the steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<PodMigrationJobCondition>>,
    /// The node the pod is migrated to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The replacement pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_ref: Option<ObjectReference>,
    /// Pods preempted to make room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempted_pods_ref: Option<Vec<ObjectReference>>,
    /// Reservations created for preempted pods (JSON name
    /// `preemptedPodsReservation`, singular as in the reference).
    #[serde(default, rename = "preemptedPodsReservation", skip_serializing_if = "Option::is_none")]
    pub preempted_pods_reservations: Option<Vec<PodMigrationJobPreemptedReservation>>,
}

/// A reservation created for a preempted pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodMigrationJobPreemptedReservation {
    /// Namespace of the reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Node the reservation was scheduled on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// Phase of the reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The preempted pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempted_pod_ref: Option<ObjectReference>,
    /// The pods created after the preemption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods_ref: Option<Vec<ObjectReference>>,
}

/// A condition of a migration.
///
/// As in the reference, the two timestamps are always written, as `null`
/// when unset, and the schema marks them nullable (see `all_crds`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodMigrationJobCondition {
    /// Condition type, e.g. `ReservationCreated`, `Eviction`.
    #[serde(rename = "type")]
    pub condition_type: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// When the condition was last probed.
    #[serde(default)]
    #[schemars(schema_with = "time_schema")]
    pub last_probe_time: Option<Time>,
    /// When the condition last changed.
    #[serde(default)]
    #[schemars(schema_with = "time_schema")]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
