//! A snapshot at a glance (`kolo snapshot inspect`): nodes, pods per QoS and
//! priority class, requested vs allocatable, batch resources, kolo objects.

use std::collections::BTreeMap;
use std::io::Write;

use kolo_api::quantity::{Format, Quantity};
use kolo_api::{PriorityClass, QoSClass};
use serde::Serialize;

use super::Snapshot;
use crate::resources::{ResourceName, ResourceVector};

/// The resources the summary table shows, in order.
const TABLE_RESOURCES: [ResourceName; 7] = [
    ResourceName::Cpu,
    ResourceName::Memory,
    ResourceName::Pods,
    ResourceName::BatchCpu,
    ResourceName::BatchMemory,
    ResourceName::MidCpu,
    ResourceName::MidMemory,
];

/// A snapshot summary. Amounts are integers in the resource's unit
/// (`unit` says which: milli-cores, bytes or a count).
#[derive(Debug, Serialize, PartialEq)]
pub struct Summary {
    /// Node counts.
    pub nodes: NodeCounts,
    /// Pod counts.
    pub pods: PodCounts,
    /// Requested (by active, assigned pods) vs allocatable (of all nodes),
    /// per resource.
    pub resources: Vec<ResourceRow>,
    /// NodeMetric totals.
    pub node_metrics: MetricTotals,
    /// How many objects of each other kolo kind were loaded.
    pub objects: BTreeMap<&'static str, usize>,
    /// Kinds present in the input that kolo does not use, with counts.
    pub skipped_kinds: BTreeMap<String, usize>,
}

/// Node counts.
#[derive(Debug, Serialize, PartialEq)]
pub struct NodeCounts {
    /// All nodes.
    pub total: usize,
    /// Nodes whose Ready condition is True.
    pub ready: usize,
    /// Nodes marked unschedulable.
    pub unschedulable: usize,
}

/// Pod counts.
#[derive(Debug, Serialize, PartialEq)]
pub struct PodCounts {
    /// All pods.
    pub total: usize,
    /// Not Succeeded / Failed, and bound to a node.
    pub running_or_bound: usize,
    /// Not Succeeded / Failed, and not bound to a node yet.
    pub pending_unbound: usize,
    /// Succeeded or Failed.
    pub terminated: usize,
    /// Pods per kolo QoS class (resolved "with default").
    pub by_qos: BTreeMap<String, usize>,
    /// Pods per priority class (resolved "with default").
    pub by_priority: BTreeMap<String, usize>,
}

/// One resource's requested vs allocatable.
#[derive(Debug, Serialize, PartialEq)]
pub struct ResourceRow {
    /// The resource name (`cpu`, `kubernetes.io/batch-cpu`, ...).
    pub resource: &'static str,
    /// `milli-cores`, `bytes` or `count`.
    pub unit: &'static str,
    /// Sum over active, assigned pods.
    pub requested: i64,
    /// Sum over nodes.
    pub allocatable: i64,
}

/// Totals over NodeMetrics.
#[derive(Debug, Serialize, PartialEq)]
pub struct MetricTotals {
    /// NodeMetric objects.
    pub count: usize,
    /// Sum of `status.nodeMetric.nodeUsage` (cpu milli-cores, memory bytes).
    pub node_usage: BTreeMap<&'static str, i64>,
    /// Sum of `status.prodReclaimableMetric` (cpu milli-cores, memory bytes).
    pub prod_reclaimable: BTreeMap<&'static str, i64>,
    /// NodeMetrics whose usage could not be read (malformed quantities).
    pub unreadable: Vec<String>,
}

impl Summary {
    /// Summarises a snapshot.
    pub fn of(snapshot: &Snapshot) -> Summary {
        let nodes = NodeCounts {
            total: snapshot.nodes.len(),
            ready: snapshot.nodes.iter().filter(|n| n.view.is_ready()).count(),
            unschedulable: snapshot.nodes.iter().filter(|n| n.view.is_unschedulable()).count(),
        };

        let mut pods = PodCounts {
            total: snapshot.pods.len(),
            running_or_bound: 0,
            pending_unbound: 0,
            terminated: 0,
            by_qos: QoSClass::ALL.iter().map(|c| (c.to_string(), 0)).collect(),
            by_priority: PriorityClass::NAMED
                .iter()
                .chain([&PriorityClass::None])
                .map(|c| (c.to_string(), 0))
                .collect(),
        };
        let mut requested = ResourceVector::new();
        for pod in &snapshot.pods {
            let view = &pod.view;
            *pods.by_qos.entry(view.qos().to_string()).or_default() += 1;
            *pods.by_priority.entry(view.priority_class().to_string()).or_default() += 1;
            if view.is_terminated() {
                pods.terminated += 1;
            } else if view.is_assigned() {
                pods.running_or_bound += 1;
                requested = requested
                    .saturating_add(view.requests())
                    .saturating_add(&ResourceVector::new().with(ResourceName::Pods, 1));
            } else {
                pods.pending_unbound += 1;
            }
        }
        let allocatable = snapshot
            .nodes
            .iter()
            .fold(ResourceVector::new(), |sum, n| sum.saturating_add(n.view.allocatable()));
        let resources = TABLE_RESOURCES
            .iter()
            .map(|&name| ResourceRow {
                resource: name.as_str(),
                unit: unit(name),
                requested: requested.value(name),
                allocatable: allocatable.value(name),
            })
            .collect();

        let objects = BTreeMap::from([
            ("ConfigMap", snapshot.config_maps.len()),
            ("NodeSLO", snapshot.node_slos.len()),
            ("ClusterColocationProfile", snapshot.colocation_profiles.len()),
            ("Reservation", snapshot.reservations.len()),
            ("PodMigrationJob", snapshot.pod_migration_jobs.len()),
            ("Device", snapshot.devices.len()),
            ("ElasticQuota", snapshot.elastic_quotas.len()),
            ("PodGroup", snapshot.pod_groups.len()),
            ("PodDisruptionBudget", snapshot.pod_disruption_budgets.len()),
            ("PersistentVolumeClaim", snapshot.persistent_volume_claims.len()),
            ("PersistentVolume", snapshot.persistent_volumes.len()),
        ]);

        Summary {
            nodes,
            pods,
            resources,
            node_metrics: metric_totals(snapshot),
            objects,
            skipped_kinds: snapshot.skipped_kinds.clone(),
        }
    }

