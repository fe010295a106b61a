//! `NodeMetric` (`slo.koordinator.sh/v1alpha1`, cluster-scoped): the resource
//! usage of one node and its pods, reported by the node agent, named after
//! the node. The control plane writes `spec` (how to collect), the node agent
//! writes `status`.
//!
//! Reference: Koordinator `apis/slo/v1alpha1/nodemetric_types.go`,
//! `resources.go`, and `config/crd/bases/slo.koordinator.sh_nodemetrics.yaml`.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    JsonObject, ResourceList, preserved_object_schema, resource_list_schema, same_go_duration,
    time_schema,
};
use super::device::DeviceInfo;

/// Memory collection policy `usageWithoutPageCache` (the default).
pub const MEMORY_COLLECT_USAGE_WITHOUT_PAGE_CACHE: &str = "usageWithoutPageCache";
/// Memory collection policy `usageWithPageCache`.
pub const MEMORY_COLLECT_USAGE_WITH_PAGE_CACHE: &str = "usageWithPageCache";
/// Memory collection policy `usageWithHotPageCache`.
pub const MEMORY_COLLECT_USAGE_WITH_HOT_PAGE_CACHE: &str = "usageWithHotPageCache";
/// Every memory collection policy.
pub const MEMORY_COLLECT_POLICIES: [&str; 3] = [
    MEMORY_COLLECT_USAGE_WITHOUT_PAGE_CACHE,
    MEMORY_COLLECT_USAGE_WITH_PAGE_CACHE,
    MEMORY_COLLECT_USAGE_WITH_HOT_PAGE_CACHE,
];

// A NodeMetric without `spec` reads with the default spec: see the
// `Deserialize` impl below (the doc comment is the CRD's description).
/// How the node agent collects and reports the metrics of a node.
#[derive(CustomResource, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "slo.koordinator.sh",
    version = "v1alpha1",
    kind = "NodeMetric",
    plural = "nodemetrics",
    status = "NodeMetricStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "Resource usage of one node (named after the node) and of its pods, reported by the node agent."
)]
#[serde(rename_all = "camelCase")]
pub struct NodeMetricSpec {
    /// The collection policy (Go field `CollectPolicy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_collect_policy: Option<NodeMetricCollectPolicy>,
}

/// A missing `spec` reads as the default spec, and so does `spec: null`.
///
/// The reference's CRD does not require `spec` (Go `json:"spec,omitempty"`),
/// so the API server stores a NodeMetric without one as it is, and dumps of
/// a Koordinator cluster can hold such objects (an agent that created its
/// NodeMetric before the manager wrote the spec). Serde calls
/// `deserialize_option` for a missing field, so reading the spec as an
/// optional object is what makes the field optional inside the derived
/// `NodeMetric`.
impl<'de> Deserialize<'de> for NodeMetricSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// The spec's fields as written.
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Written {
            #[serde(default)]
            metric_collect_policy: Option<NodeMetricCollectPolicy>,
        }
        let written = Option::<Written>::deserialize(deserializer)?;
        Ok(written
            .map(|w| NodeMetricSpec { metric_collect_policy: w.metric_collect_policy })
            .unwrap_or_default())
    }
}

/// The collection policy of a node's metrics.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeMetricCollectPolicy {
    /// Window, in seconds, over which `nodeUsage` and `podsMetric` are averaged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate_duration_seconds: Option<i64>,
    /// Interval between two reports, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_interval_seconds: Option<i64>,
    /// The windows of `aggregatedNodeUsages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_aggregate_policy: Option<AggregatePolicy>,
    /// Which memory figure counts as usage: `usageWithoutPageCache`,
    /// `usageWithPageCache` or `usageWithHotPageCache`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "memory_collect_policy_schema")]
    pub node_memory_collect_policy: Option<String>,
}

fn memory_collect_policy_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": [
            MEMORY_COLLECT_USAGE_WITH_HOT_PAGE_CACHE,
            MEMORY_COLLECT_USAGE_WITHOUT_PAGE_CACHE,
            MEMORY_COLLECT_USAGE_WITH_PAGE_CACHE,
        ],
    })
}

/// The aggregation windows of a node.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AggregatePolicy {
    /// Window lengths as Go durations, e.g. `5m0s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durations: Option<Vec<String>>,
}

/// What the node agent reports.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeMetricStatus {
    /// When the status was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "time_schema")]
    pub update_time: Option<Time>,
    /// Node-level metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_metric: Option<NodeMetricInfo>,
    /// Per-pod metrics, sorted by namespace then name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods_metric: Option<Vec<PodMetricInfo>>,
    /// Metrics of the out-of-band (non-pod) applications of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_application_metric: Option<Vec<HostApplicationMetricInfo>>,
    /// Resources predicted reclaimable from Prod pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prod_reclaimable_metric: Option<ReclaimableMetric>,
    /// Predicted peak usage of Prod pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prod_peak_metric: Option<ReclaimableMetric>,
}

