//! A node's reported usage as numbers: what kolo's decision code reads from
//! a NodeMetric (the scheduler's load-aware plugin, the manager's batch
//! allocatable), read once.
//!
//! A component that watches NodeMetric objects reads each one with
//! [`NodeUsageReport::read`] at the edge and hands the report to its
//! decisions; the simulator builds reports directly from its numbers, so
//! the same decisions run without formatting quantities into strings and
//! parsing them back (that round trip was half of `kolo sim`'s CPU time).
//!
//! Reading never fails as a whole. A quantity that does not parse leaves
//! its resource absent from the vector and is listed in
//! [`NodeUsageReport::errors`] with its field path; each consumer decides
//! what a malformed report means to it (the load-aware plugin reads the
//! resource as 0, the manager withdraws the node's batch resources).
//! Resources this process has never seen named are skipped: no decision
//! can ask for them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kolo_api::PriorityClass;
use kolo_api::crd::{AggregationType, NodeMetric, parse_go_duration};
use kolo_api::quantity::{parse_milli, parse_value};

use crate::compact_vector::CompactVector;
use crate::pod::pod_key;
use crate::resources::{ResourceName, ResourceVector};

/// A node's usage report (the numeric content of its NodeMetric).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeUsageReport {
    /// The node (the NodeMetric's name).
    pub node: String,
    /// `status.updateTime`.
    pub update_time: Option<Timestamp>,
    /// `spec.metricCollectPolicy.reportIntervalSeconds`.
    pub report_interval: Option<SignedDuration>,
    /// `status.nodeMetric.nodeUsage`: `Some` whenever `status.nodeMetric`
    /// exists (an absent list reads as the empty vector).
    pub node_usage: Option<ResourceVector>,
    /// `status.nodeMetric.systemUsage` (absent: empty).
    pub system_usage: ResourceVector,
    /// `status.nodeMetric.aggregatedNodeUsages`, one entry per (window,
    /// statistic) in report order; windows that are not Go durations and
    /// unknown statistics are skipped.
    pub aggregated_node_usages: Vec<AggregatedNodeUsage>,
    /// `status.prodReclaimableMetric.resource`: `None` when the metric or
    /// its resource list is absent.
    pub prod_reclaimable: Option<ResourceVector>,
    /// `status.podsMetric`, in order.
    pub pods: Vec<PodUsage>,
    /// `status.hostApplicationMetric`, in order.
    pub host_apps: Vec<HostAppUsage>,
    /// The quantities that could not be read, in reading order.
    pub errors: Vec<UsageReadError>,
}

/// One statistic over one window of the node's usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggregatedNodeUsage {
    /// The window.
    pub duration: Duration,
    /// The statistic.
    pub statistic: AggregationType,
    /// The usage.
    pub usage: ResourceVector,
}

/// One pod's usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodUsage {
    /// `namespace/name` (shared with the pod's [`PodView`](crate::pod::PodView)
    /// where the reporter has one).
    pub key: Arc<str>,
    /// The reported priority class; `None` when empty or unknown.
    pub priority: Option<PriorityClass>,
    /// The usage (absent list: empty), compact: a report lists every pod
    /// of its node.
    pub usage: CompactVector,
}

/// One host application's usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostAppUsage {
    /// The reported priority class; `None` when empty or unknown.
    pub priority: Option<PriorityClass>,
    /// The usage (absent list: empty).
    pub usage: ResourceVector,
}

/// Which part of the report a malformed quantity is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportPart {
    /// `status.nodeMetric.systemUsage`.
    SystemUsage,
    /// `status.nodeMetric.nodeUsage`.
    NodeUsage,
    /// `status.nodeMetric.aggregatedNodeUsages`.
    AggregatedNodeUsage,
    /// `status.prodReclaimableMetric`.
    ProdReclaimable,
    /// `status.podsMetric`.
    Pod,
    /// `status.hostApplicationMetric`.
    HostApp,
}

/// A quantity of the NodeMetric that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct UsageReadError {
    /// The part of the report.
    pub part: ReportPart,
    /// The resource.
    pub resource: ResourceName,
    /// The field, e.g. `status.podsMetric[3].podUsage.resources.cpu`.
    pub field: String,
    /// What is wrong (quotes the value).
    pub message: String,
}

