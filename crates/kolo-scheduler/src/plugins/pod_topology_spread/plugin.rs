//! The PodTopologySpread plugin: the framework adapter around
//! [`constraints`](super::constraints) and [`decide`](super::decide).
//!
//! It keeps, per node, the node (its labels and taints) and the
//! namespace and labels of the pods counted there (bound and assumed),
//! grouped: pods with the same namespace and labels share a group, so a
//! selector is matched once per group per cycle, not once per pod.
//! PreFilter and PreScore tally the matching pods per topology domain over
//! every node once per cycle; Filter and Score are then lookups by node id.
//!
//! kolo's PreScore does not see the feasible nodes, and kube's score
//! weights each constraint by the number of domains *among the feasible
//! nodes*; so Score leaves 0 and Normalize, which gets the feasible nodes,
//! computes kube's score there.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard};

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use kolo_core::HasMeta;
use kolo_core::meta::StringMap;
use kolo_core::node::TaintEffect;

use super::args::PodTopologySpreadArgs;
use super::constraints::{Constraint, Policy, compile};
use super::decide::{global_min, normalize, score_for_count, topology_weight, within_skew};
use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, ExtensionPoints,
    Filter, NodeInfo, Plugin, PodInfo, PreFilter, PreFilterOutcome, PreScore, PreScoreOutcome,
    Rejection, Score, Verdict,
};
use crate::plugins::{node_affinity, tolerations};
use crate::registry::{PluginArgsError, decode_args};

/// The plugin's registered name.
pub const NAME: &str = "PodTopologySpread";
/// The rejection reason for a node that would break a constraint's skew
/// (kube-scheduler's `ErrReasonConstraintsNotMatch`).
pub const REASON: &str = "node(s) didn't match pod topology spread constraints";
/// The rejection reason for a node without a constraint's topology key
/// (kube-scheduler's `ErrReasonNodeLabelNotMatch`).
pub const REASON_MISSING_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// No domain: the node lacks the topology key.
const NONE: u32 = u32::MAX;

/// See the module documentation.
pub struct PodTopologySpread {
    /// The cluster default constraints (validated).
    defaults: Vec<TopologySpreadConstraint>,
    /// `defaultingType: System`: nodes lacking a key still take part in
    /// scoring the default constraints (kube's `systemDefaulted`).
    system_defaulted: bool,
    cluster: RwLock<Cluster>,
    /// Per topology key, every node's domain (see [`KeyTable`]).
    key_tables: Mutex<HashMap<String, Arc<KeyTable>>>,
}

/// Pods with one namespace and one label set.
struct Group {
    namespace: Box<str>,
    labels: StringMap,
    /// Pods in the group, on all nodes.
    refs: u32,
}

struct NodeState {
    info: NodeInfo,
    /// Pod key → its group (`None`: terminating, counted nowhere).
    pods: HashMap<Box<str>, Option<u32>>,
    /// (group, pods of it on this node).
    groups: Vec<(u32, u32)>,
}

#[derive(Default)]
struct Cluster {
    groups: Vec<Option<Group>>,
    group_ids: HashMap<(Box<str>, StringMap), u32>,
    free: Vec<u32>,
    /// By node id.
    nodes: Vec<Option<NodeState>>,
    /// Moves on whenever a node is added or removed or its labels change
    /// (the key tables are rebuilt then).
    epoch: u64,
}

impl Cluster {
    fn node_mut(&mut self, node: &NodeInfo) -> &mut NodeState {
        let i = node.id().index();
        if self.nodes.len() <= i {
            self.nodes.resize_with(i + 1, || None);
        }
        if self.nodes[i].is_none() {
            self.epoch += 1;
        }
        self.nodes[i].get_or_insert_with(|| NodeState {
            info: node.clone(),
            pods: HashMap::new(),
            groups: Vec::new(),
        })
    }

    fn intern(&mut self, pod: &PodInfo) -> u32 {
        let key: (Box<str>, StringMap) =
            (pod.view().namespace().into(), pod.view().labels().clone());
        if let Some(&id) = self.group_ids.get(&key) {
            if let Some(g) = self.groups[id as usize].as_mut() {
                g.refs += 1;
            }
            return id;
        }
        let group = Group { namespace: key.0.clone(), labels: key.1.clone(), refs: 1 };
        let id = match self.free.pop() {
            Some(id) => {
                self.groups[id as usize] = Some(group);
                id
            }
            None => {
                self.groups.push(Some(group));
                (self.groups.len() - 1) as u32
            }
        };
        self.group_ids.insert(key, id);
        id
    }

    fn release(&mut self, id: u32) {
        let slot = &mut self.groups[id as usize];
        let Some(g) = slot.as_mut() else { return };
        g.refs -= 1;
        if g.refs == 0 {
            let g = slot.take().expect("checked above");
            self.group_ids.remove(&(g.namespace, g.labels));
            self.free.push(id);
        }
    }

    fn remove_pod(&mut self, key: &str, node: usize) {
        let Some(Some(state)) = self.nodes.get_mut(node) else { return };
        let Some(Some(group)) = state.pods.remove(key) else { return };
        if let Some(pos) = state.groups.iter().position(|&(g, _)| g == group) {
            state.groups[pos].1 -= 1;
            if state.groups[pos].1 == 0 {
                state.groups.swap_remove(pos);
            }
        }
        self.release(group);
    }

