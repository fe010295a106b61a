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
//! nodes*; so Score gives each node its id as raw score and Normalize,
//! which gets the feasible nodes' raw scores, computes kube's score there.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

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
}

impl Cluster {
    fn node_mut(&mut self, node: &NodeInfo) -> &mut NodeState {
        let i = node.id().index();
        if self.nodes.len() <= i {
            self.nodes.resize_with(i + 1, || None);
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
        let args: PodTopologySpreadArgs = decode_args(args, "PodTopologySpreadArgs")?;
        let defaults = args.default_constraints().map_err(PluginArgsError::from_validation)?;
        Ok(Arc::new(PodTopologySpread {
            system_defaulted: args.defaulting_type == super::args::DefaultingType::System,
            defaults,
            cluster: RwLock::default(),
        }))
    }

    fn read(&self) -> RwLockReadGuard<'_, Cluster> {
        self.cluster.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tallies matching pods per domain for `cs` over every node.
    fn tally(&self, pod: &PodInfo, cs: &[Constraint], how: Counting) -> Tally {
        let cluster = self.read();
        let k = cs.len().min(64);
        let cs = &cs[..k];
        let namespace = pod.view().namespace();
        // Which constraints count each group: one selector match per group.
        let matches: Vec<u64> = cluster
            .groups
            .iter()
            .map(|g| match g {
                Some(g) if &*g.namespace == namespace => cs
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.counts(&g.labels))
                    .fold(0, |bits, (i, _)| bits | (1 << i)),
                _ => 0,
            })
            .collect();
        let honor_affinity = cs.iter().any(|c| c.node_affinity_policy == Policy::Honor);
        let affinity = honor_affinity.then(|| node_affinity::required(pod.pod()));
        let honor_taints = cs.iter().any(|c| c.node_taints_policy == Policy::Honor);
        let tolerations =
            if honor_taints { tolerations::tolerations(pod.pod()) } else { Vec::new() };
        let slots = cluster.nodes.len();
        let mut t = Tally {
            k,
            domain_of: vec![NONE; slots * k],
            keys: vec![0; slots],
            own: vec![0; slots * k],
            counts: vec![Vec::new(); k],
            eligible: vec![Vec::new(); k],
        };
        let mut names: Vec<HashMap<&str, u32>> = vec![HashMap::new(); k];
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
            let labels = node.info.view().labels();
            let mut keys = 0u64;
            for (i, c) in cs.iter().enumerate() {
                if labels.get(&c.topology_key).is_some() {
                    keys |= 1 << i;
                }
            }
            t.keys[slot] = keys;
            let all_keys = t.has_all_keys(slot);
            let affinity_ok = affinity.as_ref().is_none_or(|a| a.matches(&node.info));
            let taints_ok = !honor_taints || tolerated(&node.info, &tolerations);
            for (i, c) in cs.iter().enumerate() {
                let value = match labels.get(&c.topology_key) {
                    Some(v) => v,
                    None if how.missing_as_empty => "",
                    None => continue,
                };
                let next = names[i].len() as u32;
                let d = *names[i].entry(value).or_insert(next);
                if d == next {
                    t.counts[i].push(0);
                    t.eligible[i].push(false);
                }
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
        if !within_skew(count, s.self_match[i], s.mins[i], c.max_skew) {
            return Err(Rejection::unschedulable(REASON).with_detail(format!(
                "{}: {} matching pods in {}, global minimum {}, maxSkew {}",
                c.topology_key,
                count,
                node.view().labels().get(&c.topology_key).unwrap_or(""),
                s.mins[i],
                c.max_skew
            )));
        }
    }
    Ok(())
}

/// kube's scores for the feasible nodes, from their ids: each constraint
/// weighted by the number of its domains among the feasible nodes.
fn final_scores(s: &ScoreState, ids: &mut [i64]) {
    let k = s.tally.k;
    let slot_ok = |id: i64| {
        let slot = id as usize;
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
                let d = s.tally.domain_of[id as usize * k + i];
                if d != NONE {
                    seen[d as usize] = true;
                }
            }
            topology_weight(seen.iter().filter(|&&x| x).count())
        })
        .collect();
    let raw: Vec<Option<i64>> = ids
        .iter()
        .map(|&id| {
            if !slot_ok(id) {
                return None;
            }
            let slot = id as usize;
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
    normalize(&raw, ids);
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
    /// The node's id: the score itself needs every feasible node (see the
    /// module documentation) and is computed in
    /// [`normalize`](Self::normalize).
    fn score(&self, _: &CycleContext, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> i64 {
        i64::from(node.id().0)
    }

    fn normalizes(&self) -> bool {
        true
    }

    fn normalize(&self, _: &CycleContext, state: &CycleState, pod: &PodInfo, scores: &mut [i64]) {
        let mut owned = None;
        let Some(s) = state.read::<ScoreState>().or_else(|| {
            owned = self.score_state(pod);
            owned.as_ref()
        }) else {
            scores.iter_mut().for_each(|s| *s = 0);
            return;
        };
        final_scores(s, scores);
    }
}

impl ClusterEventHandler for PodTopologySpread {
    fn on_event(&self, event: &ClusterEvent<'_>) {
        let mut cluster = self.cluster.write().unwrap_or_else(PoisonError::into_inner);
        match *event {
            ClusterEvent::NodeAdded(node) | ClusterEvent::NodeUpdated(node) => {
                cluster.node_mut(node).info = node.clone();
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
            }
            ClusterEvent::PodAdded { pod, node, .. } => cluster.add_pod(pod, node),
            ClusterEvent::PodRemoved { pod, node } => cluster.remove_pod(pod.key(), node.index()),
            ClusterEvent::NodeMetricUpdated { .. } | ClusterEvent::NodeMetricRemoved { .. } => {}
        }
    }
}
