//! The LoadAwareScheduling plugin: the framework adapter around this
//! module's pure decisions. It keeps a [`NodeProfile`] and a [`NodeLoad`]
//! per node (indexed by node id) in step with cluster events, estimates the
//! incoming pod once per cycle, and calls [`filter`] / [`score`] per node.
//!
//! Spec §1.7's Reserve (assign the pod in the cache) and Unreserve happen
//! through cluster events: the scheduler assumes a pod before Reserve and
//! reports it as a [`ClusterEvent::PodAdded`], and a forgotten pod as
//! [`ClusterEvent::PodRemoved`], so a Reserve here would add it twice.
//!
//! Its verdict on a node reads only that node's profile, NodeMetric and
//! pods, so its queueing hints are node-scoped: a NodeMetric update wakes
//! only the pods it rejected on that node.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use kolo_core::clock::Timestamp;
use kolo_core::usage_report::NodeUsageReport;
use rayon::prelude::*;

use super::{
    AssignedPod, LoadAwareConfig, LoadAwareSchedulingArgs, LoadVector, NodeLoad, NodeLoadFacts,
    NodeProfile, PodFacts, PodLoadFacts, filter, is_tracked, owned_by_daemonset, score,
};
use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, ExtensionPoints,
    Facts, Filter, NodeInfo, NodeVerdict, PerNode, Plugin, PodInfo, PreFilter, PreFilterOutcome,
    Rejection, ReportFacts, Score, ScoreSink, Verdict, filter_each, score_each,
};
use crate::registry::{PluginArgsError, decode_args};

/// The plugin's registered name.
pub const NAME: &str = "LoadAwareScheduling";

/// See the module documentation.
pub struct LoadAwareScheduling {
    cfg: Arc<LoadAwareConfig>,
    /// Written by cluster events, read by Filter and Score (one lock per
    /// batch of nodes).
    nodes: RwLock<PerNode<NodeState>>,
}

struct NodeState {
    profile: NodeProfile,
    load: NodeLoad,
}

/// The incoming pod, estimated once per cycle.
struct PodState {
    facts: PodFacts,
    estimate: LoadVector,
}

impl LoadAwareScheduling {
    /// Builds the plugin from `LoadAwareSchedulingArgs` (spec §1.1 names and
    /// defaults).
    pub fn build(args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        let args: LoadAwareSchedulingArgs = match args {
            None => LoadAwareSchedulingArgs::empty(),
            Some(_) => decode_args(args, "LoadAwareSchedulingArgs")?,
        };
        let cfg = LoadAwareConfig::new(args).map_err(PluginArgsError::from_validation)?;
        Ok(Arc::new(LoadAwareScheduling { cfg: Arc::new(cfg), nodes: RwLock::default() }))
    }

    fn pod_state(&self, pod: &PodInfo) -> PodState {
        let mut facts = PodFacts::new(pod.view());
        facts.daemonset = owned_by_daemonset(pod.pod());
        let (estimate, _) = self.cfg.estimate_pod(pod.view());
        PodState { facts, estimate }
    }

    fn read(&self) -> RwLockReadGuard<'_, PerNode<NodeState>> {
        self.nodes.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, PerNode<NodeState>> {
        self.nodes.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn node_mut<'a>(
        &self,
        nodes: &'a mut PerNode<NodeState>,
        node: &NodeInfo,
    ) -> &'a mut NodeState {
        nodes.get_or_insert_with(node.id(), || NodeState {
            profile: NodeProfile::new(node.view(), &self.cfg),
            load: NodeLoad::new(),
        })
    }

    fn check(
        &self,
        nodes: &PerNode<NodeState>,
        pod: &PodState,
        node: &NodeInfo,
        now: Timestamp,
    ) -> Verdict {
        // A node this plugin has not seen has no NodeMetric: it passes, as
        // the reference passes nodes without a koordlet.
        let Some(state) = nodes.get(node.id()) else { return Ok(()) };
        filter(&self.cfg, &state.profile, Some(&state.load), &pod.facts, &pod.estimate, now)
            .map_err(|failure| {
                Rejection::unschedulable(failure.to_string())
                    .with_detail(failure.explain().to_string())
            })
    }

    fn score_node(
        &self,
        nodes: &PerNode<NodeState>,
        pod: &PodState,
        node: &NodeInfo,
        now: Timestamp,
    ) -> i64 {
        match nodes.get(node.id()) {
            Some(state) => {
                score(&self.cfg, &state.profile, Some(&state.load), &pod.facts, &pod.estimate, now)
            }
            None => 0,
        }
    }

    fn assign(
        &self,
        nodes: &mut PerNode<NodeState>,
        pod: &PodInfo,
        node: &NodeInfo,
        at: Timestamp,
    ) {
        if !is_tracked(pod.view()) {
            return;
        }
        let assigned = AssignedPod::new(
            pod.view(),
            pod.pod_scheduled_time(),
            pod.initialized_time(),
            at,
            &self.cfg,
        );
        self.node_mut(nodes, node).load.add_pod(assigned);
    }
}

