//! The Kubernetes objects the simulated cluster shows the components:
//! Nodes, Pods and NodeMetrics, built the way the API server and the agent
//! would present them, so the components read them with their own code.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::SignedDuration;
use kolo_api::{PriorityClass, names};
use kolo_core::CpuMem;
use kolo_core::clock::Timestamp;
use kolo_core::compact_vector::CompactVector;
use kolo_core::pod::{PodPhase, PodView};
use kolo_core::resources::ResourceVector;
use kolo_core::usage_report::{NodeUsageReport, PodUsage as ReportedPod};
use kolo_manager::noderesource::ExtendedResources;
use kolo_scheduler::framework::PodInfo;

/// The scheduler name every simulated pod asks for (the profiles' name).
pub const SCHEDULER_NAME: &str = "kolo-scheduler";
/// Namespace of LS pods.
pub const LS_NAMESPACE: &str = "online";
/// Namespace of batch pods.
pub const BATCH_NAMESPACE: &str = "batch";
/// `spec.priority` of LS pods (koord-prod band).
pub const LS_PRIORITY: i32 = 9500;
/// `spec.priority` of batch pods under co-location (koord-batch band).
pub const BATCH_PRIORITY: i32 = 5500;

fn quantity(s: String) -> Quantity {
    Quantity(s)
}

