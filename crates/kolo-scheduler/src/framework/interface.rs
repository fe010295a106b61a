//! The extension points: one narrow trait each, as in kube-scheduler's
//! scheduling framework, and [`Plugin`], which says which of them a plugin
//! implements.
//!
//! Two differences from kube-scheduler, both for speed and both documented
//! in `docs/scheduler.md`:
//!
//! * Filter and Score are called for a *batch* of nodes
//!   ([`Filter::filter_nodes`], [`Score::score_nodes`]); the default
//!   implementations loop over [`Filter::filter`] / [`Score::score`], which
//!   the compiler inlines, so a cycle costs one dynamic call per plugin per
//!   batch instead of one per node.
//! * PreScore sees only the pod, not the list of feasible nodes, so the
//!   framework can filter and score a batch of nodes in one pass. None of
//!   kolo's plugins needs the feasible list there.

use std::sync::Arc;
use std::time::Duration;

use kolo_core::clock::Timestamp;
use kolo_core::usage_report::NodeUsageReport;

use super::{
    ClusterEvent, CycleState, EventKinds, ExtensionPoints, NodeInfo, ObjectEvent, PodInfo,
    Rejection, Verdict,
};
use crate::binder::BindRequest;
use crate::report::Nomination;

/// What every extension point gets besides the pod: the time of the cycle.
#[derive(Debug, Clone, Copy)]
pub struct CycleContext {
    /// "Now", as the caller's clock said when the cycle started.
    pub now: Timestamp,
}

/// A plugin: a name, the extension points it implements, and what the
/// framework needs to know about its results.
///
/// Every extension point takes `&self`: Filter and Score run concurrently
/// across nodes, and one instance serves all the points it implements, so
/// a plugin whose own state changes (at Reserve, on cluster events) keeps
/// that state behind a lock.
pub trait Plugin: Send + Sync {
    /// The name it is registered and configured under.
    fn name(&self) -> &'static str;

    /// The extension points it implements, as typed handles to itself:
    /// `ExtensionPoints::of(self).pre_filter().filter().score().into()`.
    /// Called once, when a profile is built.
    fn extension_points(self: Arc<Self>) -> ExtensionPoints;

    /// Whether this plugin's Filter and Score results for a node may be
    /// reused for a pod with the same signature (see
    /// [`crate::equivalence`]) while the node's generation is unchanged.
    /// Only plugins that read nothing else may say yes; `false` by default.
    fn supports_equivalence(&self) -> bool {
        false
    }

    /// For a plugin that does not [support the equivalence
    /// cache](Self::supports_equivalence) in general because its results
    /// for a node read pods on other nodes (inter-pod affinity, topology
    /// spread): whether, for this pod and the cluster as it is now, its
    /// Filter accepts every node and its PreScore skips the pod. Such a
    /// plugin contributes nothing that could differ from one cycle to
    /// another, so the cache may serve the pod; results computed while
    /// this is false are never cached. `false` by default.
    fn trivially_passes(&self, _pod: &PodInfo) -> bool {
        false
    }

    /// Whether an update to one node's object can change this plugin's
    /// Filter and Score results for that node only — it keeps no facts
    /// about other nodes that those results read, at least while no Score
    /// plugin of the profile normalizes (the only time the equivalence
    /// cache is used). When every Filter and Score plugin of a profile says
    /// yes, a node update makes only that node's cached results stale
    /// instead of all of them; `false` by default.
    fn node_updates_are_local(&self) -> bool {
        false
    }

    /// For a plugin that supports the equivalence cache and whose results
    /// for a node also read a few facts of *other* nodes' objects
    /// (ImageLocality: how many nodes report an image): a counter that
    /// moves whenever those facts change. The cache then treats a move as
    /// a change of every node, and the plugin may still say its
    /// [node updates are local](Self::node_updates_are_local). 0 (never
    /// moves) by default.
    fn cross_node_epoch(&self) -> u64 {
        0
    }

