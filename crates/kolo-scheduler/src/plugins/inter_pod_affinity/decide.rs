//! The plugin's decisions as pure functions of the pods and node labels
//! they read: kube-scheduler's per-topology-pair counts (PreFilter), the
//! per-node Filter check, the topology score map (PreScore), a node's
//! score and the min–max normalization.
//!
//! A *topology pair* is a node label (topology key) and its value: every
//! node with that label value is in the same domain.

use std::collections::HashMap;
use std::sync::Arc;

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

/// Pods alike for this plugin (same namespace, labels and terms), with
/// where they run: per pair of every label of their nodes, how many.
/// Counting per group instead of per pod makes a cycle's cost independent
/// of the number of replicas.
#[derive(Debug, Clone, PartialEq)]
pub struct PodGroup {
    /// What the pods look like.
    pub pod: ExistingPod,
    /// Per topology pair, how many of the pods run there.
    pub placement: TopologyCounts,
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
pub struct TopologyCounts(FastMap<Arc<str>, FastMap<Arc<str>, i64>>);

impl TopologyCounts {
    /// Adds `delta` to the pair (`key`, `value`), forgetting pairs that
    /// drop to zero.
    pub fn add_value(&mut self, key: &str, value: &str, delta: i64) {
        self.add_shared(key, value, || value.into(), delta);
    }

    /// [`add_value`](Self::add_value) with the value's shared string made
    /// only if the pair is new (copying counts then costs no allocation).
    fn add_shared(
        &mut self,
        key: &str,
        value: &str,
        shared: impl FnOnce() -> Arc<str>,
        delta: i64,
    ) {
        if delta == 0 {
            return;
        }
        let values = match self.0.get_mut(key) {
            Some(values) => values,
            None => self.0.entry(key.into()).or_default(),
        };
        match values.get_mut(value) {
            Some(count) => {
                *count += delta;
                if *count == 0 {
                    values.remove(value);
                    if values.is_empty() {
                        self.0.remove(key);
                    }
                }
            }
            None => {
                values.insert(shared(), delta);
            }
        }
    }

    /// Adds `delta` to the pair of every label of a node: where a group of
    /// pods runs, for any topology key a term may name.
    pub fn add_node(&mut self, node_labels: &StringMap, delta: i64) {
        for (key, value) in node_labels.iter() {
            self.add_value(key, value, delta);
        }
    }

    /// Adds `factor` times `placement`'s numbers of `key`'s pairs.
    fn add_key_of(&mut self, key: &str, placement: &TopologyCounts, factor: i64) {
        let Some((shared_key, values)) = placement.0.get_key_value(key) else { return };
        if factor == 1 && !self.0.contains_key(key) {
            // The common case (one group of replicas matches): a copy.
            self.0.insert(shared_key.clone(), values.clone());
            return;
        }
        for (value, n) in values {
            self.add_shared(key, value, || value.clone(), n * factor);
        }
    }

    /// The numbers of `key`'s pairs, by value.
    fn values(&self, key: &str) -> impl Iterator<Item = (&str, i64)> {
        self.0.get(key).into_iter().flatten().map(|(v, n)| (&**v, *n))
    }

    /// Every pair and its number.
    fn pairs(&self) -> impl Iterator<Item = (&str, &str, i64)> {
        self.0.iter().flat_map(|(k, values)| values.iter().map(move |(v, n)| (&**k, &**v, *n)))
    }

    /// The number of the pair (0 if never added to).
    pub fn get(&self, key: &str, value: &str) -> i64 {
        self.0.get(key).and_then(|values| values.get(value)).copied().unwrap_or(0)
    }

