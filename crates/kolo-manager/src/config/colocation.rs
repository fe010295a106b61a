//! `colocation-config`: whether and how a node's unused LS resources are
//! offered as batch / mid resources (Koordinator spec §3.2).
//!
//! The ConfigMap value is a [`ColocationStrategy`] for the whole cluster plus
//! `nodeConfigs`, each a node selector with fields that override the
//! cluster's. A node's strategy is then layered further by its
//! `node.koordinator.sh/colocation-strategy` annotation and its
//! `*-reclaim-ratio` labels ([`node_colocation_strategy`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as KubeLabelSelector;
use kolo_api::crd::{AggregatePolicy, JsonObject};
use kolo_core::selector::{LabelMap, LabelSelector};
use serde::{Deserialize, Serialize};

use serde_json::Value;

use super::merge::merge_typed;
use super::{ConfigKey, ConfigKeyError, FieldError, check_range, parse_json, parse_value};

/// Node annotation holding a JSON [`ColocationStrategy`] that overrides the
/// ConfigMap for that node.
pub const COLOCATION_STRATEGY_ANNOTATION: &str =
    kolo_api::names::annotation::NODE_COLOCATION_STRATEGY;

/// How the high-priority (LS) side of a node is counted when computing what
/// is left for batch pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CalculatePolicy {
    /// By measured usage (the default).
    #[serde(rename = "usage")]
    Usage,
    /// By requests: batch gets what LS pods did not request.
    #[serde(rename = "request")]
    Request,
    /// By the larger of usage and request, per pod.
    #[serde(rename = "maxUsageRequest")]
    MaxUsageRequest,
}

impl CalculatePolicy {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CalculatePolicy::Usage => "usage",
            CalculatePolicy::Request => "request",
            CalculatePolicy::MaxUsageRequest => "maxUsageRequest",
        }
    }
}

/// The co-location settings of a node (every field optional; absent means
/// "inherit", and [`ColocationStrategy::defaults`] fills the base layer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ColocationStrategy {
    /// Whether batch / mid resources are computed at all (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// Aggregation window of the agent's usage reports, seconds (300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_aggregate_duration_seconds: Option<i64>,
    /// How often the agent reports NodeMetric, seconds (60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_report_interval_seconds: Option<i64>,
    /// Windows of the aggregated node usages (`5m`, `10m`, `30m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_aggregate_policy: Option<AggregatePolicy>,
    /// How memory usage is measured (`usageWithoutPageCache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_memory_collect_policy: Option<String>,
    /// Percent of CPU capacity that may be used before batch gets nothing (60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_reclaim_threshold_percent: Option<i64>,
    /// How LS CPU is counted (`usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_calculate_policy: Option<CalculatePolicy>,
    /// Percent of memory capacity that may be used before batch gets nothing (65).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_reclaim_threshold_percent: Option<i64>,
    /// How LS memory is counted (`usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_calculate_policy: Option<CalculatePolicy>,
    /// Minutes after the last NodeMetric update at which batch / mid
    /// resources are withdrawn (15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degrade_time_minutes: Option<i64>,
    /// Seconds after which the node status is rewritten even without a
    /// significant change (300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_time_threshold_seconds: Option<i64>,
    /// Relative change that counts as significant (0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_diff_threshold: Option<f64>,
    /// `static` reserves a fixed share for mid; unset derives it from
    /// prodReclaimable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mid_reclaim_mode: Option<String>,
    /// Cap of mid CPU, percent of capacity (100).
    #[serde(default, rename = "midCPUThresholdPercent", skip_serializing_if = "Option::is_none")]
    pub mid_cpu_threshold_percent: Option<i64>,
    /// Cap of mid memory, percent of capacity (100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mid_memory_threshold_percent: Option<i64>,
    /// Share of the unallocated capacity added to mid, percent (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mid_unallocated_percent: Option<i64>,
    /// Static mode: mid CPU as percent of capacity (0).
    #[serde(
        default,
        rename = "midStaticCPUReservedPercent",
        skip_serializing_if = "Option::is_none"
    )]
    pub mid_static_cpu_reserved_percent: Option<i64>,
    /// Static mode: mid memory as percent of capacity (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mid_static_memory_reserved_percent: Option<i64>,
    /// Cap of batch CPU, percent of capacity (unset: no cap).
    #[serde(default, rename = "batchCPUThresholdPercent", skip_serializing_if = "Option::is_none")]
    pub batch_cpu_threshold_percent: Option<i64>,
    /// Cap of batch memory, percent of capacity (unset: no cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_memory_threshold_percent: Option<i64>,
    /// Third-party extensions, kept as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
}

