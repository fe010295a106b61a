//! NodeAffinity: `spec.nodeSelector` and required node affinity filter
//! nodes; preferred node affinity terms score them (the sum of the weights
//! of the matching terms, normalized so the best node gets 100), as
//! kube-scheduler's plugin.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod};

use crate::framework::{
    CycleContext, CycleState, EventKinds, ExtensionPoints, Filter, NodeInfo, Plugin, PodInfo,
    PreFilter, PreFilterOutcome, PreScore, PreScoreOutcome, Rejection, Score, Verdict,
    default_normalize,
};
use crate::registry::PluginArgsError;
use kolo_core::HasMeta;
use kolo_core::node::NodeView;

/// The plugin's registered name.
pub const NAME: &str = "NodeAffinity";
/// The rejection reason (kube-scheduler's).
pub const REASON: &str = "node(s) didn't match Pod's node affinity/selector";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct NodeAffinity;

/// One requirement on a node label (or on `metadata.name`).
#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    Gt(String, i64),
    Lt(String, i64),
    /// An operator or value Kubernetes would reject: matches nothing.
    Never,
}

/// The requirements of a term, ANDed; `fields` apply to `metadata.name`.
#[derive(Debug, Clone, PartialEq, Default)]
struct Term {
    labels: Vec<Requirement>,
    fields: Vec<Requirement>,
}

/// What the pod requires, compiled once per cycle (PodTopologySpread's
/// node inclusion policy and the descheduler's node fit read it too).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Required {
    selector: Vec<(String, String)>,
    /// `None`: no required affinity. `Some([])` matches no node.
    terms: Option<Vec<Term>>,
}

/// What the pod prefers: (weight, term).
#[derive(Debug, Clone, PartialEq, Default)]
struct Preferred(Vec<(i64, Term)>);

impl NodeAffinity {
    /// Builds the plugin (kube's `addedAffinity` argument is not supported).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(NodeAffinity))
    }
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self)
            .pre_filter()
            .filter()
            .pre_score()
            .score()
            .node_scoped_hints()
            .into()
    }
    fn events_to_register(&self) -> EventKinds {
        EventKinds::NODE_ADD | EventKinds::NODE_UPDATE
    }
    fn supports_equivalence(&self) -> bool {
        true
    }
    fn node_updates_are_local(&self) -> bool {
        // Reads the node's labels only.
        true
    }
}

fn compile_requirement(r: &NodeSelectorRequirement) -> Requirement {
    let values = || r.values.clone().unwrap_or_default();
    let number = || match r.values.as_deref() {
        Some([one]) => one.parse::<i64>().ok(),
        _ => None,
    };
    match r.operator.as_str() {
        "In" => Requirement::In(r.key.clone(), values()),
        "NotIn" => Requirement::NotIn(r.key.clone(), values()),
        "Exists" => Requirement::Exists(r.key.clone()),
        "DoesNotExist" => Requirement::DoesNotExist(r.key.clone()),
        "Gt" => number().map_or(Requirement::Never, |n| Requirement::Gt(r.key.clone(), n)),
        "Lt" => number().map_or(Requirement::Never, |n| Requirement::Lt(r.key.clone(), n)),
        _ => Requirement::Never,
    }
}

fn compile_term(t: &NodeSelectorTerm) -> Term {
    let compile = |list: &Option<Vec<NodeSelectorRequirement>>| {
        list.iter().flatten().map(compile_requirement).collect()
    };
    Term { labels: compile(&t.match_expressions), fields: compile(&t.match_fields) }
}

/// The pod's `nodeSelector` and required node affinity, compiled.
pub fn required(pod: &Pod) -> Required {
    let spec = pod.spec.as_ref();
    let selector = spec
        .and_then(|s| s.node_selector.as_ref())
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let terms = spec
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref())
        .map(|sel| sel.node_selector_terms.iter().map(compile_term).collect());
    Required { selector, terms }
}

/// A `NodeSelector` alone (a PersistentVolume's
/// `spec.nodeAffinity.required`), compiled with the rules of required node
/// affinity: terms ORed, an empty term or no term matches no node.
pub fn required_of_selector(selector: &NodeSelector) -> Required {
    let terms = selector.node_selector_terms.iter().map(compile_term).collect();
    Required { selector: Vec::new(), terms: Some(terms) }
}

