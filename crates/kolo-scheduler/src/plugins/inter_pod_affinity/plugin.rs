//! The InterPodAffinity plugin: the framework adapter around
//! [`decide`](super::decide). In step with cluster events (assumed pods
//! included, upserted by pod key) it keeps each node's labels and pods, and
//! groups alike pods (same namespace, labels and affinity) with, per pair
//! of every label of their nodes, how many run there; the groups whose
//! pods carry terms are listed apart, so the symmetric checks read only
//! those. PreFilter and PreScore compute kube-scheduler's
//! per-topology-pair counts once per cycle from the groups — a
//! Deployment's thousand replicas cost one selector match — and Filter and
//! Score per node are look-ups of the node's labels in them.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use kolo_core::HasMeta;
use kolo_core::meta::StringMap;

use super::decide::{self, Domains, ExistingPod, FilterCounts, PodGroup, PodRef, TopologyCounts};
use super::terms::{PodTerms, TermError, mentions_pod_affinity};
use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, ExtensionPoints, Filter, NodeId,
    NodeInfo, NodeVerdict, Plugin, PodInfo, PreFilter, PreFilterOutcome, PreScore, PreScoreOutcome,
    Rejection, Score, ScoreSink, Verdict, filter_each, score_each,
};
use crate::registry::{PluginArgsError, decode_args};

/// The plugin's registered name.
pub const NAME: &str = "InterPodAffinity";

