//! Node usage (spec §9.2 step 3), from the node's usage report:
//! `systemUsage + Σ podsMetric` per threshold resource (not the report's
//! `nodeUsage`), the prod share (the metrics of the node's koord-prod
//! pods, matched by `namespace/name`), and the pod counts as `pods`.

use kolo_api::PriorityClass;
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::resources::{ResourceName, ResourceVector};
use kolo_core::usage_report::NodeUsageReport;
use kolo_scheduler::framework::PodInfo;

use crate::cluster::Cluster;

/// A node's measured usage.
#[derive(Debug, Clone)]
pub struct Measured<'a> {
    /// Usage over the threshold resources, plus `pods`.
    pub usage: ResourceVector,
    /// Prod usage over the threshold resources, plus the prod pod count.
    pub prod_usage: ResourceVector,
    /// The node's pods that are not terminated.
    pub pods: Vec<&'a PodInfo>,
    /// Those of them that are koord-prod.
    pub prod_pods: Vec<&'a PodInfo>,
    /// The report (pod metrics are read from it).
    pub report: &'a NodeUsageReport,
}

/// Measures `node` over `resources`; `Err` says why it has no usable
/// report this round (the node is then `NoMetric`).
pub fn measure<'a>(
    cluster: &'a Cluster,
    node: &NodeView,
    resources: &[ResourceName],
    expiration_seconds: i64,
    now: Timestamp,
) -> Result<Measured<'a>, &'static str> {
    let report = cluster.usage(node.name()).ok_or("no NodeMetric")?;
    if report.node_usage.is_none() {
        return Err("NodeMetric has no status.nodeMetric");
    }
    let updated = report.update_time.ok_or("NodeMetric has no status.updateTime")?;
    if now.duration_since(updated).as_secs_f64() >= expiration_seconds as f64 {
        return Err("NodeMetric expired");
    }
    let pods: Vec<&PodInfo> =
        cluster.pods_on(node.name()).filter(|p| !p.view().is_terminated()).collect();
    let prod_pods: Vec<&PodInfo> =
        pods.iter().copied().filter(|p| p.view().priority_class() == PriorityClass::Prod).collect();
    let mut prod_keys: Vec<&str> = prod_pods.iter().map(|p| p.key()).collect();
    prod_keys.sort_unstable();
    let mut usage = ResourceVector::EMPTY;
    let mut prod_usage = ResourceVector::EMPTY;
    for &r in resources.iter().filter(|&&r| r != ResourceName::Pods) {
        usage.set(r, report.system_usage.value(r));
        prod_usage.set(r, 0);
    }
    for metric in &report.pods {
        let prod = !prod_keys.is_empty() && prod_keys.binary_search(&&*metric.key).is_ok();
        for &r in resources.iter().filter(|&&r| r != ResourceName::Pods) {
            let v = metric.usage.value(r);
            usage.set(r, usage.value(r).saturating_add(v));
            if prod {
                prod_usage.set(r, prod_usage.value(r).saturating_add(v));
            }
        }
    }
    usage.set(ResourceName::Pods, pods.len() as i64);
    prod_usage.set(ResourceName::Pods, prod_pods.len() as i64);
    Ok(Measured { usage, prod_usage, pods, prod_pods, report })
}
