//! When a node's batch and mid resources are withdrawn instead of computed
//! (Koordinator spec §2.1): co-location disabled, or a NodeMetric that is
//! missing, has no update time, or is older than `degradeTimeMinutes`.
//!
//! Withdrawing ("reset") removes `batch-cpu`, `batch-memory`, `mid-cpu` and
//! `mid-memory` from the node's `status.capacity` and `status.allocatable`,
//! so nothing new can be scheduled on them. kolo adds two reasons of its
//! own, both for inputs the reference would compute nonsense from: a
//! NodeMetric with a malformed quantity, and a node whose `status.capacity`
//! lacks cpu or memory.

use std::fmt;

use k8s_openapi::jiff::SignedDuration;
use kolo_core::clock::Timestamp;
use kolo_core::usage_report::NodeUsageReport;
use serde::Serialize;

use crate::config::ColocationStrategy;

/// Why a node's batch and mid resources are withdrawn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum ResetReason {
    /// `colocation-config` has `enable` unset or false at the cluster level
    /// (the reference's master switch: a node cannot turn it on alone).
    ClusterDisabled,
    /// The node's own strategy (a `nodeConfigs` entry or its
    /// `colocation-strategy` annotation) disables co-location.
    NodeDisabled,
    /// The node has no NodeMetric.
    NoNodeMetric,
    /// The NodeMetric has no `status.updateTime`.
    NoUpdateTime,
    /// The NodeMetric is older than `degradeTimeMinutes`.
    StaleNodeMetric {
        /// `status.updateTime` (RFC 3339).
        update_time: String,
        /// Seconds between the update and now.
        age_seconds: i64,
        /// The limit, `degradeTimeMinutes × 60`.
        degrade_seconds: i64,
    },
    /// A quantity of the NodeMetric cannot be read (kolo only).
    MalformedNodeMetric {
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// `status.capacity` lacks cpu or memory (kolo only).
    NoCapacity {
        /// `cpu`, `memory` or `cpu and memory`.
        missing: &'static str,
    },
}

impl ResetReason {
    /// Whether this is a degradation (the metrics cannot be trusted) rather
    /// than co-location being switched off.
    pub fn is_degraded(&self) -> bool {
        !matches!(self, ResetReason::ClusterDisabled | ResetReason::NodeDisabled)
    }
}

impl fmt::Display for ResetReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResetReason::ClusterDisabled => {
                f.write_str("co-location is disabled in the cluster (colocation-config enable)")
            }
            ResetReason::NodeDisabled => f.write_str("co-location is disabled for this node"),
            ResetReason::NoNodeMetric => f.write_str("degraded: the node has no NodeMetric"),
            ResetReason::NoUpdateTime => {
                f.write_str("degraded: the NodeMetric has no status.updateTime")
            }
            ResetReason::StaleNodeMetric { update_time, age_seconds, degrade_seconds } => write!(
                f,
                "degraded: the NodeMetric was updated at {update_time}, {age_seconds}s ago \
                 (degradeTimeMinutes allows {degrade_seconds}s)"
            ),
            ResetReason::MalformedNodeMetric { field, message } => {
                write!(f, "degraded: the NodeMetric's {field} cannot be read: {message}")
            }
            ResetReason::NoCapacity { missing } => {
                write!(f, "the node's status.capacity has no {missing}")
            }
        }
    }
}

/// The degradation check of both plugins: `None` when the NodeMetric is
/// fresh enough. Stale means `now > updateTime + degradeTimeMinutes`
/// (strictly); an update time in the future (clock skew) is fresh.
pub fn degrade_reason(
    metric: Option<&NodeUsageReport>,
    strategy: &ColocationStrategy,
    now: Timestamp,
) -> Option<ResetReason> {
    let Some(metric) = metric else { return Some(ResetReason::NoNodeMetric) };
    let Some(updated) = metric.update_time else {
        return Some(ResetReason::NoUpdateTime);
    };
    let limit = strategy.degrade_seconds();
    let age = now.duration_since(updated);
    (age > SignedDuration::from_secs(limit)).then(|| ResetReason::StaleNodeMetric {
        update_time: updated.to_string(),
        age_seconds: age.as_secs(),
        degrade_seconds: limit,
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kolo_api::crd::{NodeMetric, NodeMetricStatus};

    use super::*;

    fn metric(updated: Option<&str>) -> NodeUsageReport {
        let mut m = NodeMetric::new("n1", Default::default());
        m.status = Some(NodeMetricStatus {
            update_time: updated.map(|t| Time(t.parse().unwrap())),
            ..Default::default()
        });
        NodeUsageReport::read(&m)
    }

    fn at(t: &str) -> Timestamp {
        t.parse().unwrap()
    }

    #[test]
    fn degradation_cases() {
        let s = ColocationStrategy::defaults(); // 15 minutes
        let now = at("2026-01-01T01:00:00Z");
        assert_eq!(degrade_reason(None, &s, now), Some(ResetReason::NoNodeMetric));
        assert_eq!(degrade_reason(Some(&metric(None)), &s, now), Some(ResetReason::NoUpdateTime));
        let no_status = NodeUsageReport::read(&NodeMetric::new("n1", Default::default()));
        assert_eq!(degrade_reason(Some(&no_status), &s, now), Some(ResetReason::NoUpdateTime));
        // Exactly 15 minutes old: not yet (the reference's `now.After(t + 15m)`).
        let m = metric(Some("2026-01-01T00:45:00Z"));
        assert_eq!(degrade_reason(Some(&m), &s, now), None);
        // One second more: stale.
        let late = at("2026-01-01T01:00:01Z");
        let reason = degrade_reason(Some(&m), &s, late).unwrap();
        assert_eq!(
            reason,
            ResetReason::StaleNodeMetric {
                update_time: "2026-01-01T00:45:00Z".into(),
                age_seconds: 901,
                degrade_seconds: 900,
            }
        );
        assert!(reason.is_degraded());
        assert!(reason.to_string().contains("901s ago"), "{reason}");
        // Per-node degradeTimeMinutes.
        let short = ColocationStrategy { degrade_time_minutes: Some(1), ..s.clone() };
        assert!(degrade_reason(Some(&m), &short, now).is_some());
        // A report from the future is fresh.
        let future = metric(Some("2026-01-01T02:00:00Z"));
        assert_eq!(degrade_reason(Some(&future), &s, now), None);
        assert!(!ResetReason::ClusterDisabled.is_degraded());
    }
}
