//! The scheduler: cluster changes in, one scheduling cycle at a time, bind
//! requests out.
//!
//! A cycle takes the next pod from the queue and finds it a node
//! ([`crate::search`]: PreFilter and PreScore once, then Filter and Score
//! fused over batches of nodes in parallel, then selection), then runs
//! Reserve (after the pod is assumed in the cache, so the next cycle sees
//! it), Permit, PreBind, and Bind, which hands a request to the
//! [`Binder`]. Bind outcomes come back on a channel and are applied at the
//! start of the next cycle: a failed bind forgets the pod and retries it.
//!
//! Cluster changes go to the plugins that keep state, then to the queue:
//! an unschedulable pod is retried when an event may help it, as the
//! rejecting plugins' registered events and queueing hints say
//! ([`crate::wake`]).
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

use crate::binder::{BindCompletion, BindRequest, BindResult, BindTarget, Binder};
use crate::cache::{Cache, CacheChange};
use crate::config::{ConfigError, SchedulerConfig};
use crate::equivalence::{EquivalenceCache, pod_signature};
use crate::framework::{
    BindOutcome, ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, Facts,
    NodeId, NodeInfo, NodeOverlay, ObjectEvent, ObjectRef, PermitOutcome, PodInfo,
    PostFilterOutcome, Rejection, Reserve, SchedulingObject, WaitingVerdict,
};
use crate::profile::{DefaultPlugin, Enabled, Profile};
use crate::queue::SchedulingQueue;
use crate::registry::Registry;
use crate::report::{Nomination, Victim};
use crate::search::{NoNode, PostFilterInput, Scratch, Search, node_facts, prepare};
use crate::wake::{PluginKey, WakeOn, Wakeup};

pub use crate::report::{CycleReport, ExplainLevel, NodeReport, Outcome};
pub use crate::search::{
    MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND, MIN_FEASIBLE_NODES_TO_FIND, num_feasible_nodes_to_find,
};
use kolo_core::HasMeta;

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

/// A pod nominated to a node by preemption, until it is scheduled, bound
/// elsewhere, deleted, or its nomination is replaced or cleared.
#[derive(Debug, Clone)]
struct NominatedPod {
    info: Arc<PodInfo>,
    node: Box<str>,
    victims: Vec<Victim>,
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
    /// Cycles that nominated a node for preemption.
    pub preemptions: u64,
    /// Nodes run through the Filter and Score plugins, over all cycles (the
    /// equivalence cache keeps this well below cycles × nodes).
    pub node_evaluations: u64,
    /// Nodes whose Filter and Score results the equivalence cache gave
    /// without running the plugins (its hits, counted in nodes).
    pub node_results_reused: u64,
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
    /// Whether cycles gather the plugins' facts ([`Scheduler::set_facts`]).
    facts: bool,
    /// What the cluster events being dispatched may wake (reused).
    wakeup: Wakeup,
    /// Pods nominated to nodes by preemption, by key (ordered, so the
    /// overlay they make is built the same way on every run).
    nominations: BTreeMap<Box<str>, NominatedPod>,
    /// Pods without a node, any scheduler's, as plugins were told of them
    /// ([`ObjectEvent::PendingPodAdded`]), so they can be told when each
    /// stops being pending.
    pending: HashMap<Box<str>, Arc<PodInfo>>,
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
            facts: false,
            wakeup: Wakeup::default(),
            nominations: BTreeMap::new(),
            pending: HashMap::new(),
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

