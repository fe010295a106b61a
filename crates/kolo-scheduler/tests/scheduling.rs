//! The scheduler end to end: cluster changes in, cycles, binds out.

use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_core::clock::Timestamp;
use kolo_core::resources::ResourceName;
use kolo_scheduler::binder::{BindCompletion, Binder, InMemoryBinder};
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::framework::Code;
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{ExplainLevel, Outcome, Scheduler};
use proptest::prelude::*;

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn node(name: &str, cpu: &str, memory: &str, extra: &str) -> Node {
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n{extra}\nstatus:\n  allocatable: {{cpu: '{cpu}', memory: '{memory}', pods: '110'}}\n  capacity: {{cpu: '{cpu}', memory: '{memory}', pods: '110'}}\n"
    ))
    .unwrap()
}

fn pod(name: &str, cpu: &str, memory: &str) -> Pod {
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, namespace: ns, uid: u-{name}, labels: {{koordinator.sh/qosClass: LS}}}}\nspec:\n  schedulerName: kolo-scheduler\n  containers:\n  - name: c\n    resources:\n      requests: {{cpu: '{cpu}', memory: '{memory}'}}\n"
    ))
    .unwrap()
}

fn scheduler(binder: Arc<dyn Binder>, config: &str) -> Scheduler {
    let config = SchedulerConfig::from_yaml(config).unwrap();
    Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, binder).unwrap()
}

fn node_of(outcome: &Outcome) -> Option<&str> {
    match outcome {
        Outcome::Scheduled { node, .. } => Some(node),
        _ => None,
    }
}

/// The failure message of an unschedulable pod.
fn unschedulable(outcome: &Outcome) -> Option<&str> {
    match outcome {
        Outcome::Unschedulable { message, .. } => Some(message),
        _ => None,
    }
}

#[test]
fn spreads_by_least_allocated_and_binds() {
    let binder = Arc::new(InMemoryBinder::new());
    let mut s = scheduler(binder.clone(), "{}");
    for n in ["a", "b", "c"] {
        s.apply_node(node(n, "4", "8Gi", ""), t(0)).unwrap();
    }
    for i in 0..6 {
        s.apply_pod(pod(&format!("p{i}"), "1", "1Gi"), t(0)).unwrap();
    }
    let reports = s.run_until_idle(t(0));
    assert_eq!(reports.len(), 6);
    let mut per_node = std::collections::BTreeMap::new();
    for r in &reports {
        *per_node.entry(node_of(&r.outcome).expect("scheduled").to_string()).or_insert(0) += 1;
    }
    assert_eq!(per_node.values().copied().collect::<Vec<_>>(), [2, 2, 2], "{per_node:?}");
    let bindings = binder.bindings();
    assert_eq!(bindings.len(), 6);
    assert_eq!(s.stats().bound, 6);
    // Bound pods left the queue; their requests are counted on the nodes.
    assert_eq!(s.queue().counts(), (0, 0, 0, 0));
    let total: i64 = s.cache().nodes().iter().map(|n| n.requested(ResourceName::Cpu)).sum();
    assert_eq!(total, 6000);
}

