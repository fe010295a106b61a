//! The NodeMetric status (spec §3.4), built purely from the metric store,
//! the pod list, the predictor and the collect policy at a given time.
//!
//! * `nodeUsage`: avg of node CPU and memory over the aggregate window.
//! * `aggregatedNodeUsages`: per configured duration `d`, the window
//!   `[now − d, now]` as `{avg, p50, p90, p95, p99}`; every statistic of a
//!   window is left empty (`{}`) while the node CPU series covers less than
//!   half of it (cold start).
//! * `systemUsage`, `aggregatedSystemUsages`: the same for node − pods.
//! * `podsMetric`: per pod with samples, avg CPU and memory over the
//!   aggregate window, namespace, name, priority class and QoS class (both
//!   with default), sorted by namespace then name.
//! * `prodReclaimableMetric` / `prodPeakMetric`: from
//!   [`crate::predictor::reclaimable`], over the pods that have a metric;
//!   `{}` when the prediction fails.
//!
//! Memory follows the collect policy: `usageWithPageCache` reports memory
//! with page cache, anything else without (kolo has no hot-page collector,
//! so `usageWithHotPageCache` falls back like the reference does without
//! kidled). Unlike the reference, the system usage follows the policy too,
//! so that `systemUsage + Σ podUsage` stays comparable with `nodeUsage`.
//!
//! Quantities are written like the reference's: CPU as milli-cores
//! (`429m`), memory in bytes as a binary-SI quantity (`5712464Ki` when a
//! multiple of 1024, else plain bytes such as `5862330450`). CPU is rounded
//! to the nearest milli-core (the reference truncates a float64; the store
//! keeps `f32`, whose truncation would lose a milli-core on values like
//! 0.429).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kolo_api::crd::node_metric::{
    MEMORY_COLLECT_USAGE_WITH_HOT_PAGE_CACHE, MEMORY_COLLECT_USAGE_WITH_PAGE_CACHE,
};
use kolo_api::crd::{
    AggregatedUsage, NodeMetricInfo, NodeMetricSpec, NodeMetricStatus, PodMetricInfo,
    ReclaimableMetric, ResourceList, ResourceMap, parse_go_duration,
};
use kolo_api::quantity::{Format, Quantity};
use kolo_core::CpuMem;
use kolo_core::clock::Timestamp;
use kolo_core::resources::ResourceVector;

use crate::AgentPod;
use crate::predictor::Predictions;
use crate::predictor::reclaimable::{
    ProdReclaimable, ReclaimConfig, ReclaimableError, prod_reclaimable,
};
use crate::store::{Entity, Metric, MetricStore, Summary};

/// Default aggregate window, seconds.
pub const DEFAULT_AGGREGATE_DURATION_SECONDS: i64 = 300;
/// Smallest aggregate window, seconds.
pub const MIN_AGGREGATE_DURATION_SECONDS: i64 = 60;
/// Default report interval, seconds.
pub const DEFAULT_REPORT_INTERVAL_SECONDS: i64 = 60;
/// Smallest report interval, seconds.
pub const MIN_REPORT_INTERVAL_SECONDS: i64 = 30;
/// Default windows of `aggregatedNodeUsages`.
pub const DEFAULT_AGGREGATE_DURATIONS: [&str; 3] = ["5m0s", "10m0s", "30m0s"];
/// A window is reported once its samples span at least this share of it.
pub const COLD_START_RATIO: f64 = 0.5;

/// Which memory figure counts as usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryPolicy {
    /// `usageWithoutPageCache` (the default, and the fallback for unknown
    /// values).
    #[default]
    WithoutPageCache,
    /// `usageWithPageCache`.
    WithPageCache,
    /// `usageWithHotPageCache`: reported without page cache, as the
    /// reference does when no cold-page collector runs.
    WithHotPageCache,
}

impl MemoryPolicy {
    /// The policy a spec string names (unknown or missing → default).
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some(MEMORY_COLLECT_USAGE_WITH_PAGE_CACHE) => MemoryPolicy::WithPageCache,
            Some(MEMORY_COLLECT_USAGE_WITH_HOT_PAGE_CACHE) => MemoryPolicy::WithHotPageCache,
            _ => MemoryPolicy::WithoutPageCache,
        }
    }

    /// The store metric reported as memory.
    pub fn metric(self) -> Metric {
        match self {
            MemoryPolicy::WithPageCache => Metric::MemoryWithCache,
            MemoryPolicy::WithoutPageCache | MemoryPolicy::WithHotPageCache => Metric::Memory,
        }
    }
}