/// A node's capacity and allocatable (CPU milli, memory bytes, pods), plus
/// the co-location resources `extended` publishes.
pub fn node_object(
    name: &str,
    labels: &BTreeMap<String, String>,
    capacity: CpuMem,
    allocatable: CpuMem,
    extended: &ExtendedResources,
    created: Timestamp,
) -> Node {
    let list = |cpu: i64, memory: i64| {
        BTreeMap::from([
            ("cpu".to_string(), quantity(format!("{cpu}m"))),
            ("memory".to_string(), quantity(memory.to_string())),
            ("pods".to_string(), quantity("250".to_string())),
        ])
    };
    let mut alloc = list(allocatable.cpu, allocatable.memory);
    let mut cap = list(capacity.cpu, capacity.memory);
    for r in kolo_manager::noderesource::ColocationResource::ALL {
        if let Some(v) = extended.get(r) {
            alloc.insert(r.name().to_string(), quantity(r.quantity(v)));
            cap.insert(r.name().to_string(), quantity(r.quantity(v)));
        }
    }
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(labels.clone()),
            creation_timestamp: Some(Time(created)),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            capacity: Some(cap),
            allocatable: Some(alloc),
            conditions: Some(vec![k8s_openapi::api::core::v1::NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

/// What a simulated pod is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodClass {
    /// An LS service replica (koord-prod, QoS LS).
    Ls,
    /// A batch pod requesting `kubernetes.io/batch-*` (koord-batch, QoS BE).
    Batch,
    /// A batch pod requesting plain `cpu` / `memory` (Kubernetes defaults).
    Native,
}

/// A pending pod of one container with equal requests and limits.
pub fn pod_object(
    namespace: &str,
    name: &str,
    uid: &str,
    class: PodClass,
    cpu_milli: i64,
    memory: i64,
    created: Timestamp,
) -> Pod {
    let (cpu_name, mem_name, cpu_value) = match class {
        PodClass::Ls | PodClass::Native => ("cpu", "memory", format!("{cpu_milli}m")),
        // batch-cpu counts milli-cores as its unit.
        PodClass::Batch => {
            (names::resource::BATCH_CPU, names::resource::BATCH_MEMORY, cpu_milli.to_string())
        }
    };
    let list = BTreeMap::from([
        (cpu_name.to_string(), quantity(cpu_value)),
        (mem_name.to_string(), quantity(memory.to_string())),
    ]);
    let mut labels = BTreeMap::new();
    let (priority, class_name) = match class {
        PodClass::Ls => {
            labels.insert(names::label::QOS_CLASS.to_string(), "LS".to_string());
            (Some(LS_PRIORITY), Some(names::priority::PROD.to_string()))
        }
        PodClass::Batch => {
            labels.insert(names::label::QOS_CLASS.to_string(), "BE".to_string());
            (Some(BATCH_PRIORITY), Some(names::priority::BATCH.to_string()))
        }
        PodClass::Native => (None, None),
    };
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            uid: Some(uid.to_string()),
            labels: Some(labels),
            creation_timestamp: Some(Time(created)),
            ..Default::default()
        },
        spec: Some(PodSpec {
            scheduler_name: Some(SCHEDULER_NAME.to_string()),
            priority,
            priority_class_name: class_name,
            containers: vec![Container {
                name: "main".to_string(),
                resources: Some(ResourceRequirements {
                    requests: Some(list.clone()),
                    limits: Some(list),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus { phase: Some("Pending".to_string()), ..Default::default() }),
    }
}

/// Makes `pod` what the API reports once it is bound to `node` and started.
pub fn bind(pod: &mut Pod, node: &str) {
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = Some(node.to_string());
    }
    pod.status = Some(PodStatus { phase: Some("Running".to_string()), ..Default::default() });
}

/// The scheduler's `pending` pod as the API shows it once bound to `node`
/// and started ([`bind`]): the view is the pending one with the node and
/// phase set, which is what reading the bound object gives (tested below),
/// without parsing its quantities again.
pub fn bound_info(pending: &PodInfo, node: &str) -> PodInfo {
    let mut pod = Pod::clone(pending.pod_arc());
    bind(&mut pod, node);
    let view = pending.view().clone().with_node_name(node).with_phase(PodPhase::Running);
    PodInfo::from_parts(Arc::new(pod), view)
}

/// CPU cores and memory bytes as a report states them: milli-cores and
/// bytes, rounded (what reading the agent's quantities gives).
pub fn reported_amounts(cpu_cores: f64, memory_bytes: f64) -> CpuMem {
    CpuMem::new((cpu_cores * 1000.0).round() as i64, memory_bytes.round() as i64)
}

/// One pod's entry of a usage report (window averages).
#[derive(Debug, Clone, Copy)]
pub struct PodUsage<'a> {
    /// The pod.
    pub view: &'a PodView,
    /// Whether the pod is koord-batch (reported with that priority).
    pub batch: bool,
    /// Average CPU, cores.
    pub cpu: f64,
    /// Average memory, bytes.
    pub memory: f64,
}

/// A node's usage report as its agent reports it, read
/// ([`NodeUsageReport::read`]): node, system and pod usage averaged over
/// the report window (CPU to the milli-core, memory to the byte), stamped
/// `now`, stating the report interval (`interval_seconds`, which
/// LoadAwareScheduling uses to tell which pods the report may miss).
///
/// Built from the numbers directly: it is the report that reading the
/// agent's NodeMetric gives (tested below), without formatting a thousand
/// nodes' quantities into strings every minute for the components to parse
/// back.
///
/// Written over `report`: an earlier report of the node
/// ([`crate::report_recycler`]) or an empty one. The result is the same
/// (tested below); an earlier report keeps its allocations and the keys of
/// pods listed at the same place again.
pub fn fill_usage_report<'p>(
    report: &mut NodeUsageReport,
    node: &str,
    node_usage: (f64, f64),
    system_usage: (f64, f64),
    pods: impl Iterator<Item = PodUsage<'p>>,
    interval_seconds: u64,
    now: Timestamp,
) {
    let vector = |(cpu, memory): (f64, f64)| {
        let CpuMem { cpu, memory } = reported_amounts(cpu, memory);
        ResourceVector::cpu_memory(cpu, memory)
    };
    // Every field, so that a field added to the report is not left stale.
    let NodeUsageReport {
        node: name,
        update_time,
        report_interval,
        node_usage: node_vector,
        system_usage: system_vector,
        aggregated_node_usages,
        prod_reclaimable,
        pods: reported,
        host_apps,
        errors,
    } = report;
    if name != node {
        node.clone_into(name);
    }
    *update_time = Some(now);
    *report_interval =
        Some(SignedDuration::from_secs(i64::try_from(interval_seconds).unwrap_or(i64::MAX)));
    *node_vector = Some(vector(node_usage));
    *system_vector = vector(system_usage);
    aggregated_node_usages.clear();
    *prod_reclaimable = None;
    host_apps.clear();
    errors.clear();
    let mut listed = 0;
    for p in pods {
        let key = p.view.shared_key();
        let priority = Some(if p.batch { PriorityClass::Batch } else { PriorityClass::Prod });
        let CpuMem { cpu, memory } = reported_amounts(p.cpu, p.memory);
        let usage = CompactVector::cpu_memory(cpu, memory);
        match reported.get_mut(listed) {
            Some(entry) => {
                if !Arc::ptr_eq(&entry.key, key) {
                    entry.key = key.clone();
                }
                entry.priority = priority;
                entry.usage = usage;
            }
            None => reported.push(ReportedPod { key: key.clone(), priority, usage }),
        }
        listed += 1;
    }
    reported.truncate(listed);
}

#[cfg(test)]
mod tests {
    use kolo_agent::nodemetric::{cpu_quantity, memory_quantity};
    use kolo_api::QoSClass;
    use kolo_api::crd::{
        NodeMetric, NodeMetricCollectPolicy, NodeMetricInfo, NodeMetricSpec, NodeMetricStatus,
        PodMetricInfo, ResourceMap,
    };
    use kolo_core::node::NodeView;
    use kolo_core::pod::PodView;
    use kolo_core::resources::ResourceName;

    use super::*;

    fn usage_map(cpu: f64, memory: f64) -> ResourceMap {
        ResourceMap {
            resources: Some(BTreeMap::from([
                ("cpu".to_string(), cpu_quantity(cpu)),
                ("memory".to_string(), memory_quantity(memory)),
            ])),
            devices: None,
        }
    }

    /// A node's NodeMetric as its agent reports it: node, system and pod
    /// usage averaged over the report window, stamped `now`.
    fn node_metric<'p>(
        node: &str,
        node_usage: (f64, f64),
        system_usage: (f64, f64),
        pods: impl Iterator<Item = PodUsage<'p>>,
        interval_seconds: i64,
        now: Timestamp,
    ) -> NodeMetric {
        let pods_metric = pods
            .map(|p| PodMetricInfo {
                name: Some(p.view.name().to_string()),
                namespace: Some(p.view.namespace().to_string()),
                pod_usage: Some(usage_map(p.cpu, p.memory)),
                priority: Some(
                    if p.batch { names::priority::BATCH } else { names::priority::PROD }
                        .to_string(),
                ),
                qos: Some(if p.batch { "BE" } else { "LS" }.to_string()),
                extensions: None,
            })
            .collect();
        let policy = NodeMetricCollectPolicy {
            report_interval_seconds: Some(interval_seconds),
            ..Default::default()
        };
        let spec = NodeMetricSpec { metric_collect_policy: Some(policy) };
        let mut metric = NodeMetric::new(node, spec);
        metric.status = Some(NodeMetricStatus {
            update_time: Some(Time(now)),
            node_metric: Some(NodeMetricInfo {
                node_usage: Some(usage_map(node_usage.0, node_usage.1)),
                aggregated_node_usages: None,
                system_usage: Some(usage_map(system_usage.0, system_usage.1)),
                aggregated_system_usages: None,
                numa_usages: None,
            }),
            pods_metric: Some(pods_metric),
            host_application_metric: None,
            prod_reclaimable_metric: None,
            prod_peak_metric: None,
        });
        metric
    }

    /// A report filled into an empty one.
    fn fresh(fill: impl FnOnce(&mut NodeUsageReport)) -> NodeUsageReport {
        let mut report = NodeUsageReport::default();
        fill(&mut report);
        report
    }

    #[test]
    fn the_usage_report_is_what_the_agents_node_metric_reads_as() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let (web, job) = (PodView::new("online", "web"), PodView::new("batch", "job"));
        let pods = || {
            [
                PodUsage { view: &web, batch: false, cpu: 1.2345, memory: 1.5e9 },
                PodUsage { view: &job, batch: true, cpu: 0.0004, memory: 1023.5 },
            ]
            .into_iter()
        };
        let (node, system) = ((3.14259, 8.5e9), (0.25, 1e8));
        let built = fresh(|r| fill_usage_report(r, "n1", node, system, pods(), 30, now));
        let read = NodeUsageReport::read(&node_metric("n1", node, system, pods(), 30, now));
        assert_eq!(built, read);
        assert_eq!(built.node_usage.unwrap().cpu(), 3143, "rounded to the milli-core");
        assert_eq!(built.pods[1].usage.memory(), 1024, "rounded to the byte");
        assert!(matches!(built.pods[1].usage, CompactVector::CpuMemory { .. }));
    }

    #[test]
    fn a_bound_pod_reads_as_the_pending_one_on_its_node() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        for class in [PodClass::Ls, PodClass::Batch, PodClass::Native] {
            let pending = pod_object("ns", "p", "u1", class, 2000, 1 << 30, now);
            let info = bound_info(&PodInfo::new(pending.clone()).unwrap(), "n7");
            let mut bound = pending;
            bind(&mut bound, "n7");
            let read = PodInfo::new(bound.clone()).unwrap();
            assert_eq!(*info.pod_arc().as_ref(), bound, "{class:?}");
            assert_eq!(info.view(), read.view(), "{class:?}");
            assert_eq!(info.view().node_name(), Some("n7"));
            assert_eq!(info.view().phase(), PodPhase::Running);
        }
    }

    #[test]
    fn a_refilled_report_is_the_fresh_one() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let views: Vec<PodView> =
            (0..6).map(|i| PodView::new("batch", &format!("job-{i}"))).collect();
        let usage = |order: &[usize], k: f64| -> Vec<PodUsage<'_>> {
            order
                .iter()
                .map(|&i| PodUsage {
                    view: &views[i],
                    batch: i % 2 == 0,
                    cpu: k * i as f64,
                    memory: k * 1e6,
                })
                .collect()
        };
        // Same pods, pods replaced in place (a swap_remove), fewer, more.
        let rounds: [&[usize]; 5] =
            [&[0, 1, 2, 3], &[0, 1, 2, 3], &[0, 4, 2], &[5], &[5, 1, 2, 3, 4]];
        let mut recycled = fresh(|r| {
            fill_usage_report(
                r,
                "old",
                (9.0, 9.0),
                (1.0, 1.0),
                usage(&[1, 2], 7.0).into_iter(),
                30,
                now,
            )
        });
        recycled.aggregated_node_usages.push(kolo_core::usage_report::AggregatedNodeUsage {
            duration: std::time::Duration::from_secs(300),
            statistic: kolo_api::crd::AggregationType::P95,
            usage: ResourceVector::cpu_memory(1, 1),
        });
        for (k, order) in rounds.iter().enumerate() {
            let k = k as f64 + 1.0;
            let (node, system) = ((k, 2.0 * k), (0.1 * k, k));
            let want = fresh(|r| {
                fill_usage_report(r, "n1", node, system, usage(order, k).into_iter(), 60, now)
            });
            fill_usage_report(
                &mut recycled,
                "n1",
                node,
                system,
                usage(order, k).into_iter(),
                60,
                now,
            );
            assert_eq!(recycled, want, "round {k}");
            for (r, i) in recycled.pods.iter().zip(order.iter()) {
                assert!(Arc::ptr_eq(&r.key, views[*i].shared_key()), "shared key");
            }
        }
    }

    #[test]
    fn components_read_the_objects_as_meant() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        // (class, expected QoS, priority class, cpu resource)
        let cases = [
            (PodClass::Ls, QoSClass::LS, PriorityClass::Prod, ResourceName::Cpu),
            (PodClass::Batch, QoSClass::BE, PriorityClass::Batch, ResourceName::BatchCpu),
            // A plain Guaranteed pod with whole CPUs: kolo reads it as LSR /
            // prod; only the baseline uses it, which runs no agent.
            (PodClass::Native, QoSClass::LSR, PriorityClass::Prod, ResourceName::Cpu),
        ];
        for (class, qos, prio, cpu) in cases {
            let p = pod_object("ns", "p", "u1", class, 2000, 1 << 30, now);
            let v = PodView::from_pod(&p).unwrap();
            assert_eq!((v.qos(), v.priority_class()), (qos, prio), "{class:?}");
            assert_eq!(v.requests().get(cpu), Some(2000), "{class:?}");
        }
        let ext = ExtendedResources { batch_cpu: Some(5000), ..ExtendedResources::NONE };
        let n = node_object(
            "n",
            &BTreeMap::new(),
            CpuMem::new(8000, 1 << 34),
            CpuMem::new(7000, 1 << 33),
            &ext,
            now,
        );
        let v = NodeView::from_node(&n).unwrap();
        assert_eq!(v.allocatable().get(ResourceName::BatchCpu), Some(5000));
        assert_eq!(v.allocatable().get(ResourceName::Cpu), Some(7000));
    }
}