#[test]
fn explains_why_a_pod_fits_nowhere_and_retries_when_a_node_arrives() {
    let mut s = scheduler(Arc::new(InMemoryBinder::new()), "{}");
    s.apply_node(node("small-1", "1", "8Gi", ""), t(0)).unwrap();
    s.apply_node(node("small-2", "1", "8Gi", ""), t(0)).unwrap();
    s.apply_node(
        node(
            "tainted",
            "16",
            "64Gi",
            "spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}",
        ),
        t(0),
    )
    .unwrap();
    s.apply_pod(pod("big", "4", "1Gi"), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    let Outcome::Unschedulable { message, nominated, rejections, .. } = &report.outcome else {
        panic!("{report:?}");
    };
    assert_eq!(
        message,
        "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}."
    );
    assert_eq!(nominated, &None);
    // The same counts as data, with each rejection's status code.
    let rows: Vec<_> =
        rejections.iter().map(|r| (r.plugin, r.reason.as_ref(), r.code, r.nodes)).collect();
    assert_eq!(
        rows,
        [
            ("NodeResourcesFit", "Insufficient cpu", Code::Unschedulable, 2),
            (
                "TaintToleration",
                "node(s) had untolerated taint {dedicated: gpu}",
                Code::UnschedulableAndUnresolvable,
                1
            ),
        ]
    );
    assert_eq!(s.queue().counts(), (0, 0, 1, 0));
    // Nothing changed: nothing to retry.
    assert!(s.schedule_next(t(30)).is_none());
    // A node arrives: the pod is retried (after its 1 s backoff) and fits.
    s.apply_node(node("big-1", "8", "16Gi", ""), t(31)).unwrap();
    let report = s.schedule_next(t(31)).unwrap();
    assert_eq!(node_of(&report.outcome), Some("big-1"));
}

#[test]
fn explain_levels_report_nodes() {
    let mut s = scheduler(Arc::new(InMemoryBinder::new()), "{}");
    s.apply_node(node("a", "4", "8Gi", ""), t(0)).unwrap();
    s.apply_node(node("b", "2", "8Gi", ""), t(0)).unwrap();
    s.apply_node(node("c", "1", "8Gi", ""), t(0)).unwrap();
    s.set_explain(ExplainLevel::Top(2));
    s.apply_pod(pod("p", "1500m", "1Gi"), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    let names: Vec<&str> = report.nodes.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(report.nodes[0].total > report.nodes[1].total);
    // ((4000-1500)*100/4000 = 62, (8Gi-1Gi)*100/8Gi = 87) / 2 = 74
    assert_eq!(report.nodes[0].scores.get("NodeResourcesFit"), Some(&74));
    s.set_explain(ExplainLevel::All);
    s.apply_pod(pod("q", "1500m", "1Gi"), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert_eq!(report.nodes.len(), 3);
    let c = report.nodes.iter().find(|n| n.node == "c").unwrap();
    assert!(!c.feasible);
    assert_eq!(c.rejected_by, Some("NodeResourcesFit"));
    assert_eq!(c.reasons, ["Insufficient cpu (cpu: requested 1500, free 1000)"]);
}

#[test]
fn adaptive_percentage_finds_enough_nodes_and_rotates() {
    let mut s = scheduler(Arc::new(InMemoryBinder::new()), "percentageOfNodesToScore: 0");
    for i in 0..1000 {
        s.apply_node(node(&format!("n{i:04}"), "4", "8Gi", ""), t(0)).unwrap();
    }
    // 1000 nodes: 50 − 1000/125 = 42% → 420 nodes.
    s.apply_pod(pod("p1", "100m", "100Mi"), t(0)).unwrap();
    s.apply_pod(pod("p2", "100m", "100Mi"), t(0)).unwrap();
    let r1 = s.schedule_next(t(0)).unwrap();
    let r2 = s.schedule_next(t(0)).unwrap();
    assert_eq!((r1.evaluated_nodes, r1.feasible_nodes), (420, 420));
    assert_eq!((r2.evaluated_nodes, r2.feasible_nodes), (420, 420));
    // The second cycle started where the first stopped: its node is in
    // n0420..n0839.
    let second: usize = node_of(&r2.outcome).unwrap()[1..].parse().unwrap();
    assert!((420..840).contains(&second), "{second}");
}

/// Holds binds until the test finishes them.
#[derive(Default)]
struct HeldBinder {
    held: Mutex<Vec<BindCompletion>>,
}

impl Binder for HeldBinder {
    fn bind(&self, completion: BindCompletion) {
        self.held.lock().unwrap().push(completion);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// However binds interleave with cycles and however many fail, no node
    /// ever has more requested than allocatable, every pod is counted at
    /// most once, and the cache's sums equal the sum of the pods it counts.
    #[test]
    fn concurrent_binds_never_overcommit(
        nodes in prop::collection::vec((1u32..8, 1u32..16), 1..6),
        pods in prop::collection::vec((1u32..4000, 1u32..6000), 1..40),
        steps in prop::collection::vec((0u8..4, any::<bool>(), any::<prop::sample::Index>()), 1..120),
    ) {
        let binder = Arc::new(HeldBinder::default());
        let mut s = scheduler(binder.clone(), "{}");
        for (i, (cpu, gib)) in nodes.iter().enumerate() {
            s.apply_node(node(&format!("n{i}"), &cpu.to_string(), &format!("{gib}Gi"), ""), t(0)).unwrap();
        }
        for (i, (milli, mib)) in pods.iter().enumerate() {
            s.apply_pod(pod(&format!("p{i}"), &format!("{milli}m"), &format!("{mib}Mi")), t(0)).unwrap();
        }
        let mut now = 0;
        for (action, ok, pick) in steps {
            now += 1;
            match action {
                // A cycle.
                0 | 1 => { s.schedule_next(t(now)); }
                // Finish one held bind, successfully or not.
                2 => {
                    let mut held = binder.held.lock().unwrap();
                    if !held.is_empty() {
                        let at = pick.index(held.len());
                        let c = held.remove(at);
                        c.finish(if ok { Ok(()) } else { Err("conflict".into()) });
                    }
                }
                // Time passes (backoffs end); apply finished binds.
                _ => { now += 10; s.process_bind_results(t(now)); }
            }
            for n in s.cache().nodes() {
                for r in [ResourceName::Cpu, ResourceName::Memory] {
                    prop_assert!(n.requested(r) <= n.allocatable(r), "{} over on {r}", n.name());
                }
                let counted: Vec<_> = s.cache().pods().filter(|p| p.node == Some(n.id())).collect();
                let sum: i64 = counted.iter().map(|p| p.info.view().requests().cpu()).sum();
                prop_assert_eq!(sum, n.requested(ResourceName::Cpu));
                prop_assert_eq!(counted.len() as u32, n.pod_count());
            }
            let mut keys: Vec<_> = s.cache().pods().map(|p| p.info.key().to_string()).collect();
            let len = keys.len();
            keys.sort();
            keys.dedup();
            prop_assert_eq!(keys.len(), len);
        }
    }

    /// The same cluster and pods give the same decisions, whatever the
    /// number of threads.
    #[test]
    fn decisions_are_deterministic(
        nodes in prop::collection::vec((1u32..16, 1u32..32), 1..40),
        pods in prop::collection::vec((1u32..3000, 1u32..4000), 1..30),
    ) {
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut s = scheduler(Arc::new(InMemoryBinder::new()), "{}");
                for (i, (cpu, gib)) in nodes.iter().enumerate() {
                    s.apply_node(node(&format!("n{i}"), &cpu.to_string(), &format!("{gib}Gi"), ""), t(0)).unwrap();
                }
                for (i, (milli, mib)) in pods.iter().enumerate() {
                    s.apply_pod(pod(&format!("p{i}"), &format!("{milli}m"), &format!("{mib}Mi")), t(0)).unwrap();
                }
                s.run_until_idle(t(0)).into_iter().map(|r| (r.pod, r.outcome)).collect::<Vec<_>>()
            })
        };
        let one = run(1);
        prop_assert_eq!(&one, &run(1));
        prop_assert_eq!(&one, &run(3));
    }
}

fn metric(
    node: &str,
    cpu_milli: u32,
    mem_gib: u32,
    updated: Timestamp,
) -> kolo_api::crd::NodeMetric {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": node},
        "spec": {},
        "status": {
            "updateTime": updated.to_string(),
            "nodeMetric": {"nodeUsage": {"resources": {"cpu": format!("{cpu_milli}m"), "memory": format!("{mem_gib}Gi")}}},
        }
    }))
    .unwrap()
}

