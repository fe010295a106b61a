//! Worked examples of the batch and mid formulas with hand-checked
//! arithmetic, the degradation cases, and property tests.
//!
//! Units: CPU in milli-cores (`100_000` = 100 cores), memory in bytes
//! (`G` = 10^9, `GI` = 2^30).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kolo_api::crd::NodeMetric;
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::pod::{PodPhase, PodView, StringMap};
use kolo_core::resources::ResourceVector;
use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::config::{CalculatePolicy, ColocationCfg, ColocationStrategy};

const G: i64 = 1_000_000_000;
const GI: i64 = 1 << 30;
const NOW: &str = "2026-11-22T04:00:00Z";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

fn enabled() -> ColocationStrategy {
    ColocationStrategy { enable: Some(true), ..ColocationStrategy::defaults() }
}

/// The spec's strategy: both reclaim thresholds 65.
fn spec_strategy() -> ColocationStrategy {
    ColocationStrategy {
        cpu_reclaim_threshold_percent: Some(65),
        memory_reclaim_threshold_percent: Some(65),
        ..enabled()
    }
}

fn node(cpu: i64, memory: i64) -> NodeView {
    NodeView::new("n1").with_resources(
        ResourceVector::cpu_memory(cpu, memory),
        ResourceVector::cpu_memory(cpu, memory),
    )
}

fn pod(name: &str, class: PriorityClass, qos: QoSClass, cpu: i64, memory: i64) -> PodView {
    PodView::new("default", name)
        .with_node_name("n1")
        .with_phase(PodPhase::Running)
        .with_qos(qos)
        .with_priority(class, class.default_priority())
        .with_requests(ResourceVector::cpu_memory(cpu, memory))
}

fn ls(name: &str, cpu: i64, memory: i64) -> PodView {
    pod(name, PriorityClass::Prod, QoSClass::LS, cpu, memory)
}

fn be(name: &str) -> PodView {
    pod(name, PriorityClass::Batch, QoSClass::BE, 0, 0)
}

/// A NodeMetric builder; amounts in milli-cores and bytes.
#[derive(Default)]
struct Metric {
    updated: Option<&'static str>,
    system: Option<(i64, i64)>,
    node_usage: Option<serde_json::Value>,
    pods: Vec<serde_json::Value>,
    host_apps: Vec<serde_json::Value>,
    prod_reclaimable: Option<(i64, i64)>,
}

fn list(cpu: i64, memory: i64) -> serde_json::Value {
    json!({"resources": {"cpu": format!("{cpu}m"), "memory": memory.to_string()}})
}

impl Metric {
    fn new() -> Metric {
        Metric { updated: Some(NOW), ..Metric::default() }
    }
    fn system(mut self, cpu: i64, memory: i64) -> Self {
        self.system = Some((cpu, memory));
        self
    }
    fn node_usage(mut self, cpu: i64, memory: i64) -> Self {
        self.node_usage = Some(list(cpu, memory));
        self
    }
    fn pod(mut self, name: &str, priority: &str, cpu: i64, memory: i64) -> Self {
        self.pods.push(json!({"namespace": "default", "name": name, "priority": priority,
                              "podUsage": list(cpu, memory)}));
        self
    }
    fn host_app(mut self, name: &str, priority: &str, cpu: i64, memory: i64) -> Self {
        self.host_apps
            .push(json!({"name": name, "priority": priority, "usage": list(cpu, memory)}));
        self
    }
    fn prod_reclaimable(mut self, cpu: i64, memory: i64) -> Self {
        self.prod_reclaimable = Some((cpu, memory));
        self
    }
    fn build(self) -> NodeMetric {
        let mut status = json!({
            "nodeMetric": {"systemUsage": self.system.map_or(json!({}), |(c, m)| list(c, m))},
            "podsMetric": self.pods,
            "hostApplicationMetric": self.host_apps,
        });
        if let Some(t) = self.updated {
            status["updateTime"] = json!(t);
        }
        if let Some(u) = self.node_usage {
            status["nodeMetric"]["nodeUsage"] = u;
        }
        if let Some((c, m)) = self.prod_reclaimable {
            status["prodReclaimableMetric"] = json!({"resource": list(c, m)});
        }
        serde_json::from_value(json!({"metadata": {"name": "n1"}, "spec": {}, "status": status}))
            .unwrap()
    }
}

fn run(
    node: &NodeView,
    pods: &[PodView],
    metric: Option<&NodeMetric>,
    strategy: &ColocationStrategy,
) -> NodeResource {
    let pods: Vec<&PodView> = pods.iter().collect();
    let report = metric.map(NodeUsageReport::read);
    calculate(&NodeInputs {
        node,
        pods: &pods,
        metric: report.as_ref(),
        strategy,
        cluster_enabled: true,
        now: now(),
    })
}

fn batch(r: &NodeResource) -> &BatchTerms {
    r.batch.as_ref().unwrap_or_else(|| panic!("not computed: {:?}", r.reset))
}

fn mid(r: &NodeResource) -> &MidTerms {
    r.mid.as_ref().unwrap_or_else(|| panic!("not computed: {:?}", r.reset))
}

/// The spec's worked example (`TestPluginCalculate`, "calculate with memory
/// usage"): capacity 100 cores / 120G, both thresholds 65.
///
/// * podA: LS, request 20 / 20G, usage 11 / 11G;
/// * podB: BE (batch), usage 5 / 5G: skipped, but its metric is consumed;
/// * podC: no QoS label, Guaranteed → LSR → prod, Pending, request 25 / 25G,
///   usage 22 / 22G;
/// * podD: LS, Succeeded, no metric: ignored.
fn spec_example() -> (NodeView, Vec<PodView>, NodeMetric) {
    let pods = vec![
        ls("podA", 20_000, 20 * G),
        be("podB"),
        pod("podC", PriorityClass::Prod, QoSClass::LSR, 25_000, 25 * G)
            .with_phase(PodPhase::Pending),
        ls("podD", 10_000, 10 * G).with_phase(PodPhase::Succeeded),
    ];
    let metric = Metric::new()
        .system(7_000, 12 * G)
        .pod("podA", "koord-prod", 11_000, 11 * G)
        .pod("podB", "koord-batch", 5_000, 5 * G)
        .pod("podC", "koord-prod", 22_000, 22 * G)
        .build();
    (node(100_000, 120 * G), pods, metric)
}

