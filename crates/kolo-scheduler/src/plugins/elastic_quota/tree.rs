//! The quota tree (spec §7.1, §7.3): the quotas from `ElasticQuota`
//! objects under the implicit root, the system and default quotas, which
//! pod maps to which quota, and each quota's Request and Used as its pods
//! come and go, propagated to the ancestors. Runtimes are computed lazily,
//! top-down, when a quota is checked ([`QuotaTree::refresh_runtime`]).
//!
//! The structure is rebuilt from the accepted objects on the first read
//! after a quota changed (quotas change rarely, pods constantly): pod
//! changes in between are only recorded, and the rebuild charges every pod
//! afresh. Between rebuilds a pod change costs one walk up its quota's
//! ancestors.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::names;
use kolo_core::resources::{ResourceSet, ResourceVector};

use super::runtime::{LevelChild, LevelScratch, level_runtimes_into};
use super::spec::{QuotaError, QuotaSpec};

/// The index of the root quota.
pub const ROOT: usize = 0;
/// The index of the system quota.
pub const SYSTEM: usize = 1;
/// The index of the default quota.
pub const DEFAULT: usize = 2;

/// What kind of quota a node of the tree is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaKind {
    /// `koordinator-root-quota`: the parent of the top-level quotas.
    Root,
    /// `koordinator-system-quota`: outside the runtime computation.
    System,
    /// `koordinator-default-quota`: outside the runtime computation.
    Default,
    /// A quota from an `ElasticQuota` object.
    User,
}

/// One quota of the tree, with its accounting.
#[derive(Debug, Clone)]
pub struct QuotaNode {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: QuotaKind,
    /// Its parent ([`ROOT`] for top-level quotas; `None` for the root, the
    /// system and the default quota).
    pub parent: Option<usize>,
    /// Its children, in name order.
    pub children: Vec<usize>,
    /// `spec.min`.
    pub min: ResourceVector,
    /// `spec.max`.
    pub max: ResourceVector,
    /// The shared weight.
    pub weight: ResourceVector,
    /// `allow-lent-resource`.
    pub lend: bool,
    /// The sum of its own pods' requests and its children's limited
    /// requests (§7.3 `ChildRequest`).
    pub child_request: ResourceVector,
    /// `ChildRequest`, or at least `min` when it does not lend.
    pub request: ResourceVector,
    /// `min(Request, Max)` over the keys of Request: what it asks of its
    /// parent (kept with `request`).
    limited: ResourceVector,
    /// What its assigned pods and its descendants' use.
    pub used: ResourceVector,
    /// What its and its descendants' non-preemptible pods request.
    pub non_preemptible_request: ResourceVector,
    /// What its and its descendants' assigned non-preemptible pods use.
    pub non_preemptible_used: ResourceVector,
    /// The runtime its parent last computed for it (all dimensions; see
    /// [`QuotaTree::refresh_runtime`] for the masked value).
    pub runtime: ResourceVector,
    /// Bumped whenever an input of its children's runtimes changes.
    calc_version: u64,
    /// The version and total its children's runtimes were computed for.
    computed: Option<(u64, ResourceVector)>,
}

impl QuotaNode {
    fn new(name: &str, kind: QuotaKind) -> QuotaNode {
        QuotaNode {
            name: name.to_string(),
            kind,
            parent: None,
            children: Vec::new(),
            min: ResourceVector::EMPTY,
            max: ResourceVector::EMPTY,
            weight: ResourceVector::EMPTY,
            lend: true,
            child_request: ResourceVector::EMPTY,
            request: ResourceVector::EMPTY,
            limited: ResourceVector::EMPTY,
            used: ResourceVector::EMPTY,
            non_preemptible_request: ResourceVector::EMPTY,
            non_preemptible_used: ResourceVector::EMPTY,
            runtime: ResourceVector::EMPTY,
            calc_version: 0,
            computed: None,
        }
    }

    fn from_spec(spec: &QuotaSpec, kind: QuotaKind) -> QuotaNode {
        QuotaNode {
            min: spec.min,
            max: spec.max,
            weight: spec.weight,
            lend: spec.lend,
            ..QuotaNode::new(&spec.name, kind)
        }
    }

    /// `min(Request, Max)` over the keys of Request: what it asks of its
    /// parent.
    pub fn limited_request(&self) -> &ResourceVector {
        &self.limited
    }

    /// Sets Request and what follows from it.
    fn set_request(&mut self, request: ResourceVector) {
        self.request = request;
        self.limited = limited(&request, &self.max);
    }

    /// The resources its max names.
    pub fn max_keys(&self) -> ResourceSet {
        self.max.names()
    }
}

/// `min(request, max)` per resource of `request` (a resource `max` lacks
/// is not limited).
pub fn limited(request: &ResourceVector, max: &ResourceVector) -> ResourceVector {
    request.min(max).mask(request.names())
}

