//! The NodeNUMAResource plugin: the framework adapter around this module's
//! pure decisions. It keeps each node's [`NodeTopology`] (rebuilt when the
//! node changes) and [`NodeAllocation`] (the cpusets and NUMA resources its
//! pods hold, from their `resource-status` annotations and from Reserve),
//! and writes the chosen cpuset into the pod's annotations at PreBind.
//! Its verdict on a node reads only that node's topology and allocations,
//! so its queueing hints are node-scoped.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use kolo_api::names::annotation;
use kolo_core::resources::ResourceName;

use super::{
    NodeAllocation, NodeNUMAResourceArgs, NodeTopology, NumaAllocationFacts, NumaAllocationResult,
    NumaFailure, PodNumaRequest, check_amplified_cpu, filter, pod_allocation_from_status, reserve,
    resource_spec_write_back, resource_status_annotation, score,
};
use crate::binder::BindRequest;
use crate::framework::{
    ClusterEvent, ClusterEventHandler, Code, CycleContext, CycleState, EventKinds, ExtensionPoints,
    Facts, Filter, NodeId, NodeInfo, NodeVerdict, PerNode, Plugin, PodInfo, PreBind, PreFilter,
    PreFilterOutcome, Rejection, ReportFacts, Reserve, Score, ScoreSink, Verdict, filter_each,
    score_each,
};
use crate::registry::{PluginArgsError, decode_args};

/// The plugin's registered name.
pub const NAME: &str = "NodeNUMAResource";

/// See the module documentation.
pub struct NodeNUMAResource {
    args: NodeNUMAResourceArgs,
    /// Written by Reserve and cluster events, read by Filter, Score and
    /// PreBind (one lock per batch of nodes).
    state: RwLock<NumaState>,
}

#[derive(Default)]
struct NumaState {
    nodes: PerNode<NumaNode>,
    /// What Reserve chose, per pod, for PreBind to write.
    reserved: HashMap<Box<str>, NumaAllocationResult>,
}

struct NumaNode {
    topology: NodeTopology,
    allocation: NodeAllocation,
}

impl NodeNUMAResource {
    /// Builds the plugin from `NodeNUMAResourceArgs` (spec §6.1).
    pub fn build(args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        let args: NodeNUMAResourceArgs = decode_args(args, "NodeNUMAResourceArgs")?;
        args.validate().map_err(PluginArgsError::from_validation)?;
        Ok(Arc::new(NodeNUMAResource { args, state: RwLock::default() }))
    }

    fn read(&self) -> RwLockReadGuard<'_, NumaState> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, NumaState> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn request(&self, pod: &PodInfo) -> Result<PodNumaRequest, NumaFailure> {
        PodNumaRequest::from_pod(pod.view(), &self.args)
    }

    /// The pod's request as PreFilter stored it, or else read now (for a
    /// caller outside a full cycle), kept in `owned`.
    fn cycle_request<'a>(
        &self,
        state: &'a CycleState,
        owned: &'a mut Option<PodNumaRequest>,
        pod: &PodInfo,
    ) -> Result<&'a PodNumaRequest, NumaFailure> {
        match state.read::<PodNumaRequest>() {
            Some(req) => Ok(req),
            None => Ok(owned.insert(self.request(pod)?)),
        }
    }

    /// Score (§6.8) of `node` for the request; 0 for a node never seen.
    fn score_node(nodes: &PerNode<NumaNode>, req: &PodNumaRequest, node: &NodeInfo) -> i64 {
        nodes.get(node.id()).map_or(0, |numa| {
            score(req, &numa.topology, &numa.allocation, &|name| node.requested(name))
        })
    }

    fn check(req: &PodNumaRequest, numa: Option<&NumaNode>, node: &NodeInfo) -> Verdict {
        let Some(numa) = numa else { return Ok(()) };
        filter(req, &numa.topology, &numa.allocation)
            .and_then(|()| {
                check_amplified_cpu(
                    req,
                    &numa.topology,
                    &numa.allocation,
                    node.requested(ResourceName::Cpu),
                )
            })
            .map_err(rejection)
    }
}

fn rejection(failure: NumaFailure) -> Rejection {
    let code = if failure.is_unresolvable() {
        Code::UnschedulableAndUnresolvable
    } else {
        Code::Unschedulable
    };
    Rejection { code, reason: failure.reason.to_string().into(), detail: None }
}

impl Plugin for NodeNUMAResource {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        let points = ExtensionPoints::of(self).pre_filter().filter().score().reserve().pre_bind();
        points.event_handler().node_scoped_hints().report_facts().into()
    }
    fn events_to_register(&self) -> EventKinds {
        EventKinds::NODE_ADD | EventKinds::NODE_UPDATE | EventKinds::POD_DELETE
    }
    fn supports_equivalence(&self) -> bool {
        true
    }
    fn node_updates_are_local(&self) -> bool {
        // Per-node state only: the node's topology and allocations.
        true
    }
}

impl PreFilter for NodeNUMAResource {
    fn pre_filter(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        match self.request(pod) {
            Ok(req) if req.skip() => PreFilterOutcome::Skip,
            Ok(req) => {
                state.write(req);
                PreFilterOutcome::Proceed
            }
            Err(failure) => PreFilterOutcome::Reject(rejection(failure)),
        }
    }
}