    /// Until when, by the passage of time alone, this plugin's results for
    /// `node` stay what they are at `now` (`None`: time does not change
    /// them). Load-aware scheduling, for one, rejects nodes whose
    /// NodeMetric expires.
    fn valid_until(&self, _node: &NodeInfo, _now: Timestamp) -> Option<Timestamp> {
        None
    }

    /// The changes that may make a pod this plugin rejected schedulable: a
    /// pod it rejected waits until one happens (or until its retry period
    /// ends). All kinds by default. A plugin that also gives
    /// [`QueueingHints`](super::QueueingHints) is asked about each such
    /// event.
    fn events_to_register(&self) -> EventKinds {
        EventKinds::ALL
    }
}

/// The order of the scheduling queue.
pub trait QueueSort: Send + Sync {
    /// The pod's place in the queue: smaller keys are scheduled first (pods
    /// with equal keys in arrival order).
    fn sort_key(&self, pod: &PodInfo) -> QueueKey;

    /// The pods (`namespace/name`) whose [`sort_key`](Self::sort_key) may
    /// have changed since last asked, although the pods themselves did not:
    /// a key that reads plugin state (a gang's creation time, learned when
    /// its PodGroup arrives after its pods). The framework asks after every
    /// scheduling-object and pending-pod event and re-keys the queued ones.
    /// Empty by default.
    fn take_stale_keys(&self) -> Vec<Box<str>> {
        Vec::new()
    }
}

/// A position in the scheduling queue; smaller first, field by field.
///
/// A plain sort (PrioritySort) sets only the priority and the pod's time
/// ([`QueueKey::new`]); a sort that keeps groups of pods together (gangs)
/// puts the group's time and a tag naming the group before the pod's own
/// time, so a group's pods follow one another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueKey {
    /// The priority, negated (higher priority first).
    pub priority: i64,
    /// The group's time (nanoseconds since the epoch); the pod's own time
    /// for a pod in no group.
    pub group_time: i64,
    /// Names the group among groups of the same time; 0 for none.
    pub group: u64,
    /// The pod's own time (nanoseconds since the epoch).
    pub time: i64,
}

impl QueueKey {
    /// The key of a pod in no group: `priority` (already negated) and its
    /// time.
    pub const fn new(priority: i64, time: i64) -> QueueKey {
        QueueKey { priority, group_time: time, group: 0, time }
    }
}

/// What a PreFilter plugin decided for a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreFilterOutcome {
    /// Run this plugin's Filter for the pod.
    Proceed,
    /// This plugin has nothing to check for the pod: skip its Filter.
    Skip,
    /// The pod cannot be scheduled anywhere.
    Reject(Rejection),
}

/// Checks a pod once per cycle, before any node, and prepares state for
/// Filter.
pub trait PreFilter: Send + Sync {
    /// Looks at the pod; may write state for Filter.
    fn pre_filter(
        &self,
        ctx: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome;
}

/// A rejection and the plugin (its index in the profile) that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The rejecting plugin's index in its profile.
    pub plugin: u16,
    /// Why.
    pub rejection: Rejection,
}

/// A node's verdict slot in a cycle: `None` while it is feasible; boxed so
/// that the slots of thousands of feasible nodes stay small.
pub type NodeVerdict = Option<Box<Rejected>>;