/// What the tree keeps of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFacts {
    /// `namespace/name`.
    pub key: Box<str>,
    /// Its namespace.
    pub namespace: Box<str>,
    /// The `quota.scheduling.koordinator.sh/name` label.
    pub quota_label: Option<Box<str>>,
    /// Its effective requests (overhead included).
    pub request: ResourceVector,
    /// `quota.scheduling.koordinator.sh/preemptible: "false"`.
    pub non_preemptible: bool,
    /// Its priority value.
    pub priority: i32,
    /// A koord-prod or latency-sensitive pod (a best-effort pod never
    /// preempts it).
    pub protected: bool,
}

/// A pod as charged to a quota.
#[derive(Debug, Clone)]
pub struct PodCharge {
    /// The pod.
    pub facts: PodFacts,
    /// The quota it is charged to (valid while the structure is current).
    pub quota: usize,
    /// Reported pending (counts in Request).
    pub pending: bool,
    /// Assigned to a node (counts in Request and Used).
    pub assigned: bool,
}

impl PodCharge {
    fn counts(&self) -> bool {
        self.pending || self.assigned
    }
}

/// The quota tree and its accounting; see the module documentation.
#[derive(Debug, Clone)]
pub struct QuotaTree {
    accepted: BTreeMap<String, QuotaSpec>,
    /// Quotas refused only because their parent does not exist (yet):
    /// retried whenever the tree changes.
    deferred: BTreeMap<String, QuotaSpec>,
    system_max: ResourceVector,
    default_max: ResourceVector,
    cluster_total: ResourceVector,
    nodes: Vec<QuotaNode>,
    by_name: HashMap<String, usize>,
    /// Namespace → quota, from quotas named as their namespace.
    by_namespace: HashMap<String, usize>,
    /// Namespace → quota, from `namespaces` annotations.
    by_annotation: HashMap<String, usize>,
    pods: HashMap<Box<str>, PodCharge>,
    /// Per quota, the pods charged to it.
    members: Vec<HashSet<Box<str>>>,
    /// The structure must be rebuilt before the next read.
    stale: bool,
    /// How many levels' runtimes were computed so far.
    levels_computed: u64,
    /// The level computation's buffers, reused from level to level.
    scratch: LevelScratch,
}

impl QuotaTree {
    /// An empty tree: the root, and the system and default quotas with
    /// these maxes.
    pub fn new(system_max: ResourceVector, default_max: ResourceVector) -> QuotaTree {
        let mut tree = QuotaTree {
            accepted: BTreeMap::new(),
            deferred: BTreeMap::new(),
            system_max,
            default_max,
            cluster_total: ResourceVector::EMPTY,
            nodes: Vec::new(),
            by_name: HashMap::new(),
            by_namespace: HashMap::new(),
            by_annotation: HashMap::new(),
            pods: HashMap::new(),
            members: Vec::new(),
            stale: true,
            levels_computed: 0,
            scratch: LevelScratch::default(),
        };
        tree.rebuild();
        tree
    }

    /// Whether any quota besides the root, system and default ones exists:
    /// until one does, every pod is in the default quota, whose limit is
    /// empty, and the plugin has nothing to check.
    pub fn has_user_quotas(&self) -> bool {
        self.accepted.keys().any(|n| !is_special(n))
    }

    /// Adds or replaces a quota. Refused (the tree unchanged) when the
    /// parent is missing, is not a parent, is the system or default quota,
    /// or would make a cycle, or when the quota stops being a parent while
    /// it has children. A quota refused for a missing parent is retried
    /// whenever the tree changes.
    pub fn apply(&mut self, spec: QuotaSpec) -> Result<(), QuotaError> {
        self.deferred.remove(&spec.name);
        if spec.name == names::ROOT_QUOTA {
            // The root is implicit (the manager may still create its
            // object): its spec does not change the computation.
            return Ok(());
        }
        match self.check_structure(&spec) {
            Ok(()) => {}
            Err(Refusal::MissingParent(e)) => {
                self.deferred.insert(spec.name.clone(), spec);
                return Err(e);
            }
            Err(Refusal::Invalid(e)) => return Err(e),
        }
        self.accepted.insert(spec.name.clone(), spec);
        self.adopt_deferred();
        self.stale = true;
        Ok(())
    }

    /// Removes a quota (deleted). Its descendants lose their parent: they
    /// leave the tree until it comes back.
    pub fn remove(&mut self, name: &str) {
        self.deferred.remove(name);
        if self.accepted.remove(name).is_none() {
            return;
        }
        let mut orphans = vec![name.to_string()];
        while let Some(parent) = orphans.pop() {
            let children: Vec<String> = self
                .accepted
                .values()
                .filter(|s| s.parent == parent)
                .map(|s| s.name.clone())
                .collect();
            for child in children {
                if let Some(spec) = self.accepted.remove(&child) {
                    self.deferred.insert(child.clone(), spec);
                }
                orphans.push(child);
            }
        }
        self.stale = true;
    }

