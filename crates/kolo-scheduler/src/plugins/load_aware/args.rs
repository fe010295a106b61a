//! `LoadAwareSchedulingArgs`: the plugin's configuration as written in a
//! scheduler profile, with the reference's JSON names, defaults and
//! validation (spec §1.1).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use kolo_api::crd::parse_go_duration;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The name of the only estimator (also selected by an empty `estimator`).
pub const DEFAULT_ESTIMATOR: &str = "defaultEstimator";

/// Default `nodeMetricExpirationSeconds`.
pub const DEFAULT_NODE_METRIC_EXPIRATION_SECONDS: i64 = 180;

/// Default `resourceWeights` (applied only when the map is empty and
/// `dominantResourceWeight` is 0).
pub const DEFAULT_RESOURCE_WEIGHTS: [(&str, i64); 2] = [("cpu", 1), ("memory", 1)];

/// Default `usageThresholds` (applied when the map is empty).
pub const DEFAULT_USAGE_THRESHOLDS: [(&str, i64); 2] = [("cpu", 65), ("memory", 95)];

/// Default `estimatedScalingFactors` (missing keys are filled from it).
pub const DEFAULT_ESTIMATED_SCALING_FACTORS: [(&str, i64); 2] = [("cpu", 85), ("memory", 70)];

/// The arguments of the `LoadAwareScheduling` plugin.
///
/// Field names on the wire are the reference's (`camelCase`). Resource maps
/// are keyed by Kubernetes resource names (`cpu`, `memory`,
/// `kubernetes.io/batch-cpu`, ...). Deserialising fills the scalar defaults;
/// the map defaults depend on each other and are applied by
/// [`defaulted`](Self::defaulted). `Default` is the defaulted empty object.
///
/// Unknown fields are rejected, so a misspelt field is an error instead of a
/// silently ignored setting; `apiVersion` and `kind` (which scheduler
/// profiles may carry inside plugin args) are accepted and ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoadAwareSchedulingArgs {
    /// Ignored; accepted because typed plugin args carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Ignored; accepted because typed plugin args carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Deprecated switch of the expiry check in Filter (default `true`).
    #[serde(default = "default_true")]
    pub filter_expired_node_metrics: bool,
    /// A NodeMetric older than this many seconds is expired (default 180;
    /// must be > 0).
    #[serde(default = "default_expiration")]
    pub node_metric_expiration_seconds: i64,
    /// With an expired NodeMetric, Filter passes the node instead of
    /// rejecting it (default `false`).
    #[serde(default)]
    pub enable_schedule_when_node_metrics_expired: bool,
    /// Score weight per resource, each 1..=100.
    #[serde(default)]
    pub resource_weights: BTreeMap<String, i64>,
    /// Weight of the dominant (minimum) per-resource score, 0..=100.
    #[serde(default)]
    pub dominant_resource_weight: i64,
    /// Node usage thresholds in percent, each 0..=100; 0 disables a resource.
    #[serde(default)]
    pub usage_thresholds: BTreeMap<String, i64>,
    /// Thresholds for Prod pods against the usage of Prod pods.
    #[serde(default)]
    pub prod_usage_thresholds: BTreeMap<String, i64>,
    /// Count the NodeMetric's `systemUsage` in the Prod usage.
    #[serde(default)]
    pub prod_usage_include_sys: bool,
    /// Score Prod pods on Prod usage instead of node usage. (`*bool` in the
    /// reference; nil means false.)
    #[serde(default)]
    pub score_according_prod_usage: bool,
    /// The estimator; `""` or [`DEFAULT_ESTIMATOR`].
    #[serde(default)]
    pub estimator: String,
    /// Percent of a pod's request (or limit) it is estimated to use, per
    /// resource, each 1..=100.
    #[serde(default)]
    pub estimated_scaling_factors: BTreeMap<String, i64>,
    /// Keep estimating a pod for this many seconds after it was scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_seconds_after_pod_scheduled: Option<i64>,
    /// Keep estimating a pod for this many seconds after it initialised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_seconds_after_initialized: Option<i64>,
    /// Read the per-pod estimation annotations
    /// (`scheduling.koordinator.sh/load-estimated-*`).
    #[serde(default)]
    pub allow_customize_estimation: bool,
    /// Percentile-based filtering and scoring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregated: Option<LoadAwareSchedulingAggregatedArgs>,
    /// Extra resources to track (they take part in the dominant score).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supported_resources: Vec<String>,
}

