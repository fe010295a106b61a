//! The agent's bounded history of QoS actions, as data: what it changed,
//! when, on what, from which value to which, and why.
//!
//! Each QoS round plans every write it wants in force (the executor skips
//! values already set), so the history keeps only *changes*: a write whose
//! value differs from the last one recorded for its cgroup file, an
//! eviction carried out or refused, an eviction the rate limit newly held
//! back. A repeated identical decision adds nothing, and the ring keeps the
//! newest [`DEFAULT_CAPACITY`] entries. Beside the ring, [`Current`] keeps
//! the value in force of each QoS-class cgroup file (the BE suppression:
//! its CFS quota, its cpuset) and since when, however many per-pod entries
//! came after it.
//!
//! `kolo agent cluster --listen` serves it as `/actions` (see
//! `docs/agent.md`); `kolo why` reads it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use kolo_core::CpuMem;
use kolo_core::clock::Timestamp;
use serde::{Deserialize, Serialize};

use crate::cgroup::{CgroupDir, Resource};
use crate::qos::{Figures, NodeState, PlannedEviction, PlannedWrite, PodState, Probe, RoundPlan};

/// How many actions the agent keeps by default.
pub const DEFAULT_CAPACITY: usize = 256;

/// What an action was done to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Target {
    /// A QoS class's cgroup (`BE`: the kubepods BestEffort directory).
    QosClass {
        /// The class.
        class: String,
    },
    /// A pod (or one of its containers).
    Pod {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// UID.
        uid: String,
        /// The container, for a container's cgroup.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        container: Option<String>,
    },
    /// Another cgroup directory (relative to the hierarchy root).
    Cgroup {
        /// The directory.
        path: String,
    },
}

impl std::fmt::Display for Target {
    /// `BE`, `namespace/name[/container]`, or the cgroup path.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::QosClass { class } => f.write_str(class),
            Target::Pod { namespace, name, container: Some(c), .. } => {
                write!(f, "{namespace}/{name}/{c}")
            }
            Target::Pod { namespace, name, container: None, .. } => write!(f, "{namespace}/{name}"),
            Target::Cgroup { path } => f.write_str(path),
        }
    }
}

/// What kind of action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ActionKind {
    /// A cgroup value changed.
    Write,
    /// A pod was evicted (the eviction call succeeded).
    Evicted,
    /// An eviction was asked for and failed (e.g. a PodDisruptionBudget).
    EvictionFailed,
    /// An eviction the rate limit held back.
    HeldBack,
}

impl ActionKind {
    /// The name `/actions` and the metrics use.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Write => "write",
            ActionKind::Evicted => "evicted",
            ActionKind::EvictionFailed => "evictionFailed",
            ActionKind::HeldBack => "heldBack",
        }
    }
}

/// One action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// Its number, from 1, increasing for the agent's lifetime (a gap at
    /// the start of the ring says how many were dropped).
    pub seq: u64,
    /// When (RFC 3339).
    pub time: String,
    /// What kind.
    pub kind: ActionKind,
    /// The strategy (`cpuSuppress`, `memoryEvict`, ...).
    pub strategy: String,
    /// What it was done to.
    pub target: Target,
    /// The cgroup resource written (`cpu.cfs_quota_us`, ...); absent for
    /// evictions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The value before, as the v1 file holds it (`-1`: unlimited); absent
    /// when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The value after; absent for evictions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// Why, with the numbers, as the strategy said it.
    pub reason: String,
    /// The numbers, typed.
    pub figures: Figures,
    /// The node's usage in the round that decided it.
    pub node_usage: Usage,
    /// A fast-path round (between collections) decided it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fast: bool,
}

/// CPU and memory use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Milli-cores.
    pub cpu_milli: i64,
    /// Bytes.
    pub memory_bytes: i64,
}

impl From<CpuMem> for Usage {
    fn from(u: CpuMem) -> Usage {
        Usage { cpu_milli: u.cpu, memory_bytes: u.memory }
    }
}

/// The value in force of one QoS-class cgroup file, and since when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Current {
    /// The QoS class (or cgroup).
    pub target: Target,
    /// The resource.
    pub resource: String,
    /// The value.
    pub value: String,
    /// Since when (RFC 3339): the action that set it.
    pub since: String,
    /// The [`Action::seq`] that set it.
    pub seq: u64,
    /// The strategy that set it.
    pub strategy: String,
    /// Why.
    pub reason: String,
    /// The numbers.
    pub figures: Figures,
}

