//! The ElasticQuota plugin: the framework adapter over the quota tree.
//!
//! * PreFilter runs the quota checks ([`check_pod`]). A pod that passes
//!   skips Filter. A pod over its quota (check 4, or check 7 for an
//!   ancestor) that could preempt lower-priority pods of its own quota is
//!   let through to Filter, which rejects every node with the quota
//!   message, so that preemption runs; its `filter_without` passes a node
//!   once the victims removed there free enough of the quota. Otherwise the
//!   pod is rejected at PreFilter.
//! * As a [`PreemptionGuard`] it keeps preemption inside quotas: a victim
//!   must be of the preemptor's quota, preemptible, and not in the default
//!   quota (`canPreempt`).
//! * Reserve and Unreserve, pod and pending-pod events keep Request and
//!   Used; node events the cluster total; ElasticQuota objects the tree.
//!
//! While no quota besides the root, system and default ones exists, every
//! pod is in the default quota, whose limit is empty: PreFilter skips, the
//! guard allows everything, and the equivalence cache serves every pod.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use kolo_api::names::label;
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::HasMeta;
use kolo_core::resources::ResourceVector;

use super::args::ElasticQuotaArgs;
use super::check::{QuotaCheck, can_preempt, check_pod};
use super::facts::QuotaFacts;
use super::spec::{QuotaError, QuotaSpec};
use super::tree::{PodFacts, QuotaTree};
use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, ExtensionPoints,
    Facts, Filter, NodeId, NodeInfo, NodeVerdict, ObjectEvent, ObjectKind, Plugin, PodInfo,
    PreFilter, PreFilterOutcome, PreemptionGuard, Rejection, ReportFacts, Reserve,
    SchedulingObject, Verdict, filter_each,
};
use crate::plugins::reservation::reserve_pod::reservation_of;
use crate::registry::PluginArgsError;

/// The plugin's registered name.
pub const NAME: &str = "ElasticQuota";

/// How many refused quota objects are remembered (the latest).
const REFUSED_KEPT: usize = 32;

/// See the module documentation.
#[derive(Debug)]
pub struct ElasticQuota {
    args: ElasticQuotaArgs,
    /// Whether a quota besides the root, system and default ones exists
    /// (read without the lock on every cycle).
    active: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    tree: QuotaTree,
    /// Each node's allocatable, whose sum is the cluster total.
    allocatable: HashMap<NodeId, ResourceVector>,
    total: ResourceVector,
    refused: Vec<QuotaError>,
}

/// What PreFilter leaves for Filter: the failed check.
struct Over(QuotaCheck);

impl ElasticQuota {
    /// Builds the plugin from its `ElasticQuotaArgs`.
    pub fn build(args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(ElasticQuota::new(ElasticQuotaArgs::decode(args)?)?))
    }

    /// The plugin with these arguments.
    pub fn new(args: ElasticQuotaArgs) -> Result<ElasticQuota, PluginArgsError> {
        let (system_max, default_max) = args.group_maxes()?;
        let state = State {
            tree: QuotaTree::new(system_max, default_max),
            allocatable: HashMap::new(),
            total: ResourceVector::EMPTY,
            refused: Vec::new(),
        };
        Ok(ElasticQuota { args, active: AtomicBool::new(false), state: Mutex::new(state) })
    }

    /// Its arguments.
    pub fn args(&self) -> &ElasticQuotaArgs {
        &self.args
    }

    /// Runs `f` on the quota tree (brought up to date): for status reports
    /// and tests.
    pub fn with_tree<R>(&self, f: impl FnOnce(&mut QuotaTree) -> R) -> R {
        let mut state = self.lock();
        state.tree.ensure_current();
        f(&mut state.tree)
    }

    /// The latest quota objects refused, with why.
    pub fn refused(&self) -> Vec<QuotaError> {
        self.lock().refused.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the tree half-updated in a way
        // that matters more than stopping would: keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// Applies a quota object, remembering a refusal.
    fn apply_quota(&self, state: &mut State, object: &kolo_api::crd::ElasticQuota) {
        let result = QuotaSpec::from_object(object).and_then(|spec| state.tree.apply(spec));
        if let Err(error) = result {
            if state.refused.len() == REFUSED_KEPT {
                state.refused.remove(0);
            }
            state.refused.push(error);
        }
        self.active.store(state.tree.has_user_quotas(), Ordering::Relaxed);
    }

    /// Whether removing some pod of the quota could make room: the pod may
    /// preempt and a preemptible, lower-priority pod of its quota is
    /// assigned.
    fn preemption_may_help(&self, tree: &QuotaTree, pod: &PodInfo, check: &QuotaCheck) -> bool {
        if never_preempts(pod) {
            return false;
        }
        let facts = pod_facts(pod);
        let best_effort =
            matches!(pod.view().priority_class(), PriorityClass::Batch | PriorityClass::Free);
        tree.members(check.quota).any(|c| {
            c.assigned
                && !(best_effort && c.facts.protected)
                && can_preempt(tree, &self.args, check.quota, facts.priority, &c.facts.key)
        })
    }
}

