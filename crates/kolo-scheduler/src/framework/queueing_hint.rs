//! Queueing hints: which pods a cluster event may make schedulable again.
//!
//! A plugin that rejected a pod registers the kinds of events that may undo
//! that ([`Plugin::events_to_register`](super::Plugin::events_to_register)).
//! A plugin that also implements [`QueueingHints`] is asked about each such
//! event, with its object (e.g. which node), and may narrow it down to the
//! pods it rejected *on that node*: the framework records, per
//! unschedulable pod, the nodes each hinting plugin rejected it on. Without
//! hints, every event of a registered kind retries every pod the plugin
//! rejected anywhere.
//!
//! kube-scheduler's `QueueingHintFn` is asked per pod and event; here the
//! plugin is asked once per event and the framework matches the answer
//! against each pod's record, so a round of a thousand NodeMetric updates
//! costs a thousand calls, not a thousand per waiting pod.

use super::{ClusterEvent, NodeId};

/// What an event may do for the pods a plugin rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueingHint {
    /// Nothing: they keep waiting (kube-scheduler's `QueueSkip`).
    Skip,
    /// Any of them may fit now: retry them all (kube-scheduler's `Queue`).
    Queue,
    /// Only a pod this plugin rejected on this node may fit now.
    QueueIfRejectedOn(NodeId),
}

/// Says, per cluster event, whether the event may make a pod this plugin
/// rejected schedulable. Asked only for the event kinds the plugin
/// registered.
pub trait QueueingHints: Send + Sync {
    /// The hint for one event (applied to the plugin's state already).
    fn queueing_hint(&self, event: &ClusterEvent<'_>) -> QueueingHint;
}

/// The hints of a plugin whose verdict on a node reads nothing but that
/// node (its object, its pods, its NodeMetric): a new node may take any
/// pod, an event about a node may only change the verdict there, and a
/// node going away helps nobody. A plugin gives them with
/// [`ExtensionPointsOf::node_scoped_hints`](super::ExtensionPointsOf::node_scoped_hints).
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeScopedHints;

impl QueueingHints for NodeScopedHints {
    fn queueing_hint(&self, event: &ClusterEvent<'_>) -> QueueingHint {
        match event {
            ClusterEvent::NodeAdded(_) => QueueingHint::Queue,
            ClusterEvent::NodeRemoved { .. } => QueueingHint::Skip,
            other => QueueingHint::QueueIfRejectedOn(other.node_id()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::testing::{node, node_info, pod_info};

    #[test]
    fn node_scoped_hints_name_the_events_node() {
        let a = node_info(node("a", &[("cpu", "4")]));
        let pod = pod_info("p", &[]);
        let id = a.id();
        let metric = Arc::new(kolo_core::usage_report::NodeUsageReport::default());
        let at = kolo_core::clock::Timestamp::UNIX_EPOCH;
        let cases: [(ClusterEvent<'_>, QueueingHint); 7] = [
            (ClusterEvent::NodeAdded(&a), QueueingHint::Queue),
            (ClusterEvent::NodeRemoved { id, name: "a" }, QueueingHint::Skip),
            (ClusterEvent::NodeUpdated(&a), QueueingHint::QueueIfRejectedOn(id)),
            (
                ClusterEvent::NodeMetricUpdated { node: &a, metric: &metric },
                QueueingHint::QueueIfRejectedOn(id),
            ),
            (ClusterEvent::NodeMetricRemoved { node: &a }, QueueingHint::QueueIfRejectedOn(id)),
            (
                ClusterEvent::PodAdded { pod: &pod, node: &a, assumed: false, at },
                QueueingHint::QueueIfRejectedOn(id),
            ),
            (ClusterEvent::PodRemoved { pod: &pod, node: id }, QueueingHint::QueueIfRejectedOn(id)),
        ];
        for (event, want) in cases {
            assert_eq!(NodeScopedHints.queueing_hint(&event), want, "{event:?}");
        }
    }
}