impl NodeUsageReport {
    /// Reads a NodeMetric.
    pub fn read(metric: &NodeMetric) -> NodeUsageReport {
        let mut errors = Vec::new();
        let mut vector =
            |part: ReportPart,
             list: Option<&BTreeMap<String, KubeQuantity>>,
             field: &dyn Fn() -> String| { read_list(list, part, field, &mut errors) };
        let status = metric.status.as_ref();
        let info = status.and_then(|s| s.node_metric.as_ref());
        let system_usage = vector(
            ReportPart::SystemUsage,
            info.and_then(|i| i.system_usage.as_ref()).and_then(|u| u.resources.as_ref()),
            &|| "status.nodeMetric.systemUsage.resources".to_owned(),
        );
        let node_usage = info.map(|i| {
            vector(
                ReportPart::NodeUsage,
                i.node_usage.as_ref().and_then(|u| u.resources.as_ref()),
                &|| "status.nodeMetric.nodeUsage.resources".to_owned(),
            )
        });
        let mut aggregated_node_usages = Vec::new();
        let entries = info.and_then(|i| i.aggregated_node_usages.as_deref()).unwrap_or_default();
        for (i, entry) in entries.iter().enumerate() {
            let Some(duration) = entry.duration.as_deref().and_then(parse_go_duration) else {
                continue;
            };
            for (name, usage) in entry.usage.iter().flatten() {
                let Some(statistic) = aggregation_type(name) else { continue };
                let usage =
                    vector(ReportPart::AggregatedNodeUsage, usage.resources.as_ref(), &|| {
                        format!(
                            "status.nodeMetric.aggregatedNodeUsages[{i}].usage.{name}.resources"
                        )
                    });
                aggregated_node_usages.push(AggregatedNodeUsage { duration, statistic, usage });
            }
        }
        let prod_reclaimable = status
            .and_then(|s| s.prod_reclaimable_metric.as_ref())
            .and_then(|m| m.resource.as_ref())
            .and_then(|r| r.resources.as_ref())
            .map(|list| {
                vector(ReportPart::ProdReclaimable, Some(list), &|| {
                    "status.prodReclaimableMetric.resource.resources".to_owned()
                })
            });
        let pods = status
            .and_then(|s| s.pods_metric.as_deref())
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, p)| PodUsage {
                key: pod_key(
                    p.namespace.as_deref().unwrap_or_default(),
                    p.name.as_deref().unwrap_or_default(),
                ),
                priority: p.priority.as_deref().and_then(|s| s.parse().ok()),
                usage: vector(
                    ReportPart::Pod,
                    p.pod_usage.as_ref().and_then(|u| u.resources.as_ref()),
                    &|| format!("status.podsMetric[{i}].podUsage.resources"),
                )
                .into(),
            })
            .collect();
        let host_apps = status
            .and_then(|s| s.host_application_metric.as_deref())
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, app)| HostAppUsage {
                priority: app.priority.as_deref().and_then(|s| s.parse().ok()),
                usage: vector(
                    ReportPart::HostApp,
                    app.usage.as_ref().and_then(|u| u.resources.as_ref()),
                    &|| format!("status.hostApplicationMetric[{i}].usage.resources"),
                ),
            })
            .collect();
        NodeUsageReport {
            node: metric.metadata.name.clone().unwrap_or_default(),
            update_time: status.and_then(|s| s.update_time.as_ref()).map(|t| t.0),
            report_interval: metric
                .spec
                .metric_collect_policy
                .as_ref()
                .and_then(|p| p.report_interval_seconds)
                .map(SignedDuration::from_secs),
            node_usage,
            system_usage,
            aggregated_node_usages,
            prod_reclaimable,
            pods,
            host_apps,
            errors,
        }
    }
}

/// The statistic a NodeMetric key names (`avg`, `p50`, `p90`, `p95`,
/// `p99`).
pub fn aggregation_type(name: &str) -> Option<AggregationType> {
    [
        AggregationType::Avg,
        AggregationType::P50,
        AggregationType::P90,
        AggregationType::P95,
        AggregationType::P99,
    ]
    .into_iter()
    .find(|t| t.as_str() == name)
}

