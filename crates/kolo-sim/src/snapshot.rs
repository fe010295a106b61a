//! Starting a scenario from a snapshot of a real cluster (`kubectl get
//! nodes,pods -A -o yaml`, optionally with NodeMetrics): the snapshot's nodes
//! become the simulated cluster and its latency-sensitive pods the LS
//! workload, while the batch workload, the model, the policies, the seed and
//! the duration stay the scenario's.
//!
//! The mapping, and what it leaves out:
//!
//! * Every Node is a node group of its own with `count: 1`, named after the
//!   node, so the simulated node is `<node>-0000` in reports. Its CPUs are
//!   `status.capacity.cpu` rounded up to whole CPUs (a fractional capacity
//!   is rare and the simulated topology needs whole CPUs), its memory
//!   `status.capacity.memory`; the kubelet reservation is capacity −
//!   allocatable (never negative), so allocatable is carried over (the
//!   engine rounds `reservedCpu × 1000` to the milli-core); its labels are
//!   kept. The topology is unknown, so a node has one socket and
//!   two threads per core when its CPU count is even (one otherwise). Taints,
//!   `unschedulable` and the Ready condition are not carried: the engine
//!   builds its own Node objects from a group's sizes and labels.
//! * Every Running or Pending pod whose kolo QoS class ([`PodView::qos`]) is
//!   not BE — LS, LSR, LSE, SYSTEM or none — is a fixed LS pod
//!   ([`FixedLsPod`]) with its effective requests. A pod without a CPU
//!   request gets [`DEFAULT_CPU_REQUEST_MILLI`], one without a memory
//!   request [`DEFAULT_MEMORY_REQUEST_BYTES`] (the simulated scheduler and
//!   node model need an amount to place and to account for). The pods are
//!   placed by the simulated scheduler, not pinned to the node they run on
//!   in the snapshot (the engine has no way to pin a pod), and DaemonSet pods
//!   are one pod each, not one per node.
//! * A pod's mean CPU usage is its measured usage when a NodeMetric reports
//!   it (`status.podsMetric[].podUsage.cpu`, and memory likewise); else the
//!   scenario's `ls.meanUsageOfRequest` × a log-normal factor, as for a
//!   generated service. The daily curve and the noise are the scenario's
//!   either way, so a measurement taken at one moment becomes the mean of
//!   the day.
//! * BE pods are what the scenario's batch generator supplies, so the
//!   snapshot's are counted ([`Imported::be_skipped`]) and left out, and so
//!   are finished (Succeeded / Failed) and Unknown pods.
//!
//! The scenario's `ls.requestedFraction` is set to 0, so a snapshot without
//! LS pods gives a run without LS pods rather than generated services.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::PathBuf;

use kolo_api::QoSClass;
use kolo_core::node::NodeView;
use kolo_core::resources::{ResourceName, ResourceVector};
use kolo_core::snapshot::{Snapshot, SnapshotError};

use crate::scenario::{FixedLsPod, NodeGroup, Scenario};
use crate::workload::GIB;
use kolo_core::HasMeta;

/// CPU request, milli-cores, of a snapshot pod that requests none: a small
/// amount, what a sidecar-sized container typically asks for.
pub const DEFAULT_CPU_REQUEST_MILLI: i64 = 100;
/// Memory request, bytes, of a snapshot pod that requests none (128 MiB).
pub const DEFAULT_MEMORY_REQUEST_BYTES: i64 = 128 << 20;

/// What was taken from a snapshot, and what was left out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Imported {
    /// The snapshot's file names, comma-separated.
    pub source_name: String,
    /// Nodes (one node group each).
    pub nodes: usize,
    /// Pods that became fixed LS pods.
    pub ls_pods: usize,
    /// Of those, pods with a measured CPU usage.
    pub measured: usize,
    /// Of those, pods without a CPU request, given the default.
    pub defaulted: usize,
    /// BE pods left out (the batch generator supplies BE work).
    pub be_skipped: usize,
    /// Succeeded, Failed or Unknown pods left out.
    pub inactive_skipped: usize,
}

impl fmt::Display for Imported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "snapshot {}: {} nodes, {} LS pods ({} with measured usage, {} given the default \
             {}m CPU request); skipped {} BE and {} finished pods",
            self.source_name,
            self.nodes,
            self.ls_pods,
            self.measured,
            self.defaulted,
            DEFAULT_CPU_REQUEST_MILLI,
            self.be_skipped,
            self.inactive_skipped
        )
    }
}

