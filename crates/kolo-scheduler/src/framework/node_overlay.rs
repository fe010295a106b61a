//! Per-cycle node overlays: pods a PreFilter plugin asks the Filter and
//! Score plugins not to see on some nodes, for the pod being scheduled
//! only.
//!
//! A reservation's placeholder ("reserve pod") holds resources on its node
//! against every pod but its owners: for an owner, the Reservation plugin
//! writes a [`NodeOverlay`] naming the reserve pod, and the framework then
//! filters and scores copies of those nodes without it (its requests and
//! pod slot taken out, as [`PostFilterCluster::fits_without`] does for
//! preemption victims). The framework knows nothing of reservations: any
//! PreFilter plugin may write an overlay.
//!
//! Cost: nothing unless a plugin writes a non-empty overlay; then the
//! cycle works on a copy of the node list (as it does when preemption has
//! nominated pods) and bypasses the equivalence cache, whose results are
//! keyed by the cache's own nodes.
//!
//! [`PostFilterCluster::fits_without`]: super::PostFilterCluster::fits_without

use std::sync::Arc;

use super::{CycleState, NodeId, PodInfo};

/// Pods to leave out of some nodes for this cycle's pod. Stored in the
/// [`CycleState`] by PreFilter plugins ([`NodeOverlay::extend`]), read by the
/// framework after PreFilter.
#[derive(Debug, Clone, Default)]
pub struct NodeOverlay {
    removed: Vec<(NodeId, Arc<PodInfo>)>,
}

impl NodeOverlay {
    /// Asks that each `(node, pod)` — a pod the scheduler counts on that
    /// node — be left out of the node for this cycle (added to what other
    /// plugins asked). Each pod must be exactly the one counted (as a
    /// cluster event delivered it): the framework subtracts its requests.
    pub fn extend(state: &mut CycleState, pods: impl IntoIterator<Item = (NodeId, Arc<PodInfo>)>) {
        let mut overlay = state.read::<NodeOverlay>().cloned().unwrap_or_default();
        let before = overlay.removed.len();
        overlay.removed.extend(pods);
        if overlay.removed.len() > before {
            state.write(overlay);
        }
    }

    /// The pods to leave out, with their nodes, in the order asked.
    pub fn removed(&self) -> &[(NodeId, Arc<PodInfo>)] {
        &self.removed
    }

    /// Whether nothing is left out.
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty()
    }
}
