//! The per-node load state (spec §1.4): the node's latest NodeMetric and the
//! pods assigned to it, folded into running sums so that "estimated usage of
//! the existing pods" is a vector addition at Filter / Score time.
//!
//! A freshly assigned pod is not in the node agent's measurements yet, so
//! it counts at its estimate; once the metric covers it, only the part of
//! its estimate above its measured usage still counts (and only while the
//! pod is young, see [`NodeLoad::add_pod`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kolo_api::PriorityClass;
use kolo_api::crd::{AggregationType, NodeMetric};
use kolo_api::names::annotation::RESERVE_POD;
use kolo_core::pod::PodView;
use kolo_core::usage_report::{NodeUsageReport, ReportPart, UsageReadError};

use super::config::LoadAwareConfig;
use super::estimator::{EstimationAnnotationError, estimation_windows};
use super::vector::LoadVector;
use kolo_core::HasMeta;

/// Report interval assumed when a NodeMetric does not state one.
pub const DEFAULT_REPORT_INTERVAL: Duration = Duration::from_secs(60);

/// Whether the cache tracks `pod` at all: terminated pods hold nothing, and
/// reserve pods (placeholders of a Reservation) are accounted by the
/// reservation machinery, not as load.
pub fn is_tracked(pod: &PodView) -> bool {
    !pod.is_terminated() && pod.annotation(RESERVE_POD) != Some("true")
}

/// A pod assigned to a node, as the cache needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignedPod {
    /// Shared with the pod's [`PodView`]: a NodeMetric report built from
    /// the same reading of the pod (as `kolo sim` builds them) then finds
    /// the pod by pointer, without comparing the text (`Arc<str>`'s
    /// equality checks the pointer first).
    key: Arc<str>,
    entry: PodEntry,
    annotation_errors: Vec<EstimationAnnotationError>,
}

/// What the cache keeps per pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PodEntry {
    /// Priority class "with default" is Prod.
    prod: bool,
    /// The estimate; `None` when it is all zero.
    estimate: Option<LoadVector>,
    /// When the pod was scheduled (PodScheduled=True), else assigned.
    timestamp: Timestamp,
    /// Until when the pod counts at least at its estimate.
    deadline: Option<Timestamp>,
}

impl AssignedPod {
    /// Reads `pod`, assigned at `assign_time` (Reserve's "now" or the time
    /// the informer saw it bound).
    ///
    /// `pod_scheduled_time` and `initialized_time` are the
    /// `lastTransitionTime`s of the pod's PodScheduled=True and
    /// Initialized=True conditions, which [`PodView`] does not carry.
    ///
    /// Callers add only pods [`is_tracked`] accepts.
    pub fn new(
        pod: &PodView,
        pod_scheduled_time: Option<Timestamp>,
        initialized_time: Option<Timestamp>,
        assign_time: Timestamp,
        cfg: &LoadAwareConfig,
    ) -> AssignedPod {
        let (estimate, estimate_error) = cfg.estimate_pod(pod);
        let (windows, mut annotation_errors) = estimation_windows(pod, cfg.args());
        annotation_errors.extend(estimate_error);
        let timestamp = pod_scheduled_time.unwrap_or(assign_time);
        let deadline = match initialized_time {
            Some(initialized) if windows.after_initialized > 0 => {
                Some(plus_seconds(initialized, windows.after_initialized))
            }
            _ if windows.after_pod_scheduled > 0 => {
                Some(plus_seconds(timestamp, windows.after_pod_scheduled))
            }
            _ => None,
        };
        AssignedPod {
            key: pod.shared_key().clone(),
            entry: PodEntry {
                prod: pod.priority_class() == PriorityClass::Prod,
                estimate: (!estimate.is_zero()).then_some(estimate),
                timestamp,
                deadline,
            },
            annotation_errors,
        }
    }

    /// A pod from already computed parts (simulators, tests). `key` is
    /// `namespace/name`; an all-zero `estimate` counts as none.
    pub fn from_parts(
        key: &str,
        prod: bool,
        estimate: LoadVector,
        timestamp: Timestamp,
        deadline: Option<Timestamp>,
    ) -> AssignedPod {
        AssignedPod {
            key: key.into(),
            entry: PodEntry {
                prod,
                estimate: (!estimate.is_zero()).then_some(estimate),
                timestamp,
                deadline,
            },
            annotation_errors: Vec::new(),
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether the pod is Prod.
    pub fn is_prod(&self) -> bool {
        self.entry.prod
    }

    /// The estimate, `None` when all zero.
    pub fn estimate(&self) -> Option<&LoadVector> {
        self.entry.estimate.as_ref()
    }

    /// When the pod was scheduled (or assigned).
    pub fn timestamp(&self) -> Timestamp {
        self.entry.timestamp
    }

    /// Until when the pod counts at least at its estimate, if forced.
    pub fn estimated_deadline(&self) -> Option<Timestamp> {
        self.entry.deadline
    }

    /// Malformed estimation annotations of the pod (the arguments were used
    /// instead), for the caller to log.
    pub fn annotation_errors(&self) -> &[EstimationAnnotationError] {
        &self.annotation_errors
    }
}

fn plus_seconds(at: Timestamp, seconds: i64) -> Timestamp {
    at.saturating_add(SignedDuration::from_secs(seconds)).unwrap_or(Timestamp::MAX)
}

/// One statistic of `aggregatedNodeUsages`: its windows, and the alias
/// "duration 0" = the largest window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct AggregatedSeries {
    windows: Vec<(Duration, LoadVector)>,
    largest: Option<(Duration, LoadVector)>,
}

impl AggregatedSeries {
    fn insert(&mut self, duration: Duration, usage: LoadVector) {
        match self.windows.iter_mut().find(|(d, _)| *d == duration) {
            Some(slot) => slot.1 = usage,
            None => self.windows.push((duration, usage)),
        }
        if self.largest.is_none_or(|(d, _)| duration >= d) {
            self.largest = Some((duration, usage));
        }
    }

