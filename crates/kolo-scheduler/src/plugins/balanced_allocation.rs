//! NodeResourcesBalancedAllocation: prefers nodes where, with the pod
//! placed, the configured resources (cpu and memory by default) are used in
//! equal proportion (kube-scheduler's plugin, its current formula).
//!
//! For each resource the node reports, the fraction (requested on the node
//! plus the pod's request) / allocatable, capped at 1; the score is
//! `(1 − standard deviation of the fractions) × 100`, truncated (for two
//! resources the deviation is `|f1 − f2| / 2`). Resources the node does not
//! report are left out; the weights of `NodeResourcesBalancedAllocationArgs`
//! are accepted and validated but, as in kube-scheduler, do not enter the
//! formula.
//!
//! What is counted, and kolo's choices:
//!
//! * **Actual requests**, not the `NonZeroRequested` stand-ins: current
//!   kube-scheduler builds this plugin with `useRequested: true` (the
//!   stand-ins belong to NodeResourcesFit's spreading scores), so a
//!   request-less container adds nothing here, on the node or in the pod.
//! * **A pod that requests none of the resources is not scored** (PreScore
//!   skips it), as kube-scheduler ≥ 1.32 does for best-effort pods: every
//!   node would otherwise score by how balanced it already is, piling
//!   best-effort pods onto one node.
//! * **The pod's own kind of CPU and memory**, like NodeResourcesFit: a
//!   koord-batch pod is balanced on `batch-cpu` / `batch-memory`, a
//!   koord-mid pod on `mid-*`, since those are what it consumes.

use std::sync::Arc;

use kolo_api::PriorityClass;
use kolo_core::resources::ResourceName;
use serde::Deserialize;

use super::node_resources_fit::ResourceWeight;
use crate::framework::{
    CycleContext, CycleState, ExtensionPoints, MAX_NODE_SCORE, NodeInfo, NodeVerdict, Plugin,
    PodInfo, PreScore, PreScoreOutcome, Score, ScoreSink, score_each,
};
use crate::registry::{PluginArgsError, decode_args};

/// The plugin's registered name.
pub const NAME: &str = "NodeResourcesBalancedAllocation";

/// `NodeResourcesBalancedAllocationArgs`, with kube-scheduler's JSON names.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeResourcesBalancedAllocationArgs {
    /// The resources balanced (cpu and memory, weight 1, when empty).
    #[serde(default)]
    pub resources: Vec<ResourceWeight>,
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct BalancedAllocation {
    /// The configured resources (before translation per pod).
    resources: Vec<ResourceName>,
}

impl Default for BalancedAllocation {
    fn default() -> BalancedAllocation {
        BalancedAllocation { resources: vec![ResourceName::Cpu, ResourceName::Memory] }
    }
}

/// The pod's request of each balanced resource (after translation), read
/// once per cycle.
#[derive(Debug, Clone, PartialEq)]
struct PodRequests(Vec<(ResourceName, i64)>);

impl BalancedAllocation {
    /// Builds the plugin from `NodeResourcesBalancedAllocationArgs`.
    pub fn build(args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        let args = decode_args(args, "NodeResourcesBalancedAllocationArgs")?;
        Ok(Arc::new(Self::from_args(args)?))
    }

    /// Builds the plugin from decoded arguments.
    pub fn from_args(
        args: NodeResourcesBalancedAllocationArgs,
    ) -> Result<BalancedAllocation, PluginArgsError> {
        if args.resources.is_empty() {
            return Ok(BalancedAllocation::default());
        }
        let mut resources = Vec::with_capacity(args.resources.len());
        for (i, r) in args.resources.iter().enumerate() {
            let field = |f: &str| format!("resources[{i}].{f}");
            if !(1..=100).contains(&r.weight) {
                return Err(PluginArgsError::new(
                    field("weight"),
                    format!("{} is outside 1..=100", r.weight),
                ));
            }
            let name = ResourceName::parse(&r.name)
                .map_err(|e| PluginArgsError::new(field("name"), e.to_string()))?;
            if resources.contains(&name) {
                return Err(PluginArgsError::new(field("name"), format!("{} twice", r.name)));
            }
            resources.push(name);
        }
        Ok(BalancedAllocation { resources })
    }