/// Decides whether a pod may run on a node.
pub trait Filter: Send + Sync {
    /// The verdict for one node.
    fn filter(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict;

    /// The verdicts for a batch of nodes. Only nodes whose `out` slot is
    /// still `None` (not rejected by an earlier plugin) are looked at; a
    /// rejection is stored with `plugin`, the plugin's index.
    fn filter_nodes(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        plugin: u16,
        out: &mut [NodeVerdict],
    ) {
        filter_each(nodes, plugin, out, |node| self.filter(ctx, state, pod, node));
    }

    /// The verdict for `node` as it would be without the pods `removed`
    /// (preemption asks it of candidate victims): `node` is already a copy
    /// with their requests and count taken out. The default is
    /// [`filter`](Self::filter) on that copy, right for a plugin that reads
    /// only the node; a plugin that keeps its own per-node state (usage
    /// estimates, cpusets, ports) sees the victims there still, and should
    /// override this if it can account for them — else it only makes
    /// preemption more cautious (a node it keeps rejecting is no
    /// candidate).
    fn filter_without(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        _removed: &[&PodInfo],
    ) -> Verdict {
        self.filter(ctx, state, pod, node)
    }
}

/// Runs `check` on every node of a batch that no earlier plugin rejected
/// and stores its rejections under `plugin`: the loop of
/// [`Filter::filter_nodes`], for plugins that override it to look their
/// cycle state up once per batch.
pub fn filter_each(
    nodes: &[NodeInfo],
    plugin: u16,
    out: &mut [NodeVerdict],
    mut check: impl FnMut(&NodeInfo) -> Verdict,
) {
    for (node, slot) in nodes.iter().zip(out) {
        if slot.is_none()
            && let Err(rejection) = check(node)
        {
            *slot = Some(Box::new(Rejected { plugin, rejection }));
        }
    }
}

/// Scores every node of a batch that passed the filters: the loop of
/// [`Score::score_nodes`], for plugins that override it.
pub fn score_each(
    nodes: &[NodeInfo],
    verdicts: &[NodeVerdict],
    out: &mut ScoreSink<'_>,
    mut score: impl FnMut(&NodeInfo) -> i64,
) {
    for (i, (node, verdict)) in nodes.iter().zip(verdicts).enumerate() {
        if verdict.is_none() {
            out.set(i, score(node));
        }
    }
}

/// What a PostFilter plugin did for a pod no node could take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostFilterOutcome {
    /// Nothing to do; a nomination the pod holds from an earlier cycle
    /// stands (kube-scheduler: the pod waits for its victims to go).
    Unchanged,
    /// The plugin looked and nothing can make room: drop any earlier
    /// nomination of the pod.
    Clear,
    /// The pod should retry on this node once the victims are gone; the
    /// node is recorded as the pod's nominated node.
    Nominate(Nomination),
}

/// What a PostFilter plugin may ask of the cluster, beyond the verdicts:
/// the framework answers from its cache and the profile's Filter plugins.
pub trait PostFilterCluster: Sync {
    /// The pods counted on `node` (assumed ones included; pods nominated
    /// there are not among them).
    fn pods_on(&self, node: &NodeInfo) -> &[Arc<PodInfo>];

    /// Whether the pod would pass every Filter plugin that runs for it on
    /// `node` with `removed` (pods of [`pods_on`](Self::pods_on)) gone: the
    /// framework runs [`Filter::filter_without`] on a copy of the node
    /// without them (pods of higher or equal priority nominated there
    /// still count as placed).
    fn fits_without(&self, node: &NodeInfo, removed: &[&PodInfo]) -> Verdict;

    /// The node of the pod's nomination from an earlier cycle, while its
    /// victims there are still counted (kube-scheduler's
    /// `PodEligibleToPreemptOthers`: such a pod waits instead of
    /// preempting again, unless that node now rejects it for good).
    fn awaiting_victims_on(&self) -> Option<&str>;

    /// Whether every [`PreemptionGuard`] of the profile lets the pod evict
    /// `victim` (a pod of [`pods_on`](Self::pods_on)). `true` by default.
    fn may_evict(&self, _victim: &PodInfo) -> bool {
        true
    }
}

