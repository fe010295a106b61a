//! Scheduling throughput in the shape of kube-scheduler's `scheduler_perf`
//! SchedulingBasic: 5,000 nodes (4 CPU, 32 Gi, 110 pods), 1,000 pods already
//! running, then 10,000 pods of 100m / 500 Mi scheduled one by one through
//! the full cycle (PreFilter, Filter and Score over the nodes, selection,
//! assume, Reserve, Permit, PreBind, Bind to an in-memory binder). Every
//! node has a NodeMetric with its own usage, so load-aware filtering and
//! scoring do real work. Run with every node scored and with
//! kube-scheduler's adaptive percentage, and at 15,000 nodes / 30,000 pods.
//!
//! Two more shapes follow scheduler_perf's SchedulingPodAntiAffinity and
//! SchedulingPodAffinity (5,000 nodes, every pod with required inter-pod
//! anti-affinity by hostname / affinity by zone).
//! And scheduler_perf's TopologySpreading (5,000 nodes in 3 zones, 5,000
//! pods running, 2,000 pods with a zone spread constraint, every node
//! scored).
//!
//! Run: `cargo bench -p kolo-scheduler --bench scheduling`
//!
//! Each shape runs with kolo's equivalence cache (the default) and, for the
//! full-scoring shapes, without it, so the raw per-node cost is visible too.
//!
//! Before criterion's throughput figures, a timed pass per shape prints
//! pods/s and the p50 / p99 / max per-pod cycle latency (criterion reports
//! means, not tails). `KOLO_BENCH_SHAPES=name,name` limits the shapes.
//!
//! The `_images_host_ports` shape gives every node ten images in
//! `status.images` (each on a third to a tenth of the nodes), every pod one
//! of four images, and every tenth pod a host port (one of 50): the work
//! ImageLocality and NodePorts do for real pods.
//! `PreemptionBasic` (scheduler_perf's shape): 500 nodes full of
//! low-priority pods (4 × 900m each), then 500 pods of higher priority and
//! 3 CPU, each of which must preempt three; the victims are deleted as soon
//! as a cycle names them (as the API would), and the preemptors are retried
//! until all are bound.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use k8s_openapi::api::core::v1::{
    Container, ContainerImage, ContainerPort, Node, NodeSpec, NodeStatus, Pod, PodSpec,
    ResourceRequirements, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use kolo_api::crd::NodeMetric;
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::InMemoryBinder;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{Outcome, Scheduler};

/// One benchmark shape.
#[derive(Clone, Copy)]
struct Shape {
    name: &'static str,
    nodes: usize,
    initial_pods: usize,
    pods: usize,
    percentage: i32,
    equivalence_cache: bool,
    /// Inter-pod affinity terms on every pod, running and pending.
    terms: Terms,
    /// The pending pods carry scheduler_perf's TopologySpreading constraint
    /// (`color: blue`, zone, maxSkew 5, DoNotSchedule).
    spreading: bool,
    /// Node images, pod images and host ports.
    images_host_ports: bool,
}

/// The inter-pod affinity terms of a shape's pods.
#[derive(Clone, Copy, PartialEq)]
enum Terms {
    None,
    /// scheduler_perf's `pod-with-pod-anti-affinity.yaml`: `color: green`,
    /// required anti-affinity to `color In [green]` by hostname.
    AntiAffinity,
    /// scheduler_perf's `pod-with-pod-affinity.yaml`: `foo: ""`, required
    /// affinity to `foo In [""]` by zone.
    Affinity,
}

const fn shape(
    name: &'static str,
    nodes: usize,
    percentage: i32,
    equivalence_cache: bool,
) -> Shape {
    Shape {
        name,
        nodes,
        initial_pods: nodes / 5,
        pods: nodes * 2,
        percentage,
        equivalence_cache,
        terms: Terms::None,
        spreading: false,
        images_host_ports: false,
    }
}

/// scheduler_perf's SchedulingPodAntiAffinity and SchedulingPodAffinity at
/// 5,000 nodes (1,000 and 5,000 running pods, 1,000 pending), every node
/// scored. The equivalence cache is on but cannot serve these pods.
const AFFINITY_SHAPES: [Shape; 2] = [
    Shape {
        initial_pods: 1000,
        pods: 1000,
        terms: Terms::AntiAffinity,
        ..shape("SchedulingPodAntiAffinity_5000_nodes", 5000, 100, true)
    },
    Shape {
        initial_pods: 5000,
        pods: 1000,
        terms: Terms::Affinity,
        ..shape("SchedulingPodAffinity_5000_nodes", 5000, 100, true)
    },
];