    fn add_pod(&mut self, pod: &PodInfo, node: &NodeInfo) {
        // Upsert: a pod reported again replaces its earlier entry.
        self.remove_pod(pod.key(), node.id().index());
        // Terminating pods do not count (kube #87621).
        let group = (pod.pod().metadata.deletion_timestamp.is_none()).then(|| self.intern(pod));
        let state = self.node_mut(node);
        state.pods.insert(pod.key().into(), group);
        if let Some(group) = group {
            match state.groups.iter_mut().find(|(g, _)| *g == group) {
                Some(entry) => entry.1 += 1,
                None => state.groups.push((group, 1)),
            }
        }
    }
}

/// Matching pods per topology domain for a pod's constraints (`k` of
/// them), over every node.
struct Tally {
    k: usize,
    /// Per node id × constraint: the node's domain (`NONE` without the
    /// key, unless missing keys make the "" domain, as scoring does).
    domain_of: Vec<u32>,
    /// Per node id: bit `i` set when the node has constraint `i`'s key.
    keys: Vec<u64>,
    /// Per node id × constraint: the node's own matching pods.
    own: Vec<i64>,
    /// Per constraint, per domain: matching pods on the counted nodes.
    counts: Vec<Vec<i64>>,
    /// Per constraint, per domain: whether a counted node is in it.
    eligible: Vec<Vec<bool>>,
}

impl Tally {
    fn domain(&self, node: &NodeInfo, i: usize) -> u32 {
        self.domain_of.get(node.id().index() * self.k + i).copied().unwrap_or(NONE)
    }

    fn has_all_keys(&self, slot: usize) -> bool {
        let all = if self.k >= 64 { u64::MAX } else { (1u64 << self.k) - 1 };
        self.keys.get(slot).is_some_and(|&k| k == all)
    }
}

/// Which nodes a tally counts.
#[derive(Clone, Copy)]
struct Counting {
    /// Only nodes with every constraint's key count.
    require_all_keys: bool,
    /// A node without a key is in the "" domain (kube's scoring reads the
    /// missing label as "").
    missing_as_empty: bool,
}

/// Every node's domain for one topology key: kept across cycles while no
/// node is added, removed or relabelled.
struct KeyTable {
    /// The cluster's node epoch it was built at.
    epoch: u64,
    /// By node id: the node's domain, `NONE` without the key.
    domain_of: Vec<u32>,
    /// How many domains (distinct values).
    values: usize,
    /// The domain of the value "", if a node has it (nodes without the key
    /// join it when scoring reads missing labels as "").
    empty: Option<u32>,
}

impl KeyTable {
    fn build(cluster: &Cluster, key: &str) -> KeyTable {
        let mut names: HashMap<&str, u32> = HashMap::new();
        let domain_of = cluster
            .nodes
            .iter()
            .map(|node| {
                let Some(value) = node.as_ref().and_then(|n| n.info.view().labels().get(key))
                else {
                    return NONE;
                };
                let next = names.len() as u32;
                *names.entry(value).or_insert(next)
            })
            .collect();
        KeyTable {
            epoch: cluster.epoch,
            domain_of,
            values: names.len(),
            empty: names.get("").copied(),
        }
    }
}

/// Per group (by id), which constraints count its pods: a bit per
/// constraint, one selector match per group instead of one per pod.
fn group_matches(cluster: &Cluster, namespace: &str, cs: &[Constraint]) -> Vec<u64> {
    let bits = |labels: &StringMap| {
        cs.iter().enumerate().filter(|(_, c)| c.counts(labels)).fold(0, |b, (i, _)| b | (1 << i))
    };
    cluster
        .groups
        .iter()
        .map(|g| match g {
            Some(g) if &*g.namespace == namespace => bits(&g.labels),
            _ => 0,
        })
        .collect()
}

/// Whether the pod restricts nodes by `nodeSelector` or required node
/// affinity (else every node passes and need not be checked).
fn has_required_affinity(pod: &PodInfo) -> bool {
    let Some(spec) = pod.pod().spec.as_ref() else { return false };
    spec.node_selector.as_ref().is_some_and(|s| !s.is_empty())
        || spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .is_some_and(|a| a.required_during_scheduling_ignored_during_execution.is_some())
}

/// Filter's state: the hard constraints, tallied.
struct FilterState {
    constraints: Vec<Constraint>,
    self_match: Vec<bool>,
    mins: Vec<i64>,
    tally: Tally,
}

/// Score's state: the soft constraints, tallied.
struct ScoreState {
    constraints: Vec<Constraint>,
    require_all_keys: bool,
    tally: Tally,
}