    fn get(&self, duration: Duration) -> Option<&LoadVector> {
        if duration.is_zero() {
            return self.largest.as_ref().map(|(_, v)| v);
        }
        self.windows.iter().find(|(d, _)| *d == duration).map(|(_, v)| v)
    }
}

/// Measured usage of one pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PodUsage {
    usage: LoadVector,
    /// The metric reports the pod as `koord-prod`.
    prod: bool,
}

/// What the cache keeps of a NodeMetric.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MetricState {
    update_time: Option<Timestamp>,
    /// `updateTime − reportInterval`: pods scheduled after it may be missing
    /// from the metric.
    fresh_after: Option<Timestamp>,
    /// `status.nodeMetric.nodeUsage`; `None` when `status.nodeMetric` is.
    node_usage: Option<LoadVector>,
    /// By [`agg_index`].
    aggregated: [AggregatedSeries; 5],
    /// Where the Prod usage starts: `systemUsage` or zero.
    base_prod_usage: LoadVector,
}

/// A map keyed by pod keys, looked up for every reported pod whenever a
/// node's metric arrives (a thousand nodes a minute in `kolo sim`): a fast
/// hash instead of SipHash, whose flooding resistance buys nothing for
/// keys that come from the cluster's own objects.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

fn agg_index(t: AggregationType) -> usize {
    match t {
        AggregationType::Avg => 0,
        AggregationType::P50 => 1,
        AggregationType::P90 => 2,
        AggregationType::P95 => 3,
        AggregationType::P99 => 4,
    }
}

/// A quantity of a NodeMetric that did not parse; it was read as 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("NodeMetric {node}: {error}; read as 0")]
pub struct NodeMetricReadError {
    /// `metadata.name`.
    pub node: String,
    /// The bad quantity and where it is.
    pub error: UsageReadError,
}

/// A pod's share of the node's running sums (spec §1.4 `addPod`).
#[derive(Default)]
struct Contribution {
    prod_usage: LoadVector,
    node_delta: LoadVector,
    prod_delta: LoadVector,
    estimated: LoadVector,
}

/// An assigned pod and what the current metric measured of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    entry: PodEntry,
    /// The metric's usage of this pod; `None` without a metric or when the
    /// metric does not report the pod.
    measured: Option<PodUsage>,
}

/// The load state of one node: its NodeMetric and assigned pods.
///
/// Pods are keyed by `namespace/name`; adding a pod that is already present
/// replaces it. Every running sum is a pure function of (metric, pods), so
/// removing a pod undoes its addition exactly and the order of additions
/// does not matter.
///
/// The metric's per-pod usages are not kept in a map of their own: each
/// reported usage sits in the [`Slot`] of its assigned pod, and only the
/// usages of reported pods that are not assigned here wait in
/// `unassigned_usages` (for the pod's [`add_pod`](Self::add_pod)). A new
/// metric then costs one look-up per reported pod, and re-accounting the
/// pods none; a usage map rebuilt per metric cost a hash per reported pod
/// to build plus one per assigned pod to read, about a tenth of `kolo sim`'s
/// CPU time. Every usage of the metric is in exactly one of the two places,
/// so the state stays a function of (metric, pods) and the derived `Eq`
/// compares what it did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeLoad {
    pods: FastMap<Arc<str>, Slot>,
    metric: Option<MetricState>,
    /// The metric's usages of pods that are not assigned here (empty
    /// without a metric). Of a key reported twice, the later entry counts.
    unassigned_usages: FastMap<Arc<str>, PodUsage>,
    /// Usage of the active Prod pods, plus the base (system usage).
    prod_usage: LoadVector,
    /// Σ max(0, estimate − usage) over pods the metric may not cover yet.
    node_delta: LoadVector,
    /// The same for Prod pods against the Prod usage.
    prod_delta: LoadVector,
    /// Σ estimate over every pod.
    node_estimated: LoadVector,
}

impl NodeLoad {
    /// No metric, no pods.
    pub fn new() -> NodeLoad {
        NodeLoad::default()
    }