    /// The quotas refused for a missing parent, waiting for it.
    pub fn deferred(&self) -> impl Iterator<Item = &str> {
        self.deferred.keys().map(String::as_str)
    }

    /// Sets the cluster total (the sum of the nodes' allocatable).
    pub fn set_cluster_total(&mut self, total: ResourceVector) {
        self.cluster_total = total;
    }

    /// How many times a level's runtimes were computed (each parent's
    /// children at once): the cost a refresh paid, for tests and benches.
    pub fn levels_computed(&self) -> u64 {
        self.levels_computed
    }

    /// The cluster total.
    pub fn cluster_total(&self) -> &ResourceVector {
        &self.cluster_total
    }

    /// Whether `spec` fits the accepted tree.
    fn check_structure(&self, spec: &QuotaSpec) -> Result<(), Refusal> {
        let name = &spec.name;
        if !spec.is_parent && self.accepted.values().any(|s| &s.parent == name) {
            return Err(Refusal::Invalid(QuotaError::new(
                name,
                names::IS_PARENT,
                "the quota has children, so it must stay a parent (\"true\")",
            )));
        }
        if is_special(name) || spec.parent == names::ROOT_QUOTA {
            return Ok(());
        }
        if is_special(&spec.parent) {
            let message = format!("{} cannot have children", spec.parent);
            return Err(Refusal::Invalid(QuotaError::new(name, names::PARENT, message)));
        }
        let Some(parent) = self.accepted.get(&spec.parent) else {
            let message = format!("parent quota {} does not exist", spec.parent);
            return Err(Refusal::MissingParent(QuotaError::new(name, names::PARENT, message)));
        };
        if !parent.is_parent {
            let message = format!("parent quota {} is not a parent (is-parent)", spec.parent);
            return Err(Refusal::Invalid(QuotaError::new(name, names::PARENT, message)));
        }
        // A cycle would lead from the parent back to this quota.
        let mut at = &spec.parent;
        for _ in 0..=self.accepted.len() {
            if at == name {
                let message = format!("parent {} makes a cycle", spec.parent);
                return Err(Refusal::Invalid(QuotaError::new(name, names::PARENT, message)));
            }
            match self.accepted.get(at) {
                Some(s) if s.parent != names::ROOT_QUOTA => at = &s.parent,
                _ => return Ok(()),
            }
        }
        Ok(())
    }

    /// Accepts the deferred quotas whose parent now exists, until no more
    /// can be.
    fn adopt_deferred(&mut self) {
        loop {
            let ready: Vec<String> = self
                .deferred
                .values()
                .filter(|s| self.check_structure(s).is_ok())
                .map(|s| s.name.clone())
                .collect();
            if ready.is_empty() {
                return;
            }
            for name in ready {
                if let Some(spec) = self.deferred.remove(&name)
                    && self.check_structure(&spec).is_ok()
                {
                    self.accepted.insert(name, spec);
                }
            }
        }
    }

    /// Rebuilds the structure if a quota changed since the last read.
    pub fn ensure_current(&mut self) {
        if self.stale {
            self.rebuild();
        }
    }

    /// The nodes from the accepted specs, then every pod charged afresh.
    fn rebuild(&mut self) {
        let mut nodes = vec![
            QuotaNode::new(names::ROOT_QUOTA, QuotaKind::Root),
            QuotaNode {
                max: self.system_max,
                ..QuotaNode::new(names::SYSTEM_QUOTA, QuotaKind::System)
            },
            QuotaNode {
                max: self.default_max,
                ..QuotaNode::new(names::DEFAULT_QUOTA, QuotaKind::Default)
            },
        ];
        nodes[ROOT].lend = false;
        for (index, name) in [(SYSTEM, names::SYSTEM_QUOTA), (DEFAULT, names::DEFAULT_QUOTA)] {
            if let Some(spec) = self.accepted.get(name) {
                nodes[index] = QuotaNode::from_spec(spec, nodes[index].kind);
            }
        }
        let users: Vec<&QuotaSpec> =
            self.accepted.values().filter(|s| !is_special(&s.name)).collect();
        let mut by_name: HashMap<String, usize> =
            nodes.iter().enumerate().map(|(i, n)| (n.name.clone(), i)).collect();
        for spec in &users {
            by_name.insert(spec.name.clone(), nodes.len());
            nodes.push(QuotaNode::from_spec(spec, QuotaKind::User));
        }
        let (mut by_namespace, mut by_annotation) = (HashMap::new(), HashMap::new());
        for spec in self.accepted.values() {
            let i = by_name[&spec.name];
            if nodes[i].kind == QuotaKind::User {
                let parent = by_name.get(&spec.parent).copied().unwrap_or(ROOT);
                nodes[i].parent = Some(parent);
                nodes[parent].children.push(i);
            }
            if spec.name == spec.namespace {
                by_namespace.entry(spec.namespace.clone()).or_insert(i);
            }
            for ns in &spec.namespaces {
                by_annotation.entry(ns.clone()).or_insert(i);
            }
        }
        self.members = vec![HashSet::new(); nodes.len()];
        self.nodes = nodes;
        self.by_name = by_name;
        self.by_namespace = by_namespace;
        self.by_annotation = by_annotation;
        self.stale = false;
        self.charge_all();
    }