/// What `/actions` answers: the values in force per QoS class and the
/// newest actions, oldest first.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryView {
    /// The node.
    pub node: String,
    /// The agent plans but writes and evicts nothing (`--dry-run`).
    pub dry_run: bool,
    /// How many actions the ring keeps.
    pub capacity: usize,
    /// Actions recorded since the agent started (more than `actions`
    /// holds once the ring is full).
    pub total: u64,
    /// The QoS-class cgroup values in force, and since when.
    pub current: Vec<Current>,
    /// The newest actions, oldest first.
    pub actions: Vec<Action>,
}

/// The outcome of one eviction of a round, as the driver reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictionOutcome {
    /// Carried out.
    Done,
    /// Refused or failed.
    Failed,
}

/// The bounded history.
#[derive(Debug, Clone)]
pub struct ActionHistory {
    node: String,
    dry_run: bool,
    capacity: usize,
    ring: VecDeque<Action>,
    total: u64,
    /// The last value recorded per cgroup file (pruned each slow round to
    /// the files the round still writes).
    last: BTreeMap<(CgroupDir, Resource), String>,
    /// The values in force of QoS-class files.
    current: BTreeMap<(Target, String), Current>,
    /// The pods held back at the last slow round (a pod still held back is
    /// not recorded again).
    held: BTreeSet<String>,
    /// Actions recorded since start, by (strategy, kind, fast path): what
    /// `kolo_agent_qos_actions_total` exports (never dropped).
    counts: BTreeMap<(String, ActionKind, bool), u64>,
}

impl ActionHistory {
    /// An empty history of `node` keeping `capacity` actions (at least 1).
    pub fn new(node: impl Into<String>, capacity: usize, dry_run: bool) -> ActionHistory {
        ActionHistory {
            node: node.into(),
            dry_run,
            capacity: capacity.max(1),
            ring: VecDeque::new(),
            total: 0,
            last: BTreeMap::new(),
            current: BTreeMap::new(),
            held: BTreeSet::new(),
            counts: BTreeMap::new(),
        }
    }

    /// Actions recorded since start, by (strategy, kind, decided by a
    /// fast-path round).
    pub fn counts(&self) -> &BTreeMap<(String, ActionKind, bool), u64> {
        &self.counts
    }

    /// The QoS-class cgroup values in force.
    pub fn current(&self) -> impl Iterator<Item = &Current> {
        self.current.values()
    }

    /// Records what `round`, planned on `node` at `now`, changed; `evictions`
    /// are the outcomes of its evictions (by pod UID; one not listed was not
    /// attempted: its pod was gone).
    pub fn record(
        &mut self,
        now: Timestamp,
        node: &NodeState,
        round: &RoundPlan,
        evictions: &BTreeMap<String, EvictionOutcome>,
    ) {
        let fast = round.probe == Probe::Fast;
        let usage = Usage::from(node.usage);
        for w in &round.plan.writes {
            self.record_write(now, node, w, usage, fast);
        }
        for e in &round.plan.evictions {
            let kind = match evictions.get(&e.uid) {
                Some(EvictionOutcome::Done) => ActionKind::Evicted,
                Some(EvictionOutcome::Failed) => ActionKind::EvictionFailed,
                None => continue,
            };
            self.push(eviction_action(now, e, kind, node, usage, fast));
        }
        if fast {
            return;
        }
        let held = round.held_back.iter().map(|e| e.uid.clone()).collect();
        let before = std::mem::replace(&mut self.held, held);
        for e in round.held_back.iter().filter(|e| !before.contains(&e.uid)) {
            self.push(eviction_action(now, e, ActionKind::HeldBack, node, usage, fast));
        }
        let written: BTreeSet<(&CgroupDir, Resource)> =
            round.plan.writes.iter().map(|w| (&w.write.dir, w.write.resource)).collect();
        self.last.retain(|(dir, resource), _| written.contains(&(dir, *resource)));
    }

