//! A pod's topology spread constraints, compiled once per cycle: its own
//! (`spec.topologySpreadConstraints`) or, when it has none, the cluster's
//! defaults with a selector deduced from the pod.

use k8s_openapi::api::core::v1::{Pod, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector as KubeSelector, LabelSelectorRequirement,
};
use kolo_core::selector::{LabelSelector, SelectorError};

use super::args::LABEL_HOSTNAME;

/// What a constraint asks for when it cannot be met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A hard constraint: Filter.
    DoNotSchedule,
    /// A soft constraint: Score.
    ScheduleAnyway,
}

/// Whether a node inclusion policy is honoured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Only nodes that pass (the pod's node affinity, or its tolerations)
    /// count.
    Honor,
    /// Every node counts.
    Ignore,
}

/// One compiled constraint.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// `maxSkew`.
    pub max_skew: i64,
    /// `topologyKey`.
    pub topology_key: String,
    /// Whether the key is the hostname label (kube counts per node then).
    pub is_hostname: bool,
    /// `None`: a missing `labelSelector`, which matches nothing.
    pub selector: Option<LabelSelector>,
    /// `minDomains` (1 when unset).
    pub min_domains: i64,
    /// `nodeAffinityPolicy` (Honor when unset).
    pub node_affinity_policy: Policy,
    /// `nodeTaintsPolicy` (Ignore when unset).
    pub node_taints_policy: Policy,
}

impl Constraint {
    /// Whether an existing pod with these labels counts (kube's
    /// `countPodsMatchSelector`: an empty selector counts nobody, though it
    /// matches the incoming pod itself).
    pub fn counts<M: kolo_core::selector::LabelMap + ?Sized>(&self, labels: &M) -> bool {
        self.selector.as_ref().is_some_and(|s| !s.is_empty() && s.matches(labels))
    }

    /// Whether the incoming pod matches its own selector (`selfMatchNum`).
    pub fn self_match<M: kolo_core::selector::LabelMap + ?Sized>(&self, labels: &M) -> bool {
        self.selector.as_ref().is_some_and(|s| s.matches(labels))
    }
}

/// The pod's constraints, split by action.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodConstraints {
    /// DoNotSchedule: checked by Filter.
    pub hard: Vec<Constraint>,
    /// ScheduleAnyway: scored.
    pub soft: Vec<Constraint>,
    /// Whether they are the pod's own (else the cluster defaults).
    pub explicit: bool,
}

impl PodConstraints {
    /// Whether the pod has no constraint at all.
    pub fn is_empty(&self) -> bool {
        self.hard.is_empty() && self.soft.is_empty()
    }
}

/// A constraint kolo cannot read; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConstraintError {
    /// The label selector is malformed.
    #[error("spec.topologySpreadConstraints[{index}].labelSelector.{source}")]
    Selector {
        /// The constraint's position.
        index: usize,
        /// What is wrong with the selector.
        source: SelectorError,
    },
    /// A node inclusion policy other than Honor / Ignore.
    #[error(
        "spec.topologySpreadConstraints[{index}].{field}: {value:?} is not one of Honor, Ignore"
    )]
    Policy {
        /// The constraint's position.
        index: usize,
        /// `nodeAffinityPolicy` or `nodeTaintsPolicy`.
        field: &'static str,
        /// The value given.
        value: String,
    },
}

/// The owner kinds whose pods get the default constraints: kube deduces
/// their selector from the Services, ReplicaSets, StatefulSets and
/// ReplicationControllers selecting the pod; kolo watches none of those and
/// uses the labels of a pod a ReplicaSet, StatefulSet or
/// ReplicationController owns.
const DEFAULTED_OWNERS: [&str; 3] = ["ReplicaSet", "StatefulSet", "ReplicationController"];

/// The selector default constraints get for `pod`: its labels, when a
/// defaulted owner kind owns it; `None` otherwise (no default constraints).
fn default_selector(pod: &Pod) -> Option<LabelSelector> {
    let owned = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| DEFAULTED_OWNERS.contains(&o.kind.as_str()));
    let labels = pod.metadata.labels.as_ref().filter(|l| !l.is_empty())?;
    if !owned {
        return None;
    }
    let selector = KubeSelector { match_labels: Some(labels.clone()), match_expressions: None };
    LabelSelector::compile(&selector).ok()
}

