//! [`LowNodeLoadArgs`]: the plugin's configuration in Koordinator's
//! v1alpha2 JSON, its defaults and validation (spec §9.1), and the
//! conversion into node pools ([`NodePool`]), the top-level values first as
//! `__default_node_pool__`.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as KubeLabelSelector;
use kolo_core::resources::ResourceName;
use kolo_core::selector::LabelSelector;
use serde::{Deserialize, Serialize};

/// The name of the pool the top-level values become.
pub const DEFAULT_POOL: &str = "__default_node_pool__";
/// `nodeMetricExpirationSeconds` when not set.
pub const DEFAULT_NODE_METRIC_EXPIRATION_SECONDS: i64 = 180;
/// `detectorCacheTimeout` when not set.
pub const DEFAULT_DETECTOR_CACHE_TIMEOUT: Duration = Duration::from_secs(300);
/// The largest percentage accepted (a threshold far above 100 % already
/// means "never"; the bound keeps the arithmetic finite).
pub const MAX_PERCENT: f64 = 100_000.0;

/// Resource name → percent.
pub type Thresholds = BTreeMap<String, f64>;

/// An invalid configuration; names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("LowNodeLoadArgs {field}: {message}")]
pub struct Error {
    /// The field, e.g. `nodePools[1].lowThresholds.cpu`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> Error {
    Error { field: field.into(), message: message.into() }
}

/// `evictableNamespaces`: at most one of the two lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Namespaces {
    /// Only these namespaces are evictable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// These namespaces are not evictable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

/// One entry of `podSelectors` (the entries are ORed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSelector {
    /// A name for logs.
    #[serde(default)]
    pub name: String,
    /// The label selector; absent matches every pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<KubeLabelSelector>,
}

/// `anomalyCondition`: how many consecutive rounds over the high threshold
/// make a node a source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnomalyCondition {
    /// How long the anomaly state lasts once entered (Go duration; absent
    /// or zero: 1 minute).
    #[serde(default, with = "go_duration", skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// The node is abnormal once this many consecutive rounds are
    /// exceeded (0: the default 5 at the top level).
    #[serde(default)]
    pub consecutive_abnormalities: u32,
    /// The anomaly state ends once this many consecutive normal rounds are
    /// exceeded.
    #[serde(default)]
    pub consecutive_normalities: u32,
}

impl AnomalyCondition {
    /// Koordinator's default: 1 minute, 5 abnormalities, 3 normalities.
    pub fn koordinator_default() -> AnomalyCondition {
        AnomalyCondition {
            timeout: Some(Duration::from_secs(60)),
            consecutive_abnormalities: 5,
            consecutive_normalities: 3,
        }
    }

    /// How long the anomaly state lasts (a zero or absent timeout is the
    /// detector's 60 s).
    pub fn effective_timeout(&self) -> Duration {
        self.timeout.filter(|t| !t.is_zero()).unwrap_or(Duration::from_secs(60))
    }
}

/// One entry of `nodePools`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodePoolArgs {
    /// The pool's name.
    #[serde(default)]
    pub name: String,
    /// Which nodes belong to the pool (absent: every node not yet processed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<KubeLabelSelector>,
    /// Thresholds are deviations from the pool's mean usage.
    #[serde(default)]
    pub use_deviation_thresholds: bool,
    /// Low thresholds (inherits the top level when both maps are empty).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub low_thresholds: Thresholds,
    /// High thresholds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub high_thresholds: Thresholds,
    /// Prod low thresholds (inherits the top level when both prod maps are
    /// empty).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prod_low_thresholds: Thresholds,
    /// Prod high thresholds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prod_high_thresholds: Thresholds,
    /// Resource weights (inherits the top level when empty).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_weights: BTreeMap<String, i64>,
    /// Anomaly condition (inherits the top level when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anomaly_condition: Option<AnomalyCondition>,
}