#[test]
fn spec_worked_example() {
    let (node, pods, metric) = spec_example();
    let r = run(&node, &pods, Some(&metric), &spec_strategy());
    let b = batch(&r);
    // margin = 100 × 0.35 = 35 cores; 120G × 0.35 = 42G.
    assert_eq!(b.safety_margin, CpuMem::new(35_000, 42 * G));
    assert_eq!(b.node_reserved, CpuMem::ZERO, "allocatable = capacity");
    // sysUsedOrReserved = max(7 / 12G, 0) = 7 / 12G.
    assert_eq!(b.sys_used_or_reserved, CpuMem::new(7_000, 12 * G));
    // HPUsed = podA 11 + podC 22 = 33 cores / 33G.
    assert_eq!(b.hp_used, CpuMem::new(33_000, 33 * G));
    // HPRequest = 20 + 25 = 45 / 45G; HPMaxUsedReq = max(20,11) + max(25,22) = 45 / 45G.
    assert_eq!(b.hp_request, CpuMem::new(45_000, 45 * G));
    assert_eq!(b.hp_max_used_request, CpuMem::new(45_000, 45 * G));
    // batch-cpu = 100 − 35 − 7 − 33 = 25 cores; batch-memory = 120 − 42 − 12 − 33 = 33G.
    assert_eq!(b.by_usage, CpuMem::new(25_000, 33 * G));
    assert_eq!(r.resources.batch_cpu, Some(25_000));
    assert_eq!(r.resources.batch_memory, Some(33 * G));
    let p = &b.pods;
    assert_eq!((p.high_priority, p.low_priority, p.terminated, p.dangling), (2, 1, 1, 0));
    assert_eq!(p.without_metric, 0);
}

#[test]
fn each_policy_on_the_spec_example() {
    let (node, pods, metric) = spec_example();
    use CalculatePolicy::{MaxUsageRequest as Max, Request, Usage};
    // byUsage   = (25 cores, 33G)                         (above)
    // byRequest = 100 − 35 − 0 − 45 = 20 cores; 120 − 42 − 0 − 45 = 33G
    //             (the memory coincides with byUsage on this example)
    // byMaxUR   = 100 − 35 − 7 − 45 = 13 cores; 120 − 42 − 12 − 45 = 21G
    let cases = [
        (Usage, Usage, 25_000, 33 * G),
        // The reference would print 25000 here: it treats cpu `request` as `usage`.
        (Request, Request, 20_000, 33 * G),
        (Max, Max, 13_000, 21 * G),
        (Usage, Max, 25_000, 21 * G),
        (Max, Request, 13_000, 33 * G),
    ];
    for (cpu_policy, memory_policy, cpu, memory) in cases {
        let s = ColocationStrategy {
            cpu_calculate_policy: Some(cpu_policy),
            memory_calculate_policy: Some(memory_policy),
            ..spec_strategy()
        };
        let r = run(&node, &pods, Some(&metric), &s);
        assert_eq!(
            (r.resources.batch_cpu, r.resources.batch_memory),
            (Some(cpu), Some(memory)),
            "{cpu_policy:?}/{memory_policy:?}"
        );
        assert_eq!(batch(&r).by_request, CpuMem::new(20_000, 33 * G));
        assert_eq!(batch(&r).by_max_usage_request, CpuMem::new(13_000, 21 * G));
    }
}

#[test]
fn request_policy_ignores_usage() {
    // Same node, usage doubled everywhere: byRequest does not move.
    let (node, pods, _) = spec_example();
    let busy = Metric::new()
        .system(14_000, 24 * G)
        .pod("podA", "koord-prod", 22_000, 22 * G)
        .pod("podC", "koord-prod", 44_000, 44 * G)
        .build();
    let s = ColocationStrategy {
        cpu_calculate_policy: Some(CalculatePolicy::Request),
        memory_calculate_policy: Some(CalculatePolicy::Request),
        ..spec_strategy()
    };
    let r = run(&node, &pods, Some(&busy), &s);
    assert_eq!((r.resources.batch_cpu, r.resources.batch_memory), (Some(20_000), Some(33 * G)));
    // While byUsage collapsed: 100 − 35 − 14 − 66 < 0 → 0.
    assert_eq!(batch(&r).by_usage.cpu, 0);
}

#[test]
fn lse_pods_count_request_cpu_and_used_memory() {
    // 64 cores / 256Gi, thresholds 100 (no margin), nothing else.
    // LSE pod: request 8 / 16Gi, usage 2 / 10Gi.
    //   HPUsed       = {8 cores (request), 10Gi (usage)}
    //   HPMaxUsedReq = max(request, usage) = 8 / 16Gi
    let s = ColocationStrategy {
        cpu_reclaim_threshold_percent: Some(100),
        memory_reclaim_threshold_percent: Some(100),
        ..enabled()
    };
    let pods = [pod("db", PriorityClass::Prod, QoSClass::LSE, 8_000, 16 * GI)];
    let metric = Metric::new().pod("db", "koord-prod", 2_000, 10 * GI).build();
    let r = run(&node(64_000, 256 * GI), &pods, Some(&metric), &s);
    let b = batch(&r);
    assert_eq!(b.hp_used, CpuMem::new(8_000, 10 * GI));
    assert_eq!(b.hp_max_used_request, CpuMem::new(8_000, 16 * GI));
    assert_eq!(b.pods.lse, 1);
    // batch = 64 − 8 = 56 cores; 256 − 10 = 246Gi.
    assert_eq!(r.resources.batch_cpu, Some(56_000));
    assert_eq!(r.resources.batch_memory, Some(246 * GI));
}

