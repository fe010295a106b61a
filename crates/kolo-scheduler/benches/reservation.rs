//! The cost of reservations in the scheduling cycle: 5,000 nodes (4 CPU,
//! 32 Gi, 110 pods), 1,000 reservations of 1 CPU already scheduled (one on
//! each of the first 1,000 nodes, `allocateOnce: false`, each owned by the
//! pods labelled `owner: r-<k>`), then 2,000 pods of 100m / 500 Mi: every
//! other one the owner of one reservation (PreFilter matches it against
//! the 1,000, the node overlay copies the node list, Score normalizes), the
//! others owners of none (PreFilter scans the reservations and skips them;
//! the equivalence cache serves them).
//!
//! Run: `cargo bench -p kolo-scheduler --bench reservation`. A timed pass
//! first prints pods/s and the p50 / p99 cycle latency of each kind of pod.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_api::crd::Reservation;
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::InMemoryBinder;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::plugins::reservation::feed::apply_reservation;
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{Outcome, Scheduler};
use serde_json::json;

const NODES: usize = 5000;
const RESERVATIONS: usize = 1000;
const PODS: usize = 2000;

fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap()
}

fn node(i: usize) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": format!("node-{i}"),
                     "labels": {"kubernetes.io/hostname": format!("node-{i}")}},
        "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                   "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}}
    }))
    .unwrap()
}

/// Reservation `r-<k>`, scheduled on `node-<k>`.
fn reservation(k: usize) -> Reservation {
    serde_json::from_value(json!({
        "metadata": {"name": format!("r-{k}"), "uid": format!("uid-r-{k}"),
                     "creationTimestamp": "2027-01-15T08:00:00Z"},
        "spec": {"template": {"spec": {"schedulerName": "kolo-scheduler",
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
                 "owners": [{"labelSelector": {"matchLabels": {"owner": format!("r-{k}")}}}],
                 "allocateOnce": false, "ttl": "0"},
        "status": {"phase": "Available", "nodeName": format!("node-{k}")}
    }))
    .unwrap()
}

/// Pending pod `i`: an owner of `r-<i/2>` when `i` is even.
fn pod(i: usize) -> Pod {
    let labels: BTreeMap<String, String> = if i.is_multiple_of(2) {
        [("owner".to_string(), format!("r-{}", (i / 2) % RESERVATIONS))].into()
    } else {
        BTreeMap::new()
    };
    serde_json::from_value(json!({
        "metadata": {"name": format!("pod-{i}"), "namespace": "default",
                     "uid": format!("uid-{i}"), "labels": labels},
        "spec": {"schedulerName": "kolo-scheduler",
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]}
    }))
    .unwrap()
}

fn setup() -> Scheduler {
    // Every node scored, as the SchedulingBasic figure (the equivalence
    // cache serves only full passes).
    let config = SchedulerConfig::from_yaml("percentageOfNodesToScore: 100").unwrap();
    let mut s =
        Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, Arc::new(InMemoryBinder::new()))
            .unwrap();
    for i in 0..NODES {
        s.apply_node(node(i), now()).unwrap();
    }
    for k in 0..RESERVATIONS {
        apply_reservation(&mut s, Arc::new(reservation(k)), now()).unwrap();
    }
    for i in 0..PODS {
        s.apply_pod(pod(i), now()).unwrap();
    }
    s
}

/// Schedules every queued pod; returns each one's cycle time and whether
/// it was an owner.
fn schedule_all(s: &mut Scheduler) -> Vec<(bool, Duration)> {
    let mut cycles = Vec::with_capacity(PODS);
    loop {
        let start = Instant::now();
        let Some(report) = s.schedule_next(now()) else { break };
        let took = start.elapsed();
        assert!(matches!(report.outcome, Outcome::Scheduled { .. }), "{report:?}");
        let index = report.pod.strip_prefix("default/pod-").and_then(|n| n.parse::<usize>().ok());
        let owner = index.is_some_and(|n| n.is_multiple_of(2));
        cycles.push((owner, took));
        black_box(report);
    }
    cycles
}

fn report() {
    let mut s = setup();
    let start = Instant::now();
    let cycles = schedule_all(&mut s);
    let total = start.elapsed();
    println!(
        "reservations {RESERVATIONS}, nodes {NODES}: {} pods in {:.3} s = {:.0} pods/s",
        cycles.len(),
        total.as_secs_f64(),
        cycles.len() as f64 / total.as_secs_f64()
    );
    for (owner, name) in [(true, "owners"), (false, "non-owners")] {
        let mut times: Vec<Duration> =
            cycles.iter().filter(|c| c.0 == owner).map(|c| c.1).collect();
        times.sort();
        let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
        println!("  {name}: {} pods, p50 {:?}, p99 {:?}", times.len(), at(0.5), at(0.99));
    }
}

fn benches(c: &mut Criterion) {
    report();
    let mut group = c.benchmark_group("reservation");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.throughput(criterion::Throughput::Elements(PODS as u64));
    group.bench_function("5000_nodes_1000_reservations_2000_pods", |b| {
        b.iter_batched(
            setup,
            |mut s| {
                assert_eq!(schedule_all(&mut s).len(), PODS);
                s
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
