//! The plugin's decisions as pure functions of the pods and node labels
//! they read: kube-scheduler's per-topology-pair counts (PreFilter), the
//! per-node Filter check, the topology score map (PreScore), a node's
//! score and the min–max normalization.
//!
//! A *topology pair* is a node label (topology key) and its value: every
//! node with that label value is in the same domain.

use std::collections::HashMap;

use kolo_core::meta::StringMap;

use super::terms::{AffinityTerm, PodTerms, WeightedTerm};
use crate::framework::MAX_NODE_SCORE;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// A pod as a term sees it: its namespace and labels.
#[derive(Debug, Clone, Copy)]
pub struct PodRef<'a> {
    /// `metadata.namespace`.
    pub namespace: &'a str,
    /// `metadata.labels`.
    pub labels: &'a StringMap,
}

/// A pod counted on a node, as the plugin keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExistingPod {
    /// `metadata.namespace`.
    pub namespace: Box<str>,
    /// `metadata.labels`.
    pub labels: StringMap,
    /// Its inter-pod affinity terms (often none).
    pub terms: PodTerms,
}

impl ExistingPod {
    /// The pod as terms see it.
    pub fn as_ref(&self) -> PodRef<'_> {
        PodRef { namespace: &self.namespace, labels: &self.labels }
    }
}

impl AffinityTerm {
    fn selects(&self, pod: PodRef<'_>) -> bool {
        self.matches(pod.namespace, pod.labels)
    }
}

/// A number per topology pair (topology key → label value → number).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopologyCounts(FastMap<Box<str>, FastMap<Box<str>, i64>>);

impl TopologyCounts {
    /// Adds `delta` to the pair of `key` and the node's value of it; a
    /// node without the label is in no domain of that key.
    pub fn add(&mut self, key: &str, node_labels: &StringMap, delta: i64) {
        let Some(value) = node_labels.get(key) else { return };
        let values = match self.0.get_mut(key) {
            Some(values) => values,
            None => self.0.entry(key.into()).or_default(),
        };
        match values.get_mut(value) {
            Some(count) => *count += delta,
            None => {
                values.insert(value.into(), delta);
            }
        }
    }

    /// The number of the pair (0 if never added to).
    pub fn get(&self, key: &str, value: &str) -> i64 {
        self.0.get(key).and_then(|values| values.get(value)).copied().unwrap_or(0)
    }

    /// Whether no pair was ever added to.
    pub fn is_empty(&self) -> bool {
        self.0.values().all(FastMap::is_empty)
    }

    /// The sum, over the topology keys, of the number of the node's pair.
    pub fn sum_for_node<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> i64 {
        let mut sum = 0;
        for (key, values) in &self.0 {
            if let Some(value) = label(key) {
                sum += values.get(value).copied().unwrap_or(0);
            }
        }
        sum
    }

    /// Whether any pair the node is in has a positive number.
    fn any_positive_for_node<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().any(|(key, values)| {
            label(key).is_some_and(|value| values.get(value).is_some_and(|c| *c > 0))
        })
    }
}

/// Whether `pod` is selected by every term (and there is one): kube's
/// `podMatchesAllAffinityTerms`.
pub fn matches_all(terms: &[AffinityTerm], pod: PodRef<'_>) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.selects(pod))
}

/// What PreFilter computes once per cycle for Filter (kube-scheduler's
/// `preFilterState`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterCounts {
    /// Per pair: existing pods whose required anti-affinity terms (with
    /// that topology key, on a node of that pair) select the incoming pod.
    pub existing_anti_affinity: TopologyCounts,
    /// Per pair: existing pods selected by *all* the incoming pod's
    /// required affinity terms (counted once per term's key).
    pub affinity: TopologyCounts,
    /// Per pair: existing pods selected by an incoming required
    /// anti-affinity term with that key (once per term).
    pub anti_affinity: TopologyCounts,
    /// Whether the incoming pod is selected by all its own required
    /// affinity terms (the first pod of a series may go anywhere).
    pub matches_own_affinity: bool,
}

impl FilterCounts {
    /// Counts for `incoming` with `terms`. `all` yields every pod counted
    /// on a node with that node's labels; `with_terms` the same for only
    /// the pods that have terms (the symmetric check reads only those).
    pub fn new<'a>(
        incoming: PodRef<'_>,
        terms: &PodTerms,
        all: impl Iterator<Item = (&'a StringMap, &'a ExistingPod)>,
        with_terms: impl Iterator<Item = (&'a StringMap, &'a ExistingPod)>,
    ) -> FilterCounts {
        let mut counts = FilterCounts {
            matches_own_affinity: matches_all(&terms.required_affinity, incoming),
            ..FilterCounts::default()
        };
        for (node, existing) in with_terms {
            for t in &existing.terms.required_anti_affinity {
                if t.selects(incoming) {
                    counts.existing_anti_affinity.add(&t.topology_key, node, 1);
                }
            }
        }
        if !terms.has_required() {
            return counts;
        }
        for (node, existing) in all {
            let pod = existing.as_ref();
            if matches_all(&terms.required_affinity, pod) {
                for t in &terms.required_affinity {
                    counts.affinity.add(&t.topology_key, node, 1);
                }
            }
            for t in &terms.required_anti_affinity {
                if t.selects(pod) {
                    counts.anti_affinity.add(&t.topology_key, node, 1);
                }
            }
        }
        counts
    }

    /// Whether Filter can reject anything: the pod has required terms or
    /// some existing pod's anti-affinity selects it.
    pub fn needs_filter(&self, terms: &PodTerms) -> bool {
        terms.has_required() || !self.existing_anti_affinity.is_empty()
    }
}