const SHAPES: [Shape; 7] = [
    Shape {
        images_host_ports: true,
        ..shape("5000_nodes_10000_pods_score_100pct_images_host_ports", 5000, 100, true)
    },
    shape("5000_nodes_10000_pods_score_100pct", 5000, 100, true),
    shape("5000_nodes_10000_pods_score_100pct_no_equivalence_cache", 5000, 100, false),
    shape("5000_nodes_10000_pods_adaptive", 5000, 0, true),
    shape("15000_nodes_30000_pods_score_100pct", 15_000, 100, true),
    shape("15000_nodes_30000_pods_score_100pct_no_equivalence_cache", 15_000, 100, false),
    // scheduler_perf's TopologySpreading/5000Nodes: 5,000 nodes in 3 zones,
    // 5,000 plain pods running, 2,000 spread pods measured.
    Shape {
        name: "topology_spreading_5000_nodes_2000_pods",
        nodes: 5000,
        initial_pods: 5000,
        pods: 2000,
        percentage: 100,
        equivalence_cache: true,
        terms: Terms::None,
        spreading: true,
        images_host_ports: false,
    },
];

fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap()
}

fn quantities(pairs: &[(&str, String)]) -> BTreeMap<String, Quantity> {
    pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.clone()))).collect()
}

/// Ten images, image `k` on every `(k + 3)`-th node, 100 MB × (k + 1).
fn node_images(i: usize) -> Vec<ContainerImage> {
    (0..10)
        .filter(|k| i.is_multiple_of(k + 3))
        .map(|k| ContainerImage {
            names: Some(vec![format!("registry.example/app-{k}:v1")]),
            size_bytes: Some(100 * 1024 * 1024 * (k as i64 + 1)),
        })
        .collect()
}

fn node(i: usize, images: bool) -> Node {
    let resources =
        quantities(&[("cpu", "4".into()), ("memory", "32Gi".into()), ("pods", "110".into())]);
    Node {
        metadata: ObjectMeta {
            name: Some(format!("node-{i}")),
            labels: Some(BTreeMap::from([
                ("kubernetes.io/hostname".to_string(), format!("node-{i}")),
                ("topology.kubernetes.io/zone".to_string(), format!("zone-{}", i % 3)),
            ])),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(resources.clone()),
            capacity: Some(resources),
            images: images.then(|| node_images(i)),
            ..Default::default()
        }),
    }
}

/// A NodeMetric whose usage varies from node to node (5%–60% CPU,
/// 10%–70% memory), reported 30 s ago.
fn node_metric(i: usize) -> NodeMetric {
    let cpu_milli = 200 + (i * 7919) % 2200;
    let memory_gib = 3 + (i * 104_729) % 20;
    let updated = now().checked_sub(Duration::from_secs(30)).unwrap();
    let value = serde_json::json!({
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": format!("node-{i}")},
        "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 60}},
        "status": {
            "updateTime": updated.to_string(),
            "nodeMetric": {"nodeUsage": {"resources": {"cpu": format!("{cpu_milli}m"), "memory": format!("{memory_gib}Gi")}}},
        }
    });
    serde_json::from_value(value).unwrap()
}

/// scheduler_perf's `pod-with-topology-spreading.yaml`: labelled
/// `color: blue`, at most 5 more of them in one zone than in another.
fn spreading_pod(i: usize) -> Pod {
    let mut pod = pod("spreading", i, None, false);
    pod.metadata.labels = Some(BTreeMap::from([("color".to_string(), "blue".to_string())]));
    let selector = LabelSelector {
        match_labels: Some(BTreeMap::from([("color".to_string(), "blue".to_string())])),
        match_expressions: None,
    };
    pod.spec.as_mut().unwrap().topology_spread_constraints = Some(vec![TopologySpreadConstraint {
        max_skew: 5,
        topology_key: "topology.kubernetes.io/zone".into(),
        when_unsatisfiable: "DoNotSchedule".into(),
        label_selector: Some(selector),
        ..Default::default()
    }]);
    pod
}

