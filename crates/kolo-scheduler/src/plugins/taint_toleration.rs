//! TaintToleration: a pod runs only where it tolerates every `NoSchedule`
//! and `NoExecute` taint; among those nodes, fewer untolerated
//! `PreferNoSchedule` taints score higher (kube-scheduler's plugin).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use kolo_core::node::TaintEffect;

use super::tolerations::{Toleration, tolerated, tolerations};
use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, ExtensionPoints,
    Filter, NodeId, NodeInfo, NodeVerdict, Plugin, PodInfo, PreFilter, PreFilterOutcome, PreScore,
    PreScoreOutcome, Rejection, Score, Verdict, default_normalize, filter_each,
};
use crate::registry::PluginArgsError;

/// The plugin's registered name.
pub const NAME: &str = "TaintToleration";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct TaintToleration {
    /// Nodes with at least one `PreferNoSchedule` taint. While there are
    /// none every node scores the same, so scores need no normalizing and
    /// the framework can sum them during the parallel pass.
    prefer_no_schedule_nodes: Mutex<HashSet<NodeId>>,
    /// Whether that set is not empty: read for every node scored, so kept
    /// where reading takes no lock.
    any_prefer_no_schedule: AtomicBool,
}

/// The pod's tolerations, read once per cycle.
struct PodTolerations(Vec<Toleration>);

impl TaintToleration {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(TaintToleration::default()))
    }

    fn check(tolerations: &[Toleration], node: &NodeInfo) -> Verdict {
        for taint in node.view().taints() {
            if taint.effect != TaintEffect::PreferNoSchedule && !tolerated(tolerations, taint) {
                return Err(Rejection::unresolvable(format!(
                    "node(s) had untolerated taint {{{}: {}}}",
                    taint.key, taint.value
                )));
            }
        }
        Ok(())
    }

    fn count_intolerable(tolerations: &[Toleration], node: &NodeInfo) -> i64 {
        node.view()
            .taints()
            .iter()
            .filter(|t| t.effect == TaintEffect::PreferNoSchedule && !tolerated(tolerations, t))
            .count() as i64
    }
}

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        let points = ExtensionPoints::of(self).pre_filter().filter().pre_score().score();
        points.event_handler().node_scoped_hints().into()
    }
    fn events_to_register(&self) -> EventKinds {
        EventKinds::NODE_ADD | EventKinds::NODE_UPDATE
    }
    fn supports_equivalence(&self) -> bool {
        true
    }
    fn node_updates_are_local(&self) -> bool {
        // Filter reads the node's taints only. Score also reads whether any
        // node prefers no scheduling, but the equivalence cache is used only
        // while none does (otherwise this plugin normalizes), and then every
        // node scores the same.
        true
    }
}

impl PreFilter for TaintToleration {
    fn pre_filter(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        state.write(PodTolerations(tolerations(pod.pod())));
        PreFilterOutcome::Proceed
    }
}

impl Filter for TaintToleration {
    fn filter(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        let mut owned = None;
        Self::check(&state.read_or(&mut owned, || PodTolerations(tolerations(pod.pod()))).0, node)
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
        let tolerations = &state.read_or(&mut owned, || PodTolerations(tolerations(pod.pod()))).0;
        filter_each(nodes, plugin, out, |node| {
            // Most nodes have no taints: skip them without a call.
            if node.has_taints() { Self::check(tolerations, node) } else { Ok(()) }
        });
    }
}

impl PreScore for TaintToleration {
    fn pre_score(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreScoreOutcome {
        if state.read::<PodTolerations>().is_none() {
            state.write(PodTolerations(tolerations(pod.pod())));
        }
        PreScoreOutcome::Proceed
    }
}

impl Score for TaintToleration {
    fn score(&self, _: &CycleContext, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        if !self.normalizes() {
            // What normalizing all-zero counts (reversed) would give.
            return 100;
        }
        let mut owned = None;
        Self::count_intolerable(
            &state.read_or(&mut owned, || PodTolerations(tolerations(pod.pod()))).0,
            node,
        )
    }

    fn normalizes(&self) -> bool {
        self.any_prefer_no_schedule.load(Ordering::Relaxed)
    }