    /// Stores a new NodeMetric and re-accounts every pod against it: reads
    /// it ([`NodeUsageReport::read`]) and calls
    /// [`set_usage_report`](Self::set_usage_report).
    ///
    /// The metric is applied even if some quantity is malformed: that
    /// quantity reads as 0, and the first such problem among the fields
    /// this plugin reads is returned for logging.
    pub fn set_node_metric(
        &mut self,
        metric: &NodeMetric,
        cfg: &LoadAwareConfig,
    ) -> Option<NodeMetricReadError> {
        let report = Arc::new(NodeUsageReport::read(metric));
        let layout = cfg.layout();
        let first_error = report
            .errors
            .iter()
            .find(|e| {
                let read = match e.part {
                    ReportPart::NodeUsage | ReportPart::AggregatedNodeUsage | ReportPart::Pod => {
                        true
                    }
                    ReportPart::SystemUsage => cfg.args().prod_usage_include_sys,
                    ReportPart::ProdReclaimable | ReportPart::HostApp => false,
                };
                read && layout.index_of(e.resource).is_some()
            })
            .map(|e| NodeMetricReadError { node: report.node.clone(), error: e.clone() });
        self.set_usage_report(report, cfg);
        first_error
    }

    /// Stores a node's new usage report and re-accounts every pod against
    /// it.
    ///
    /// Kept: the node usage, each aggregated window, the pods' usages and
    /// which pods it reports as `koord-prod`, the update time, the report
    /// interval (default 60 s) and, with `prodUsageIncludeSys`, the system
    /// usage as the start of the Prod usage. Resources this plugin does not
    /// track are dropped; missing ones are 0.
    pub fn set_usage_report(&mut self, report: Arc<NodeUsageReport>, cfg: &LoadAwareConfig) {
        let layout = cfg.layout();
        let report_interval = report
            .report_interval
            .unwrap_or(SignedDuration::try_from(DEFAULT_REPORT_INTERVAL).unwrap_or_default());
        let fresh_after =
            report.update_time.map(|t| t.saturating_sub(report_interval).unwrap_or(Timestamp::MIN));
        let mut aggregated: [AggregatedSeries; 5] = Default::default();
        for a in &report.aggregated_node_usages {
            aggregated[agg_index(a.statistic)].insert(a.duration, layout.vector(&a.usage));
        }
        let base_prod_usage = if cfg.args().prod_usage_include_sys {
            layout.vector(&report.system_usage)
        } else {
            LoadVector::ZERO
        };
        self.forget_usages();
        // Of a key reported twice, the later entry counts: it overwrites
        // the earlier one in whichever place the key's usage lives.
        for pod in &report.pods {
            let usage = PodUsage {
                usage: layout.compact_vector(&pod.usage),
                prod: pod.priority == Some(PriorityClass::Prod),
            };
            // By `Arc<str>`, not `str`: a shared key matches by pointer.
            match self.pods.get_mut(&pod.key) {
                Some(slot) => slot.measured = Some(usage),
                None => {
                    self.unassigned_usages.insert(pod.key.clone(), usage);
                }
            }
        }
        self.metric = Some(MetricState {
            update_time: report.update_time,
            fresh_after,
            node_usage: report.node_usage.as_ref().map(|u| layout.vector(u)),
            aggregated,
            base_prod_usage,
        });
        self.recompute();
    }

    /// Forgets the NodeMetric (it was deleted); pods stay.
    pub fn clear_node_metric(&mut self) {
        self.forget_usages();
        self.metric = None;
        self.recompute();
    }

    /// Drops the current metric's per-pod usages (before a new metric, or
    /// none, takes its place). The unassigned map keeps its allocation for
    /// the next metric.
    fn forget_usages(&mut self) {
        for slot in self.pods.values_mut() {
            slot.measured = None;
        }
        self.unassigned_usages.clear();
    }

    /// Adds `pod`, replacing a pod with the same key (an update, or the same
    /// pod seen by both Reserve and the informer).
    ///
    /// With `u` the pod's measured usage (`None` if the metric does not
    /// report it) and `e` its estimate:
    ///
    /// * a Prod pod the metric also reports as Prod is *active*: `u` is
    ///   added to the Prod usage;
    /// * a pod with no estimate stops there;
    /// * the pod *should* still be estimated if `u` is `None`, or it was
    ///   scheduled less than one report interval before the metric's
    ///   `updateTime`, or its estimation deadline is after `updateTime`;
    ///   then `max(0, e − u)` is added to the node delta;
    /// * `e` is added to the node estimate, always;
    /// * for a Prod pod that is not active, a measured usage does not count
    ///   as Prod usage, so it is treated as unmeasured; `max(0, e − u)` is
    ///   added to the Prod delta if the pod should be estimated.
    pub fn add_pod(&mut self, pod: AssignedPod) {
        // The pod's measured usage moves with it: from the pod it replaces,
        // or from the unreported-here map (an empty map needs no hash).
        let measured = match self.detach(&pod.key) {
            Some((_, old)) => old.measured,
            None if self.unassigned_usages.is_empty() => None,
            None => self.unassigned_usages.remove(&*pod.key),
        };
        let slot = Slot { entry: pod.entry, measured };
        let c = contribution(&slot, self.metric.as_ref());
        self.apply(&c, true);
        self.pods.insert(pod.key, slot);
    }