#[test]
fn dangling_metrics_and_terminated_pods() {
    // 10 cores / 10Gi, thresholds 100. Metrics of pods not listed:
    //   gone-prod  (koord-prod)  1 / 1Gi → counted
    //   gone-none  (no priority) 2 / 2Gi → counted (empty = high priority)
    //   gone-batch (koord-batch) 4 / 4Gi → not counted
    //   unknown    (pod in phase Unknown) 0.5 / 0.5Gi → counted as dangling
    //   done       (pod Succeeded) 3 / 3Gi → consumed by its pod: not counted
    //     (the reference counts it: it skips the pod before the lookup)
    let s = ColocationStrategy {
        cpu_reclaim_threshold_percent: Some(100),
        memory_reclaim_threshold_percent: Some(100),
        ..enabled()
    };
    let pods = [
        ls("unknown", 1_000, GI).with_phase(PodPhase::Unknown),
        ls("done", 1_000, GI).with_phase(PodPhase::Succeeded),
    ];
    let metric = Metric::new()
        .pod("gone-prod", "koord-prod", 1_000, GI)
        .pod("gone-none", "", 2_000, 2 * GI)
        .pod("gone-batch", "koord-batch", 4_000, 4 * GI)
        .pod("unknown", "koord-prod", 500, GI / 2)
        .pod("done", "koord-prod", 3_000, 3 * GI)
        .build();
    let r = run(&node(10_000, 10 * GI), &pods, Some(&metric), &s);
    let b = batch(&r);
    // dangling = 1 + 2 + 0.5 = 3.5 cores / 3.5Gi.
    assert_eq!(b.pods.dangling, 3);
    assert_eq!(b.pods.dangling_low_priority, 1);
    assert_eq!(b.pods.dangling_used, CpuMem::new(3_500, 3 * GI + GI / 2));
    assert_eq!(b.hp_used, b.pods.dangling_used);
    assert_eq!(b.hp_max_used_request, b.pods.dangling_used);
    assert_eq!(b.hp_request, CpuMem::ZERO, "no request is known for a dangling metric");
    assert_eq!((b.pods.terminated, b.pods.unknown_phase), (1, 1));
    // batch = 10 − 3.5 = 6.5 cores / 6.5Gi.
    assert_eq!(r.resources.batch_cpu, Some(6_500));
    assert_eq!(r.resources.batch_memory, Some(6 * GI + GI / 2));
}

#[test]
fn pods_without_metric_count_their_request_in_every_policy() {
    // Koordinator #1906: an LS pod the agent has not measured yet counts at
    // its request. 10 cores, thresholds 100; a new pod requesting 4 cores.
    // usage: 10 − 4 = 6; maxUsageRequest: 10 − 4 = 6 too (the reference
    // leaves it out of HPMaxUsedReq and publishes 10 until the first report).
    let pods = [ls("new", 4_000, 4 * GI)];
    let metric = Metric::new().build();
    for policy in
        [CalculatePolicy::Usage, CalculatePolicy::MaxUsageRequest, CalculatePolicy::Request]
    {
        let s = ColocationStrategy {
            cpu_reclaim_threshold_percent: Some(100),
            memory_reclaim_threshold_percent: Some(100),
            cpu_calculate_policy: Some(policy),
            memory_calculate_policy: Some(policy),
            ..enabled()
        };
        let r = run(&node(10_000, 10 * GI), &pods, Some(&metric), &s);
        assert_eq!(r.resources.batch_cpu, Some(6_000), "{policy:?}");
        assert_eq!(r.resources.batch_memory, Some(6 * GI), "{policy:?}");
        let p = &batch(&r).pods;
        assert_eq!((p.without_metric, p.without_metric_request), (1, CpuMem::new(4_000, 4 * GI)));
    }
}

/// The second node of `examples/noderesource`: kubelet and annotation
/// reservations, an LSE pod, a pod without metric, dangling metrics, a host
/// application, `maxUsageRequest` for CPU and `request` for memory.
fn example_node_b() -> (NodeView, Vec<PodView>, NodeMetric, ColocationStrategy) {
    let node = NodeView::new("n1")
        .with_resources(
            ResourceVector::cpu_memory(32_000, 128 * GI),
            ResourceVector::cpu_memory(31_000, 124 * GI),
        )
        .with_annotations(StringMap::from_iter([(
            kolo_api::names::annotation::NODE_RESERVATION,
            r#"{"resources":{"memory":"8Gi"},"reservedCPUs":"0-3"}"#,
        )]));
    let pods = vec![
        pod("lse-db", PriorityClass::Prod, QoSClass::LSE, 8_000, 32 * GI),
        ls("web", 4_000, 8 * GI),
        ls("new-api", 2_000, 4 * GI),
        be("batch-job"),
    ];
    let metric = Metric::new()
        .system(2_000, 6 * GI)
        .host_app("agent", "koord-prod", 500, GI)
        .pod("lse-db", "koord-prod", 3_000, 20 * GI)
        .pod("web", "koord-prod", 1_500, 6 * GI)
        .pod("batch-job", "koord-batch", 6_000, 10 * GI)
        .pod("old-web", "koord-prod", 1_000, 2 * GI)
        .pod("old-job", "koord-batch", 3_000, 3 * GI)
        .build();
    let strategy = ColocationStrategy {
        cpu_reclaim_threshold_percent: Some(75),
        memory_reclaim_threshold_percent: Some(75),
        cpu_calculate_policy: Some(CalculatePolicy::MaxUsageRequest),
        memory_calculate_policy: Some(CalculatePolicy::Request),
        mid_reclaim_mode: Some("static".into()),
        mid_static_cpu_reserved_percent: Some(10),
        mid_static_memory_reserved_percent: Some(25),
        ..enabled()
    };
    (node, pods, metric, strategy)
}

