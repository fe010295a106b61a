//! The reporting cadence and the manager's act side in the simulator.
//!
//! Every report interval a node's agent reports its usage (averaged over
//! the window; what its NodeMetric would read as), and the manager's real
//! pass ([`kolo_manager::pass::Pass::decide_node`], the decision
//! `Pass::plan` makes for each node of a real cluster) decides the node's
//! writes: its batch / mid amounts (when the real throttle lets a change
//! through), its NodeMetric spec and its NodeSLO spec. [`manage`] applies
//! them to the node as the API server would store them; the node's agent
//! sees the new allocatable and NodeSLO. The pass also runs once when a
//! node is created (the engine's start), creating its NodeMetric and
//! NodeSLO.
//!
//! Nodes are decided one by one (the engine advances them in parallel),
//! each with its own [`NodeManager`]: what the configuration says for it
//! and the pass's bookkeeping for it.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kolo_core::clock::Timestamp;
use kolo_core::node::{NodeView, NodeViewError};
use kolo_core::pod::PodView;
use kolo_core::usage_report::NodeUsageReport;
use kolo_manager::config::SloConfig;
use kolo_manager::pass::{NodeConfig, NodeObjects, NodePlan, NodeRecord, Pass};

use crate::agent;
use crate::node::SimNode;
use crate::objects::{self, PodUsage, fill_usage_report};

/// The manager's side of one simulated node.
#[derive(Debug, Clone)]
pub struct NodeManager {
    /// What the configuration says for the node (its labels and
    /// annotations never change in a run, so it is built once per
    /// configuration).
    pub config: NodeConfig,
    /// The pass's bookkeeping for the node.
    pub record: NodeRecord,
}

/// The Node object and its reading after the manager changed its status
/// (boxed: most decisions change nothing).
pub type UpdatedNode = Box<(Node, NodeView)>;

/// What one pass did to a node.
#[derive(Debug, Default)]
pub struct Managed {
    /// The decision, as the pass made it.
    pub plan: NodePlan,
    /// The node's new Node object and reading, when its status was written.
    pub updated: Option<UpdatedNode>,
}

/// What a report produced for one node.
#[derive(Debug)]
pub struct Report {
    /// The usage the agent reports (its NodeMetric, read), shared with
    /// the node's [`ReportRecycler`](crate::report_recycler::ReportRecycler).
    pub metric: Arc<NodeUsageReport>,
    /// The node's new Node object and reading, when the manager changed its
    /// co-location resources.
    pub updated: Option<UpdatedNode>,
}

/// Puts `node` under a manager configured by `config` (or follows a new
/// configuration), keeping the pass's bookkeeping of the node.
pub fn configure(node: &mut SimNode, config: &SloConfig) {
    let record = node.manager.as_ref().map(|m| m.record).unwrap_or_default();
    node.manager = Some(NodeManager { config: NodeConfig::new(config, &node.view), record });
}

/// One pass of the manager for `node` at `now`, with `metric` its
/// NodeMetric (read), applied to the node; `created` is the Node object's
/// creation time. A node without a manager is left alone.
pub fn manage(
    node: &mut SimNode,
    pass: &Pass,
    metric: Option<&NodeUsageReport>,
    created: Timestamp,
    now: Timestamp,
) -> Result<Managed, NodeViewError> {
    let Some(manager) = &node.manager else { return Ok(Managed::default()) };
    let pods: Vec<&PodView> = node.pods.iter().map(|p| &*p.view).collect();
    let objects = NodeObjects {
        node: &node.view,
        pods: &pods,
        metric,
        metric_spec: node.metric_spec.as_deref(),
        slo: node.slo.as_deref(),
    };
    let plan = pass.decide_node(&manager.config, &objects, &manager.record, now);
    let updated = apply(node, &plan, created, now)?;
    Ok(Managed { plan, updated })
}