impl PodTopologySpread {
    /// Builds the plugin from `PodTopologySpreadArgs`.
    pub fn build(args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(PodTopologySpread::new(args)?))
    }

    /// The plugin itself, from `PodTopologySpreadArgs`.
    pub fn new(args: Option<&serde_json::Value>) -> Result<PodTopologySpread, PluginArgsError> {
        let args: PodTopologySpreadArgs = decode_args(args, "PodTopologySpreadArgs")?;
        let defaults = args.default_constraints().map_err(PluginArgsError::from_validation)?;
        Ok(PodTopologySpread {
            system_defaulted: args.defaulting_type == super::args::DefaultingType::System,
            defaults,
            cluster: RwLock::default(),
            key_tables: Mutex::default(),
        })
    }

    fn read(&self) -> RwLockReadGuard<'_, Cluster> {
        self.cluster.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tallies matching pods per domain for `cs` over every node.
    fn tally(&self, pod: &PodInfo, cs: &[Constraint], how: Counting) -> Tally {
        let cluster = self.read();
        let k = cs.len().min(64);
        let cs = &cs[..k];
        let matches = group_matches(&cluster, pod.view().namespace(), cs);
        let tables: Vec<Arc<KeyTable>> =
            cs.iter().map(|c| self.key_table(&cluster, &c.topology_key)).collect();
        let honor_affinity = cs.iter().any(|c| c.node_affinity_policy == Policy::Honor);
        let affinity = (honor_affinity && has_required_affinity(pod))
            .then(|| node_affinity::required(pod.pod()));
        let honor_taints = cs.iter().any(|c| c.node_taints_policy == Policy::Honor);
        let tolerations =
            if honor_taints { tolerations::tolerations(pod.pod()) } else { Vec::new() };
        let slots = cluster.nodes.len();
        let mut t = Tally {
            k,
            domain_of: vec![NONE; slots * k],
            keys: vec![0; slots],
            own: vec![0; slots * k],
            // One more domain: nodes without the key, when they count.
            counts: tables.iter().map(|t| vec![0; t.values + 1]).collect(),
            eligible: tables.iter().map(|t| vec![false; t.values + 1]).collect(),
        };
        for (slot, node) in cluster.nodes.iter().enumerate() {
            let Some(node) = node else { continue };
            let own = &mut t.own[slot * k..(slot + 1) * k];
            for &(group, n) in &node.groups {
                let mut bits = matches[group as usize];
                while bits != 0 {
                    own[bits.trailing_zeros() as usize] += i64::from(n);
                    bits &= bits - 1;
                }
            }
            let domains = tables.iter().map(|t| t.domain_of.get(slot).copied().unwrap_or(NONE));
            t.keys[slot] = domains
                .enumerate()
                .fold(0, |keys, (i, d)| if d == NONE { keys } else { keys | (1 << i) });
            let all_keys = t.has_all_keys(slot);
            let affinity_ok = affinity.as_ref().is_none_or(|a| a.matches(&node.info));
            let taints_ok = !honor_taints || tolerated(&node.info, &tolerations);
            for (i, c) in cs.iter().enumerate() {
                let table = &tables[i];
                let d = match table.domain_of.get(slot).copied().unwrap_or(NONE) {
                    NONE if how.missing_as_empty => table.empty.unwrap_or(table.values as u32),
                    NONE => continue,
                    d => d,
                };
                t.domain_of[slot * k + i] = d;
                let counted = (all_keys || !how.require_all_keys)
                    && (c.node_affinity_policy == Policy::Ignore || affinity_ok)
                    && (c.node_taints_policy == Policy::Ignore || taints_ok);
                if counted {
                    t.counts[i][d as usize] += t.own[slot * k + i];
                    t.eligible[i][d as usize] = true;
                }
            }
        }
        t
    }

    /// The domains of `key`, built again only after a node changed.
    fn key_table(&self, cluster: &Cluster, key: &str) -> Arc<KeyTable> {
        let mut tables = self.key_tables.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(table) = tables.get(key)
            && table.epoch == cluster.epoch
        {
            return table.clone();
        }
        if tables.len() >= 64 {
            // Keys come from pod specs: keep the cache bounded.
            tables.clear();
        }
        let table = Arc::new(KeyTable::build(cluster, key));
        tables.insert(key.to_string(), table.clone());
        table
    }

    fn filter_state(&self, pod: &PodInfo) -> Result<Option<FilterState>, Rejection> {
        let compiled =
            compile(pod.pod(), &self.defaults).map_err(|e| Rejection::error(e.to_string()))?;
        if compiled.hard.is_empty() {
            return Ok(None);
        }
        let mut constraints = compiled.hard;
        constraints.truncate(64);
        let how = Counting { require_all_keys: true, missing_as_empty: false };
        let tally = self.tally(pod, &constraints, how);
        let labels = pod.view().labels();
        let self_match = constraints.iter().map(|c| c.self_match(labels)).collect();
        let mins = constraints
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let eligible = tally.counts[i].iter().zip(&tally.eligible[i]);
                global_min(eligible.filter(|(_, e)| **e).map(|(n, _)| *n), c.min_domains)
            })
            .collect();
        Ok(Some(FilterState { constraints, self_match, mins, tally }))
    }

    fn score_state(&self, pod: &PodInfo) -> Option<ScoreState> {
        let compiled = compile(pod.pod(), &self.defaults).ok()?;
        if compiled.soft.is_empty() {
            return None;
        }
        let mut constraints = compiled.soft;
        constraints.truncate(64);
        // Only the system defaults let nodes without a zone still be
        // spread by hostname (kube's `requireAllTopologies`).
        let require_all_keys = compiled.explicit || !self.system_defaulted;
        let how = Counting { require_all_keys, missing_as_empty: true };
        let tally = self.tally(pod, &constraints, how);
        Some(ScoreState { constraints, require_all_keys, tally })
    }
}

/// Whether the pod tolerates every NoSchedule / NoExecute taint of the node
/// (`nodeTaintsPolicy: Honor`).
fn tolerated(node: &NodeInfo, tolerations: &[tolerations::Toleration]) -> bool {
    node.view()
        .taints()
        .iter()
        .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
        .all(|t| tolerations.iter().any(|tol| tol.tolerates(t)))
}