impl ColocationStrategy {
    /// The reference's defaults (`DefaultColocationStrategy`).
    pub fn defaults() -> ColocationStrategy {
        ColocationStrategy {
            enable: Some(false),
            metric_aggregate_duration_seconds: Some(300),
            metric_report_interval_seconds: Some(60),
            metric_aggregate_policy: Some(AggregatePolicy {
                durations: Some(vec!["5m0s".into(), "10m0s".into(), "30m0s".into()]),
            }),
            metric_memory_collect_policy: Some("usageWithoutPageCache".into()),
            cpu_reclaim_threshold_percent: Some(60),
            cpu_calculate_policy: Some(CalculatePolicy::Usage),
            memory_reclaim_threshold_percent: Some(65),
            memory_calculate_policy: Some(CalculatePolicy::Usage),
            degrade_time_minutes: Some(15),
            update_time_threshold_seconds: Some(300),
            resource_diff_threshold: Some(0.1),
            mid_reclaim_mode: None,
            mid_cpu_threshold_percent: Some(100),
            mid_memory_threshold_percent: Some(100),
            mid_unallocated_percent: Some(0),
            mid_static_cpu_reserved_percent: Some(0),
            mid_static_memory_reserved_percent: Some(0),
            batch_cpu_threshold_percent: None,
            batch_memory_threshold_percent: None,
            extensions: None,
        }
    }

    /// Whether co-location is on for this strategy (unset means off).
    pub fn is_enabled(&self) -> bool {
        self.enable == Some(true)
    }

    /// Whether mid resources use the static mode.
    pub fn is_mid_static(&self) -> bool {
        self.mid_reclaim_mode.as_deref() == Some("static")
    }

    /// The CPU reclaim threshold, default 60.
    pub fn cpu_reclaim_threshold(&self) -> i64 {
        self.cpu_reclaim_threshold_percent.unwrap_or(60)
    }

    /// The memory reclaim threshold, default 65.
    pub fn memory_reclaim_threshold(&self) -> i64 {
        self.memory_reclaim_threshold_percent.unwrap_or(65)
    }

    /// The CPU calculate policy, default `usage`.
    pub fn cpu_policy(&self) -> CalculatePolicy {
        self.cpu_calculate_policy.unwrap_or(CalculatePolicy::Usage)
    }

    /// The memory calculate policy, default `usage`.
    pub fn memory_policy(&self) -> CalculatePolicy {
        self.memory_calculate_policy.unwrap_or(CalculatePolicy::Usage)
    }

    /// Degrade time in seconds, default 15 minutes.
    pub fn degrade_seconds(&self) -> i64 {
        self.degrade_time_minutes.unwrap_or(15).saturating_mul(60)
    }

    /// Forced status update interval in seconds, default 300.
    pub fn update_interval_seconds(&self) -> i64 {
        self.update_time_threshold_seconds.unwrap_or(300)
    }

    /// The significant-change threshold, default 0.1.
    pub fn diff_threshold(&self) -> f64 {
        self.resource_diff_threshold.unwrap_or(0.1)
    }