/// Node-level metrics.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeMetricInfo {
    /// Average usage of the whole node over the aggregate window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_usage: Option<ResourceMap>,
    /// Node usage percentiles per window; a window is only reported once it
    /// has enough samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregated_node_usages: Option<Vec<AggregatedUsage>>,
    /// Average usage of the system (node minus pods: daemons and kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_usage: Option<ResourceMap>,
    /// System usage percentiles per window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregated_system_usages: Option<Vec<AggregatedUsage>>,
    /// Per-NUMA-node usage, sorted by NUMA id.
    ///
    /// Recent reference versions only; the item layout is not pinned down
    /// here, so each item is kept as a free-form object (lossless).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "numa_usages_schema")]
    pub numa_usages: Option<Vec<JsonObject>>,
}

fn numa_usages_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": preserved_object_schema(generator),
    })
}

/// Usage of a set of resources, plus per-device usage.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResourceMap {
    /// The usage per resource name (`cpu`, `memory`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_list_schema")]
    pub resources: Option<ResourceList>,
    /// Per-device usage (e.g. GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<DeviceInfo>>,
}

/// Usage statistics over one window.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AggregatedUsage {
    /// Usage per statistic: `avg`, `p50`, `p90`, `p95`, `p99`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<BTreeMap<String, ResourceMap>>,
    /// The window, as a Go duration (`5m0s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
}

/// Metrics of one pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodMetricInfo {
    /// Pod name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Pod namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Average usage over the aggregate window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_usage: Option<ResourceMap>,
    /// Koordinator priority class of the pod (`koord-prod`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    /// Koordinator QoS class of the pod (`LSR`, `LS`, `BE`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// Third-party extensions, kept as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object_schema")]
    pub extensions: Option<JsonObject>,
}

/// Metrics of one out-of-band application.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct HostApplicationMetricInfo {
    /// Application name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ResourceMap>,
    /// Its priority class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    /// Its QoS class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
}

/// A predicted amount of resources.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ReclaimableMetric {
    /// The predicted resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceMap>,
}

/// A statistic of `aggregatedNodeUsages` / `aggregatedSystemUsages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AggregationType {
    /// `avg`
    Avg,
    /// `p50`
    P50,
    /// `p90`
    P90,
    /// `p95`
    P95,
    /// `p99`
    P99,
}

impl AggregationType {
    /// The key used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            AggregationType::Avg => "avg",
            AggregationType::P50 => "p50",
            AggregationType::P90 => "p90",
            AggregationType::P95 => "p95",
            AggregationType::P99 => "p99",
        }
    }
}

impl fmt::Display for AggregationType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn find_aggregated<'a>(
    usages: Option<&'a [AggregatedUsage]>,
    duration: &str,
    aggregation: AggregationType,
) -> Option<&'a ResourceList> {
    usages?
        .iter()
        .find(|u| u.duration.as_deref().is_some_and(|d| same_go_duration(d, duration)))?
        .usage
        .as_ref()?
        .get(aggregation.as_str())?
        .resources
        .as_ref()
}

impl NodeMetric {
    /// The node usage statistic `aggregation` over the window `duration`
    /// (a Go duration; `5m` matches `5m0s`), e.g. the 5-minute p99.
    ///
    /// `None` when the window or the statistic is not reported (yet).
    pub fn aggregated_node_usage(
        &self,
        duration: &str,
        aggregation: AggregationType,
    ) -> Option<&ResourceList> {
        let info = self.status.as_ref()?.node_metric.as_ref()?;
        find_aggregated(info.aggregated_node_usages.as_deref(), duration, aggregation)
    }

    /// Like [`Self::aggregated_node_usage`], for the system usage.
    pub fn aggregated_system_usage(
        &self,
        duration: &str,
        aggregation: AggregationType,
    ) -> Option<&ResourceList> {
        let info = self.status.as_ref()?.node_metric.as_ref()?;
        find_aggregated(info.aggregated_system_usages.as_deref(), duration, aggregation)
    }

    /// The average node usage over the aggregate window.
    pub fn node_usage(&self) -> Option<&ResourceList> {
        self.status.as_ref()?.node_metric.as_ref()?.node_usage.as_ref()?.resources.as_ref()
    }

    /// The average system usage over the aggregate window.
    pub fn system_usage(&self) -> Option<&ResourceList> {
        self.status.as_ref()?.node_metric.as_ref()?.system_usage.as_ref()?.resources.as_ref()
    }

    /// The resources predicted reclaimable from Prod pods.
    pub fn prod_reclaimable(&self) -> Option<&ResourceList> {
        self.status
            .as_ref()?
            .prod_reclaimable_metric
            .as_ref()?
            .resource
            .as_ref()?
            .resources
            .as_ref()
    }

    /// The predicted peak usage of Prod pods.
    pub fn prod_peak(&self) -> Option<&ResourceList> {
        self.status.as_ref()?.prod_peak_metric.as_ref()?.resource.as_ref()?.resources.as_ref()
    }

    /// The metrics of the pod `namespace/name`, if reported.
    pub fn pod_metric(&self, namespace: &str, name: &str) -> Option<&PodMetricInfo> {
        self.status
            .as_ref()?
            .pods_metric
            .as_ref()?
            .iter()
            .find(|p| p.namespace.as_deref() == Some(namespace) && p.name.as_deref() == Some(name))
    }
}
