//! The node annotation `scheduling.koordinator.sh/usage-thresholds`: per-node
//! thresholds that replace the plugin's (spec §1.5 step 2).
//!
//! ```json
//! {"usageThresholds": {"cpu": 60},
//!  "prodUsageThresholds": {"cpu": 50},
//!  "aggregatedUsage": {"usageThresholds": {"cpu": 70},
//!                      "usageAggregationType": "p95",
//!                      "usageAggregatedDuration": "5m"}}
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use kolo_api::crd::AggregationType;
use serde::Deserialize;

use super::args::{opt_go_duration, parse_aggregation_type};

/// The annotation as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomUsageThresholds {
    /// Replaces `usageThresholds` when non-empty.
    #[serde(default)]
    pub usage_thresholds: BTreeMap<String, i64>,
    /// Replaces `prodUsageThresholds` when non-empty.
    #[serde(default)]
    pub prod_usage_thresholds: BTreeMap<String, i64>,
    /// Replaces the aggregated block when it has thresholds and a type.
    #[serde(default)]
    pub aggregated_usage: Option<CustomAggregatedUsage>,
}

/// The annotation's aggregated block.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomAggregatedUsage {
    /// Thresholds against the aggregated usage.
    #[serde(default)]
    pub usage_thresholds: BTreeMap<String, i64>,
    /// The statistic, parsed; `None` when absent or empty.
    #[serde(default, deserialize_with = "aggregation_type")]
    pub usage_aggregation_type: Option<AggregationType>,
    /// The window. Absent means 0 (the largest reported window); it is
    /// **not** inherited from the plugin arguments.
    #[serde(default, deserialize_with = "opt_go_duration::deserialize")]
    pub usage_aggregated_duration: Option<Duration>,
}

// An unknown statistic is an error (the whole annotation is then ignored)
// rather than, as in the reference, a key that never matches: a typo should
// be reported, not silently switch Filter to a different data source.
fn aggregation_type<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<AggregationType>, D::Error> {
    let value = Option::<String>::deserialize(d)?.unwrap_or_default();
    if value.is_empty() {
        return Ok(None);
    }
    parse_aggregation_type(&value).map(Some).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "usageAggregationType {value:?} is not one of avg, p50, p90, p95, p99"
        ))
    })
}

/// A `usage-thresholds` annotation that could not be used; the plugin
/// arguments were used instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node annotation {annotation}: {problem} (value {value:?}); using the plugin arguments")]
pub struct CustomThresholdsError {
    /// The annotation key.
    pub annotation: &'static str,
    /// The value.
    pub value: String,
    /// What is wrong.
    pub problem: String,
}

/// Parses the annotation value; `Ok(None)` for `null`.
pub fn parse_custom_thresholds(
    value: &str,
) -> Result<Option<CustomUsageThresholds>, CustomThresholdsError> {
    serde_json::from_str::<Option<CustomUsageThresholds>>(value).map_err(|error| {
        CustomThresholdsError {
            annotation: kolo_api::names::annotation::USAGE_THRESHOLDS,
            value: value.to_owned(),
            problem: error.to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_part() {
        let got = parse_custom_thresholds(
            r#"{"usageThresholds":{"cpu":60},"prodUsageThresholds":{"memory":50},
                "aggregatedUsage":{"usageThresholds":{"cpu":70},"usageAggregationType":"p95",
                "usageAggregatedDuration":"5m"}}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(got.usage_thresholds["cpu"], 60);
        assert_eq!(got.prod_usage_thresholds["memory"], 50);
        let agg = got.aggregated_usage.unwrap();
        assert_eq!(agg.usage_aggregation_type, Some(AggregationType::P95));
        assert_eq!(agg.usage_aggregated_duration, Some(Duration::from_secs(300)));
    }

    #[test]
    fn malformed_values_are_errors() {
        for value in [
            "nope",
            r#"{"usageThresholds":{"cpu":"high"}}"#,
            r#"{"aggregatedUsage":{"usageAggregationType":"p80"}}"#,
            r#"{"aggregatedUsage":{"usageAggregatedDuration":"-1m"}}"#,
        ] {
            let err = parse_custom_thresholds(value).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("node annotation scheduling.koordinator.sh/usage-thresholds: "),
                "{err}"
            );
        }
        assert_eq!(parse_custom_thresholds("null").unwrap(), None);
        assert_eq!(parse_custom_thresholds("{}").unwrap(), Some(CustomUsageThresholds::default()));
    }
}