/// The `aggregated` block: which percentile of the node usage Filter and
/// Score look at.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoadAwareSchedulingAggregatedArgs {
    /// Thresholds against the aggregated usage, each 0..=100.
    #[serde(default)]
    pub usage_thresholds: BTreeMap<String, i64>,
    /// `avg`, `p50`, `p90`, `p95` or `p99`; empty disables aggregated Filter.
    #[serde(default)]
    pub usage_aggregation_type: String,
    /// The window; 0 means the largest window the node reports.
    #[serde(default, with = "go_duration")]
    pub usage_aggregated_duration: Duration,
    /// Statistic Score uses; empty scores on the plain node usage.
    #[serde(default)]
    pub score_aggregation_type: String,
    /// The window Score uses; 0 means the largest one reported.
    #[serde(default, with = "go_duration")]
    pub score_aggregated_duration: Duration,
}

fn default_true() -> bool {
    true
}

fn default_expiration() -> i64 {
    DEFAULT_NODE_METRIC_EXPIRATION_SECONDS
}

impl Default for LoadAwareSchedulingArgs {
    fn default() -> Self {
        LoadAwareSchedulingArgs::empty().defaulted()
    }
}

/// An invalid argument; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadAwareArgsError {
    /// `nodeMetricExpirationSeconds` is not positive.
    #[error("nodeMetricExpirationSeconds: {0} must be > 0")]
    Expiration(i64),
    /// A per-resource value is out of its range.
    #[error("{field}[{resource}]: {value} is outside {min}..={max}")]
    OutOfRange {
        /// The map, e.g. `resourceWeights` or `aggregated.usageThresholds`.
        field: &'static str,
        /// The key.
        resource: String,
        /// The value given.
        value: i64,
        /// Smallest allowed value.
        min: i64,
        /// Largest allowed value.
        max: i64,
    },
    /// `dominantResourceWeight` is out of 0..=100.
    #[error("dominantResourceWeight: {0} is outside 0..=100")]
    DominantWeight(i64),
    /// A weighted resource has no scaling factor, so it would never be
    /// estimated.
    #[error("resourceWeights[{0}]: the resource has no estimatedScalingFactors entry")]
    WeightWithoutFactor(String),
    /// An aggregation type is not one of the statistics NodeMetric reports.
    #[error("{field}: {value:?} is not an aggregation type (avg, p50, p90, p95, p99)")]
    AggregationType {
        /// `aggregated.usageAggregationType` or
        /// `aggregated.scoreAggregationType`.
        field: &'static str,
        /// The value given.
        value: String,
    },
    /// `estimator` names an estimator kolo does not have.
    #[error("estimator: unknown estimator {0:?} (only \"defaultEstimator\", or empty, exists)")]
    UnknownEstimator(String),
    /// A resource name could not be tracked (the extended-resource
    /// registry is full).
    #[error("{field}: {error}")]
    Resource {
        /// Where the name appears.
        field: &'static str,
        /// Why it cannot be tracked.
        error: kolo_core::resources::ResourceError,
    },
    /// The arguments name more resources than the plugin's vectors hold.
    #[error(transparent)]
    TooManyResources(#[from] super::vector::TooManyResources),
}

impl LoadAwareSchedulingArgs {
    /// The arguments as deserialising `{}` gives them: scalar defaults set,
    /// every map empty (no defaults applied to maps yet).
    pub fn empty() -> Self {
        LoadAwareSchedulingArgs {
            api_version: None,
            kind: None,
            filter_expired_node_metrics: true,
            node_metric_expiration_seconds: DEFAULT_NODE_METRIC_EXPIRATION_SECONDS,
            enable_schedule_when_node_metrics_expired: false,
            resource_weights: BTreeMap::new(),
            dominant_resource_weight: 0,
            usage_thresholds: BTreeMap::new(),
            prod_usage_thresholds: BTreeMap::new(),
            prod_usage_include_sys: false,
            score_according_prod_usage: false,
            estimator: String::new(),
            estimated_scaling_factors: BTreeMap::new(),
            estimated_seconds_after_pod_scheduled: None,
            estimated_seconds_after_initialized: None,
            allow_customize_estimation: false,
            aggregated: None,
            supported_resources: Vec::new(),
        }
    }