/// Pod shapes for the equivalence property: replicas share a shape.
fn shaped_pod(name: &str, shape: u8) -> Pod {
    let (labels, cpu, memory, extra) = match shape % 5 {
        0 => ("{koordinator.sh/qosClass: LS, app: web}", "500m", "1Gi", ""),
        1 => (
            "{koordinator.sh/qosClass: LS, app: api}",
            "1500m",
            "2Gi",
            "  tolerations: [{key: dedicated, operator: Exists}]\n",
        ),
        2 => ("{app: batch}", "200m", "512Mi", "  nodeSelector: {zone: a}\n"),
        // Big: fits few nodes, and none once they fill up or shrink (the
        // cache keeps infeasible verdicts too).
        4 => ("{app: big}", "6", "8Gi", ""),
        _ => ("{koordinator.sh/qosClass: LSR, app: db}", "2", "4Gi", ""),
    };
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, namespace: ns, uid: u-{name}, labels: {labels}}}\nspec:\n  schedulerName: kolo-scheduler\n{extra}  containers:\n  - name: c\n    resources:\n      requests: {{cpu: '{cpu}', memory: '{memory}'}}\n"
    ))
    .unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    AddPods(u8, u8),
    Schedule(u8),
    Advance(u16),
    Metric(usize, u32, u32),
    DeleteMetric(usize),
    DeletePod(prop::sample::Index),
    Node(usize, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..5, 1u8..4).prop_map(|(s, n)| Op::AddPods(s, n)),
        4 => (1u8..6).prop_map(Op::Schedule),
        1 => (0u16..200).prop_map(Op::Advance),
        2 => (0usize..8, 0u32..8000, 0u32..32).prop_map(|(n, c, m)| Op::Metric(n, c, m)),
        1 => (0usize..8).prop_map(Op::DeleteMetric),
        1 => any::<prop::sample::Index>().prop_map(Op::DeletePod),
        1 => (0usize..8, 0u8..5).prop_map(|(n, k)| Op::Node(n, k)),
    ]
}