    /// Removes the pod `namespace/name`, undoing exactly what adding it did.
    /// Returns whether it was present.
    pub fn remove_pod(&mut self, key: &str) -> bool {
        let Some((key, slot)) = self.detach(key) else { return false };
        // The metric still reports the pod: its usage waits for the pod to
        // be added again.
        if let Some(usage) = slot.measured {
            self.unassigned_usages.insert(key, usage);
        }
        true
    }

    /// Takes the pod `key` out of the map and its contribution out of the
    /// sums; its measured usage is left to the caller.
    fn detach(&mut self, key: &str) -> Option<(Arc<str>, Slot)> {
        let (key, slot) = self.pods.remove_entry(key)?;
        // The metric has not changed since the pod's contribution was last
        // computed (a new metric recomputes everything), so recomputing it
        // gives the same vectors that were added.
        let c = contribution(&slot, self.metric.as_ref());
        self.apply(&c, false);
        Some((key, slot))
    }

    /// The usage Filter and Score compare against (spec §1.4
    /// `GetNodeMetricAndEstimatedOfExisting`), without the incoming pod;
    /// `None` when there is no NodeMetric (the reference's NotFound).
    ///
    /// * For a Prod pod: Prod usage + Prod delta.
    /// * Otherwise the node usage (`aggregation`'s statistic and window if
    ///   given; window zero means the largest; a missing statistic with
    ///   window zero falls back to the plain usage) + node delta; if there is
    ///   no such usage, the estimates of all pods.
    #[inline]
    pub fn existing_usage(
        &self,
        prod_pod: bool,
        aggregation: Option<(AggregationType, Duration)>,
    ) -> Option<LoadVector> {
        let metric = self.metric.as_ref()?;
        if prod_pod {
            return Some(self.prod_usage.saturating_add(&self.prod_delta));
        }
        let usage = match aggregation {
            None => metric.node_usage.as_ref(),
            Some((t, duration)) => match metric.aggregated[agg_index(t)].get(duration) {
                Some(v) => Some(v),
                None if duration.is_zero() => metric.node_usage.as_ref(),
                None => None,
            },
        };
        Some(match usage {
            Some(usage) => usage.saturating_add(&self.node_delta),
            None => self.node_estimated,
        })
    }

    /// Whether a NodeMetric is stored.
    #[inline]
    pub fn has_node_metric(&self) -> bool {
        self.metric.is_some()
    }

    /// Whether the stored NodeMetric has `status.nodeMetric`.
    #[inline]
    pub fn has_node_usage(&self) -> bool {
        self.metric.as_ref().is_some_and(|m| m.node_usage.is_some())
    }

    /// The NodeMetric's `status.updateTime`.
    #[inline]
    pub fn update_time(&self) -> Option<Timestamp> {
        self.metric.as_ref().and_then(|m| m.update_time)
    }

    /// Whether the NodeMetric is expired at `now`: missing, without
    /// `updateTime`, or at least `expiration` old (a non-positive
    /// `expiration` never expires a metric that has an update time).
    #[inline]
    pub fn is_expired(&self, now: Timestamp, expiration: SignedDuration) -> bool {
        match self.update_time() {
            None => true,
            Some(updated) => expiration.is_positive() && now.duration_since(updated) >= expiration,
        }
    }

    /// Number of assigned pods.
    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// Whether the pod `namespace/name` is assigned here.
    pub fn contains_pod(&self, key: &str) -> bool {
        self.pods.contains_key(key)
    }

    /// Resets the sums and re-adds every pod against the current metric.
    fn recompute(&mut self) {
        self.prod_usage = self.metric.as_ref().map_or(LoadVector::ZERO, |m| m.base_prod_usage);
        self.node_delta = LoadVector::ZERO;
        self.prod_delta = LoadVector::ZERO;
        self.node_estimated = LoadVector::ZERO;
        let metric = self.metric.as_ref();
        let mut total = Contribution::default();
        for slot in self.pods.values() {
            let c = contribution(slot, metric);
            total.prod_usage.wrapping_add_assign(&c.prod_usage);
            total.node_delta.wrapping_add_assign(&c.node_delta);
            total.prod_delta.wrapping_add_assign(&c.prod_delta);
            total.estimated.wrapping_add_assign(&c.estimated);
        }
        self.apply(&total, true);
    }

    fn apply(&mut self, c: &Contribution, add: bool) {
        let pairs = [
            (&mut self.prod_usage, &c.prod_usage),
            (&mut self.node_delta, &c.node_delta),
            (&mut self.prod_delta, &c.prod_delta),
            (&mut self.node_estimated, &c.estimated),
        ];
        for (sum, part) in pairs {
            if add {
                sum.wrapping_add_assign(part);
            } else {
                sum.wrapping_sub_assign(part);
            }
        }
    }
}