/// `LowNodeLoadArgs` (v1alpha2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LowNodeLoadArgs {
    /// `apiVersion`, accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `kind`, accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Do nothing.
    #[serde(default)]
    pub paused: bool,
    /// Decide and report, but never call the evictor.
    #[serde(default)]
    pub dry_run: bool,
    /// Act only when more than this many nodes are low (≥ 0).
    #[serde(default)]
    pub number_of_nodes: i32,
    /// A NodeMetric older than this is ignored (> 0; default 180).
    #[serde(default = "default_expiration")]
    pub node_metric_expiration_seconds: i64,
    /// Which namespaces may be evicted from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evictable_namespaces: Option<Namespaces>,
    /// The default pool's node selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<KubeLabelSelector>,
    /// Which pods may be evicted (ORed; empty: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_selectors: Vec<PodSelector>,
    /// Check that each candidate fits a target node (default true).
    #[serde(default = "yes")]
    pub node_fit: bool,
    /// Thresholds are deviations from the mean usage.
    #[serde(default)]
    pub use_deviation_thresholds: bool,
    /// Low thresholds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub low_thresholds: Thresholds,
    /// High thresholds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub high_thresholds: Thresholds,
    /// Prod low thresholds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prod_low_thresholds: Thresholds,
    /// Prod high thresholds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prod_high_thresholds: Thresholds,
    /// Resource weights of the usage scores.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_weights: BTreeMap<String, i64>,
    /// The anomaly condition (default 1 m, 5, 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anomaly_condition: Option<AnomalyCondition>,
    /// How long an untouched anomaly detector is kept (default 5 m).
    #[serde(default, with = "go_duration", skip_serializing_if = "Option::is_none")]
    pub detector_cache_timeout: Option<Duration>,
    /// Further pools, after the default one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_pools: Vec<NodePoolArgs>,
}

fn default_expiration() -> i64 {
    DEFAULT_NODE_METRIC_EXPIRATION_SECONDS
}

fn yes() -> bool {
    true
}

impl Default for LowNodeLoadArgs {
    fn default() -> LowNodeLoadArgs {
        LowNodeLoadArgs {
            api_version: None,
            kind: None,
            paused: false,
            dry_run: false,
            number_of_nodes: 0,
            node_metric_expiration_seconds: DEFAULT_NODE_METRIC_EXPIRATION_SECONDS,
            evictable_namespaces: None,
            node_selector: None,
            pod_selectors: Vec::new(),
            node_fit: true,
            use_deviation_thresholds: false,
            low_thresholds: Thresholds::new(),
            high_thresholds: Thresholds::new(),
            prod_low_thresholds: Thresholds::new(),
            prod_high_thresholds: Thresholds::new(),
            resource_weights: BTreeMap::new(),
            anomaly_condition: None,
            detector_cache_timeout: None,
            node_pools: Vec::new(),
        }
    }
}

/// A pool ready to run: selectors compiled, names resolved, defaults and
/// inheritance applied.
#[derive(Debug, Clone, PartialEq)]
pub struct NodePool {
    /// The pool's name.
    pub name: String,
    /// Which nodes belong (`None`: all).
    pub selector: Option<LabelSelector>,
    /// Deviation thresholds.
    pub deviation: bool,
    /// Low percentages as configured.
    pub low: BTreeMap<ResourceName, f64>,
    /// High percentages.
    pub high: BTreeMap<ResourceName, f64>,
    /// Prod low percentages.
    pub prod_low: BTreeMap<ResourceName, f64>,
    /// Prod high percentages.
    pub prod_high: BTreeMap<ResourceName, f64>,
    /// Weights (all positive).
    pub weights: BTreeMap<ResourceName, i64>,
    /// The anomaly condition.
    pub anomaly: AnomalyCondition,
}

impl LowNodeLoadArgs {
    /// Reads, defaults and validates the args; errors name the field.
    pub fn from_value(value: serde_json::Value) -> Result<LowNodeLoadArgs, Error> {
        let value = match value {
            serde_json::Value::Null => serde_json::Value::Object(Default::default()),
            serde_json::Value::Object(_) => value,
            // Serde would read a struct from an array, field by field.
            other => return Err(invalid("(args)", format!("expected an object, got {other}"))),
        };
        let args: LowNodeLoadArgs = serde_path_to_error::deserialize(value)
            .map_err(|e| invalid(e.path().to_string(), e.inner().to_string()))?;
        let args = args.defaulted();
        args.validate()?;
        Ok(args)
    }

    /// Koordinator's defaulting: the anomaly condition, its abnormalities
    /// count, the resource weights (cpu and memory 1, plus 1 for every
    /// threshold resource; non-positive weights become 1).
    #[must_use]
    pub fn defaulted(mut self) -> LowNodeLoadArgs {
        match &mut self.anomaly_condition {
            None => self.anomaly_condition = Some(AnomalyCondition::koordinator_default()),
            Some(c) if c.consecutive_abnormalities == 0 => c.consecutive_abnormalities = 5,
            Some(_) => {}
        }
        if self.detector_cache_timeout.is_none() {
            self.detector_cache_timeout = Some(DEFAULT_DETECTOR_CACHE_TIMEOUT);
        }
        default_weights(&mut self.resource_weights, [&self.low_thresholds, &self.high_thresholds]);
        self
    }