/// One window of `aggregatedNodeUsages`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggregateDuration {
    /// Its length.
    pub duration: Duration,
    /// As written back: a Go duration string (`5m0s`).
    pub label: String,
}

/// The collect policy with defaults applied (spec §3.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectPolicy {
    /// `max(aggregateDurationSeconds, 60)` s, default 300 s.
    pub aggregate_window: Duration,
    /// `max(reportIntervalSeconds, 30)` s, default 60 s.
    pub report_interval: Duration,
    /// The windows of `aggregatedNodeUsages` (default 5m, 10m, 30m; an
    /// explicit empty list means none).
    pub durations: Vec<AggregateDuration>,
    /// Memory policy.
    pub memory: MemoryPolicy,
    /// Durations from the spec that did not parse or were zero (skipped),
    /// for the caller to log.
    pub invalid_durations: Vec<String>,
}

impl Default for CollectPolicy {
    fn default() -> Self {
        CollectPolicy::from_spec(&NodeMetricSpec::default())
    }
}

impl CollectPolicy {
    /// The policy of a NodeMetric spec, each missing field taking its
    /// default.
    pub fn from_spec(spec: &NodeMetricSpec) -> Self {
        let p = spec.metric_collect_policy.as_ref();
        let given =
            p.and_then(|p| p.node_aggregate_policy.as_ref()).and_then(|a| a.durations.as_ref());
        let strings: Vec<&str> = match given {
            Some(list) => list.iter().map(String::as_str).collect(),
            None => DEFAULT_AGGREGATE_DURATIONS.to_vec(),
        };
        let mut durations = Vec::new();
        let mut invalid_durations = Vec::new();
        for s in strings {
            match parse_go_duration(s).filter(|d| !d.is_zero()) {
                Some(duration) => durations
                    .push(AggregateDuration { duration, label: format_go_duration(duration) }),
                None => invalid_durations.push(s.to_string()),
            }
        }
        CollectPolicy {
            aggregate_window: aggregate_window(spec),
            report_interval: report_interval(spec),
            durations,
            memory: MemoryPolicy::parse(p.and_then(|p| p.node_memory_collect_policy.as_deref())),
            invalid_durations,
        }
    }
}

/// `max(spec.reportIntervalSeconds, 30)` s, default 60 s.
pub fn report_interval(spec: &NodeMetricSpec) -> Duration {
    let secs = spec
        .metric_collect_policy
        .as_ref()
        .and_then(|p| p.report_interval_seconds)
        .unwrap_or(DEFAULT_REPORT_INTERVAL_SECONDS);
    Duration::from_secs(secs.max(MIN_REPORT_INTERVAL_SECONDS) as u64)
}

/// `max(spec.aggregateDurationSeconds, 60)` s, default 300 s.
pub fn aggregate_window(spec: &NodeMetricSpec) -> Duration {
    let secs = spec
        .metric_collect_policy
        .as_ref()
        .and_then(|p| p.aggregate_duration_seconds)
        .unwrap_or(DEFAULT_AGGREGATE_DURATION_SECONDS);
    Duration::from_secs(secs.max(MIN_AGGREGATE_DURATION_SECONDS) as u64)
}

/// A duration as Go's `time.Duration.String()` writes it: `5m0s`, `1h0m0s`,
/// `30s`, `1.5s`, `300ms`, `0s`.
pub fn format_go_duration(d: Duration) -> String {
    fn number(whole: u128, frac: u128, frac_digits: u32) -> String {
        let mut s = whole.to_string();
        if frac > 0 {
            let f = format!("{:0width$}", frac, width = frac_digits as usize);
            s.push('.');
            s.push_str(f.trim_end_matches('0'));
        }
        s
    }
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", number(nanos / 1_000, nanos % 1_000, 3));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", number(nanos / 1_000_000, nanos % 1_000_000, 6));
    }
    let secs = nanos / 1_000_000_000;
    let s = format!("{}s", number(secs % 60, nanos % 1_000_000_000, 9));
    let (m, h) = ((secs / 60) % 60, secs / 3600);
    match (h, secs >= 60) {
        (0, false) => s,
        (0, true) => format!("{m}m{s}"),
        _ => format!("{h}h{m}m{s}"),
    }
}

