//! LowNodeLoad over random clusters and histories (spec §9): whatever the
//! usage, thresholds and evictor say,
//! 1. no pod the evictor's filter forbids is ever evicted;
//! 2. the pods evicted to a target never take it over its high threshold
//!    (node pass: usage vs high; prod pass: prod usage vs prod high);
//! 3. a source stops losing pods once it is no longer over its high
//!    threshold: before every eviction it is still over.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use kolo_api::PriorityClass;
use kolo_core::clock::Timestamp;
use kolo_core::node::{NodeView, Taint, TaintEffect};
use kolo_core::pod::PodView;
use kolo_core::resources::{ResourceName, ResourceVector};
use kolo_core::usage_report::{NodeUsageReport, PodUsage};
use kolo_descheduler::low_node_load::{
    CandidateVerdict, LowNodeLoad, LowNodeLoadArgs, PoolReport, ResourceUsage,
};
use kolo_descheduler::{Cluster, EvictionRequest, Evictor};
use kolo_scheduler::framework::PodInfo;
use proptest::prelude::*;

const GI: i64 = 1 << 30;

#[derive(Debug, Clone)]
struct PodSpec {
    cpu: i64,
    memory: i64,
    request: i64,
    class: PriorityClass,
    has_metric: bool,
    forbidden: bool,
}

#[derive(Debug, Clone)]
struct NodeSpec {
    system_cpu: i64,
    tainted: bool,
    cordoned: bool,
    pods: Vec<PodSpec>,
}

fn pod_spec() -> impl Strategy<Value = PodSpec> {
    (
        0i64..1600,
        0i64..3 * GI,
        0i64..1500,
        prop::sample::select(vec![
            PriorityClass::Prod,
            PriorityClass::Batch,
            PriorityClass::Mid,
            PriorityClass::Free,
        ]),
        prop::bool::weighted(0.9),
        prop::bool::weighted(0.25),
    )
        .prop_map(|(cpu, memory, request, class, has_metric, forbidden)| PodSpec {
            cpu,
            memory,
            request,
            class,
            has_metric,
            forbidden,
        })
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        0i64..800,
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.1),
        prop::collection::vec(pod_spec(), 0..7),
    )
        .prop_map(|(system_cpu, tainted, cordoned, pods)| NodeSpec {
            system_cpu,
            tainted,
            cordoned,
            pods,
        })
}

fn args_value() -> impl Strategy<Value = serde_json::Value> {
    (5.0f64..40.0, 5.0f64..50.0, 5.0f64..40.0, 5.0f64..50.0, prop::bool::ANY, 1u32..3, prop::bool::ANY, 0.0f64..1.0)
        .prop_map(|(cpu_low, cpu_gap, mem_low, mem_gap, deviation, abnormalities, prod, prod_frac)| {
            let cpu_high = cpu_low + cpu_gap;
            let mut v = serde_json::json!({
                "useDeviationThresholds": deviation,
                "lowThresholds": {"cpu": cpu_low, "memory": mem_low},
                "highThresholds": {"cpu": cpu_high, "memory": mem_low + mem_gap},
                "anomalyCondition": {"consecutiveAbnormalities": abnormalities, "consecutiveNormalities": 1},
            });
            if prod {
                let prod_high = cpu_high * (0.3 + 0.7 * prod_frac);
                v["prodLowThresholds"] = serde_json::json!({"cpu": prod_high / 3.0});
                v["prodHighThresholds"] = serde_json::json!({"cpu": prod_high});
            }
            v
        })
}

fn build(nodes: &[NodeSpec], now: Timestamp) -> (Cluster, HashSet<String>) {
    let alloc = ResourceVector::cpu_memory(4000, 8 * GI).with(ResourceName::Pods, 110);
    let mut views = Vec::new();
    let mut pods = Vec::new();
    let mut reports = Vec::new();
    let mut forbidden = HashSet::new();
    for (i, n) in nodes.iter().enumerate() {
        let name = format!("n{i}");
        let mut view =
            NodeView::new(&name).with_resources(alloc, alloc).with_unschedulable(n.cordoned);
        if n.tainted {
            view = view.with_taints(vec![Taint {
                key: "k".into(),
                value: "v".into(),
                effect: TaintEffect::NoSchedule,
            }]);
        }
        views.push(view);
        let mut metrics = Vec::new();
        for (j, p) in n.pods.iter().enumerate() {
            let pod_name = format!("p{i}-{j}");
            let view = PodView::new("ns", &pod_name)
                .with_node_name(&name)
                .with_priority(p.class, p.class.default_priority())
                .with_requests(ResourceVector::cpu_memory(p.request, 0));
            pods.push(PodInfo::from_parts(Arc::new(Default::default()), view));
            if p.forbidden {
                forbidden.insert(format!("ns/{pod_name}"));
            }
            if p.has_metric {
                metrics.push(PodUsage {
                    key: format!("ns/{pod_name}").into(),
                    priority: None,
                    usage: ResourceVector::cpu_memory(p.cpu, p.memory).into(),
                });
            }
        }
        reports.push(Arc::new(NodeUsageReport {
            node: name,
            update_time: Some(now),
            node_usage: Some(ResourceVector::EMPTY),
            system_usage: ResourceVector::cpu_memory(n.system_cpu, GI / 2),
            pods: metrics,
            ..Default::default()
        }));
    }
    (Cluster::new(views, pods, reports), forbidden)
}