/// Vetoes victims of preemption: a plugin whose rules limit who may evict
/// whom (ElasticQuota: only pods of the preemptor's own quota). A
/// PostFilter plugin asks every guard of the profile through
/// [`PostFilterCluster::may_evict`] before it counts a pod as a potential
/// victim; the guard knows no preemption plugin, nor they it.
pub trait PreemptionGuard: Send + Sync {
    /// Whether `preemptor` may evict `victim`, as far as this plugin is
    /// concerned (priorities are the preemption plugin's business).
    fn may_evict(&self, preemptor: &PodInfo, victim: &PodInfo) -> bool;
}

/// Runs when Filter left no feasible node (kube-scheduler's preemption hook).
pub trait PostFilter: Send + Sync {
    /// Reacts to a pod that fits nowhere; `rejections` lists each rejected
    /// node's verdict, `cluster` answers what-if questions about them.
    fn post_filter(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        rejections: &[(&NodeInfo, &Rejected)],
        cluster: &dyn PostFilterCluster,
    ) -> PostFilterOutcome;
}

/// Whether a plugin scores a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreScoreOutcome {
    /// Run this plugin's Score for the pod.
    Proceed,
    /// This plugin has no opinion on the pod: skip its Score.
    Skip,
}

/// Prepares scoring state for a pod, once per cycle.
pub trait PreScore: Send + Sync {
    /// Looks at the pod; may write state for Score.
    fn pre_score(
        &self,
        ctx: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreScoreOutcome;
}

/// The scores of a batch of nodes for one plugin, written with a stride
/// (the framework keeps every plugin's scores of a node together).
pub struct ScoreSink<'a> {
    data: &'a mut [i64],
    stride: usize,
}

impl<'a> ScoreSink<'a> {
    /// Scores land at `data[i * stride]`.
    pub(crate) fn new(data: &'a mut [i64], stride: usize) -> ScoreSink<'a> {
        ScoreSink { data, stride }
    }

    /// Sets the score of the `i`-th node of the batch.
    pub fn set(&mut self, i: usize, score: i64) {
        self.data[i * self.stride] = score;
    }
}

/// Ranks the feasible nodes for a pod: 0 ([`MIN_NODE_SCORE`]) to 100
/// ([`MAX_NODE_SCORE`]), higher is better.
pub trait Score: Send + Sync {
    /// The score of one feasible node.
    fn score(&self, ctx: &CycleContext, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64;

    /// The scores of a batch of nodes; nodes with a rejection in `verdicts`
    /// are not scored.
    fn score_nodes(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        verdicts: &[NodeVerdict],
        out: &mut ScoreSink<'_>,
    ) {
        score_each(nodes, verdicts, out, |node| self.score(ctx, state, pod, node));
    }

    /// Whether [`normalize`](Self::normalize) does anything (most plugins
    /// score on the final scale already; then the framework can sum scores
    /// while it computes them).
    fn normalizes(&self) -> bool {
        false
    }

    /// Rescales the raw scores of all feasible nodes to 0..=100; `nodes`
    /// are those nodes, in the order of `scores` (kube-scheduler's
    /// `NodeScoreList`: a score may depend on which nodes are feasible).
    fn normalize(
        &self,
        _ctx: &CycleContext,
        _state: &CycleState,
        _pod: &PodInfo,
        _nodes: &[&NodeInfo],
        _scores: &mut [i64],
    ) {
    }
}

/// The lowest node score.
pub const MIN_NODE_SCORE: i64 = 0;
/// The highest node score.
pub const MAX_NODE_SCORE: i64 = 100;

/// kube-scheduler's `DefaultNormalizeScore`: scales scores so the highest
/// becomes `max_priority` (integer arithmetic), optionally reversed (for
/// plugins whose raw score counts something bad).
pub fn default_normalize(max_priority: i64, reverse: bool, scores: &mut [i64]) {
    let max = scores.iter().copied().max().unwrap_or(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = max_priority);
        }
        return;
    }
    for s in scores {
        let mut v = max_priority * *s / max;
        if reverse {
            v = max_priority - v;
        }
        *s = v;
    }
}