    /// Charges every pod from scratch: own amounts first, then bottom-up
    /// sums (§7.3 applied to the whole tree at once).
    fn charge_all(&mut self) {
        let mut own = vec![Own::default(); self.nodes.len()];
        let keys: Vec<Box<str>> = self.pods.keys().cloned().collect();
        for key in keys {
            let quota = {
                let facts = &self.pods[&key].facts;
                self.quota_for(facts.quota_label.as_deref(), &facts.namespace)
            };
            let charge = self.pods.get_mut(&key).expect("key taken from the map");
            charge.quota = quota;
            let masked = charge.facts.request.mask(self.nodes[quota].max_keys());
            let o = &mut own[quota];
            o.request += masked;
            if charge.facts.non_preemptible {
                o.np_request += masked;
            }
            if charge.assigned {
                o.used += masked;
                if charge.facts.non_preemptible {
                    o.np_used += masked;
                }
            }
            self.members[quota].insert(key);
        }
        // Children before parents: deepest first.
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.depth(i)));
        for i in order {
            let mut sums = own[i].clone();
            for &c in &self.nodes[i].children {
                let child = &self.nodes[c];
                sums.request += *child.limited_request();
                sums.used += child.used;
                sums.np_request += child.non_preemptible_request;
                sums.np_used += child.non_preemptible_used;
            }
            let node = &mut self.nodes[i];
            node.child_request = sums.request;
            node.set_request(own_request(node));
            node.used = sums.used;
            node.non_preemptible_request = sums.np_request;
            node.non_preemptible_used = sums.np_used;
        }
    }

    fn depth(&self, mut i: usize) -> usize {
        let mut depth = 0;
        while let Some(p) = self.nodes[i].parent {
            depth += 1;
            i = p;
        }
        depth
    }

    /// The quota a pod maps to (§7.1): its label's quota if it exists,
    /// else the quota named as its namespace in that namespace, else the
    /// quota whose `namespaces` annotation lists it, else the default
    /// quota. Call [`ensure_current`](Self::ensure_current) first.
    pub fn quota_for(&self, label: Option<&str>, namespace: &str) -> usize {
        if let Some(label) = label {
            // An unknown label falls back to the default quota, not to
            // the namespace rules.
            return match self.by_name.get(label) {
                Some(&i) if i != ROOT => i,
                _ => DEFAULT,
            };
        }
        self.by_namespace
            .get(namespace)
            .or_else(|| self.by_annotation.get(namespace))
            .copied()
            .unwrap_or(DEFAULT)
    }

    /// A quota's index by name (current after
    /// [`ensure_current`](Self::ensure_current)).
    pub fn index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The quotas (current after [`ensure_current`](Self::ensure_current)).
    pub fn nodes(&self) -> &[QuotaNode] {
        &self.nodes
    }

    /// One quota.
    pub fn node(&self, i: usize) -> &QuotaNode {
        &self.nodes[i]
    }

    /// A pod's charge.
    pub fn pod(&self, key: &str) -> Option<&PodCharge> {
        self.pods.get(key)
    }

    /// The pods charged to quota `i` (current structure).
    pub fn members(&self, i: usize) -> impl Iterator<Item = &PodCharge> {
        self.members[i].iter().filter_map(|k| self.pods.get(k))
    }

    /// The ancestors of `i` below the root, nearest first.
    pub fn ancestors(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.nodes[i].parent, |&p| self.nodes[p].parent)
            .filter(|&p| p != ROOT)
    }

    /// A pending pod appeared or changed.
    pub fn pod_pending(&mut self, facts: PodFacts) {
        let assigned = self.pods.get(&facts.key).is_some_and(|c| c.assigned);
        self.upsert(facts, true, assigned);
    }

    /// A pod stopped being pending (deleted, finished, or bound: a bound
    /// pod stays charged while it is assigned).
    pub fn pod_not_pending(&mut self, key: &str) {
        self.set_flags(key, |c| c.pending = false);
    }

    /// A pod was assigned to a node (Reserve, or seen bound).
    pub fn pod_assigned(&mut self, facts: PodFacts) {
        let pending = self.pods.get(&facts.key).is_some_and(|c| c.pending);
        self.upsert(facts, pending, true);
    }

    /// A pod is no longer assigned (Unreserve, deleted, a failed bind).
    pub fn pod_unassigned(&mut self, key: &str) {
        self.set_flags(key, |c| c.assigned = false);
    }

    fn upsert(&mut self, facts: PodFacts, pending: bool, assigned: bool) {
        if let Some(old) = self.pods.get(&facts.key)
            && old.facts == facts
            && old.pending == pending
            && old.assigned == assigned
        {
            return;
        }
        self.uncharge(&facts.key);
        let quota = if self.stale {
            DEFAULT
        } else {
            self.quota_for(facts.quota_label.as_deref(), &facts.namespace)
        };
        let charge = PodCharge { facts, quota, pending, assigned };
        self.charge(charge);
    }

    fn set_flags(&mut self, key: &str, change: impl FnOnce(&mut PodCharge)) {
        let Some(mut charge) = self.uncharge(key) else { return };
        change(&mut charge);
        if charge.counts() {
            self.charge(charge);
        }
    }

    /// Takes a pod's charge out of its quota (if charged) and returns it.
    fn uncharge(&mut self, key: &str) -> Option<PodCharge> {
        let charge = self.pods.remove(key)?;
        if !self.stale {
            self.members[charge.quota].remove(key);
            self.account(&charge, false);
        }
        Some(charge)
    }

    /// Charges a pod to its quota (when the structure is current; a
    /// rebuild charges it otherwise).
    fn charge(&mut self, charge: PodCharge) {
        if !charge.counts() {
            return;
        }
        if !self.stale {
            self.members[charge.quota].insert(charge.facts.key.clone());
            self.account(&charge, true);
        }
        self.pods.insert(charge.facts.key.clone(), charge);
    }

    /// Adds (or takes out) a pod's request and use, up the tree.
    fn account(&mut self, charge: &PodCharge, add: bool) {
        let q = charge.quota;
        let masked = charge.facts.request.mask(self.nodes[q].max_keys());
        let delta = if add { masked } else { ResourceVector::EMPTY - masked };
        let np = charge.facts.non_preemptible;
        self.add_request(q, delta);
        let mut at = Some(q);
        while let Some(i) = at {
            let node = &mut self.nodes[i];
            if np {
                node.non_preemptible_request += delta;
            }
            if charge.assigned {
                node.used += delta;
                if np {
                    node.non_preemptible_used += delta;
                }
            }
            at = node.parent;
        }
    }

    /// §7.3: adds `delta` to a quota's ChildRequest (clamped at 0) and
    /// passes the change of its limited request up, stopping at the root;
    /// each parent whose children's requests changed must recompute their
    /// runtimes.
    fn add_request(&mut self, q: usize, mut delta: ResourceVector) {
        let mut at = q;
        loop {
            let node = &mut self.nodes[at];
            let old = node.limited;
            node.child_request = (node.child_request + delta).clamp_non_negative();
            node.set_request(own_request(node));
            let new = node.limited;
            let Some(parent) = node.parent else { return };
            if new == old {
                return;
            }
            self.nodes[parent].calc_version += 1;
            delta = new - old;
            at = parent;
        }
    }

    /// The root's runtime: the cluster total less what the system and
    /// default quotas use.
    pub fn root_total(&self) -> ResourceVector {
        self.cluster_total - self.nodes[SYSTEM].used - self.nodes[DEFAULT].used
    }

    /// §7.4 `RefreshRuntime`: computes, top-down and only where an input
    /// changed, the runtimes on the path from the root to `q`, and returns
    /// `q`'s, masked to its max. The system and default quotas have none
    /// (empty).
    pub fn refresh_runtime(&mut self, q: usize, scale_min: bool) -> ResourceVector {
        self.ensure_current();
        if self.nodes[q].kind != QuotaKind::User {
            return ResourceVector::EMPTY;
        }
        let mut path = vec![q];
        while let Some(p) = self.nodes[*path.last().expect("not empty")].parent {
            path.push(p);
        }
        path.reverse();
        let mut total = self.root_total();
        self.nodes[ROOT].runtime = total;
        for pair in path.windows(2) {
            self.ensure_level(pair[0], &total, scale_min);
            total = self.nodes[pair[1]].runtime;
        }
        self.nodes[q].runtime.mask(self.nodes[q].max_keys())
    }

    /// Recomputes the runtimes of `p`'s children unless they were computed
    /// for the same inputs and total.
    fn ensure_level(&mut self, p: usize, total: &ResourceVector, scale_min: bool) {
        let version = self.nodes[p].calc_version;
        if self.nodes[p].computed.as_ref().is_some_and(|(v, t)| *v == version && t == total) {
            return;
        }
        let children = &self.nodes[p].children;
        let level: Vec<LevelChild<'_>> = children
            .iter()
            .map(|&c| {
                let n = &self.nodes[c];
                LevelChild {
                    name: &n.name,
                    request: &n.limited,
                    min: &n.min,
                    weight: &n.weight,
                    max_keys: n.max_keys(),
                    lend: n.lend,
                }
            })
            .collect();
        level_runtimes_into(total, &level, scale_min, &mut self.scratch);
        self.levels_computed += 1;
        let dims = self.scratch.dims();
        for k in 0..self.nodes[p].children.len() {
            let c = self.nodes[p].children[k];
            let runtime = &mut self.nodes[c].runtime;
            // The same dimensions as last time (the usual case) are simply
            // overwritten.
            if runtime.names() != dims {
                *runtime = ResourceVector::EMPTY;
            }
            for (dim, column) in self.scratch.columns() {
                runtime.set(dim, column[k]);
            }
        }
        self.nodes[p].computed = Some((version, *total));
    }
}

