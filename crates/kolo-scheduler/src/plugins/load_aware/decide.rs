//! Filter and Score (spec §1.5, §1.6) and their precomputed inputs.
//!
//! Both run for every (pod, node) pair of a scheduling cycle, so they only
//! read precomputed vectors: [`NodeProfile`] (built when the node changes),
//! [`NodeLoad`] (maintained by the cache), [`PodFacts`] and the pod's
//! estimate (built once per cycle). Neither allocates, parses nor formats;
//! a [`FilterFailure`] carries numbers and formats itself on demand.

use std::fmt;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kolo_api::PriorityClass;
use kolo_api::crd::AggregationType;
use kolo_api::names::annotation::USAGE_THRESHOLDS;
use kolo_core::node::NodeView;
use kolo_core::pod::PodView;
use kolo_core::resources::ResourceName;

use super::assign_cache::NodeLoad;
use super::config::{AggregatedThresholds, LoadAwareConfig};
use super::custom_thresholds::{CustomThresholdsError, parse_custom_thresholds};
use super::estimator::{RawAllocatableError, estimate_node};
use super::vector::LoadVector;
use kolo_core::HasMeta;

/// A node annotation the profile could not use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeAnnotationError {
    /// `node.koordinator.sh/raw-allocatable` is malformed.
    #[error(transparent)]
    RawAllocatable(#[from] RawAllocatableError),
    /// `scheduling.koordinator.sh/usage-thresholds` is malformed.
    #[error(transparent)]
    UsageThresholds(#[from] CustomThresholdsError),
}

/// What Filter and Score need from a node, computed when the node changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeProfile {
    allocatable: LoadVector,
    usage_thresholds: LoadVector,
    prod_thresholds: LoadVector,
    aggregated: Option<AggregatedThresholds>,
    errors: Vec<NodeAnnotationError>,
}

impl NodeProfile {
    /// The profile of `node`:
    ///
    /// * the allocatable of `EstimateNode` (raw allocatable over
    ///   allocatable), in layout order;
    /// * the thresholds of the arguments, each part replaced by the non-empty
    ///   parts of the node's `scheduling.koordinator.sh/usage-thresholds`
    ///   annotation. An aggregated block there counts only with both
    ///   thresholds and a type, and without a duration it means the largest
    ///   window (it does not inherit the arguments' duration).
    ///
    /// Malformed annotations are skipped (the arguments or the plain
    /// allocatable are used) and kept in [`errors`](Self::errors).
    pub fn new(node: &NodeView, cfg: &LoadAwareConfig) -> NodeProfile {
        let layout = cfg.layout();
        let mut errors = Vec::new();
        let estimate = estimate_node(node);
        errors.extend(estimate.error.map(NodeAnnotationError::from));

        let mut profile = NodeProfile {
            allocatable: layout.vector(&estimate.allocatable),
            usage_thresholds: *cfg.usage_thresholds(),
            prod_thresholds: *cfg.prod_thresholds(),
            aggregated: cfg.aggregated().copied(),
            errors,
        };
        let custom = match node.annotation(USAGE_THRESHOLDS).map(parse_custom_thresholds) {
            None | Some(Ok(None)) => None,
            Some(Ok(Some(custom))) => Some(custom),
            Some(Err(error)) => {
                profile.errors.push(error.into());
                None
            }
        };
        if let Some(custom) = custom {
            if !custom.usage_thresholds.is_empty() {
                profile.usage_thresholds = layout.vector_from_ints(&custom.usage_thresholds);
            }
            if !custom.prod_usage_thresholds.is_empty() {
                profile.prod_thresholds = layout.vector_from_ints(&custom.prod_usage_thresholds);
            }
            if let Some(agg) = custom.aggregated_usage
                && !agg.usage_thresholds.is_empty()
                && let Some(aggregation) = agg.usage_aggregation_type
            {
                profile.aggregated = Some(AggregatedThresholds {
                    aggregation,
                    duration: agg.usage_aggregated_duration.unwrap_or_default(),
                    thresholds: layout.vector_from_ints(&agg.usage_thresholds),
                });
            }
        }
        profile
    }

    /// The node's allocatable as the plugin sees it, in layout order.
    pub fn allocatable(&self) -> &LoadVector {
        &self.allocatable
    }

    /// Node usage thresholds in effect, in layout order.
    pub fn usage_thresholds(&self) -> &LoadVector {
        &self.usage_thresholds
    }

    /// Prod usage thresholds in effect (all zero: none).
    pub fn prod_thresholds(&self) -> &LoadVector {
        &self.prod_thresholds
    }