/// Claims what a pod needs on its chosen node before binding, so the next
/// cycle sees it used.
pub trait Reserve: Send + Sync {
    /// Claims resources for `pod` on `node`. A rejection undoes the reserve
    /// of every plugin (in reverse order) and fails the cycle.
    fn reserve(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<(), Rejection>;

    /// Releases what [`reserve`](Self::reserve) claimed: after a later
    /// extension point failed, or after binding failed (possibly many cycles
    /// later, so it must work from the pod and node alone). Must tolerate
    /// being called for a pod it never reserved.
    fn unreserve(&self, ctx: &CycleContext, pod: &PodInfo, node: &NodeInfo);
}

/// What a Permit plugin decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermitOutcome {
    /// Bind now.
    Allow,
    /// Hold the pod (reserved) until allowed, or rejected when the timeout
    /// passes (gang scheduling waits for its members this way).
    Wait(Duration),
    /// Do not bind; unreserve.
    Reject(Rejection),
}

/// The last gate before binding.
pub trait Permit: Send + Sync {
    /// Allows, delays or rejects binding `pod` to `node`.
    fn permit(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> PermitOutcome;

    /// What this plugin decided about pods held at Permit *other* than the
    /// one it was asked about (kube-scheduler's `WaitingPod.Allow` /
    /// `Reject` through the framework handle): the last member of a gang
    /// allows the members waiting for it; a member's rejection rejects
    /// them. Decisions are queued inside the plugin and taken by the
    /// framework after every extension point, event and expiry; a verdict
    /// for a pod that is not waiting (any more) is ignored. Empty by
    /// default.
    fn take_verdicts(&self) -> Vec<WaitingVerdict> {
        Vec::new()
    }
}

/// A Permit plugin's decision about a pod held at Permit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitingVerdict {
    /// Let the pod (`namespace/name`) go on to binding, as far as this
    /// plugin is concerned.
    Allow(Box<str>),
    /// Unreserve the pod and send it back to the queue.
    Reject {
        /// The pod, `namespace/name`.
        pod: Box<str>,
        /// Why.
        rejection: Rejection,
    },
}

/// Adds to the bind request what must be written before the pod is bound
/// (e.g. the cpuset chosen, as an annotation).
pub trait PreBind: Send + Sync {
    /// Adds patches to `request`; a rejection unreserves the pod.
    fn pre_bind(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        request: &mut BindRequest,
    ) -> Result<(), Rejection>;
}

/// Whether a Bind plugin took the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindOutcome {
    /// Not this plugin's pod: ask the next Bind plugin.
    Skip,
    /// This plugin will bind it; the request goes to the binder.
    Handled,
}

/// Decides how a pod is bound.
pub trait Bind: Send + Sync {
    /// Takes the pod (possibly adjusting the request) or skips it.
    fn bind(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        request: &mut BindRequest,
    ) -> BindOutcome;
}

/// Keeps a plugin's own per-node state in step with the cluster.
pub trait ClusterEventHandler: Send + Sync {
    /// Applies one change (after the scheduler cache applied it).
    fn on_event(&self, event: &ClusterEvent<'_>);

    /// Applies a round of NodeMetric updates at once (the cache applied
    /// them all first), in order; a node may appear more than once and its
    /// last update counts. The default delivers them one by one through
    /// [`on_event`](Self::on_event); a handler whose per-node state is
    /// independent may apply them in parallel.
    fn on_node_metrics(&self, updates: &[(&NodeInfo, &Arc<NodeUsageReport>)]) {
        for &(node, metric) in updates {
            self.on_event(&ClusterEvent::NodeMetricUpdated { node, metric });
        }
    }

    /// Applies a change of a scheduling object (quota, gang, reservation)
    /// or of a pending pod. Ignored by default.
    fn on_object(&self, _event: &ObjectEvent<'_>) {}
}