/// The `addPod` rule of spec §1.4 for one pod (see [`NodeLoad::add_pod`]);
/// `slot.measured` is `None` whenever `metric` is.
fn contribution(slot: &Slot, metric: Option<&MetricState>) -> Contribution {
    let mut c = Contribution::default();
    let pod = &slot.entry;
    let measured = slot.measured.as_ref();
    let usage = measured.map(|m| m.usage);
    let active_prod = pod.prod && measured.is_some_and(|m| m.prod);
    if active_prod && let Some(u) = &usage {
        c.prod_usage = *u;
    }
    let Some(estimate) = pod.estimate else { return c };
    let update_time = metric.and_then(|m| m.update_time);
    let should = usage.is_none()
        // No updateTime reads as the zero time, which everything is after.
        || metric.and_then(|m| m.fresh_after).is_none_or(|fresh| pod.timestamp > fresh)
        || pod.deadline.is_some_and(|d| update_time.is_none_or(|u| d > u));
    if should {
        c.node_delta = estimate.excess_over(&usage.unwrap_or_default());
    }
    c.estimated = estimate;
    if pod.prod {
        let (prod_usage, prod_should) =
            if !active_prod && usage.is_some() { (None, true) } else { (usage, should) };
        if prod_should {
            c.prod_delta = estimate.excess_over(&prod_usage.unwrap_or_default());
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kolo_api::crd::{
        AggregatedUsage, NodeMetricCollectPolicy, NodeMetricInfo, NodeMetricSpec, NodeMetricStatus,
        PodMetricInfo, ResourceMap,
    };
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    pub(crate) fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn v(cpu: i64, memory: i64) -> LoadVector {
        let mut out = LoadVector::ZERO;
        out.0[0] = cpu;
        out.0[1] = memory;
        out
    }

    fn list(cpu: &str, memory: &str) -> ResourceMap {
        ResourceMap {
            resources: Some(
                [
                    (
                        "cpu".to_owned(),
                        k8s_openapi::apimachinery::pkg::api::resource::Quantity(cpu.into()),
                    ),
                    (
                        "memory".to_owned(),
                        k8s_openapi::apimachinery::pkg::api::resource::Quantity(memory.into()),
                    ),
                ]
                .into(),
            ),
            devices: None,
        }
    }

    fn pod_metric(key: &str, cpu: &str, memory: &str, priority: &str) -> PodMetricInfo {
        let (ns, name) = key.split_once('/').unwrap();
        PodMetricInfo {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            pod_usage: Some(list(cpu, memory)),
            priority: Some(priority.into()),
            ..Default::default()
        }
    }

    /// A metric updated at `ts(0)` with report interval 60 s.
    fn metric(node: (&str, &str), pods: Vec<PodMetricInfo>) -> NodeMetric {
        let mut m = NodeMetric::new("n", NodeMetricSpec::default());
        m.spec.metric_collect_policy = Some(NodeMetricCollectPolicy {
            report_interval_seconds: Some(60),
            ..Default::default()
        });
        m.status = Some(NodeMetricStatus {
            update_time: Some(Time(ts(0))),
            node_metric: Some(NodeMetricInfo {
                node_usage: Some(list(node.0, node.1)),
                system_usage: Some(list("1", "1000")),
                aggregated_node_usages: Some(vec![
                    AggregatedUsage {
                        duration: Some("5m0s".into()),
                        usage: Some([("p95".to_owned(), list("5", "500"))].into()),
                    },
                    AggregatedUsage {
                        duration: Some("30m".into()),
                        usage: Some(
                            [
                                ("p95".to_owned(), list("30", "3000")),
                                ("avg".to_owned(), list("7", "7")),
                            ]
                            .into(),
                        ),
                    },
                    AggregatedUsage {
                        duration: Some("10m0s".into()),
                        usage: Some([("p95".to_owned(), list("10", "1000"))].into()),
                    },
                    AggregatedUsage { duration: Some("bogus".into()), usage: None },
                ]),
                ..Default::default()
            }),
            pods_metric: Some(pods),
            ..Default::default()
        });
        m
    }

    fn cfg(json: &str) -> LoadAwareConfig {
        LoadAwareConfig::new(serde_json::from_str(json).unwrap()).unwrap()
    }

    #[test]
    fn no_metric_is_not_found() {
        let mut load = NodeLoad::new();
        load.add_pod(AssignedPod::from_parts("ns/a", false, v(100, 100), ts(0), None));
        assert_eq!(load.existing_usage(false, None), None);
        assert_eq!(load.existing_usage(true, None), None);
        assert!(load.is_expired(ts(0), SignedDuration::from_secs(180)));
    }

    #[test]
    fn should_rule_table() {
        let c = cfg("{}");
        // Node usage 10 cores; the pod's measured usage is 1 core / 100 bytes.
        let m = metric(("10", "10000"), vec![pod_metric("ns/p", "1", "100", "koord-batch")]);
        // (case, measured?, scheduled at, deadline, want node delta cpu)
        let cases: &[(&str, bool, i64, Option<i64>, i64)] = &[
            ("unmeasured pod counts fully", false, -3600, None, 4_000),
            ("old measured pod counts nothing", true, -3600, None, 0),
            ("scheduled exactly at updateTime - interval: not after", true, -60, None, 0),
            ("scheduled within the last interval: excess", true, -59, None, 3_000),
            ("deadline after updateTime: excess", true, -3600, Some(1), 3_000),
            ("deadline at updateTime: not later", true, -3600, Some(0), 0),
        ];
        for (case, measured, scheduled, deadline, want) in cases {
            let mut load = NodeLoad::new();
            assert!(load.set_node_metric(&m, &c).is_none());
            let key = if *measured { "ns/p" } else { "ns/other" };
            load.add_pod(AssignedPod::from_parts(
                key,
                false,
                v(4_000, 50),
                ts(*scheduled),
                deadline.map(ts),
            ));
            let got = load.existing_usage(false, None).unwrap();
            assert_eq!(got.0[0], 10_000 + want, "{case}");
            // Memory estimate 50 is below the measured 100: never negative.
            let mem_delta = if *measured { 0 } else { 50 };
            if *want != 0 {
                assert_eq!(got.0[1], 10_000 + mem_delta, "{case}");
            }
        }
    }

    #[test]
    fn prod_accounting() {
        let with_sys = cfg(r#"{"prodUsageIncludeSys": true}"#);
        let without = cfg("{}");
        let m = metric(
            ("10", "10000"),
            vec![
                pod_metric("ns/prod-active", "2", "200", "koord-prod"),
                pod_metric("ns/prod-reported-batch", "1", "100", "koord-batch"),
                pod_metric("ns/batch", "3", "300", "koord-batch"),
            ],
        );
        for (c, base) in [(&with_sys, v(1_000, 1_000)), (&without, LoadVector::ZERO)] {
            let mut load = NodeLoad::new();
            load.set_node_metric(&m, c);
            assert_eq!(load.existing_usage(true, None), Some(base));
            // Active prod, old: usage counts, no delta.
            load.add_pod(AssignedPod::from_parts(
                "ns/prod-active",
                true,
                v(500, 50),
                ts(-3600),
                None,
            ));
            assert_eq!(load.existing_usage(true, None), Some(base.saturating_add(&v(2_000, 200))));
            // Prod pod that the metric reports as batch: its usage is not prod
            // usage, and it counts at its full estimate even though it is old.
            load.add_pod(AssignedPod::from_parts(
                "ns/prod-reported-batch",
                true,
                v(700, 70),
                ts(-3600),
                None,
            ));
            assert_eq!(load.existing_usage(true, None), Some(base.saturating_add(&v(2_700, 270))));
            // Batch pods never touch prod usage.
            load.add_pod(AssignedPod::from_parts("ns/batch", false, v(9_000, 900), ts(-1), None));
            assert_eq!(load.existing_usage(true, None), Some(base.saturating_add(&v(2_700, 270))));
            // Node view: old pods measured => no delta; young batch pod excess
            // 9000-3000 / 900-300.
            assert_eq!(load.existing_usage(false, None), Some(v(16_000, 10_600)));
        }
    }

    #[test]
    fn aggregated_lookup_and_alias() {
        let c = cfg("{}");
        let mut load = NodeLoad::new();
        load.set_node_metric(&metric(("10", "10000"), vec![]), &c);
        load.add_pod(AssignedPod::from_parts("ns/new", false, v(1, 1), ts(0), None));
        let p95 = AggregationType::P95;
        let min = |m: u64| Duration::from_secs(60 * m);
        let cases = [
            (None, v(10_001, 10_001)),
            (Some((p95, min(5))), v(5_001, 501)),
            (Some((p95, min(10))), v(10_001, 1_001)),
            // Duration 0 is the largest window (30m), whatever the order.
            (Some((p95, Duration::ZERO)), v(30_001, 3_001)),
            (Some((AggregationType::Avg, Duration::ZERO)), v(7_001, 8)),
            // Missing statistic, duration 0: the plain usage.
            (Some((AggregationType::P99, Duration::ZERO)), v(10_001, 10_001)),
            // Missing window: only the estimates of the pods.
            (Some((p95, min(15))), v(1, 1)),
            (Some((AggregationType::P99, min(5))), v(1, 1)),
        ];
        for (agg, want) in cases {
            assert_eq!(load.existing_usage(false, agg), Some(want), "{agg:?}");
        }
    }

    #[test]
    fn metric_without_node_metric_or_update_time() {
        let c = cfg("{}");
        let mut m = metric(("10", "10"), vec![]);
        m.status.as_mut().unwrap().node_metric = None;
        m.status.as_mut().unwrap().update_time = None;
        let mut load = NodeLoad::new();
        load.set_node_metric(&m, &c);
        assert!(load.has_node_metric());
        assert!(!load.has_node_usage());
        assert!(load.is_expired(ts(0), c.expiration()));
        load.add_pod(AssignedPod::from_parts("ns/a", false, v(3, 3), ts(-3600), None));
        assert_eq!(load.existing_usage(false, None), Some(v(3, 3)));
        load.clear_node_metric();
        assert_eq!(load.existing_usage(false, None), None);
    }

    #[test]
    fn expiry() {
        let c = cfg("{}");
        let mut load = NodeLoad::new();
        load.set_node_metric(&metric(("1", "1"), vec![]), &c);
        assert!(!load.is_expired(ts(179), c.expiration()));
        assert!(load.is_expired(ts(180), c.expiration()));
        assert!(!load.is_expired(ts(10_000), SignedDuration::ZERO));
    }

    #[test]
    fn malformed_quantity_reads_as_zero() {
        let c = cfg("{}");
        let mut m = metric(("10", "lots"), vec![]);
        m.metadata.name = Some("node-1".into());
        let mut load = NodeLoad::new();
        let err = load.set_node_metric(&m, &c).unwrap();
        assert_eq!(err.error.field, "status.nodeMetric.nodeUsage.resources.memory");
        assert!(err.to_string().starts_with("NodeMetric node-1: status.nodeMetric.nodeUsage."));
        assert_eq!(load.existing_usage(false, None), Some(v(10_000, 0)));
    }

    #[test]
    fn fixture_node_metric() {
        let yaml = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../kolo-api/tests/fixtures/nodemetric-master-01.yaml"
        ))
        .unwrap();
        let m: NodeMetric = serde_saphyr::from_str(&yaml).unwrap();
        let c = cfg("{}");
        let mut load = NodeLoad::new();
        assert!(load.set_node_metric(&m, &c).is_none());
        // 5m p99 cpu 1366m; the alias (p99, 0) is the 30m window (1467m).
        let p99 = AggregationType::P99;
        let five = load.existing_usage(false, Some((p99, Duration::from_secs(300)))).unwrap();
        assert_eq!(five.0[0], 1_366);
        let largest = load.existing_usage(false, Some((p99, Duration::ZERO))).unwrap();
        assert_eq!(largest.0[0], 1_467);
        assert_eq!(largest.0[1], 5_977_372 * 1024);
    }

    #[test]
    fn assigned_pod_from_view() {
        use kolo_api::names::annotation::LOAD_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED;
        use kolo_core::pod::StringMap;
        let c = cfg(
            r#"{"estimatedSecondsAfterPodScheduled": 60, "estimatedSecondsAfterInitialized": 30,
                "allowCustomizeEstimation": true}"#,
        );
        let view = PodView::new("ns", "p");
        // Scheduled condition wins over the assign time; Initialized wins.
        let p = AssignedPod::new(&view, Some(ts(5)), Some(ts(10)), ts(100), &c);
        assert_eq!(p.key(), "ns/p");
        assert!(!p.is_prod());
        assert_eq!(p.timestamp(), ts(5));
        assert_eq!(p.estimated_deadline(), Some(ts(40)));
        assert_eq!(p.estimate().unwrap().0[..2], [250, 200 << 20]);
        // No Initialized: scheduled + 60.
        let p = AssignedPod::new(&view, None, None, ts(100), &c);
        assert_eq!((p.timestamp(), p.estimated_deadline()), (ts(100), Some(ts(160))));
        // A malformed annotation is reported and ignored.
        let bad = view.clone().with_annotations(StringMap::from_iter([(
            LOAD_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED,
            "x",
        )]));
        let p = AssignedPod::new(&bad, None, None, ts(100), &c);
        assert_eq!((p.estimated_deadline(), p.annotation_errors().len()), (Some(ts(160)), 1));
        // No windows: no deadline.
        let p = AssignedPod::new(&view, None, Some(ts(10)), ts(0), &cfg("{}"));
        assert_eq!(p.estimated_deadline(), None);
        // Free pods estimate nothing.
        let free = view.with_priority(PriorityClass::Free, 3500);
        assert_eq!(AssignedPod::new(&free, None, None, ts(0), &c).estimate(), None);
    }

    #[test]
    fn tracked_pods() {
        use kolo_core::pod::{PodPhase, StringMap};
        let p = PodView::new("ns", "p");
        assert!(is_tracked(&p));
        assert!(!is_tracked(&p.clone().with_phase(PodPhase::Succeeded)));
        assert!(!is_tracked(&p.clone().with_phase(PodPhase::Failed)));
        assert!(!is_tracked(&p.with_annotations(StringMap::from_iter([(RESERVE_POD, "true")]))));
    }

    fn arb_pod() -> impl Strategy<Value = AssignedPod> {
        (
            0..12usize,
            any::<bool>(),
            0..5_000i64,
            0..5_000i64,
            -200..50i64,
            proptest::option::of(-100..100i64),
        )
            .prop_map(|(k, prod, cpu, mem, at, deadline)| {
                AssignedPod::from_parts(
                    &format!("ns/p{k}"),
                    prod,
                    v(cpu, mem),
                    ts(at),
                    deadline.map(ts),
                )
            })
    }

    fn arb_metric() -> impl Strategy<Value = Option<NodeMetric>> {
        proptest::option::of(proptest::collection::vec(
            (0..12usize, 0..4_000i64, any::<bool>()),
            0..8,
        ))
        .prop_map(|pods| {
            pods.map(|pods| {
                metric(
                    ("20", "20000"),
                    pods.into_iter()
                        .map(|(k, cpu, prod)| {
                            pod_metric(
                                &format!("ns/p{k}"),
                                &format!("{cpu}m"),
                                &cpu.to_string(),
                                if prod { "koord-prod" } else { "koord-batch" },
                            )
                        })
                        .collect(),
                )
            })
        })
    }

    fn with_metric(m: &Option<NodeMetric>, c: &LoadAwareConfig) -> NodeLoad {
        let mut load = NodeLoad::new();
        if let Some(m) = m {
            load.set_node_metric(m, c);
        }
        load
    }

    #[test]
    fn measured_usage_follows_the_pod() {
        let c = cfg("{}");
        // ns/p is measured at 1 core; its estimate is 4 cores, it is young.
        let m = metric(("10", "10000"), vec![pod_metric("ns/p", "1", "100", "koord-batch")]);
        let pod = || AssignedPod::from_parts("ns/p", false, v(4_000, 0), ts(-1), None);
        let measured = v(13_000, 10_000);
        let mut load = NodeLoad::new();
        load.set_node_metric(&m, &c);
        // Added after the metric: the usage waiting for it applies.
        load.add_pod(pod());
        assert_eq!(load.existing_usage(false, None), Some(measured));
        // Removed and added again: the usage waits and applies again.
        assert!(load.remove_pod("ns/p"));
        assert_eq!(load.existing_usage(false, None), Some(v(10_000, 10_000)));
        load.add_pod(pod());
        assert_eq!(load.existing_usage(false, None), Some(measured));
        // Replaced in place: still measured.
        load.add_pod(pod());
        assert_eq!(load.existing_usage(false, None), Some(measured));
        // A metric that does not report it: unmeasured, full estimate.
        load.set_node_metric(&metric(("10", "10000"), vec![]), &c);
        assert_eq!(load.existing_usage(false, None), Some(v(14_000, 10_000)));
        // Cleared: no usage left anywhere, the state of "pods, no metric".
        load.set_node_metric(&m, &c);
        load.clear_node_metric();
        let mut fresh = NodeLoad::new();
        fresh.add_pod(pod());
        assert_eq!(load, fresh);
    }

    /// One step of [`interleaved_changes_match_a_fresh_build`].
    #[derive(Debug, Clone)]
    enum Change {
        Add(AssignedPod),
        Remove(usize),
        Metric(Box<Option<NodeMetric>>),
    }

    fn arb_change() -> impl Strategy<Value = Change> {
        prop_oneof![
            3 => arb_pod().prop_map(Change::Add),
            2 => (0..12usize).prop_map(Change::Remove),
            1 => arb_metric().prop_map(|m| Change::Metric(Box::new(m))),
        ]
    }

    proptest! {
        #[test]
        fn interleaved_changes_match_a_fresh_build(
            changes in proptest::collection::vec(arb_change(), 0..40),
        ) {
            let c = cfg("{}");
            let mut load = NodeLoad::new();
            let mut pods: BTreeMap<String, AssignedPod> = BTreeMap::new();
            let mut current = None;
            for change in changes {
                match change {
                    Change::Add(p) => {
                        pods.insert(p.key().to_owned(), p.clone());
                        load.add_pod(p);
                    }
                    Change::Remove(k) => {
                        let key = format!("ns/p{k}");
                        prop_assert_eq!(load.remove_pod(&key), pods.remove(&key).is_some());
                    }
                    Change::Metric(m) => {
                        match &*m {
                            Some(m) => { load.set_node_metric(m, &c); }
                            None => load.clear_node_metric(),
                        }
                        current = *m;
                    }
                }
            }
            let mut fresh = with_metric(&current, &c);
            for p in pods.into_values() {
                fresh.add_pod(p);
            }
            prop_assert_eq!(load, fresh);
        }

        #[test]
        fn add_then_remove_all_restores_the_start(
            m in arb_metric(),
            pods in proptest::collection::vec(arb_pod(), 0..20),
            sys in any::<bool>(),
        ) {
            let c = if sys { cfg(r#"{"prodUsageIncludeSys": true}"#) } else { cfg("{}") };
            let start = with_metric(&m, &c);
            let mut load = start.clone();
            for p in &pods {
                load.add_pod(p.clone());
            }
            for p in &pods {
                load.remove_pod(p.key());
            }
            prop_assert_eq!(&load, &start);
            prop_assert_eq!(load.node_delta, LoadVector::ZERO);
            prop_assert_eq!(load.prod_delta, LoadVector::ZERO);
            prop_assert_eq!(load.node_estimated, LoadVector::ZERO);
        }

        #[test]
        fn adding_twice_is_adding_once(
            m in arb_metric(),
            pods in proptest::collection::vec(arb_pod(), 0..20),
        ) {
            let c = cfg("{}");
            let mut once = with_metric(&m, &c);
            let mut twice = once.clone();
            for p in &pods {
                once.add_pod(p.clone());
                twice.add_pod(p.clone());
                twice.add_pod(p.clone());
            }
            prop_assert_eq!(once, twice);
        }

        #[test]
        fn metric_before_or_after_pods_is_the_same(
            m in arb_metric(),
            pods in proptest::collection::vec(arb_pod(), 0..20),
        ) {
            let c = cfg("{}");
            let mut first = with_metric(&m, &c);
            for p in &pods {
                first.add_pod(p.clone());
            }
            let mut later = NodeLoad::new();
            for p in &pods {
                later.add_pod(p.clone());
            }
            if let Some(m) = &m {
                later.set_node_metric(m, &c);
            }
            prop_assert_eq!(first, later);
        }
    }
}
