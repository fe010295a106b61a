//! One LowNodeLoad Balance round at scale (issue 22's target: ≤ 100 ms on
//! 2 cores): 5,000 nodes and 50,000 pods (10 per node), every node with a
//! fresh usage report. One node in 20 is hot (cpu 80 % against a 60 % high
//! threshold), one in 4 is normal (45 %), the rest low (20 %); thresholds
//! cpu 30 / 60 %, memory 30 / 70 %, node fit on, the anomaly detector
//! bypassed (consecutiveAbnormalities 1) so every round classifies, fits,
//! sorts and evicts (through an evictor that accepts everything; the
//! cluster does not change, so every iteration does the same work).
//!
//! Run: `cargo bench -p kolo-descheduler --bench balance`

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use kolo_api::PriorityClass;
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::pod::PodView;
use kolo_core::resources::{ResourceName, ResourceVector};
use kolo_core::usage_report::{NodeUsageReport, PodUsage};
use kolo_descheduler::low_node_load::{LowNodeLoad, LowNodeLoadArgs};
use kolo_descheduler::{Cluster, EvictionRequest, Evictor};
use kolo_scheduler::framework::PodInfo;

const NODES: usize = 5_000;
const PODS_PER_NODE: usize = 10;
const GI: i64 = 1 << 30;

struct AcceptAll(usize);

impl Evictor for AcceptAll {
    fn filter(&self, _: &PodInfo) -> Result<(), String> {
        Ok(())
    }
    fn evict(&mut self, _: &PodInfo, _: EvictionRequest) -> Result<(), String> {
        self.0 += 1;
        Ok(())
    }
}

fn cluster(now: Timestamp) -> Cluster {
    let alloc = ResourceVector::cpu_memory(32_000, 128 * GI).with(ResourceName::Pods, 110);
    let classes =
        [PriorityClass::Batch, PriorityClass::Mid, PriorityClass::Prod, PriorityClass::Free];
    let mut nodes = Vec::with_capacity(NODES);
    let mut pods = Vec::with_capacity(NODES * PODS_PER_NODE);
    let mut reports = Vec::with_capacity(NODES);
    for i in 0..NODES {
        let name = format!("node-{i:05}");
        nodes.push(NodeView::new(&name).with_resources(alloc, alloc));
        // Pod cpu usage per pod: hot 2,400m (80 % with 1,600m system),
        // normal 1,280m (45 %), low 480m (20 %).
        let per_pod = match i % 20 {
            0 => 2_400,
            1..=5 => 1_280,
            _ => 480,
        };
        let mut metrics = Vec::with_capacity(PODS_PER_NODE);
        for j in 0..PODS_PER_NODE {
            let pod_name = format!("pod-{i:05}-{j}");
            let class = classes[(i + j) % classes.len()];
            let view = PodView::new("bench", &pod_name)
                .with_node_name(&name)
                .with_priority(class, class.default_priority())
                .with_requests(ResourceVector::cpu_memory(1_000, 4 * GI))
                .with_creation_timestamp(Timestamp::from_second(1_000 + j as i64).unwrap_or(now));
            pods.push(PodInfo::from_parts(Arc::new(Default::default()), view));
            // Vary usage a little so the usage scores differ.
            let cpu = per_pod + (j as i64 - 5) * 40;
            metrics.push(PodUsage {
                key: format!("bench/{pod_name}").into(),
                priority: Some(class),
                usage: ResourceVector::cpu_memory(cpu, 2 * GI).into(),
            });
        }
        reports.push(Arc::new(NodeUsageReport {
            node: name,
            update_time: Some(now),
            node_usage: Some(ResourceVector::EMPTY),
            system_usage: ResourceVector::cpu_memory(1_600, 8 * GI),
            pods: metrics,
            ..Default::default()
        }));
    }
    Cluster::new(nodes, pods, reports)
}

fn main() {
    let now = Timestamp::from_second(1_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
    let cluster = cluster(now);
    let args = LowNodeLoadArgs::from_value(serde_json::json!({
        "lowThresholds": {"cpu": 30, "memory": 30},
        "highThresholds": {"cpu": 60, "memory": 70},
        "anomalyCondition": {"consecutiveAbnormalities": 1},
    }))
    .expect("bench args are valid");
    let mut plugin = LowNodeLoad::new(args).expect("bench args are valid");
    let mut evictor = AcceptAll(0);
    let first = plugin.balance(&cluster, &mut evictor, now);
    println!(
        "one round: {} nodes, {} candidates, {} evicted, stopped {:?}",
        first.iter().map(|r| r.nodes.len()).sum::<usize>(),
        first.iter().map(|r| r.candidates.len()).sum::<usize>(),
        evictor.0,
        first.iter().map(|r| r.stopped.as_str()).collect::<Vec<_>>()
    );
    let mut c = Criterion::default().configure_from_args().sample_size(20);
    c.bench_function("balance_5000_nodes_50000_pods", |b| {
        b.iter(|| black_box(plugin.balance(black_box(&cluster), &mut evictor, now)))
    });
    c.final_summary();
}