/// The known resources of a list: CPU in milli-cores, the rest in units
/// (memory rounded up to a byte). Keys are read in order, so of two
/// spellings of one resource the later key wins.
fn read_list(
    list: Option<&BTreeMap<String, KubeQuantity>>,
    part: ReportPart,
    field: &dyn Fn() -> String,
    errors: &mut Vec<UsageReadError>,
) -> ResourceVector {
    let mut out = ResourceVector::EMPTY;
    for (key, quantity) in list.into_iter().flatten() {
        let Some(resource) = ResourceName::lookup(key) else { continue };
        let parsed =
            if resource.is_milli() { parse_milli(quantity) } else { parse_value(quantity) };
        match parsed {
            Ok(v) => out.set(resource, v),
            Err(e) => errors.push(UsageReadError {
                part,
                resource,
                field: format!("{}.{key}", field()),
                message: e.to_string(),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(yaml: &str) -> NodeMetric {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn reads_every_part_as_numbers() {
        let r = NodeUsageReport::read(&metric(
            r#"
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: n1}
spec: {metricCollectPolicy: {reportIntervalSeconds: 30}}
status:
  updateTime: "2026-01-01T00:00:00Z"
  nodeMetric:
    nodeUsage: {resources: {cpu: 1500m, memory: 2Gi, example.com/never-seen: "3"}}
    systemUsage: {resources: {cpu: "0.5"}}
    aggregatedNodeUsages:
    - duration: 5m0s
      usage: {p95: {resources: {cpu: "2"}}, p42: {resources: {cpu: "9"}}}
    - duration: forever
      usage: {avg: {resources: {cpu: "9"}}}
  prodReclaimableMetric: {resource: {resources: {}}}
  podsMetric:
  - {namespace: ns, name: a, priority: koord-prod, podUsage: {resources: {cpu: 100m, memory: 1k}}}
  - {namespace: ns, name: b, priority: not-a-class}
  hostApplicationMetric:
  - {name: h, priority: koord-batch, usage: {resources: {memory: "1.5"}}}
"#,
        ));
        assert_eq!(r.node, "n1");
        assert_eq!(r.report_interval, Some(SignedDuration::from_secs(30)));
        assert_eq!(r.update_time, Some("2026-01-01T00:00:00Z".parse().unwrap()));
        let node = r.node_usage.unwrap();
        assert_eq!(
            (node.get(ResourceName::Cpu), node.get(ResourceName::Memory)),
            (Some(1500), Some(2 << 30))
        );
        assert_eq!(node.len(), 2, "an unseen resource name is skipped");
        assert_eq!(r.system_usage, ResourceVector::EMPTY.with(ResourceName::Cpu, 500));
        assert_eq!(
            r.aggregated_node_usages,
            [AggregatedNodeUsage {
                duration: Duration::from_secs(300),
                statistic: AggregationType::P95,
                usage: ResourceVector::EMPTY.with(ResourceName::Cpu, 2000),
            }]
        );
        assert_eq!(r.prod_reclaimable, Some(ResourceVector::EMPTY), "present but empty");
        assert_eq!(&*r.pods[0].key, "ns/a");
        assert_eq!(r.pods[0].priority, Some(PriorityClass::Prod));
        assert_eq!(r.pods[0].usage.to_vector(), ResourceVector::cpu_memory(100, 1000));
        assert_eq!(
            (r.pods[1].priority, r.pods[1].usage.to_vector()),
            (None, ResourceVector::EMPTY)
        );
        // Memory is rounded up to a whole byte, as Value() does.
        assert_eq!(r.host_apps[0].usage, ResourceVector::EMPTY.with(ResourceName::Memory, 2));
        assert_eq!(r.host_apps[0].priority, Some(PriorityClass::Batch));
        assert!(r.errors.is_empty(), "{:?}", r.errors);
    }

    #[test]
    fn absent_parts_read_as_absent() {
        let r = NodeUsageReport::read(&NodeMetric::new("n", Default::default()));
        assert_eq!(r.node_usage, None);
        assert_eq!(r.prod_reclaimable, None);
        assert_eq!((r.update_time, r.report_interval), (None, None));
        assert!(r.pods.is_empty() && r.host_apps.is_empty() && r.errors.is_empty());
        let r = NodeUsageReport::read(&metric(
            "{apiVersion: slo.koordinator.sh/v1alpha1, kind: NodeMetric, metadata: {name: n}, spec: {}, status: {nodeMetric: {}}}",
        ));
        assert_eq!(r.node_usage, Some(ResourceVector::EMPTY), "nodeMetric without nodeUsage");
    }

    #[test]
    fn a_malformed_quantity_is_absent_and_named() {
        let r = NodeUsageReport::read(&metric(
            r#"
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: n}
spec: {}
status:
  nodeMetric: {nodeUsage: {resources: {cpu: lots, memory: 1Gi}}}
  podsMetric:
  - {namespace: ns, name: a, podUsage: {resources: {memory: "?"}}}
"#,
        ));
        assert_eq!(r.node_usage, Some(ResourceVector::EMPTY.with(ResourceName::Memory, 1 << 30)));
        let fields: Vec<_> =
            r.errors.iter().map(|e| (e.part, e.resource, e.field.as_str())).collect();
        assert_eq!(
            fields,
            [
                (
                    ReportPart::NodeUsage,
                    ResourceName::Cpu,
                    "status.nodeMetric.nodeUsage.resources.cpu"
                ),
                (
                    ReportPart::Pod,
                    ResourceName::Memory,
                    "status.podsMetric[0].podUsage.resources.memory"
                ),
            ]
        );
        assert!(r.errors[0].message.contains("lots"), "{}", r.errors[0]);
    }
}