    /// Applies the reference's map defaults (spec §1.1):
    ///
    /// * `resourceWeights` becomes `{cpu: 1, memory: 1}` only if it is empty
    ///   **and** `dominantResourceWeight` is 0 (a pure-dominant score needs
    ///   no weights);
    /// * `usageThresholds` becomes `{cpu: 65, memory: 95}` if empty;
    /// * `estimatedScalingFactors` gets the missing keys of
    ///   `{cpu: 85, memory: 70}`;
    /// * an empty `estimator` becomes `defaultEstimator`.
    ///
    /// Idempotent.
    #[must_use]
    pub fn defaulted(mut self) -> Self {
        let to_map = |pairs: [(&str, i64); 2]| {
            pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<BTreeMap<_, _>>()
        };
        if self.resource_weights.is_empty() && self.dominant_resource_weight == 0 {
            self.resource_weights = to_map(DEFAULT_RESOURCE_WEIGHTS);
        }
        if self.usage_thresholds.is_empty() {
            self.usage_thresholds = to_map(DEFAULT_USAGE_THRESHOLDS);
        }
        for (name, factor) in DEFAULT_ESTIMATED_SCALING_FACTORS {
            self.estimated_scaling_factors.entry(name.to_owned()).or_insert(factor);
        }
        if self.estimator.is_empty() {
            self.estimator = DEFAULT_ESTIMATOR.to_owned();
        }
        self
    }

    /// Checks the arguments (after [`defaulted`](Self::defaulted)); the
    /// first problem found is returned, naming the field.
    ///
    /// Beyond the reference's rules, an unknown `estimator` is rejected here
    /// rather than when the plugin starts.
    pub fn validate(&self) -> Result<(), LoadAwareArgsError> {
        if self.node_metric_expiration_seconds <= 0 {
            return Err(LoadAwareArgsError::Expiration(self.node_metric_expiration_seconds));
        }
        check_range("resourceWeights", &self.resource_weights, 1, 100)?;
        if !(0..=100).contains(&self.dominant_resource_weight) {
            return Err(LoadAwareArgsError::DominantWeight(self.dominant_resource_weight));
        }
        check_range("usageThresholds", &self.usage_thresholds, 0, 100)?;
        check_range("prodUsageThresholds", &self.prod_usage_thresholds, 0, 100)?;
        check_range("estimatedScalingFactors", &self.estimated_scaling_factors, 1, 100)?;
        if let Some(missing) =
            self.resource_weights.keys().find(|k| !self.estimated_scaling_factors.contains_key(*k))
        {
            return Err(LoadAwareArgsError::WeightWithoutFactor(missing.clone()));
        }
        if let Some(agg) = &self.aggregated {
            check_range("aggregated.usageThresholds", &agg.usage_thresholds, 0, 100)?;
            check_aggregation_type("aggregated.usageAggregationType", &agg.usage_aggregation_type)?;
            check_aggregation_type("aggregated.scoreAggregationType", &agg.score_aggregation_type)?;
            // Durations cannot be negative: `std::time::Duration` has no
            // negative values and the deserialiser rejects them.
        }
        if !self.estimator.is_empty() && self.estimator != DEFAULT_ESTIMATOR {
            return Err(LoadAwareArgsError::UnknownEstimator(self.estimator.clone()));
        }
        Ok(())
    }
}

fn check_range(
    field: &'static str,
    map: &BTreeMap<String, i64>,
    min: i64,
    max: i64,
) -> Result<(), LoadAwareArgsError> {
    match map.iter().find(|(_, v)| !(min..=max).contains(*v)) {
        Some((resource, value)) => Err(LoadAwareArgsError::OutOfRange {
            field,
            resource: resource.clone(),
            value: *value,
            min,
            max,
        }),
        None => Ok(()),
    }
}

fn check_aggregation_type(field: &'static str, value: &str) -> Result<(), LoadAwareArgsError> {
    if value.is_empty() || parse_aggregation_type(value).is_some() {
        Ok(())
    } else {
        Err(LoadAwareArgsError::AggregationType { field, value: value.to_owned() })
    }
}

/// The statistic a NodeMetric key names (`avg`, `p50`, `p90`, `p95`,
/// `p99`): the same reading the NodeMetric itself gets.
pub use kolo_core::usage_report::aggregation_type as parse_aggregation_type;

/// Formats a duration as Go's `time.Duration.String` does for whole and
/// fractional seconds (`0s`, `30s`, `5m0s`, `1h0m0s`, `1.5s`).
pub(crate) struct GoDurationDisplay(pub Duration);

impl fmt::Display for GoDurationDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0.as_secs();
        let nanos = self.0.subsec_nanos();
        let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
        if h > 0 {
            write!(f, "{h}h{m}m")?;
        } else if m > 0 {
            write!(f, "{m}m")?;
        }
        write!(f, "{s}")?;
        if nanos > 0 {
            let frac = format!("{nanos:09}");
            write!(f, ".{}", frac.trim_end_matches('0'))?;
        }
        f.write_str("s")
    }
}

