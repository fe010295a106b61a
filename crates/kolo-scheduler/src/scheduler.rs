//! The scheduler: cluster changes in, one scheduling cycle at a time, bind
//! requests out.
//!
//! A cycle takes the next pod from the queue and runs its profile's
//! extension points: PreFilter and PreScore once, then Filter and Score
//! fused over batches of nodes in parallel (rayon), then selection, Reserve
//! (after the pod is assumed in the cache, so the next cycle sees it),
//! Permit, PreBind, and Bind, which hands a request to the [`Binder`]. Bind
//! outcomes come back on a channel and are applied at the start of the next
//! cycle: a failed bind forgets the pod and retries it.
//!
//! Everything here is deterministic: the same inputs and times give the
//! same decisions, whatever the thread count (results are written per node
//! and combined in node order; ties between equally scored nodes are broken
//! by a hash of pod and node, not at random).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_api::crd::NodeMetric;
use kolo_core::clock::Timestamp;
use kolo_core::node::{NodeView, NodeViewError};
use kolo_core::pod::PodViewError;
use kolo_core::usage_report::{NodeUsageReport, UsageReadError};
use rayon::prelude::*;

use crate::binder::{BindCompletion, BindRequest, BindResult, Binder};
use crate::cache::{Cache, CacheChange};
use crate::config::{ConfigError, SchedulerConfig};
use crate::equivalence::{EquivalenceCache, NodeResults, pod_signature};
use crate::explain::failure_message;
use crate::framework::{
    BindOutcome, ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, Filter,
    NodeId, NodeInfo, NodeVerdict, PermitOutcome, PodInfo, PostFilterOutcome, PreFilterOutcome,
    PreScoreOutcome, Rejected, Rejection, Score, ScoreSink,
};
use crate::profile::{DefaultPlugin, Profile};
use crate::queue::SchedulingQueue;
use crate::registry::Registry;

/// Below this many nodes every node is evaluated (kube-scheduler's
/// `minFeasibleNodesToFind`).
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// The adaptive percentage never goes below this.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;

/// How many feasible nodes to look for before scoring, as kube-scheduler's
/// `numFeasibleNodesToFind`: all of them below 100 nodes or at 100%;
/// otherwise the percentage (adaptive when 0: 50% − 1% per 125 nodes, at
/// least 5%) of the nodes, at least 100.
pub fn num_feasible_nodes_to_find(nodes: usize, percentage: i32) -> usize {
    if nodes < MIN_FEASIBLE_NODES_TO_FIND || percentage >= 100 {
        return nodes;
    }
    let percentage = if percentage <= 0 {
        (50usize.saturating_sub(nodes / 125)).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    } else {
        percentage as usize
    };
    (nodes * percentage / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// How much a cycle records for explaining its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExplainLevel {
    /// Only the outcome (fastest).
    #[default]
    None,
    /// The outcome and the best `n` feasible nodes with per-plugin scores.
    Top(usize),
    /// Every evaluated node: its verdict, reasons and scores.
    All,
}

/// One node as a cycle saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeReport {
    /// The node.
    pub node: String,
    /// Whether it passed every filter.
    pub feasible: bool,
    /// Why not (empty when feasible).
    pub reasons: Vec<String>,
    /// The plugin that rejected it.
    pub rejected_by: Option<&'static str>,
    /// Per-plugin scores (normalized, before weights), feasible nodes only.
    pub scores: BTreeMap<&'static str, i64>,
    /// Weighted sum of the scores, feasible nodes only.
    pub total: Option<i64>,
}

/// How a cycle ended for its pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Assumed on `node` and handed to the binder.
    Scheduled {
        /// The chosen node.
        node: String,
        /// Its weighted total score.
        total: i64,
        /// Its per-plugin scores (normalized, before weights).
        scores: BTreeMap<&'static str, i64>,
    },
    /// Reserved on `node`, waiting for a Permit plugin to allow it.
    Waiting {
        /// The reserved node.
        node: String,
    },
    /// No node can take the pod now; it waits for a cluster change.
    Unschedulable {
        /// kube-scheduler style summary (`0/5000 nodes are available: ...`).
        message: String,
        /// A node a PostFilter plugin nominated, if any.
        nominated: Option<String>,
    },
    /// An error (a plugin error, a failed Reserve); retried after backoff.
    Failed {
        /// What went wrong.
        message: String,
    },
}

/// The record of one scheduling cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycleReport {
    /// `namespace/name`.
    pub pod: String,
    /// What happened.
    pub outcome: Outcome,
    /// How many nodes were evaluated (filtered) in this cycle.
    pub evaluated_nodes: usize,
    /// How many of them were feasible (and scored).
    pub feasible_nodes: usize,
    /// Per-node details, as asked for with [`Scheduler::set_explain`].
    pub nodes: Vec<NodeReport>,
}