/// Whether `pod` stands for a Reservation: the room it holds is for the
/// reservation's owners, whose quotas count their own pods, so it counts
/// in no quota (Koordinator's quota plugin sees reservations not at all).
fn is_reserve_pod(pod: &PodInfo) -> bool {
    reservation_of(pod).is_some()
}

/// What the tree keeps of a pod.
pub fn pod_facts(pod: &PodInfo) -> PodFacts {
    let view = pod.view();
    PodFacts {
        key: pod.key().into(),
        namespace: view.namespace().into(),
        quota_label: view.label(label::QUOTA_NAME).map(Into::into),
        request: *view.requests(),
        non_preemptible: view.label(label::QUOTA_PREEMPTIBLE) == Some("false"),
        priority: view.priority(),
        protected: view.priority_class() == PriorityClass::Prod
            || matches!(view.qos(), QoSClass::LS | QoSClass::LSR | QoSClass::LSE),
    }
}

/// `spec.preemptionPolicy: Never`.
fn never_preempts(pod: &PodInfo) -> bool {
    let spec = pod.pod().spec.as_ref();
    spec.and_then(|s| s.preemption_policy.as_deref()) == Some("Never")
}

impl Plugin for ElasticQuota {
    fn name(&self) -> &'static str {
        NAME
    }

    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self)
            .pre_filter()
            .filter()
            .reserve()
            .event_handler()
            .preemption_guard()
            .report_facts()
            .into()
    }

    /// Filter rejects only pods over their quota, and then every node
    /// alike: a pod within its quota (or no quota in use) passes trivially.
    fn trivially_passes(&self, pod: &PodInfo) -> bool {
        if !self.is_active() {
            return true;
        }
        let mut state = self.lock();
        check_pod(&mut state.tree, &self.args, &pod_facts(pod)).over.is_none()
    }

    /// Quota frees up when pods go (assigned or pending: a sibling's
    /// request shrinks), when quotas change, and when the cluster grows.
    fn events_to_register(&self) -> EventKinds {
        EventKinds::QUOTA
            | EventKinds::POD_DELETE
            | EventKinds::POD_PENDING
            | EventKinds::NODE_ADD
            | EventKinds::NODE_UPDATE
    }
}

impl PreFilter for ElasticQuota {
    fn pre_filter(
        &self,
        _ctx: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        if !self.is_active() || is_reserve_pod(pod) {
            return PreFilterOutcome::Skip;
        }
        let mut guard = self.lock();
        let check = check_pod(&mut guard.tree, &self.args, &pod_facts(pod));
        let Some(message) = check.message() else { return PreFilterOutcome::Skip };
        if check.non_preemptible.is_some() || !self.preemption_may_help(&guard.tree, pod, &check) {
            return PreFilterOutcome::Reject(Rejection::unschedulable(message.to_string()));
        }
        drop(guard);
        state.write(Over(check));
        PreFilterOutcome::Proceed
    }
}

impl Filter for ElasticQuota {
    fn filter(
        &self,
        _ctx: &CycleContext,
        state: &CycleState,
        _pod: &PodInfo,
        _node: &NodeInfo,
    ) -> Verdict {
        match state.read::<Over>().and_then(|o| o.0.message()) {
            Some(message) => Err(Rejection::unschedulable(message.to_string())),
            None => Ok(()),
        }
    }

    fn filter_nodes(
        &self,
        _ctx: &CycleContext,
        state: &CycleState,
        _pod: &PodInfo,
        nodes: &[NodeInfo],
        plugin: u16,
        out: &mut [NodeVerdict],
    ) {
        let Some(message) = state.read::<Over>().and_then(|o| o.0.message()) else { return };
        let rejection = Rejection::unschedulable(message.to_string());
        filter_each(nodes, plugin, out, |_| Err(rejection.clone()));
    }

