//! The LoadAwareScheduling plugin: the framework adapter around this
//! module's pure decisions. It keeps a [`NodeProfile`] and a [`NodeLoad`]
//! per node (indexed by node id) in step with cluster events, estimates the
//! incoming pod once per cycle, and calls [`filter`] / [`score`] per node.
//!
//! Spec §1.7's Reserve (assign the pod in the cache) and Unreserve happen
//! through cluster events: the scheduler assumes a pod before Reserve and
//! reports it as a [`ClusterEvent::PodAdded`], and a forgotten pod as
//! [`ClusterEvent::PodRemoved`], so a Reserve here would add it twice.

use std::sync::Arc;

use kolo_core::clock::Timestamp;
use kolo_core::usage_report::NodeUsageReport;
use rayon::prelude::*;

use super::{
    AssignedPod, LoadAwareConfig, LoadAwareSchedulingArgs, LoadVector, NodeLoad, NodeProfile,
    PodFacts, filter, is_tracked, owned_by_daemonset, score,
};
use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, Filter, NodeInfo,
    NodeVerdict, Plugin, PodInfo, PreFilter, PreFilterOutcome, Rejection, Score, ScoreSink,
    Verdict, filter_each, score_each,
};
use crate::registry::{PluginArgsError, decode_args};

/// The plugin's registered name.
pub const NAME: &str = "LoadAwareScheduling";

/// See the module documentation.
pub struct LoadAwareScheduling {
    cfg: Arc<LoadAwareConfig>,
    nodes: Vec<Option<NodeState>>,
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
    pub fn build(args: Option<&serde_json::Value>) -> Result<Box<dyn Plugin>, PluginArgsError> {
        let args: LoadAwareSchedulingArgs = match args {
            None => LoadAwareSchedulingArgs::empty(),
            Some(_) => decode_args(args, "LoadAwareSchedulingArgs")?,
        };
        let cfg = LoadAwareConfig::new(args).map_err(|e| {
            let text = e.to_string();
            match text.split_once(": ") {
                Some((field, message)) => PluginArgsError::new(field, message),
                None => PluginArgsError::new(".", text),
            }
        })?;
        Ok(Box::new(LoadAwareScheduling { cfg: Arc::new(cfg), nodes: Vec::new() }))
    }

    fn pod_state(&self, pod: &PodInfo) -> PodState {
        let mut facts = PodFacts::new(pod.view());
        facts.daemonset = owned_by_daemonset(pod.pod());
        let (estimate, _) = self.cfg.estimate_pod(pod.view());
        PodState { facts, estimate }
    }

    fn node(&self, node: &NodeInfo) -> Option<&NodeState> {
        self.nodes.get(node.id().index()).and_then(Option::as_ref)
    }

    fn node_mut(&mut self, node: &NodeInfo) -> &mut NodeState {
        let i = node.id().index();
        if self.nodes.len() <= i {
            self.nodes.resize_with(i + 1, || None);
        }
        let cfg = &self.cfg;
        self.nodes[i].get_or_insert_with(|| NodeState {
            profile: NodeProfile::new(node.view(), cfg),
            load: NodeLoad::new(),
        })
    }

    fn check(&self, pod: &PodState, node: &NodeInfo, now: Timestamp) -> Verdict {
        // A node this plugin has not seen has no NodeMetric: it passes, as
        // the reference passes nodes without a koordlet.
        let Some(state) = self.node(node) else { return Ok(()) };
        filter(&self.cfg, &state.profile, Some(&state.load), &pod.facts, &pod.estimate, now)
            .map_err(|failure| {
                Rejection::unschedulable(failure.to_string())
                    .with_detail(failure.explain().to_string())
            })
    }

    fn score_node(&self, pod: &PodState, node: &NodeInfo, now: Timestamp) -> i64 {
        match self.node(node) {
            Some(state) => {
                score(&self.cfg, &state.profile, Some(&state.load), &pod.facts, &pod.estimate, now)
            }
            None => 0,
        }
    }

    fn assign(&mut self, pod: &PodInfo, node: &NodeInfo, at: Timestamp) {
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
        self.node_mut(node).load.add_pod(assigned);
    }
}

impl Plugin for LoadAwareScheduling {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilter> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn Filter> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn Score> {
        Some(self)
    }
    fn as_event_handler(&mut self) -> Option<&mut dyn ClusterEventHandler> {
        Some(self)
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
        let updated = self.node(node)?.load.update_time()?;
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
        self.check(state.read_or(&mut owned, || self.pod_state(pod)), node, ctx.now)
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
        filter_each(nodes, plugin, out, |node| self.check(p, node, ctx.now));
    }
}

impl Score for LoadAwareScheduling {
    fn score(&self, ctx: &CycleContext, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let mut owned = None;
        self.score_node(state.read_or(&mut owned, || self.pod_state(pod)), node, ctx.now)
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
        score_each(nodes, verdicts, out, |node| self.score_node(p, node, ctx.now));
    }
}

impl ClusterEventHandler for LoadAwareScheduling {
    fn on_node_metrics(&mut self, updates: &[(&NodeInfo, &Arc<NodeUsageReport>)]) {
        // Each node's load is its own: re-account the updated nodes in
        // parallel (a thousand nodes a minute report in a large cluster or
        // in `kolo sim`). A node listed twice gets the cache's (latest)
        // report either way.
        let mut latest: Vec<Option<&Arc<NodeUsageReport>>> = Vec::new();
        for &(node, metric) in updates {
            self.node_mut(node);
            let i = node.id().index();
            if latest.len() <= i {
                latest.resize(i + 1, None);
            }
            latest[i] = Some(metric);
        }
        let cfg = &self.cfg;
        self.nodes.par_iter_mut().zip(latest).with_min_len(16).for_each(|(slot, metric)| {
            if let (Some(state), Some(metric)) = (slot.as_mut(), metric) {
                state.load.set_usage_report(metric.clone(), cfg);
            }
        });
    }

    fn on_event(&mut self, event: &ClusterEvent<'_>) {
        match *event {
            ClusterEvent::NodeAdded(node) | ClusterEvent::NodeUpdated(node) => {
                let profile = NodeProfile::new(node.view(), &self.cfg);
                self.node_mut(node).profile = profile;
            }
            ClusterEvent::NodeRemoved { id, .. } => {
                if let Some(slot) = self.nodes.get_mut(id.index()) {
                    *slot = None;
                }
            }
            ClusterEvent::PodAdded { pod, node, at, .. } => self.assign(pod, node, at),
            ClusterEvent::PodRemoved { pod, node } => {
                if let Some(Some(state)) = self.nodes.get_mut(node.index()) {
                    state.load.remove_pod(pod.key());
                }
            }
            ClusterEvent::NodeMetricUpdated { node, metric } => {
                let cfg = self.cfg.clone();
                self.node_mut(node).load.set_usage_report(metric.clone(), &cfg);
            }
            ClusterEvent::NodeMetricRemoved { node } => {
                if let Some(Some(state)) = self.nodes.get_mut(node.id().index()) {
                    state.load.clear_node_metric();
                }
            }
        }
    }
}