#[test]
fn reservations_lse_dangling_and_mixed_policies() {
    let (node, pods, metric, s) = example_node_b();
    let r = run(&node, &pods, Some(&metric), &s);
    let b = batch(&r);
    // margin = 32 × 0.25 = 8 cores; 128Gi × 0.25 = 32Gi.
    assert_eq!(b.safety_margin, CpuMem::new(8_000, 32 * GI));
    // kubelet = 32 − 31 = 1 core, 128 − 124 = 4Gi; annotation: reservedCPUs
    // 0-3 = 4 cores, 8Gi. nodeReserved = max = 4 cores / 8Gi.
    assert_eq!(b.kubelet_reserved, CpuMem::new(1_000, 4 * GI));
    assert_eq!(b.annotation_reserved, Some(CpuMem::new(4_000, 8 * GI)));
    assert_eq!(b.reserved_cpus, Some(4));
    assert_eq!(b.node_reserved, CpuMem::new(4_000, 8 * GI));
    // systemUsed = 2 + 0.5 (prod host app) = 2.5 cores; 6 + 1 = 7Gi;
    // max with nodeReserved = 4 cores / 8Gi.
    assert_eq!(b.system_used, CpuMem::new(2_500, 7 * GI));
    assert_eq!(b.sys_used_or_reserved, CpuMem::new(4_000, 8 * GI));
    // HPRequest = 8 + 4 + 2 = 14 cores; 32 + 8 + 4 = 44Gi.
    assert_eq!(b.hp_request, CpuMem::new(14_000, 44 * GI));
    // HPUsed = lse-db 8 (request cpu) / 20Gi + web 1.5 / 6Gi + new-api 2 / 4Gi
    //          (no metric: request) + old-web 1 / 2Gi (dangling) = 12.5 / 32Gi.
    assert_eq!(b.hp_used, CpuMem::new(12_500, 32 * GI));
    // HPMaxUsedReq = max(8,3) + max(4,1.5) + 2 + 1 = 15 cores;
    //                max(32,20) + max(8,6) + 4 + 2 = 46Gi.
    assert_eq!(b.hp_max_used_request, CpuMem::new(15_000, 46 * GI));
    // byUsage   = 32 − 8 − 4 − 12.5 = 7.5;  128 − 32 − 8 − 32 = 56Gi
    // byRequest = 32 − 8 − 4 − 14   = 6;    128 − 32 − 8 − 44 = 44Gi
    // byMaxUR   = 32 − 8 − 4 − 15   = 5;    128 − 32 − 8 − 46 = 42Gi
    assert_eq!(b.by_usage, CpuMem::new(7_500, 56 * GI));
    assert_eq!(b.by_request, CpuMem::new(6_000, 44 * GI));
    assert_eq!(b.by_max_usage_request, CpuMem::new(5_000, 42 * GI));
    // cpu: maxUsageRequest → 5 cores (the reference: 7, leaving new-api out);
    // memory: request → 44Gi.
    assert_eq!(r.resources.batch_cpu, Some(5_000));
    assert_eq!(r.resources.batch_memory, Some(44 * GI));
    // Mid, static: 32 × 10% = 3.2 cores; 128Gi × 25% = 32Gi.
    assert_eq!(r.resources.mid_cpu, Some(3_200));
    assert_eq!(r.resources.mid_memory, Some(32 * GI));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn negative_margin_with_and_without_cap() {
    // Threshold 150 → ratio (100 − 150)/100 = −0.5: margin −5 cores / −5Gi,
    // so batch = 10 + 5 = 15 cores / 15Gi on a 10-core, 10Gi idle node.
    let over = ColocationStrategy {
        cpu_reclaim_threshold_percent: Some(150),
        memory_reclaim_threshold_percent: Some(150),
        ..enabled()
    };
    let metric = Metric::new().build();
    let r = run(&node(10_000, 10 * GI), &[], Some(&metric), &over);
    assert_eq!(batch(&r).safety_margin, CpuMem::new(-5_000, -5 * GI));
    assert_eq!((r.resources.batch_cpu, r.resources.batch_memory), (Some(15_000), Some(15 * GI)));
    // Caps: cpu 100% → 10 cores; memory 50% → 5Gi.
    let capped = ColocationStrategy {
        batch_cpu_threshold_percent: Some(100),
        batch_memory_threshold_percent: Some(50),
        ..over
    };
    let r = run(&node(10_000, 10 * GI), &[], Some(&metric), &capped);
    let b = batch(&r);
    assert_eq!(b.cap, OptionalAmounts { cpu: Some(10_000), memory: Some(5 * GI) });
    assert_eq!(b.by_policy, CpuMem::new(15_000, 15 * GI));
    assert_eq!((r.resources.batch_cpu, r.resources.batch_memory), (Some(10_000), Some(5 * GI)));
    // A cap above the value changes nothing: 65% thresholds on the spec
    // example give 25 cores; a 30% cap (30 cores) leaves it.
    let (node, pods, m) = spec_example();
    let s = ColocationStrategy { batch_cpu_threshold_percent: Some(30), ..spec_strategy() };
    assert_eq!(run(&node, &pods, Some(&m), &s).resources.batch_cpu, Some(25_000));
    let s = ColocationStrategy { batch_cpu_threshold_percent: Some(20), ..spec_strategy() };
    assert_eq!(run(&node, &pods, Some(&m), &s).resources.batch_cpu, Some(20_000));
}

#[test]
fn host_applications_above_batch_count_as_system_use() {
    // 10 cores, thresholds 100: prod app 1 core, mid app 2, batch app 4,
    // free app 8 → systemUsed = 1 + 2 = 3; batch = 7 cores.
    let s = ColocationStrategy {
        cpu_reclaim_threshold_percent: Some(100),
        memory_reclaim_threshold_percent: Some(100),
        ..enabled()
    };
    let metric = Metric::new()
        .host_app("a", "koord-prod", 1_000, 0)
        .host_app("b", "koord-mid", 2_000, 0)
        .host_app("c", "koord-batch", 4_000, 0)
        .host_app("d", "koord-free", 8_000, 0)
        .build();
    let r = run(&node(10_000, 10 * GI), &[], Some(&metric), &s);
    assert_eq!(batch(&r).host_app_used.cpu, 3_000);
    assert_eq!(r.resources.batch_cpu, Some(7_000));
}

#[test]
fn cpu_normalization_multiplies_batch_cpu_only() {
    // 25000 × 1.5 = 37500. 12345 × 1.1: 12345000 × 1.1 = 13579500.000000002
    // → truncated 13579500 milli-units → Value() rounds 13579.5 up → 13580.
    assert_eq!(batch::normalize_batch_cpu(25_000, 1.5), 37_500);
    assert_eq!(batch::normalize_batch_cpu(12_345, 1.1), 13_580);
    assert_eq!(batch::normalize_batch_cpu(0, 2.0), 0);
    let (node, pods, metric) = spec_example();
    let node = node.with_annotations(StringMap::from_iter([(
        kolo_api::names::annotation::NODE_CPU_NORMALIZATION_RATIO,
        "1.5",
    )]));
    let r = run(&node, &pods, Some(&metric), &spec_strategy());
    assert_eq!(batch(&r).capped.cpu, 25_000);
    assert_eq!(r.resources.batch_cpu, Some(37_500));
    assert_eq!(r.resources.batch_memory, Some(33 * G), "memory is not normalized");
}

/// Mid, default mode, on the spec example with prodReclaimable 10 / 20G,
/// node usage 50 / 60G and `midUnallocatedPercent: 10`.
#[test]
fn mid_default_mode() {
    let (node, pods, _) = spec_example();
    let metric = |usage: Option<(i64, i64)>, reclaimable: Option<(i64, i64)>| {
        let mut m = Metric::new()
            .system(7_000, 12 * G)
            .pod("podA", "koord-prod", 11_000, 11 * G)
            .pod("podC", "koord-prod", 22_000, 22 * G);
        if let Some((c, mem)) = usage {
            m = m.node_usage(c, mem);
        }
        if let Some((c, mem)) = reclaimable {
            m = m.prod_reclaimable(c, mem);
        }
        m.build()
    };
    let s = ColocationStrategy { mid_unallocated_percent: Some(10), ..spec_strategy() };
    let m = metric(Some((50_000, 60 * G)), Some((10_000, 20 * G)));
    let r = run(&node, &pods, Some(&m), &s);
    let t = mid(&r);
    let MidMode::Default(d) = &t.mode else { panic!("default mode") };
    // reservedOrUsed = max(nodeReserved 0, system 7 / 12G) = 7 / 12G.
    assert_eq!(d.reserved_or_used, CpuMem::new(7_000, 12 * G));
    // prod requests: podA 20 + podC 25 = 45 / 45G (podB is batch, podD done).
    assert_eq!(d.prod_request, CpuMem::new(45_000, 45 * G));
    // unallocated = 100 − 7 − 45 = 48 cores; 120 − 12 − 45 = 63G.
    assert_eq!(d.unallocated, CpuMem::new(48_000, 63 * G));
    // nodeUnused = 100 − 50 = 50 / 120 − 60 = 60G; reclaimable = min(10, 50)
    // = 10 cores, min(20G, 60G) = 20G.
    assert_eq!(d.node_unused, CpuMem::new(50_000, 60 * G));
    assert_eq!(d.reclaimable, CpuMem::new(10_000, 20 * G));
    // + 10% of unallocated: 4.8 cores, 6.3G → 14.8 cores, 26.3G (cap 100%).
    assert_eq!(d.from_unallocated, CpuMem::new(4_800, 6_300_000_000));
    assert_eq!((r.resources.mid_cpu, r.resources.mid_memory), (Some(14_800), Some(26_300_000_000)));

    // Caps: 10% of 100 cores = 10 cores; 20% of 120G = 24G.
    let capped = ColocationStrategy {
        mid_cpu_threshold_percent: Some(10),
        mid_memory_threshold_percent: Some(20),
        ..s.clone()
    };
    let r = run(&node, &pods, Some(&m), &capped);
    assert_eq!((r.resources.mid_cpu, r.resources.mid_memory), (Some(10_000), Some(24 * G)));

    // Node usage without memory: nodeUnused reads 0, only the unallocated share is left.
    let mut partial = metric(None, Some((10_000, 20 * G)));
    partial.status.as_mut().unwrap().node_metric.as_mut().unwrap().node_usage =
        serde_json::from_value(json!({"resources": {"cpu": "50"}})).unwrap();
    let r = run(&node, &pods, Some(&partial), &s);
    assert_eq!((r.resources.mid_cpu, r.resources.mid_memory), (Some(4_800), Some(6_300_000_000)));

    // No prodReclaimable at all: not a degradation, it reads as 0.
    let r = run(&node, &pods, Some(&metric(Some((50_000, 60 * G)), None)), &s);
    assert_eq!(r.reset, None);
    assert_eq!((r.resources.mid_cpu, r.resources.mid_memory), (Some(4_800), Some(6_300_000_000)));

    // Usage above capacity: nodeUnused −10 cores, the reclaimable part clamps to 0.
    let r = run(&node, &pods, Some(&metric(Some((110_000, 60 * G)), Some((10_000, 20 * G)))), &s);
    assert_eq!(r.resources.mid_cpu, Some(4_800));

    // With the default 0% of unallocated: exactly min(prodReclaimable, unused).
    let r = run(&node, &pods, Some(&m), &spec_strategy());
    assert_eq!((r.resources.mid_cpu, r.resources.mid_memory), (Some(10_000), Some(20 * G)));
}

#[test]
fn mid_counts_prod_and_none_pods_only_and_host_apps_above_mid() {
    // 10 cores, no usage; a mid pod (2 cores), a prod pod (3), a batch pod:
    // prod request = 3 cores. Host apps: prod 1 core counts, mid 2 does not.
    // unallocated = 10 − max(0, 1) − 3 = 6 cores; 50% → 3 cores.
    let s = ColocationStrategy { mid_unallocated_percent: Some(50), ..enabled() };
    let pods = [pod("m", PriorityClass::Mid, QoSClass::LS, 2_000, 0), ls("p", 3_000, 0), be("b")];
    let metric = Metric::new()
        .host_app("x", "koord-prod", 1_000, 0)
        .host_app("y", "koord-mid", 2_000, 0)
        .node_usage(0, 0)
        .build();
    let r = run(&node(10_000, 10 * GI), &pods, Some(&metric), &s);
    let MidMode::Default(d) = &mid(&r).mode else { panic!() };
    assert_eq!(d.prod_request.cpu, 3_000);
    assert_eq!(d.system_used.cpu, 1_000);
    assert_eq!(d.unallocated.cpu, 6_000);
    assert_eq!(r.resources.mid_cpu, Some(3_000));
}

#[test]
fn mid_static_mode() {
    // 100 cores / 120G: 10% → 10 cores; 25% → 30G. Cap 5% of cpu → 5 cores.
    let (node, pods, metric) = spec_example();
    let s = ColocationStrategy {
        mid_reclaim_mode: Some("static".into()),
        mid_static_cpu_reserved_percent: Some(10),
        mid_static_memory_reserved_percent: Some(25),
        ..spec_strategy()
    };
    let r = run(&node, &pods, Some(&metric), &s);
    assert!(matches!(mid(&r).mode, MidMode::Static(_)));
    assert_eq!((r.resources.mid_cpu, r.resources.mid_memory), (Some(10_000), Some(30 * G)));
    let capped = ColocationStrategy { mid_cpu_threshold_percent: Some(5), ..s };
    let r = run(&node, &pods, Some(&metric), &capped);
    assert_eq!((r.resources.mid_cpu, r.resources.mid_memory), (Some(5_000), Some(30 * G)));
}

#[test]
fn resets() {
    let (node, pods, metric) = spec_example();
    let report = NodeUsageReport::read(&metric);
    let pod_refs: Vec<&PodView> = pods.iter().collect();
    let inputs = |metric, strategy, cluster_enabled| NodeInputs {
        node: &node,
        pods: &pod_refs,
        metric,
        strategy,
        cluster_enabled,
        now: now(),
    };
    let s = spec_strategy();
    let reset = |i: NodeInputs<'_>| {
        let r = calculate(&i);
        assert_eq!(r.resources, ExtendedResources::NONE);
        assert!(r.batch.is_none() && r.mid.is_none());
        r.reset.unwrap()
    };
    assert_eq!(reset(inputs(Some(&report), &s, false)), ResetReason::ClusterDisabled);
    let off = ColocationStrategy { enable: Some(false), ..s.clone() };
    assert_eq!(reset(inputs(Some(&report), &off, true)), ResetReason::NodeDisabled);
    let unset = ColocationStrategy { enable: None, ..s.clone() };
    assert_eq!(reset(inputs(Some(&report), &unset, true)), ResetReason::NodeDisabled);
    assert_eq!(reset(inputs(None, &s, true)), ResetReason::NoNodeMetric);
    let stale = {
        let mut m = metric.clone();
        m.status.as_mut().unwrap().update_time =
            Some(Time("2026-11-22T03:44:59Z".parse().unwrap()));
        NodeUsageReport::read(&m)
    };
    assert!(matches!(
        reset(inputs(Some(&stale), &s, true)),
        ResetReason::StaleNodeMetric { age_seconds: 901, .. }
    ));
    let malformed = {
        let mut m = metric.clone();
        m.status.as_mut().unwrap().node_metric.as_mut().unwrap().system_usage =
            serde_json::from_value(json!({"resources": {"cpu": "many"}})).unwrap();
        NodeUsageReport::read(&m)
    };
    assert!(matches!(
        reset(inputs(Some(&malformed), &s, true)),
        ResetReason::MalformedNodeMetric { field, .. } if field == "status.nodeMetric.systemUsage.resources.cpu"
    ));
    let no_memory = NodeView::new("n1").with_resources(
        ResourceVector::EMPTY.with(kolo_core::resources::ResourceName::Cpu, 4_000),
        ResourceVector::EMPTY,
    );
    let r = calculate(&NodeInputs { node: &no_memory, ..inputs(Some(&report), &s, true) });
    assert_eq!(r.reset, Some(ResetReason::NoCapacity { missing: "memory" }));
    // The status patch of a reset deletes all four resources.
    let patch = r.resources.status_patch();
    assert!(patch["status"]["capacity"].as_object().unwrap().values().all(|v| v.is_null()));
}