/// Why a snapshot could not start a scenario. Every variant names the
/// file(s) and the object.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The snapshot could not be read or parsed (the loader's error names
    /// the file, the document, the object and the field).
    #[error(transparent)]
    Load(#[from] SnapshotError),
    /// The snapshot has no Node.
    #[error(
        "{source_name}: the snapshot has no Node to simulate (dump one with `kubectl get nodes,pods -A -o yaml`)"
    )]
    NoNodes {
        /// The file(s).
        source_name: String,
    },
    /// A Node cannot be simulated.
    #[error("{source_name}: Node {node}: {field}: {message}")]
    Node {
        /// The file(s).
        source_name: String,
        /// The node's name (`<no name>` if missing).
        node: String,
        /// The field at fault.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A NodeMetric's pod usage cannot be read.
    #[error("{source_name}: NodeMetric {metric}: status.podsMetric[{index}].podUsage: {message}")]
    Metric {
        /// The file(s).
        source_name: String,
        /// The NodeMetric's name.
        metric: String,
        /// The entry of `podsMetric`.
        index: usize,
        /// What the quantity parser said.
        message: String,
    },
}

/// Loads the snapshot files (merged, `-` is stdin) and makes `scenario`
/// start from them (see [`apply`]).
pub fn load(scenario: &mut Scenario, paths: &[PathBuf]) -> Result<Imported, ImportError> {
    let mut snapshot = Snapshot::default();
    for path in paths {
        snapshot.add_file(path)?;
    }
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    apply(scenario, &snapshot, &names.join(", "))
}

/// Replaces the scenario's cluster with the snapshot's nodes and its LS
/// workload with the snapshot's non-BE pods; `source_name` is named in
/// errors and in the scenario's name and description. On error the
/// scenario is left as it was.
pub fn apply(
    scenario: &mut Scenario,
    snapshot: &Snapshot,
    source_name: &str,
) -> Result<Imported, ImportError> {
    if snapshot.nodes.is_empty() {
        return Err(ImportError::NoNodes { source_name: source_name.to_string() });
    }
    let mut node_groups = Vec::with_capacity(snapshot.nodes.len());
    let mut seen = BTreeSet::new();
    for node in &snapshot.nodes {
        let group = node_group(&node.view).map_err(|(node, field, message)| ImportError::Node {
            source_name: source_name.to_string(),
            node,
            field,
            message,
        })?;
        // Two nodes of one name would be one simulated node twice (merged
        // dumps of the same cluster, say).
        if !seen.insert(group.name.clone()) {
            return Err(ImportError::Node {
                source_name: source_name.to_string(),
                node: group.name,
                field: "metadata.name",
                message: "appears twice in the snapshot".into(),
            });
        }
        node_groups.push(group);
    }
    let usage = measured_usage(snapshot, source_name)?;
    let mut imported = Imported {
        source_name: source_name.to_string(),
        nodes: node_groups.len(),
        ..Imported::default()
    };
    let mut pods = Vec::new();
    for pod in &snapshot.pods {
        let view = &pod.view;
        if !view.is_active() {
            imported.inactive_skipped += 1;
            continue;
        }
        if view.qos() == QoSClass::BE {
            imported.be_skipped += 1;
            continue;
        }
        let requests = view.requests();
        let cpu = match requests.cpu() {
            c if c > 0 => c,
            _ => {
                imported.defaulted += 1;
                DEFAULT_CPU_REQUEST_MILLI
            }
        };
        let memory = match requests.memory() {
            m if m > 0 => m,
            _ => DEFAULT_MEMORY_REQUEST_BYTES,
        };
        let measured = usage.get(view.key());
        let mean_cpu = measured.and_then(|u| u.get(ResourceName::Cpu));
        imported.measured += usize::from(mean_cpu.is_some());
        pods.push(FixedLsPod {
            name: view.key().to_owned(),
            cpu: cpu as f64 / 1000.0,
            memory_gib: memory as f64 / GIB,
            mean_cpu_cores: mean_cpu.map(|m| m as f64 / 1000.0),
            mean_usage_of_request: None,
            memory_usage_gib: measured
                .and_then(|u| u.get(ResourceName::Memory))
                .map(|m| m as f64 / GIB),
        });
    }
    imported.ls_pods = pods.len();
    scenario.cluster.node_groups = node_groups;
    scenario.ls.pods = pods;
    // With no fixed pods the generator would draw services up to this
    // fraction; the snapshot's LS pods are all the LS pods there are.
    scenario.ls.requested_fraction = 0.0;
    let base = if scenario.name.is_empty() {
        "the scenario".to_string()
    } else {
        format!("the {} scenario", scenario.name)
    };
    scenario.name = if scenario.name.is_empty() {
        format!("snapshot {source_name}")
    } else {
        format!("{} on snapshot {source_name}", scenario.name)
    };
    // The scenario's own description tells of the cluster and LS services
    // the snapshot replaced: only what is left of it is named.
    scenario.description = format!(
        "The nodes and LS pods of {imported}. The batch jobs, the policies and the {} h run come \
         from {base}, whose own cluster and LS services the snapshot replaces.",
        scenario.duration_hours
    );
    Ok(imported)
}

