//! The manager's pass, driven alike by both drivers: one scripted history
//! (nodes, pods, NodeMetric reports with usage, a `slo-controller-config`
//! change, time past the update throttle, a node removed, reports going
//! stale) run through the real-cluster route (`Pass::plan` over the stores,
//! writes applied as the API server stores them, `Pass::applied` for each)
//! and through the simulator's route (`kolo_sim::manager::manage` per node)
//! gives the same decision for every node at every step: status amounts and
//! why, NodeMetric specs, NodeSLO specs, warnings, and the same objects
//! stored afterwards.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::SignedDuration;
use kolo_api::crd::{NodeMetric, NodeMetricSpec, NodeSLO};
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::pod::PodView;
use kolo_core::usage_report::NodeUsageReport;
use kolo_manager::config::SloConfigStore;
use kolo_manager::noderesource::{ExtendedResources, UpdateReason};
use kolo_manager::pass::{
    Deletion, MANAGED_BY, ManagerAction, NodeDecision, Pass, Plan, StoreState,
};
use kolo_sim::manager;
use kolo_sim::node::{NodePod, SimNode, Work};
use kolo_sim::objects::{self, PodClass};
use serde_json::{Value, json};

const GIB: i64 = 1 << 30;

/// The cluster as the API server stores it, and the manager that writes to
/// it.
struct Cluster {
    stores: StoreState,
    pass: Pass,
}

/// The simulated nodes and the manager's pass that decides for them.
struct Simulated {
    nodes: Vec<SimNode>,
    pass: Pass,
}

fn start() -> Timestamp {
    kolo_sim::engine::START.parse().unwrap()
}

fn at(seconds: i64) -> Timestamp {
    start() + SignedDuration::from_secs(seconds)
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// (name, labels, cores) of the nodes.
fn node_specs() -> Vec<(&'static str, BTreeMap<String, String>, i64)> {
    vec![("a", labels(&[("pool", "big")]), 16), ("b", labels(&[]), 8), ("c", labels(&[]), 8)]
}

fn node_object(name: &str, labels: &BTreeMap<String, String>, cores: i64) -> Node {
    let resources = kolo_core::CpuMem::new(cores * 1000, cores * 4 * GIB);
    objects::node_object(name, labels, resources, resources, &ExtendedResources::NONE, start())
}

/// (node, name, class, cores, GiB) of the bound pods.
const PODS: [(&str, &str, PodClass, i64, i64); 4] = [
    ("a", "ls-1", PodClass::Ls, 4, 8),
    ("a", "be-1", PodClass::Batch, 2, 4),
    ("b", "ls-2", PodClass::Ls, 2, 4),
    ("c", "ls-3", PodClass::Ls, 1, 2),
];

fn pods() -> Vec<Pod> {
    PODS.iter()
        .enumerate()
        .map(|(i, &(node, name, class, cores, gib))| {
            let uid = kolo_sim::agent::pod_uid(i as u32);
            let mut pod =
                objects::pod_object("ns", name, &uid, class, cores * 1000, gib * GIB, start());
            objects::bind(&mut pod, node);
            pod
        })
        .collect()
}

/// The scripted `slo-controller-config` data: v1, then v2 (another report
/// interval, reclaim threshold for the big pool, suppress threshold, and a
/// degradation after 2 minutes without reports rather than 15).
fn config_data(version: u8) -> BTreeMap<String, String> {
    let (interval, big_reclaim, suppress, degrade) =
        if version == 1 { (60, 80, 65, 15) } else { (30, 70, 50, 2) };
    let colocation = json!({
        "enable": true, "metricAggregateDurationSeconds": 60,
        "metricReportIntervalSeconds": interval, "degradeTimeMinutes": degrade,
        "cpuReclaimThresholdPercent": 65, "memoryReclaimThresholdPercent": 65,
        "nodeConfigs": [{"name": "big", "nodeSelector": {"matchLabels": {"pool": "big"}},
                         "cpuReclaimThresholdPercent": big_reclaim}]
    });
    let threshold = json!({"clusterStrategy": {"enable": true,
        "cpuSuppressThresholdPercent": suppress, "memoryEvictThresholdPercent": 70}});
    BTreeMap::from([
        ("colocation-config".to_string(), colocation.to_string()),
        ("resource-threshold-config".to_string(), threshold.to_string()),
    ])
}

/// A node's NodeMetric status as its agent reports it at `time`: node
/// usage, and each of its pods' usage in cores (memory: GiB).
fn metric(node: &str, time: i64, usage: (f64, f64), pods: &[(&str, f64, f64)]) -> NodeMetric {
    let list = |cpu: f64, gib: f64| json!({"resources": {"cpu": format!("{}m", (cpu * 1000.0) as i64), "memory": format!("{}", (gib * GIB as f64) as i64)}});
    let pods: Vec<Value> = pods
        .iter()
        .map(|&(name, cpu, gib)| {
            let batch = name.starts_with("be");
            json!({"namespace": "ns", "name": name, "podUsage": list(cpu, gib),
                   "priority": if batch { "koord-batch" } else { "koord-prod" },
                   "qos": if batch { "BE" } else { "LS" }})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
        "metadata": {"name": node},
        "status": {"updateTime": at(time).to_string(),
                   "nodeMetric": {"nodeUsage": list(usage.0, usage.1),
                                  "systemUsage": list(0.5, 1.0)},
                   "podsMetric": pods}
    }))
    .unwrap()
}