fn check(s: &FilterState, node: &NodeInfo) -> Verdict {
    for (i, c) in s.constraints.iter().enumerate() {
        let d = s.tally.domain(node, i);
        if d == NONE {
            // A node the tally never saw may still carry the key (it joined
            // after PreFilter): its domain has no counted pods.
            if node.view().labels().get(&c.topology_key).is_none() {
                return Err(Rejection::unresolvable(REASON_MISSING_LABEL));
            }
            if !within_skew(0, s.self_match[i], s.mins[i], c.max_skew) {
                return Err(Rejection::unschedulable(REASON));
            }
            continue;
        }
        let count = s.tally.counts[i][d as usize];
        // No per-node detail: a full domain rejects thousands of nodes per
        // cycle, and formatting each one's numbers would cost more than the
        // check.
        if !within_skew(count, s.self_match[i], s.mins[i], c.max_skew) {
            return Err(Rejection::unschedulable(REASON));
        }
    }
    Ok(())
}

/// kube's scores for the feasible nodes (by id, into `out` in the same
/// order): each constraint weighted by the number of its domains among the
/// feasible nodes.
fn final_scores(s: &ScoreState, ids: &[usize], out: &mut [i64]) {
    let k = s.tally.k;
    let slot_ok = |slot: usize| {
        slot < s.tally.keys.len() && (!s.require_all_keys || s.tally.has_all_keys(slot))
    };
    let scored = ids.iter().filter(|&&id| slot_ok(id)).count();
    let weights: Vec<f64> = s
        .constraints
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if c.is_hostname {
                return topology_weight(scored);
            }
            let mut seen = vec![false; s.tally.counts[i].len()];
            for &id in ids.iter().filter(|&&id| slot_ok(id)) {
                let d = s.tally.domain_of[id * k + i];
                if d != NONE {
                    seen[d as usize] = true;
                }
            }
            topology_weight(seen.iter().filter(|&&x| x).count())
        })
        .collect();
    let raw: Vec<Option<i64>> = ids
        .iter()
        .map(|&slot| {
            if !slot_ok(slot) {
                return None;
            }
            let mut score = 0.0;
            for (i, c) in s.constraints.iter().enumerate() {
                if s.tally.keys[slot] & (1 << i) == 0 {
                    continue;
                }
                let count = if c.is_hostname {
                    s.tally.own[slot * k + i]
                } else {
                    s.tally.counts[i][s.tally.domain_of[slot * k + i] as usize]
                };
                score += score_for_count(count, c.max_skew, weights[i]);
            }
            Some(score.round() as i64)
        })
        .collect();
    normalize(&raw, out);
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        let points = ExtensionPoints::of(self).pre_filter().filter().pre_score().score();
        points.event_handler().into()
    }
    fn events_to_register(&self) -> EventKinds {
        // A pod added can raise the global minimum, one deleted lower a
        // domain's count; node changes move nodes between domains.
        EventKinds::POD_ADD
            | EventKinds::POD_DELETE
            | EventKinds::NODE_ADD
            | EventKinds::NODE_UPDATE
            | EventKinds::NODE_DELETE
    }
    fn supports_equivalence(&self) -> bool {
        // A node's verdict and score read the pods of every node.
        false
    }
    fn node_updates_are_local(&self) -> bool {
        // A node relabelled moves between domains: every node's counts.
        false
    }
    fn trivially_passes(&self, pod: &PodInfo) -> bool {
        // No constraint (own or default): Filter passes everywhere and
        // PreScore skips. A constraint that fails to compile does not.
        compile(pod.pod(), &self.defaults).is_ok_and(|c| c.is_empty())
    }
}

impl PreFilter for PodTopologySpread {
    fn pre_filter(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        match self.filter_state(pod) {
            Err(rejection) => PreFilterOutcome::Reject(rejection),
            Ok(None) => PreFilterOutcome::Skip,
            Ok(Some(s)) => {
                state.write(s);
                PreFilterOutcome::Proceed
            }
        }
    }
}

impl Filter for PodTopologySpread {
    fn filter(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        match state.read::<FilterState>() {
            Some(s) => check(s, node),
            None => match self.filter_state(pod)? {
                Some(s) => check(&s, node),
                None => Ok(()),
            },
        }
    }

    fn filter_nodes(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        plugin: u16,
        out: &mut [crate::framework::NodeVerdict],
    ) {
        let mut owned = None;
        let s = match state.read::<FilterState>() {
            Some(s) => s,
            None => match self.filter_state(pod) {
                Ok(Some(s)) => owned.insert(s),
                Ok(None) => return,
                Err(rejection) => {
                    crate::framework::filter_each(nodes, plugin, out, |_| Err(rejection.clone()));
                    return;
                }
            },
        };
        crate::framework::filter_each(nodes, plugin, out, |node| check(s, node));
    }
}

