//! `ElasticQuota` (`scheduling.sigs.k8s.io/v1alpha1`, namespaced): a quota
//! with a guaranteed `min` and a `max`, organised in a tree by Koordinator's
//! `quota.scheduling.koordinator.sh/*` labels and annotations.
//!
//! Reference: kubernetes-sigs/scheduler-plugins `apis/scheduling/v1alpha1/types.go`
//! as shipped by Koordinator (`config/crd/bases/scheduling.sigs.k8s.io_elasticquotas.yaml`).
//!
//! Koordinator's CRD has **no status subresource and no short names**
//! (upstream scheduler-plugins has both); `status` is written with ordinary
//! updates of the whole object. [`crate::crd::all_crds`] drops the
//! subresource that kube's derive would add.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{ResourceList, resource_list_schema};

/// The bounds of a quota.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "scheduling.sigs.k8s.io",
    version = "v1alpha1",
    kind = "ElasticQuota",
    plural = "elasticquotas",
    namespaced,
    status = "ElasticQuotaStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "An elastic quota: guaranteed min and upper max per resource.",
    annotation(
        "api-approved.kubernetes.io",
        "https://github.com/kubernetes-sigs/scheduler-plugins/pull/52"
    )
)]
pub struct ElasticQuotaSpec {
    /// Guaranteed resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_list_schema")]
    pub min: Option<ResourceList>,
    /// Upper limit of the resources of the quota's scheduled pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_list_schema")]
    pub max: Option<ResourceList>,
}

/// The observed use of a quota.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ElasticQuotaStatus {
    /// Resources currently used by the quota's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_list_schema")]
    pub used: Option<ResourceList>,
}