/// The reports of every node still there at `time` (one step of usage).
fn reports(time: i64, ls_1_cores: f64, with_c: bool) -> Vec<NodeMetric> {
    let mut out = vec![
        metric(
            "a",
            time,
            (1.5 + ls_1_cores, 12.0),
            &[("ls-1", ls_1_cores, 7.0), ("be-1", 1.0, 3.0)],
        ),
        metric("b", time, (2.0, 5.0), &[("ls-2", 1.5, 3.5)]),
    ];
    if with_c {
        out.push(metric("c", time, (1.0, 3.0), &[("ls-3", 0.5, 1.5)]));
    }
    out
}

impl Cluster {
    fn new(nodes: &[Node], pods: &[Pod]) -> Cluster {
        let stores = StoreState {
            nodes: nodes.iter().cloned().map(Arc::new).collect(),
            pods: pods.iter().cloned().map(Arc::new).collect(),
            ..StoreState::default()
        };
        Cluster { stores, pass: Pass::new() }
    }

    /// The agents write their NodeMetrics' status (the spec is the
    /// manager's).
    fn report(&mut self, metrics: &[NodeMetric]) {
        for reported in metrics {
            let name = reported.metadata.name.as_deref();
            let stored =
                self.stores.metrics.iter_mut().find(|m| m.metadata.name.as_deref() == name);
            let stored = Arc::make_mut(stored.expect("the manager created it"));
            stored.status = reported.status.clone();
        }
    }

    /// One pass of the real-cluster route: plan, then every write stored as
    /// the API server would and recorded.
    fn pass(&mut self, store: &SloConfigStore, now: Timestamp) -> Plan {
        self.pass.config_status(store.status());
        let plan = self.pass.plan(&self.stores, &store.config(), now);
        for action in plan.clone().into_actions() {
            self.write(&action);
            self.pass.applied(&action, now);
        }
        plan
    }

