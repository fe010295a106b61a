//! One pass of the manager's controllers: from the stores to the writes.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_api::crd::{NodeMetric, NodeMetricSpec, NodeSLO, NodeSLOSpec};
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::pod::PodView;
use kolo_manager::config::SloConfig;
use kolo_manager::nodemetric::{NodeMetricAction, node_metric_spec, reconcile_node_metric};
use kolo_manager::noderesource::{ExtendedResources, calculate_all, update_needed};
use kolo_manager::nodeslo::{NodeSloAction, reconcile_node_slo, render_node_slo};
use kube::ResourceExt;

/// The label on the NodeMetrics and NodeSLOs the manager created; only
/// those are deleted when their node is gone (objects someone else made,
/// e.g. a dump restored for a what-if, are left alone).
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kolo-manager");

/// Whether the manager created this object.
fn managed<K: ResourceExt>(object: &K) -> bool {
    object.labels().get(MANAGED_BY.0).is_some_and(|v| v == MANAGED_BY.1)
}

/// The names, in order, of the objects the manager created whose node is
/// not `present`.
fn gone<'a, K: ResourceExt>(
    objects: &'a HashMap<String, &K>,
    present: &BTreeSet<String>,
) -> Vec<&'a String> {
    let mut names: Vec<&String> = objects
        .iter()
        .filter(|(n, o)| !present.contains(*n) && managed(**o))
        .map(|(n, _)| n)
        .collect();
    names.sort();
    names
}

/// A write the cluster needs.
#[derive(Debug, Clone, PartialEq)]
pub enum ManagerAction {
    /// Set the node's batch / mid capacity and allocatable (`None`:
    /// remove).
    PatchNodeStatus {
        /// The node.
        node: String,
        /// The amounts.
        resources: ExtendedResources,
        /// Why now (for the log).
        reason: String,
    },
    /// Create or update (`create: false`) the node's NodeMetric spec.
    PutNodeMetric {
        /// The node (and the NodeMetric's name).
        node: String,
        /// The spec.
        spec: NodeMetricSpec,
        /// Whether it does not exist yet.
        create: bool,
    },
    /// Delete the NodeMetric of a node that is gone.
    DeleteNodeMetric {
        /// The node.
        node: String,
    },
    /// Create or update (`create: false`) the node's NodeSLO.
    PutNodeSlo {
        /// The node (and the NodeSLO's name).
        node: String,
        /// The spec.
        spec: Box<NodeSLOSpec>,
        /// Whether it does not exist yet.
        create: bool,
    },
    /// Delete the NodeSLO of a node that is gone.
    DeleteNodeSlo {
        /// The node.
        node: String,
    },
}

/// What a pass read from the reflectors' stores.
#[derive(Debug, Default, Clone)]
pub struct StoreState {
    /// Nodes.
    pub nodes: Vec<Arc<Node>>,
    /// Pods (all namespaces).
    pub pods: Vec<Arc<Pod>>,
    /// NodeMetrics.
    pub metrics: Vec<Arc<NodeMetric>>,
    /// NodeSLOs.
    pub slos: Vec<Arc<NodeSLO>>,
}

/// The writes of one pass, and what was skipped.
#[derive(Debug, Default)]
pub struct Plan {
    /// Writes, node by node.
    pub actions: Vec<ManagerAction>,
    /// Objects that could not be read, and warnings of the decisions
    /// (each names its object and field).
    pub warnings: Vec<String>,
}

