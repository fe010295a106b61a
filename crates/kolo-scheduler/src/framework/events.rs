//! Changes to the cluster the scheduler sees, as plugins receive them.

use std::sync::Arc;

use kolo_core::clock::Timestamp;
use kolo_core::usage_report::NodeUsageReport;

use super::{NodeId, NodeInfo, PodInfo};

/// A change to the scheduler's view of the cluster, delivered to every
/// plugin that keeps its own per-node state (after the cache applied it).
#[derive(Debug, Clone, Copy)]
pub enum ClusterEvent<'a> {
    /// A node appeared.
    NodeAdded(&'a NodeInfo),
    /// A node's object changed (labels, allocatable, annotations...).
    NodeUpdated(&'a NodeInfo),
    /// A node went away; its pods were removed first (one
    /// [`ClusterEvent::PodRemoved`] each).
    NodeRemoved {
        /// Its id.
        id: NodeId,
        /// Its name.
        name: &'a str,
    },
    /// A pod is now counted on a node: bound (seen from the API), or assumed
    /// by this scheduler at Reserve, or its object changed. Handlers upsert
    /// by pod key, so a pod reported twice counts once.
    PodAdded {
        /// The pod.
        pod: &'a PodInfo,
        /// Its node.
        node: &'a NodeInfo,
        /// Assumed by this scheduler, not yet confirmed bound.
        assumed: bool,
        /// When the scheduler learned of the assignment.
        at: Timestamp,
    },
    /// A pod is no longer counted on a node (deleted, finished, or a failed
    /// bind made the scheduler forget it).
    PodRemoved {
        /// The pod.
        pod: &'a PodInfo,
        /// The node it was counted on (possibly being removed itself).
        node: NodeId,
    },
    /// A node's NodeMetric was created or changed.
    NodeMetricUpdated {
        /// The node it describes.
        node: &'a NodeInfo,
        /// The metric, read ([`NodeUsageReport::read`]).
        metric: &'a Arc<NodeUsageReport>,
    },
    /// A node's NodeMetric was deleted.
    NodeMetricRemoved {
        /// The node it described.
        node: &'a NodeInfo,
    },
}

impl ClusterEvent<'_> {
    /// The event's kind, for matching against what plugins registered.
    pub fn kind(&self) -> EventKinds {
        match self {
            ClusterEvent::NodeAdded(_) => EventKinds::NODE_ADD,
            ClusterEvent::NodeUpdated(_) => EventKinds::NODE_UPDATE,
            ClusterEvent::NodeRemoved { .. } => EventKinds::NODE_DELETE,
            ClusterEvent::PodAdded { .. } => EventKinds::POD_ADD,
            ClusterEvent::PodRemoved { .. } => EventKinds::POD_DELETE,
            ClusterEvent::NodeMetricUpdated { .. } | ClusterEvent::NodeMetricRemoved { .. } => {
                EventKinds::NODE_METRIC
            }
        }
    }

    /// The node the event is about (every event is about one).
    pub fn node_id(&self) -> NodeId {
        match self {
            ClusterEvent::NodeAdded(node)
            | ClusterEvent::NodeUpdated(node)
            | ClusterEvent::NodeMetricUpdated { node, .. }
            | ClusterEvent::NodeMetricRemoved { node } => node.id(),
            ClusterEvent::PodAdded { node, .. } => node.id(),
            ClusterEvent::NodeRemoved { id, .. } => *id,
            ClusterEvent::PodRemoved { node, .. } => *node,
        }
    }
}

/// A set of event kinds: what may make a pod a plugin rejected schedulable
/// again (kube-scheduler's `EventsToRegister`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EventKinds(u16);

impl EventKinds {
    /// No event.
    pub const NONE: EventKinds = EventKinds(0);
    /// A node was added.
    pub const NODE_ADD: EventKinds = EventKinds(1);
    /// A node changed.
    pub const NODE_UPDATE: EventKinds = EventKinds(1 << 1);
    /// A node was deleted.
    pub const NODE_DELETE: EventKinds = EventKinds(1 << 2);
    /// A pod was assigned to a node.
    pub const POD_ADD: EventKinds = EventKinds(1 << 3);
    /// An assigned pod went away.
    pub const POD_DELETE: EventKinds = EventKinds(1 << 4);
    /// A NodeMetric changed.
    pub const NODE_METRIC: EventKinds = EventKinds(1 << 5);
    /// An ElasticQuota was created, changed or deleted.
    pub const QUOTA: EventKinds = EventKinds(1 << 6);
    /// A PodGroup was created, changed or deleted.
    pub const POD_GROUP: EventKinds = EventKinds(1 << 7);
    /// A Reservation was created, changed or deleted.
    pub const RESERVATION: EventKinds = EventKinds(1 << 8);
    /// A pending pod appeared, changed or went (gangs wait for members).
    pub const POD_PENDING: EventKinds = EventKinds(1 << 9);
    /// A PodDisruptionBudget was created, changed or deleted.
    pub const DISRUPTION_BUDGET: EventKinds = EventKinds(1 << 10);
    /// A PersistentVolumeClaim or PersistentVolume was created, changed or
    /// deleted (a claim bound, a volume's node affinity set).
    pub const VOLUME: EventKinds = EventKinds(1 << 11);
    /// Every change of nodes, assigned pods and NodeMetrics: what a plugin
    /// registers by default. The job-scheduling kinds above ([`QUOTA`],
    /// [`POD_GROUP`], [`RESERVATION`], [`POD_PENDING`]) wake only pods
    /// rejected by plugins that register them by name, so that a new
    /// pending pod does not retry every unschedulable one; so do
    /// [`DISRUPTION_BUDGET`] and [`VOLUME`].
    ///
    /// [`DISRUPTION_BUDGET`]: Self::DISRUPTION_BUDGET
    /// [`VOLUME`]: Self::VOLUME
    /// [`QUOTA`]: Self::QUOTA
    /// [`POD_GROUP`]: Self::POD_GROUP
    /// [`RESERVATION`]: Self::RESERVATION
    /// [`POD_PENDING`]: Self::POD_PENDING
    pub const ALL: EventKinds = EventKinds(0b11_1111);

    /// Whether the two sets share a kind.
    pub fn intersects(self, other: EventKinds) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for EventKinds {
    type Output = EventKinds;
    fn bitor(self, rhs: EventKinds) -> EventKinds {
        EventKinds(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for EventKinds {
    fn bitor_assign(&mut self, rhs: EventKinds) {
        self.0 |= rhs.0;
    }
}
