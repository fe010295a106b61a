//! Scheduling throughput in the shape of kube-scheduler's `scheduler_perf`
//! SchedulingBasic: 5,000 nodes (4 CPU, 32 Gi, 110 pods), 1,000 pods already
//! running, then 10,000 pods of 100m / 500 Mi scheduled one by one through
//! the full cycle (PreFilter, Filter and Score over the nodes, selection,
//! assume, Reserve, Permit, PreBind, Bind to an in-memory binder). Every
//! node has a NodeMetric with its own usage, so load-aware filtering and
//! scoring do real work. Run with every node scored and with
//! kube-scheduler's adaptive percentage, and at 15,000 nodes / 30,000 pods.
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
    Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
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
}

const fn shape(
    name: &'static str,
    nodes: usize,
    percentage: i32,
    equivalence_cache: bool,
) -> Shape {
    Shape { name, nodes, initial_pods: nodes / 5, pods: nodes * 2, percentage, equivalence_cache }
}

const SHAPES: [Shape; 5] = [
    shape("5000_nodes_10000_pods_score_100pct", 5000, 100, true),
    shape("5000_nodes_10000_pods_score_100pct_no_equivalence_cache", 5000, 100, false),
    shape("5000_nodes_10000_pods_adaptive", 5000, 0, true),
    shape("15000_nodes_30000_pods_score_100pct", 15_000, 100, true),
    shape("15000_nodes_30000_pods_score_100pct_no_equivalence_cache", 15_000, 100, false),
];

fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap()
}

fn quantities(pairs: &[(&str, String)]) -> BTreeMap<String, Quantity> {
    pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.clone()))).collect()
}

fn node(i: usize) -> Node {
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

/// A Deployment-style pod of 100m / 500Mi (Burstable: QoS LS, koord-prod).
fn pod(prefix: &str, i: usize, node: Option<String>) -> Pod {
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
        s.apply_node(node(i), now()).unwrap();
        s.apply_node_metric(node_metric(i), now());
    }
    for i in 0..shape.initial_pods {
        s.apply_pod(pod("running", i, Some(format!("node-{}", i % shape.nodes))), now()).unwrap();
    }
    for i in 0..shape.pods {
        s.apply_pod(pod("pending", i, None), now()).unwrap();
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
        .filter(|s| only.as_deref().is_none_or(|o| o.split(',').any(|n| n == s.name)))
        .collect()
}

const PREEMPTION_BASIC: &str = "preemption_basic_500_nodes_500_pods";
const PREEMPTION_NODES: usize = 500;

/// A pod of `cpu` with an explicit priority (no class label: koord-prod by
/// its QoS).
fn priority_pod(prefix: &str, i: usize, cpu: &str, priority: i32, node: Option<String>) -> Pod {
    let mut p = pod(prefix, i, node);
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
        s.apply_node(node(i), now()).unwrap();
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
