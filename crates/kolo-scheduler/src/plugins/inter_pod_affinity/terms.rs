//! A pod's inter-pod affinity terms, compiled once: namespaces, label
//! selector and topology key of each required / preferred affinity and
//! anti-affinity term.
//!
//! An incoming pod is compiled strictly ([`PodTerms::of_incoming`]): a
//! field kolo does not honour (a non-empty `namespaceSelector`, which needs
//! Namespace labels the scheduler does not watch; `matchLabelKeys`,
//! `mismatchLabelKeys`) or a malformed selector refuses the pod, naming the
//! field, instead of being ignored. A pod already placed is compiled
//! leniently ([`PodTerms::of_existing`]): it is there whatever we think.

use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, WeightedPodAffinityTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as KubeLabelSelector;
use kolo_core::meta::StringMap;
use kolo_core::selector::LabelSelector;

/// The namespaces a term selects pods in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    /// Every namespace (`namespaceSelector: {}`).
    All,
    /// These namespaces (the term's list, or else the pod's own).
    Only(Box<[Box<str>]>),
}

/// One pod (anti-)affinity term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityTerm {
    /// Where the selected pods may live.
    pub namespaces: Namespaces,
    /// `None`: no `labelSelector`, which selects no pod (Kubernetes').
    pub selector: Option<LabelSelector>,
    /// The node label whose value is the topology domain.
    pub topology_key: Box<str>,
}

impl AffinityTerm {
    /// Whether a pod in `namespace` with `labels` is selected by the term.
    pub fn matches(&self, namespace: &str, labels: &StringMap) -> bool {
        let in_namespace = match &self.namespaces {
            Namespaces::All => true,
            Namespaces::Only(list) => list.iter().any(|n| &**n == namespace),
        };
        in_namespace && self.selector.as_ref().is_some_and(|s| s.matches(labels))
    }
}

/// A preferred term and its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedTerm {
    /// The term's weight (1..=100 by API validation).
    pub weight: i64,
    /// The term.
    pub term: AffinityTerm,
}

/// Every inter-pod affinity term of a pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodTerms {
    /// `podAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required_affinity: Vec<AffinityTerm>,
    /// `podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required_anti_affinity: Vec<AffinityTerm>,
    /// `podAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred_affinity: Vec<WeightedTerm>,
    /// `podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred_anti_affinity: Vec<WeightedTerm>,
}

/// Why an incoming pod's terms were refused: the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TermError {
    /// A field kolo does not honour is set.
    #[error("{field} is not supported")]
    Unsupported {
        /// The field's path in the pod.
        field: String,
    },
    /// A label selector that does not compile.
    #[error("{field}.{message}")]
    Selector {
        /// The selector's path in the pod.
        field: String,
        /// The selector error (names the requirement).
        message: String,
    },
}

/// How strictly to read terms.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Incoming,
    Existing,
}

fn selector_is_empty(s: &KubeLabelSelector) -> bool {
    s.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && s.match_expressions.as_ref().is_none_or(|e| e.is_empty())
}

fn compile_term(
    t: &PodAffinityTerm,
    namespace: &str,
    field: &str,
    mode: Mode,
) -> Result<AffinityTerm, TermError> {
    let unsupported = |name: &str| TermError::Unsupported { field: format!("{field}.{name}") };
    let ns_selector = t.namespace_selector.as_ref();
    let unknown_selector = ns_selector.is_some_and(|s| !selector_is_empty(s));
    if mode == Mode::Incoming {
        if unknown_selector {
            return Err(unsupported("namespaceSelector"));
        }
        // The API server merges these into labelSelector for pods it
        // admits (v1.31+); a v1.20 server never does, so honouring them
        // would need the incoming pod's labels here. Refuse rather than
        // silently select more pods than asked.
        if t.match_label_keys.as_ref().is_some_and(|k| !k.is_empty()) {
            return Err(unsupported("matchLabelKeys"));
        }
        if t.mismatch_label_keys.as_ref().is_some_and(|k| !k.is_empty()) {
            return Err(unsupported("mismatchLabelKeys"));
        }
    }
    let listed: Box<[Box<str>]> =
        t.namespaces.iter().flatten().map(|n| n.as_str().into()).collect();
    // An existing pod's non-empty namespaceSelector cannot be evaluated:
    // it is read as every namespace, which never breaks its required
    // anti-affinity (the only constraint placing another pod can break).
    let namespaces = match ns_selector {
        Some(_) => Namespaces::All,
        None if listed.is_empty() => Namespaces::Only(Box::new([namespace.into()])),
        None => Namespaces::Only(listed),
    };
    let selector = match &t.label_selector {
        None => None,
        Some(s) => match LabelSelector::compile(s) {
            Ok(s) => Some(s),
            Err(e) if mode == Mode::Incoming => {
                return Err(TermError::Selector {
                    field: format!("{field}.labelSelector"),
                    message: e.to_string(),
                });
            }
            // The API server validated it; if not, it selects nothing.
            Err(_) => None,
        },
    };
    Ok(AffinityTerm { namespaces, selector, topology_key: t.topology_key.as_str().into() })
}