    /// Writes the summary as a few human-readable tables.
    pub fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        let n = &self.nodes;
        writeln!(out, "Nodes: {} ({} ready, {} unschedulable)", n.total, n.ready, n.unschedulable)?;
        let p = &self.pods;
        writeln!(
            out,
            "Pods:  {} ({} bound, {} pending, {} terminated)",
            p.total, p.running_or_bound, p.pending_unbound, p.terminated
        )?;
        writeln!(out, "  by QoS:      {}", counts(&p.by_qos))?;
        writeln!(out, "  by priority: {}", counts(&p.by_priority))?;
        writeln!(out)?;
        writeln!(
            out,
            "{:<28} {:>14} {:>14} {:>9}",
            "RESOURCE", "REQUESTED", "ALLOCATABLE", "REQ/ALLOC"
        )?;
        for row in &self.resources {
            let name = ResourceName::lookup(row.resource).unwrap_or(ResourceName::Pods);
            let percent = if row.allocatable > 0 {
                format!("{:.1}%", row.requested as f64 * 100.0 / row.allocatable as f64)
            } else {
                "-".to_string()
            };
            writeln!(
                out,
                "{:<28} {:>14} {:>14} {:>9}",
                row.resource,
                human(name, row.requested),
                human(name, row.allocatable),
                percent
            )?;
        }
        let m = &self.node_metrics;
        writeln!(out)?;
        writeln!(out, "NodeMetrics: {}", m.count)?;
        if m.count > 0 {
            writeln!(
                out,
                "  node usage:       cpu {} memory {}",
                human(ResourceName::Cpu, m.node_usage["cpu"]),
                human(ResourceName::Memory, m.node_usage["memory"])
            )?;
            writeln!(
                out,
                "  prod reclaimable: cpu {} memory {}",
                human(ResourceName::Cpu, m.prod_reclaimable["cpu"]),
                human(ResourceName::Memory, m.prod_reclaimable["memory"])
            )?;
        }
        for name in &m.unreadable {
            writeln!(out, "  warning: {name}")?;
        }
        let objects: BTreeMap<String, usize> = self
            .objects
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        if !objects.is_empty() {
            writeln!(out, "Other objects: {}", counts(&objects))?;
        }
        if !self.skipped_kinds.is_empty() {
            writeln!(out, "Skipped (not used by kolo): {}", counts(&self.skipped_kinds))?;
        }
        Ok(())
    }
}

fn metric_totals(snapshot: &Snapshot) -> MetricTotals {
    let mut usage = ResourceVector::new();
    let mut reclaimable = ResourceVector::new();
    let mut unreadable = Vec::new();
    for metric in &snapshot.node_metrics {
        let name = metric.metadata.name.as_deref().unwrap_or("<no name>");
        for (list, sum, field) in [
            (metric.node_usage(), &mut usage, "status.nodeMetric.nodeUsage"),
            (metric.prod_reclaimable(), &mut reclaimable, "status.prodReclaimableMetric"),
        ] {
            match list.map(ResourceVector::from_resource_list).transpose() {
                Ok(v) => *sum = sum.saturating_add(&v.unwrap_or_default()),
                Err(e) => unreadable.push(format!("NodeMetric {name}: {field}: {e}")),
            }
        }
    }
    let cpu_memory = |v: &ResourceVector| {
        BTreeMap::from([
            ("cpu", v.value(ResourceName::Cpu)),
            ("memory", v.value(ResourceName::Memory)),
        ])
    };
    MetricTotals {
        count: snapshot.node_metrics.len(),
        node_usage: cpu_memory(&usage),
        prod_reclaimable: cpu_memory(&reclaimable),
        unreadable,
    }
}

