use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::config::SloConfigStore;
use crate::noderesource::{ExtendedResources, UpdateReason};

fn node(name: &str) -> Arc<Node> {
    let list: BTreeMap<String, Quantity> = [("cpu", "8"), ("memory", "16Gi")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.into())))
        .collect();
    Arc::new(Node {
        metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
        status: Some(NodeStatus {
            capacity: Some(list.clone()),
            allocatable: Some(list),
            ..NodeStatus::default()
        }),
        ..Node::default()
    })
}

fn store(colocation: &str) -> SloConfigStore {
    let mut store = SloConfigStore::new();
    store
        .update(Some(&BTreeMap::from([("colocation-config".to_string(), colocation.to_string())])));
    store
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + seconds).unwrap()
}

fn kinds(plan: Plan) -> Vec<String> {
    plan.into_actions()
        .iter()
        .map(|a| match a {
            ManagerAction::PatchNodeStatus { node, .. } => format!("status {node}"),
            ManagerAction::PutNodeMetric { node, write } => {
                format!("nodemetric {node} {}", write.create)
            }
            ManagerAction::DeleteNodeMetric { node } => format!("delete nodemetric {node}"),
            ManagerAction::PutNodeSlo { node, write } => format!("nodeslo {node} {}", write.create),
            ManagerAction::DeleteNodeSlo { node } => format!("delete nodeslo {node}"),
        })
        .collect()
}

/// `node` with the amounts of `write` in its status, as the API server
/// stores it after the merge patch.
fn with_status(node: &Node, write: &StatusWrite) -> Arc<Node> {
    let mut node = node.clone();
    let patch = write.resources.status_patch();
    let status = node.status.as_mut().unwrap();
    for (field, list) in
        [("capacity", &mut status.capacity), ("allocatable", &mut status.allocatable)]
    {
        let list = list.get_or_insert_with(BTreeMap::new);
        for (k, v) in patch["status"][field].as_object().unwrap() {
            match v.as_str() {
                Some(v) => list.insert(k.clone(), Quantity(v.into())),
                None => list.remove(k),
            };
        }
    }
    Arc::new(node)
}