/// Why Filter rejected a node, in kube-scheduler's check order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterFailure {
    /// A required affinity term has no selected pod in the node's domain
    /// (or the node lacks the topology key).
    Affinity,
    /// A required anti-affinity term selects a pod in the node's domain.
    AntiAffinity,
    /// An existing pod's required anti-affinity selects the incoming pod
    /// and the node is in that pod's domain.
    ExistingAntiAffinity,
}

impl FilterFailure {
    /// kube-scheduler's reason (`ErrReason...`).
    pub fn reason(self) -> &'static str {
        match self {
            FilterFailure::Affinity => "node(s) didn't match pod affinity rules",
            FilterFailure::AntiAffinity => "node(s) didn't match pod anti-affinity rules",
            FilterFailure::ExistingAntiAffinity => {
                "node(s) didn't satisfy existing pods anti-affinity rules"
            }
        }
    }
}

fn satisfies_affinity<'a>(
    terms: &PodTerms,
    counts: &FilterCounts,
    label: &impl Fn(&str) -> Option<&'a str>,
) -> bool {
    let mut pods_exist = true;
    for t in &terms.required_affinity {
        // Every topology key must be on the node, first of series or not.
        let Some(value) = label(&t.topology_key) else { return false };
        if counts.affinity.get(&t.topology_key, value) <= 0 {
            pods_exist = false;
        }
    }
    // The first pod of a series that has affinity to itself: no pod
    // anywhere matches, and it matches its own terms.
    pods_exist || (counts.affinity.is_empty() && counts.matches_own_affinity)
}

/// The Filter verdict for a node whose labels `label` looks up.
pub fn filter<'a>(
    terms: &PodTerms,
    counts: &FilterCounts,
    label: impl Fn(&str) -> Option<&'a str>,
) -> Result<(), FilterFailure> {
    if !satisfies_affinity(terms, counts, &label) {
        return Err(FilterFailure::Affinity);
    }
    let anti = terms.required_anti_affinity.iter().any(|t| {
        label(&t.topology_key).is_some_and(|v| counts.anti_affinity.get(&t.topology_key, v) > 0)
    });
    if anti {
        return Err(FilterFailure::AntiAffinity);
    }
    if counts.existing_anti_affinity.any_positive_for_node(&label) {
        return Err(FilterFailure::ExistingAntiAffinity);
    }
    Ok(())
}

fn add_weighted(
    map: &mut TopologyCounts,
    terms: &[WeightedTerm],
    pod: PodRef<'_>,
    node: &StringMap,
    sign: i64,
) {
    for w in terms {
        if w.term.selects(pod) {
            map.add(&w.term.topology_key, node, sign * w.weight);
        }
    }
}

/// PreScore's topology score map (kube-scheduler's `topologyScore`), on
/// each existing pod's node's pairs: the weight of each incoming preferred
/// affinity term selecting the pod, minus that of each preferred
/// anti-affinity term; and symmetrically, for existing pods with terms,
/// `hard_weight` per required affinity term of theirs selecting the
/// incoming pod, plus / minus the weight of their preferred affinity /
/// anti-affinity terms selecting it. `all` is read only when the incoming
/// pod has preferred terms.
pub fn score_map<'a>(
    incoming: PodRef<'_>,
    terms: &PodTerms,
    hard_weight: i64,
    all: impl Iterator<Item = (&'a StringMap, &'a ExistingPod)>,
    with_terms: impl Iterator<Item = (&'a StringMap, &'a ExistingPod)>,
) -> TopologyCounts {
    let mut map = TopologyCounts::default();
    if terms.has_preferred() {
        for (node, existing) in all {
            add_weighted(&mut map, &terms.preferred_affinity, existing.as_ref(), node, 1);
            add_weighted(&mut map, &terms.preferred_anti_affinity, existing.as_ref(), node, -1);
        }
    }
    for (node, existing) in with_terms {
        let theirs = &existing.terms;
        if hard_weight > 0 {
            for t in &theirs.required_affinity {
                if t.selects(incoming) {
                    map.add(&t.topology_key, node, hard_weight);
                }
            }
        }
        add_weighted(&mut map, &theirs.preferred_affinity, incoming, node, 1);
        add_weighted(&mut map, &theirs.preferred_anti_affinity, incoming, node, -1);
    }
    map
}

/// kube-scheduler's NormalizeScore: min–max to 0..=100, truncated; all
/// equal → 0.
pub fn normalize(scores: &mut [i64]) {
    let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else { return };
    let diff = max - min;
    for s in scores {
        *s = if diff > 0 {
            (MAX_NODE_SCORE as f64 * ((*s - min) as f64 / diff as f64)) as i64
        } else {
            0
        };
    }
}
