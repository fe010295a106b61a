//! Scheduling objects besides nodes, pods and NodeMetrics: the CRDs job
//! scheduling reads (ElasticQuota, PodGroup, Reservation), the
//! PodDisruptionBudgets preemption reads, the PersistentVolumeClaims and
//! PersistentVolumes the volume plugins read, and the pending pods
//! themselves, as plugins that keep state from them receive them.
//!
//! The framework only passes these along ([`ClusterEventHandler::on_object`]
//! and the queue's wake-ups); what they mean is the plugins' business.
//!
//! [`ClusterEventHandler::on_object`]: super::ClusterEventHandler::on_object

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kolo_api::crd::{ElasticQuota, PodGroup, Reservation};

use super::{EventKinds, PodInfo};

/// A scheduling object the driver hands the scheduler (created or
/// changed).
#[derive(Debug, Clone)]
pub enum SchedulingObject {
    /// An `ElasticQuota` (`scheduling.sigs.k8s.io/v1alpha1`).
    ElasticQuota(Arc<ElasticQuota>),
    /// A `PodGroup` (`scheduling.sigs.k8s.io/v1alpha1`).
    PodGroup(Arc<PodGroup>),
    /// A `Reservation` (`scheduling.koordinator.sh/v1alpha1`).
    Reservation(Arc<Reservation>),
    /// A `PodDisruptionBudget` (`policy/v1`; drivers read `policy/v1beta1`
    /// on clusters that serve only that, the fields preemption reads are
    /// the same).
    PodDisruptionBudget(Arc<PodDisruptionBudget>),
    /// A `PersistentVolumeClaim` (`v1`).
    PersistentVolumeClaim(Arc<PersistentVolumeClaim>),
    /// A `PersistentVolume` (`v1`; cluster-scoped).
    PersistentVolume(Arc<PersistentVolume>),
}

/// Which kind of [`SchedulingObject`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// `ElasticQuota`.
    ElasticQuota,
    /// `PodGroup`.
    PodGroup,
    /// `Reservation` (cluster-scoped: its namespace is empty).
    Reservation,
    /// `PodDisruptionBudget`.
    PodDisruptionBudget,
    /// `PersistentVolumeClaim`.
    PersistentVolumeClaim,
    /// `PersistentVolume` (cluster-scoped: its namespace is empty).
    PersistentVolume,
}

impl ObjectKind {
    /// The kind of event a change of such an object is, for waking pods.
    pub fn event_kind(self) -> EventKinds {
        match self {
            ObjectKind::ElasticQuota => EventKinds::QUOTA,
            ObjectKind::PodGroup => EventKinds::POD_GROUP,
            ObjectKind::Reservation => EventKinds::RESERVATION,
            ObjectKind::PodDisruptionBudget => EventKinds::DISRUPTION_BUDGET,
            ObjectKind::PersistentVolumeClaim | ObjectKind::PersistentVolume => EventKinds::VOLUME,
        }
    }
}

/// Names one scheduling object: its kind, and `namespace/name` (`name` for
/// a cluster-scoped one).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// The kind.
    pub kind: ObjectKind,
    /// `namespace/name`, or `name` when cluster-scoped.
    pub key: String,
}

impl SchedulingObject {
    /// The object's kind.
    pub fn kind(&self) -> ObjectKind {
        match self {
            SchedulingObject::ElasticQuota(_) => ObjectKind::ElasticQuota,
            SchedulingObject::PodGroup(_) => ObjectKind::PodGroup,
            SchedulingObject::Reservation(_) => ObjectKind::Reservation,
            SchedulingObject::PodDisruptionBudget(_) => ObjectKind::PodDisruptionBudget,
            SchedulingObject::PersistentVolumeClaim(_) => ObjectKind::PersistentVolumeClaim,
            SchedulingObject::PersistentVolume(_) => ObjectKind::PersistentVolume,
        }
    }

    /// The object's reference (kind and key).
    pub fn reference(&self) -> ObjectRef {
        let meta = match self {
            SchedulingObject::ElasticQuota(q) => &q.metadata,
            SchedulingObject::PodGroup(g) => &g.metadata,
            SchedulingObject::Reservation(r) => &r.metadata,
            SchedulingObject::PodDisruptionBudget(b) => &b.metadata,
            SchedulingObject::PersistentVolumeClaim(c) => &c.metadata,
            SchedulingObject::PersistentVolume(v) => &v.metadata,
        };
        let name = meta.name.as_deref().unwrap_or_default();
        let key = match meta.namespace.as_deref() {
            Some(namespace) if !namespace.is_empty() => format!("{namespace}/{name}"),
            _ => name.to_string(),
        };
        ObjectRef { kind: self.kind(), key }
    }
}

/// A change plugins may keep state from, besides the per-node
/// [`ClusterEvent`](super::ClusterEvent)s.
#[derive(Debug, Clone, Copy)]
pub enum ObjectEvent<'a> {
    /// A scheduling object was created or changed.
    Applied(&'a SchedulingObject),
    /// A scheduling object was deleted.
    Removed(&'a ObjectRef),
    /// A pod without a node appeared or changed (any scheduler's: quotas
    /// count every pod's request, gangs every member). Handlers upsert by
    /// key.
    PendingPodAdded(&'a PodInfo),
    /// A pending pod stopped being pending: deleted, finished, or seen
    /// assigned to a node (a
    /// [`ClusterEvent::PodAdded`](super::ClusterEvent::PodAdded) for it
    /// follows). A pod this scheduler assumed at Reserve stays pending
    /// until its binding is seen, and is meanwhile also counted on its node
    /// (`PodAdded` with `assumed`).
    PendingPodRemoved(&'a PodInfo),
}

impl ObjectEvent<'_> {
    /// The event's kind, for matching against what plugins registered.
    pub fn kind(&self) -> EventKinds {
        match self {
            ObjectEvent::Applied(object) => object.kind().event_kind(),
            ObjectEvent::Removed(reference) => reference.kind.event_kind(),
            ObjectEvent::PendingPodAdded(_) | ObjectEvent::PendingPodRemoved(_) => {
                EventKinds::POD_PENDING
            }
        }
    }
}
