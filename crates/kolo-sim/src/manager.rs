//! The reporting cadence and the manager's act side in the simulator: every
//! report interval a node's agent reports its usage (averaged over the
//! window; what its NodeMetric would read as), and the manager's real
//! `noderesource` computes its batch allocatable, written only when the
//! real throttle ([`update_needed`]) says so.

use std::sync::Arc;

use kolo_core::clock::Timestamp;
use kolo_core::pod::PodView;
use kolo_core::usage_report::NodeUsageReport;
use kolo_manager::noderesource::{NodeInputs, calculate, update_needed};

use crate::node::SimNode;
use crate::objects::{PodUsage, fill_usage_report};

/// What a report produced for one node.
#[derive(Debug)]
pub struct Report {
    /// The usage the agent reports (its NodeMetric, read), shared with
    /// the node's [`ReportRecycler`](crate::report_recycler::ReportRecycler).
    pub metric: Arc<NodeUsageReport>,
    /// Whether the manager changed the node's co-location resources.
    pub allocatable_changed: bool,
}

/// The node's report at `now`, covering the last `interval_seconds` (the
/// agent's `reportIntervalSeconds`, which LoadAwareScheduling uses to tell
/// which pods the report may miss); with `manager` (co-location enabled in
/// the cluster or not), also the manager's batch allocatable decision.
pub fn report(
    node: &mut SimNode,
    manager: Option<bool>,
    interval_seconds: u64,
    now: Timestamp,
) -> Report {
    let (cpu, memory) = node.take_window();
    let system = (node.system_cpu / 1000.0, node.system_memory);
    let pods = node.pods.iter_mut().map(|p| {
        let t = p.window_time.max(1e-9);
        let usage = PodUsage {
            view: &p.view,
            batch: p.is_be(),
            cpu: p.window_cpu / t / 1000.0,
            memory: p.window_memory / t,
        };
        p.window_cpu = 0.0;
        p.window_memory = 0.0;
        p.window_time = 0.0;
        usage
    });
    let mut metric = node.reports.take();
    let filling = Arc::make_mut(&mut metric);
    fill_usage_report(filling, &node.name, (cpu, memory), system, pods, interval_seconds, now);
    if let Some(history) = &mut node.usage_history {
        filling.aggregated_node_usages = history.aggregated();
    }
    node.reports.published(metric.clone());
    let Some(cluster_enabled) = manager else {
        return Report { metric, allocatable_changed: false };
    };
    let views: Vec<&PodView> = node.pods.iter().map(|p| &*p.view).collect();
    let result = calculate(&NodeInputs {
        node: &node.view,
        pods: &views,
        metric: Some(&metric),
        strategy: &node.strategy,
        cluster_enabled,
        now,
    });
    let changed =
        update_needed(&node.extended, &result.resources, node.last_update, now, &result.strategy)
            .is_some();
    if changed {
        node.extended = result.resources;
        node.last_update = Some(now);
    }
    Report { metric, allocatable_changed: changed }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::jiff::SignedDuration;
    use kolo_core::node::NodeView;
    use kolo_manager::config::ColocationStrategy;

    use super::*;

    #[test]
    fn the_report_states_the_models_interval_and_time() {
        let mut node = SimNode::new(
            "n".into(),
            BTreeMap::new(),
            (8000, 1 << 34),
            (8000, 1 << 34),
            BTreeMap::new(),
            NodeView::new("n"),
            (0.0, 0.0),
            ColocationStrategy::defaults(),
        );
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        // Without a manager (baseline kinds) only the report is made.
        let r = report(&mut node, None, 120, now);
        assert_eq!(r.metric.report_interval, Some(SignedDuration::from_secs(120)));
        assert_eq!((r.metric.update_time, r.metric.node.as_str()), (Some(now), "n"));
        assert!(!r.allocatable_changed);
    }
}
