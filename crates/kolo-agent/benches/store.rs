//! The agent's metric path at the footprint target's scale: 150 pods × 2
//! containers collected every second.
//!
//! * `record 1 s`: one collection round into the store (node, 150 pods,
//!   300 containers, system);
//! * `build status`: the NodeMetric status from a full store (30 min of
//!   node history, 300 s of pod history) with prodReclaimable;
//! * `train`: one predictor training round (P90 over 1 min per pod).
//!
//! Before the benches it prints the store's and the predictor's memory.

use std::hint::black_box;

use criterion::{Criterion, criterion_main};
use kolo_agent::AgentPod;
use kolo_agent::nodemetric::{CollectPolicy, ProdInputs, StatusInputs, build_status};
use kolo_agent::predictor::reclaimable::ReclaimConfig;
use kolo_agent::predictor::{PredictServer, PredictorConfig};
use kolo_agent::sample::{ContainerSample, NodeSample, PodSample};
use kolo_agent::store::{MetricStore, StoreConfig};
use kolo_api::kube_qos::KubeQoSClass;
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::clock::Timestamp;
use kolo_core::resources::ResourceVector;

const PODS: usize = 150;
const T0: i64 = 1_767_225_600;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(T0 + secs).unwrap()
}

fn pods() -> Vec<AgentPod> {
    (0..PODS)
        .map(|i| AgentPod {
            id: kolo_core::PodRef {
                namespace: format!("ns-{}", i % 7),
                name: format!("pod-{i}"),
                uid: format!("{:08x}-0000-4000-8000-{:012x}", i, i),
            },
            kube_qos: KubeQoSClass::Burstable,
            qos: if i % 3 == 0 { QoSClass::BE } else { QoSClass::LS },
            qos_source: kolo_api::qos::QoSSource::KoordinatorLabel,
            priority_class: if i % 3 == 0 { PriorityClass::Batch } else { PriorityClass::Prod },
            requests: ResourceVector::cpu_memory(500, 1 << 30),
            limits: ResourceVector::new(),
            terminated: false,
            deleting: false,
            created: Some(at(-3 * 86_400)),
            containers: vec![],
        })
        .collect()
}

fn samples(pods: &[AgentPod]) -> (NodeSample, Vec<PodSample>) {
    let node = NodeSample {
        at: at(0),
        cpu_cores: 20.0,
        memory_bytes: 40 << 30,
        memory_with_cache_bytes: 50 << 30,
    };
    let pod_samples = pods
        .iter()
        .enumerate()
        .map(|(i, p)| PodSample {
            at: at(0),
            uid: p.id.uid.clone(),
            cpu_cores: 0.1 + 0.001 * i as f64,
            memory_bytes: (200 + i as u64) << 20,
            memory_with_cache_bytes: (300 + i as u64) << 20,
            containers: (0..2)
                .map(|c| ContainerSample {
                    name: format!("c{c}"),
                    id: format!("{:064x}", i * 2 + c),
                    cpu_cores: 0.05,
                    memory_bytes: 100 << 20,
                })
                .collect(),
        })
        .collect();
    (node, pod_samples)
}

/// Records one round at `t`, with values wobbling so percentiles have work.
fn round(store: &mut MetricStore, node: &mut NodeSample, pods: &mut [PodSample], t: i64) {
    node.at = at(t);
    node.cpu_cores = 20.0 + (t % 17) as f64 * 0.1;
    for (i, p) in pods.iter_mut().enumerate() {
        p.at = node.at;
        p.cpu_cores = 0.1 + ((t + i as i64) % 13) as f64 * 0.01;
    }
    store.record_round(node, pods);
}

fn full_store(pods: &[AgentPod]) -> (MetricStore, i64) {
    let (mut node, mut pod_samples) = samples(pods);
    let mut store = MetricStore::new(StoreConfig::default());
    let end = 1800;
    for t in 0..=end {
        round(&mut store, &mut node, &mut pod_samples, t);
    }
    (store, end)
}

fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn footprint() {
    let pods = pods();
    let before = rss_kib();
    let (store, end) = full_store(&pods);
    let mut predictor = PredictServer::new(PredictorConfig::default());
    predictor.train(&store, &pods, at(end), &mut Vec::new());
    let after = rss_kib();
    let stats = store.stats();
    let mut empty = MetricStore::default();
    let (mut node, _) = samples(&[]);
    round(&mut empty, &mut node, &mut [], 0);
    eprintln!(
        "store: {PODS} pods × 2 containers: {} bytes ({:.1} KiB per pod incl. containers; {} points); without pods: {} bytes; ring capacities node/pod/container/psi {:?}",
        stats.bytes,
        (stats.bytes - empty.approx_bytes()) as f64 / PODS as f64 / 1024.0,
        stats.points,
        empty.approx_bytes(),
        store.ring_capacities(),
    );
    eprintln!(
        "predictor: {} models, {} bytes; RSS growth for store + predictor: {:?} KiB",
        predictor.len(),
        predictor.approx_bytes(),
        before.zip(after).map(|(b, a)| a.saturating_sub(b)),
    );
}

fn agent_metrics(c: &mut Criterion) {
    footprint();
    let pods = pods();

    let (mut store, end) = full_store(&pods);
    let (mut node, mut pod_samples) = samples(&pods);
    let mut t = end;
    c.bench_function("record 1 s (150 pods × 2 containers)", |b| {
        b.iter(|| {
            t += 1;
            round(&mut store, &mut node, &mut pod_samples, t);
        })
    });

    let (store, end) = full_store(&pods);
    let mut predictor = PredictServer::new(PredictorConfig::default());
    predictor.train(&store, &pods, at(end), &mut Vec::new());
    let policy = CollectPolicy::default();
    let alloc = ResourceVector::cpu_memory(64_000, 256 << 30);
    let config = ReclaimConfig::default();
    let mut scratch = Vec::new();
    c.bench_function("build status (150 pods, 30 min)", |b| {
        b.iter(|| {
            let inputs = StatusInputs {
                store: &store,
                pods: &pods,
                policy: &policy,
                prod: Some(ProdInputs {
                    predictions: &predictor,
                    allocatable: &alloc,
                    config: &config,
                }),
                now: at(end),
            };
            black_box(build_status(&inputs, &mut scratch))
        })
    });

    // Always the same minute of data (the store does not move on).
    c.bench_function("train (150 pods)", |b| {
        b.iter(|| black_box(predictor.train(&store, &pods, at(end), &mut scratch)))
    });
}

/// `criterion_group!` generates an undocumented `pub fn`.
mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::agent_metrics);
}
criterion_main!(group::benches);