fn preferred(pod: &Pod) -> Preferred {
    Preferred(
        pod.spec
            .as_ref()
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref())
            .map(|terms| {
                terms
                    .iter()
                    .filter(|t| t.weight != 0)
                    .map(|t| (i64::from(t.weight), compile_term(&t.preference)))
                    .collect()
            })
            .unwrap_or_default(),
    )
}

impl Requirement {
    fn matches(&self, get: &dyn Fn(&str) -> Option<String>) -> bool {
        let int = |key: &str| get(key).and_then(|v| v.parse::<i64>().ok());
        match self {
            Requirement::In(k, values) => get(k).is_some_and(|v| values.contains(&v)),
            Requirement::NotIn(k, values) => get(k).is_none_or(|v| !values.contains(&v)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
            Requirement::Gt(k, n) => int(k).is_some_and(|v| v > *n),
            Requirement::Lt(k, n) => int(k).is_some_and(|v| v < *n),
            Requirement::Never => false,
        }
    }
}

impl Term {
    /// Kubernetes: a term with no requirements matches no node.
    fn matches(&self, node: &NodeView) -> bool {
        if self.labels.is_empty() && self.fields.is_empty() {
            return false;
        }
        let label = |k: &str| node.label(k).map(str::to_string);
        let field = |k: &str| (k == "metadata.name").then(|| node.name().to_string());
        self.labels.iter().all(|r| r.matches(&label))
            && self.fields.iter().all(|r| r.matches(&field))
    }
}

impl Required {
    /// Whether the node passes the pod's `nodeSelector` and required node
    /// affinity.
    pub(crate) fn matches(&self, node: &NodeInfo) -> bool {
        self.matches_node(node.view())
    }

    /// Whether `node` passes the pod's `nodeSelector` and required node
    /// affinity (the descheduler's node fit, which has no [`NodeInfo`]).
    pub fn matches_node(&self, node: &NodeView) -> bool {
        let labels = node.labels();
        self.selector.iter().all(|(k, v)| labels.get(k) == Some(v.as_str()))
            && self.terms.as_ref().is_none_or(|terms| terms.iter().any(|t| t.matches(node)))
    }
}

impl PreFilter for NodeAffinity {
    fn pre_filter(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        let required = required(pod.pod());
        if required.selector.is_empty() && required.terms.is_none() {
            return PreFilterOutcome::Skip;
        }
        state.write(required);
        PreFilterOutcome::Proceed
    }
}

impl Filter for NodeAffinity {
    fn filter(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        let ok = match state.read::<Required>() {
            Some(r) => r.matches(node),
            None => required(pod.pod()).matches(node),
        };
        if ok { Ok(()) } else { Err(Rejection::unresolvable(REASON)) }
    }
}

impl PreScore for NodeAffinity {
    fn pre_score(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreScoreOutcome {
        let preferred = preferred(pod.pod());
        if preferred.0.is_empty() {
            return PreScoreOutcome::Skip;
        }
        state.write(preferred);
        PreScoreOutcome::Proceed
    }
}

impl Score for NodeAffinity {
    fn score(&self, _: &CycleContext, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let sum = |p: &Preferred| {
            p.0.iter().filter(|(_, t)| t.matches(node.view())).map(|(w, _)| w).sum()
        };
        match state.read::<Preferred>() {
            Some(p) => sum(p),
            None => sum(&preferred(pod.pod())),
        }
    }

    fn normalizes(&self) -> bool {
        true
    }

    fn normalize(
        &self,
        _: &CycleContext,
        _: &CycleState,
        _: &PodInfo,
        _: &[&NodeInfo],
        scores: &mut [i64],
    ) {
        default_normalize(100, false, scores);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ctx, node_from_yaml, node_info, pod_from_yaml};

    fn node(name: &str, labels: &str) -> NodeInfo {
        node_info(node_from_yaml(&format!("metadata: {{name: {name}, labels: {{{labels}}}}}")))
    }