    fn requests(&self, pod: &PodInfo) -> PodRequests {
        let view = pod.view();
        let translate = |name: ResourceName| match (view.priority_class(), name) {
            (PriorityClass::Batch, ResourceName::Cpu) => ResourceName::BatchCpu,
            (PriorityClass::Batch, ResourceName::Memory) => ResourceName::BatchMemory,
            (PriorityClass::Mid, ResourceName::Cpu) => ResourceName::MidCpu,
            (PriorityClass::Mid, ResourceName::Memory) => ResourceName::MidMemory,
            (_, other) => other,
        };
        PodRequests(
            self.resources
                .iter()
                .map(|&configured| {
                    let name = translate(configured);
                    (name, view.requests().value(name))
                })
                .collect(),
        )
    }

    fn score_node(pod: &PodRequests, node: &NodeInfo) -> i64 {
        // At most a handful of resources: no allocation per node.
        let mut fractions = [0.0f64; 8];
        let mut n = 0;
        for &(name, amount) in pod.0.iter().take(fractions.len()) {
            let allocatable = node.allocatable(name);
            if allocatable <= 0 {
                continue;
            }
            let requested = node.requested(name).saturating_add(amount);
            fractions[n] = fraction(requested, allocatable);
            n += 1;
        }
        balanced_score(&fractions[..n])
    }
}

/// `requested / allocatable`, capped at 1 (`allocatable` > 0).
pub fn fraction(requested: i64, allocatable: i64) -> f64 {
    (requested as f64 / allocatable as f64).min(1.0)
}

/// kube-scheduler's `balancedResourceScorer`: `(1 − std) × 100`, truncated,
/// over the fractions (each in 0..=1); no fraction or one: 100.
pub fn balanced_score(fractions: &[f64]) -> i64 {
    let std = match fractions {
        [] | [_] => 0.0,
        // The common case, without a square root.
        [a, b] => ((a - b) / 2.0).abs(),
        _ => {
            let n = fractions.len() as f64;
            let mean = fractions.iter().sum::<f64>() / n;
            (fractions.iter().map(|f| (f - mean) * (f - mean)).sum::<f64>() / n).sqrt()
        }
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).pre_score().score().into()
    }
    fn supports_equivalence(&self) -> bool {
        // Reads the pod's requests (in the signature) and the node's
        // allocatable and requested amounts.
        true
    }
    fn node_updates_are_local(&self) -> bool {
        true
    }
}

impl PreScore for BalancedAllocation {
    fn pre_score(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreScoreOutcome {
        let requests = self.requests(pod);
        if requests.0.iter().all(|&(_, amount)| amount == 0) {
            return PreScoreOutcome::Skip;
        }
        state.write(requests);
        PreScoreOutcome::Proceed
    }
}

impl Score for BalancedAllocation {
    fn score(&self, _: &CycleContext, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let mut owned = None;
        Self::score_node(state.read_or(&mut owned, || self.requests(pod)), node)
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
        let requests = state.read_or(&mut owned, || self.requests(pod));
        score_each(nodes, verdicts, out, |node| Self::score_node(requests, node));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ctx, node_info_with, pod_from_yaml, pod_info};
    use proptest::prelude::*;

    /// PreScore then Score; `None` when PreScore skips the pod.
    fn run(plugin: &BalancedAllocation, pod: &PodInfo, node: &NodeInfo) -> Option<i64> {
        let mut state = CycleState::new();
        if plugin.pre_score(&ctx(), &mut state, pod) == PreScoreOutcome::Skip {
            return None;
        }
        Some(plugin.score(&ctx(), &state, pod, node))
    }

    /// Cases of kube-scheduler's `TestNodeResourcesBalancedAllocation`
    /// (balanced_allocation_test.go) and hand-checked ones.
    #[test]
    fn score_table() {
        let plugin = BalancedAllocation::default();
        let cases = [
            // kube: "nothing scheduled, resources requested, differently
            // sized nodes": cpu 3000/4000 = 0.75, memory 5000/10000 = 0.5,
            // std 0.125 → 87; on the 6000m node both 0.5 → 100.
            (
                "kube node1",
                [("cpu", "3"), ("memory", "5000")],
                [("cpu", "4"), ("memory", "10000")],
                vec![],
                Some(87),
            ),
            (
                "kube node2",
                [("cpu", "3"), ("memory", "5000")],
                [("cpu", "6"), ("memory", "10000")],
                vec![],
                Some(100),
            ),
            // Pods on the node count: cpu (1+1)/4 = 0.5, memory (2+4)/8 = 0.75 → 87.
            (
                "with a pod",
                [("cpu", "1"), ("memory", "4Gi")],
                [("cpu", "4"), ("memory", "8Gi")],
                vec![pod_info("u", &[("cpu", "1"), ("memory", "2Gi")])],
                Some(87),
            ),
            // Over-committed fractions are capped at 1: cpu 8/4 → 1, memory
            // 0.25 → std 0.375 → 62.
            (
                "capped",
                [("cpu", "8"), ("memory", "2Gi")],
                [("cpu", "4"), ("memory", "8Gi")],
                vec![],
                Some(62),
            ),
            // A request-less pod on the node adds nothing (no stand-ins):
            // cpu 1/4 = 0.25, memory 2/8 = 0.25 → 100.
            (
                "request-less pod counts nothing",
                [("cpu", "1"), ("memory", "2Gi")],
                [("cpu", "4"), ("memory", "8Gi")],
                vec![pod_info("u", &[])],
                Some(100),
            ),
            // Best effort: skipped.
            (
                "best effort",
                [("cpu", "0"), ("memory", "0")],
                [("cpu", "4"), ("memory", "8Gi")],
                vec![],
                None,
            ),
        ];
        for (name, requests, allocatable, pods, want) in cases {
            let pod = pod_info("p", &requests);
            assert_eq!(run(&plugin, &pod, &node_info_with(&allocatable, &pods)), want, "{name}");
        }
    }