    /// Checks every set field against the reference's validation tags.
    pub fn validate(&self) -> Result<(), FieldError> {
        let positive = |path: &str, v: Option<i64>| check_range(path, v, Some(1), None);
        let percent = |path: &str, v: Option<i64>| check_range(path, v, Some(0), Some(100));
        let non_negative = |path: &str, v: Option<i64>| check_range(path, v, Some(0), None);
        positive(".metricAggregateDurationSeconds", self.metric_aggregate_duration_seconds)?;
        positive(".metricReportIntervalSeconds", self.metric_report_interval_seconds)?;
        positive(".degradeTimeMinutes", self.degrade_time_minutes)?;
        positive(".updateTimeThresholdSeconds", self.update_time_threshold_seconds)?;
        non_negative(".cpuReclaimThresholdPercent", self.cpu_reclaim_threshold_percent)?;
        non_negative(".memoryReclaimThresholdPercent", self.memory_reclaim_threshold_percent)?;
        percent(".midCPUThresholdPercent", self.mid_cpu_threshold_percent)?;
        percent(".midMemoryThresholdPercent", self.mid_memory_threshold_percent)?;
        percent(".midUnallocatedPercent", self.mid_unallocated_percent)?;
        non_negative(".midStaticCPUReservedPercent", self.mid_static_cpu_reserved_percent)?;
        non_negative(".midStaticMemoryReservedPercent", self.mid_static_memory_reserved_percent)?;
        non_negative(".batchCPUThresholdPercent", self.batch_cpu_threshold_percent)?;
        non_negative(".batchMemoryThresholdPercent", self.batch_memory_threshold_percent)?;
        if let Some(t) = self.resource_diff_threshold
            && !(t > 0.0 && t <= 1.0)
        {
            return Err(FieldError::new(
                ".resourceDiffThreshold",
                format!("{t} is out of range: must be greater than 0 and at most 1"),
            ));
        }
        if let Some(mode) = &self.mid_reclaim_mode
            && !mode.is_empty()
            && mode != "static"
        {
            return Err(FieldError::new(
                ".midReclaimMode",
                format!("{mode:?} is not a mid reclaim mode: use \"static\" or leave it unset"),
            ));
        }
        if let Some(policy) = &self.metric_memory_collect_policy
            && !kolo_api::crd::node_metric::MEMORY_COLLECT_POLICIES.contains(&policy.as_str())
        {
            return Err(FieldError::new(
                ".metricMemoryCollectPolicy",
                format!(
                    "{policy:?} is not one of {}",
                    kolo_api::crd::node_metric::MEMORY_COLLECT_POLICIES.join(", ")
                ),
            ));
        }
        for (i, d) in self
            .metric_aggregate_policy
            .iter()
            .flat_map(|p| p.durations.iter().flatten())
            .enumerate()
        {
            if kolo_api::crd::parse_go_duration(d).is_none_or(|d| d.is_zero()) {
                return Err(FieldError::new(
                    format!(".metricAggregatePolicy.durations[{i}]"),
                    format!("{d:?} is not a positive duration such as \"5m\""),
                ));
            }
        }
        Ok(())
    }
}

/// Overrides for the nodes a selector picks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeColocationCfg {
    /// A name for messages (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Which nodes this applies to; a missing selector matches no node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<KubeLabelSelector>,
    /// The fields that override the cluster strategy.
    #[serde(flatten)]
    pub strategy: ColocationStrategy,
}

/// The `colocation-config` value: cluster strategy plus node overrides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ColocationCfg {
    /// The cluster-wide strategy (fields inlined at the top level).
    #[serde(flatten)]
    pub cluster: ColocationStrategy,
    /// Node-selector-specific overrides; the first match wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_configs: Vec<NodeColocationCfg>,
}

impl ConfigKey for ColocationCfg {
    const KEY: &'static str = "colocation-config";

    fn from_json(text: &str) -> Result<Self, ConfigKeyError> {
        // Read the flattened parts one by one so an error keeps its path.
        let mut root: serde_json::Map<String, Value> = parse_json(Self::KEY, text)?;
        let node_configs = match root.remove("nodeConfigs") {
            None | Some(Value::Null) => Vec::new(),
            Some(value) => parse_value::<Vec<Value>>(Self::KEY, "$.nodeConfigs", value)?,
        };
        let cluster = parse_value(Self::KEY, "$", Value::Object(root))?;
        let node_configs = node_configs
            .into_iter()
            .enumerate()
            .map(|(i, value)| {
                let at = format!("$.nodeConfigs[{i}]");
                let mut fields: serde_json::Map<String, Value> =
                    parse_value(Self::KEY, &at, value)?;
                let name = match fields.remove("name") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(parse_value(Self::KEY, &format!("{at}.name"), v)?),
                };
                let node_selector = match fields.remove("nodeSelector") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(parse_value(Self::KEY, &format!("{at}.nodeSelector"), v)?),
                };
                let strategy = parse_value(Self::KEY, &at, Value::Object(fields))?;
                Ok(NodeColocationCfg { name, node_selector, strategy })
            })
            .collect::<Result<_, ConfigKeyError>>()?;
        Ok(ColocationCfg { cluster, node_configs })
    }

    fn validate(&self) -> Result<(), FieldError> {
        self.cluster.validate()?;
        for (i, node) in self.node_configs.iter().enumerate() {
            let at = format!(".nodeConfigs[{i}]");
            node.strategy.validate().map_err(|e| e.under(&at))?;
            if let Some(selector) = &node.node_selector {
                LabelSelector::compile(selector).map_err(|e| {
                    FieldError::new(
                        format!("{at}.nodeSelector.{}", selector_path(&e)),
                        e.to_string(),
                    )
                })?;
            }
        }
        Ok(())
    }
}