/// A Deployment-style pod of 100m / 500Mi (Burstable: QoS LS, koord-prod).
fn pod(prefix: &str, i: usize, node: Option<String>, images_host_ports: bool) -> Pod {
    let requests = quantities(&[("cpu", "100m".into()), ("memory", "500Mi".into())]);
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("{prefix}-{i}")),
            namespace: Some("bench".into()),
            uid: Some(format!("uid-{prefix}-{i}")),
            creation_timestamp: Some(Time(now())),
            ..Default::default()
        },
        spec: Some(PodSpec {
            scheduler_name: Some("kolo-scheduler".into()),
            node_name: node,
            containers: vec![Container {
                name: "c".into(),
                image: images_host_ports.then(|| format!("registry.example/app-{}:v1", i % 4)),
                ports: (images_host_ports && i.is_multiple_of(10)).then(|| {
                    vec![ContainerPort {
                        container_port: 8080,
                        host_port: Some(30_000 + (i / 10 % 50) as i32),
                        ..Default::default()
                    }]
                }),
                resources: Some(ResourceRequirements {
                    requests: Some(requests),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}

/// `pod` with the shape's inter-pod affinity terms and labels.
fn with_terms(mut pod: Pod, terms: Terms) -> Pod {
    let (labels, affinity) = match terms {
        Terms::None => return pod,
        Terms::AntiAffinity => (
            ("color", "green"),
            serde_json::json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchExpressions": [{"key": "color", "operator": "In", "values": ["green"]}]},
                 "topologyKey": "kubernetes.io/hostname"}]}}),
        ),
        Terms::Affinity => (
            ("foo", ""),
            serde_json::json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]},
                 "topologyKey": "topology.kubernetes.io/zone"}]}}),
        ),
    };
    pod.metadata.labels = Some(BTreeMap::from([(labels.0.to_string(), labels.1.to_string())]));
    pod.spec.as_mut().unwrap().affinity = Some(serde_json::from_value(affinity).unwrap());
    pod
}

/// The scheduler with the cluster loaded and the pods queued.
fn setup(shape: Shape) -> Scheduler {
    let config = SchedulerConfig::from_yaml(&format!(
        "percentageOfNodesToScore: {}\nequivalenceCache: {}\n",
        shape.percentage, shape.equivalence_cache
    ))
    .unwrap();
    let mut s =
        Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, Arc::new(InMemoryBinder::new()))
            .unwrap();
    for i in 0..shape.nodes {
        s.apply_node(node(i, shape.images_host_ports), now()).unwrap();
        s.apply_node_metric(node_metric(i), now());
    }
    for i in 0..shape.initial_pods {
        let running =
            pod("running", i, Some(format!("node-{}", i % shape.nodes)), shape.images_host_ports);
        s.apply_pod(with_terms(running, shape.terms), now()).unwrap();
    }
    for i in 0..shape.pods {
        let pending = if shape.spreading {
            spreading_pod(i)
        } else {
            pod("pending", i, None, shape.images_host_ports)
        };
        s.apply_pod(with_terms(pending, shape.terms), now()).unwrap();
    }
    s
}

/// Schedules every queued pod; returns how many were scheduled.
fn schedule_all(s: &mut Scheduler) -> usize {
    let mut scheduled = 0;
    while let Some(report) = s.schedule_next(now()) {
        if matches!(report.outcome, Outcome::Scheduled { .. }) {
            scheduled += 1;
        }
        black_box(report);
    }
    scheduled
}

/// pods/s and per-pod latency percentiles, from one timed pass.
fn latency_report(shape: Shape) {
    let mut s = setup(shape);
    let mut latencies = Vec::with_capacity(shape.pods);
    let start = Instant::now();
    loop {
        let t = Instant::now();
        let Some(report) = s.schedule_next(now()) else { break };
        latencies.push(t.elapsed());
        assert!(matches!(report.outcome, Outcome::Scheduled { .. }), "{report:?}");
    }
    let total = start.elapsed();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    eprintln!(
        "{}: {} pods in {:.3} s = {:.0} pods/s; per-pod latency p50 {:?}, p99 {:?}, max {:?}; threads {}",
        shape.name,
        latencies.len(),
        total.as_secs_f64(),
        latencies.len() as f64 / total.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        latencies.last().unwrap(),
        rayon::current_num_threads(),
    );
}