impl Plugin for LoadAwareScheduling {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        let points = ExtensionPoints::of(self).pre_filter().filter().score();
        points.event_handler().node_scoped_hints().report_facts().into()
    }
    fn events_to_register(&self) -> EventKinds {
        // Spec §1: pod deletes and NodeMetric changes; node changes too
        // (allocatable, threshold annotation).
        EventKinds::POD_DELETE
            | EventKinds::NODE_METRIC
            | EventKinds::NODE_ADD
            | EventKinds::NODE_UPDATE
    }
    fn supports_equivalence(&self) -> bool {
        true
    }
    fn node_updates_are_local(&self) -> bool {
        // Per-node state only: the node's profile, NodeMetric and assigned
        // pods.
        true
    }
    fn valid_until(&self, node: &NodeInfo, now: Timestamp) -> Option<Timestamp> {
        // Results change when the NodeMetric expires; once expired, they
        // stay as they are until the next report (an event).
        let updated = self.read().get(node.id())?.load.update_time()?;
        let expires = updated.checked_add(self.cfg.expiration()).ok()?;
        (now < expires).then_some(expires)
    }
}

impl PreFilter for LoadAwareScheduling {
    fn pre_filter(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        state.write(self.pod_state(pod));
        PreFilterOutcome::Proceed
    }
}

impl Filter for LoadAwareScheduling {
    fn filter(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        let mut owned = None;
        let p = state.read_or(&mut owned, || self.pod_state(pod));
        self.check(&self.read(), p, node, ctx.now)
    }

    fn filter_nodes(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        plugin: u16,
        out: &mut [NodeVerdict],
    ) {
        let mut owned = None;
        let p = state.read_or(&mut owned, || self.pod_state(pod));
        let states = self.read();
        filter_each(nodes, plugin, out, |node| self.check(&states, p, node, ctx.now));
    }
}

impl Score for LoadAwareScheduling {
    fn score(&self, ctx: &CycleContext, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let mut owned = None;
        let p = state.read_or(&mut owned, || self.pod_state(pod));
        self.score_node(&self.read(), p, node, ctx.now)
    }

    fn score_nodes(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        verdicts: &[NodeVerdict],
        out: &mut ScoreSink<'_>,
    ) {
        let mut owned = None;
        let p = state.read_or(&mut owned, || self.pod_state(pod));
        let states = self.read();
        score_each(nodes, verdicts, out, |node| self.score_node(&states, p, node, ctx.now));
    }
}

impl ReportFacts for LoadAwareScheduling {
    fn pod_facts(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        _: Option<&NodeInfo>,
    ) -> Option<Facts> {
        let mut owned = None;
        let p = state.read_or(&mut owned, || self.pod_state(pod));
        Some(Facts::new(PodLoadFacts::new(&self.cfg, &p.facts, &p.estimate)))
    }

    fn node_facts(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Option<Facts> {
        let mut owned = None;
        let p = state.read_or(&mut owned, || self.pod_state(pod));
        let nodes = self.read();
        // A node never seen has the profile it would get on its first event.
        let seen = nodes.get(node.id());
        let profile =
            seen.map_or_else(|| NodeProfile::new(node.view(), &self.cfg), |s| s.profile.clone());
        let load = seen.map(|s| &s.load);
        let facts = NodeLoadFacts::new(&self.cfg, &profile, load, &p.facts, &p.estimate, ctx.now);
        Some(Facts::new(facts))
    }
}

impl ClusterEventHandler for LoadAwareScheduling {
    fn on_node_metrics(&self, updates: &[(&NodeInfo, &Arc<NodeUsageReport>)]) {
        // Each node's load is its own: re-account the updated nodes in
        // parallel (a thousand nodes a minute report in a large cluster or
        // in `kolo sim`). A node listed twice gets the cache's (latest)
        // report either way.
        let mut nodes = self.write();
        let mut latest: Vec<Option<&Arc<NodeUsageReport>>> = Vec::new();
        for &(node, metric) in updates {
            self.node_mut(&mut nodes, node);
            let i = node.id().index();
            if latest.len() <= i {
                latest.resize(i + 1, None);
            }
            latest[i] = Some(metric);
        }
        let cfg = &self.cfg;
        nodes.slots_mut().par_iter_mut().zip(latest).with_min_len(16).for_each(|(slot, metric)| {
            if let (Some(state), Some(metric)) = (slot.as_mut(), metric) {
                state.load.set_usage_report(metric.clone(), cfg);
            }
        });
    }

    fn on_event(&self, event: &ClusterEvent<'_>) {
        let mut nodes = self.write();
        match *event {
            ClusterEvent::NodeAdded(node) | ClusterEvent::NodeUpdated(node) => {
                let profile = NodeProfile::new(node.view(), &self.cfg);
                self.node_mut(&mut nodes, node).profile = profile;
            }
            ClusterEvent::NodeRemoved { id, .. } => nodes.remove(id),
            ClusterEvent::PodAdded { pod, node, at, .. } => self.assign(&mut nodes, pod, node, at),
            ClusterEvent::PodRemoved { pod, node } => {
                if let Some(state) = nodes.get_mut(node) {
                    state.load.remove_pod(pod.key());
                }
            }
            ClusterEvent::NodeMetricUpdated { node, metric } => {
                self.node_mut(&mut nodes, node).load.set_usage_report(metric.clone(), &self.cfg);
            }
            ClusterEvent::NodeMetricRemoved { node } => {
                if let Some(state) = nodes.get_mut(node.id()) {
                    state.load.clear_node_metric();
                }
            }
        }
    }
}