#[test]
fn overflowing_inputs_saturate() {
    let s = ColocationStrategy { batch_cpu_threshold_percent: Some(1_000), ..spec_strategy() };
    let huge = NodeView::new("n1").with_resources(
        ResourceVector::cpu_memory(i64::MAX, i64::MAX),
        ResourceVector::cpu_memory(0, 0),
    );
    let pods = [ls("a", i64::MAX, i64::MAX), ls("b", i64::MAX, i64::MAX)];
    let metric = Metric::new().build();
    let r = run(&huge, &pods, Some(&metric), &s);
    assert!(r.resources.batch_cpu.unwrap() >= 0);
    assert!(r.resources.mid_memory.unwrap() >= 0);
}

#[test]
fn calculate_all_matches_pods_metrics_and_strategies() {
    let cfg: ColocationCfg = serde_json::from_value(json!({
        "enable": true, "cpuReclaimThresholdPercent": 65, "memoryReclaimThresholdPercent": 65,
        "nodeConfigs": [{"name": "off", "nodeSelector": {"matchLabels": {"pool": "off"}}, "enable": false}]
    }))
    .unwrap();
    let colocation = ResolvedColocation::resolve(&cfg);
    let (n1, pods, metric) = spec_example();
    let n2 = NodeView::new("n2")
        .with_resources(
            ResourceVector::cpu_memory(8_000, 8 * GI),
            ResourceVector::cpu_memory(8_000, 8 * GI),
        )
        .with_labels(StringMap::from_iter([("pool", "off")]));
    let n3 = NodeView::new("n3")
        .with_resources(
            ResourceVector::cpu_memory(8_000, 8 * GI),
            ResourceVector::cpu_memory(8_000, 8 * GI),
        )
        .with_labels(StringMap::from_iter([(kolo_api::names::label::NODE_CPU_RECLAIM_RATIO, "x")]));
    // A pod of another node must not count on n1.
    let other = ls("elsewhere", 50_000, 50 * G).with_node_name("n3");
    let all_pods: Vec<PodView> = pods.into_iter().chain([other]).collect();
    let results = calculate_all([&n1, &n2, &n3], &all_pods, [&metric], &colocation, now());
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].resources.batch_cpu, Some(25_000));
    assert_eq!(results[1].reset, Some(ResetReason::NodeDisabled));
    assert_eq!(results[2].reset, Some(ResetReason::NoNodeMetric));
    assert_eq!(results[2].warnings.len(), 1);
    assert!(results[2].warnings[0].contains("cpu-reclaim-ratio"), "{:?}", results[2].warnings);
    // The cluster switch is the master switch.
    let off = ResolvedColocation::resolve(&ColocationCfg::default());
    let results = calculate_all([&n1], &all_pods, [&metric], &off, now());
    assert_eq!(results[0].reset, Some(ResetReason::ClusterDisabled));
}