    /// The aggregated block in effect.
    pub fn aggregated(&self) -> Option<&AggregatedThresholds> {
        self.aggregated.as_ref()
    }

    /// Node annotations that were malformed and ignored, for logging.
    pub fn errors(&self) -> &[NodeAnnotationError] {
        &self.errors
    }

    /// The thresholds Filter holds the node to for a pod: a Prod pod's are
    /// the Prod thresholds **only** if the node has any (never also node
    /// usage); otherwise the aggregated thresholds if configured, else the
    /// usage thresholds.
    #[inline]
    pub fn filter_thresholds(&self, pod: &PodFacts) -> FilterThresholds<'_> {
        if pod.prod && !self.prod_thresholds.is_zero() {
            FilterThresholds {
                kind: ThresholdKind::Prod,
                percent: &self.prod_thresholds,
                aggregation: None,
            }
        } else if let Some(agg) = &self.aggregated {
            FilterThresholds {
                kind: ThresholdKind::Aggregated,
                percent: &agg.thresholds,
                aggregation: Some((agg.aggregation, agg.duration)),
            }
        } else {
            FilterThresholds {
                kind: ThresholdKind::Usage,
                percent: &self.usage_thresholds,
                aggregation: None,
            }
        }
    }
}

/// Which usage Filter compares with which thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThresholdKind {
    /// The node usage against `usageThresholds`.
    Usage,
    /// The Prod pods' usage against `prodUsageThresholds` (a Prod pod on a
    /// node with Prod thresholds).
    Prod,
    /// A statistic of the node usage against the aggregated thresholds.
    Aggregated,
}

/// The thresholds Filter holds a node to for a pod
/// ([`NodeProfile::filter_thresholds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterThresholds<'a> {
    /// Which usage they apply to.
    pub kind: ThresholdKind,
    /// Percent per resource, in layout order; 0 disables a resource.
    pub percent: &'a LoadVector,
    /// For [`ThresholdKind::Aggregated`]: the statistic and window.
    pub aggregation: Option<(AggregationType, Duration)>,
}

/// What the decisions need about the incoming pod, computed once per
/// scheduling cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PodFacts {
    /// Owned by a DaemonSet: load-aware Filter never rejects it (it must run
    /// on every node).
    pub daemonset: bool,
    /// Priority class "with default" is Prod.
    pub prod: bool,
}

impl PodFacts {
    /// The facts of `pod`.
    ///
    /// The view keeps one owner (the controller, else the first); the
    /// reference checks every owner reference. Use [`owned_by_daemonset`]
    /// on the full pod for the exact rule.
    pub fn new(pod: &PodView) -> PodFacts {
        PodFacts {
            daemonset: pod.owner().is_some_and(|o| &*o.kind == "DaemonSet"),
            prod: pod.priority_class() == PriorityClass::Prod,
        }
    }
}

/// Whether any owner reference of `pod` is a DaemonSet.
pub fn owned_by_daemonset(pod: &Pod) -> bool {
    pod.metadata.owner_references.iter().flatten().any(|o| o.kind == "DaemonSet")
}

/// Why Filter rejected a node.
///
/// `Display` gives the reference's reason (`node(s) cpu usage exceed
/// threshold`); [`explain`](Self::explain) gives the numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterFailure {
    /// The NodeMetric is expired and scheduling onto such nodes is off.
    NodeMetricExpired,
    /// A resource's usage percentage is above its threshold.
    UsageExceeded {
        /// The resource.
        resource: ResourceName,
        /// `round(estimated / allocatable × 100)`.
        usage_percent: i64,
        /// The threshold it exceeds.
        threshold: i64,
        /// Against an aggregated (percentile) usage.
        aggregated: bool,
        /// Against the Prod usage (a Prod pod with Prod thresholds).
        prod: bool,
    },
}

impl fmt::Display for FilterFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterFailure::NodeMetricExpired => f.write_str("node(s) nodeMetric expired"),
            FilterFailure::UsageExceeded { resource, aggregated: true, .. } => {
                write!(f, "node(s) {resource} aggregated usage exceed threshold")
            }
            FilterFailure::UsageExceeded { resource, .. } => {
                write!(f, "node(s) {resource} usage exceed threshold")
            }
        }
    }
}

impl FilterFailure {
    /// A human explanation with the numbers, e.g. `cpu usage 71% > 65%`,
    /// `memory prod usage 80% > 70%`, `nodeMetric expired`.
    pub fn explain(&self) -> impl fmt::Display + '_ {
        Explain(self)
    }
}

struct Explain<'a>(&'a FilterFailure);