fn cluster_node(i: usize, variant: u8) -> Node {
    let extra = match variant {
        1 => "spec: {taints: [{key: dedicated, value: x, effect: NoSchedule}]}",
        2 => "spec: {unschedulable: true}",
        3 => "spec: {taints: [{key: soft, effect: PreferNoSchedule}]}",
        _ => "",
    };
    // Variant 4 only shrinks the allocatable CPU (as the manager's batch
    // resources do): other nodes' cached results stay good.
    let cpu = if variant == 4 { 3 } else { 8 };
    let zone = if i.is_multiple_of(2) { "a" } else { "b" };
    serde_saphyr::from_str(&format!(
        "metadata: {{name: n{i}, labels: {{zone: {zone}}}}}\n{extra}\nstatus:\n  allocatable: {{cpu: '{cpu}', memory: 32Gi, pods: '110'}}\n  capacity: {{cpu: '8', memory: 32Gi, pods: '110'}}\n"
    ))
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The equivalence cache changes only the time a decision takes: with
    /// it on and off, the same cluster changes, pods and times give the
    /// same reports, through pod churn, NodeMetric updates and expiry, node
    /// changes (allocatable only, or taints), and pods that fit nowhere.
    #[test]
    fn equivalence_cache_never_changes_a_decision(
        nodes in 2usize..8,
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let run = |cache: bool| {
            let mut s = scheduler(Arc::new(InMemoryBinder::new()), "{}");
            s.set_equivalence_cache(cache);
            let mut now = 0i64;
            for i in 0..nodes {
                s.apply_node(cluster_node(i, 0), t(now)).unwrap();
                s.apply_node_metric(metric(&format!("n{i}"), (i as u32 * 1300) % 8000, 4, t(now)), t(now));
            }
            let mut reports = Vec::new();
            let mut next = 0;
            let mut placed: Vec<String> = Vec::new();
            for op in &ops {
                match op {
                    Op::AddPods(shape, count) => {
                        for _ in 0..*count {
                            s.apply_pod(shaped_pod(&format!("p{next}"), *shape), t(now)).unwrap();
                            next += 1;
                        }
                    }
                    Op::Schedule(k) => {
                        for _ in 0..*k {
                            if let Some(r) = s.schedule_next(t(now)) {
                                if matches!(r.outcome, Outcome::Scheduled { .. }) {
                                    placed.push(r.pod.clone());
                                }
                                reports.push((now, r.pod, r.outcome, r.feasible_nodes));
                            }
                        }
                    }
                    Op::Advance(secs) => now += i64::from(*secs),
                    Op::Metric(n, cpu, mem) => {
                        if *n < nodes {
                            s.apply_node_metric(metric(&format!("n{n}"), *cpu, *mem, t(now)), t(now));
                        }
                    }
                    Op::DeleteMetric(n) => s.remove_node_metric(&format!("n{n}"), t(now)),
                    Op::DeletePod(pick) => {
                        if !placed.is_empty() {
                            let key = placed.remove(pick.index(placed.len()));
                            s.remove_pod(&key, t(now));
                        }
                    }
                    Op::Node(n, variant) => {
                        if *n < nodes {
                            s.apply_node(cluster_node(*n, *variant), t(now)).unwrap();
                        }
                    }
                }
            }
            reports
        };
        prop_assert_eq!(run(true), run(false));
    }
}