type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// `InterPodAffinityArgs`, kube-scheduler's JSON names and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct InterPodAffinityArgs {
    /// The score weight of an existing pod's *required* affinity term that
    /// selects the incoming pod (0..=100; default 1).
    pub hard_pod_affinity_weight: i64,
    /// Skip scoring a pod without preferred terms even when existing pods
    /// have preferred terms selecting it (default false).
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for InterPodAffinityArgs {
    fn default() -> InterPodAffinityArgs {
        InterPodAffinityArgs {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

impl InterPodAffinityArgs {
    /// kube-scheduler's validation: the weight is in 0..=100.
    pub fn validate(&self) -> Result<(), PluginArgsError> {
        if !(0..=100).contains(&self.hard_pod_affinity_weight) {
            return Err(PluginArgsError::new(
                "hardPodAffinityWeight",
                format!("must be in the range 0-100, got {}", self.hard_pod_affinity_weight),
            ));
        }
        Ok(())
    }
}

/// A node as the plugin keeps it: its labels, and its pods' groups.
#[derive(Debug, Default)]
struct NodeEntry {
    labels: StringMap,
    /// (pod key, group index) of each pod counted on the node.
    pods: Vec<(Box<str>, usize)>,
}

/// What makes pods alike here: namespace, labels, and their affinity as
/// written (compiled terms are not hashable).
type GroupKey = (Box<str>, StringMap, String);

/// A group and how many pods it has.
#[derive(Debug)]
struct Group {
    key: GroupKey,
    group: PodGroup,
    pods: u32,
}

/// The plugin's view of the cluster.
#[derive(Debug, Default)]
struct Cluster {
    /// Indexed by node id.
    nodes: Vec<Option<NodeEntry>>,
    /// Where each counted pod is: (node, group index).
    pods: FastMap<Box<str>, (NodeId, usize)>,
    /// Groups by index; a slot empties when its last pod goes.
    groups: Vec<Option<Group>>,
    group_ids: FastMap<GroupKey, usize>,
    /// The groups whose pods carry terms.
    with_terms: BTreeSet<usize>,
    /// The nodes of each topology pair.
    domains: Domains,
}

impl Cluster {
    fn node_mut(&mut self, node: &NodeInfo) -> &mut NodeEntry {
        let i = node.id().index();
        if self.nodes.len() <= i {
            self.nodes.resize_with(i + 1, || None);
        }
        let domains = &mut self.domains;
        self.nodes[i].get_or_insert_with(|| {
            domains.add_node(node.id().0, node.view().labels());
            NodeEntry { labels: node.view().labels().clone(), pods: Vec::new() }
        })
    }

    /// Every group of counted pods.
    fn all(&self) -> impl Iterator<Item = &PodGroup> {
        self.groups.iter().flatten().map(|g| &g.group)
    }

    /// The groups whose pods carry terms.
    fn with_terms(&self) -> impl Iterator<Item = &PodGroup> {
        self.with_terms.iter().filter_map(|&i| self.groups[i].as_ref().map(|g| &g.group))
    }

    fn group_of(&mut self, pod: &PodInfo) -> usize {
        let view = pod.view();
        let spec = pod.pod().spec.as_ref();
        let written = match spec.and_then(|s| s.affinity.as_ref()) {
            Some(a) if mentions_pod_affinity(pod.pod()) => {
                serde_json::to_string(&(&a.pod_affinity, &a.pod_anti_affinity)).unwrap_or_default()
            }
            _ => String::new(),
        };
        let key: GroupKey = (view.namespace().into(), view.labels().clone(), written);
        if let Some(&i) = self.group_ids.get(&key) {
            return i;
        }
        let terms = if key.2.is_empty() {
            PodTerms::default()
        } else {
            PodTerms::of_existing(pod.pod(), view.namespace())
        };
        let existing = ExistingPod { namespace: key.0.clone(), labels: key.1.clone(), terms };
        let has_terms = !existing.terms.is_empty();
        let group = Group {
            key: key.clone(),
            group: PodGroup { pod: existing, placement: TopologyCounts::default() },
            pods: 0,
        };
        let i = match self.groups.iter().position(Option::is_none) {
            Some(free) => {
                self.groups[free] = Some(group);
                free
            }
            None => {
                self.groups.push(Some(group));
                self.groups.len() - 1
            }
        };
        self.group_ids.insert(key, i);
        if has_terms {
            self.with_terms.insert(i);
        }
        i
    }

    fn add_pod(&mut self, pod: &PodInfo, node: &NodeInfo) {
        self.remove_pod(pod.key());
        let i = self.group_of(pod);
        let entry = self.node_mut(node);
        entry.pods.push((pod.key().into(), i));
        let labels = entry.labels.clone();
        let group = self.groups[i].as_mut().expect("group just found");
        group.pods += 1;
        group.group.placement.add_node(&labels, 1);
        self.pods.insert(pod.key().into(), (node.id(), i));
    }

    fn remove_pod(&mut self, key: &str) {
        let Some((id, i)) = self.pods.remove(key) else { return };
        let Some(Some(node)) = self.nodes.get_mut(id.index()) else { return };
        node.pods.retain(|(k, _)| &**k != key);
        let Some(group) = self.groups[i].as_mut() else { return };
        group.group.placement.add_node(&node.labels, -1);
        group.pods -= 1;
        if group.pods == 0 {
            let group = self.groups[i].take().expect("checked above");
            self.group_ids.remove(&group.key);
            self.with_terms.remove(&i);
        }
    }

    /// A node's labels changed: its pods move to other pairs.
    fn relabel(&mut self, node: &NodeInfo) {
        let entry = self.node_mut(node);
        let old = std::mem::replace(&mut entry.labels, node.view().labels().clone());
        let pods: Vec<usize> = entry.pods.iter().map(|(_, i)| *i).collect();
        self.domains.remove_node(node.id().0, &old);
        self.domains.add_node(node.id().0, node.view().labels());
        for i in pods {
            if let Some(group) = self.groups[i].as_mut() {
                group.group.placement.add_node(&old, -1);
                group.group.placement.add_node(node.view().labels(), 1);
            }
        }
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct InterPodAffinity {
    args: InterPodAffinityArgs,
    cluster: RwLock<Cluster>,
}

/// The incoming pod's terms and counts, for Filter.
struct FilterState {
    terms: PodTerms,
    counts: FilterCounts,
    /// By node index, for the nodes the plugin knows.
    verdicts: Vec<Option<decide::FilterFailure>>,
}

/// The topology score map, for Score, and the raw score of each node the
/// plugin knows, by node index.
struct ScoreState(TopologyCounts, Vec<i64>);

fn incoming(pod: &PodInfo) -> PodRef<'_> {
    PodRef { namespace: pod.view().namespace(), labels: pod.view().labels() }
}

impl InterPodAffinity {
    /// Builds the plugin from `InterPodAffinityArgs`.
    pub fn build(args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(InterPodAffinity::new(decode_args(args, "InterPodAffinityArgs")?)?))
    }

    /// The plugin with these arguments, validated.
    pub fn new(args: InterPodAffinityArgs) -> Result<InterPodAffinity, PluginArgsError> {
        args.validate()?;
        Ok(InterPodAffinity { args, cluster: RwLock::default() })
    }

    fn read(&self) -> RwLockReadGuard<'_, Cluster> {
        self.cluster.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Cluster> {
        self.cluster.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn filter_state(&self, pod: &PodInfo) -> Result<FilterState, TermError> {
        let terms = PodTerms::of_incoming(pod.pod(), pod.view().namespace())?;
        let cluster = self.read();
        let counts = FilterCounts::new(incoming(pod), &terms, cluster.all(), cluster.with_terms());
        let n = cluster.nodes.len();
        let verdicts = decide::filter_verdicts(&terms, &counts, &cluster.domains, n);
        Ok(FilterState { terms, counts, verdicts })
    }

    fn score_state(&self, pod: &PodInfo) -> Option<ScoreState> {
        // A pod whose terms do not compile was refused at PreFilter.
        let terms = PodTerms::of_incoming(pod.pod(), pod.view().namespace()).ok()?;
        if self.args.ignore_preferred_terms_of_existing_pods && !terms.has_preferred() {
            return None;
        }
        let cluster = self.read();
        let map = decide::score_map(
            incoming(pod),
            &terms,
            self.args.hard_pod_affinity_weight,
            cluster.all(),
            cluster.with_terms(),
        );
        if map.is_empty() {
            return None;
        }
        let scores = decide::node_scores(&map, &cluster.domains, cluster.nodes.len());
        Some(ScoreState(map, scores))
    }
}

fn check(state: &Result<FilterState, TermError>, node: &NodeInfo) -> Verdict {
    let state = state.as_ref().map_err(|e| Rejection::unresolvable(e.to_string()))?;
    let by_labels = || decide::filter(&state.terms, &state.counts, |k| node.view().label(k));
    let verdict = match state.verdicts.get(node.id().index()) {
        Some(v) => {
            debug_assert_eq!(v.map_or(Ok(()), Err), by_labels(), "{}", node.name());
            v.map_or(Ok(()), Err)
        }
        // A node the plugin has not heard of yet.
        None => by_labels(),
    };
    verdict.map_err(|failure| match failure {
        decide::FilterFailure::Affinity => Rejection::unresolvable(failure.reason()),
        _ => Rejection::unschedulable(failure.reason()),
    })
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        let points = ExtensionPoints::of(self).pre_filter().filter().pre_score().score();
        points.event_handler().into()
    }
    // Results read other nodes' pods: no equivalence cache in general, no
    // node-local updates (a node's labels move its pods between domains).
    fn supports_equivalence(&self) -> bool {
        false
    }
    fn trivially_passes(&self, pod: &PodInfo) -> bool {
        // No terms on the pod and none on any existing pod: PreFilter and
        // PreScore skip (nothing can be counted).
        !mentions_pod_affinity(pod.pod()) && self.read().with_terms.is_empty()
    }
}

impl PreFilter for InterPodAffinity {
    fn pre_filter(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        match self.filter_state(pod) {
            Err(e) => PreFilterOutcome::Reject(Rejection::unresolvable(e.to_string())),
            Ok(s) if !s.counts.needs_filter(&s.terms) => PreFilterOutcome::Skip,
            Ok(s) => {
                state.write(Ok::<_, TermError>(s));
                PreFilterOutcome::Proceed
            }
        }
    }
}

impl Filter for InterPodAffinity {
    fn filter(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        let mut owned = None;
        check(state.read_or(&mut owned, || self.filter_state(pod)), node)
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
        let s = state.read_or(&mut owned, || self.filter_state(pod));
        filter_each(nodes, plugin, out, |node| check(s, node));
    }
}

impl PreScore for InterPodAffinity {
    fn pre_score(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreScoreOutcome {
        match self.score_state(pod) {
            Some(s) => {
                state.write(s);
                PreScoreOutcome::Proceed
            }
            None => PreScoreOutcome::Skip,
        }
    }
}

fn score_of(map: Option<&ScoreState>, node: &NodeInfo) -> i64 {
    let Some(ScoreState(map, scores)) = map else { return 0 };
    let by_labels = || map.sum_for_node(|k| node.view().label(k));
    match scores.get(node.id().index()) {
        Some(&score) => {
            debug_assert_eq!(score, by_labels(), "{}", node.name());
            score
        }
        None => by_labels(),
    }
}

impl Score for InterPodAffinity {
    fn score(&self, _: &CycleContext, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        match state.read::<ScoreState>() {
            Some(s) => score_of(Some(s), node),
            None => score_of(self.score_state(pod).as_ref(), node),
        }
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
        let owned;
        let map = match state.read::<ScoreState>() {
            Some(s) => Some(s),
            None => {
                owned = self.score_state(pod);
                owned.as_ref()
            }
        };
        score_each(nodes, verdicts, out, |node| score_of(map, node));
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
        decide::normalize(scores);
    }
}

impl ClusterEventHandler for InterPodAffinity {
    fn on_event(&self, event: &ClusterEvent<'_>) {
        match *event {
            ClusterEvent::NodeAdded(node) | ClusterEvent::NodeUpdated(node) => {
                self.write().relabel(node);
            }
            ClusterEvent::NodeRemoved { id, .. } => {
                let mut cluster = self.write();
                // Its pods were removed first; drop any left all the same.
                let left: Vec<Box<str>> = (cluster.nodes.get(id.index()))
                    .and_then(Option::as_ref)
                    .map(|n| n.pods.iter().map(|(k, _)| k.clone()).collect())
                    .unwrap_or_default();
                for key in left {
                    cluster.remove_pod(&key);
                }
                if let Some(entry) = cluster.nodes.get_mut(id.index()).and_then(Option::take) {
                    cluster.domains.remove_node(id.0, &entry.labels);
                }
            }
            ClusterEvent::PodAdded { pod, node, .. } => self.write().add_pod(pod, node),
            ClusterEvent::PodRemoved { pod, .. } => self.write().remove_pod(pod.key()),
            ClusterEvent::NodeMetricUpdated { .. } | ClusterEvent::NodeMetricRemoved { .. } => {}
        }
    }
}
