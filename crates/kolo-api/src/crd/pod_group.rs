//! `PodGroup` (`scheduling.sigs.k8s.io/v1alpha1`, namespaced): a gang of pods
//! that is scheduled all-or-nothing (at least `minMember` of them).
//!
//! Reference: kubernetes-sigs/scheduler-plugins `apis/scheduling/v1alpha1/types.go`
//! as shipped by Koordinator (`config/crd/bases/scheduling.sigs.k8s.io_podgroups.yaml`,
//! which adds `status.scheduled`).
//!
//! Koordinator's CRD has **no status subresource and no short names**
//! (upstream scheduler-plugins has both); [`crate::crd::all_crds`] drops the
//! subresource that kube's derive would add.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{ResourceList, resource_list_schema, time_schema};

/// Phase `Pending`.
pub const POD_GROUP_PHASE_PENDING: &str = "Pending";
/// Phase `PreScheduling` (Koordinator).
pub const POD_GROUP_PHASE_PRE_SCHEDULING: &str = "PreScheduling";
/// Phase `Scheduling`.
pub const POD_GROUP_PHASE_SCHEDULING: &str = "Scheduling";
/// Phase `Scheduled` (Koordinator).
pub const POD_GROUP_PHASE_SCHEDULED: &str = "Scheduled";
/// Phase `Running`.
pub const POD_GROUP_PHASE_RUNNING: &str = "Running";
/// Phase `Finished`.
pub const POD_GROUP_PHASE_FINISHED: &str = "Finished";
/// Phase `Failed`.
pub const POD_GROUP_PHASE_FAILED: &str = "Failed";
/// Phase `Unknown`.
pub const POD_GROUP_PHASE_UNKNOWN: &str = "Unknown";

/// What a gang needs.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "scheduling.sigs.k8s.io",
    version = "v1alpha1",
    kind = "PodGroup",
    plural = "podgroups",
    namespaced,
    status = "PodGroupStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A gang of pods scheduled together.",
    annotation(
        "api-approved.kubernetes.io",
        "https://github.com/kubernetes-sigs/scheduler-plugins/pull/52"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpec {
    /// Minimum number of members that must be schedulable together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_member: Option<i32>,
    /// Minimum resources of the members (informational for Koordinator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_list_schema")]
    pub min_resources: Option<ResourceList>,
    /// How long members wait for the gang, in seconds (scheduler default
    /// when absent or not positive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_timeout_seconds: Option<i32>,
}

/// The observed state of a gang.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupStatus {
    /// `Pending`, `PreScheduling`, `Scheduling`, `Scheduled`, `Running`,
    /// `Finished`, `Failed` or `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// UID of the workload that owns the group, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occupied_by: Option<String>,
    /// Number of bound pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled: Option<i32>,
    /// Number of running pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<i32>,
    /// Number of succeeded pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub succeeded: Option<i32>,
    /// Number of failed pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<i32>,
    /// When scheduling of the group started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "time_schema")]
    pub schedule_start_time: Option<Time>,
}