fn unit(name: ResourceName) -> &'static str {
    match name {
        ResourceName::Cpu | ResourceName::BatchCpu | ResourceName::MidCpu => "milli-cores",
        ResourceName::Pods => "count",
        _ => "bytes",
    }
}

/// An amount as a person reads it, in the spelling `kubectl` shows: cpu as
/// a quantity (`1500m`), `batch-cpu` / `mid-cpu` as the plain milli-core
/// integers they are on the wire (`1500`), bytes in binary units (`2Gi`),
/// counts as they are.
fn human(name: ResourceName, amount: i64) -> String {
    match name {
        ResourceName::Cpu => Quantity::from_milli(amount).to_string(),
        ResourceName::BatchCpu | ResourceName::MidCpu | ResourceName::Pods => amount.to_string(),
        _ => Quantity::from_value(amount, Format::BinarySI).to_string(),
    }
}

fn counts<K: std::fmt::Display, V: std::fmt::Display>(map: &BTreeMap<K, V>) -> String {
    map.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNAPSHOT: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110", kubernetes.io/batch-cpu: "2000", kubernetes.io/batch-memory: 4Gi}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Node
metadata: {name: n2}
spec: {unschedulable: true}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "False"}]
---
apiVersion: v1
kind: Pod
metadata: {name: ls, namespace: a}
spec:
  nodeName: n1
  containers: [{name: c, resources: {requests: {cpu: 1500m, memory: 1Gi}}}]
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: be, namespace: a, labels: {koordinator.sh/qosClass: BE, koordinator.sh/priority-class: koord-batch}}
spec:
  nodeName: n1
  containers: [{name: c, resources: {requests: {kubernetes.io/batch-cpu: "500", kubernetes.io/batch-memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: pending, namespace: a}
spec:
  containers: [{name: c, resources: {requests: {cpu: "1"}, limits: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: done, namespace: a}
spec:
  nodeName: n2
  containers: [{name: c, resources: {requests: {cpu: "3"}}}]
status: {phase: Succeeded}
---
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: n1}
spec: {}
status:
  nodeMetric: {nodeUsage: {resources: {cpu: 900m, memory: 2Gi}}}
  prodReclaimableMetric: {resource: {resources: {cpu: 1200m, memory: "0"}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
"#;

    fn row<'a>(summary: &'a Summary, resource: &str) -> &'a ResourceRow {
        summary.resources.iter().find(|r| r.resource == resource).unwrap()
    }

    #[test]
    fn counts_and_sums() {
        let snapshot = Snapshot::parse(SNAPSHOT, "test").unwrap();
        let s = Summary::of(&snapshot);
        assert_eq!(s.nodes, NodeCounts { total: 2, ready: 1, unschedulable: 1 });
        assert_eq!(
            (s.pods.total, s.pods.running_or_bound, s.pods.pending_unbound, s.pods.terminated),
            (4, 2, 1, 1)
        );
        assert_eq!(s.pods.by_qos["LS"], 2, "ls and done are Burstable");
        assert_eq!(s.pods.by_qos["LSR"], 1, "pending is Guaranteed (limits only)");
        assert_eq!(s.pods.by_qos["BE"], 1);
        assert_eq!(s.pods.by_priority["koord-batch"], 1);
        assert_eq!(s.pods.by_priority["koord-prod"], 3);
        // Only bound, non-terminated pods count as requested.
        assert_eq!((row(&s, "cpu").requested, row(&s, "cpu").allocatable), (1500, 8000));
        assert_eq!(row(&s, "memory").requested, 1 << 30);
        assert_eq!(row(&s, "pods").requested, 2);
        assert_eq!(row(&s, "kubernetes.io/batch-cpu").requested, 500);
        assert_eq!(row(&s, "kubernetes.io/batch-cpu").allocatable, 2000);
        assert_eq!(row(&s, "kubernetes.io/batch-memory").allocatable, 4 << 30);
        assert_eq!(s.node_metrics.count, 1);
        assert_eq!(s.node_metrics.node_usage["cpu"], 900);
        assert_eq!(s.node_metrics.prod_reclaimable["cpu"], 1200);
        assert_eq!(s.skipped_kinds["apps/v1 Deployment"], 1);
    }

    #[test]
    fn text_output_shows_the_table() {
        let snapshot = Snapshot::parse(SNAPSHOT, "test").unwrap();
        let mut out = Vec::new();
        Summary::of(&snapshot).write_text(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Nodes: 2 (1 ready, 1 unschedulable)"), "{text}");
        assert!(text.contains("Pods:  4 (2 bound, 1 pending, 1 terminated)"), "{text}");
        let cpu_line = text.lines().find(|l| l.starts_with("cpu ")).unwrap();
        assert!(cpu_line.contains("1500m") && cpu_line.contains("18.8%"), "{cpu_line}");
        assert!(text.contains("prod reclaimable: cpu 1200m memory 0"), "{text}");
        assert!(text.contains("Skipped (not used by kolo): apps/v1 Deployment=1"), "{text}");
    }
}