struct Recorder<'f> {
    forbidden: &'f HashSet<String>,
    evicted: Vec<String>,
}

impl Evictor for Recorder<'_> {
    fn filter(&self, pod: &PodInfo) -> Result<(), String> {
        if self.forbidden.contains(pod.key()) { Err("forbidden".into()) } else { Ok(()) }
    }
    fn evict(&mut self, pod: &PodInfo, _: EvictionRequest) -> Result<(), String> {
        self.evicted.push(pod.key().to_owned());
        Ok(())
    }
}

fn metric(cluster: &Cluster, node: &str, pod: &str) -> ResourceVector {
    cluster
        .usage(node)
        .and_then(|r| r.pods.iter().find(|p| &*p.key == pod))
        .map(|p| p.usage.to_vector())
        .unwrap_or_default()
}

fn usage_of<'r>(r: &'r PoolReport, node: &str) -> &'r [ResourceUsage] {
    r.nodes.iter().find(|n| n.node == node).map(|n| n.usage.as_slice()).unwrap_or_default()
}

fn amount(v: &ResourceVector, resource: &str) -> i64 {
    ResourceName::lookup(resource).map_or(0, |r| v.value(r))
}

/// Property 2: per target and pass, starting usage + evicted pods ≤ high.
fn check_targets(cluster: &Cluster, r: &PoolReport) -> Result<(), TestCaseError> {
    let mut added: BTreeMap<(String, bool), Vec<ResourceVector>> = BTreeMap::new();
    for c in r.evicted() {
        let target =
            c.target.clone().ok_or_else(|| TestCaseError::fail("evicted without a target"))?;
        added.entry((target, c.prod)).or_default().push(metric(cluster, &c.node, &c.pod));
    }
    for ((target, prod), pods) in added {
        for u in usage_of(r, &target) {
            let start = if prod { u.prod_used } else { u.used };
            let high = if prod { u.prod_high } else { u.high };
            let moved: i64 = pods
                .iter()
                .map(|p| if u.resource == "pods" { 1 } else { amount(p, &u.resource) })
                .sum();
            prop_assert!(
                start + moved <= high,
                "{target} {} prod={prod}: {start} + {moved} > {high}",
                u.resource
            );
        }
    }
    Ok(())
}

/// Property 3: before each eviction from a source, the source is over a
/// high threshold.
fn check_sources(cluster: &Cluster, r: &PoolReport) -> Result<(), TestCaseError> {
    let mut current: BTreeMap<(String, bool), Vec<ResourceUsage>> = BTreeMap::new();
    for c in &r.candidates {
        let key = (c.node.clone(), c.prod);
        let state = current.entry(key).or_insert_with(|| usage_of(r, &c.node).to_vec());
        if let CandidateVerdict::Evicted(_) = c.verdict {
            let over = state
                .iter()
                .any(|u| if c.prod { u.prod_used > u.prod_high } else { u.used > u.high });
            prop_assert!(
                over,
                "{} evicted from {} (prod={}) which is no longer over",
                c.pod,
                c.node,
                c.prod
            );
            let m = metric(cluster, &c.node, &c.pod);
            for u in state.iter_mut() {
                let a = if u.resource == "pods" { 1 } else { amount(&m, &u.resource) };
                u.used -= a;
                if c.prod {
                    u.prod_used -= a;
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn rounds_respect_the_filter_the_targets_and_the_sources(
        history in prop::collection::vec(prop::collection::vec(node_spec(), 2..10), 1..4),
        args in args_value(),
    ) {
        let mut plugin = LowNodeLoad::new(LowNodeLoadArgs::from_value(args).unwrap()).unwrap();
        for (round, nodes) in history.iter().enumerate() {
            let now = Timestamp::from_second(1_000_000 + 10 * round as i64).unwrap();
            let (cluster, forbidden) = build(nodes, now);
            let mut evictor = Recorder { forbidden: &forbidden, evicted: Vec::new() };
            let reports = plugin.balance(&cluster, &mut evictor, now);
            // 1. The filter holds, for the evictor's calls and the report.
            for pod in &evictor.evicted {
                prop_assert!(!forbidden.contains(pod), "{pod} was forbidden");
            }
            let reported: Vec<&str> = reports.iter().flat_map(|r| r.evicted()).map(|c| c.pod.as_str()).collect();
            prop_assert_eq!(reported.len(), evictor.evicted.len());
            for r in &reports {
                check_targets(&cluster, r)?;
                check_sources(&cluster, r)?;
            }
        }
    }
}