/// Serde for `metav1.Duration` fields: Go duration strings (`5m`, `300s`,
/// `5m0s`), never negative.
pub(crate) mod go_duration {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&GoDurationDisplay(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        parse_go_duration(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "invalid duration {text:?}: expected a non-negative Go duration such as \"5m\" \
                 or \"300s\""
            ))
        })
    }
}

/// Serde for optional `metav1.Duration` fields (`*metav1.Duration`).
pub(crate) mod opt_go_duration {
    use super::*;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => parse_go_duration(&text).map(Some).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid duration {text:?}: expected a non-negative Go duration such as \
                     \"5m\" or \"300s\""
                ))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn parse(json: &str) -> LoadAwareSchedulingArgs {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn defaults_of_an_empty_object() {
        let args = parse("{}").defaulted();
        assert!(args.filter_expired_node_metrics);
        assert_eq!(args.node_metric_expiration_seconds, 180);
        assert!(!args.enable_schedule_when_node_metrics_expired);
        assert_eq!(args.resource_weights, map(&[("cpu", 1), ("memory", 1)]));
        assert_eq!(args.dominant_resource_weight, 0);
        assert_eq!(args.usage_thresholds, map(&[("cpu", 65), ("memory", 95)]));
        assert!(args.prod_usage_thresholds.is_empty());
        assert_eq!(args.estimated_scaling_factors, map(&[("cpu", 85), ("memory", 70)]));
        assert_eq!(args.estimator, DEFAULT_ESTIMATOR);
        assert_eq!(args.estimated_seconds_after_pod_scheduled, None);
        assert!(args.aggregated.is_none());
        assert_eq!(args, LoadAwareSchedulingArgs::default());
        assert_eq!(args.clone().defaulted(), args, "idempotent");
        args.validate().unwrap();
    }

    #[test]
    fn defaults_table() {
        // (input JSON, weights, thresholds, factors) after defaulting.
        type Pairs = &'static [(&'static str, i64)];
        let cases: &[(&str, Pairs, (Pairs, Pairs))] = &[
            // Weights default only when empty and no dominant weight.
            (r#"{"dominantResourceWeight": 10}"#, &[], (&[("cpu", 65), ("memory", 95)], &[])),
            (
                r#"{"resourceWeights": {"cpu": 3}}"#,
                &[("cpu", 3)],
                (&[("cpu", 65), ("memory", 95)], &[]),
            ),
            (
                r#"{"resourceWeights": {}, "dominantResourceWeight": 0}"#,
                &[("cpu", 1), ("memory", 1)],
                (&[("cpu", 65), ("memory", 95)], &[]),
            ),
            // Explicit thresholds, including zeros, are kept.
            (
                r#"{"usageThresholds": {"cpu": 0, "memory": 0}}"#,
                &[("cpu", 1), ("memory", 1)],
                (&[("cpu", 0), ("memory", 0)], &[]),
            ),
            // Factors: missing keys filled, given keys kept.
            (
                r#"{"estimatedScalingFactors": {"cpu": 100, "ephemeral-storage": 50}}"#,
                &[("cpu", 1), ("memory", 1)],
                (
                    &[("cpu", 65), ("memory", 95)],
                    &[("cpu", 100), ("ephemeral-storage", 50), ("memory", 70)],
                ),
            ),
        ];
        for (json, weights, (thresholds, factors)) in cases {
            let args = parse(json).defaulted();
            assert_eq!(args.resource_weights, map(weights), "{json}");
            assert_eq!(args.usage_thresholds, map(thresholds), "{json}");
            if !factors.is_empty() {
                assert_eq!(args.estimated_scaling_factors, map(factors), "{json}");
            }
            args.validate().unwrap();
        }
    }

    #[test]
    fn shipped_config_parses() {
        let yaml = "filterExpiredNodeMetrics: false\nnodeMetricExpirationSeconds: 300\n\
                    resourceWeights:\n  cpu: 1\n  memory: 1\nusageThresholds:\n  cpu: 0\n  memory: 0\n\
                    estimatedScalingFactors:\n  cpu: 85\n  memory: 70\n";
        let args: LoadAwareSchedulingArgs = serde_saphyr::from_str(yaml).unwrap();
        let args = args.defaulted();
        assert!(!args.filter_expired_node_metrics);
        assert_eq!(args.node_metric_expiration_seconds, 300);
        assert_eq!(args.usage_thresholds, map(&[("cpu", 0), ("memory", 0)]));
        args.validate().unwrap();
    }

    #[test]
    fn aggregated_durations_round_trip() {
        let args = parse(
            r#"{"aggregated": {"usageThresholds": {"cpu": 70}, "usageAggregationType": "p95",
                "usageAggregatedDuration": "5m", "scoreAggregationType": "avg",
                "scoreAggregatedDuration": "300s"}}"#,
        );
        let agg = args.aggregated.as_ref().unwrap();
        assert_eq!(agg.usage_aggregated_duration, Duration::from_secs(300));
        assert_eq!(agg.score_aggregated_duration, Duration::from_secs(300));
        let json = serde_json::to_value(&args).unwrap();
        assert_eq!(json["aggregated"]["usageAggregatedDuration"], "5m0s");
        let back: LoadAwareSchedulingArgs = serde_json::from_value(json).unwrap();
        assert_eq!(back, args);
        for (d, s) in [(0, "0s"), (30, "30s"), (3600, "1h0m0s"), (5430, "1h30m30s")] {
            assert_eq!(GoDurationDisplay(Duration::from_secs(d)).to_string(), s);
        }
        assert_eq!(GoDurationDisplay(Duration::from_millis(1500)).to_string(), "1.5s");
    }

    #[test]
    fn bad_input_is_rejected_at_parse() {
        for json in [
            r#"{"usageThreshold": {"cpu": 1}}"#,
            r#"{"aggregated": {"usageAggregatedDuration": "-5m"}}"#,
            r#"{"aggregated": {"usageAggregatedDuration": "5"}}"#,
        ] {
            assert!(serde_json::from_str::<LoadAwareSchedulingArgs>(json).is_err(), "{json}");
        }
        // apiVersion/kind are tolerated.
        parse(
            r#"{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "LoadAwareSchedulingArgs"}"#,
        );
    }

    #[test]
    fn validation_table() {
        let cases: &[(&str, &str)] = &[
            (r#"{"nodeMetricExpirationSeconds": 0}"#, "nodeMetricExpirationSeconds: 0 must be > 0"),
            (r#"{"resourceWeights": {"cpu": 0}}"#, "resourceWeights[cpu]: 0 is outside 1..=100"),
            (
                r#"{"resourceWeights": {"cpu": 101}}"#,
                "resourceWeights[cpu]: 101 is outside 1..=100",
            ),
            (
                r#"{"dominantResourceWeight": 101}"#,
                "dominantResourceWeight: 101 is outside 0..=100",
            ),
            (r#"{"dominantResourceWeight": -1}"#, "dominantResourceWeight: -1 is outside 0..=100"),
            (
                r#"{"usageThresholds": {"memory": 101}}"#,
                "usageThresholds[memory]: 101 is outside 0..=100",
            ),
            (r#"{"usageThresholds": {"cpu": -1}}"#, "usageThresholds[cpu]: -1 is outside 0..=100"),
            (
                r#"{"prodUsageThresholds": {"cpu": 200}}"#,
                "prodUsageThresholds[cpu]: 200 is outside 0..=100",
            ),
            (
                r#"{"estimatedScalingFactors": {"cpu": 0}}"#,
                "estimatedScalingFactors[cpu]: 0 is outside 1..=100",
            ),
            (
                r#"{"resourceWeights": {"cpu": 1, "nvidia.com/gpu": 1}}"#,
                "resourceWeights[nvidia.com/gpu]: the resource has no estimatedScalingFactors entry",
            ),
            (
                r#"{"aggregated": {"usageThresholds": {"cpu": 101}}}"#,
                "aggregated.usageThresholds[cpu]: 101 is outside 0..=100",
            ),
            (
                r#"{"aggregated": {"usageAggregationType": "p80"}}"#,
                r#"aggregated.usageAggregationType: "p80" is not an aggregation type (avg, p50, p90, p95, p99)"#,
            ),
            (
                r#"{"aggregated": {"scoreAggregationType": "max"}}"#,
                r#"aggregated.scoreAggregationType: "max" is not an aggregation type (avg, p50, p90, p95, p99)"#,
            ),
            (
                r#"{"estimator": "magic"}"#,
                r#"estimator: unknown estimator "magic" (only "defaultEstimator", or empty, exists)"#,
            ),
        ];
        for (json, want) in cases {
            let err = parse(json).defaulted().validate().unwrap_err();
            assert_eq!(err.to_string(), *want, "{json}");
        }
        // Boundaries are valid.
        parse(
            r#"{"resourceWeights": {"cpu": 100, "memory": 1}, "dominantResourceWeight": 100,
                "usageThresholds": {"cpu": 0, "memory": 100},
                "estimatedScalingFactors": {"cpu": 1, "memory": 100},
                "aggregated": {"usageAggregationType": "p99", "scoreAggregationType": "avg"}}"#,
        )
        .defaulted()
        .validate()
        .unwrap();
    }
}