#[test]
fn explanations_and_json_shape() {
    let (node, pods, metric) = spec_example();
    let r = run(&node, &pods, Some(&metric), &spec_strategy());
    let lines = explain::explain(&r, explain::Units::Exact);
    assert_eq!(
        lines[0],
        "batch-cpu (milli-cores): capacity 100000 - safety margin 35000 - max(system used 7000, \
         node reserved 0) - HP used 33000 = 25000 [usage]"
    );
    let human = explain::explain(&r, explain::Units::Human);
    assert!(human[1].starts_with("batch-memory (GiB): capacity 111.76"), "{human:?}");
    let value = serde_json::to_value(&r).unwrap();
    assert_eq!(value["batch"]["hpUsed"], json!({"cpu": 33_000, "memory": 33 * G}));
    assert_eq!(value["mid"]["mode"], "default");
    assert_eq!(value["resources"]["batchCpu"], 25_000);
    let reset = run(&node, &pods, None, &spec_strategy());
    assert_eq!(serde_json::to_value(&reset).unwrap()["reset"], json!({"kind": "noNodeMetric"}));
    assert_eq!(
        explain::explain(&reset, explain::Units::Human),
        ["batch and mid withdrawn: degraded: the node has no NodeMetric"]
    );
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

fn any_policy() -> impl Strategy<Value = CalculatePolicy> {
    prop_oneof![
        Just(CalculatePolicy::Usage),
        Just(CalculatePolicy::Request),
        Just(CalculatePolicy::MaxUsageRequest)
    ]
}

/// (request cpu, request memory, usage cpu, usage memory, has metric, LSE)
type PodSpec = (i64, i64, i64, i64, bool, bool);

fn any_pods() -> impl Strategy<Value = Vec<PodSpec>> {
    prop::collection::vec(
        (0..40_000i64, 0..64 * GI, 0..40_000i64, 0..64 * GI, any::<bool>(), any::<bool>()),
        0..6,
    )
}

fn scenario(pods: &[PodSpec]) -> (Vec<PodView>, NodeMetric) {
    let mut metric = Metric::new().system(1_000, GI);
    let views = pods
        .iter()
        .enumerate()
        .map(|(i, &(rc, rm, uc, um, has_metric, lse))| {
            let name = format!("p{i}");
            if has_metric {
                metric = std::mem::take(&mut metric).pod(&name, "koord-prod", uc, um);
            }
            let qos = if lse { QoSClass::LSE } else { QoSClass::LS };
            pod(&name, PriorityClass::Prod, qos, rc, rm)
        })
        .collect();
    (views, metric.build())
}

fn strategy(
    cpu_t: i64,
    mem_t: i64,
    cpu_p: CalculatePolicy,
    mem_p: CalculatePolicy,
    cap: Option<i64>,
) -> ColocationStrategy {
    ColocationStrategy {
        cpu_reclaim_threshold_percent: Some(cpu_t),
        memory_reclaim_threshold_percent: Some(mem_t),
        cpu_calculate_policy: Some(cpu_p),
        memory_calculate_policy: Some(mem_p),
        batch_cpu_threshold_percent: cap,
        batch_memory_threshold_percent: cap,
        ..enabled()
    }
}

/// (phase, priority class, QoS, request cpu, usage cpu, usage memory)
type MixedPod = (PodPhase, PriorityClass, QoSClass, i64, i64, i64);

fn any_mixed_pods() -> impl Strategy<Value = Vec<MixedPod>> {
    let phase = prop_oneof![
        Just(PodPhase::Running),
        Just(PodPhase::Pending),
        Just(PodPhase::Succeeded),
        Just(PodPhase::Failed),
        Just(PodPhase::Unknown),
    ];
    let class = prop_oneof![
        Just(PriorityClass::Prod),
        Just(PriorityClass::Mid),
        Just(PriorityClass::Batch),
        Just(PriorityClass::Free),
    ];
    let qos = prop_oneof![Just(QoSClass::LSE), Just(QoSClass::LS), Just(QoSClass::BE)];
    prop::collection::vec((phase, class, qos, 0..40_000i64, 0..40_000i64, 0..64 * GI), 0..12)
}

/// The node's pods, and a report of every one of them in the same order:
/// with the views' own keys (`shared`, as `kolo sim` builds it) or with
/// keys of their own (as read from a NodeMetric).
fn mixed_scenario(pods: &[MixedPod], shared: bool) -> (Vec<PodView>, NodeUsageReport) {
    let views: Vec<PodView> = pods
        .iter()
        .enumerate()
        .map(|(i, &(phase, class, qos, rc, _, _))| {
            pod(&format!("p{i}"), class, qos, rc, rc * 1000).with_phase(phase)
        })
        .collect();
    let reported = views
        .iter()
        .zip(pods)
        .map(|(v, &(_, class, _, _, uc, um))| kolo_core::usage_report::PodUsage {
            key: if shared { v.shared_key().clone() } else { v.key().into() },
            priority: Some(class),
            usage: ResourceVector::cpu_memory(uc, um).into(),
        })
        .collect();
    let report = NodeUsageReport {
        node: "n1".into(),
        update_time: Some(now()),
        node_usage: Some(ResourceVector::cpu_memory(30_000, 100 * GI)),
        system_usage: ResourceVector::cpu_memory(1_000, GI),
        pods: reported,
        ..NodeUsageReport::default()
    };
    (views, report)
}

#[test]
fn a_report_with_the_pods_own_keys_is_matched_by_position() {
    let pods = [(PodPhase::Running, PriorityClass::Prod, QoSClass::LS, 1_000, 500, GI); 3];
    for (shared, aligned) in [(true, true), (false, false)] {
        let (views, report) = mixed_scenario(&pods, shared);
        let refs: Vec<&PodView> = views.iter().collect();
        let metric = inputs::MetricInputs::read(&report).unwrap();
        let index = batch::MetricIndex::new(&refs, &metric);
        assert_eq!(matches!(index, batch::MetricIndex::Aligned(3)), aligned, "shared {shared}");
        // One pod fewer in the report: matched by key again.
        let mut fewer = report.clone();
        fewer.pods.pop();
        let metric = inputs::MetricInputs::read(&fewer).unwrap();
        let index = batch::MetricIndex::new(&refs, &metric);
        assert!(matches!(index, batch::MetricIndex::ByKey(_)), "shared {shared}, one fewer");
    }
}

proptest! {
    #[test]
    fn batch_and_mid_are_never_negative(
        pods in any_pods(),
        cpu_t in 0..300i64, mem_t in 0..300i64,
        cpu_p in any_policy(), mem_p in any_policy(),
        cap in prop::option::of(0..200i64),
        cap_cpu in 0..200_000i64, cap_mem in 0..512 * GI,
        unallocated in 0..=100i64,
    ) {
        let (views, metric) = scenario(&pods);
        let s = ColocationStrategy {
            mid_unallocated_percent: Some(unallocated),
            ..strategy(cpu_t, mem_t, cpu_p, mem_p, cap)
        };
        let r = run(&node(cap_cpu, cap_mem), &views, Some(&metric), &s);
        let res = r.resources;
        for v in [res.batch_cpu, res.batch_memory, res.mid_cpu, res.mid_memory] {
            prop_assert!(v.unwrap() >= 0);
        }
        let m = mid(&r);
        prop_assert!(m.result.cpu <= m.cap.cpu && m.result.memory <= m.cap.memory);
        if let Some(c) = batch(&r).cap.cpu {
            prop_assert!(res.batch_cpu.unwrap() <= c.max(0));
        }
    }

    #[test]
    fn more_ls_usage_never_raises_batch(
        pods in any_pods(),
        which in 0usize..6, extra_cpu in 0..20_000i64, extra_mem in 0..16 * GI,
        cpu_t in 0..150i64, policy in any_policy(),
    ) {
        prop_assume!(!pods.is_empty());
        let s = strategy(cpu_t, cpu_t, policy, policy, None);
        let (views, metric) = scenario(&pods);
        let before = run(&node(64_000, 256 * GI), &views, Some(&metric), &s);
        let mut busier = pods.clone();
        let p = &mut busier[which % pods.len()];
        p.2 += extra_cpu;
        p.3 += extra_mem;
        let (views, metric) = scenario(&busier);
        let after = run(&node(64_000, 256 * GI), &views, Some(&metric), &s);
        prop_assert!(after.resources.batch_cpu <= before.resources.batch_cpu);
        prop_assert!(after.resources.batch_memory <= before.resources.batch_memory);
    }

    #[test]
    fn request_policy_does_not_depend_on_usage(
        pods in any_pods(), usages in prop::collection::vec((0..40_000i64, 0..64 * GI), 6),
        cpu_t in 0..150i64,
    ) {
        let s = strategy(cpu_t, cpu_t, CalculatePolicy::Request, CalculatePolicy::Request, None);
        let (views, metric) = scenario(&pods);
        let a = run(&node(64_000, 256 * GI), &views, Some(&metric), &s);
        let other: Vec<PodSpec> = pods
            .iter()
            .zip(&usages)
            .map(|(&(rc, rm, _, _, m, l), &(uc, um))| (rc, rm, uc, um, m, l))
            .collect();
        let (views, metric) = scenario(&other);
        let b = run(&node(64_000, 256 * GI), &views, Some(&metric), &s);
        prop_assert_eq!(a.resources.batch_cpu, b.resources.batch_cpu);
        prop_assert_eq!(a.resources.batch_memory, b.resources.batch_memory);
    }

    #[test]
    fn matching_by_position_counts_as_matching_by_key(
        pods in any_mixed_pods(), policy in any_policy(), cpu_t in 0..150i64,
    ) {
        let s = strategy(cpu_t, cpu_t, policy, policy, None);
        let decide = |shared| {
            let (views, report) = mixed_scenario(&pods, shared);
            let refs: Vec<&PodView> = views.iter().collect();
            calculate(&NodeInputs {
                node: &node(64_000, 256 * GI),
                pods: &refs,
                metric: Some(&report),
                strategy: &s,
                cluster_enabled: true,
                now: now(),
            })
        };
        prop_assert_eq!(decide(true), decide(false));
    }

    #[test]
    fn normalization_never_lowers_batch_cpu(v in 0..10_000_000i64, ratio in 1.0f64..4.0) {
        let n = batch::normalize_batch_cpu(v, ratio);
        prop_assert!(n >= v);
        prop_assert!(n as f64 <= v as f64 * ratio + 1.0);
    }
}