    fn normalize(
        &self,
        _: &CycleContext,
        _: &CycleState,
        _: &PodInfo,
        _: &[&NodeInfo],
        scores: &mut [i64],
    ) {
        default_normalize(100, true, scores);
    }
}

impl ClusterEventHandler for TaintToleration {
    fn on_event(&self, event: &ClusterEvent<'_>) {
        let mut nodes =
            self.prefer_no_schedule_nodes.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            ClusterEvent::NodeAdded(node) | ClusterEvent::NodeUpdated(node) => {
                let prefers =
                    node.view().taints().iter().any(|t| t.effect == TaintEffect::PreferNoSchedule);
                if prefers {
                    nodes.insert(node.id());
                } else {
                    nodes.remove(&node.id());
                }
            }
            ClusterEvent::NodeRemoved { id, .. } => {
                nodes.remove(id);
            }
            _ => return,
        }
        self.any_prefer_no_schedule.store(!nodes.is_empty(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ctx, node_from_yaml, node_info, pod_from_yaml};

    fn node(taints: &str) -> NodeInfo {
        node_info(node_from_yaml(&format!("metadata: {{name: n}}\nspec: {{taints: [{taints}]}}\n")))
    }

    fn pod(tolerations: &str) -> PodInfo {
        PodInfo::new(pod_from_yaml(&format!(
            "metadata: {{name: p}}\nspec: {{containers: [], tolerations: [{tolerations}]}}\n"
        )))
        .unwrap()
    }

    #[test]
    fn filter_table() {
        let cases = [
            ("", "", Ok(())),
            (
                "{key: a, value: x, effect: NoSchedule}",
                "",
                Err("node(s) had untolerated taint {a: x}"),
            ),
            (
                "{key: a, value: x, effect: NoExecute}",
                "",
                Err("node(s) had untolerated taint {a: x}"),
            ),
            ("{key: a, value: x, effect: PreferNoSchedule}", "", Ok(())),
            ("{key: a, value: x, effect: NoSchedule}", "{key: a, operator: Exists}", Ok(())),
            (
                "{key: a, value: x, effect: NoSchedule}, {key: b, effect: NoSchedule}",
                "{key: a, value: x}",
                Err("node(s) had untolerated taint {b: }"),
            ),
        ];
        let plugin = TaintToleration::default();
        for (taints, tolerations, want) in cases {
            let pod = pod(tolerations);
            let mut state = CycleState::new();
            plugin.pre_filter(&ctx(), &mut state, &pod);
            let got = plugin.filter(&ctx(), &state, &pod, &node(taints));
            let want = want.map_err(|r: &str| Rejection::unresolvable(r.to_string()));
            assert_eq!(got, want, "taints [{taints}] tolerations [{tolerations}]");
            // The batch path agrees.
            let mut out = [None];
            plugin.filter_nodes(&ctx(), &state, &pod, &[node(taints)], 7, &mut out);
            assert_eq!(out[0].clone().map(|r| r.rejection), got.err());
        }
    }

    #[test]
    fn fewer_untolerated_prefer_no_schedule_taints_score_higher() {
        let plugin = TaintToleration::default();
        let nodes = [
            node(""),
            node("{key: a, effect: PreferNoSchedule}"),
            node("{key: a, effect: PreferNoSchedule}, {key: b, effect: PreferNoSchedule}"),
        ];
        let p = pod("{key: b, operator: Exists, effect: PreferNoSchedule}");
        let state = CycleState::new();
        assert!(!plugin.normalizes());
        assert_eq!(plugin.score(&ctx(), &state, &p, &nodes[2]), 100);
        let mut with_ids = nodes.clone();
        for (i, n) in with_ids.iter_mut().enumerate() {
            *n = NodeInfo::new(
                NodeId(i as u32),
                std::sync::Arc::new(n.node().clone()),
                n.view().clone(),
            );
            plugin.on_event(&ClusterEvent::NodeAdded(n));
        }
        assert!(plugin.normalizes());
        let mut scores: Vec<i64> =
            with_ids.iter().map(|n| plugin.score(&ctx(), &state, &p, n)).collect();
        assert_eq!(scores, [0, 1, 1]);
        plugin.normalize(&ctx(), &state, &p, &with_ids.iter().collect::<Vec<_>>(), &mut scores);
        assert_eq!(scores, [100, 0, 0]);
        plugin.on_event(&ClusterEvent::NodeRemoved { id: NodeId(1), name: "n" });
        plugin.on_event(&ClusterEvent::NodeRemoved { id: NodeId(2), name: "n" });
        assert!(!plugin.normalizes());
    }
}
