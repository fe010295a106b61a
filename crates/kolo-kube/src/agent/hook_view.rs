//! What the runtime hook server answers from: the node's fields, the
//! NodeSLO and the pods' states as of the last QoS round, published by the
//! tick loop and read by the server without taking the agent's lock (a
//! tick holds it for the whole collection, a kubelet request included).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use kolo_agent::qos::{NodeState, PodState};
use kolo_api::crd::NodeSLOSpec;

/// One published view (cheap to share: everything is behind an `Arc`).
#[derive(Debug, Clone, Default)]
pub struct HookView {
    /// The node's fields without its pods (`None` before the first round).
    pub node: Option<Arc<NodeState>>,
    /// The NodeSLO the last round followed.
    pub slo: Arc<NodeSLOSpec>,
    /// The pods' states by UID.
    pub pods: Arc<HashMap<String, Arc<PodState>>>,
    /// The agent's pod generation `pods` were taken at.
    pub generation: Option<u64>,
}

/// The current [`HookView`], swapped whole by each publish.
#[derive(Debug, Default)]
pub struct HookViews {
    current: Mutex<Arc<HookView>>,
}

impl HookViews {
    /// No round yet: no node and no pods, `slo` (the NodeSLO the loop
    /// starts with).
    pub fn new(slo: NodeSLOSpec) -> HookViews {
        let view = HookView { slo: Arc::new(slo), ..HookView::default() };
        HookViews { current: Mutex::new(Arc::new(view)) }
    }

    /// The current view (the lock is held only to clone an `Arc`).
    pub fn current(&self) -> Arc<HookView> {
        Arc::clone(&self.current.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Publishes a round's `node` (with the pods of the agent's pod
    /// `generation`) and `slo`. The pods are copied only when the
    /// generation changed: every round publishes, few change the pods.
    pub fn publish(&self, node: &NodeState, slo: &NodeSLOSpec, generation: u64) {
        let old = self.current();
        let pods = if old.generation == Some(generation) {
            Arc::clone(&old.pods)
        } else {
            Arc::new(
                node.pods.iter().map(|p| (p.pod.id.uid.clone(), Arc::new(p.clone()))).collect(),
            )
        };
        let slo = if *old.slo == *slo { Arc::clone(&old.slo) } else { Arc::new(slo.clone()) };
        let view = HookView {
            node: Some(Arc::new(node.without_pods())),
            slo,
            pods,
            generation: Some(generation),
        };
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(view);
    }
}