    /// Validation (§9.1), on defaulted args.
    pub fn validate(&self) -> Result<(), Error> {
        if self.number_of_nodes < 0 {
            return Err(invalid("numberOfNodes", "must be greater than or equal to 0"));
        }
        if self.node_metric_expiration_seconds <= 0 {
            return Err(invalid("nodeMetricExpirationSeconds", "must be greater than 0"));
        }
        if let Some(ns) = &self.evictable_namespaces
            && !ns.include.is_empty()
            && !ns.exclude.is_empty()
        {
            return Err(invalid("evictableNamespaces", "only one of include/exclude can be set"));
        }
        for (i, s) in self.pod_selectors.iter().enumerate() {
            compile(s.selector.as_ref(), &format!("podSelectors[{i}].selector"))?;
        }
        self.pools().map(|_| ())
    }

    /// The pools in processing order: the top-level values as
    /// [`DEFAULT_POOL`], then `nodePools`, each inheriting what it leaves
    /// empty from the top level.
    pub fn pools(&self) -> Result<Vec<NodePool>, Error> {
        let top = NodePoolArgs {
            name: DEFAULT_POOL.to_owned(),
            node_selector: self.node_selector.clone(),
            use_deviation_thresholds: self.use_deviation_thresholds,
            low_thresholds: self.low_thresholds.clone(),
            high_thresholds: self.high_thresholds.clone(),
            prod_low_thresholds: self.prod_low_thresholds.clone(),
            prod_high_thresholds: self.prod_high_thresholds.clone(),
            resource_weights: self.resource_weights.clone(),
            anomaly_condition: self.anomaly_condition.clone(),
        };
        let mut out = vec![resolve(&top, "")?];
        for (i, pool) in self.node_pools.iter().enumerate() {
            let mut pool = pool.clone();
            if pool.low_thresholds.is_empty() && pool.high_thresholds.is_empty() {
                pool.use_deviation_thresholds = top.use_deviation_thresholds;
                pool.low_thresholds = top.low_thresholds.clone();
                pool.high_thresholds = top.high_thresholds.clone();
            }
            if pool.prod_low_thresholds.is_empty() && pool.prod_high_thresholds.is_empty() {
                pool.prod_low_thresholds = top.prod_low_thresholds.clone();
                pool.prod_high_thresholds = top.prod_high_thresholds.clone();
            }
            if pool.resource_weights.is_empty() {
                pool.resource_weights = top.resource_weights.clone();
            } else {
                default_weights(
                    &mut pool.resource_weights,
                    [&pool.low_thresholds, &pool.high_thresholds],
                );
            }
            if pool.anomaly_condition.is_none() {
                pool.anomaly_condition = top.anomaly_condition.clone();
            }
            out.push(resolve(&pool, &format!("nodePools[{i}]."))?);
        }
        Ok(out)
    }
}

fn default_weights(weights: &mut BTreeMap<String, i64>, thresholds: [&Thresholds; 2]) {
    let named = thresholds.into_iter().flat_map(|t| t.keys().map(String::as_str));
    for name in ["cpu", "memory"].into_iter().chain(named) {
        let w = weights.entry(name.to_owned()).or_insert(1);
        if *w <= 0 {
            *w = 1;
        }
    }
}

fn compile(
    selector: Option<&KubeLabelSelector>,
    field: &str,
) -> Result<Option<LabelSelector>, Error> {
    selector
        .map(|s| LabelSelector::compile(s).map_err(|e| invalid(field, e.to_string())))
        .transpose()
}

fn percents(map: &Thresholds, field: &str) -> Result<BTreeMap<ResourceName, f64>, Error> {
    let mut out = BTreeMap::new();
    for (name, &pct) in map {
        let field = format!("{field}.{name}");
        if !pct.is_finite() || !(0.0..=MAX_PERCENT).contains(&pct) {
            return Err(invalid(
                field,
                format!("percentage {pct} must be between 0 and {MAX_PERCENT}"),
            ));
        }
        let resource = ResourceName::parse(name).map_err(|e| invalid(&field, e.to_string()))?;
        out.insert(resource, pct);
    }
    Ok(out)
}