    #[test]
    fn three_resources_use_the_standard_deviation() {
        let args = serde_json::json!({"resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
            {"name": "ephemeral-storage", "weight": 1}]});
        let plugin = BalancedAllocation::from_args(serde_json::from_value(args).unwrap()).unwrap();
        // Fractions 0.5, 0.75, 1.0: mean 0.75, variance (0.0625 + 0 +
        // 0.0625) / 3, std 0.2041 → 79.
        let pod = pod_info("p", &[("cpu", "2"), ("memory", "6Gi"), ("ephemeral-storage", "10Gi")]);
        let node =
            node_info_with(&[("cpu", "4"), ("memory", "8Gi"), ("ephemeral-storage", "10Gi")], &[]);
        assert_eq!(run(&plugin, &pod, &node), Some(79));
        // A node without the third resource balances the other two:
        // 0.5 vs 0.75 → 87.
        assert_eq!(
            run(&plugin, &pod, &node_info_with(&[("cpu", "4"), ("memory", "8Gi")], &[])),
            Some(87)
        );
    }

    #[test]
    fn a_batch_pod_is_balanced_on_batch_resources() {
        let pod = PodInfo::new(pod_from_yaml(
            "metadata: {name: b, labels: {koordinator.sh/qosClass: BE, koordinator.sh/priority-class: koord-batch}}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests: {kubernetes.io/batch-cpu: '1000', kubernetes.io/batch-memory: 1Gi}\n",
        ))
        .unwrap();
        // batch-cpu 1000/2000 = 0.5, batch-memory 1/4 = 0.25 → std 0.125 →
        // 87; cpu and memory (empty) play no part.
        let node = node_info_with(
            &[
                ("cpu", "4"),
                ("memory", "8Gi"),
                ("kubernetes.io/batch-cpu", "2000"),
                ("kubernetes.io/batch-memory", "4Gi"),
            ],
            &[],
        );
        assert_eq!(run(&BalancedAllocation::default(), &pod, &node), Some(87));
    }

    #[test]
    fn args_are_checked() {
        let bad = [
            (
                serde_json::json!({"resources": [{"name": "cpu", "weight": 0}]}),
                "resources[0].weight",
            ),
            (
                serde_json::json!({"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 2}]}),
                "resources[1].name",
            ),
        ];
        for (args, field) in bad {
            let err = BalancedAllocation::build(Some(&args)).err().expect("rejected");
            assert!(err.to_string().contains(field), "{err}");
        }
        assert!(BalancedAllocation::build(Some(&serde_json::json!({"unknown": 1}))).is_err());
    }

    proptest! {
        /// Scores stay in 0..=100; two equal fractions score 100; for two
        /// resources the score is 100 − 50·|f1 − f2| (± truncation).
        #[test]
        fn score_bounds(fs in proptest::collection::vec(0.0f64..=1.0, 0..6), f in 0.0f64..=1.0) {
            let s = balanced_score(&fs);
            prop_assert!((0..=100).contains(&s), "{s}");
            prop_assert_eq!(balanced_score(&[f, f]), 100);
            if let [a, b, ..] = fs[..] {
                let exact = 100.0 - 50.0 * (a - b).abs();
                let got = balanced_score(&[a, b]) as f64;
                prop_assert!(got <= exact + 1e-9 && got > exact - 1.0 - 1e-9, "{got} vs {exact}");
            }
        }
    }
}