/// Decides the writes of one pass. `last_status_update` holds, per node,
/// when this manager last wrote its status (the update throttle);
/// `config_in_error` keeps existing NodeMetric specs while the ConfigMap
/// has errors.
pub fn plan(
    state: &StoreState,
    config: &SloConfig,
    config_in_error: bool,
    last_status_update: &HashMap<String, Timestamp>,
    now: Timestamp,
) -> Plan {
    let mut out = Plan::default();
    let nodes: Vec<NodeView> = state
        .nodes
        .iter()
        .filter_map(|n| NodeView::from_node(n).map_err(|e| out.warnings.push(e.to_string())).ok())
        .collect();
    let pods: Vec<PodView> = state
        .pods
        .iter()
        .filter(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_some()))
        .filter_map(|p| PodView::from_pod(p).map_err(|e| out.warnings.push(e.to_string())).ok())
        .collect();
    let metrics: HashMap<String, &NodeMetric> =
        state.metrics.iter().map(|m| (m.name_any(), &**m)).collect();
    let slos: HashMap<String, &NodeSLO> = state.slos.iter().map(|s| (s.name_any(), &**s)).collect();
    let results = config.colocation.as_ref().map(|colocation| {
        calculate_all(&nodes, &pods, state.metrics.iter().map(|m| &**m), colocation, now)
    });
    for (i, view) in nodes.iter().enumerate() {
        let name = view.name();
        let result = results.as_ref().map(|r| &r[i]);
        if let Some(r) = result {
            out.warnings.extend(r.warnings.iter().map(|w| format!("node {name}: {w}")));
            let current = ExtendedResources::from_status(view);
            let last = last_status_update.get(name).copied();
            if let Some(reason) = update_needed(&current, &r.resources, last, now, &r.strategy) {
                out.actions.push(ManagerAction::PatchNodeStatus {
                    node: name.into(),
                    resources: r.resources,
                    reason: reason.to_string(),
                });
            }
        }
        let desired = node_metric_spec(result.map(|r| &r.strategy));
        let existing = metrics.get(name).map(|m| &m.spec);
        let metric = reconcile_node_metric(true, existing, &desired, config_in_error);
        let create = matches!(metric, NodeMetricAction::Create(_));
        if let NodeMetricAction::Create(spec) | NodeMetricAction::Update(spec) = metric {
            out.actions.push(ManagerAction::PutNodeMetric { node: name.into(), spec, create });
        }
        let rendered = render_node_slo(&config.slo, name, view.labels(), view.annotations());
        out.warnings.extend(rendered.warnings.iter().map(|w| format!("node {name}: {w}")));
        let slo = reconcile_node_slo(true, slos.get(name).map(|s| &s.spec), &rendered.spec);
        let create = matches!(slo, NodeSloAction::Create(_));
        if let NodeSloAction::Create(spec) | NodeSloAction::Update(spec) = slo {
            out.actions.push(ManagerAction::PutNodeSlo { node: name.into(), spec, create });
        }
    }
    // Objects of nodes that are gone. Nodes that failed to parse are not
    // gone: their objects stay. So do objects the manager did not create.
    let present: BTreeSet<String> = state.nodes.iter().map(|n| n.name_any()).collect();
    for node in gone(&metrics, &present) {
        if let NodeMetricAction::Delete = reconcile_node_metric(
            false,
            Some(&metrics[node].spec),
            &NodeMetricSpec::default(),
            false,
        ) {
            out.actions.push(ManagerAction::DeleteNodeMetric { node: node.clone() });
        }
    }
    for node in gone(&slos, &present) {
        if let NodeSloAction::Delete =
            reconcile_node_slo(false, Some(&slos[node].spec), &NodeSLOSpec::default())
        {
            out.actions.push(ManagerAction::DeleteNodeSlo { node: node.clone() });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::NodeStatus;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use kolo_manager::config::SloConfigStore;
    use kube::api::ObjectMeta;

    use super::*;

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

    fn kinds(plan: &Plan) -> Vec<String> {
        plan.actions
            .iter()
            .map(|a| match a {
                ManagerAction::PatchNodeStatus { node, .. } => format!("status {node}"),
                ManagerAction::PutNodeMetric { node, create, .. } => {
                    format!("nodemetric {node} {create}")
                }
                ManagerAction::DeleteNodeMetric { node } => format!("delete nodemetric {node}"),
                ManagerAction::PutNodeSlo { node, create, .. } => {
                    format!("nodeslo {node} {create}")
                }
                ManagerAction::DeleteNodeSlo { node } => format!("delete nodeslo {node}"),
            })
            .collect()
    }

    #[test]
    fn new_nodes_get_every_object_and_gone_nodes_lose_theirs() {
        let mut store = SloConfigStore::new();
        store.update(Some(&BTreeMap::from([(
            "colocation-config".to_string(),
            r#"{"enable": true}"#.to_string(),
        )])));
        let config = store.config();
        let now = Timestamp::from_second(1_700_000_000).unwrap();
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
            let plan = plan(&state, &config, false, &HashMap::new(), now);
            assert_eq!(kinds(&plan), want);
        }
    }

    #[test]
    fn status_is_not_rewritten_within_the_update_interval() {
        let mut store = SloConfigStore::new();
        store.update(Some(&BTreeMap::from([(
            "colocation-config".to_string(),
            r#"{"enable": true}"#.to_string(),
        )])));
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let state = StoreState { nodes: vec![node("n1")], ..StoreState::default() };
        let first = plan(&state, &store.config(), false, &HashMap::new(), now);
        let ManagerAction::PatchNodeStatus { resources, .. } = &first.actions[0] else {
            panic!("{:?}", first.actions)
        };
        // The node now carries what was written.
        let mut written = (*state.nodes[0]).clone();
        let patch = resources.status_patch();
        let status = written.status.as_mut().unwrap();
        for field in ["capacity", "allocatable"] {
            let list =
                if field == "capacity" { &mut status.capacity } else { &mut status.allocatable };
            for (k, v) in patch["status"][field].as_object().unwrap() {
                if let Some(v) = v.as_str() {
                    list.as_mut().unwrap().insert(k.clone(), Quantity(v.into()));
                }
            }
        }
        let state = StoreState { nodes: vec![Arc::new(written)], ..StoreState::default() };
        let last = HashMap::from([("n1".to_string(), now)]);
        let second = plan(&state, &store.config(), false, &last, now);
        assert!(
            !second.actions.iter().any(|a| matches!(a, ManagerAction::PatchNodeStatus { .. })),
            "{:?}",
            second.actions
        );
    }
}