/// CPU cores as a milli-core quantity (`429m`), rounded to the nearest
/// milli-core.
pub fn cpu_quantity(cores: f64) -> K8sQuantity {
    Quantity::from_milli((cores * 1000.0).round() as i64).into()
}

/// Memory bytes as a binary-SI quantity (`5712464Ki`, or plain bytes when
/// not a multiple of 1024), rounded to the byte.
pub fn memory_quantity(bytes: f64) -> K8sQuantity {
    Quantity::from_value(bytes.round() as i64, Format::BinarySI).into()
}

fn cpu_memory(cpu_cores: f64, memory_bytes: f64) -> ResourceMap {
    let resources: ResourceList = BTreeMap::from([
        ("cpu".to_string(), cpu_quantity(cpu_cores)),
        ("memory".to_string(), memory_quantity(memory_bytes)),
    ]);
    ResourceMap { resources: Some(resources), devices: None }
}

fn cpu_mem_map(v: CpuMem) -> ResourceMap {
    let resources: ResourceList = BTreeMap::from([
        ("cpu".to_string(), Quantity::from_milli(v.cpu).into()),
        ("memory".to_string(), Quantity::from_value(v.memory, Format::BinarySI).into()),
    ]);
    ResourceMap { resources: Some(resources), devices: None }
}

/// The predictor side of the status.
#[derive(Clone, Copy)]
pub struct ProdInputs<'a> {
    /// The models' predictions (the [`crate::predictor::PredictServer`]).
    pub predictions: &'a dyn Predictions,
    /// The node's raw-allocatable annotation if present, else
    /// `status.allocatable` (CPU milli, memory bytes).
    pub allocatable: &'a ResourceVector,
    /// Cold start and safety margin.
    pub config: &'a ReclaimConfig,
}

impl std::fmt::Debug for ProdInputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProdInputs")
            .field("allocatable", self.allocatable)
            .field("config", self.config)
            .finish_non_exhaustive()
    }
}

/// Everything the status is built from.
#[derive(Debug, Clone, Copy)]
pub struct StatusInputs<'a> {
    /// The metric store.
    pub store: &'a MetricStore,
    /// The pods on the node.
    pub pods: &'a [AgentPod],
    /// The collect policy ([`CollectPolicy::from_spec`]).
    pub policy: &'a CollectPolicy,
    /// The predictor; `None` leaves the prod fields out.
    pub prod: Option<ProdInputs<'a>>,
    /// The report time: every window ends here, and `updateTime`.
    pub now: Timestamp,
}

/// Summaries of a CPU and a memory series over `[start, end]`.
fn summaries(
    store: &MetricStore,
    entity: Entity<'_>,
    memory: Metric,
    start: Timestamp,
    end: Timestamp,
    scratch: &mut Vec<f32>,
) -> Option<(Summary, Summary)> {
    let cpu = store.window(entity, Metric::Cpu, start, end)?.summary(scratch);
    let mem = store.window(entity, memory, start, end)?.summary(scratch);
    Some((cpu, mem))
}

fn start_of(now: Timestamp, window: Duration) -> Timestamp {
    now.checked_sub(window).unwrap_or(Timestamp::MIN)
}

/// `aggregatedNodeUsages` / `aggregatedSystemUsages` for one entity.
fn aggregated(
    inputs: &StatusInputs<'_>,
    entity: Entity<'_>,
    scratch: &mut Vec<f32>,
) -> Vec<AggregatedUsage> {
    let memory = inputs.policy.memory.metric();
    inputs
        .policy
        .durations
        .iter()
        .map(|d| {
            let found = summaries(
                inputs.store,
                entity,
                memory,
                start_of(inputs.now, d.duration),
                inputs.now,
                scratch,
            )
            .filter(|(cpu, _)| {
                cpu.time_range().as_secs_f64() >= d.duration.as_secs_f64() * COLD_START_RATIO
            });
            let stat = |f: fn(&Summary) -> f64| match &found {
                Some((cpu, mem)) => cpu_memory(f(cpu), f(mem)),
                None => ResourceMap::default(),
            };
            let usage = BTreeMap::from([
                ("avg".to_string(), stat(|s| s.avg)),
                ("p50".to_string(), stat(|s| s.p50)),
                ("p90".to_string(), stat(|s| s.p90)),
                ("p95".to_string(), stat(|s| s.p95)),
                ("p99".to_string(), stat(|s| s.p99)),
            ]);
            AggregatedUsage { usage: Some(usage), duration: Some(d.label.clone()) }
        })
        .collect()
}

