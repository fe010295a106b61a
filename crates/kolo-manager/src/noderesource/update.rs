//! Whether to write a node's status (Koordinator spec §2.1 step 7).
//!
//! Usage moves a little with every NodeMetric report; rewriting every
//! node's status each time would flood the API server and wake every
//! scheduler for nothing. So a computed value is written only when:
//!
//! 1. the node has never been synced by this manager, or the last
//!    successful write is more than `updateTimeThresholdSeconds` old
//!    (default 300; strictly more);
//! 2. or a resource appears or disappears (a reset always goes out at once);
//! 3. or `|new − old| > old × resourceDiffThreshold` for one of the four
//!    resources (default 0.1, strictly greater), compared in milli-units in
//!    `f64` exactly as the reference does.
//!
//! The rule is symmetric: a drop below the threshold waits for the forced
//! interval like a rise. kolo keeps it so: a drop worth acting on is
//! usually large (a new LS pod counts its whole request, see
//! [`super::batch`]), and the agent's own suppression and eviction protect
//! LS pods between writes.

use std::fmt;

use k8s_openapi::jiff::SignedDuration;
use kolo_core::clock::Timestamp;
use serde::Serialize;

use super::patch::{ColocationResource, ExtendedResources};
use crate::config::ColocationStrategy;

/// Why a node's status is (re)written.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum UpdateReason {
    /// No successful write for this node is on record.
    NeverSynced,
    /// The last write is older than `updateTimeThresholdSeconds`.
    IntervalElapsed {
        /// Seconds since the last successful write.
        since_seconds: i64,
        /// The interval.
        interval_seconds: i64,
    },
    /// A resource is published now and was not before.
    Added {
        /// The resource name.
        resource: &'static str,
        /// Its new amount.
        new: i64,
    },
    /// A resource was published and is withdrawn now.
    Removed {
        /// The resource name.
        resource: &'static str,
        /// Its old amount.
        old: i64,
    },
    /// A resource changed by more than `resourceDiffThreshold`.
    Changed {
        /// The resource name.
        resource: &'static str,
        /// The amount in the node's status.
        old: i64,
        /// The computed amount.
        new: i64,
        /// `resourceDiffThreshold`.
        threshold: f64,
    },
}

impl fmt::Display for UpdateReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpdateReason::NeverSynced => f.write_str("never synced"),
            UpdateReason::IntervalElapsed { since_seconds, interval_seconds } => write!(
                f,
                "last update {since_seconds}s ago (updateTimeThresholdSeconds {interval_seconds})"
            ),
            UpdateReason::Added { resource, new } => write!(f, "{resource} added ({new})"),
            UpdateReason::Removed { resource, old } => write!(f, "{resource} removed (was {old})"),
            UpdateReason::Changed { resource, old, new, threshold } => {
                write!(f, "{resource} {old} → {new} changes by more than {}%", threshold * 100.0)
            }
        }
    }
}

/// The reference's `IsResourceDiff` over the four resources: the first
/// resource that appeared, disappeared, or moved by strictly more than
/// `old × threshold`.
pub fn significant_change(
    current: &ExtendedResources,
    new: &ExtendedResources,
    threshold: f64,
) -> Option<UpdateReason> {
    ColocationResource::ALL.into_iter().find_map(|r| {
        let resource = r.name();
        match (current.get(r), new.get(r)) {
            (None, None) => None,
            (None, Some(new)) => Some(UpdateReason::Added { resource, new }),
            (Some(old), None) => Some(UpdateReason::Removed { resource, old }),
            (Some(old), Some(new)) => {
                // The reference compares MilliValue()s as float64.
                let (o, n) = (old as f64 * 1000.0, new as f64 * 1000.0);
                ((n - o).abs() > o * threshold).then_some(UpdateReason::Changed {
                    resource,
                    old,
                    new,
                    threshold,
                })
            }
        }
    })
}

