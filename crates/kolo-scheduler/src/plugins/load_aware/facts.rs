//! What LoadAwareScheduling's decisions for a pod rested on, as data
//! (`kolo schedule -o json`): the pod's estimate, and per node the usage,
//! allocatable and thresholds Filter compared.
//!
//! Amounts are cpu in milli-cores and everything else in its integral unit
//! (bytes for memory), keyed by resource name; percentages are whole
//! numbers.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::decide::{FilterThresholds, usage_percent};
use super::{LoadAwareConfig, LoadVector, NodeLoad, NodeProfile, PodFacts, ThresholdKind};

/// The incoming pod as the plugin estimated it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PodLoadFacts {
    /// What the pod is estimated to use (spec §1.3): its limit or request
    /// scaled by `estimatedScalingFactors`, or the unscaled defaults.
    pub estimated_usage: BTreeMap<&'static str, i64>,
    /// Whether it counts as a Prod pod (priority class koord-prod).
    pub prod: bool,
}

impl PodLoadFacts {
    /// The facts of a pod's cycle state.
    pub fn new(cfg: &LoadAwareConfig, pod: &PodFacts, estimate: &LoadVector) -> PodLoadFacts {
        PodLoadFacts { estimated_usage: cfg.layout().ints(estimate), prod: pod.prod }
    }
}

/// A node as Filter judged it for the pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeLoadFacts {
    /// Whether the node has a NodeMetric (without one, Filter passes the
    /// node and Score gives 0).
    pub has_metric: bool,
    /// The NodeMetric's `status.updateTime`, if any.
    pub metric_update_time: Option<String>,
    /// Whether the NodeMetric is at least `nodeMetricExpirationSeconds`
    /// old (Filter rejects the node unless configured otherwise).
    pub metric_expired: bool,
    /// Which usage Filter compares: `usage`, `prod` or `aggregated`.
    pub threshold_kind: ThresholdKind,
    /// The thresholds, percent per resource (0: not checked).
    pub thresholds: BTreeMap<&'static str, i64>,
    /// The node's allocatable as the plugin reads it (the raw allocatable
    /// annotation, if any, over `status.allocatable`).
    pub allocatable: BTreeMap<&'static str, i64>,
    /// The usage Filter starts from, without the pod: the NodeMetric's
    /// (or the Prod pods', or the statistic's) plus the estimates of pods
    /// assigned since the report. `null` without a NodeMetric.
    pub usage: Option<BTreeMap<&'static str, i64>>,
    /// `usage` plus the pod's estimate, as a percentage of `allocatable`:
    /// what Filter compares with `thresholds` (resources with no
    /// allocatable are left out).
    pub usage_percent_with_pod: Option<BTreeMap<&'static str, i64>>,
}

impl NodeLoadFacts {
    /// The facts of one node for a pod.
    pub fn new(
        cfg: &LoadAwareConfig,
        node: &NodeProfile,
        load: Option<&NodeLoad>,
        pod: &PodFacts,
        estimate: &LoadVector,
        now: Timestamp,
    ) -> NodeLoadFacts {
        let layout = cfg.layout();
        let FilterThresholds { kind, percent, aggregation } = node.filter_thresholds(pod);
        let usage = load.and_then(|l| l.existing_usage(kind == ThresholdKind::Prod, aggregation));
        let allocatable = node.allocatable();
        let percent_with_pod = usage.map(|usage| {
            let with_pod = usage.saturating_add(estimate);
            (0..layout.len())
                .filter(|&i| allocatable.0[i] != 0)
                .map(|i| (layout.name(i).as_str(), usage_percent(with_pod.0[i], allocatable.0[i])))
                .collect()
        });
        NodeLoadFacts {
            has_metric: load.is_some_and(NodeLoad::has_node_metric),
            metric_update_time: load.and_then(NodeLoad::update_time).map(|t| t.to_string()),
            metric_expired: load.is_none_or(|l| l.is_expired(now, cfg.expiration())),
            threshold_kind: kind,
            thresholds: layout.ints(percent),
            allocatable: layout.ints(allocatable),
            usage: usage.map(|u| layout.ints(&u)),
            usage_percent_with_pod: percent_with_pod,
        }
    }
}