    fn write(&mut self, action: &ManagerAction) {
        let s = &mut self.stores;
        let managed = || Some(labels(&[MANAGED_BY]));
        match action {
            ManagerAction::PatchNodeStatus { node, write } => {
                let stored = s.nodes.iter_mut().find(|n| n.metadata.name.as_ref() == Some(node));
                let stored = stored.unwrap();
                let mut value = serde_json::to_value(&**stored).unwrap();
                merge(&mut value, &write.resources.status_patch());
                *stored = Arc::new(serde_json::from_value(value).unwrap());
            }
            ManagerAction::PutNodeMetric { node, write } if write.create => {
                let mut object = NodeMetric::new(node, (*write.spec).clone());
                object.metadata.labels = managed();
                s.metrics.push(Arc::new(object));
            }
            ManagerAction::PutNodeMetric { node, write } => {
                let stored = s.metrics.iter_mut().find(|m| m.metadata.name.as_ref() == Some(node));
                Arc::make_mut(stored.unwrap()).spec = (*write.spec).clone();
            }
            ManagerAction::PutNodeSlo { node, write } if write.create => {
                let mut object = NodeSLO::new(node, (*write.spec).clone());
                object.metadata.labels = managed();
                s.slos.push(Arc::new(object));
            }
            ManagerAction::PutNodeSlo { node, write } => {
                let stored = s.slos.iter_mut().find(|m| m.metadata.name.as_ref() == Some(node));
                Arc::make_mut(stored.unwrap()).spec = (*write.spec).clone();
            }
            ManagerAction::DeleteNodeMetric { node } => {
                s.metrics.retain(|m| m.metadata.name.as_ref() != Some(node));
            }
            ManagerAction::DeleteNodeSlo { node } => {
                s.slos.retain(|m| m.metadata.name.as_ref() != Some(node));
            }
        }
    }

    fn remove_node(&mut self, name: &str) {
        let name = Some(name.to_string());
        self.stores.nodes.retain(|n| n.metadata.name != name);
        self.stores.pods.retain(|p| p.spec.as_ref().and_then(|s| s.node_name.clone()) != name);
    }
}

/// A JSON merge patch (RFC 7386), as the API server applies it.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let target = target.as_object_mut().unwrap();
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

impl Simulated {
    fn new(nodes: &[Node], pods: &[Pod], store: &SloConfigStore) -> Simulated {
        let specs = node_specs();
        let mut simulated = Vec::new();
        for (object, (name, labels, _)) in nodes.iter().zip(specs) {
            let view = NodeView::from_node(object).unwrap();
            let resources = view.capacity();
            let resources = kolo_core::CpuMem::new(resources.cpu(), resources.memory());
            let mut node = SimNode::new(
                name.into(),
                labels,
                resources,
                resources,
                BTreeMap::new(),
                view,
                (0.0, 0.0),
            );
            for (id, pod) in (0u32..).zip(pods) {
                if pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name) {
                    node.start(node_pod(id, pod), None);
                }
            }
            manager::configure(&mut node, &store.config());
            simulated.push(node);
        }
        Simulated { nodes: simulated, pass: Pass::new() }
    }

    /// One pass of the simulator's route, node by node; `metrics` are the
    /// nodes' reports (read as the simulator's are).
    fn pass(&mut self, metrics: &[NodeMetric], now: Timestamp) -> Vec<NodeDecision> {
        let mut decisions = Vec::new();
        for node in &mut self.nodes {
            let report = metrics
                .iter()
                .find(|m| m.metadata.name.as_deref() == Some(&node.name))
                .map(NodeUsageReport::read);
            let managed = manager::manage(node, &self.pass, report.as_ref(), start(), now).unwrap();
            decisions.push(NodeDecision { node: node.name.clone(), plan: managed.plan });
        }
        decisions
    }
}

fn node_pod(id: u32, pod: &Pod) -> NodePod {
    NodePod {
        id,
        view: Box::new(PodView::from_pod(pod).unwrap()),
        cpu_request: 0.0,
        work: Work::Be { demand: 0.0, left: 1.0, memory: 0.0 },
        cpu: 0.0,
        memory: 0.0,
        window_cpu: 0.0,
        window_memory: 0.0,
        window_time: 0.0,
    }
}

/// The objects each route stores for `node` agree.
fn assert_same_objects(cluster: &Cluster, node: &SimNode, step: &str) {
    let name = Some(&node.name);
    let stored = cluster.stores.nodes.iter().find(|n| n.metadata.name.as_ref() == name).unwrap();
    let status = ExtendedResources::from_status(&NodeView::from_node(stored).unwrap());
    assert_eq!(status, node.extended, "{step}: node {} status", node.name);
    let metric = cluster.stores.metrics.iter().find(|m| m.metadata.name.as_ref() == name);
    assert_eq!(
        metric.map(|m| &m.spec),
        node.metric_spec.as_deref(),
        "{step}: {} NodeMetric",
        node.name
    );
    let slo = cluster.stores.slos.iter().find(|s| s.metadata.name.as_ref() == name);
    assert_eq!(slo.map(|s| &s.spec), node.slo.as_deref(), "{step}: {} NodeSLO", node.name);
}