    fn verdict(pod_spec: &str, node: &NodeInfo) -> Option<bool> {
        let pod = PodInfo::new(pod_from_yaml(&format!(
            "metadata: {{name: p}}\nspec:\n  containers: []\n{pod_spec}"
        )))
        .unwrap();
        let mut state = CycleState::new();
        match NodeAffinity.pre_filter(&ctx(), &mut state, &pod) {
            PreFilterOutcome::Skip => None,
            _ => Some(NodeAffinity.filter(&ctx(), &state, &pod, node).is_ok()),
        }
    }

    fn required(terms: &str) -> String {
        format!(
            "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms: {terms}\n"
        )
    }

    #[test]
    fn filter_table() {
        let n = node("node-1", "zone: a, cores: '32', gpu: 'true'");
        let cases: &[(&str, Option<bool>)] = &[
            ("", None),
            ("  nodeSelector: {zone: a}\n", Some(true)),
            ("  nodeSelector: {zone: b}\n", Some(false)),
            ("  nodeSelector: {zone: a, missing: x}\n", Some(false)),
            (
                &required("[{matchExpressions: [{key: zone, operator: In, values: [a, b]}]}]"),
                Some(true),
            ),
            (
                &required("[{matchExpressions: [{key: zone, operator: NotIn, values: [a]}]}]"),
                Some(false),
            ),
            (
                &required("[{matchExpressions: [{key: nope, operator: NotIn, values: [a]}]}]"),
                Some(true),
            ),
            (&required("[{matchExpressions: [{key: gpu, operator: Exists}]}]"), Some(true)),
            (&required("[{matchExpressions: [{key: gpu, operator: DoesNotExist}]}]"), Some(false)),
            (
                &required("[{matchExpressions: [{key: cores, operator: Gt, values: ['16']}]}]"),
                Some(true),
            ),
            (
                &required("[{matchExpressions: [{key: cores, operator: Lt, values: ['16']}]}]"),
                Some(false),
            ),
            (
                &required("[{matchExpressions: [{key: cores, operator: Gt, values: [x]}]}]"),
                Some(false),
            ),
            (
                &required(
                    "[{matchFields: [{key: metadata.name, operator: In, values: [node-1]}]}]",
                ),
                Some(true),
            ),
            // Terms are ORed, requirements in a term ANDed.
            (
                &required(
                    "[{matchExpressions: [{key: zone, operator: In, values: [b]}]}, {matchExpressions: [{key: gpu, operator: Exists}, {key: zone, operator: In, values: [a]}]}]",
                ),
                Some(true),
            ),
            (
                &required(
                    "[{matchExpressions: [{key: gpu, operator: Exists}, {key: zone, operator: In, values: [b]}]}]",
                ),
                Some(false),
            ),
            // An empty term, or no terms, matches nothing.
            (&required("[{}]"), Some(false)),
            (&required("[]"), Some(false)),
        ];
        for (spec, want) in cases {
            assert_eq!(verdict(spec, &n), *want, "{spec}");
        }
    }

    #[test]
    fn preferred_terms_score_by_weight_then_normalize() {
        let pod = PodInfo::new(pod_from_yaml(
            "metadata: {name: p}\nspec:\n  containers: []\n  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - {weight: 10, preference: {matchExpressions: [{key: zone, operator: In, values: [a]}]}}\n      - {weight: 30, preference: {matchExpressions: [{key: gpu, operator: Exists}]}}\n",
        ))
        .unwrap();
        let mut state = CycleState::new();
        assert_eq!(NodeAffinity.pre_score(&ctx(), &mut state, &pod), PreScoreOutcome::Proceed);
        let nodes = [
            node("a", "zone: a"),
            node("b", "gpu: 'x'"),
            node("c", "zone: a, gpu: 'x'"),
            node("d", ""),
        ];
        let mut scores: Vec<i64> =
            nodes.iter().map(|n| NodeAffinity.score(&ctx(), &state, &pod, n)).collect();
        assert_eq!(scores, [10, 30, 40, 0]);
        NodeAffinity.normalize(
            &ctx(),
            &state,
            &pod,
            &nodes.iter().collect::<Vec<_>>(),
            &mut scores,
        );
        assert_eq!(scores, [25, 75, 100, 0]);
        let plain = PodInfo::new(pod_from_yaml("metadata: {name: q}")).unwrap();
        assert_eq!(NodeAffinity.pre_score(&ctx(), &mut state, &plain), PreScoreOutcome::Skip);
    }
}