    /// Sets whether each cycle gathers facts: each plugin's facts about the
    /// pod and about the chosen node (and the nodes the explain level
    /// reports), and the annotations PreBind wrote (off by default: for
    /// explanations, not for the scheduling path).
    pub fn set_facts(&mut self, on: bool) {
        self.facts = on;
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

    /// The node a pod is nominated to by preemption (kube-scheduler's
    /// `status.nominatedNodeName`), if any.
    pub fn nominated_node(&self, key: &str) -> Option<&str> {
        self.nominations.get(key).map(|n| &*n.node)
    }

    /// Drops a pod's nomination (the cluster driver could not evict its
    /// victims, e.g. a PodDisruptionBudget refused): the pod no longer
    /// waits for them and may preempt again, elsewhere, when next tried.
    /// Returns whether it had one.
    pub fn clear_nomination(&mut self, key: &str) -> bool {
        self.nominations.remove(key).is_some()
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
        each_event_handler(&self.profiles, |handler| handler.on_node_metrics(&updates));
        let (queue, wakeup) = (&mut self.queue, &mut self.wakeup);
        if !updates.is_empty() && queue.wants(EventKinds::NODE_METRIC, now) {
            // One wake-up for the round: the pods it moves go back in queue
            // order, whichever node's report moved them.
            wakeup.clear();
            for &(node, metric) in &updates {
                let event = ClusterEvent::NodeMetricUpdated { node, metric };
                add_hints(&self.profiles, &event, wakeup);
            }
            queue.wake(wakeup, now);
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
            // Bound (here or elsewhere): its nomination has served.
            self.nominations.remove(info.key());
            self.queue.remove(info.key());
            self.forget_pending(info.key(), now);
            let changes = self.cache.apply_assigned_pod(info, &node);
            self.dispatch(changes, now);
        } else {
            self.pending.insert(info.key().into(), info.clone());
            self.dispatch_object(&ObjectEvent::PendingPodAdded(&info), now);
            if let Some(profile) = self.profile_for(&info) {
                let key = self.profiles[profile].queue_sort().sort_key(&info);
                self.queue.add(info, key);
            }
        }
        self.settle_waiting(now);
    }

    /// Removes a pod (deleted).
    pub fn remove_pod(&mut self, key: &str, now: Timestamp) {
        self.queue.remove(key);
        if let Some(w) = self.waiting.remove(key) {
            // kube-scheduler rejects a deleted waiting pod: its Reserve
            // plugins (a gang, a quota) release what it held.
            self.undo_reservation(w.profile, &w.info, w.node, now);
        }
        self.nominations.remove(key);
        self.forget_pending(key, now);
        let changes = self.cache.remove_pod(key);
        self.dispatch(changes, now);
        self.settle_waiting(now);
    }

    /// Adds or updates a scheduling object (quota, gang, reservation): the
    /// plugins that keep state from it are told, and the pods waiting for
    /// such a change are retried.
    pub fn apply_object(&mut self, object: SchedulingObject, now: Timestamp) {
        self.dispatch_object(&ObjectEvent::Applied(&object), now);
        self.settle_waiting(now);
    }

    /// Removes a scheduling object (deleted).
    pub fn remove_object(&mut self, object: &ObjectRef, now: Timestamp) {
        self.dispatch_object(&ObjectEvent::Removed(object), now);
        self.settle_waiting(now);
    }

    /// Tells the plugins a pending pod is pending no more, if they were
    /// told it was.
    fn forget_pending(&mut self, key: &str, now: Timestamp) {
        if let Some(info) = self.pending.remove(key) {
            self.dispatch_object(&ObjectEvent::PendingPodRemoved(&info), now);
        }
    }

    /// Tells every plugin and the queue about a change of a scheduling
    /// object or a pending pod.
    fn dispatch_object(&mut self, event: &ObjectEvent<'_>, now: Timestamp) {
        each_event_handler(&self.profiles, |handler| handler.on_object(event));
        // Such an event may move a queue key that reads plugin state (a
        // gang's time): those pods take their new places.
        for profile in &self.profiles {
            let sort = profile.queue_sort();
            for key in sort.take_stale_keys() {
                self.queue.rekey(&key, |info| {
                    let name = info.view().scheduler_name().unwrap_or("default-scheduler");
                    (name == profile.scheduler_name()).then(|| sort.sort_key(info))
                });
            }
        }
        if self.queue.wants(event.kind(), now) {
            self.wakeup.clear();
            self.wakeup.add_event(event.kind());
            self.queue.wake(&self.wakeup, now);
        }
    }

    /// Carries out what Permit plugins decided about waiting pods
    /// ([`Permit::take_verdicts`](crate::framework::Permit::take_verdicts))
    /// until they decide nothing more (an unreserve may reject further
    /// members of a gang).
    fn settle_waiting(&mut self, now: Timestamp) {
        loop {
            let verdicts: Vec<WaitingVerdict> = self
                .profiles
                .iter()
                .flat_map(|p| p.permit.iter().flat_map(|p| p.plugin.take_verdicts()))
                .collect();
            if verdicts.is_empty() {
                return;
            }
            for verdict in verdicts {
                match verdict {
                    WaitingVerdict::Allow(key) => {
                        self.allow_waiting_pod(&key, now);
                    }
                    WaitingVerdict::Reject { pod, .. } => self.reject_waiting(&pod, now),
                }
            }
        }
    }

    /// Unreserves a pod a Permit plugin holds and sends it back to the
    /// queue, to back off.
    fn reject_waiting(&mut self, key: &str, now: Timestamp) {
        if let Some(w) = self.waiting.remove(key) {
            self.undo_reservation(w.profile, &w.info, w.node, now);
            self.queue.requeue_backoff(key, now);
        }
    }

    /// Tells every plugin and the queue about cache changes, one by one.
    fn dispatch(&mut self, changes: Vec<CacheChange>, now: Timestamp) {
        let Scheduler { cache, profiles, queue, wakeup, .. } = self;
        for change in changes {
            let Some(event) = cluster_event(cache, &change, now) else { continue };
            each_event_handler(profiles, |handler| handler.on_event(&event));
            if queue.wants(event.kind(), now) {
                wakeup.clear();
                add_hints(profiles, &event, wakeup);
                queue.wake(wakeup, now);
            }
        }
    }

    /// Runs one scheduling cycle for the next ready pod, if any. First
    /// applies the outcomes of finished binds and expires Permit waits.
    pub fn schedule_next(&mut self, now: Timestamp) -> Option<CycleReport> {
        self.process_bind_results(now);
        self.expire_waiting(now);
        self.settle_waiting(now);
        let queued = self.queue.pop(now)?;
        let report = self.schedule_one(queued.info, now);
        self.settle_waiting(now);
        Some(report)
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
        let allowed = self.allow_waiting_pod(key, now);
        self.settle_waiting(now);
        allowed
    }

    /// [`allow_waiting`](Self::allow_waiting) without settling verdicts.
    fn allow_waiting_pod(&mut self, key: &str, now: Timestamp) -> bool {
        let Some(waiting) = self.waiting.remove(key) else { return false };
        self.bind_pod(waiting.profile, &waiting.info, waiting.node, &waiting.state, now).is_ok()
    }

    /// The pods held at Permit, by key, with the node each is reserved on.
    pub fn waiting_pods(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.waiting.iter().map(|(k, w)| (&**k, self.cache.node(w.node).map_or("", |n| n.name())))
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
                self.queue.requeue_unschedulable(&key, now, Arc::new(WakeOn::any(EventKinds::ALL)));
            }
        }
    }

    /// Unreserves a pod in every Reserve plugin (reverse order) and forgets
    /// its assumption.
    fn undo_reservation(&mut self, profile: usize, info: &PodInfo, node: NodeId, now: Timestamp) {
        if let Some(node_info) = self.cache.node(node) {
            unreserve(&self.profiles[profile].reserve, info, node_info, now);
        }
        let changes = self.cache.forget(info.key());
        self.dispatch(changes, now);
    }

    fn schedule_one(&mut self, info: Arc<PodInfo>, now: Timestamp) -> CycleReport {
        self.stats.cycles += 1;
        let failed = Outcome::Failed { message: String::new() };
        let mut report = CycleReport::new(info.key().to_string(), failed);
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
                self.place(profile, &info, node, now, &mut report);
                if matches!(report.outcome, Outcome::Scheduled { .. } | Outcome::Waiting { .. }) {
                    // Assumed: the cache counts it now, not the nomination.
                    self.nominations.remove(info.key());
                }
            }
            Err(NoNode { failure, post_filter }) => {
                self.stats.unschedulable += 1;
                self.gather_facts(profile, &info, None, &ctx, &mut report);
                let (nominated, victims) = self.nominate(&info, post_filter);
                report.outcome = Outcome::Unschedulable {
                    message: failure.summary.message.clone(),
                    nominated,
                    victims,
                    rejections: failure.summary.rejections.clone(),
                };
                self.queue.requeue_unschedulable(info.key(), now, failure.wake_on.clone());
            }
        }
        report
    }

    /// Records what the PostFilter plugins decided for a pod that fits
    /// nowhere; returns the node nominated in this cycle and its victims.
    fn nominate(
        &mut self,
        info: &Arc<PodInfo>,
        outcome: PostFilterOutcome,
    ) -> (Option<String>, Vec<Victim>) {
        match outcome {
            PostFilterOutcome::Unchanged => (None, Vec::new()),
            PostFilterOutcome::Clear => {
                self.nominations.remove(info.key());
                (None, Vec::new())
            }
            PostFilterOutcome::Nominate(Nomination { node, victims }) => {
                self.stats.preemptions += 1;
                let nominated = NominatedPod {
                    info: info.clone(),
                    node: node.as_str().into(),
                    victims: victims.clone(),
                };
                self.nominations.insert(info.key().into(), nominated);
                (Some(node), victims)
            }
        }
    }

    /// The node the pod's nomination still waits for victims on (victims
    /// the cache counts: the same pod, same UID).
    fn awaiting_victims(&self, key: &str) -> Option<Box<str>> {
        let n = self.nominations.get(key)?;
        let waiting = n.victims.iter().any(|v| {
            self.cache.pod(&v.pod).is_some_and(|c| c.node.is_some() && c.info.view().uid() == v.uid)
        });
        waiting.then(|| n.node.clone())
    }

    /// The nodes as a pod of `priority` must see them when other pods of
    /// higher or equal priority are nominated (kube-scheduler's
    /// `addNominatedPods`): copies of the cache's nodes with those pods
    /// counted on their nominated nodes, so the room preemption freed for
    /// them is not taken by a pod that would not preempt them. `None` when
    /// no such nomination exists (the common case: the cache's nodes).
    fn nominated_overlay(&self, key: &str, priority: i32) -> Option<Vec<NodeInfo>> {
        let mut relevant = self
            .nominations
            .values()
            .filter(|n| n.info.key() != key && n.info.view().priority() >= priority)
            .filter_map(|n| Some((self.cache.position(self.cache.node_id(&n.node)?)?, &n.info)))
            .peekable();
        relevant.peek()?;
        let mut nodes = self.cache.nodes().to_vec();
        for (pos, pod) in relevant {
            nodes[pos].add_pod(pod);
        }
        Some(nodes)
    }

    /// Reserve, Permit and bind the pod on the node `find_node` chose.
    fn place(
        &mut self,
        profile: usize,
        info: &Arc<PodInfo>,
        node: NodeId,
        now: Timestamp,
        report: &mut CycleReport,
    ) {
        let ctx = CycleContext { now };
        if self.facts
            && let Some(node_info) = self.cache.node(node)
        {
            // Before Reserve: the node as Filter and Score saw it.
            report.node_facts =
                node_facts(&self.profiles[profile], &ctx, &self.state, info, node_info);
        }
        let state = std::mem::take(&mut self.state);
        match self.reserve_permit_bind(profile, info, node, &state, now) {
            Ok(Reserved::Bound(request)) => {
                self.state = state;
                report.annotations = request.annotations;
                self.gather_facts(profile, info, Some(node), &ctx, report);
            }
            Ok(Reserved::Waiting(deadline)) => {
                // Held by a Permit plugin: the pod keeps its cycle state for
                // PreBind (the next cycle starts afresh). What the plugins
                // knew of it is reported too (why it waits: a gang's count),
                // read with its own state.
                report.outcome = Outcome::Waiting {
                    node: self.cache.node(node).map_or("", |n| n.name()).to_string(),
                };
                let cycle = std::mem::replace(&mut self.state, state);
                self.gather_facts(profile, info, None, &ctx, report);
                let state = std::mem::replace(&mut self.state, cycle);
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

    /// Each plugin's facts about the pod, if asked for
    /// ([`set_facts`](Self::set_facts)); `node` once it passed PreBind
    /// there.
    fn gather_facts(
        &self,
        profile: usize,
        info: &PodInfo,
        node: Option<NodeId>,
        ctx: &CycleContext,
        report: &mut CycleReport,
    ) {
        if !self.facts {
            return;
        }
        let profile = &self.profiles[profile];
        let node = node.and_then(|id| self.cache.node(id));
        report.facts = profile
            .facts
            .iter()
            .filter_map(|p| {
                let facts: Facts = p.plugin.pod_facts(ctx, &self.state, info, node)?;
                Some((profile.plugin_name(p.index), facts))
            })
            .collect();
    }

    /// Finds the pod a node ([`crate::search`]): the chosen node, or why
    /// none can take it.
    fn find_node(
        &mut self,
        profile_index: usize,
        info: &PodInfo,
        ctx: &CycleContext,
        report: &mut CycleReport,
    ) -> Result<NodeId, NoNode> {
        let overlay = self.nominated_overlay(info.key(), info.view().priority());
        let awaiting_victims = self.awaiting_victims(info.key());
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
            facts,
            ..
        } = self;
        let profile = &profiles[profile_index];
        state.clear();
        let running = prepare(profile, ctx, state, info, cache.nodes().len())?;
        // PreFilter plugins may ask to leave pods out of some nodes for
        // this pod (a reservation's hold, for its owner): out of the
        // nominated overlay's copies if there is one, else out of the
        // cache's own nodes for this search only, put back right after it
        // (the exact inverse), so the cost is that of the nodes named, not
        // a copy of the cluster.
        let left_out: Vec<(NodeId, Arc<PodInfo>)> =
            state.read::<NodeOverlay>().map(|o| o.removed().to_vec()).unwrap_or_default();
        let overlay = match overlay {
            Some(nodes) if !left_out.is_empty() => Some(without_pods(cache, nodes, &left_out)),
            nominated => nominated,
        };
        let lifted = overlay.is_none() && !left_out.is_empty();
        if lifted {
            cache.lift(&left_out);
        }
        let result = {
            let cache: &Cache = cache;
            let nodes = overlay.as_deref().unwrap_or(cache.nodes());
            let mut search =
                Search::new(ctx, state, info, profile, profile_index, nodes, running, *facts);
            let awaiting_victims = awaiting_victims.as_deref();
            search.post_filter_input = Some(PostFilterInput { cache, awaiting_victims });
            let want = num_feasible_nodes_to_find(nodes.len(), *percentage);
            // The equivalence cache keys results by the cache's node
            // generations, which an overlay does not change: bypass it
            // then.
            if overlay.is_none()
                && !lifted
                && want >= nodes.len()
                && search.sum_in_pass
                && *explain == ExplainLevel::None
            {
                let signature = (*use_equivalence && profile.equivalence_for(info))
                    .then(|| pod_signature(profile_index, info));
                let cached = signature.map(|sig| equivalence.entry(sig));
                search.every_node(cache, cached, &mut scratch.results, stats, report)
            } else {
                search.in_rounds(scratch, want, next_start, *explain, stats, report)
            }
        };
        if lifted {
            cache.unlift(&left_out);
        }
        result
    }

    /// Assume, Reserve, Permit, then PreBind and Bind.
    fn reserve_permit_bind(
        &mut self,
        profile: usize,
        info: &Arc<PodInfo>,
        node: NodeId,
        state: &CycleState,
        now: Timestamp,
    ) -> Result<Reserved, Rejection> {
        let ctx = CycleContext { now };
        let changes = self.cache.assume(info.clone(), node);
        self.dispatch(changes, now);
        let profile_ref = &self.profiles[profile];
        let node_info = live_node(&self.cache, node, info)?;
        for (k, p) in profile_ref.reserve.iter().enumerate() {
            if let Err(rejection) = p.plugin.reserve(&ctx, state, info, node_info) {
                // Undo the plugins that reserved, then the assumption.
                unreserve(&profile_ref.reserve[..=k], info, node_info, now);
                let changes = self.cache.forget(info.key());
                self.dispatch(changes, now);
                return Err(rejection);
            }
        }
        for p in &profile_ref.permit {
            match p.plugin.permit(&ctx, state, info, node_info) {
                PermitOutcome::Allow => {}
                PermitOutcome::Wait(timeout) => {
                    return Ok(Reserved::Waiting(now.checked_add(timeout).unwrap_or(now)));
                }
                PermitOutcome::Reject(rejection) => {
                    self.undo_reservation(profile, info, node, now);
                    return Err(rejection);
                }
            }
        }
        self.bind_pod(profile, info, node, state, now).map(Reserved::Bound)
    }

    /// PreBind and Bind: builds the bind request and hands it to the
    /// binder; returns a copy of it.
    fn bind_pod(
        &mut self,
        profile: usize,
        info: &Arc<PodInfo>,
        node: NodeId,
        state: &CycleState,
        now: Timestamp,
    ) -> Result<BindRequest, Rejection> {
        let ctx = CycleContext { now };
        let node_info = live_node(&self.cache, node, info)?;
        let mut request = BindRequest {
            pod: info.key().to_string(),
            uid: info.view().uid().to_string(),
            node: node_info.name().to_string(),
            annotations: BTreeMap::new(),
            target: BindTarget::Pod,
        };
        let profile_ref = &self.profiles[profile];
        let pre_bound = profile_ref
            .pre_bind
            .iter()
            .try_for_each(|p| p.plugin.pre_bind(&ctx, state, info, node_info, &mut request));
        let failed = match pre_bound {
            Err(rejection) => Some(rejection),
            Ok(()) => {
                let handled = profile_ref.bind.iter().any(|p| {
                    p.plugin.bind(&ctx, state, info, node_info, &mut request)
                        == BindOutcome::Handled
                });
                (!handled).then(|| Rejection::error("no Bind plugin took the pod"))
            }
        };
        if let Some(rejection) = failed {
            self.undo_reservation(profile, info, node, now);
            return Err(rejection);
        }
        self.stats.scheduled += 1;
        self.in_flight
            .insert(info.key().into(), InFlightBind { profile, node, info: info.clone() });
        // The report keeps what PreBind wrote only when facts are gathered.
        let copy = if self.facts { request.clone() } else { BindRequest::default() };
        self.binder.bind(BindCompletion::new(request, self.bind_tx.clone()));
        Ok(copy)
    }
}

/// Copies of the nodes (`nodes`, the nominated overlay) with the pods a
/// [`NodeOverlay`] names taken out of their nodes.
fn without_pods(
    cache: &Cache,
    mut nodes: Vec<NodeInfo>,
    left_out: &[(NodeId, Arc<PodInfo>)],
) -> Vec<NodeInfo> {
    for (node, pod) in left_out {
        if let Some(pos) = cache.position(*node) {
            nodes[pos].remove_pod(pod);
        }
    }
    nodes
}

/// How Reserve and Permit ended for a pod that passed them.
enum Reserved {
    /// Bound (handed to the binder) with this request (its annotations
    /// only when facts are gathered).
    Bound(BindRequest),
    /// Held by a Permit plugin until this deadline.
    Waiting(Timestamp),
}

/// The node a pod was assumed on, or an error if it went away since.
fn live_node<'a>(cache: &'a Cache, node: NodeId, pod: &PodInfo) -> Result<&'a NodeInfo, Rejection> {
    cache
        .node(node)
        .ok_or_else(|| Rejection::error(format!("node of pod {} disappeared", pod.key())))
}