impl Filter for NodeNUMAResource {
    fn filter(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        let mut owned = None;
        let req = self.cycle_request(state, &mut owned, pod).map_err(rejection)?;
        Self::check(req, self.read().nodes.get(node.id()), node)
    }

    fn filter_nodes(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        plugin: u16,
        out: &mut [NodeVerdict],
    ) {
        let mut owned = None;
        match self.cycle_request(state, &mut owned, pod) {
            Ok(req) => {
                let numa = &self.read().nodes;
                filter_each(nodes, plugin, out, |node| Self::check(req, numa.get(node.id()), node))
            }
            Err(failure) => {
                let rejection = rejection(failure);
                filter_each(nodes, plugin, out, |_| Err(rejection.clone()));
            }
        }
    }
}

impl Score for NodeNUMAResource {
    fn score(&self, _: &CycleContext, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let mut owned = None;
        let req = self.cycle_request(state, &mut owned, pod);
        req.map_or(0, |req| Self::score_node(&self.read().nodes, req, node))
    }

    fn score_nodes(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        verdicts: &[NodeVerdict],
        out: &mut ScoreSink<'_>,
    ) {
        let mut owned = None;
        if let Ok(req) = self.cycle_request(state, &mut owned, pod) {
            let numa = &self.read().nodes;
            score_each(nodes, verdicts, out, |node| Self::score_node(numa, req, node));
        }
    }
}

impl Reserve for NodeNUMAResource {
    fn reserve(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<(), Rejection> {
        let Some(req) = state.read::<PodNumaRequest>() else {
            // Skipped at PreFilter (no requests): nothing to reserve.
            return Ok(());
        };
        let mut numa_state = self.write();
        let numa = node_mut(&mut numa_state.nodes, node);
        let result = reserve(req, &numa.topology, &numa.allocation).map_err(rejection)?;
        if !result.is_empty() {
            result.record(&mut numa.allocation, pod.key());
        }
        numa_state.reserved.insert(pod.key().into(), result);
        Ok(())
    }

    fn unreserve(&self, _: &CycleContext, pod: &PodInfo, node: &NodeInfo) {
        self.write().release(pod, node.id());
    }
}

impl PreBind for NodeNUMAResource {
    fn pre_bind(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        _: &NodeInfo,
        request: &mut BindRequest,
    ) -> Result<(), Rejection> {
        let numa_state = self.read();
        let (Some(req), Some(result)) =
            (state.read::<PodNumaRequest>(), numa_state.reserved.get(pod.key()))
        else {
            return Ok(());
        };
        if result.is_empty() {
            return Ok(());
        }
        request
            .annotations
            .insert(annotation::RESOURCE_STATUS.to_string(), resource_status_annotation(result));
        if let Some(spec) = resource_spec_write_back(req, result) {
            request.annotations.insert(annotation::RESOURCE_SPEC.to_string(), spec);
        }
        Ok(())
    }
}

impl ReportFacts for NodeNUMAResource {
    /// What Reserve took for the pod, once it has: the data of the
    /// `resource-status` annotation PreBind writes.
    fn pod_facts(
        &self,
        _: &CycleContext,
        _: &CycleState,
        pod: &PodInfo,
        node: Option<&NodeInfo>,
    ) -> Option<Facts> {
        node?;
        let result = self.read().reserved.get(pod.key()).cloned()?;
        (!result.is_empty()).then(|| Facts::new(NumaAllocationFacts::new(&result)))
    }
}

impl NumaState {
    /// Forgets what `pod` holds on `node` and what Reserve chose for it.
    fn release(&mut self, pod: &PodInfo, node: NodeId) {
        self.reserved.remove(pod.key());
        if let Some(numa) = self.nodes.get_mut(node) {
            numa.allocation.release(pod.key());
        }
    }
}

/// The node's state, created from its object on first use.
fn node_mut<'a>(nodes: &'a mut PerNode<NumaNode>, node: &NodeInfo) -> &'a mut NumaNode {
    nodes.get_or_insert_with(node.id(), || NumaNode {
        topology: NodeTopology::from_node(node.view()),
        allocation: NodeAllocation::default(),
    })
}

impl ClusterEventHandler for NodeNUMAResource {
    fn on_event(&self, event: &ClusterEvent<'_>) {
        let mut state = self.write();
        match *event {
            ClusterEvent::NodeAdded(node) | ClusterEvent::NodeUpdated(node) => {
                let topology = NodeTopology::from_node(node.view());
                node_mut(&mut state.nodes, node).topology = topology;
            }
            ClusterEvent::NodeRemoved { id, .. } => state.nodes.remove(id),
            ClusterEvent::PodAdded { pod, node, .. } => {
                // A bound pod's cpuset, as its annotation records it. A
                // malformed annotation holds nothing (kolo cannot know
                // which CPUs it meant); its pod still runs.
                if let Ok(Some(held)) = pod_allocation_from_status(pod.view()) {
                    node_mut(&mut state.nodes, node).allocation.add(
                        pod.key(),
                        held.cpuset,
                        held.exclusive_policy,
                        held.numa_resources,
                    );
                }
            }
            ClusterEvent::PodRemoved { pod, node } => state.release(pod, node),
            ClusterEvent::NodeMetricUpdated { .. } | ClusterEvent::NodeMetricRemoved { .. } => {}
        }
    }
}