/// Why a cluster object was refused; the last good state is kept.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A malformed node.
    #[error(transparent)]
    Node(#[from] NodeViewError),
    /// A malformed pod.
    #[error(transparent)]
    Pod(#[from] PodViewError),
}

/// A pod held by a Permit plugin.
struct WaitingPod {
    profile: usize,
    node: NodeId,
    info: Arc<PodInfo>,
    deadline: Timestamp,
    /// The pod's cycle state, which PreBind reads when it is allowed.
    state: CycleState,
}

/// A pod whose bind is in flight.
struct InFlightBind {
    profile: usize,
    node: NodeId,
    info: Arc<PodInfo>,
}

/// Buffers reused from cycle to cycle (allocating them per pod costs more
/// than the scoring itself at 5,000 nodes).
#[derive(Default)]
struct Scratch {
    results: NodeResults,
    feasible: Vec<usize>,
}

/// The scheduler's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Cycles run.
    pub cycles: u64,
    /// Pods handed to the binder.
    pub scheduled: u64,
    /// Cycles that found no node.
    pub unschedulable: u64,
    /// Cycles that failed with an error.
    pub failed: u64,
    /// Binds that succeeded.
    pub bound: u64,
    /// Binds that failed (the pod was forgotten and retried).
    pub bind_failures: u64,
    /// Nodes run through the Filter and Score plugins, over all cycles (the
    /// equivalence cache keeps this well below cycles × nodes).
    pub node_evaluations: u64,
}

/// The scheduler.
pub struct Scheduler {
    profiles: Vec<Profile>,
    cache: Cache,
    queue: SchedulingQueue,
    binder: Arc<dyn Binder>,
    bind_tx: Sender<BindResult>,
    bind_rx: Receiver<BindResult>,
    percentage: i32,
    next_start: usize,
    scratch: Scratch,
    state: CycleState,
    explain: ExplainLevel,
    in_flight: HashMap<Box<str>, InFlightBind>,
    waiting: HashMap<Box<str>, WaitingPod>,
    stats: Stats,
    equivalence: EquivalenceCache,
    use_equivalence: bool,
}

impl Scheduler {
    /// Builds a scheduler from a configuration, the plugins it may enable and
    /// the plugins each profile enables by default.
    pub fn new(
        config: &SchedulerConfig,
        registry: &Registry,
        defaults: &[DefaultPlugin],
        binder: Arc<dyn Binder>,
    ) -> Result<Scheduler, ConfigError> {
        config.validate()?;
        let profiles = config
            .profiles()
            .iter()
            .map(|p| Profile::build(registry, p, defaults))
            .collect::<Result<Vec<_>, _>>()?;
        let (bind_tx, bind_rx) = channel();
        let seconds = |s: i64| Duration::from_secs(s.max(0) as u64);
        Ok(Scheduler {
            profiles,
            cache: Cache::new(),
            queue: SchedulingQueue::new(
                seconds(config.initial_backoff_seconds()),
                seconds(config.max_backoff_seconds()),
            ),
            binder,
            bind_tx,
            bind_rx,
            percentage: config.percentage_of_nodes_to_score.unwrap_or(0),
            next_start: 0,
            scratch: Scratch::default(),
            state: CycleState::new(),
            explain: ExplainLevel::None,
            in_flight: HashMap::new(),
            waiting: HashMap::new(),
            stats: Stats::default(),
            equivalence: EquivalenceCache::default(),
            use_equivalence: config.equivalence_cache.unwrap_or(true),
        })
    }

    /// Turns the equivalence cache on or off (on by default; decisions are
    /// the same either way, only the time differs).
    pub fn set_equivalence_cache(&mut self, on: bool) {
        self.use_equivalence = on;
        self.equivalence.invalidate();
    }

    /// Sets how much each cycle records about the nodes it saw.
    pub fn set_explain(&mut self, level: ExplainLevel) {
        self.explain = level;
    }

    /// The profiles, in configuration order.
    pub fn profiles(&self) -> &[Profile] {
        &self.profiles
    }

    /// The cache (nodes and the pods counted on them).
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The queue of pending pods.
    pub fn queue(&self) -> &SchedulingQueue {
        &self.queue
    }

    /// The counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The profile that schedules pods with this `schedulerName` (pods
    /// without one use Kubernetes' `default-scheduler`).
    pub fn profile_for(&self, pod: &PodInfo) -> Option<usize> {
        let name = pod.view().scheduler_name().unwrap_or("default-scheduler");
        self.profiles.iter().position(|p| p.scheduler_name() == name)
    }

    /// Adds or updates a node.
    pub fn apply_node(&mut self, node: Node, now: Timestamp) -> Result<(), ApplyError> {
        let changes = self.cache.apply_node(node)?;
        self.dispatch(changes, now);
        Ok(())
    }

    /// Adds or updates a node the caller has read already (`view` is
    /// `NodeView::from_node(&node)`; the simulator reads its nodes on their
    /// own threads).
    pub fn apply_node_view(&mut self, node: Arc<Node>, view: NodeView, now: Timestamp) {
        let changes = self.cache.apply_node_view(node, view);
        self.dispatch(changes, now);
    }

    /// Removes a node.
    pub fn remove_node(&mut self, name: &str, now: Timestamp) {
        let changes = self.cache.remove_node(name);
        self.dispatch(changes, now);
    }

    /// Adds or updates a NodeMetric. It is read once
    /// ([`NodeUsageReport::read`]); the quantities that could not be read
    /// (each plugin reads them as absent) are returned for the caller to
    /// log.
    pub fn apply_node_metric(&mut self, metric: NodeMetric, now: Timestamp) -> Vec<UsageReadError> {
        let report = NodeUsageReport::read(&metric);
        let errors = report.errors.clone();
        self.apply_usage_report(report, now);
        errors
    }