/// Whether to write the node's status now, and why; `None` to skip.
///
/// `current` is what the node's status holds ([`ExtendedResources::from_status`]),
/// `new` what was computed, `last_update` the time of this manager's last
/// successful write for the node (`None` when there is none).
pub fn update_needed(
    current: &ExtendedResources,
    new: &ExtendedResources,
    last_update: Option<Timestamp>,
    now: Timestamp,
    strategy: &ColocationStrategy,
) -> Option<UpdateReason> {
    let Some(last) = last_update else { return Some(UpdateReason::NeverSynced) };
    let interval = strategy.update_interval_seconds();
    let since = now.duration_since(last);
    if since > SignedDuration::from_secs(interval) {
        return Some(UpdateReason::IntervalElapsed {
            since_seconds: since.as_secs(),
            interval_seconds: interval,
        });
    }
    significant_change(current, new, strategy.diff_threshold())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch_cpu(v: Option<i64>) -> ExtendedResources {
        ExtendedResources { batch_cpu: v, ..ExtendedResources::NONE }
    }

    fn at(t: &str) -> Timestamp {
        t.parse().unwrap()
    }

    #[test]
    fn throttle_cases() {
        let s = ColocationStrategy::defaults(); // 300 s, 0.1
        let now = at("2026-01-01T00:10:00Z");
        let recent = Some(at("2026-01-01T00:09:00Z"));
        type Case =
            (&'static str, Option<i64>, Option<i64>, Option<&'static str>, Option<&'static str>);
        let cases: &[Case] = &[
            // (name, old, new, last update, expected reason as text)
            ("never synced", Some(1000), Some(1000), None, Some("never synced")),
            ("unchanged", Some(1000), Some(1000), Some("2026-01-01T00:09:00Z"), None),
            // |1100 − 1000| = 100 is not > 1000 × 0.1 = 100: the boundary is strict.
            ("+10% exactly", Some(1000), Some(1100), Some("2026-01-01T00:09:00Z"), None),
            ("-10% exactly", Some(1000), Some(900), Some("2026-01-01T00:09:00Z"), None),
            (
                "+10.1%",
                Some(1000),
                Some(1101),
                Some("2026-01-01T00:09:00Z"),
                Some("kubernetes.io/batch-cpu 1000 → 1101 changes by more than 10%"),
            ),
            (
                "-10.1%",
                Some(1000),
                Some(899),
                Some("2026-01-01T00:09:00Z"),
                Some("kubernetes.io/batch-cpu 1000 → 899 changes by more than 10%"),
            ),
            (
                "appears",
                None,
                Some(0),
                Some("2026-01-01T00:09:00Z"),
                Some("kubernetes.io/batch-cpu added (0)"),
            ),
            (
                "withdrawn",
                Some(5),
                None,
                Some("2026-01-01T00:09:00Z"),
                Some("kubernetes.io/batch-cpu removed (was 5)"),
            ),
            ("0 → 0", Some(0), Some(0), Some("2026-01-01T00:09:00Z"), None),
            (
                "0 → 1",
                Some(0),
                Some(1),
                Some("2026-01-01T00:09:00Z"),
                Some("kubernetes.io/batch-cpu 0 → 1 changes by more than 10%"),
            ),
            // Exactly 300 s since the last write: not yet forced.
            ("interval reached", Some(1000), Some(1000), Some("2026-01-01T00:05:00Z"), None),
            (
                "interval exceeded",
                Some(1000),
                Some(1000),
                Some("2026-01-01T00:04:59Z"),
                Some("last update 301s ago (updateTimeThresholdSeconds 300)"),
            ),
        ];
        for (name, old, new, last, expected) in cases {
            let got = update_needed(&batch_cpu(*old), &batch_cpu(*new), last.map(at), now, &s);
            assert_eq!(got.map(|r| r.to_string()).as_deref(), *expected, "{name}");
        }
        // A per-node threshold.
        let loose = ColocationStrategy { resource_diff_threshold: Some(0.5), ..s.clone() };
        assert_eq!(
            update_needed(&batch_cpu(Some(1000)), &batch_cpu(Some(1400)), recent, now, &loose),
            None
        );
        // Another resource than the first one.
        let old = ExtendedResources { mid_memory: Some(10 << 30), ..batch_cpu(Some(1)) };
        let new = ExtendedResources { mid_memory: Some(12 << 30), ..batch_cpu(Some(1)) };
        assert!(matches!(
            update_needed(&old, &new, recent, now, &s),
            Some(UpdateReason::Changed { resource: "kubernetes.io/mid-memory", .. })
        ));
    }
}
