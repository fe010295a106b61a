//! NodeName: a pod whose `spec.nodeName` is set runs only on that node
//! (kube-scheduler's plugin).
//!
//! The scheduler never schedules such a pod — it is already assigned and
//! counted on its node — so this Filter only decides for callers that run
//! plugins on a pod directly (what-if checks of a bound pod). It reads the
//! pod once per batch of nodes and costs nothing for pods without the field.

use std::sync::Arc;

use crate::framework::{
    CycleContext, CycleState, EventKinds, ExtensionPoints, Filter, NodeInfo, NodeVerdict, Plugin,
    PodInfo, Rejection, Verdict, filter_each,
};
use crate::registry::PluginArgsError;

/// The plugin's registered name.
pub const NAME: &str = "NodeName";

/// kube-scheduler's reason.
pub const REASON: &str = "node(s) didn't match the requested node name";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct NodeName;

impl NodeName {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(NodeName))
    }

    fn wanted(pod: &PodInfo) -> Option<&str> {
        pod.pod().spec.as_ref()?.node_name.as_deref().filter(|n| !n.is_empty())
    }

    fn check(wanted: &str, node: &NodeInfo) -> Verdict {
        if wanted == node.name() { Ok(()) } else { Err(Rejection::unresolvable(REASON)) }
    }
}

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).filter().node_scoped_hints().into()
    }
    fn events_to_register(&self) -> EventKinds {
        // Only the named node appearing can help.
        EventKinds::NODE_ADD
    }
    fn supports_equivalence(&self) -> bool {
        // Reads the pod's nodeName (in the signature) and the node's name.
        true
    }
    fn node_updates_are_local(&self) -> bool {
        true
    }
}

impl Filter for NodeName {
    fn filter(&self, _: &CycleContext, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Verdict {
        Self::wanted(pod).map_or(Ok(()), |wanted| Self::check(wanted, node))
    }

    fn filter_nodes(
        &self,
        _: &CycleContext,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        plugin: u16,
        out: &mut [NodeVerdict],
    ) {
        if let Some(wanted) = Self::wanted(pod) {
            filter_each(nodes, plugin, out, |node| Self::check(wanted, node));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ctx, node, node_info, pod_from_yaml};

    /// kube-scheduler's `TestNodeName` cases (node_name_test.go).
    #[test]
    fn filter_table() {
        let cases = [
            ("no host specified", "", "foo", Ok(())),
            ("host matches", "nodeName: foo, ", "foo", Ok(())),
            ("host doesn't match", "nodeName: bar, ", "foo", Err(REASON)),
        ];
        for (name, field, node_name, want) in cases {
            let pod = PodInfo::new(pod_from_yaml(&format!(
                "metadata: {{name: p}}\nspec: {{{field}containers: []}}\n"
            )))
            .unwrap();
            let node = node_info(node(node_name, &[]));
            let state = CycleState::new();
            let got = NodeName.filter(&ctx(), &state, &pod, &node);
            assert_eq!(got, want.map_err(Rejection::unresolvable), "{name}");
            let mut out = [None];
            NodeName.filter_nodes(&ctx(), &state, &pod, &[node], 1, &mut out);
            assert_eq!(out[0].clone().map(|r| r.rejection), got.err(), "{name}: batch agrees");
        }
    }
}