    /// The pod fits its quota once the removed pods of its quota are gone.
    fn filter_without(
        &self,
        _ctx: &CycleContext,
        state: &CycleState,
        _pod: &PodInfo,
        _node: &NodeInfo,
        removed: &[&PodInfo],
    ) -> Verdict {
        let Some(Over(check)) = state.read::<Over>() else { return Ok(()) };
        let guard = self.lock();
        let mask = guard.tree.node(check.quota).max_keys();
        let freed = removed
            .iter()
            .filter_map(|p| guard.tree.pod(p.key()))
            .filter(|c| c.assigned && c.quota == check.quota)
            .fold(ResourceVector::EMPTY, |sum, c| sum + c.facts.request.mask(mask));
        match check.first_failure_without(&freed) {
            None => Ok(()),
            Some(_) => {
                Err(Rejection::unschedulable(check.message().unwrap_or_default().to_string()))
            }
        }
    }
}

impl Reserve for ElasticQuota {
    fn reserve(
        &self,
        _ctx: &CycleContext,
        _state: &CycleState,
        pod: &PodInfo,
        _node: &NodeInfo,
    ) -> Result<(), Rejection> {
        if !is_reserve_pod(pod) {
            self.lock().tree.pod_assigned(pod_facts(pod));
        }
        Ok(())
    }

    fn unreserve(&self, _ctx: &CycleContext, pod: &PodInfo, _node: &NodeInfo) {
        self.lock().tree.pod_unassigned(pod.key());
    }
}

impl PreemptionGuard for ElasticQuota {
    fn may_evict(&self, preemptor: &PodInfo, victim: &PodInfo) -> bool {
        if !self.is_active() {
            return true;
        }
        let mut guard = self.lock();
        let tree = &mut guard.tree;
        tree.ensure_current();
        let view = preemptor.view();
        let quota = tree.quota_for(view.label(label::QUOTA_NAME), view.namespace());
        can_preempt(tree, &self.args, quota, view.priority(), victim.key())
    }
}

impl ClusterEventHandler for ElasticQuota {
    fn on_event(&self, event: &ClusterEvent<'_>) {
        let mut guard = self.lock();
        let state = &mut *guard;
        match *event {
            ClusterEvent::PodAdded { pod, .. } if is_reserve_pod(pod) => {}
            ClusterEvent::PodAdded { pod, .. } if pod.view().is_terminated() => {
                state.tree.pod_unassigned(pod.key());
            }
            ClusterEvent::PodAdded { pod, .. } => state.tree.pod_assigned(pod_facts(pod)),
            ClusterEvent::PodRemoved { pod, .. } => state.tree.pod_unassigned(pod.key()),
            ClusterEvent::NodeAdded(node) | ClusterEvent::NodeUpdated(node) => {
                let new = *node.view().allocatable();
                let old = state.allocatable.insert(node.id(), new).unwrap_or_default();
                state.total = state.total - old + new;
                state.tree.set_cluster_total(state.total);
            }
            ClusterEvent::NodeRemoved { id, .. } => {
                if let Some(old) = state.allocatable.remove(&id) {
                    state.total -= old;
                    state.tree.set_cluster_total(state.total);
                }
            }
            ClusterEvent::NodeMetricUpdated { .. } | ClusterEvent::NodeMetricRemoved { .. } => {}
        }
    }

    fn on_object(&self, event: &ObjectEvent<'_>) {
        let mut guard = self.lock();
        let state = &mut *guard;
        match *event {
            ObjectEvent::Applied(SchedulingObject::ElasticQuota(quota)) => {
                self.apply_quota(state, quota);
            }
            ObjectEvent::Removed(reference) if reference.kind == ObjectKind::ElasticQuota => {
                let name = reference.key.rsplit('/').next().unwrap_or_default();
                state.tree.remove(name);
                self.active.store(state.tree.has_user_quotas(), Ordering::Relaxed);
            }
            ObjectEvent::PendingPodAdded(pod) if is_reserve_pod(pod) => {}
            ObjectEvent::PendingPodAdded(pod) => state.tree.pod_pending(pod_facts(pod)),
            ObjectEvent::PendingPodRemoved(pod) => state.tree.pod_not_pending(pod.key()),
            ObjectEvent::Applied(_) | ObjectEvent::Removed(_) => {}
        }
    }
}

impl ReportFacts for ElasticQuota {
    /// The pod's quota ([`QuotaFacts`]), once any quota besides the
    /// built-in ones exists (else no quota decides anything).
    fn pod_facts(
        &self,
        _: &CycleContext,
        _: &CycleState,
        pod: &PodInfo,
        node: Option<&NodeInfo>,
    ) -> Option<Facts> {
        if !self.is_active() || is_reserve_pod(pod) {
            return None;
        }
        let mut guard = self.lock();
        let facts = QuotaFacts::of(&mut guard.tree, &self.args, &pod_facts(pod), node.is_some());
        Some(Facts::new(facts))
    }
}