    /// [`apply_usage_report`](Self::apply_usage_report) for a round of
    /// reports (in order; of two for one node the later counts): the same
    /// outcome, with the plugins applying the round at once
    /// ([`ClusterEventHandler::on_node_metrics`]; LoadAwareScheduling does
    /// its nodes in parallel). Reports may come shared already (`Arc`), so
    /// a caller that built them elsewhere hands them over without a copy.
    pub fn apply_usage_reports<R: Into<Arc<NodeUsageReport>>>(
        &mut self,
        reports: impl IntoIterator<Item = R>,
        now: Timestamp,
    ) {
        let reports = reports.into_iter();
        let mut changed = Vec::with_capacity(reports.size_hint().0);
        for report in reports {
            for change in self.cache.apply_node_metric(report.into()) {
                if let CacheChange::NodeMetricUpdated(id) = change {
                    changed.push(id);
                }
            }
        }
        let cache = &self.cache;
        let updates: Vec<_> = changed
            .iter()
            .filter_map(|id| {
                let node = cache.node(*id)?;
                Some((node, cache.node_metric(node.name())?))
            })
            .collect();
        each_event_handler(&mut self.profiles, |handler| handler.on_node_metrics(&updates));
        for _ in 0..updates.len() {
            self.queue.on_event(EventKinds::NODE_METRIC, now);
        }
    }

    /// Adds or updates a node's usage report: what
    /// [`apply_node_metric`](Self::apply_node_metric) does with a NodeMetric
    /// once read, for callers that have the numbers already (the
    /// simulator).
    pub fn apply_usage_report(&mut self, report: NodeUsageReport, now: Timestamp) {
        let changes = self.cache.apply_node_metric(Arc::new(report));
        self.dispatch(changes, now);
    }

    /// Removes a node's NodeMetric.
    pub fn remove_node_metric(&mut self, name: &str, now: Timestamp) {
        let changes = self.cache.remove_node_metric(name);
        self.dispatch(changes, now);
    }

    /// Adds or updates a pod: an assigned pod is counted on its node; a
    /// pending pod of one of this scheduler's profiles is queued; a finished
    /// pod is forgotten.
    pub fn apply_pod(&mut self, pod: Pod, now: Timestamp) -> Result<(), ApplyError> {
        let info = PodInfo::new(pod)?;
        self.apply_pod_info(Arc::new(info), now);
        Ok(())
    }

    /// [`apply_pod`](Self::apply_pod) for a pod already read.
    pub fn apply_pod_info(&mut self, info: Arc<PodInfo>, now: Timestamp) {
        let view = info.view();
        if view.is_terminated() {
            self.remove_pod(info.key(), now);
            return;
        }
        if let Some(node) = view.node_name() {
            let node = node.to_string();
            self.queue.remove(info.key());
            let changes = self.cache.apply_assigned_pod(info, &node);
            self.dispatch(changes, now);
        } else if let Some(profile) = self.profile_for(&info) {
            let key = self.profiles[profile].queue_sort().sort_key(&info);
            self.queue.add(info, key);
        }
    }

    /// Removes a pod (deleted).
    pub fn remove_pod(&mut self, key: &str, now: Timestamp) {
        self.queue.remove(key);
        self.waiting.remove(key);
        let changes = self.cache.remove_pod(key);
        self.dispatch(changes, now);
    }

    /// Tells every plugin and the queue about cache changes.
    fn dispatch(&mut self, changes: Vec<CacheChange>, now: Timestamp) {
        for change in changes {
            let Some(kind) = self.deliver(&change, now) else { continue };
            self.queue.on_event(kind, now);
        }
    }

    /// Delivers one change to the event handlers of every profile; returns
    /// its kind (`None` if it refers to something already gone).
    fn deliver(&mut self, change: &CacheChange, now: Timestamp) -> Option<EventKinds> {
        let cache = &self.cache;
        let event = match change {
            CacheChange::NodeAdded(id) => ClusterEvent::NodeAdded(cache.node(*id)?),
            CacheChange::NodeUpdated(id) => ClusterEvent::NodeUpdated(cache.node(*id)?),
            CacheChange::NodeRemoved { id, name } => ClusterEvent::NodeRemoved { id: *id, name },
            CacheChange::PodAdded { pod, node } => {
                let cached = cache.pod(pod)?;
                ClusterEvent::PodAdded {
                    pod: &cached.info,
                    node: cache.node(*node)?,
                    assumed: cached.assumed,
                    at: now,
                }
            }
            CacheChange::PodRemoved { pod, node } => ClusterEvent::PodRemoved { pod, node: *node },
            CacheChange::NodeMetricUpdated(id) => {
                let node = cache.node(*id)?;
                ClusterEvent::NodeMetricUpdated { node, metric: cache.node_metric(node.name())? }
            }
            CacheChange::NodeMetricRemoved(id) => {
                ClusterEvent::NodeMetricRemoved { node: cache.node(*id)? }
            }
        };
        each_event_handler(&mut self.profiles, |handler| handler.on_event(&event));
        Some(event.kind())
    }

    /// Runs one scheduling cycle for the next ready pod, if any. First
    /// applies the outcomes of finished binds and expires Permit waits.
    pub fn schedule_next(&mut self, now: Timestamp) -> Option<CycleReport> {
        self.process_bind_results(now);
        self.expire_waiting(now);
        let queued = self.queue.pop(now)?;
        Some(self.schedule_one(queued.info, now))
    }