fn policy(
    index: usize,
    field: &'static str,
    value: Option<&String>,
    default: Policy,
) -> Result<Policy, ConstraintError> {
    match value.map(String::as_str) {
        None => Ok(default),
        Some("Honor") => Ok(Policy::Honor),
        Some("Ignore") => Ok(Policy::Ignore),
        Some(other) => Err(ConstraintError::Policy { index, field, value: other.to_string() }),
    }
}

/// Compiles one constraint's selector, with `matchLabelKeys` merged in: for
/// each key the pod has, `key In (pod's value)` is ANDed to the selector
/// (kube's `mergeLabelSetWithSelector`; a missing selector stays one that
/// matches nothing).
fn selector(
    index: usize,
    c: &TopologySpreadConstraint,
    pod: &Pod,
) -> Result<Option<LabelSelector>, ConstraintError> {
    let Some(given) = c.label_selector.as_ref() else { return Ok(None) };
    let mut merged = given.clone();
    let pod_labels = pod.metadata.labels.as_ref();
    for key in c.match_label_keys.iter().flatten() {
        if let Some(value) = pod_labels.and_then(|l| l.get(key)) {
            merged.match_expressions.get_or_insert_with(Vec::new).push(LabelSelectorRequirement {
                key: key.clone(),
                operator: "In".into(),
                values: Some(vec![value.clone()]),
            });
        }
    }
    LabelSelector::compile(&merged)
        .map(Some)
        .map_err(|source| ConstraintError::Selector { index, source })
}

fn compile_one(
    index: usize,
    c: &TopologySpreadConstraint,
    pod: &Pod,
) -> Result<Constraint, ConstraintError> {
    Ok(Constraint {
        max_skew: i64::from(c.max_skew),
        is_hostname: c.topology_key == LABEL_HOSTNAME,
        topology_key: c.topology_key.clone(),
        selector: selector(index, c, pod)?,
        min_domains: i64::from(c.min_domains.unwrap_or(1)),
        node_affinity_policy: policy(
            index,
            "nodeAffinityPolicy",
            c.node_affinity_policy.as_ref(),
            Policy::Honor,
        )?,
        node_taints_policy: policy(
            index,
            "nodeTaintsPolicy",
            c.node_taints_policy.as_ref(),
            Policy::Ignore,
        )?,
    })
}

fn split(
    list: &[TopologySpreadConstraint],
    pod: &Pod,
    out: &mut PodConstraints,
) -> Result<(), ConstraintError> {
    for (index, c) in list.iter().enumerate() {
        // Other values pass validation in no API server; like kube, they
        // take part in neither Filter nor Score.
        let target = match c.when_unsatisfiable.as_str() {
            "DoNotSchedule" => &mut out.hard,
            "ScheduleAnyway" => &mut out.soft,
            _ => continue,
        };
        target.push(compile_one(index, c, pod)?);
    }
    Ok(())
}

