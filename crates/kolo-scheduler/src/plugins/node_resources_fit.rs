//! NodeResourcesFit: a pod fits a node when, for every resource it
//! requests, the node's allocatable minus what its pods (assumed ones
//! included) request covers it — standard resources and kolo's co-location
//! resources alike (`kubernetes.io/batch-cpu`, `batch-memory`, `mid-*`, as
//! a batch pod requests them after the colocation webhook). Feasible nodes
//! are scored LeastAllocated (spread) or MostAllocated (pack), as
//! kube-scheduler's plugin.
//!
//! kolo difference, on purpose: the scoring resources `cpu` and `memory`
//! are read as the pod's own kind of CPU and memory — `batch-cpu` /
//! `batch-memory` for a koord-batch pod, `mid-*` for koord-mid — because a
//! batch pod requests no `cpu`, and spreading it by `cpu` requests (what
//! kube-scheduler would do) ignores the very resource it consumes.

use std::sync::Arc;

use kolo_api::PriorityClass;
use kolo_core::resources::ResourceName;
use serde::Deserialize;

use crate::framework::{
    CycleContext, CycleState, EventKinds, ExtensionPoints, Filter, NodeInfo, NodeVerdict, Plugin,
    PodInfo, PreFilter, PreFilterOutcome, Rejection, Score, ScoreSink, Verdict, filter_each,
    score_each,
};
use crate::registry::{PluginArgsError, decode_args};

/// The plugin's registered name.
pub const NAME: &str = "NodeResourcesFit";

/// `NodeResourcesFitArgs`, with kube-scheduler's JSON names.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeResourcesFitArgs {
    /// Resources the filter does not check.
    #[serde(default)]
    pub ignored_resources: Vec<String>,
    /// Resource name prefixes (before the `/`) the filter does not check.
    #[serde(default)]
    pub ignored_resource_groups: Vec<String>,
    /// How feasible nodes are scored (LeastAllocated over cpu and memory,
    /// weight 1 each, when unset).
    #[serde(default)]
    pub scoring_strategy: Option<ScoringStrategy>,
}

/// A scoring strategy.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScoringStrategy {
    /// `LeastAllocated` or `MostAllocated`.
    #[serde(rename = "type", default = "least_allocated")]
    pub kind: String,
    /// The resources scored, with weights 1..=100.
    #[serde(default)]
    pub resources: Vec<ResourceWeight>,
}

fn least_allocated() -> String {
    "LeastAllocated".into()
}

/// A resource and its weight in the score.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceWeight {
    /// The resource name.
    pub name: String,
    /// Its weight, 1..=100.
    pub weight: i64,
}

/// Spread or pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `(allocatable − requested) × 100 / allocatable`: emptier nodes win.
    LeastAllocated,
    /// `requested × 100 / allocatable`: fuller nodes win.
    MostAllocated,
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct NodeResourcesFit {
    ignored: Vec<ResourceName>,
    ignored_groups: Vec<String>,
    strategy: Strategy,
    /// (resource, weight) as configured (before translation per pod).
    resources: Vec<(ResourceName, i64)>,
}

impl Default for NodeResourcesFit {
    fn default() -> NodeResourcesFit {
        NodeResourcesFit {
            ignored: Vec::new(),
            ignored_groups: Vec::new(),
            strategy: Strategy::LeastAllocated,
            resources: vec![(ResourceName::Cpu, 1), (ResourceName::Memory, 1)],
        }
    }
}

/// What the pod needs, computed once per cycle.
#[derive(Debug, Clone, PartialEq)]
struct FitState {
    /// The resources it requests (non-zero, not ignored) and how much.
    requests: Vec<(ResourceName, i64)>,
    /// (resource after translation, weight, pod amount, use non-zero sums).
    score: Vec<(ResourceName, i64, i64, bool)>,
}