fn selector_path(e: &kolo_core::selector::SelectorError) -> String {
    let text = e.to_string();
    text.split_once(':').map_or(text.clone(), |(path, _)| path.to_string())
}

/// The colocation configuration resolved for use: the cluster strategy
/// layered over the defaults, and each node override layered over that.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedColocation {
    /// Defaults ← cluster fields.
    pub cluster: ColocationStrategy,
    /// Per override: its compiled selector and cluster ← override fields.
    pub nodes: Vec<(Option<String>, Option<LabelSelector>, ColocationStrategy)>,
}

impl ResolvedColocation {
    /// Resolves a parsed `colocation-config` (already validated).
    pub fn resolve(cfg: &ColocationCfg) -> ResolvedColocation {
        let cluster = layer(&ColocationStrategy::defaults(), &cfg.cluster);
        let nodes = cfg
            .node_configs
            .iter()
            .map(|n| {
                // Validation compiled the selector already; a failure here
                // cannot happen, and would only make the override match nothing.
                let selector =
                    n.node_selector.as_ref().and_then(|s| LabelSelector::compile(s).ok());
                (n.name.clone(), selector, layer(&cluster, &n.strategy))
            })
            .collect();
        ResolvedColocation { cluster, nodes }
    }
}

impl Default for ResolvedColocation {
    fn default() -> Self {
        ResolvedColocation { cluster: ColocationStrategy::defaults(), nodes: Vec::new() }
    }
}

/// `overlay`'s set fields over `base`.
pub fn layer(base: &ColocationStrategy, overlay: &ColocationStrategy) -> ColocationStrategy {
    let overlay = serde_json::to_value(overlay).expect("a strategy serializes");
    merge_typed(base, &overlay).expect("a merged strategy deserializes")
}

/// A node's effective strategy (reference `GetNodeColocationStrategy`):
/// the cluster strategy, then the first matching node override, then the
/// node's `colocation-strategy` annotation, then its reclaim-ratio labels.
///
/// A malformed annotation or label is skipped and reported in the returned
/// warnings (naming the node and the key); it never disables co-location.
pub fn node_colocation_strategy(
    resolved: &ResolvedColocation,
    node_name: &str,
    labels: &(impl LabelMap + ?Sized),
    annotation: Option<&str>,
) -> (ColocationStrategy, Vec<String>) {
    let mut warnings = Vec::new();
    let mut strategy = resolved
        .nodes
        .iter()
        .find(|(_, selector, _)| selector.as_ref().is_some_and(|s| s.matches(labels)))
        .map_or_else(|| resolved.cluster.clone(), |(_, _, s)| s.clone());
    if let Some(text) = annotation.filter(|t| !t.trim().is_empty()) {
        match serde_json::from_str::<ColocationStrategy>(text) {
            Ok(overlay) => match overlay.validate() {
                Ok(()) => strategy = layer(&strategy, &overlay),
                Err(e) => warnings.push(format!(
                    "node {node_name}: annotation {COLOCATION_STRATEGY_ANNOTATION}: ${}: {} (ignored)",
                    e.path, e.message
                )),
            },
            Err(e) => warnings.push(format!(
                "node {node_name}: annotation {COLOCATION_STRATEGY_ANNOTATION}: {e} (ignored)"
            )),
        }
    }
    type Field = fn(&mut ColocationStrategy) -> &mut Option<i64>;
    let ratio_labels: [(&str, Field); 4] = [
        (kolo_api::names::label::NODE_CPU_RECLAIM_RATIO, |s| &mut s.cpu_reclaim_threshold_percent),
        (kolo_api::names::label::NODE_MEMORY_RECLAIM_RATIO, |s| {
            &mut s.memory_reclaim_threshold_percent
        }),
        (kolo_api::names::label::NODE_MID_STATIC_CPU_RESERVED_RATIO, |s| {
            &mut s.mid_static_cpu_reserved_percent
        }),
        (kolo_api::names::label::NODE_MID_STATIC_MEMORY_RESERVED_RATIO, |s| {
            &mut s.mid_static_memory_reserved_percent
        }),
    ];
    for (key, field) in ratio_labels {
        let Some(text) = labels.label(key) else { continue };
        match text.trim().parse::<f64>() {
            // The reference: int64(ratio * 100), negative values ignored.
            Ok(ratio) if ratio.is_finite() && ratio >= 0.0 => {
                *field(&mut strategy) = Some((ratio * 100.0) as i64);
            }
            _ => warnings.push(format!(
                "node {node_name}: label {key}={text:?} is not a non-negative ratio such as 0.7 (ignored)"
            )),
        }
    }
    over_capacity_warnings(&strategy, node_name, &mut warnings);
    (strategy, warnings)
}