#[test]
fn equivalence_cache_reuses_results_for_replicas() {
    // Same decisions with and without the cache over many replicas, with
    // far fewer node evaluations.
    let build = |cache: bool| {
        let mut s = scheduler(Arc::new(InMemoryBinder::new()), "{}");
        s.set_equivalence_cache(cache);
        for i in 0..50 {
            s.apply_node(cluster_node(i, 0), t(0)).unwrap();
            s.apply_node_metric(metric(&format!("n{i}"), (i as u32 * 997) % 6000, 8, t(0)), t(0));
        }
        for i in 0..200 {
            s.apply_pod(shaped_pod(&format!("p{i}"), (i % 7 == 0) as u8), t(0)).unwrap();
        }
        let decisions =
            s.run_until_idle(t(10)).into_iter().map(|r| (r.pod, r.outcome)).collect::<Vec<_>>();
        (decisions, s.stats())
    };
    let (with, stats_with) = build(true);
    let (without, stats_without) = build(false);
    let (evaluated_with, evaluated_without) =
        (stats_with.node_evaluations, stats_without.node_evaluations);
    assert_eq!(with, without);
    assert_eq!(evaluated_without, 200 * 50, "every node once per cycle");
    assert_eq!(stats_without.node_results_reused, 0);
    // Every node of every cycle is either evaluated or reused.
    assert_eq!(stats_with.node_evaluations + stats_with.node_results_reused, 200 * 50);
    // Two shapes alternate irregularly; each switch re-evaluates all 50
    // nodes, each replica after the first only the node the previous one
    // went to.
    assert!(evaluated_with < evaluated_without / 4, "{evaluated_with}");
}

/// A node with a CPU topology annotation: 1 socket, 2 NUMA nodes, 4 cores
/// per NUMA node, 2 threads per core (CPUs 2k and 2k+1 share core k).
fn numa_node(name: &str) -> Node {
    let detail: Vec<String> = (0..16)
        .map(|cpu| {
            format!("{{\"id\":{cpu},\"core\":{},\"socket\":0,\"node\":{}}}", cpu / 2, cpu / 8)
        })
        .collect();
    let topology = format!("{{\"detail\":[{}]}}", detail.join(","));
    serde_saphyr::from_str(&format!(
        "metadata:\n  name: {name}\n  annotations:\n    node.koordinator.sh/cpu-topology: '{topology}'\nstatus:\n  allocatable: {{cpu: '16', memory: 64Gi, pods: '110'}}\n  capacity: {{cpu: '16', memory: 64Gi, pods: '110'}}\n"
    ))
    .unwrap()
}