/// Unreserves a pod in these Reserve plugins, last first.
fn unreserve(reserve: &[Enabled<dyn Reserve>], info: &PodInfo, node: &NodeInfo, now: Timestamp) {
    let ctx = CycleContext { now };
    for p in reserve.iter().rev() {
        p.plugin.unreserve(&ctx, info, node);
    }
}

/// The cluster event a cache change is, for the plugins (`None` if it
/// refers to something already gone).
fn cluster_event<'a>(
    cache: &'a Cache,
    change: &'a CacheChange,
    now: Timestamp,
) -> Option<ClusterEvent<'a>> {
    Some(match change {
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
    })
}

/// Adds `event` and what every profile's plugins that give queueing hints
/// and registered its kind say about it.
fn add_hints(profiles: &[Profile], event: &ClusterEvent<'_>, wakeup: &mut Wakeup) {
    let kind = event.kind();
    wakeup.add_event(kind);
    for (p, profile) in profiles.iter().enumerate() {
        for (i, hints) in profile.hints.iter().enumerate() {
            if let Some(hints) = hints
                && profile.registered[i].intersects(kind)
            {
                let plugin = PluginKey { profile: p as u16, plugin: i as u16 };
                wakeup.add_hint(plugin, hints.queueing_hint(event));
            }
        }
    }
}

/// Calls `f` with every profile's cluster-event handlers, in profile and
/// plugin order.
fn each_event_handler(profiles: &[Profile], mut f: impl FnMut(&dyn ClusterEventHandler)) {
    for profile in profiles {
        for handler in &profile.event_handlers {
            f(&**handler);
        }
    }
}