    /// Records `w` if it changes its file's value; a QoS-class file's new
    /// value becomes the one in force.
    fn record_write(
        &mut self,
        now: Timestamp,
        node: &NodeState,
        w: &PlannedWrite,
        usage: Usage,
        fast: bool,
    ) {
        let key = (w.write.dir.clone(), w.write.resource);
        let value = w.write.value.to_string();
        let old = match self.last.get(&key) {
            Some(v) if *v == value => return,
            Some(v) => Some(v.clone()),
            None => be_value(node, &w.write.dir, w.write.resource),
        };
        self.last.insert(key, value.clone());
        if old.as_deref() == Some(value.as_str()) {
            return;
        }
        let target = target_of(node, &w.write.dir);
        let resource = w.write.resource.name().to_string();
        let action = self.push(Action {
            seq: 0,
            time: now.to_string(),
            kind: ActionKind::Write,
            strategy: w.strategy.to_string(),
            target: target.clone(),
            resource: Some(resource.clone()),
            old,
            new: Some(value.clone()),
            reason: w.reason.clone(),
            figures: w.figures,
            node_usage: usage,
            fast,
        });
        if matches!(target, Target::QosClass { .. }) {
            let current = Current {
                target: target.clone(),
                resource: resource.clone(),
                value,
                since: action.time.clone(),
                seq: action.seq,
                strategy: action.strategy.clone(),
                reason: action.reason.clone(),
                figures: action.figures,
            };
            self.current.insert((target, resource), current);
        }
    }

    /// Adds `action` (numbered here), dropping the oldest beyond the bound.
    fn push(&mut self, mut action: Action) -> &Action {
        *self.counts.entry((action.strategy.clone(), action.kind, action.fast)).or_default() += 1;
        self.total += 1;
        action.seq = self.total;
        if self.ring.len() == self.capacity {
            self.ring.pop_front();
        }
        self.ring.push_back(action);
        self.ring.back().expect("just pushed")
    }

    /// The actions held, oldest first.
    pub fn actions(&self) -> impl Iterator<Item = &Action> {
        self.ring.iter()
    }

    /// The history as `/actions` serves it.
    pub fn view(&self) -> HistoryView {
        HistoryView {
            node: self.node.clone(),
            dry_run: self.dry_run,
            capacity: self.capacity,
            total: self.total,
            current: self.current.values().cloned().collect(),
            actions: self.ring.iter().cloned().collect(),
        }
    }
}

fn eviction_action(
    now: Timestamp,
    e: &PlannedEviction,
    kind: ActionKind,
    node: &NodeState,
    usage: Usage,
    fast: bool,
) -> Action {
    let target = match node.pods.iter().find(|p| p.pod.id.uid == e.uid) {
        Some(p) => pod_target(p, None),
        None => {
            let (namespace, name) = e.pod.split_once('/').unwrap_or(("", &e.pod));
            Target::Pod {
                namespace: namespace.into(),
                name: name.into(),
                uid: e.uid.clone(),
                container: None,
            }
        }
    };
    Action {
        seq: 0,
        time: now.to_string(),
        kind,
        strategy: e.strategy.to_string(),
        target,
        resource: None,
        old: None,
        new: None,
        reason: e.reason.clone(),
        figures: e.figures,
        node_usage: usage,
        fast,
    }
}

fn pod_target(p: &PodState, container: Option<&str>) -> Target {
    Target::Pod {
        namespace: p.pod.id.namespace.clone(),
        name: p.pod.id.name.clone(),
        uid: p.pod.id.uid.clone(),
        container: container.map(str::to_string),
    }
}

/// What the cgroup `dir` of `node` is: the BE QoS class, a pod or one of
/// its containers, or another directory.
fn target_of(node: &NodeState, dir: &CgroupDir) -> Target {
    if *dir == node.be_dir {
        return Target::QosClass { class: "BE".into() };
    }
    for p in &node.pods {
        if p.dir == *dir {
            return pod_target(p, None);
        }
        if let Some(c) = p.containers.iter().find(|c| c.dir.as_ref() == Some(dir)) {
            return pod_target(p, Some(&c.name));
        }
    }
    Target::Cgroup { path: dir.as_path().display().to_string() }
}

/// The BE QoS directory's value of `resource` as the round read it, for
/// the first write of one of its files.
fn be_value(node: &NodeState, dir: &CgroupDir, resource: Resource) -> Option<String> {
    if *dir != node.be_dir {
        return None;
    }
    match resource {
        Resource::CpuCfsQuota => node.be.cfs_quota_us.map(|q| q.to_string()),
        Resource::CpusetCpus => node.be.cpuset.as_ref().map(ToString::to_string),
        _ => None,
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