fn lsr_pod(name: &str, cpus: u32) -> Pod {
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, namespace: ns, uid: u-{name}, labels: {{koordinator.sh/qosClass: LSR}}}}\nspec:\n  schedulerName: kolo-scheduler\n  containers:\n  - name: c\n    resources:\n      requests: {{cpu: '{cpus}', memory: 1Gi}}\n      limits: {{cpu: '{cpus}', memory: 1Gi}}\n"
    ))
    .unwrap()
}

#[test]
fn lsr_pods_get_disjoint_full_core_cpusets_written_at_prebind() {
    let binder = Arc::new(InMemoryBinder::new());
    let mut s = scheduler(binder.clone(), "{}");
    s.apply_node(numa_node("numa-1"), t(0)).unwrap();
    s.apply_pod(lsr_pod("db-0", 4), t(0)).unwrap();
    s.apply_pod(lsr_pod("db-1", 4), t(0)).unwrap();
    // Not a multiple of whole CPUs: refused before any node is tried.
    s.apply_pod(lsr_pod("odd", 0), t(0)).unwrap();
    let reports = s.run_until_idle(t(0));
    assert_eq!(node_of(&reports[0].outcome), Some("numa-1"), "{reports:?}");
    assert_eq!(node_of(&reports[1].outcome), Some("numa-1"), "{reports:?}");
    let status = |i: usize| -> serde_json::Value {
        let b = &binder.bindings()[i];
        serde_json::from_str(&b.annotations["scheduling.koordinator.sh/resource-status"]).unwrap()
    };
    let (a, b) = (status(0), status(1));
    // FullPCPUs (the default bind policy): two whole cores each, on one
    // NUMA node (LeastAllocated spreads the second pod to the other one).
    assert_eq!(a["cpuset"], "0-3", "{a}");
    assert_eq!(b["cpuset"], "8-11", "{b}");
    // Bound pods keep their CPUs: a pod that needs more than what is left
    // in whole cores fits nowhere.
    s.apply_pod(lsr_pod("db-2", 10), t(1)).unwrap();
    let report = s.schedule_next(t(1)).unwrap();
    assert!(matches!(report.outcome, Outcome::Unschedulable { .. }), "{report:?}");
}

#[test]
fn hot_nodes_are_filtered_by_load() {
    let mut s = scheduler(Arc::new(InMemoryBinder::new()), "{}");
    s.apply_node(node("hot", "8", "32Gi", ""), t(0)).unwrap();
    s.apply_node(node("cool", "8", "32Gi", ""), t(0)).unwrap();
    // 7 of 8 CPUs used: 87.5% → 88% > 65%.
    s.apply_node_metric(metric("hot", 7000, 4, t(0)), t(0));
    s.apply_node_metric(metric("cool", 1000, 4, t(0)), t(0));
    s.apply_pod(pod("p", "100m", "100Mi"), t(10)).unwrap();
    assert_eq!(node_of(&s.schedule_next(t(10)).unwrap().outcome), Some("cool"));
    s.remove_node("cool", t(10));
    s.apply_pod(pod("q", "100m", "100Mi"), t(10)).unwrap();
    let report = s.schedule_next(t(10)).unwrap();
    assert_eq!(
        unschedulable(&report.outcome),
        Some("0/1 nodes are available: 1 node(s) cpu usage exceed threshold.")
    );
    // The metric expires after 180 s: an expired metric rejects the node
    // too (filterExpiredNodeMetrics, the default).
    s.apply_node_metric(metric("hot", 100, 1, t(0)), t(200));
    s.apply_pod(pod("r", "100m", "100Mi"), t(200)).unwrap();
    let report = s.schedule_next(t(200)).unwrap();
    assert!(
        matches!(&report.outcome, Outcome::Unschedulable { message, .. } if message.contains("nodeMetric expired")),
        "{report:?}"
    );
}