impl NodeResourcesFit {
    /// Builds the plugin from `NodeResourcesFitArgs`.
    pub fn build(args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(Self::from_args(decode_args(args, "NodeResourcesFitArgs")?)?))
    }

    /// Builds the plugin from decoded arguments.
    pub fn from_args(args: NodeResourcesFitArgs) -> Result<NodeResourcesFit, PluginArgsError> {
        let mut plugin = NodeResourcesFit::default();
        for (i, name) in args.ignored_resources.iter().enumerate() {
            plugin.ignored.push(ResourceName::parse(name).map_err(|e| {
                PluginArgsError::new(format!("ignoredResources[{i}]"), e.to_string())
            })?);
        }
        plugin.ignored_groups = args.ignored_resource_groups;
        if let Some(strategy) = args.scoring_strategy {
            plugin.strategy = match strategy.kind.as_str() {
                "LeastAllocated" => Strategy::LeastAllocated,
                "MostAllocated" => Strategy::MostAllocated,
                other => {
                    return Err(PluginArgsError::new(
                        "scoringStrategy.type",
                        format!("{other:?} is not supported (LeastAllocated or MostAllocated)"),
                    ));
                }
            };
            if !strategy.resources.is_empty() {
                plugin.resources.clear();
            }
            for (i, r) in strategy.resources.iter().enumerate() {
                let field = |f: &str| format!("scoringStrategy.resources[{i}].{f}");
                if !(1..=100).contains(&r.weight) {
                    return Err(PluginArgsError::new(
                        field("weight"),
                        format!("{} is outside 1..=100", r.weight),
                    ));
                }
                let name = ResourceName::parse(&r.name)
                    .map_err(|e| PluginArgsError::new(field("name"), e.to_string()))?;
                plugin.resources.push((name, r.weight));
            }
        }
        Ok(plugin)
    }

    fn is_ignored(&self, name: ResourceName) -> bool {
        if self.ignored.contains(&name) {
            return true;
        }
        let full = name.as_str();
        full.split_once('/')
            .is_some_and(|(group, _)| self.ignored_groups.iter().any(|g| g == group))
    }

    fn state(&self, pod: &PodInfo) -> FitState {
        let view = pod.view();
        let requests = view
            .requests()
            .iter()
            .filter(|&(name, amount)| {
                amount > 0 && name != ResourceName::Pods && !self.is_ignored(name)
            })
            .collect();
        let translate = |name: ResourceName| match (view.priority_class(), name) {
            (PriorityClass::Batch, ResourceName::Cpu) => ResourceName::BatchCpu,
            (PriorityClass::Batch, ResourceName::Memory) => ResourceName::BatchMemory,
            (PriorityClass::Mid, ResourceName::Cpu) => ResourceName::MidCpu,
            (PriorityClass::Mid, ResourceName::Memory) => ResourceName::MidMemory,
            (_, other) => other,
        };
        let (non_zero_cpu, non_zero_memory) = pod.non_zero_requests();
        let score = self
            .resources
            .iter()
            .map(|&(configured, weight)| {
                let name = translate(configured);
                match name {
                    ResourceName::Cpu => (name, weight, non_zero_cpu, true),
                    ResourceName::Memory => (name, weight, non_zero_memory, true),
                    _ => (name, weight, view.requests().value(name), false),
                }
            })
            .collect();
        FitState { requests, score }
    }

    fn fits(state: &FitState, node: &NodeInfo) -> Verdict {
        // A node that reports no pod capacity (hand-written snapshots) is
        // not limited; kube-scheduler would treat it as 0 pods.
        if node.has_allocatable(ResourceName::Pods)
            && i64::from(node.pod_count()) + 1 > node.allocatable(ResourceName::Pods)
        {
            return Err(Rejection::unschedulable("Too many pods"));
        }
        let free = |name: ResourceName| node.allocatable(name) - node.requested(name);
        match state.requests.iter().find(|&&(name, amount)| amount > free(name)) {
            None => Ok(()),
            Some(&(first, _)) => Err(Self::insufficient(state, node, first)),
        }
    }

    /// The rejection for a node short of `first` (and maybe more): built
    /// only on the failure path.
    fn insufficient(state: &FitState, node: &NodeInfo, first: ResourceName) -> Rejection {
        let free = |name: ResourceName| node.allocatable(name) - node.requested(name);
        // Kept as numbers (one allocation, no formatting): a full cluster
        // rejects most nodes for every pod it tries.
        let shortages = state
            .requests
            .iter()
            .filter(|&&(name, amount)| amount > free(name))
            .map(|&(name, amount)| (name, amount, free(name)))
            .collect();
        Rejection::unschedulable(insufficient_reason(first)).with_shortages(shortages)
    }

    fn score_node(&self, state: &FitState, node: &NodeInfo) -> i64 {
        let (non_zero_cpu, non_zero_memory) = node.non_zero_requested();
        let mut total = 0;
        let mut weights = 0;
        for &(name, weight, pod_amount, non_zero) in &state.score {
            let capacity = node.allocatable(name);
            if capacity <= 0 {
                // Newer kube-scheduler skips resources a node lacks, so a
                // node without batch resources is not dragged down by them.
                continue;
            }
            let on_node = match (non_zero, name) {
                (true, ResourceName::Cpu) => non_zero_cpu,
                (true, ResourceName::Memory) => non_zero_memory,
                _ => node.requested(name),
            };
            let requested = on_node.saturating_add(pod_amount);
            let score = match self.strategy {
                Strategy::LeastAllocated if requested > capacity => 0,
                Strategy::LeastAllocated => (capacity - requested) * 100 / capacity,
                Strategy::MostAllocated => requested.min(capacity) * 100 / capacity,
            };
            total += score * weight;
            weights += weight;
        }
        if weights == 0 { 0 } else { total / weights }
    }
}

