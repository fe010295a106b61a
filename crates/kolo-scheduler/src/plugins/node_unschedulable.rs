//! NodeUnschedulable: cordoned nodes (`spec.unschedulable`) take only pods
//! that tolerate the `node.kubernetes.io/unschedulable:NoSchedule` taint.

use std::sync::Arc;

use kolo_core::node::{Taint, TaintEffect};

use super::tolerations::{tolerated, tolerations};
use crate::framework::{
    CycleContext, CycleState, EventKinds, ExtensionPoints, Filter, NodeInfo, Plugin, PodInfo,
    Rejection, Verdict,
};
use crate::registry::PluginArgsError;

/// The plugin's registered name.
pub const NAME: &str = "NodeUnschedulable";
/// The taint a cordoned node implies.
pub const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";
/// The rejection reason (kube-scheduler's).
pub const REASON: &str = "node(s) were unschedulable";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct NodeUnschedulable;

impl NodeUnschedulable {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(NodeUnschedulable))
    }
}

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).filter().node_scoped_hints().into()
    }
    fn events_to_register(&self) -> EventKinds {
        EventKinds::NODE_ADD | EventKinds::NODE_UPDATE
    }
    fn supports_equivalence(&self) -> bool {
        true
    }
    fn node_updates_are_local(&self) -> bool {
        // Reads the node's spec only.
        true
    }
}

impl Filter for NodeUnschedulable {
    fn filter(&self, _: &CycleContext, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Verdict {
        if !node.is_unschedulable() {
            return Ok(());
        }
        let taint = Taint {
            key: UNSCHEDULABLE_TAINT_KEY.into(),
            value: "".into(),
            effect: TaintEffect::NoSchedule,
        };
        // Rare (cordoned nodes only), so reading tolerations here is fine.
        if tolerated(&tolerations(pod.pod()), &taint) {
            Ok(())
        } else {
            Err(Rejection::unresolvable(REASON))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::NodeId;
    use crate::testing::{node_from_yaml, pod_from_yaml};
    use kolo_core::clock::Timestamp;
    use kolo_core::node::NodeView;
    use std::sync::Arc;

    #[test]
    fn cordoned_nodes_need_the_toleration() {
        let node = |unschedulable: bool| {
            let n = node_from_yaml(&format!(
                "metadata: {{name: n}}\nspec: {{unschedulable: {unschedulable}}}\n"
            ));
            let view = NodeView::from_node(&n).unwrap();
            NodeInfo::new(NodeId(0), Arc::new(n), view)
        };
        let plain = PodInfo::new(pod_from_yaml("metadata: {name: p}")).unwrap();
        let tolerant = PodInfo::new(pod_from_yaml(
            "metadata: {name: p}\nspec:\n  containers: []\n  tolerations: [{key: node.kubernetes.io/unschedulable, operator: Exists, effect: NoSchedule}]",
        ))
        .unwrap();
        let ctx = CycleContext { now: Timestamp::UNIX_EPOCH };
        let state = CycleState::new();
        let f = |pod: &PodInfo, n: &NodeInfo| NodeUnschedulable.filter(&ctx, &state, pod, n);
        assert_eq!(f(&plain, &node(false)), Ok(()));
        assert_eq!(f(&plain, &node(true)), Err(Rejection::unresolvable(REASON)));
        assert_eq!(f(&tolerant, &node(true)), Ok(()));
    }
}