fn required(
    list: Option<&Vec<PodAffinityTerm>>,
    namespace: &str,
    field: &str,
    mode: Mode,
) -> Result<Vec<AffinityTerm>, TermError> {
    let field = format!("{field}.requiredDuringSchedulingIgnoredDuringExecution");
    (list.into_iter().flatten().enumerate())
        .map(|(i, t)| compile_term(t, namespace, &format!("{field}[{i}]"), mode))
        .collect()
}

fn preferred(
    list: Option<&Vec<WeightedPodAffinityTerm>>,
    namespace: &str,
    field: &str,
    mode: Mode,
) -> Result<Vec<WeightedTerm>, TermError> {
    let field = format!("{field}.preferredDuringSchedulingIgnoredDuringExecution");
    (list.into_iter().flatten().enumerate())
        .map(|(i, w)| {
            let term = compile_term(
                &w.pod_affinity_term,
                namespace,
                &format!("{field}[{i}].podAffinityTerm"),
                mode,
            )?;
            Ok(WeightedTerm { weight: i64::from(w.weight), term })
        })
        .collect()
}

impl PodTerms {
    fn compile(pod: &Pod, namespace: &str, mode: Mode) -> Result<PodTerms, TermError> {
        let affinity = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
        let aff = affinity.and_then(|a| a.pod_affinity.as_ref());
        let anti = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        let (a, n) = ("spec.affinity.podAffinity", "spec.affinity.podAntiAffinity");
        Ok(PodTerms {
            required_affinity: required(
                aff.and_then(|x| x.required_during_scheduling_ignored_during_execution.as_ref()),
                namespace,
                a,
                mode,
            )?,
            required_anti_affinity: required(
                anti.and_then(|x| x.required_during_scheduling_ignored_during_execution.as_ref()),
                namespace,
                n,
                mode,
            )?,
            preferred_affinity: preferred(
                aff.and_then(|x| x.preferred_during_scheduling_ignored_during_execution.as_ref()),
                namespace,
                a,
                mode,
            )?,
            preferred_anti_affinity: preferred(
                anti.and_then(|x| x.preferred_during_scheduling_ignored_during_execution.as_ref()),
                namespace,
                n,
                mode,
            )?,
        })
    }

    /// The terms of the pod being scheduled (in `namespace`); refuses
    /// fields kolo does not honour and malformed selectors.
    pub fn of_incoming(pod: &Pod, namespace: &str) -> Result<PodTerms, TermError> {
        PodTerms::compile(pod, namespace, Mode::Incoming)
    }

    /// The terms of a pod already on a node: never fails (see the module
    /// documentation).
    pub fn of_existing(pod: &Pod, namespace: &str) -> PodTerms {
        PodTerms::compile(pod, namespace, Mode::Existing).unwrap_or_default()
    }

    /// Whether the pod has no term at all.
    pub fn is_empty(&self) -> bool {
        self.required_affinity.is_empty()
            && self.required_anti_affinity.is_empty()
            && self.preferred_affinity.is_empty()
            && self.preferred_anti_affinity.is_empty()
    }

    /// Whether the pod has required terms (Filter has work to do).
    pub fn has_required(&self) -> bool {
        !self.required_affinity.is_empty() || !self.required_anti_affinity.is_empty()
    }

    /// Whether the pod has preferred terms.
    pub fn has_preferred(&self) -> bool {
        !self.preferred_affinity.is_empty() || !self.preferred_anti_affinity.is_empty()
    }
}