/// A node as a group of one; errors are (node, field, message).
fn node_group(view: &NodeView) -> Result<NodeGroup, (String, &'static str, String)> {
    let name = view.name();
    let fail = |field, message: String| {
        Err((if name.is_empty() { "<no name>" } else { name }.to_string(), field, message))
    };
    if name.is_empty() {
        return fail("metadata.name", "is missing".into());
    }
    let (capacity, allocatable) = (view.capacity(), view.allocatable());
    let cpu_milli = capacity.cpu();
    if cpu_milli <= 0 {
        return fail("status.capacity.cpu", "is missing or 0: a node needs CPUs".into());
    }
    let memory = capacity.memory();
    if memory <= 0 {
        return fail("status.capacity.memory", "is missing or 0: a node needs memory".into());
    }
    let whole_cpus = cpu_milli / 1000 + i64::from(cpu_milli % 1000 != 0);
    let Ok(cpu) = u32::try_from(whole_cpus) else {
        return fail("status.capacity.cpu", format!("{cpu_milli}m is more than kolo sim models"));
    };
    // Allocatable is carried over: the reservation makes up for the
    // rounding of the capacity to whole CPUs.
    let alloc_cpu = allocatable.cpu().clamp(0, cpu_milli);
    let alloc_memory = allocatable.memory().clamp(0, memory);
    Ok(NodeGroup {
        name: name.to_string(),
        count: 1,
        cpu,
        memory_gib: memory as f64 / GIB,
        sockets: 1,
        threads_per_core: if cpu % 2 == 0 { 2 } else { 1 },
        reserved_cpu: (i64::from(cpu) * 1000 - alloc_cpu) as f64 / 1000.0,
        reserved_memory_gib: (memory - alloc_memory) as f64 / GIB,
        labels: view.labels().iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    })
}