    /// Whether every pair's number is zero.
    pub fn is_empty(&self) -> bool {
        // Pairs that drop to zero are forgotten.
        self.0.is_empty()
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

/// The nodes of every topology pair (every label of every node), by node
/// index: Filter and Score verdicts are computed per domain once per cycle
/// and read per node from a vector, instead of looking each node's labels
/// up (they sit behind a pointer, away from the hot per-node data).
#[derive(Debug, Default)]
pub struct Domains(FastMap<Arc<str>, FastMap<Arc<str>, Vec<u32>>>);

impl Domains {
    /// Puts node `index` in the domains of its labels.
    pub fn add_node(&mut self, index: u32, labels: &StringMap) {
        for (key, value) in labels.iter() {
            let values = match self.0.get_mut(key) {
                Some(values) => values,
                None => self.0.entry(key.into()).or_default(),
            };
            match values.get_mut(value) {
                Some(nodes) => nodes.push(index),
                None => {
                    values.insert(value.into(), vec![index]);
                }
            }
        }
    }

    /// Takes node `index` out of the domains of its (former) labels.
    pub fn remove_node(&mut self, index: u32, labels: &StringMap) {
        for (key, value) in labels.iter() {
            let Some(values) = self.0.get_mut(key) else { continue };
            if let Some(nodes) = values.get_mut(value) {
                nodes.retain(|&n| n != index);
                if nodes.is_empty() {
                    values.remove(value);
                }
            }
        }
    }

    fn nodes(&self, key: &str, value: &str) -> &[u32] {
        self.0.get(key).and_then(|v| v.get(value)).map_or(&[], Vec::as_slice)
    }

    fn values(&self, key: &str) -> impl Iterator<Item = (&str, &[u32])> {
        self.0.get(key).into_iter().flatten().map(|(v, nodes)| (&**v, nodes.as_slice()))
    }
}

/// [`filter`] for the nodes of `domains` with indices below `n`, at once:
/// the verdict of node index `i` is at `i`. Equal to [`filter`] for each
/// node (debug builds check it).
pub fn filter_verdicts(
    terms: &PodTerms,
    counts: &FilterCounts,
    domains: &Domains,
    n: usize,
) -> Vec<Option<FilterFailure>> {
    let mut out = vec![None; n];
    let mut mark = |nodes: &[u32], failure| {
        for &i in nodes {
            if let Some(slot) = out.get_mut(i as usize) {
                *slot = Some(failure);
            }
        }
    };
    // Lowest priority first: later checks overwrite (kube reports the
    // first failing check: affinity, anti-affinity, existing pods').
    for (key, value, count) in counts.existing_anti_affinity.pairs() {
        if count > 0 {
            mark(domains.nodes(key, value), FilterFailure::ExistingAntiAffinity);
        }
    }
    for t in &terms.required_anti_affinity {
        for (value, count) in counts.anti_affinity.values(&t.topology_key) {
            if count > 0 {
                mark(domains.nodes(&t.topology_key, value), FilterFailure::AntiAffinity);
            }
        }
    }
    let need = terms.required_affinity.len();
    if need == 0 {
        return out;
    }
    // Per node: how many terms' keys it has, how many terms have a pod in
    // its domain.
    let mut has_key = vec![0usize; n];
    let mut satisfied = vec![0usize; n];
    for t in &terms.required_affinity {
        for (value, nodes) in domains.values(&t.topology_key) {
            let ok = counts.affinity.get(&t.topology_key, value) > 0;
            for &i in nodes {
                if let Some(h) = has_key.get_mut(i as usize) {
                    *h += 1;
                    satisfied[i as usize] += usize::from(ok);
                }
            }
        }
    }
    let first_of_series = counts.affinity.is_empty() && counts.matches_own_affinity;
    for i in 0..n {
        if has_key[i] < need || (satisfied[i] < need && !first_of_series) {
            out[i] = Some(FilterFailure::Affinity);
        }
    }
    out
}

/// The raw Score of the nodes of `domains` with indices below `n`, at
/// once (node index `i` at `i`): [`TopologyCounts::sum_for_node`] of each.
pub fn node_scores(map: &TopologyCounts, domains: &Domains, n: usize) -> Vec<i64> {
    let mut out = vec![0; n];
    for (key, value, weight) in map.pairs() {
        for &i in domains.nodes(key, value) {
            if let Some(slot) = out.get_mut(i as usize) {
                *slot += weight;
            }
        }
    }
    out
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
    /// Counts for `incoming` with `terms`, from every group of existing
    /// pods (`all`), or only those that have terms (`with_terms`; the
    /// symmetric check reads only those).
    pub fn new<'a>(
        incoming: PodRef<'_>,
        terms: &PodTerms,
        all: impl Iterator<Item = &'a PodGroup>,
        with_terms: impl Iterator<Item = &'a PodGroup>,
    ) -> FilterCounts {
        let mut counts = FilterCounts {
            matches_own_affinity: matches_all(&terms.required_affinity, incoming),
            ..FilterCounts::default()
        };
        for group in with_terms {
            for t in &group.pod.terms.required_anti_affinity {
                if t.selects(incoming) {
                    counts.existing_anti_affinity.add_key_of(&t.topology_key, &group.placement, 1);
                }
            }
        }
        if !terms.has_required() {
            return counts;
        }
        for group in all {
            let pod = group.pod.as_ref();
            if matches_all(&terms.required_affinity, pod) {
                for t in &terms.required_affinity {
                    counts.affinity.add_key_of(&t.topology_key, &group.placement, 1);
                }
            }
            for t in &terms.required_anti_affinity {
                if t.selects(pod) {
                    counts.anti_affinity.add_key_of(&t.topology_key, &group.placement, 1);
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
    placement: &TopologyCounts,
    sign: i64,
) {
    for w in terms {
        if w.term.selects(pod) {
            map.add_key_of(&w.term.topology_key, placement, sign * w.weight);
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
    all: impl Iterator<Item = &'a PodGroup>,
    with_terms: impl Iterator<Item = &'a PodGroup>,
) -> TopologyCounts {
    let mut map = TopologyCounts::default();
    if terms.has_preferred() {
        for group in all {
            let (pod, placement) = (group.pod.as_ref(), &group.placement);
            add_weighted(&mut map, &terms.preferred_affinity, pod, placement, 1);
            add_weighted(&mut map, &terms.preferred_anti_affinity, pod, placement, -1);
        }
    }
    for group in with_terms {
        let (theirs, placement) = (&group.pod.terms, &group.placement);
        if hard_weight > 0 {
            for t in &theirs.required_affinity {
                if t.selects(incoming) {
                    map.add_key_of(&t.topology_key, placement, hard_weight);
                }
            }
        }
        add_weighted(&mut map, &theirs.preferred_affinity, incoming, placement, 1);
        add_weighted(&mut map, &theirs.preferred_anti_affinity, incoming, placement, -1);
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn normalize_is_kubes_min_max() {
        // kube-scheduler truncates 100 · (s − min) / (max − min).
        let cases: &[(&[i64], &[i64])] = &[
            (&[1, 8, -3, 0], &[36, 100, 0, 27]),
            (&[5, 0, 0], &[100, 0, 0]),
            (&[-5, 0], &[0, 100]),
            (&[7, 7, 7], &[0, 0, 0]),
            (&[0, 1, 2], &[0, 50, 100]),
            (&[], &[]),
        ];
        for (raw, want) in cases {
            let mut scores = raw.to_vec();
            normalize(&mut scores);
            assert_eq!(scores, *want, "{raw:?}");
        }
    }

    proptest! {
        /// Normalized scores keep the order, span 0..=100 and reach both
        /// ends whenever the raw scores differ.
        #[test]
        fn normalize_keeps_order_and_range(raw in prop::collection::vec(-10_000i64..10_000, 1..40)) {
            let mut scores = raw.clone();
            normalize(&mut scores);
            for (i, j) in (0..raw.len()).flat_map(|i| (0..raw.len()).map(move |j| (i, j))) {
                if raw[i] <= raw[j] {
                    prop_assert!(scores[i] <= scores[j]);
                }
            }
            prop_assert!(scores.iter().all(|s| (0..=100).contains(s)));
            let differ = raw.iter().any(|r| *r != raw[0]);
            prop_assert_eq!(scores.iter().copied().max(), Some(if differ { 100 } else { 0 }));
            prop_assert_eq!(scores.iter().copied().min(), Some(0));
        }

        /// Counts are sums: any order of additions gives the sum per pair,
        /// and pairs that net to zero are forgotten.
        #[test]
        fn counts_are_sums(adds in prop::collection::vec((0u8..3, 0u8..4, -3i64..4), 0..60)) {
            let mut counts = TopologyCounts::default();
            let mut want = std::collections::BTreeMap::new();
            for (k, v, d) in &adds {
                counts.add_value(&format!("k{k}"), &format!("v{v}"), *d);
                *want.entry((format!("k{k}"), format!("v{v}"))).or_insert(0i64) += d;
            }
            for ((k, v), n) in &want {
                prop_assert_eq!(counts.get(k, v), *n);
            }
            prop_assert_eq!(counts.is_empty(), want.values().all(|n| *n == 0));
            // Copying one key's pairs into empty counts, or adding them
            // twice, doubles nothing else.
            let mut copy = TopologyCounts::default();
            copy.add_key_of("k0", &counts, 1);
            copy.add_key_of("k0", &counts, 2);
            for ((k, v), n) in &want {
                prop_assert_eq!(copy.get(k, v), if k == "k0" { 3 * n } else { 0 });
            }
        }
    }
}