impl fmt::Display for Explain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self.0 {
            FilterFailure::NodeMetricExpired => f.write_str("nodeMetric expired"),
            FilterFailure::UsageExceeded {
                resource,
                usage_percent,
                threshold,
                aggregated,
                prod,
            } => {
                let kind = match (aggregated, prod) {
                    (true, _) => "aggregated usage",
                    (false, true) => "prod usage",
                    (false, false) => "usage",
                };
                write!(f, "{} {kind} {usage_percent}% > {threshold}%", resource.short_name())
            }
        }
    }
}

/// Load-aware Filter (spec §1.5).
///
/// In order: DaemonSet pods pass; a Prod pod is checked against the Prod
/// thresholds **only** if the node has any (never also against node usage),
/// else the aggregated thresholds if configured, else the usage thresholds;
/// all-zero thresholds pass; no NodeMetric passes; an expired metric is
/// rejected (or passed, with `enableScheduleWhenNodeMetricsExpired`) when
/// `filterExpiredNodeMetrics` is on; a metric without `status.nodeMetric`
/// passes. Then, in layout order, a resource with a non-zero threshold and
/// allocatable fails when `round((existing + estimate) / allocatable × 100)`
/// is strictly above its threshold.
#[inline]
pub fn filter(
    cfg: &LoadAwareConfig,
    node: &NodeProfile,
    load: Option<&NodeLoad>,
    pod: &PodFacts,
    pod_estimate: &LoadVector,
    now: Timestamp,
) -> Result<(), FilterFailure> {
    if pod.daemonset {
        return Ok(());
    }
    let FilterThresholds { kind, percent: thresholds, aggregation } = node.filter_thresholds(pod);
    let prod = kind == ThresholdKind::Prod;
    if thresholds.is_zero() {
        return Ok(());
    }
    let Some(load) = load else { return Ok(()) };
    if !load.has_node_metric() {
        return Ok(());
    }
    let args = cfg.args();
    if args.filter_expired_node_metrics && load.is_expired(now, cfg.expiration()) {
        return if args.enable_schedule_when_node_metrics_expired {
            Ok(())
        } else {
            Err(FilterFailure::NodeMetricExpired)
        };
    }
    if !load.has_node_usage() {
        return Ok(());
    }
    let Some(existing) = load.existing_usage(prod, aggregation) else { return Ok(()) };
    let estimated = existing.saturating_add(pod_estimate);
    let allocatable = &node.allocatable;
    for i in 0..cfg.layout().len() {
        let threshold = thresholds.0[i];
        let total = allocatable.0[i];
        if threshold == 0 || total == 0 {
            continue;
        }
        let usage_percent = usage_percent(estimated.0[i], total);
        if usage_percent > threshold {
            return Err(FilterFailure::UsageExceeded {
                resource: cfg.layout().name(i),
                usage_percent,
                threshold,
                aggregated: aggregation.is_some(),
                prod,
            });
        }
    }
    Ok(())
}

/// `round(used / total × 100)` in f64, round-half-away, as the reference
/// computes a usage percentage (`total` not 0).
#[inline]
pub fn usage_percent(used: i64, total: i64) -> i64 {
    (used as f64 / total as f64 * 100.0).round() as i64
}

/// Load-aware Score (spec §1.6), 0..=100 (not normalised).
///
/// 0 without weights, without a NodeMetric, with an expired one (whatever
/// `filterExpiredNodeMetrics` says) or without `status.nodeMetric`.
/// Otherwise, with `used = existing + estimate` (Prod usage for a Prod pod
/// with `scoreAccordingProdUsage`; the configured statistic for other pods
/// if `aggregated.scoreAggregationType` is set), each resource scores
/// `(alloc − used) × 100 / alloc` (integer division; 0 if `alloc` is 0 or
/// `used > alloc`), and the score is
/// `(Σ score_i × w_i + min_i(score_i) × D) / (Σ w_i + D)`, the minimum only
/// with a dominant weight `D`.
#[inline]
pub fn score(
    cfg: &LoadAwareConfig,
    node: &NodeProfile,
    load: Option<&NodeLoad>,
    pod: &PodFacts,
    pod_estimate: &LoadVector,
    now: Timestamp,
) -> i64 {
    let dominant_weight = cfg.args().dominant_resource_weight;
    let weights = cfg.weights();
    if dominant_weight == 0 && weights.is_zero() {
        return 0;
    }
    let prod = cfg.args().score_according_prod_usage && pod.prod;
    let aggregation = if prod { None } else { cfg.score_aggregation() };
    let Some(load) = load else { return 0 };
    if !load.has_node_metric() || load.is_expired(now, cfg.expiration()) || !load.has_node_usage() {
        return 0;
    }
    let Some(existing) = load.existing_usage(prod, aggregation) else { return 0 };
    let used = existing.saturating_add(pod_estimate);
    let allocatable = &node.allocatable;

    let mut node_score: i64 = 0;
    let mut weight_sum = dominant_weight;
    let mut dominant: i64 = 100;
    for i in 0..cfg.layout().len() {
        let (alloc, used) = (allocatable.0[i], used.0[i]);
        let s = if alloc == 0 || used > alloc { 0 } else { least_used_score(alloc, used) };
        let w = weights.0[i];
        node_score = node_score.saturating_add(s.saturating_mul(w));
        weight_sum += w;
        if dominant_weight != 0 {
            dominant = dominant.min(s);
        }
    }
    if dominant_weight != 0 {
        node_score = node_score.saturating_add(dominant.saturating_mul(dominant_weight));
    }
    if weight_sum <= 0 { 0 } else { node_score / weight_sum }
}