/// Why a quota was refused by the structure checks.
enum Refusal {
    /// Its parent does not exist (yet): keep it for later.
    MissingParent(QuotaError),
    /// Anything else.
    Invalid(QuotaError),
}

/// A quota's own pods' sums, while charging from scratch.
#[derive(Debug, Clone, Default)]
struct Own {
    request: ResourceVector,
    used: ResourceVector,
    np_request: ResourceVector,
    np_used: ResourceVector,
}

/// §7.3 step 3: Request is ChildRequest, or at least min when the quota
/// does not lend.
fn own_request(node: &QuotaNode) -> ResourceVector {
    if node.lend { node.child_request } else { node.child_request.max(&node.min) }
}

/// The root, system and default quotas.
pub fn is_special(name: &str) -> bool {
    name == names::ROOT_QUOTA || name == names::SYSTEM_QUOTA || name == names::DEFAULT_QUOTA
}

#[cfg(test)]
mod tests {
    use kolo_core::resources::ResourceName::Cpu;

    use super::super::spec::testing::object;
    use super::*;

    fn cpu(milli: i64) -> ResourceVector {
        ResourceVector::EMPTY.with(Cpu, milli)
    }

    fn tree() -> QuotaTree {
        QuotaTree::new(cpu(i64::MAX), cpu(i64::MAX))
    }