#[test]
fn new_nodes_get_every_object_and_gone_nodes_lose_theirs() {
    let config = store(r#"{"enable": true}"#).config();
    let labels = BTreeMap::from([(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string())]);
    let mut orphan_metric = NodeMetric::new("gone", NodeMetricSpec::default());
    orphan_metric.metadata.labels = Some(labels.clone());
    let mut orphan_slo = NodeSLO::new("gone", NodeSLOSpec::default());
    orphan_slo.metadata.labels = Some(labels);
    let foreign_metric = Arc::new(NodeMetric::new("restored", NodeMetricSpec::default()));
    let (orphan_metric, orphan_slo) = (Arc::new(orphan_metric), Arc::new(orphan_slo));
    let cases: Vec<(StoreState, Vec<&str>)> = vec![
        (
            StoreState { nodes: vec![node("n1")], ..StoreState::default() },
            vec!["status n1", "nodemetric n1 true", "nodeslo n1 true"],
        ),
        (
            StoreState {
                nodes: vec![],
                metrics: vec![orphan_metric, foreign_metric],
                slos: vec![orphan_slo],
                ..StoreState::default()
            },
            vec!["delete nodemetric gone", "delete nodeslo gone"],
        ),
    ];
    for (state, want) in cases {
        assert_eq!(kinds(Pass::new().plan(&state, &config, at(0))), want);
    }
}

#[test]
fn status_is_not_rewritten_within_the_update_interval_once_written() {
    let config = store(r#"{"enable": true}"#).config();
    let mut pass = Pass::new();
    let state = StoreState { nodes: vec![node("n1")], ..StoreState::default() };
    let first = pass.plan(&state, &config, at(0));
    let write = first.nodes[0].plan.status.clone().expect("never synced: written");
    assert_eq!(write.reason, UpdateReason::NeverSynced);
    // The node now carries what was written.
    let state = StoreState { nodes: vec![with_status(&state.nodes[0], &write)], ..state };
    // A write that failed is not recorded: the next pass writes again.
    assert!(pass.plan(&state, &config, at(10)).nodes[0].plan.status.is_some());
    pass.applied(&ManagerAction::PatchNodeStatus { node: "n1".into(), write }, at(10));
    assert_eq!(pass.record("n1").last_status_update, Some(at(10)));
    assert_eq!(pass.plan(&state, &config, at(20)).nodes[0].plan.status, None);
    // 300 s after the write (strictly more), the throttle lets it through.
    assert_eq!(pass.plan(&state, &config, at(310)).nodes[0].plan.status, None);
    let late = pass.plan(&state, &config, at(311)).nodes[0].plan.status.clone().unwrap();
    assert!(matches!(late.reason, UpdateReason::IntervalElapsed { since_seconds: 301, .. }));
}

#[test]
fn a_config_in_error_keeps_existing_nodemetric_specs_only() {
    let mut store = store(r#"{"enable": true, "metricReportIntervalSeconds": 30}"#);
    let mut old = NodeMetric::new("n1", NodeMetricSpec::default());
    old.spec = crate::nodemetric::node_metric_spec(None);
    let state = StoreState {
        nodes: vec![node("n1"), node("n2")],
        metrics: vec![Arc::new(old)],
        ..StoreState::default()
    };
    let mut pass = Pass::new();
    let interval = |plan: &Plan, i: usize| {
        let write = plan.nodes[i].plan.metric.as_ref()?;
        Some((write.create, write.spec.metric_collect_policy.as_ref()?.report_interval_seconds?))
    };
    let plan = pass.plan(&state, &store.config(), at(0));
    assert_eq!(interval(&plan, 0), Some((false, 30)), "n1's spec follows the ConfigMap");
    assert_eq!(interval(&plan, 1), Some((true, 30)));
    store.update(Some(&BTreeMap::from([(
        "colocation-config".to_string(),
        r#"{"enable": "yes"}"#.to_string(),
    )])));
    pass.config_status(store.status());
    let plan = pass.plan(&state, &store.config(), at(0));
    assert_eq!(interval(&plan, 0), None, "kept while the ConfigMap is in error");
    assert_eq!(interval(&plan, 1), Some((true, 30)), "a missing NodeMetric is still created");
}

#[test]
fn unreadable_objects_and_node_warnings_are_named_once() {
    let config = store(r#"{"enable": true}"#).config();
    let mut annotated = (*node("n1")).clone();
    annotated.metadata.annotations = Some(BTreeMap::from([(
        crate::nodeslo::NETWORK_BANDWIDTH_ANNOTATION.to_string(),
        "fast".to_string(),
    )]));
    let mut broken = (*node("n2")).clone();
    let allocatable = broken.status.as_mut().unwrap().allocatable.as_mut().unwrap();
    allocatable.insert("memory".into(), Quantity("lots".into()));
    let state =
        StoreState { nodes: vec![Arc::new(annotated), Arc::new(broken)], ..StoreState::default() };
    let plan = Pass::new().plan(&state, &config, at(0));
    assert_eq!(plan.nodes.len(), 1, "n2 cannot be read");
    let warnings: Vec<&String> = plan.all_warnings().collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("n2") && warnings[0].contains("lots"), "{warnings:?}");
    assert!(
        warnings[1].starts_with("node n1: annotation node.koordinator.sh/network-bandwidth="),
        "{warnings:?}"
    );
    assert!(plan.deletions.is_empty(), "a node that cannot be read is not gone");
    let written = plan.nodes[0].plan.status.as_ref().map(|w| w.resources);
    assert_eq!(written, Some(ExtendedResources::NONE), "no NodeMetric yet: nothing published");
}

#[test]
fn a_change_the_throttle_holds_back_is_marked_throttled() {
    let config = store(r#"{"enable": true}"#).config();
    let metric: NodeMetric = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "n1"},
        "spec": {},
        "status": {
            "updateTime": "2023-11-14T22:13:20Z",
            "nodeMetric": {"nodeUsage": {"resources": {"cpu": "1", "memory": "1Gi"}}}
        }
    }))
    .unwrap();
    let mut pass = Pass::new();
    let state = StoreState {
        nodes: vec![node("n1")],
        metrics: vec![Arc::new(metric)],
        ..StoreState::default()
    };
    let first = pass.plan(&state, &config, at(0));
    let plan = &first.nodes[0].plan;
    let computed = plan.computed.as_ref().expect("co-location configured: computed");
    let write = plan.status.clone().unwrap();
    assert_eq!(computed.resources, write.resources);
    let batch_cpu = write.resources.batch_cpu.expect("batch computed from the metric");
    assert!(!plan.throttled, "written, not held back");
    pass.applied(
        &ManagerAction::PatchNodeStatus { node: "n1".into(), write: write.clone() },
        at(0),
    );
    // The node as written: nothing to hold back.
    let synced = StoreState { nodes: vec![with_status(&state.nodes[0], &write)], ..state.clone() };
    assert!(!pass.plan(&synced, &config, at(10)).nodes[0].plan.throttled);
    // The node's status differs by less than the diff threshold (10 %)
    // and the last write was 10 s ago: held back.
    let mut near = write.clone();
    near.resources.batch_cpu = Some(batch_cpu + batch_cpu / 20);
    let drifted = StoreState { nodes: vec![with_status(&state.nodes[0], &near)], ..state.clone() };
    let held = pass.plan(&drifted, &config, at(10));
    assert_eq!(held.nodes[0].plan.status, None);
    assert!(held.nodes[0].plan.throttled);
    // Without co-location configured, nothing is computed.
    let off = Pass::new().plan(&state, &SloConfigStore::new().config(), at(0));
    assert!(off.nodes[0].plan.computed.is_none() && !off.nodes[0].plan.throttled);
}