/// Whether a pod's spec mentions inter-pod affinity at all (cheap: no
/// compilation), for [`Plugin::trivially_passes`](crate::framework::Plugin::trivially_passes).
pub fn mentions_pod_affinity(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod_from_yaml;

    fn pod(affinity: &str) -> Pod {
        pod_from_yaml(&format!(
            "metadata: {{name: p, namespace: ns1}}\nspec:\n  containers: []\n  affinity:\n{affinity}"
        ))
    }

    fn labels(pairs: &[(&str, &str)]) -> StringMap {
        pairs.iter().map(|(k, v)| (*k, *v)).collect()
    }

    const REQ: &str =
        "    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - ";

    #[test]
    fn namespaces_default_to_the_pods_own_and_empty_selector_means_all() {
        let app = labels(&[("app", "web")]);
        let cases: &[(&str, &[(&str, bool)])] = &[
            // No list, no selector: the pod's own namespace only.
            (
                "{topologyKey: zone, labelSelector: {matchLabels: {app: web}}}",
                &[("ns1", true), ("ns2", false)],
            ),
            (
                "{topologyKey: zone, namespaces: [ns2, ns3], labelSelector: {matchLabels: {app: web}}}",
                &[("ns1", false), ("ns2", true), ("ns3", true)],
            ),
            (
                "{topologyKey: zone, namespaceSelector: {}, labelSelector: {matchLabels: {app: web}}}",
                &[("ns1", true), ("anything", true)],
            ),
            // No labelSelector selects nothing; an empty one everything.
            ("{topologyKey: zone}", &[("ns1", false)]),
            ("{topologyKey: zone, labelSelector: {}}", &[("ns1", true), ("ns2", false)]),
        ];
        for (term, want) in cases {
            let terms = PodTerms::of_incoming(&pod(&format!("{REQ}{term}\n")), "ns1").unwrap();
            let t = &terms.required_affinity[0];
            assert_eq!(&*t.topology_key, "zone");
            for (ns, ok) in *want {
                assert_eq!(t.matches(ns, &app), *ok, "{term} in {ns}");
            }
        }
        let terms = PodTerms::of_incoming(
            &pod(&format!(
                "{REQ}{{topologyKey: zone, labelSelector: {{matchLabels: {{app: web}}}}}}\n"
            )),
            "ns1",
        )
        .unwrap();
        assert!(!terms.required_affinity[0].matches("ns1", &labels(&[("app", "db")])));
    }

    #[test]
    fn unsupported_fields_and_bad_selectors_name_the_field() {
        let cases = [
            (
                format!("{REQ}{{topologyKey: zone, namespaceSelector: {{matchLabels: {{team: a}}}}, labelSelector: {{}}}}\n"),
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector is not supported",
            ),
            (
                "    podAntiAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - {weight: 1, podAffinityTerm: {topologyKey: zone, labelSelector: {}}}\n      - {weight: 1, podAffinityTerm: {topologyKey: zone, matchLabelKeys: [app], labelSelector: {}}}\n".to_string(),
                "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[1].podAffinityTerm.matchLabelKeys is not supported",
            ),
            (
                format!("{REQ}{{topologyKey: zone, mismatchLabelKeys: [app], labelSelector: {{}}}}\n"),
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].mismatchLabelKeys is not supported",
            ),
            (
                format!("{REQ}{{topologyKey: zone, labelSelector: {{matchExpressions: [{{key: a, operator: Bad}}]}}}}\n"),
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator: \"Bad\" is not one of In, NotIn, Exists, DoesNotExist",
            ),
        ];
        for (affinity, want) in cases {
            let p = pod(&affinity);
            assert_eq!(PodTerms::of_incoming(&p, "ns1").unwrap_err().to_string(), want);
            // An existing pod is read anyway.
            let existing = PodTerms::of_existing(&p, "ns1");
            assert!(!existing.is_empty(), "{affinity}");
        }
        // An existing pod's namespaceSelector is read as every namespace.
        let p = pod(&format!(
            "{REQ}{{topologyKey: zone, namespaceSelector: {{matchLabels: {{team: a}}}}, labelSelector: {{}}}}\n"
        ));
        assert_eq!(
            PodTerms::of_existing(&p, "ns1").required_affinity[0].namespaces,
            Namespaces::All
        );
    }
}