    /// A quota with cpu min and max (cores) and labels.
    fn spec(name: &str, min: &str, max: &str, labels: &[(&str, &str)]) -> QuotaSpec {
        let min: &[(&str, &str)] = if min.is_empty() { &[] } else { &[("cpu", min)] };
        QuotaSpec::from_object(&object(name, "ns", min, &[("cpu", max)], labels, &[])).unwrap()
    }

    fn parent_label(parent: &str) -> [(&'static str, &str); 1] {
        [(names::PARENT, parent)]
    }

    const IS_PARENT: [(&str, &str); 1] = [(names::IS_PARENT, "true")];

    fn pod(key: &str, label: Option<&str>, milli: i64) -> PodFacts {
        let (namespace, _) = key.split_once('/').unwrap();
        PodFacts {
            key: key.into(),
            namespace: namespace.into(),
            quota_label: label.map(Into::into),
            request: cpu(milli),
            non_preemptible: false,
            priority: 0,
            protected: false,
        }
    }

    fn node<'a>(tree: &'a mut QuotaTree, name: &str) -> &'a QuotaNode {
        tree.ensure_current();
        let i = tree.index(name).unwrap();
        tree.node(i)
    }

    #[test]
    fn structure_errors_are_refused_and_the_last_good_state_kept() {
        let mut t = tree();
        t.apply(spec("p", "", "10", &IS_PARENT)).unwrap();
        t.apply(spec("leaf", "", "10", &[])).unwrap();
        // (the refused spec, the field, part of the message)
        let cases = [
            (spec("a", "", "1", &parent_label("leaf")), names::PARENT, "not a parent"),
            (
                spec("a", "", "1", &parent_label(names::DEFAULT_QUOTA)),
                names::PARENT,
                "cannot have children",
            ),
            (spec("p", "", "10", &[]), names::IS_PARENT, "has children"),
        ];
        let labels = [(names::PARENT, "p"), (names::IS_PARENT, "true")];
        t.apply(spec("c", "", "1", &labels)).unwrap();
        for (bad, field, text) in cases {
            let err = t.apply(bad.clone()).unwrap_err();
            assert_eq!(
                (err.quota.as_str(), err.field.as_str()),
                (bad.name.as_str(), field),
                "{err}"
            );
            assert!(err.message.contains(text), "{err}");
        }
        // A cycle: p under c, which is under p. p keeps its old parent.
        let labels = [(names::PARENT, "c"), (names::IS_PARENT, "true")];
        let err = t.apply(spec("p", "", "10", &labels)).unwrap_err();
        assert!(err.message.contains("cycle"), "{err}");
        t.ensure_current();
        let c = t.index("c").unwrap();
        assert_eq!(t.node(c).parent, t.index("p"));
        assert_eq!(t.node(t.index("p").unwrap()).parent, Some(ROOT));
        // p is still a parent; leaf kept too.
        assert!(t.index("leaf").is_some());
    }

    #[test]
    fn a_quota_waits_for_its_parent() {
        let mut t = tree();
        let err = t.apply(spec("child", "", "1", &parent_label("later"))).unwrap_err();
        assert_eq!(err.field, names::PARENT);
        assert!(err.message.contains("does not exist"), "{err}");
        t.ensure_current();
        assert_eq!(t.index("child"), None);
        assert_eq!(t.deferred().collect::<Vec<_>>(), ["child"]);
        t.apply(spec("later", "", "5", &IS_PARENT)).unwrap();
        t.ensure_current();
        let child = t.index("child").unwrap();
        assert_eq!(t.node(child).parent, t.index("later"));
        // The parent goes: the child leaves the tree again.
        t.remove("later");
        t.ensure_current();
        assert_eq!(t.index("child"), None);
        assert_eq!(t.deferred().collect::<Vec<_>>(), ["child"]);
    }

    #[test]
    fn pods_map_by_label_namespace_annotation_then_default() {
        let mut t = tree();
        t.apply(spec("team", "", "10", &[])).unwrap();
        let named = QuotaSpec::from_object(&object("ns1", "ns1", &[], &[], &[], &[])).unwrap();
        t.apply(named).unwrap();
        let listed = object("listed", "x", &[], &[], &[], &[(names::NAMESPACES, r#"["ns2"]"#)]);
        t.apply(QuotaSpec::from_object(&listed).unwrap()).unwrap();
        // Named as a namespace, but living in another: no mapping.
        t.apply(QuotaSpec::from_object(&object("ns4", "other", &[], &[], &[], &[])).unwrap())
            .unwrap();
        t.ensure_current();
        let cases = [
            (Some("team"), "ns1", "team"),
            (Some("nope"), "ns1", names::DEFAULT_QUOTA),
            (Some(names::ROOT_QUOTA), "ns1", names::DEFAULT_QUOTA),
            (Some(names::SYSTEM_QUOTA), "ns1", names::SYSTEM_QUOTA),
            (None, "ns1", "ns1"),
            (None, "ns2", "listed"),
            (None, "ns3", names::DEFAULT_QUOTA),
            (None, "ns4", names::DEFAULT_QUOTA),
        ];
        for (label, ns, want) in cases {
            let got = t.quota_for(label, ns);
            assert_eq!(t.node(got).name, want, "{label:?} {ns}");
        }
    }

    /// §7.3 by hand: P (max 100) over A (max 30) and B (min 20, max 50,
    /// not lending).
    #[test]
    fn request_propagates_limited_to_the_parent() {
        let mut t = tree();
        t.apply(spec("p", "", "100", &IS_PARENT)).unwrap();
        t.apply(spec("a", "", "30", &parent_label("p"))).unwrap();
        let labels = [(names::PARENT, "p"), (names::ALLOW_LENT_RESOURCE, "false")];
        t.apply(spec("b", "20", "50", &labels)).unwrap();
        // B asks its parent for its min even with no pods: P = 0 + 20.
        assert_eq!(node(&mut t, "p").request, cpu(20_000));
        t.pod_pending(pod("ns/a1", Some("a"), 40_000));
        // A requests 40 but asks P for its max 30: P = 30 + 20.
        assert_eq!(node(&mut t, "a").request, cpu(40_000));
        assert_eq!(node(&mut t, "p").request, cpu(50_000));
        // B's 10 stays below its min: nothing changes above it.
        t.pod_pending(pod("ns/b1", Some("b"), 10_000));
        assert_eq!(node(&mut t, "b").request, cpu(20_000));
        assert_eq!(node(&mut t, "p").request, cpu(50_000));
        // B's 25 more: 35 > min; P = 30 + 35.
        t.pod_pending(pod("ns/b2", Some("b"), 25_000));
        assert_eq!(node(&mut t, "p").request, cpu(65_000));
        // A's pod goes: P = 0 + 35.
        t.pod_not_pending("ns/a1");
        assert_eq!(node(&mut t, "a").request, cpu(0));
        assert_eq!(node(&mut t, "p").request, cpu(35_000));
        // A rebuild (any quota change) gives the same sums from scratch.
        t.apply(spec("other", "", "1", &[])).unwrap();
        assert_eq!(node(&mut t, "p").request, cpu(35_000));
        assert_eq!(node(&mut t, "b").child_request, cpu(35_000));
    }

    #[test]
    fn used_follows_assignment_and_propagates() {
        let mut t = tree();
        t.apply(spec("p", "", "100", &IS_PARENT)).unwrap();
        t.apply(spec("a", "", "30", &parent_label("p"))).unwrap();
        t.ensure_current();
        let a1 = pod("ns/a1", Some("a"), 4_000);
        t.pod_pending(a1.clone());
        assert_eq!((node(&mut t, "a").used.cpu(), node(&mut t, "a").request.cpu()), (0, 4_000));
        // Reserve: assigned; its binding seen: pending no more, still used.
        t.pod_assigned(a1.clone());
        t.pod_not_pending("ns/a1");
        t.pod_assigned(a1.clone());
        assert_eq!(node(&mut t, "a").used.cpu(), 4_000);
        assert_eq!(node(&mut t, "p").used.cpu(), 4_000);
        assert_eq!(node(&mut t, "a").request.cpu(), 4_000);
        // Deleted: gone from both.
        t.pod_unassigned("ns/a1");
        assert_eq!((node(&mut t, "a").used.cpu(), node(&mut t, "a").request.cpu()), (0, 0));
        assert_eq!(node(&mut t, "p").used.cpu(), 0);
        // A failed bind: unreserved while pending: request stays.
        t.pod_pending(a1.clone());
        t.pod_assigned(a1);
        t.pod_unassigned("ns/a1");
        assert_eq!((node(&mut t, "a").used.cpu(), node(&mut t, "a").request.cpu()), (0, 4_000));
    }

    /// Root total 10 cores less the default quota's 2 in use: 8, shared
    /// 1:3 between two quotas asking for 8 each; then one asks for 1 and
    /// the other gets the rest (the lazy refresh sees the change).
    #[test]
    fn runtimes_share_the_root_total_and_follow_changes() {
        let mut t = tree();
        t.set_cluster_total(cpu(10_000));
        let weight = |w: &str| format!(r#"{{"cpu":"{w}"}}"#);
        for (name, w) in [("a", "1"), ("b", "3")] {
            let o = object(
                name,
                "ns",
                &[],
                &[("cpu", "10")],
                &[],
                &[(names::SHARED_WEIGHT, &weight(w))],
            );
            t.apply(QuotaSpec::from_object(&o).unwrap()).unwrap();
        }
        t.pod_assigned(pod("ns/sys", None, 2_000));
        t.pod_pending(pod("ns/a1", Some("a"), 8_000));
        t.pod_pending(pod("ns/b1", Some("b"), 8_000));
        t.ensure_current();
        let (a, b) = (t.index("a").unwrap(), t.index("b").unwrap());
        assert_eq!(t.root_total(), cpu(8_000));
        assert_eq!(t.refresh_runtime(a, true), cpu(2_000));
        assert_eq!(t.refresh_runtime(b, true), cpu(6_000));
        t.pod_not_pending("ns/a1");
        t.pod_pending(pod("ns/a2", Some("a"), 1_000));
        assert_eq!(t.refresh_runtime(b, true), cpu(7_000));
        assert_eq!(t.refresh_runtime(a, true), cpu(1_000));
        // The default quota's pod goes: 10 left, b is capped by its 8.
        t.pod_unassigned("ns/sys");
        assert_eq!(t.refresh_runtime(b, true), cpu(8_000));
        // The special quotas have no runtime.
        assert_eq!(t.refresh_runtime(DEFAULT, true), ResourceVector::EMPTY);
    }

    /// Root over p1 and p2 (parents), each over two leaves: a refresh
    /// computes only the levels on its path whose inputs changed.
    #[test]
    fn refresh_is_lazy_and_top_down() {
        let mut t = tree();
        t.set_cluster_total(cpu(100_000));
        for p in ["p1", "p2"] {
            t.apply(spec(p, "", "100", &IS_PARENT)).unwrap();
            for leaf in ["a", "b"] {
                t.apply(spec(&format!("{p}-{leaf}"), "", "100", &parent_label(p))).unwrap();
            }
        }
        t.pod_pending(pod("ns/x", Some("p1-a"), 10_000));
        t.ensure_current();
        let (p1a, p1b, p2a) =
            (t.index("p1-a").unwrap(), t.index("p1-b").unwrap(), t.index("p2-a").unwrap());
        let computed = |t: &QuotaTree| t.levels_computed();
        t.refresh_runtime(p1a, true);
        assert_eq!(computed(&t), 2); // the root's children, then p1's
        t.refresh_runtime(p1a, true);
        t.refresh_runtime(p1b, true);
        assert_eq!(computed(&t), 2); // nothing changed on the path
        t.refresh_runtime(p2a, true);
        assert_eq!(computed(&t), 3); // p2's children, first time
        // A pod for p2-a: p2's level and the root's change; p1's total
        // (its runtime) does not (the cluster has room for both), so p1's
        // level stays.
        t.pod_pending(pod("ns/y", Some("p2-a"), 5_000));
        assert_eq!(t.refresh_runtime(p1a, true), cpu(10_000));
        assert_eq!(computed(&t), 4); // the root's level only
        assert_eq!(t.refresh_runtime(p2a, true), cpu(5_000));
        assert_eq!(computed(&t), 5); // p2's level
    }
}