/// kube-scheduler's wording, with kolo's short names for co-location
/// resources (`Insufficient batch-cpu`).
pub fn insufficient_reason(name: ResourceName) -> String {
    format!("Insufficient {}", name.short_name())
}

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).pre_filter().filter().score().node_scoped_hints().into()
    }
    fn events_to_register(&self) -> EventKinds {
        EventKinds::NODE_ADD | EventKinds::NODE_UPDATE | EventKinds::POD_DELETE
    }
    fn supports_equivalence(&self) -> bool {
        true
    }
    fn node_updates_are_local(&self) -> bool {
        // Reads the node's allocatable and the pods counted on it only.
        true
    }
}

impl PreFilter for NodeResourcesFit {
    fn pre_filter(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        state.write(self.state(pod));
        PreFilterOutcome::Proceed
    }
}

impl Filter for NodeResourcesFit {
    fn filter(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        let mut owned = None;
        Self::fits(state.read_or(&mut owned, || self.state(pod)), node)
    }

    fn filter_nodes(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        plugin: u16,
        out: &mut [NodeVerdict],
    ) {
        let mut owned = None;
        let fit = state.read_or(&mut owned, || self.state(pod));
        filter_each(nodes, plugin, out, |node| Self::fits(fit, node));
    }
}

impl Score for NodeResourcesFit {
    fn score(&self, _: &CycleContext, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let mut owned = None;
        self.score_node(state.read_or(&mut owned, || self.state(pod)), node)
    }

    fn score_nodes(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        verdicts: &[NodeVerdict],
        out: &mut ScoreSink<'_>,
    ) {
        let mut owned = None;
        let fit = state.read_or(&mut owned, || self.state(pod));
        score_each(nodes, verdicts, out, |node| self.score_node(fit, node));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ctx, node_info_with, pod_from_yaml, pod_info};

    fn run(plugin: &NodeResourcesFit, pod: &PodInfo, node: &NodeInfo) -> (Verdict, i64) {
        let mut state = CycleState::new();
        plugin.pre_filter(&ctx(), &mut state, pod);
        let verdict = plugin.filter(&ctx(), &state, pod, node);
        (verdict, plugin.score(&ctx(), &state, pod, node))
    }

    fn batch_pod(name: &str, cpu: &str, memory: &str) -> PodInfo {
        PodInfo::new(pod_from_yaml(&format!(
            "metadata: {{name: {name}, labels: {{koordinator.sh/qosClass: BE, koordinator.sh/priority-class: koord-batch}}}}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests: {{kubernetes.io/batch-cpu: '{cpu}', kubernetes.io/batch-memory: {memory}}}\n"
        )))
        .unwrap()
    }

    #[test]
    fn filter_table() {
        let plugin = NodeResourcesFit::default();
        let alloc = [
            ("cpu", "4"),
            ("memory", "8Gi"),
            ("pods", "3"),
            ("kubernetes.io/batch-cpu", "2000"),
            ("kubernetes.io/batch-memory", "4Gi"),
        ];
        let used = [pod_info("u1", &[("cpu", "3"), ("memory", "2Gi")])];
        type Case<'a> = (&'a str, PodInfo, Vec<PodInfo>, Result<(), &'a str>);
        let cases: Vec<Case> = vec![
            ("fits", pod_info("p", &[("cpu", "1"), ("memory", "1Gi")]), used.to_vec(), Ok(())),
            (
                "exactly full",
                pod_info("p", &[("cpu", "1"), ("memory", "6Gi")]),
                used.to_vec(),
                Ok(()),
            ),
            (
                "cpu short",
                pod_info("p", &[("cpu", "1001m")]),
                used.to_vec(),
                Err("Insufficient cpu"),
            ),
            (
                "memory short",
                pod_info("p", &[("memory", "7Gi")]),
                used.to_vec(),
                Err("Insufficient memory"),
            ),
            ("batch fits", batch_pod("b", "2000", "4Gi"), used.to_vec(), Ok(())),
            (
                "batch cpu short",
                batch_pod("b", "2001", "1Gi"),
                used.to_vec(),
                Err("Insufficient batch-cpu"),
            ),
            (
                "batch memory short",
                batch_pod("b", "1000", "5Gi"),
                used.to_vec(),
                Err("Insufficient batch-memory"),
            ),
            (
                "too many pods",
                pod_info("p", &[]),
                vec![pod_info("a", &[]), pod_info("b", &[]), pod_info("c", &[])],
                Err("Too many pods"),
            ),
            (
                "extended resource the node lacks",
                pod_info("p", &[("nvidia.com/gpu", "1")]),
                vec![],
                Err("Insufficient nvidia.com/gpu"),
            ),
        ];
        for (case, pod, pods, want) in cases {
            let node = node_info_with(&alloc, &pods);
            let (verdict, _) = run(&plugin, &pod, &node);
            assert_eq!(
                verdict.map_err(|r| r.reason.into_owned()),
                want.map_err(String::from),
                "{case}"
            );
        }
        // The detail lists every short resource with the amounts.
        let node = node_info_with(&alloc, &used);
        let (verdict, _) = run(&plugin, &pod_info("p", &[("cpu", "2"), ("memory", "7Gi")]), &node);
        assert_eq!(
            verdict.unwrap_err().detail.map(|d| d.to_string()).as_deref(),
            Some("cpu: requested 2000, free 1000, memory: requested 7516192768, free 6442450944")
        );
    }