/// Stores the writes of `plan` as the API server would, and lets the
/// node's agent see them.
fn apply(
    node: &mut SimNode,
    plan: &NodePlan,
    created: Timestamp,
    now: Timestamp,
) -> Result<Option<UpdatedNode>, NodeViewError> {
    // The very specs the pass decided on: the next pass finds them equal
    // without comparing them field by field.
    if let Some(write) = &plan.metric {
        if let Some(agent) = node.agent.as_mut() {
            agent.qos.set_node_metric_spec(Some((*write.spec).clone()));
        }
        node.metric_spec = Some(Arc::clone(&write.spec));
    }
    if let Some(write) = &plan.slo {
        if let Some(agent) = node.agent.as_mut() {
            agent.qos.set_node_slo(Some((*write.spec).clone()));
        }
        node.slo = Some(Arc::clone(&write.spec));
    }
    let Some(write) = &plan.status else { return Ok(None) };
    node.extended = write.resources;
    if let Some(manager) = node.manager.as_mut() {
        // A simulated write always succeeds.
        manager.record.status_written(now);
    }
    let object = objects::node_object(
        &node.name,
        &node.labels,
        node.capacity,
        node.allocatable,
        &node.extended,
        created,
    );
    let view = NodeView::from_node(&object)?;
    node.view = view.clone();
    agent::refresh_allocatable(node);
    Ok(Some(Box::new((object, view))))
}

/// The node's report at `now`, covering the last `interval_seconds` (the
/// agent's `reportIntervalSeconds`, which LoadAwareScheduling uses to tell
/// which pods the report may miss), and the manager's pass on it
/// ([`manage`]; `created` is the Node object's creation time).
pub fn report(
    node: &mut SimNode,
    pass: &Pass,
    interval_seconds: u64,
    created: Timestamp,
    now: Timestamp,
) -> Result<Report, NodeViewError> {
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
    let updated = manage(node, pass, Some(&metric), created, now)?.updated;
    Ok(Report { metric, updated })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::jiff::SignedDuration;
    use kolo_manager::config::SloConfigStore;
    use kolo_manager::noderesource::{ExtendedResources, UpdateReason};

    use super::*;

    fn node() -> SimNode {
        let capacity = kolo_core::CpuMem::new(8000, 1 << 34);
        let object = objects::node_object(
            "n",
            &BTreeMap::new(),
            capacity,
            capacity,
            &ExtendedResources::NONE,
            at(0),
        );
        let view = NodeView::from_node(&object).unwrap();
        SimNode::new(
            "n".into(),
            BTreeMap::new(),
            capacity,
            capacity,
            BTreeMap::new(),
            view,
            (0.0, 0.0),
        )
    }

    fn at(seconds: i64) -> Timestamp {
        "2026-01-01T00:00:00Z".parse::<Timestamp>().unwrap() + SignedDuration::from_secs(seconds)
    }

    #[test]
    fn the_report_states_the_models_interval_and_time() {
        let mut node = node();
        // Without a manager (baseline kinds) only the report is made.
        let r = report(&mut node, &Pass::new(), 120, at(0), at(0)).unwrap();
        assert_eq!(r.metric.report_interval, Some(SignedDuration::from_secs(120)));
        assert_eq!((r.metric.update_time, r.metric.node.as_str()), (Some(at(0)), "n"));
        assert!(r.updated.is_none());
        assert_eq!((node.metric_spec, node.slo), (None, None));
    }

    #[test]
    fn the_pass_creates_the_objects_then_publishes_batch_resources() {
        let mut store = SloConfigStore::new();
        store.update(Some(&BTreeMap::from([(
            "colocation-config".to_string(),
            r#"{"enable": true, "metricReportIntervalSeconds": 30}"#.to_string(),
        )])));
        let (mut node, pass) = (node(), Pass::new());
        configure(&mut node, &store.config());
        let start = manage(&mut node, &pass, None, at(0), at(0)).unwrap();
        let status = start.plan.status.as_ref().unwrap();
        assert_eq!(
            (status.resources, &status.reason),
            (ExtendedResources::NONE, &UpdateReason::NeverSynced)
        );
        let policy = node.metric_spec.as_ref().unwrap().metric_collect_policy.as_ref().unwrap();
        assert_eq!(
            policy.report_interval_seconds,
            Some(30),
            "the NodeMetric follows the ConfigMap"
        );
        assert!(node.slo.is_some(), "the NodeSLO is created");
        // The first report publishes batch resources; the next one, equal,
        // is throttled.
        let first = report(&mut node, &pass, 60, at(0), at(60)).unwrap();
        let (object, view) = *first.updated.expect("batch resources appear");
        assert!(node.extended.batch_cpu.is_some_and(|cpu| cpu > 0), "{:?}", node.extended);
        assert_eq!(ExtendedResources::from_status(&view), node.extended);
        assert_eq!(NodeView::from_node(&object).unwrap(), node.view);
        assert_eq!(node.manager.as_ref().unwrap().record.last_status_update, Some(at(60)));
        let again = manage(&mut node, &pass, Some(&first.metric), at(0), at(70)).unwrap();
        assert!(again.plan.is_empty(), "{:?}", again.plan);
    }
}
