//! The NodeNUMAResource plugin: the framework adapter around this module's
//! pure decisions. It keeps each node's [`NodeTopology`] (rebuilt when the
//! node changes) and [`NodeAllocation`] (the cpusets and NUMA resources its
//! pods hold, from their `resource-status` annotations and from Reserve),
//! and writes the chosen cpuset into the pod's annotations at PreBind.

use std::collections::HashMap;

use kolo_api::names::annotation;
use kolo_core::resources::ResourceName;

use super::{
    NodeAllocation, NodeNUMAResourceArgs, NodeTopology, NumaAllocationResult, NumaFailure,
    PodNumaRequest, check_amplified_cpu, filter, pod_allocation_from_status, reserve,
    resource_spec_write_back, resource_status_annotation, score,
};
use crate::binder::BindRequest;
use crate::framework::{
    ClusterEvent, ClusterEventHandler, Code, CycleContext, CycleState, EventKinds, Filter,
    NodeInfo, NodeVerdict, Plugin, PodInfo, PreBind, PreFilter, PreFilterOutcome, Rejection,
    Reserve, Score, ScoreSink, Verdict, filter_each, score_each,
};
use crate::registry::{PluginArgsError, decode_args};

/// The plugin's registered name.
pub const NAME: &str = "NodeNUMAResource";

/// See the module documentation.
pub struct NodeNUMAResource {
    args: NodeNUMAResourceArgs,
    nodes: Vec<Option<NumaNode>>,
    /// What Reserve chose, per pod, for PreBind to write.
    reserved: HashMap<Box<str>, NumaAllocationResult>,
}

struct NumaNode {
    topology: NodeTopology,
    allocation: NodeAllocation,
}

impl NodeNUMAResource {
    /// Builds the plugin from `NodeNUMAResourceArgs` (spec §6.1).
    pub fn build(args: Option<&serde_json::Value>) -> Result<Box<dyn Plugin>, PluginArgsError> {
        let args: NodeNUMAResourceArgs = decode_args(args, "NodeNUMAResourceArgs")?;
        args.validate().map_err(|e| {
            let text = e.to_string();
            match text.split_once(": ") {
                Some((field, message)) => PluginArgsError::new(field, message),
                None => PluginArgsError::new(".", text),
            }
        })?;
        Ok(Box::new(NodeNUMAResource { args, nodes: Vec::new(), reserved: HashMap::new() }))
    }

    fn node(&self, node: &NodeInfo) -> Option<&NumaNode> {
        self.nodes.get(node.id().index()).and_then(Option::as_ref)
    }

    fn node_mut(&mut self, node: &NodeInfo) -> &mut NumaNode {
        let i = node.id().index();
        if self.nodes.len() <= i {
            self.nodes.resize_with(i + 1, || None);
        }
        self.nodes[i].get_or_insert_with(|| NumaNode {
            topology: NodeTopology::from_node(node.view()),
            allocation: NodeAllocation::default(),
        })
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
    fn score_node(&self, req: &PodNumaRequest, node: &NodeInfo) -> i64 {
        self.node(node).map_or(0, |numa| {
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
    fn as_pre_filter(&self) -> Option<&dyn PreFilter> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn Filter> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn Score> {
        Some(self)
    }
    fn as_reserve(&mut self) -> Option<&mut dyn Reserve> {
        Some(self)
    }
    fn as_pre_bind(&self) -> Option<&dyn PreBind> {
        Some(self)
    }
    fn as_event_handler(&mut self) -> Option<&mut dyn ClusterEventHandler> {
        Some(self)
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
        Self::check(req, self.node(node), node)
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
                filter_each(nodes, plugin, out, |node| Self::check(req, self.node(node), node))
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
        self.cycle_request(state, &mut owned, pod).map_or(0, |req| self.score_node(req, node))
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
            score_each(nodes, verdicts, out, |node| self.score_node(req, node));
        }
    }
}

impl Reserve for NodeNUMAResource {
    fn reserve(
        &mut self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<(), Rejection> {
        let Some(req) = state.read::<PodNumaRequest>() else {
            // Skipped at PreFilter (no requests): nothing to reserve.
            return Ok(());
        };
        let numa = self.node_mut(node);
        let result = reserve(req, &numa.topology, &numa.allocation).map_err(rejection)?;
        if !result.is_empty() {
            result.record(&mut numa.allocation, pod.key());
        }
        self.reserved.insert(pod.key().into(), result);
        Ok(())
    }

    fn unreserve(&mut self, _: &CycleContext, pod: &PodInfo, node: &NodeInfo) {
        self.reserved.remove(pod.key());
        if let Some(Some(numa)) = self.nodes.get_mut(node.id().index()) {
            numa.allocation.release(pod.key());
        }
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
        let (Some(req), Some(result)) =
            (state.read::<PodNumaRequest>(), self.reserved.get(pod.key()))
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

impl ClusterEventHandler for NodeNUMAResource {
    fn on_event(&mut self, event: &ClusterEvent<'_>) {
        match *event {
            ClusterEvent::NodeAdded(node) | ClusterEvent::NodeUpdated(node) => {
                let topology = NodeTopology::from_node(node.view());
                self.node_mut(node).topology = topology;
            }
            ClusterEvent::NodeRemoved { id, .. } => {
                if let Some(slot) = self.nodes.get_mut(id.index()) {
                    *slot = None;
                }
            }
            ClusterEvent::PodAdded { pod, node, .. } => {
                // A bound pod's cpuset, as its annotation records it. A
                // malformed annotation holds nothing (kolo cannot know
                // which CPUs it meant); its pod still runs.
                if let Ok(Some(held)) = pod_allocation_from_status(pod.view()) {
                    self.node_mut(node).allocation.add(
                        pod.key(),
                        held.cpuset,
                        held.exclusive_policy,
                        held.numa_resources,
                    );
                }
            }
            ClusterEvent::PodRemoved { pod, node } => {
                self.reserved.remove(pod.key());
                if let Some(Some(numa)) = self.nodes.get_mut(node.index()) {
                    numa.allocation.release(pod.key());
                }
            }
            ClusterEvent::NodeMetricUpdated { .. } | ClusterEvent::NodeMetricRemoved { .. } => {}
        }
    }
}