    #[test]
    fn least_and_most_allocated_scores() {
        // Node 4 cpu / 8Gi with 1 cpu / 2Gi used; pod 1 cpu / 2Gi:
        // least = ((4000-2000)*100/4000 + (8-4)*100/8) / 2 = (50 + 50) / 2.
        let node = node_info_with(
            &[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")],
            &[pod_info("u", &[("cpu", "1"), ("memory", "2Gi")])],
        );
        let pod = pod_info("p", &[("cpu", "1"), ("memory", "2Gi")]);
        assert_eq!(run(&NodeResourcesFit::default(), &pod, &node).1, 50);
        let most = NodeResourcesFit::from_args(NodeResourcesFitArgs {
            scoring_strategy: Some(ScoringStrategy {
                kind: "MostAllocated".into(),
                resources: vec![
                    ResourceWeight { name: "cpu".into(), weight: 3 },
                    ResourceWeight { name: "memory".into(), weight: 1 },
                ],
            }),
            ..Default::default()
        })
        .unwrap();
        // cpu 2000/4000 → 50 (×3), memory 4Gi/8Gi → 50 (×1).
        assert_eq!(run(&most, &pod, &node).1, 50);
        // An LS pod without requests counts as 100m / 200Mi (kube's
        // stand-ins): cpu (4000-1100)*100/4000 = 72, memory
        // (8192-2248)*100/8192 = 72.
        let ls = PodInfo::new(pod_from_yaml(
            "metadata: {name: e, labels: {koordinator.sh/qosClass: LS}}\nspec: {containers: [{name: c}]}",
        ))
        .unwrap();
        assert_eq!(run(&NodeResourcesFit::default(), &ls, &node).1, 72);
        // A pod without requests or labels is BE, hence koord-batch (spec
        // §0.2), and is scored on batch resources, which this node lacks.
        assert_eq!(run(&NodeResourcesFit::default(), &pod_info("e", &[]), &node).1, 0);
    }

    #[test]
    fn batch_pods_are_scored_on_batch_resources() {
        let alloc = [
            ("cpu", "4"),
            ("memory", "8Gi"),
            ("pods", "10"),
            ("kubernetes.io/batch-cpu", "4000"),
            ("kubernetes.io/batch-memory", "8Gi"),
        ];
        let busy = node_info_with(&alloc, &[batch_pod("u", "3000", "6Gi")]);
        let idle = node_info_with(&alloc, &[]);
        let pod = batch_pod("p", "1000", "2Gi");
        let plugin = NodeResourcesFit::default();
        // idle: (3000*100/4000 + 6*100/8) / 2 = (75 + 75) / 2; busy: full → 0.
        assert_eq!(run(&plugin, &pod, &idle).1, 75);
        assert_eq!(run(&plugin, &pod, &busy).1, 0);
    }

    #[test]
    fn args_are_checked() {
        let bad = [
            (
                serde_json::json!({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}),
                "scoringStrategy.type",
            ),
            (
                serde_json::json!({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}]}}),
                "scoringStrategy.resources[0].weight",
            ),
            (serde_json::json!({"ignoredResources": [7]}), "ignoredResources[0]"),
        ];
        for (args, field) in bad {
            let err = NodeResourcesFit::build(Some(&args)).err().expect("refused");
            assert_eq!(err.field, field);
        }
        let plugin = NodeResourcesFit::from_args(NodeResourcesFitArgs {
            ignored_resource_groups: vec!["example.com".into()],
            ..Default::default()
        })
        .unwrap();
        let pod = pod_info("p", &[("example.com/foo", "1")]);
        let node = node_info_with(&[("cpu", "1")], &[]);
        assert_eq!(run(&plugin, &pod, &node).0, Ok(()));
    }
}