/// What kind of status write a decision holds, if any.
fn reason_kind(reason: &UpdateReason) -> &'static str {
    match reason {
        UpdateReason::NeverSynced => "never synced",
        UpdateReason::IntervalElapsed { .. } => "interval elapsed",
        UpdateReason::Added { .. } => "added",
        UpdateReason::Removed { .. } => "removed",
        UpdateReason::Changed { .. } => "changed",
    }
}

#[test]
fn the_cluster_route_and_the_simulator_route_decide_alike() {
    let nodes: Vec<Node> = node_specs().iter().map(|(n, l, c)| node_object(n, l, *c)).collect();
    let pods = pods();
    let mut store = SloConfigStore::new();
    store.update(Some(&config_data(1)));
    let mut cluster = Cluster::new(&nodes, &pods);
    let mut sim = Simulated::new(&nodes, &pods, &store);
    // (step, time, config version, reports (ls-1's cores; None: the last
    // ones, going stale), node c still there).
    let script: [(&str, i64, u8, Option<f64>, bool); 8] = [
        ("start: objects created", 0, 1, None, true),
        ("first reports", 60, 1, Some(3.0), true),
        ("a small change", 120, 1, Some(3.1), true),
        ("LS usage jumps on a", 180, 1, Some(6.0), true),
        ("the ConfigMap changes", 240, 2, Some(6.0), true),
        ("past the throttle", 420, 2, Some(6.0), true),
        ("node c removed", 480, 2, Some(6.0), false),
        ("reports stale", 610, 2, None, false),
    ];
    let mut metrics: Vec<NodeMetric> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (step, time, version, ls_1, with_c) in script {
        if version == 2 {
            store.update(Some(&config_data(2)));
            sim.nodes.iter_mut().for_each(|n| manager::configure(n, &store.config()));
        }
        if !with_c {
            cluster.remove_node("c");
            sim.nodes.retain(|n| n.name != "c");
        }
        if let Some(cores) = ls_1 {
            metrics = reports(time, cores, with_c);
            cluster.report(&metrics);
        }
        let plan = cluster.pass(&store, at(time));
        let decisions = sim.pass(&metrics, at(time));
        assert_eq!(plan.nodes, decisions, "{step}");
        for node in &sim.nodes {
            assert_same_objects(&cluster, node, step);
        }
        for d in &plan.nodes {
            let p = &d.plan;
            seen.extend(p.status.as_ref().map(|w| format!("status {}", reason_kind(&w.reason))));
            seen.extend(p.metric.as_ref().map(|w| format!("nodemetric create {}", w.create)));
            seen.extend(p.slo.as_ref().map(|w| format!("nodeslo create {}", w.create)));
        }
        let want_deletions = if step == "node c removed" {
            vec![Deletion::NodeMetric("c".into()), Deletion::NodeSlo("c".into())]
        } else {
            vec![]
        };
        assert_eq!(plan.deletions, want_deletions, "{step}");
    }
    // The script went through every kind of decision.
    for kind in [
        "status never synced",
        "status added",
        "status changed",
        "status interval elapsed",
        "status removed",
        "nodemetric create true",
        "nodemetric create false",
        "nodeslo create true",
        "nodeslo create false",
    ] {
        assert!(seen.iter().any(|s| s == kind), "no {kind} in {seen:?}");
    }
    // The report interval followed the ConfigMap in both routes.
    let interval = |spec: Option<&NodeMetricSpec>| {
        spec.and_then(|s| s.metric_collect_policy.as_ref()?.report_interval_seconds)
    };
    assert_eq!(interval(sim.nodes[0].metric_spec.as_deref()), Some(30));
}