/// A reclaim threshold above 100 % is valid (the reference only requires
/// at least 0) but lets batch allocatable exceed the node's capacity:
/// said, not silently applied.
fn over_capacity_warnings(
    strategy: &ColocationStrategy,
    node_name: &str,
    warnings: &mut Vec<String>,
) {
    let thresholds = [
        ("cpuReclaimThresholdPercent", "batch-cpu", strategy.cpu_reclaim_threshold_percent),
        (
            "memoryReclaimThresholdPercent",
            "batch-memory",
            strategy.memory_reclaim_threshold_percent,
        ),
    ];
    for (field, resource, percent) in thresholds {
        if let Some(percent) = percent.filter(|p| *p > 100) {
            warnings.push(format!(
                "node {node_name}: {field} {percent} is above 100: {resource} may reach {:.1}× \
                 the node's capacity",
                percent as f64 / 100.0
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::parse_key;

    fn parse(text: &str) -> Result<ColocationCfg, crate::config::ConfigKeyError> {
        let data = BTreeMap::from([("colocation-config".to_string(), text.to_string())]);
        parse_key::<ColocationCfg>(Some(&data)).map(|c| c.unwrap())
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn defaults_match_the_reference() {
        let d = ColocationStrategy::defaults();
        assert!(!d.is_enabled());
        assert_eq!(d.cpu_reclaim_threshold(), 60);
        assert_eq!(d.memory_reclaim_threshold(), 65);
        assert_eq!(d.degrade_seconds(), 900);
        assert_eq!(d.update_interval_seconds(), 300);
        assert_eq!(d.diff_threshold(), 0.1);
        assert_eq!(d.cpu_policy(), CalculatePolicy::Usage);
        assert_eq!(d.batch_cpu_threshold_percent, None);
        assert_eq!(d.validate(), Ok(()));
    }

    #[test]
    fn cluster_fields_override_defaults_and_nodes_override_cluster() {
        let cfg = parse(
            r#"{"enable":true,"cpuReclaimThresholdPercent":70,
                "nodeConfigs":[
                  {"name":"gpu","nodeSelector":{"matchLabels":{"pool":"gpu"}},"cpuReclaimThresholdPercent":50},
                  {"name":"also-gpu","nodeSelector":{"matchLabels":{"pool":"gpu"}},"cpuReclaimThresholdPercent":40}
                ]}"#,
        )
        .unwrap();
        let resolved = ResolvedColocation::resolve(&cfg);
        assert!(resolved.cluster.is_enabled());
        assert_eq!(resolved.cluster.cpu_reclaim_threshold(), 70);
        assert_eq!(resolved.cluster.memory_reclaim_threshold(), 65, "default kept");
        let (gpu, w) = node_colocation_strategy(&resolved, "n1", &labels(&[("pool", "gpu")]), None);
        assert!(w.is_empty());
        assert_eq!(gpu.cpu_reclaim_threshold(), 50, "first matching override wins");
        assert!(gpu.is_enabled(), "inherits cluster enable");
        let (other, _) =
            node_colocation_strategy(&resolved, "n2", &labels(&[("pool", "cpu")]), None);
        assert_eq!(other.cpu_reclaim_threshold(), 70);
    }

    #[test]
    fn annotation_then_labels_override() {
        let resolved = ResolvedColocation::resolve(&parse(r#"{"enable":true}"#).unwrap());
        let node_labels = labels(&[
            (kolo_api::names::label::NODE_CPU_RECLAIM_RATIO, "0.7"),
            (kolo_api::names::label::NODE_MEMORY_RECLAIM_RATIO, "-1"),
        ]);
        let (s, warnings) = node_colocation_strategy(
            &resolved,
            "n1",
            &node_labels,
            Some(r#"{"cpuReclaimThresholdPercent":55,"memoryReclaimThresholdPercent":80}"#),
        );
        assert_eq!(s.cpu_reclaim_threshold(), 70, "label beats annotation");
        assert_eq!(s.memory_reclaim_threshold(), 80, "negative label ignored");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("memory-reclaim-ratio"), "{warnings:?}");
    }

    #[test]
    fn malformed_annotation_is_ignored_with_a_warning() {
        let resolved = ResolvedColocation::resolve(&parse(r#"{"enable":true}"#).unwrap());
        let (s, warnings) = node_colocation_strategy(&resolved, "n1", &labels(&[]), Some("{oops"));
        assert!(s.is_enabled(), "a bad annotation must not disable co-location");
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("node n1: annotation node.koordinator.sh/colocation-strategy:")
        );
    }

    #[test]
    fn reclaim_thresholds_above_100_percent_are_warned_about() {
        let cfg = parse(r#"{"enable":true,"cpuReclaimThresholdPercent":500}"#).unwrap();
        let resolved = ResolvedColocation::resolve(&cfg);
        let (s, warnings) = node_colocation_strategy(&resolved, "n1", &labels(&[]), None);
        assert_eq!(s.cpu_reclaim_threshold(), 500, "valid, as in the reference");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("node n1: cpuReclaimThresholdPercent 500 is above 100"));
        assert!(warnings[0].contains("5.0×"), "{}", warnings[0]);
        // The same from a node's reclaim-ratio label.
        let cfg = parse(r#"{"enable":true}"#).unwrap();
        let label = [(kolo_api::names::label::NODE_MEMORY_RECLAIM_RATIO, "1.5")];
        let (_, warnings) = node_colocation_strategy(
            &ResolvedColocation::resolve(&cfg),
            "n2",
            &labels(&label),
            None,
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("memoryReclaimThresholdPercent 150"), "{}", warnings[0]);
    }

    #[test]
    fn validation_errors_name_the_path() {
        let cases = [
            (r#"{"cpuReclaimThresholdPercent":-1}"#, "$.cpuReclaimThresholdPercent"),
            (r#"{"resourceDiffThreshold":0}"#, "$.resourceDiffThreshold"),
            (r#"{"midCPUThresholdPercent":101}"#, "$.midCPUThresholdPercent"),
            (r#"{"midReclaimMode":"dynamic"}"#, "$.midReclaimMode"),
            (r#"{"metricMemoryCollectPolicy":"all"}"#, "$.metricMemoryCollectPolicy"),
            (
                r#"{"metricAggregatePolicy":{"durations":["5m","soon"]}}"#,
                "$.metricAggregatePolicy.durations[1]",
            ),
            (
                r#"{"nodeConfigs":[{},{"degradeTimeMinutes":0}]}"#,
                "$.nodeConfigs[1].degradeTimeMinutes",
            ),
            (
                r#"{"nodeConfigs":[{"nodeSelector":{"matchExpressions":[{"key":"a","operator":"Near"}]}}]}"#,
                "$.nodeConfigs[0].nodeSelector.matchExpressions[0].operator",
            ),
            (r#"{"cpuCalculatePolicy":"guess"}"#, "$.cpuCalculatePolicy"),
        ];
        for (text, path) in cases {
            let err = parse(text).unwrap_err();
            assert_eq!(err.key, "colocation-config");
            assert_eq!(err.path, path, "{text}: {err}");
        }
    }
}
