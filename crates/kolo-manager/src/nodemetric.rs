//! The NodeMetric spec of each node: how its agent collects and reports
//! (Koordinator spec §3.3).
//!
//! A NodeMetric named after each node carries the collect policy from the
//! node's co-location strategy. When co-location is off (or the strategy is
//! unavailable), the defaults apply: 300 s aggregation, 60 s reports,
//! windows 5m / 10m / 30m, memory without page cache. When the ConfigMap is
//! in error, an existing spec is kept as is.

use std::sync::Arc;

use kolo_api::crd::{AggregatePolicy, NodeMetricCollectPolicy, NodeMetricSpec};

use crate::config::ColocationStrategy;

/// The spec a node's NodeMetric should have.
pub fn node_metric_spec(strategy: Option<&ColocationStrategy>) -> NodeMetricSpec {
    let defaults = ColocationStrategy::defaults();
    let s = strategy.filter(|s| s.is_enabled()).unwrap_or(&defaults);
    let pick = |v: Option<i64>, d: Option<i64>| v.or(d);
    NodeMetricSpec {
        metric_collect_policy: Some(NodeMetricCollectPolicy {
            aggregate_duration_seconds: pick(
                s.metric_aggregate_duration_seconds,
                defaults.metric_aggregate_duration_seconds,
            ),
            report_interval_seconds: pick(
                s.metric_report_interval_seconds,
                defaults.metric_report_interval_seconds,
            ),
            node_aggregate_policy: Some(AggregatePolicy {
                durations: s
                    .metric_aggregate_policy
                    .as_ref()
                    .and_then(|p| p.durations.clone())
                    .or_else(|| defaults.metric_aggregate_policy.clone().and_then(|p| p.durations)),
            }),
            node_memory_collect_policy: s
                .metric_memory_collect_policy
                .clone()
                .or(defaults.metric_memory_collect_policy),
        }),
    }
}

/// What to do with one node's NodeMetric.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeMetricAction {
    /// Create it with this spec.
    Create(Arc<NodeMetricSpec>),
    /// Replace its spec.
    Update(Arc<NodeMetricSpec>),
    /// The node is gone: delete it.
    Delete,
    /// Nothing to do.
    Keep,
}

/// Decides the action for one node's NodeMetric. `config_in_error` keeps an
/// existing spec while the ConfigMap cannot be read. An `existing` spec that
/// is `desired` itself (a driver keeping the very spec it was told to
/// write) is the same spec without a comparison.
pub fn reconcile_node_metric(
    node_exists: bool,
    existing: Option<&NodeMetricSpec>,
    desired: &Arc<NodeMetricSpec>,
    config_in_error: bool,
) -> NodeMetricAction {
    match (node_exists, existing) {
        (false, Some(_)) => NodeMetricAction::Delete,
        (false, None) => NodeMetricAction::Keep,
        (true, None) => NodeMetricAction::Create(Arc::clone(desired)),
        (true, Some(_)) if config_in_error => NodeMetricAction::Keep,
        (true, Some(spec)) if std::ptr::eq(spec, &**desired) || spec == &**desired => {
            NodeMetricAction::Keep
        }
        (true, Some(_)) => NodeMetricAction::Update(Arc::clone(desired)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(spec: &NodeMetricSpec) -> &NodeMetricCollectPolicy {
        spec.metric_collect_policy.as_ref().unwrap()
    }

    #[test]
    fn disabled_or_missing_strategy_gives_defaults() {
        let mut custom = ColocationStrategy::defaults();
        custom.metric_report_interval_seconds = Some(30);
        for spec in [node_metric_spec(None), node_metric_spec(Some(&custom))] {
            let p = policy(&spec);
            assert_eq!(p.aggregate_duration_seconds, Some(300));
            assert_eq!(p.report_interval_seconds, Some(60), "disabled: defaults, not 30");
            assert_eq!(
                p.node_aggregate_policy.as_ref().unwrap().durations.as_deref(),
                Some(&["5m0s".to_string(), "10m0s".into(), "30m0s".into()][..])
            );
            assert_eq!(p.node_memory_collect_policy.as_deref(), Some("usageWithoutPageCache"));
        }
    }

    #[test]
    fn enabled_strategy_is_used() {
        let mut s = ColocationStrategy::defaults();
        s.enable = Some(true);
        s.metric_report_interval_seconds = Some(30);
        s.metric_aggregate_policy = Some(AggregatePolicy { durations: Some(vec!["1m".into()]) });
        s.metric_memory_collect_policy = Some("usageWithPageCache".into());
        let spec = node_metric_spec(Some(&s));
        let p = policy(&spec);
        assert_eq!(p.report_interval_seconds, Some(30));
        assert_eq!(p.node_aggregate_policy.as_ref().unwrap().durations, Some(vec!["1m".into()]));
        assert_eq!(p.node_memory_collect_policy.as_deref(), Some("usageWithPageCache"));
    }

    #[test]
    fn reconcile_table() {
        let desired = Arc::new(node_metric_spec(None));
        let equal = node_metric_spec(None);
        let mut other = node_metric_spec(None);
        other.metric_collect_policy.as_mut().unwrap().report_interval_seconds = Some(5);
        let cases = [
            ("new node", true, None, false, NodeMetricAction::Create(desired.clone())),
            ("same spec", true, Some(&*desired), false, NodeMetricAction::Keep),
            ("equal spec", true, Some(&equal), false, NodeMetricAction::Keep),
            ("changed", true, Some(&other), false, NodeMetricAction::Update(desired.clone())),
            ("config broken keeps old", true, Some(&other), true, NodeMetricAction::Keep),
            (
                "config broken still creates",
                true,
                None,
                true,
                NodeMetricAction::Create(desired.clone()),
            ),
            ("node gone", false, Some(&equal), false, NodeMetricAction::Delete),
            ("nothing", false, None, false, NodeMetricAction::Keep),
        ];
        for (name, exists, existing, error, want) in cases {
            assert_eq!(reconcile_node_metric(exists, existing, &desired, error), want, "{name}");
        }
    }
}