/// The average usage of one entity over the aggregate window (`{}` without
/// samples).
fn average(inputs: &StatusInputs<'_>, entity: Entity<'_>) -> Option<ResourceMap> {
    let start = start_of(inputs.now, inputs.policy.aggregate_window);
    let store = inputs.store;
    let cpu = store.window(entity, Metric::Cpu, start, inputs.now)?.avg();
    let mem = store.window(entity, inputs.policy.memory.metric(), start, inputs.now)?.avg();
    Some(cpu_memory(cpu, mem))
}

/// A built status and, when the predictor was given, what it said (for
/// logging why `prodReclaimableMetric` is empty).
#[derive(Debug, Clone)]
pub struct BuiltStatus {
    /// The status to write.
    pub status: NodeMetricStatus,
    /// The prodReclaimable computation, if the predictor was given.
    pub prod: Option<Result<ProdReclaimable, ReclaimableError>>,
}

/// Builds the NodeMetric status. `scratch` is reused by the percentile
/// queries.
pub fn build_status(inputs: &StatusInputs<'_>, scratch: &mut Vec<f32>) -> NodeMetricStatus {
    build(inputs, scratch).status
}

/// [`build_status`], also returning the prodReclaimable details.
pub fn build(inputs: &StatusInputs<'_>, scratch: &mut Vec<f32>) -> BuiltStatus {
    let node_metric = NodeMetricInfo {
        node_usage: Some(average(inputs, Entity::Node).unwrap_or_default()),
        aggregated_node_usages: Some(aggregated(inputs, Entity::Node, scratch)),
        system_usage: Some(average(inputs, Entity::System).unwrap_or_default()),
        aggregated_system_usages: Some(aggregated(inputs, Entity::System, scratch)),
        numa_usages: None,
    };

    let mut measured: Vec<&AgentPod> = Vec::with_capacity(inputs.pods.len());
    let mut pods_metric: Vec<PodMetricInfo> = Vec::with_capacity(inputs.pods.len());
    for pod in inputs.pods {
        let Some(usage) = average(inputs, Entity::Pod(&pod.id.uid)) else { continue };
        measured.push(pod);
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
        pods_metric.push(PodMetricInfo {
            name: Some(pod.id.name.clone()),
            namespace: Some(pod.id.namespace.clone()),
            pod_usage: Some(usage),
            priority: non_empty(pod.priority_class.as_str()),
            qos: non_empty(pod.qos.as_str()),
            extensions: None,
        });
    }
    pods_metric.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));

    // Like the reference, only pods with a metric are predicted.
    let prod = inputs.prod.map(|prod| {
        prod_reclaimable(measured, prod.allocatable, prod.predictions, prod.config, inputs.now)
    });
    let (prod_reclaimable_metric, prod_peak_metric) = match &prod {
        None => (None, None),
        Some(Ok(r)) => (
            Some(ReclaimableMetric { resource: Some(cpu_mem_map(r.reclaimable)) }),
            Some(ReclaimableMetric { resource: Some(cpu_mem_map(r.peak)) }),
        ),
        Some(Err(_)) => (Some(ReclaimableMetric::default()), Some(ReclaimableMetric::default())),
    };

    BuiltStatus {
        status: NodeMetricStatus {
            update_time: Some(Time(inputs.now)),
            node_metric: Some(node_metric),
            pods_metric: Some(pods_metric),
            host_application_metric: None,
            prod_reclaimable_metric,
            prod_peak_metric,
        },
        prod,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use kolo_api::crd::{AggregatePolicy, NodeMetric, NodeMetricCollectPolicy};
    use kolo_api::kube_qos::KubeQoSClass;
    use kolo_api::{PriorityClass, QoSClass};
    use serde_json::Value;

    use super::*;
    use crate::predictor::{NodeItem, Prediction};
    use crate::sample::{NodeSample, PodSample};

    /// A NodeMetric dumped from a Koordinator cluster (in the repository).
    const EXAMPLE: &str = "../kolo-api/tests/fixtures/nodemetric-master-01.yaml";

    fn spec(
        aggregate: Option<i64>,
        report: Option<i64>,
        durations: Option<Vec<&str>>,
        memory: Option<&str>,
    ) -> NodeMetricSpec {
        NodeMetricSpec {
            metric_collect_policy: Some(NodeMetricCollectPolicy {
                aggregate_duration_seconds: aggregate,
                report_interval_seconds: report,
                node_aggregate_policy: durations.map(|d| AggregatePolicy {
                    durations: Some(d.into_iter().map(String::from).collect()),
                }),
                node_memory_collect_policy: memory.map(String::from),
            }),
        }
    }

    #[test]
    fn interval_and_window_rules() {
        let none = NodeMetricSpec::default();
        assert_eq!(report_interval(&none), Duration::from_secs(60));
        assert_eq!(aggregate_window(&none), Duration::from_secs(300));
        let cases =
            [(Some(10), Some(10), 30, 60), (Some(45), Some(120), 45, 120), (None, None, 60, 300)];
        for (report, aggregate, want_report, want_window) in cases {
            let s = spec(aggregate, report, None, None);
            assert_eq!(report_interval(&s), Duration::from_secs(want_report), "{report:?}");
            assert_eq!(aggregate_window(&s), Duration::from_secs(want_window), "{aggregate:?}");
        }
    }

    #[test]
    fn collect_policy_defaults_and_overrides() {
        let p = CollectPolicy::default();
        let labels: Vec<&str> = p.durations.iter().map(|d| d.label.as_str()).collect();
        assert_eq!(labels, DEFAULT_AGGREGATE_DURATIONS);
        assert_eq!(p.memory, MemoryPolicy::WithoutPageCache);
        assert_eq!(p.aggregate_window, Duration::from_secs(300));

        let p = CollectPolicy::from_spec(&spec(
            Some(120),
            None,
            Some(vec!["5m", "1h", "bogus", "0s", "90s"]),
            Some("usageWithPageCache"),
        ));
        let labels: Vec<&str> = p.durations.iter().map(|d| d.label.as_str()).collect();
        assert_eq!(labels, ["5m0s", "1h0m0s", "1m30s"]);
        assert_eq!(p.invalid_durations, ["bogus", "0s"]);
        assert_eq!(p.memory, MemoryPolicy::WithPageCache);
        assert_eq!(p.aggregate_window, Duration::from_secs(120));

        // An explicit empty list means no aggregated windows.
        assert!(
            CollectPolicy::from_spec(&spec(None, None, Some(vec![]), None)).durations.is_empty()
        );
        // Unknown memory policies fall back.
        let p = CollectPolicy::from_spec(&spec(None, None, None, Some("nonsense")));
        assert_eq!(p.memory, MemoryPolicy::WithoutPageCache);
        assert_eq!(MemoryPolicy::parse(Some("usageWithHotPageCache")).metric(), Metric::Memory);
    }

    #[test]
    fn go_duration_strings() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_secs(300), "5m0s"),
            (Duration::from_secs(600), "10m0s"),
            (Duration::from_secs(1800), "30m0s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_secs(3661), "1h1m1s"),
            (Duration::from_secs(30), "30s"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_millis(300), "300ms"),
            (Duration::from_micros(2), "2µs"),
            (Duration::from_nanos(7), "7ns"),
            (Duration::from_millis(60_250), "1m0.25s"),
        ];
        for (d, want) in cases {
            assert_eq!(format_go_duration(d), want);
            assert_eq!(parse_go_duration(want), Some(d), "{want}");
        }
    }

    #[test]
    fn quantities_are_formatted_like_the_example() {
        assert_eq!(cpu_quantity(0.429).0, "429m");
        assert_eq!(cpu_quantity(f64::from(0.429f32)).0, "429m", "rounded, not truncated");
        assert_eq!(cpu_quantity(2.38).0, "2380m");
        assert_eq!(cpu_quantity(2.0).0, "2");
        assert_eq!(cpu_quantity(0.0).0, "0");
        assert_eq!(memory_quantity(5_849_563_136.0).0, "5712464Ki");
        assert_eq!(memory_quantity(5_862_330_450.0).0, "5862330450");
        assert_eq!(memory_quantity(0.0).0, "0");
    }

    fn now() -> Timestamp {
        "2025-05-25T03:36:38Z".parse().unwrap()
    }

    fn example() -> NodeMetric {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE);
        let snapshot = kolo_core::snapshot::Snapshot::load(&path).unwrap();
        snapshot.node_metrics.into_iter().next().unwrap()
    }

    fn agent_pod(ns: &str, name: &str, priority: &str, qos: &str) -> AgentPod {
        AgentPod {
            id: kolo_core::PodRef {
                namespace: ns.into(),
                name: name.into(),
                uid: format!("uid-{ns}-{name}"),
            },
            kube_qos: KubeQoSClass::Burstable,
            qos: QoSClass::from_label_value(qos),
            qos_source: kolo_api::qos::QoSSource::KoordinatorLabel,
            priority_class: PriorityClass::from_name(priority),
            requests: ResourceVector::cpu_memory(500, 1 << 30),
            limits: ResourceVector::new(),
            terminated: false,
            deleting: false,
            created: Some("2025-05-01T00:00:00Z".parse().unwrap()),
            containers: vec![],
        }
    }

    fn quantity(q: &K8sQuantity) -> Quantity {
        Quantity::try_from(q).unwrap()
    }

    /// Records `secs` seconds (ending at `now()`) of constant usage.
    fn record(store: &mut MetricStore, secs: i64, pods: &[(AgentPod, f64, u64)]) {
        for t in (0..secs).rev() {
            let at = now() - k8s_openapi::jiff::SignedDuration::from_secs(t);
            let node = NodeSample {
                at,
                cpu_cores: 0.515,
                memory_bytes: 5_712_464 * 1024,
                memory_with_cache_bytes: 7_000_000 * 1024,
            };
            let samples: Vec<PodSample> = pods
                .iter()
                .map(|(p, cpu, mem)| PodSample {
                    at,
                    uid: p.id.uid.clone(),
                    cpu_cores: *cpu,
                    memory_bytes: *mem,
                    memory_with_cache_bytes: *mem + (1 << 20),
                    containers: vec![],
                })
                .collect();
            store.record_round(&node, &samples);
        }
    }

    struct Fixed;

    impl Predictions for Fixed {
        fn pod(&self, _: &str) -> Option<Prediction> {
            let v = CpuMem::new(100, 100 << 20);
            Some(Prediction { p60: v, p90: v, p95: v, p98: v, max: v })
        }
        fn item(&self, _: NodeItem) -> Option<Prediction> {
            self.pod("")
        }
    }

    /// Every JSON path of a value (array items as `[]`).
    fn paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    paths(v, &format!("{prefix}.{k}"), out);
                }
            }
            Value::Array(a) => {
                for v in a {
                    paths(v, &format!("{prefix}[]"), out);
                }
            }
            _ => {
                out.insert(prefix.to_string());
            }
        }
    }

    #[test]
    fn builds_the_shape_of_the_example() {
        let example = example();
        let example_status = example.status.clone().unwrap();
        // The example's pods, with their usage as constant samples.
        let pods: Vec<(AgentPod, f64, u64)> = example_status
            .pods_metric
            .as_ref()
            .unwrap()
            .iter()
            .map(|m| {
                let r = m.pod_usage.as_ref().unwrap().resources.as_ref().unwrap();
                (
                    agent_pod(
                        m.namespace.as_deref().unwrap(),
                        m.name.as_deref().unwrap(),
                        m.priority.as_deref().unwrap(),
                        m.qos.as_deref().unwrap(),
                    ),
                    quantity(&r["cpu"]).milli_value() as f64 / 1000.0,
                    quantity(&r["memory"]).value() as u64,
                )
            })
            .collect();
        let mut store = MetricStore::default();
        record(&mut store, 1801, &pods);

        let policy = CollectPolicy::from_spec(&example.spec);
        let refs: Vec<AgentPod> = pods.iter().map(|(p, _, _)| p.clone()).collect();
        let alloc = ResourceVector::cpu_memory(8000, 16 << 30);
        let config = ReclaimConfig::default();
        let inputs = StatusInputs {
            store: &store,
            pods: &refs,
            policy: &policy,
            prod: Some(ProdInputs { predictions: &Fixed, allocatable: &alloc, config: &config }),
            now: now(),
        };
        let built = build(&inputs, &mut Vec::new());
        let status = built.status;

        // Same paths as the example, plus `avg` and prodPeakMetric.
        let (mut ours, mut theirs) = (BTreeSet::new(), BTreeSet::new());
        paths(&serde_json::to_value(&status).unwrap(), "", &mut ours);
        paths(&serde_json::to_value(&example_status).unwrap(), "", &mut theirs);
        assert!(
            theirs.is_subset(&ours),
            "missing: {:?}",
            theirs.difference(&ours).collect::<Vec<_>>()
        );
        let extra: Vec<&String> = ours.difference(&theirs).collect();
        assert_eq!(
            extra,
            [
                ".nodeMetric.aggregatedNodeUsages[].usage.avg.resources.cpu",
                ".nodeMetric.aggregatedNodeUsages[].usage.avg.resources.memory",
                ".nodeMetric.aggregatedSystemUsages[].usage.avg.resources.cpu",
                ".nodeMetric.aggregatedSystemUsages[].usage.avg.resources.memory",
                ".prodPeakMetric.resource.resources.cpu",
                ".prodPeakMetric.resource.resources.memory",
            ]
        );

        // Values: the node's constant usage, in the example's formats.
        let nm = NodeMetric { status: Some(status.clone()), ..example.clone() };
        let node = nm.node_usage().unwrap();
        assert_eq!(node["cpu"].0, "515m");
        assert_eq!(node["memory"].0, "5712464Ki");
        for d in ["5m", "10m", "30m"] {
            for agg in [
                kolo_api::crd::node_metric::AggregationType::P50,
                kolo_api::crd::node_metric::AggregationType::P99,
            ] {
                let u = nm.aggregated_node_usage(d, agg).unwrap();
                assert_eq!((u["cpu"].0.as_str(), u["memory"].0.as_str()), ("515m", "5712464Ki"));
                // The system is node minus the pods.
                assert!(nm.aggregated_system_usage(d, agg).is_some());
            }
        }
        let sys = nm.system_usage().unwrap();
        let pod_cpu: i64 = pods.iter().map(|(_, c, _)| (c * 1000.0).round() as i64).sum();
        assert_eq!(quantity(&sys["cpu"]).milli_value(), 515 - pod_cpu);

        // podsMetric: the example's pods, sorted, with their usage back.
        let got = status.pods_metric.as_ref().unwrap();
        let keys: Vec<(String, String)> =
            got.iter().map(|m| (m.namespace.clone().unwrap(), m.name.clone().unwrap())).collect();
        let mut want = keys.clone();
        want.sort();
        assert_eq!(keys, want);
        assert_eq!(got.len(), 9);
        for theirs in example_status.pods_metric.as_ref().unwrap() {
            let ours = nm
                .pod_metric(theirs.namespace.as_deref().unwrap(), theirs.name.as_deref().unwrap())
                .unwrap();
            assert_eq!(ours.priority, theirs.priority);
            assert_eq!(ours.qos, theirs.qos);
            let (a, b) = (
                ours.pod_usage.as_ref().unwrap().resources.as_ref().unwrap(),
                theirs.pod_usage.as_ref().unwrap().resources.as_ref().unwrap(),
            );
            assert_eq!(a["cpu"], b["cpu"]);
            // Memory goes through f32 KiB: within a few hundred bytes.
            let diff = quantity(&a["memory"]).value() - quantity(&b["memory"]).value();
            assert!(diff.abs() < 256, "{diff}");
        }

        // prodReclaimable: 8 prod pods past cold start, each requesting
        // (500m, 1 GiB) with p95 100m / p98 100 MiB → peak (110m, 115343360).
        // Pod-based: (8 × 390m, 8 × (1 GiB − 115343360)); priority-based:
        // request (4000m, 8 GiB) − int((100 + 100 + 100)m × 1.1) = 3670m.
        let reclaim = nm.prod_reclaimable().unwrap();
        assert_eq!(reclaim["cpu"].0, "3120m");
        assert_eq!(quantity(&reclaim["memory"]).value(), 8 * ((1 << 30) - 115_343_360));
        let r = built.prod.unwrap().unwrap();
        assert_eq!(r.by_priority.reclaimable.cpu, 3670);
        assert_eq!(nm.prod_peak().unwrap()["cpu"].0, "880m");
        assert_eq!(status.update_time, Some(Time(now())));
    }

    #[test]
    fn cold_start_leaves_windows_empty() {
        let mut store = MetricStore::default();
        // 4 min of data: 5m is covered (240 s ≥ 150 s), 10m and 30m are not.
        record(&mut store, 241, &[]);
        let policy = CollectPolicy::default();
        let inputs =
            StatusInputs { store: &store, pods: &[], policy: &policy, prod: None, now: now() };
        let status = build_status(&inputs, &mut Vec::new());
        let info = status.node_metric.as_ref().unwrap();
        for usages in [&info.aggregated_node_usages, &info.aggregated_system_usages] {
            let usages = usages.as_ref().unwrap();
            let filled: Vec<(&str, bool)> = usages
                .iter()
                .map(|u| {
                    let m = u.usage.as_ref().unwrap();
                    assert_eq!(m.len(), 5);
                    let filled = m.values().all(|r| r.resources.is_some());
                    assert!(filled || m.values().all(|r| r.resources.is_none()));
                    (u.duration.as_deref().unwrap(), filled)
                })
                .collect();
            assert_eq!(filled, [("5m0s", true), ("10m0s", false), ("30m0s", false)]);
        }
        // The aggregate-window averages are not filtered.
        assert!(info.node_usage.as_ref().unwrap().resources.is_some());
        assert_eq!(status.pods_metric, Some(vec![]));
        assert_eq!(status.prod_reclaimable_metric, None);

        // Exactly half a window is enough: 300 s of data cover 10m.
        let mut store = MetricStore::default();
        record(&mut store, 301, &[]);
        let inputs = StatusInputs { store: &store, ..inputs };
        let status = build_status(&inputs, &mut Vec::new());
        let usages = status.node_metric.unwrap().aggregated_node_usages.unwrap();
        assert!(usages[1].usage.as_ref().unwrap()["p50"].resources.is_some());
        assert!(usages[2].usage.as_ref().unwrap()["p50"].resources.is_none());
        // And an empty store gives empty maps, not a panic.
        let empty = MetricStore::default();
        let status = build_status(&StatusInputs { store: &empty, ..inputs }, &mut Vec::new());
        let info = status.node_metric.unwrap();
        assert_eq!(info.node_usage, Some(ResourceMap::default()));
        assert_eq!(info.aggregated_node_usages.unwrap().len(), 3);
    }

    #[test]
    fn pods_policy_and_prediction_errors() {
        let a = agent_pod("b-ns", "a", "koord-prod", "LS");
        let b = agent_pod("a-ns", "z", "", "");
        let c = agent_pod("a-ns", "y", "koord-batch", "BE");
        let silent = agent_pod("a-ns", "silent", "koord-prod", "LS");
        let mut store = MetricStore::new(crate::store::StoreConfig {
            pod_memory_with_cache: true,
            ..Default::default()
        });
        record(
            &mut store,
            60,
            &[(a.clone(), 0.1, 1 << 20), (b.clone(), 0.2, 2 << 20), (c.clone(), 0.3, 3 << 20)],
        );
        let policy = CollectPolicy::from_spec(&spec(None, None, None, Some("usageWithPageCache")));
        let pods = [a, b, c, silent];

        struct Nothing;
        impl Predictions for Nothing {
            fn pod(&self, _: &str) -> Option<Prediction> {
                None
            }
            fn item(&self, _: NodeItem) -> Option<Prediction> {
                None
            }
        }
        let alloc = ResourceVector::cpu_memory(8000, 16 << 30);
        let config = ReclaimConfig::default();
        let inputs = StatusInputs {
            store: &store,
            pods: &pods,
            policy: &policy,
            prod: Some(ProdInputs { predictions: &Nothing, allocatable: &alloc, config: &config }),
            now: now(),
        };
        let built = build(&inputs, &mut Vec::new());
        type Row<'a> = (Option<&'a str>, Option<&'a str>, Option<&'a str>, Option<&'a str>, String);
        let got: Vec<Row<'_>> = built
            .status
            .pods_metric
            .as_ref()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m.namespace.as_deref(),
                    m.name.as_deref(),
                    m.priority.as_deref(),
                    m.qos.as_deref(),
                    m.pod_usage.as_ref().unwrap().resources.as_ref().unwrap()["memory"].0.clone(),
                )
            })
            .collect();
        // Sorted by namespace then name; no class → fields left out; memory
        // with page cache (+1 MiB); the pod without samples is skipped.
        assert_eq!(
            got,
            [
                (Some("a-ns"), Some("y"), Some("koord-batch"), Some("BE"), "4Mi".to_string()),
                (Some("a-ns"), Some("z"), None, None, "3Mi".to_string()),
                (Some("b-ns"), Some("a"), Some("koord-prod"), Some("LS"), "2Mi".to_string()),
            ]
        );
        // Without node-level predictions the prod fields are empty objects.
        assert_eq!(built.status.prod_reclaimable_metric, Some(ReclaimableMetric::default()));
        assert_eq!(built.status.prod_peak_metric, Some(ReclaimableMetric::default()));
        assert!(built.prod.unwrap().is_err());
    }
}