/// The pod's constraints: its own, else `defaults` with the deduced
/// selector (none when the pod has no defaulted owner or no labels).
pub fn compile(
    pod: &Pod,
    defaults: &[TopologySpreadConstraint],
) -> Result<PodConstraints, ConstraintError> {
    let own = pod
        .spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_deref())
        .unwrap_or_default();
    let mut out = PodConstraints { explicit: !own.is_empty(), ..Default::default() };
    if out.explicit {
        split(own, pod, &mut out)?;
        return Ok(out);
    }
    if defaults.is_empty() {
        return Ok(out);
    }
    let Some(deduced) = default_selector(pod) else { return Ok(out) };
    split(defaults, pod, &mut out)?;
    for c in out.hard.iter_mut().chain(out.soft.iter_mut()) {
        c.selector = Some(deduced.clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::pod_topology_spread::args::system_default_constraints;
    use crate::testing::pod_from_yaml;

    fn pod(yaml_spec: &str, meta: &str) -> Pod {
        pod_from_yaml(&format!(
            "metadata: {{name: p, namespace: ns{meta}}}\nspec:\n  containers: []\n{yaml_spec}"
        ))
    }

    #[test]
    fn own_constraints_split_by_action_with_defaults_filled() {
        let p = pod(
            "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: a}}}\n  - {maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, minDomains: 3, nodeAffinityPolicy: Ignore, nodeTaintsPolicy: Honor}\n",
            ", labels: {app: a}",
        );
        let c = compile(&p, &system_default_constraints()).unwrap();
        assert!(c.explicit);
        assert_eq!(c.hard.len(), 1);
        let hard = &c.hard[0];
        assert_eq!((hard.max_skew, hard.min_domains, hard.is_hostname), (1, 1, false));
        assert_eq!(
            (hard.node_affinity_policy, hard.node_taints_policy),
            (Policy::Honor, Policy::Ignore)
        );
        let soft = &c.soft[0];
        assert_eq!((soft.max_skew, soft.min_domains, soft.is_hostname), (2, 3, true));
        assert_eq!(
            (soft.node_affinity_policy, soft.node_taints_policy),
            (Policy::Ignore, Policy::Honor)
        );
        // A missing selector matches nothing, not even the pod itself.
        assert!(soft.selector.is_none() && !soft.self_match(p.metadata.labels.as_ref().unwrap()));
    }

    #[test]
    fn match_label_keys_merge_the_pods_values() {
        let p = pod(
            "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: a}}, matchLabelKeys: [rev, absent]}\n",
            ", labels: {app: a, rev: '2'}",
        );
        let c = &compile(&p, &[]).unwrap().hard[0];
        let labels = |rev: &str| {
            std::collections::BTreeMap::from([
                ("app".to_string(), "a".to_string()),
                ("rev".to_string(), rev.to_string()),
            ])
        };
        assert!(c.counts(&labels("2")));
        assert!(!c.counts(&labels("1")), "another revision does not count");
    }

    #[test]
    fn errors_name_the_field() {
        let bad_policy = pod(
            "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Sometimes}\n",
            "",
        );
        assert_eq!(
            compile(&bad_policy, &[]).unwrap_err().to_string(),
            "spec.topologySpreadConstraints[0].nodeTaintsPolicy: \"Sometimes\" is not one of Honor, Ignore"
        );
        let bad_selector = pod(
            "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchExpressions: [{key: a, operator: Near}]}}\n",
            "",
        );
        assert!(compile(&bad_selector, &[]).unwrap_err().to_string().starts_with(
            "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator"
        ));
    }

    #[test]
    fn defaults_apply_to_owned_pods_with_labels_only() {
        let defaults = system_default_constraints();
        let owner = |kind: &str| {
            format!(
                ", labels: {{app: web}}, ownerReferences: [{{apiVersion: apps/v1, kind: {kind}, name: o, uid: u}}]"
            )
        };
        for (meta, want) in [
            (owner("ReplicaSet"), 2),
            (owner("StatefulSet"), 2),
            (owner("ReplicationController"), 2),
            (owner("DaemonSet"), 0),
            (owner("Job"), 0),
            (", labels: {app: web}".to_string(), 0),
            (
                ", ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: o, uid: u}]"
                    .to_string(),
                0,
            ),
        ] {
            let c = compile(&pod("", &meta), &defaults).unwrap();
            assert_eq!(c.soft.len(), want, "{meta}");
            assert!(c.hard.is_empty() && !c.explicit);
            for s in &c.soft {
                let labels =
                    std::collections::BTreeMap::from([("app".to_string(), "web".to_string())]);
                assert!(s.counts(&labels));
            }
        }
        // A pod's own constraints replace the defaults.
        let own = pod(
            "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n",
            &owner("ReplicaSet"),
        );
        let c = compile(&own, &defaults).unwrap();
        assert_eq!((c.hard.len(), c.soft.len()), (1, 0));
    }
}