    /// Runs cycles until no pod is ready at `now` (pods backing off or
    /// unschedulable stay queued); returns their reports.
    pub fn run_until_idle(&mut self, now: Timestamp) -> Vec<CycleReport> {
        let mut reports = Vec::new();
        while let Some(report) = self.schedule_next(now) {
            reports.push(report);
        }
        self.process_bind_results(now);
        reports
    }

    /// Applies bind outcomes reported so far.
    pub fn process_bind_results(&mut self, now: Timestamp) {
        while let Ok(result) = self.bind_rx.try_recv() {
            let Some(bind) = self.in_flight.remove(result.request.pod.as_str()) else { continue };
            match result.outcome {
                Ok(()) => {
                    self.stats.bound += 1;
                    self.queue.remove(&result.request.pod);
                }
                Err(_) => {
                    self.stats.bind_failures += 1;
                    self.undo_reservation(bind.profile, &bind.info, bind.node, now);
                    self.queue.requeue_backoff(&result.request.pod, now);
                }
            }
        }
    }

    /// Lets a pod a Permit plugin holds go on to binding.
    pub fn allow_waiting(&mut self, key: &str, now: Timestamp) -> bool {
        let Some(waiting) = self.waiting.remove(key) else { return false };
        self.bind_pod(waiting.profile, &waiting.info, waiting.node, &waiting.state, now).is_ok()
    }