impl PreScore for PodTopologySpread {
    fn pre_score(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreScoreOutcome {
        match self.score_state(pod) {
            None => PreScoreOutcome::Skip,
            Some(s) => {
                state.write(s);
                PreScoreOutcome::Proceed
            }
        }
    }
}

impl Score for PodTopologySpread {
    /// Nothing yet: the score needs every feasible node (see the module
    /// documentation) and is computed in [`normalize`](Self::normalize).
    fn score(&self, _: &CycleContext, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> i64 {
        0
    }

    fn normalizes(&self) -> bool {
        true
    }

    fn normalize(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut [i64],
    ) {
        let mut owned = None;
        let Some(s) = state.read::<ScoreState>().or_else(|| {
            owned = self.score_state(pod);
            owned.as_ref()
        }) else {
            scores.iter_mut().for_each(|s| *s = 0);
            return;
        };
        let ids: Vec<usize> = nodes.iter().map(|n| n.id().index()).collect();
        final_scores(s, &ids, scores);
    }
}

impl ClusterEventHandler for PodTopologySpread {
    fn on_event(&self, event: &ClusterEvent<'_>) {
        let mut cluster = self.cluster.write().unwrap_or_else(PoisonError::into_inner);
        match *event {
            ClusterEvent::NodeAdded(node) | ClusterEvent::NodeUpdated(node) => {
                let state = cluster.node_mut(node);
                let relabelled = state.info.view().labels() != node.view().labels();
                state.info = node.clone();
                if relabelled {
                    cluster.epoch += 1;
                }
            }
            ClusterEvent::NodeRemoved { id, .. } => {
                let keys: Vec<Box<str>> = cluster
                    .nodes
                    .get(id.index())
                    .and_then(Option::as_ref)
                    .map(|n| n.pods.keys().cloned().collect())
                    .unwrap_or_default();
                for key in keys {
                    cluster.remove_pod(&key, id.index());
                }
                if let Some(slot) = cluster.nodes.get_mut(id.index()) {
                    *slot = None;
                }
                cluster.epoch += 1;
            }
            ClusterEvent::PodAdded { pod, node, .. } => cluster.add_pod(pod, node),
            ClusterEvent::PodRemoved { pod, node } => cluster.remove_pod(pod.key(), node.index()),
            ClusterEvent::NodeMetricUpdated { .. } | ClusterEvent::NodeMetricRemoved { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::NodeId;
    use crate::testing::{ctx, node_from_yaml, pod_from_yaml};
    use kolo_core::clock::Timestamp;

    /// The plugin fed nodes and pods through cluster events.
    struct World {
        plugin: PodTopologySpread,
        nodes: Vec<NodeInfo>,
        next_pod: usize,
    }

    fn pod(spec: &str, labels: &str) -> PodInfo {
        PodInfo::new(pod_from_yaml(&format!(
            "metadata: {{name: p, namespace: default, labels: {{{labels}}}}}\nspec:\n  containers: []\n{spec}"
        )))
        .unwrap()
    }

    /// One constraint per `(maxSkew, key, action, extra fields)`, all
    /// selecting `foo` (kube's `fooSelector`).
    fn spread(constraints: &[(i32, &str, &str, &str)]) -> String {
        let mut yaml = String::from("  topologySpreadConstraints:\n");
        for (skew, key, action, extra) in constraints {
            yaml.push_str(&format!(
                "  - {{maxSkew: {skew}, topologyKey: {key}, whenUnsatisfiable: {action}, labelSelector: {{matchExpressions: [{{key: foo, operator: Exists}}]}}{extra}}}\n"
            ));
        }
        yaml
    }

    impl World {
        fn new(args: Option<serde_json::Value>) -> World {
            World {
                plugin: PodTopologySpread::new(args.as_ref()).unwrap(),
                nodes: Vec::new(),
                next_pod: 0,
            }
        }

        fn node(&mut self, name: &str, labels: &str, extra: &str) -> &mut World {
            let node = node_from_yaml(&format!(
                "metadata: {{name: {name}, labels: {{{labels}}}}}\n{extra}"
            ));
            let view = kolo_core::node::NodeView::from_node(&node).unwrap();
            let info = NodeInfo::new(NodeId(self.nodes.len() as u32), Arc::new(node), view);
            self.plugin.on_event(&ClusterEvent::NodeAdded(&info));
            self.nodes.push(info);
            self
        }

        /// Nodes `name` with `zone: <zone>` and `node: <name>` labels.
        fn zoned(&mut self, nodes: &[(&str, &str)]) -> &mut World {
            for (name, zone) in nodes {
                self.node(
                    name,
                    &format!("zone: {zone}, node: {name}, kubernetes.io/hostname: {name}"),
                    "",
                );
            }
            self
        }

        fn pods(&mut self, node: &str, count: usize, labels: &str, namespace: &str) -> &mut World {
            let at = Timestamp::UNIX_EPOCH;
            for _ in 0..count {
                self.next_pod += 1;
                let i = self.next_pod;
                let pod = PodInfo::new(pod_from_yaml(&format!(
                    "metadata: {{name: {node}-{i}, namespace: {namespace}, labels: {{{labels}}}}}\nspec: {{containers: []}}"
                )))
                .unwrap();
                let node = self.nodes.iter().find(|n| n.name() == node).unwrap();
                self.plugin.on_event(&ClusterEvent::PodAdded {
                    pod: &pod,
                    node,
                    assumed: false,
                    at,
                });
            }
            self
        }

        /// Filter's verdict per node: "ok", "skew" or "label"; `None` when
        /// PreFilter skips.
        fn filter(&self, pod: &PodInfo) -> Option<Vec<&'static str>> {
            let mut state = CycleState::new();
            match self.plugin.pre_filter(&ctx(), &mut state, pod) {
                PreFilterOutcome::Skip => return None,
                PreFilterOutcome::Reject(r) => panic!("{r}"),
                PreFilterOutcome::Proceed => {}
            }
            let verdict = |n: &NodeInfo| match self.plugin.filter(&ctx(), &state, pod, n) {
                Ok(()) => "ok",
                Err(r) if r.reason == REASON => "skew",
                Err(r) if r.reason == REASON_MISSING_LABEL => "label",
                Err(r) => panic!("{r}"),
            };
            Some(self.nodes.iter().map(verdict).collect())
        }

        /// Normalized scores of the nodes named `feasible` (the others
        /// failed some filter).
        fn scores(&self, pod: &PodInfo, feasible: &[&str]) -> Option<Vec<i64>> {
            let mut state = CycleState::new();
            if self.plugin.pre_score(&ctx(), &mut state, pod) == PreScoreOutcome::Skip {
                return None;
            }
            let nodes: Vec<&NodeInfo> = feasible
                .iter()
                .map(|name| self.nodes.iter().find(|n| n.name() == *name).unwrap())
                .collect();
            let mut raw: Vec<i64> =
                nodes.iter().map(|n| self.plugin.score(&ctx(), &state, pod, n)).collect();
            self.plugin.normalize(&ctx(), &state, pod, &nodes, &mut raw);
            Some(raw)
        }
    }

    const FOUR: [(&str, &str); 4] =
        [("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")];

    #[test]
    fn filter_table() {
        let hard = |skew, key| spread(&[(skew, key, "DoNotSchedule", "")]);
        // kube's TestPreFilterState cases, with the Filter verdicts they
        // imply worked out by hand.
        // "normal case": zone1 3, zone2 2 → min 2; zone1 3+1−2 = 2 > 1.
        let mut w = World::new(None);
        w.zoned(&FOUR)
            .pods("node-a", 2, "foo: ''", "default")
            .pods("node-b", 1, "foo: ''", "default");
        w.pods("node-y", 2, "foo: ''", "default");
        let p = pod(&hard(1, "zone"), "foo: ''");
        assert_eq!(w.filter(&p).unwrap(), ["skew", "skew", "ok", "ok"]);
        // The same pod not matching its own selector: zone1 3+0−2 = 1.
        let other = pod(&hard(1, "zone"), "bar: ''");
        assert_eq!(w.filter(&other).unwrap(), ["ok", "ok", "ok", "ok"]);
        // "normal case with null label selector": nothing counts.
        let null = pod(
            "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n",
            "foo: ''",
        );
        assert_eq!(w.filter(&null).unwrap(), ["ok", "ok", "ok", "ok"]);
        // "on a 3-zone cluster": an empty zone3 makes the minimum 0.
        w.zoned(&[("node-o", "zone3"), ("node-p", "zone3")]);
        assert_eq!(w.filter(&p).unwrap(), ["skew", "skew", "skew", "skew", "ok", "ok"]);

        // "namespace mismatch doesn't count": zone1 2, zone2 1.
        let mut w = World::new(None);
        w.zoned(&FOUR).pods("node-a", 1, "foo: ''", "default").pods("node-a", 1, "foo: ''", "ns1");
        w.pods("node-b", 1, "foo: ''", "default").pods("node-y", 1, "foo: ''", "ns2");
        w.pods("node-y", 1, "foo: ''", "default");
        assert_eq!(w.filter(&p).unwrap(), ["skew", "skew", "ok", "ok"]);

        // "normal case with two spreadConstraints": zones 3 / 4 (min 3),
        // nodes 2 / 1 / 0 / 4 (min 0): zone2 fails 4+1−3 = 2, node-a
        // 2+1−0 = 3 and node-b 1+1−0 = 2 fail by node: nothing fits.
        let mut w = World::new(None);
        w.zoned(&FOUR)
            .pods("node-a", 2, "foo: ''", "default")
            .pods("node-b", 1, "foo: ''", "default");
        w.pods("node-y", 4, "foo: ''", "default");
        let two = pod(
            &spread(&[(1, "zone", "DoNotSchedule", ""), (1, "node", "DoNotSchedule", "")]),
            "foo: ''",
        );
        assert_eq!(w.filter(&two).unwrap(), ["skew", "skew", "skew", "skew"]);
        // With maxSkew 3 by node, node-b (1+1 = 2) and node-x fit by node;
        // only zone1 fits by zone.
        let loose = pod(
            &spread(&[(1, "zone", "DoNotSchedule", ""), (2, "node", "DoNotSchedule", "")]),
            "foo: ''",
        );
        assert_eq!(w.filter(&loose).unwrap(), ["skew", "ok", "skew", "skew"]);
        // Soft constraints only: Filter has nothing to do.
        assert_eq!(w.filter(&pod(&spread(&[(1, "zone", "ScheduleAnyway", "")]), "foo: ''")), None);
        // By zone alone, zone1 fits (3+1−3 = 1). A node without the key
        // is rejected as such, and not counted.
        w.node("bare", "node: bare", "");
        assert_eq!(w.filter(&p).unwrap(), ["ok", "ok", "skew", "skew", "label"]);
    }

    #[test]
    fn min_domains_and_inclusion_policies() {
        // zone1 holds 1 matching pod per node, zone2 none of them.
        let mut w = World::new(None);
        w.zoned(&FOUR)
            .pods("node-a", 1, "foo: ''", "default")
            .pods("node-b", 1, "foo: ''", "default");
        w.pods("node-x", 1, "foo: ''", "default").pods("node-y", 1, "foo: ''", "default");
        // Zones 2 / 2 → min 2; with minDomains 3 (two domains exist) the
        // minimum is 0 and 2+1−0 > 2 everywhere.
        let skew2 = |extra| pod(&spread(&[(2, "zone", "DoNotSchedule", extra)]), "foo: ''");
        assert_eq!(w.filter(&skew2("")).unwrap(), ["ok"; 4]);
        assert_eq!(w.filter(&skew2(", minDomains: 3")).unwrap(), ["skew"; 4]);
        assert_eq!(w.filter(&skew2(", minDomains: 2")).unwrap(), ["ok"; 4]);

        // zone3's only node is tainted and unwanted by the pod's affinity.
        let mut w = World::new(None);
        w.zoned(&FOUR)
            .pods("node-a", 1, "foo: ''", "default")
            .pods("node-x", 1, "foo: ''", "default");
        w.node(
            "node-t",
            "zone: zone3, node: node-t, spare: 'yes'",
            "spec:\n  taints: [{key: k, effect: NoSchedule}]",
        );
        let selector = "  nodeSelector: {node: node-a}\n";
        let hard = |extra: &str, spec: &str| {
            pod(&format!("{}{spec}", spread(&[(1, "zone", "DoNotSchedule", extra)])), "foo: ''")
        };
        // Counted: min 0 (zone3), zone1 / zone2 hold 1: 1+1−0 > 1.
        assert_eq!(w.filter(&hard("", "")).unwrap(), ["skew", "skew", "skew", "skew", "ok"]);
        // Taints honoured: zone3 does not count, min 1, 1+1−1 ≤ 1.
        assert_eq!(w.filter(&hard(", nodeTaintsPolicy: Honor", "")).unwrap(), ["ok"; 5]);
        // A toleration brings zone3 back.
        let tolerating = "  tolerations: [{key: k, operator: Exists}]\n";
        assert_eq!(
            w.filter(&hard(", nodeTaintsPolicy: Honor", tolerating)).unwrap(),
            ["skew", "skew", "skew", "skew", "ok"]
        );
        // Affinity honoured (the default): only node-a's zone counts, so
        // min 1 and zone1 fits; zone3 (uncounted, 0) fits as well.
        assert_eq!(w.filter(&hard("", selector)).unwrap(), ["ok"; 5]);
        assert_eq!(
            w.filter(&hard(", nodeAffinityPolicy: Ignore", selector)).unwrap(),
            ["skew", "skew", "skew", "skew", "ok"]
        );
    }

    #[test]
    fn score_table() {
        // kube's TestPodTopologySpreadScore cases (hostname constraint,
        // maxSkew 1 unless said): (pods per node, feasible, want).
        let hostname = |skew| {
            pod(&spread(&[(skew, "kubernetes.io/hostname", "ScheduleAnyway", "")]), "foo: ''")
        };
        let four = ["node-a", "node-b", "node-c", "node-d"];
        let world = |counts: &[usize]| {
            let mut w = World::new(None);
            for (name, count) in four.iter().zip(counts) {
                w.node(name, &format!("kubernetes.io/hostname: {name}"), "");
                w.pods(name, *count, "foo: ''", "default");
            }
            w
        };
        // "all 4 nodes are candidates": 2/1/0/3, weight ln 6.
        assert_eq!(world(&[2, 1, 0, 3]).scores(&hostname(1), &four).unwrap(), [20, 60, 100, 0]);
        // "maxSkew=2": each raw score + 1.
        assert_eq!(world(&[2, 1, 0, 3]).scores(&hostname(2), &four).unwrap(), [33, 66, 100, 16]);
        // "maxSkew=3": 4/3/2/1.
        assert_eq!(world(&[4, 3, 2, 1]).scores(&hostname(3), &four).unwrap(), [44, 66, 77, 100]);
        // "no existing pods" and "only one node is candidate".
        assert_eq!(world(&[0, 0, 0, 0]).scores(&hostname(1), &four[..2]).unwrap(), [100, 100]);
        assert_eq!(world(&[2, 1, 0, 0]).scores(&hostname(1), &four[..1]).unwrap(), [100]);
        // "3 out of 4 nodes are candidates": 4/2/1/~3~, weight ln 5.
        assert_eq!(world(&[4, 2, 1, 3]).scores(&hostname(1), &four[..3]).unwrap(), [33, 83, 100]);
        // "one node doesn't match topology key": 4/?2?/1/~3~.
        let mut w = World::new(None);
        w.node("node-a", "kubernetes.io/hostname: node-a", "")
            .pods("node-a", 4, "foo: ''", "default");
        w.node("node-b", "n: node-b", "").pods("node-b", 2, "foo: ''", "default");
        w.node("node-x", "kubernetes.io/hostname: node-x", "")
            .pods("node-x", 1, "foo: ''", "default");
        w.node("node-y", "kubernetes.io/hostname: node-y", "")
            .pods("node-y", 3, "foo: ''", "default");
        assert_eq!(w.scores(&hostname(1), &["node-a", "node-b", "node-x"]).unwrap(), [16, 0, 100]);
        // "one constraint on zone, 3 out of 4 nodes are candidates":
        // zone1 4+2, zone2 1+3 (node-y failed but its pods count).
        let mut w = World::new(None);
        w.zoned(&FOUR)
            .pods("node-a", 4, "foo: ''", "default")
            .pods("node-b", 2, "foo: ''", "default");
        w.pods("node-x", 1, "foo: ''", "default").pods("node-y", 3, "foo: ''", "default");
        let zone = pod(&spread(&[(1, "zone", "ScheduleAnyway", "")]), "foo: ''");
        assert_eq!(w.scores(&zone, &["node-a", "node-b", "node-x"]).unwrap(), [75, 75, 100]);
        // Hard constraints only: PreScore skips.
        assert_eq!(
            w.scores(&pod(&spread(&[(1, "zone", "DoNotSchedule", "")]), "foo: ''"), &["node-a"]),
            None
        );
    }

    #[test]
    fn system_defaults_spread_replica_set_pods_by_hostname() {
        // kube's "system defaulting, nodes don't have zone, pods match
        // service" (4/3/2/1), with the selector from the pod's labels.
        let mut w = World::new(None);
        for (name, count) in [("node-a", 4), ("node-b", 3), ("node-c", 2), ("node-d", 1)] {
            w.node(name, &format!("kubernetes.io/hostname: {name}"), "");
            w.pods(name, count, "foo: ''", "default");
        }
        let owned = PodInfo::new(pod_from_yaml(
            "metadata: {name: p, namespace: default, labels: {foo: ''}, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u}]}\nspec: {containers: []}",
        ))
        .unwrap();
        let all = ["node-a", "node-b", "node-c", "node-d"];
        assert_eq!(w.scores(&owned, &all).unwrap(), [44, 66, 77, 100]);
        assert!(!w.plugin.trivially_passes(&owned));
        // Not owned: no defaults, nothing to say.
        let loose = pod("", "foo: ''");
        assert_eq!(w.scores(&loose, &all), None);
        assert_eq!(w.filter(&loose), None);
        assert!(w.plugin.trivially_passes(&loose));
        // List defaulting with no constraints: owned pods pass trivially.
        let list = World::new(Some(serde_json::json!({"defaultingType": "List"})));
        assert!(list.plugin.trivially_passes(&owned));
    }

    #[test]
    fn pods_are_upserted_removed_and_terminating_ones_ignored() {
        let mut w = World::new(None);
        w.zoned(&FOUR);
        let p = pod(&spread(&[(1, "zone", "DoNotSchedule", "")]), "foo: ''");
        let at = Timestamp::UNIX_EPOCH;
        let existing = PodInfo::new(pod_from_yaml(
            "metadata: {name: e, namespace: default, labels: {foo: ''}}\nspec: {containers: []}",
        ))
        .unwrap();
        // Reported twice: counted once (zone1 1 → 1+1−0 > 1 only there).
        for _ in 0..2 {
            w.plugin.on_event(&ClusterEvent::PodAdded {
                pod: &existing,
                node: &w.nodes[0],
                assumed: true,
                at,
            });
        }
        w.pods("node-x", 1, "bar: ''", "default");
        assert_eq!(w.filter(&p).unwrap(), ["skew", "skew", "ok", "ok"]);
        w.plugin.on_event(&ClusterEvent::PodRemoved { pod: &existing, node: w.nodes[0].id() });
        assert_eq!(w.filter(&p).unwrap(), ["ok"; 4]);
        let terminating = PodInfo::new(pod_from_yaml(
            "metadata: {name: t, namespace: default, labels: {foo: ''}, deletionTimestamp: '2026-01-01T00:00:00Z'}\nspec: {containers: []}",
        ))
        .unwrap();
        w.plugin.on_event(&ClusterEvent::PodAdded {
            pod: &terminating,
            node: &w.nodes[0],
            assumed: false,
            at,
        });
        assert_eq!(w.filter(&p).unwrap(), ["ok"; 4]);
        // A removed node's pods go with it; the groups are freed.
        w.pods("node-y", 2, "foo: ''", "default");
        let y = w.nodes[3].id();
        w.plugin.on_event(&ClusterEvent::NodeRemoved { id: y, name: "node-y" });
        let cluster = w.plugin.read();
        let live: u32 = cluster.groups.iter().flatten().map(|g| g.refs).sum();
        assert_eq!(live, 1, "only node-x's bar pod is left");
    }

    #[test]
    fn relabelled_nodes_move_between_domains() {
        let mut w = World::new(None);
        w.zoned(&FOUR).pods("node-a", 1, "foo: ''", "default");
        let p = pod(&spread(&[(1, "zone", "DoNotSchedule", "")]), "foo: ''");
        assert_eq!(w.filter(&p).unwrap(), ["skew", "skew", "ok", "ok"]);
        // node-a moves to zone2 (the key tables are rebuilt): zone1 is
        // now the empty one.
        let node = node_from_yaml("metadata: {name: node-a, labels: {zone: zone2, node: node-a}}");
        let view = kolo_core::node::NodeView::from_node(&node).unwrap();
        let moved = NodeInfo::new(w.nodes[0].id(), Arc::new(node), view);
        w.plugin.on_event(&ClusterEvent::NodeUpdated(&moved));
        w.nodes[0] = moved;
        assert_eq!(w.filter(&p).unwrap(), ["skew", "ok", "skew", "skew"]);
    }

    #[test]
    fn malformed_constraints_are_refused_naming_the_field() {
        let w = World::new(None);
        let bad = pod(
            "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, nodeAffinityPolicy: Always}\n",
            "",
        );
        let mut state = CycleState::new();
        match w.plugin.pre_filter(&ctx(), &mut state, &bad) {
            PreFilterOutcome::Reject(r) => {
                assert_eq!(r.code, crate::framework::Code::Error);
                assert!(r.reason.contains("nodeAffinityPolicy"), "{r}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!w.plugin.trivially_passes(&bad));
    }
}