/// Checks that `low` and `high` name the same resources and `low ≤ high`.
fn paired(
    low: &BTreeMap<ResourceName, f64>,
    high: &BTreeMap<ResourceName, f64>,
    (low_field, high_field): (&str, &str),
) -> Result<(), Error> {
    for (r, l) in low {
        match high.get(r) {
            None => {
                return Err(invalid(
                    format!("{low_field}.{r}"),
                    format!("set without {high_field}.{r}"),
                ));
            }
            Some(h) if l > h => {
                return Err(invalid(
                    format!("{low_field}.{r}"),
                    format!("{l} is above {high_field}.{r} {h}"),
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(r) = high.keys().find(|r| !low.contains_key(r)) {
        return Err(invalid(format!("{high_field}.{r}"), format!("set without {low_field}.{r}")));
    }
    Ok(())
}

fn resolve(pool: &NodePoolArgs, prefix: &str) -> Result<NodePool, Error> {
    let f = |name: &str| format!("{prefix}{name}");
    let low = percents(&pool.low_thresholds, &f("lowThresholds"))?;
    let high = percents(&pool.high_thresholds, &f("highThresholds"))?;
    let prod_low = percents(&pool.prod_low_thresholds, &f("prodLowThresholds"))?;
    let prod_high = percents(&pool.prod_high_thresholds, &f("prodHighThresholds"))?;
    paired(&low, &high, (&f("lowThresholds"), &f("highThresholds")))?;
    paired(&prod_low, &prod_high, (&f("prodLowThresholds"), &f("prodHighThresholds")))?;
    for (r, ph) in &prod_high {
        if let Some(h) = high.get(r)
            && ph > h
        {
            return Err(invalid(
                format!("{}.{r}", f("prodHighThresholds")),
                format!("{ph} is above highThresholds.{r} {h}"),
            ));
        }
    }
    let anomaly =
        pool.anomaly_condition.clone().unwrap_or_else(AnomalyCondition::koordinator_default);
    if anomaly.consecutive_abnormalities == 0 {
        return Err(invalid(
            f("anomalyCondition.consecutiveAbnormalities"),
            "must be greater than 0",
        ));
    }
    let mut weights = BTreeMap::new();
    for (name, &w) in &pool.resource_weights {
        let r = ResourceName::parse(name)
            .map_err(|e| invalid(format!("{}.{name}", f("resourceWeights")), e.to_string()))?;
        weights.insert(r, w.max(1));
    }
    Ok(NodePool {
        name: pool.name.clone(),
        selector: compile(pool.node_selector.as_ref(), &f("nodeSelector"))?,
        deviation: pool.use_deviation_thresholds,
        low,
        high,
        prod_low,
        prod_high,
        weights,
        anomaly,
    })
}

/// Go duration strings (`1m`, `300s`) for `metav1.Duration` fields.
mod go_duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let Some(s) = Option::<String>::deserialize(d)? else { return Ok(None) };
        kolo_api::crd::parse_go_duration(&s)
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("{s:?} is not a duration (e.g. 1m, 30s)")))
    }

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&format!("{}s", d.as_secs_f64())),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResourceName::{Cpu, Memory};
    use serde_json::json;

    fn err(v: serde_json::Value) -> String {
        LowNodeLoadArgs::from_value(v).unwrap_err().to_string()
    }

    #[test]
    fn defaults_of_section_9_1() {
        let a = LowNodeLoadArgs::from_value(json!({})).unwrap();
        assert!(a.node_fit && !a.paused && !a.dry_run);
        assert_eq!((a.number_of_nodes, a.node_metric_expiration_seconds), (0, 180));
        assert_eq!(a.anomaly_condition, Some(AnomalyCondition::koordinator_default()));
        assert_eq!(a.detector_cache_timeout, Some(Duration::from_secs(300)));
        assert_eq!(a.resource_weights, BTreeMap::from([("cpu".into(), 1), ("memory".into(), 1)]));
        assert_eq!(LowNodeLoadArgs::default().defaulted(), a);
        // Threshold resources get weight 1; non-positive weights become 1.
        let a = LowNodeLoadArgs::from_value(json!({
            "lowThresholds": {"cpu": 20, "pods": 10}, "highThresholds": {"cpu": 50, "pods": 80},
            "resourceWeights": {"cpu": 3, "memory": -2},
            "anomalyCondition": {"timeout": "30s"}}))
        .unwrap();
        assert_eq!(
            a.resource_weights,
            BTreeMap::from([("cpu".into(), 3), ("memory".into(), 1), ("pods".into(), 1)])
        );
        let c = a.anomaly_condition.unwrap();
        assert_eq!(
            (c.timeout, c.consecutive_abnormalities, c.consecutive_normalities),
            (Some(Duration::from_secs(30)), 5, 0)
        );
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(
            err(json!({"numberOfNodes": -1})),
            "LowNodeLoadArgs numberOfNodes: must be greater than or equal to 0"
        );
        assert!(
            err(json!({"nodeMetricExpirationSeconds": 0})).contains("nodeMetricExpirationSeconds")
        );
        assert!(
            err(json!({"evictableNamespaces": {"include": ["a"], "exclude": ["b"]}}))
                .contains("evictableNamespaces")
        );
        assert!(
            err(json!({"nodeFit": "yes"})).starts_with("LowNodeLoadArgs nodeFit: invalid type")
        );
        assert!(
            err(json!({"anomalyCondition": {"timeout": "soon"}}))
                .contains("anomalyCondition.timeout")
        );
        assert!(err(json!({"lowThreshold": {}})).contains("unknown field `lowThreshold`"));
        assert!(err(json!([])).contains("expected an object"));
        assert!(
            err(json!({"nodePools": [{"lowThresholds": {"cpu": "x"}}]}))
                .starts_with("LowNodeLoadArgs nodePools[0].lowThresholds.cpu: invalid type")
        );
        let low_over_high =
            err(json!({"lowThresholds": {"cpu": 60}, "highThresholds": {"cpu": 50}}));
        assert_eq!(
            low_over_high,
            "LowNodeLoadArgs lowThresholds.cpu: 60 is above highThresholds.cpu 50"
        );
        assert!(
            err(json!({"lowThresholds": {"cpu": -1}, "highThresholds": {"cpu": 5}}))
                .contains("lowThresholds.cpu")
        );
        assert!(
            err(json!({"highThresholds": {"cpu": 5}}))
                .contains("highThresholds.cpu: set without lowThresholds.cpu")
        );
        assert!(
            err(json!({"lowThresholds": {"cpu": 5}, "highThresholds": {"cpu": 50},
            "prodLowThresholds": {"cpu": 5}, "prodHighThresholds": {"cpu": 60}}))
            .contains("prodHighThresholds.cpu: 60 is above highThresholds.cpu 50")
        );
        assert!(
            err(json!({"prodLowThresholds": {"cpu": 50}, "prodHighThresholds": {"cpu": 40}}))
                .contains("prodLowThresholds.cpu")
        );
        assert!(err(json!({"nodePools": [{"name": "a", "anomalyCondition": {"consecutiveNormalities": 2}}]}))
            .contains("nodePools[0].anomalyCondition.consecutiveAbnormalities"));
        assert!(
            err(
                json!({"nodePools": [{"lowThresholds": {"cpu": 9}, "highThresholds": {"cpu": 8}}]})
            )
            .contains("nodePools[0].lowThresholds.cpu")
        );
        assert!(err(json!({"podSelectors": [{"name": "x", "selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}]}))
            .contains("podSelectors[0].selector"));
    }

    #[test]
    fn pools_start_with_the_default_pool_and_inherit_the_top_level() {
        let a = LowNodeLoadArgs::from_value(json!({
        "nodeSelector": {"matchLabels": {"tier": "a"}},
        "lowThresholds": {"cpu": 20}, "highThresholds": {"cpu": 60},
        "prodLowThresholds": {"cpu": 10}, "prodHighThresholds": {"cpu": 40},
        "anomalyCondition": {"consecutiveAbnormalities": 2, "consecutiveNormalities": 1},
        "nodePools": [
            {"name": "inherits", "nodeSelector": {"matchLabels": {"tier": "b"}}},
            {"name": "own", "useDeviationThresholds": true,
             "lowThresholds": {"memory": 5}, "highThresholds": {"memory": 10},
             "resourceWeights": {"memory": 4},
             "anomalyCondition": {"consecutiveAbnormalities": 1}}
        ]}))
        .unwrap();
        let pools = a.pools().unwrap();
        let names: Vec<&str> = pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, [DEFAULT_POOL, "inherits", "own"]);
        assert!(pools[0].selector.is_some());
        let inherits = &pools[1];
        assert_eq!(inherits.low, BTreeMap::from([(Cpu, 20.0)]));
        assert_eq!(inherits.prod_high, BTreeMap::from([(Cpu, 40.0)]));
        assert_eq!(inherits.anomaly.consecutive_abnormalities, 2);
        assert_eq!(inherits.weights, BTreeMap::from([(Cpu, 1), (Memory, 1)]));
        let own = &pools[2];
        assert!(own.deviation && !pools[0].deviation);
        assert_eq!(own.high, BTreeMap::from([(Memory, 10.0)]));
        assert_eq!(own.prod_low, BTreeMap::from([(Cpu, 10.0)]), "prod maps inherited separately");
        assert_eq!(own.weights, BTreeMap::from([(Cpu, 1), (Memory, 4)]));
        assert_eq!(own.anomaly.consecutive_abnormalities, 1);
    }
}