    /// Rejects the pods whose Permit wait has passed its deadline.
    fn expire_waiting(&mut self, now: Timestamp) {
        let expired: Vec<Box<str>> = self
            .waiting
            .iter()
            .filter(|(_, w)| w.deadline <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in expired {
            if let Some(w) = self.waiting.remove(&key) {
                self.undo_reservation(w.profile, &w.info, w.node, now);
                self.queue.requeue_unschedulable(&key, now, EventKinds::ALL);
            }
        }
    }

    /// Unreserves a pod in every Reserve plugin (reverse order) and forgets
    /// its assumption.
    fn undo_reservation(&mut self, profile: usize, info: &PodInfo, node: NodeId, now: Timestamp) {
        let ctx = CycleContext { now };
        let profile_ref = &mut self.profiles[profile];
        if let Some(node_info) = self.cache.node(node) {
            for &i in profile_ref.reserve.iter().rev() {
                if let Some(reserve) = profile_ref.plugins[i].as_reserve() {
                    reserve.unreserve(&ctx, info, node_info);
                }
            }
        }
        let changes = self.cache.forget(info.key());
        self.dispatch(changes, now);
    }

    fn schedule_one(&mut self, info: Arc<PodInfo>, now: Timestamp) -> CycleReport {
        self.stats.cycles += 1;
        let mut report = CycleReport {
            pod: info.key().to_string(),
            outcome: Outcome::Failed { message: String::new() },
            evaluated_nodes: 0,
            feasible_nodes: 0,
            nodes: Vec::new(),
        };
        let Some(profile) = self.profile_for(&info) else {
            self.queue.remove(info.key());
            report.outcome = Outcome::Failed {
                message: format!(
                    "no profile for schedulerName {:?}",
                    info.view().scheduler_name().unwrap_or("default-scheduler")
                ),
            };
            return report;
        };
        let ctx = CycleContext { now };
        match self.find_node(profile, &info, &ctx, &mut report) {
            Ok(node) => {
                let state = std::mem::take(&mut self.state);
                match self.reserve_permit_bind(profile, &info, node, &state, now) {
                    Ok(None) => self.state = state,
                    Ok(Some(deadline)) => {
                        // Held by a Permit plugin: the pod keeps its cycle
                        // state for PreBind (the next cycle starts afresh).
                        report.outcome = Outcome::Waiting {
                            node: self.cache.node(node).map_or("", |n| n.name()).to_string(),
                        };
                        self.waiting.insert(
                            info.key().into(),
                            WaitingPod { profile, node, info: info.clone(), deadline, state },
                        );
                    }
                    Err(rejection) => {
                        self.state = state;
                        self.stats.failed += 1;
                        report.outcome = Outcome::Failed { message: rejection.to_string() };
                        self.queue.requeue_backoff(info.key(), now);
                    }
                }
            }
            Err((message, wake_on, nominated)) => {
                self.stats.unschedulable += 1;
                report.outcome = Outcome::Unschedulable { message, nominated };
                self.queue.requeue_unschedulable(info.key(), now, wake_on);
            }
        }
        report
    }

    /// PreFilter, PreScore, the fused Filter + Score pass and selection.
    /// Returns the chosen node, or the failure message, the events that may
    /// help, and a nominated node.
    #[allow(clippy::type_complexity)]
    fn find_node(
        &mut self,
        profile_index: usize,
        info: &PodInfo,
        ctx: &CycleContext,
        report: &mut CycleReport,
    ) -> Result<NodeId, (String, EventKinds, Option<String>)> {
        let Scheduler {
            profiles,
            cache,
            scratch,
            state,
            explain,
            percentage,
            next_start,
            equivalence,
            use_equivalence,
            stats,
            ..
        } = self;
        let profile = &profiles[profile_index];
        let nodes = cache.nodes();
        let n = nodes.len();
        state.clear();

        let mut skip_filter = vec![false; profile.plugins.len()];
        for &i in &profile.pre_filter {
            let plugin = profile.plugins[i].as_pre_filter().expect("checked at build");
            match plugin.pre_filter(ctx, state, info) {
                PreFilterOutcome::Proceed => {}
                PreFilterOutcome::Skip => skip_filter[i] = true,
                PreFilterOutcome::Reject(rejection) => {
                    let message = format!("0/{n} nodes are available: {}.", rejection.reason);
                    let wake = profile.plugins[i].events_to_register();
                    return Err((message, wake, None));
                }
            }
        }
        let mut skip_score = vec![false; profile.plugins.len()];
        for &i in &profile.pre_score {
            let plugin = profile.plugins[i].as_pre_score().expect("checked at build");
            if plugin.pre_score(ctx, state, info) == PreScoreOutcome::Skip {
                skip_score[i] = true;
            }
        }
        if n == 0 {
            return Err((failure_message(0, []), EventKinds::NODE_ADD, None));
        }
        let filters: Vec<(&dyn Filter, u16)> = profile
            .filter
            .iter()
            .filter(|&&i| !skip_filter[i])
            .map(|&i| (profile.plugins[i].as_filter().expect("checked at build"), i as u16))
            .collect();
        // (plugin, weight, plugin index); skipped plugins score nothing.
        let scorers: Vec<(&dyn Score, i64, usize)> = profile
            .score
            .iter()
            .filter(|(i, _)| !skip_score[*i])
            .map(|&(i, w)| (profile.plugins[i].as_score().expect("checked at build"), w, i))
            .collect();
        let columns = scorers.len().max(1);
        let sum_in_pass = !scorers.iter().any(|(s, _, _)| s.normalizes());

        // Buffers keep their contents between cycles: every slot a cycle
        // reads is written by that cycle's pass first.
        scratch.results.resize(n, columns);
        scratch.feasible.clear();

        let want = num_feasible_nodes_to_find(n, *percentage);
        let tie_seed = info.tie_hash();
        if want >= n && sum_in_pass && *explain == ExplainLevel::None {
            // Every node, no normalization, nothing to report per node: each
            // chunk also finds its own best node. With the equivalence
            // cache, only the nodes that changed since an alike pod's cycle
            // are evaluated again.
            let signature = (*use_equivalence && profile.equivalence)
                .then(|| pod_signature(profile_index, info));
            let entry = signature.map(|sig| equivalence.entry(sig));
            // Results go to the cache entry, or to the general buffers when
            // the pod is not cached.
            let (results, freshness, failure) = match entry {
                Some(e) => (&mut e.results, Some(&mut e.freshness), Some(&mut e.failure)),
                None => (&mut scratch.results, None, None),
            };
            results.resize(n, columns);
            // Node updates leave other nodes' results good when the plugins
            // say so; the node set changing never does.
            let epoch =
                if profile.local_node_updates { cache.node_set_epoch() } else { cache.epoch() };
            let stale =
                freshness.as_ref().and_then(|f| f.stale(epoch, cache.generations(), ctx.now));
            let renewed = |i: usize| valid_until(profile, &nodes[i], ctx.now);
            // Whether any node was evaluated in this cycle (a cached failure
            // summary stays good only if not).
            let mut recomputed = true;
            // Re-evaluating a node alone costs more than in a parallel pass;
            // past a point, evaluate everything.
            let (feasible, best) = match (stale, freshness) {
                (Some(stale), Some(freshness)) if stale.len() <= (n / 8).max(64) => {
                    recomputed = !stale.is_empty();
                    stats.node_evaluations += stale.len() as u64;
                    for &i in &stale {
                        evaluate(
                            ctx,
                            state,
                            info,
                            &nodes[i..=i],
                            &mut results.verdicts[i..=i],
                            &mut results.scores[i * columns..(i + 1) * columns],
                            &mut results.totals[i..=i],
                            &filters,
                            &scorers,
                            columns,
                            true,
                            tie_seed,
                        );
                    }
                    freshness.renew(&stale, cache.generations(), renewed);
                    best_of(cache.name_hashes(), &results.verdicts, &results.totals, tie_seed)
                }
                (_, freshness) => {
                    stats.node_evaluations += n as u64;
                    let result = evaluate(
                        ctx,
                        state,
                        info,
                        nodes,
                        &mut results.verdicts,
                        &mut results.scores,
                        &mut results.totals,
                        &filters,
                        &scorers,
                        columns,
                        true,
                        tie_seed,
                    );
                    if let Some(freshness) = freshness {
                        freshness.renew_all(epoch, cache.generations(), renewed);
                    }
                    result
                }
            };
            // A failure summary describes the verdicts it was made from:
            // forget it as soon as any of them is computed again, whatever
            // this cycle's outcome.
            let failure = failure.map(|slot| {
                if recomputed {
                    *slot = None;
                }
                slot
            });
            report.evaluated_nodes = n;
            report.feasible_nodes = feasible;
            if let Some((_, _, best)) = best {
                report.outcome = Outcome::Scheduled {
                    node: nodes[best].name().to_string(),
                    total: results.totals[best],
                    scores: plugin_scores(profile, &scorers, &results.scores[best * columns..]),
                };
                return Ok(nodes[best].id());
            }
            // No feasible node: explain why, from the cached summary when
            // no verdict changed since it was made.
            let (message, wake_on) = match failure {
                Some(Some(cached)) => cached.clone(),
                Some(slot) => slot.insert(unschedulable(profile, &results.verdicts)).clone(),
                None => unschedulable(profile, &results.verdicts),
            };
            let nominated = nominate(profile, ctx, state, info, nodes, &results.verdicts);
            return Err((message, wake_on, nominated));
        }
        let start = if want >= n { 0 } else { *next_start % n };
        // Evaluate nodes in rounds, in the rotated order start, start+1, ...
        // until `want` feasible nodes are found; each round is one parallel
        // pass over at most two contiguous ranges.
        let round = if want >= n { n } else { want.max(512) };
        let mut evaluated = 0;
        while evaluated < n && scratch.feasible.len() < want {
            let len = round.min(n - evaluated);
            let from = (start + evaluated) % n;
            let first = len.min(n - from);
            let ranges = [(from, from + first), (0, len - first)];
            for (a, b) in ranges {
                if a < b {
                    evaluate(
                        ctx,
                        state,
                        info,
                        &nodes[a..b],
                        &mut scratch.results.verdicts[a..b],
                        &mut scratch.results.scores[a * columns..b * columns],
                        &mut scratch.results.totals[a..b],
                        &filters,
                        &scorers,
                        columns,
                        sum_in_pass,
                        tie_seed,
                    );
                }
            }
            for k in evaluated..evaluated + len {
                let pos = (start + k) % n;
                if scratch.results.verdicts[pos].is_none() {
                    scratch.feasible.push(pos);
                    if scratch.feasible.len() == want {
                        break;
                    }
                }
            }
            evaluated += len;
            stats.node_evaluations += len as u64;
        }
        // The nodes that count as looked at: up to the want-th feasible one
        // (a round may have evaluated more; their results are not used).
        let processed = match scratch.feasible.last() {
            Some(&last) if scratch.feasible.len() == want => (last + n - start) % n + 1,
            _ => evaluated,
        };
        if want < n {
            *next_start = (start + processed) % n;
        }
        report.evaluated_nodes = processed;
        report.feasible_nodes = scratch.feasible.len();

        if scratch.feasible.is_empty() {
            let (message, wake_on) = unschedulable(profile, &scratch.results.verdicts);
            let nominated = nominate(profile, ctx, state, info, nodes, &scratch.results.verdicts);
            if *explain == ExplainLevel::All {
                report.nodes = (0..processed)
                    .map(|k| node_report(profile, nodes, scratch, &scorers, (start + k) % n))
                    .collect();
            }
            return Err((message, wake_on, nominated));
        }

        if !sum_in_pass {
            // Normalize over the feasible nodes, then weight and sum.
            let mut column = Vec::with_capacity(scratch.feasible.len());
            for (c, (scorer, _, _)) in scorers.iter().enumerate() {
                if !scorer.normalizes() {
                    continue;
                }
                column.clear();
                column.extend(
                    scratch.feasible.iter().map(|&pos| scratch.results.scores[pos * columns + c]),
                );
                scorer.normalize(ctx, state, info, &mut column);
                for (&pos, &v) in scratch.feasible.iter().zip(&column) {
                    scratch.results.scores[pos * columns + c] = v;
                }
            }
            for &pos in &scratch.feasible {
                scratch.results.totals[pos] =
                    weighted_total(&scratch.results.scores[pos * columns..], &scorers);
            }
        }

        let tie = |pos: usize| mix(tie_seed ^ nodes[pos].name_hash());
        let best = scratch
            .feasible
            .iter()
            .copied()
            .max_by_key(|&pos| (scratch.results.totals[pos], tie(pos), pos))
            .expect("at least one feasible node");
        match *explain {
            ExplainLevel::None => {}
            ExplainLevel::All => {
                report.nodes = (0..processed)
                    .map(|k| node_report(profile, nodes, scratch, &scorers, (start + k) % n))
                    .collect();
            }
            ExplainLevel::Top(k) => {
                let mut top = scratch.feasible.clone();
                top.sort_by(|&a, &b| {
                    scratch.results.totals[b]
                        .cmp(&scratch.results.totals[a])
                        .then_with(|| tie(b).cmp(&tie(a)))
                });
                top.truncate(k);
                report.nodes = top
                    .into_iter()
                    .map(|pos| node_report(profile, nodes, scratch, &scorers, pos))
                    .collect();
            }
        }
        let scores = plugin_scores(profile, &scorers, &scratch.results.scores[best * columns..]);
        report.outcome = Outcome::Scheduled {
            node: nodes[best].name().to_string(),
            total: scratch.results.totals[best],
            scores,
        };
        Ok(nodes[best].id())
    }

    /// Assume, Reserve, Permit, then PreBind and Bind.
    /// `Ok(Some(deadline))` when a Permit plugin holds the pod (reserved)
    /// until `deadline`.
    fn reserve_permit_bind(
        &mut self,
        profile: usize,
        info: &Arc<PodInfo>,
        node: NodeId,
        state: &CycleState,
        now: Timestamp,
    ) -> Result<Option<Timestamp>, Rejection> {
        let ctx = CycleContext { now };
        let changes = self.cache.assume(info.clone(), node);
        self.dispatch(changes, now);
        let reserve = self.profiles[profile].reserve.clone();
        for (k, &i) in reserve.iter().enumerate() {
            let Some(node_info) = self.cache.node(node) else { break };
            let result = match self.profiles[profile].plugins[i].as_reserve() {
                Some(plugin) => plugin.reserve(&ctx, state, info, node_info),
                None => Ok(()),
            };
            if let Err(rejection) = result {
                // Undo the plugins that reserved, then the assumption.
                let profile_ref = &mut self.profiles[profile];
                for &j in reserve[..=k].iter().rev() {
                    if let Some(plugin) = profile_ref.plugins[j].as_reserve() {
                        plugin.unreserve(&ctx, info, node_info);
                    }
                }
                let changes = self.cache.forget(info.key());
                self.dispatch(changes, now);
                return Err(rejection);
            }
        }
        let node_info = self.cache.node(node).expect("assumed on a live node");
        for &i in &self.profiles[profile].permit {
            let plugin = self.profiles[profile].plugins[i].as_permit().expect("checked at build");
            match plugin.permit(&ctx, state, info, node_info) {
                PermitOutcome::Allow => {}
                PermitOutcome::Wait(timeout) => {
                    return Ok(Some(now.checked_add(timeout).unwrap_or(now)));
                }
                PermitOutcome::Reject(rejection) => {
                    self.undo_reservation(profile, info, node, now);
                    return Err(rejection);
                }
            }
        }
        self.bind_pod(profile, info, node, state, now).map(|()| None)
    }

    /// PreBind and Bind: builds the bind request and hands it to the binder.
    fn bind_pod(
        &mut self,
        profile: usize,
        info: &Arc<PodInfo>,
        node: NodeId,
        state: &CycleState,
        now: Timestamp,
    ) -> Result<(), Rejection> {
        let ctx = CycleContext { now };
        let Some(node_info) = self.cache.node(node) else {
            return Err(Rejection::error(format!("node of pod {} disappeared", info.key())));
        };
        let mut request = BindRequest {
            pod: info.key().to_string(),
            uid: info.view().uid().to_string(),
            node: node_info.name().to_string(),
            annotations: BTreeMap::new(),
        };
        let profile_ref = &self.profiles[profile];
        let mut failed = None;
        for &i in &profile_ref.pre_bind {
            let plugin = profile_ref.plugins[i].as_pre_bind().expect("checked at build");
            if let Err(rejection) = plugin.pre_bind(&ctx, state, info, node_info, &mut request) {
                failed = Some(rejection);
                break;
            }
        }
        if failed.is_none() {
            let handled = profile_ref.bind.iter().any(|&i| {
                let plugin = profile_ref.plugins[i].as_bind().expect("checked at build");
                plugin.bind(&ctx, state, info, node_info, &mut request) == BindOutcome::Handled
            });
            if !handled {
                failed = Some(Rejection::error("no Bind plugin took the pod"));
            }
        }
        if let Some(rejection) = failed {
            self.undo_reservation(profile, info, node, now);
            return Err(rejection);
        }
        self.stats.scheduled += 1;
        self.in_flight
            .insert(info.key().into(), InFlightBind { profile, node, info: info.clone() });
        self.binder.bind(BindCompletion::new(request, self.bind_tx.clone()));
        Ok(())
    }
}

/// The best node of a chunk: (total, tie-break hash, position). Larger
/// wins; the position settles even equal hashes, so the choice never
/// depends on how nodes were split into chunks.
type Best = Option<(i64, u64, usize)>;

/// One chunk's share of the buffers: (chunk index, (((verdicts, scores),
/// totals), nodes)), as rayon's zips hand it over.
type ChunkWork<'a> =
    (usize, (((&'a mut [NodeVerdict], &'a mut [i64]), &'a mut [i64]), &'a [NodeInfo]));

/// Filters and scores a batch of nodes in parallel chunks. Returns the
/// number of feasible nodes and, when `sum_in_pass`, the best one
/// (positions relative to `nodes`).
#[allow(clippy::too_many_arguments)]
fn evaluate(
    ctx: &CycleContext,
    state: &CycleState,
    pod: &PodInfo,
    nodes: &[NodeInfo],
    verdicts: &mut [NodeVerdict],
    scores: &mut [i64],
    totals: &mut [i64],
    filters: &[(&dyn Filter, u16)],
    scorers: &[(&dyn Score, i64, usize)],
    columns: usize,
    sum_in_pass: bool,
    tie_seed: u64,
) -> (usize, Best) {
    let threads = rayon::current_num_threads().max(1);
    let chunk = nodes.len().div_ceil(threads * 2).max(64);
    let work = |(index, (((verdicts, scores), totals), nodes)): ChunkWork<'_>| {
        verdicts.iter_mut().for_each(|v| *v = None);
        for (filter, plugin) in filters {
            filter.filter_nodes(ctx, state, pod, nodes, *plugin, verdicts);
        }
        for (c, (scorer, _, _)) in scorers.iter().enumerate() {
            let mut sink = ScoreSink::new(&mut scores[c..], columns);
            scorer.score_nodes(ctx, state, pod, nodes, verdicts, &mut sink);
        }
        let mut feasible = 0;
        let mut best: Best = None;
        for (i, verdict) in verdicts.iter().enumerate() {
            if verdict.is_none() {
                feasible += 1;
                if sum_in_pass {
                    let total = weighted_total(&scores[i * columns..], scorers);
                    totals[i] = total;
                    let candidate =
                        (total, mix(tie_seed ^ nodes[i].name_hash()), index * chunk + i);
                    if best.is_none_or(|b| candidate > b) {
                        best = Some(candidate);
                    }
                }
            }
        }
        (feasible, best)
    };
    if nodes.len() <= chunk {
        work((0, (((verdicts, scores), totals), nodes)))
    } else {
        verdicts
            .par_chunks_mut(chunk)
            .zip(scores.par_chunks_mut(chunk * columns))
            .zip(totals.par_chunks_mut(chunk))
            .zip(nodes.par_chunks(chunk))
            .enumerate()
            .map(work)
            .reduce(|| (0, None), |a, b| (a.0 + b.0, a.1.max(b.1)))
    }
}

/// Why no node can take the pod: kube-scheduler's failure message and the
/// events registered by the plugins that rejected it.
fn unschedulable(profile: &Profile, verdicts: &[NodeVerdict]) -> (String, EventKinds) {
    let message = failure_message(verdicts.len(), verdicts.iter().flatten().map(|r| &r.rejection));
    let mut wake_on = EventKinds::NONE;
    for r in verdicts.iter().flatten() {
        wake_on |= profile.plugins[r.plugin as usize].events_to_register();
    }
    (message, wake_on)
}

/// The node the first PostFilter plugin that nominates one chose, if any.
fn nominate(
    profile: &Profile,
    ctx: &CycleContext,
    state: &CycleState,
    info: &PodInfo,
    nodes: &[NodeInfo],
    verdicts: &[NodeVerdict],
) -> Option<String> {
    if profile.post_filter.is_empty() {
        return None;
    }
    let rejected: Vec<(&NodeInfo, &Rejected)> = nodes
        .iter()
        .zip(verdicts)
        .filter_map(|(node, v)| v.as_deref().map(|r| (node, r)))
        .collect();
    profile.post_filter.iter().find_map(|&i| {
        let plugin = profile.plugins[i].as_post_filter().expect("checked at build");
        match plugin.post_filter(ctx, state, info, &rejected) {
            PostFilterOutcome::Nominate(node) => Some(node),
            _ => None,
        }
    })
}

/// When the cached results for `node` go stale by time: the earliest of
/// the profile's Filter and Score plugins' [`Plugin::valid_until`].
/// Calls `f` with every profile's cluster-event handlers, in profile and
/// plugin order.
fn each_event_handler(profiles: &mut [Profile], mut f: impl FnMut(&mut dyn ClusterEventHandler)) {
    for profile in profiles {
        for &i in &profile.event_handlers {
            if let Some(handler) = profile.plugins[i].as_event_handler() {
                f(handler);
            }
        }
    }
}

fn valid_until(profile: &Profile, node: &NodeInfo, now: Timestamp) -> Option<Timestamp> {
    profile.filter_and_score.iter().filter_map(|&i| profile.plugins[i].valid_until(node, now)).min()
}

/// The number of feasible nodes and the best one, by the same order as
/// [`evaluate`]: (total, tie-break hash, position).
fn best_of(
    name_hashes: &[u64],
    verdicts: &[NodeVerdict],
    totals: &[i64],
    tie_seed: u64,
) -> (usize, Best) {
    let mut feasible = 0;
    let mut top = i64::MIN;
    for (verdict, &total) in verdicts.iter().zip(totals) {
        if verdict.is_none() {
            feasible += 1;
            top = top.max(total);
        }
    }
    // The hash is computed only for the nodes tied at the top.
    let best = (0..name_hashes.len())
        .filter(|&i| verdicts[i].is_none() && totals[i] == top)
        .map(|i| (top, mix(tie_seed ^ name_hashes[i]), i))
        .max();
    (feasible, best)
}

/// Σ weight × score over a node's columns (clamped to 0..=100 first, as
/// kube-scheduler refuses scores outside it).
fn weighted_total(row: &[i64], scorers: &[(&dyn Score, i64, usize)]) -> i64 {
    scorers.iter().enumerate().map(|(c, (_, w, _))| row[c].clamp(0, 100) * w).sum()
}

/// A node's per-plugin scores, by plugin name.
fn plugin_scores(
    profile: &Profile,
    scorers: &[(&dyn Score, i64, usize)],
    row: &[i64],
) -> BTreeMap<&'static str, i64> {
    scorers.iter().enumerate().map(|(c, (_, _, i))| (profile.plugin_name(*i), row[c])).collect()
}

/// What the cycle knows about the node at `pos`.
fn node_report(
    profile: &Profile,
    nodes: &[NodeInfo],
    scratch: &Scratch,
    scorers: &[(&dyn Score, i64, usize)],
    pos: usize,
) -> NodeReport {
    let columns = scorers.len().max(1);
    let verdict = scratch.results.verdicts[pos].as_ref();
    let feasible = verdict.is_none();
    NodeReport {
        node: nodes[pos].name().to_string(),
        feasible,
        reasons: verdict.map(|r| r.rejection.to_string()).into_iter().collect(),
        rejected_by: verdict.map(|r| profile.plugin_name(r.plugin as usize)),
        scores: if feasible {
            plugin_scores(profile, scorers, &scratch.results.scores[pos * columns..])
        } else {
            BTreeMap::new()
        },
        total: feasible.then(|| scratch.results.totals[pos]),
    }
}

/// SplitMix64's finalizer: spreads a hash over all bits.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