/// A Permit plugin that holds every pod for a minute.
struct HoldAll;

impl kolo_scheduler::framework::Plugin for HoldAll {
    fn name(&self) -> &'static str {
        "HoldAll"
    }
    fn extension_points(self: Arc<Self>) -> kolo_scheduler::framework::ExtensionPoints {
        kolo_scheduler::framework::ExtensionPoints::of(self).permit().into()
    }
}

impl kolo_scheduler::framework::Permit for HoldAll {
    fn permit(
        &self,
        _: &kolo_scheduler::framework::CycleContext,
        _: &kolo_scheduler::framework::CycleState,
        _: &kolo_scheduler::framework::PodInfo,
        _: &kolo_scheduler::framework::NodeInfo,
    ) -> kolo_scheduler::framework::PermitOutcome {
        kolo_scheduler::framework::PermitOutcome::Wait(std::time::Duration::from_secs(60))
    }
}

#[test]
fn a_pod_held_at_permit_keeps_its_cycle_state_for_prebind() {
    let mut registry = registry();
    registry.register("HoldAll", |_| Ok(Arc::new(HoldAll)));
    let config = SchedulerConfig::from_yaml(
        "profiles:\n- plugins:\n    permit:\n      enabled: [{name: HoldAll}]\n",
    )
    .unwrap();
    let binder = Arc::new(InMemoryBinder::new());
    let mut s = Scheduler::new(&config, &registry, DEFAULT_PLUGINS, binder.clone()).unwrap();
    s.apply_node(numa_node("numa-1"), t(0)).unwrap();
    s.apply_pod(lsr_pod("db-0", 4), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert_eq!(report.outcome, Outcome::Waiting { node: "numa-1".into() });
    assert!(binder.bindings().is_empty());
    assert!(s.allow_waiting("ns/db-0", t(1)));
    let bindings = binder.bindings();
    assert_eq!(bindings.len(), 1);
    // NodeNUMAResource's PreBind still finds the pod's request and writes
    // the cpuset it reserved.
    let status: serde_json::Value =
        serde_json::from_str(&bindings[0].annotations["scheduling.koordinator.sh/resource-status"])
            .unwrap();
    assert_eq!(status["cpuset"], "0-3");
}

#[test]
fn load_aware_counts_pods_assumed_since_the_last_report() {
    let mut s = scheduler(Arc::new(InMemoryBinder::new()), "{}");
    s.apply_node(node("n", "8", "32Gi", ""), t(0)).unwrap();
    // 4.8 of 8 cores used (60%); each pod is estimated at 500m × 85% = 425m.
    s.apply_node_metric(metric("n", 4800, 4, t(0)), t(0));
    s.apply_pod(pod("first", "500m", "100Mi"), t(10)).unwrap();
    s.apply_pod(pod("second", "500m", "100Mi"), t(10)).unwrap();
    // 4800 + 425 = 5225 → 65%, equal to the threshold: passes.
    assert_eq!(node_of(&s.schedule_next(t(10)).unwrap().outcome), Some("n"));
    // The assumed first pod counts: 4800 + 2 × 425 = 5650 → 71% > 65%.
    let report = s.schedule_next(t(10)).unwrap();
    assert_eq!(
        unschedulable(&report.outcome),
        Some("0/1 nodes are available: 1 node(s) cpu usage exceed threshold.")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A round of NodeMetrics applied at once (LoadAwareScheduling then
    /// re-accounts the nodes in parallel) leaves the scheduler deciding
    /// exactly as when they arrive one by one: same nodes, same messages.
    #[test]
    fn a_round_of_reports_at_once_decides_as_one_by_one(
        rounds in proptest::collection::vec(
            proptest::collection::vec((0usize..6, 0u32..8000, 1u32..30), 1..10),
            1..4,
        ),
        pods in proptest::collection::vec(100u32..3000, 1..12),
    ) {
        let mut one = scheduler(Arc::new(InMemoryBinder::new()), "{}");
        let mut batch = scheduler(Arc::new(InMemoryBinder::new()), "{}");
        for s in [&mut one, &mut batch] {
            for n in 0..6 {
                s.apply_node(node(&format!("n{n}"), "8", "32Gi", ""), t(0)).unwrap();
            }
        }
        for (r, round) in rounds.iter().enumerate() {
            let now = t(r as i64 * 60);
            let metrics: Vec<_> =
                round.iter().map(|&(n, cpu, mem)| metric(&format!("n{n}"), cpu, mem, now)).collect();
            for m in &metrics {
                one.apply_node_metric(m.clone(), now);
            }
            batch.apply_usage_reports(
                metrics.iter().map(kolo_core::usage_report::NodeUsageReport::read),
                now,
            );
        }
        let now = t(rounds.len() as i64 * 60);
        for (i, cpu) in pods.iter().enumerate() {
            for s in [&mut one, &mut batch] {
                s.apply_pod(pod(&format!("p{i}"), &format!("{cpu}m"), "1Gi"), now).unwrap();
            }
        }
        let a: Vec<_> = one.run_until_idle(now).into_iter().map(|r| r.outcome).collect();
        let b: Vec<_> = batch.run_until_idle(now).into_iter().map(|r| r.outcome).collect();
        prop_assert_eq!(a, b);
    }
}

/// Queueing hints: LoadAwareScheduling's rejections are per node, so a
/// NodeMetric update wakes only the pods it rejected on that node, whether
/// the report comes alone or in a round.
#[test]
fn a_node_metric_update_wakes_only_pods_load_aware_rejected_on_that_node() {
    const TAINT: &str = "spec: {taints: [{key: dedicated, value: x, effect: NoSchedule}]}";
    // (case, node a's extra spec, a's cpu use, node whose metric is updated,
    // whether the pod leaves the unschedulable pods)
    let cases = [
        ("LoadAware rejected it on b only; a's metric changes", TAINT, 1000, "a", false),
        ("LoadAware rejected it on b only; b's metric changes", TAINT, 1000, "b", true),
        ("LoadAware rejected it on a and b; a's metric changes", "", 7000, "a", true),
    ];
    for (what, a_spec, a_cpu, updated, wakes) in cases {
        for batch in [false, true] {
            let mut s = scheduler(Arc::new(InMemoryBinder::new()), "{}");
            s.apply_node(node("a", "8", "32Gi", a_spec), t(0)).unwrap();
            s.apply_node(node("b", "8", "32Gi", ""), t(0)).unwrap();
            s.apply_node_metric(metric("a", a_cpu, 4, t(0)), t(0));
            s.apply_node_metric(metric("b", 7000, 4, t(0)), t(0));
            s.apply_pod(pod("p", "100m", "100Mi"), t(0)).unwrap();
            let report = s.schedule_next(t(0)).unwrap();
            assert_eq!(node_of(&report.outcome), None, "{what}: {report:?}");
            assert_eq!(s.queue().counts().2, 1, "{what}: unschedulable");
            // The new report is as hot as the old one: the hint says only
            // that it may help, not that it does.
            let update = metric(updated, 7000, 4, t(20));
            if batch {
                let reports = [kolo_core::usage_report::NodeUsageReport::read(&update)];
                s.apply_usage_reports(reports, t(20));
            } else {
                s.apply_node_metric(update, t(20));
            }
            let still_waiting = s.queue().counts().2 == 1;
            assert_eq!(!still_waiting, wakes, "{what} (batch: {batch})");
        }
    }
}