/// The shapes to run (`KOLO_BENCH_SHAPES` filters by name).
fn shapes() -> Vec<Shape> {
    let only = std::env::var("KOLO_BENCH_SHAPES").ok();
    SHAPES
        .into_iter()
        .chain(AFFINITY_SHAPES)
        .filter(|s| only.as_deref().is_none_or(|o| o.split(',').any(|n| n == s.name)))
        .collect()
}

const PREEMPTION_BASIC: &str = "preemption_basic_500_nodes_500_pods";
const PREEMPTION_NODES: usize = 500;

/// A pod of `cpu` with an explicit priority (no class label: koord-prod by
/// its QoS).
fn priority_pod(prefix: &str, i: usize, cpu: &str, priority: i32, node: Option<String>) -> Pod {
    let mut p = pod(prefix, i, node, false);
    let spec = p.spec.as_mut().unwrap();
    spec.priority = Some(priority);
    let requests = quantities(&[("cpu", cpu.into()), ("memory", "500Mi".into())]);
    spec.containers[0].resources.as_mut().unwrap().requests = Some(requests);
    p
}

/// The PreemptionBasic cluster with the preemptors queued.
fn preemption_setup() -> Scheduler {
    let config = SchedulerConfig::from_yaml("{}").unwrap();
    let mut s =
        Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, Arc::new(InMemoryBinder::new()))
            .unwrap();
    for i in 0..PREEMPTION_NODES {
        s.apply_node(node(i, false), now()).unwrap();
        for k in 0..4 {
            let low = priority_pod("low", i * 4 + k, "900m", 1000, Some(format!("node-{i}")));
            s.apply_pod(low, now()).unwrap();
        }
    }
    for i in 0..PREEMPTION_NODES {
        s.apply_pod(priority_pod("high", i, "3", 2000, None), now()).unwrap();
    }
    s
}

/// Runs cycles, deleting each cycle's victims at once, until every
/// preemptor is scheduled; returns the number of cycles.
fn preempt_all(s: &mut Scheduler) -> usize {
    let (mut cycles, mut scheduled) = (0, 0);
    for round in 0..60 {
        // Each round 11 s later: the preemptors' backoffs (up to 10 s) end.
        let at = now().checked_add(Duration::from_secs(11 * round)).unwrap();
        while let Some(report) = s.schedule_next(at) {
            cycles += 1;
            match &report.outcome {
                Outcome::Scheduled { .. } => scheduled += 1,
                Outcome::Unschedulable { victims, .. } => {
                    for v in victims {
                        s.remove_pod(&v.pod, at);
                    }
                }
                other => panic!("{other:?}"),
            }
        }
        if scheduled == PREEMPTION_NODES {
            return cycles;
        }
    }
    panic!("only {scheduled} of {PREEMPTION_NODES} preemptors scheduled");
}

fn preemption_basic(c: &mut Criterion) {
    let only = std::env::var("KOLO_BENCH_SHAPES").ok();
    if only.as_deref().is_some_and(|o| !o.split(',').any(|n| n == PREEMPTION_BASIC)) {
        return;
    }
    let mut s = preemption_setup();
    let start = Instant::now();
    let cycles = preempt_all(&mut s);
    let total = start.elapsed();
    eprintln!(
        "{PREEMPTION_BASIC}: {PREEMPTION_NODES} preemptors bound in {cycles} cycles, {:.3} s = {:.0} preemptors/s",
        total.as_secs_f64(),
        PREEMPTION_NODES as f64 / total.as_secs_f64(),
    );
    let mut group = c.benchmark_group("preempt");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.throughput(criterion::Throughput::Elements(PREEMPTION_NODES as u64));
    group.bench_function(PREEMPTION_BASIC, |b| {
        b.iter_batched(
            preemption_setup,
            |mut s| {
                black_box(preempt_all(&mut s));
                s
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    for shape in shapes() {
        latency_report(shape);
    }
    let mut group = c.benchmark_group("schedule");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    // The 15,000-node shapes take too long per criterion sample (tens of
    // seconds without the cache); their figures come from the timed pass
    // above.
    for shape in shapes().into_iter().filter(|s| s.nodes <= 5000) {
        group.throughput(criterion::Throughput::Elements(shape.pods as u64));
        group.bench_function(shape.name, |b| {
            b.iter_batched(
                || setup(shape),
                |mut s| {
                    assert_eq!(schedule_all(&mut s), shape.pods);
                    s
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

/// `criterion_group!` generates an undocumented `pub fn`.
mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::benches, super::preemption_basic);
}
criterion::criterion_main!(group::benches);
