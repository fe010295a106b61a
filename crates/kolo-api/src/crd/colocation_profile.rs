//! `ClusterColocationProfile` (`config.koordinator.sh/v1alpha1`,
//! cluster-scoped): a rule the pod-mutating webhook applies to new pods
//! matching its selectors (QoS class, priority, labels, scheduler, patch).
//!
//! Reference: Koordinator `apis/config/v1alpha1/cluster_colocation_profile_types.go`
//! and `config/crd/bases/config.koordinator.sh_clustercolocationprofiles.yaml`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{int_or_string_schema, raw_extension_schema};

/// A co-location rule for new pods.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "config.koordinator.sh",
    version = "v1alpha1",
    kind = "ClusterColocationProfile",
    plural = "clustercolocationprofiles",
    status = "ClusterColocationProfileStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A co-location rule the pod webhook applies to matching new pods."
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterColocationProfileSpec {
    /// Pods in namespaces matching this selector are affected; absent
    /// matches every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Pods matching this selector are affected; absent matches every pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Probability that the profile applies to a matching pod: an integer
    /// percentage or a string such as `"50%"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string_schema")]
    pub probability: Option<IntOrString>,
    /// Koordinator QoS class injected as the label `koordinator.sh/qosClass`:
    /// `LSE`, `LSR`, `LS`, `BE` or `SYSTEM`.
    #[serde(default, rename = "qosClass", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "qos_class_schema")]
    pub qos_class: Option<String>,
    /// Priority class name injected into the pod (with its value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Koordinator sub-priority injected as the label `koordinator.sh/priority`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub koordinator_priority: Option<i32>,
    /// Labels injected into the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations injected into the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Label copies: for each `k: v`, `labels[v] = labels[k]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_keys_mapping: Option<BTreeMap<String, String>>,
    /// Annotation copies: for each `k: v`, `annotations[v] = annotations[k]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_keys_mapping: Option<BTreeMap<String, String>>,
    /// Suffixes appended to the values of existing pod labels, by label key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_suffixes: Option<BTreeMap<String, String>>,
    /// Scheduler name injected into the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
    /// A strategic-merge patch of the pod, kept as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "raw_extension_schema")]
    pub patch: Option<serde_json::Value>,
}

fn qos_class_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["LSE", "LSR", "LS", "BE", "SYSTEM"],
    })
}

/// The profile's status: empty, with a status subresource as in the reference.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ClusterColocationProfileStatus {}
