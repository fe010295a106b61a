//! Gang scheduling throughput: one PodGroup of 1,000 pods (minMember
//! 1,000, 100m / 500 Mi each) on 5,000 nodes (4 CPU, 32 Gi, each with a
//! NodeMetric, as in `benches/scheduling.rs`), every node scored. Measured:
//! from the first member popped to all 1,000 handed to the binder — 999
//! members reserved and held at Permit, the last one allowing them all.
//!
//! Run: `cargo bench -p kolo-scheduler --bench coscheduling`
//!
//! A timed pass prints pods/s first (criterion reports the mean per
//! sample).

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
use kolo_api::crd::{NodeMetric, PodGroup, PodGroupSpec};
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::InMemoryBinder;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::framework::SchedulingObject;
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{Outcome, Scheduler};

const NODES: usize = 5000;
const MEMBERS: usize = 1000;

fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap()
}

fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()
}

fn node(i: usize) -> Node {
    let resources = quantities(&[("cpu", "4"), ("memory", "32Gi"), ("pods", "110")]);
    Node {
        metadata: ObjectMeta {
            name: Some(format!("node-{i}")),
            labels: Some(BTreeMap::from([(
                "kubernetes.io/hostname".to_string(),
                format!("node-{i}"),
            )])),
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

/// A NodeMetric whose usage varies from node to node, reported 30 s ago.
fn node_metric(i: usize) -> NodeMetric {
    let cpu_milli = 200 + (i * 7919) % 2200;
    let memory_gib = 3 + (i * 104_729) % 20;
    let updated = now().checked_sub(Duration::from_secs(30)).unwrap();
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("node-{i}")},
        "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 60}},
        "status": {
            "updateTime": updated.to_string(),
            "nodeMetric": {"nodeUsage": {"resources": {"cpu": format!("{cpu_milli}m"), "memory": format!("{memory_gib}Gi")}}},
        }
    }))
    .unwrap()
}

/// Member `i` of PodGroup `bench/job`.
fn member(i: usize) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("job-{i}")),
            namespace: Some("bench".into()),
            uid: Some(format!("uid-job-{i}")),
            creation_timestamp: Some(Time(now())),
            labels: Some(BTreeMap::from([(
                "pod-group.scheduling.sigs.k8s.io".to_string(),
                "job".to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            scheduler_name: Some("kolo-scheduler".into()),
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(&[("cpu", "100m"), ("memory", "500Mi")])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}

/// The cluster loaded, the PodGroup known and its members queued.
fn setup() -> (Scheduler, Arc<InMemoryBinder>) {
    let config = SchedulerConfig::from_yaml("percentageOfNodesToScore: 100\n").unwrap();
    let binder = Arc::new(InMemoryBinder::new());
    let mut s = Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, binder.clone()).unwrap();
    for i in 0..NODES {
        s.apply_node(node(i), now()).unwrap();
        s.apply_node_metric(node_metric(i), now());
    }
    let group = PodGroup {
        metadata: ObjectMeta {
            name: Some("job".into()),
            namespace: Some("bench".into()),
            creation_timestamp: Some(Time(now())),
            ..Default::default()
        },
        spec: PodGroupSpec { min_member: Some(MEMBERS as i32), ..Default::default() },
        status: None,
    };
    s.apply_object(SchedulingObject::PodGroup(Arc::new(group)), now());
    for i in 0..MEMBERS {
        s.apply_pod(member(i), now()).unwrap();
    }
    (s, binder)
}

/// Schedules the gang; returns each cycle's latency (the last cycle
/// allows and binds the 999 members held at Permit).
fn schedule_gang(s: &mut Scheduler, binder: &InMemoryBinder) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(MEMBERS);
    loop {
        let t = Instant::now();
        let Some(report) = s.schedule_next(now()) else { break };
        latencies.push(t.elapsed());
        let last = latencies.len() == MEMBERS;
        match report.outcome {
            Outcome::Waiting { .. } if !last => {}
            Outcome::Scheduled { .. } if last => {}
            other => panic!("cycle {}: {other:?}", latencies.len()),
        }
    }
    assert_eq!(binder.bindings().len(), MEMBERS, "the whole gang is bound");
    latencies
}

fn benches(c: &mut Criterion) {
    let (mut s, binder) = setup();
    let start = Instant::now();
    let latencies = schedule_gang(&mut s, &binder);
    let total = start.elapsed();
    let mut sorted = latencies.clone();
    sorted.sort();
    eprintln!(
        "gang_{MEMBERS}_pods_{NODES}_nodes: {MEMBERS} pods bound in {:.3} s = {:.0} pods/s; \
         first cycle (every node evaluated) {:?}, last (allows the 999 held) {:?}, p50 {:?}; threads {}",
        total.as_secs_f64(),
        MEMBERS as f64 / total.as_secs_f64(),
        latencies[0],
        latencies[MEMBERS - 1],
        sorted[MEMBERS / 2],
        rayon::current_num_threads(),
    );
    let mut group = c.benchmark_group("coscheduling");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.throughput(criterion::Throughput::Elements(MEMBERS as u64));
    group.bench_function(format!("gang_{MEMBERS}_pods_{NODES}_nodes"), |b| {
        b.iter_batched(
            setup,
            |(mut s, binder)| {
                black_box(schedule_gang(&mut s, &binder));
                (s, binder)
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// `criterion_group!` generates an undocumented `pub fn`.
mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::benches);
}
criterion::criterion_main!(group::benches);