/// `(alloc − used) × 100 / alloc` for `used <= alloc`, `alloc != 0`.
#[inline]
fn least_used_score(alloc: i64, used: i64) -> i64 {
    match alloc.checked_sub(used).and_then(|free| free.checked_mul(100)) {
        Some(scaled) => scaled / alloc,
        // Only absurd amounts (exabytes, or a negative usage) get here; i128
        // division is several times slower, so it stays off the usual path.
        None => ((i128::from(alloc) - i128::from(used)) * 100 / i128::from(alloc)) as i64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::load_aware::args::LoadAwareSchedulingArgs;
    use crate::plugins::load_aware::assign_cache::AssignedPod;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kolo_api::crd::{
        AggregatedUsage, NodeMetric, NodeMetricInfo, NodeMetricSpec, NodeMetricStatus,
        PodMetricInfo, ResourceMap,
    };
    use kolo_api::names::annotation::NODE_RAW_ALLOCATABLE;
    use kolo_core::pod::{OwnerRef, StringMap};
    use kolo_core::resources::ResourceVector;

    const GI: i64 = 1 << 30;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn cfg(json: &str) -> LoadAwareConfig {
        LoadAwareConfig::new(serde_json::from_str::<LoadAwareSchedulingArgs>(json).unwrap())
            .unwrap()
    }

    /// The worked examples' node: 96 cores, 512Gi.
    fn node(annotations: &[(&str, &str)]) -> NodeView {
        let alloc = ResourceVector::cpu_memory(96_000, 512 * GI);
        NodeView::new("n")
            .with_resources(alloc, alloc)
            .with_annotations(StringMap::from_iter(annotations.iter().copied()))
    }

    fn resources(cpu: &str, memory: &str) -> ResourceMap {
        ResourceMap {
            resources: Some(
                [
                    ("cpu".to_owned(), Quantity(cpu.to_owned())),
                    ("memory".to_owned(), Quantity(memory.to_owned())),
                ]
                .into(),
            ),
            devices: None,
        }
    }

    /// A NodeMetric updated at t(0) with the given node usage.
    fn node_metric(cpu: &str, memory: &str) -> NodeMetric {
        let mut m = NodeMetric::new("n", NodeMetricSpec::default());
        m.status = Some(NodeMetricStatus {
            update_time: Some(Time(t(0))),
            node_metric: Some(NodeMetricInfo {
                node_usage: Some(resources(cpu, memory)),
                ..Default::default()
            }),
            ..Default::default()
        });
        m
    }

    fn load(c: &LoadAwareConfig, m: &NodeMetric) -> NodeLoad {
        let mut load = NodeLoad::new();
        assert!(load.set_node_metric(m, c).is_none());
        load
    }

    /// 16 cores / 32Gi, request = limit: Guaranteed, hence LSR, hence Prod.
    fn big_pod() -> PodView {
        let r = ResourceVector::cpu_memory(16_000, 32 * GI);
        PodView::new("ns", "big")
            .with_requests(r)
            .with_limits(r)
            .with_qos(kolo_api::QoSClass::LSR)
            .with_priority(PriorityClass::Prod, 9500)
    }

    fn decide(
        c: &LoadAwareConfig,
        n: &NodeView,
        l: Option<&NodeLoad>,
        pod: &PodView,
        now: Timestamp,
    ) -> (Result<(), FilterFailure>, i64) {
        let profile = NodeProfile::new(n, c);
        let facts = PodFacts::new(pod);
        let (estimate, _) = c.estimate_pod(pod);
        (
            filter(c, &profile, l, &facts, &estimate, now),
            score(c, &profile, l, &facts, &estimate, now),
        )
    }

    #[test]
    fn worked_examples() {
        let c = cfg("{}");
        let n = node(&[]);
        let (estimate, _) = c.estimate_pod(&big_pod());
        assert_eq!(estimate.0[..2], [13_600, 24_051_816_858]);

        // (case, args, node usage, pod, want score)
        let cases = [
            ("empty usage", "{}", ("0", "0"), big_pod(), 90),
            ("usage 32 cores / 10Gi", "{}", ("32", "10Gi"), big_pod(), 72),
            (
                "dominant weight only",
                r#"{"dominantResourceWeight": 10}"#,
                ("0", "0"),
                big_pod(),
                85,
            ),
            ("empty pod: unscaled defaults", "{}", ("0", "0"), PodView::new("ns", "e"), 99),
        ];
        for (case, args, (cpu, memory), pod, want) in cases {
            let c = cfg(args);
            let l = load(&c, &node_metric(cpu, memory));
            let (_, got) = decide(&c, &n, Some(&l), &pod, t(10));
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn score_table() {
        let n = node(&[]);
        let m = node_metric("48", "256Gi");
        // Empty pod estimate: 250m / 200Mi. cpu: (96000-48250)*100/96000 = 49;
        // memory: (512Gi - 256Gi - 200Mi)*100/512Gi = 49.96 -> 49.
        let pod = PodView::new("ns", "e");
        let cases: &[(&str, &str, Option<&NodeMetric>, i64, i64)] = &[
            ("weights 1/1", "{}", Some(&m), 10, 49),
            (
                "cpu weight 3, memory 1",
                r#"{"resourceWeights": {"cpu": 3, "memory": 1}}"#,
                Some(&m),
                10,
                49,
            ),
            (
                "dominant + weights: (49 + 49 + 49*10) / 12",
                r#"{"resourceWeights": {"cpu": 1, "memory": 1}, "dominantResourceWeight": 10}"#,
                Some(&m),
                10,
                49,
            ),
            ("no NodeMetric: NotFound", "{}", None, 10, 0),
            ("expired metric", "{}", Some(&m), 180, 0),
            (
                "expired metric even with filterExpiredNodeMetrics off",
                r#"{"filterExpiredNodeMetrics": false}"#,
                Some(&m),
                180,
                0,
            ),
            ("just before expiry", "{}", Some(&m), 179, 49),
        ];
        for (case, args, metric, now, want) in cases {
            let c = cfg(args);
            let l = metric.map(|m| load(&c, m));
            let (_, got) = decide(&c, &n, l.as_ref(), &pod, t(*now));
            assert_eq!(got, *want, "{case}");
        }
    }

    #[test]
    fn score_details() {
        let n = node(&[]);
        let pod = PodView::new("ns", "e");
        // Over-committed memory scores 0 for memory: (cpu 99 + 0) / 2.
        let c = cfg("{}");
        let l = load(&c, &node_metric("0", "600Gi"));
        assert_eq!(decide(&c, &n, Some(&l), &pod, t(1)).1, 49);
        // The dominant term takes the minimum even over unweighted resources.
        let c = cfg(r#"{"resourceWeights": {"cpu": 1}, "dominantResourceWeight": 1}"#);
        let l = load(&c, &node_metric("0", "600Gi"));
        assert_eq!(decide(&c, &n, Some(&l), &pod, t(1)).1, 49); // (99*1 + 0*1) / 2
        // status.nodeMetric missing: 0.
        let mut m = node_metric("0", "0");
        m.status.as_mut().unwrap().node_metric = None;
        let c = cfg("{}");
        assert_eq!(decide(&c, &n, Some(&load(&c, &m)), &pod, t(1)).1, 0);
        // Zero allocatable: that resource scores 0.
        let zero = NodeView::new("z");
        let l = load(&c, &node_metric("0", "0"));
        assert_eq!(decide(&c, &zero, Some(&l), &pod, t(1)).1, 0);
    }

    #[test]
    fn score_prod_and_aggregated_sources() {
        let n = node(&[]);
        let mut m = node_metric("48", "0");
        let status = m.status.as_mut().unwrap();
        status.node_metric.as_mut().unwrap().aggregated_node_usages = Some(vec![AggregatedUsage {
            duration: Some("5m0s".into()),
            usage: Some([("p95".to_owned(), resources("72", "0"))].into()),
        }]);
        status.pods_metric = Some(vec![PodMetricInfo {
            namespace: Some("ns".into()),
            name: Some("prod".into()),
            pod_usage: Some(resources("24", "0")),
            priority: Some("koord-prod".into()),
            ..Default::default()
        }]);
        let prod_pod = big_pod();
        let add_prod = |c: &LoadAwareConfig| {
            let mut l = load(c, &m);
            let r = ResourceVector::cpu_memory(16_000, 32 * GI);
            let running = PodView::new("ns", "prod")
                .with_requests(r)
                .with_limits(r)
                .with_priority(PriorityClass::Prod, 9500);
            l.add_pod(AssignedPod::new(&running, Some(t(-3600)), None, t(-3600), c));
            l
        };
        // Memory usage/estimate: pod 22.4Gi of 512Gi -> 95 in every case.
        // (args, pod, want): node usage 48 cores -> cpu (96-48-13.6)/96 = 35
        let cases = [
            ("{}", prod_pod.clone(), (35 + 95) / 2),
            // Prod usage: 24 cores -> (96-24-13.6)/96 = 60.8 -> 60.
            (r#"{"scoreAccordingProdUsage": true}"#, prod_pod.clone(), (60 + 95) / 2),
            // p95 72 cores -> (96-72-13.6)/96 = 10.8 -> 10.
            (
                r#"{"aggregated": {"scoreAggregationType": "p95", "scoreAggregatedDuration": "5m"}}"#,
                prod_pod.clone(),
                (10 + 95) / 2,
            ),
            // Prod scoring wins over the aggregated statistic for prod pods.
            (
                r#"{"scoreAccordingProdUsage": true, "aggregated": {"scoreAggregationType": "p95"}}"#,
                prod_pod.clone(),
                (60 + 95) / 2,
            ),
        ];
        for (args, pod, want) in cases {
            let c = cfg(args);
            let l = add_prod(&c);
            assert_eq!(decide(&c, &n, Some(&l), &pod, t(1)).1, want, "{args}");
        }
    }

    #[test]
    fn filter_table() {
        // Node usage 60 cores of 96 = 62.5%; the big pod adds 13.6 -> 76.7%.
        let m = node_metric("60", "100Gi");
        let fail = |res: ResourceName, pct, thr, agg, prod| {
            Err(FilterFailure::UsageExceeded {
                resource: res,
                usage_percent: pct,
                threshold: thr,
                aggregated: agg,
                prod,
            })
        };
        let daemon = big_pod().with_owner(OwnerRef {
            kind: "DaemonSet".into(),
            name: "ds".into(),
            uid: "u".into(),
            controller: true,
        });
        type Case<'a> = (
            &'a str,
            &'a str,
            &'a [(&'a str, &'a str)],
            bool,
            PodView,
            i64,
            Result<(), FilterFailure>,
        );
        let cases: Vec<Case> = vec![
            (
                "default 65% cpu",
                "{}",
                &[],
                true,
                big_pod(),
                10,
                fail(ResourceName::Cpu, 77, 65, false, false),
            ),
            ("empty pod fits", "{}", &[], true, PodView::new("ns", "e"), 10, Ok(())),
            ("DaemonSet pods pass", "{}", &[], true, daemon, 10, Ok(())),
            (
                "thresholds 0/0 disable",
                r#"{"usageThresholds": {"cpu": 0, "memory": 0}}"#,
                &[],
                true,
                big_pod(),
                10,
                Ok(()),
            ),
            (
                "0 disables one resource",
                r#"{"usageThresholds": {"cpu": 0, "memory": 10}}"#,
                &[],
                true,
                big_pod(),
                10,
                fail(ResourceName::Memory, 24, 10, false, false),
            ),
            (
                "equality passes",
                r#"{"usageThresholds": {"cpu": 77}}"#,
                &[],
                true,
                big_pod(),
                10,
                Ok(()),
            ),
            (
                "one below fails",
                r#"{"usageThresholds": {"cpu": 76}}"#,
                &[],
                true,
                big_pod(),
                10,
                fail(ResourceName::Cpu, 77, 76, false, false),
            ),
            ("no NodeMetric passes", "{}", &[], false, big_pod(), 10, Ok(())),
            (
                "expired rejects",
                "{}",
                &[],
                true,
                big_pod(),
                180,
                Err(FilterFailure::NodeMetricExpired),
            ),
            (
                "expired passes when allowed",
                r#"{"enableScheduleWhenNodeMetricsExpired": true}"#,
                &[],
                true,
                big_pod(),
                180,
                Ok(()),
            ),
            (
                "expiry check off: thresholds on stale data",
                r#"{"filterExpiredNodeMetrics": false}"#,
                &[],
                true,
                big_pod(),
                10_000,
                fail(ResourceName::Cpu, 77, 65, false, false),
            ),
            // Surprise 4: with prod thresholds, a prod pod is checked only
            // against prod usage (0 here + 13.6 cores = 14%), not node usage.
            (
                "prod thresholds replace",
                r#"{"prodUsageThresholds": {"cpu": 50}}"#,
                &[],
                true,
                big_pod(),
                10,
                Ok(()),
            ),
            (
                "prod thresholds fail on prod usage",
                r#"{"prodUsageThresholds": {"cpu": 10}}"#,
                &[],
                true,
                big_pod(),
                10,
                fail(ResourceName::Cpu, 14, 10, false, true),
            ),
            (
                "prod thresholds do not apply to batch pods",
                r#"{"prodUsageThresholds": {"cpu": 10}}"#,
                &[],
                true,
                PodView::new("ns", "e"),
                10,
                Ok(()),
            ),
            (
                "all-zero prod thresholds count as none",
                r#"{"prodUsageThresholds": {"cpu": 0}}"#,
                &[],
                true,
                big_pod(),
                10,
                fail(ResourceName::Cpu, 77, 65, false, false),
            ),
            // Node annotation overrides.
            (
                "node annotation replaces thresholds",
                "{}",
                &[(USAGE_THRESHOLDS, r#"{"usageThresholds":{"cpu":80}}"#)],
                true,
                big_pod(),
                10,
                Ok(()),
            ),
            (
                "node annotation: untracked resources ignored",
                "{}",
                &[(USAGE_THRESHOLDS, r#"{"usageThresholds":{"pods":1}}"#)],
                true,
                big_pod(),
                10,
                Ok(()),
            ),
            (
                "node annotation: empty object keeps args",
                "{}",
                &[(USAGE_THRESHOLDS, "{}")],
                true,
                big_pod(),
                10,
                fail(ResourceName::Cpu, 77, 65, false, false),
            ),
            (
                "malformed node annotation keeps args",
                "{}",
                &[(USAGE_THRESHOLDS, "{oops")],
                true,
                big_pod(),
                10,
                fail(ResourceName::Cpu, 77, 65, false, false),
            ),
            (
                "node annotation prod thresholds",
                "{}",
                &[(USAGE_THRESHOLDS, r#"{"prodUsageThresholds":{"cpu":10}}"#)],
                true,
                big_pod(),
                10,
                fail(ResourceName::Cpu, 14, 10, false, true),
            ),
            // Raw allocatable halves cpu: (60+13.6)/48 = 153%.
            (
                "raw allocatable",
                "{}",
                &[(NODE_RAW_ALLOCATABLE, r#"{"cpu":"48"}"#)],
                true,
                big_pod(),
                10,
                fail(ResourceName::Cpu, 153, 65, false, false),
            ),
        ];
        for (case, args, annotations, with_metric, pod, now, want) in cases {
            let c = cfg(args);
            let l = with_metric.then(|| load(&c, &m));
            let (got, _) = decide(&c, &node(annotations), l.as_ref(), &pod, t(now));
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn filter_aggregated() {
        let mut m = node_metric("10", "100Gi");
        m.status.as_mut().unwrap().node_metric.as_mut().unwrap().aggregated_node_usages =
            Some(vec![
                AggregatedUsage {
                    duration: Some("5m0s".into()),
                    usage: Some([("p95".to_owned(), resources("60", "0"))].into()),
                },
                AggregatedUsage {
                    duration: Some("30m0s".into()),
                    usage: Some([("p95".to_owned(), resources("30", "0"))].into()),
                },
            ]);
        let agg = |res, pct, thr| {
            Err(FilterFailure::UsageExceeded {
                resource: res,
                usage_percent: pct,
                threshold: thr,
                aggregated: true,
                prod: false,
            })
        };
        let pod = big_pod();
        type Case = (&'static str, &'static str, Vec<(&'static str, &'static str)>, Want);
        type Want = Result<(), FilterFailure>;
        let cases: Vec<Case> = vec![
            // 5m p95: (60 + 13.6)/96 = 77%.
            (
                "args 5m p95",
                r#"{"aggregated": {"usageThresholds": {"cpu": 65}, "usageAggregationType": "p95", "usageAggregatedDuration": "5m"}}"#,
                vec![],
                agg(ResourceName::Cpu, 77, 65),
            ),
            // Duration 0: the largest window, 30m: (30 + 13.6)/96 = 45%.
            (
                "args p95 largest window",
                r#"{"aggregated": {"usageThresholds": {"cpu": 44}, "usageAggregationType": "p95"}}"#,
                vec![],
                agg(ResourceName::Cpu, 45, 44),
            ),
            // Aggregated thresholds replace the plain ones (plain 10% would fail).
            (
                "aggregated replaces usageThresholds",
                r#"{"usageThresholds": {"cpu": 10}, "aggregated": {"usageThresholds": {"cpu": 50}, "usageAggregationType": "p95"}}"#,
                vec![],
                Ok(()),
            ),
            // Window not reported: existing = estimates of assigned pods (none) -> 14%.
            (
                "missing window counts assigned estimates",
                r#"{"aggregated": {"usageThresholds": {"cpu": 13}, "usageAggregationType": "p95", "usageAggregatedDuration": "15m"}}"#,
                vec![],
                agg(ResourceName::Cpu, 14, 13),
            ),
            // Node annotation block without duration uses the largest window,
            // not the arguments' 5m.
            (
                "node aggregated block, no duration",
                r#"{"aggregated": {"usageThresholds": {"cpu": 65}, "usageAggregationType": "p95", "usageAggregatedDuration": "5m"}}"#,
                vec![(
                    USAGE_THRESHOLDS,
                    r#"{"aggregatedUsage":{"usageThresholds":{"cpu":44},"usageAggregationType":"p95"}}"#,
                )],
                agg(ResourceName::Cpu, 45, 44),
            ),
            // A node block without a type does not count.
            (
                "node aggregated block without type ignored",
                "{}",
                vec![(USAGE_THRESHOLDS, r#"{"aggregatedUsage":{"usageThresholds":{"cpu":1}}}"#)],
                // Plain 65%: (10 + 13.6)/96 = 25% passes.
                Ok(()),
            ),
        ];
        for (case, args, annotations, want) in cases {
            let c = cfg(args);
            let l = load(&c, &m);
            let (got, _) = decide(&c, &node(&annotations), Some(&l), &pod, t(1));
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn filter_skips_metric_without_node_metric() {
        let c = cfg(r#"{"usageThresholds": {"cpu": 1}}"#);
        let mut m = node_metric("90", "0");
        m.status.as_mut().unwrap().node_metric = None;
        let (got, _) = decide(&c, &node(&[]), Some(&load(&c, &m)), &big_pod(), t(1));
        assert_eq!(got, Ok(()));
    }

    #[test]
    fn least_used_score_extremes() {
        assert_eq!(least_used_score(96_000, 13_600), 85);
        assert_eq!(least_used_score(i64::MAX, 0), 100);
        assert_eq!(least_used_score(i64::MAX, i64::MAX), 0);
        assert_eq!(least_used_score(100, -100), 200);
        assert_eq!(least_used_score(i64::MAX / 2, -(i64::MAX / 2)), 200);
    }

    #[test]
    fn failure_messages() {
        let f = FilterFailure::UsageExceeded {
            resource: ResourceName::Cpu,
            usage_percent: 71,
            threshold: 65,
            aggregated: false,
            prod: false,
        };
        assert_eq!(f.to_string(), "node(s) cpu usage exceed threshold");
        assert_eq!(f.explain().to_string(), "cpu usage 71% > 65%");
        let f = FilterFailure::UsageExceeded {
            resource: ResourceName::BatchCpu,
            usage_percent: 90,
            threshold: 80,
            aggregated: true,
            prod: false,
        };
        assert_eq!(
            f.to_string(),
            "node(s) kubernetes.io/batch-cpu aggregated usage exceed threshold"
        );
        assert_eq!(f.explain().to_string(), "batch-cpu aggregated usage 90% > 80%");
        assert_eq!(FilterFailure::NodeMetricExpired.to_string(), "node(s) nodeMetric expired");
    }

    #[test]
    fn profile_keeps_annotation_errors() {
        let c = cfg("{}");
        let n = node(&[(USAGE_THRESHOLDS, "[1]"), (NODE_RAW_ALLOCATABLE, "x")]);
        let p = NodeProfile::new(&n, &c);
        assert_eq!(p.errors().len(), 2);
        assert_eq!(p.usage_thresholds(), c.usage_thresholds());
        assert_eq!(p.allocatable().0[..2], [96_000, 512 * GI]);
    }

    #[test]
    fn daemonset_owner_on_full_pod() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let owner = |kind: &str| OwnerReference {
            kind: kind.into(),
            name: "x".into(),
            uid: "u".into(),
            api_version: "apps/v1".into(),
            ..Default::default()
        };
        let mut pod = Pod::default();
        pod.metadata.owner_references = Some(vec![owner("ReplicaSet"), owner("DaemonSet")]);
        assert!(owned_by_daemonset(&pod));
        pod.metadata.owner_references = Some(vec![owner("ReplicaSet")]);
        assert!(!owned_by_daemonset(&pod));
    }
}