/// Measured usage by pod key (`namespace/name`), from every NodeMetric's
/// `status.podsMetric`.
fn measured_usage(
    snapshot: &Snapshot,
    source_name: &str,
) -> Result<HashMap<String, ResourceVector>, ImportError> {
    let mut usage = HashMap::new();
    for metric in &snapshot.node_metrics {
        let Some(pods) = metric.status.as_ref().and_then(|s| s.pods_metric.as_ref()) else {
            continue;
        };
        for (index, pod) in pods.iter().enumerate() {
            let (Some(namespace), Some(name), Some(list)) = (
                pod.namespace.as_deref(),
                pod.name.as_deref(),
                pod.pod_usage.as_ref().and_then(|u| u.resources.as_ref()),
            ) else {
                continue;
            };
            let vector =
                ResourceVector::from_resource_list(list).map_err(|e| ImportError::Metric {
                    source_name: source_name.to_string(),
                    metric: metric.metadata.name.clone().unwrap_or_else(|| "<no name>".into()),
                    index,
                    message: e.to_string(),
                })?;
            usage.insert(format!("{namespace}/{name}"), vector);
        }
    }
    Ok(usage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{ClusterSize, generate};

    const EXAMPLE: &str = include_str!("../../../examples/scenarios/snapshot-cluster.yaml");

    fn node(name: &str, capacity: &str, allocatable: &str, labels: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{{labels}}}}}\n\
             status: {{capacity: {{{capacity}}}, allocatable: {{{allocatable}}}}}\n---\n"
        )
    }

    fn pod(name: &str, labels: &str, requests: &str, phase: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns, labels: {{{labels}}}}}\n\
             spec: {{containers: [{{name: c, resources: {{requests: {{{requests}}}}}}}]}}\n\
             status: {{phase: {phase}}}\n---\n"
        )
    }

    fn import(text: &str) -> Result<(Scenario, Imported), ImportError> {
        let snapshot = Snapshot::parse(text, "snap.yaml")?;
        let mut scenario = Scenario::builtin();
        let imported = apply(&mut scenario, &snapshot, "snap.yaml")?;
        Ok((scenario, imported))
    }

    #[test]
    fn nodes_keep_sizes_reservations_and_labels() {
        // (capacity, allocatable) → (cpu, threads, memory GiB, reserved cpu,
        // reserved memory GiB)
        let cases = [
            ("cpu: '16', memory: 64Gi", "cpu: 15600m, memory: 60Gi", (16, 2, 64.0, 0.4, 4.0)),
            ("cpu: '3', memory: 8Gi", "cpu: '3', memory: 8Gi", (3, 1, 8.0, 0.0, 0.0)),
            // A fractional capacity is rounded up; allocatable stays 3500m.
            ("cpu: 3900m, memory: 8Gi", "cpu: 3500m, memory: 7Gi", (4, 2, 8.0, 0.5, 1.0)),
            // Allocatable above capacity: no negative reservation.
            ("cpu: '8', memory: 16Gi", "cpu: '9', memory: 20Gi", (8, 2, 16.0, 0.0, 0.0)),
        ];
        for (capacity, allocatable, (cpu, threads, memory, reserved_cpu, reserved_memory)) in cases
        {
            let text = node("n1", capacity, allocatable, "zone: a, tier: web");
            let (scenario, imported) = import(&text).unwrap();
            assert_eq!(imported.nodes, 1);
            let g = &scenario.cluster.node_groups[0];
            assert_eq!(
                (g.name.as_str(), g.count, g.cpu, g.threads_per_core),
                ("n1", 1, cpu, threads)
            );
            assert!((g.memory_gib - memory).abs() < 1e-9, "{capacity}: {g:?}");
            assert!((g.reserved_cpu - reserved_cpu).abs() < 1e-9, "{capacity}: {g:?}");
            assert!((g.reserved_memory_gib - reserved_memory).abs() < 1e-9, "{capacity}: {g:?}");
            assert_eq!(g.labels.get("zone").map(String::as_str), Some("a"));
            assert_eq!(g.labels.len(), 2);
        }
    }

    #[test]
    fn non_be_active_pods_become_ls_pods() {
        // (labels, requests, phase) → Some((cpu cores, memory GiB)) for an
        // LS pod, None for a skipped one
        let cases = [
            ("koordinator.sh/qosClass: LS", "cpu: '2', memory: 4Gi", "Running", Some((2.0, 4.0))),
            ("koordinator.sh/qosClass: LSR", "cpu: 500m, memory: 1Gi", "Running", Some((0.5, 1.0))),
            ("koordinator.sh/qosClass: LSE", "cpu: '4', memory: 8Gi", "Pending", Some((4.0, 8.0))),
            ("koordinator.sh/qosClass: SYSTEM", "memory: 512Mi", "Running", Some((0.1, 0.5))),
            // No class label: Burstable → LS by Kubernetes QoS.
            ("app: x", "cpu: '1'", "Running", Some((1.0, 0.125))),
            ("koordinator.sh/qosClass: BE", "cpu: '1', memory: 1Gi", "Running", None),
            // BestEffort without a label is BE.
            ("app: x", "", "Running", None),
            ("koordinator.sh/qosClass: LS", "cpu: '1', memory: 1Gi", "Succeeded", None),
            ("koordinator.sh/qosClass: LS", "cpu: '1', memory: 1Gi", "Failed", None),
        ];
        for (labels, requests, phase, want) in cases {
            let text = node("n1", "cpu: '8', memory: 32Gi", "cpu: '8', memory: 32Gi", "")
                + &pod("p", labels, requests, phase);
            let (scenario, imported) = import(&text).unwrap();
            let got = scenario.ls.pods.first().map(|p| (p.cpu, p.memory_gib));
            assert_eq!(got, want, "{labels} {requests} {phase}");
            let skipped = imported.be_skipped + imported.inactive_skipped;
            assert_eq!(
                (imported.ls_pods, skipped),
                (usize::from(want.is_some()), usize::from(want.is_none()))
            );
            if let Some(p) = scenario.ls.pods.first() {
                assert_eq!(p.name, "ns/p");
                assert_eq!(p.mean_cpu_cores, None);
            }
        }
    }

    #[test]
    fn the_example_snapshot() {
        let (scenario, imported) = import(EXAMPLE).unwrap();
        let want = Imported {
            source_name: "snap.yaml".into(),
            nodes: 4,
            ls_pods: 12,
            measured: 4,
            defaulted: 1,
            be_skipped: 2,
            inactive_skipped: 1,
        };
        assert_eq!(imported, want);
        let names: Vec<&str> =
            scenario.cluster.node_groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["cp-1", "worker-a", "worker-b", "worker-c"]);
        assert_eq!(scenario.validate(), Ok(()));
        assert_eq!(scenario.ls.requested_fraction, 0.0);
        assert!(scenario.name.contains("snapshot snap.yaml"), "{}", scenario.name);
        // The built-in scenario's own cluster ("240 nodes of 32 CPUs") is
        // gone from the description with the cluster.
        let d = &scenario.description;
        assert!(!d.contains("240 nodes") && d.contains("snapshot snap.yaml: 4 nodes"), "{d}");
        assert!(d.contains("from the builtin scenario"), "{d}");
        // Measured usage is the curve's mean; the rest follow the model.
        let pod = |name: &str| scenario.ls.pods.iter().find(|p| p.name == name).unwrap();
        let web = pod("shop/web-6d4b9c7f5-2xkqz");
        assert_eq!((web.mean_cpu_cores, web.memory_usage_gib), (Some(0.65), Some(2.5)));
        assert_eq!(pod("shop/checkout-0").cpu, 1.25, "sidecar requests add up");
        assert_eq!(pod("shop/db-0").mean_cpu_cores, None);

        let workload =
            generate(&scenario, ClusterSize { cpu_capacity: 68e3, cpu_allocatable: 66.4e3 });
        assert_eq!(workload.ls.len(), 12);
        let web = &workload.ls[2];
        assert_eq!((web.cpu_request, web.curve.mean), (3000, 650.0));
        let db = workload.ls.iter().find(|p| p.cpu_request == 6000).unwrap();
        assert!(db.curve.mean > 0.0 && db.curve.mean <= 6000.0, "{db:?}");
    }

    #[test]
    fn errors_name_the_file_and_the_object() {
        let n = |cap: &str| node("n1", cap, cap, "");
        let metric = "apiVersion: slo.koordinator.sh/v1alpha1\nkind: NodeMetric\nmetadata: {name: n1}\nspec: {}\n\
                      status: {podsMetric: [{namespace: ns, name: p, podUsage: {resources: {cpu: lots}}}]}\n";
        let cases = [
            (String::new(), "snap.yaml: the snapshot has no Node"),
            (pod("p", "", "cpu: '1'", "Running"), "snap.yaml: the snapshot has no Node"),
            (n("memory: 8Gi"), "snap.yaml: Node n1: status.capacity.cpu: is missing or 0"),
            (n("cpu: '0', memory: 8Gi"), "snap.yaml: Node n1: status.capacity.cpu"),
            (n("cpu: '4'"), "snap.yaml: Node n1: status.capacity.memory"),
            (n("cpu: four, memory: 8Gi"), "snap.yaml"),
            (
                n("cpu: '4', memory: 8Gi") + &n("cpu: '4', memory: 8Gi"),
                "Node n1: metadata.name: appears twice",
            ),
            (
                n("cpu: '4', memory: 8Gi") + metric,
                "snap.yaml: NodeMetric n1: status.podsMetric[0].podUsage",
            ),
        ];
        for (text, want) in cases {
            let e = import(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{want} in {e}");
        }
        // A failed import leaves the scenario as it was.
        let mut scenario = Scenario::builtin();
        let snapshot = Snapshot::parse(&n("memory: 8Gi"), "snap.yaml").unwrap();
        assert!(apply(&mut scenario, &snapshot, "snap.yaml").is_err());
        assert_eq!(scenario, Scenario::builtin());

        let e = load(&mut scenario, &[PathBuf::from("/nonexistent/snap.yaml")]).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/snap.yaml"), "{e}");
    }
}
